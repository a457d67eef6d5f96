"""The training process: build from run.yaml, train, save, and say how it went.

The supervisor writes the final `run_ended` line; this process leaves its own
verdict in control/outcome.json (state, reason, fix) so a failure is classified
from the real exception, not guessed from the log.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

from cockpit.errors import CockpitError, failure
from cockpit.run import diagnose, journal
from cockpit.run.folder import RunFolder, parse_run_argv, write_atomic
from cockpit.runner import startup
from cockpit.trainers import versions


def _rank() -> int:
    """This process's rank under torchrun/accelerate (0 when started alone)."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def _write_outcome(run: RunFolder, jw: journal.JournalWriter, **outcome: object) -> None:
    if _rank() != 0:
        return  # rank 0 speaks for the run
    run.follow(jw)  # a run folder moved mid-run: the verdict goes where the journal went
    run.control_dir()
    write_atomic(run.outcome_json, json.dumps(outcome))


def train(run: RunFolder, jw: journal.JournalWriter, resume_from: str | None) -> str:
    jw.write(journal.phase("importing", "torch, transformers, trl"))
    with startup.heavy_start():
        import torch
        from accelerate import PartialState

        from cockpit.runner.assets import ensure_for_run
        from cockpit.runner.build import build, read_run
        from cockpit.runner.callback import CockpitCallback
        from cockpit.runner.samples import make_sampler

        ensure_for_run(run.run_yaml)
        cuda = torch.cuda.is_available()
        state = PartialState()
        writer = jw

        built = build(run, writer, cuda=cuda)
    trainer = built.trainer
    _, cockpit, info = read_run(run)
    for w in built.warnings:
        writer.write(w)
    sample_fn, every = make_sampler(built, cockpit)
    cb = CockpitCallback(run, writer, samples_fn=sample_fn, samples_every=every)
    cb.trainer = trainer
    cb.capture_printed_tables(sys.modules[type(trainer).__module__])
    trainer.add_callback(cb)

    args = built.config
    device = "cuda" if cuda else "cpu"
    writer.write(journal.run_started(
        info["name"], world_size=state.num_processes, max_steps=getattr(args, "max_steps", None),
        versions=versions.installed(), device=device, resumed_from=resume_from,
        output_dir=str(getattr(args, "output_dir", "")), model=built.model.name_or_path,
        logging_steps=getattr(args, "logging_steps", None)))
    import inspect

    if "resume_from_checkpoint" in inspect.signature(trainer.train).parameters:
        trainer.train(resume_from_checkpoint=resume_from)
    elif resume_from:
        raise CockpitError(f"{info['trainer_class']} cannot resume from a checkpoint (its train() "
                           "takes no resume_from_checkpoint) — start a new run instead")
    else:
        trainer.train()

    writer.write(journal.phase("saving", str(args.output_dir)))
    trainer.save_model(args.output_dir)
    trainer.save_state()
    if hasattr(trainer, "end"):
        try:
            trainer.end()
        except Exception:  # noqa: BLE001 - tracker teardown must not fail a finished run
            pass
    _leave_process_group()
    writer.write(journal.phase("done"))
    return "stopped" if cb.stop_requested else "finished"


def _leave_process_group() -> None:
    """Several ranks: wait for each other, then tear the process group down before exit. A
    gloo group left to interpreter shutdown can abort a rank ("terminate called without an
    active exception") after training has finished, which would fail the whole run."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        try:
            dist.barrier()
        finally:
            dist.destroy_process_group()


def took(run: RunFolder, this_attempt: float) -> str:
    """How long the training took, every attempt of a resumed run together (`12m03s over 2
    attempts, the last 6s`), not the last attempt alone."""
    from cockpit.formats import fmt_duration

    before, seconds = journal.earlier_attempts(run.events)
    if not before:
        return fmt_duration(this_attempt)
    return f"{fmt_duration(seconds + this_attempt)} over {before + 1} attempts, the last {fmt_duration(this_attempt)}"


def main(argv: list[str] | None = None) -> int:
    try:
        run, resume_path = parse_run_argv(sys.argv[1:] if argv is None else argv, "cockpit.runner")
    except CockpitError as exc:
        print(exc, file=sys.stderr)
        return 2
    resume_from = str(resume_path) if resume_path is not None else None
    # Only rank 0 writes the journal; the other ranks' records go nowhere.
    jw = journal.JournalWriter(run.events if _rank() == 0 else os.devnull)
    t0 = time.time()
    try:
        state = train(run, jw, resume_from)
    except CockpitError as exc:
        print(f"cockpit: {exc}", file=sys.stderr, flush=True)
        _write_outcome(run, jw, state="failed", code="config", reason=str(exc), fix="")
        jw.write(journal.warning(str(exc), code="config"))
        return 3
    except BaseException as exc:  # noqa: BLE001 - every way out is classified and recorded
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        if isinstance(exc, KeyboardInterrupt):
            _write_outcome(run, jw, state="killed", code="interrupted", reason="interrupted", fix="")
            return 130
        diag = diagnose.explain(text, fallback=failure(exc), fix=f"see {run.stdout_log.name}")
        _write_outcome(run, jw, state="failed", code=diag.code, reason=diag.reason, fix=diag.fix)
        return 1
    _write_outcome(run, jw, state=state, code=state,
                   reason=f"stopped and saved on request after {took(run, time.time() - t0)}"
                   if state == "stopped" else f"training finished in {took(run, time.time() - t0)}",
                   fix="resume it with `cockpit resume RUN`" if state == "stopped" else "")
    jw.close()
    return 0
