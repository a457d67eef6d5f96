"""What a new user hit in the TUI, round two (issue 22, items 1 and 4–17): each test drives the
real screen (Pilot) over run folders written with the core APIs, or a real run's command."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from test_ui_app import app_for, make_run, notifications, sft_records, wait_for

from cockpit.run import journal
from cockpit.run.folder import Status
from conftest import FIXTURES

pytestmark = pytest.mark.anyio


def _footer_keys(app) -> list[str]:
    from textual.widgets import Footer

    return [k.description for k in app.screen.query_one(Footer).query("FooterKey")]


def _fake_checkpoint(folder: Path, step: int, max_steps: int = 100) -> None:
    ckpt = folder / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(f'{{"global_step": {step}, "max_steps": {max_steps}}}')
    (ckpt / "model.safetensors").write_bytes(b"weights")


# -- 1: a stopped script-mode run resumes from the TUI --------------------------------------------


async def test_a_stopped_script_run_offers_u_resume_and_u_starts_the_next_attempt(tmp_path):
    from cockpit.launch import plan as launch
    from cockpit.launch.script import prepare_script
    from cockpit.ui.screens.confirm import ConfirmScreen

    (tmp_path / "train.py").write_text("print('resumed')\n", encoding="utf-8")
    run = prepare_script([sys.executable, "train.py"], cwd=tmp_path, runs_dir=tmp_path / "runs")
    with journal.JournalWriter(run.events) as jw:  # what the hook writes: the script's output_dir
        jw.write_all([journal.run_started("sft", max_steps=100, script=True, output_dir="out"),
                      *sft_records(range(1, 11))[2:],
                      journal.run_ended("stopped", reason="stopped by request", step=10)])
    run.write_status(Status(state="stopped", name=run.name, trainer="sft"))
    _fake_checkpoint(tmp_path / "out", 10)  # in the script's folder, not the run folder
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources and app.screen.resumable, "resumable")
        await wait_for(pilot, lambda: "Resume" in _footer_keys(app), "u Resume in the footer")
        assert "Resume" in {c.title for c in app.get_system_commands(app.screen)}
        screen = app.screen
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        await pilot.press("y")
        try:
            await wait_for(pilot, lambda: any("resumed from" in m for m in notifications(app)),
                           "resumed", limit=30)
            assert run.read_status().attempt == 2
            assert "resumed from" in run.command_txt.read_text()
            await wait_for(pilot, lambda: screen.state not in ("starting", "running"),
                           "the script's second attempt ends", limit=60)
        finally:
            from cockpit.errors import CockpitError
            try:
                launch.stop(run, save=False, grace_s=2)
            except CockpitError:
                pass


# -- 4: a preset saved in setup shows on Home at once ---------------------------------------------


@pytest.mark.usefixtures("registry")
async def test_a_preset_saved_in_setup_is_listed_on_home_when_coming_back(tmp_path):
    from test_ui_setup import pick, type_into
    from textual.widgets import Input

    from cockpit.paths import user_presets_dir
    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.widgets.home.preset_list import PresetList
    from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt

    target = user_presets_dir() / "round2-saved.yaml"
    target.unlink(missing_ok=True)
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        presets = app.screen.query_one(PresetList)
        await wait_for(pilot, lambda: presets.option_count > 0, "the presets listed")
        assert str(target) not in presets.infos
        await pilot.press("n")
        await pick(pilot, app, "sft")
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SavePresetPrompt), "the name prompt")
        app.screen.query_one("#preset-name", Input).value = "round2-saved"
        await pilot.press("enter")
        await wait_for(pilot, target.exists, "the preset file")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), "back home")
        await wait_for(pilot, lambda: str(target) in presets.infos, "the saved preset on Home")
        target.unlink()
        await pilot.press("f5")
        await wait_for(pilot, lambda: str(target) not in presets.infos, "F5 reads them again")


# -- 5: legends survive a trip to another tab -------------------------------------------------------


def _legends(app) -> dict[str, str]:
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    return {p.panel.title: str(p.border_title) + "".join(str(r) for r in p.legend)
            for p in app.screen.query_one(PlotGrid).plots()}


async def test_plot_legends_come_back_after_another_tab_and_after_0(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json"),
                                        str(FIXTURES / "trainer_eval_best_checkpoint.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await wait_for(pilot, lambda: any("━" in t for t in _legends(app).values()), "legends drawn")
        before = _legends(app)
        assert "━" in before["loss"]
        for keys in (("2", "1"), ("3", "1"), ("2", "1", "0")):
            await pilot.press(*keys)
            await pilot.pause(0.3)
            await wait_for(pilot, lambda: _legends(app) == before, f"the legends back after {keys}")


# -- 6: export from an overlay writes every source ----------------------------------------------------


async def test_w_in_an_overlay_exports_every_source_added_with_a(tmp_path, monkeypatch):
    from textual.widgets import Input

    from cockpit.ui.screens.path_prompt import PathPrompt

    monkeypatch.chdir(tmp_path)
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt")
        app.screen.query_one(Input).value = str(FIXTURES / "trl_orpo_recsys.json")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(getattr(app.screen, "sources", [])) == 2, "two sources")
        await pilot.press("f", "w")
        await wait_for(pilot, lambda: sum("panels.png" in m for m in "\n".join(notifications(app)).split("\n"))
                       == 2, "both sources' files", limit=120)
        written = sorted(p.name for p in (*tmp_path.glob("*.csv"), *tmp_path.glob("*.png")))
        assert written == ["trl_orpo_recsys-metrics.csv", "trl_orpo_recsys-panels.png",
                           "trl_sft_token_accuracy-metrics.csv", "trl_sft_token_accuracy-panels.png"]


# -- 7: the ETA mid-run --------------------------------------------------------------------------------


def test_the_callback_writes_progress_between_logs_but_not_at_every_step(tmp_path):
    from transformers import TrainerControl, TrainerState

    from cockpit.run.folder import create_run_folder
    from cockpit.runner.callback import CockpitCallback

    run = create_run_folder(tmp_path / "runs", "eta")
    state = TrainerState(max_steps=40, global_step=20, is_world_process_zero=True)
    with journal.JournalWriter(run.events) as jw:
        cb = CockpitCallback(run, jw)
        cb.on_train_begin(None, TrainerState(max_steps=40, is_world_process_zero=True), TrainerControl())
        cb._last_progress = 0.0  # as if the last progress line were long ago
        cb.on_step_end(None, state, TrainerControl())   # a step between two logs: one line
        state.global_step = 21
        cb.on_step_end(None, state, TrainerControl())   # right after it: none
    records, _ = journal.read_all(run.events)
    progress = [r.step for r in records if r.kind == journal.PROGRESS]
    assert progress == [0, 20]


async def test_an_eta_past_its_countdown_mid_run_is_not_shown_as_0_s(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    records = sft_records(range(1, 21), max_steps=40)
    stale = journal.progress(20, 40, steps_per_s=2.0, eta_s=5.0)
    stale.t = time.time() - 12  # written 12 s ago with 5 s to go: the next step is slow
    run = make_run(tmp_path / "runs", "slow-steps", [*records, stale])
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await wait_for(pilot, lambda: "step 20/40" in str(header.render()), "the header")
        text = str(header.render())
        assert "ETA …" in text and "ETA 0" not in text
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.progress(21, 40, steps_per_s=0.1, eta_s=190.0))
        await wait_for(pilot, lambda: "ETA 3m" in str(header.render()), "a fresh ETA")


# -- 8: odd metric names ----------------------------------------------------------------------------


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
        await wait_for(pilot, lambda: len(grid.plots()) >= 4 and all(p.chart for p in grid.plots()),
                       "the panels drawn")
        await pilot.pause(0.3)
        plots = {p.panel.title: p for p in grid.plots()}
        assert plots["[bold]weird[/]"].points_drawn == 20  # not "no data yet"
        assert "no data" not in _plain(plots["[bold]weird[/]"].border_title)
        assert _plain(plots["\x1b[31mred"].border_title) == "·[31mred"
        reward = plots["reward"]
        assert "rewards/🚀/mean" in reward.labels_drawn
        for plot in grid.plots():
            title = _plain(plot.border_title)
            assert "\x1b" not in title and cell_len(title) <= plot.size.width
            for line in plot.render().split():
                assert line.cell_len == plot.size.width
        assert "\x1b" not in app.export_screenshot()


# -- 9: an older GRPO file's completion length ------------------------------------------------------


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
        await wait_for(pilot, lambda: len(app.screen.sources) == len(paths), "loaded")
        grid = app.screen.query_one(PlotGrid)
        await wait_for(pilot, lambda: any(p.panel.title == "completion length" and p.chart
                                          for p in grid.plots()), "a completion length panel")
        plot = next(p for p in grid.plots() if p.panel.title == "completion length")
        await wait_for(pilot, lambda: plot.labels_drawn == drawn, f"drawn: {drawn}")
        assert not any(p.panel.title == "completion_length" for p in grid.plots())


# -- 10: the pane a number key opens takes the focus ----------------------------------------------


async def test_a_number_key_gives_the_focus_to_the_tab_it_opens(tmp_path):
    from textual.widgets import TabbedContent

    from cockpit.ui.widgets.run.alerts_list import RulesTable
    from cockpit.ui.widgets.run.log_history import LogHistoryTable

    run = make_run(tmp_path / "runs", "focus", sft_records(range(1, 40)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "loaded")
        tabs = app.screen.query_one(TabbedContent)
        await pilot.press("3")
        history = app.screen.query_one(LogHistoryTable)
        await wait_for(pilot, lambda: app.focused is history, "the log history focused")
        await pilot.press("right")
        await pilot.pause(0.2)
        assert tabs.active == "history"  # Right moved in the table, not to the next tab
        await pilot.press("6")
        await wait_for(pilot, lambda: isinstance(app.focused, RulesTable), "the alert rules focused")
        rules = app.focused
        await wait_for(pilot, lambda: rules.row_count > 1, "the built-in rules listed")
        await pilot.press("down")
        await wait_for(pilot, lambda: rules.cursor_row == 1, "Down moves in the rules at once")
        await pilot.press("m")
        await wait_for(pilot, lambda: any(m.startswith("muted") for m in notifications(app)),
                       "m mutes at once")


# -- 11: the add-rule dialog ----------------------------------------------------------------------------


@pytest.mark.parametrize("state, targets, action, when", [
    ("running", False, "journal", "from its next poll"),
    ("running", True, "notify", "from its next poll"),
    ("stopped", False, "journal", "once it is resumed"),
])
async def test_the_add_rule_dialog_offers_notify_only_with_targets_and_says_when_like_the_note(
        tmp_path, state, targets, action, when):
    import yaml
    from textual.widgets import Select, Static

    from cockpit.ui.screens.add_rule import AddRuleScreen

    run = make_run(tmp_path / "runs", "rules", sft_records(range(1, 6)), state=state)
    if targets:
        run.run_yaml.write_text("trainer: sft\ncockpit:\n  notify: {ntfy: 'https://ntfy.example/t'}\n")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources and app.screen.state == state, "loaded")
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AddRuleScreen), "the dialog")
        dialog = app.screen
        assert dialog.query_one("#rule-action", Select).value == action
        assert when in str(dialog.query_one("#rule-hint", Static).render())
        await pilot.press("enter")
        added = run.control / "alerts.yaml"
        await wait_for(pilot, added.exists, "control/alerts.yaml")
        assert yaml.safe_load(added.read_text())["alerts"][0]["do"] == [action]
        await wait_for(pilot, lambda: any(m.startswith("watching") and when in m for m in notifications(app)),
                       "the note says the same")


# -- 12: the reward-functions field and the completions filter ---------------------------------------


@pytest.mark.usefixtures("registry")
async def test_reward_functions_typed_as_a_bracketed_list_are_names(runs_dir):
    from test_ui_setup import Host, pick, setup_screen, type_into
    from textual.widgets import Static

    app = Host(runs_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await pick(pilot, app, "grpo")
        screen = setup_screen(app)
        # GRPO's one reward field is TRL's own reward_funcs (issue 30 §4: not two fields).
        await type_into(pilot, app, "reward_funcs", "[accuracy_reward, rewards.py:my_fn, 1]")
        await wait_for(pilot, lambda: screen.current_preset().trl.get("reward_funcs")
                       == ["accuracy_reward", "rewards.py:my_fn", "1"], "three names")
        await type_into(pilot, app, "reward_funcs", "[accuracy_reward")
        editor = screen.query_one("#field-reward_funcs")
        await wait_for(pilot, lambda: editor.has_class("-invalid"), "an unclosed list is refused")
        assert "closing ]" in str(editor.query_one(".field-error", Static).content)


async def test_a_filter_comparison_without_a_number_says_what_to_write(tmp_path):
    from test_ui_completions_browser import _open_tab, _stored_run

    run = _stored_run(tmp_path, (1, 2))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _open_tab(app, pilot)

        def state() -> str:
            return str(pane.query_one("#completions-state").render())

        await pilot.press("slash", *"accuracy_reward>abc")
        await wait_for(pilot, lambda: "put a number after >" in state(), "a hint for reward>abc")
        assert "accuracy_reward>0.5" in state()
        await pilot.press("ctrl+u", *"acc>")
        await wait_for(pilot, lambda: "'acc>': put a number after >" in state(), "a hint for acc>")
        await pilot.press("ctrl+u", *"2+2>1")  # text with a > in it is searched for, no hint
        await wait_for(pilot, lambda: "put a number" not in state(), "no hint for text")


# -- 13: a nonsense key in the keymap ------------------------------------------------------------------


async def test_a_nonsense_key_in_the_keymap_is_refused_and_the_default_key_keeps_working(tmp_path):
    from textual.widgets import Footer

    from cockpit.ui.screens.setup import SetupScreen

    keymap = tmp_path / "keymap.toml"
    keymap.write_text('"home.new_run" = "ctrl+shift+banana"\n', encoding="utf-8")
    app = app_for(tmp_path, keymap_file=keymap)
    async with app.run_test(size=(100, 30)) as pilot:
        told = [n for n in app._notifications if n.title.startswith("keymap.toml")]
        assert len(told) == 1 and "'banana' is not a key name" in told[0].message
        def keys():
            return list(app.screen.query_one(Footer).query("FooterKey"))

        await wait_for(pilot, lambda: any(k.description == "New run" for k in keys()), "the footer")
        new_run = next(k for k in keys() if k.description == "New run")
        assert new_run.key_display == "n"
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen), "n still opens the form")


# -- 14: attach to an output dir keeps its header current -------------------------------------------


def _trainer_state(folder: Path, step: int, max_steps: int = 150) -> None:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    history = [{"step": s, "epoch": s / max_steps, "loss": 1.0 / s} for s in range(1, step + 1)]
    (folder / "trainer_state.json").write_text(json.dumps(
        {"global_step": step, "max_steps": max_steps, "log_history": history}), encoding="utf-8")


async def test_attach_to_an_output_dir_names_the_newest_checkpoint_as_it_lands(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    out = tmp_path / "out"
    _trainer_state(out / "checkpoint-10", 10)
    app = app_for(tmp_path, "replay", [str(out)])  # what `cockpit attach out` opens
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await wait_for(pilot, lambda: "checkpoint-10" in str(header.render()), "the first checkpoint")
        assert "step 10/150" in str(header.render())
        _trainer_state(out / "checkpoint-20", 20)
        await wait_for(pilot, lambda: "step 20/150" in str(header.render()), "the next one followed")
        text = str(header.render())
        assert "checkpoint-20" in text and "checkpoint-10" not in text


# -- 15: a blank start -----------------------------------------------------------------------------------


async def test_before_the_first_step_the_plots_say_what_the_run_is_doing_and_the_header_names_the_trainer(
        tmp_path):
    from textual.widgets import Static

    from cockpit.ui.widgets.run.run_header import RunHeader

    run = make_run(tmp_path / "runs", "blank", [journal.phase("importing", "torch, transformers, trl")],
                   state="running", trainer="grpo")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        header = app.screen.query_one(RunHeader)
        waiting = app.screen.query_one("#plots-waiting", Static)
        await wait_for(pilot, lambda: waiting.display and "importing TRL" in str(waiting.render()),
                       "the plots area says what is going on")
        assert "waiting for the first step (importing TRL…)" in str(waiting.render())
        assert "trainer grpo" in str(header.render()) and "unknown trainer" not in str(header.render())
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_ended("failed", reason="ImportError: no module named trl", step=0))
        run.write_status(Status(state="failed", name=run.name, trainer="grpo"))
        await wait_for(pilot, lambda: "ended before its first logged step" in str(waiting.render()),
                       "a failure before the first step", limit=20)
        assert "trainer grpo" in str(header.render())
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.metrics(1, {"loss": 1.0}))
        await wait_for(pilot, lambda: not waiting.display, "the plots once there is a metric")


# -- 16: replay of a file with no completions, and of a bad path -------------------------------------


async def test_a_replayed_file_without_completions_says_so_without_yet(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("2")
        title = app.screen.query_one("#completions-title")
        await wait_for(pilot, lambda: "no completions in trl_sft_token_accuracy" in str(title.render()),
                       "no completions in this file")
        assert "yet" not in str(title.render())


async def test_a_bad_replay_path_from_home_is_an_error_and_home_stays(tmp_path):
    from textual.widgets import Input

    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.path_prompt import PathPrompt
    from cockpit.ui.screens.replay import ReplayScreen

    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt")
        app.screen.query_one(Input).value = str(tmp_path / "nope.json")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("no such file" in m for m in notifications(app)), "the error")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("r")  # one good path among bad ones: the good one opens
        await wait_for(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt again")
        app.screen.query_one(Input).value = f"{tmp_path / 'nope.json'} {FIXTURES / 'trl_orpo_recsys.json'}"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "the replay")
        assert app.screen.paths == [str(FIXTURES / "trl_orpo_recsys.json")]


# -- 17: cosmetic ----------------------------------------------------------------------------------------


async def test_home_shows_a_run_whole_after_it_finishes_while_listed(tmp_path):
    from cockpit.ui.widgets.home.runs_table import RunsTable

    run = make_run(tmp_path / "runs", "demo", sft_records(range(1, 6), max_steps=120), state="running")
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await wait_for(pilot, lambda: table.row_count == 1, "the run listed")
        with journal.JournalWriter(run.events) as jw:
            jw.write_all(sft_records(range(6, 121), max_steps=120)[2:])
            jw.write(journal.run_ended("finished", step=120))
        run.write_status(Status(state="finished", name=run.name, trainer="sft"))
        await wait_for(pilot, lambda: "finished" in app.export_screenshot(), "finished", limit=20)
        await pilot.pause(0.3)
        shown = str(table.render_line(1).text)
        assert "finished" in shown and "120/120" in shown


async def test_ctrl_c_on_home_says_which_key_quits_in_words(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: any("to quit" in m for m in notifications(app)), "the hint")
        hint = next(m for m in notifications(app) if "to quit" in m)
        assert "[b]" not in hint and hint.startswith("Press ")


def _chat_rows(_step: int) -> list[dict]:
    """Prompts as a chat template leaves them: one system prompt, the question, one assistant turn."""
    system = "<|im_start|>system\nYou are a careful assistant. Think step by step.<|im_end|>\n<|im_start|>user\n"
    end = "<|im_end|>\n<|im_start|>assistant\n"
    return [{"prompt": f"{system}What is {a}+{b}?{end}", "completion": f"{a + b}",
             "rewards": {"accuracy_reward": 1.0}, "advantage": 0.5 - i / 4}
            for i, (a, b) in enumerate([(2, 2), (3, 5), (7, 1)])]


async def test_at_100_columns_prompts_show_the_part_that_differs_and_scores_are_whole(tmp_path):
    from test_ui_completions_browser import _column, _header, _open_tab, _stored_run

    run = _stored_run(tmp_path, (1,), rows=_chat_rows)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _open_tab(app, pilot)
        prompts = _column(pane, "prompt")
        assert len(set(prompts)) == 3 and all("+" in p for p in prompts), prompts
        assert _header(pane)[-1] == "advantage"
        table = pane.query_one("#completions-table")
        right = sum(c.get_render_width(table) for c in table.columns.values())
        assert right <= table.size.width  # every column on screen, none cut at the edge


@pytest.mark.usefixtures("registry")
async def test_the_setup_form_counts_its_fields_as_the_field_search_does(runs_dir):
    import re

    from test_ui_setup import Host, pick, setup_screen
    from textual.widgets import Static

    app = Host(runs_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await pick(pilot, app, "grpo")
        screen = setup_screen(app)
        top = str(screen.query_one("#trainer-info", Static).render())
        below = str(screen.query_one("#field-search-title", Static).render())
        total = re.search(r"All (\d+) fields", below).group(1)
        assert f"{total} fields:" in top and "of GRPOConfig" in top
