"""The state tells the truth: each case is the real fault on a real run or the real file.

Runs that need a Trainer's word (how training ended) train for real on the offline demo assets
(`tests/fixtures/scripts/pipeline.py`, slow); the rest use a tiny stdlib script, real folders with
real dates, a real tmpfs without inodes and a real py-spy stand-in that never answers. Every test
ends every process it started, by pid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.run import diagnose, journal, owner
from cockpit.run.folder import RunFolder
from cockpit.run.summaries import effective_state
from helpers import REPO, cockpit_cmd, gone, wait_for

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


def _cli(*args: str, cwd: Path | None = None, env: dict | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=env)


def _cleanup(run: RunFolder) -> None:
    """Whatever the test did, no process of the run is left behind (each one proved ours first)."""
    try:
        status = run.read_status()
    except Exception:  # noqa: BLE001
        status = None
    if status is not None:
        for pid, started in ((status.pid, status.pid_started), (status.supervisor_pid, status.supervisor_started)):
            if pid is not None and owner.same_process(pid, started):
                os.kill(pid, signal.SIGKILL)
    for proc in owner.marked_processes(run.path):
        proc.kill()
    if status is not None:
        wait_for(lambda: gone(status.supervisor_pid) and gone(status.pid), timeout=60)


def _pipeline(tmp_path: Path, runs: Path, *extra: str, env: dict | None = None, wait: bool = False,
              max_steps: int = 8, save_steps: int = 1000, sleep: float = 0.0) -> tuple[RunFolder, subprocess.Popen]:
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    demo = ensure_all(demo_dir())
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out", "--stage", "sft",
           "--max-steps", str(max_steps), "--save-steps", str(save_steps), "--sleep", str(sleep), *extra]
    proc = subprocess.Popen(cockpit_cmd("run", "--runs-dir", str(runs), *(["--wait"] if wait else []), "--", *cmd),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None and proc.stderr is not None  # PIPE, both
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read()[-2000:]
    return RunFolder(Path(line)), proc


def _steps(run: RunFolder) -> list[int]:
    records, _ = journal.read_all(run.events)
    return [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]


def _close(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


# -- B1, B2, B3: how training ended, by the training process's own word -------------------------


@pytest.mark.slow
def test_a_script_that_trains_to_the_end_after_its_supervisor_was_killed_reads_finished(tmp_path, runs_dir):
    run, proc = _pipeline(tmp_path, runs_dir, max_steps=6, sleep=0.5)  # long in time, few steps
    try:
        proc.wait(timeout=60)
        wait_for(lambda: _steps(run), timeout=300)
        status = run.read_status()
        os.kill(status.supervisor_pid, signal.SIGKILL)
        assert effective_state(run)[0] == "running"  # the trainer trains on
        wait_for(lambda: gone(status.pid), timeout=300)
        state, reason = effective_state(run)
        assert state == "finished", reason
        assert "supervisor process is gone" in reason and "training finished" in reason
        assert (tmp_path / "out" / "model.safetensors").exists()  # it saved its final model, as it reads
    finally:
        _close(proc)
        _cleanup(run)


@pytest.mark.slow
def test_a_script_that_exits_0_mid_training_is_not_finished(tmp_path, runs_dir):
    run, proc = _pipeline(tmp_path, runs_dir, "--exit-at", "6", max_steps=20, wait=True)
    try:
        code = proc.wait(timeout=600)
        status = run.read_status()
        assert status.state == "failed" and status.exit_code == 0, status
        assert "never seen to end" in status.reason and "os._exit" in status.reason
        assert code != 0  # `run --wait` does not say it finished
        assert 5 <= max(_steps(run)) < 20  # it left at step 6 of 20 (step 6's log never came)
    finally:
        _close(proc)
        _cleanup(run)


@pytest.mark.slow
def test_a_journal_emptied_mid_run_does_not_turn_a_trained_script_into_one_that_never_trained(tmp_path, runs_dir):
    run, proc = _pipeline(tmp_path, runs_dir, max_steps=6, sleep=0.4)  # long in time, few steps
    try:
        proc.wait(timeout=60)
        wait_for(lambda: _steps(run), timeout=300)
        with open(run.events, "r+b") as fh:  # `: > events.jsonl`
            fh.truncate(0)
        wait_for(lambda: not run.read_status().live, timeout=300)
        status = run.read_status()
        assert status.state == "finished" and status.reason == "training finished", status
    finally:
        _close(proc)
        _cleanup(run)


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_a_script_run_resumed_from_another_shell_runs_with_its_launch_environment(tmp_path, runs_dir):
    launch_env = {**os.environ, "PIPELINE_MAX_STEPS": "14"}
    run, proc = _pipeline(tmp_path, runs_dir, env=launch_env, max_steps=10, save_steps=4, sleep=0.4)
    try:
        proc.wait(timeout=60)
        wait_for(lambda: (tmp_path / "out" / "checkpoint-4" / "trainer_state.json").exists(), timeout=300)
        stopped = _cli("stop", run.name, "--force", "--grace", "5", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        other_shell = {k: v for k, v in os.environ.items() if k != "PIPELINE_MAX_STEPS"}
        resumed = _cli("resume", run.name, "--runs-dir", str(runs_dir), "--wait", env=other_shell, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert run.read_status().state == "finished"
        assert max(_steps(run)) == 14  # the launch's 14 steps, not the command line's 10
    finally:
        _close(proc)
        _cleanup(run)


# -- B5, B7: py-spy bounded, its own error line quoted ------------------------------------------


def _fake_py_spy(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "py-spy"
    exe.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    exe.chmod(0o755)
    return str(exe)


def test_a_py_spy_that_never_answers_is_stopped_at_its_bound_and_named(tmp_path, monkeypatch):
    from cockpit.findings import hang

    monkeypatch.setattr(hang, "py_spy", lambda: _fake_py_spy(tmp_path, "echo $$ > " + str(tmp_path / "pid") +
                                                              "\nexec sleep 300"))
    started: list[subprocess.Popen] = []
    t0 = time.monotonic()
    dump = hang.dump_stack(os.getpid(), timeout_s=1.0, on_start=started.append)
    assert time.monotonic() - t0 < 10
    assert dump.error == f"py-spy did not answer within 1s for pid {os.getpid()} (it was stopped)"
    assert started and started[0].poll() is not None  # stopped, and reaped


def test_the_hang_finding_quotes_py_spys_own_error_line_not_its_backtrace(tmp_path, monkeypatch):
    from cockpit.findings import hang

    err = ("Error: Failed to get process executable name. Check that the process is running.\n"
           "Reason: No such file or directory (os error 2)\n\nStack backtrace:\n"
           "   0: py_spy::python_spy::PythonSpy::new\n   8: std::rt::lang_start\n   9: main\n")
    monkeypatch.setattr(hang, "py_spy", lambda: _fake_py_spy(tmp_path, f"cat >&2 <<'EOF'\n{err}EOF\nexit 1"))
    dump = hang.dump_stack(os.getpid(), timeout_s=10)
    assert dump.error == ("Error: Failed to get process executable name. Check that the process is running. "
                          "(Reason: No such file or directory (os error 2))")
    refused = "Error: Operation not permitted (os error 1)\nStack backtrace:\n   9: main\n"
    monkeypatch.setattr(hang, "py_spy", lambda: _fake_py_spy(tmp_path, f"cat >&2 <<'EOF'\n{refused}EOF\nexit 1"))
    dump = hang.dump_stack(os.getpid(), timeout_s=10)
    assert "9: main" not in dump.error and "Operation not permitted" in dump.error
    assert dump.error.startswith(f"py-spy may not read pid {os.getpid()}: ")
    assert ("ptrace_scope" in dump.error) == ((hang._yama_scope() or 0) > 0)  # Yama named only where it refuses
    caused = ("Error: Failed to open process\n\nCaused by:\n    0: Operation not permitted (os error 1)\n\n"
              "Stack backtrace:\n   9: main\n")
    monkeypatch.setattr(hang, "py_spy", lambda: _fake_py_spy(tmp_path, f"cat >&2 <<'EOF'\n{caused}EOF\nexit 1"))
    dump = hang.dump_stack(os.getpid(), timeout_s=10)
    assert "(Caused by: Operation not permitted (os error 1))" in dump.error and "(Caused by:)" not in dump.error


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_py_spy_refused_as_root_without_cap_sys_ptrace_says_so_with_the_containers_fix():
    """The real refusal: root with CAP_SYS_PTRACE dropped (as a container runs) may not trace
    another user's process; the line says root without the capability, and the fix, not
    "ptrace refused" nor an empty "(Caused by:)"."""
    target = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        code = ("import sys\nfrom cockpit.findings import hang\n"
                f"print(hang._has_cap_sys_ptrace()); print(hang.dump_stack({target.pid}, timeout_s=30).error)")
        done = subprocess.run(["setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace",
                               sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        cap, error = done.stdout.strip().split("\n", 1)
        assert cap == "False", done.stderr
        assert error.startswith(f"py-spy may not read pid {target.pid}: running as root without CAP_SYS_PTRACE")
        assert "--cap-add SYS_PTRACE" in error and "(Caused by:)" not in error and "ptrace refused" not in error
    finally:
        target.kill()
        target.wait()


# -- B6: out of inodes is not out of space ------------------------------------------------------


def test_a_disk_out_of_inodes_is_named_inodes_not_a_full_disk(tmp_path):
    mnt = tmp_path / "few-inodes"
    mnt.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,nr_inodes=64", "tmpfs", str(mnt)],
                         capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.decode(errors='replace').strip()}")
    try:
        made = 0
        with pytest.raises(OSError) as full:
            while True:
                (mnt / f"f{made}").write_text("x")
                made += 1
        assert full.value.errno == 28  # ENOSPC, with megabytes still free
        said = diagnose.disk_full(diagnose.Diagnosis("error", "the trainer exited with code 1", ""),
                                  "OSError: [Errno 28] No space left on device: 'out/checkpoint-4'", [mnt])
        assert said.code == "disk_full"
        assert said.reason.startswith(f"the disk is out of inodes (0 of 64 free on {mnt}, ")
        assert "MB free" in said.reason and "the disk is full" not in said.reason
        assert f"delete files on {mnt}" in said.fix
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)


# -- B8: a run dated ahead of this clock ---------------------------------------------------------


def test_a_run_dated_a_year_ahead_shows_its_age_as_future(runs_dir):
    run = runs_dir / "ahead"
    run.mkdir()
    (run / "run.yaml").write_text("trainer: sft\n", encoding="utf-8")
    ahead = time.time() + 365 * 86400
    os.utime(run / "run.yaml", (ahead, ahead))
    listed = _cli("runs", "--runs-dir", str(runs_dir))
    assert listed.returncode == 0, listed.stderr
    line = next(li for li in listed.stdout.splitlines() if li.startswith("ahead"))
    assert "future" in line and "-8760h" not in line and "h00m" not in line
    from cockpit.run.summaries import age_of

    assert age_of(time.time() + 30, time.time()) == "0s"  # a little clock skew is "now"


# -- B9: a broken alerts.yaml is named for a script run too --------------------------------------


def test_a_broken_alerts_yaml_is_named_when_a_script_run_starts(tmp_path, runs_dir):
    config = tmp_path / "config"
    config.mkdir()
    (config / "alerts.yaml").write_text("alerts: [\n  - {metric: loss\n", encoding="utf-8")
    env = {**os.environ, "COCKPIT_CONFIG_DIR": str(config)}
    done = _cli("run", "--runs-dir", str(runs_dir), "--wait", "--", sys.executable, "-c", "pass", env=env, cwd=tmp_path)
    run = RunFolder(Path(done.stdout.splitlines()[0].strip()))
    try:
        said = [li for li in done.stderr.splitlines() if "alerts.yaml" in li]
        assert len(said) == 1 and "not valid YAML" in said[0] and str(config / "alerts.yaml") in said[0]
    finally:
        _cleanup(run)


# -- B5: a force stop returns the run's last word ------------------------------------------------


def test_force_stop_returns_the_final_state_not_running(tmp_path, runs_dir):
    from cockpit.launch.plan import launch_prepared
    from cockpit.launch.script import prepare_script

    flag = tmp_path / "flag"
    script = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n"
    run = launch_prepared(prepare_script([sys.executable, "-c", script, str(flag)], cwd=tmp_path,
                                         runs_dir=runs_dir, name="waiter"))
    try:
        wait_for(lambda: run.read_status().state == "running", timeout=60)
        stopped = _cli("stop", run.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0 and stopped.stdout.strip() == f"{run.name}: killed", stopped
        assert not stat.S_ISLNK(os.lstat(run.status_json).st_mode)
    finally:
        _cleanup(run)


# -- B4: a run folder moved mid-run tells one truth ----------------------------------------------


def _waiter(tmp_path: Path, runs_dir: Path, name: str) -> tuple[RunFolder, Path]:
    from cockpit.launch.plan import launch_prepared
    from cockpit.launch.script import prepare_script

    flag = tmp_path / f"{name}.flag"
    script = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n"
    run = launch_prepared(prepare_script([sys.executable, "-c", script, str(flag)], cwd=tmp_path,
                                         runs_dir=runs_dir, name=name))
    wait_for(lambda: (s := run.read_status()).state == "running" and s.pid_started, timeout=60)
    return run, flag


def test_a_run_folder_moved_mid_run_ends_with_one_truth_where_it_is_now(tmp_path, runs_dir):
    run, flag = _waiter(tmp_path, runs_dir, "moving")
    moved = RunFolder(run.path.with_name(run.path.name + "-moved"))
    run.path.rename(moved.path)
    try:
        wait_for(lambda: b"run_moved" in moved.events.read_bytes(), timeout=30)
        assert effective_state(moved)[0] == "running"
        flag.touch()
        wait_for(lambda: not moved.read_status().live, timeout=60)
        wait_for(lambda: gone(moved.read_status().supervisor_pid), timeout=30)
        status = moved.read_status()
        records, _ = journal.read_all(moved.events)
        ended = [r for r in records if r.kind == journal.RUN_ENDED]
        listed = _cli("runs", "--json", "--runs-dir", str(runs_dir))
        rows = {r["name"]: r["state"] for r in json.loads(listed.stdout)}
        assert status.state == ended[-1].data["state"] == rows[moved.name] == effective_state(moved)[0], (status, rows)
        assert not run.path.exists()  # nothing was written back where it was
    finally:
        _cleanup(moved)


def test_force_stop_ends_the_processes_of_a_run_folder_moved_mid_run(tmp_path, runs_dir):
    run, _ = _waiter(tmp_path, runs_dir, "moving")
    moved = RunFolder(run.path.with_name(run.path.name + "-moved"))
    trainer = run.read_status()
    run.path.rename(moved.path)
    try:
        wait_for(lambda: b"run_moved" in moved.events.read_bytes(), timeout=30)
        stopped = _cli("stop", moved.name, "--force", "--grace", "2", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0 and stopped.stdout.strip() == f"{moved.name}: killed", stopped
        assert gone(trainer.pid)
    finally:
        _cleanup(moved)


@pytest.mark.slow
def test_a_training_script_whose_folder_is_moved_mid_run_ends_finished_where_it_is_now(tmp_path, runs_dir):
    run, proc = _pipeline(tmp_path, runs_dir, max_steps=8, sleep=0.3)
    moved = RunFolder(run.path.with_name(run.path.name + "-moved"))
    try:
        proc.wait(timeout=60)
        wait_for(lambda: _steps(run), timeout=300)
        run.path.rename(moved.path)
        wait_for(lambda: not moved.read_status().live, timeout=300)
        status = moved.read_status()
        assert status.state == "finished" and status.reason == "training finished", status
        assert max(_steps(moved)) == 8  # the trainer's lines went on into the moved journal
        assert (moved.control / "outcome.json").exists() and not run.path.exists()
    finally:
        _close(proc)
        _cleanup(moved)


@pytest.mark.slow
def test_stop_and_save_works_on_a_run_folder_moved_mid_run(tmp_path, runs_dir):
    """`mv RUN RUN-moved` mid-run, then `cockpit stop RUN-moved` (stop and save): the request is left
    in the moved folder, where the trainer's callback finds it through the folder it holds open (it
    looked where the folder was, and trained on to its end). The run saves at the next step and ends
    `stopped`, its checkpoint saved at that step."""
    run, proc = _pipeline(tmp_path, runs_dir, max_steps=60, sleep=0.3)
    moved = RunFolder(run.path.with_name(run.path.name + "-moved"))
    try:
        proc.wait(timeout=60)
        wait_for(lambda: _steps(run), timeout=300)
        run.path.rename(moved.path)
        wait_for(lambda: len(_steps(moved)) >= 3, timeout=120)
        stopped = _cli("stop", moved.name, "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        wait_for(lambda: not moved.read_status().live, timeout=120)
        status = moved.read_status()
        assert status.state == "stopped" and status.reason.startswith("stopped and saved on request"), status
        records, _ = journal.read_all(moved.events)
        [asked] = [r.step for r in records if r.kind == journal.STOP_REQUESTED]
        assert max(_steps(moved)) == asked < 60
        assert (tmp_path / "out" / f"checkpoint-{asked}" / "trainer_state.json").is_file()
        assert not run.path.exists()
    finally:
        _close(proc)
        _cleanup(moved)


# -- a wall clock set two days forward --------------------------------------------------------------

TWO_DAYS = 2 * 86400.0


def test_a_wall_clock_jump_makes_no_hang_finding_and_no_stall_alert(tmp_path, monkeypatch):
    """The doctor and the alert engine measure every "how long since" on the monotonic clock: a run
    that steps every few hundredths of a second, then sees the wall clock (and the trainer's record
    times) jump two days forward, is neither "stuck at step 6: 172800 s without a step" nor stalled."""
    from cockpit.alerts.engine import AlertEngine
    from cockpit.alerts.rules import parse_rules
    from cockpit.run.folder import Status
    from cockpit.supervisor.doctor import Doctor
    from cockpit.supervisor.watch import Beat

    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    run.run_yaml.write_text("trainer: script\ncockpit:\n  script: {command: [python, t.py]}\n", encoding="utf-8")
    run.write_status(Status(state="running", name=run.name, trainer="script"))
    engine = AlertEngine(parse_rules([{"stalled_minutes": 30, "do": ["journal"]}]))  # its own default clock ...
    assert engine.clock is time.monotonic  # ... the monotonic one (a default bound at import: no patch reaches it)
    beat = Beat(pid=os.getpid(), started_at=time.monotonic(), live=True)
    real_time = time.time
    with journal.JournalWriter(run.events) as jw:
        doctor = Doctor(run, jw)
        for step in range(1, 7):
            recs = [journal.phase("training")] if step == 1 else []
            rec = journal.metrics(step, {"loss": 1.0 / step})
            rec.t = time.time()
            recs.append(rec)
            doctor.next_poll = 0.0
            doctor.poll(recs, beat)
            engine.feed(recs)
            time.sleep(0.05)
        monkeypatch.setattr(time, "time", lambda: real_time() + TWO_DAYS)  # the wall clock, and only it
        for _ in range(3):
            doctor.next_poll = 0.0
            doctor.poll([], beat)
            assert engine.tick(started_at=beat.started_at, live=True) == []
        doctor.ended(journal.run_ended("finished"), Beat(pid=None, started_at=beat.started_at, live=False))
    monkeypatch.setattr(time, "time", real_time)
    records, _ = journal.read_all(run.events)
    found = [r for r in records if r.kind == journal.FINDING]
    assert not [f for f in found if "hang" in str(f.data.get("kind"))], found
    assert not (run.path / "hangs").exists()


def test_steps_read_in_one_poll_still_measure_the_step_time():
    """A fast run's first steps often reach the supervisor in one read: the step time comes from the
    trainer's own timestamps then (a 4 s floor, not the 900 s first-step limit), and a jump of the
    trainer's clock (backwards, or by days) is no step time."""
    from cockpit.findings.hang import HangLimits, StepClock

    clock = StepClock(HangLimits(factor=3.0, floor_s=4.0, first_step_s=900.0))
    clock.training_since = 100.0
    for step, wall in ((1, 1000.0), (2, 1000.1), (3, 1000.2)):
        clock.step(step, 101.0, wall)  # all seen at once
    assert clock.median_step_s() == pytest.approx(0.1)
    assert clock.limit_s() == 4.0
    jumped = StepClock(HangLimits(factor=3.0, floor_s=4.0, first_step_s=900.0))
    jumped.training_since = 100.0
    for step, wall in ((1, 1000.0), (2, 1000.0 + TWO_DAYS), (3, 999.0)):
        jumped.step(step, 101.0 + step, wall)
    assert jumped.median_step_s() is None and jumped.limit_s() == 900.0
