"""What users ran into (issue 8), each done again the way they did it, through the TUI."""

from __future__ import annotations

import pytest
from test_ui_app import app_for, make_run, notifications, sft_records, wait_for

from cockpit.run import journal
from conftest import FIXTURES

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


# -- compare of a live run ---------------------------------------------------------------------


async def test_a_live_run_in_compare_keeps_updating_and_its_checkpoint_says_snapshot(tmp_path):
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.run_header import RunHeader

    run = make_run(tmp_path / "runs", "training", sft_records(range(1, 11)), state="running")
    checkpoint = run.output / "checkpoint-5"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_bytes(
        (FIXTURES / "trl_sft_token_accuracy.json").read_bytes())
    app = app_for(tmp_path, "replay", [str(run.path), str(checkpoint)])
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await wait_for(pilot, lambda: len(screen.sources) == 2, "both sources")
        live = next(s for s in screen.sources if s.store.last_step == 10)
        await wait_for(pilot, lambda: any("snapshot" in m and "checkpoint" in m
                                          for m in notifications(app)), "the snapshot said")
        header = screen.query_one(RunHeader)
        await wait_for(pilot, lambda: "running" in str(header.render()), "the live state shown")

        with journal.JournalWriter(run.events) as jw:  # the run goes on
            jw.write_all(sft_records(range(11, 21))[2:])
        await wait_for(pilot, lambda: live.store.last_step == 20, "new steps followed")

        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_ended("finished", reason="training finished"))
        from cockpit.run.folder import Status
        run.write_status(Status(state="finished", name=run.name, trainer="sft"))
        await wait_for(pilot, lambda: "finished" in str(header.render()), "its end shown")


# -- log history after a resume ------------------------------------------------------------------


async def test_log_history_after_a_resume_shows_each_step_once_and_marks_the_resume(tmp_path):
    from cockpit.ui.widgets.run.log_history import LogHistoryTable

    run = make_run(tmp_path / "runs", "resumed", sft_records(range(1, 8)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("3")
        table = app.screen.query_one(LogHistoryTable)
        await wait_for(pilot, lambda: table.row_count == 7, "seven steps")

        # Stopped at step 7, resumed from checkpoint-4 (steps 5-7 come again, with new values).
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_started("sft", max_steps=100,
                                         resumed_from=str(run.output / "checkpoint-4")))
            for s in range(5, 10):
                jw.write(journal.metrics(s, {"loss": 100.0 + s}))
        await wait_for(pilot, lambda: table.row_count == 10, "9 steps and the marker")

        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        steps = [r[1] for r in rows]
        assert steps == ["1", "2", "3", "4", "4", "5", "6", "7", "8", "9"]
        assert rows[4][0] == "⟲ resumed from checkpoint-4"
        loss = [c.key.value for c in table.columns.values()].index("loss")
        assert [r[loss] for r in rows[5:8]] == ["105", "106", "107"]  # the newest values


# -- home: launching a preset, focus -------------------------------------------------------------


async def test_a_fresh_runs_folder_focuses_the_presets(tmp_path):
    from cockpit.ui.widgets.home.preset_list import PresetList

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.focused, PresetList), "the presets focused")
        await pilot.pause(0.5)
        assert isinstance(app.focused, PresetList)


@pytest.mark.slow  # it launches demo-sft from the home screen: the runner imports the training stack
async def test_enter_on_a_preset_asks_first_with_the_command_and_focus_comes_back_to_the_runs(
        tmp_path):
    from cockpit.launch import plan as launch
    from cockpit.run.folder import list_runs
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.home.preset_list import PresetList
    from cockpit.ui.widgets.home.runs_table import RunsTable

    runs = tmp_path / "runs"
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        presets = app.screen.query_one(PresetList)
        await wait_for(pilot, lambda: presets.option_count and isinstance(app.focused, PresetList),
                       "the presets listed and focused")
        index = next(i for i in range(presets.option_count)
                     if presets.get_option_at_index(i).id.endswith("demo-sft.yaml"))
        presets.highlighted = index
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "a question first")
        detail = str(app.screen.query_one("#confirm-detail").render())
        assert "cockpit run" in detail and "demo-sft.yaml" in detail and str(runs) in detail
        assert "max_steps: 120" in detail
        await pilot.press("n")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HomeScreen) and not list_runs(runs)  # nothing launched
        assert isinstance(app.focused, PresetList)

        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked again")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the run opens",
                       limit=60)
        run = app.screen.run
        try:
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), "home again")
            table = app.screen.query_one(RunsTable)
            await wait_for(pilot, lambda: table.row_count == 1, "the run listed")
            await wait_for(pilot, lambda: app.focused is table, "the runs list focused")
        finally:
            launch.stop(run, save=False, grace_s=2)


