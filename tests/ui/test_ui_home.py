"""The home screen as a new user meets it: presets and runs listed and focused, a preset launched
after a question, a run shown whole when it ends, a bad replay path said without leaving, the quit
key said in words, paths completed in the replay prompt. Driven with Pilot over run folders written
with the core APIs."""

from __future__ import annotations

import pytest

from cockpit.run import journal
from cockpit.run.folder import Status
from helpers import FIXTURES
from helpers.ui import SIZE, app_for, app_wait, footer_keys, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio


# -- a preset saved in setup shows on Home at once ---------------------------------------------


@pytest.mark.usefixtures("registry")
async def test_a_preset_saved_in_setup_is_listed_on_home_when_coming_back(tmp_path):
    from textual.widgets import Input

    from cockpit.paths import user_presets_dir
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.widgets.home.preset_list import PresetList
    from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt
    from helpers.ui import pick, type_into

    target = user_presets_dir() / "round2-saved.yaml"
    target.unlink(missing_ok=True)
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        presets = app.screen.query_one(PresetList)
        await app_wait(pilot, lambda: presets.option_count > 0, "the presets listed")
        assert str(target) not in presets.infos
        await pilot.press("n")
        await pick(pilot, app, "sft")
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, SavePresetPrompt), "the name prompt")
        app.screen.query_one("#preset-name", Input).value = "round2-saved"
        await pilot.press("enter")
        await app_wait(pilot, target.exists, "the preset file")
        await pilot.press("escape")
        await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "back home")
        await app_wait(pilot, lambda: str(target) in presets.infos, "the saved preset on Home")
        target.unlink()
        await pilot.press("f5")
        await app_wait(pilot, lambda: str(target) not in presets.infos, "F5 reads them again")


# -- a bad replay path from home ------------------------------------------------------------------


async def test_a_bad_replay_path_from_home_is_an_error_and_home_stays(tmp_path):
    from textual.widgets import Input

    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.path_prompt import PathPrompt
    from cockpit.ui.screens.replay import ReplayScreen

    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("r")
        await app_wait(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt")
        app.screen.query_one(Input).value = str(tmp_path / "nope.json")
        await pilot.press("enter")
        await app_wait(pilot, lambda: any("no such file" in m for m in notifications(app)), "the error")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("r")  # one good path among bad ones: the good one opens
        await app_wait(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt again")
        app.screen.query_one(Input).value = f"{tmp_path / 'nope.json'} {FIXTURES / 'trl_orpo_recsys.json'}"
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "the replay")
        assert app.screen.paths == [str(FIXTURES / "trl_orpo_recsys.json")]


# -- a run shown whole, the quit key in words -------------------------------------------------------


async def test_home_shows_a_run_whole_after_it_finishes_while_listed(tmp_path):
    from cockpit.ui.widgets.home.runs_table import RunsTable

    run = make_run(tmp_path / "runs", "demo", sft_records(range(1, 6), max_steps=120), state="running")
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the run listed")
        with journal.JournalWriter(run.events) as jw:
            jw.write_all(sft_records(range(6, 121), max_steps=120)[2:])
            jw.write(journal.run_ended("finished", step=120))
        run.write_status(Status(state="finished", name=run.name, trainer="sft"))
        await app_wait(pilot, lambda: "finished" in app.export_screenshot(), "finished", limit=20)
        await pilot.pause(0.3)
        shown = str(table.render_line(1).text)
        assert "finished" in shown and "120/120" in shown


async def test_home_shows_the_kept_rows_first_then_a_run_changed_since_in_its_new_state(tmp_path, monkeypatch):
    """A fresh home lists the runs folder's index as kept, in its very first frame (read before
    it), then checks each run's files after that frame: a run that moved on since the index was
    written shows its new step, a deleted one goes."""
    import shutil

    from cockpit.run.summaries import RunsIndex
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable

    runs = tmp_path / "runs"
    moved = make_run(runs, "moved", sft_records(range(1, 6), max_steps=120), state="finished")
    gone = make_run(runs, "gone", sft_records(range(1, 3)), state="finished")
    RunsIndex(runs).summaries()  # the index, as an earlier home or `cockpit runs` left it
    with journal.JournalWriter(moved.events) as jw:
        jw.write(journal.progress(77, 120))
    shutil.rmtree(gone.path)
    lists: list[tuple[bool, dict]] = []
    shown = HomeScreen.on_home_screen_runs_loaded

    def record(self, message):
        lists.append((message.checked, {r.name: r.step for r in message.rows}))
        shown(self, message)

    monkeypatch.setattr(HomeScreen, "on_home_screen_runs_loaded", record)
    first_drawn: list[int] = []  # the table's rows at its first drawing
    drawn = RunsTable.render_lines

    def render_lines(self, crop):
        if not first_drawn:
            first_drawn.append(self.row_count)
        return drawn(self, crop)

    monkeypatch.setattr(RunsTable, "render_lines", render_lines)
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: "77/120" in app.export_screenshot(), "the run's new step", limit=20)
        assert table.row_count == 1 and "gone" not in app.export_screenshot()
    assert first_drawn == [2]  # the first frame: both kept rows, no spinner's frame before them
    assert lists[0] == (False, {moved.name: 5, gone.name: 2})  # the kept rows, before any file was checked
    assert (True, {moved.name: 77}) in lists


