"""Commands that start, follow, stop and resume runs: run (preset, TRL config or -- COMMAND), migrate,
runs, rename, archive, watch, stop, resume."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cockpit.cli.common import runs_dir as _runs_dir
from cockpit.errors import CockpitError
from cockpit.run import RUN_DIR_ENV


def _follow(run, args: argparse.Namespace) -> int:
    print(run.path)
    if not args.wait:
        return 0
    from cockpit.cli.watch import watch

    state = watch(run, sys.stderr if args.quiet else sys.stdout)
    return 0 if state == "finished" else 1


def cmd_run_script(args: argparse.Namespace) -> int:
    """`cockpit run [--wait] [--name N] -- COMMAND...`: any training command, unchanged."""
    import os

    from cockpit.launch import plan as launch
    from cockpit.launch.script import prepare_script

    if args.preset or args.set or args.trainer:
        raise CockpitError("a script run takes its settings from the command after `--` — drop the "
                           "preset, --set and --trainer, or drop the command")
    env = {}
    for item in args.env or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CockpitError(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    launcher = {}
    if args.launcher:
        from cockpit.config.presets import parse_value

        for item in args.launcher:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CockpitError(f"--launcher {item!r}: expected KEY=VALUE, e.g. --launcher kind=slurm")
            launcher[key.strip()] = parse_value(value)
    if args.dry_run:
        import shlex

        print(f"# in {os.getcwd()}\n{shlex.join(args.command)}")
        return 0
    alerts = None
    if args.alerts:
        import yaml

        from cockpit.config.presets import safe_load

        try:
            alerts = safe_load(Path(args.alerts).read_text(encoding="utf-8")) or {}
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise CockpitError(f"--alerts {args.alerts}: cannot read it ({exc}) — give a YAML file with "
                               "notify: and alerts:") from None
        if not isinstance(alerts, dict):
            raise CockpitError(f"--alerts {args.alerts}: expected a mapping with notify: and alerts:")
    run = prepare_script(args.command, cwd=Path.cwd(), runs_dir=_runs_dir(args), name=args.name, env=env,
                         launcher=launcher or None, alerts=alerts)
    from cockpit.alerts.alerter import user_alerts

    broken: list[str] = []
    user_alerts(broken)  # a broken ~/.config/cockpit/alerts.yaml is named at launch, as for a preset
    for line in broken:
        print(f"cockpit: note: {line}", file=sys.stderr)
    launch.launch_prepared(run)
    return _follow(run, args)


def _trainer_and_config(args: argparse.Namespace) -> tuple[str, str | None]:
    """`cockpit run PRESET`, `cockpit run sft recipe.yaml`, `--trainer sft`, `--set trainer=sft`."""
    trainer = args.trainer
    for item in args.set or []:
        key, _, value = item.partition("=")
        if key.strip() == "trainer":
            trainer = value.strip()
    if args.config:
        if trainer and trainer != args.preset:
            raise CockpitError(f"two trainers given: {args.preset} and {trainer} — name one")
        return args.config, args.preset
    if not args.preset:
        raise CockpitError("nothing to run — give a preset (`cockpit run demo-sft`), a TRL config with its "
                           "trainer (`cockpit run sft recipe.yaml`), or a command (`cockpit run -- python train.py`)")
    return args.preset, trainer


def _sft_data_lines(plan) -> None:
    """SFT: what max_length cuts (and how full packed rows are), measured with TRL's own preparation."""
    from cockpit.findings import sft_data

    if not sft_data.is_sft(plan.spec.name):
        return
    if sft_data.turned_off(plan.preset.cockpit.get("doctor")):
        print("# data: not measured (the preset's cockpit.doctor.sft_data is false)")
        return
    try:
        probe = sft_data.probe(sft_data.request_for(plan.preset.trl, plan.preset.cockpit,
                                                    plan.spec.to_json(with_fields=False)))
    except CockpitError as exc:
        print(f"# data: {exc}")
        return
    print(f"# data: {sft_data.truncation_line(probe)}")
    packing = sft_data.packing_line(probe)
    if packing:
        print(f"# data: {packing}")


def cmd_run(args: argparse.Namespace) -> int:
    if args.command:
        return cmd_run_script(args)
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.config.validate import validate
    from cockpit.launch import plan as launch

    ref, trainer = _trainer_and_config(args)
    preset = apply_overrides(load_preset(ref, trainer=trainer), args.set or [])
    if args.dry_run:
        plan = validate(preset)
        from cockpit.files import dump_yaml

        cfg = plan.preset.to_dict()
        print("# run.yaml")
        print(dump_yaml(cfg), end="")
        from cockpit.config.launcher import check as check_launcher
        from cockpit.launch import launchers as launcher
        from cockpit.launch import slurm

        spec = check_launcher(plan.preset.cockpit.get("launcher"))
        if spec.kind == "slurm":
            run_dir = _runs_dir(args).resolve() / "RUN_DIR"
            print("# the Slurm job script (slurm.sbatch in the run folder)")
            print(slurm.sbatch_script(run_dir=run_dir, chdir=run_dir, job_name=plan.preset.name, launcher=spec,
                                      task=launcher.runner_argv(run_dir, spec),
                                      distributed=launcher.slurm_engine(spec),
                                      env={RUN_DIR_ENV: str(run_dir)}))
        print("# command")
        print("python -m cockpit.runner RUN_DIR")
        if plan.spec.cli_command:
            print(f"trl {plan.spec.cli_command} --config RUN_DIR/trl.yaml")
        for w in plan.warnings:
            print(f"# warning: {w}")
        _sft_data_lines(plan)
        return 0
    plan = validate(preset)
    for w in plan.warnings:
        print(f"cockpit: note: {w}", file=sys.stderr)
    run = launch.launch_plan(plan, _runs_dir(args), args.name)
    return _follow(run, args)


