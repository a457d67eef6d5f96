"""The command line. Every user mistake is one line on stderr (one per problem when validation
finds several) and exit code 2."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

from cockpit.errors import CockpitError


def _runs_dir(args: argparse.Namespace) -> Path:
    from cockpit.paths import runs_dir

    return runs_dir(getattr(args, "runs_dir", None))


def _width() -> int:
    """The terminal's width (COLUMNS when set; 80 when there is no terminal)."""
    return shutil.get_terminal_size().columns


def clip(text: str, width: int) -> str:
    """`text` on one line, cut to `width` with "…" — at the last word boundary (a space, or
    the / and | between column names) that keeps at least a third of the room."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    cut = text[:width]  # the character at width-1 gives way to "…"; a boundary there is fine
    at = max(cut.rfind(c) for c in " /|")
    cut = cut[:at] if at >= width // 3 else cut[:width - 1]
    return cut.rstrip(" ,;:-(/|") + "…"


def table(rows: list[list[str]], width: int, *, caps: dict[int, int] | None = None,
          shrink: tuple[int, ...] = (), keep: tuple[int, ...] = (0,),
          last_min: int = 14) -> list[str]:
    """Rows as aligned columns in `width`; the last column takes the room left, cut with "…".

    When that room is under `last_min`, the columns in `shrink` give some up, first one first,
    each down to its longest first word (a cut cell keeps one whole word). Cells of `keep`
    columns (names the user types) are never cut: a longer one pushes the rest of its row on.
    """
    if not rows:
        return []
    cells = [[" ".join(str(c).split()) for c in r] for r in rows]
    n = len(cells[0])
    widths = [max(len(r[i]) for r in cells) for i in range(n - 1)]
    for i, cap in (caps or {}).items():
        widths[i] = min(widths[i], cap)

    def room() -> int:
        return width - sum(widths) - (n - 1)

    for i in shrink:
        if room() >= last_min:
            break
        first_word = max(len(re.split(r"[\s/|]", r[i])[0]) for r in cells)
        floor = min(widths[i], max(12, first_word + 1))
        widths[i] = max(floor, widths[i] - (last_min - room()))
    lines = []
    for r in cells:
        parts, used = [], 0
        for i, w in enumerate(widths):
            text = r[i] if i in keep else clip(r[i], w)
            parts.append(text.ljust(w))
            used += max(w, len(text)) + 1
        parts.append(clip(r[-1], max(1, width - used)))
        lines.append(" ".join(parts).rstrip())
    return lines


def _follow(run, args: argparse.Namespace) -> int:
    print(run.path)
    if not args.wait:
        return 0
    from cockpit.run.watch import watch

    state = watch(run, sys.stderr if args.quiet else sys.stdout)
    return 0 if state == "finished" else 1


def cmd_run_script(args: argparse.Namespace) -> int:
    """`cockpit run [--wait] [--name N] -- COMMAND...`: any training command, unchanged."""
    import os

    from cockpit.run import launch
    from cockpit.run.script import prepare_script

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


def cmd_run(args: argparse.Namespace) -> int:
    if args.command:
        return cmd_run_script(args)
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.config.validate import validate
    from cockpit.run import launch

    ref, trainer = _trainer_and_config(args)
    preset = apply_overrides(load_preset(ref, trainer=trainer), args.set or [])
    if args.dry_run:
        plan = validate(preset)
        from cockpit.config.presets import dump_yaml

        cfg = plan.preset.to_dict()
        print("# run.yaml")
        print(dump_yaml(cfg), end="")
        from cockpit.run import launchers as launcher
        from cockpit.run import slurm

        spec = launcher.check(plan.preset.cockpit.get("launcher"))
        if spec["kind"] == "slurm":
            run_dir = _runs_dir(args).resolve() / "RUN_DIR"
            print("# the Slurm job script (slurm.sbatch in the run folder)")
            print(slurm.sbatch_script(run_dir=run_dir, chdir=run_dir, job_name=plan.preset.name, launcher=spec,
                                      task=launcher.runner_argv(run_dir, spec),
                                      distributed=launcher.slurm_engine(spec),
                                      env={"COCKPIT_RUN_DIR": str(run_dir)}))
        print("# command")
        print("python -m cockpit.runner RUN_DIR")
        if plan.spec.cli_command:
            print(f"trl {plan.spec.cli_command} --config RUN_DIR/trl.yaml")
        for w in plan.warnings:
            print(f"# warning: {w}")
        return 0
    plan = validate(preset)
    for w in plan.warnings:
        print(f"cockpit: note: {w}", file=sys.stderr)
    run = launch.launch_plan(plan, _runs_dir(args), args.name)
    return _follow(run, args)


def cmd_migrate(args: argparse.Namespace) -> int:
    """A corrected copy of a recipe config for the installed TRL, and what could not be mapped."""
    from cockpit.config.migrate import migrate, script_mode_hint
    from cockpit.config.presets import dump_yaml, find_preset, safe_load
    from cockpit.trainers.registry import known_config_keys, load_registry

    src = find_preset(args.file)
    try:
        obj = safe_load(src.read_text(encoding="utf-8-sig"))
    except Exception as exc:  # noqa: BLE001 - one line, whatever the YAML error
        raise CockpitError(f"{src}: cannot read it as YAML ({exc}) — fix the syntax") from None
    if not isinstance(obj, dict):
        raise CockpitError(f"{src}: not a mapping of keys to values")
    trainer = args.trainer or obj.get("trainer")
    if not trainer:
        raise CockpitError(f"{src}: which trainer is it for? — cockpit migrate {args.file} --trainer sft")
    spec = load_registry().get(str(trainer))
    if spec is None:
        raise CockpitError(f"trainer {trainer!r}: not in the installed TRL — `cockpit trainers` lists them")
    out = Path(args.output) if args.output else src.with_name(src.stem + ".migrated.yaml")
    m = migrate(obj, known_config_keys(spec))
    out.parent.mkdir(parents=True, exist_ok=True)
    for name, text in m.files.items():
        (out.parent / name).write_text(text, encoding="utf-8")
    out.write_text(f"# {src.name}, migrated by cockpit for TRL's {spec.name} trainer\n" + dump_yaml(m.config),
                   encoding="utf-8")
    print(out)
    for line in m.changed:
        print(f"  changed: {line}")
    for key, why in m.unmapped.items():
        print(f"  not mapped: {key} — {why}")
    project = [k for k, why in m.unmapped.items() if "." not in k]
    if project:
        print(f"These keys belong to a project's own script, not to TRL's {spec.name}: {', '.join(project)}.\n"
              f"Run that script under the cockpit instead: {script_mode_hint(src)}")
        return 1
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from cockpit.run.summaries import run_summaries
    from cockpit.run.watch import fmt_duration

    rows = run_summaries(_runs_dir(args))
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no runs in {_runs_dir(args)}")
        return 0
    print(f"{'name':40} {'state':9} {'trainer':12} {'step':>11} {'age':>7}")
    for r in rows:
        step = f"{r.step if r.step is not None else '-'}/{r.max_steps or '?'}"
        print(f"{r.name[:40]:40} {r.state:9} {r.trainer[:12]:12} {step:>11} "
              f"{fmt_duration(time.time() - r.created):>7}")
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from cockpit.run.summaries import resolve_run
    from cockpit.run.watch import watch

    run = resolve_run(args.run, _runs_dir(args))
    state = watch(run, follow=not args.no_follow)
    return 0 if state in ("finished", "running", "starting", "stopping", "stopped") else 1


def cmd_trainers(args: argparse.Namespace) -> int:
    from cockpit.trainers.registry import load_registry

    reg = load_registry(refresh=args.refresh)
    specs = reg.all_known() if args.all else reg.trainers
    if args.json:
        print(json.dumps([_spec_json(s) for s in specs], indent=2))
        return 0
    print(f"TRL {reg.trl_version}")
    rows = []
    for s in specs:
        flags = []
        if s.experimental:
            flags.append("experimental")
        if s.cli_command:
            flags.append(f"trl {s.cli_command}")
        if s.needs:
            flags.append(f"needs {s.needs}")
        if not s.available:
            flags.append(s.missing_hint or "not available")
        data = " | ".join("/".join(f) for f in s.data_formats) or "?"
        rows.append([s.name, s.title, data, ", ".join(flags)])
    for line in table([["name", "description", "data columns", "notes"], *rows], _width(),
                      caps={0: 19, 2: 36}, shrink=(2, 1), last_min=18):
        print(line)
    return 0


def _spec_json(s) -> dict:
    return {**s.to_json(with_fields=False), "fields": len(s.fields)}


def cmd_fields(args: argparse.Namespace) -> int:
    from cockpit.trainers.registry import load_registry

    reg = load_registry()
    spec = reg.get(args.trainer)
    if args.field:
        return _show_field(spec, args.field, as_json=args.json)
    fields = list(reg.fields(spec.name))
    if args.search:
        fields = search_fields(fields, args.search)
        if not fields:
            print(f"cockpit: no field matches {args.search!r} — try another word, or "
                  f"`cockpit fields {spec.name}` for all of them", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps([f.__dict__ for f in fields], indent=2, default=str))
        return 0
    rows = [[f.name, str(f.type), str(f.default), f.help or ""] for f in fields]
    for line in table(rows, _width(), caps={0: 28, 1: 16, 2: 12}, shrink=(2, 1), last_min=30):
        print(line)
    return 0


def search_fields(fields: list, query: str) -> list:
    """Fields whose name or help mentions `query`: name matches first (the exact name, a whole
    part of the name, its start, anywhere in it), then help texts where it is a word of its
    own, earliest first, then help texts that merely contain it."""
    q = query.lower().strip()
    word = re.compile(rf"(?<![a-z0-9]){re.escape(q)}(?![a-z0-9])")
    ranked = []
    for order, f in enumerate(fields):
        name, text = f.name.lower(), (f.help or "").lower()
        if name == q:
            rank = (0, 0)
        elif q in name.split("_"):
            rank = (1, 0)
        elif name.startswith(q):
            rank = (2, 0)
        elif q in name:
            rank = (3, 0)
        elif (m := word.search(text)):
            rank = (4, m.start())
        elif q in text:
            rank = (5, text.index(q))
        else:
            continue
        ranked.append((rank, order, f))
    return [f for _, _, f in sorted(ranked, key=lambda t: (t[0], t[1]))]


def _show_field(spec, name: str, *, as_json: bool) -> int:
    """One field in full: type, default, choices, where it comes from, and TRL's whole help."""
    import textwrap

    from cockpit.trainers.registry import suggest_key

    groups = (spec.fields, spec.script_args, spec.model_config, spec.dataset_mixture)
    field = next((f for group in groups for f in group if f.name == name), None)
    if field is None:
        close = suggest_key(spec, name)
        hint = f"did you mean '{close}'? " if close else ""
        from cockpit.errors import CockpitError

        raise CockpitError(f"{spec.name} has no field '{name}' — {hint}`cockpit fields {spec.name} "
                           f"--search WORD` finds one")
    if as_json:
        print(json.dumps(field.to_json(), indent=2, default=str))
        return 0
    width = max(40, _width())
    print(field.name + (f"  ({field.group})" if field.group else ""))
    print(f"  type:     {field.type}")
    print(f"  default:  {field.default!r}" + ("  (computed)" if field.default_factory else ""))
    if field.choices:
        print(f"  choices:  {', '.join(str(c) for c in field.choices)}")
    if field.required:
        print("  required: yes")
    print()
    for para in (field.help or "(no help text)").split("\n\n"):
        print(textwrap.fill(" ".join(para.split()), width=width - 2, initial_indent="  ",
                            subsequent_indent="  "))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from cockpit.run.launch import stop
    from cockpit.run.summaries import resolve_run

    run = resolve_run(args.run, _runs_dir(args))
    if args.force:
        status = stop(run, save=False, grace_s=args.grace)
        print(f"{run.name}: {status.state}")
    else:
        stop(run, save=True)
        print(f"{run.name}: asked to save a checkpoint and stop at the next step")
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from cockpit.run.launch import resume
    from cockpit.run.summaries import resolve_run

    run = resume(resolve_run(args.run, _runs_dir(args)), args.set or [])
    print(run.path)
    if args.wait:
        from cockpit.run.watch import watch

        # Follow the attempt just started, to its own end (the journal holds the earlier ones).
        attempt = run.read_status().attempt
        return 0 if watch(run, from_attempt=attempt) == "finished" else 1
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.run import launch

    preset = apply_overrides(load_preset(args.preset), args.set or [])
    run = launch.launch(preset, _runs_dir(args))
    if args.headless:
        print(run.path)
        from cockpit.run.watch import watch

        return 0 if watch(run) == "finished" else 1
    from cockpit.ui import run_app

    return run_app(mode="live", paths=[str(run.path)], runs_dir=str(_runs_dir(args)))


