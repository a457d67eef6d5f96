"""One metric panel: a textual-plotext plot of one or more series from one or more runs."""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np
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
                x, y = src.store.series(key, x=x_used)
                if smoothing > 0 and len(y) > 2:
                    y = ema(y, smoothing)
                x, y = downsample(x, y, n_out)
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
