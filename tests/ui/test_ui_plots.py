"""What a person reads on the run screens: header, legends, axes, labels, panels, footer.

Each test drives the app with Pilot at the sizes people use (100x30, 160x48) and reads the
screen as text, the way it is shown.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cockpit.run import journal
from helpers import FIXTURES
from helpers.ui import app_for, app_wait, make_run, sft_records

pytestmark = pytest.mark.anyio

SMALL = (100, 30)
LARGE = (160, 48)


def screen_lines(app) -> list[str]:
    """The screen as a person sees it, one string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def header_lines(app) -> list[str]:
    from cockpit.ui.widgets.run.run_header import RunHeader

    return str(app.screen.query_one(RunHeader).render()).splitlines()


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


async def all_drawn(pilot, app) -> None:
    await app_wait(pilot, lambda: plots(app) and all(p.drawn_signature for p in plots(app)),
                   "every panel drawn")


def half_run(max_steps: int = 10000, last: int = 5000) -> list[journal.Record]:
    """A journal that stopped being written at `last` of `max_steps`, ETA left in it."""
    out = [journal.run_started("sft", max_steps=max_steps), journal.phase("training")]
    for s in range(100, last + 1, 100):
        out.append(journal.metrics(s, {"loss": 1.0 / s, "learning_rate": 1e-4}, epoch=s / 1000))
        out.append(journal.progress(s, max_steps, epoch=s / 1000, steps_per_s=2.0,
                                    eta_s=(max_steps - s) / 2))
    return out


