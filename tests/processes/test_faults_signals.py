"""Signals reach only the run's own processes, and nothing the cockpit writes leaves the run folder.

Each case is the real fault: a real unrelated process holding a recorded pid, real symlinks where
the run's files should be, real helpers that leave the run's process group (`start_new_session`,
`setsid`), real tokens on the command line. The "trainer" is a tiny stdlib script under the real
supervisor (`cockpit run -- python script.py`), which is all these need; only the `CockpitCallback`
case imports transformers (slow). Every test ends every process it started, by pid."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cockpit.launch.plan import launch_prepared
from cockpit.launch.script import prepare_script
from cockpit.run import journal, owner
from cockpit.run.folder import RunFolder, Status
from cockpit.run.summaries import effective_state
from helpers import cockpit_cmd, gone, kill_and_reap, wait_for

WAITER = """
import os, sys, time
flag = sys.argv[1]
print("hello from the trainer", flush=True)
while not os.path.exists(flag):
    time.sleep(0.05)
"""

ESCAPER = """
import pathlib, subprocess, sys, time
helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
pathlib.Path(sys.argv[1]).write_text(str(helper.pid))
if sys.argv[2] == "wait":
    time.sleep(300)
"""


def _cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=120, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=env)


def _cleanup(run: RunFolder, *pids: tuple[int | None, float | None]) -> None:
    try:
        status = run.read_status()
        pids = (*pids, (status.pid, status.pid_started), (status.supervisor_pid, status.supervisor_started))
    except Exception:  # noqa: BLE001
        pass
    for pid, started in pids:
        if pid and started is not None:
            kill_and_reap(pid, started)
    for proc in owner.marked_processes(run.path):
        kill_and_reap(proc.pid, proc.create_time())


@pytest.fixture
def stranger():
    """Someone else's process: its own session, no cockpit marker in its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCKPIT_")}
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True, env=env)
    yield proc
    proc.kill()
    proc.wait()


def _waiter(tmp_path: Path, runs_dir: Path, name: str = "waiter") -> tuple[RunFolder, Path]:
    flag = tmp_path / f"{name}.flag"
    run = launch_prepared(prepare_script([sys.executable, "-c", WAITER, str(flag)], cwd=tmp_path,
                                         runs_dir=runs_dir, name=name))
    wait_for(lambda: (s := run.read_status()).state == "running" and s.pid_started)
    return run, flag


def _callback_run(runs_dir: Path, name: str, **status: object) -> RunFolder:
    """A run folder as `CockpitCallback()` in a plain `python train.py` leaves it (no supervisor: the
    script is the run's owner), with `status` as its status.json says."""
    path = runs_dir / name
    path.mkdir()
    (path / "run.yaml").write_text("trainer: script\ncockpit:\n  name: incode\n  in_code: true\n"
                                   "  script: {command: [python, train.py], cwd: /tmp}\n", encoding="utf-8")
    run = RunFolder(path)
    run.write_status(Status(state="running", name=name, trainer="script", host=os.uname().nodename,
                            started=time.time(), **status))  # type: ignore[arg-type]
    return run


# -- A1: a pid alone proves nothing --------------------------------------------------------------


