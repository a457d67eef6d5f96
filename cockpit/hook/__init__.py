# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The hook: cockpit inside a training process it did not build (script mode).

`cockpit run -- python train.py ...` starts the user's command unchanged, with
the hook's own folder first on its PYTHONPATH (`cockpit.hook.bundle`: the run
folder's `hook/`, holding a `sitecustomize` and a private copy of this package and
the few stdlib-only modules it needs, never the cockpit's site-packages). That
`sitecustomize` chains to any sitecustomize the user already has, then waits for
`transformers.trainer` to be imported; when it is, `patch_trainer` wraps
`Trainer.__init__` so every trainer the process builds (TRL's included, on every
rank) gets a `CockpitCallback`, and `Trainer.train` so a resume passes the
newest complete checkpoint as `resume_from_checkpoint`.

Nothing here runs unless `COCKPIT_RUN_DIR` names a run folder. Like the runner,
this is training-side code: it imports transformers, and only once the user's
own code has imported it. It runs on the user's Python (3.9 and up).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from cockpit.errors import failure, say
from cockpit.run import RUN_DIR_ENV
from cockpit.trainers import camel_words

RESUME_ENV = "COCKPIT_RESUME_FROM"
TRAIN_ARGS_ENV = "COCKPIT_TRAIN_ARGS"
"""JSON {"segment": N, "set": {field: value}}: what `cockpit resume RUN --set` changes in the N-th
Trainer's arguments when its train() is called (`apply_train_args`)."""
RESUME_SEGMENTS = "resume.json"
"""control/resume.json: {segment: checkpoint} for a resumed script run, one entry per Trainer."""

_state: dict[str, Any] = {"callbacks": [], "atexit": False}


_LAUNCHED = {name: os.environ.get(name) for name in ("RANK", "SLURM_PROCID", "WORLD_SIZE")}
"""What the launcher told this process, read when the hook loads (before the script's own code,
which may change its environment)."""


def _launched(name: str) -> str | None:
    value = _LAUNCHED.get(name) or os.environ.get(name)
    return value if value and value.isdigit() else None


def rank() -> int:
    """This process's global rank under torchrun / accelerate / deepspeed (0 when alone)."""
    for name in ("RANK", "SLURM_PROCID"):
        value = _launched(name)
        if value is not None:
            return int(value)
    return 0


def launched_world_size() -> int:
    """How many processes the launcher started (WORLD_SIZE), 1 when none says."""
    value = _launched("WORLD_SIZE")
    return int(value) if value is not None else 1


def trainer_name(cls: type) -> str:
    """`GRPOTrainer` → grpo, `OnlineDPOTrainer` → online_dpo, transformers' own `Trainer` → trainer.
    A script's own subclass of a TRL trainer (open-r1's, a user's `MyGRPOTrainer`) is named after
    the TRL class it builds on, so the trainer's family (panels, built-in alerts, findings) is known
    as for a preset; the class itself is recorded as `trainer_class`."""
    named = next((c for c in cls.__mro__ if c.__module__.split(".")[0] == "trl" and c.__name__.endswith("Trainer")),
                 cls)
    return "_".join(camel_words(named.__name__.removesuffix("Trainer") or "Trainer")).lower()