# -- header ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_header_facts_are_separated_and_a_live_run_shows_its_eta(tmp_path, size):
    run = make_run(tmp_path / "runs", "live", sft_records(range(1, 51)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=size) as pilot:
        await app_wait(pilot, lambda: "step 50/100" in " ".join(header_lines(app)), "header")
        line1, line2 = header_lines(app)
        assert "trainer sft · state running · phase training" in line1
        assert line2.startswith("step 50/100 ")
        assert "· epoch 1.00 · steps/s 2.00 · ETA " in line2
        assert "x: step · smoothing 0.60" in line2  # on by default (issue 30)
        shown = screen_lines(app)
        assert "· ETA " in shown[1] and "smoothing 0.60" in shown[1]  # fits on the screen


async def test_a_replay_of_a_journal_that_stopped_halfway_has_no_eta(tmp_path):
    """The run is not live (its journal ends at 5000 of 10000, an ETA in its last line): the
    replay shows where it stopped, and no countdown (it used to show 'ETA 0s')."""
    run = make_run(tmp_path / "runs", "stopped-halfway", half_run(), state="stopped")
    app = app_for(tmp_path, "replay", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: "step 5000/10000" in " ".join(header_lines(app)), "header")
        await pilot.pause(1.2)  # a countdown would have moved by now
        text = "\n".join(header_lines(app))
        assert "ETA" not in text
        assert "state replay" in text


async def test_a_replayed_trainer_state_has_no_eta(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trainer_early_stopping_windows_path.json")])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: "step 500/20250" in " ".join(header_lines(app)), "header")
        assert "ETA" not in "\n".join(header_lines(app))


async def test_a_compare_of_two_ended_runs_has_no_eta(tmp_path):
    a = make_run(tmp_path / "runs", "a", half_run(), state="stopped")
    b = make_run(tmp_path / "runs", "b", [*half_run(last=3000), journal.run_ended("failed")],
                 state="failed")
    app = app_for(tmp_path, "replay", [str(a.events), str(b.events)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await app_wait(pilot, lambda: "2 runs" in " ".join(header_lines(app)), "header")
        assert "ETA" not in "\n".join(header_lines(app))


async def test_a_live_view_of_a_finished_run_has_no_eta(tmp_path):
    records = [*half_run(), journal.run_ended("stopped", reason="stop requested")]
    run = make_run(tmp_path / "runs", "ended", records, state="stopped")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: "state stopped" in " ".join(header_lines(app)), "header")
        assert "ETA" not in "\n".join(header_lines(app))


# -- which panels, which trainer ---------------------------------------------------------------


def eval_sets_run(tmp_path: Path):
    """transformers logs eval_{name}_loss for each set when eval_dataset is a dict."""
    records = [journal.run_started("sft", max_steps=60), journal.phase("training")]
    for s in range(1, 61):
        records.append(journal.metrics(s, {"loss": 2.0 / s, "learning_rate": 1e-4}, epoch=s / 60))
        if s % 10 == 0:
            records.append(journal.eval_metrics(
                s, {f"eval_g{g}_loss": 2.0 / s + g / 10 for g in range(6)}
                | {f"eval_g{g}_runtime": 1.0 for g in range(6)}, epoch=s / 60))
    return make_run(tmp_path / "runs", "eval-sets", records, state="finished")


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_every_eval_set_is_drawn_on_the_loss_panel(tmp_path, size):
    run = eval_sets_run(tmp_path)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=size) as pilot:
        await all_drawn(pilot, app)
        loss = next(p for p in plots(app) if p.panel.title == "loss")
        assert loss.labels_drawn == ["loss"] + [f"eval_g{g}_loss" for g in range(6)]


def test_eval_twins_are_eval_sets_of_the_key_not_other_metrics():
    from cockpit.metrics.panels import eval_twins

    keys = ["loss", "nll_loss", "eval_loss", "eval_nll_loss", "eval_g0_loss", "eval_runtime"]
    assert eval_twins("loss", keys) == ["eval_loss", "eval_g0_loss"]
    assert eval_twins("nll_loss", keys) == ["eval_nll_loss"]


async def test_a_ppo_state_from_another_tool_is_a_plain_trainer_not_a_guessed_family(tmp_path):
    state = {"global_step": 20, "max_steps": 20, "log_history": [
        {"step": s, "loss": 1.0 / s, "reward": s / 20, "learning_rate": 1e-5} for s in range(1, 21)]}
    path = tmp_path / "ppo_other_tool.json"
    path.write_text(json.dumps(state))
    app = app_for(tmp_path, "replay", [str(path)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: "step 20/20" in " ".join(header_lines(app)), "header")
        line1 = header_lines(app)[0]
        assert "Trainer (no TRL metrics)" in line1 and "like" not in line1
        await all_drawn(pilot, app)
        assert {"loss", "reward", "learning rate"} <= {p.panel.title for p in plots(app)}


@pytest.mark.parametrize("fixture,family", [
    ("trl_grpo_modern_multireward.json", "grpo-like"), ("trl_grpo_legacy_reward_keys.json", "grpo-like"),
    ("trl_dpo_nan_gradnorm_midrun.json", "dpo-like"), ("trl_orpo_recsys.json", "dpo-like"),
    ("trl_sft_token_accuracy.json", "sft-like"), ("trainer_eval_best_checkpoint.json", None)])
def test_trainer_guess_needs_keys_only_that_family_logs(fixture, family):
    from cockpit.metrics.panels import guess_trainer
    from cockpit.metrics.sources import open_source

    assert guess_trainer(open_source(FIXTURES / fixture).load_store().keys()) == family


# -- legends -----------------------------------------------------------------------------------


def grpo_run(tmp_path: Path, name: str, steps: int):
    """A GRPO run logging three reward functions (the reward panel draws 3 keys a run)."""
    records = [journal.run_started("grpo", max_steps=steps), journal.phase("training")]
    for s in range(1, steps + 1):
        records.append(journal.metrics(s, {
            "rewards/length_reward/mean": math.sin(s / 7), "rewards/format_reward/mean": s / steps,
            "rewards/kl_reward/mean": 0.5, "entropy": 2.0 - s / steps, "loss": 1.0 / s}))
    return make_run(tmp_path / "runs", name, records, state="finished", trainer="grpo")


def legend_text(plot) -> str:
    rows = [plot.border_title or ""] + [row.plain for row in plot.legend]
    return "\n".join(rows)


def legend_colours(plot) -> list[tuple[int, int, int]]:
    """The colour of each `━ label` in the legend, rows and border title alike."""
    out = []
    for row in plot.legend:  # rich Text
        out += [tuple(span.style.color.get_truecolor()) for span in row.spans
                if "━" in row.plain[span.start:span.end]]
    title = plot._border_title  # textual Content
    if title is not None:
        out += [tuple(span.style.foreground.rgb) for span in title.spans
                if "━" in title.plain[span.start:span.end]]
    return out


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_a_compare_panel_with_six_series_has_a_legend_off_the_data(tmp_path, size):
    a = grpo_run(tmp_path, "grpo-long", 120)
    b = grpo_run(tmp_path, "grpo-short", 40)
    app = app_for(tmp_path, "replay", [str(a.path), str(b.path)])
    async with app.run_test(size=size) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await all_drawn(pilot, app)
        reward = next(p for p in plots(app) if p.panel.title == "reward")
        await app_wait(pilot, lambda: len(reward.labels_drawn) == 6, "3 metrics x 2 runs drawn")
        assert len(set(reward.colors_drawn)) == 6
        shown = reward.legend_shown
        text = legend_text(reward)
        assert shown and len(set(shown)) == len(shown)
        for label in shown:
            assert label in text
        if len(shown) < 6:
            assert f"+{6 - len(shown)} more" in text
        if size == LARGE:
            assert len(shown) == 6
        # Each label wears its series' colour.
        assert legend_colours(reward) == [tuple(c) for c in reward.colors_drawn[:len(shown)]]
        entropy = next(p for p in plots(app) if p.panel.title == "entropy")
        assert legend_colours(entropy) == [tuple(c) for c in entropy.colors_drawn]
        screen = "\n".join(screen_lines(app))
        for p in plots(app):
            # The legend is in the border or in rows above the chart, never in the chart.
            canvas = "\n".join(p.render().plain.splitlines()[len(p.legend):])
            for label in p.legend_shown:
                assert label not in canvas
            for row in p.legend:
                assert row.plain.strip()[:12] in screen
        # A panel of one key in an overlay names the runs.
        entropy = next(p for p in plots(app) if p.panel.title == "entropy")
        assert len(entropy.legend_shown) == 2
        assert all(label in legend_text(entropy) for label in entropy.legend_shown)


async def test_two_checkpoints_of_the_same_path_name_are_told_apart(tmp_path):
    for parent in ("a", "b"):
        ckpt = tmp_path / parent / "output" / "checkpoint-100"
        ckpt.mkdir(parents=True)
        state = {"global_step": 100, "max_steps": 100, "log_history": [
            {"step": s, "loss": 1.0 / s + (parent == "b")} for s in range(1, 101)]}
        (ckpt / "trainer_state.json").write_text(json.dumps(state))
    paths = [str(tmp_path / p / "output" / "checkpoint-100") for p in ("a", "b")]
    app = app_for(tmp_path, "replay", paths)
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        assert [s.label for s in app.screen.sources] == ["a/output/checkpoint-100",
                                                         "b/output/checkpoint-100"]
        await all_drawn(pilot, app)
        loss = next(p for p in plots(app) if p.panel.title == "loss")
        # Drawn from both sources (a panel may have drawn the first before the second came).
        await app_wait(pilot, lambda: len(loss.drawn_signature[0]) == 2, "drawn from both")
        assert len(set(loss.legend_shown)) == 2


async def test_a_single_replay_of_a_checkpoint_is_titled_by_its_run(tmp_path):
    run = make_run(tmp_path / "runs", "grpo-math", sft_records(range(1, 11)), state="finished")
    ckpt = run.path / "output" / "checkpoint-10"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 10, "log_history": [
        {"step": s, "loss": 1.0 / s} for s in range(1, 11)]}))
    app = app_for(tmp_path, "replay", [str(ckpt)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "loaded")
        await app_wait(pilot, lambda: header_lines(app)[0].startswith(run.name + " ·"), "title")


# -- axes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_axes_read_as_whole_steps_and_distinct_values(tmp_path, size):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=size) as pilot:
        await all_drawn(pilot, app)
        for p in plots(app):
            assert p.xticks_drawn and all(t.isdigit() for t in p.xticks_drawn), p.xticks_drawn
            assert len(set(p.yticks_drawn)) == len(p.yticks_drawn), (p.panel.title, p.yticks_drawn)
        lr = next(p for p in plots(app) if p.panel.title == "learning rate")
        formats = {"e" in t for t in lr.yticks_drawn if t != "0"}
        assert len(formats) == 1, lr.yticks_drawn
        screen = "\n".join(screen_lines(app))
        for t in lr.yticks_drawn:
            assert t in screen


async def test_a_flat_series_has_one_tick_with_its_value(tmp_path):
    run = make_run(tmp_path / "runs", "flat", sft_records(range(1, 31)), state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        entropy = next(p for p in plots(app) if p.panel.title == "entropy")
        assert entropy.yticks_drawn == ["1.5"]
        lr = next(p for p in plots(app) if p.panel.title == "learning rate")
        assert lr.yticks_drawn == ["1e-4"]


# -- 100x30: footer, alert bar, home ETA ---------------------------------------------------------


LONG_WARNING = ("loss became nan at step 3 because the learning rate is far too high for this "
                "model and this batch size")


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_live_footer_shows_stop_and_help_on_every_tab_and_the_alert_bar_is_one_row(
        tmp_path, size):
    records = [*sft_records(range(1, 51)),
               journal.warning(LONG_WARNING, code="nan_loss", fix="lower the learning rate or set max_grad_norm 1.0")]
    run = make_run(tmp_path / "runs", "live", records, state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=size) as pilot:
        await all_drawn(pilot, app)
        await app_wait(pilot, lambda: app.screen.query_one("#alert-bar").display, "alert shown")
        await pilot.pause(0.2)
        footer = screen_lines(app)[-1]
        for words in ("q Back", "m Pick metric", "e Smoothing", "s Stop & save", "K Force stop",
                      "? Help"):
            assert words in footer, footer
        for tab in "23451":  # the plot keys make room for the completions keys elsewhere
            await pilot.press(tab)
            await pilot.pause(0.3)
            footer = screen_lines(app)[-1]
            for words in ("s Stop & save", "K Force stop", "? Help"):
                assert words in footer, (tab, footer)
            assert ("m Pick metric" in footer) == (tab == "1"), footer
        bar = app.screen.query_one("#alert-bar")
        assert bar.outer_size.height == 1
        row = next(line for line in screen_lines(app) if "loss became nan" in line)
        assert row.rstrip().endswith("…") or "fix:" in row


async def test_footer_of_a_stopped_run_shows_resume_at_100_columns(tmp_path):
    records = [*half_run(1000, 500), journal.run_ended("stopped", reason="stop requested")]
    run = make_run(tmp_path / "runs", "stopped", records, state="stopped")
    ckpt = run.path / "output" / "checkpoint-500"  # a complete checkpoint: resumable
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 500, "max_steps": 1000,
                                                         "log_history": []}))
    (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        await app_wait(pilot, lambda: "u Resume" in screen_lines(app)[-1], "resume offered")
        footer = screen_lines(app)[-1]
        for words in ("q Back", "m Pick metric", "e Smoothing", "x Step/time", "? Help"):
            assert words in footer, footer


def test_home_durations_are_short_with_units():
    from cockpit.formats import short_duration
    from cockpit.ui.widgets.home.runs_table import DURATION_WIDTH

    assert [short_duration(s) for s in (0, 45, 123, 3599, 3600 + 5 * 60, 99 * 3600, 123 * 3600)] \
        == ["0s", "45s", "2m03s", "59m59s", "1h05m", "99h00m", "5d03h"]
    assert all(len(short_duration(s)) <= DURATION_WIDTH for s in range(0, 10**7, 997))


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_home_shows_the_eta_of_live_runs_in_full(tmp_path, size):
    from cockpit.ui.widgets.home.runs_table import RunsTable

    records = [journal.run_started("grpo", max_steps=1500), journal.phase("training"),
               journal.metrics(291, {"loss": 0.5}, epoch=4.55),
               journal.progress(291, 1500, epoch=4.55, steps_per_s=2.0, eta_s=123.0)]
    make_run(tmp_path / "runs", "grpo-math", records, state="running", trainer="grpo")
    ended = [*records[:-1], journal.progress(291, 1500, steps_per_s=2.0, eta_s=50.0), journal.run_ended("stopped")]
    make_run(tmp_path / "runs", "stopped-early", ended, state="stopped", trainer="grpo")
    app = app_for(tmp_path)
    async with app.run_test(size=size) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 2, "two runs listed")

        def both_drawn() -> bool:
            lines = screen_lines(app)
            return any("291/1500" in ln and "running" in ln for ln in lines) and \
                any("291/1500" in ln and "stopped" in ln for ln in lines)

        await app_wait(pilot, both_drawn, "both rows drawn")  # not a fixed pause: a loaded machine draws later
        lines = screen_lines(app)
        live = next(line for line in lines if "291/1500" in line and "running" in line)
        assert "2m03s" in live
        stopped = next(line for line in lines if "stopped" in line and "291/1500" in line)
        assert "50s" not in stopped


