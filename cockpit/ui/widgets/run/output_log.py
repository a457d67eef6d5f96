"""The output tab: the trainer's stdout.log, wrapped to the tab's width (a traceback line is
read whole, not cut at the edge), with a key to the first line where an error starts."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from textual.binding import Binding
from textual.widgets import Log

from cockpit.run.diagnose import ERROR_LINE


def wrapped(line: str, width: int) -> list[str]:
    """One output line as the rows it takes at `width` (indentation kept, nothing dropped)."""
    if width < 8 or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, replace_whitespace=False, drop_whitespace=False,
                         break_on_hyphens=False) or [line]


class OutputLog(Log):
    """`raw_lines` are the output's lines; the rows shown are those lines wrapped."""

    BINDINGS = [Binding("exclamation_mark", "first_error", "First error",
                        tooltip="Scroll to the first line where an error starts", id="output.first_error")]

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(max_lines=max_lines * 4, id=id, highlight=False)
        self.keep = max_lines
        self.raw_lines: list[str] = []
        self._wrapped_at = 0

    def add_lines(self, lines: Iterable[str]) -> None:
        new = list(lines)
        self.raw_lines.extend(new)
        if len(self.raw_lines) > self.keep:
            del self.raw_lines[: len(self.raw_lines) - self.keep]
            self._rewrap()
            return
        if self._wrap_width() != self._wrapped_at:
            self._rewrap()
            return
        self.write_lines([row for line in new for row in wrapped(line, self._wrap_width())])

    def _wrap_width(self) -> int:
        return max(self.scrollable_content_region.width - 1, 0)

    def on_resize(self) -> None:
        self.call_after_refresh(self._rewrap_if_resized)

    def on_show(self) -> None:
        self.call_after_refresh(self._rewrap_if_resized)

    def _rewrap_if_resized(self) -> None:
        if self.display and self._wrap_width() != self._wrapped_at:
            self._rewrap()

    def _rewrap(self) -> None:
        self._wrapped_at = self._wrap_width()
        follow = self.is_vertical_scroll_end
        self.clear()
        self.write_lines([row for line in self.raw_lines for row in wrapped(line, self._wrapped_at)],
                         scroll_end=follow)

    def action_first_error(self) -> None:
        width = self._wrap_width()
        row = 0
        for line in self.raw_lines:
            if ERROR_LINE.match(line):
                self.scroll_to(y=row, animate=False)
                self.notify(f"first error: {line.strip()[:120]}", timeout=4)
                return
            row += len(wrapped(line, width))
        self.notify("no error in the output shown", timeout=2)
