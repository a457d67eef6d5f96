"""Script mode: any training command under the cockpit, unchanged.

`cockpit run -- python train.py --lr 1e-5` (or `trl sft --config x.yaml`, or `accelerate launch
... grpo.py --config recipe.yaml`) gets the same run folder, supervisor, journal, states and
stop / resume as a preset run. run.yaml records what was asked:

    trainer: script
    cockpit:
      name: train
      script: {command: [python, train.py, --lr, 1e-5], cwd: /where/it/was/given, launch_env: <id>}
      env: {KEY: value}           # overrides on top of the launch environment; a token as secret:<id>/KEY

The launch environment and secret values are kept outside the folder (`cockpit.run.secrets`): a
resume from another shell runs with the environment the run was launched with.

The supervisor starts the command in that folder with the hook's site folder first on PYTHONPATH
(`cockpit.hook`), so every transformers Trainer the process builds writes the journal; the
command's own output goes to stdout.log like a preset run's.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.config.launcher import check as check_launcher
from cockpit.config.launcher import check_command, check_command_python, default_name, slurm_problem
from cockpit.errors import CockpitError
from cockpit.files import dump_yaml, write_atomic
from cockpit.run import journal, secrets
from cockpit.run.folder import RunFolder, Status, checkpoint_step, create_run_folder
from cockpit.run.section import cockpit_section, reported_path, script_section
from cockpit.trainers.knowledge import SCRIPT_TRAINER

if TYPE_CHECKING:
    from cockpit.metrics.checkpoints import CheckpointSet


def prepare_script(command: list[str], *, cwd: Path, runs_dir: Path, name: str | None = None,
                   env: dict[str, str] | None = None, launcher: dict[str, Any] | None = None,
                   alerts: dict[str, Any] | None = None) -> RunFolder:
    """Create the run folder of a script run and write what was asked; start nothing.

    `launcher` may send the command to Slurm (`{kind: slurm, partition: ...}`); on one machine the
    command's own launcher line (python, torchrun, accelerate launch) is kept as given."""
    cwd = cwd.resolve()
    problems = check_command(command, cwd)
    if not problems and not launcher:  # Slurm runs it on a node whose Python this cannot see
        problems = check_command_python(command, cwd, env)
    if alerts is not None:
        from cockpit.alerts.notify import parse_notify
        from cockpit.alerts.rules import parse_rules

        for check, key in ((parse_rules, "alerts"), (parse_notify, "notify")):
            try:
                check(alerts.get(key), where=f"--alerts {key}")
            except CockpitError as exc:
                problems.extend(str(exc).splitlines())
    if launcher:
        if launcher.get("kind") != "slurm":
            problems.append("a script run keeps its own launcher line — cockpit's launcher is only for "
                            "sending it to Slurm: --launcher kind=slurm")
        else:
            try:
                no_slurm = slurm_problem(check_launcher(launcher))
                if no_slurm:
                    problems.append(no_slurm)
            except CockpitError as exc:
                problems.extend(str(exc).splitlines())
    if problems:
        raise CockpitError("\n".join(problems))
    run = create_run_folder(runs_dir.resolve(), name or default_name(command))
    run_id = secrets.new_id()
    try:
        # The launch environment, for resumes from another shell, and the values of secret-looking
        # --env names are kept outside the run folder (`cockpit.run.secrets`): run.yaml names them.
        secrets.keep_launch_env(run_id)
        cockpit: dict[str, Any] = {"name": name or default_name(command),
                                   "script": {"command": list(command), "cwd": str(cwd), "launch_env": run_id}}
        if env:
            cockpit["env"] = secrets.split_env(dict(env), run_id)
        if launcher:
            cockpit["launcher"] = dict(launcher)
        if alerts:  # an --alerts file: {notify: ..., alerts: [...], builtin_alerts: ...}
            from cockpit.alerts.notify import keep_secrets, parse_notify

            for key in ("alerts", "builtin_alerts"):
                if key in alerts:
                    cockpit[key] = alerts[key]
            if alerts.get("notify"):
                cockpit["notify"] = keep_secrets(parse_notify(alerts["notify"]), run_id)
        write_atomic(run.run_yaml, dump_yaml({"trainer": SCRIPT_TRAINER, "cockpit": cockpit}))
        write_script_command(run)
        run.write_status(Status(state="starting", name=run.name, trainer=SCRIPT_TRAINER, host=os.uname().nodename))
        journal.JournalWriter(run.events).close()
    except BaseException:
        import shutil

        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return run