# -- run view keys: tabs and completions wherever the focus is ---------------------------------


def _completions_run(tmp_path):
    records = sft_records(range(1, 8))
    for step in (2, 4, 6):
        records.append(journal.completions(step, [
            {"prompt": f"prompt {step}.{i}", "completion": f"completion {step}.{i}",
             "rewards": {}, "advantage": None} for i in range(3)], source="generate"))
    return make_run(tmp_path / "runs", "samples", records)


def _footer_keys(app) -> list[str]:
    from textual.widgets import Footer

    return [k.description for k in app.screen.query_one(Footer).query("FooterKey")]


async def test_digit_keys_switch_tabs_from_the_completions_table_and_its_detail(tmp_path):
    from textual.widgets import TabbedContent

    app = app_for(tmp_path, "live", [str(_completions_run(tmp_path).path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "the run loaded")
        tabs = app.screen.query_one(TabbedContent)
        for focus_id in ("completions-table", "completions-detail"):
            await pilot.press("2")
            await wait_for(pilot, lambda: tabs.active == "completions", "completions tab")
            app.screen.query_one(f"#{focus_id}").focus()
            await pilot.pause()
            for digit, tab in (("3", "history"), ("2", "completions"), ("6", "alerts"),
                               ("2", "completions"), ("1", "plots")):
                if tab == "completions":
                    app.screen.query_one(f"#{focus_id}").focus()
                    await pilot.pause()
                await pilot.press(digit)
                await wait_for(pilot, lambda tab=tab: tabs.active == tab, f"{digit} shows {tab}")
                await pilot.pause(0.2)
                assert tabs.active == tab  # and it stays there


async def test_completions_keys_work_and_show_wherever_the_focus_is(tmp_path):
    from cockpit.ui.widgets.run.completions import CompletionsPane

    app = app_for(tmp_path, "live", [str(_completions_run(tmp_path).path)])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "the run loaded")
        assert "Older" not in _footer_keys(app)  # not on the plots tab
        await pilot.press("2")
        pane = app.screen.query_one(CompletionsPane)
        await wait_for(pilot, lambda: pane._rows, "completions shown")
        await wait_for(pilot, lambda: {"Older", "Newer", "Follow"} <= set(_footer_keys(app)),
                       "the completions keys in the footer")
        from textual.widgets import Tabs
        app.screen.query_one(Tabs).focus()  # 2 gave the focus to the pane: take it to the tab strip
        await pilot.pause()
        assert pane not in app.focused.ancestors_with_self
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pane.step == 4, "one step older, focus on the tab strip")
        app.screen.query_one("#completions-table").focus()
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pane.step == 2, "older again from the table")
        await pilot.press("end")
        await wait_for(pilot, lambda: pane.step is None, "End follows the newest from the table")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pane.step == 4, "scrubbed back")
        await pilot.press("3")  # on another tab End and [ ] are not the completions' keys
        from cockpit.ui.widgets.run.log_history import LogHistoryTable
        history = app.screen.query_one(LogHistoryTable)
        await wait_for(pilot, lambda: history.row_count == 7, "history")
        history.focus()
        await pilot.press("end", "left_square_bracket")
        await pilot.pause(0.2)
        assert pane.step == 4
        assert "Older" not in _footer_keys(app)


# -- stop/resume keys follow the run's state -----------------------------------------------------


