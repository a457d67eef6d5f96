"""Kill -9 the TUI mid-run: the run finishes with every journal line; a new terminal that
attaches sees the whole history. Real terminals (tmux), real signals."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid

import pytest

from cockpit.run import journal
from cockpit.run.folder import list_runs
from helpers import NO_SFT_CHECK, wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout




def _session(cmd: list[str], env: dict[str, str]) -> str:
    name = f"cockpit-test-{uuid.uuid4().hex[:8]}"
    exports = [f"{k}={v}" for k, v in env.items()]
    _tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", "env", *exports, *cmd)
    return name


@pytest.mark.field  # several training processes (attempts): the field pass runs it
def test_killing_the_tui_leaves_the_run_alone_and_attach_shows_it_all(tmp_path):
    runs = tmp_path / "runs"
    env = {"COCKPIT_CACHE_DIR": os.environ["COCKPIT_CACHE_DIR"], "HF_HUB_OFFLINE": "1",
           "TERM": "xterm-256color", "PATH": os.environ.get("PATH", "")}
    max_steps = 60
    s1 = _session([sys.executable, "-m", "cockpit.cli", "--runs-dir", str(runs), "demo",
                   "--set", f"max_steps={max_steps}", "--set", "eval_strategy=no",
                   "--set", "save_steps=1000", "--set", NO_SFT_CHECK], env)
    try:
        run = wait_for(lambda: (list_runs(runs) or [None])[0])

        def steps():
            records, _ = journal.read_all(run.events)
            return [r.step for r in records if r.kind == "metrics" and not r.data.get("summary")]

        wait_for(lambda: len(steps()) >= 3)
        assert run.read_status().live
        wait_for(lambda: "step" in _tmux("capture-pane", "-p", "-t", s1))
        tui_pid = int(_tmux("display-message", "-p", "-t", s1, "#{pane_pid}").strip())
        os.kill(tui_pid, signal.SIGKILL)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", s1], capture_output=True)

    def ended():
        records, _ = journal.read_all(run.events)
        return next((r for r in records if r.kind == "run_ended"), None)

    end = wait_for(ended)
    assert end.data["state"] == "finished"
    assert steps() == list(range(1, max_steps + 1))

    s2 = _session([sys.executable, "-m", "cockpit.cli", "--runs-dir", str(runs), "attach",
                   run.name], env)
    try:
        # The header comes first, the plots a frame or two later: wait for both.
        screen = wait_for(lambda: (lambda t: t if f"{max_steps}/{max_steps}" in t and "loss" in t
                                   else None)(_tmux("capture-pane", "-p", "-t", s2)), timeout=60)
        assert "finished" in screen and "loss" in screen and "Traceback" not in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", s2], capture_output=True)
