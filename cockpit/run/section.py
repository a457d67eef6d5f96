"""run.yaml's `cockpit:` section, typed: `CockpitSection` says every key the section may hold and
what each one is, refuses the others by name (every problem at once, one line each), and is what
every reader of a run's section gets (`cockpit_section(run)`), never the raw mapping.

The keys other models own are kept as written here and checked there: `launcher` by
`config.launcher.LauncherSpec`, `alerts` and `notify` by `alerts.rules` and `alerts.notify` (their
floors are above this one). `cockpit schema cockpit` prints the JSON Schema made from this model.

This module is not in the hook's bundle (`cockpit.hook.bundle`): the hook runs on the user's Python
with the standard library only and never reads the section; `run/folder.py`, which the bundle
carries, keeps the raw `RunFolder.config()` and does not import this."""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import SCRIPT_TRAINER, RunFolder

DEFAULT_GRACE_S = 10.0
"""Seconds between SIGTERM and SIGKILL on a forced stop, unless `stop_grace_s` says otherwise."""


def _words(value: Any) -> Any:
    """A list of scalars as strings (a command's `--lr 1e-5` may come back from YAML as a number)."""
    if isinstance(value, (list, tuple)) and all(isinstance(w, (str, int, float)) and not isinstance(w, bool)
                                                for w in value):
        return tuple(str(w) for w in value)
    return value


def _names(value: Any) -> Any:
    """One name or a list of them."""
    return [value] if isinstance(value, str) else value


def _env(value: Any) -> Any:
    """`{NAME: value}`, each value as the process will see it (a string)."""
    if isinstance(value, dict) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                       for v in value.values()):
        return {str(k): str(v) for k, v in value.items()}
    return value


def _grace(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"must be a number of seconds, 0 or more (got {value!r})")
    return float(value)


class TrainArgs(BaseModel):
    """`cockpit.script.train_args`: what `cockpit resume SCRIPT_RUN --set` asked of one Trainer of the
    script, which the hook sets on its arguments at train() (`cockpit.hook.apply_train_args`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    segment: int = Field(ge=0)
    """The Trainer it is for: the n-th the script builds."""
    set: dict[str, int | float] = Field(default_factory=dict)
    """TrainingArguments fields and their values (`launch.plan.SCRIPT_SETTABLE`)."""


class ScriptSection(BaseModel):
    """`cockpit.script` of a script run (`cockpit run -- CMD`): the command, unchanged, and where it was given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: Annotated[tuple[str, ...], BeforeValidator(_words), Field(min_length=1)]
    cwd: str = "."
    """The folder the command was given in (and runs in); relative paths it reports are from here."""
    launch_env: str | None = None
    """The id its launch environment is kept under (`run/secrets.py`), so a resume runs as the launch did."""
    train_args: TrainArgs | None = None
    """What a resume with --set asked of one of its Trainers."""


