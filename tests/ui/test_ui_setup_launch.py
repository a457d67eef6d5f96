"""The setup form's launch side: the launch target (issue 13) written into the preset, previewed,
and a bad one marked on its field; a command line (issue 11) launched for real in script mode."""

from __future__ import annotations

import shlex
import sys

import pytest
import yaml
from textual.widgets import Select, Static

from helpers.ui import (
    SETUP_SIZE,
    Host,
    app_wait,
    control,
    launch_button,
    pick,
    preview_text,
    setup_screen,
    type_into,
    type_keys,
)

pytestmark = pytest.mark.anyio


async def fill_sft(pilot, app) -> None:
    await pick(pilot, app, "sft")
    await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
    await type_into(pilot, app, "dataset_name", "demo:data/prompt_completion")
    await app_wait(pilot, lambda: not launch_button(app).disabled, "the preset validated")


def editor(app, name: str):
    from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id

    return setup_screen(app).query_one(f"#{editor_id(name)}", FieldEditor)


def command_preview(app) -> str:
    return str(setup_screen(app).query_one("#command-preview", Static).content)


@pytest.mark.usefixtures("registry")
async def test_the_launch_target_goes_into_the_preset_and_the_command_preview(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await fill_sft(pilot, app)
        screen = setup_screen(app)
        kind = control(app, "cockpit.launcher.kind")
        assert isinstance(kind, Select) and kind.value == "python"
        assert not editor(app, "cockpit.launcher.num_processes").display  # python: one process
        assert "launcher" not in screen.current_preset().cockpit  # the default is not written

        kind.value = "torchrun"
        await app_wait(pilot, lambda: editor(app, "cockpit.launcher.num_processes").display,
                       "the processes field shown for torchrun")
        assert not editor(app, "cockpit.launcher.partition").display
        await type_into(pilot, app, "cockpit.launcher.num_processes", "2")
        await app_wait(pilot, lambda: screen.current_preset().cockpit.get("launcher")
                       == {"kind": "torchrun", "num_processes": 2}, "the launcher in the preset")
        assert "launcher:" in preview_text(app) and "kind: torchrun" in preview_text(app)
        await app_wait(pilot, lambda: "--nproc_per_node 2" in command_preview(app), "the launch line")
        assert "torch.distributed.run --standalone" in command_preview(app)
        await app_wait(pilot, lambda: not launch_button(app).disabled, "valid with torchrun")

        kind.value = "slurm"
        await app_wait(pilot, lambda: editor(app, "cockpit.launcher.partition").display, "the Slurm fields")
        await type_into(pilot, app, "cockpit.launcher.partition", "gpu")
        await type_into(pilot, app, "cockpit.launcher.time", "04:00:00")
        await app_wait(pilot, lambda: "--partition=gpu" in command_preview(app), "the job's options")
        assert "sbatch RUN/job.sh" in command_preview(app) and "--time=04:00:00" in command_preview(app)
        launcher = screen.current_preset().cockpit["launcher"]
        assert launcher == {"kind": "slurm", "num_processes": 2, "partition": "gpu", "time": "04:00:00"}


@pytest.mark.usefixtures("registry")
async def test_a_bad_launch_target_is_marked_on_its_field_and_blocks_launch(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await fill_sft(pilot, app)
        control(app, "cockpit.launcher.kind").value = "accelerate"
        await app_wait(pilot, lambda: editor(app, "cockpit.launcher.config").display, "the config field")
        await type_into(pilot, app, "cockpit.launcher.config", "zero9")
        config = editor(app, "cockpit.launcher.config")
        await app_wait(pilot, lambda: config.has_class("-invalid"), "the config marked")
        said = str(config.query_one(".field-error", Static).content)
        assert "zero9" in said and "not a config TRL ships" in said and "zero3" in said
        assert launch_button(app).disabled
        assert not editor(app, "model_name_or_path").has_class("-invalid")

        await type_into(pilot, app, "cockpit.launcher.config", "")  # back to no config
        control(app, "cockpit.launcher.kind").value = "slurm"
        await type_into(pilot, app, "cockpit.launcher.nodes", "0")
        nodes = editor(app, "cockpit.launcher.nodes")
        await app_wait(pilot, lambda: nodes.has_class("-invalid"), "nodes marked")
        assert "whole number ≥ 1" in str(nodes.query_one(".field-error", Static).content)
        assert launch_button(app).disabled


@pytest.mark.proc
@pytest.mark.usefixtures("registry")
async def test_a_command_is_launched_from_setup_and_runs_under_the_supervisor(runs_dir, tmp_path):
    from cockpit.run.folder import RunFolder
    from cockpit.ui.widgets.setup.trainer_picker import COMMAND_ID, TrainerPicker

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        screen = setup_screen(app)
        picker = screen.query_one(TrainerPicker)
        await app_wait(pilot, lambda: picker.option_count > 0, "the trainers listed")
        picker.focus()
        await pilot.press("up")  # `command` sits just above the first trainer
        assert picker.get_option_at_index(picker.highlighted).id == COMMAND_ID
        await pilot.press("enter")
        await app_wait(pilot, lambda: screen.query("#field-command"), "the command form")
        assert app.focused is control(app, "command")
        assert not screen.query_one("#trainer-form").display
        await type_keys(pilot, "nosuchprogram-xyz --lr 1")
        command = editor(app, "command")
        await app_wait(pilot, lambda: command.has_class("-invalid"), "an unknown program marked")
        assert "no such program" in str(command.query_one(".field-error", Static).content)
        assert launch_button(app).disabled

        line = shlex.join([sys.executable, "-c", "print('hi from the form')"])
        control(app, "command").value = line
        await type_into(pilot, app, "cwd", str(tmp_path))
        await type_into(pilot, app, "name", "hello")
        await app_wait(pilot, lambda: not launch_button(app).disabled, "the command checked")
        assert "trainer: script" in preview_text(app)
        assert f"$ cd {tmp_path}" in command_preview(app)
        assert "cockpit run --name hello -- " in command_preview(app)
        await pilot.press("ctrl+l")
        await app_wait(pilot, lambda: isinstance(app.result, RunFolder), "the run launched", limit=60)
    run = app.result
    assert run.path.parent == runs_dir and run.name.startswith("hello")
    saved = yaml.safe_load(run.run_yaml.read_text(encoding="utf-8"))
    assert saved["trainer"] == "script"
    script = dict(saved["cockpit"]["script"])
    assert script.pop("launch_env")  # the launch shell's environment, kept outside the run folder (a reference)
    assert script == {"command": [sys.executable, "-c", "print('hi from the form')"], "cwd": str(tmp_path)}
    import time

    deadline = time.monotonic() + 120
    while run.read_status().live and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run.read_status().state == "finished", run.read_status()
    assert "hi from the form" in run.stdout_log.read_text(encoding="utf-8")
