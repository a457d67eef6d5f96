"""What the detectors read a metric store with: its series (finite points only), robust levels
and spreads, windows where a condition holds, and the evidence points of a window.

numpy only, over at most a few series a pass: the live judge runs every few seconds in the
supervisor on a store that may hold 100,000 steps (`bench/findings_cost.py`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cockpit.metrics.store import MetricStore

MAX_POINTS = 60
"""Metric points kept as evidence per series (evenly picked over the window)."""
EDGE_MAX = 500
"""The most points an early or a late window holds."""
FINISHED_POINTS = 3
"""The fewest points a rule judged on each point's level (a reward function that never pays, a
share of clipped completions) needs once the run has finished: what it logged is all there is."""


class Quiet(str):
    """A rule that ran and did not fire: the one number that kept it quiet."""


class Absent(str):
    """A rule that could not run: what it needs that the run did not log."""


class Picked(NamedTuple):
    """A series a detector judges: its key and its points."""
    key: str
    steps: np.ndarray
    values: np.ndarray


class Reader:
    """The store as the detectors read it: copies of its columns, or views (`detect(views=True)`)."""

    def __init__(self, store: MetricStore, *, copy: bool) -> None:
        self.store = store
        self.copy = copy
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._finite: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Every point of a series (NaN and inf kept), read once a pass."""
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self.store.series(key, copy=self.copy)
        return got

    def finite(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """The finite points of a series, filtered once a pass."""
        got = self._finite.get(key)
        if got is None:
            steps, values = self.series(key)
            keep = np.isfinite(values)
            got = self._finite[key] = (steps, values) if keep.all() else (steps[keep], values[keep])
        return got

    def pick(self, *keys: str, need: int = 0, raw: bool = False, what: str | None = None) -> Picked | Quiet | Absent:
        """The preamble of every detector: the first of `keys` the run logged, with its finite
        points (every point with `raw`); `Absent` ("no <what> logged") when it logged none of
        them, `Quiet` when it has fewer than `need` points. Both are `str`, so a detector says
        `if isinstance(got := r.pick(...), str): return got`."""
        key = next((k for k in keys if k in self), None)
        if key is None:
            return Absent(f"no {what or ' or '.join(keys)} logged")
        steps, values = self.series(key) if raw else self.finite(key)
        if len(values) < need:
            return Quiet(f"{len(values)} points of {key} (needs {need})")
        return Picked(key, steps, values)

    def keys(self) -> list[str]:
        return self.store.keys()

    @property
    def max_steps(self) -> int | None:
        return self.store.max_steps

    @property
    def finished(self) -> bool:
        """The run reached its max_steps: it will log no more."""
        last, total = self.store.last_step, self.store.max_steps
        return last is not None and total is not None and last >= total

    def needs(self, wanted: int) -> int:
        """The points a level rule waits for: `wanted` while the run goes on (it may not have
        paid, or clipped, yet), fewer once it has finished (`FINISHED_POINTS`)."""
        return min(wanted, FINISHED_POINTS) if self.finished else wanted

    @property
    def best(self) -> tuple[float, int] | None:
        """(best_metric, best_global_step) the Trainer recorded (`MetricStore.best`)."""
        return self.store.best

    @property
    def epoch_falls(self) -> list[tuple[int, float, float]]:
        """Where the epoch fell back while the step went on (`MetricStore.epoch_falls`)."""
        return self.store.epoch_falls

    @property
    def epoch(self) -> float | None:
        """The epoch of the latest logged step."""
        return self.store.epoch

    def __contains__(self, key: object) -> bool:
        return key in self.store


def edges(n: int, edge: float) -> int:
    """How many points the early and the late window hold: a share of the run, at least 5, at
    most EDGE_MAX (a long run's "late" is its last few hundred steps, not its last fifth)."""
    return max(5, min(round(n * edge), EDGE_MAX))


def noise(values: np.ndarray) -> float:
    """The spread of a window, robust to a spike: 1.4826 × the median absolute deviation (the
    standard deviation for normal noise)."""
    if not len(values):
        return 0.0
    return 1.4826 * float(np.median(np.abs(values - np.median(values))))


def level(values: np.ndarray) -> float:
    return float(np.median(values))


def fell(values: np.ndarray, k: int, share: float, sigma: float) -> tuple[float, float, bool]:
    """(early level, late level, whether it fell): the median of the last `k` points below that of
    the first `k` by more than `share` of the early level and `sigma` robust σ of the early points."""
    early, late = level(values[:k]), level(values[-k:])
    return early, late, (early - late) > max(share * abs(early), sigma * noise(values[:k]), 1e-12)


def points(key: str, steps: np.ndarray, values: np.ndarray, first: int, last: int, *,
           keep: np.ndarray | None = None) -> dict[str, Any]:
    """A `metric` evidence entry: the series over [first, last], evenly thinned to MAX_POINTS;
    `keep` (step values) are kept whatever the thinning (the spikes of a spike finding)."""
    inside = (steps >= first) & (steps <= last)
    s, v = steps[inside], values[inside]
    total = len(s)
    if len(s) > MAX_POINTS:
        pick = np.linspace(0, len(s) - 1, MAX_POINTS).round().astype(int)
        if keep is not None and len(keep):
            pick = np.concatenate([pick, np.searchsorted(s, keep).clip(0, len(s) - 1)])
        pick = np.unique(pick)
        s, v = s[pick], v[pick]
    shown = [[int(a), float(b) if np.isfinite(b) else str(b)] for a, b in zip(s, v, strict=True)]
    out: dict[str, Any] = {"type": "metric", "key": key, "points": shown}
    if total > len(s):
        out["of"] = total  # a sample: "61 of 2,000 points"
    return out


def runs_where(steps: np.ndarray, holds: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """The step ranges where `holds` is true for at least `min_len` logged points in a row."""
    ranges = index_runs(holds, min_len)
    return [(int(steps[a]), int(steps[b - 1])) for a, b in ranges]


def index_runs(holds: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """[start, end) index ranges where `holds` is true for at least `min_len` points in a row."""
    d = np.diff(np.concatenate(([0], holds.astype(np.int8), [0])))
    starts, ends = np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b - a >= min_len]


def mostly_held(holds: np.ndarray, w: int) -> tuple[int, int] | None:
    """The first and last index where `holds`, inside the windows of `w` points in a row of which
    more than half hold (a stretch of a run that came back: a KL that blew up, a reward that fell);
    None without such a window."""
    if len(holds) < w or holds.sum() * 2 <= w:
        return None
    c = np.concatenate(([0], np.cumsum(holds)))
    held = np.nonzero((c[w:] - c[:-w]) * 2 > w)[0]  # windows [i, i + w) with most points holding
    if not len(held):
        return None
    inside = np.nonzero(holds[held[0]: held[-1] + w])[0] + held[0]
    return int(inside[0]), int(inside[-1])


def change_start(steps: np.ndarray, values: np.ndarray, early: float, late: float, *, over: int = 1) -> int:
    """The step a move from `early` to `late` began: after the last point still on the early side
    of a quarter of the way. `over` > 1: each point read as the median of the `over` points
    centred on it, so that one point back on the early side (one batch of a series that differs
    from batch to batch) does not move the start to the end of the run."""
    if over > 1 and len(values) > over:
        half = over // 2
        padded = np.pad(values, half, mode="edge")
        values = np.median(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1), axis=1)
    mark = early + 0.25 * (late - early)
    before = values <= mark if late > early else values >= mark
    idx = np.nonzero(before)[0]
    i = int(idx[-1]) if len(idx) else 0
    return int(steps[min(i, len(steps) - 1)])


def first_key(store: Reader | MetricStore, *candidates: str) -> str | None:
    return next((k for k in candidates if k in store), None)


def interval(steps: np.ndarray) -> int:
    """The usual distance between two logged steps (logging_steps)."""
    if len(steps) < 2:
        return 1
    return max(1, int(np.median(np.diff(steps[-min(len(steps), 200):]))))


def merge_ranges(ranges: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Overlapping ranges, and ranges at most `gap` steps apart, as one: one condition is one
    finding, whatever dips it had."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def sustained(steps: np.ndarray, values: np.ndarray, above: float, n: int) -> list[tuple[int, int]]:
    """The step ranges where the mean of every `n` logged points in a row is above `above`: a
    noisy ratio (0.5, 1, 0.75, 1 ...) makes one range, not one per dip; ranges fewer than `n`
    logged points apart are one."""
    if len(values) < n:
        return []
    means = np.convolve(values, np.ones(n) / n, mode="valid")  # means[i]: points i .. i+n-1
    out: list[tuple[int, int]] = []
    for first, last in runs_where(steps[n - 1:], means > above, 1):
        start = int(steps[int(np.searchsorted(steps, first)) - (n - 1)])
        out.append((start, last))
    return merge_ranges(out, n * interval(steps))


def reward_functions(store: Reader | MetricStore) -> list[str]:
    """A GRPO run's per-function reward keys: `rewards/<fn>/mean` (TRL 0.16 on), or
    `rewards/<fn>` before."""
    return [key for key in store.keys() if key.startswith("rewards/")
            and (key.endswith("/mean") or key.count("/") == 1)]


def function_name(key: str) -> str:
    return key[len("rewards/"):].removesuffix("/mean")


def sample(ev: dict[str, Any]) -> str:
    """How many points a metric evidence shows: "61 of 2,000 points" for a sample, "40 points"."""
    n = len(ev.get("points") or [])
    of = ev.get("of")
    if isinstance(of, int) and of > n:
        return f"{n} of {of:,} points"
    return f"{n} point{'s' if n != 1 else ''}"


def fmt(v: float) -> str:
    """A number in a summary: 4 significant digits, thousands grouped."""
    if not np.isfinite(v):
        return str(v)
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.4g}"
