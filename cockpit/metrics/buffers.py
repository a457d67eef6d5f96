"""Bounded views for the run screens: the last sampled completions (a ring buffer) and the log
history rows (the last N metrics records, one per step, the newest value winning)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePath
from typing import Any

from cockpit.metrics import trainer_state as ts
from cockpit.metrics.store import SERIES_KINDS as _SERIES_KINDS
from cockpit.run import journal
from cockpit.run.completions_store import as_text
from cockpit.run.folder import checkpoint_step


class CompletionsBuffer:
    """The last `capacity` sampled completions, oldest dropped first.

    Each row: {"step", "prompt", "completion", "rewards": {name: float}, "advantage": float|None,
    "source"}. NaN rewards (a reward function that returned None) are kept as NaN.
    """

    def __init__(self, capacity: int = 2000) -> None:
        self.capacity = capacity
        self._rows: deque[dict[str, Any]] = deque(maxlen=capacity)
        self.version = 0
        self.total = 0
        """Rows ever added (len() is what is still held)."""

    def add(self, record: journal.Record) -> bool:
        if record.kind != journal.COMPLETIONS:
            return False
        rows = record.data.get("rows")
        if not isinstance(rows, list):
            return False
        step = record.step if record.step is not None else -1
        return self.add_rows(step, rows, source=str(record.data.get("source") or "")) > 0

    def add_many(self, records: Iterable[journal.Record]) -> int:
        return sum(1 for r in records if self.add(r))

    def add_rows(self, step: int, rows: Iterable[Mapping[str, Any]], *, source: str = "") -> int:
        added = 0
        for row in rows:
            if not isinstance(row, Mapping):
                continue
            rewards_raw = row.get("rewards")
            rewards: dict[str, float] = {}
            if isinstance(rewards_raw, Mapping):
                for name, value in rewards_raw.items():
                    f = ts.to_float(value)
                    rewards[str(name)] = f if f is not None else math.nan
            self._rows.append({
                "step": step,
                "prompt": as_text(row.get("prompt")),
                "completion": as_text(row.get("completion")),
                "rewards": rewards,
                "advantage": ts.to_float(row.get("advantage")),
                "source": source,
            })
            added += 1
        if added:
            self.total += added
            self.version += 1
        return added

    def rows(self, step: int | None = None) -> list[dict[str, Any]]:
        """All rows held (oldest first), or those of one step."""
        if step is None:
            return list(self._rows)
        return [r for r in self._rows if r["step"] == step]

    def steps(self) -> list[int]:
        """The distinct steps held, in order of arrival."""
        return list(dict.fromkeys(r["step"] for r in self._rows))

    @property
    def latest_step(self) -> int | None:
        return self._rows[-1]["step"] if self._rows else None

    def clear(self) -> None:
        self._rows.clear()
        self.version += 1

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self._rows))


def resumed_step(record: journal.Record) -> int | None:
    """The step a run_started record resumed from (its checkpoint-N), or None."""
    return checkpoint_step(PurePath(str(record.data.get("resumed_from") or "")).name)


class LogRows:
    """The last `capacity` metrics and eval records, for the log history table: one row per step
    and kind, the newest value winning (as the plots and the export have it).

    A resume from checkpoint-N starts over at step N+1: rows past N from the attempt before are
    dropped, and the run_started record that says so stays as a marker row (kind run_started)
    where the new attempt begins. A step seen again without that record (a journal from an
    older cockpit) still replaces the older rows from that step on.
    """

    def __init__(self, capacity: int = 1000) -> None:
        self.capacity = capacity
        self._rows: deque[journal.Record] = deque(maxlen=capacity)
        self._columns: dict[str, None] = {}
        self._last_step: dict[str, int] = {}
        self.version = 0
        self.dropped = 0
        """Goes up whenever rows were taken out (not only appended): a table must be rebuilt."""

    @staticmethod
    def _wanted(record: journal.Record) -> bool:
        return record.kind in _SERIES_KINDS or (record.kind == journal.RUN_STARTED
                                                and bool(record.data.get("resumed_from")))

    @staticmethod
    def _row_kind(record: journal.Record) -> str:
        return "summary" if record.data.get("summary") else record.kind

    def _drop(self, keep) -> None:
        kept = [r for r in self._rows if keep(r)]
        if len(kept) != len(self._rows):
            self._rows = deque(kept, maxlen=self.capacity)
            self.dropped += 1
        self._last_step = {}
        for r in self._rows:
            if r.kind in _SERIES_KINDS and r.step is not None:
                self._last_step[self._row_kind(r)] = r.step

    def add(self, record: journal.Record) -> bool:
        if not self._wanted(record):
            return False
        if record.kind == journal.RUN_STARTED:
            step = resumed_step(record)
            if step is not None:
                self._drop(lambda r: r.kind not in _SERIES_KINDS or r.step is None
                           or r.step <= step)
            self._rows.append(record)
            self.version += 1
            return True
        kind = self._row_kind(record)
        if record.step is not None:
            last = self._last_step.get(kind)
            if last is not None and record.step <= last:
                self._drop(lambda r: self._row_kind(r) != kind or r.step is None
                           or r.step < record.step)
            self._last_step[kind] = record.step
        self._rows.append(record)
        for key in record.data:
            if key not in self._columns and key != "summary":
                self._columns[key] = None
        self.version += 1
        return True

    def add_many(self, records: Iterable[journal.Record]) -> int:
        records = list(records)
        # Only the last `capacity` of them can stay: skip the rest cheaply.
        tail = [r for r in records if self._wanted(r)][-self.capacity:]
        for record in tail:
            self.add(record)
        return len(tail)

    def rows(self) -> list[journal.Record]:
        return list(self._rows)

    def columns(self) -> list[str]:
        """Every data key seen, in first-seen order (epoch first when present)."""
        cols = list(self._columns)
        if "epoch" in self._columns:
            cols.remove("epoch")
            cols.insert(0, "epoch")
        return cols

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[journal.Record]:
        return iter(list(self._rows))
