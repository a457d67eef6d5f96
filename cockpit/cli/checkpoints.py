"""Commands on a run's checkpoints: checkpoints (the listing), sample (answers, one model or two
side by side) and merge (a LoRA checkpoint into a full model). Sampling and merging run in a
process of their own (cockpit.runner.sample / .merge); this side never imports torch."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from cockpit.cli.common import JSON_HELP, RUNS_DIR_HELP
from cockpit.cli.common import runs_dir as _runs_dir
from cockpit.errors import CockpitError
from cockpit.text import one_line, printable


def _found(args: argparse.Namespace):
    from cockpit.metrics.checkpoints import list_run_checkpoints
    from cockpit.run.summaries import resolve_run_or_path

    return list_run_checkpoints(resolve_run_or_path(args.run, _runs_dir(args)))


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from cockpit.launch import sampler as smp
    from cockpit.launch.script import earlier_trainers
    from cockpit.metrics.checkpoints import table

    found = _found(args)
    earlier = earlier_trainers(found)
    if args.json:
        listed = []
        for i, one in enumerate(earlier):  # each checkpoint with the key that picks it: `t1:checkpoint-24`
            d = one.to_dict()
            d["checkpoints"] = [{**c.to_dict(), "key": smp.trainer_key(i + 1, c.name)} for c in one.checkpoints]
            listed.append(d)
        print(json.dumps({**found.to_dict(), "earlier_trainers": listed}, indent=2))
        return 0
    for i, one in enumerate([*earlier, found]):
        base = f"  (base: {one.base_model})" if one.base_model else ""
        if earlier:
            # how --checkpoint names one of them: an earlier Trainer's by its tN: key, the last one's by its step
            pick = smp.trainer_key(i + 1, "STEP") if i < len(earlier) else "STEP"
            print(one_line(f"# Trainer {i + 1} of {len(earlier) + 1}: {one.output_dir}{base}  "
                           f"(--checkpoint {pick})"))
        else:
            print(one_line(f"# {one.output_dir}{base}"))
        for line in table(one):
            print(line)
    return 0


def side_by_side(left: tuple[str, str], right: tuple[str, str], width: int) -> list[str]:
    """Two labelled answers in two columns, each wrapped to half the terminal."""
    col = max(16, (width - 3) // 2)

    def wrap(text: str) -> list[str]:
        out: list[str] = []
        for para in (text or "").splitlines() or [""]:
            out.extend(textwrap.wrap(para, col, replace_whitespace=False, drop_whitespace=False) or [""])
        return out

    a, b = wrap(left[1]), wrap(right[1])
    lines = [f"{left[0][:col]:<{col}} │ {right[0][:col]}", f"{'─' * col}─┼─{'─' * col}"]
    for i in range(max(len(a), len(b))):
        lines.append(f"{(a[i] if i < len(a) else ''):<{col}} │ {b[i] if i < len(b) else ''}")
    return lines


def cmd_sample(args: argparse.Namespace) -> int:
    from cockpit.launch import sampler as smp
    from cockpit.launch.script import earlier_trainers
    from cockpit.metrics import samples as kept

    if args.prompts and args.prompt:
        raise CockpitError("give --prompt or --prompts, not both")
    prompts: list[Any] = args.prompt or (smp.read_prompts_file(args.prompts) if args.prompts else [])
    early = smp.request_problems(max_new_tokens=args.max_new_tokens, temperature=args.temperature, prompts=prompts)
    if early:  # numbers and prompts given by the user are checked before any run is read
        raise CockpitError("\n".join(early))
    found = _found(args)
    python, why = smp.python_and_why(found, args.python)
    earlier = earlier_trainers(found)  # a script's several Trainers: `--checkpoint t1:STEP` picks the first's
    choices = [smp.choose(found, args.checkpoint, "a", earlier)]
    if args.vs is not None:
        choices.append(smp.choose(found, args.vs, "b", earlier))
    if not prompts:
        prompts = smp.run_prompts(found)
        if not prompts:
            raise CockpitError(f"{args.run}: the run logged no sample prompts — give some: --prompt TEXT "
                               "(repeatable) or --prompts FILE")
    request = smp.sample_request(found, choices, prompts, id="cli", chat=args.chat, device=args.device,
                                 max_memory=args.max_memory, max_new_tokens=args.max_new_tokens,
                                 temperature=args.temperature, seed=args.seed)
    if request.note:
        print(f"cockpit: note: {one_line(request.note)}", file=sys.stderr)
    session = kept.new_session(found.run) if found.run is not None and not args.no_keep else None
    # Loading a model takes seconds (8-10 for a small one on a CPU): say what is awaited, on stderr,
    # so the answers alone are on stdout.
    print(f"cockpit: starting the sampler ({one_line(python)}: {why})…", file=sys.stderr, flush=True)
    sampler = smp.Sampler.for_run(found, python)
    loading: dict[str, float] = {}
    width = shutil.get_terminal_size((120, 40)).columns
    ended_by: list[int] = []

    def show(ev: smp.SamplerEvent, got: smp.Collected) -> None:
        """Each event as it comes, on stderr; a prompt's answers on stdout once every model gave one."""
        if isinstance(ev, smp.Note):
            print(f"cockpit: note: {one_line(ev.text)}", file=sys.stderr)
        elif isinstance(ev, smp.Loading):
            loading[ev.slot] = time.monotonic()
            print(f"cockpit: loading {one_line(ev.label or ev.slot)}…", file=sys.stderr, flush=True)
        elif isinstance(ev, smp.Loaded):
            took = time.monotonic() - loading.pop(ev.slot, time.monotonic())
            where = f" on {ev.device}" if ev.device else ""
            print(f"cockpit: {one_line(ev.label or ev.slot)} loaded{where} in {took:.1f} s, generating…",
                  file=sys.stderr, flush=True)
        elif isinstance(ev, smp.Answer) and len(got.answers[ev.index]) == len(choices):
            _print_answers(prompts[ev.index], ev.index, [c.label for c in choices], got.answers[ev.index], width)

    def _ended(signum: int, _frame: object) -> None:
        # SIGHUP (the terminal went away) or SIGTERM: the sampler goes with us, never left running.
        ended_by.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, _ended) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        got = smp.collect(sampler, request, session=session, each=show)
    except KeyboardInterrupt:  # Ctrl+C, or SIGHUP/SIGTERM above
        sampler.kill()
        if ended_by:
            return 128 + ended_by[0]
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sampler.close()  # a second close (after kill) does nothing more
    if got.failed:
        raise CockpitError(one_line(smp.missing_module_hint(got.failed, python, why)))
    return 0


