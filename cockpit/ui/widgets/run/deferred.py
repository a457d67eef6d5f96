"""A pane held back until the run view's first frame is drawn.

A run view composes eight tabs, and all but the plots start hidden. Mounting their panes
(tables, text areas, their CSS) before the first frame made a replay wait ~0.5 s more for
its plots (issue 33); held in a `Deferred`, each is mounted right after the first frame
(`RunView.reveal_panes`), or at once when its tab is opened first.
"""

from __future__ import annotations

from textual.widget import Widget


class Deferred(Widget):
    """Stands in for `widget` in its tab until `reveal` mounts it in its place."""

    DEFAULT_CSS = "Deferred { display: none; }"

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget
        self._revealed = False

    async def reveal(self) -> None:
        """Mount the pane where this stands, then go; a second call does nothing."""
        parent = self.parent
        if self._revealed or not self.is_attached or not isinstance(parent, Widget):
            return
        self._revealed = True
        await parent.mount(self.widget, after=self)
        await self.remove()
