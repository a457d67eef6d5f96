"""Verdicts you can trust (issue 30, §3): "✓ valid" means the run will start here. A hub model that
is not in the local cache while the hub is offline, or a half-typed `demo:data/`, is not valid in
the setup form nor for `cockpit run --dry-run`; Home greys out the presets that cannot start on
this machine, with the reason. The tests run offline (conftest sets HF_HUB_OFFLINE=1); a cache is
a real folder in huggingface_hub's layout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import NO_SFT_CHECK, cockpit_cmd, hub_cache_env
from helpers.ui import (
    Host,
    app_for,
    app_wait,
    control,
    launch_button,
    notifications,
    pick,
    setup_screen,
    type_into,
    type_keys,
)

pytestmark = pytest.mark.anyio

HUB_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def _verdict(app) -> str:
    from textual.widgets import Static

    return str(setup_screen(app).query_one("#validation", Static).content)


@pytest.mark.usefixtures("registry")
async def test_setup_says_a_hub_model_missing_from_the_offline_cache_is_not_valid(runs_dir, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    app = Host(runs_dir)
    async with app.run_test(size=(140, 45)) as pilot:
        await pick(pilot, app, "sft")
        await type_into(pilot, app, "model_name_or_path", HUB_MODEL)
        await type_into(pilot, app, "dataset_name", "demo:data/prompt_completion")
        await app_wait(pilot, lambda: "✗" in _verdict(app), "the verdict")
        assert "not in the local Hugging Face cache" in _verdict(app) and "offline" in _verdict(app)
        assert launch_button(app).disabled
        # Once it is in the cache, the same form is valid.
        hub_cache_env(tmp_path, models=(HUB_MODEL,))
        await type_into(pilot, app, "max_steps", "2")
        await app_wait(pilot, lambda: "✓ valid" in _verdict(app), "valid once cached")
        assert not launch_button(app).disabled


@pytest.mark.usefixtures("registry")
async def test_setup_says_a_half_typed_demo_data_folder_is_not_valid(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=(140, 45)) as pilot:
        await pick(pilot, app, "sft")
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await type_into(pilot, app, "dataset_name", "demo:data/")
        await app_wait(pilot, lambda: "✗" in _verdict(app), "the verdict")
        assert "demo:data/: a folder of" in _verdict(app) and "e.g. demo:data/messages" in _verdict(app)
        assert launch_button(app).disabled
        await type_keys(pilot, "prompt_completion")
        await app_wait(pilot, lambda: "✓ valid" in _verdict(app), "valid once one dataset is named")


def test_dry_run_refuses_a_hub_model_missing_from_the_offline_cache_and_takes_a_cached_one(runs_dir, tmp_path):
    import os

    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_DATASETS_CACHE": str(tmp_path / "ds")}
    # The SFT data check (a TRL import of its own) is not the subject: off.
    args = cockpit_cmd("run", "demo-sft", "--dry-run", "--runs-dir", str(runs_dir),
                       "--set", f"model_name_or_path={HUB_MODEL}", "--set", NO_SFT_CHECK)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert f"model_name_or_path {HUB_MODEL}: not in the local Hugging Face cache" in proc.stderr
    assert f"hf download {HUB_MODEL}" in proc.stderr
    hub_cache_env(tmp_path, models=(HUB_MODEL,))
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    # Online, a hub id is the runner's to fetch: not refused.
    env = {**env, "HF_HUB_OFFLINE": "0", "HF_HUB_CACHE": str(tmp_path / "empty")}
    proc = subprocess.run(cockpit_cmd("run", "demo-grpo", "--dry-run", "--runs-dir", str(runs_dir),
                                      "--set", "model_name_or_path=someone/not-cached"),
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.usefixtures("registry")
async def test_home_greys_out_presets_that_cannot_run_here_with_the_reason(tmp_path, monkeypatch, registry):
    from cockpit.ui.widgets.home.preset_list import PresetList

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        presets = app.screen.query_one(PresetList)
        await app_wait(pilot, lambda: presets.blocked, "the presets checked against this machine")
        blocked = {Path(p).stem: reason for p, reason in presets.blocked.items()}
        assert {"sft-lora-qwen", "grpo-qwen", "dpo-ultrafeedback"} <= set(blocked)
        assert "not in the local Hugging Face cache" in blocked["sft-lora-qwen"]
        assert not any(name.startswith("demo-") for name in blocked)
        ppo = next((s for s in registry.trainers if s.name == "ppo"), None)
        assert ("ppo-tldr" in blocked) == (ppo is None or not ppo.available), blocked
        if "ppo-tldr" in blocked:
            assert "ppo" in blocked["ppo-tldr"] and "TRL" in blocked["ppo-tldr"]
        ids = [presets.get_option_at_index(i).id for i in range(presets.option_count)]
        row = str(presets.get_option_at_index(ids.index(next(p for p in ids if p.endswith("sft-lora-qwen.yaml"))))
                  .prompt)
        assert "✗" in row and "not in the local Hugging Face cache" in row
        # Enter on it says why instead of a launch question; it stays selectable for `e`.
        presets.focus()
        presets.highlighted = ids.index(next(p for p in ids if p.endswith("sft-lora-qwen.yaml")))
        await pilot.press("enter")
        await app_wait(pilot, lambda: any("cannot" in n or "cache" in n for n in notifications(app)),
                       "the reason said")
        assert any("e opens it" in n for n in notifications(app))


# -- §4: trainer-aware setup: one reward field, the registered names offered ---------------------


@pytest.mark.usefixtures("registry")
async def test_grpo_setup_has_one_reward_field_filled_from_demo_grpo_with_names_offered(runs_dir):
    from textual.widgets import Input

    from cockpit.config.presets import load_preset
    from cockpit.ui.widgets.setup.field_editor import FieldEditor

    app = Host(runs_dir, load_preset("demo-grpo"))
    async with app.run_test(size=(140, 45)) as pilot:
        screen = setup_screen(app)
        await app_wait(pilot, lambda: screen.spec is not None and screen.query("#field-dataset_name"),
                       "the demo-grpo form")
        rewards = [e for e in screen.query(FieldEditor) if "reward_funcs" in e.field.name]
        assert [e.field.name for e in rewards] == ["reward_funcs"], [e.field.name for e in rewards]
        box = rewards[0].control
        assert isinstance(box, Input)
        assert "cockpit.runner.rewards.arith_reward" in box.value and "length_reward" in box.value
        # The registered names complete the item being typed.
        box.focus()
        box.value = "cockpit.runner.rewards.arith_reward, acc"
        box.cursor_position = len(box.value)
        assert await box.suggester.get_suggestion(box.value) == "cockpit.runner.rewards.arith_reward, accuracy_reward"


# -- §4: the Checkpoints table shows each trainer's key metric ----------------------------------


def _output_dir(root: Path, history: list[dict], steps=(10, 20)) -> Path:
    """An output dir as a Trainer leaves it; the listing reads files only."""
    import json

    out = root / "out"
    for step in steps:
        ckpt = out / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        (ckpt / "config.json").write_text("{}")
        (ckpt / "model.safetensors").write_bytes(b"\0" * 64)
        (ckpt / "trainer_state.json").write_text(json.dumps(
            {"global_step": step, "log_history": [h for h in history if h["step"] <= step]}))
    return out



@pytest.mark.parametrize(("history", "column", "eval_column", "value"), [
    ([{"step": s, "loss": -8.9e-08, "reward": s / 20, "rewards/arith_reward/mean": s / 40} for s in range(1, 21)],
     "mean reward", "eval loss", "1"),
    ([{"step": s, "loss": 0.69 - s / 100, "rewards/margins": s / 10} for s in range(1, 21)]
     + [{"step": 20, "eval_wer": 0.25, "eval_runtime": 3.0}], "margin", "eval wer", "2"),
])
async def test_checkpoints_table_shows_the_trainers_key_metric_and_the_base_in_words(tmp_path, history, column,
                                                                                      eval_column, value):
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    out = _output_dir(tmp_path, history)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the replay", limit=60)
        await pilot.press("8")
        table = app.screen.query_one(CheckpointsPane).query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count == 2 and "checkpoint-10" in str(table.get_row_at(0)[1]),
                       "the checkpoints listed")
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[2:4] == [column, eval_column], labels
        assert str(table.get_row_at(1)[2]) == value  # the key metric logged at step 20
        assert "full model" in str(table.get_row_at(1)[6])
        if eval_column == "eval wer":
            assert str(table.get_row_at(1)[3]) == "0.25" and str(table.get_row_at(0)[3]) in ("", "—", "-")


async def test_checkpoints_table_says_it_is_reading_then_names_the_base_model(tmp_path):
    from textual.app import App
    from textual.widgets import DataTable

    from cockpit.metrics.checkpoints import list_run_checkpoints
    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    class Bare(App):
        def compose(self):
            yield CheckpointsPane()

    out = _output_dir(tmp_path, [{"step": s, "loss": 1.0} for s in range(1, 21)])
    app = Bare()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(CheckpointsPane)
        table = pane.query_one(DataTable)
        assert table.row_count == 1 and "reading the checkpoints" in str(table.get_row_at(0)[1])
        await pilot.press("space")  # nothing to pick on the loading row
        assert pane.picked == []
        found = list_run_checkpoints(out)
        found.base_model = "Qwen/Qwen2.5-0.5B-Instruct"
        pane.post_message(CheckpointsPane.Listed(found))
        await app_wait(pilot, lambda: table.row_count == 3, "the listing")
        assert str(table.get_row_at(0)[1]) == "base model"
        assert "what training started from: Qwen/Qwen2.5-0.5B-Instruct" in str(table.get_row_at(0)[6])


# -- §5: the trainer picker, one line a trainer, out of the way once picked ------------------------


@pytest.mark.usefixtures("registry")
async def test_trainer_picker_is_one_line_a_trainer_and_collapses_once_one_is_picked(runs_dir):
    from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker

    app = Host(runs_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = setup_screen(app)
        picker = screen.query_one(TrainerPicker)
        await app_wait(pilot, lambda: picker.option_count > 0, "the trainers listed")
        assert all("\n" not in str(picker.get_option_at_index(i).prompt) for i in range(picker.option_count))
        assert picker.option_count <= picker.size.height + 4  # nearly all of them on screen at once
        picker.highlighted = picker.get_option_index("dpo")
        await app_wait(pilot, lambda: "preference" in str(screen.query_one("#trainer-info").content).lower(),
                       "the highlighted trainer's summary beside the list")
        await pick(pilot, app, "sft")
        await app_wait(pilot, lambda: not screen.query_one("#setup-trainers").display, "the list collapsed")
        side, form = screen.query_one("#setup-side"), screen.query_one("#setup-form")
        assert side.region.x > form.region.x  # wide: the preview beside the form
        await pilot.press("ctrl+t")
        await app_wait(pilot, lambda: screen.query_one("#setup-trainers").display, "ctrl+t brings it back")


@pytest.mark.usefixtures("registry")
async def test_below_110_columns_the_preview_stacks_under_the_form(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        await app_wait(pilot, lambda: screen.has_class("-stacked"), "stacked")
        side, form = screen.query_one("#setup-side"), screen.query_one("#setup-form")
        # The class is set before the next layout: wait for the layout (a busy machine takes a while).
        await app_wait(pilot, lambda: side.region.y > form.region.y and form.region.width >= 90,
                       "the preview under a form as wide as the screen")
        assert control(app, "model_name_or_path").size.width >= 40


# -- §5: the System tab ----------------------------------------------------------------------------


async def test_system_tab_shows_gib_cpu_of_all_cores_a_row_per_gpu_and_sparklines(tmp_path):
    from cockpit.run import journal
    from helpers.ui import make_run, sft_records

    records = sft_records(range(1, 11))
    for i in range(30):
        gpus = [{"index": g, "util_percent": (i * 3 + g * 20) % 100, "mem_used_mb": 20480 + i * 10,
                 "mem_total_mb": 81920, "temp_c": 60, "power_w": 300.0} for g in (0, 1)]
        rec = journal.system({"cpu_percent": 150.0 + i, "cpus": 16, "rss_mb": 3072.0 + i * 10,
                              "processes": 3, "ram_used_percent": 40.0, "ram_total_mb": 131072, "gpus": gpus})
        rec.t = 1000.0 + i * 5
        records.append(rec)
    run = make_run(tmp_path / "runs", "sys", records, state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("5")
        pane = app.screen.query_one("#system-pane")
        await app_wait(pilot, lambda: "GPU 1" in str(pane.render()), "the system tab drawn")
        text = str(pane.render())
        assert "11% of 16 cores" in text  # 179% of one core over 16 cores
        assert "3.3 GiB resident" in text and "of 128.0 GiB" in text
        assert "20.3 GiB of 80.0 GiB" in text
        lines = text.splitlines()
        assert any(ln.strip().startswith("GPU 0") for ln in lines) and any(ln.strip().startswith("GPU 1")
                                                                          for ln in lines)
        assert "over 2m 25s" in text or "(30 samples)" in text
        cpu_line = next(ln for ln in lines if ln.strip().startswith("CPU"))
        assert len(set(cpu_line) & set("▁▂▃▄▅▆▇█")) >= 1
        gpu_line = next(ln for ln in lines if ln.strip().startswith("GPU 0"))
        assert len(set(gpu_line) & set("▁▂▃▄▅▆▇█")) >= 3  # utilisation moves over the run


# -- §5: the command palette lists cockpit's commands before Textual's -----------------------------


async def test_command_palette_lists_cockpit_commands_before_textuals(tmp_path):
    from textual.command import CommandList, CommandPalette

    app = app_for(tmp_path, "replay", [str(Path(__file__).parents[1] / "fixtures" / "trainer_states"
                                           / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.press("ctrl+p")
        await app_wait(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        results = app.screen.query_one(CommandList)
        await app_wait(pilot, lambda: results.option_count > 10, "the commands listed")
        await pilot.pause(0.5)
        titles = [str(results.get_option_at_index(i).prompt).split("\n")[0] for i in range(results.option_count)]
        textual_own = [i for i, t in enumerate(titles) if t.strip() in ("Quit", "Screenshot", "Keys", "Theme")]
        cockpit_own = [i for i, t in enumerate(titles) if "tab" in t.lower() or t.startswith("Theme: cockpit")]
        assert textual_own and cockpit_own, titles
        assert max(cockpit_own) < min(textual_own), titles


# -- §5: the help lists every tab's keys, in a dialog sized to them --------------------------------


async def test_help_lists_every_tabs_keys_in_a_dialog_sized_to_its_content(tmp_path):
    from textual.widgets import Static

    from cockpit.ui.screens.help import HelpScreen

    app = app_for(tmp_path, "replay", [str(Path(__file__).parents[1] / "fixtures" / "trainer_states"
                                           / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.press("question_mark")  # from the Plots tab
        await app_wait(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        await pilot.pause(0.2)
        body = "\n".join(str(s.render()) for s in app.screen.query(Static))
        for tab, key in (("Checkpoints tab", "Run prompts"), ("Completions tab", "Sort"),
                         ("Findings tab", "Evidence")):
            assert tab in body and key in body, (tab, key)
        assert body.index("Checkpoints tab") < body.index("Run prompts")
        dialog = app.screen.query_one("#help-dialog")
        longest = max(len(line) for line in body.splitlines() if "keymap" not in line)
        assert dialog.region.width <= max(longest, 50) + 10 < 160
        assert dialog.region.height <= 48
    app = app_for(tmp_path, "replay", [str(Path(__file__).parents[1] / "fixtures" / "trainer_states"
                                           / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(60, 20)) as pilot:  # a small terminal: within it, scrolling
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.press("question_mark")
        await app_wait(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        await pilot.pause(0.2)
        dialog = app.screen.query_one("#help-dialog")
        assert dialog.region.width <= 60 and dialog.region.height <= 20


# -- §5: the runs list: mark runs to compare, delete one (asked first; never a live one) -----------


async def test_runs_list_marks_runs_to_compare_and_deletes_a_finished_run_after_a_yes(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.replay import ReplayScreen
    from helpers import live as as_live
    from helpers.ui import make_run, row_of, runs_listed, sft_records

    runs = tmp_path / "runs"
    live = as_live(make_run(runs, "alive", sft_records(range(1, 5)), state="running"))
    done = make_run(runs, "done", sft_records(range(1, 11)), state="finished")
    old = make_run(runs, "old", sft_records(range(1, 11)), state="stopped")
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = await runs_listed(app, pilot, 3)

        live_state = next(r for r in table.summaries if r.path == str(live.path))
        # Delete: refused for a live run, asked for a finished one.
        table.move_cursor(row=row_of(table, live.path))
        await pilot.press("D")
        assert live_state.live, live_state
        await app_wait(pilot, lambda: any("stop it first" in n for n in notifications(app)), "refused")
        assert live.path.is_dir() and not isinstance(app.screen, ConfirmScreen)
        table.move_cursor(row=row_of(table, old.path))
        await pilot.press("D")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked first")
        await pilot.press("n")
        await app_wait(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "no")
        assert old.path.is_dir()
        await pilot.press("D")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked again")
        await pilot.press("y")
        await app_wait(pilot, lambda: not old.path.exists() and table.row_count == 2, "deleted and gone from the list")
        # Mark two runs with space; c overlays them.
        for run in (done, live):
            table.move_cursor(row=row_of(table, run.path))
            await pilot.press("space")
        await app_wait(pilot, lambda: len(table.marked) == 2, "two marked")
        assert "✓" in str(table.get_row_at(row_of(table, done.path))[0])
        await pilot.press("c")
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen), "the overlay", limit=30)
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both runs in it", limit=30)


# -- §5: a boolean reads as a glyph and a word, not only as a colour -------------------------------


@pytest.mark.usefixtures("registry")
async def test_boolean_fields_show_a_glyph_that_follows_the_switch(runs_dir):
    from textual.widgets import Switch

    from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id

    app = Host(runs_dir)
    async with app.run_test(size=(140, 45)) as pilot:
        await pick(pilot, app, "sft")
        editor = setup_screen(app).query_one(f"#{editor_id('gradient_checkpointing')}", FieldEditor)
        switch = editor.query_one(Switch)
        glyph = editor.query_one(".bool-glyph")
        before = switch.value
        assert str(glyph.render()) == ("✓ on" if before else "✗ off")
        switch.focus()
        await pilot.press("enter")
        await app_wait(pilot, lambda: switch.value != before, "switched")
        await app_wait(pilot, lambda: str(glyph.render()) == ("✗ off" if before else "✓ on"), "the glyph follows")


# -- §5: at 60x20 a marker says which tabs are off screen -------------------------------------------


async def test_a_narrow_screen_marks_the_tabs_that_are_off_screen(tmp_path):
    replay = [str(Path(__file__).parents[1] / "fixtures" / "trainer_states" / "trl_sft_token_accuracy.json")]
    app = app_for(tmp_path, "replay", replay)
    async with app.run_test(size=(60, 20)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        marker = app.screen.query_one("#tabs-overflow")
        await app_wait(pilot, lambda: marker.display and "→" in str(marker.render()) and marker.region.width,
                       "the marker", limit=30)
        text = str(marker.render())
        assert "8" in text and "1" not in text  # the last tabs are past the right edge
        assert marker.region.right == 60 and marker.region.y == app.screen.query_one("Tabs").region.y
        tabs = [t for t in app.screen.query("Tabs #tabs-list > Tab") if t.display]
        # no tab's start showing beside the marker (`A 6 7 8 →`): a tab is wholly shown or not at all
        await app_wait(pilot, lambda: not any(t.region.x < marker.region.x < t.region.right for t in tabs),
                       "no tab cut by the marker")
        await pilot.press("8")
        await app_wait(pilot, lambda: "←" in str(marker.render()) and "8" not in str(marker.render()),
                       "now the first ones are off the left, and the active tab is on screen", limit=30)
        await pilot.pause(0.3)
        assert "1" in str(marker.render())
        tab = app.screen.query_one("Tabs").active_tab
        await app_wait(pilot, lambda: tab.region.right <= marker.region.x, "the active tab clear of the marker")
    app = app_for(tmp_path, "replay", replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.pause(1.0)
        assert not app.screen.query_one("#tabs-overflow").display  # every tab fits: no marker


def test_which_tabs_show_follows_from_the_widths_and_the_active_tab_alone():
    """The bar's place is a function (`fit`), not the sum of the scrolls before it: at 60x20 the
    scroll to tab 7 landed on one of three offsets, some starting on a fragment of a tab."""
    from cockpit.ui.widgets.run.tabs_overflow import fit

    widths = [9, 15, 15, 10, 10, 12, 15]  # a replay's tabs at 60 columns: 1 2 3 5 6 7 8
    spans, x = [], 0
    for w in widths:
        spans.append((x, x + w))
        x += w
    keys = list("1235678")
    assert fit(spans, keys, 0, 60) == (0, 3, "6 7 8 →")
    assert fit(spans, keys, 5, 60) == (2, 5, "← 1 2 · 8 →")  # Findings: starts on a whole tab
    assert fit(spans, keys, 6, 60) == (3, 6, "← 1 2 3")
    assert fit(spans, keys, 6, 200) == (0, 6, "")  # every tab fits: no marker
    assert fit(spans, keys, 2, 12) == (2, 2, "← 1 2 · 5 6 7 8 →")  # only the active one fits


# -- §5: empty states said whole -------------------------------------------------------------------


async def test_empty_states_are_said_whole_on_a_narrow_screen(tmp_path):
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    replay = [str(Path(__file__).parents[1] / "fixtures" / "trainer_states" / "trl_sft_token_accuracy.json")]
    app = app_for(tmp_path, "replay", replay)
    async with app.run_test(size=(60, 20)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.press("2")
        title = app.screen.query_one("#completions-title")
        await app_wait(pilot, lambda: "no completions in" in str(title.render()), "the empty state")
        await pilot.pause(0.3)
        said = str(title.render())
        assert title.region.height >= 3 and "log_completions" in said  # wrapped, to its last word
        assert "…" not in said
        await pilot.press("8")
        table = app.screen.query_one(CheckpointsPane).query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count and "no checkpoints" in str(table.get_row_at(0)[1]),
                       "where it looked")
        table.focus()
        await pilot.press("space")  # the note is not a checkpoint to pick
        assert app.screen.query_one(CheckpointsPane).picked == []
