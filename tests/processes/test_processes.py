"""Real runs through the detached supervisor: run --wait, stop-and-save, resume, force stop.

Each test starts real processes and sends real signals; nothing is mocked.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch.plan import launch, resume, stop
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import (
    NO_SFT_CHECK,
    STOPPED_STEPS,
    cockpit_cmd,
    fake_argv,
    fake_run,
    farm_cli,
    stored_completions,
    wait_for,
)


def _metric_steps(run: RunFolder) -> list[int]:
    records, _ = journal.read_all(run.events)
    return [r.step for r in records if r.kind == "metrics" and not r.data.get("summary") and r.step is not None]


def _ended(run: RunFolder):
    records, _ = journal.read_all(run.events)
    ends = [r for r in records if r.kind == "run_ended"]
    return ends[-1] if ends else None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_demo_grpo_wait_in_an_empty_directory(farm_run):
    """The run model's 'done when': reward metrics, completions and a final run_ended. The run is the
    farm's `grpo` (tests/helpers), trained by `cockpit run demo-grpo --wait --set max_steps=18` in an
    empty folder: what that command said is read here, its run folder from a copy."""
    work, proc = farm_cli("grpo")
    assert proc.args[:4] == ["-m", "cockpit.cli", "run", "demo-grpo"] and "--wait" in proc.args
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    made = Path(proc.stdout.splitlines()[0])
    assert made.parent == work / "runs"
    assert "ended: finished" in proc.stdout
    run = farm_run("grpo")
    assert run.name == made.name
    records, skipped = journal.read_all(run.events)
    assert skipped == 0
    metrics = [r for r in records if r.kind == "metrics"]
    assert any("reward" in r.data for r in metrics)
    assert any(r.data["rows"] for r in stored_completions(run))
    assert records[-1].kind == "run_ended" and records[-1].data["state"] == "finished"
    assert run.read_status().state == "finished"
    # The run folder holds a config TRL's own CLI takes, and the command lines to reproduce it.
    assert "trl grpo --config" in run.command_txt.read_text()
    assert run.trl_yaml.is_file() and (run.output / "trainer_state.json").is_file()


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_stop_and_save_then_resume_continues_the_same_journal(farm_run):
    """The stop with a save is the run farm's `stopped` run (tests/helpers: STOPPED_STEPS demo-sft steps,
    stopped with a save after 5 or more), a copy of it; the resume, more steps and the force stop are here."""
    run = farm_run("stopped")
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "stopped", end.data
    status = run.read_status()
    assert status.state == "stopped" and status.exit_code == 0
    steps_before = _metric_steps(run)
    last = steps_before[-1]
    assert last < STOPPED_STEPS
    ckpts = run.checkpoints()
    assert ckpts and ckpts[-1].name == f"checkpoint-{last}"
    records, _ = journal.read_all(run.events)
    assert any(r.kind == "stop_requested" for r in records)

    # Resume: a new attempt in the same folder, steps continue after the checkpoint.
    run.update_status()  # status file readable and not live
    resume(run, ["max_steps=400", NO_SFT_CHECK])  # room to be force-stopped mid-way
    wait_for(lambda: len(_metric_steps(run)) > len(steps_before) + 2)
    stop(run, save=False, grace_s=5)
    end = wait_for(lambda: _ended(run) if _ended(run).data["state"] != "stopped" else None)
    assert end.data["state"] == "killed"
    steps = _metric_steps(run)
    resumed = steps[len(steps_before):]
    assert resumed and resumed[0] == last + 1
    records, _ = journal.read_all(run.events)
    starts = [r for r in records if r.kind == "run_started"]
    assert len(starts) == 2 and starts[1].data["resumed_from"].endswith(f"checkpoint-{last}")
    assert run.read_status().attempt == 2


@pytest.mark.proc
def test_force_stop_kills_the_whole_process_group(tmp_path):
    """The trainer and the child it started (a dataloader worker, say) go; the fake trainer stands in
    for the training: the subject is the supervisor's process group and signals."""
    run = fake_run(tmp_path / "runs", "--steps", "0", "--every", "0.2", "--child")
    wait_for(lambda: run.read_status().pgid and len(_metric_steps(run)) >= 1)
    pgid = run.read_status().pgid
    status = stop(run, save=False, grace_s=5)
    assert not _group_alive(pgid)
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "killed"
    assert "stopped by request" in end.data["reason"]
    assert wait_for(lambda: run.read_status().state == "killed")
    assert status is not None