def _checkpoint(run, step: int) -> None:
    ckpt = run.output / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(f'{{"global_step": {step}, "max_steps": 100}}')
    (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file


@pytest.mark.parametrize("state, checkpoint, offered", [
    ("running", False, {"Stop & save", "Force stop"}),
    ("finished", True, set()),
    ("failed", False, set()),
    ("failed", True, {"Resume"}),
    ("stopped", True, {"Resume"}),
])
async def test_stop_and_resume_are_offered_only_when_they_can_do_something(
        tmp_path, state, checkpoint, offered):
    run = make_run(tmp_path / "runs", "keys", sft_records(range(1, 6)), state=state)
    if checkpoint:
        _checkpoint(run, 5)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "the run loaded")
        keys = {"Stop & save", "Force stop", "Resume"}
        await wait_for(pilot, lambda: set(_footer_keys(app)) & keys == offered,
                       f"the footer offering {offered or 'none of them'}")
        await pilot.pause(0.3)
        assert set(_footer_keys(app)) & keys == offered  # and it stays so
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert palette & {"Stop & save", "Force stop", "Resume"} == offered
        if "Stop & save" not in offered:
            await pilot.press("s", "K")  # the keys do nothing either: no question comes up
            await pilot.pause(0.2)
            assert app.screen.__class__.__name__ == "LiveRunScreen"


# -- completions title and columns ---------------------------------------------------------------


async def test_completions_title_reads_as_words_and_empty_columns_are_left_out(tmp_path):
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.completions import CompletionsPane

    records = sft_records(range(1, 300))
    for step in range(1, 292, 50):  # periodic samples, as SFT has them: no advantage
        records.append(journal.completions(step, [
            {"prompt": f"p{i}", "completion": f"c{i}", "rewards": {}, "advantage": None}
            for i in range(4)], source="generate"))
    records.append(journal.completions(291, [
        {"prompt": f"p{i}", "completion": f"c{i}", "rewards": {}, "advantage": None}
        for i in range(4)], source="generate"))
    app = app_for(tmp_path, "live", [str(make_run(tmp_path / "runs", "sft", records).path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("2")
        pane = app.screen.query_one(CompletionsPane)
        table = pane.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count == 4, "four samples")
        title = str(pane.query_one("#completions-title").render())
        assert title.startswith("step 291 · 4 samples · 7 steps kept · following newest")
        assert "held" not in title
        assert [str(c.label) for c in table.columns.values()] == ["prompt", "completion"]
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pane.step == 251, "one step back")
        title = str(pane.query_one("#completions-title").render())
        assert title.startswith("step 251 · 4 samples · 7 steps kept · 6 of 7, scrubbed back")
        assert "End newest" in title


# -- help ----------------------------------------------------------------------------------------


async def test_help_is_titled_in_words_and_lists_each_own_key_once(tmp_path):
    from textual.widgets import Static

    from cockpit.ui.screens.help import HelpScreen

    run = make_run(tmp_path / "runs", "helped", sft_records(range(1, 4)))
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        from cockpit.ui.widgets.home.runs_table import RunsTable
        table = app.screen.query_one(RunsTable)
        await wait_for(pilot, lambda: table.row_count == 1 and app.focused is table,
                       "the runs list focused")
        for expected_title, must in (("Home: runs and presets — keys", ("New run", "Compare")),
                                     (f"Live run · {run.name} — keys", ("Stop & save", "Pick metric"))):
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
            texts = [str(s.render()) for s in app.screen.query(Static)]
            assert texts[0] == expected_title
            body = "\n".join(texts)
            for word in must:
                assert word in body
            for internal in ("Cursor up", "Page Left", "Focus Next", "Copy selected text",
                             "Previous tab", "palette\n"):
                assert internal not in body
            assert body.count("ctrl+p") == 1
            assert body.count("Quit") == 1 and body.count("Help") == 1
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), "closed")
            app.open_live(str(run.path))
            await wait_for(pilot, lambda: getattr(app.screen, "sources", None), "the run open")