def test_a_callback_run_whose_pid_was_reused_reads_failed_and_force_stop_touches_nobody(runs_dir, stranger):
    # The script died (kill -9, OOM, a reboot) and its pid now belongs to someone else. Once as an
    # older cockpit wrote it (no start time at all), once with the script's own (another) start time.
    for i, started in enumerate((None, psutil.Process(stranger.pid).create_time() - 3600)):
        run = _callback_run(runs_dir, f"incode-{i}", supervisor_pid=stranger.pid, pid=stranger.pid,
                            pgid=stranger.pid, supervisor_started=started)
        state, reason = effective_state(run)
        assert state == "failed" and "supervisor process is gone" in reason
        listed = _cli("runs", "--runs-dir", str(runs_dir))
        line = next(li for li in listed.stdout.splitlines() if li.startswith(run.name))
        assert " failed " in f" {line} " and "running" not in line, listed.stdout
        stopped = _cli("stop", run.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 2 and "is not running (state: failed" in stopped.stderr
        assert stranger.poll() is None, "the process that took the pid was signalled"


def test_a_process_with_the_recorded_start_time_but_not_the_runs_mark_is_never_signalled(runs_dir, stranger):
    # The pid and even its start time match, but the process holds neither the run's lock nor its
    # marker: it is not provably the run's script, so `stop --force` names it and signals nothing.
    started = psutil.Process(stranger.pid).create_time()
    run = _callback_run(runs_dir, "incode", supervisor_pid=stranger.pid, supervisor_started=started,
                        pid=stranger.pid, pgid=stranger.pid)
    stopped = _cli("stop", run.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir))
    assert stopped.returncode == 2, stopped.stderr
    assert "cannot be proven to be this run's script" in stopped.stderr and len(stopped.stderr.splitlines()) == 1
    time.sleep(0.5)
    assert stranger.poll() is None, "an unproven process was signalled"
    # A supervised run's group led by a process with the right start time but without the marker:
    # nothing of it is the run's either.
    sup = _callback_run(runs_dir, "supervised", supervisor_pid=2**22 - 1, supervisor_started=1.0,
                        pid=stranger.pid, pgid=stranger.pid, pid_started=started)
    assert effective_state(sup)[0] == "failed"
    assert _cli("stop", sup.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir)).returncode == 2
    assert stranger.poll() is None


