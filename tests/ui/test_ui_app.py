"""Pilot tests of the TUI flows: home, live run, replay, overlay, themes, bad input.

Run folders are written by hand with the core APIs (journal writer + status),
so no training is needed.
"""

from __future__ import annotations

import math
import time

import pytest

from cockpit.run import journal
from helpers import FIXTURES, live
from helpers.ui import SIZE, app_for, app_wait, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio


# -- home -------------------------------------------------------------------------------------


async def test_home_lists_runs_with_live_ones_first(tmp_path):
    runs = tmp_path / "runs"
    make_run(runs, "old-finished", sft_records(range(1, 11)), state="finished")
    time.sleep(0.01)
    live = make_run(runs, "now-running", sft_records(range(1, 6)), state="running")
    make_run(runs, "newest-failed", sft_records(range(1, 3)), state="failed")
    from cockpit.ui.widgets.home.runs_table import RunsTable

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 3, "three runs listed")
        first = table.get_row_at(0)
        assert str(first[0]) == live.name
        assert str(first[1]) == "running"
        assert str(first[3]) == "5/100"
        assert {str(table.get_row_at(i)[1]) for i in range(3)} == {"running", "finished", "failed"}


async def test_home_enter_on_a_run_opens_it_live(tmp_path):
    run = make_run(tmp_path / "runs", "open-me", sft_records(range(1, 11)), state="finished")
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the run listed")
        table.focus()
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen), "live screen")
        assert app.screen.run.path == run.path


async def test_new_run_and_edit_preset_open_the_setup_screen(tmp_path):
    from cockpit.ui.screens.setup import SetupScreen

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("p")  # the presets list, first preset highlighted
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, SetupScreen)


# -- live -------------------------------------------------------------------------------------


async def test_live_screen_fills_plots_table_and_completions_then_follows_appends(tmp_path):
    records = sft_records(range(1, 21))
    records.append(journal.completions(20, [
        {"prompt": "Question: 2+2?\nAnswer:", "completion": "four\x07", "rewards": {"acc": 1.0},
         "advantage": 0.5},
        {"prompt": "Question: 2+2?\nAnswer:", "completion": "five", "rewards": {"acc": 0.0},
         "advantage": -0.5}], source="trainer_logs"))
    records.append(journal.system({"cpu_percent": 99.0, "rss_mb": 512.0}))
    records.append(journal.warning("loss became nan at step 3", code="nan_loss", fix="lower the LR"))
    run = make_run(tmp_path / "runs", "live", records)
    from textual.widgets import DataTable, TabbedContent

    from cockpit.ui.widgets.run.completions import CompletionsPane
    from cockpit.ui.widgets.run.log_history import LogHistoryTable
    from cockpit.ui.widgets.run.metric_plot import MetricPlot
    from cockpit.ui.widgets.run.run_header import RunHeader

    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: len(app.screen.query(MetricPlot)) >= 4, "plots mounted")
        screen = app.screen
        titles = [p.panel.title for p in screen.query(MetricPlot)]
        assert titles[:5] == ["loss", "learning rate", "grad norm", "mean token accuracy", "entropy"]
        await app_wait(pilot, lambda: all(p.points_drawn for p in screen.query(MetricPlot)),
                       "every panel drawn")
        grad = next(p for p in screen.query(MetricPlot) if p.panel.title == "grad norm")
        assert grad.points_drawn == 19  # the NaN at step 3 is skipped, the line goes on
        header = str(screen.query_one(RunHeader).render())
        assert "step 20/100" in header and "sft" in header

        await pilot.press("3")
        table = screen.query_one(LogHistoryTable)
        await app_wait(pilot, lambda: table.row_count == 20, "20 log rows")
        await pilot.press("2")
        comp_table = screen.query_one(CompletionsPane).query_one(DataTable)
        await app_wait(pilot, lambda: comp_table.row_count == 2, "two completions")
        assert "four·" in str(comp_table.get_row_at(0)[1])  # control character made visible
        assert str(screen.query_one("#alert-bar").render()).count("loss became nan") == 1

        # Lines appended after the screen opened show up.
        with journal.JournalWriter(run.events) as jw:
            jw.write_all(sft_records(range(21, 31))[2:])
            jw.write(journal.run_ended("finished", reason="training finished"))
        await pilot.press("1")
        await app_wait(pilot, lambda: screen.sources[0].store.last_step == 30, "appended steps")
        loss = next(p for p in screen.query(MetricPlot) if p.panel.title == "loss")
        await app_wait(pilot, lambda: loss.points_drawn == 30, "loss redrawn with 30 points")
        await pilot.press("3")
        await app_wait(pilot, lambda: table.row_count == 30, "30 log rows")
        await app_wait(pilot, lambda: "finished" in str(screen.query_one("#alert-bar").render()),
                       "run end shown")
        assert screen.query_one(TabbedContent).active == "history"


