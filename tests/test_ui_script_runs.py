"""Script mode in the TUI (issue 11): a script run in the runs list shows its command and the
trainer its journal names; the setup form launches a command line, for real, under the supervisor;
the live view follows a real script run like a preset run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_ui_app import app_for, wait_for

from cockpit.launch.script import prepare_script
from cockpit.run import journal

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
        await wait_for(pilot, lambda: table.row_count == 1, "the script run listed")
        await wait_for(pilot, lambda: "train.py" in str(table.get_row_at(0)[-1]), "its command")
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
    pipeline = Path(__file__).parent / "fixtures" / "scripts" / "pipeline.py"
    run = launch_prepared(prepare_script(
        [sys.executable, str(pipeline), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
         "--stage", "sft", "--max-steps", "6", "--save-steps", "100"], cwd=tmp_path, runs_dir=tmp_path / "runs"))
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one(RunsTable)
        await wait_for(pilot, lambda: table.row_count == 1 and "pipeline.py" in str(table.get_row_at(0)[-1]),
                       "the script run listed with its command")
        table.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the live view")
        screen = app.screen
        await wait_for(pilot, lambda: screen.sources and screen.sources[0].trainer == "sft",
                       "the trainer the journal names", limit=240)
        await wait_for(pilot, lambda: screen.state == "finished", "the run to finish", limit=240)
        await wait_for(pilot, lambda: any("loss" in p.panel.keys for p in screen.query_one(PlotGrid).plots()),
                       "a loss plot")
        assert screen.sources[0].step == 6 and screen.run.path == run.path
        assert "sft" in str(screen.query_one(RunHeader).render())