@pytest.mark.slow
def test_a_callback_run_in_a_plain_python_holds_its_lock_and_force_stop_ends_it(tmp_path, runs_dir):
    script = tmp_path / "train.py"
    script.write_text("import sys, time\nfrom cockpit import CockpitCallback\n"
                      f"cb = CockpitCallback(runs_dir={str(runs_dir)!r}, name='incode')\n"
                      "print(cb.run.path, flush=True)\ntime.sleep(300)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, cwd=tmp_path)
    try:
        run = RunFolder(Path(proc.stdout.readline().strip()))
        status = run.read_status()
        assert status.supervisor_pid == proc.pid and status.supervisor_started is not None
        assert owner.same_process(proc.pid, status.supervisor_started) and owner.holds_lock(proc.pid, run.path)
        assert effective_state(run)[0] == "starting"  # live: no trainer built yet
        # the script owns its folder: a second owner is refused
        refused = _cli("resume", run.name, "--runs-dir", str(runs_dir))
        assert refused.returncode == 2
        stopped = _cli("stop", run.name, "--force", "--grace", "5", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert run.read_status().state == "killed"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


# -- A2, A3: nothing written through a link -------------------------------------------------------


def test_resume_never_truncates_a_file_that_supervisor_lock_links_to(tmp_path, runs_dir):
    run = launch_prepared(prepare_script([sys.executable, "-c", "print('done')"], cwd=tmp_path,
                                         runs_dir=runs_dir, name="linked"))
    wait_for(lambda: not run.read_status().live, timeout=60)
    wait_for(lambda: gone(run.read_status().supervisor_pid), timeout=30)
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's own file\n")
    lock = run.path / owner.LOCK_FILE
    lock.unlink()
    lock.symlink_to(precious)
    again = _cli("resume", run.name, "--runs-dir", str(runs_dir))
    assert again.returncode == 2 and "never started training" in again.stderr  # its own refusal, after the lock
    assert precious.read_text() == "the user's own file\n"
    assert stat.S_ISREG(os.lstat(lock).st_mode)  # the link was replaced by the run's own lock file


def test_a_run_never_writes_its_log_journal_or_supervisor_log_through_a_symlink(tmp_path, runs_dir):
    outside = tmp_path / "outside"
    outside.mkdir()
    run = prepare_script([sys.executable, "-c", "print('hello from the trainer')"], cwd=tmp_path,
                         runs_dir=runs_dir, name="links")
    targets = {}
    for name in ("stdout.log", "supervisor.log", "events.jsonl"):
        target = outside / name
        target.write_text(f"{name} of someone else\n")
        targets[name] = target
        (run.path / name).unlink(missing_ok=True)
        (run.path / name).symlink_to(target)
    launch_prepared(run)
    try:
        wait_for(lambda: not run.read_status().live, timeout=60)
        wait_for(lambda: gone(run.read_status().supervisor_pid), timeout=30)
        for name, target in targets.items():
            assert target.read_text() == f"{name} of someone else\n", name
            assert stat.S_ISREG(os.lstat(run.path / name).st_mode), name
        assert "hello from the trainer" in run.stdout_log.read_text()
        kinds = [r.kind for r in journal.read_all(run.events)[0]]
        assert kinds[-1] == journal.RUN_ENDED
    finally:
        _cleanup(run)


def test_resume_replaces_a_stdout_log_symlink_instead_of_appending_through_it(tmp_path, runs_dir):
    run, flag = _waiter(tmp_path, runs_dir)
    flag.touch()
    wait_for(lambda: not run.read_status().live, timeout=60)
    wait_for(lambda: gone(run.read_status().supervisor_pid), timeout=30)
    # resume of a run whose script never trained is refused, so start the next attempt's supervisor
    # itself, as resume does once its checks pass
    victim = tmp_path / "victim.log"
    victim.write_text("keep me\n")
    run.stdout_log.unlink()
    run.stdout_log.symlink_to(victim)
    flag.unlink()
    run.write_status(Status(state="starting", name=run.name, trainer="script", attempt=2, host=os.uname().nodename))
    from cockpit.launch.plan import start_supervisor

    start_supervisor(run)
    try:
        wait_for(lambda: run.read_status().state == "running", timeout=60)
        flag.touch()
        wait_for(lambda: not run.read_status().live, timeout=60)
        assert victim.read_text() == "keep me\n"
        assert not run.stdout_log.is_symlink() and "hello from the trainer" in run.stdout_log.read_text()
    finally:
        _cleanup(run)


# -- A4: tokens never in clear in the run folder -------------------------------------------------


TOKEN = "hf_SECRETabcdefghij123456"
WANDB = "wandb-SECRET-7f3a9c"
HOOK = "SECRET-hook-11aa22"


def test_tokens_given_with_env_and_notify_targets_are_kept_outside_the_run_folder(tmp_path, runs_dir):
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text(f"notify: {{webhook: 'http://127.0.0.1:9/{HOOK}'}}\n", encoding="utf-8")
    expected = tmp_path / "expected.json"  # outside the run folder: the command compares, never prints
    expected.write_text(json.dumps([TOKEN, WANDB]))
    script = (f"import json, os\nwant = json.load(open({str(expected)!r}))\n"
              "print('token seen:', os.environ.get('HF_TOKEN') == want[0], os.environ.get('WANDB_API_KEY') == want[1],"
              " os.environ.get('PLAIN'))\n")
    done = _cli("run", "--runs-dir", str(runs_dir), "--env", f"HF_TOKEN={TOKEN}", "--env", f"WANDB_API_KEY={WANDB}",
                "--env", "PLAIN=visible", "--alerts", str(alerts), "--wait", "--", sys.executable, "-c", script,
                cwd=tmp_path)
    run = RunFolder(Path(done.stdout.splitlines()[0].strip()))
    try:
        wait_for(lambda: gone(run.read_status().supervisor_pid), timeout=30)
        assert "token seen: True True visible" in run.stdout_log.read_text()  # the command got them
        for path in run.path.rglob("*"):
            if path.is_file():
                text = path.read_bytes()
                for secret in (TOKEN, WANDB, HOOK):
                    assert secret.encode() not in text, f"{secret} written in clear in {path}"
        assert not (run.control / "notify.secret.json").exists()
        assert "HF_TOKEN=" in run.command_txt.read_text() and "PLAIN=visible" in run.command_txt.read_text()
        from cockpit.run.section import cockpit_section

        env = cockpit_section(run, strict=True).env
        assert env["PLAIN"] == "visible" and env["HF_TOKEN"].startswith("secret:")
        from cockpit.run import secrets

        kept = list(secrets.store().glob("*.json"))
        assert kept and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in kept)
        assert stat.S_IMODE(secrets.store().stat().st_mode) == 0o700
    finally:
        _cleanup(run)


# -- A5: helpers that leave the group are found by the marker ------------------------------------


def test_force_stop_ends_a_helper_the_script_started_in_a_session_of_its_own(tmp_path, runs_dir):
    pid_file = tmp_path / "helper.pid"
    run = launch_prepared(prepare_script([sys.executable, "-c", ESCAPER, str(pid_file), "wait"], cwd=tmp_path,
                                         runs_dir=runs_dir, name="escaper"))
    helper = None
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text() and run.read_status().state == "running")
        helper = int(pid_file.read_text())
        helper_started = psutil.Process(helper).create_time()
        assert os.getpgid(helper) != run.read_status().pgid  # it left the run's group
        stopped = _cli("stop", run.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == f"{run.name}: killed"  # the supervisor's last word, waited for
        assert wait_for(lambda: gone(helper), timeout=30)
    finally:
        _cleanup(run, *([(helper, helper_started)] if helper else []))


def test_the_sweep_looks_again_for_a_process_its_first_look_could_not_read(tmp_path, monkeypatch):
    """A notify command's `setsid sleep`, caught mid-exec as the command exits, shows no environment to
    read: the end's first look missed it once under load and it outlived the run. The sweep looks
    again until a look finds nothing new."""
    from cockpit.run.folder import create_run_folder
    from cockpit.supervisor import main as supervisor

    run = create_run_folder(tmp_path / "runs", "sweep")
    left = subprocess.Popen(["sleep", "300"], env={**os.environ, "COCKPIT_RUN_DIR": str(run.path)})
    real, looks = owner.marked_processes, []

    def blind_at_first(*args, **kwargs):
        looks.append(1)
        return [] if len(looks) == 1 else real(*args, **kwargs)

    monkeypatch.setattr(supervisor.owner, "marked_processes", blind_at_first)
    try:
        supervisor._sweep(run, None)
        left.wait(timeout=15)  # ended (the sweep's psutil reaps it, so its code is not ours to read)
        assert len(looks) == 3  # blind, found it, found nothing new
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()


def test_the_end_of_a_run_ends_its_escaped_helpers_and_a_notify_commands_setsid_child(tmp_path, runs_dir):
    pid_file = tmp_path / "helper.pid"
    notify_pid = tmp_path / "notify.pid"
    notify = tmp_path / "notify.sh"
    notify.write_text(f"setsid sleep 300 >/dev/null 2>&1 &\necho $! > {notify_pid}\n", encoding="utf-8")
    alerts = tmp_path / "alerts.yaml"
    alerts.write_text(f"notify: {{command: 'sh {notify}'}}\nalerts:\n  - {{event: run_ended, do: [notify]}}\n",
                      encoding="utf-8")
    done = _cli("run", "--runs-dir", str(runs_dir), "--alerts", str(alerts), "--wait", "--",
                sys.executable, "-c", ESCAPER, str(pid_file), "exit", cwd=tmp_path)
    run = RunFolder(Path(done.stdout.splitlines()[0].strip()))
    pids = []
    try:
        status = run.read_status()
        wait_for(lambda: gone(status.supervisor_pid), timeout=60)
        pids = [int(p.read_text().split()[0]) for p in (pid_file, notify_pid)]
        for pid in pids:
            assert gone(pid), f"pid {pid} of the run outlived it"
        assert "ended 2 process(es) of the run" in run.supervisor_log.read_text()
    finally:
        for pid in pids:
            if not gone(pid) and owner._marked(psutil.Process(pid), run.path):
                kill_and_reap(pid)
        _cleanup(run)


def test_a_process_carrying_another_runs_marker_is_not_this_runs(tmp_path, runs_dir):
    run, _ = _waiter(tmp_path, runs_dir, "one")
    other, other_flag = _waiter(tmp_path, runs_dir, "two")
    try:
        theirs = other.read_status()
        stopped = _cli("stop", run.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0
        assert owner.same_process(theirs.pid, theirs.pid_started)  # the other run trains on
        other_flag.touch()
        wait_for(lambda: not other.read_status().live, timeout=60)
    finally:
        _cleanup(run)
        _cleanup(other)


def test_the_supervisor_itself_is_never_marked(tmp_path, runs_dir):
    run, flag = _waiter(tmp_path, runs_dir)
    try:
        status = run.read_status()
        env = psutil.Process(status.supervisor_pid).environ()
        assert owner.RUN_DIR_ENV not in env  # only what it starts carries the marker
        assert [p.pid for p in owner.marked_processes(run.path)] == [status.pid]
        flag.touch()
        wait_for(lambda: not run.read_status().live, timeout=60)
    finally:
        _cleanup(run)

