"""A TUI that respects the user's focus: Escape climbs one level at a time (box, mode, tab,
screen) and never throws away what was typed; `q` leaves a run screen and quits at Home;
zooming into a completion pauses following; a theme picked in the palette is kept; form-level
keys work from inside a text field. Driven with Pilot, keys as a person presses them."""

from __future__ import annotations

import orjson
import pytest
from test_ui_app import app_for, make_run, sft_records, wait_for
from test_ui_completions_browser import _open_tab, _stored_run

from conftest import FIXTURES

pytestmark = pytest.mark.anyio

SIZE = (160, 48)


def _active_tab(app) -> str:
    from textual.widgets import TabbedContent

    return app.screen.query_one(TabbedContent).active


async def test_escape_in_the_checkpoints_prompt_box_keeps_the_text_and_climbs_one_level_a_press(tmp_path):
    from textual.widgets import DataTable, TextArea

    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.replay import ReplayScreen

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "replay")
        await pilot.press("8")
        await wait_for(pilot, lambda: _active_tab(app) == "checkpoints", "the checkpoints tab")
        box = app.screen.query_one("#ckpt-prompts", TextArea)
        box.focus()
        await pilot.pause()
        await pilot.press(*"what is 2+2")
        assert box.text.endswith("what is 2+2")
        await pilot.press("escape")  # out of the box, text kept, still on the tab
        await wait_for(pilot, lambda: not box.has_focus, "the box left")
        assert isinstance(app.screen, ReplayScreen) and _active_tab(app) == "checkpoints"
        assert box.text.endswith("what is 2+2")
        assert isinstance(app.focused, DataTable)
        await pilot.press("escape")  # the tab, back to the plots
        await wait_for(pilot, lambda: _active_tab(app) == "plots", "the plots tab")
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("escape")  # and only then the screen
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), "home")