def cmd_tui(args: argparse.Namespace) -> int:
    from cockpit.ui import run_app

    return run_app(mode="home", paths=[], runs_dir=str(_runs_dir(args)))


def cmd_attach(args: argparse.Namespace) -> int:
    from cockpit.run.summaries import resolve_run
    from cockpit.ui import run_app

    path = Path(args.run).expanduser()
    if path.is_dir() and not (path / "status.json").is_file() and not (path / "events.jsonl").is_file():
        # An output dir a training outside the cockpit writes: followed as files.
        from cockpit.metrics.sources import check_path

        check_path(path)
        return run_app(mode="replay", paths=[str(path)], runs_dir=str(_runs_dir(args)))
    run = resolve_run(args.run, _runs_dir(args))
    return run_app(mode="live", paths=[str(run.path)], runs_dir=str(_runs_dir(args)))


def cmd_replay(args: argparse.Namespace) -> int:
    from cockpit.metrics.sources import check_path
    from cockpit.run.summaries import resolve_run_or_path
    from cockpit.ui import run_app

    paths = [resolve_run_or_path(p, _runs_dir(args)) for p in args.paths]
    for p in paths:
        check_path(p)  # a missing or unusable path is one line here, before the UI opens
    return run_app(mode="replay", paths=[str(p) for p in paths], runs_dir=str(_runs_dir(args)))