async def test_header_words_stay_apart_in_a_screenshot(tmp_path):
    """A text run that starts with a space loses it in SVG viewers ('trainergrpo'): no header
    run may start with one."""
    import re as _re

    run = make_run(tmp_path / "runs", "shot", sft_records(range(1, 51)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await app_wait(pilot, lambda: "step 50/100" in " ".join(header_lines(app)), "header")
        svg = app.export_screenshot()
        runs = _re.findall(r'clip-path="url\(#terminal-[^)]*?line-[01]\)">([^<]*)</text>', svg)
        words = [r for r in runs if r.strip("\xa0 &#160;\n")]
        assert "trainer" in words and "step" in words
        assert not [r for r in words if _re.match(r"&#160;\w", r)], words


# -- legends survive a trip to another tab -------------------------------------------------------


def _legends(app) -> dict[str, str]:
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    return {p.panel.title: str(p.border_title) + "".join(str(r) for r in p.legend)
            for p in app.screen.query_one(PlotGrid).plots()}


async def test_plot_legends_come_back_after_another_tab_and_after_0(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json"),
                                        str(FIXTURES / "trainer_eval_best_checkpoint.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await app_wait(pilot, lambda: any("━" in t for t in _legends(app).values()), "legends drawn")
        before = _legends(app)
        assert "━" in before["loss"]
        for keys in (("2", "1"), ("3", "1"), ("2", "1", "0")):
            await pilot.press(*keys)
            await pilot.pause(0.3)
            await app_wait(pilot, lambda: _legends(app) == before, f"the legends back after {keys}")


# -- odd metric names ----------------------------------------------------------------------------


def _plain(title) -> str:
    """A border title as shown (the property gives it back as markup)."""
    from textual.content import Content

    return Content.from_markup(title).plain


@pytest.mark.parametrize("size", [(100, 30), (160, 48)])
async def test_odd_metric_names_are_drawn_and_keep_the_panel_borders_whole(tmp_path, size):
    from rich.cells import cell_len

    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    odd = ["[bold]weird[/]", "\x1b[31mred", "rewards/🚀/mean"]
    records = [journal.run_started("grpo", max_steps=20), journal.phase("training")]
    for s in range(1, 21):
        records.append(journal.metrics(s, {odd[0]: s, odd[1]: 2 * s, odd[2]: s / 3,
                                           "rewards/format/mean": s / 4, "loss": 1 / s}))
    run = make_run(tmp_path / "runs", "odd", records, trainer="grpo")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=size) as pilot:
        grid = app.screen.query_one(PlotGrid)
        await app_wait(pilot, lambda: len(grid.plots()) >= 4 and all(p.chart for p in grid.plots()),
                       "the panels drawn")
        await pilot.pause(0.3)
        plots = {p.panel.title: p for p in grid.plots()}
        assert plots["[bold]weird[/]"].points_drawn == 20  # not "no data yet"
        assert "no data" not in _plain(plots["[bold]weird[/]"].border_title)
        assert _plain(plots["\x1b[31mred"].border_title) == "·[31mred 40"  # its latest value (issue 30)
        reward = plots["reward"]
        assert "rewards/🚀/mean" in reward.labels_drawn
        for plot in grid.plots():
            title = _plain(plot.border_title)
            assert "\x1b" not in title and cell_len(title) <= plot.size.width
            for line in plot.render().split():
                assert line.cell_len == plot.size.width
        assert "\x1b" not in app.export_screenshot()


# -- an older GRPO file's completion length ------------------------------------------------------


LEGACY_GRPO = str(FIXTURES / "trl_grpo_legacy_reward_keys.json")
MODERN_GRPO = str(FIXTURES / "trl_grpo_modern_multireward.json")


@pytest.mark.parametrize("paths, drawn", [
    ([LEGACY_GRPO], ["completion_length"]),
    ([MODERN_GRPO, LEGACY_GRPO], ["trl_grpo_modern_multireward: completions/mean_length",
                                  "trl_grpo_legacy_reward_keys: completion_length"]),
])
async def test_completion_length_panel_draws_old_and_new_grpo_files_side_by_side(tmp_path, paths, drawn):
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    app = app_for(tmp_path, "replay", paths)
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == len(paths), "loaded")
        grid = app.screen.query_one(PlotGrid)
        await app_wait(pilot, lambda: any(p.panel.title == "completion length" and p.chart
                                          for p in grid.plots()), "a completion length panel")
        plot = next(p for p in grid.plots() if p.panel.title == "completion length")
        await app_wait(pilot, lambda: plot.labels_drawn == drawn, f"drawn: {drawn}")
        assert not any(p.panel.title == "completion_length" for p in grid.plots())