async def test_escape_leaves_compare_mode_before_the_tab_and_zoom_pauses_following(tmp_path):
    from cockpit.ui.screens.live import LiveRunScreen

    run = _stored_run(tmp_path, [1, 2, 3, 4], state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        pane = await _open_tab(app, pilot)
        await pilot.press("b")  # pin this step beside another: a mode of the tab
        await wait_for(pilot, lambda: pane.pinned == 4, "compare mode")
        await pilot.press("escape")
        await wait_for(pilot, lambda: pane.pinned is None, "compare left")
        assert _active_tab(app) == "completions" and isinstance(app.screen, LiveRunScreen)

        await pilot.press("enter")  # zoom into the highlighted completion of the newest step
        await wait_for(pilot, lambda: pane.has_class("-zoomed"), "zoomed")
        assert pane.step == 4 and pane.paused
        assert "paused at step 4" in str(pane.query_one("#completions-title").render())
        from test_ui_completions_browser import _grpo_rows

        from cockpit.run import journal
        from cockpit.run.completions_store import CompletionsWriter

        writer = CompletionsWriter(run.path)
        with journal.JournalWriter(run.events) as jw:  # a new step arrives while reading
            jw.write(journal.metrics(5, {"loss": 0.2}))
            jw.write(writer.append(5, _grpo_rows(5), source="trainer_logs"))
        writer.close()
        await wait_for(pilot, lambda: 5 in pane.steps(), "step 5 read")
        assert pane.shown_step() == 4  # the zoomed completion is not swapped out
        await pilot.press("escape")  # unzoom (the detail's own key)
        await wait_for(pilot, lambda: not pane.has_class("-zoomed"), "unzoomed")
        await pilot.press("end")
        await wait_for(pilot, lambda: pane.step is None and not pane.paused, "following again")
        assert pane.shown_step() == 5


async def test_q_leaves_a_run_screen_and_quits_at_home(tmp_path):
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.live import LiveRunScreen

    run = make_run(tmp_path / "runs", "q", sft_records(range(1, 6)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")
        footer = " ".join(str(w.render()) for w in app.screen.query("FooterKey"))
        assert "Back" in footer
        await pilot.press("3")  # from any tab, q leaves the screen at once
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "quit")


async def test_a_theme_picked_in_the_palette_is_the_next_starts_theme(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme != "cockpit-day"
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Theme: cockpit-day"].callback()
        await pilot.pause()
        assert app.theme == "cockpit-day"
    kept = orjson.loads((tmp_path / "config" / "tui.json").read_bytes())
    assert kept["theme"] == "cockpit-day"
    again = app_for(tmp_path)
    async with again.run_test(size=SIZE):
        assert again.theme == "cockpit-day"
    (tmp_path / "config" / "tui.json").write_text("{ damaged", encoding="utf-8")
    third = app_for(tmp_path)
    async with third.run_test(size=SIZE):  # a damaged file is no choice
        assert third.theme != "cockpit-day"


async def test_waits_show_a_spinner_with_the_seconds_and_stop_at_the_result():
    from textual.app import App

    from cockpit.ui.widgets.waiting import FRAMES, Waiting

    class Host(App):
        def compose(self):
            yield Waiting("", id="w")

    app = Host()
    async with app.run_test(size=(80, 5)) as pilot:
        line = app.query_one(Waiting)
        line.wait("loading the trainers", "escape closes")
        await pilot.pause(0.6)
        first = str(line.render())
        assert first[0] in FRAMES and "loading the trainers · 0 s · escape closes" in first
        line._since -= 12  # as if twelve seconds had gone by
        await pilot.pause(0.3)
        assert "· 12 s" in str(line.render())
        line.update("12 trainers")
        await pilot.pause(0.6)
        assert str(line.render()) == "12 trainers" and not line.waiting


async def test_chat_turns_have_speakers_and_empty_answers_say_so_and_stay_out_of_side_by_side(tmp_path):
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.checkpoints_pane import CheckpointsPane

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "replay")
        await pilot.press("8")
        pane = app.screen.query_one(CheckpointsPane)
        kept = [
            {"session": "s1", "mode": "compare", "checkpoint": "checkpoint-10", "prompt": "2+2?", "completion": "4"},
            {"session": "s2", "mode": "compare", "checkpoint": "checkpoint-20", "prompt": "2+2?", "completion": "  \n"},
            {"session": "s2", "mode": "chat", "checkpoint": "checkpoint-20", "prompt": "hello", "completion": "hi"},
        ]
        pane._show_kept(kept)
        await pilot.pause()
        shown = str(pane.query_one("#ckpt-answer-a").render())
        assert "checkpoint-20" in shown and "(only whitespace: 3 characters)" in shown
        assert "hello" not in shown  # the chat turn is not a compared prompt
        pane._show_kept(kept[-1:])
        await pilot.pause()
        shown = str(pane.query_one("#ckpt-answer-a").render())
        assert "you hello" in shown and "checkpoint-20 hi" in shown
        pane.busy = True
        pane.columns["a"].answers.append(["and you?", ""])
        pane._render_columns()
        await pilot.pause()
        assert "checkpoint-20 generating…" in str(pane.query_one("#ckpt-answer-a").render())
        pane.busy = False


async def test_the_output_tab_wraps_long_lines_and_jumps_to_the_first_error(tmp_path):
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.run.output_log import OutputLog

    run = make_run(tmp_path / "runs", "out", sft_records(range(1, 4)))
    long = "warning: " + "word " * 60
    lines = [f"line {i}" for i in range(200)] + [long, "Traceback (most recent call last):",
                                                   '  File "train.py", line 3', "ValueError: the end"]
    (run.path / "stdout.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")
        await pilot.press("4")
        log = app.screen.query_one(OutputLog)
        await wait_for(pilot, lambda: len(log.raw_lines) == len(lines), "the output read")
        await wait_for(pilot, lambda: len(log.lines) > len(lines), "the long line wrapped")
        assert all(len(row) <= log.size.width for row in log.lines)
        assert "".join(log.lines).count("word") == 60  # nothing cut at the edge
        log.scroll_home(animate=False)
        await pilot.press("exclamation_mark")
        await pilot.pause()
        top, height = int(log.scroll_offset.y), log.scrollable_content_region.height
        at = next(i for i, row in enumerate(log.lines) if row.startswith("Traceback"))
        assert top <= at < top + height  # on screen: at the top, or as high as the end lets it
        assert top > 150


async def test_a_stopping_run_whose_trainer_is_done_has_no_contradiction_and_no_countdown(tmp_path):
    from cockpit.run import journal
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.run.run_header import RunHeader

    records = [*sft_records(range(1, 6)), journal.phase("done")]
    run = make_run(tmp_path / "runs", "ending", records, state="stopping")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")
        header = app.screen.query_one(RunHeader)
        await wait_for(pilot, lambda: "stopping" in str(header.render()), "the header")
        text = str(header.render())
        assert "phase ending" in text and "phase done" not in text
        assert "ETA" not in text


async def test_home_lists_each_runs_last_loss_or_reward_and_comes_back_to_the_run_left(tmp_path):
    from cockpit.run import journal
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable

    runs = tmp_path / "runs"
    make_run(runs, "sft-a", sft_records(range(1, 5)), state="finished")
    grpo = [journal.run_started("grpo", max_steps=10),
            *(journal.metrics(s, {"loss": 1e-8, "reward": 0.1 * s}) for s in range(1, 4))]
    make_run(runs, "grpo-b", grpo, state="finished", trainer="grpo")
    make_run(runs, "sft-c", sft_records(range(1, 3)), state="finished")
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(RunsTable)
        await wait_for(pilot, lambda: table.row_count == 3, "three runs")
        cells = {str(table.get_row(key)[0]).split("-2")[0]: str(table.get_row(key)[4]) for key in table.rows}
        assert cells == {"sft-a": "loss 0.5", "grpo-b": "reward 0.3", "sft-c": "loss 1"}
        grpo_path = next(str(k.value) for k in table.rows if "grpo-b" in str(k.value))
        table.move_cursor(row=next(i for i, r in enumerate(table.ordered_rows) if r.key.value != grpo_path))
        app.open_live(grpo_path)  # as a launch from a preset opens its new run
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the run open")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        await pilot.pause(0.5)
        row = table.ordered_rows[table.cursor_row]
        assert str(row.key.value) == grpo_path