def cmd_export(args: argparse.Namespace) -> int:
    from cockpit.metrics.export import export
    from cockpit.run.summaries import resolve_run_or_path

    done = export(resolve_run_or_path(args.path, _runs_dir(args)), csv_out=args.csv, png_out=args.png,
                  completions_out=args.completions, steps=args.steps)
    if "completions" in done:
        print(f"{args.completions}: {done['completions']} completions")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The same app in a browser (textual-serve); each browser tab runs its own cockpit process."""
    import shlex

    from textual_serve.server import Server

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"cockpit: serving on {args.host}: anyone who can reach this port can stop your runs",
              file=sys.stderr)
    command = shlex.join([sys.executable, "-m", "cockpit.cli", "--runs-dir", str(_runs_dir(args))])
    Server(command, host=args.host, port=args.port, title="cockpit").serve()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cockpit", description="A terminal cockpit for TRL training.")
    p.add_argument("--runs-dir", help="folder of runs (default: $COCKPIT_RUNS_DIR or ./runs)")
    sub = p.add_subparsers(dest="cmd")

    r = sub.add_parser("run", help="launch a run (detached): a preset, a TRL config, or -- ANY COMMAND",
                       usage="cockpit run [options] PRESET | TRAINER CONFIG | -- COMMAND...")
    r.add_argument("preset", nargs="?", help="a preset file or name; or a trainer name followed by a TRL config")
    r.add_argument("config", nargs="?", help="a TRL CLI config (with a trainer name before it)")
    r.add_argument("--trainer", help="the trainer of a TRL config that has no `trainer:` key")
    r.add_argument("--env", action="append", metavar="KEY=VALUE", help="script mode: extra environment")
    r.add_argument("--alerts", metavar="FILE", help="script mode: alert rules and notify targets (YAML)")
    r.add_argument("--launcher", action="append", metavar="KEY=VALUE",
                   help="script mode on Slurm: kind=slurm, partition=, nodes=, gpus_per_node=, time=, ...")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a key; dotted keys reach nested sections")
    r.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    r.add_argument("--name", help="run name prefix (default: the preset's name)")
    r.add_argument("--wait", action="store_true", help="follow the run; exit 0 only if it finished")
    r.add_argument("--quiet", action="store_true", help="with --wait: progress to stderr")
    r.add_argument("--dry-run", action="store_true", help="print the resolved config and command")
    r.set_defaults(func=cmd_run)

    mg = sub.add_parser("migrate", help="a copy of a recipe config for the installed TRL")
    mg.add_argument("file")
    mg.add_argument("-o", "--output", help="where to write (default: FILE.migrated.yaml beside it)")
    mg.add_argument("--trainer", help="the trainer it is for, when the file has no `trainer:` key")
    mg.set_defaults(func=cmd_migrate)

    rs = sub.add_parser("runs", help="list runs")
    rs.add_argument("--json", action="store_true")
    rs.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    rs.set_defaults(func=cmd_runs)

    w = sub.add_parser("watch", help="follow a run in a plain terminal")
    w.add_argument("run", help="run folder or name")
    w.add_argument("--no-follow", action="store_true", help="print what is there and exit")
    w.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    w.set_defaults(func=cmd_watch)

    t = sub.add_parser("trainers", help="list the trainers the installed TRL ships")
    t.add_argument("--json", action="store_true")
    t.add_argument("--all", action="store_true", help="also trainers this TRL lacks")
    t.add_argument("--refresh", action="store_true", help="rebuild the schema cache")
    t.set_defaults(func=cmd_trainers)

    f = sub.add_parser("fields", help="the config keys a trainer takes, with TRL's help")
    f.add_argument("trainer")
    f.add_argument("field", nargs="?", help="show this one field in full (type, default, "
                   "choices, TRL's whole help)")
    f.add_argument("--search", help="filter by name or help text (name matches first)")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_fields)

    s = sub.add_parser("stop", help="stop a run (default: save a checkpoint first)")
    s.add_argument("run")
    s.add_argument("--save", action="store_true", default=True,
                   help="save a checkpoint at the next step, then stop (default)")
    s.add_argument("--force", action="store_true", help="SIGTERM the run's process group, then SIGKILL")
    s.add_argument("--grace", type=float, default=None, help="seconds before SIGKILL (default 10)")
    s.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    s.set_defaults(func=cmd_stop)

    rm = sub.add_parser("resume", help="continue a run from its newest complete checkpoint")
    rm.add_argument("run", help="run folder, name or name prefix")
    rm.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="change run.yaml first, e.g. --set max_steps=200 to train a finished run "
                         "further")
    rm.add_argument("--wait", action="store_true",
                    help="follow the new attempt; exit 0 only if it finished")
    rm.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    rm.set_defaults(func=cmd_resume)

    d = sub.add_parser("demo", help="launch the offline demo run and open it")
    d.add_argument("--preset", default="demo-sft", help="demo preset (demo-sft, demo-dpo, demo-grpo)")
    d.add_argument("--set", action="append", metavar="KEY=VALUE")
    d.add_argument("--headless", action="store_true", help="no TUI: follow it in plain text")
    d.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    d.set_defaults(func=cmd_demo)

    a = sub.add_parser("attach", help="open a live or finished run in the TUI, or follow an output dir")
    a.add_argument("run", help="a run (folder, name or prefix), or the output_dir of a training started elsewhere")
    a.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    a.set_defaults(func=cmd_attach)

    rp = sub.add_parser("replay", help="open trainer_state.json files, checkpoints, output dirs or runs")
    rp.add_argument("paths", nargs="+", help="paths, or run names / name prefixes in the runs dir")
    rp.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    rp.set_defaults(func=cmd_replay)

    ex = sub.add_parser("export", help="metrics as CSV (and the default panels as PNG)")
    ex.add_argument("path", help="a path, or a run name / name prefix in the runs dir")
    ex.add_argument("--csv", help="CSV file to write")
    ex.add_argument("--png", help="PNG file to write")
    ex.add_argument("--completions", metavar="OUT", help="every logged step's completions: .jsonl, .csv or .parquet")
    ex.add_argument("--steps", metavar="A:B", help="with --completions: only these steps")
    ex.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    ex.set_defaults(func=cmd_export)

    sv = sub.add_parser("serve", help="publish the TUI to a browser (localhost unless told)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS)
    sv.set_defaults(func=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "run" in argv and "--" in argv[argv.index("run"):]:  # script mode: everything after -- is the command
        cut = argv.index("--", argv.index("run"))
        argv, command = argv[:cut], argv[cut + 1:]
        if not command:
            parser.error("nothing after `--` — e.g. cockpit run -- python train.py")
    args = parser.parse_args(argv)
    if getattr(args, "cmd", None) == "run":
        args.command = command
    func = getattr(args, "func", None) or cmd_tui
    try:
        return int(func(args) or 0)
    except CockpitError as exc:
        for line in str(exc).splitlines() or [""]:  # validation lists every problem, one a line
            print(f"cockpit: {line}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        try:
            sys.stdout.close()
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
