"""Slurm, for real: a local one-node cluster (tests/helpers/slurm_cluster.py) runs a preset and a
script-mode run through sbatch, and they read like local runs. The generated multi-node script is
checked as text (one machine cannot host four nodes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch import slurm
from cockpit.launch.launchers import check, runner_argv, slurm_engine
from cockpit.launch.plan import launch, start_supervisor, stop
from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.run.section import cockpit_section
from helpers import NO_SFT_CHECK, REPO, wait_for, wait_journal_end
from helpers.slurm_cluster import LocalSlurm, why_not

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


def test_the_script_for_four_nodes_starts_one_launcher_per_node_with_global_rank_variables():
    spec = check({"kind": "slurm", "nodes": 4, "num_processes": 8, "gpus_per_node": 8, "partition": "gpu",
                  "time": "12:00:00", "account": "proj", "sbatch": ["--qos=high", "#SBATCH --exclusive"],
                  "setup": "module load cuda/12.4\nsource ~/venv/bin/activate"})
    assert slurm_engine(spec) == "accelerate"
    task = runner_argv(Path("/shared/runs/r1"), spec)
    text = slurm.sbatch_script(run_dir=Path("/shared/runs/r1"), chdir=Path("/shared/runs/r1"), job_name="r1",
                               launcher=spec, task=task, distributed="accelerate",
                               env={"COCKPIT_RUN_DIR": "/shared/runs/r1"}, python="/venv/bin/python")
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=12:00:00", "#SBATCH --account=proj",
                 "#SBATCH --qos=high", "#SBATCH --exclusive", "#SBATCH --output=/shared/runs/r1/stdout.log",
                 "module load cuda/12.4", "export COCKPIT_RUN_DIR=/shared/runs/r1"):
        assert line in text.splitlines(), line
    assert 'COCKPIT_MAIN_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)' in text
    srun = next(ln for ln in text.splitlines() if ln.startswith("srun "))
    for part in ("--num_machines $SLURM_NNODES", "--machine_rank $SLURM_NODEID", "--main_process_ip $COCKPIT_MAIN_ADDR",
                 "--main_process_port $COCKPIT_MAIN_PORT", "--num_processes $(( SLURM_NNODES * 8 ))",
                 "-m cockpit.runner /shared/runs/r1"):
        assert part in srun, part
    # CPU nodes: torchrun with c10d rendezvous at the first node.
    cpu = check({"kind": "slurm", "nodes": 4, "num_processes": 2})
    assert slurm_engine(cpu) == "torchrun"
    text = slurm.sbatch_script(run_dir=Path("/r"), chdir=Path("/r"), job_name="r", launcher=cpu,
                               task=runner_argv(Path("/r"), cpu), distributed="torchrun", env={})
    assert "--nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID --nproc_per_node=2" in text
    assert "--rdzv_backend=c10d --rdzv_endpoint=$COCKPIT_MAIN_ADDR:$COCKPIT_MAIN_PORT" in text


@pytest.mark.proc
def test_gpus_per_node_starts_one_process_per_gpu_unless_num_processes_is_given(tmp_path):
    """`kind: slurm` with `gpus_per_node: 8` and no num_processes: eight processes a node, not one."""
    from helpers import cockpit_cmd

    def srun_line(*sets: str) -> str:
        args = [a for kv in sets for a in ("--set", f"cockpit.launcher.{kv}")]
        proc = subprocess.run(cockpit_cmd("run", "demo-sft", "--runs-dir", str(tmp_path / "runs"), "--dry-run",
                                          "--set", "cockpit.launcher.kind=slurm", "--set", NO_SFT_CHECK, *args),
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        return next(ln for ln in proc.stdout.splitlines() if ln.startswith("srun "))

    assert "--num_processes $(( SLURM_NNODES * 8 ))" in srun_line("gpus_per_node=8", "nodes=2")
    assert "--num_processes $(( SLURM_NNODES * 2 ))" in srun_line("gpus_per_node=8", "num_processes=2")
    assert check({"kind": "slurm", "nodes": 2}).num_processes == 1  # CPU nodes: one each unless asked
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_bad_slurm_settings_are_all_named_at_once():
    with pytest.raises(Exception) as err:
        check({"kind": "slurm", "nodes": 0, "gpus_per_node": "eight", "sbatch": 3})
    msg = str(err.value)
    assert "nodes" in msg and "gpus_per_node" in msg and "sbatch" in msg


@pytest.fixture(scope="module")
def cluster():
    reason = why_not()
    if reason:
        pytest.skip(reason)
    c = LocalSlurm.in_tmp()
    c.start()
    saved = {k: os.environ.get(k) for k in c.env}
    os.environ.update(c.env)
    yield c
    c.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _ended(run: RunFolder) -> bool:
    return run.read_status().state not in ("starting", "queued", "running", "stopping")


@pytest.mark.slow
@pytest.mark.usefixtures("cluster")
def test_a_preset_on_slurm_goes_queued_running_finished_with_two_processes(runs_dir):
    preset = apply_overrides(load_preset("demo-sft"), ["max_steps=4", "save_steps=2", "logging_steps=1",
                                                             NO_SFT_CHECK])
    preset.cockpit["launcher"] = {"kind": "slurm", "num_processes": 2, "partition": "debug", "time": "00:10:00"}
    run = launch(preset, runs_dir)
    seen = set()

    def progressed():
        seen.add(run.read_status().state)
        return _ended(run)

    wait_for(progressed, timeout=400, every=0.1)
    status = run.read_status()
    assert status.state == "finished", (status, run.stdout_log.read_text()[-3000:])
    assert status.job_id and (run.path / "slurm.sbatch").is_file()
    assert "queued" in seen or "running" in seen
    records = wait_journal_end(run)
    started = [r for r in records if r.kind == journal.RUN_STARTED]
    assert len(started) == 1 and started[0].data["world_size"] == 2
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2, 3, 4]
    assert records[-1].kind == journal.RUN_ENDED and records[-1].data["state"] == "finished"


def _processes_of(run) -> list[int]:
    """The pids of live processes that carry this run's ownership marker (COCKPIT_RUN_DIR), as
    every process of its job does: the other worker may be running a pipeline.py of its own."""
    import psutil

    from cockpit.run import RUN_DIR_ENV

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(RUN_DIR_ENV) == str(run.path) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.usefixtures("cluster")
def test_a_script_run_on_slurm_stops_and_saves_then_a_force_stop_leaves_nothing(runs_dir, tmp_path):
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    demo = ensure_all(demo_dir())
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--stage", "sft", "--max-steps", "400", "--save-steps", "1000", "--sleep", "0.2"]
    run = prepare_script(cmd, cwd=tmp_path, runs_dir=runs_dir, launcher={"kind": "slurm", "partition": "debug"})
    start_supervisor(run)
    wait_for(lambda: any(r.kind == journal.METRICS for r in _records(run)), timeout=300)
    assert run.read_status().state == "running"
    stop(run, save=True)
    wait_for(lambda: _ended(run), timeout=300)
    status = run.read_status()
    assert status.state == "stopped", (status, run.stdout_log.read_text()[-2000:])
    ckpts = sorted((tmp_path / "out").glob("checkpoint-*"))
    assert ckpts and (ckpts[-1] / "trainer_state.json").is_file()

    # A second attempt, force-stopped with scancel: no process of the job is left.
    from cockpit.launch.plan import resume

    resume(run)
    wait_for(lambda: run.read_status().state == "running" and run.read_status().job_id != status.job_id,
             timeout=120)
    wait_for(lambda: sum(r.kind == journal.RUN_STARTED for r in _records(run)) == 2, timeout=300)
    stop(run, save=False)
    wait_for(lambda: _ended(run), timeout=120)
    final = run.read_status()
    assert final.state == "killed" and "scancel" in (final.reason or "")
    assert slurm.queue_state(final.job_id) is None
    # No process of the job is left (the supervisor itself ends a moment after the final state).
    wait_for(lambda: not _processes_of(run), timeout=60)


@pytest.mark.usefixtures("cluster")
def test_a_script_run_on_slurm_gets_its_secrets_and_its_run_folder_holds_none(runs_dir, tmp_path):
    """`--env HF_TOKEN=hf_… --env WANDB_API_KEY=…` and a tokened notify target, sent to Slurm: the
    job's process gets the values (through sbatch's environment), and no file of the run folder —
    run.yaml, command.txt, slurm.sbatch, the logs, the journal — holds one; run.yaml keeps the
    references (`cockpit/run/secrets.py`)."""
    import json

    token, key, hook = "hf_" + "a1B2c3D4" * 4, "wandb-" + "9z8y7x6w" * 4, "s3cr3tT0ken" * 3
    seen = tmp_path / "seen.json"  # outside the run folder: what the job's process was given
    script = tmp_path / "show.py"
    script.write_text("import json, os, sys\n"
                      "names = ('HF_TOKEN', 'WANDB_API_KEY', 'PLAIN')\n"
                      "json.dump({n: os.environ.get(n) for n in names}, open(sys.argv[1], 'w'))\n"
                      "print('the job ran')\n", encoding="utf-8")
    run = prepare_script([sys.executable, str(script), str(seen)], cwd=tmp_path, runs_dir=runs_dir,
                         env={"HF_TOKEN": token, "WANDB_API_KEY": key, "PLAIN": "not-a-secret"},
                         launcher={"kind": "slurm", "partition": "debug"},
                         alerts={"notify": {"webhook": f"https://hooks.example.invalid/{hook}"}})
    start_supervisor(run)
    wait_for(lambda: _ended(run), timeout=300)
    status = run.read_status()
    assert status.job_id and (run.path / "slurm.sbatch").is_file()
    assert json.loads(seen.read_text()) == {"HF_TOKEN": token, "WANDB_API_KEY": key, "PLAIN": "not-a-secret"}, \
        (status, run.stdout_log.read_text()[-2000:])
    assert "the job ran" in run.stdout_log.read_text()
    held = [p.relative_to(run.path) for p in run.path.rglob("*") if p.is_file()
            and any(s.encode() in p.read_bytes() for s in (token, key, hook))]
    assert held == [], held
    section = cockpit_section(run, strict=True)
    env = section.env
    assert env["HF_TOKEN"].startswith("secret:") and env["WANDB_API_KEY"].startswith("secret:")
    assert env["PLAIN"] == "not-a-secret" and section.notify["webhook"].startswith("secret:")
    assert "export PLAIN=not-a-secret" in (run.path / "slurm.sbatch").read_text()
    assert "HF_TOKEN" not in (run.path / "slurm.sbatch").read_text()