async def test_ctrl_c_on_home_says_which_key_quits_in_words(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+c")
        await app_wait(pilot, lambda: any("to quit" in m for m in notifications(app)), "the hint")
        hint = next(m for m in notifications(app) if "to quit" in m)
        assert "[b]" not in hint and hint.startswith("Press ")


# -- home: launching a preset, focus -------------------------------------------------------------


async def test_a_fresh_runs_folder_focuses_the_presets(tmp_path):
    from cockpit.ui.widgets.home.preset_list import PresetList

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: isinstance(app.focused, PresetList), "the presets focused")
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
        await app_wait(pilot, lambda: presets.option_count and isinstance(app.focused, PresetList),
                       "the presets listed and focused")
        index = next(i for i in range(presets.option_count)
                     if presets.get_option_at_index(i).id.endswith("demo-sft.yaml"))
        presets.highlighted = index
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "a question first")
        detail = str(app.screen.query_one("#confirm-detail").render())
        assert "cockpit run" in detail and "demo-sft.yaml" in detail and str(runs) in detail
        assert "max_steps: 120" in detail
        await pilot.press("n")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HomeScreen) and not list_runs(runs)  # nothing launched
        assert isinstance(app.focused, PresetList)

        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked again")
        await pilot.press("y")
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the run opens",
                       limit=60)
        run = app.screen.run
        try:
            await pilot.press("escape")
            await app_wait(pilot, lambda: isinstance(app.screen, HomeScreen), "home again")
            table = app.screen.query_one(RunsTable)
            await app_wait(pilot, lambda: table.row_count == 1, "the run listed")
            await app_wait(pilot, lambda: app.focused is table, "the runs list focused")
        finally:
            launch.stop(run, save=False, grace_s=2)


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
        await app_wait(pilot, lambda: isinstance(app.screen, PathPrompt), "the prompt")
        field = app.screen.query_one(Input)
        await pilot.press(*f"{folder}/ch")
        await app_wait(pilot, lambda: field._suggestion == f"{folder}/checkpoint-10/",
                       "the folder completed")
        await pilot.press("right")  # take it
        assert field.value == f"{folder}/checkpoint-10/"
        await pilot.press("t")
        await app_wait(pilot, lambda: field._suggestion.endswith("trainer_state.json"),
                       "the file completed")
        await pilot.press("right", "enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources,
                       f"replayed {app.screen} {field.value!r} {notifications(app)}")
        assert app.screen.paths == [f"{folder}/checkpoint-10/trainer_state.json"]


async def test_the_last_column_shows_what_matters_for_each_trainer_as_cockpit_runs_does(tmp_path):
    from cockpit.run import journal
    from cockpit.run.summaries import run_summaries
    from cockpit.ui.widgets.home.runs_table import RunsTable
    from helpers.ui import make_run, sft_records

    runs = tmp_path / "runs"
    summary = journal.metrics(3, {"train_loss": 0.25, "train_runtime": 12.0})  # the trainer's last line
    make_run(runs, "grpo", [journal.run_started("grpo", max_steps=3),
                            *(journal.metrics(s, {"loss": 0.01, "reward": 0.5 + s / 10}) for s in (1, 2, 3)),
                            summary], state="finished", trainer="grpo")
    make_run(runs, "dpo", [journal.run_started("dpo", max_steps=3),
                           journal.metrics(3, {"loss": 0.6, "rewards/margins": 0.42, "rewards/accuracies": 0.75}),
                           summary], state="finished", trainer="dpo")
    make_run(runs, "sft-eval", [*sft_records(range(1, 4), max_steps=3), journal.eval_metrics(3, {"eval_loss": 1.25}),
                                summary], state="finished")
    make_run(runs, "sft", [*sft_records(range(1, 4), max_steps=3), summary], state="finished")
    expected = {"grpo": "reward 0.8", "dpo": "margins 0.42", "sft-eval": "eval_loss 1.25", "sft": "loss 0.667"}
    assert {r.name.rsplit("-", 2)[0]: r.metric for r in run_summaries(runs)} == expected  # `cockpit runs`
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 4, "the runs listed")
        shown = {str(table.get_row_at(i)[0]).rsplit("-", 2)[0]: str(table.get_row_at(i)[4])
                 for i in range(table.row_count)}
        assert shown == expected


