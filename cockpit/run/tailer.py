# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""Tail a growing file: read only appended bytes, complete lines only.

The habits come from toolong: keep a byte offset, keep the unfinished last line
for the next poll, notice truncation (the file got shorter) and replacement (a
new inode at the same path) and start over from the beginning.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO

from cockpit.files import NotRegularFile, open_regular
from cockpit.run import journal

MAX_LINE = 16 * 1024 * 1024
"""The longest line a reader keeps: a journal line is a few hundred bytes (a finding with its
evidence, some KB); a longer one is damage (a 1 GB line of garbage) and is skipped, and counted
in `too_long`, without ever being held whole in memory."""

# How many of the last bytes read are kept to recognise the file on the next poll.
_TAIL_KEEP = 64


@dataclass
class LineTailer:
    """Returns the complete lines appended since the last poll (blank lines are dropped).

    Only a regular file is read (`files.open_regular`): a FIFO, a device such as /dev/zero, or a
    link to one is never read, and `refused` says why. A line longer than `max_line` is dropped as
    it is read, and counted in `too_long`."""

    path: str | os.PathLike[str]
    offset: int = 0
    max_read: int = 64 * 1024 * 1024
    max_line: int = MAX_LINE
    too_long: int = 0
    """Lines longer than `max_line`, skipped."""
    refused: str | None = None
    """Why the path is not read (not a regular file), or None."""
    _partial: bytes = b""
    _discarding: bool = False
    _inode: tuple[int, int] | None = None
    _tail: bytes = b""
    """The last bytes read (up to _TAIL_KEEP): if the file no longer holds them at the same
    place, it was truncated and rewritten (to any size) between two polls."""
    restarts: int = 0

    def poll(self, upto: int | None = None) -> list[bytes]:
        """The complete lines appended since the last poll; with `upto`, only those the file held
        below that byte offset (what was there at a given moment)."""
        try:
            fh = open_regular(self.path)
        except NotRegularFile as exc:
            self.refused = f"{exc.strerror}"
            return []
        except (FileNotFoundError, NotADirectoryError):
            return []
        self.refused = None
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
            end = st.st_size if upto is None else min(st.st_size, upto)
            if end <= self.offset:
                return []
            fh.seek(self.offset)
            chunk = fh.read(min(end - self.offset, self.max_read))
        self.offset += len(chunk)
        if chunk:
            self._tail = (self._tail + chunk[-_TAIL_KEEP:])[-_TAIL_KEEP:]
        if self._discarding:  # inside a line too long to keep: drop up to its end
            end = chunk.find(b"\n")
            if end < 0:
                return []
            chunk, self._discarding = chunk[end + 1:], False
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > self.max_line:
            self._partial, self._discarding = b"", True
            self.too_long += 1
        out = []
        for line in lines:
            if len(line) > self.max_line:
                self.too_long += 1
            elif line.strip():
                out.append(line)
        return out

    def seek_end(self) -> None:
        """Start from what the file holds now: later polls return only lines appended after it."""
        try:
            fh = open_regular(self.path)
        except OSError:
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
        self._discarding = False
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
    _invalid: int = field(init=False, default=0)
    _too_long_seen: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._lines = LineTailer(self.path)

    @property
    def offset(self) -> int:
        return self._lines.offset

    @property
    def restarts(self) -> int:
        return self._lines.restarts

    @property
    def max_read(self) -> int:
        """The most bytes one poll reads."""
        return self._lines.max_read

    @max_read.setter
    def max_read(self, n: int) -> None:
        self._lines.max_read = n

    @property
    def too_long(self) -> int:
        """Lines longer than `tailer.MAX_LINE`, skipped (counted in `skipped` too)."""
        return self._lines.too_long

    @property
    def refused(self) -> str | None:
        """Why the journal is not read (a FIFO, a device), or None."""
        return self._lines.refused

    def problems(self) -> list[str]:
        """What was skipped, one phrase each, for a reader to say: lines too long, records of the
        wrong shape, lines that are not records, a path that is not a regular file."""
        out = []
        if self.refused:
            out.append(f"not read: {self.refused}")
        if self.too_long:
            out.append(f"{self.too_long} line(s) longer than {MAX_LINE // 2**20} MB skipped")
        if self._invalid:
            out.append(f"{self._invalid} record(s) with fields of the wrong type skipped")
        other = self.skipped - self.too_long - self._invalid - self.newer_version
        if other > 0:
            out.append(f"{other} unreadable line(s) skipped")
        if self.newer_version:
            out.append(f"{self.newer_version} line(s) written by a newer cockpit skipped — upgrade cockpit to see them")
        return out

    def seek_end(self) -> None:
        self._lines.seek_end()

    def poll(self, upto: int | None = None, held: Mapping[bytes, deque[bytes]] | None = None) -> list[journal.Record]:
        """The records appended since the last poll; with `held` (kind -> a bounded deque), the
        lines of those kinds go to their deque undecoded (`hold_back`) for the caller to decode."""
        lines = self._lines.poll(upto)
        if self._lines.too_long != self._too_long_seen:
            self.skipped += self._lines.too_long - self._too_long_seen
            self._too_long_seen = self._lines.too_long
        if held:
            lines = hold_back(lines, held)
        return self.decode(lines)

    def decode(self, lines: Iterable[bytes]) -> list[journal.Record]:
        """Lines of this journal as records; those that do not decode are counted (`problems`)."""
        out: list[journal.Record] = []
        for line in lines:
            try:
                out.append(journal.decode(line))
            except journal.InvalidRecord:
                self.skipped += 1
                self._invalid += 1
            except journal.DecodeError as exc:
                self.skipped += 1
                if "newer" in str(exc):
                    self.newer_version += 1
        return out


def hold_back(lines: list[bytes], held: Mapping[bytes, deque[bytes]]) -> list[bytes]:
    """`lines` without those of the kinds in `held` (kind -> a deque, bounded to the newest
    lines its reader needs), which go to their deque undecoded. A line's kind is the text after
    its first `"kind":"`, found with a byte search near its start: the codec writes it before the
    record's `"data"` (a line whose first one comes after `"data":` is kept: that text is inside
    its data). A 100,000-step GRPO journal is a progress and a completions_ref line a step beside
    its metrics, and opening it needs the newest of those alone: only they are decoded."""
    out: list[bytes] = []
    for line in lines:
        at = line.find(b'"kind":"')
        if at >= 0 and line.find(b'"data":', 0, at) < 0:
            q = held.get(line[at + 8:line.find(b'"', at + 8)])
            if q is not None:
                q.append(line)
                continue
        out.append(line)
    return out
