"""Snapshot tests (pytest-textual-snapshot) at a fixed terminal size, on inputs that do not
change with the clock: fixture replays and a finished run's journal written by hand.

Update after an intended change with `pytest tests/test_ui_snapshots.py --snapshot-update`,
then look at the SVGs in tests/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from cockpit.run import journal
from cockpit.run.folder import RunFolder, Status
from cockpit.ui.app import make_app
from conftest import FIXTURES

SIZE = (140, 44)


async def _settle(pilot) -> None:
    # Workers parse in threads (the live view's tail worker never completes, so wait by time)
    # and plots redraw at 4 Hz.
    await pilot.pause(1.5)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.5)


def test_replay_of_a_grpo_run(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_grpo_modern_multireward.json")], str(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_replay_overlay_of_two_runs(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_sft_token_accuracy.json"),
                              str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json")], str(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


@pytest.fixture
def finished_run(tmp_path):
    run = RunFolder(tmp_path / "runs" / "snap-sft-20260101-000000")
    run.path.mkdir(parents=True)
    run.run_yaml.write_text("trainer: sft\n")
    run.write_status(Status(state="finished", name=run.name, trainer="sft", started=0.0,
                            ended=100.0, exit_code=0, reason="training finished"))
    with journal.JournalWriter(run.events) as w:
        t = 1_700_000_000.0
        w.write(journal.Record("run_started", {"trainer": "sft", "world_size": 1, "max_steps": 50,
                                               "versions": {"trl": "1.16.0"}, "device": "cpu"},
                               step=0, t=t))
        for s in range(1, 51):
            w.write(journal.Record("metrics", {"epoch": s / 10, "loss": 3.0 / (1 + 0.1 * s),
                                               "learning_rate": 1e-3 * (1 - s / 50),
                                               "grad_norm": 1.0 + (s % 7) / 10,
                                               "mean_token_accuracy": 0.2 + s / 100,
                                               "entropy": 5 - s / 20}, step=s, t=t + s))
            w.write(journal.Record("progress", {"max_steps": 50, "epoch": s / 10,
                                                "steps_per_s": 1.0, "eta_s": 50.0 - s},
                                   step=s, t=t + s))
        w.write(journal.Record("completions", {"source": "generate", "rows": [
            {"prompt": "Question: What is 3 plus 4?\nAnswer:", "completion": " 7",
             "rewards": {"arith_reward": 1.2}, "advantage": 0.5}]}, step=50, t=t + 50))
        w.write(journal.Record("run_ended", {"state": "finished", "exit_code": 0, "signal": None,
                                             "reason": "training finished", "fix": None},
                               step=50, t=t + 51))
    return run


def test_live_view_of_a_finished_run(snap_compare, finished_run):
    app = make_app("live", [str(finished_run.path)], str(finished_run.path.parent))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_help_screen(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_sft_token_accuracy.json")], str(tmp_path))

    async def open_help(pilot):
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=open_help)


@pytest.fixture
def fixed_runs_dir():
    """A runs folder at a fixed path (the path shows on screen), empty: no ages to drift."""
    import shutil
    from pathlib import Path

    d = Path("/tmp/cockpit-snapshot-runs")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_home_with_no_runs(snap_compare, fixed_runs_dir, tmp_path, monkeypatch):
    # Only the shipped presets: other tests save user presets into the session's config dir.
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    app = make_app("home", [], str(fixed_runs_dir))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


# The setup screen has no snapshot: its trainer list is the installed TRL's, so a snapshot
# would change with every TRL release. tests/test_ui_setup.py drives it instead.