async def test_live_plots_hand_plotext_at_most_two_points_per_column(tmp_path):
    records = [journal.run_started("sft", max_steps=20000)]
    records += [journal.metrics(s, {"loss": math.sin(s / 100)}) for s in range(1, 20001)]
    run = make_run(tmp_path / "runs", "big", records)
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: any(p.points_drawn for p in app.screen.query(MetricPlot)),
                       "loss drawn")
        plot = app.screen.query(MetricPlot).first()
        assert 0 < plot.points_drawn <= 2 * plot.size.width


async def test_metric_picker_adds_a_panel_for_any_logged_key(tmp_path):
    records = sft_records(range(1, 6))
    # Other keys first: they top the defaults up to their limit, so the custom one has no panel yet.
    records.append(journal.metrics(6, {"loss": 0.3, **{f"other/k{i}": float(i) for i in range(8)},
                                       "my/custom_metric": 7.0}))
    run = make_run(tmp_path / "runs", "pick", records)
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: len(app.screen.query(MetricPlot)) >= 5, "plots mounted")
        screen = app.screen
        before = len(screen.query(MetricPlot))
        await pilot.press("m")
        await pilot.press(*"custom")
        await pilot.press("enter")
        await app_wait(pilot, lambda: len(screen.query(MetricPlot)) == before + 1, "panel added")
        assert screen.query(MetricPlot).last().panel.keys == ("my/custom_metric",)


async def test_stop_asks_for_confirmation_and_requests_a_save(tmp_path):
    run = make_run(tmp_path / "runs", "stopme", sft_records(range(1, 4)))
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.live import LiveRunScreen

    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.state,
                       "live screen with a state")
        await pilot.press("s")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirmation")
        assert not run.pending_request("stop_save")
        await pilot.press("y")
        await app_wait(pilot, lambda: run.pending_request("stop_save"), "stop_save request")


# -- replay -----------------------------------------------------------------------------------