class CockpitSection(BaseModel):
    """The `cockpit:` section of a preset and of a run's run.yaml, with its defaults filled in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = Field(default=None, description="run name prefix (default: the preset's file name)")
    description: str | None = Field(default=None, description="one line shown in the preset list")
    models: dict[str, str | None] = Field(
        default_factory=dict,
        description="extra models: ref_model, reward_model, value_model, teacher_model (paths or hub ids)")
    reward_funcs: Annotated[list[str], BeforeValidator(_names)] = Field(
        default_factory=list,
        description="reward functions: TRL built-in names, dotted import paths or path/file.py:function")
    dataset: dict[str, Any] = Field(
        default_factory=dict,
        description="split (e.g. 'train[:500]'), eval_split, columns (rename map old: new), data_files")
    completions: dict[str, Any] = Field(
        default_factory=dict,
        description="periodic samples for trainers that do not sample: every_steps, num_prompts, max_new_tokens")
    launcher: dict[str, Any] | None = Field(
        default=None,
        description="how to start the trainer: kind (python, torchrun, accelerate, slurm), num_processes, config "
        "(zero3, fsdp2, ... or a file); slurm: partition, nodes, gpus_per_node, time, account, sbatch, setup")
    alerts: Any = Field(
        default=None,
        description="rules the supervisor checks with nobody attached: {metric: loss, above: 5, for: 3, do: [notify]}")
    notify: Any = Field(
        default=None, description="where notify goes: webhook, ntfy (URLs) and command; values may be env:NAME")
    builtin_alerts: bool | None = Field(
        default=None, description="false turns the built-in rules (NaN loss, stalls, disk, trainer family) off")
    stop_grace_s: Annotated[float, BeforeValidator(_grace)] = Field(
        default=DEFAULT_GRACE_S, description="seconds between SIGTERM and SIGKILL on a forced stop")
    env: Annotated[dict[str, str], BeforeValidator(_env)] = Field(
        default_factory=dict, description="environment variables for the trainer process")
    doctor: dict[str, Any] = Field(
        default_factory=dict,
        description="the supervisor's checks: hang (factor, floor_s, first_step_s), weights: false, sft_data: "
        "false (off in --dry-run too), end_wait_s (how long the run's end waits for them, 8 s)")
    sample: dict[str, Any] = Field(
        default_factory=dict,
        description="cockpit sample and the Checkpoints tab: device (cpu, the default; cuda:N; auto: a GPU no "
        "training uses), max_memory (e.g. 8GB), max_new_tokens")
    script: ScriptSection | None = Field(
        default=None, description="a script run's command, its folder and launch environment (`cockpit run` writes it)")
    in_code: bool = Field(
        default=False, description="a run `CockpitCallback()` made in a plain `python train.py`: the script is its "
        "own owner (`hook/public.py` writes it)")


COCKPIT_OWN = ("script", "in_code")
"""The keys only the cockpit writes (a script run's), never a preset."""
PRESET_KEYS = {k: f.description or "" for k, f in CockpitSection.model_fields.items() if k not in COCKPIT_OWN}
"""The keys a preset's `cockpit:` section may hold, each with what it is for."""


def section_problems(raw: Any, *, keys: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """Every problem of a `cockpit:` mapping at once, as (the key it is about, the line naming it and
    the fix); [] for a good one. `keys`: the keys allowed (default: all of the model's)."""
    if raw is None:
        return []
    if not isinstance(raw, dict):
        return [("cockpit", "the cockpit: section must be a mapping like {name: my-run, launcher: {kind: accelerate}}")]
    allowed = list(keys if keys is not None else CockpitSection.model_fields)
    out: list[tuple[str, str]] = []
    for key in raw:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" — did you mean 'cockpit.{near[0]}'?" if near else f" — known: {', '.join(allowed)}"
            out.append((f"cockpit.{key}", f"unknown key 'cockpit.{key}'{hint}"))
    try:
        CockpitSection.model_validate({k: v for k, v in raw.items() if k in allowed})
    except ValidationError as exc:
        for err in exc.errors(include_url=False, include_input=False):
            where = ".".join(["cockpit", *map(str, err["loc"])])
            msg = str(err["msg"]).removeprefix("Value error, ")
            out.append((f"cockpit.{err['loc'][0]}" if err["loc"] else "cockpit", f"{where}: {msg}"))
    return out


def parse_section(raw: Any, *, where: str = "cockpit") -> CockpitSection:
    """A `cockpit:` mapping, typed; CockpitError naming every problem at once, one line each."""
    problems = section_problems(raw)
    if problems:
        raise CockpitError("\n".join(f"{where}: {line}" if where != "cockpit" else line for _, line in problems))
    return CockpitSection.model_validate(raw or {})


def cockpit_section(run: RunFolder, *, strict: bool = False) -> CockpitSection:
    """The run's `cockpit:` section, typed, from `RunFolder.config()` (the one door to run.yaml).
    A missing or broken run.yaml, or a section with a problem, is the defaults; with `strict` a
    problem is one CockpitError naming the file and every problem (the supervisor and resume ask so)."""
    try:
        return parse_section(run.config(strict=strict).get("cockpit"), where=str(run.run_yaml))
    except CockpitError:
        if strict:
            raise
        return CockpitSection()


def script_section(run: RunFolder) -> ScriptSection | None:
    """run.yaml's `cockpit.script` for a script run, else None."""
    return cockpit_section(run).script


def script_command(run: RunFolder) -> list[str] | None:
    """A script run's command (run.yaml's `cockpit.script.command`), or None. Only the run.yaml
    of a run whose status.json names the trainer SCRIPT_TRAINER is read: a list of a thousand
    preset runs parses none of their YAML."""
    try:
        if run.read_status().trainer != SCRIPT_TRAINER:
            return None
    except CockpitError:
        return None
    script = script_section(run)
    return list(script.command) if script is not None else None


def output_dir(run: RunFolder, section: CockpitSection | None = None) -> Path | None:
    """Where the trainer writes its checkpoints, the one answer: a preset run's `output_dir`
    (run.yaml, relative to the run folder, where the runner runs; the run's output/ when it names
    none), read where the folder is now (`RunFolder.own_path`); a script run's as its trainer
    reported it (the newest `run_started` naming one, `reported_path`), None until then."""
    script = (section or cockpit_section(run)).script
    if script is None:
        found = run.config().get("output_dir")
        return run.own_path(str(found)) if found else run.output
    reported = None
    for rec in journal.read_all(run.events)[0]:
        if rec.kind == journal.RUN_STARTED and rec.data.get("output_dir"):
            reported = str(rec.data["output_dir"])
    return None if reported is None else reported_path(run, script, reported)


def reported_path(run: RunFolder, script: ScriptSection | None, reported: str) -> Path:
    """A path the trainer reported (an output_dir, a checkpoint): a relative one is from where it
    ran — a script's folder, or the run folder for a preset run (the runner runs there)."""
    path = Path(reported)
    if path.is_absolute():
        return path
    return Path(script.cwd) / path if script is not None else run.path / path
