"""How the trainer process is started: one Python process, several through torchrun or
`accelerate launch` (multi-GPU, DeepSpeed/FSDP: a config TRL ships, by name, or the user's own
file), or a Slurm job (`cockpit.launch.slurm`).

On a machine without GPUs, several processes go through torchrun (gloo backend):
`accelerate launch --cpu` starts only one process unless MPI is set up.

What may be in `cockpit.launcher`, and its checks, are `cockpit.config.launcher`'s. Kept apart
from `plan.py` so the supervisor, which must stay tiny, can build the same
command line that `command.txt` shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cockpit.config.launcher import LauncherSpec, accelerate_settings, check, gpu_count


def resolved_accelerate_config(spec: LauncherSpec, mixed_precision: str) -> str:
    """The chosen accelerate config with this run's process count, one machine and its precision
    filled in; kept in the run folder as `accelerate.yaml`."""
    import yaml

    data = accelerate_settings(Path(str(spec.config_file)))
    data.update(num_processes=spec.num_processes, num_machines=1, machine_rank=0,
                mixed_precision=mixed_precision)
    return f"# from {spec.config_file}, resolved by cockpit\n" + yaml.safe_dump(data, sort_keys=True)


def slurm_engine(spec: LauncherSpec) -> str | None:
    """How each Slurm node starts its processes: accelerate where it has GPUs to give them, torchrun
    for several CPU processes or nodes, else one plain process."""
    if spec.gpus_per_node and (spec.config_file or spec.num_processes > 1 or spec.nodes > 1):
        return "accelerate"
    if spec.num_processes > 1 or spec.nodes > 1:
        return "torchrun"
    return None


def runner_argv(run_path: Path, launcher: LauncherSpec | dict[str, Any] | None,
                resume_from: Path | None = None) -> list[str]:
    spec = check(launcher)
    tail = [str(run_path)] + (["--resume", str(resume_from)] if resume_from is not None else [])
    n = spec.num_processes
    if spec.kind == "slurm":  # what each node's task runs; slurm.sbatch_script wraps it
        runner = ["-m", "cockpit.runner", *tail]
        return runner if slurm_engine(spec) else [sys.executable, *runner]
    if spec.kind == "python":
        return [sys.executable, "-m", "cockpit.runner", *tail]
    if spec.kind == "torchrun" or (not spec.config_file and gpu_count() < n):
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node", str(n), *spec.args, "-m", "cockpit.runner", *tail]
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(n)]
    if spec.config_file:
        argv += ["--config_file", str(Path(spec.config_file).expanduser())]
    else:
        argv += ["--num_machines", "1", "--dynamo_backend", "no", "--multi_gpu"]
    argv += [*spec.args, "-m", "cockpit.runner", *tail]
    return argv


