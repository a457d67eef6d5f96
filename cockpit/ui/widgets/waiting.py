"""A line for a wait the user sits through (the trainers loading, the loss mask measured, a
checkpoint loading to answer): a spinner, what is awaited, the seconds so far and how to get
out, ticking until the line is given its result."""

from __future__ import annotations

import time
from typing import Any

from textual.timer import Timer
from textual.widgets import Static

from cockpit.ui.text import literal, markup

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
"""Braille spinner frames: one cell wide in every font the plots already need."""


class Waiting(Static):
    """`wait(what, hint)` starts the spinner; `update(...)` (the result, an error) stops it."""

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._what = ""
        self._hint = ""
        self._since = 0.0
        self._frame = 0
        self._timer: Timer | None = None

    @property
    def waiting(self) -> bool:
        return self._timer is not None

    def wait(self, what: str, hint: str = "", *, since: float | None = None) -> None:
        """Show `⠋ what · 3 s · hint`, ticking, until the next `update`; the seconds count from
        now, or from `since` (a wall time: when the run started)."""
        self._what, self._hint = what, hint
        ago = max(0.0, time.time() - since) if since else 0.0
        self._since, self._frame = time.monotonic() - ago, 0
        if self._timer is None:
            self._timer = self.set_interval(0.25, self._tick)
        self._tick()

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(FRAMES)
        seconds = int(time.monotonic() - self._since)
        text = markup(f"[b $accent]{FRAMES[self._frame]}[/] $what [dim]· {seconds} s" +
                      (" · $hint" if self._hint else "") + "[/]", what=self._what, hint=self._hint)
        super().update(text)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        super().update(content, layout=layout)

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None


__all__ = ["Waiting", "literal"]