def cmd_migrate(args: argparse.Namespace) -> int:
    """A corrected copy of a recipe config for the installed TRL, and what could not be mapped.

    `--for script` (a project's own script: only what TRL/transformers renamed) or `--for trl-cli`
    (TRL's CLI and cockpit presets); left out, chosen from what the config holds, and said."""
    from cockpit.cli.trainers import registry_for
    from cockpit.config.migrate import SCRIPT, choose_target, migrate, script_mode_hint
    from cockpit.config.presets import dump_yaml, find_preset, safe_load
    from cockpit.trainers.knowledge import guess_trainer_from_keys
    from cockpit.trainers.registry import known_config_keys

    src = find_preset(args.file)
    try:
        obj = safe_load(src.read_text(encoding="utf-8-sig"))
    except Exception as exc:  # noqa: BLE001 - one line, whatever the YAML error
        raise CockpitError(f"{src}: cannot read it as YAML ({exc}) — fix the syntax") from None
    if not isinstance(obj, dict):
        raise CockpitError(f"{src}: not a mapping of keys to values")
    registry = registry_for(args)
    trainer = args.trainer or obj.get("trainer")
    guessed = ""
    if not trainer:
        trainer, signs = guess_trainer_from_keys(list(obj))
        if trainer is None:
            seen = "; ".join(f"{name}: {', '.join(keys)}" for name, keys in signs.items())
            choices = ", ".join(s.name for s in registry.trainers if not s.experimental)
            raise CockpitError(f"{src}: which trainer is it for? "
                               + (f"Its keys point to more than one ({seen}) " if signs else
                                  "None of its keys tells ")
                               + f"— give --trainer ({choices}; `cockpit trainers` lists all)")
        guessed = f"{trainer} (guessed from {', '.join(signs[trainer])}; --trainer picks another)"
    spec = registry.get(str(trainer))
    known = known_config_keys(spec)
    target, why = choose_target(obj, known)
    if args.target:
        target, why = args.target, "as asked"
    out = Path(args.output) if args.output else src.with_name(src.stem + ".migrated.yaml")
    m = migrate(obj, known, target=target, template_dir=out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    for name, text in m.files.items():
        (out.parent / name).write_text(text, encoding="utf-8")
    reader = "a project's own script" if target == SCRIPT else "TRL's CLI and cockpit presets"
    out.write_text(f"# {src.name}, migrated by cockpit for TRL's {spec.name} trainer, for {reader}\n"
                   + dump_yaml(m.config), encoding="utf-8")
    print(out)
    if guessed:
        print(f"  trainer: {guessed}")
    other = "--for trl-cli writes it for TRL's CLI" if target == SCRIPT else \
        "--for script writes it for a project's own script"
    print(f"  for {target}: {why} ({other} instead)")
    for line in m.changed:
        print(f"  changed: {line}")
    if target == SCRIPT:
        own = m.kept + [k for k in m.unmapped if "." not in k]
        if own:
            print(f"  kept: {', '.join(own)} — the script's own keys, left as they were")
        print(f"Run that script under the cockpit: {script_mode_hint(out)}")
        return 0
    for key, why_not in m.unmapped.items():
        print(f"  not mapped: {key} — {why_not}")
    project = [k for k in m.unmapped if "." not in k]
    if project:
        print(f"These keys belong to a project's own script, not to TRL's {spec.name}: {', '.join(project)}.\n"
              f"Run that script under the cockpit instead: {script_mode_hint(src)}")
        return 1
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from cockpit.run.manage import archive_dir
    from cockpit.run.summaries import age_of, run_summaries
    from cockpit.text import one_line

    where = archive_dir(_runs_dir(args)) if args.archived else _runs_dir(args)
    rows = run_summaries(where)
    # Only a script run can have several Trainers: its summary says so (status.json, read for it).
    trainers = {r.name: _script_trainers(Path(r.path)) for r in rows if r.script and not r.error}
    if args.json:
        print(json.dumps([{**r.to_dict(), **({"trainers": trainers[r.name]} if trainers.get(r.name) else {})}
                          for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no {'archived ' if args.archived else ''}runs in {_runs_dir(args)}")
        return 0
    width = max(9, *(len(r.state_label) for r in rows))
    print(f"{'name':40} {'state':{width}} {'trainer':12} {'step':>11} {'age':>7}")
    for r in rows:
        if r.error:  # a damaged folder is named, and the others are listed all the same
            print(f"cockpit: {one_line(r.name)}: {one_line(r.error)}", file=sys.stderr)
        step = f"{r.step if r.step is not None else '-'}/{r.max_steps or '?'}"
        print(f"{one_line(r.name)[:40]:40} {one_line(r.state_label):{width}} {one_line(r.trainer)[:12]:12} "
              f"{step:>11} {age_of(r.created, time.time()):>7}")
        segments = trainers.get(r.name) or []
        for i, seg in enumerate(segments):  # a script's several Trainers, each its own line
            done = f"{seg['step'] if seg['step'] is not None else '-'}/{seg['max_steps'] or '?'}"
            label = f"  Trainer {i + 1} of {len(segments)}"
            print(f"{label:40} {'':{width}} {one_line(seg['trainer'])[:12]:12} {done:>11}"
                  + (f"  {one_line(seg['output_dir'])}" if seg["output_dir"] else ""))
        if r.journal_note:
            print(f"  ! {one_line(r.journal_note)}")
    return 0


def _script_trainers(path: Path) -> list[dict] | None:
    """A script run's Trainers, each {trainer, step, max_steps, output_dir}, when it built more than
    one (one Trainer is the run's own row); None otherwise, or when its folder cannot be read."""
    from cockpit.launch.script import script_segments
    from cockpit.run.folder import RunFolder
    from cockpit.run.section import script_command

    try:
        run = RunFolder(path)
        if script_command(run) is None:  # a preset run, or not a script's: its status says, no YAML read
            return None
        segments = script_segments(run)
    except (OSError, ValueError, CockpitError):
        return None
    if len(segments) < 2:
        return None
    return [{"trainer": s.trainer or "?", "step": s.step, "max_steps": s.max_steps,
             "output_dir": str(s.output_dir) if s.output_dir else None} for s in segments]


def cmd_rename(args: argparse.Namespace) -> int:
    """`cockpit rename RUN NEW_NAME`: a finished run under a new name, its paths moved with it."""
    from cockpit.run.manage import rename_run
    from cockpit.run.summaries import resolve_run
    from cockpit.text import one_line

    run = rename_run(resolve_run(args.run, _runs_dir(args)), args.new_name)
    print(one_line(run.path))
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    """`cockpit archive RUN...` (out of every list, into the runs folder's .archive/), and with
    --undo back. Each run that cannot go is named on its own line; the others go."""
    from cockpit.run.manage import archive_dir, archive_run, unarchive_run
    from cockpit.run.summaries import resolve_run
    from cockpit.text import one_line

    runs_dir = _runs_dir(args)
    failed = 0
    for ref in args.runs:
        try:
            if args.undo:
                run = unarchive_run(resolve_run(ref, archive_dir(runs_dir)))
            else:
                run = archive_run(resolve_run(ref, runs_dir))
        except CockpitError as exc:
            print(f"cockpit: {one_line(str(exc))}", file=sys.stderr)
            failed += 1
            continue
        print(one_line(run.path))
    return 1 if failed else 0


def cmd_watch(args: argparse.Namespace) -> int:
    from cockpit.cli.watch import watch
    from cockpit.run.summaries import resolve_run

    run = resolve_run(args.run, _runs_dir(args))
    state = watch(run, follow=not args.no_follow)
    return 0 if state in ("finished", "running", "starting", "stopping", "stopped") else 1


def cmd_stop(args: argparse.Namespace) -> int:
    from cockpit.launch.plan import stop
    from cockpit.run.summaries import resolve_run
    from cockpit.text import one_line

    if args.force and getattr(args, "finish_script", False):
        raise CockpitError("--finish-script goes with a stop that saves, not with --force — drop one")
    run = resolve_run(args.run, _runs_dir(args))
    if args.force:
        status = stop(run, save=False, grace_s=args.grace)
        print(f"{one_line(run.name)}: {status.state}")
    else:
        from cockpit.run.section import script_section

        finish = bool(getattr(args, "finish_script", False))
        stop(run, save=True, finish_script=finish)
        said = f"{one_line(run.name)}: asked to save a checkpoint and stop when the step in progress ends"
        if script_section(run) is not None:
            said += ("; the script then goes on past train() to its own ending" if finish else
                     "; the script ends there: nothing after its train() runs (no final save, evaluate or "
                     "push_to_hub) — `cockpit resume` runs it to its end; --finish-script lets it go on instead")
        print(said)
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from cockpit.launch.plan import resume
    from cockpit.run.summaries import resolve_run
    from cockpit.text import one_line

    notes: list[str] = []
    run = resume(resolve_run(args.run, _runs_dir(args)), args.set or [], notes)
    for note in notes:
        print(f"cockpit: {one_line(note)}", file=sys.stderr)
    print(one_line(run.path))
    if args.wait:
        from cockpit.cli.watch import watch

        # Follow the attempt just started, to its own end (the journal holds the earlier ones).
        attempt = run.read_status().attempt
        return 0 if watch(run, from_attempt=attempt) == "finished" else 1
    return 0