def patch_trainer(trainer_cls: Any) -> None:
    """Wrap `Trainer.__init__` and `Trainer.train` once; every subclass goes through them.
    (`trainer_cls` is the user's transformers.Trainer, whose types the hook cannot import.)"""
    if getattr(trainer_cls, "_cockpit_patched", False):
        return
    original_init = trainer_cls.__init__
    original_train = trainer_cls.train

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        try:
            attach(self)
        except Exception as exc:  # noqa: BLE001 - watching must never stop the user's training
            say(failure(exc, "cockpit: not watching this trainer"))

    @functools.wraps(original_train)
    def train(self: Any, *args: Any, **kwargs: Any) -> Any:
        callback = getattr(self, "_cockpit_callback", None)
        try:
            apply_train_args(self, callback)
        except Exception as exc:  # noqa: BLE001 - the script trains as it asked, and is told
            say(failure(exc, "cockpit: the --set of `cockpit resume` was not applied"))
        resume = resume_for(getattr(callback, "segment", 0))
        given = args[0] if args else kwargs.get("resume_from_checkpoint")
        if resume and _cockpits_resume(given, resume, callback):
            args = args[1:]  # resume_from_checkpoint is train()'s first parameter
            kwargs["resume_from_checkpoint"] = resume
            done = finished_at(self, resume)
            if done is not None:
                skipped = _load_finished(self, resume, done, callback)
                if skipped is not None:
                    return skipped
        if callback is not None:
            used = args[0] if args else kwargs.get("resume_from_checkpoint")
            # True is transformers' "the newest in output_dir": said as the folder it picks
            callback.resumed_from = _last_checkpoint(self) if used is True else (used or None)
        result = original_train(self, *args, **kwargs)
        if callback is not None and getattr(callback, "stop_requested", False):
            end_at_checkpoint(self, callback)
        return result

    trainer_cls.__init__ = __init__
    trainer_cls.train = train
    trainer_cls._cockpit_patched = True


STOPPED_AT_CHECKPOINT = "the script was ended at its checkpoint: nothing after train() ran"
SCRIPT_WENT_ON = "the script went on past train() to its own ending, as `cockpit stop --finish-script` asked"


def end_at_checkpoint(trainer: Any, callback: Any) -> None:
    """A stop-and-save ends the process at the checkpoint just saved: the script's code after
    train() (its final save, evaluate, push_to_hub) does not run; `cockpit resume` runs the script
    to its end. `cockpit stop --finish-script` asks for the script's own ending instead.

    SystemExit(0), so the process's atexit work (the outcome, a logger's flush, the process group's
    teardown) is done as at any exit."""
    asked = getattr(callback, "stop_request", None) or {}
    step = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
    writer = getattr(callback, "writer", None)
    if asked.get("finish_script"):
        _state["stop_ending"] = SCRIPT_WENT_ON
        if writer is not None:
            from cockpit.run import journal

            writer.write(journal.warning(SCRIPT_WENT_ON, code="stop_finish_script", step=step))
        return
    _state["stop_ending"] = STOPPED_AT_CHECKPOINT
    if writer is not None:
        from cockpit.run import journal

        writer.write(journal.warning(
            f"stopped and saved at step {step}: {STOPPED_AT_CHECKPOINT} (no final save, evaluate or "
            "push_to_hub)", code="stopped_at_checkpoint", step=step,
            fix="`cockpit resume RUN` trains on from the checkpoint and runs the script to its end"))
        try:
            writer.flush()
        except Exception:  # noqa: BLE001 - the exit below is what was asked
            pass
    print(f"cockpit: stopped and saved at step {step}; {STOPPED_AT_CHECKPOINT}", file=sys.stderr)
    raise SystemExit(0)


_TRAIN_ARGS_SAID: set[int] = set()


