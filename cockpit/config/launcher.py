"""The launcher and script-command checks: what `cockpit.launcher` may hold (python, torchrun,
accelerate with a config TRL ships or the user's own, Slurm's fields) and what a script run's
command needs before anything starts. Validation, the setup form's draft and the launching code
all ask here, so a launcher is judged one way.

`cockpit.launch` builds the command lines from what these checks return."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from cockpit.errors import CockpitError
from cockpit.run.folder import RunFolder

KINDS = ("python", "torchrun", "accelerate", "slurm")
LOCAL_KEYS = ("kind", "num_processes", "config", "config_file", "args")

SLURM_KEYS = ("kind", "num_processes", "config_file", "args", "partition", "nodes", "gpus_per_node",
        "cpus_per_task", "time", "account", "sbatch", "setup", "port")
DEFAULT_PORT = 29500



def _fix(message: str) -> PydanticCustomError:
    """A check's own line, said as it is (the line names the key and the fix)."""
    return PydanticCustomError("launcher", message)


def _whole(value: Any, least: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= least


def _count(key: str, least: int) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not _whole(value, least):
            raise _fix(f"cockpit.launcher.{key} must be a whole number ≥ {least} (got {value!r})")
        return value
    return check


def _kind(value: Any) -> Any:
    if value not in KINDS:
        raise _fix(f"cockpit.launcher.kind must be one of {', '.join(KINDS)} (got {value!r})")
    return value


def _args(value: Any) -> tuple[str, ...]:
    value = value or []
    if not isinstance(value, list) or not all(isinstance(a, (str, int, float)) for a in value):
        raise _fix("cockpit.launcher.args must be a list of extra `accelerate launch` flags")
    return tuple(str(a) for a in value)


def _config_file(ref: Any) -> str | None:
    """`config` (a TRL config name or a path) or `config_file` (a path), resolved to the file."""
    if not ref:
        return None
    shipped = trl_accelerate_configs()
    if str(ref) in shipped:
        return str(shipped[str(ref)])
    path = Path(str(ref)).expanduser()
    if not path.is_file():
        names = ", ".join(shipped) or "none found: is trl installed?"
        raise _fix(f"cockpit.launcher.config {ref}: no such file and not a config TRL ships ({names}) — "
                   "name one of those or give an accelerate config made with `accelerate config`")
    return str(path)


def _text(key: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is not None and not isinstance(value, (str, int)):
            raise _fix(f"cockpit.launcher.{key} must be a string (got {value!r})")
        return None if value is None else str(value)
    return check


def _sbatch(value: Any) -> tuple[str, ...]:
    value = value or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise _fix("cockpit.launcher.sbatch must be a list of extra #SBATCH options, e.g. ['--qos=high']")
    return tuple(x.removeprefix("#SBATCH").strip() for x in value)


def _setup(value: Any) -> str:
    value = value or ""
    if not isinstance(value, str):
        raise _fix("cockpit.launcher.setup must be a block of shell lines (module loads, venv activation)")
    return value


_SAID = ("num_processes", "kind", "config_file", "args", "nodes", "gpus_per_node", "cpus_per_task", "port",
         "partition", "time", "account", "sbatch", "setup")
"""The order a launcher's problems are said in: the count, the kind, then as a preset reads."""


class LauncherSpec(BaseModel):
    """`cockpit.launcher`, checked, with every default filled in: what `check` returns and every
    launching site reads (never the raw mapping). The one place that says what a valid launcher is:
    each field's check says its own line with the fix, and `model_validate` of the mapping a preset
    holds names every problem at once. The Slurm fields keep their defaults on other kinds (where
    they are unknown keys)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Annotated[Literal["python", "torchrun", "accelerate", "slurm"], BeforeValidator(_kind)] = "python"
    num_processes: Annotated[int, BeforeValidator(_count("num_processes", 1))] = 1
    """Processes in all (per node on Slurm)."""
    config_file: Annotated[str | None, BeforeValidator(_config_file)] = None
    """The accelerate config: a file TRL ships (named by `config`) or the user's own, resolved."""
    args: Annotated[tuple[str, ...], BeforeValidator(_args)] = ()
    """Extra flags for `accelerate launch` / torchrun."""
    nodes: Annotated[int, BeforeValidator(_count("nodes", 1))] = 1
    gpus_per_node: Annotated[int, BeforeValidator(_count("gpus_per_node", 0))] = 0
    cpus_per_task: Annotated[int | None, BeforeValidator(lambda v: v if v is None else _count("cpus_per_task", 0)(v))] \
        = None
    port: Annotated[int, BeforeValidator(_count("port", 1))] = DEFAULT_PORT
    partition: Annotated[str | None, BeforeValidator(_text("partition"))] = None
    time: Annotated[str | None, BeforeValidator(_text("time"))] = None
    account: Annotated[str | None, BeforeValidator(_text("account"))] = None
    sbatch: Annotated[tuple[str, ...], BeforeValidator(_sbatch)] = ()
    """Extra `#SBATCH` options, without the prefix."""
    setup: Annotated[str, BeforeValidator(_setup)] = ""
    """Shell lines run on each node before the launcher (module loads, venv activation)."""

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: Any, handler: ModelWrapValidatorHandler[LauncherSpec]) -> LauncherSpec:
        """A preset's mapping: keys the kind does not take, the kind (when not given: accelerate
        for several processes or a config, else python), and what only the fields together say;
        every problem at once, in the order a preset reads, as one error of one line each."""
        if not isinstance(data, dict):
            return handler(data)
        raw = dict(data)
        allowed = set(SLURM_KEYS) | {"config"} if raw.get("kind") == "slurm" else set(LOCAL_KEYS)
        problems = [f"cockpit.launcher.{k}: unknown key — use {', '.join(sorted(allowed))}"
                    for k in sorted(set(raw) - allowed, key=str)]
        n = raw.get("num_processes", 1)
        n = n if _whole(n, 1) else 1
        given = {k: v for k, v in raw.items() if k in allowed and k != "config"}
        given["kind"] = raw.get("kind") or ("accelerate" if n > 1 or raw.get("config") or raw.get("config_file")
                                            else "python")
        ref = raw.get("config") or raw.get("config_file")
        if ref or "config_file" in given:
            given["config_file"] = ref
        together = ["cockpit.launcher.num_processes > 1 needs kind: torchrun or accelerate"] \
            if given["kind"] == "python" and n > 1 else []
        try:
            spec = handler(given)
        except ValidationError as exc:
            lines = sorted(((_SAID.index(str(e["loc"][0])) if e["loc"] and e["loc"][0] in _SAID else len(_SAID),
                             e["msg"] if e["type"] == "launcher" else
                             f"cockpit.launcher.{'.'.join(map(str, e['loc']))}: {e['msg']}") for e in exc.errors()),
                           key=lambda line: line[0])
            first = [m for at, m in lines if at <= _SAID.index("kind")]
            rest = [m for at, m in lines if at > _SAID.index("kind")]
            raise _fix("\n".join(problems + first + together + rest)) from None
        if problems or together:
            raise _fix("\n".join(problems + together))
        if spec.kind == "slurm" and "num_processes" not in raw and spec.gpus_per_node:
            # on Slurm num_processes is per node: unless given, one process for each GPU it asks for
            spec = spec.model_copy(update={"num_processes": spec.gpus_per_node})
        return spec


_LAUNCHERS = {"python", "python3", "accelerate", "torchrun", "deepspeed", "trl", "uv", "srun"}

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


def accelerate_settings(path: Path) -> dict[str, Any]:
    import yaml

    from cockpit.files import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CockpitError(f"{path}: not a readable accelerate config ({exc}) — fix it or pick another") from None
    return data if isinstance(data, dict) else {}


def machine_problems(spec: LauncherSpec, gpus: int | None = None) -> list[str]:
    """What this machine lacks for an accelerate config: the deepspeed package, GPUs, enough GPUs."""
    if spec.kind != "accelerate" or not spec.config_file:
        return []
    gpus = gpu_count() if gpus is None else gpus
    engine = str(accelerate_settings(Path(spec.config_file)).get("distributed_type") or "").upper()
    name = Path(spec.config_file).stem
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
    elif gpus and spec.num_processes > gpus:
        out.append(f"cockpit.launcher.num_processes {spec.num_processes} is more than this machine's "
                   f"{gpus} GPU(s) — set num_processes: {gpus}")
    return out


def slurm_missing() -> str | None:
    """None when sbatch, squeue and scancel are on PATH, else what is missing (for a one-line error).
    Asked when a Slurm run is validated, not only when it is launched."""
    import shutil

    missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c) is None]
    return None if not missing else f"{', '.join(missing)} not found — Slurm's client commands must be on PATH"


