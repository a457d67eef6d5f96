"""The command line. Every user mistake is one line on stderr (one per problem when validation
finds several) and exit code 2."""

from __future__ import annotations

import argparse
import os
import sys

from cockpit.cli.agent import add_parsers as add_agent_parsers
from cockpit.cli.checkpoints import add_parsers as add_checkpoint_parsers
from cockpit.cli.common import JSON_HELP, RUNS_DIR_HELP
from cockpit.cli.findings import cmd_findings
from cockpit.cli.lossmask import cmd_lossmask
from cockpit.cli.runs import (
    cmd_archive,
    cmd_migrate,
    cmd_rename,
    cmd_resume,
    cmd_run,
    cmd_runs,
    cmd_stop,
    cmd_watch,
)
from cockpit.cli.schema import add_parsers as add_schema_parsers
from cockpit.cli.serve import MAX_SESSIONS
from cockpit.cli.trainers import cmd_fields, cmd_trainers
from cockpit.cli.views import cmd_attach, cmd_demo, cmd_export, cmd_replay, cmd_serve, cmd_tui
from cockpit.errors import CockpitError
from cockpit.text import printable

PYTHON_HELP = ("the Python of your project's env (e.g. .venv/bin/python): read its TRL, not this cockpit's "
               "(a light install has none)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cockpit", description="A terminal cockpit for TRL training.")
    p.add_argument("--runs-dir", help=RUNS_DIR_HELP)
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
    r.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS,
                   help="folder the run is made in (default: $COCKPIT_RUNS_DIR or ./runs)")
    r.add_argument("--name", help="run name prefix (default: the preset's name)")
    r.add_argument("--wait", action="store_true", help="follow the run; exit 0 only if it finished")
    r.add_argument("--quiet", action="store_true", help="with --wait: progress to stderr")
    r.add_argument("--dry-run", action="store_true", help="print the resolved config and command")
    r.set_defaults(func=cmd_run)

    lm = sub.add_parser("lossmask", help="SFT: training rows with the tokens the loss trains on marked, and "
                        "what max_length cuts")
    lm.add_argument("preset", help="a preset file or name")
    lm.add_argument("--rows", type=int, default=3, help="rows to show (default 3)")
    lm.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a key")
    lm.add_argument("--json", action="store_true", help=JSON_HELP)
    lm.set_defaults(func=cmd_lossmask)

    mg = sub.add_parser("migrate", help="a copy of a recipe config for the installed TRL")
    mg.add_argument("file", help="the recipe config (YAML) to migrate, e.g. open-r1's recipes/.../config.yaml")
    mg.add_argument("-o", "--output", help="where to write (default: FILE.migrated.yaml beside it)")
    mg.add_argument("--trainer", help="the trainer it is for, when the file has no `trainer:` key "
                                      "(else guessed from its keys)")
    mg.add_argument("--for", dest="target", choices=("trl-cli", "script"),
                    help="who reads the copy: TRL's CLI and cockpit presets, or a project's own script "
                         "(only what TRL/transformers renamed is renamed); default: from the config's keys")
    mg.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    mg.set_defaults(func=cmd_migrate)

    rs = sub.add_parser("runs", help="list runs")
    rs.add_argument("--json", action="store_true", help=JSON_HELP)
    rs.add_argument("--archived", action="store_true", help="list the archived runs instead")
    rs.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    rs.set_defaults(func=cmd_runs)

    rn = sub.add_parser("rename", help="give a run that is not live a new name (its folder moves)")
    rn.add_argument("run", help="run folder, name or name prefix")
    rn.add_argument("new_name", help="the new name: letters, digits, '.', '_' and '-'")
    rn.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    rn.set_defaults(func=cmd_rename)

    ar = sub.add_parser("archive", help="move runs that are not live out of the lists (into RUNS/.archive)")
    ar.add_argument("runs", nargs="+", metavar="run", help="run folders, names or name prefixes")
    ar.add_argument("--undo", action="store_true", help="bring archived runs back (`cockpit runs --archived` "
                    "lists them)")
    ar.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    ar.set_defaults(func=cmd_archive)

    w = sub.add_parser("watch", help="follow a run in a plain terminal")
    w.add_argument("run", help="run folder or name")
    w.add_argument("--no-follow", action="store_true", help="print what is there and exit")
    w.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    w.set_defaults(func=cmd_watch)

    fd = sub.add_parser("findings", help="what the run's data says is wrong, with the evidence")
    fd.add_argument("path", help="a run name or folder, output dir, checkpoint or trainer_state.json")
    fd.add_argument("--json", action="store_true", help="the finding records as JSON")
    fd.add_argument("--export-prompts", metavar="FILE",
                    help="write the prompts whose whole group got one reward (JSON lines), to filter a dataset")
    fd.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    fd.set_defaults(func=cmd_findings)

    t = sub.add_parser("trainers", help="list the trainers the installed TRL ships")
    t.add_argument("--json", action="store_true", help=JSON_HELP)
    t.add_argument("--all", action="store_true", help="also trainers this TRL lacks")
    t.add_argument("--refresh", action="store_true", help="rebuild the schema cache")
    t.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    t.set_defaults(func=cmd_trainers)

    f = sub.add_parser("fields", help="the config keys a trainer takes, with TRL's help")
    f.add_argument("trainer", help="a trainer name, e.g. sft, dpo, grpo (`cockpit trainers` lists them)")
    f.add_argument("field", nargs="?", help="show this one field in full (type, default, "
                   "choices, TRL's whole help)")
    f.add_argument("--search", help="filter by name or help text (name matches first)")
    f.add_argument("--json", action="store_true", help=JSON_HELP)
    f.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
    f.set_defaults(func=cmd_fields)

    s = sub.add_parser("stop", help="stop a run (default: save a checkpoint first)")
    s.add_argument("run", help="run folder, name or name prefix")
    s.add_argument("--save", action="store_true", default=True,
                   help="save a checkpoint when the step in progress ends, then stop (default)")
    s.add_argument("--finish-script", action="store_true",
                   help="a script run: after the checkpoint, let the script go on past train() to its own "
                        "ending (its final save, evaluate, push_to_hub); by default it ends at the checkpoint")
    s.add_argument("--force", action="store_true", help="SIGTERM the run's process group, then SIGKILL")
    s.add_argument("--grace", type=float, default=None, help="seconds before SIGKILL (default 10)")
    s.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    s.set_defaults(func=cmd_stop)

    rm = sub.add_parser("resume", help="continue a run from its newest complete checkpoint")
    rm.add_argument("run", help="run folder, name or name prefix")
    rm.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="change run.yaml first, e.g. --set max_steps=200 to train a finished run "
                         "further")
    rm.add_argument("--wait", action="store_true",
                    help="follow the new attempt; exit 0 only if it finished")
    rm.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    rm.set_defaults(func=cmd_resume)

    d = sub.add_parser("demo", help="launch the offline demo run and open it")
    d.add_argument("--preset", default="demo-sft", help="demo preset (demo-sft, demo-dpo, demo-grpo)")
    d.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a key of the demo preset, e.g. --set max_steps=20")
    d.add_argument("--headless", action="store_true", help="no TUI: follow it in plain text")
    d.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    d.set_defaults(func=cmd_demo)

    a = sub.add_parser("attach", help="open a live or finished run in the TUI, or follow an output dir")
    a.add_argument("run", help="a run (folder, name or prefix), or the output_dir of a training started elsewhere")
    a.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    a.set_defaults(func=cmd_attach)

    rp = sub.add_parser("replay", help="open trainer_state.json files, checkpoints, output dirs or runs")
    rp.add_argument("paths", nargs="+", help="paths, or run names / name prefixes in the runs dir")
    rp.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    rp.set_defaults(func=cmd_replay)

    ex = sub.add_parser("export", help="metrics as CSV (and the default panels as PNG)")
    ex.add_argument("path", help="a path, or a run name / name prefix in the runs dir")
    ex.add_argument("--csv", help="CSV file to write")
    ex.add_argument("--png", help="PNG file to write")
    ex.add_argument("--completions", metavar="OUT", help="every logged step's completions: .jsonl, .csv or .parquet")
    ex.add_argument("--steps", metavar="A:B", help="with --completions: only these steps")
    ex.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    ex.set_defaults(func=cmd_export)

    sv = sub.add_parser("serve", help="publish the TUI to a browser (localhost unless told)")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the "
                         "network)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    sv.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, metavar="N",
                    help=f"browser tabs served at once, each a cockpit process (default {MAX_SESSIONS})")
    sv.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    sv.set_defaults(func=cmd_serve)

    add_checkpoint_parsers(sub)
    add_schema_parsers(sub)
    add_agent_parsers(sub)
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
            print(f"cockpit: {printable(clip_line(line))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        try:
            sys.stdout.close()
        except OSError:
            pass
        return 0
    except OSError as exc:  # a full disk, no inodes, a read-only folder: the system's word, one line
        print(f"cockpit: {printable(os_error_line(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:
        if os.environ.get("COCKPIT_DEBUG"):
            raise
        print(f"cockpit: {printable(f'{type(exc).__name__}: {exc}'[:500])} — this is a bug in cockpit; "
              "COCKPIT_DEBUG=1 shows where", file=sys.stderr)
        return 1


MAX_LINE_CHARS = 1000
"""The longest error line printed: one that quotes what the user gave (a 120 KB --set key) is cut."""


def clip_line(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}… ({len(line):,} characters)"


def os_error_line(exc: OSError) -> str:
    """An OSError as one line with its fix: 'cannot write /runs/x: no space left on the device
    (ENOSPC) — free some space or give --runs-dir'."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    where = " ".join(f"{f}" for f in (exc.filename, exc.filename2) if f)
    fixes = {errno.ENOSPC: "free some space, or give --runs-dir on another disk (out of inodes looks the same: "
                           "`df -i` tells)",
             errno.EDQUOT: "your disk quota is used up: free some space, or give --runs-dir elsewhere",
             errno.EROFS: "that filesystem is read-only: give --runs-dir on a writable one",
             errno.EACCES: "check the folder's owner and mode, or give --runs-dir",
             errno.EPERM: "check the folder's owner and mode (and `lsattr`), or give --runs-dir",
             errno.ENAMETOOLONG: "give a shorter name or path"}
    fix = fixes.get(exc.errno or 0, "")
    what = (exc.strerror or str(exc)).rstrip(".")
    return (f"{where}: " if where else "") + what + (f" ({name})" if name else "") + (f" — {fix}" if fix else "")


if __name__ == "__main__":
    sys.exit(main())