def apply_train_args(trainer: Any, callback: Any) -> None:
    """`cockpit resume RUN --set max_steps=N` on a script run: the N-th Trainer's arguments get the
    new values at train(), each change said in the journal (once a Trainer). A field its arguments
    lack is said and left alone."""
    raw = os.environ.get(TRAIN_ARGS_ENV)
    segment = int(getattr(callback, "segment", 0) or 0)
    if not raw or id(trainer) in _TRAIN_ARGS_SAID:
        return
    asked = json.loads(raw)
    if not isinstance(asked, dict) or asked.get("segment", 0) != segment or not isinstance(asked.get("set"), dict):
        return
    _TRAIN_ARGS_SAID.add(id(trainer))
    args = trainer.args
    changes, refused = [], []
    for key, value in asked["set"].items():
        if not hasattr(args, key):
            refused.append(key)
            continue
        old = getattr(args, key)
        try:
            setattr(args, key, value)
        except Exception:  # noqa: BLE001 - a frozen TrainingArguments (some transformers releases)
            object.__setattr__(args, key, value)
        changes.append(f"{key} {old} → {value}")
    if not changes and not refused:
        return
    kind = type(args).__name__
    line = (f"cockpit resume --set: Trainer {segment + 1} of the script trains with " + ", ".join(changes)
            if changes else "")
    if "num_train_epochs" in asked["set"] and "max_steps" not in asked["set"] and \
            int(getattr(args, "max_steps", 0) or 0) > 0:
        line += (f" (its max_steps {args.max_steps} wins over num_train_epochs in transformers: "
                 "set max_steps instead, or max_steps=-1 too)")
    if refused:
        line += ("; " if line else "cockpit resume --set: ") + \
            f"not applied: {', '.join(refused)} ({kind} has no such field)"
    print(f"cockpit: {line}", file=sys.stderr)
    writer = getattr(callback, "writer", None)
    if writer is not None:
        from cockpit.run import journal

        writer.write(journal.warning(line, code="train_args"))


def _step_of(path: Any) -> int | None:
    """N of a checkpoint-N path, by the run folder's one rule for checkpoint names."""
    from cockpit.run.folder import checkpoint_step

    return checkpoint_step(Path(str(path)).name)


def _cockpits_resume(given: Any, resume: str, callback: Any) -> bool:
    """Whether a Trainer of a resumed run gets cockpit's checkpoint, whatever the script passed to
    train(). A script that passes none (`train()`, `train(None)`, `train(False)`: its step count
    would start over at 1), True, or its output folder's highest-numbered checkpoint (open-r1's and
    the alignment-handbook's `get_last_checkpoint`, which takes a half-written one too) gets the
    newest complete one, which `cockpit resume` chose and named. A checkpoint the script chose
    otherwise is its own: kept, and said."""
    if given is None or given is False or given is True:
        return True
    try:
        same = Path(str(given)).resolve() == Path(resume).resolve()
        ours, theirs = _step_of(resume), _step_of(given)
        newest = Path(str(given)).resolve().parent == Path(resume).resolve().parent and \
            ours is not None and theirs is not None and theirs >= ours
    except (OSError, ValueError, TypeError):
        return False
    if same:
        return True
    line = (f"the script passes train() its own checkpoint {given}; cockpit resumes from {resume}, the newest "
            "complete one" if newest else
            f"the script resumes from its own checkpoint {given}, not {resume}, which `cockpit resume` chose")
    print(f"cockpit: {line}", file=sys.stderr)
    writer = getattr(callback, "writer", None)
    if writer is not None:
        from cockpit.run import journal

        writer.write(journal.warning(line, code="resume_checkpoint"))
    return newest


def _last_checkpoint(trainer: Any) -> str | None:
    """The highest-numbered checkpoint in the trainer's output_dir (what train(True) resumes from)."""
    try:
        out = Path(str(trainer.args.output_dir))
        found = [(n, p) for p in out.iterdir() if p.is_dir() and (n := _step_of(p)) is not None]
    except (OSError, AttributeError):
        return None
    return str(max(found)[1]) if found else None


