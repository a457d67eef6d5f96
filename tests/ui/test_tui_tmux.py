"""The TUI in a real terminal (tmux): what a person would see, and never a traceback."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from helpers import FIXTURES

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _screen_of(command: list[str], *, until: tuple[str, ...], limit: float = 30.0) -> str:
    session = f"cockpit-test-{os.getpid()}"
    shell = " ".join(shlex.quote(c) for c in command) + "; sleep 600"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "40", shell],
                   check=True)
    try:
        deadline = time.monotonic() + limit
        screen = ""
        while time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True).stdout
            if all(u in screen for u in until) or "Traceback" in screen:
                break
        return screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@pytest.mark.proc
def test_replay_in_a_real_terminal_shows_the_metrics(tmp_path):
    fixture = FIXTURES / "trl_grpo_modern_multireward.json"
    screen = _screen_of([sys.executable, "-m", "cockpit.cli", "--runs-dir", str(tmp_path),
                         "replay", str(fixture)], until=("completion length", "step 200/200"))
    assert "Traceback" not in screen
    for text in ("reward", "reward std", "KL", "completion length", "step 200/200"):
        assert text in screen, screen
