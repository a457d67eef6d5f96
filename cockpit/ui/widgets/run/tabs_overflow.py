"""A marker at the right end of a tab bar too narrow for its tabs (a 60-column terminal): which
tabs are off screen and the keys that open them (`6 7 8 →`, `← 1 2`), so they are not simply missing."""

from __future__ import annotations

from textual.widgets import Static, Tab, TabbedContent, Tabs

DIGITS = str.maketrans("¹²³⁴⁵⁶⁷⁸⁹", "123456789")
"""A tab's label ends with its key as a superscript digit."""


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

    @classmethod
    def attach(cls, tabbed: TabbedContent) -> None:
        """Put a marker on `tabbed`'s tab bar; it keeps itself up to date."""
        bar = tabbed.query_one(Tabs)
        if not bar.query(cls):
            bar.mount(cls("", id="tabs-overflow"))

    def on_mount(self) -> None:
        self.set_interval(0.5, self.check)
        self.call_after_refresh(self.check)

    def off_screen(self) -> tuple[list[str], list[str]]:
        """The keys of the tabs not wholly on screen: those left of the visible ones, and right."""
        bar = self.parent
        if not isinstance(bar, Tabs) or not bar.region.width:
            return [], []
        shown = bar.query_one("#tabs-scroll").region  # what the bar shows (the marker docks beside it)
        left: list[str] = []
        beyond: list[str] = []
        for tab in bar.query("#tabs-list > Tab").results(Tab):
            if not tab.display:
                continue
            region = tab.region  # where the tab is drawn, scrolled: it may lie outside the bar
            label = str(tab.label).strip()
            key = label[-1].translate(DIGITS) if label else ""
            key = key if key.isdigit() else label
            if region.x < shown.x:
                left.append(key)
            elif region.right > shown.right:
                beyond.append(key)
        return left, beyond

    def check(self) -> None:
        bar = self.parent
        if isinstance(bar, Tabs) and bar.active_tab is not None and self.display:
            # The marker takes room from the bar (more as it grows): the active tab stays clear of it.
            scroller = bar.query_one("#tabs-scroll")
            shown, tab = scroller.region, bar.active_tab.region
            if shown.width and (tab.right > shown.right or tab.x < shown.x):
                shift = tab.right - shown.right if tab.right > shown.right else tab.x - shown.x
                scroller.scroll_to(x=scroller.scroll_x + shift, animate=False, force=True)
                self.call_after_refresh(self.check)
                return
        left, beyond = self.off_screen()
        parts = ([f"← {' '.join(left)}"] if left else []) + ([f"{' '.join(beyond)} →"] if beyond else [])
        text = " · ".join(parts)
        if text != str(self.render()) or bool(parts) != self.display:
            self.styles.min_width = None
            self.update(text)
            self.display = bool(parts)
            self.call_after_refresh(self.check)  # its new width moves the tabs: look again
            return
        cut = self._cut_on_the_right()
        if cut:  # a tab's start showing beside the marker (`A 6 7 8 →`): the marker covers it
            self.styles.min_width = self.region.width + cut
            self.call_after_refresh(self.check)

    def _cut_on_the_right(self) -> int:
        """The cells of a tab cut at the bar's right edge that show (0: none)."""
        bar = self.parent
        if not isinstance(bar, Tabs) or not self.display or not self.region.width:
            return 0
        shown = bar.query_one("#tabs-scroll").region
        for tab in bar.query("#tabs-list > Tab").results(Tab):
            region = tab.region
            if tab.display and region.x < shown.right < region.right:
                return shown.right - region.x
        return 0