async def test_replay_of_a_fixture_draws_the_grpo_panels(tmp_path):
    path = FIXTURES / "trl_grpo_modern_multireward.json"
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "replay", [str(path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: any(p.points_drawn for p in app.screen.query(MetricPlot)),
                       "plots drawn")
        titles = [p.panel.title for p in app.screen.query(MetricPlot)]
        assert titles[0] == "reward"
        assert "reward std" in titles
        reward = app.screen.query(MetricPlot).first()
        keys = reward.panel.resolve(app.screen.sources[0].store.keys())
        assert "reward" in keys and any(k.startswith("rewards/") and k.endswith("/mean") for k in keys)


async def test_overlay_of_two_fixtures_draws_both_in_the_same_panel(tmp_path):
    a = FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"
    b = FIXTURES / "trl_orpo_recsys.json"
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "replay", [str(a), str(b)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await app_wait(pilot, lambda: app.screen.query(MetricPlot), "plots mounted")
        loss = app.screen.query(MetricPlot).first()
        await app_wait(pilot, lambda: loss.drawn_signature and len(loss.drawn_signature[0]) == 2,
                       "loss drawn from both")
        labels = [s.label for s in app.screen.sources]
        assert labels == ["trl_dpo_nan_gradnorm_midrun", "trl_orpo_recsys"]
        assert loss.labels_drawn == [f"{label}: loss" for label in labels]


async def test_add_a_run_to_the_overlay_from_the_tui(tmp_path):
    a = FIXTURES / "trl_sft_token_accuracy.json"
    b = FIXTURES / "trl_dpo_nan_gradnorm_midrun.json"
    app = app_for(tmp_path, "replay", [str(a)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: len(getattr(app.screen, "sources", [])) == 1, "one loaded")
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#path-input").value = str(b)
        await pilot.press("enter")
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "second source added")


@pytest.mark.parametrize("content", [None, b"", b'{"log_history": [{"loss": 1.0, "st',
                                     b"[1, 2, 3]"])
async def test_bad_replay_path_is_a_notification_and_the_app_keeps_running(tmp_path, content):
    bad = tmp_path / "trainer_state.json"
    if content is not None:
        bad.write_bytes(content)
    good = FIXTURES / "trl_sft_token_accuracy.json"
    app = app_for(tmp_path, "replay", [str(bad), str(good)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: any(str(bad) in m for m in notifications(app)),
                       "a notification naming the file")
        await app_wait(pilot, lambda: len(app.screen.sources) == 1, "the good one still loads")
        assert app.is_running
        assert not any("Traceback" in m for m in notifications(app))


async def test_a_replay_named_on_the_command_line_builds_home_only_when_the_user_goes_there(tmp_path):
    """Issue 33: Home (its compose, the runs listing, the presets) is not built beside a replay
    that was named on the command line; `q` builds it, with its runs; a command line whose only
    path cannot be read lands on Home, the error said."""
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable

    make_run(tmp_path / "runs", "listed", sft_records(range(1, 4)), state="finished")
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "replay")
        assert not any(isinstance(s, HomeScreen) for s in app.screen_stack)
        await pilot.press("q")
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "home's runs listed")
    app = app_for(tmp_path, "replay", [str(tmp_path / "nope.json")])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        await app_wait(pilot, lambda: any("no such file" in m for m in notifications(app)), "the error said")


# -- themes and help --------------------------------------------------------------------------


async def test_theme_switch_recolours_the_plots(tmp_path):
    from cockpit.ui.colors import series_colors
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "cockpit-night"
        assert {"cockpit-night", "cockpit-day", "cockpit-amber"} <= set(app.available_themes)
        await app_wait(pilot, lambda: any(p.points_drawn for p in app.screen.query(MetricPlot)),
                       "plots drawn")
        plot = app.screen.query(MetricPlot).first()
        night = series_colors(app)
        sig = plot.drawn_signature
        app.theme = "cockpit-day"
        await app_wait(pilot, lambda: plot.drawn_signature != sig, "plot redrawn for the theme")
        assert series_colors(app) != night
        assert plot.drawn_signature[-1] == "cockpit-day"


async def test_bad_user_theme_files_are_reported_once_and_skipped(tmp_path):
    from cockpit.ui.themes import shipped_themes_dir

    user = tmp_path / "themes"
    user.mkdir()
    (user / "broken.toml").write_text("name = \n", encoding="utf-8")
    (user / "nocolour.yaml").write_text("name: x\nprimary: notacolour\n", encoding="utf-8")
    (user / "mine.yaml").write_text("name: mine\nprimary: '#ff0000'\ndark: true\n", encoding="utf-8")
    app = app_for(tmp_path, theme_dirs=[shipped_themes_dir(), user])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: any("broken.toml" in m or "nocolour" in m for m in notifications(app)),
                       "the themes' notification")  # notify() reaches the app on its next turn
        theme_notes = [m for m in notifications(app) if "broken.toml" in m or "nocolour" in m]
        assert len(theme_notes) == 1
        assert "broken.toml" in theme_notes[0] and "nocolour.yaml" in theme_notes[0]
        assert "mine" in app.available_themes
        app.theme = "mine"
        await pilot.pause()


async def test_help_lists_the_keys_of_the_screen(tmp_path):
    from textual.widgets import Static

    from cockpit.ui.screens.help import HelpScreen

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await app_wait(pilot, lambda: isinstance(app.screen, HelpScreen), "help screen")
        text = "\n".join(str(s.render()) for s in app.screen.query(Static))
        for description in ("Pick metric", "Smoothing", "Add run", "Back"):
            assert description in text
        await pilot.press("escape")
        await app_wait(pilot, lambda: not isinstance(app.screen, HelpScreen), "help closed")


async def test_every_screen_action_is_in_the_command_palette(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for wanted in ("Pick metric", "Smoothing", "Step/time", "Add run",
                       "Theme: cockpit-day", "Completions tab"):
            assert wanted in titles


async def test_quitting_while_a_watched_run_trains_says_it_trains_on_and_how_to_come_back(tmp_path, monkeypatch):
    from cockpit.run.folder import Status
    from cockpit.ui.app import trains_on

    monkeypatch.setenv("COCKPIT_RUNS_DIR", str(tmp_path / "runs"))
    run = live(make_run(tmp_path / "runs", "busy", sft_records(range(1, 5)), state="running"))
    done = make_run(tmp_path / "runs", "done", [*sft_records(range(1, 5)), journal.run_ended("finished")],
                    state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run shown")
        app.open_live(str(done.path))
        await pilot.press("q")
    assert trains_on(app.watched) == [
        f"{run.name} trains on (running) — come back to it with: cockpit attach {run.name}"]
    run.write_status(Status(state="finished", name=run.name, trainer="sft"))
    assert trains_on(app.watched) == []
