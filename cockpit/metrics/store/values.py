"""What counts as a metric value, and which points survive a resumed run's rewinds.

The store, the trainer_state.json parser, the buffers and the runner's callback all ask the
same questions of a logged dict, so the answers live here, below all of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from cockpit.run.journal import is_summary  # noqa: F401 - the one rule, shared with the callback

NON_METRIC_KEYS = frozenset({"step", "epoch"})
"""Keys of a logged dict that are not metrics."""

_INT64_MAX = 2**63 - 1


def to_float(value: Any) -> float | None:
    """A metric value as a float, or None when it is not a number.

    Numbers pass (NaN and ±inf included: they are data), numeric strings are
    parsed (trainers print values as strings and some loggers store them so),
    bools, None, lists, dicts and other strings are not metrics.
    """
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            return None
    if kind is str:
        try:
            return float(value)
        except ValueError:
            return None
    if value is None or isinstance(value, (bool, np.bool_, str, bytes, dict, list, tuple)):
        return None
    if isinstance(value, (int, float)):  # subclasses, e.g. numpy float64
        try:
            return float(value)
        except (OverflowError, ValueError):
            return None
    to = getattr(value, "__float__", None)  # numpy/torch scalars logged in-process
    if to is not None:
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError, RuntimeError):
            return None
    return None


def to_int(value: Any) -> int | None:
    """A step-like value as an int that fits int64, or None."""
    kind = type(value)
    if kind is int:
        return value if -_INT64_MAX <= value <= _INT64_MAX else None
    if isinstance(value, bool):
        return None
    f = to_float(value)
    if f is None or not math.isfinite(f) or abs(f) > _INT64_MAX:
        return None
    return int(f)


def metric_values(entry: Mapping[str, Any], skip: Iterable[str] = NON_METRIC_KEYS) -> dict[str, float]:
    """The numeric values of one logged dict; one level of nested dicts becomes "a/b" keys."""
    skip = skip if isinstance(skip, (set, frozenset)) else frozenset(skip)
    out: dict[str, float] = {}
    for key, value in entry.items():
        if key in skip:
            continue
        f = to_float(value)
        if f is not None:
            out[str(key)] = f
        elif isinstance(value, dict):
            for sub, inner in value.items():
                g = to_float(inner)
                if g is not None:
                    out[f"{key}/{sub}"] = g
    return out


def surviving(steps: np.ndarray, after: int | None = None) -> tuple[np.ndarray, int | None]:
    """Which points survive the rewinds in a step sequence, and the earliest rewind.

    A step lower than the step before it means a resumed run: everything
    logged at that step or later is replaced by what comes next, and the run
    carries on from there. So point i survives when no later point j rewinds
    (steps[j] < steps[j-1], or < `after` for the first) to a step <= steps[i].
    The survivors are in non-decreasing step order. The second value is the
    lowest step any point rewinds to (None when nothing rewinds); a store
    holding earlier points (`after` = its last step) truncates there.
    """
    n = len(steps)
    if n == 0:
        return np.ones(0, dtype=bool), None
    steps = np.asarray(steps, dtype=np.int64)
    rewinds = np.empty(n, dtype=bool)
    rewinds[0] = after is not None and steps[0] < after
    np.less(steps[1:], steps[:-1], out=rewinds[1:])
    if not rewinds.any():
        return np.ones(n, dtype=bool), None
    big = np.iinfo(np.int64).max
    rewind_to = np.where(rewinds, steps, big)
    # lowest rewind at or after each position, then shifted: lowest rewind strictly after i
    suffix_min = np.minimum.accumulate(rewind_to[::-1])[::-1]
    later_min = np.empty(n, dtype=np.int64)
    later_min[:-1] = suffix_min[1:]
    later_min[-1] = big
    return steps < later_min, int(suffix_min[0])
