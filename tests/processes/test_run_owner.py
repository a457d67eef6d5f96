"""One owner per run, and the state tells the truth: real supervisors SIGKILLed, real trainers
left running or gone, a real unrelated process holding a recorded pid, real CLI invocations.

The "trainer" of most tests here is a tiny script run (a Python process under the supervisor,
with the run's marker in its environment, exactly as a training script gets); the resume test
trains for real (a resumed copy of the run farm's stopped run). Every test ends every process it
started, by pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from cockpit.launch.plan import launch_prepared, stop
from cockpit.launch.script import prepare_script
from cockpit.run import journal, owner
from cockpit.run.summaries import effective_state
from helpers import cockpit_cmd, gone, kill_and_reap, wait_for

pytestmark = pytest.mark.proc  # the resume test trains for real: slow

WAITER = """
import os, sys, time
flag = sys.argv[1]
while not os.path.exists(flag):
    time.sleep(0.05)
raise ValueError("boom from the trainer")
"""


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=120, cwd=cwd,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def waiter_run(tmp_path, runs_dir):
    """A live script run whose trainer waits for a flag file, then fails with a ValueError."""
    flag = tmp_path / "flag"
    run = launch_prepared(prepare_script([sys.executable, "-c", WAITER, str(flag)], cwd=tmp_path,
                                         runs_dir=runs_dir, name="waiter"))
    status = wait_for(lambda: (s := run.read_status()).state == "running" and s.pid and s.pid_started and s)
    yield run, flag
    for pid, at in ((status.pid, status.pid_started), (status.supervisor_pid, status.supervisor_started)):
        if owner.same_process(pid, at):  # whatever a failed test left, while it is still ours
            kill_and_reap(pid)


def test_a_second_supervisor_of_a_live_run_is_refused_with_one_line_and_touches_nothing(waiter_run):
    run, flag = waiter_run
    before = run.read_status()
    proc = subprocess.run([sys.executable, "-m", "cockpit.supervisor", str(run.path)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"already has an owner (pid {before.supervisor_pid})" in lines[0], proc.stderr
    assert run.read_status() == before
    flag.touch()
    assert wait_for(lambda: run.read_status().state == "failed")
    assert wait_for(lambda: gone(before.pid) and gone(before.supervisor_pid), timeout=30)


def test_a_killed_supervisor_with_its_trainer_alive_reads_running_and_force_stop_ends_the_trainer(waiter_run,
                                                                                                  runs_dir):
    run, _ = waiter_run
    status = run.read_status()
    kill_and_reap(status.supervisor_pid)
    assert not gone(status.pid)  # the trainer trains on without it

    listed = _cli("runs", "--runs-dir", str(runs_dir))
    line = next(li for li in listed.stdout.splitlines() if li.startswith(run.name))
    assert "running (supervisor gone)" in line, listed.stdout
    assert effective_state(run)[0] == "running"

    refused = _cli("resume", run.name, "--runs-dir", str(runs_dir))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "still running (supervisor gone" in refused.stderr

    stopped = _cli("stop", run.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == f"{run.name}: killed"
    assert wait_for(lambda: gone(status.pid), timeout=30)
    final = run.read_status()
    assert final.state == "killed" and "supervisor was gone" in final.reason
    ended = [r for r in journal.read_all(run.events)[0] if r.kind == journal.RUN_ENDED]
    assert ended and ended[-1].data["state"] == "killed"


def test_a_killed_supervisor_whose_trainer_then_failed_reads_failed_with_the_trainers_error(waiter_run, runs_dir):
    run, flag = waiter_run
    status = run.read_status()
    kill_and_reap(status.supervisor_pid)
    flag.touch()  # the trainer now fails on its own, with nobody to write its end
    assert wait_for(lambda: gone(status.pid), timeout=30)

    state, reason = effective_state(run)
    assert state == "failed"
    assert "supervisor process is gone" in reason and "ValueError: boom from the trainer" in reason
    rows = json.loads(_cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)
    assert [(r["state"], "ValueError" in r["reason"]) for r in rows if r["name"] == run.name] == [("failed", True)]

    # Resume is no longer refused as "still running": it goes on to its own checks (this script never
    # trained, so there is nothing to resume from).
    again = _cli("resume", run.name, "--runs-dir", str(runs_dir))
    assert again.returncode == 2 and "still" not in again.stderr
    assert "never started training" in again.stderr
    # And a force stop has nothing to stop: one line, exit 2.
    stopped = _cli("stop", run.name, "--force", "--runs-dir", str(runs_dir))
    assert stopped.returncode == 2 and "is not running (state: failed" in stopped.stderr


def test_force_stop_never_signals_an_unrelated_process_that_took_the_recorded_pid(waiter_run, runs_dir):
    run, _ = waiter_run
    status = run.read_status()
    kill_and_reap(status.supervisor_pid)
    os.kill(status.pid, signal.SIGKILL)
    assert wait_for(lambda: gone(status.pid), timeout=30)

    # Someone else's process now holds the number status.json recorded for the run's group.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCKPIT_")}
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True, env=env)
    try:
        for started in (status.pid_started, psutil.Process(stranger.pid).create_time()):
            # first as a reused pid (another start time), then even with a matching start time:
            # without the run's marker in its environment it is not the run's
            record = json.loads(run.status_json.read_text())
            record.update(pid=stranger.pid, pgid=stranger.pid, pid_started=started)
            run.status_json.write_text(json.dumps(record))
            assert effective_state(run)[0] == "failed"
            proc = _cli("stop", run.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir))
            assert proc.returncode == 2 and "is not running" in proc.stderr
            assert stranger.poll() is None, "the unrelated process was signalled"
        # Even with the status claiming the run is live and its supervisor alive (our own pid), the
        # stranger is not signalled: the group is not proved to be the run's.
        record.update(supervisor_pid=os.getpid(), supervisor_started=psutil.Process().create_time())
        run.status_json.write_text(json.dumps(record))
        stop(run, save=False, grace_s=1)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_two_resumes_at_once_start_one_owner_and_the_winner_continues_from_the_checkpoint(farm_run):
    """The run is a copy of the farm's `stopped` one (tests/helpers: demo-sft stopped with a save a few
    steps in, trained once through the real supervisor): what is tested here is the two resumes."""
    run = farm_run("stopped")
    runs_dir = run.path.parent
    started: list[int] = []
    try:
        assert run.read_status().state == "stopped" and run.checkpoints()
        newest = run.checkpoints()[-1].name
        more = ("--set", "max_steps=400")  # room to be force-stopped mid-way
        procs = [subprocess.Popen(cockpit_cmd("resume", run.name, "--runs-dir", str(runs_dir), *more),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL) for _ in range(2)]
        outs = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert sorted(rc for rc, _, _ in outs) == [0, 2], outs
        loser = next(err for rc, _, err in outs if rc == 2)
        assert len(loser.strip().splitlines()) == 1 and "already has an owner" in loser

        status = wait_for(lambda: (s := run.read_status()).pid and s.state == "running" and s)
        started += [status.supervisor_pid, status.pid]
        assert status.attempt == 2
        supervisors = [p for p in psutil.process_iter(["cmdline"])
                       if "cockpit.supervisor" in (p.info["cmdline"] or []) and str(run.path) in p.info["cmdline"]]
        assert [p.pid for p in supervisors] == [status.supervisor_pid]
        resumed = wait_for(lambda: [r for r in journal.read_all(run.events)[0]
                                    if r.kind == journal.RUN_STARTED and r.data.get("resumed_from")], timeout=300)
        assert Path(resumed[0].data["resumed_from"]).name == newest
        assert _cli("stop", run.name, "--force", "--grace", "3", "--runs-dir", str(runs_dir)).returncode == 0
        assert wait_for(lambda: run.read_status().state == "killed", timeout=60)
    finally:
        for pid in started:
            kill_and_reap(pid)
