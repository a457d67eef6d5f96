"""The run's end told truly, each with the real fault: a tmpfs with few inodes filled while the run
trains (the end written through the reserved spare; and when even that is gone, the journal's
`run_ended` read as the end), and a SIGKILL of the supervisor and the trainer while a helper the
supervisor started (a notify command) still carries the run's marker."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest

from cockpit.run import HELPER_ENV, RUN_DIR_ENV, journal
from cockpit.run.folder import RunFolder
from cockpit.run.summaries import effective_state
from helpers import cli, fake_argv, gone, no_traceback, tmpfs_mount, wait_for

pytestmark = pytest.mark.proc


def _start(runs: Path, cwd: Path, *extra: str, steps: int, every: float, alerts: Path | None = None) -> RunFolder:
    """`cockpit run -- ` the fake trainer in the background (the real supervisor, alerter, journal)."""
    args = ["run", "--runs-dir", str(runs), *(["--alerts", str(alerts)] if alerts else []), "--",
            *fake_argv("--steps", str(steps), "--every", str(every), *extra)]
    done = cli(*args, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return RunFolder(Path(done.stdout.splitlines()[0].strip()))


def _training(run: RunFolder) -> bool:
    return run.read_status().state == "running" and run.events.exists() and b'"metrics"' in run.events.read_bytes()


def _use_up_inodes(where: Path) -> int:
    n = 0
    while True:
        try:
            (where / f"i{n}").touch()
        except OSError:
            return n
        n += 1


def _leftovers(run: RunFolder) -> None:
    from cockpit.run import owner

    st = run.read_status()
    for pid in (st.supervisor_pid, st.pid):
        if pid and not gone(pid):
            os.kill(pid, signal.SIGKILL)
    owner.end_processes(owner.marked_processes(run.path), 1.0)


@pytest.mark.parametrize("spare", ["kept", "gone"])
def test_out_of_inodes_the_end_is_written_and_named_as_inodes_not_a_full_disk(tmp_path, spare):
    with tmpfs_mount(tmp_path / "few-inodes", "50m,nr_inodes=200") as mnt:
        runs, work, filler = mnt / "runs", mnt / "work", mnt / "filler"
        work.mkdir()
        filler.mkdir()
        run = _start(runs, work, steps=24, every=0.25)  # 6 s: a system sample (every 5 s) falls in it
        try:
            wait_for(lambda: _training(run), timeout=120)
            if spare == "gone":  # the reserved room taken away too: even the end's status cannot be written
                for kept in run.path.glob(".status.json.*"):
                    kept.unlink()
            assert _use_up_inodes(filler) > 0 and os.statvfs(mnt).f_favail == 0
            assert os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize > 40 << 20  # the bytes are there
            wait_for(lambda: gone(run.read_status().supervisor_pid) and (
                spare == "gone" or not run.read_status().live), timeout=120)
            records, _ = journal.read_all(run.events)
            ended = [r for r in records if r.kind == journal.RUN_ENDED]
            assert ended and "out of inodes" in ended[-1].data["reason"], ended
            state, reason = effective_state(run)
            assert state == "failed" and reason and "out of inodes" in reason, (state, reason)
            if spare == "kept":  # status.json itself is final
                status = run.read_status()
                assert status.state == "failed" and "out of inodes" in status.reason
            else:  # said where the end can be read, and why status.json has not it
                assert run.read_status().live
                assert "status.json could not be written" in reason
                said = [r for r in records if r.kind == journal.WARNING and r.data.get("code") == "status_unwritten"]
                assert said and "out of inodes" in said[0].data["message"], said
            listed = cli("runs", "--runs-dir", str(runs))
            no_traceback(listed)
            assert "failed" in listed.stdout and "running" not in listed.stdout, listed.stdout
        finally:
            _leftovers(run)


def test_a_dead_trainer_is_never_reported_running_because_of_a_supervisor_helper(tmp_path):
    runs = tmp_path / "runs"
    helper_pid = tmp_path / "helper.pid"
    alerts = tmp_path / "alerts.yaml"  # a notify command that outlives the supervisor: its helper
    alerts.write_text(f"notify: {{command: 'echo $$ > {helper_pid}; exec sleep 120; :'}}\n"
                      "alerts:\n  - {metric: loss, above: 0.0, do: [notify]}\n", encoding="utf-8")
    run = _start(runs, tmp_path, steps=0, every=0.2, alerts=alerts)
    helper = None
    try:
        wait_for(lambda: _training(run) and helper_pid.exists() and helper_pid.read_text().strip(), timeout=120)
        helper = psutil.Process(int(helper_pid.read_text()))
        env = helper.environ()
        assert env[RUN_DIR_ENV] == str(run.path) and env.get(HELPER_ENV) == "1"  # the run's, as a helper
        st = run.read_status()
        trainer_env = psutil.Process(st.pid).environ()
        assert trainer_env[RUN_DIR_ENV] == str(run.path) and HELPER_ENV not in trainer_env
        os.kill(st.supervisor_pid, signal.SIGKILL)
        os.kill(st.pid, signal.SIGKILL)
        wait_for(lambda: gone(st.supervisor_pid) and gone(st.pid), timeout=30)
        assert helper.is_running()  # the helper outlives both, with the run's marker
        state, reason = effective_state(run)
        assert state == "failed" and "still running" not in (reason or ""), (state, reason)
        listed = cli("runs", "--runs-dir", str(runs))
        no_traceback(listed)
        assert "failed" in listed.stdout and f"pid {st.pid}" not in listed.stdout + listed.stderr
    finally:
        if helper is not None and helper.is_running():
            helper.kill()
        _leftovers(run)


def test_a_trainer_child_alive_after_its_leader_died_is_named_by_its_own_pid(tmp_path):
    """The trainer's own processes still count: a worker of its group alive after the leader was
    killed keeps the run "running", and the pid said is the live one, never the dead leader's."""
    runs = tmp_path / "runs"
    pids = tmp_path / "pids"
    run = _start(runs, tmp_path, "--child", "--pid-file", str(pids), steps=0, every=0.2)
    try:
        wait_for(lambda: _training(run) and pids.exists() and len(pids.read_text().split()) == 2, timeout=120)
        st = run.read_status()
        worker = int(pids.read_text().split()[1])  # its dataloader worker, say: same group, same marker
        os.kill(st.supervisor_pid, signal.SIGKILL)
        os.kill(st.pid, signal.SIGKILL)
        wait_for(lambda: gone(st.supervisor_pid) and gone(st.pid), timeout=30)
        assert not gone(worker)
        state, reason = effective_state(run)
        assert state == "running" and f"pid {worker}" in reason and f"pid {st.pid}" not in reason, reason
    finally:
        _leftovers(run)
