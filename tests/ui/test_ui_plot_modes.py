"""The plot keys on real runs: log y (`l`), smoothing, the x axis (`x`), zoom, an x range. No key
kills the app; what a panel cannot draw it says in its title."""

from __future__ import annotations

import pytest

from helpers import FIXTURES
from helpers.ui import app_for, app_wait

pytestmark = pytest.mark.anyio

SMALL = (100, 30)


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


async def all_drawn(pilot, app) -> None:
    await app_wait(pilot, lambda: plots(app) and all(p.drawn_signature for p in plots(app)),
                   "every panel drawn")


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_log_y_on_a_learning_rate_that_starts_at_zero_draws_and_says_so(tmp_path):
    """trl_sft_token_accuracy logs learning_rate 0.0 at step 1: `l` used to kill the app
    (`ValueError: repeats may not contain negative values` in the braille plot)."""
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        await pilot.press("l")
        await app_wait(pilot, lambda: all(p.drawn_signature and p.drawn_signature[-2].log_y
                                          for p in plots(app)), "redrawn with log y")
        await pilot.pause()
        lr = next(p for p in plots(app) if p.panel.title == "learning rate")
        assert "log y: ≤0 left out" in str(lr.border_subtitle)
        assert lr.points_drawn > 1
        assert any("⠀" < ch <= "⣿" for ch in str(lr.render()))
        assert "learning rate" in screen_text(app)


async def test_a_grid_of_five_panels_leaves_no_empty_slot_and_a_compare_titles_every_runs_value(tmp_path):
    """trl_sft_token_accuracy draws five panels in three columns: the last one takes the rest of
    its row. In a compare each panel's title carries each run's latest value, in its colour."""
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        shown = plots(app)
        assert len(shown) == 5
        assert shown[-1].size.width > 1.8 * shown[0].size.width, [p.size for p in shown]
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_grpo_legacy_reward_keys.json"),
                                       str(FIXTURES / "trl_grpo_modern_multireward.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both runs")
        await app_wait(pilot, lambda: any(p.panel.title == "KL" for p in plots(app))
                       and all(len({lbl.split(":")[0] for lbl in p.labels_drawn}) == 2
                               for p in plots(app) if p.panel.title == "KL"), "both runs drawn")
        kl = next(p for p in plots(app) if p.panel.title == "KL")
        legacy, modern = (s.store for s in app.screen.sources)
        title = kl._border_title.plain  # textual Content
        from cockpit.ui.widgets.run.plot_ticks import short_value
        assert title.startswith(f"KL {short_value(legacy.latest('kl'))} · {short_value(modern.latest('kl'))}"), title


async def test_the_picker_does_not_add_a_second_panel_of_a_metric_shown(tmp_path):
    from cockpit.ui.screens.metric_picker import MetricPicker

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        before = [p.panel.title for p in plots(app)]
        await pilot.press("m")
        await app_wait(pilot, lambda: isinstance(app.screen, MetricPicker), "the picker")
        await pilot.press(*"learning_rate", "enter")
        await app_wait(pilot, lambda: not isinstance(app.screen, MetricPicker), "picked")
        await pilot.pause(0.2)
        assert [p.panel.title for p in plots(app)] == before
        assert any("already shown in the panel 'learning rate'" in n.message for n in app._notifications)


def test_eval_num_tokens_is_not_a_default_panel():
    """A counter of tokens, and it goes back at a resume: a zig-zag that says nothing."""
    from cockpit.metrics.panels import default_panels
    from cockpit.metrics.sources import open_source

    keys = open_source(FIXTURES.parent / "real_runs" / "grpo_wordle_kl_one_from_step_1_reward_flat.json") \
        .load_store().keys()
    assert "eval_num_tokens" in keys
    assert not any("eval_num_tokens" in p.keys for p in default_panels("grpo", keys))


def test_legend_labels_cut_to_fit_stay_apart_and_run_names_are_cut_after_a_word():
    from cockpit.ui.widgets.run.plot_legend import elide_all, legend_names, place_legend

    keys = ["reward", "rewards/correctness_reward_func", "rewards/int_reward_func",
            "rewards/strict_format_reward_func", "rewards/soft_format_reward_func", "rewards/xmlcount_reward_func"]
    for width in (12, 14, 16, 18, 20):
        cut = elide_all(keys, width)
        assert len(set(cut)) == len(keys), cut
    runs = ["sft-2026-11-28T11-39-17", "sft-2026-11-28T12-02-44"]
    pairs = [(r, k) for r in runs for k in ("loss", "eval_loss")]
    legend = place_legend(legend_names(pairs, multi=True), legend_names(pairs, multi=True, short=True),
                          [(1, 2, 3)] * 4, width=24, max_rows=2, border_room=0)
    assert len(set(legend.shown)) == len(legend.shown), legend.shown


async def test_seven_panels_at_100x30_keep_the_reward_legend(tmp_path):
    """A GRPO run with evals: seven panels (its eval clip ratios and lengths are no panels of their
    own: thirteen left a row of canvas each), and the reward panel still names its series."""
    wordle = FIXTURES.parent / "real_runs" / "grpo_wordle_kl_one_from_step_1_reward_flat.json"
    app = app_for(tmp_path, "replay", [str(wordle)])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        assert len(plots(app)) == 7
        reward = next(p for p in plots(app) if p.panel.title == "reward")
        assert len(reward.labels_drawn) > 1 and reward.legend_shown, reward.labels_drawn
