"""Sampled completions, kept apart from the metric journal and read by step, on demand.

A GRPO run can sample megabytes of text a step. Inline in `events.jsonl` it made every attach,
replay and `cockpit runs` parse all of it. Now the training process appends each step's rows to
`completions.jsonl` in the run folder (one JSON line a step) and a fixed-size entry
(step, offset, length) to `completions.idx`; the journal gets a small `completions_ref` record.
Readers open the index (24 bytes a step), seek, and decode only the step they show: memory stays
bounded whatever the run length.

Why this and not parquet shards: the writer is the training loop, where one `write()` of a line
and one of 24 bytes is all it should cost; a torn last record (a crash mid-write) leaves either no
index entry (the step is simply absent) or an entry whose bytes do not decode (skipped); and it
needs nothing beyond the standard library in the training process. TRL's own
`completions/*.parquet` files are read as a second source, next to old run folders whose
completions are still inline in the journal.
"""

from __future__ import annotations

import math
import os
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from cockpit.files import open_regular
from cockpit.metrics import trainer_state as ts
from cockpit.run import journal
from cockpit.run.completions_store import ENTRY as _ENTRY
from cockpit.run.completions_store import INDEX, STORE, as_text

_PARQUET = re.compile(r"^completions_(\d+)\.parquet$")
_PARQUET_FIXED = frozenset({"step", "prompt", "completion", "advantage", "__index_level_0__"})


def normalize(step: int, row: Mapping[str, Any], source: str) -> dict[str, Any]:
    """One row as every reader shows it: step, prompt, completion, rewards {name: float, NaN for a
    reward that gave None}, advantage, extra columns (anything else a reward function logged)."""
    rewards: dict[str, float] = {}
    raw = row.get("rewards")
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            f = ts.to_float(value)
            rewards[str(name)] = f if f is not None else math.nan
    extra = {str(k): v for k, v in row.items()
             if k not in ("prompt", "completion", "rewards", "advantage", "step") and not isinstance(v, (dict, list))}
    return {"step": step, "prompt": as_text(row.get("prompt")), "completion": as_text(row.get("completion")),
            "rewards": rewards, "advantage": ts.to_float(row.get("advantage")), "source": source, "extra": extra}


class _Store:
    """The run folder's store: the index read whole (24 bytes a step), rows read per step.

    The index is trusted only as far as the data bears it out: an entry pointing past the end of
    completions.jsonl is dropped (a damaged index must not make a reader allocate 2^40 bytes), and
    a record that does not decode to the step its entry names (bytes inserted or lost before it)
    sends the reader through the data file line by line once, to find every step where it really
    is. A damaged record then costs its own step only."""

    def __init__(self, run_dir: Path) -> None:
        self.data = Path(run_dir) / STORE
        self.index = Path(run_dir) / INDEX
        self._size = -1
        self.where: dict[int, tuple[int, int]] = {}
        self.dropped = 0
        """Index entries that pointed outside the data file."""
        self._resynced_at: int | None = None
        self.damaged: set[int] = set()
        """Steps the index names whose record could not be read: each costs that step only."""
        """The data file's size when it was last read line by line (not again until it grows)."""

    def refresh(self) -> bool:
        try:
            size = self.index.stat().st_size
        except OSError:
            return False
        if size == self._size:
            return False
        with open_regular(self.index) as fh:
            fh.seek(max(0, self._size - self._size % _ENTRY.size) if self._size > 0 else 0)
            start = fh.tell()
            blob = fh.read()
        if start == 0:
            self.where = {}
        try:
            data_size = self.data.stat().st_size  # after the index: the writer writes data first
        except OSError:
            data_size = 0
        usable = len(blob) - len(blob) % _ENTRY.size  # a torn last entry waits for the rest
        for step, offset, length in _ENTRY.iter_unpack(blob[:usable]):
            if offset < 0 or length <= 0 or offset + length > data_size:
                self.dropped += 1
                continue
            self.where[step] = (offset, length)  # a resumed run's repeat of a step wins
        self._size = start + usable
        return True

    def read(self, step: int) -> tuple[list[dict[str, Any]], str] | None:
        claimed = step in self.where
        rec = self._at(step)
        if rec is None and claimed and self._resync():
            rec = self._at(step)
        if rec is None:
            if claimed:
                self.damaged.add(step)
            return None  # torn or damaged: skipped, never fatal
        rows = rec.data.get("rows")
        return (rows if isinstance(rows, list) else []), str(rec.data.get("source") or "")

    def _at(self, step: int) -> journal.Record | None:
        at = self.where.get(step)
        if at is None:
            return None
        try:
            with open_regular(self.data) as fh:
                if at[0] + at[1] > os.fstat(fh.fileno()).st_size:
                    return None
                fh.seek(at[0])
                rec = journal.decode(fh.read(at[1]))
        except (OSError, journal.DecodeError):
            return None
        return rec if rec.kind == journal.COMPLETIONS and rec.step == step else None

    def _resync(self) -> bool:
        """Find every step's record by reading the data file line by line (once per size): True when
        it was read, so the caller may look again."""
        try:
            size = self.data.stat().st_size
        except OSError:
            return False
        if self._resynced_at == size:
            return False
        self._resynced_at = size
        found: dict[int, tuple[int, int]] = {}
        offset = 0
        try:
            with open_regular(self.data) as fh:
                for line in fh:
                    try:
                        rec = journal.decode(line)
                    except journal.DecodeError:
                        rec = None
                    if rec is not None and rec.kind == journal.COMPLETIONS and rec.step is not None:
                        found[rec.step] = (offset, len(line))  # the later record of a step wins
                    offset += len(line)
        except OSError:
            return False
        self.where.update(found)
        for step in [s for s in self.where if s not in found]:
            del self.where[step]  # its entry points at bytes that hold no record of it
        return True