async def test_the_palette_lists_the_screens_own_commands_first_each_once(tmp_path):
    """Issue 30: the palette listed Textual's internals first (Previous tab, Focus Next, the focused
    scroll box's Scroll Up…) and `Back` twice (Escape's and q's)."""
    run = make_run(tmp_path / "runs", "palette", sft_records(range(1, 4)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "sources", None), "the run open")
        for tab in ("1", "7"):  # the plots; the findings, with the focus in a scroll box
            await pilot.press(tab)
            await pilot.pause(0.2)
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert titles.count("Back") == 1, titles
            themes = next(i for i, t in enumerate(titles) if t.startswith("Theme: "))
            for internal in ("Previous tab", "Focus Next", "Copy selected text", "Scroll Up"):
                assert internal not in titles[:themes], (internal, titles)
            assert "What is this?" in titles[:themes]
        back = next(c for c in app.get_system_commands(app.screen) if c.title == "Back")
        assert back.help == "key: q"


# -- after a stop, and after a resume --------------------------------------------------------------


def _force_stopped_run(tmp_path):
    records = sft_records(range(1, 6))
    records.append(journal.run_ended("killed", signal=15, reason="stopped by request (SIGTERM)",
                                     fix="resume it with `cockpit resume RUN`", step=5))
    run = make_run(tmp_path / "runs", "stopped", records, state="killed")
    _checkpoint(run, 5)
    return run


async def test_a_stop_is_information_and_its_advice_is_the_resume_key(tmp_path):
    from cockpit.ui.widgets.run.alert_bar import AlertBar

    run = _force_stopped_run(tmp_path)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(AlertBar)
        await wait_for(pilot, lambda: bar.display, "the alert bar")
        text = str(bar.render())
        assert "stopped by request" in text and "press u to resume" in text
        assert "cockpit resume" not in text and "fix:" not in text
        assert bar.has_class("-info") and not bar.has_class("-error")
        await pilot.press("6")
        await pilot.pause(0.3)
        assert "press u to resume" in str(app.screen.query_one("#alerts-list").render())

    replay = app_for(tmp_path, "replay", [str(run.path)])  # no resume key there: the command
    async with replay.run_test(size=SIZE) as pilot:
        bar = replay.screen.query_one(AlertBar)
        await wait_for(pilot, lambda: bar.display, "the alert bar")
        assert f"`cockpit resume {run.name}`" in str(bar.render())


@pytest.mark.slow  # the resume starts a real runner (stopped at once)
async def test_resuming_clears_the_stop_banner_at_once_and_the_alerts_say_resumed(tmp_path):
    from cockpit.config.presets import load_preset
    from cockpit.config.validate import validate
    from cockpit.errors import CockpitError
    from cockpit.launch import plan as launch
    from cockpit.run.folder import Status
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.widgets.run.alert_bar import AlertBar

    # A real run folder (as launched), stopped at step 5 with a checkpoint.
    run = launch.prepare(validate(load_preset("demo-sft")), tmp_path / "runs", "stopped")
    with journal.JournalWriter(run.events) as jw:
        jw.write_all(sft_records(range(1, 6)))
        jw.write(journal.run_ended("killed", signal=15, reason="stopped by request (SIGTERM)",
                                   fix="resume it with `cockpit resume RUN`", step=5))
    run.write_status(Status(state="killed", name=run.name, trainer="sft"))
    _checkpoint(run, 5)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(AlertBar)
        await wait_for(pilot, lambda: bar.display and app.screen.resumable, "stopped, resumable")
        screen = app.screen
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        await pilot.press("y")
        try:
            # Gone before the new attempt wrote anything to the journal.
            await wait_for(pilot, lambda: not bar.display, "the stop banner cleared", limit=10)
            records, _ = journal.read_all(run.events)
            assert not any(r.data.get("resumed_from") for r in records)  # nothing new yet
            assert screen.sources[0].ended is None
        finally:
            try:
                launch.stop(run, save=False, grace_s=2)
            except CockpitError:
                pass  # it ended already (the checkpoint's weights are not real)

    # What the new attempt writes first: the alerts tab has the resume.
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("sft", max_steps=100,
                                     resumed_from=str(run.output / "checkpoint-5")))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("6")
        await wait_for(pilot, lambda: "resumed from checkpoint-5" in str(
            app.screen.query_one("#alerts-list").render()), "a resumed entry")


# -- the trainer's output ------------------------------------------------------------------------


