"""One metric panel: a braille line chart of one or more series from one or more runs."""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
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

from cockpit.metrics import plot_colors, plotmath
from cockpit.metrics.panels import Panel, best_direction, is_eval, smoothing_for
from cockpit.metrics.rundata import RunData
from cockpit.metrics.store import MetricStore
from cockpit.ui.colors import rich_style
from cockpit.ui.text import printable
from cockpit.ui.widgets.run import braille
from cockpit.ui.widgets.run.plot_legend import Legend, elide, legend_names, place_legend
from cockpit.ui.widgets.run.plot_ticks import nice_ticks, short_value, tick_labels

XMode = Literal["step", "time"]
FAINT = 0.3
"""How much of its colour the raw series behind a smoothed line keeps (the rest: the canvas's)."""
OUTLIER_SPANS = 1.0
"""A point further than this many bulk spans (5th to 95th percentile) outside the bulk is cut
from the y range (and marked): with Gaussian noise, ~5 sigmas from the mean."""


def _pow10(t: float) -> float:
    """A log-y tick's value: 10**t, the largest float past the float's end (a tick above 1e308)."""
    try:
        return 10.0 ** t
    except OverflowError:
        return sys.float_info.max


@dataclass(frozen=True)
class View:
    """How the panels draw, beyond smoothing and the x axis: the keys `l` and `v` set it."""

    log_y: bool = False
    """A log10 y axis (values ≤ 0 are left out, and the title says so)."""
    robust: bool = True
    """The y range of the bulk of the points, outliers cut and marked (off: every point)."""
    x_window: tuple[int, int] | None = None
    """Only the steps from..to (inclusive); None: all of them."""


DEFAULT_VIEW = View()
LAST_STEP = 2**62
"""The end of a window picked as `FIRST-` (every step from FIRST on)."""


