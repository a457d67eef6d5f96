"""A TUI that respects the user's focus: Escape climbs one level at a time (box, mode, tab,
screen) and never throws away what was typed; `q` leaves a run screen and quits at Home;
zooming into a completion pauses following; a theme picked in the palette is kept; form-level
keys work from inside a text field. Driven with Pilot, keys as a person presses them."""

from __future__ import annotations

import orjson
import pytest

from cockpit.run import journal
from helpers import FIXTURES
from helpers.ui import (
    SIZE,
    app_for,
    app_wait,
    footer_keys,
    make_run,
    notifications,
    open_completions_tab,
    sft_records,
    stored_run,
)

pytestmark = pytest.mark.anyio

WIDE = (160, 48)


def _active_tab(app) -> str:
    from textual.widgets import TabbedContent

    return app.screen.query_one(TabbedContent).active


async def test_escape_in_the_checkpoints_prompt_box_keeps_the_text_and_climbs_one_level_a_press(tmp_path):
    from textual.widgets import DataTable, TextArea

    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.replay import ReplayScreen

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=WIDE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "replay")
        await pilot.press("8")
        await app_wait(pilot, lambda: _active_tab(app) == "checkpoints", "the checkpoints tab")
        box = app.screen.query_one("#ckpt-prompts", TextArea)
        box.focus()
        await pilot.pause()
        await pilot.press(*"what is 2+2")
        assert box.text.endswith("what is 2+2")
        await pilot.press("escape")  # out of the box, text kept, still on the tab
        await app_wait(pilot, lambda: not box.has_focus, "the box left")
        assert isinstance(app.screen, ReplayScreen) and _active_tab(app) == "checkpoints"
        assert box.text.endswith("what is 2+2")
        assert isinstance(app.focused, DataTable)
        await pilot.press("escape")  # the tab, back to the plots
        await app_wait(pilot, lambda: _active_tab(app) == "plots", "the plots tab")
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("escape")  # and only then the screen
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home")


