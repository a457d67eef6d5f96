"""The grid of metric panels; redraws only the panels whose inputs changed."""

from __future__ import annotations

from collections.abc import Sequence

from textual.containers import Grid

from cockpit.metrics.panels import Panel
from cockpit.metrics.rundata import RunData
from cockpit.ui.widgets.run.metric_plot import DEFAULT_VIEW, MetricPlot, View, XMode


class PlotGrid(Grid):
    """Panels in two or three columns, depending on how many there are; the last panel widens
    over a short last row (no empty slot)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.panels: list[Panel] = []

    async def set_panels(self, panels: Sequence[Panel]) -> None:
        """Replace the panels (only when the list changed: mounting plots is not free)."""
        panels = list(panels)
        if panels == self.panels and len(self.plots()) == len(panels):
            return
        self.panels = panels
        focused_index = self._focused_index()
        await self.remove_children()
        await self.mount_all([MetricPlot(p, classes="metric-plot") for p in panels])
        self.zoom(None)
        if focused_index is not None and self.plots():
            self.plots()[min(focused_index, len(self.plots()) - 1)].focus()

    def zoom(self, plot: MetricPlot | None) -> None:
        """One panel alone on the whole grid (`z`), or all of them again (None)."""
        plots = self.plots()
        for p in plots:
            p.display = plot is None or p is plot
            p.styles.column_span = 1
        columns = 1 if plot is not None else 2 if len(plots) <= 4 else 3
        self.styles.grid_size_columns = max(1, columns)
        left = len(plots) % columns if plot is None and plots else 0
        if left:  # no empty slot: the last panel of a short last row takes the rest of it
            plots[-1].styles.column_span = columns - left + 1

    @property
    def zoomed(self) -> MetricPlot | None:
        shown = [p for p in self.plots() if p.display]
        return shown[0] if len(shown) == 1 and len(self.plots()) > 1 else None

    def plots(self) -> list[MetricPlot]:
        return list(self.query(MetricPlot))

    def focused_plot(self) -> MetricPlot | None:
        focused = self.app.focused
        return focused if isinstance(focused, MetricPlot) and focused.parent is self else None

    def _focused_index(self) -> int | None:
        plot = self.focused_plot()
        return self.plots().index(plot) if plot is not None else None

    def redraw(self, sources: Sequence[RunData], *, x_mode: XMode, smoothing: float,
               colors: Sequence[tuple[int, int, int]], theme: str, view: View = DEFAULT_VIEW) -> int:
        """Redraw the panels whose data, settings, size or theme changed; returns how many.
        A panel with no size yet (just mounted) keeps what it was asked for and draws it when
        it is first rendered, so its data is in the very frame that lays it out."""
        versions = tuple((id(s), s.store.version) for s in sources)
        return sum(plot.want(sources, versions=versions, x_mode=x_mode, smoothing=smoothing,
                             colors=colors, theme=theme, view=view)
                   for plot in self.plots())
