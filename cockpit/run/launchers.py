"""How the trainer process is started: one Python process, several through torchrun or
`accelerate launch` (multi-GPU, DeepSpeed/FSDP: a config TRL ships, by name, or the user's own
file), or a Slurm job (`cockpit.run.slurm`).

On a machine without GPUs, several processes go through torchrun (gloo backend):
`accelerate launch --cpu` starts only one process unless MPI is set up.

Kept apart from `launch.py` so the supervisor, which must stay tiny, can build the same
command line that `command.txt` shows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError

KINDS = ("python", "torchrun", "accelerate", "slurm")


LOCAL_KEYS = ("kind", "num_processes", "config", "config_file", "args")


def trl_accelerate_configs() -> dict[str, Path]:
    """The accelerate configs the installed TRL ships (`trl/accelerate_configs/*.yaml`: single_gpu,
    multi_gpu, zero1-3, fsdp1, fsdp2), by name; found without importing trl."""
    import importlib.util

    spec = importlib.util.find_spec("trl")
    roots = list(spec.submodule_search_locations or []) if spec else []
    folder = Path(roots[0]) / "accelerate_configs" if roots else None
    if folder is None or not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def _config_path(launcher: dict[str, Any]) -> Path | None:
    """`config` (a TRL config name or a path) or `config_file` (a path), checked."""
    ref = launcher.get("config") or launcher.get("config_file")
    if not ref:
        return None
    shipped = trl_accelerate_configs()
    if str(ref) in shipped:
        return shipped[str(ref)]
    path = Path(str(ref)).expanduser()
    if not path.is_file():
        names = ", ".join(shipped) or "none found: is trl installed?"
        raise CockpitError(f"cockpit.launcher.config {ref}: no such file and not a config TRL ships ({names}) — "
                           "name one of those or give an accelerate config made with `accelerate config`")
    return path


def accelerate_settings(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CockpitError(f"{path}: not a readable accelerate config ({exc}) — fix it or pick another") from None
    return data if isinstance(data, dict) else {}


def machine_problems(spec: dict[str, Any], gpus: int | None = None) -> list[str]:
    """What this machine lacks for an accelerate config: the deepspeed package, GPUs, enough GPUs."""
    if spec["kind"] != "accelerate" or not spec["config_file"]:
        return []
    gpus = _gpu_count() if gpus is None else gpus
    engine = str(accelerate_settings(Path(spec["config_file"])).get("distributed_type") or "").upper()
    name = Path(spec["config_file"]).stem
    out = []
    if engine == "DEEPSPEED":
        import importlib.util

        if importlib.util.find_spec("deepspeed") is None:
            out.append(f"cockpit.launcher.config {name}: DeepSpeed is not installed — pip install deepspeed, "
                       "or pick an FSDP config (fsdp1, fsdp2)")
    label = {"DEEPSPEED": "DeepSpeed", "FSDP": "FSDP", "MULTI_GPU": "multi-GPU"}.get(engine)
    if label and gpus == 0:
        out.append(f"cockpit.launcher.config {name}: {label} needs GPUs and this machine has none — "
                   "use kind: torchrun for several CPU processes, or run on a GPU machine")
    elif gpus and spec["num_processes"] > gpus:
        out.append(f"cockpit.launcher.num_processes {spec['num_processes']} is more than this machine's "
                   f"{gpus} GPU(s) — set num_processes: {gpus}")
    return out


def resolved_accelerate_config(spec: dict[str, Any], mixed_precision: str) -> str:
    """The chosen accelerate config with this run's process count, one machine and its precision
    filled in; kept in the run folder as `accelerate.yaml`."""
    import yaml

    data = accelerate_settings(Path(spec["config_file"]))
    data.update(num_processes=spec["num_processes"], num_machines=1, machine_rank=0,
                mixed_precision=mixed_precision)
    return f"# from {spec['config_file']}, resolved by cockpit\n" + yaml.safe_dump(data, sort_keys=True)


def check(launcher: Any) -> dict[str, Any]:
    """The `cockpit.launcher` section, checked; returns it with defaults filled in. Every problem
    is named at once, one line each."""
    if launcher is None:
        launcher = {}
    if not isinstance(launcher, dict):
        raise CockpitError("cockpit.launcher must be a mapping like {kind: accelerate, num_processes: 2}")
    from cockpit.run import slurm

    allowed = set(slurm.KEYS) | {"config"} if launcher.get("kind") == "slurm" else set(LOCAL_KEYS)
    problems = [f"cockpit.launcher.{k}: unknown key — use {', '.join(sorted(allowed))}"
                for k in sorted(set(launcher) - allowed)]
    n = launcher.get("num_processes", 1)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        problems.append(f"cockpit.launcher.num_processes must be a whole number ≥ 1 (got {n!r})")
        n = 1
    has_config = bool(launcher.get("config") or launcher.get("config_file"))
    kind = launcher.get("kind") or ("accelerate" if n > 1 or has_config else "python")
    if kind not in KINDS:
        problems.append(f"cockpit.launcher.kind must be one of {', '.join(KINDS)} (got {kind!r})")
    if kind == "python" and n > 1:
        problems.append("cockpit.launcher.num_processes > 1 needs kind: torchrun or accelerate")
    cfg = None
    try:
        cfg = _config_path(launcher)
    except CockpitError as exc:
        problems.append(str(exc))
    extra = launcher.get("args") or []
    if not isinstance(extra, list) or not all(isinstance(a, (str, int, float)) for a in extra):
        problems.append("cockpit.launcher.args must be a list of extra `accelerate launch` flags")
        extra = []
    spec = {"kind": kind, "num_processes": n, "config_file": str(cfg) if cfg else None,
            "args": [str(a) for a in extra]}
    if kind == "slurm":
        try:
            spec.update(slurm.check(launcher))
        except CockpitError as exc:
            problems.extend(str(exc).splitlines())
    elif not problems:
        problems.extend(machine_problems(spec))
    if problems:
        raise CockpitError("\n".join(problems))
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