async def test_escape_leaves_compare_mode_before_the_tab_and_zoom_pauses_following(tmp_path):
    from cockpit.ui.screens.live import LiveRunScreen

    run = stored_run(tmp_path, [1, 2, 3, 4], state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("b")  # pin this step beside another: a mode of the tab
        await app_wait(pilot, lambda: pane.pinned == 4, "compare mode")
        await pilot.press("escape")
        await app_wait(pilot, lambda: pane.pinned is None, "compare left")
        assert _active_tab(app) == "completions" and isinstance(app.screen, LiveRunScreen)

        await pilot.press("enter")  # zoom into the highlighted completion of the newest step
        await app_wait(pilot, lambda: pane.has_class("-zoomed"), "zoomed")
        assert pane.step == 4 and pane.paused
        assert "paused at step 4" in str(pane.query_one("#completions-title").render())
        from cockpit.run import journal
        from cockpit.run.completions_store import CompletionsWriter
        from helpers.ui import grpo_rows

        writer = CompletionsWriter(run.path)
        with journal.JournalWriter(run.events) as jw:  # a new step arrives while reading
            jw.write(journal.metrics(5, {"loss": 0.2}))
            jw.write(writer.append(5, grpo_rows(5), source="trainer_logs"))
        writer.close()
        await app_wait(pilot, lambda: 5 in pane.steps(), "step 5 read")
        assert pane.shown_step() == 4  # the zoomed completion is not swapped out
        await pilot.press("escape")  # unzoom (the detail's own key)
        await app_wait(pilot, lambda: not pane.has_class("-zoomed"), "unzoomed")
        await pilot.press("end")
        await app_wait(pilot, lambda: pane.step is None and not pane.paused, "following again")
        assert pane.shown_step() == 5


async def test_q_leaves_a_run_screen_and_quits_at_home(tmp_path):
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.live import LiveRunScreen

    run = make_run(tmp_path / "runs", "q", sft_records(range(1, 6)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")

        def footer() -> str:
            return " ".join(str(w.render()) for w in app.screen.query("FooterKey"))

        await app_wait(pilot, lambda: footer(), "the footer drawn")  # it may come a frame after the data
        assert "Back" in footer()
        await pilot.press("3")  # from any tab, q leaves the screen at once
        await pilot.press("q")
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        await pilot.press("q")
        await app_wait(pilot, lambda: not app.is_running, "quit")


async def test_a_theme_picked_in_the_palette_is_the_next_starts_theme(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    app = app_for(tmp_path)
    async with app.run_test(size=WIDE) as pilot:
        assert app.theme != "cockpit-day"
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        commands["Theme: cockpit-day"].callback()
        await pilot.pause()
        assert app.theme == "cockpit-day"
    kept = orjson.loads((tmp_path / "config" / "tui.json").read_bytes())
    assert kept["theme"] == "cockpit-day"
    again = app_for(tmp_path)
    async with again.run_test(size=WIDE):
        assert again.theme == "cockpit-day"
    (tmp_path / "config" / "tui.json").write_text("{ damaged", encoding="utf-8")
    third = app_for(tmp_path)
    async with third.run_test(size=WIDE):  # a damaged file is no choice
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
    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=WIDE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "replay")
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
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")
        await pilot.press("4")
        log = app.screen.query_one(OutputLog)
        await app_wait(pilot, lambda: len(log.raw_lines) == len(lines), "the output read")
        await app_wait(pilot, lambda: len(log.lines) > len(lines), "the long line wrapped")
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
    async with app.run_test(size=WIDE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources, "live")
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "stopping" in str(header.render()), "the header")
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
    async with app.run_test(size=WIDE) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 3, "three runs")
        cells = {str(table.get_row(key)[0]).split("-2")[0]: str(table.get_row(key)[4]) for key in table.rows}
        assert cells == {"sft-a": "loss 0.5", "grpo-b": "reward 0.3", "sft-c": "loss 1"}
        grpo_path = next(str(k.value) for k in table.rows if "grpo-b" in str(k.value))
        table.move_cursor(row=next(i for i, r in enumerate(table.ordered_rows) if r.key.value != grpo_path))
        app.open_live(grpo_path)  # as a launch from a preset opens its new run
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the run open")
        await pilot.press("escape")
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home")
        await pilot.pause(0.5)
        row = table.ordered_rows[table.cursor_row]
        assert str(row.key.value) == grpo_path


# -- the pane a number key opens takes the focus ----------------------------------------------


async def test_a_number_key_gives_the_focus_to_the_tab_it_opens(tmp_path):
    from textual.widgets import TabbedContent

    from cockpit.ui.widgets.run.alerts_list import RulesTable
    from cockpit.ui.widgets.run.log_history import LogHistoryTable

    run = make_run(tmp_path / "runs", "focus", sft_records(range(1, 40)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "loaded")
        tabs = app.screen.query_one(TabbedContent)
        await pilot.press("3")
        history = app.screen.query_one(LogHistoryTable)
        await app_wait(pilot, lambda: app.focused is history, "the log history focused")
        await pilot.press("right")
        await pilot.pause(0.2)
        assert tabs.active == "history"  # Right moved in the table, not to the next tab
        await pilot.press("6")
        await app_wait(pilot, lambda: isinstance(app.focused, RulesTable), "the alert rules focused")
        rules = app.focused
        await app_wait(pilot, lambda: rules.row_count > 1, "the built-in rules listed")
        await pilot.press("down")
        await app_wait(pilot, lambda: rules.cursor_row == 1, "Down moves in the rules at once")
        await pilot.press("enter")  # m is "pick metric" on every tab; Enter acts on the rule
        await app_wait(pilot, lambda: any(m.startswith("muted") for m in notifications(app)),
                       "Enter mutes at once")


# -- run view keys: tabs and completions wherever the focus is ---------------------------------


def _completions_run(tmp_path):
    records = sft_records(range(1, 8))
    for step in (2, 4, 6):
        records.append(journal.completions(step, [
            {"prompt": f"prompt {step}.{i}", "completion": f"completion {step}.{i}",
             "rewards": {}, "advantage": None} for i in range(3)], source="generate"))
    return make_run(tmp_path / "runs", "samples", records)


async def test_digit_keys_switch_tabs_from_the_completions_table_and_its_detail(tmp_path):
    from textual.widgets import TabbedContent

    app = app_for(tmp_path, "live", [str(_completions_run(tmp_path).path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        tabs = app.screen.query_one(TabbedContent)
        for focus_id in ("completions-table", "completions-detail"):
            await pilot.press("2")
            await app_wait(pilot, lambda: tabs.active == "completions", "completions tab")
            app.screen.query_one(f"#{focus_id}").focus()
            await pilot.pause()
            for digit, tab in (("3", "history"), ("2", "completions"), ("6", "alerts"),
                               ("2", "completions"), ("1", "plots")):
                if tab == "completions":
                    app.screen.query_one(f"#{focus_id}").focus()
                    await pilot.pause()
                await pilot.press(digit)
                await app_wait(pilot, lambda tab=tab: tabs.active == tab, f"{digit} shows {tab}")
                await pilot.pause(0.2)
                assert tabs.active == tab  # and it stays there


async def test_completions_keys_work_and_show_wherever_the_focus_is(tmp_path):
    from cockpit.ui.widgets.run.completions import CompletionsPane

    app = app_for(tmp_path, "live", [str(_completions_run(tmp_path).path)])
    async with app.run_test(size=(160, 40)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        assert "Older" not in footer_keys(app)  # not on the plots tab
        await pilot.press("2")
        pane = app.screen.query_one(CompletionsPane)
        await app_wait(pilot, lambda: pane._rows, "completions shown")
        await app_wait(pilot, lambda: {"Older", "Newer", "Follow"} <= set(footer_keys(app)),
                       "the completions keys in the footer")
        from textual.widgets import Tabs
        app.screen.query_one(Tabs).focus()  # 2 gave the focus to the pane: take it to the tab strip
        await pilot.pause()
        assert pane not in app.focused.ancestors_with_self
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.step == 4, "one step older, focus on the tab strip")
        app.screen.query_one("#completions-table").focus()
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.step == 2, "older again from the table")
        await pilot.press("end")
        await app_wait(pilot, lambda: pane.step is None, "End follows the newest from the table")
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.step == 4, "scrubbed back")
        await pilot.press("3")  # on another tab End and [ ] are not the completions' keys
        from cockpit.ui.widgets.run.log_history import LogHistoryTable
        history = app.screen.query_one(LogHistoryTable)
        await app_wait(pilot, lambda: history.row_count == 7, "history")
        history.focus()
        await pilot.press("end", "left_square_bracket")
        await pilot.pause(0.2)
        assert pane.step == 4
        assert "Older" not in footer_keys(app)


async def test_the_footer_is_rebuilt_only_when_the_keys_it_shows_change(tmp_path):
    """Textual rebuilt every footer key at each bindings signal (a focus move, `refresh_bindings`);
    the cockpit's footer keeps its keys while what they show is the same, and shows another tab's
    keys when the tab changes."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    from cockpit.ui.screens.live import LiveRunScreen

    # A finished run: a running one without a supervisor is found gone a moment later, and its
    # keys change then (resume) — a rebuild this test must not mistake.
    run = make_run(tmp_path / "runs", "footer", sft_records(range(1, 6)), state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources
                       and footer_keys(app), "the run and its footer")
        footer = app.screen.query_one(Footer)
        before: list = []

        def settled() -> bool:  # the same key widgets at two looks in a row
            nonlocal before
            now, before = before, list(footer.query(FooterKey))
            return now == before

        await app_wait(pilot, settled, "the footer settled")
        shown = footer_keys(app)
        app.screen.refresh_bindings()  # the same keys: nothing to rebuild
        await pilot.pause()
        await pilot.pause()
        assert list(footer.query(FooterKey)) == before and footer_keys(app) == shown
        await pilot.press("3")  # the log history tab has keys of its own
        await app_wait(pilot, lambda: footer_keys(app) != shown, "the tab's keys")
        assert all(key not in before for key in footer.query(FooterKey))


async def test_the_footer_shows_whole_keys_only_keeping_back_and_help(tmp_path):
    """At 60 columns a replay's keys do not all fit: the footer leaves the last ones out,
    whole (it cut `a Add ru` mid-label), keeps `q Back` and `? Help`, and shows them all
    again when the terminal grows."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    from cockpit.ui.screens.replay import ReplayScreen

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(60, 20)) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources
                       and footer_keys(app), "the run and its footer")
        footer = app.screen.query_one(Footer)
        every = [k.description for k in footer.query(FooterKey)]

        def fits() -> bool:
            shown = [k for k in footer.query(FooterKey) if k.display]
            return bool(shown) and max(k.region.right for k in shown) <= footer.region.right

        await app_wait(pilot, fits, "whole keys at 60 columns")
        shown = footer_keys(app)
        assert shown[0] == "Back" and "Help" in shown and len(shown) < len(every), (shown, every)
        await pilot.resize_terminal(160, 48)
        await app_wait(pilot, lambda: footer_keys(app) == every, "every key at 160 columns")