@pytest.mark.proc
def test_a_run_outlives_the_process_that_launched_it(tmp_path):
    """The launcher (here `cockpit run` without --wait) exits at once; the run goes on alone,
    with no file descriptor tied to the launching terminal. (The fake trainer: the subject is
    the detached supervisor, the same for a preset run and a script run.)"""
    runs = tmp_path / "runs"
    proc = subprocess.run(cockpit_cmd("run", "--runs-dir", str(runs), "--", *fake_argv("--steps", "20",
                                                                                       "--every", "0.1")),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = RunFolder(Path(proc.stdout.strip()))
    status = wait_for(lambda: run.read_status() if run.read_status().pid else None)
    # Neither the supervisor nor the trainer shares the launcher's session or its stdio.
    for pid in (status.supervisor_pid, status.pid):
        if pid and Path(f"/proc/{pid}").exists():
            assert os.getsid(pid) != os.getsid(0)
            for fd in ("0", "1", "2"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                assert "pts" not in target and "tty" not in target, target
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "finished"


@pytest.mark.slow
def test_a_failing_run_ends_failed_with_a_reason(tmp_path):
    """A dataset the runner cannot use fails with the reason recorded: its first row is what
    validation reads, and fits; a later line is not JSON, which only loading it in the runner finds."""
    data = tmp_path / "broken.jsonl"
    data.write_text('{"prompt": "2 + 2 =", "completion": " 4"}\n' * 20 + '{"prompt": "3 + 3 =", "completion": \n',
                    encoding="utf-8")
    preset = apply_overrides(load_preset("demo-sft"), [f"dataset_name={data}", NO_SFT_CHECK])
    run = launch(preset, tmp_path / "runs")
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "failed"
    assert end.data["reason"] and end.data["fix"]
    st = run.read_status()
    assert st.state == "failed" and st.exit_code not in (0, None)


@pytest.mark.proc
def test_sigkill_of_the_trainer_is_classified_as_oom_killer(tmp_path):
    run = fake_run(tmp_path / "runs", "--steps", "0", "--every", "0.2")
    wait_for(lambda: len(_metric_steps(run)) >= 1)
    os.kill(run.read_status().pid, signal.SIGKILL)
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "killed" and "OOM" in end.data["reason"]


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_two_processes_write_one_journal(tmp_path):
    """cockpit.launcher.num_processes=2 on a CPU box: two ranks (torchrun, gloo), rank 0 alone
    writes the journal, one metrics line per step."""
    preset = apply_overrides(load_preset("demo-sft"), [
        "max_steps=6", "eval_strategy=no", "cockpit.completions={}",
        "cockpit.launcher.num_processes=2", NO_SFT_CHECK])
    run = launch(preset, tmp_path / "runs")
    end = wait_for(lambda: _ended(run))
    assert end.data["state"] == "finished", end.data
    records, _ = journal.read_all(run.events)
    started = [r for r in records if r.kind == "run_started"]
    assert len(started) == 1 and started[0].data["world_size"] == 2
    assert _metric_steps(run) == [1, 2, 3, 4, 5, 6]
    assert "nproc_per_node 2" in run.command_txt.read_text()


@pytest.mark.slow
def test_a_relative_runs_dir_works(tmp_path):
    """`--runs-dir runs` from the shell: the supervisor, which runs inside the run folder, still
    finds its journal."""
    proc = subprocess.run(cockpit_cmd("run", "demo-sft", "--wait", "--runs-dir", "runs", "--set", "max_steps=2",
                                      "--set", NO_SFT_CHECK),
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = RunFolder(Path(proc.stdout.splitlines()[0]))
    assert run.path.is_absolute() and run.path.parent == tmp_path / "runs"
    assert run.read_status().state == "finished"
