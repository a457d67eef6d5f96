"""Commands that open a view: the TUI (home, demo, attach, replay), export and serve."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cockpit.cli.common import runs_dir as _runs_dir


def cmd_demo(args: argparse.Namespace) -> int:
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.launch import plan as launch

    preset = apply_overrides(load_preset(args.preset), args.set or [])
    run = launch.launch(preset, _runs_dir(args))
    if args.headless:
        print(run.path)
        from cockpit.cli.watch import watch

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
    from cockpit.metrics.replay_loader import prefetch
    from cockpit.metrics.sources import check_path
    from cockpit.run.summaries import resolve_run_or_path
    from cockpit.ui import run_app

    paths = [resolve_run_or_path(p, _runs_dir(args)) for p in args.paths]
    for p in paths:
        check_path(p)  # a missing or unusable path is one line here, before the UI opens
    for p in paths:  # parsed in a child while Textual is imported and the app composed
        prefetch(str(p))
    return run_app(mode="replay", paths=[str(p) for p in paths], runs_dir=str(_runs_dir(args)))


def cmd_export(args: argparse.Namespace) -> int:
    from cockpit.metrics.export import export
    from cockpit.run.summaries import resolve_run_or_path

    warnings: list[str] = []
    colors = None
    if args.png:  # the colours of the theme the TUI shows (the one last picked)
        from cockpit.ui.colors import theme_palette

        colors = theme_palette()
    done = export(resolve_run_or_path(args.path, _runs_dir(args)), csv_out=args.csv, png_out=args.png,
                  completions_out=args.completions, steps=args.steps, warnings=warnings, colors=colors)
    from cockpit.text import one_line

    if "completions" in done:
        print(f"{one_line(args.completions)}: {done['completions']} completions")
    for line in dict.fromkeys(warnings):  # rows that could not be read are named, never left out in silence
        print(f"cockpit: warning: {one_line(line)}", file=sys.stderr)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The same app in a browser (textual-serve); each browser tab runs its own cockpit process.
    Locked by a token, the page's own Origin and localhost: see cockpit/cli/serve.py."""
    import shlex

    from cockpit.cli.serve import serve
    from cockpit.errors import CockpitError

    if not 1 <= args.max_sessions <= 1000:
        raise CockpitError(f"--max-sessions {args.max_sessions}: give a number from 1 to 1000")
    command = shlex.join([sys.executable, "-m", "cockpit.cli", "--runs-dir", str(_runs_dir(args))])
    return serve(command, host=args.host, port=args.port, max_sessions=args.max_sessions)