async def test_output_tab_puts_a_progress_bar_and_the_table_glued_to_it_on_their_own_lines(
        tmp_path):
    from textual.widgets import Log

    run = make_run(tmp_path / "runs", "output", sft_records(range(1, 3)))
    # As a GRPO run writes them (from a demo run's stdout.log): tqdm redraws with \r, then rich
    # prints its table right after the bar; nested bars move the cursor up (ESC [A).
    run.stdout_log.write_bytes(
        b"\r  0%|          | 0/6 [00:00<?, ?it/s]\r 17%|\xe2\x96\x88\xe2\x96\x8b        | 1/6 "
        b"[00:00<00:02,  2.10it/s]\xe2\x95\xad\xe2\x94\x80\xe2\x94\x80 Step 1 \xe2\x94\x80\xe2\x94\x80"
        b"\xe2\x95\xae\n"
        b"\xe2\x95\xb0\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x95\xaf\r 33%|\xe2\x96\x88\xe2\x96\x88"
        b"\xe2\x96\x88       | 2/6 [00:01<00:02,  2.00it/s]\n"
        b"\r  0%|          | 0/2 [00:00<?, ?it/s]\x1b[A\r                    \r\n"
        b"\r                    \r\x1b[A{'eval_loss': '4.868'}\n")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("4")
        log = app.screen.query_one("#output-log", Log)
        await wait_for(pilot, lambda: len(log.raw_lines) >= 5, "the output")
        assert log.raw_lines == [
            " 17%|█▋        | 1/6 [00:00<00:02,  2.10it/s]",
            "╭── Step 1 ──╮",
            "╰───╯",
            " 33%|███       | 2/6 [00:01<00:02,  2.00it/s]",
            "{'eval_loss': '4.868'}",
        ]


# -- export from the TUI -------------------------------------------------------------------------


async def test_w_exports_the_run_as_csv_and_png_into_its_folder(tmp_path):
    from cockpit.ui.screens.live import LiveRunScreen

    run = make_run(tmp_path / "runs", "export-me", sft_records(range(1, 11)), state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("w")
        await wait_for(pilot, lambda: any("panels.png" in m for m in notifications(app)),
                       "the written paths", limit=60)
        header = (run.path / "metrics.csv").read_text().splitlines()[0].split(",")
        assert header[:2] == ["step", "kind"] and "loss" in header
        assert (run.path / "panels.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(run.path / "metrics.csv") in "\n".join(notifications(app))
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert "Export CSV+PNG" in palette
        assert isinstance(app.screen, LiveRunScreen)


async def test_w_in_a_replay_exports_the_shown_source_into_the_current_folder(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("w")
        await wait_for(pilot, lambda: any("panels.png" in m for m in notifications(app)),
                       "the written paths", limit=60)
        written = sorted(p.name for p in tmp_path.glob("*.csv")) + sorted(
            p.name for p in tmp_path.glob("*.png"))
        assert len(written) == 2 and all(n.startswith("trl_sft_token_accuracy-") for n in written)


# -- path completion in the replay and compare prompts --------------------------------------------


async def test_replay_prompt_completes_paths_as_they_are_typed(tmp_path):
    from textual.widgets import Input

    from cockpit.ui.screens.path_prompt import PathPrompt
    from cockpit.ui.screens.replay import ReplayScreen

    folder = tmp_path / "states"
    (folder / "checkpoint-10").mkdir(parents=True)
    (folder / "checkpoint-10" / "trainer_state.json").write_bytes(
        (FIXTURES / "trl_sft_token_accuracy.json").read_bytes())
    (folder / ".hidden").mkdir()
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), "the prompt")
        field = app.screen.query_one(Input)
        await pilot.press(*f"{folder}/ch")
        await wait_for(pilot, lambda: field._suggestion == f"{folder}/checkpoint-10/",
                       "the folder completed")
        await pilot.press("right")  # take it
        assert field.value == f"{folder}/checkpoint-10/"
        await pilot.press("t")
        await wait_for(pilot, lambda: field._suggestion.endswith("trainer_state.json"),
                       "the file completed")
        await pilot.press("right", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources,
                       f"replayed {app.screen} {field.value!r} {notifications(app)}")
        assert app.screen.paths == [f"{folder}/checkpoint-10/trainer_state.json"]
