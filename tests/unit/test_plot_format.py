"""Axis ticks and legend layout of the metric panels, as pure functions."""

from __future__ import annotations

import re

import pytest

from cockpit.metrics.plot_colors import distinct_colors
from cockpit.ui.widgets.run.plot_legend import (
    distinguishing,
    elide_all,
    legend_names,
    place_legend,
)
from cockpit.ui.widgets.run.plot_ticks import nice_ticks, tick_labels

E_FORMAT = re.compile(r"^-?\d(\.\d+)?e-?\d+$")


def read(label: str) -> float:
    """A tick label read back as a number (250k, 1.5M, 5.0e-6)."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(label[-1], 1)
    return float(label[:-1] if scale != 1 else label) * scale


def labels(lo, hi, n=5, integer=False):
    return tick_labels(nice_ticks(lo, hi, n, integer=integer))


@pytest.mark.parametrize("lo,hi,n", [(1, 20.5, 3), (1, 30, 6), (5, 200, 5), (1, 7, 6), (3, 4, 5),
                                     (1, 250, 4), (100, 5000, 4), (0, 1_000_000, 5)])
def test_step_ticks_are_whole_numbers(lo, hi, n):
    ticks = nice_ticks(lo, hi, n, integer=True)
    assert 1 <= len(ticks) <= n
    assert all(t == int(t) and lo <= t <= hi for t in ticks)
    assert [read(label) for label in tick_labels(ticks)] == pytest.approx(ticks)
    assert all(t == int(t) for t in ticks)


def test_the_reported_fractional_step_axis_is_now_whole():
    assert labels(1, 20.5, 3, integer=True) == ["10", "20"]
    assert labels(1, 30, 4, integer=True) == ["10", "20", "30"]
    assert labels(0, 1_000_000, 5, integer=True) == ["0", "0.25M", "0.50M", "0.75M", "1.00M"]


@pytest.mark.parametrize("lo,hi", [(6.6301, 6.6309), (6.625, 6.634), (0.999, 1.001),
                                   (-0.912, 1.47), (0.0932, 1.26), (386, 512), (1e-9, 3e-9)])
def test_y_ticks_never_repeat_a_label(lo, hi):
    shown = labels(lo, hi)
    assert len(shown) >= 2
    assert len(set(shown)) == len(shown)


def test_a_flat_series_has_one_tick_with_its_value():
    assert labels(6.63, 6.63) == ["6.63"]
    assert labels(1.5e-5, 1.5e-5) == ["1.5e-5"]
    assert labels(0.0, 0.0) == ["0"]


@pytest.mark.parametrize("lo,hi", [(0, 1.5e-5), (1e-6, 2e-5), (0, 5e-5), (2e-7, 1e-4), (0, 3e-3)])
def test_learning_rate_ticks_share_one_format(lo, hi):
    shown = [s for s in labels(lo, hi) if s != "0"]
    assert shown
    kinds = {bool(E_FORMAT.match(s)) for s in shown}
    assert len(kinds) == 1, shown  # all e-notation or all fixed, never a mix
    if kinds == {True}:
        assert len({len(s.split("e")[0].lstrip("-")) for s in shown}) == 1, shown  # same digits
    else:
        assert len({len(s.split(".")[-1]) for s in shown}) == 1, shown


def test_fixed_labels_have_the_same_decimals():
    assert labels(0.0932, 1.26) == ["0.25", "0.50", "0.75", "1.00", "1.25"]
    assert labels(-0.912, 1.47) == ["-0.5", "0.0", "0.5", "1.0"]
    assert labels(0, 1.5e-5, 4) == ["0", "5.0e-6", "1.0e-5", "1.5e-5"]


def test_shared_words_are_dropped_to_tell_names_apart():
    assert distinguishing(["reward", "rewards/format_reward_fn/mean", "rewards/pnl_reward_fn/mean"]) \
        == ["reward", "format", "pnl"]
    assert distinguishing(["a/output/checkpoint-100", "b/output/checkpoint-100"]) == ["a", "b"]
    assert distinguishing(["trl_grpo_modern", "trl_grpo_legacy"]) == ["modern", "legacy"]
    assert distinguishing(["loss"]) == ["loss"]
    assert distinguishing(["x_a", "x_a"]) == ["x_a", "x_a"]


def test_overlay_legend_names_name_the_run_and_the_key():
    series = [(run, key) for run in ("run_a", "run_b") for key in ("rewards/f/mean", "rewards/g/mean")]
    assert legend_names(series, multi=True) == [f"{r}: {k}" for r, k in series]
    assert legend_names(series, multi=True, short=True) == ["a: f", "a: g", "b: f", "b: g"]
    assert legend_names([("run_a", "loss"), ("run_b", "loss")], multi=True) == ["run_a", "run_b"]


def test_cut_overlay_labels_keep_every_run_apart():
    names = [f"{r}: {k}" for r in ("modern_multireward", "legacy_reward_keys")
             for k in ("reward", "diversity", "format")]
    cut = elide_all(names, 12)
    assert all(len(c) <= 12 for c in cut)
    assert len(set(cut)) == len(cut)
    assert {c.split(":")[0] for c in cut} == {"modern", "legacy"}  # whole words, never `mode`


COLORS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255), (255, 0, 255)]


@pytest.mark.parametrize("n", [1, 6, 7, 12, 24])
def test_every_series_gets_its_own_colour(n):
    got = distinct_colors(COLORS, n)
    assert len(got) == n and len(set(got)) == n


@pytest.mark.parametrize("width,max_rows", [(30, 2), (31, 3), (50, 6), (100, 2)])
def test_the_legend_fits_its_room_and_accounts_for_every_series(width, max_rows):
    full = [f"run_{r}: rewards/{k}_reward_fn/mean" for r in "ab" for k in ("length", "format", "kl")]
    short = legend_names([(f"run_{r}", f"rewards/{k}_reward_fn/mean") for r in "ab"
                          for k in ("length", "format", "kl")], multi=True, short=True)
    legend = place_legend(full, short, COLORS, width=width, max_rows=max_rows, border_room=width - 12)
    rows = [legend.in_border] if legend.in_border is not None else legend.rows
    assert rows and all(row.cell_len <= width for row in rows)
    assert legend.in_border is not None or len(legend.rows) <= max_rows
    text = "\n".join(row.plain for row in rows)
    missing = len(full) - len(legend.shown)
    assert missing == 0 or f"+{missing} more" in text
    assert len(set(legend.shown)) == len(legend.shown)
    for label in legend.shown:
        assert label in text


@pytest.mark.parametrize("width,max_rows", [(28, 2), (40, 3), (60, 4)])
def test_a_compare_legend_names_each_run_by_whole_words_and_each_function_by_its_own_name(width, max_rows):
    # The compare of two real GRPO runs of tests/fixtures: the legend said `113:reward`.
    series = [("trl_grpo_1134_steps_noisy", k) for k in
              ("reward", "rewards/correctness_reward_func", "rewards/format_reward_func")] + \
             [("trl_grpo_modern_multireward", k) for k in
              ("reward", "rewards/diversity_reward_fn/mean", "rewards/pnl_reward_fn/mean")]
    short = legend_names(series, multi=True, short=True)
    assert short == ["1134_steps_noisy: reward", "1134_steps_noisy: correctness", "1134_steps_noisy: format",
                     "modern_multireward: reward", "modern_multireward: diversity", "modern_multireward: pnl"]
    legend = place_legend(legend_names(series, multi=True), short, COLORS, width=width, max_rows=max_rows,
                          border_room=0)
    assert legend.shown and len(set(legend.shown)) == len(legend.shown)
    for label in legend.shown:
        run = label.split(":")[0]
        assert run in ("1134", "modern", "1134_steps_noisy", "modern_multireward"), label
