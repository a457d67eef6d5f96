"""The metric store the live view, replay, export and benchmark all read.

One series per metric key, each held in growable numpy arrays (int64 steps,
float64 values, float64 wall times) — never lists of dicts — so a million
points cost 24 MB and a plot reads a slice, not a Python loop. Eval metrics
are series of their own under the names they were logged with (`eval_loss`).

Resumed runs repeat steps. The rule, applied the same way to a live journal
(`add`/`add_many`) and to a trainer_state.json (`from_trainer_state`):

- a record at a step *lower* than the record before it rewinds the store:
  every series drops its points at that step and later (that is what a
  resume means: the run went back to a checkpoint and logs those steps again);
- a record at the step a series already ends on overwrites that point (last
  value wins; another key logged at the same step — train and eval — is kept).

NaN and ±inf are kept (they are what the trainer logged); `downsample` drops
them for plotting and `ema` steps over them. `version` goes up on every change
so a UI can skip redraws.

Plot maths (downsampling, smoothing) is in `plotmath`; the completions ring buffer and the log
history rows are in `buffers`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from cockpit.metrics import trainer_state as ts
from cockpit.run import journal

# Keys of a metrics record's data that are not metric series.
_NOT_SERIES = frozenset({"step", "epoch", "summary"})
# A trainer that logs more distinct keys than this is broken; refuse new keys instead of
# allocating arrays for each (a 100k-key entry must not take the UI down).
MAX_KEYS = 10_000
_SERIES_KINDS = frozenset({journal.METRICS, journal.EVAL})


class _Series:
    """One metric: parallel growable arrays; `n` points are valid."""

    __slots__ = ("n", "steps", "times", "values")

    def __init__(self, capacity: int = 16) -> None:
        self.steps = np.empty(capacity, dtype=np.int64)
        self.values = np.empty(capacity, dtype=np.float64)
        self.times = np.empty(capacity, dtype=np.float64)
        self.n = 0

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        cap = len(self.steps)
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 16)
        for name in ("steps", "values", "times"):
            old = getattr(self, name)
            new = np.empty(new_cap, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    @property
    def last_step(self) -> int | None:
        return int(self.steps[self.n - 1]) if self.n else None

    def put(self, step: int, value: float, t: float) -> None:
        """Append, or overwrite the last point when it is at the same step."""
        n = self.n
        if n and self.steps[n - 1] == step:
            self.values[n - 1] = value
            self.times[n - 1] = t
            return
        if n == len(self.steps):
            self._reserve(1)
        self.steps[n] = step
        self.values[n] = value
        self.times[n] = t
        self.n = n + 1

    def extend(self, steps: np.ndarray, values: np.ndarray, times: np.ndarray) -> None:
        """Append points whose steps are increasing and not below the last one here."""
        if not len(steps):
            return
        if self.n and self.steps[self.n - 1] == steps[0]:
            self.n -= 1  # same step: the new value wins
        self._reserve(len(steps))
        end = self.n + len(steps)
        self.steps[self.n:end] = steps
        self.values[self.n:end] = values
        self.times[self.n:end] = times
        self.n = end

    def truncate_at(self, step: int) -> int:
        """Drop the points at `step` and later; returns how many went."""
        if not self.n or self.steps[self.n - 1] < step:
            return 0
        keep = int(np.searchsorted(self.steps[: self.n], step, side="left"))
        dropped = self.n - keep
        self.n = keep
        return dropped


class MetricStore:
    """Every metric series of one run (see the module docstring for the resume rule)."""

    def __init__(self) -> None:
        self._series: dict[str, _Series] = {}
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
        return cls.from_parsed(ts.parse_trainer_state(raw, source=source))

    @classmethod
    def from_parsed(cls, parsed: ts.ParsedState) -> MetricStore:
        store = cls()
        store.add_parsed(parsed)
        return store

    @classmethod
    def from_records(cls, records: Iterable[journal.Record]) -> MetricStore:
        store = cls()
        store.add_many(records)
        return store

    def add_parsed(self, parsed: ts.ParsedState) -> None:
        """Load a parsed trainer_state.json column by column, without building Records."""
        if parsed.max_steps is not None and parsed.max_steps > 0:
            self.max_steps = parsed.max_steps
        if parsed.epoch is not None:
            self.epoch = parsed.epoch
        entries, steps = parsed.entries, parsed.steps
        groups = (parsed.group_ids, parsed.group_keys) if parsed.group_keys else None
        cats = parsed.categories
        n_summary = cats.count(ts.SUMMARY)  # C-speed scans: a 100k-entry log has one, at the end
        if n_summary:
            n = len(cats)
            if all(cat == ts.SUMMARY for cat in cats[n - n_summary:]):
                summary = list(range(n - n_summary, n))
            else:
                summary = [i for i, cat in enumerate(cats) if cat == ts.SUMMARY]
            for i in summary:
                self.summary.update(ts.metric_values(entries[i], _NOT_SERIES))
            n, k = len(entries), len(summary)
            if summary == list(range(n - k, n)):  # the usual place: the end
                entries, steps = entries[: n - k], steps[: n - k]
                groups = (groups[0][: n - k], groups[1]) if groups else None
            else:
                rest = [i for i, cat in enumerate(cats) if cat != ts.SUMMARY]
                entries = [entries[i] for i in rest]
                steps = steps[rest]
                groups = ([groups[0][i] for i in rest], groups[1]) if groups else None
        self._ingest(entries, steps, None, groups)
        self.version += 1

    def add(self, record: journal.Record) -> bool:
        """Take one journal record; True when it changed the store.

        metrics/eval records feed the series (or `summary`); run_started and
        progress records set `max_steps`; other kinds are ignored.
        """
        kind = record.kind
        if kind not in _SERIES_KINDS:
            return self._add_other(record)
        data = record.data
        values = ts.metric_values(data, _NOT_SERIES)
        epoch = ts.to_float(data.get("epoch"))
        if epoch is not None:
            self.epoch = epoch
        if kind == journal.METRICS and (data.get("summary") is True or ts.is_summary(data)):
            self.summary.update(values)
            self.version += 1
            return True
        step = _step_of(record)
        if step is None:
            step = self.last_step or 0
        t = self._wall_time(record.t)
        if self.last_step is not None and step < self.last_step:
            self._rewind(step)
        for key, value in values.items():
            series = self._series.get(key)
            if series is None:
                series = self._new_series(key)
                if series is None:
                    continue
            series.put(step, value, t)
        self.last_step = step  # after a rewind the run carries on from here
        self.version += 1
        return True

    def add_many(self, records: Iterable[journal.Record]) -> int:
        """Take many records at once (a journal poll, a replay); returns how many were used.

        Same result as calling `add` for each, but the metric values go in
        column by column, which is what keeps a 100k-record journal fast.
        """
        dicts: list[Mapping[str, Any]] = []
        steps: list[int] = []
        times: list[float] = []
        used = 0
        last = self.last_step
        for record in records:
            kind = record.kind
            if kind not in _SERIES_KINDS:
                used += self._add_other(record)
                continue
            data = record.data
            epoch = data.get("epoch")
            if epoch is not None:
                epoch = ts.to_float(epoch)
                if epoch is not None:
                    self.epoch = epoch
            used += 1
            if kind == journal.METRICS and (data.get("summary") is True or ts.is_summary(data)):
                self.summary.update(ts.metric_values(data, _NOT_SERIES))
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

    def _add_other(self, record: journal.Record) -> bool:
        if record.kind in (journal.RUN_STARTED, journal.PROGRESS):
            max_steps = ts.to_int(record.data.get("max_steps"))
            if max_steps is not None and max_steps > 0 and max_steps != self.max_steps:
                self.max_steps = max_steps
                self.version += 1
                return True
        return False

    def _wall_time(self, t: float) -> float:
        if isinstance(t, (int, float)) and math.isfinite(t) and t > 0:
            if self.t0 is None or t < self.t0:
                self.t0 = float(t)
            return float(t)
        return math.nan  # trainer_state.json entries carry no time

    def _new_series(self, key: str) -> _Series | None:
        if len(self._series) >= MAX_KEYS:
            if not self._refused_keys:
                self.warnings.append(f"more than {MAX_KEYS} metric keys — later new keys are ignored")
            self._refused_keys += 1
            return None
        series = self._series[key] = _Series()
        return series

    def _rewind(self, step: int) -> None:
        for series in self._series.values():
            series.truncate_at(step)
        self.rewinds += 1
        self.last_step = step

    def _ingest(self, dicts: Sequence[Mapping[str, Any]], steps: np.ndarray,
                times: np.ndarray | None,
                groups: tuple[list[int], dict[int, tuple]] | None = None) -> None:
        """The columnar core: many logged dicts at once, same result as one `add` each.

        Dicts with the same keys (nearly all of them, in a real log) are read as
        one block with one numpy conversion, instead of a Python step per value.
        `groups` (a group id per dict and each group's keys) saves recomputing them.
        """
        if not len(dicts):
            return
        keep, rewind_to = ts.surviving(steps, after=self.last_step)
        if rewind_to is not None:
            if self.last_step is not None and rewind_to <= self.last_step:
                self._rewind(rewind_to)
            else:
                self.rewinds += 1
        if times is not None:
            t0 = _first_wall_time(times)
            if t0 is not None and (self.t0 is None or t0 < self.t0):
                self.t0 = t0
            times = np.where(np.isfinite(times) & (times > 0), times, np.nan)
        if groups is None:
            first_of: dict[tuple, int] = {}
            ids = list(map(first_of.setdefault, map(tuple, dicts), itertools.count()))
            keys_of = {gid: sig for sig, gid in first_of.items()}
        else:
            ids, keys_of = groups
        positions = np.flatnonzero(keep) if rewind_to is not None else None

        if len(keys_of) == 1:
            blocks = [(next(iter(keys_of.values())),
                       positions if positions is not None else np.arange(len(dicts), dtype=np.int64))]
        else:
            ids_arr = np.array(ids, dtype=np.int64)
            if positions is not None:
                ids_arr = ids_arr[positions]
            order = np.argsort(ids_arr, kind="stable")
            cuts = np.flatnonzero(np.diff(ids_arr[order])) + 1
            blocks = []
            for part in np.split(order, cuts):
                if not len(part):
                    continue
                idx = positions[part] if positions is not None else part
                blocks.append((keys_of[int(ids_arr[part[0]])], idx))

        fragments: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        n_all = len(dicts)
        for sig, idx in blocks:
            if all(k in _NOT_SERIES for k in sig):
                continue
            rows = dicts if len(idx) == n_all else [dicts[i] for i in idx.tolist()]
            _read_block(sig, rows, idx, fragments)

        for key, parts in fragments.items():
            series = self._series.get(key)
            if series is None:
                series = self._new_series(key)
                if series is None:
                    continue
            if len(parts) == 1:
                idx, vals = parts[0]
            else:
                idx = np.concatenate([p[0] for p in parts])
                vals = np.concatenate([p[1] for p in parts])
                order = np.argsort(idx, kind="stable")
                idx, vals = idx[order], vals[order]
            s = steps[idx]
            if len(s) > 1:
                last_of_step = np.empty(len(s), dtype=bool)
                np.not_equal(s[1:], s[:-1], out=last_of_step[:-1])
                last_of_step[-1] = True
                if not last_of_step.all():
                    idx, vals, s = idx[last_of_step], vals[last_of_step], s[last_of_step]
            t = times[idx] if times is not None else np.full(len(idx), np.nan)
            series.extend(s, vals, t)

        self.last_step = int(steps[-1])  # the last record survives every rewind

    # -- reading -------------------------------------------------------------------------------

    def keys(self) -> list[str]:
        """Metric keys in the order they first appeared."""
        return [k for k, s in self._series.items() if s.n]

    def __contains__(self, key: object) -> bool:
        series = self._series.get(key)  # type: ignore[arg-type]
        return series is not None and series.n > 0

    def __len__(self) -> int:
        """How many metric series hold points (see `count(key)` for one series' length)."""
        return sum(1 for s in self._series.values() if s.n)

    def count(self, key: str) -> int:
        series = self._series.get(key)
        return series.n if series is not None else 0

    def series(self, key: str, x: Literal["step", "time"] = "step", *,
               copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) copies for one key: x is the step (int64) or seconds since `t0` (float64,
        NaN where the source had no wall time, e.g. trainer_state.json). Unknown key: empty.

        copy=False hands out read-only views instead (no 16 MB copy of a 1M-point series
        on every redraw); use them at once — the store may overwrite or move its arrays
        on the next change. Steps are non-decreasing (the resume rule keeps them so)."""
        series = self._series.get(key)
        if series is None or not series.n:
            empty_x = np.empty(0, dtype=np.int64 if x == "step" else np.float64)
            return empty_x, np.empty(0, dtype=np.float64)
        n = series.n
        y = series.values[:n].copy() if copy else _readonly(series.values[:n])
        if x == "step":
            return (series.steps[:n].copy() if copy else _readonly(series.steps[:n])), y
        if x == "time":
            base = self.t0 if self.t0 is not None else 0.0
            return series.times[:n] - base, y
        raise ValueError(f"x must be 'step' or 'time', not {x!r}")

    def latest(self, key: str) -> float | None:
        """The last value of a key (NaN if that is what was logged), None if never logged."""
        series = self._series.get(key)
        if series is None or not series.n:
            return None
        return float(series.values[series.n - 1])

    def latest_step(self, key: str) -> int | None:
        series = self._series.get(key)
        return series.last_step if series is not None else None

    @property
    def has_wall_time(self) -> bool:
        """False for stores loaded from trainer_state.json: plot against steps then."""
        return self.t0 is not None

    def __repr__(self) -> str:
        return f"MetricStore({len(self)} keys, last_step={self.last_step}, version={self.version})"


def _step_of(record: journal.Record) -> int | None:
    step = record.step
    return step if type(step) is int else ts.to_int(step)


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def _first_wall_time(times: np.ndarray) -> float | None:
    ok = times[np.isfinite(times) & (times > 0)]
    return float(ok.min()) if len(ok) else None


_NUMERIC_OR_TEXT = frozenset({float, int, str})


def _read_block(sig: tuple, rows: Sequence[Mapping[str, Any]], idx: np.ndarray,
                fragments: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> None:
    """Rows that share their keys, in the order of `sig`: one flat conversion when every
    value is a number (or a numeric string — numpy parses those exactly as float() does),
    else column by column."""
    cols = [(j, k if type(k) is str else str(k)) for j, k in enumerate(sig) if k not in _NOT_SERIES]
    width = len(sig)
    try:
        kinds = set(map(type, itertools.chain.from_iterable(map(dict.values, rows))))
    except TypeError:  # not plain dicts
        kinds = None
    if kinds is not None and kinds <= _NUMERIC_OR_TEXT:
        try:
            flat = np.fromiter(itertools.chain.from_iterable(map(dict.values, rows)),
                               dtype=np.float64, count=len(rows) * width)
        except (ValueError, OverflowError, TypeError):
            flat = None
        if flat is not None:
            table = flat.reshape(len(rows), width)
            for j, name in cols:
                fragments.setdefault(name, []).append((idx, table[:, j]))
            return
    for j, name in cols:
        key = sig[j]
        col = [row[key] for row in rows]
        if set(map(type, col)) <= _NUMERIC_OR_TEXT:
            try:
                values = np.array(col, dtype=np.float64)
            except (ValueError, OverflowError, TypeError):
                pass
            else:
                fragments.setdefault(name, []).append((idx, values))
                continue
        _slow_column(name, col, idx, fragments)


def _slow_column(key: str, col: list[Any], idx: np.ndarray,
                 fragments: dict[str, list[tuple[np.ndarray, np.ndarray]]]) -> None:
    """A column with non-numeric strings, nulls, bools or nested dicts: value by value."""
    out_idx: dict[str, list[int]] = {}
    out_val: dict[str, list[float]] = {}
    for i, value in zip(idx.tolist(), col, strict=False):
        f = ts.to_float(value)
        if f is not None:
            out_idx.setdefault(key, []).append(i)
            out_val.setdefault(key, []).append(f)
        elif isinstance(value, dict):
            for sub, inner in value.items():
                g = ts.to_float(inner)
                if g is not None:
                    name = f"{key}/{sub}"
                    out_idx.setdefault(name, []).append(i)
                    out_val.setdefault(name, []).append(g)
    for name, ids in out_idx.items():
        fragments.setdefault(name, []).append(
            (np.array(ids, dtype=np.int64), np.array(out_val[name], dtype=np.float64)))
