"""Row groups: how the store lays out its points.

A trainer logs the same keys together step after step (SFT: loss, grad_norm, learning_rate,
... every logging step; eval: the eval_* keys every eval step). A `RowGroup` holds the keys
that have always been logged together: one step column and one wall-time column, shared by
all of them, and one float64 value column per key. Six SFT keys cost 8 bytes a point plus 8 a
row: 9.3 bytes a point instead of 24 with an int64 step and a float64 time per point.

Steps are int32 while every step fits (2.1 billion), and the column becomes int64 when one
does not.

Wall times are float32 seconds since the group's first row (absent until a row carries a
time: trainer_state.json has none). They only place points on a plot's time axis; float32
keeps them to 1/128 s after a day, 1/64 s after 72 h and 1/4 s after a month — a plot's
column spans minutes by then. Values stay exact float64, steps exact integers.

Columns grow by half their size. Columns of 16 KB or more are anonymous private mappings of
their own: their pages are resident only once written, and a column given up when it grows
goes back to the system at once. From the heap, every size a column passed through stayed
behind as a free hole malloc does not return (a 72 h follow kept ~10 MB of them: glibc serves
blocks up to 32 MB from the heap once something that size was freed), and numpy's
transparent-huge-page advice (2 MB pages for arrays of 4 MB and more) rounded each growing
column up to 2 MB.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

_MAPPED_FROM = 1 << 14
"""Columns at least this many bytes are mappings of their own (see the module docstring)."""
_PRIVATE = getattr(mmap, "MAP_PRIVATE", None)
_INT32_MAX, _INT32_MIN = 2**31 - 1, -(2**31)  # absent on Windows: numpy's allocator there


def allocate(n: int, dtype: type[np.generic] | np.dtype[Any]) -> np.ndarray:
    """An uninitialised writable 1-D array of `n` items."""
    dt = np.dtype(dtype)
    nbytes = n * dt.itemsize
    if nbytes < _MAPPED_FROM or _PRIVATE is None:
        return np.empty(n, dtype=dt)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=_PRIVATE), dtype=dt, count=n)


class RowGroup:
    """Keys logged together: their shared steps and wall times, and a value column per key.

    Rows are in increasing step order; a row at the step the group ends on replaces that
    last row. `generation` goes up whenever rows before the last one change (a rewind), so a
    cache built on a prefix knows when to start over; the last row may still be replaced.
    """

    __slots__ = ("capacity", "columns", "generation", "n", "steps", "t_base", "times", "times_sorted")

    def __init__(self, keys: Iterable[str], capacity: int = 16) -> None:
        self.capacity = capacity
        self.n = 0
        self.steps = allocate(capacity, np.int32)
        self.times: np.ndarray | None = None
        """Wall times, float32 seconds since `t_base` (NaN where a row had none); None while
        no row had one."""
        self.t_base = 0.0
        self.times_sorted = True
        """Every wall time held is finite and none is lower than the one before."""
        self.columns: dict[str, np.ndarray] = {key: allocate(capacity, np.float64) for key in keys}
        self.generation = 0

    @property
    def keys(self) -> list[str]:
        return list(self.columns)

    @property
    def last_step(self) -> int | None:
        return int(self.steps[self.n - 1]) if self.n else None

    def _reserve(self, need: int) -> None:
        if need <= self.capacity:
            return
        cap = max(need, self.capacity + self.capacity // 2, 16)
        n = self.n
        self.steps = _moved(self.steps, n, cap)
        if self.times is not None:
            self.times = _moved(self.times, n, cap)
        for key, col in self.columns.items():
            self.columns[key] = _moved(col, n, cap)
        self.capacity = cap

    def append(self, steps: np.ndarray, times: np.ndarray | None,
               values: Mapping[str, np.ndarray]) -> None:
        """Rows at increasing steps, none below the last row here (the same step replaces it);
        `values` holds a column for every key of the group."""
        m = len(steps)
        if not m:
            return
        start = self.n
        if start and self.steps[start - 1] == steps[0]:
            start -= 1  # same step: the new row wins
        end = start + m
        self._reserve(end)
        if self.steps.dtype == np.int32 and (steps[-1] > _INT32_MAX or steps[0] < _INT32_MIN):
            self.steps = _moved(self.steps, self.n, self.capacity, np.int64)
        self.steps[start:end] = steps
        for key, col in self.columns.items():
            col[start:end] = values[key]
        if times is not None and self.times is None and not np.isnan(times).all():
            self.times = allocate(self.capacity, np.float32)
            self.times[:start] = np.nan
            self.times_sorted = start == 0
            self.t_base = float(times[np.flatnonzero(~np.isnan(times))[0]])
        if self.times is not None:
            self.times[start:end] = np.nan if times is None else times - self.t_base
            if self.times_sorted:
                seg = self.times[max(start - 1, 0):end]
                self.times_sorted = bool(np.isfinite(seg).all() and (seg[1:] >= seg[:-1]).all())
        self.n = end

    def seconds(self, which: slice | np.ndarray, t0: float) -> np.ndarray:
        """Wall times of some rows as float64 seconds since `t0` (NaN: no time)."""
        if self.times is None:
            return np.full(len(self.steps[:self.n][which]), np.nan)
        return self.times[:self.n][which].astype(np.float64) + (self.t_base - t0)

    def truncate_at(self, step: int) -> int:
        """Drop the rows at `step` and later; returns how many went."""
        if not self.n or self.steps[self.n - 1] < step:
            return 0
        keep = int(np.searchsorted(self.steps[: self.n], step, side="left"))
        dropped = self.n - keep
        self.n = keep
        self.generation += 1
        if keep == 0:
            self.times_sorted = True
        return dropped

    def split(self, keys: Iterable[str]) -> RowGroup:
        """Move `keys` to a group of their own (which gets a copy of the steps and times):
        they stop being logged with the rest."""
        other = RowGroup((), capacity=self.capacity)
        n = self.n
        other.steps = allocate(self.capacity, self.steps.dtype)
        other.steps[:n] = self.steps[:n]
        if self.times is not None:
            other.times = allocate(self.capacity, np.float32)
            other.times[:n] = self.times[:n]
        other.times_sorted, other.t_base = self.times_sorted, self.t_base
        for key in keys:
            other.columns[key] = self.columns.pop(key)
        other.n = n
        return other

    def drop(self, key: str) -> None:
        del self.columns[key]

    @property
    def nbytes(self) -> int:
        """Bytes allocated for the group's columns (the written part is what is resident)."""
        total = self.steps.nbytes + sum(c.nbytes for c in self.columns.values())
        return total + (self.times.nbytes if self.times is not None else 0)

    # A pickled group holds its rows only, not the room to grow (the replay child sends its
    # store to the UI process).
    def __getstate__(self) -> dict[str, Any]:
        n = self.n
        return {"n": n, "steps": self.steps[:n], "generation": self.generation,
                "times": None if self.times is None else self.times[:n],
                "times_sorted": self.times_sorted, "t_base": self.t_base,
                "columns": {k: c[:n] for k, c in self.columns.items()}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.n = self.capacity = state["n"]
        self.steps, self.times = state["steps"], state["times"]
        self.times_sorted, self.generation = state["times_sorted"], state["generation"]
        self.t_base = state["t_base"]
        self.columns = state["columns"]


def _moved(old: np.ndarray, n: int, capacity: int, dtype: Any = None) -> np.ndarray:
    new = allocate(capacity, old.dtype if dtype is None else dtype)
    new[:n] = old[:n]
    return new