class CompletionsLibrary:
    """Every step's completions of one source, from wherever they are, read on demand.

    Sources, in order: the run folder's store; records still inline in an old journal (fed with
    `add_records`); TRL's `completions/*.parquet` files in an output dir. Steps held at once are
    bounded by a small cache, whatever the run's length.
    """

    def __init__(self, run_dir: Path | None = None, parquet_dir: Path | None = None, *, cache: int = 8) -> None:
        self.store = _Store(run_dir) if run_dir is not None else None
        self.parquet_dir = parquet_dir
        self._parquet: dict[int, Path] = {}
        self._inline: dict[int, tuple[list[dict[str, Any]], str]] = {}
        self._cache: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        self._cache_size = cache
        self._steps: list[int] | None = None
        self.last_step: int | None = None
        """Steps after this one are left out (a checkpoint replays what was logged up to it)."""
        self.version = 0
        self.warnings: list[str] = []

    def refresh(self) -> bool:
        """Look for new steps (store index, new parquet files); True when there are."""
        changed = bool(self.store and self.store.refresh())
        if self.parquet_dir is not None and self.parquet_dir.is_dir():
            for child in self.parquet_dir.iterdir():
                m = _PARQUET.match(child.name)
                if m and int(m.group(1)) not in self._parquet:
                    self._parquet[int(m.group(1))] = child
                    changed = True
        if changed:
            self._steps = None
            self.version += 1
        return changed

    def add_records(self, records: Iterable[journal.Record]) -> int:
        """Old journals carry the rows inline; a `completions_ref` says the store's index grew
        (read once a batch: a stat, and the new entries). A step written again (a resumed run)
        is read afresh."""
        n = 0
        pointed: set[int] = set()
        for rec in records:
            if rec.kind == journal.COMPLETIONS and isinstance(rec.data.get("rows"), list) and rec.step is not None:
                self._inline[rec.step] = (rec.data["rows"], str(rec.data.get("source") or ""))
                self._cache.pop(rec.step, None)
                n += 1
            elif rec.kind == journal.COMPLETIONS_REF and rec.step is not None:
                pointed.add(rec.step)
        if pointed and self.store is not None and self.store.refresh():
            for step in pointed:
                self._cache.pop(step, None)
            n += 1
        if n:
            self._steps = None
            self.version += 1
        return n

    def steps(self) -> list[int]:
        if self._steps is None:
            found = set(self._inline) | set(self._parquet)
            if self.store is not None:
                found |= set(self.store.where)
            if self.last_step is not None:
                found = {s for s in found if s <= self.last_step}
            self._steps = sorted(found)
        return self._steps

    def __len__(self) -> int:
        return len(self.steps())

    def rows(self, step: int) -> list[dict[str, Any]]:
        if step in self._cache:
            self._cache.move_to_end(step)
            return self._cache[step]
        rows = self.peek(step)
        self._cache[step] = rows
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return rows

    def peek(self, step: int) -> list[dict[str, Any]]:
        """One step's rows read afresh, the cache left alone: safe from a worker thread that
        scans many steps (following one prompt) while the UI thread reads through `rows`."""
        got = self.store.read(step) if self.store is not None else None
        if got is None and self.store is not None and step in self.store.damaged and step not in self._inline \
                and step not in self._parquet:
            note = f"{self.store.data}: step {step}'s record is damaged — its completions are left out"
            if note not in self.warnings:
                self.warnings.append(note)
        if got is None and step in self._inline:
            got = self._inline[step]
        if got is None and step in self._parquet:
            got = self._read_parquet(step)
        return [normalize(step, r, got[1]) for r in got[0] if isinstance(r, Mapping)] if got else []

    def _read_parquet(self, step: int) -> tuple[list[dict[str, Any]], str] | None:
        try:
            import pyarrow.parquet as pq

            table = pq.read_table(self._parquet[step]).to_pylist()
        except Exception as exc:  # noqa: BLE001 - a half-written parquet file: skip the step, keep the rest
            self.warnings.append(f"{self._parquet[step]}: unreadable ({type(exc).__name__}) — step {step}'s "
                                 "completions are left out")
            return None
        rows = []
        for r in table:
            rewards: dict[str, Any] = {}
            for key, value in r.items():
                if key not in _PARQUET_FIXED:
                    f = ts.to_float(value)
                    if f is not None or value is None:
                        rewards[key] = f
            rows.append({"prompt": r.get("prompt"), "completion": r.get("completion"), "rewards": rewards,
                         "advantage": r.get("advantage")})
        return rows, "parquet"

    def iter_rows(self, first: int | None = None, last: int | None = None) -> Iterable[dict[str, Any]]:
        """Every row of the steps in [first, last], one step in memory at a time (export)."""
        for step in self.steps():
            if (first is None or step >= first) and (last is None or step <= last):
                yield from self.rows(step)


def dumps_row(row: dict[str, Any]) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
