"""stdout.log as a person reads it: the trainer's output, its progress bars at their last state.

The trainer (and the libraries it calls) write to stdout.log what they would write to a
terminal: tqdm redraws its bar with `\\r` and moves the cursor between nested bars, rich draws
tables. `readable_lines` turns such bytes into lines of text for a screen; `OutputTail` follows
the file from its last `TAIL_BYTES`. Text from the run is made printable here (`text.printable`):
no control character reaches a terminal.
"""

from __future__ import annotations

import os
import re

from cockpit.run.tailer import LineTailer
from cockpit.text import printable

TAIL_BYTES = 256 * 1024
"""How much of the end of stdout.log is read when following starts."""

_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
"""Terminal control sequences (tqdm's cursor-up between nested bars, colours): not text."""
_PROGRESS_END = re.compile(r"\[\d+:\d\d(?::\d\d)?(?:<[^\]]*)?(?:,[^\]]*)?\]")
"""Where a tqdm state ends: its `[00:01<00:04, 23.69it/s]` (or `[00:00, 64 examples/s]`)."""


def readable_lines(raw: list[bytes]) -> list[str]:
    """stdout.log lines as text. A line redrawn with \\r (a progress bar) shows its last state,
    on its own line: text written before the first \\r (the end of a table) keeps its own line,
    and text another writer put right after the bar (rich starts a table there) goes to the next
    one. A bar cleared at the end leaves nothing."""
    out = []
    for line in raw:
        text = _CSI.sub("", line.decode("utf-8", errors="replace").rstrip("\r"))
        if "\r" not in text:
            out.append(printable(text))
            continue
        parts = text.split("\r")
        first, last = parts[0], parts[-1]
        if first.strip() and not _PROGRESS_END.search(first):
            out.append(printable(first))
        end = _PROGRESS_END.search(last)
        if end and last[end.end():].strip():
            out.append(printable(last[:end.end()]))
            out.append(printable(last[end.end():]))
        elif last.strip():
            out.append(printable(last))
    return out


class OutputTail:
    """stdout.log followed from its last TAIL_BYTES: `first()` once, then `poll()`, each giving
    the readable lines that were new."""

    def __init__(self, path: str | os.PathLike[str], *, tail_bytes: int = TAIL_BYTES) -> None:
        self._lines = LineTailer(path)
        self._tail_bytes = tail_bytes

    @property
    def offset(self) -> int:
        return self._lines.offset

    def first(self, max_lines: int) -> list[str]:
        """The last `max_lines` lines of the file's end (a line cut in the middle by the start of
        the tail is left out)."""
        try:
            size = os.stat(self._lines.path).st_size
        except OSError:
            size = 0
        cut = size > self._tail_bytes
        self._lines.offset = max(0, size - self._tail_bytes)
        raw = self._lines.poll()
        if cut and raw:
            raw = raw[1:]
        return readable_lines(raw[-max_lines:])

    def poll(self) -> list[str]:
        return readable_lines(self._lines.poll())
