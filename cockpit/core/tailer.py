"""Tail a growing file: read only appended bytes, complete lines only.

The habits come from toolong: keep a byte offset, keep the unfinished last line
for the next poll, notice truncation (the file got shorter) and replacement (a
new inode at the same path) and start over from the beginning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from cockpit.core import journal


@dataclass
class LineTailer:
    """Returns the complete lines appended since the last poll."""

    path: str | os.PathLike[str]
    offset: int = 0
    max_read: int = 64 * 1024 * 1024
    _partial: bytes = b""
    _inode: int | None = None
    restarts: int = 0

    def poll(self) -> list[bytes]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
            # Replaced or truncated: whatever we had is gone; read the new content whole.
            self.offset = 0
            self._partial = b""
            self.restarts += 1
        self._inode = st.st_ino
        if st.st_size == self.offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            chunk = fh.read(min(st.st_size - self.offset, self.max_read))
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line for line in lines if line.strip()]

    @property
    def pending(self) -> bytes:
        """The unfinished last line, held until its newline arrives."""
        return self._partial


@dataclass
class Tailer:
    """Tails a journal: decoded records since the last poll; undecodable lines are counted."""

    path: str | os.PathLike[str]
    skipped: int = 0
    newer_version: int = 0
    _lines: LineTailer = field(init=False)

    def __post_init__(self) -> None:
        self._lines = LineTailer(self.path)

    @property
    def offset(self) -> int:
        return self._lines.offset

    @property
    def restarts(self) -> int:
        return self._lines.restarts

    def poll(self) -> list[journal.Record]:
        out: list[journal.Record] = []
        for line in self._lines.poll():
            try:
                out.append(journal.decode(line))
            except journal.DecodeError as exc:
                self.skipped += 1
                if "newer" in str(exc):
                    self.newer_version += 1
        return out