def window_text(window: tuple[int, int]) -> str:
    """`steps 200–1500`, `steps 1000–` (from 1000 on)."""
    return f"steps {window[0]}–{'' if window[1] >= LAST_STEP else window[1]}"


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
        self.slot_colors: list[tuple[int, int, int]] = []
        """The colour of each chart slot, in order (a smoothed series has two: its raw points,
        faint, and its line)."""
        self.faint_drawn: list[bool] = []
        """Which chart slots are drawn faint (the raw points behind a smoothed line)."""
        self.marks_drawn: list[str] = []
        """The letters the x axis carries (checkpoints, resumes, stops)."""
        self.clipped: tuple[int, int] = (0, 0)
        """Points the robust y range left out of the last draw: (above, below)."""
        self.yticks_drawn: list[str] = []
        self.xticks_drawn: list[str] = []
        self.chart: braille.Chart | None = None
        """What the last draw asked for; None until the first draw (the panel is blank)."""
        self._lines: list[Strip] | None = None
        """The rows of the last `build_lines` (None: build them at the next render)."""
        self._lines_key: object = None
        self._wanted: tuple | None = None
        """What the grid last asked this panel to show (sources, versions, settings)."""
        self._hidden_titles: tuple[str, str] | None = None
        """The titles set while the panel had no size (a hidden tab): not set again each tick."""

    def want(self, sources: Sequence[RunData], *, versions: tuple, x_mode: XMode,
             smoothing: float, colors: Sequence[tuple[int, int, int]], theme: str,
             view: View = DEFAULT_VIEW) -> bool:
        """Show these sources with these settings: drawn now when the panel has a size and its
        inputs changed (returns True), else kept for its first render (`build_lines`)."""
        self._wanted = (sources, versions, x_mode, smoothing, colors, theme, view)
        if not self.size.width:
            # The border is drawn before the rows: name the panel and its axis now.
            # A Text, never markup: a panel's title is a metric key from the run.
            titles = (self._title(), _axis_name(x_mode, _x_used(sources, x_mode)))
            if self.drawn_signature is None and titles == self._hidden_titles:
                return False  # hidden, and named so already: nothing to set at every tick
            self._hidden_titles = titles
            self.border_title = Text(titles[0])
            self.border_subtitle = titles[1]
            # No size: a hidden tab (or not laid out yet). The title just lost its legend, so
            # the next render with a size draws again, even at the size of the last draw.
            self.drawn_signature = None
            self.refresh()
            return False
        return self._draw_wanted()

    def _draw_wanted(self, *, refresh: bool = True) -> bool:
        if self._wanted is None:
            return False
        sources, versions, x_mode, smoothing, colors, theme, view = self._wanted
        sig = (versions, x_mode, round(smoothing, 3), self.panel, tuple(self.size), view, theme)
        if sig == self.drawn_signature:
            return False
        self.draw(sources, x_mode=x_mode, smoothing=smoothing, colors=colors, refresh=refresh, view=view)
        self.drawn_signature = sig
        return True

    def draw(self, sources: Sequence[RunData], *, x_mode: XMode, smoothing: float,
             colors: Sequence[tuple[int, int, int]], refresh: bool = True,
             view: View = DEFAULT_VIEW, size: tuple[int, int] | None = None) -> None:
        """Work out what to draw (`self.chart`, titles, legend) for the panel's size, or `size`."""
        width, height = size if size is not None else (self.size.width, self.size.height)
        n_out = max(16, width * self.POINTS_PER_COLUMN)
        multi = len(sources) > 1
        x_used = _x_used(sources, x_mode)
        # (source index, label, key, x, raw y, smoothing weight)
        raw: list[tuple[int, str, str, np.ndarray, np.ndarray, float]] = []
        for si, src in enumerate(sources):
            for key in self.panel.resolve(src.store.keys()):
                x, y = _points(src, key, x_used, n_out, 0.0, view.x_window)
                if not len(x):
                    continue
                weight = smoothing_for(key, src.store.count(key), smoothing, columns=width)
                raw.append((si, src.label, key, x, y, weight))
        # The y range from every point of the series (a sample the same at every panel width),
        # not from the points drawn: MinMaxLTTB keeps more of the extremes in a narrow panel.
        samples = [_y_sample(sources[si], key, view.x_window) for si, _, key, *_ in raw]
        linear = robust_range(samples) if any(len(v) for v in samples) else None
        clip = plotmath.smoothing_clip(*linear) if linear is not None and view.robust else None
        series = [(si, label, key, x, y,
                   _points(sources[si], key, x_used, n_out, weight, view.x_window, clip) if weight else None)
                  for si, label, key, x, y, weight in raw]
        line_colors = plot_colors.panel_colors([(si, key) for si, _, key, *_ in series], colors, multi=multi,
                                               keys=[s.store.keys() for s in sources])
        drawn = sum(len(x) for _, _, _, x, _, _ in series)
        notes = []
        unit = _time_unit([x for _, _, _, x, _, _ in series]) if x_used == "time" else 1.0
        lines: list[tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None, str]] = []
        cuts = _time_cuts(sources, unit) if x_used == "time" else {}
        for si, _, key, x, y, smooth in series:
            if view.log_y:
                y = _log(y)
                smooth = (smooth[0], _log(smooth[1])) if smooth is not None else None
            xs, ys = _break(x / unit, y, cuts.get(si, ()))
            sx = _break(smooth[0] / unit, smooth[1], cuts.get(si, ())) if smooth is not None else None
            lines.append((xs, ys, sx, key))
        if view.log_y:
            logged = [np.log10(v[v > 0]) for v in samples]
            if any(len(v) < len(s) for v, s in zip(logged, samples, strict=True)):
                notes.append("log y: ≤0 left out" if any(len(v) for v in logged) else "log y: nothing >0 (l: linear)")
            samples = logged
        title_parts = self._title_parts(sources[0] if sources else None)
        reading = [s.tail_from for s in sources if s.tail_from is not None]
        if reading:  # a long journal's first look: said until the whole is read
            notes.append(f"from step {min(reading)}: earlier steps being read…" if min(reading) > 1
                         else "the journal being read…")
        if not drawn:
            held = any(src.store.count(k) for src in sources for k in self.panel.resolve(src.store.keys()))
            notes.append("no finite value to draw" if held else "no data yet")
        title = _fit_title(title_parts, width - 4)
        title_text = Text(title)
        if multi and drawn:
            # A compare: each run's latest value, in that run's colour (not the first run's alone).
            title_text = Text(printable(self.panel.title))
            values = []
            for si, src in enumerate(sources):
                at = next((i for i, (sj, _, key, *_) in enumerate(series) if sj == si and not is_eval(key)), None)
                if at is not None:
                    values.append((_value_text(src, series[at][2]).split(" (", 1)[0], line_colors[at]))
            for i, (text, rgb) in enumerate(values):
                gap = " · " if i else " "
                if title_text.cell_len + len(gap) + cell_len(text) > width - 4:
                    break
                title_text.append(gap).append(text, Style(color=RichColor.from_rgb(*rgb)))
            title = title_text.plain
        # A lone series needs no legend (the title names it), unless it is one run of several.
        legend = Legend()
        if len(series) > 1 or multi:
            pairs = [(printable(label), printable(key)) for _, label, key, *_ in series]
            runs = [printable(src.label) for src in sources]  # a run is shortened alike in every panel
            legend = place_legend(
                legend_names(pairs, multi=multi), legend_names(pairs, multi=multi, short=True, runs=runs),
                line_colors, dotted=[is_eval(key) and len(series) > 1 for _, _, key, *_ in series], width=width,
                # A small panel keeps one legend row (the reward legend vanished at 100x30).
                max_rows=max(1 if height >= 6 else 0, min(height - self.MIN_PLOT_ROWS, max(2, height // 3))),
                border_room=width - 6 - cell_len(title))
        self.legend, self.legend_shown = legend.rows, legend.shown
        plot_rows = max(1, height - len(self.legend))
        self.yticks_drawn = self.xticks_drawn = []
        self.clipped = (0, 0)
        chart_series: list[braille.Series] = []
        slot_colors: list[tuple[int, int, int]] = []
        slot_faint: list[bool] = []
        # Raw series of smoothed lines first, faint: the smoothed lines are drawn over them.
        for (x, y, smooth, _), c in zip(lines, line_colors, strict=True):
            if smooth is not None:
                chart_series.append(braille.Series(x, y))
                slot_colors.append(c)
                slot_faint.append(True)
        for (x, y, smooth, key), c in zip(lines, line_colors, strict=True):
            if smooth is not None:
                x, y = smooth
            chart_series.append(braille.Series(x, y, dotted=is_eval(key) and len(lines) > 1))
            slot_colors.append(c)
            slot_faint.append(False)
        chart = braille.Chart(chart_series, xlim=(0.0, 1.0), ylim=(0.0, 1.0))
        finite = [np.isfinite(y) & np.isfinite(x) for x, y, _, _ in lines]
        finite_x = [x[ok] for (x, _, _, _), ok in zip(lines, finite, strict=True)]
        finite_y = [y[ok] for (_, y, _, _), ok in zip(lines, finite, strict=True)]
        if drawn and any(len(v) for v in finite_y) and any(len(v) for v in samples):
            x_lo = min(float(v.min()) for v in finite_x if len(v))
            x_hi = max(float(v.max()) for v in finite_x if len(v))
            if view.robust:
                y_lo, y_hi, _, _ = robust_range(samples)
            else:
                y_lo = min(float(v.min()) for v in samples if len(v))
                y_hi = max(float(v.max()) for v in samples if len(v))
            chart.xlim, chart.ylim = (x_lo, x_hi), (y_lo, y_hi)
            first_main = len(chart_series) - len(lines)
            clipped = []
            for i, (x, y) in enumerate(zip(finite_x, finite_y, strict=True)):
                for side, mask in ((1, y > y_hi), (-1, y < y_lo)):
                    if mask.any():
                        clipped += [(float(v), side, first_main + i) for v in x[mask]]
            chart.clipped = clipped
            self.clipped = (sum(1 for c in clipped if c[1] > 0), sum(1 for c in clipped if c[1] < 0))
            yt = _log_ticks(y_lo, y_hi) if view.log_y else []
            if len(yt) < 2:
                yt = nice_ticks(y_lo, y_hi, max(2, min(5, (plot_rows - 1) // 2)))
            labels = [short_value(_pow10(t)) for t in yt] if view.log_y else tick_labels(yt)
            self.yticks_drawn = labels
            chart.yticks = list(zip(yt, labels, strict=True))
            if not y_hi > y_lo:  # a flat series: one tick, the line in the middle
                pad = abs(y_lo) * 0.05 or 1.0
                chart.ylim = (y_lo - pad, y_hi + pad)
            label_w = max((len(t) for t in tick_labels(
                nice_ticks(x_lo, x_hi, 6, integer=x_used == "step"))), default=1)
            xt = nice_ticks(x_lo, x_hi, max(2, min(6, width // (label_w + 4))),
                            integer=x_used == "step")
            self.xticks_drawn = tick_labels(xt)
            chart.xticks = list(zip(xt, self.xticks_drawn, strict=True))
            if not x_hi > x_lo:
                chart.xlim = (x_lo - 1, x_hi + 1)
            chart.marks = run_marks(sources, x_used, unit)
            if x_used == "time" and view.x_window is None and chart.marks and x_hi > x_lo:
                # A stop comes after the last logged point: the time axis runs on to show it.
                chart.xlim = (x_lo, max(x_hi, max(x for x, _ in chart.marks)))
        elif drawn and not notes:
            notes.append("nothing finite to draw")
        clip_note = _clip_note(self.clipped)
        border_title = title_text
        if legend.in_border is not None:
            border_title.append("  ").append_text(legend.in_border)
        self.border_title = border_title
        self.marks_drawn = [m for _, m in chart.marks]
        # What the panel could not draw as asked is said in the bottom border, which has room.
        self.border_subtitle = " · ".join(
            [*([clip_note] if clip_note else []), *notes,
             _axis_name(x_mode, x_used, unit) + (
                 " · " + " ".join(f"{k} {v}" for k, v in MARK_NAMES.items() if k in self.marks_drawn)
                 if self.marks_drawn else "") + (
                 f" · {window_text(view.x_window)}" if view.x_window else "")])
        self.chart = chart
        self.points_drawn = drawn
        self.colors_drawn = line_colors
        self.slot_colors, self.faint_drawn = slot_colors, slot_faint
        self.labels_drawn = [f"{label}: {key}" if multi else key for _, label, key, *_ in series]
        self._lines = None
        if refresh:
            self.refresh()

    def _title_parts(self, source: RunData | None = None) -> tuple[str, str, str]:
        """The panel's name as text (a metric key from the run: escapes shown as `·`), the first
        source's latest value and best (`0.318 (min 0.316 @2900)`), and its eval twin's
        (`eval 0.733 (min 0.733 @3765)`)."""
        title = printable(self.panel.title)
        value = twin_value = ""
        if source is not None:
            keys = self.panel.resolve(source.store.keys())
            main = next((k for k in keys if not is_eval(k)), keys[0] if keys else None)
            value = _value_text(source, main) if main else ""
            twin = next((k for k in keys if is_eval(k) and k != main), None)
            if twin is not None and main is not None and not is_eval(main):
                twin_value = "eval " + _value_text(source, twin)
        return title, value, twin_value

    def _title(self, source: RunData | None = None) -> str:
        """`loss 0.318 (min 0.316 @2900) · eval 0.733 (min 0.733 @3765)`."""
        return _fit_title(self._title_parts(source), 10**6)

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
        key = (self.app.theme, tuple(self.slot_colors), tuple(self.faint_drawn))
        styles = _SLOT_STYLES.get(key)
        if styles is None:
            styles = _SLOT_STYLES[key] = self._make_slot_styles()
        return styles

    def _make_slot_styles(self) -> dict[int, Style]:
        blank = rich_style(self.app, "on $surface")
        styles = {braille.BLANK: blank, braille.AXIS: rich_style(self.app, "$foreground on $surface")}
        back = blank.bgcolor.get_truecolor() if blank.bgcolor is not None else (0, 0, 0)
        for slot, rgb in enumerate(self.slot_colors):
            if slot < len(self.faint_drawn) and self.faint_drawn[slot]:  # the raw series behind
                r, g, b = (round(c * FAINT + bg * (1 - FAINT)) for c, bg in zip(rgb, back, strict=True))
                rgb = (r, g, b)
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


def _axis_name(x_mode: XMode, x_used: XMode, unit: float = 1.0) -> str:
    if x_mode == "time" and x_used == "step":
        return "step (no wall times in this source)"
    if x_used != "time":
        return "step"
    return {3600.0: "hours", 60.0: "minutes"}.get(unit, "seconds")


def _time_unit(xs: Sequence[np.ndarray]) -> float:
    """Seconds a time axis unit holds: hours past 2 h, minutes past 2 min (a 10-hour run is
    not drawn in 36,000-second ticks)."""
    span = max((float(np.nanmax(x)) for x in xs if len(x)), default=0.0)
    return 3600.0 if span >= 7200 else 60.0 if span >= 120 else 1.0


def _points(src: RunData, key: str, x: XMode, n_out: int, smoothing: float,
            window: tuple[int, int] | None,
            clip: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A series for a plot, downsampled (and smoothed, values held to `clip`); only the steps in
    `window` when one is picked (smoothed over the whole series first, so the window's start is
    not a restart)."""
    if window is None:
        return src.store.plot_points(key, x, n_out=n_out, smoothing=smoothing, clip=clip)
    steps, _ = src.store.series(key, "step", copy=False)
    xs, ys = src.store.series(key, x, copy=False)
    if smoothing > 0 and len(ys) > 2:
        ys = plotmath.ema(ys, smoothing, clip)
    keep = (steps >= window[0]) & (steps <= window[1])
    return plotmath.downsample(xs[keep], ys[keep], n_out, sorted_x=(x == "step"))


Y_SAMPLE = 4096
"""Values of a series the y range is worked out from: every k-th one, and its lowest and highest."""


def _y_sample(src: RunData, key: str, window: tuple[int, int] | None) -> np.ndarray:
    """The finite values of a series (in the window) the y range is worked out from: all of them
    up to Y_SAMPLE, else an even sample with the lowest and highest. The same at every panel width,
    and two passes over a long series, not a sort."""
    steps, ys = src.store.series(key, "step", copy=False)
    if window is not None:
        ys = ys[(steps >= window[0]) & (steps <= window[1])]
    if len(ys) <= Y_SAMPLE:
        return ys[np.isfinite(ys)]
    sample = ys[::-(-len(ys) // Y_SAMPLE)]
    sample = sample[np.isfinite(sample)]
    with np.errstate(invalid="ignore"):
        lo, hi = float(np.fmin.reduce(ys)), float(np.fmax.reduce(ys))
    if not (math.isfinite(lo) and math.isfinite(hi)):  # ±inf logged: the finite ones' ends
        fin = ys[np.isfinite(ys)]
        if not len(fin):
            return fin
        lo, hi = float(fin.min()), float(fin.max())
    return np.concatenate([sample, [lo, hi]])


def _log(y: np.ndarray) -> np.ndarray:
    """log10 of the values; a value ≤ 0 has none and is left out (NaN: the line skips it)."""
    out = np.full(len(y), np.nan)
    pos = y > 0
    out[pos] = np.log10(y[pos])
    return out


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis (in log10 units) at whole powers of ten (`1e-5 · 1e-4`), every
    k-th one when there are many; at 1-2-5 steps in a range of less than two decades (`2 · 5 ·
    10 · 20`); none when even those are too few or too many."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    first, last = math.ceil(lo - 1e-9), math.floor(hi + 1e-9)
    if last - first > 10_000:
        return []
    powers = list(range(first, last + 1))
    if len(powers) >= 2:
        every = max(1, math.ceil(len(powers) / 5))
        return [float(p) for p in powers[::every]]
    for mults in ((1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 4, 5, 6, 8)):  # less than two decades: 1-2-5
        found = [math.log10(m) + e for e in range(first - 1, last + 1) for m in mults
                 if lo - 1e-9 <= math.log10(m) + e <= hi + 1e-9]
        if 2 <= len(found) <= 6:
            return found
    return []


def _break(x: np.ndarray, y: np.ndarray, cuts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The series with a gap (a NaN point) at each cut that falls between two of its points: the
    line is not drawn across the time a run was stopped."""
    if not len(cuts) or len(x) < 2:
        return x, y
    idx = np.searchsorted(x, np.asarray(cuts, dtype=np.float64))
    idx = np.unique(idx[(idx > 0) & (idx < len(x))])
    if not len(idx):
        return x, y
    return (np.insert(x.astype(np.float64), idx, np.nan), np.insert(y.astype(np.float64), idx, np.nan))


def _time_cuts(sources: Sequence[RunData], unit: float) -> dict[int, list[float]]:
    """Per source, where on its time axis it was resumed (the wall time of each `resumed from`):
    the time between its stop and that resume has no training to draw."""
    out: dict[int, list[float]] = {}
    for si, src in enumerate(sources):
        t0 = src.store.t0
        if t0 is None:
            continue
        cuts = [(a.t - t0) / unit for a in src.alerts if a.message.startswith("resumed from") and a.t]
        if cuts:
            out[si] = cuts
    return out


def robust_range(ys: Sequence[np.ndarray]) -> tuple[float, float, bool, bool]:
    """(low, high, cut below, cut above): the y range a panel draws. Where a few points lie far
    from all the others (loss 14.8 at the first log, ~0.5 after), the range is the bulk's (its
    5th to 95th percentile, and a margin) and those points are cut, and marked; points near
    the bulk are always in."""
    parts = [y for y in ys if len(y)]
    values = np.concatenate(parts) if parts else np.array([0.0])
    lo, hi = float(values.min()), float(values.max())
    if len(values) < 10 or not (math.isfinite(lo) and math.isfinite(hi)):
        return lo, hi, False, False
    q_lo, q_hi = (float(v) for v in plotmath.quantiles(values, (0.05, 0.95)))
    span = q_hi - q_lo
    if not (span > 0 and math.isfinite(span)):
        return lo, hi, False, False
    cut_lo, cut_hi = lo < q_lo - OUTLIER_SPANS * span, hi > q_hi + OUTLIER_SPANS * span
    return (q_lo - 0.05 * span if cut_lo else lo), (q_hi + 0.05 * span if cut_hi else hi), cut_lo, cut_hi


MARK_NAMES = {"C": "checkpoint", "R": "resume", "S": "stop"}
"""The letters on the x axis, and what each marks (named in the axis's caption)."""


def run_marks(sources: Sequence[RunData], x_used: XMode = "step", unit: float = 1.0) -> list[tuple[float, str]]:
    """(x, letter) of the first source's checkpoints, resumes and stops, for its x axis: at their
    step, or on a time axis at the time each happened (a checkpoint: the time of its step)."""
    if not sources:
        return []
    data = sources[0]
    t0 = data.store.t0
    if x_used == "time" and t0 is None:
        return []
    events: list[tuple[float, str, float | None]] = [
        (float(step), "C", None) for step, _ in data.checkpoints if step is not None]
    for alert in data.alerts:
        if alert.step is None:
            continue
        if alert.message.startswith("resumed from"):
            events.append((float(alert.step), "R", alert.t or None))
        elif alert.level != "warning" and alert.message.startswith("run ") \
                and not alert.message.startswith("run finished"):
            events.append((float(alert.step), "S", alert.t or None))  # an attempt's end (`run stopped: …`)
    if x_used == "step":
        return sorted({(step, letter) for step, letter, _ in events})
    assert t0 is not None
    key = next((k for k in data.store.keys() if data.store.count(k)), "")
    steps, secs = data.store.series(key, "step")[0], data.store.series(key, "time")[0]
    ok = np.isfinite(secs)
    out = set()
    for step, letter, t in events:
        if t is not None:
            out.add(((t - t0) / unit, letter))
        elif ok.any():
            out.add((float(np.interp(step, steps[ok], secs[ok])) / unit, letter))
    return sorted(out)


def _clip_note(clipped: tuple[int, int]) -> str:
    above, below = clipped
    parts = ([f"▲{above}"] if above else []) + ([f"▼{below}"] if below else [])
    return (" ".join(parts) + " off range") if parts else ""


def _fit_title(parts: tuple[str, str, str], room: int) -> str:
    """`name value (best) · eval value (best)` cut to `room` cells a piece at a time: the eval's
    best, the eval, the best, the value; the name itself last (shortened in the middle)."""
    name, value, twin = parts

    def bare(text: str) -> str:
        return text.split(" (", 1)[0]

    for v, t in ((value, twin), (value, bare(twin)), (bare(value), bare(twin)), (value, ""),
                 (bare(value), ""), ("", "")):
        text = " · ".join(p for p in (f"{name} {v}".rstrip(), t) if p)
        if cell_len(text) <= room:
            return text
    return elide(name, max(1, room))


def _value_text(source: RunData, key: str) -> str:
    """`0.318 (min 0.316 @2900)`: the latest value, and the best with its step for a metric
    that has one. The best is kept per (store, key) and brought up to date from the points
    logged since: a live panel's title costs nothing however long the run."""
    steps, values = source.store.series(key, "step", copy=False)
    n = len(values)
    direction = best_direction(key)
    kept = _BEST.setdefault(source.store, {})
    seen, best, best_step, last = kept.get(key, (0, None, None, None))
    if seen > n:  # a rewind: start over
        seen, best, best_step, last = 0, None, None, None
    tail, tail_steps = values[seen:], steps[seen:]
    finite = np.isfinite(tail)
    if finite.any():
        last = float(tail[finite][-1])
        if direction is not None:
            vals = np.where(finite, tail, np.inf if direction == "min" else -np.inf)
            i = int(np.argmin(vals) if direction == "min" else np.argmax(vals))
            if best is None or (vals[i] < best if direction == "min" else vals[i] > best):
                best, best_step = float(vals[i]), int(tail_steps[i])
    kept[key] = (n, best, best_step, last)
    if last is None:
        return ""
    if direction is None or best is None or n < 2 or source.tail_from is not None:
        return short_value(last)  # a first look's best would be its newest steps' alone
    return f"{short_value(last)} ({direction} {short_value(best)} @{best_step})"


_BEST: weakref.WeakKeyDictionary[MetricStore, dict[str, tuple[int, float | None, int | None, float | None]]] = \
    weakref.WeakKeyDictionary()
"""(points seen, best, its step, latest) per store and key, for panel titles."""


_SLOT_STYLES: dict[tuple[str, tuple[tuple[int, int, int], ...], tuple[bool, ...]], dict[int, Style]] = {}
"""Slot styles by (theme, series colours): a theme's variables are worked out anew on each
read, and a live view asks for the same few styles at every frame."""
