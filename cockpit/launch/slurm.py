"""Slurm: cockpit writes the sbatch script, submits it, and follows the shared run folder.

It never schedules or places processes itself. The script runs one `srun` task per node; each task
starts the trainer's processes through torchrun (c10d rendezvous at the first node, the way TRL's
multi-node examples do) or `accelerate launch --num_machines N --machine_rank $SLURM_NODEID
--main_process_ip <first node>`. Global rank 0 alone writes the journal, as on one machine. Output
goes to `stdout.log` in the run folder, which must be on a filesystem the nodes share.

The supervisor (on the submitting machine) records the job id, shows `queued` with squeue's reason
until the job starts, forwards a force stop as `scancel`, and reads how the job ended from sacct
(where accounting exists) or scontrol, so a time limit or a preemption is named as such.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cockpit.config.launcher import LauncherSpec
from cockpit.errors import CockpitError

_TIMEOUT_S = 30


@dataclass(frozen=True)
class JobEnd:
    state: str
    """finished, failed, killed"""
    exit_code: int | None
    reason: str
    fix: str


def available() -> str | None:
    """None when sbatch, squeue and scancel are on PATH, else what is missing (for a one-line error)."""
    from cockpit.config.launcher import slurm_missing

    return slurm_missing()


def sbatch_script(*, run_dir: Path, chdir: Path, job_name: str, launcher: LauncherSpec, task: list[str],
                  distributed: str | None, env: dict[str, str], python: str = sys.executable) -> str:
    """The job script. `task`: what each node runs after the launcher (`-m cockpit.runner RUN` or a
    script-mode command); `distributed`: "torchrun", "accelerate" or None (the command is given as
    is, with the rendezvous address in $COCKPIT_MAIN_ADDR / $COCKPIT_MAIN_PORT)."""
    s = launcher
    out = run_dir / "stdout.log"
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job_name}", f"#SBATCH --output={out}",
             f"#SBATCH --error={out}", "#SBATCH --open-mode=append", f"#SBATCH --nodes={s.nodes}",
             "#SBATCH --ntasks-per-node=1", f"#SBATCH --chdir={chdir}"]
    if s.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={s.gpus_per_node}")
    if s.cpus_per_task:
        lines.append(f"#SBATCH --cpus-per-task={s.cpus_per_task}")
    for key, value in (("partition", s.partition), ("time", s.time), ("account", s.account)):
        if value:
            lines.append(f"#SBATCH --{key}={value}")
    lines += [f"#SBATCH {x}" for x in s.sbatch]
    lines += ["", "# written by cockpit: the run folder must be on a filesystem every node shares", "set -eo pipefail"]
    if s.setup.strip():
        lines += ["", "# setup (from cockpit.launcher.setup)", s.setup.rstrip()]
    lines += [""] + [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += ['export COCKPIT_MAIN_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
              f"export COCKPIT_MAIN_PORT={s.port}", ""]
    n = s.num_processes
    task_s = shlex.join(task)
    if distributed == "torchrun":
        inner = (f"exec {shlex.quote(python)} -m torch.distributed.run "
                 "--nnodes=$SLURM_NNODES --node_rank=$SLURM_NODEID "
                 f"--nproc_per_node={n} --rdzv_id=$SLURM_JOB_ID --rdzv_backend=c10d "
                 f"--rdzv_endpoint=$COCKPIT_MAIN_ADDR:$COCKPIT_MAIN_PORT {task_s}")
    elif distributed == "accelerate":
        cfg = f"--config_file {shlex.quote(s.config_file)} " if s.config_file else ""
        extra = " ".join(shlex.quote(a) for a in s.args)
        inner = (f"exec {shlex.quote(python)} -m accelerate.commands.launch {cfg}--num_machines $SLURM_NNODES "
                 f"--machine_rank $SLURM_NODEID --main_process_ip $COCKPIT_MAIN_ADDR "
                 f"--main_process_port $COCKPIT_MAIN_PORT --num_processes $(( SLURM_NNODES * {n} )) "
                 f"{extra + ' ' if extra else ''}{task_s}")
    else:
        inner = f"exec {task_s}"
    lines += ["# one task per node; each starts this node's share of the processes",
              f"srun --kill-on-bad-exit=1 bash -c {shlex.quote(inner)}", ""]
    return "\n".join(lines)


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL, env=None if env is None else {**os.environ, **env})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


def submit(script: Path, env: dict[str, str] | None = None) -> str:
    """sbatch the script; the job id. `env`: values given to the job through sbatch's environment
    (its default `--export=ALL`), never written into the script: a run's secrets."""
    proc = _run(["sbatch", "--parsable", str(script)], env)
    if proc.returncode != 0:
        raise CockpitError(f"sbatch refused the job: {(proc.stderr or proc.stdout).strip()[:300]} — "
                           "check cockpit.launcher (partition, time, account)")
    return proc.stdout.strip().split(";")[0]


def queue_state(job_id: str) -> tuple[str, str] | None:
    """(squeue state, reason) while the job is known to the queue, else None."""
    proc = _run(["squeue", "-h", "-j", job_id, "-o", "%T|%r"])
    line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
    if not line:
        return None
    state, _, reason = line.partition("|")
    return state.strip(), reason.strip()


def cancel(job_id: str) -> None:
    _run(["scancel", job_id])


_ENDS = {
    "COMPLETED": ("finished", "the job completed", ""),
    "FAILED": ("failed", "the job failed", "see stdout.log"),
    "NODE_FAIL": ("failed", "a node of the job failed", "resume it: cockpit resume RUN"),
    "OUT_OF_MEMORY": ("failed", "the job ran out of memory", "ask for more memory (--mem) or lower the batch size"),
    "TIMEOUT": ("killed", "Slurm ended the job at its time limit",
                "raise cockpit.launcher.time, then resume: cockpit resume RUN"),
    "PREEMPTED": ("killed", "Slurm preempted the job", "resume it: cockpit resume RUN"),
    "CANCELLED": ("killed", "the job was cancelled (scancel)", "resume it: cockpit resume RUN"),
    "BOOT_FAIL": ("failed", "the job's node failed to boot", "submit again"),
    "DEADLINE": ("killed", "the job reached its deadline", "resume it: cockpit resume RUN"),
}


def job_end(job_id: str) -> JobEnd:
    """How a job that left the queue ended: from sacct where accounting runs, else scontrol."""
    state, code = "", None
    proc = _run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode"])
    if proc.returncode == 0 and proc.stdout.strip():
        raw, _, exit_s = proc.stdout.strip().splitlines()[0].partition("|")
        state = raw.split()[0] if raw else ""
        code = _exit_code(exit_s)
    if not state:
        proc = _run(["scontrol", "show", "job", job_id, "-o"])
        fields = dict(tok.split("=", 1) for tok in proc.stdout.split() if "=" in tok)
        state = fields.get("JobState", "")
        code = _exit_code(fields.get("ExitCode", ""))
    ended, reason, fix = _ENDS.get(state.rstrip("+"), ("failed", f"the job ended {state or 'without a state'}",
                                                       "see stdout.log"))
    return JobEnd(ended, code, f"{reason} (job {job_id})", fix)


def _exit_code(text: str) -> int | None:
    code, _, _ = text.partition(":")
    return int(code) if code.strip().isdigit() else None