def write_script_command(run: RunFolder, resume_from: Path | None = None, *, scripts_own: bool = False) -> None:
    """command.txt: what the supervisor runs, and the checkpoint a resume continues from (the hook
    hands it to Trainer.train; `scripts_own`: the script passed train() one of its own choosing,
    which the supervisor names here once the trainer said so)."""
    section = cockpit_section(run)
    script = section.script
    lines = ["# what cockpit runs (inside a detached supervisor), unchanged, in its working folder:",
             f"cd {shlex.quote(script.cwd if script else '.')}",
             " ".join([*(f"{k}={shlex.quote(secrets.shown(v))}" for k, v in section.env.items()),
                       shlex.join(script.command if script else [])])]
    if resume_from is not None:
        how = "the script's own choice, which it passed to Trainer.train" if scripts_own else \
            "given to Trainer.train by cockpit's hook"
        lines.insert(1, f"# resumed from {resume_from} ({how})")
    write_atomic(run.command_txt, "\n".join(lines) + "\n")  # replaces a link there, never follows it


@dataclass
class Segment:
    """One Trainer of a script run, across its attempts: the n-th Trainer the script builds."""

    index: int
    output_dir: Path | None = None
    checkpoints: list[Path] = field(default_factory=list)
    """Checkpoints it reported, oldest first (a resumed attempt's after the earlier ones')."""
    owns_output_dir: bool = True
    """No other segment wrote to the same output_dir (its checkpoints are all this one's)."""
    trainer: str = ""
    """Its trainer's name as run_started said it (sft, dpo, grpo, ...)."""
    step: int | None = None
    """The furthest step it logged."""
    max_steps: int | None = None


def script_segments(run: RunFolder) -> list[Segment]:
    """The script's Trainers from the journal, in the order the script builds them: each
    `run_started` names its segment (older journals: 0) and output_dir; the checkpoints reported
    after it are that segment's."""
    script = script_section(run)
    found: dict[int, Segment] = {}
    current: Segment | None = None
    records, _ = journal.read_all(run.events)
    for rec in records:
        if rec.kind == journal.RUN_STARTED:
            raw = rec.data.get("segment", 0)
            index = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else 0
            current = found.setdefault(index, Segment(index))
            current.trainer = str(rec.data.get("trainer") or current.trainer)
            if isinstance(rec.data.get("max_steps"), int):
                current.max_steps = rec.data["max_steps"]
            out = rec.data.get("output_dir")
            if out:
                current.output_dir = reported_path(run, script, str(out))
        elif rec.kind in (journal.METRICS, journal.PROGRESS) and current is not None and isinstance(rec.step, int):
            current.step = rec.step if current.step is None else max(current.step, rec.step)
            if rec.kind == journal.PROGRESS and isinstance(rec.data.get("max_steps"), int):
                current.max_steps = rec.data["max_steps"]
        elif rec.kind == journal.CHECKPOINT and current is not None and rec.data.get("path"):
            ckpt = reported_path(run, script, str(rec.data["path"]))
            if ckpt not in current.checkpoints:
                current.checkpoints.append(ckpt)
    segments = [found[i] for i in sorted(found)]
    dirs: list[Path | None] = [s.output_dir for s in segments if s.output_dir is not None]
    for seg in segments:
        seg.owns_output_dir = dirs.count(seg.output_dir) <= 1
        seg.checkpoints.sort(key=lambda p: -1 if (n := checkpoint_step(p.name)) is None else n)
    return segments




def earlier_trainers(found: CheckpointSet) -> list[CheckpointSet]:
    """A script run with several Trainers: the checkpoints of each earlier one's own output folder
    (a run's `CheckpointSet` is its last Trainer's), oldest Trainer first; [] for anything else.
    `cockpit checkpoints` and the Checkpoints tab list them all."""
    from cockpit.metrics.checkpoints import list_run_checkpoints

    if found.run is None or script_section(found.run) is None:
        return []
    out, seen = [], {found.output_dir}
    for seg in script_segments(found.run):
        if seg.output_dir is None or seg.output_dir in seen or not seg.output_dir.is_dir():
            continue
        seen.add(seg.output_dir)
        out.append(list_run_checkpoints(seg.output_dir))
    return out
