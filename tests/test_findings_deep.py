"""Findings that need more than metrics: a hang's stacks, a resume's continuity, whether the weights
moved, and what an SFT preset's max_length and loss mask do to its rows. Real runs on the offline
demo assets, real processes, real files."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from cockpit.findings.model import Finding
from cockpit.launch.plan import start_supervisor
from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from conftest import REPO, wait_for

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


@pytest.fixture(scope="module")
def demo():
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    return ensure_all(demo_dir())


def _findings(run: RunFolder, kind: str | None = None) -> list[Finding]:
    records = journal.read_all(run.events)[0]
    return [Finding.from_record(r) for r in records
            if r.kind == journal.FINDING and (kind is None or r.data.get("kind") == kind)]


def _kill_group(run: RunFolder) -> None:
    status = run.read_status()
    for pid in (status.pgid, status.supervisor_pid):
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL) if pid == status.pgid else os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.mark.slow
def test_a_script_blocked_in_a_callback_gets_a_hang_finding_with_its_stack_while_alive(tmp_path, runs_dir, demo):
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--stage", "sft", "--max-steps", "50", "--save-steps", "100", "--block-at", "3"]
    run = prepare_script(cmd, cwd=tmp_path, runs_dir=runs_dir,
                         env={"COCKPIT_HANG_FLOOR_S": "4", "COCKPIT_HANG_FACTOR": "3"})
    start_supervisor(run)
    try:
        found = wait_for(lambda: _findings(run, "hang"), timeout=300)
        status = run.read_status()
        assert status.state == "running"
        os.kill(status.pid, 0)  # the trainer is still alive: the finding came while it hangs
        hang = found[0]
        assert hang.steps == (2, 2) and hang.severity == "warning"  # step 3 never got to its log
        assert "it waits in pid " in hang.summary, hang.summary
        assert "a callback (BlockingCallback.on_step_end at pipeline.py:" in hang.summary, hang.summary
        files = [e for e in hang.evidence if e["type"] == "file"]
        stacks = Path(files[0]["path"])
        assert stacks.parent == run.path / "hangs" and stacks.is_file()
        text = stacks.read_text()
        assert "on_step_end (pipeline.py" in text and "call_event" in text
    finally:
        _kill_group(run)
        wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=60)
    assert len(_findings(run, "hang")) == 1
