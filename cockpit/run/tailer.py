"""Tail a growing file: read only appended bytes, complete lines only.

The habits come from toolong: keep a byte offset, keep the unfinished last line
for the next poll, notice truncation (the file got shorter) and replacement (a
new inode at the same path) and start over from the beginning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import BinaryIO

from cockpit.run import journal

# How many of the last bytes read are kept to recognise the file on the next poll.
_TAIL_KEEP = 64


@dataclass
class LineTailer:
    """Returns the complete lines appended since the last poll (blank lines are dropped)."""

    path: str | os.PathLike[str]
    offset: int = 0
    max_read: int = 64 * 1024 * 1024
    _partial: bytes = b""
    _inode: tuple[int, int] | None = None
    _tail: bytes = b""
    """The last bytes read (up to _TAIL_KEEP): if the file no longer holds them at the same
    place, it was truncated and rewritten (to any size) between two polls."""
    restarts: int = 0

    def poll(self) -> list[bytes]:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed by the with below; open errors are handled apart
        except (FileNotFoundError, NotADirectoryError):
            return []
        with fh:
            # fstat the open file: a stat of the path could describe a file that is
            # replaced (or removed) before the open.
            st = os.fstat(fh.fileno())
            ident = (st.st_dev, st.st_ino)
            if self._inode is not None and (ident != self._inode or st.st_size < self.offset
                                            or not self._same_tail(fh)):
                # Replaced or truncated: whatever we had is gone; read the new content whole.
                self._restart()
            self._inode = ident
            if st.st_size <= self.offset:
                return []
            fh.seek(self.offset)
            chunk = fh.read(min(st.st_size - self.offset, self.max_read))
        self.offset += len(chunk)
        if chunk:
            self._tail = (self._tail + chunk[-_TAIL_KEEP:])[-_TAIL_KEEP:]
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        return [line for line in lines if line.strip()]

    def seek_end(self) -> None:
        """Start from what the file holds now: later polls return only lines appended after it."""
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed by the with below; open errors are handled apart
        except (FileNotFoundError, NotADirectoryError):
            return
        with fh:
            st = os.fstat(fh.fileno())
            self._inode = (st.st_dev, st.st_ino)
            self.offset = st.st_size
            fh.seek(max(0, st.st_size - _TAIL_KEEP))
            self._tail = fh.read()
        self._partial = b""

    def _same_tail(self, fh: BinaryIO) -> bool:
        if not self._tail:
            return True
        fh.seek(self.offset - len(self._tail))
        return fh.read(len(self._tail)) == self._tail

    def _restart(self) -> None:
        self.offset = 0
        self._partial = b""
        self._tail = b""
        self.restarts += 1

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

    def seek_end(self) -> None:
        self._lines.seek_end()

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
