"""One metric panel: a textual-plotext plot of one or more series from one or more runs."""

from __future__ import annotations

import re
from typing import Literal, Sequence

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from cockpit.core.store import downsample, ema
from cockpit.core.panels import Panel
from cockpit.ui.rundata import RunData

XMode = Literal["step", "time"]


class MetricPlot(PlotextPlot, can_focus=True):
    """A panel of the plot grid. Focus it and pick a metric to replace what it shows.

    Drawing uses the widget's own `plt` (never the global plotext) and hands it
    at most ~2 points per column: the series are downsampled (MinMaxLTTB keeps
    spikes) after smoothing, and NaN/inf points are dropped so lines skip them.
    """

    POINTS_PER_COLUMN = 2

    def __init__(self, panel: Panel, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.panel = panel
        self.drawn_signature: object = None
        """What the plot last drew (source versions, settings, size); skip redraws when equal."""
        self.points_drawn = 0
        """How many points the last draw handed plotext (tests check the downsampling)."""
        self.labels_drawn: list[str] = []
        """The legend labels of the last draw, one per series."""

    def draw(self, sources: Sequence[RunData], *, x_mode: XMode, smoothing: float,
             colors: Sequence[tuple[int, int, int]]) -> None:
        plt = self.plt
        plt.clear_figure()
        n_out = max(16, self.size.width * self.POINTS_PER_COLUMN)
        multi = len(sources) > 1
        drawn = 0
        series_i = 0
        labels: list[str] = []
        lo, hi = np.inf, -np.inf
        x_used: XMode = x_mode
        if x_mode == "time" and not all(s.store.has_wall_time for s in sources):
            x_used = "step"
        for src in sources:
            keys = self.panel.resolve(src.store.keys())
            for key in keys:
                # Views, not copies (a 1M-point series is 16 MB); store steps are sorted.
                x, y = src.store.series(key, x=x_used, copy=False)
                if smoothing > 0 and len(y) > 2:
                    y = ema(y, smoothing)
                x, y = downsample(x, y, n_out, sorted_x=(x_used == "step"))
                if not len(x):
                    continue
                # One colour per drawn series (runs x keys); the legend names both.
                color = colors[series_i % len(colors)]
                label = f"{src.label}: {key}" if multi else key
                marker = "braille"
                if len(x) == 1:
                    plt.scatter(_floats(x), y.tolist(), color=color, label=label, marker="dot")
                else:
                    plt.plot(_floats(x), y.tolist(), color=color, label=label, marker=marker)
                drawn += len(x)
                lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
                labels.append(label)
                series_i += 1
        if drawn and hi > lo:
            ticks = np.linspace(lo, hi, 5).tolist()
            plt.yticks(ticks, [tick_label(t, hi - lo) for t in ticks])
        title = self.panel.title
        if smoothing > 0:
            title += f"  (smoothed {smoothing:.2f})"
        if not drawn:
            title += " — no data yet"
        plt.title(title)
        if x_mode == "time" and x_used == "step":
            plt.xlabel("step (no wall times in this source)")
        else:
            plt.xlabel("seconds" if x_used == "time" else "step")
        self.points_drawn = drawn
        self.labels_drawn = labels
        self.refresh()

    def render(self) -> RenderResult:
        """PlotextPlot.render, with two savings measured by bench/run.py (frame_4x1M_ms):
        a panel not drawn yet is blank (not an empty plotext figure built just before its
        first draw), and plotext's output is decoded by `ansi_to_text`, not Text.from_ansi."""
        if self.drawn_signature is None:
            return Text("")
        plot = self._plot
        plot.plotsize(self.size.width, self.size.height)
        plot._set_size(self.size.width, self.size.height)  # as PlotextPlot.render does
        plot.theme(self._get_plotext_theme_name(self.app.theme))
        return ansi_to_text(plot.build())


# An SGR run: colour codes, then the text they apply to.
_SGR_RUN = re.compile(r"((?:\x1b\[[0-9;]*m)*)([^\x1b]*)")
_STYLES: dict[str, Style] = {}


def ansi_to_text(ansi: str) -> Text:
    """Text.from_ansi for plotext's output, ~8x faster (3 ms → 0.4 ms a 78x20 panel).

    plotext writes colour codes only and closes every run of one colour with a reset, so
    the style of a run is the codes since the last reset; a plot has a handful of distinct
    ones, each parsed once by rich and cached. Same Text, segment for segment.
    """
    out = Text()
    append = out.append
    lines = ansi.split("\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        active = ""
        for codes, text in _SGR_RUN.findall(line):
            if codes:
                reset = codes.rfind("\x1b[0m")
                active = codes[reset + 4:] if reset >= 0 else active + codes
            if not text:
                continue
            if not active:
                append(text)
                continue
            style = _STYLES.get(active)
            if style is None:
                probe = Text.from_ansi(active + "x")
                style = _STYLES[active] = probe.spans[0].style if probe.spans else Style.null()
            append(text, style)
        if i < last:
            append("\n")
    return out


def _floats(x: np.ndarray) -> list[float]:
    return x.astype(np.float64).tolist() if x.dtype.kind != "f" else x.tolist()


def tick_label(value: float, span: float) -> str:
    """Short y labels: learning rates read 5e-05, not 0.0000500 (which eats the plot's width)."""
    if value == 0:
        return "0"
    mag = max(abs(value), span)
    if mag < 1e-2 or mag >= 1e5:
        return f"{value:.2e}".replace("e-0", "e-").replace("e+0", "e")
    return f"{value:.3g}"
