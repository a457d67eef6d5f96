"""Property tests (Hypothesis) over everything between a series and the screen: downsampling,
smoothing, the y range, log y, ticks and value labels, the braille canvas, and a whole panel's
draw at sizes from 10x4 to 300x100 in every mode (log, smoothed, zoomed, a step range, the time
axis). Nothing raises; what a panel cannot draw it says in its borders.

Inputs: empty, one point, constant, zeros, negatives, NaN, ±inf, 1e-300 to 1e300, and one
series of 10^6 points. A panel is drawn outside an app (`MetricPlot.draw(size=...)`, then the
rows `braille.render` makes of it): the widget's Textual side is the Pilot tests' subject."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cockpit.metrics import plot_colors, plotmath
from cockpit.metrics.panels import Panel
from cockpit.metrics.rundata import Alert, RunData
from cockpit.metrics.store import MetricStore
from cockpit.ui.widgets.run import braille
from cockpit.ui.widgets.run.metric_plot import MetricPlot, View, robust_range
from cockpit.ui.widgets.run.plot_ticks import nice_ticks, short_value, tick_labels

SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, -1e300, 5e-324, 1.7976931348623157e308,
           -1.7976931348623157e308, math.nan, math.inf, -math.inf, 0.5, 2.5e-5, 14.75, 197.0]
values = st.one_of(st.floats(), st.sampled_from(SPECIAL))
finite = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([v for v in SPECIAL if math.isfinite(v)]))


@st.composite
def series(draw, max_size: int = 400) -> np.ndarray:
    """A series as runs log them, and as they break: noise, a constant, zeros, negatives, spikes,
    NaN and inf, tiny and huge values."""
    kind = draw(st.sampled_from(["any", "constant", "zeros", "negative", "spiky", "schedule"]))
    n = draw(st.integers(0, max_size))
    if kind == "any":
        return np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    if kind == "constant":
        return np.full(n, draw(values))
    if kind == "zeros":
        return np.zeros(n)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1e-300, 1e-6, 1.0, 1e6, 1e300]))
    if kind == "negative":
        return -np.abs(rng.normal(size=n)) * scale
    if kind == "schedule":  # a learning rate: 0 at the first step, a warm-up, a decay
        return np.concatenate([[0.0], np.linspace(0, 1, n)[1:] * scale])[:n]
    out = rng.normal(0.4, 0.1, size=n) * scale
    for _ in range(draw(st.integers(0, 5))):
        if n:
            out[rng.integers(n)] = draw(values)
    return out


# -- the maths ---------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(series(), st.integers(-2, 500), st.booleans())
def test_downsample_keeps_at_most_n_out_finite_points_of_the_series(y, n_out, as_time):
    x = np.arange(len(y), dtype=np.float64 if as_time else np.int64)
    xs, ys = plotmath.downsample(x, y, n_out)
    assert len(xs) == len(ys) <= max(n_out, 0)
    assert np.isfinite(ys).all()
    assert set(xs.tolist()) <= set(x.tolist())


@settings(max_examples=100, deadline=None)
@given(series(), st.floats(-1, 2), st.one_of(st.none(), st.tuples(finite, finite)))
@example(y=np.array([0.0] * 187 + [1.0]), weight=1.0,  # every value clipped to the float's end:
         clip=(1.7976931348623157e308, 1.7976931348623157e308)).via("the running sum overflowed")
def test_smoothing_passes_gaps_through_and_stays_between_the_values_it_averages(y, weight, clip):
    if clip is not None:
        clip = (min(clip), max(clip))
    out = plotmath.ema(y, weight, clip)
    assert out.shape == y.shape
    fin = np.isfinite(y)
    assert np.array_equal(out[~fin], y[~fin], equal_nan=True), "gaps are passed through"
    f = y[fin]
    assert np.isfinite(out[fin]).all(), "no overflow"
    if not len(f) or weight <= 0 or np.all(f == f[0]):
        assert np.array_equal(out, y, equal_nan=True), "nothing to smooth: the series as it is"
        return
    lo, hi = f.min(), f.max()
    if clip is not None:
        lo, hi = np.clip(lo, *clip), np.clip(hi, *clip)
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    with np.errstate(over="ignore"):
        assert (out[fin] >= lo - tol).all() and (out[fin] <= hi + tol).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(series(60), min_size=1, max_size=4))
def test_the_y_range_holds_the_bulk_of_the_points_and_is_ordered(ys):
    ys = [y[np.isfinite(y)] for y in ys]
    if not any(len(y) for y in ys):
        return
    lo, hi, cut_lo, cut_hi = robust_range(ys)
    assert math.isfinite(lo) and math.isfinite(hi) and lo <= hi
    allv = np.concatenate(ys)
    inside = np.count_nonzero((allv >= lo) & (allv <= hi))
    assert inside >= 0.85 * len(allv) or len(allv) < 10
    if not (cut_lo or cut_hi):
        assert lo == allv.min() and hi == allv.max()


@settings(max_examples=200, deadline=None)
@given(finite, finite, st.integers(0, 12), st.booleans())
@example(a=150.0, b=2.5e-05, n=0, integer=False).via("CI, 2026-11-28: a 0 tick below the range")
def test_ticks_lie_in_the_range_and_every_tick_has_a_label_that_tells_it_apart(a, b, n, integer):
    ticks = nice_ticks(a, b, n, integer=integer)
    lo, hi = min(a, b), max(a, b)
    assert len(ticks) <= max(2, n) or len(ticks) == 1
    span = hi - lo if math.isfinite(hi - lo) else math.inf
    for t in ticks:
        assert math.isfinite(t)
        assert lo - 1e-6 * max(abs(lo), 1) - 1e-9 * span <= t <= hi + 1e-6 * max(abs(hi), 1) + 1e-9 * span \
            or integer or span == math.inf
    labels = tick_labels(ticks)
    assert len(labels) == len(ticks)
    assert all(label and len(label) <= 14 for label in labels), labels


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_value_in_a_title_is_short(v):
    text = short_value(v)
    assert text and len(text) <= 10, text


# -- the canvas ----------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(series(200), st.booleans()), max_size=4), st.tuples(values, values),
       st.tuples(values, values), st.integers(1, 300), st.integers(1, 100))
def test_the_canvas_is_exactly_the_size_asked_whatever_the_values_and_ranges(lines, xlim, ylim, width, height):
    chart = braille.Chart([braille.Series(np.arange(len(y), dtype=np.float64), y, dotted=d) for y, d in lines],
                          xlim=xlim, ylim=ylim, xticks=[(1.0, "1"), (xlim[0], "x")], yticks=[(0.5, "0.5")],
                          marks=[(0.0, "S"), (0.0, "R"), (1.0, "C")], clipped=[(1.0, 1, 0), (math.nan, -1, 0)])
    rows = braille.render(chart, width, height)
    assert len(rows) == height
    assert all(sum(len(t) for t, _ in row) == width for row in rows)


def test_a_line_far_off_the_canvas_costs_no_more_than_one_on_it():
    """1e300 in a range of 0..1: the segment is cut to the canvas before it is walked."""
    y = np.array([0.0, 1e300, 0.5, -1e300, 1.0])
    chart = braille.Chart([braille.Series(np.arange(5.0), y)], xlim=(0, 4), ylim=(0, 1))
    rows = braille.render(chart, 80, 20)
    assert any(0x2800 < ord(c) <= 0x28FF for row in rows for t, _ in row for c in t)


# -- a whole panel ---------------------------------------------------------------------------------


def run_with(ys: list[np.ndarray], *, times: bool, resumed: bool) -> RunData:
    store = MetricStore()
    n = max((len(y) for y in ys), default=0)
    if n:
        cols = {f"m{i}" if i else "loss": np.resize(y, n) if len(y) else np.full(n, np.nan)
                for i, y in enumerate(ys)}
        cols["eval_loss"] = np.where(np.arange(n) % 7 == 0, cols["loss"], np.nan)
        t = 1_700_000_000.0 + np.arange(n) * 30.0 + np.where(np.arange(n) > n // 2, 86_400.0, 0.0)
        store.add_columns(np.arange(1, n + 1), cols, times=t if times else None)
    data = RunData("run-2026-11-28T11-39-17", store=store)
    if resumed and n:
        stop, resume = 1_700_000_000.0 + n * 15, 1_700_086_000.0 + n * 15  # the day between unlogged
        data.alerts.append(Alert("information", "run stopped: stopped by request", None, n // 2, stop))
        data.alerts.append(Alert("information", "resumed from checkpoint-1", None, n // 2, resume))
        data.checkpoints.append((n // 2, "output/checkpoint-1"))
    return data


def drawn_panel(plot: MetricPlot, sources, size, **kw) -> list[str]:
    """Draw the panel at `size` and return its rows as text: legend rows, canvas, axes."""
    plot.draw(sources, size=size, refresh=False, **kw)
    width, height = size
    legend = [row.plain[:width].ljust(width) for row in plot.legend][: max(0, height - 1)]  # as the widget crops
    rows = braille.render(plot.chart, width, max(1, height - len(legend))) if plot.chart else []
    return legend + ["".join(t for t, _ in row) for row in rows]


PALETTE = [(0, 130, 200), (245, 130, 48), (60, 180, 75), (145, 30, 180), (230, 25, 75), (70, 240, 240)]
SAID = ("no data yet", "nothing", "≤0", "off range", "no finite")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.lists(series(), min_size=1, max_size=3), st.integers(10, 300), st.integers(4, 100),
       st.booleans(), st.sampled_from([0.0, 0.6, 0.99]), st.booleans(), st.booleans(),
       st.one_of(st.none(), st.tuples(st.integers(-5, 400), st.integers(-5, 400))), st.booleans(),
       st.booleans())
@example(ys=[np.random.default_rng(0).normal(0.4, 0.1, 10**6)], width=160, height=48, log_y=True,
         smoothing=0.6, robust=True, time=True, window=None, resumed=True, compare=False).via("10^6 points")
@example(ys=[np.array([1.7976931348623157e308])], width=10, height=4, log_y=True, smoothing=0.0,
         robust=False, time=False, window=None, resumed=False, compare=False).via("a log tick past 1e308")
def test_a_panel_draws_anything_a_run_logs_at_any_size_and_says_what_it_cannot(
        ys, width, height, log_y, smoothing, robust, time, window, resumed, compare):
    sources = [run_with(ys, times=time, resumed=resumed)]
    if compare:
        sources.append(run_with(ys[::-1], times=time, resumed=False))
        sources[1].label = "run-2026-11-28T11-40-02"
    if window is not None:
        window = (min(window), max(window))
    panel = Panel("loss", ("loss", "m*"))
    plot = MetricPlot(panel)
    view = View(log_y=log_y, robust=robust, x_window=window)
    rows = drawn_panel(plot, sources, (width, height), x_mode="time" if time else "step",
                       smoothing=smoothing, colors=PALETTE, view=view)
    assert len(rows) == height and all(len(r) == width for r in rows), (width, height)
    borders = f"{plot.border_title} {plot.border_subtitle}"
    canvas = "".join(rows)
    lit = any(0x2800 < ord(c) <= 0x28FF or c in "•▲▼" for c in canvas)
    if not lit:
        assert any(s in borders for s in SAID) or height < 5, (borders, rows)
    assert len(plot.colors_drawn) == len(plot.labels_drawn)


@pytest.mark.parametrize("size", [(60, 20), (100, 30), (160, 48)])
def test_the_y_range_does_not_depend_on_the_panels_width(size):
    """KL of a noisy GRPO run (a median of 0.38, spikes of 197 and 179): the range is the bulk's at
    every width. It was 0-60 at 100x30 and 0-10 at 160x48, the bulk flat on the floor."""
    from cockpit.metrics.sources import open_source
    from helpers import FIXTURES

    store = open_source(FIXTURES / "trl_grpo_1134_steps_noisy.json").load_store()
    data = RunData("grpo", store=store)
    plot = MetricPlot(Panel("KL", ("kl",)))
    ranges = set()
    for width in (20, 32, 50, 78, 150):
        drawn_panel(plot, [data], (width, size[1] // 2), x_mode="step", smoothing=0.6, colors=PALETTE)
        ranges.add(plot.chart.ylim)
    assert len(ranges) == 1, ranges
    _, hi = ranges.pop()
    assert hi < 5, "the spikes are cut and marked, the bulk fills the panel"


def test_a_spike_lifts_the_smoothed_line_for_a_step_not_a_hundred():
    """One spike of 197 in ~0.4: the smoothed line is back among the raw points at once."""
    y = np.full(400, 0.4) + np.random.default_rng(1).normal(0, 0.05, 400)
    y[100] = 197.0
    store = MetricStore()
    store.add_columns(np.arange(1, 401), {"kl": y})
    plot = MetricPlot(Panel("KL", ("kl",)))
    drawn_panel(plot, [RunData("r", store=store)], (100, 30), x_mode="step", smoothing=0.95, colors=PALETTE)
    _, smooth = plot.chart.series
    after = (smooth.x > 105) & (smooth.x < 200)
    assert (smooth.y[after] < 0.6).all(), smooth.y[after].max()


def test_one_colour_rule_eval_sets_keep_their_colour_on_every_panel():
    keys = ["loss", "accuracy", "eval_loss", "eval_g0_loss", "eval_g1_loss", "eval_g0_accuracy", "eval_g1_accuracy"]
    loss = plot_colors.panel_colors([(0, "loss"), (0, "eval_loss"), (0, "eval_g0_loss"), (0, "eval_g1_loss")],
                                    PALETTE, multi=False, keys=[keys])
    acc = plot_colors.panel_colors([(0, "accuracy"), (0, "eval_g0_accuracy"), (0, "eval_g1_accuracy")],
                                   PALETTE, multi=False, keys=[keys])
    assert len(set(loss)) == 4, "eval_loss is not loss's colour"
    assert loss[2:] == acc[1:], "each eval set one colour on every panel"
    both = plot_colors.panel_colors([(0, "reward"), (0, "rewards/a"), (1, "reward"), (1, "rewards/b")],
                                    PALETTE, multi=True, keys=[["reward", "rewards/a"], ["reward", "rewards/b"]])
    assert both[0] == PALETTE[0] and both[2] == PALETTE[1]
    assert both[1] == plot_colors.distinct_colors(PALETTE, 7)[6], "a shade of the run's own colour"