def slurm_problem(spec: LauncherSpec) -> str | None:
    """A launcher that asks for Slurm on a machine without it: the line saying so, with the fix."""
    if spec.kind != "slurm":
        return None
    missing = slurm_missing()
    return None if missing is None else (f"cockpit.launcher.kind is slurm, but {missing} — run cockpit on a "
                                         "Slurm login node, or drop kind: slurm to run here")


def run_launcher(run: RunFolder, launcher: Any) -> LauncherSpec:
    """A run's launcher (run.yaml's `cockpit.launcher`), checked, its config_file read where the run
    folder is now (`RunFolder.own_path`: launch keeps the accelerate.yaml it resolved in the folder,
    by its name; an older run.yaml names it by an absolute path, maybe of the folder's old place)."""
    if isinstance(launcher, dict) and launcher.get("config_file"):
        launcher = {**launcher, "config_file": str(run.own_path(str(launcher["config_file"])))}
    return check(launcher)


def check(launcher: Any) -> LauncherSpec:
    """The `cockpit.launcher` section, checked against `LauncherSpec`; returns it with defaults
    filled in. Every problem is named at once, one line each, then what this machine lacks for
    it. A spec already checked is returned as it is."""
    if isinstance(launcher, LauncherSpec):
        return launcher
    if launcher is None:
        launcher = {}
    if not isinstance(launcher, dict):
        raise CockpitError("cockpit.launcher must be a mapping like {kind: accelerate, num_processes: 2}")
    try:
        spec = LauncherSpec.model_validate(launcher)
    except ValidationError as exc:
        raise CockpitError("\n".join(e["msg"] for e in exc.errors())) from None
    problems = machine_problems(spec) if spec.kind != "slurm" else []
    if problems:
        raise CockpitError("\n".join(problems))
    return spec


