"""Script mode in the TUI (issue 11): a script run in the runs list shows its command and the
trainer its journal names; the setup form launches a command line, for real, under the supervisor;
the live view follows a real script run like a preset run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.run.folder import Status
from helpers.ui import app_for, app_wait, fake_checkpoint, footer_keys, notifications, sft_records

pytestmark = pytest.mark.anyio


async def test_a_script_run_is_listed_with_its_command_and_the_trainer_its_journal_reports(tmp_path):
    from cockpit.ui.widgets.home.runs_table import RunsTable

    (tmp_path / "train.py").write_text("print('hi')\n", encoding="utf-8")
    run = prepare_script([sys.executable, "train.py", "--lr", "1e-5"], cwd=tmp_path,
                         runs_dir=tmp_path / "runs")
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("grpo", max_steps=10, script=True))
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the script run listed")
        await app_wait(pilot, lambda: "train.py" in str(table.get_row_at(0)[-1]), "its command")
        name, _state, trainer, *_rest, note = table.get_row_at(0)
        assert str(name) == run.name
        assert str(trainer) == "grpo"
        assert str(note).endswith(f"$ {Path(sys.executable).name} train.py --lr 1e-5")


@pytest.mark.slow
async def test_a_real_script_run_is_followed_live_like_a_preset_run(tmp_path):
    from cockpit.demo import demo_dir
    from cockpit.launch.plan import launch_prepared
    from cockpit.runner.assets import ensure_all
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable
    from cockpit.ui.widgets.run.plot_grid import PlotGrid
    from cockpit.ui.widgets.run.run_header import RunHeader

    demo = ensure_all(demo_dir())
    pipeline = Path(__file__).parents[1] / "fixtures" / "scripts" / "pipeline.py"
    run = launch_prepared(prepare_script(
        [sys.executable, str(pipeline), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
         "--stage", "sft", "--max-steps", "6", "--save-steps", "100"], cwd=tmp_path, runs_dir=tmp_path / "runs"))
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1 and "pipeline.py" in str(table.get_row_at(0)[-1]),
                       "the script run listed with its command")
        table.focus()
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the live view")
        screen = app.screen
        await app_wait(pilot, lambda: screen.sources and screen.sources[0].trainer == "sft",
                       "the trainer the journal names", limit=240)
        await app_wait(pilot, lambda: screen.state == "finished", "the run to finish", limit=240)
        await app_wait(pilot, lambda: any("loss" in p.panel.keys for p in screen.query_one(PlotGrid).plots()),
                       "a loss plot")
        assert screen.sources[0].step == 6 and screen.run.path == run.path
        assert "sft" in str(screen.query_one(RunHeader).render())


# -- a stopped script-mode run resumes from the TUI --------------------------------------------


@pytest.mark.proc
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
    fake_checkpoint(tmp_path / "out", 10)  # in the script's folder, not the run folder
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources and app.screen.resumable, "resumable")
        await app_wait(pilot, lambda: "Resume" in footer_keys(app), "u Resume in the footer")
        assert "Resume" in {c.title for c in app.get_system_commands(app.screen)}
        screen = app.screen
        await pilot.press("u")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        await pilot.press("y")
        try:
            await app_wait(pilot, lambda: any("resumed from" in m for m in notifications(app)),
                           "resumed", limit=30)
            assert run.read_status().attempt == 2
            assert "resumed from" in run.command_txt.read_text()
            await app_wait(pilot, lambda: screen.state not in ("starting", "running"),
                           "the script's second attempt ends", limit=60)
        finally:
            from cockpit.errors import CockpitError
            try:
                launch.stop(run, save=False, grace_s=2)
            except CockpitError:
                pass
