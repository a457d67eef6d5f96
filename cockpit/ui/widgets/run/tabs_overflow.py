"""A marker at the right end of a tab bar too narrow for its tabs (a 60-column terminal): which
tabs are off screen and the keys that open them (`6 7 8 →`, `← 1 2`), so they are not simply missing.

The marker also places the bar: which tabs show follows from the tabs' widths, the active tab and
the bar's width alone (`fit`), never from the scrolls before, so a screen looks the same however
fast it was reached; the bar starts on a tab's first cell and the marker covers the rest."""

from __future__ import annotations

from rich.cells import cell_len
from textual.widgets import Static, Tab, TabbedContent, Tabs

DIGITS = str.maketrans("¹²³⁴⁵⁶⁷⁸⁹", "123456789")
"""A tab's label ends with its key as a superscript digit."""
PADDING = 2
"""The marker's padding (one cell each side)."""


def marker_text(left: list[str], beyond: list[str]) -> str:
    parts = ([f"← {' '.join(left)}"] if left else []) + ([f"{' '.join(beyond)} →"] if beyond else [])
    return " · ".join(parts)


def fit(spans: list[tuple[int, int]], keys: list[str], active: int, room: int) -> tuple[int, int, str]:
    """(first, last, marker): the tabs first..last are shown whole and the marker names the others.
    `spans` are the tabs' (start, end) cells along the bar unscrolled, `room` the bar's width. The
    first tab shown is the earliest that keeps the active one on screen beside the marker, the last
    the furthest that fits then (everything fits: all, no marker)."""
    if not spans or spans[-1][1] - spans[0][0] <= room:
        return 0, len(spans) - 1, ""
    for first in range(active + 1):
        for last in range(len(spans) - 1, active - 1, -1):
            text = marker_text(keys[:first], keys[last + 1:])
            if spans[last][1] - spans[first][0] + cell_len(text) + PADDING <= room:
                return first, last, text
    return active, active, marker_text(keys[:active], keys[active + 1:])  # only the active one fits


class TabsOverflow(Static):
    DEFAULT_CSS = """
    TabsOverflow {
        dock: right;
        width: auto;
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-accent;
        text-style: bold;
        display: none;
    }
    """
    _placed: tuple[str, int | None] = ("", None)  # the text and width last put on screen (none at first)

    @classmethod
    def attach(cls, tabbed: TabbedContent) -> None:
        """Put a marker on `tabbed`'s tab bar; it keeps itself up to date."""
        bar = tabbed.query_one(Tabs)
        if not bar.query(cls):
            bar.mount(cls("", id="tabs-overflow"))

    def on_mount(self) -> None:
        bar = self.parent
        if isinstance(bar, Tabs):
            # After Tabs' own watcher, which starts an animated scroll to centre the new tab: placing
            # the bar stops it.
            self.watch(bar, "active", self.check, init=False)
        self.set_interval(0.5, self.check)  # a resize, a tab shown or hidden
        self.call_after_refresh(self.check)

    @staticmethod
    def _tabs(bar: Tabs) -> list[Tab]:
        return [t for t in bar.query("#tabs-list > Tab").results(Tab) if t.display]

    def check(self) -> None:
        """Place the bar as `fit` says: scrolled to the first tab shown, the marker over the rest."""
        bar = self.parent
        if not isinstance(bar, Tabs) or not bar.is_mounted:
            return
        tabs = self._tabs(bar)
        room = bar.content_region.width
        if not tabs or not room or not all(t.region.width for t in tabs):
            self.call_after_refresh(self.check)  # not laid out yet
            return
        origin = bar.query_one("#tabs-list").region.x
        spans = [(t.region.x - origin, t.region.right - origin) for t in tabs]
        active = next((i for i, t in enumerate(tabs) if t is bar.active_tab), 0)
        first, last, text = fit(spans, [_key(t) for t in tabs], active, room)
        scroller = bar.query_one("#tabs-scroll")
        x = spans[first][0] if text else 0
        if scroller.scroll_x != x:
            scroller.scroll_to(x=x, animate=False, force=True)
        width = room - (spans[last][1] - spans[first][0]) if text else None
        if (text, width) != self._placed:  # only a change: each update lays the screen out again
            self._placed = (text, width)
            self.update(text)
            self.styles.width = width
            self.display = bool(text)


def _key(tab: Tab) -> str:
    """The key that opens a tab (the superscript digit its label ends with), or its label."""
    label = str(tab.label).strip()
    key = label[-1].translate(DIGITS) if label else ""
    return key if key.isdigit() else label