async def test_at_100_columns_the_home_footer_shows_help_whole(tmp_path):
    from textual.widgets import Footer

    make_run(tmp_path / "runs", "one", sft_records(range(1, 4)), state="finished")
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: "Help" in footer_keys(app), "the footer")
        await pilot.pause()
        shown = list(app.screen.query_one(Footer).query("FooterKey"))
        assert [k.description for k in shown].count("Help") == 1, footer_keys(app)
        keys = {k.description: k for k in shown}
        for needed in ("New run", "Replay", "Compare", "Quit", "Help"):
            region = keys[needed].region
            assert region.width and region.right <= 100, (needed, region)


async def test_at_60_columns_the_presets_go_under_the_runs_and_the_note_is_not_dimmed(tmp_path):
    from cockpit.ui.widgets.home.runs_table import RunsTable

    make_run(tmp_path / "runs", "one", sft_records(range(1, 4)), state="running")
    app = app_for(tmp_path)
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the run listed")
        await pilot.pause()
        assert app.screen.query_one("#home-body").has_class("-stacked")
        assert table.region.width >= 58  # the whole width, not 3/5 of it
        note = table.get_row_at(0)[-1]
        assert not note.style.dim and note.style.color is not None  # a colour the cursor row replaces
    async with app_for(tmp_path).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not pilot.app.screen.query_one("#home-body").has_class("-stacked")


async def test_at_60_columns_the_home_footer_keeps_quit_and_help_whole(tmp_path):
    make_run(tmp_path / "runs", "one", sft_records(range(1, 4)), state="finished")
    app = app_for(tmp_path)
    async with app.run_test(size=(60, 20)) as pilot:
        await app_wait(pilot, lambda: {"Quit", "Help"} <= set(footer_keys(app)), "Quit and Help in the footer")


async def test_the_presets_pane_says_what_it_waits_for_and_then_says_nothing(tmp_path, monkeypatch):
    """While the presets are read and checked against the installed TRL the pane says so (a
    spinner line); once they are, the line goes. Where the trainers cannot be read, it says
    that instead."""
    from cockpit.errors import CockpitError
    from cockpit.ui.widgets.home.preset_list import PresetList
    from cockpit.ui.widgets.waiting import Waiting

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        status = app.screen.query_one("#presets-status", Waiting)
        presets = app.screen.query_one(PresetList)
        await app_wait(pilot, lambda: presets.option_count and not status.display, "the presets checked")
        assert not status.waiting

    def no_trl(*_a, **_k):
        raise CockpitError("cannot import trl: No module named 'trl' — pip install trl")

    monkeypatch.setattr("cockpit.trainers.registry.load_registry", no_trl)
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        status = app.screen.query_one("#presets-status", Waiting)
        await app_wait(pilot, lambda: "could not check" in str(status.content), "the problem said")
        assert status.display and not status.waiting and "No module named 'trl'" in str(status.content)


async def test_the_eta_column_is_there_only_while_a_listed_run_is_live():
    """An ended run has no ETA: with none live the column goes (its room is the names'), and it
    comes back with the first live run."""
    from textual.app import App, ComposeResult

    from cockpit.run.summaries import RunSummary
    from cockpit.ui.widgets.home.runs_table import RunsTable

    class One(App):
        def compose(self) -> ComposeResult:
            yield RunsTable()

    ended = RunSummary("done", "/runs/done", "finished", "sft", 4, 4, None, 1e9, None, None)
    live = RunSummary("busy", "/runs/busy", "running", "sft", 2, 40, 90.0, 1e9, "training", None)
    app = One()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(RunsTable)
        table.show([ended])
        await pilot.pause()
        assert "eta" not in [k.value for k in table.columns]
        table.show([live, ended])
        await pilot.pause()
        assert "eta" in [k.value for k in table.columns]
        assert table.get_row("/runs/busy")[5].plain.strip() not in ("", "-")  # the live run's ETA


async def test_a_narrower_terminal_cuts_long_names_and_the_cursor_stays_on_its_run(tmp_path):
    """Long names get the room the other columns leave: a resize that narrows their column lays
    the rows out again, and the highlighted run stays highlighted."""
    from cockpit.ui.widgets.home.runs_table import RunsTable

    names = [f"sweep-{i}-learning-rate-1e-5-beta-0.1-warmup-0.03-seed-{i}" for i in range(5)]
    for name in names:
        make_run(tmp_path / "runs", name, sft_records(range(1, 4)), state="finished")
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 5, "the runs listed")
        table.focus()
        await pilot.press("down", "down", "down")
        chosen = table.highlighted_path()
        wide = table.columns[next(iter(table.columns))].width
        await pilot.resize_terminal(100, 40)
        await app_wait(pilot, lambda: table.columns[next(iter(table.columns))].width < wide, "the names cut")
        await pilot.pause()
        assert table.highlighted_path() == chosen and table.cursor_row == 3