def finished_at(trainer: Any, checkpoint: str) -> int | None:
    """The step a resumed Trainer had already finished at — its checkpoint's global_step reached its
    max_steps (the script's, else the one it saved) — or None when it has steps left."""
    try:
        with open(Path(checkpoint) / "trainer_state.json", encoding="utf-8") as fh:
            saved = json.load(fh)
        step = int(saved.get("global_step") or 0)
        wanted = int(getattr(getattr(trainer, "args", None), "max_steps", 0) or 0)
        if wanted <= 0:
            wanted = int(saved.get("max_steps") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return step if wanted > 0 and step >= wanted else None


def _load_finished(trainer: Any, checkpoint: str, step: int, callback: Any) -> Any:
    """A script's Trainer that had finished before the run stopped (a later one was stopped) is not
    trained again: resumed from its final checkpoint, transformers' Trainer takes a step past its
    end, and the script then saves that model over the finished one. Its weights and state are
    loaded from the checkpoint instead, so what the script saves next is what it had trained; a
    TrainOutput is returned as train() does. None (train as transformers does) when it cannot."""
    try:
        from transformers.trainer_callback import TrainerState
        from transformers.trainer_utils import TrainOutput

        trainer._load_from_checkpoint(checkpoint)
        trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    except Exception as exc:  # noqa: BLE001 - then transformers' own resume, as before
        print(f"cockpit: could not load the finished {checkpoint} ({type(exc).__name__}: {exc}); "
              "transformers resumes it", file=sys.stderr)
        return None
    losses = [h["train_loss"] for h in trainer.state.log_history if isinstance(h, dict) and "train_loss" in h]
    line = (f"Trainer {getattr(callback, 'segment', 0) + 1} of the script had finished (step {step}) before the "
            f"run stopped: its model is loaded from {checkpoint}, not trained again")
    print(f"cockpit: {line}", file=sys.stderr)
    writer = getattr(callback, "writer", None)
    if writer is not None:
        from cockpit.run import journal

        writer.write(journal.warning(line, code="segment_done", step=step))
    return TrainOutput(step, float(losses[-1]) if losses else 0.0, {})


def resume_for(segment: int) -> str | None:
    """The checkpoint the `segment`-th Trainer of this script resumes from: each Trainer its own
    (control/resume.json maps segments to checkpoints), so a script's first Trainer is never handed
    its second one's checkpoint; without that file, the one checkpoint the run was resumed from."""
    resume = os.environ.get(RESUME_ENV)
    if not resume or not os.environ.get(RUN_DIR_ENV):
        return resume
    try:
        with open(Path(os.environ[RUN_DIR_ENV]) / "control" / RESUME_SEGMENTS, encoding="utf-8") as fh:
            segments = json.load(fh)
    except (OSError, ValueError):
        return resume
    found = segments.get(str(segment)) if isinstance(segments, dict) else None
    return str(found) if found else None


def attach(trainer: Any) -> Any:
    """Give one trainer the cockpit's callback (once); rank 0 alone writes the journal.

    A trainer that was handed `cockpit.CockpitCallback` in its own code keeps that one, now told
    which trainer it serves; otherwise, under a cockpit run, it gets a new one.
    """
    if getattr(trainer, "_cockpit_callback", None) is not None:
        return trainer._cockpit_callback
    from cockpit.hook.callback import ScriptCallback

    handler = getattr(trainer, "callback_handler", None)
    # The script's own `cockpit.CockpitCallback` comes from its env's cockpit, not this copy: its mark.
    mine = next((cb for cb in getattr(handler, "callbacks", []) if getattr(cb, "cockpit_public", False)), None)
    if mine is not None:
        mine.bind(trainer)
        callback = mine
    elif os.environ.get(RUN_DIR_ENV):
        from cockpit.run import journal
        from cockpit.run.folder import RunFolder

        run = RunFolder(Path(os.environ[RUN_DIR_ENV]))
        writer = journal.JournalWriter(run.events if rank() == 0 else os.devnull)
        callback = ScriptCallback(run, writer, trainer_name=trainer_name(type(trainer)),
                                  trainer_class=f"{type(trainer).__module__}.{type(trainer).__qualname__}")
        callback.trainer = trainer
        trainer.add_callback(callback)
    else:
        return None
    callback.capture_printed_tables(sys.modules.get(type(trainer).__module__))
    callback.segment = len(_state["callbacks"])  # the n-th Trainer of this script: its own segment
    trainer._cockpit_callback = callback
    _state["callbacks"].append(callback)
    if not _state["atexit"] and os.environ.get(RUN_DIR_ENV):
        _state["atexit"] = True
        atexit.register(_write_outcome, callback.run)
        atexit.register(_leave_process_group)
        _note_uncaught()
    return callback


def _note_uncaught() -> None:
    """Remember an exception that ends the script (the outcome says it, for when nobody saw the exit
    code: a supervisor that was killed), then let the script's own excepthook print it as ever."""
    previous = sys.excepthook

    def excepthook(tp: Any, value: Any, tb: Any) -> None:
        try:
            _state["uncaught"] = f"{tp.__name__}: {value}"[:300]
        except Exception:  # noqa: BLE001 - a str() that raises: the type is enough
            _state["uncaught"] = getattr(tp, "__name__", "an exception")
        previous(tp, value, tb)

    sys.excepthook = excepthook


def _leave_process_group() -> None:
    """A gloo/nccl group left to interpreter teardown can abort a rank ("terminate called without
    an active exception") after training finished, failing the whole torchrun/accelerate launch.
    The script is done with it by now: tear it down, as the runner does."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - teardown must not turn a finished run into a failed one
        pass


def _write_outcome(run: Any) -> None:
    """What the supervisor cannot see from an exit code: how many Trainers this script built (so
    "no Trainer was built" is told from "finished"), and, as a script that stopped on a
    stop-and-save request exits 0 like a finished one, which it was."""
    if rank() != 0:
        return
    from cockpit.files import write_atomic

    callbacks = _state["callbacks"]
    outcome: dict[str, Any] = {
        "trainers_built": len(callbacks),
        "trainings_started": sum(1 for cb in callbacks if getattr(cb, "training", "") in ("started", "ended")),
        "trainings_ended": sum(1 for cb in callbacks if getattr(cb, "training", "") == "ended")}
    if _state.get("uncaught"):
        outcome["uncaught"] = _state["uncaught"]
    if any(cb.stop_requested for cb in _state["callbacks"]):
        ending = _state.get("stop_ending")
        outcome.update({"state": "stopped", "code": "stopped",
                        "reason": "stopped and saved on request" + (f"; {ending}" if ending else ""),
                        "fix": "resume it with `cockpit resume RUN`"
                               + (" (it runs the script to its end)" if ending == STOPPED_AT_CHECKPOINT else "")})
    try:
        writer = getattr(callbacks[0], "writer", None) if callbacks else None
        if writer is not None:
            run.follow(writer)  # a run folder moved mid-run: the outcome goes where the journal went
        run.control_dir()
        write_atomic(run.outcome_json, json.dumps(outcome))
    except OSError as exc:  # watching never fails the script
        say(f"cockpit: could not write the run's outcome: {type(exc).__name__}")


def install_import_hook() -> None:
    """Patch `transformers.trainer.Trainer` the moment the process imports it (or now, if it has)."""
    module = sys.modules.get("transformers.trainer")
    if module is not None:
        patch_trainer(module.Trainer)
        return
    if not any(getattr(f, "cockpit_trainer_hook", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _TrainerImportHook())


class _TrainerImportHook:
    """A meta-path finder that finds `transformers.trainer` through the other finders and runs
    `patch_trainer` right after the module has executed. Importing nothing before that keeps a
    script that never trains (or never imports transformers) exactly as it was."""

    target = "transformers.trainer"
    cockpit_trainer_hook = True  # one of these is enough, whichever copy of the hook put it there

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.target:
            return None
        for finder in sys.meta_path:
            if getattr(finder, "cockpit_trainer_hook", False) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader  # patched on this instance below
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            original_exec(module)
            try:
                patch_trainer(module.Trainer)
            except Exception as exc:  # noqa: BLE001 - the user's import must succeed regardless
                say(failure(exc, "cockpit: could not hook transformers.Trainer"))

        loader.exec_module = exec_module  # this loader instance serves this one module
        return spec
