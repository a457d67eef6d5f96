"""One metric panel: a braille line chart of one or more series from one or more runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from rich.cells import cell_len
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.strip import Strip
from textual.widget import Widget

from cockpit.metrics.panels import Panel
from cockpit.metrics.rundata import RunData
from cockpit.ui.colors import rich_style
from cockpit.ui.text import printable
from cockpit.ui.widgets.run import braille
from cockpit.ui.widgets.run.plot_legend import Legend, distinct_colors, legend_names, place_legend
from cockpit.ui.widgets.run.plot_ticks import nice_ticks, tick_labels

XMode = Literal["step", "time"]


class MetricPlot(Widget, can_focus=True):
    """A panel of the plot grid. Focus it and pick a metric to replace what it shows.

    `draw` reads the series and keeps what to draw (`braille.Chart`), at most ~2 points a
    column: the series are downsampled (MinMaxLTTB keeps spikes) after smoothing, and
    NaN/inf points are dropped so lines skip them. The rows are built from it at the next
    render (`build_lines`, for the size and theme of that moment) and handed to Textual line
    by line (`render_line`).

    Nothing is drawn over the data: the title sits in the top border, the x axis name in
    the bottom one, and the legend (one coloured `━━ label` per series) in rows of its
    own above the plot, the plot getting what is left.
    """

    DEFAULT_CSS = """
    MetricPlot {
        width: 1fr;
        height: 1fr;
    }
    """

    POINTS_PER_COLUMN = 2
    MIN_PLOT_ROWS = 8
    """Rows the plot keeps however long the legend is: frame, x axis and tick labels, and at
    least five rows of canvas."""

    def __init__(self, panel: Panel, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.panel = panel
        self.drawn_signature: object = None
        """What the plot last drew (source versions, settings, size); skip redraws when equal."""
        self.points_drawn = 0
        """How many points the last draw handed the chart (tests check the downsampling)."""
        self.labels_drawn: list[str] = []
        """The full name of each series of the last draw (`run: key` in an overlay)."""
        self.legend: list[Text] = []
        """The legend rows of the last draw (shown above the plot, never on it)."""
        self.legend_shown: list[str] = []
        """The label each drawn series has in the legend, in order (shortened to fit)."""
        self.colors_drawn: list[tuple[int, int, int]] = []
        """The colour of each drawn series, in order (the legend uses the same)."""
        self.yticks_drawn: list[str] = []
        self.xticks_drawn: list[str] = []
        self.chart: braille.Chart | None = None
        """What the last draw asked for; None until the first draw (the panel is blank)."""
        self._lines: list[Strip] | None = None
        """The rows of the last `build_lines` (None: build them at the next render)."""
        self._lines_key: object = None
        self._wanted: tuple | None = None
        """What the grid last asked this panel to show (sources, versions, settings)."""

    def want(self, sources: Sequence[RunData], *, versions: tuple, x_mode: XMode,
             smoothing: float, colors: Sequence[tuple[int, int, int]], theme: str) -> bool:
        """Show these sources with these settings: drawn now when the panel has a size and its
        inputs changed (returns True), else kept for its first render (`build_lines`)."""
        self._wanted = (sources, versions, x_mode, smoothing, colors, theme)
        if not self.size.width:
            # The border is drawn before the rows: name the panel and its axis now.
            # A Text, never markup: a panel's title is a metric key from the run.
            self.border_title = Text(self._title(smoothing))
            self.border_subtitle = _axis_name(x_mode, _x_used(sources, x_mode))
            # No size: a hidden tab (or not laid out yet). The title just lost its legend, so
            # the next render with a size draws again, even at the size of the last draw.
            self.drawn_signature = None
            self.refresh()
            return False
        return self._draw_wanted()

    def _draw_wanted(self, *, refresh: bool = True) -> bool:
        if self._wanted is None:
            return False
        sources, versions, x_mode, smoothing, colors, theme = self._wanted
        sig = (versions, x_mode, round(smoothing, 3), self.panel, tuple(self.size), theme)
        if sig == self.drawn_signature:
            return False
        self.draw(sources, x_mode=x_mode, smoothing=smoothing, colors=colors, refresh=refresh)
        self.drawn_signature = sig
        return True

    def draw(self, sources: Sequence[RunData], *, x_mode: XMode, smoothing: float,
             colors: Sequence[tuple[int, int, int]], refresh: bool = True) -> None:
        width, height = self.size.width, self.size.height
        n_out = max(16, width * self.POINTS_PER_COLUMN)
        multi = len(sources) > 1
        drawn = 0
        x_used = _x_used(sources, x_mode)
        series: list[tuple[str, str, np.ndarray, np.ndarray]] = []  # (source label, key, x, y)
        for src in sources:
            for key in self.panel.resolve(src.store.keys()):
                # Smoothed, then MinMaxLTTB to n_out points; the store keeps a summary of
                # what it has downsampled, so a redraw reads only the points since.
                x, y = src.store.plot_points(key, x_used, n_out=n_out, smoothing=smoothing)
                if len(x):
                    series.append((src.label, key, x, y))
        palette = distinct_colors(colors, len(series))
        x_lo = y_lo = np.inf
        x_hi = y_hi = -np.inf
        for _, _, x, y in series:
            drawn += len(x)
            x_lo, x_hi = min(x_lo, float(x.min())), max(x_hi, float(x.max()))
            y_lo, y_hi = min(y_lo, float(y.min())), max(y_hi, float(y.max()))
        title = self._title(smoothing)
        if not drawn:
            title += " — no data yet"
        # A lone series needs no legend (the title names it), unless it is one run of several.
        legend = Legend()
        if len(series) > 1 or multi:
            pairs = [(label, key) for label, key, _, _ in series]
            pairs = [(printable(label), printable(key)) for label, key in pairs]
            legend = place_legend(
                legend_names(pairs, multi=multi), legend_names(pairs, multi=multi, short=True),
                palette, width=width,
                max_rows=max(0, min(height - self.MIN_PLOT_ROWS, max(2, height // 3))),
                border_room=width - 6 - cell_len(title))
        self.legend, self.legend_shown = legend.rows, legend.shown
        border_title = Text(title)
        if legend.in_border is not None:
            border_title.append("  ").append_text(legend.in_border)
        self.border_title = border_title
        plot_rows = max(1, height - len(self.legend))
        self.yticks_drawn = self.xticks_drawn = []
        chart = braille.Chart([braille.Series(x, y) for _, _, x, y in series],
                              xlim=(0.0, 1.0), ylim=(0.0, 1.0))
        if drawn:
            chart.xlim, chart.ylim = (x_lo, x_hi), (y_lo, y_hi)
            yt = nice_ticks(y_lo, y_hi, max(2, min(5, (plot_rows - 1) // 2)))
            self.yticks_drawn = tick_labels(yt)
            chart.yticks = list(zip(yt, self.yticks_drawn, strict=True))
            if y_hi == y_lo:  # a flat series: one tick, the line in the middle
                pad = abs(y_lo) * 0.05 or 1.0
                chart.ylim = (y_lo - pad, y_hi + pad)
            label_w = max(len(t) for t in tick_labels(
                nice_ticks(x_lo, x_hi, 6, integer=x_used == "step")))
            xt = nice_ticks(x_lo, x_hi, max(2, min(6, width // (label_w + 4))),
                            integer=x_used == "step")
            self.xticks_drawn = tick_labels(xt)
            chart.xticks = list(zip(xt, self.xticks_drawn, strict=True))
            if x_hi == x_lo:
                chart.xlim = (x_lo - 1, x_hi + 1)
        self.border_subtitle = _axis_name(x_mode, x_used)
        self.chart = chart
        self.points_drawn = drawn
        self.colors_drawn = palette[: len(series)]
        self.labels_drawn = [f"{label}: {key}" if multi else key for label, key, _, _ in series]
        self._lines = None
        if refresh:
            self.refresh()

    def _title(self, smoothing: float) -> str:
        """The panel's name as text (a metric key from the run: escapes shown as `·`)."""
        return printable(self.panel.title) + (f" (smoothed {smoothing:.2f})" if smoothing > 0 else "")

    def render_line(self, y: int) -> Strip:
        """Textual's line API: the rows are built once per draw, size and theme (`build_lines`)
        and handed out from there."""
        if self._lines is None or self._lines_key != (self.size, self.app.theme):
            self.build_lines()
        lines = self._lines or []
        if 0 <= y < len(lines):
            return lines[y]
        return Strip.blank(self.size.width, self.rich_style)

    def build_lines(self) -> list[Strip]:
        """Build (and keep) the panel's rows: the legend rows first, the chart in the rows
        left below them, in the theme's foreground on its surface colour."""
        if self.size.width:  # asked for before it had a size: drawn now, in this frame
            border = (str(self.border_title), str(self.border_subtitle))
            if self._draw_wanted(refresh=False) and border != (str(self.border_title),
                                                               str(self.border_subtitle)):
                self.call_after_refresh(self.refresh)  # a legend or note the border now holds
        width, height = self.size
        base = self.rich_style
        self._lines_key = (self.size, self.app.theme)
        if self.chart is None or not width or not height:
            self._lines = [Strip.blank(width, base)] * height
            return self._lines
        legend = self.legend[: max(0, height - 1)]
        console = self.app.console
        lines = [Strip(list(row.render(console, end=""))).apply_style(base).crop_extend(0, width, base)
                 for row in legend]
        styles = self._slot_styles()
        for row in braille.render(self.chart, width, max(1, height - len(legend))):
            lines.append(Strip([Segment(text, styles[slot]) for text, slot in row], width))
        self._lines = lines[:height]
        return self._lines

    def _slot_styles(self) -> dict[int, Style]:
        """The style of each chart slot: axes in the theme's foreground, each series its
        colour, all on the theme's surface (as the rest of the app's panels)."""
        key = (self.app.theme, tuple(self.colors_drawn))
        styles = _SLOT_STYLES.get(key)
        if styles is None:
            styles = _SLOT_STYLES[key] = self._make_slot_styles()
        return styles

    def _make_slot_styles(self) -> dict[int, Style]:
        blank = rich_style(self.app, "on $surface")
        styles = {braille.BLANK: blank, braille.AXIS: rich_style(self.app, "$foreground on $surface")}
        for slot, rgb in enumerate(self.colors_drawn):
            styles[slot] = Style(color=RichColor.from_rgb(*rgb), bgcolor=blank.bgcolor)
        return styles

    def render(self) -> RenderResult:
        """The panel as one `Text` (what it shows, for tests and text selection); the screen
        draws it line by line through `render_line`."""
        lines = self._lines if self._lines is not None else self.build_lines()
        return Text("\n", no_wrap=True).join(
            Text.assemble(*((seg.text, seg.style or "") for seg in strip)) for strip in lines)


def _x_used(sources: Sequence[RunData], x_mode: XMode) -> XMode:
    """The x axis a panel can draw: wall time only when every source has it."""
    if x_mode == "time" and not all(s.store.has_wall_time for s in sources):
        return "step"
    return x_mode


def _axis_name(x_mode: XMode, x_used: XMode) -> str:
    if x_mode == "time" and x_used == "step":
        return "step (no wall times in this source)"
    return "seconds" if x_used == "time" else "step"


_SLOT_STYLES: dict[tuple[str, tuple[tuple[int, int, int], ...]], dict[int, Style]] = {}
"""Slot styles by (theme, series colours): a theme's variables are worked out anew on each
read, and a live view asks for the same few styles at every frame."""