def _print_answers(prompt: Any, index: int, labels: list[str], answers: dict[str, str], width: int) -> None:
    """One prompt's answers: alone, or two side by side. The model's bytes never reach the terminal raw."""
    shown = prompt if isinstance(prompt, str) else json.dumps(prompt)
    print(f"── prompt {index + 1}: {printable(shown)}")
    if len(labels) == 1:
        print(printable(answers["a"]))
    else:
        for line in side_by_side((one_line(labels[0]), printable(answers["a"])),
                                 (one_line(labels[1]), printable(answers["b"])), width):
            print(line)
    print()


def cmd_merge(args: argparse.Namespace) -> int:
    from cockpit.launch import sampler as smp
    from cockpit.launch.script import earlier_trainers

    found = _found(args)
    python, why = smp.python_and_why(found, args.python)
    choice = smp.choose(found, args.checkpoint, "a", earlier_trainers(found))
    if choice.spec["kind"] != "lora":
        raise CockpitError(f"{choice.label} holds a full model, not a LoRA adapter — nothing to merge; load it "
                           f"as it is: from_pretrained({choice.spec['path']!r})")
    out = Path(args.output).expanduser()
    _check_merge_output(out)
    argv = smp.sampler_command(python, "merge", choice.spec["path"], choice.spec["base"],
                               str(out), "--tokenizer", choice.spec["tokenizer"])
    if args.push:
        argv += ["--push", args.push]
    log = smp.sampler_log(found, "merge.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    start = log.stat().st_size if log.exists() else 0
    from cockpit.files import open_own

    with os.fdopen(open_own(log, os.O_WRONLY | os.O_APPEND), "ab") as err:  # never through a link
        code = subprocess.call(argv, env=smp.sampler_env(), stdin=subprocess.DEVNULL, stderr=err)
    if code == 0:
        return 0
    with open(log, "rb") as f:
        f.seek(start)
        said = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.startswith("cockpit: ")]
    line = said[-1].removeprefix("cockpit: ") if said else f"the merger ended (exit {code})"
    if not said:  # an import that failed before the merger could say a word: the traceback's last line
        with open(log, "rb") as f:
            f.seek(start)
            tail = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        if tail and "No module named" in tail[-1]:
            line = tail[-1].strip()
    line = smp.missing_module_hint(line, python, why)
    if code == 2 and said:  # a known problem and its fix: exit 2, as the CLI's own
        raise CockpitError(line)
    failed = CockpitError(f"{line} — the traceback is in {log}")
    failed.exit_code = 1  # the merger failed (its exit 1, or a signal): not a problem the user caused
    raise failed


