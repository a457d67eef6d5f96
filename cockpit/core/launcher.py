"""How the trainer process is started: one Python process, or several through torchrun or
`accelerate launch` (multi-GPU, DeepSpeed/FSDP configs).

On a machine without GPUs, several processes go through torchrun (gloo backend):
`accelerate launch --cpu` starts only one process unless MPI is set up.

Kept apart from `launch.py` so the supervisor, which must stay tiny, can build the same
command line that `command.txt` shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cockpit.core.errors import CockpitError

KINDS = ("python", "torchrun", "accelerate", "slurm")


def check(launcher: Any) -> dict[str, Any]:
    """The `cockpit.launcher` section, checked; returns it with defaults filled in."""
    if launcher is None:
        launcher = {}
    if not isinstance(launcher, dict):
        raise CockpitError("cockpit.launcher must be a mapping like {kind: accelerate, num_processes: 2}")
    from cockpit.core import slurm

    allowed = set(slurm.KEYS) if launcher.get("kind") == "slurm" else {"kind", "num_processes", "config_file", "args"}
    unknown = set(launcher) - allowed
    if unknown:
        raise CockpitError(f"cockpit.launcher.{sorted(unknown)[0]}: unknown key — use {', '.join(sorted(allowed))}")
    n = launcher.get("num_processes", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CockpitError(f"cockpit.launcher.num_processes must be a whole number ≥ 1 (got {n!r})")
    kind = launcher.get("kind") or ("accelerate" if n > 1 or launcher.get("config_file") else "python")
    if kind not in KINDS:
        raise CockpitError(f"cockpit.launcher.kind must be one of {', '.join(KINDS)} (got {kind!r})")
    if kind == "python" and n > 1:
        raise CockpitError("cockpit.launcher.num_processes > 1 needs kind: torchrun or accelerate")
    cfg = launcher.get("config_file")
    if cfg and not Path(str(cfg)).expanduser().is_file():
        raise CockpitError(f"cockpit.launcher.config_file {cfg}: no such file — give an accelerate "
                           "config (DeepSpeed/FSDP) made with `accelerate config`")
    extra = launcher.get("args") or []
    if not isinstance(extra, list) or not all(isinstance(a, (str, int, float)) for a in extra):
        raise CockpitError("cockpit.launcher.args must be a list of extra `accelerate launch` flags")
    spec = {"kind": kind, "num_processes": n, "config_file": cfg, "args": [str(a) for a in extra]}
    if kind == "slurm":
        spec.update(slurm.check(launcher))
    return spec


def slurm_engine(spec: dict[str, Any]) -> str | None:
    """How each Slurm node starts its processes: accelerate where it has GPUs to give them, torchrun
    for several CPU processes or nodes, else one plain process."""
    if spec["gpus_per_node"] and (spec["config_file"] or spec["num_processes"] > 1 or spec["nodes"] > 1):
        return "accelerate"
    if spec["num_processes"] > 1 or spec["nodes"] > 1:
        return "torchrun"
    return None


def runner_argv(run_path: Path, launcher: dict[str, Any] | None,
                resume_from: Path | None = None) -> list[str]:
    spec = check(launcher)
    tail = [str(run_path)] + (["--resume", str(resume_from)] if resume_from is not None else [])
    n = spec["num_processes"]
    if spec["kind"] == "slurm":  # what each node's task runs; slurm.sbatch_script wraps it
        runner = ["-m", "cockpit.runner", *tail]
        return runner if slurm_engine(spec) else [sys.executable, *runner]
    if spec["kind"] == "python":
        return [sys.executable, "-m", "cockpit.runner", *tail]
    if spec["kind"] == "torchrun" or (not spec["config_file"] and _gpu_count() < n):
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node", str(n), *spec["args"], "-m", "cockpit.runner", *tail]
    argv = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(n)]
    if spec["config_file"]:
        argv += ["--config_file", str(Path(str(spec["config_file"])).expanduser())]
    else:
        argv += ["--num_machines", "1", "--dynamo_backend", "no", "--multi_gpu"]
    argv += [*spec["args"], "-m", "cockpit.runner", *tail]
    return argv


def _gpu_count() -> int:
    return len(list(Path("/dev").glob("nvidia[0-9]*")))
