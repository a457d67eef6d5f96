"""`cockpit stop --force` of a run made by `CockpitCallback` in a plain `python train.py`: the script
is its own owner, so only that one process is signalled (SIGTERM, then SIGKILL after the grace),
while it is still the process recorded; its end is written for it. Real processes, no training."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cockpit.errors import CockpitError
from cockpit.launch import plan
from cockpit.run import journal, owner
from cockpit.run.folder import Status, create_run_folder
from helpers import gone

_SLEEPER = ("import signal, sys, time\n"
            "from cockpit.run import owner\n"
            "if sys.argv[1] == 'deaf': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "held = owner.acquire(sys.argv[2])  # owns its run folder, as `CockpitCallback()` does (hook/public.py)\n"
            "print('ready', flush=True)\n"
            "time.sleep(300)\n")
_REPO = Path(__file__).resolve().parents[2]


def _script_run(tmp_path, mode: str):
    run = create_run_folder(tmp_path / "runs", "plain")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-c", _SLEEPER, mode, str(run.path)], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    run.write_status(Status(state="running", name=run.name, supervisor_pid=proc.pid, pid=proc.pid,
                            pgid=os.getpgid(proc.pid), host=os.uname().nodename,
                            supervisor_started=owner.start_time(proc.pid)))
    return run, proc


def test_force_stop_of_a_script_that_owns_itself_terms_it_and_writes_its_end(tmp_path):
    run, proc = _script_run(tmp_path, "plain")
    t0 = time.monotonic()
    status = plan.stop(run, save=False, grace_s=30.0)
    assert gone(proc.pid) and time.monotonic() - t0 < 30.0  # SIGTERM was enough
    assert status.state == "killed" and "stop --force" in (status.reason or "")
    assert [r.kind for r in journal.read_all(run.events)[0]][-1] == journal.RUN_ENDED


def test_a_script_deaf_to_sigterm_is_killed_after_the_grace(tmp_path):
    run, proc = _script_run(tmp_path, "deaf")
    t0 = time.monotonic()
    status = plan.stop(run, save=False, grace_s=1.0)
    assert gone(proc.pid) and time.monotonic() - t0 >= 1.0  # SIGKILL, after the grace
    assert status.state == "killed"


def test_a_recorded_pid_now_held_by_another_process_is_left_alone(tmp_path):
    run, proc = _script_run(tmp_path, "plain")
    status = run.read_status()
    status.supervisor_started = (status.supervisor_started or 0) - 3600  # recorded for another process
    run.write_status(status)
    with pytest.raises(CockpitError, match="is not running"):  # its process is gone, as far as the run knows
        plan.stop(run, save=False, grace_s=1.0)
    try:
        assert psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE  # never signalled
    finally:
        proc.kill()
        proc.wait(5)