def _check_merge_output(out: Path) -> None:
    """`merge -o OUT` must be a new (or empty) folder in a writable place: said in one line before
    any model is loaded. The merge itself writes beside OUT and renames when whole."""
    import errno
    import os
    import tempfile

    if out.exists() and not out.is_dir():
        raise CockpitError(f"-o {out}: a file is there — give a new folder with -o")
    if out.is_dir() and any(out.iterdir()):
        raise CockpitError(f"-o {out}: the folder is not empty — give a new folder with -o")
    parent = next((p for p in (out.parent, *out.parent.parents) if p.exists()), Path("/"))
    if not parent.is_dir():
        raise CockpitError(f"-o {out}: {parent} is a file, not a folder — give a new folder with -o")
    try:
        os.rmdir(tempfile.mkdtemp(dir=parent, prefix=".cockpit-merge-probe-"))
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, "")
        raise CockpitError(f"-o {out}: cannot write in {parent} ({exc.strerror}{', ' + name if name else ''}) — "
                           "give a folder on a writable disk with -o") from None


SAMPLER_PYTHON_HELP = ("the Python of the env the model was trained in (e.g. .venv/bin/python), for an output "
                       "folder trained outside the cockpit; default: the Python a script run trained with, else "
                       "this cockpit's")


def add_parsers(sub: Any) -> None:
    from cockpit.launch import DEFAULT_NEW_TOKENS

    c = sub.add_parser("checkpoints", help="a run's checkpoints: step, loss, eval loss, size, complete, LoRA or full")
    c.add_argument("run", help="run folder, name or prefix, or a training's output_dir")
    c.add_argument("--json", action="store_true", help=JSON_HELP)
    c.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    c.set_defaults(func=cmd_checkpoints)

    s = sub.add_parser("sample", help="answers from a checkpoint (or two side by side) on prompts")
    s.add_argument("run", help="run folder, name or prefix, or a training's output_dir")
    s.add_argument("--checkpoint", default="latest", metavar="STEP|latest|base",
                   help="which model: a checkpoint's step (24 or checkpoint-24), latest (default), base (the "
                        "model it started from), or an earlier Trainer's of a script, tN:STEP (as `cockpit "
                        "checkpoints` lists them)")
    s.add_argument("--vs", metavar="STEP|latest|base", help="a second model, side by side, same seed")
    s.add_argument("--prompt", action="append", metavar="TEXT", help="a prompt (repeatable); default: the run's own")
    s.add_argument("--prompts", metavar="FILE", help="prompts: one a line, a JSON list, or JSON lines")
    s.add_argument("--chat", action="store_true", help="wrap each prompt as a user turn in the chat template")
    s.add_argument("--max-new-tokens", type=int, default=None, metavar="N",
                   help="tokens each answer may take (default: the run's cockpit.sample.max_new_tokens, else "
                        f"{DEFAULT_NEW_TOKENS})")
    s.add_argument("--temperature", type=float, default=0.0, metavar="T", help="0 (default): greedy")
    s.add_argument("--seed", type=int, default=0, metavar="S", help="random seed, the same for both models "
                   "with --vs (default 0)")
    s.add_argument("--device", help="cpu, cuda:N or auto (a free GPU); default cockpit.sample.device or cpu")
    s.add_argument("--max-memory", metavar="SIZE", help="refuse models needing more than this, e.g. 8GB")
    s.add_argument("--no-keep", action="store_true", help="do not keep the answers in the run's samples/")
    s.add_argument("--python", metavar="PATH", help=SAMPLER_PYTHON_HELP)
    s.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    s.set_defaults(func=cmd_sample)

    m = sub.add_parser("merge", help="a LoRA checkpoint merged into its base, saved as a full model")
    m.add_argument("run", help="run folder, name or prefix, or a training's output_dir")
    m.add_argument("--checkpoint", default="latest", metavar="STEP|latest",
                   help="which LoRA checkpoint: its step (24 or checkpoint-24), latest (default), or an earlier "
                        "Trainer's of a script, tN:STEP (as `cockpit checkpoints` lists them)")
    m.add_argument("-o", "--output", required=True, metavar="DIR", help="a new (or empty) folder for the merged "
                   "model")
    m.add_argument("--push", metavar="REPO", help="then upload it to the Hugging Face Hub")
    m.add_argument("--python", metavar="PATH", help=SAMPLER_PYTHON_HELP)
    m.add_argument("--runs-dir", dest="runs_dir", default=argparse.SUPPRESS, help=RUNS_DIR_HELP)
    m.set_defaults(func=cmd_merge)
