# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The run folder's completions store, the writing side: what the training process appends.

Each step's sampled rows go to `completions.jsonl` (one journal-encoded line a step) and a fixed
24-byte entry (step, offset, length) to `completions.idx`; the journal gets a `completions_ref`.
The reading side (an index read whole, rows decoded per step, TRL's parquet files) is
`cockpit.metrics.completions`. This half needs only the standard library, because the hook runs
it inside the user's own Python (see `cockpit.hook.bundle`).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from cockpit.files import open_own
from cockpit.run import journal

STORE = "completions.jsonl"
INDEX = "completions.idx"
ENTRY = struct.Struct("<qqq")  # step, offset, length


def as_text(value: Any) -> str:
    """A prompt/completion as text: conversational ones are lists of {"role", "content"}."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        content = value.get("content")
        role = value.get("role")
        text = as_text(content) if content is not None else str(value)
        return f"{role}: {text}" if role else text
    if isinstance(value, (list, tuple)):
        return "\n".join(as_text(v) for v in value)
    tolist = getattr(value, "tolist", None)  # numpy arrays from parquet
    if callable(tolist):
        return as_text(tolist())
    return str(value)


class CompletionsWriter:
    """The training side (rank 0): append a step's rows; returns the journal's pointer record."""

    def __init__(self, run_dir: Path) -> None:
        # Held for the run, never through a link (`files.open_own`).
        self._data = os.fdopen(open_own(Path(run_dir) / STORE, os.O_WRONLY | os.O_APPEND), "ab", buffering=0)
        self._index = os.fdopen(open_own(Path(run_dir) / INDEX, os.O_WRONLY | os.O_APPEND), "ab", buffering=0)

    def append(self, step: int, rows: list[dict[str, Any]], *, source: str) -> journal.Record:
        line = journal.encode(journal.completions(step, rows, source=source))
        offset = self._data.seek(0, os.SEEK_END)
        self._data.write(line)
        self._index.write(ENTRY.pack(step, offset, len(line)))  # only after the data is whole
        return journal.completions_ref(step, len(rows), source=source)

    def close(self) -> None:
        self._data.close()
        self._index.close()
