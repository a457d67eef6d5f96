"""`MetricStore`: every metric series of one run (see the package docstring for the rules)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from cockpit.metrics import plotmath
from cockpit.metrics.store import ingest
from cockpit.metrics.store.rows import RowGroup
from cockpit.metrics.store.values import is_summary, metric_values, surviving, to_float, to_int
from cockpit.run import journal

if TYPE_CHECKING:
    from cockpit.metrics.trainer_state import EntryBlock, ParsedState

MAX_KEYS = 10_000
"""A trainer that logs more distinct keys than this is broken; new keys past it are refused
instead of given columns (a 100k-key entry must not take the UI down)."""
SERIES_KINDS = frozenset({journal.METRICS, journal.EVAL})
_NOT_SERIES = ingest.NOT_SERIES
_SUMMARY = "summary"  # trainer_state.SUMMARY: the category of the end-of-training entry


class MetricStore:
    """Every metric series of one run, in row groups (`rows.RowGroup`)."""

    MAX_KEYS = MAX_KEYS

    def __init__(self) -> None:
        self._group_of: dict[str, RowGroup] = {}
        """Each key's group, in the order the keys first appeared."""
        self._groups: list[RowGroup] = []
        self._plots: dict[tuple[str, float, tuple[float, float] | None],
                          tuple[RowGroup, int, plotmath.PlotSummary]] = {}
        self.summary: dict[str, float] = {}
        """The end-of-training summary entry (train_loss, train_runtime, total_flos, ...):
        one value per key, so not a series."""
        self.version = 0
        """Goes up on every change; compare with the value you drew last."""
        self.last_step: int | None = None
        """The step of the latest metrics/eval record (the highest, unless a resume went back)."""
        self.max_steps: int | None = None
        """From run_started/progress records, or the trainer_state.json header."""
        self.epoch: float | None = None
        """The epoch of the latest metrics/eval record that carried one."""
        self.best: tuple[float, int] | None = None
        """(best_metric, best_global_step) of a trainer_state.json: what the Trainer's
        best-model tracking chose (metric_for_best_model)."""
        self.epoch_falls: list[tuple[int, float, float]] = []
        """(step, epoch before, epoch after) where the epoch fell back (`epoch_fell`) while the
        step went on: the run started its data over (a resume that began anew)."""
        self.t0: float | None = None
        """The earliest wall time seen; `series(key, x="time")` counts seconds from it."""
        self.rewinds = 0
        """How many times a resumed run sent the store back to an earlier step."""
        self.warnings: list[str] = []
        self._refused_keys = 0

    # -- building ------------------------------------------------------------------------------

    @classmethod
    def from_trainer_state(cls, raw: bytes | str, *, source: str = "") -> MetricStore:
        """Parse a trainer_state.json straight into columns (the replay fast path)."""
        from cockpit.metrics.trainer_state import parse_trainer_state

        return cls.from_parsed(parse_trainer_state(raw, source=source))

    @classmethod
    def from_parsed(cls, parsed: ParsedState) -> MetricStore:
        store = cls()
        store.add_parsed(parsed)
        return store

    @classmethod
    def from_records(cls, records: Iterable[journal.Record]) -> MetricStore:
        store = cls()
        store.add_many(records)
        return store

    def add_parsed(self, parsed: ParsedState) -> None:
        """Load a parsed trainer_state.json from the value tables its parser read, without
        building Records; the summary entry goes to `summary`."""
        if parsed.max_steps is not None and parsed.max_steps > 0:
            self.max_steps = parsed.max_steps
        if parsed.epoch is not None:
            self.epoch = parsed.epoch
        if parsed.best_metric is not None and parsed.best_global_step is not None:
            self.best = (float(parsed.best_metric), int(parsed.best_global_step))
        self.epoch_falls.extend(_epoch_falls(parsed))
        series: list[EntryBlock] = []
        summary: list[EntryBlock] = []
        for block in parsed.blocks:
            (summary if block.category == _SUMMARY else series).append(block)
        if summary:
            at = np.sort(np.concatenate([b.rows for b in summary])).tolist()
            for i in at:
                self.summary.update(metric_values(parsed.entries[i], _NOT_SERIES))
        self._ingest(parsed.entries, parsed.steps, None,
                     [(b.keys, b.rows, b.table) for b in series])
        self.version += 1

    def add(self, record: journal.Record) -> bool:
        """Take one journal record; True when it changed the store.

        metrics/eval records feed the series (or `summary`); run_started and
        progress records set `max_steps`; other kinds are ignored.
        """
        return self.add_many((record,)) > 0

    def add_many(self, records: Iterable[journal.Record]) -> int:
        """Take many records at once (a journal poll, a replay); returns how many were used.

        Same result as calling `add` for each, but the metric values go in
        column by column, which is what keeps a 100k-record journal fast.
        """
        dicts: list[dict[str, Any]] = []
        steps: list[int] = []
        times: list[float] = []
        used = 0
        last = self.last_step
        for record in records:
            kind = record.kind
            if kind not in SERIES_KINDS:
                used += self._add_other(record)
                continue
            data = record.data
            epoch = data.get("epoch")
            if epoch is not None:
                epoch = to_float(epoch)
                if epoch is not None:
                    at = _step_of(record)
                    if self.epoch is not None and epoch_fell(self.epoch, epoch) and at is not None \
                            and at >= (steps[-1] if steps else (last or 0)):
                        self.epoch_falls.append((at, self.epoch, epoch))
                    self.epoch = epoch
            used += 1
            if kind == journal.METRICS and (data.get("summary") is True or is_summary(data)):
                self.summary.update(metric_values(data, _NOT_SERIES))
                continue
            step = _step_of(record)
            if step is None:
                step = steps[-1] if steps else (last or 0)
            dicts.append(data)
            steps.append(step)
            times.append(record.t)
        if dicts:
            t = np.array(times, dtype=np.float64)
            self._ingest(dicts, np.array(steps, dtype=np.int64), t)
        if used:
            self.version += 1
        return used

    def add_columns(self, steps: Sequence[int] | np.ndarray, columns: Mapping[str, np.ndarray], *,
                    times: Sequence[float] | np.ndarray | None = None) -> None:
        """Rows logged together, given as columns: a step per row, a value per row for each key,
        optionally a wall time per row. The same rules as records (a lower step rewinds, the
        same step replaces); for tools that hold columns already (the benchmark's 1M-point run)."""
        s = np.asarray(steps, dtype=np.int64)
        if not len(s):
            return
        t = None if times is None else self._wall_times(np.asarray(times, dtype=np.float64))
        keep = self._rewind_for(s)
        vals = {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}
        last = int(s[-1])
        if keep is not None:
            s, t = s[keep], (t[keep] if t is not None else None)
            vals = {k: v[keep] for k, v in vals.items()}
        self._put(s, t, vals)
        self.last_step = last
        self.version += 1

    def _add_other(self, record: journal.Record) -> bool:
        if record.kind in (journal.RUN_STARTED, journal.PROGRESS):
            max_steps = to_int(record.data.get("max_steps"))
            if max_steps is not None and max_steps > 0 and max_steps != self.max_steps:
                self.max_steps = max_steps
                self.version += 1
                return True
        return False

    def _rewind_for(self, steps: np.ndarray) -> np.ndarray | None:
        """Apply the resume rule for a batch at these steps: rewind the store where the batch
        goes back below what it holds; None when every row survives, else which do."""
        keep, rewind_to = surviving(steps, after=self.last_step)
        if rewind_to is None:
            return None
        if self.last_step is not None and rewind_to <= self.last_step:
            for group in self._groups:
                group.truncate_at(rewind_to)
            self.last_step = rewind_to
        self.rewinds += 1
        return keep

    def _wall_times(self, times: np.ndarray) -> np.ndarray:
        """Times as kept (NaN where unusable: trainer_state.json entries carry none); `t0`."""
        ok = np.isfinite(times) & (times > 0)
        if ok.any():
            first = float(times[ok].min())
            if self.t0 is None or first < self.t0:
                self.t0 = first
        return times if ok.all() else np.where(ok, times, np.nan)

    def _ingest(self, dicts: Sequence[dict[str, Any]], steps: np.ndarray,
                times: np.ndarray | None, blocks: list[ingest.Block] | None = None) -> None:
        """The columnar core: many logged dicts at once, same result as one `add` each.

        `blocks` (keys, positions, value table or None) names the dicts to take, grouped by
        their keys, when the caller grouped them already (the trainer_state.json parser);
        else every dict is taken."""
        order = None
        if blocks is not None:
            if not blocks:
                return
            order = np.sort(np.concatenate([b[1] for b in blocks])) if len(blocks) > 1 else blocks[0][1]
        in_order = steps if order is None else steps[order]
        if not len(in_order):
            return
        keep = self._rewind_for(in_order)
        if times is not None:
            times = self._wall_times(times)
        if blocks is None:
            positions = np.flatnonzero(keep) if keep is not None else None
            blocks = [(sig, idx, None) for sig, idx in ingest.blocks_of(dicts, positions, None)]
        elif keep is not None:
            assert order is not None  # set above from the caller's blocks
            alive = np.zeros(len(steps), dtype=bool)
            alive[order[keep]] = True
            blocks = [(sig, idx[alive[idx]], None if table is None else table[alive[idx]])
                      for sig, idx, table in blocks]
        for idx, columns in ingest.logged_together(ingest.read_blocks(dicts, blocks)):
            self._put(steps[idx], times[idx] if times is not None else None, columns)
        self.last_step = int(in_order[-1])  # the last record survives every rewind

    def _put(self, steps: np.ndarray, times: np.ndarray | None, columns: Mapping[str, np.ndarray]) -> None:
        """Rows of these keys, logged together at non-decreasing steps not below what they hold
        (of rows at one step, the last wins).

        Keys already logged together with exactly these keys get the rows in their group. A
        group only some of whose keys are logged now splits: those keys were not logged
        together after all. Keys new to the store (or emptied by a rewind) start a group."""
        if len(steps) > 1:
            last_of_step = np.empty(len(steps), dtype=bool)
            np.not_equal(steps[1:], steps[:-1], out=last_of_step[:-1])
            last_of_step[-1] = True
            if not last_of_step.all():
                steps = steps[last_of_step]
                times = times[last_of_step] if times is not None else None
                columns = {k: v[last_of_step] for k, v in columns.items()}
        fresh: list[str] = []
        new = 0
        touched: dict[int, RowGroup] = {}
        for key in columns:
            group = self._group_of.get(key)
            if group is None:
                if not self._admit(len(self._group_of) + new):
                    continue
                new += 1
            elif group.n:
                touched[id(group)] = group
                continue
            else:
                self._detach(group, key)
            fresh.append(key)
        for group in touched.values():
            if any(key not in columns for key in group.columns):
                rest = group.split([key for key in group.columns if key not in columns])
                self._add_group(rest)
            group.append(steps, times, columns)
        if fresh:
            group = RowGroup(fresh, capacity=max(16, len(steps)))
            self._add_group(group)
            group.append(steps, times, columns)

    def _admit(self, known: int) -> bool:
        if known < self.MAX_KEYS:
            return True
        if not self._refused_keys:
            self.warnings.append(f"more than {self.MAX_KEYS} metric keys — later new keys are ignored")
        self._refused_keys += 1
        return False

    def _add_group(self, group: RowGroup) -> None:
        self._groups.append(group)
        for key in group.columns:
            self._group_of[key] = group

    def _detach(self, group: RowGroup, key: str) -> None:
        group.drop(key)
        if not group.columns:
            self._groups.remove(group)

    # -- reading -------------------------------------------------------------------------------

    def keys(self) -> list[str]:
        """Metric keys in the order they first appeared."""
        return [k for k, g in self._group_of.items() if g.n]

    def __contains__(self, key: object) -> bool:
        group = self._group_of.get(key) if isinstance(key, str) else None
        return group is not None and group.n > 0

    def __len__(self) -> int:
        """How many metric series hold points (see `count(key)` for one series' length)."""
        return sum(1 for g in self._group_of.values() if g.n)

    def count(self, key: str) -> int:
        group = self._group_of.get(key)
        return group.n if group is not None else 0

    def series(self, key: str, x: Literal["step", "time"] = "step", *,
               copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) copies for one key: x is the step (int64) or seconds since `t0` (float64,
        NaN where the source had no wall time, e.g. trainer_state.json). Unknown key: empty.

        copy=False hands out read-only views instead (no 16 MB copy of a 1M-point series
        on every redraw); use them at once — the store may overwrite or move its arrays
        on the next change. A view of steps is the store's own column: int32 while every
        step fits, else int64. Steps are increasing (the resume rule keeps them so)."""
        if x not in ("step", "time"):
            raise ValueError(f"x must be 'step' or 'time', not {x!r}")
        group = self._group_of.get(key)
        if group is None or not group.n:
            empty_x = np.empty(0, dtype=np.int64 if x == "step" else np.float64)
            return empty_x, np.empty(0, dtype=np.float64)
        n = group.n
        col = group.columns[key][:n]
        y = col.copy() if copy else _readonly(col)
        if x == "step":
            steps = group.steps[:n]
            return (steps.astype(np.int64) if copy else _readonly(steps)), y
        return self._seconds(group, slice(0, n)), y

    def _seconds(self, group: RowGroup, which: slice | np.ndarray) -> np.ndarray:
        return group.seconds(which, self.t0 if self.t0 is not None else 0.0)

    def plot_points(self, key: str, x: Literal["step", "time"] = "step", *, n_out: int,
                    smoothing: float = 0.0,
                    clip: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """At most `n_out` finite points of a series for a plot, smoothed first when asked:
        the picture of `downsample(x, ema(y, smoothing), n_out)` over `series(key, x)`
        (MinMaxLTTB, spikes kept), at a cost that does not grow with the series.

        A `plotmath.PlotSummary` per (key, smoothing) keeps the minimum and maximum of
        blocks of the points already seen, so a redraw reads the blocks and the points
        logged since, not the whole series; a rewind starts it over. Short series (and a
        time axis that goes back) take the plain path. `clip`: the band smoothed values are
        held to (`plotmath.ema`)."""
        group = self._group_of.get(key)
        if group is None or not group.n:
            return self.series(key, x, copy=False)
        n = group.n
        found = None
        if plotmath.PlotSummary.worth_it(n, n_out) and (
                x == "step" or (group.times is not None and group.times_sorted)):
            cache_key = (key, float(smoothing), clip if smoothing > 0 else None)
            cached = self._plots.get(cache_key)
            if cached is None or cached[0] is not group or cached[1] != group.generation:
                cached = (group, group.generation, plotmath.PlotSummary(smoothing, cache_key[2]))
                for other in [k for k in self._plots if k[:2] == cache_key[:2]]:
                    del self._plots[other]  # one band per (key, smoothing): a moved band replaces it
                self._plots[cache_key] = cached
            found = cached[2].candidates(group.columns[key][:n], n_out)
        if found is None:
            xs, ys = self.series(key, x, copy=False)
            if smoothing > 0 and len(ys) > 2:
                ys = plotmath.ema(ys, smoothing, clip)
            xs, ys = plotmath.downsample(xs, ys, n_out, sorted_x=(x == "step"))
            return (xs.astype(np.int64) if x == "step" else xs), ys
        idx, values = found
        xs = group.steps[idx].astype(np.int64) if x == "step" else self._seconds(group, idx)
        return plotmath.lttb(xs, values, n_out)

    def latest(self, key: str) -> float | None:
        """The last value of a key (NaN if that is what was logged), None if never logged."""
        group = self._group_of.get(key)
        if group is None or not group.n:
            return None
        return float(group.columns[key][group.n - 1])

    def latest_step(self, key: str) -> int | None:
        group = self._group_of.get(key)
        return group.last_step if group is not None else None

    @property
    def has_wall_time(self) -> bool:
        """False for stores loaded from trainer_state.json: plot against steps then."""
        return self.t0 is not None

    @property
    def nbytes(self) -> int:
        """Bytes allocated for every column (what is written of them is what is resident)."""
        return sum(g.nbytes for g in self._groups)

    @property
    def groups(self) -> list[tuple[list[str], int]]:
        """(keys, rows) of each row group: how the store has laid out what it holds."""
        return [(g.keys, g.n) for g in self._groups]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_plots"] = {}  # caches of a UI's panels: rebuilt where they are drawn
        return state

    def __repr__(self) -> str:
        return f"MetricStore({len(self)} keys, last_step={self.last_step}, version={self.version})"


_EPOCH = operator.itemgetter("epoch")


def epoch_fell(before: float, now: float) -> bool:
    """The epoch fell back while the step went on: by half an epoch or more, or to under half of
    what it was (0.45 → 0.01: a run whose epoch started over before it reached half an epoch);
    an epoch never falls in one run, and rounding (2 decimals) never makes it fall 0.05."""
    return now < before - 0.5 or (now < 0.5 * before and now < before - 0.05)


def _epoch_falls(parsed: ParsedState) -> list[tuple[int, float, float]]:
    """(step, epoch before, epoch) wherever a log entry's epoch fell back (`epoch_fell`) from the
    last entry's that had one (a number, not text or a bool): read from each block's epoch
    column at once, not entry by entry (100,000 entries: ~35 ms in Python)."""
    n = len(parsed.entries)
    epochs = np.full(n, np.nan)
    has = np.zeros(n, dtype=bool)
    for block in parsed.blocks:
        if "epoch" not in block.keys:
            continue
        rows = block.rows  # sorted: a block of every entry is all of them, in order
        dicts = parsed.entries if len(rows) == n else [parsed.entries[i] for i in rows.tolist()]
        if block.table is not None and set(map(type, map(_EPOCH, dicts))) <= {float, int}:
            epochs[rows] = block.table[:, block.keys.index("epoch")]  # the same floats
            has[rows] = True
            continue
        for i, v in zip(rows.tolist(), map(_EPOCH, dicts), strict=True):
            if type(v) is float or type(v) is int:
                epochs[i], has[i] = v, True
    at = np.flatnonzero(has)
    e = epochs[at]
    fell = np.flatnonzero((e[1:] < e[:-1] - 0.5) | ((e[1:] < 0.5 * e[:-1]) & (e[1:] < e[:-1] - 0.05)))
    steps = parsed.steps[at]
    return [(int(steps[j + 1]), float(e[j]), float(e[j + 1])) for j in fell.tolist()]


def _step_of(record: journal.Record) -> int | None:
    step = record.step
    return step if type(step) is int else to_int(step)


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view
