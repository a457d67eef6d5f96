"""One metric panel: a textual-plotext plot of one or more series from one or more runs."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from cockpit.metrics.panels import Panel
from cockpit.metrics.plotmath import downsample, ema
from cockpit.metrics.rundata import RunData

XMode = Literal["step", "time"]


class MetricPlot(PlotextPlot, can_focus=True):
    """A panel of the plot grid. Focus it and pick a metric to replace what it shows.

    Drawing uses the widget's own `plt` (never the global plotext) and hands it
    at most ~2 points per column: the series are downsampled (MinMaxLTTB keeps
    spikes) after smoothing, and NaN/inf points are dropped so lines skip them.

    Nothing is drawn over the data: the title sits in the top border, the x axis name in
    the bottom one, and the legend (one coloured `━━ label` per series) in rows of its
    own above the plot, the plot getting what is left.
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
        """How many points the last draw handed plotext (tests check the downsampling)."""
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

    def draw(self, sources: Sequence[RunData], *, x_mode: XMode, smoothing: float,
             colors: Sequence[tuple[int, int, int]]) -> None:
        plt = self.plt
        plt.clear_figure()
        width, height = self.size.width, self.size.height
        n_out = max(16, width * self.POINTS_PER_COLUMN)
        multi = len(sources) > 1
        drawn = 0
        x_used: XMode = x_mode
        if x_mode == "time" and not all(s.store.has_wall_time for s in sources):
            x_used = "step"
        series: list[tuple[str, str, np.ndarray, np.ndarray]] = []  # (source label, key, x, y)
        for src in sources:
            for key in self.panel.resolve(src.store.keys()):
                # Views, not copies (a 1M-point series is 16 MB); store steps are sorted.
                x, y = src.store.series(key, x=x_used, copy=False)
                if smoothing > 0 and len(y) > 2:
                    y = ema(y, smoothing)
                x, y = downsample(x, y, n_out, sorted_x=(x_used == "step"))
                if len(x):
                    series.append((src.label, key, x, y))
        palette = distinct_colors(colors, len(series))
        x_lo = y_lo = np.inf
        x_hi = y_hi = -np.inf
        for i, (_, _, x, y) in enumerate(series):
            # One colour per drawn series (runs x keys); the legend names both.
            if len(x) == 1:
                plt.scatter(_floats(x), y.tolist(), color=palette[i], marker="dot")
            else:
                plt.plot(_floats(x), y.tolist(), color=palette[i], marker="braille")
            drawn += len(x)
            x_lo, x_hi = min(x_lo, float(x.min())), max(x_hi, float(x.max()))
            y_lo, y_hi = min(y_lo, float(y.min())), max(y_hi, float(y.max()))
        title = self.panel.title
        if smoothing > 0:
            title += f" (smoothed {smoothing:.2f})"
        if not drawn:
            title += " — no data yet"
        # A lone series needs no legend (the title names it), unless it is one run of several.
        legend = Legend()
        if len(series) > 1 or multi:
            pairs = [(label, key) for label, key, _, _ in series]
            legend = place_legend(
                legend_names(pairs, multi=multi), legend_names(pairs, multi=multi, short=True),
                palette, width=width,
                max_rows=max(0, min(height - self.MIN_PLOT_ROWS, max(2, height // 3))),
                border_room=width - 6 - len(title))
        self.legend, self.legend_shown = legend.rows, legend.shown
        border_title = Text(title)
        if legend.in_border is not None:
            border_title.append("  ").append_text(legend.in_border)
        self.border_title = border_title
        plot_rows = max(1, height - len(self.legend))
        self.yticks_drawn = self.xticks_drawn = []
        plt.xaxes(True, False)  # no top and right frame lines: a row and a column for data
        plt.yaxes(True, False)
        if drawn:
            yt = nice_ticks(y_lo, y_hi, max(2, min(5, (plot_rows - 1) // 2)))
            self.yticks_drawn = tick_labels(yt)
            plt.yticks(yt, self.yticks_drawn)
            if y_hi == y_lo:  # a flat series: one tick, the line in the middle
                pad = abs(y_lo) * 0.05 or 1.0
                plt.ylim(y_lo - pad, y_hi + pad)
            label_w = max(len(t) for t in tick_labels(
                nice_ticks(x_lo, x_hi, 6, integer=x_used == "step")))
            xt = nice_ticks(x_lo, x_hi, max(2, min(6, width // (label_w + 4))),
                            integer=x_used == "step")
            self.xticks_drawn = tick_labels(xt)
            plt.xticks(xt, self.xticks_drawn)
            if x_hi == x_lo:
                plt.xlim(x_lo - 1, x_hi + 1)
        if x_mode == "time" and x_used == "step":
            self.border_subtitle = "step (no wall times in this source)"
        else:
            self.border_subtitle = "seconds" if x_used == "time" else "step"
        self.points_drawn = drawn
        self.colors_drawn = palette[: len(series)]
        self.labels_drawn = [f"{label}: {key}" if multi else key for label, key, _, _ in series]
        self.refresh()

    def render(self) -> RenderResult:
        """PlotextPlot.render, with two savings measured by bench/run.py (frame_4x1M_ms):
        a panel not drawn yet is blank (not an empty plotext figure built just before its
        first draw), and plotext's output is decoded by `ansi_to_text`, not Text.from_ansi.
        The legend rows come first; plotext draws in the rows left below them."""
        if self.drawn_signature is None:
            return Text("")
        width = self.size.width
        legend = self.legend[: max(0, self.size.height - 1)]
        height = max(1, self.size.height - len(legend))
        plot = self._plot
        plot.plotsize(width, height)
        plot._set_size(width, height)  # as PlotextPlot.render does
        plot.theme(self._get_plotext_theme_name(self.app.theme))
        canvas = ansi_to_text(plot.build())
        if not legend:
            return canvas
        return Text("\n", no_wrap=True, overflow="ellipsis").join([*legend, canvas])


# -- legend ----------------------------------------------------------------------------------


def legend_names(series: Sequence[tuple[str, str]], *, multi: bool,
                 short: bool = False) -> list[str]:
    """What the legend calls each (source label, key): the key, and in an overlay the run
    first (only the run when the panel draws one key). `short` drops what all the panel's
    names share (`rewards/format_reward_fn/mean` -> `format`, two runs `trl_grpo_a` and
    `trl_grpo_b` -> `a` and `b`), for when the full names do not fit."""
    keys = list(dict.fromkeys(key for _, key in series))
    runs = list(dict.fromkeys(label for label, _ in series))
    key_name = dict(zip(keys, distinguishing(keys) if short else keys, strict=False))
    run_name = dict(zip(runs, distinguishing(runs) if short else runs, strict=False))
    if not multi:
        return [key_name[key] for _, key in series]
    if len(keys) == 1:
        return [run_name[label] for label, _ in series]
    return [f"{run_name[label]}: {key_name[key]}" for label, key in series]


_WORD = re.compile(r"[^/_\-:. ]+")


def distinguishing(names: Sequence[str]) -> list[str]:
    """Names without the leading and trailing words (split at / _ - : . and spaces) that all
    of them share; single-word names are left as they are. Unchanged when that would make two
    names equal."""
    spans = {n: [m.span() for m in _WORD.finditer(n)] for n in names}
    split = [n for n in names if len(spans[n]) > 1]
    if len(split) < 2:
        return list(names)
    words = [[n[a:b] for a, b in spans[n]] for n in split]
    head = 0
    while all(len(w) > head + 1 for w in words) and len({w[head] for w in words}) == 1:
        head += 1
    tail = 0
    while all(len(w) > head + tail + 1 for w in words) \
            and len({w[-1 - tail] for w in words}) == 1:
        tail += 1
    out = []
    for n in names:
        sp = spans[n]
        if n not in split:
            out.append(n)
        else:
            out.append(n[sp[head][0]: sp[len(sp) - 1 - tail][1]])
    return out if len(set(out)) == len(out) else list(names)


LEGEND_MARK = "━ "
LEGEND_GAP = " "
LEGEND_MIN_LABEL = 10
LEGEND_MIN_BORDER_LABEL = 8


@dataclass
class Legend:
    """Where a panel's legend goes: after the title in the top border when it fits there,
    else in rows above the plot; never on the plot."""

    in_border: Text | None = None
    rows: list[Text] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    """The label shown for each series, in order (fewer than the series: "+N more")."""


def place_legend(full: Sequence[str], short: Sequence[str], colors: Sequence[tuple[int, int, int]],
                 *, width: int, max_rows: int, border_room: int) -> Legend:
    """The roomiest place that holds every label, trying full names before short ones: the
    border, then rows; then shortened labels (both ends kept) in the border, then in rows,
    the last row saying how many did not fit."""
    if not full:
        return Legend()
    for names in (full, short):
        if _line_width(names) <= border_room:
            return Legend(in_border=_legend_line(names, range(len(names)), colors), shown=list(names))
    fitting = [names for names in (full, short)
               if max(len(n) for n in names) + len(LEGEND_MARK) <= width
               and len(_wrap(names, width)) <= max_rows]
    if fitting:  # the one in fewer rows; full names when equal
        names = min(fitting, key=lambda n: len(_wrap(n, width)))
        return Legend(rows=[_legend_line(names, row, colors) for row in _wrap(names, width)],
                      shown=list(names))
    cap = max(len(n) for n in short)
    while cap > LEGEND_MIN_BORDER_LABEL:
        cap -= 1
        names = elide_all(short, cap)
        if _line_width(names) <= border_room:
            return Legend(in_border=_legend_line(names, range(len(names)), colors), shown=names)
    rows, names = legend_rows(short, colors, width, max_rows)
    return Legend(rows=rows, shown=names)


def _line_width(names: Sequence[str]) -> int:
    return sum(len(LEGEND_MARK) + len(n) for n in names) + len(LEGEND_GAP) * (len(names) - 1)


def _legend_line(names: Sequence[str], which: Sequence[int] | range,
                 colors: Sequence[tuple[int, int, int]]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for n, i in enumerate(which):
        if n:
            text.append(LEGEND_GAP)
        text.append(LEGEND_MARK + names[i], Style(color=Color.from_rgb(*colors[i])))
    return text


def elide(text: str, width: int) -> str:
    """Both ends of a long label: run names differ at the start, keys at the end."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    left = (width - 1) // 2
    return text[:left] + "…" + text[len(text) - (width - 1 - left):]


def elide_all(names: Sequence[str], width: int) -> list[str]:
    """Labels cut to `width` cells each. `run: key` labels (an overlay) are cut alike once one
    is too long: every run to the same first letters, then the key's start, so the runs still
    line up (`mod:diversity`, `mod:format`, `leg:reward`)."""
    if all(len(n) <= width for n in names):
        return list(names)
    pairs = [n.partition(": ") for n in names]
    if width < 6 or not all(sep for _, sep, _ in pairs):
        return [elide(n, width) for n in names]
    run_w = max(2, width // 3)
    out = []
    for run, _, key in pairs:
        run = run[:run_w]
        key_w = width - len(run) - 1
        out.append(f"{run}:{key if len(key) <= key_w else key[:key_w - 1] + '…'}")
    return out


def legend_rows(names: Sequence[str], colors: Sequence[tuple[int, int, int]], width: int,
                max_rows: int) -> tuple[list[Text], list[str]]:
    """At most `max_rows` rows of `width` cells: labels are shortened (both ends kept) until
    every one fits; when even short ones do not, the last row says how many more there are.
    Returns the rows and the label shown for each item shown."""
    if not names or max_rows <= 0 or width <= len(LEGEND_MARK) + 1:
        return [], []
    cap = min(max(len(n) for n in names), width - len(LEGEND_MARK))
    while True:
        rows = _wrap(elide_all(names, cap), width)
        if len(rows) <= max_rows or cap <= LEGEND_MIN_LABEL:
            break
        cap = max(LEGEND_MIN_LABEL, cap - max(1, cap // 8))
    labels = elide_all(names, cap)
    more = ""
    if len(rows) > max_rows:  # not all fit: keep what does and say how many are left
        rows = rows[:max_rows]
        while True:
            shown = sum(len(r) for r in rows)
            more = f"+{len(names) - shown} more"
            last = rows[-1]
            if not last or _line_width([labels[i] for i in last]) + len(LEGEND_GAP) + len(more) <= width:
                break
            last.pop()
        labels = labels[:shown]
    out = [_legend_line(labels, row, colors) for row in rows]
    if more:
        out[-1].append((LEGEND_GAP if rows[-1] else "") + more, "dim")
    return out, labels


def _wrap(labels: Sequence[str], width: int) -> list[list[int]]:
    """Item indexes per row, greedily, each item `━ label`, items a gap apart."""
    rows: list[list[int]] = [[]]
    used = 0
    for i, label in enumerate(labels):
        w = len(LEGEND_MARK) + len(label)
        if rows[-1] and used + len(LEGEND_GAP) + w > width:
            rows.append([])
            used = 0
        used += (len(LEGEND_GAP) if rows[-1] else 0) + w
        rows[-1].append(i)
    return rows


def distinct_colors(colors: Sequence[tuple[int, int, int]], n: int) -> list[tuple[int, int, int]]:
    """`n` colours: the theme's first, then lighter and darker shades of them, so a seventh
    series is not the first one's colour again."""
    base = list(colors) or [(200, 200, 200)]
    out = list(base)
    for amount in (0.45, -0.35, 0.7, -0.55):
        if len(out) >= n:
            break
        target = 255 if amount > 0 else 0
        a = abs(amount)
        out += [tuple(round(c + (target - c) * a) for c in rgb) for rgb in base]  # type: ignore[misc]
    while len(out) < n:  # more series than shades: colours repeat, labels still differ
        out += base
    return out[:max(n, 1)]


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


def nice_ticks(lo: float, hi: float, max_ticks: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values inside [lo, hi] (steps of 1, 2, 2.5 or 5 x 10^k), at most `max_ticks`;
    whole numbers only when `integer` (steps are counted, 10.8 is not a step). A flat range is
    one tick at its value."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    if hi == lo:
        return [lo]
    max_ticks = max(2, max_ticks)
    mults = (1, 2, 2.5, 5)
    raw = (hi - lo) / (max_ticks - 1)
    exp = math.floor(math.log10(raw))
    steps = sorted({m * 10.0 ** e for e in (exp - 1, exp, exp + 1, exp + 2) for m in mults})
    if integer:
        steps = [s for s in steps if s >= 1 and s == int(s)] or [1.0]

    def ticks_for(step: float) -> list[float]:
        first = math.ceil(lo / step - 1e-9)
        last = math.floor(hi / step + 1e-9)
        return [k * step for k in range(first, last + 1)]

    # The finest step that gives no more than max_ticks ticks (and at least two when any does).
    step = steps[-1]
    ticks = ticks_for(step)
    for candidate in steps:
        found = ticks_for(candidate)
        if 2 <= len(found) <= max_ticks:
            step, ticks = candidate, found
            break
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return [(float(round(t)) if integer else round(t, digits)) + 0.0 for t in ticks] or [lo]


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """One format for the whole axis, with just the digits that tell the ticks apart:
    `0 · 50 · 100`, `0.0 · 0.5 · 1.0`, `6.6302 · 6.6304`; learning rates and other tiny or
    huge values in one e-notation (`0 · 5.0e-6 · 1.0e-5 · 1.5e-5`), never a mix."""
    if not ticks:
        return []
    vals = [float(t) for t in ticks]
    big = max(abs(v) for v in vals)
    if len(vals) > 1:
        step = min(abs(b - a) for a, b in itertools.pairwise(vals) if b != a) if len(set(vals)) > 1 \
            else max(big, 1.0)
        tol = step * 1e-6
    else:
        tol = abs(vals[0]) * 5e-7 if vals[0] else 1e-12
    if big == 0:
        return ["0" for _ in vals]
    if big >= 1e5:  # steps and token counts: 250k, 1.5M
        unit, suffix = next((u, x) for u, x in ((1e9, "G"), (1e6, "M"), (1e3, "k")) if big >= u)
        scaled = _fixed([v / unit for v in vals], tol / unit)
        if scaled is not None:
            return ["0" if v == 0 else f + suffix for v, f in zip(vals, scaled, strict=False)]
    fixed = _fixed(vals, tol)
    if fixed is not None and big >= 1e-3 and max(len(f) for f in fixed) <= 7:
        return fixed
    for m in range(0, 7):
        if all(abs(float(f"{v:.{m}e}") - v) <= tol for v in vals):
            break
    return ["0" if v == 0 else _short_exp(f"{v:.{m}e}") for v in vals]


def _fixed(vals: Sequence[float], tol: float) -> list[str] | None:
    """The values with the fewest decimals that still read as themselves, all alike."""
    for d in range(0, 9):
        if all(abs(float(f"{v:.{d}f}") - v) <= tol for v in vals):
            return [f"{v:.{d}f}" for v in vals]
    return None


def _short_exp(text: str) -> str:
    """1.5e-05 -> 1.5e-5, 2.0e+06 -> 2.0e6: the plot's width is better spent on data."""
    mantissa, exp = text.split("e")
    return f"{mantissa}e{int(exp)}"