def gpu_count() -> int:
    return len(list(Path("/dev").glob("nvidia[0-9]*")))


def default_name(command: list[str]) -> str:
    """A run name from the command: the script's stem (`train.py` → train), `-m trl.scripts.sft` →
    sft, `trl sft` → trl-sft."""
    words = [w for w in command if w]
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words):
            return words[i + 1].rsplit(".", 1)[-1]
        if w.endswith(".py"):
            return Path(w).stem
    if len(words) >= 2 and Path(words[0]).name == "trl" and not words[1].startswith("-"):
        return f"trl-{words[1]}"
    first = next((Path(w).name for w in words if Path(w).name not in _LAUNCHERS and not w.startswith("-")),
                 None)
    return first or "script"


def check_command(command: list[str], cwd: Path) -> list[str]:
    """Every problem with a command at once (empty, no such working folder, program not found)."""
    problems = []
    if not command:
        problems.append("no command after `--` — e.g. cockpit run -- python train.py")
    if not cwd.is_dir():
        problems.append(f"working folder {cwd}: no such folder — run from an existing folder")
    if command:
        import shutil

        prog = command[0]
        found = (cwd / prog).is_file() if os.sep in prog else shutil.which(prog) is not None
        if not found:
            problems.append(f"{prog}: no such program on PATH — check the command, or give its full path")
    return problems


_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)*)?$")
_PYTHON_PROBE = ("import importlib.util, sys; print(sys.version.split()[0]);"
                 " sys.exit(0 if importlib.util.find_spec('transformers') else 3)")


def command_python(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str | None:
    """The Python a command will train on: `python…` itself, or the interpreter on the shebang line
    of `accelerate`, `torchrun`, `trl`, `deepspeed` (console scripts of the env that has them);
    None when the command names no Python this can find (a shell script, `uv run`, ...)."""
    import shutil

    if not command:
        return None
    search = (env or {}).get("PATH", os.environ.get("PATH"))
    prog = command[0]
    path = str(cwd / prog) if os.sep in prog else shutil.which(prog, path=search)
    if path is None:
        return None
    if _PYTHON_NAME.match(Path(prog).name):
        return path
    if Path(prog).name not in {"accelerate", "torchrun", "trl", "deepspeed"}:
        return None
    try:
        with open(path, "rb") as fh:
            first = fh.readline(400).decode("utf-8", "replace").strip()
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1], path=search)
    return words[0] if words and _PYTHON_NAME.match(Path(words[0]).name) else None


def check_command_python(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """A script trains on its own Python, which must import transformers for the hook to watch it:
    one line naming the Python found and how to point the cockpit at the right one."""
    import subprocess

    python = command_python(command, cwd, env)
    if python is None or not cwd.is_dir():
        return []
    try:
        proc = subprocess.run([python, "-c", _PYTHON_PROBE], cwd=cwd, env={**os.environ, **(env or {})},
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []  # it will say for itself what is wrong with it when it runs
    if proc.returncode != 3:
        return []
    version = proc.stdout.strip() or "?"
    return [f"{python} (Python {version}) cannot import transformers, so there is no training to watch — "
            "give the command your training env's Python (cockpit run -- /path/to/env/bin/python train.py) "
            "or activate that env before `cockpit run`"]


_PROCS = {"--nproc_per_node": "torchrun", "--nproc-per-node": "torchrun", "--num_processes": "accelerate",
          "--num-processes": "accelerate"}
_NODES = ("--nnodes", "--num_machines", "--num-machines")


def asked_world_size(command: list[str]) -> tuple[int, str] | None:
    """How many processes a script command asks its launcher for (torchrun's --nproc_per_node ×
    --nnodes, accelerate launch's --num_processes), with the flag as written; None when it names
    no number (a plain python command, `auto`, a count left to a config file)."""
    procs: int | None = None
    nodes = 1
    said = ""
    for i, arg in enumerate(command):
        flag, eq, value = arg.partition("=")
        if not eq:
            value = command[i + 1] if i + 1 < len(command) else ""
        if flag in _PROCS and value.isdigit():
            procs, said = int(value), f"{flag} {value}"
        elif flag in _NODES and value.isdigit():
            nodes = int(value)
    return (procs * nodes, said) if procs else None
