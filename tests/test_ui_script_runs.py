"""Script mode in the TUI (issue 11): a script run in the runs list shows its command and the
trainer its journal names; the setup form launches a command line, for real, under the supervisor;
the live view follows a real script run like a preset run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_ui_app import app_for, wait_for

from cockpit.run import journal
from cockpit.run.script import prepare_script

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
        await wait_for(pilot, lambda: "train.py" in str(table.get_row_at(0)[6]), "its command")
        name, _state, trainer, *_rest, note = table.get_row_at(0)
        assert str(name) == run.name
        assert str(trainer) == "grpo"
        assert str(note).endswith(f"$ {Path(sys.executable).name} train.py --lr 1e-5")
