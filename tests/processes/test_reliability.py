"""The run outlives its terminal: hang up the pty that ran `cockpit run --wait` mid-run, and the
run still finishes with every journal line written."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import cockpit_cmd, fake_argv, wait_for

pytestmark = pytest.mark.proc


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf




def test_hanging_up_the_terminal_does_not_touch_the_run(tmp_path):
    runs = tmp_path / "runs"
    max_steps = 30  # 2.7 s left after the hang-up at step 3
    # The fake trainer (tests/helpers): the subject is the terminal, the supervisor and the journal.
    argv = cockpit_cmd("run", "--wait", "--runs-dir", str(runs), "--",
                       *fake_argv("--steps", str(max_steps), "--every", "0.1"))
    pid, fd = pty.fork()
    if pid == 0:  # the child: a shell-less "terminal session" running cockpit
        os.execv(sys.executable, argv)
    try:
        out = _read_until(fd, b"step 3:", 240)
        assert b"step 3:" in out, out[-2000:]
        run_path = next(line for line in out.decode(errors="replace").splitlines()
                        if line.strip().startswith(str(runs)))
        run = RunFolder(Path(run_path.strip()))
        assert run.read_status().live  # mid-run
        # Hang up: the terminal goes away (close the master) and the session gets SIGHUP,
        # as when an SSH connection drops.
        os.close(fd)
        fd = -1
        try:
            os.killpg(os.getpgid(pid), signal.SIGHUP)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) or os.WEXITSTATUS(status) != 0  # the --wait follower died
    finally:
        if fd >= 0:
            os.close(fd)

    def ended():
        records, _ = journal.read_all(run.events)
        ends = [r for r in records if r.kind == "run_ended"]
        return (records, ends[-1]) if ends else None

    records, end = wait_for(ended)
    assert end.data["state"] == "finished", end.data
    steps = [r.step for r in records if r.kind == "metrics" and not r.data.get("summary")]
    assert steps == list(range(1, max_steps + 1))  # one line per step, none lost
    assert run.read_status().state == "finished"
