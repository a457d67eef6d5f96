"""Start, stop and resume runs. The UI and the CLI both come through here.

`launch` writes the run folder and starts a detached supervisor (new session,
stdin /dev/null, output to files), then returns: nothing of the run is tied to
the caller's terminal. `stop` asks the run to stop (cooperatively with a save,
or by signals to its whole process group), `resume` starts a new attempt in the
same folder from its newest complete checkpoint.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from cockpit.config.presets import Preset, device_policy, dump_yaml
from cockpit.config.validate import Plan, has_gpu, validate
from cockpit.errors import CockpitError
from cockpit.files import write_atomic
from cockpit.run import journal, owner, secrets
from cockpit.run.folder import (  # checkpoint_problem: resume uses the run folder's rule
    ACCELERATE_YAML,
    LIVE_STATES,
    Request,
    RunFolder,
    Status,
    checkpoint_problem,
    create_run_folder,
    newest_complete_checkpoint,
)
from cockpit.run.section import cockpit_section, output_dir, script_section
from cockpit.trainers.discovery import require_training_stack


def runner_argv(run: RunFolder, resume_from: Path | None = None) -> list[str]:
    """The runner's command line as command.txt shows it: from the run folder, the run's own files
    by their names there, so a folder renamed, archived or moved by hand still shows it true."""
    from cockpit.config.launcher import run_launcher
    from cockpit.launch.launchers import runner_argv as argv_for

    spec = run_launcher(run, cockpit_section(run).launcher)
    if spec.config_file:
        spec = spec.model_copy(update={"config_file": run.relative(spec.config_file)})
    return argv_for(Path("."), spec, None if resume_from is None else Path(run.relative(resume_from)))


def prepare(plan: Plan, runs_dir: Path, name: str | None = None) -> RunFolder:
    """Create the run folder and write what was asked; start nothing."""
    run = create_run_folder(runs_dir, name or plan.preset.name)
    run_id = secrets.new_id()  # where its secrets are kept, outside the folder (`run/secrets.py`)
    try:
        preset = plan.preset.copy()
        # output_dir relative to the run folder (the runner runs there) when it lies inside it: a
        # folder renamed, archived or moved by hand keeps its checkpoints, and nothing is rewritten
        preset.trl["output_dir"] = run.relative(preset.trl.get("output_dir") or run.output)
        run.output.mkdir(exist_ok=True)
        _resolve_accelerate_config(run, preset)
        if preset.cockpit.get("notify"):  # literal URLs may carry tokens: not in run.yaml
            from cockpit.alerts.notify import keep_secrets, parse_notify

            preset.cockpit["notify"] = keep_secrets(parse_notify(preset.cockpit["notify"]), run_id)
        if isinstance(preset.cockpit.get("env"), dict):  # tokens in env: too
            preset.cockpit["env"] = secrets.split_env({str(k): str(v) for k, v in preset.cockpit["env"].items()},
                                                      run_id)
        write_atomic(run.run_yaml, preset.to_yaml())  # every file of the run's through the one writer
        write_atomic(run.trl_yaml, dump_yaml(trl_cli_config(preset.trl)))
        spec = plan.spec
        write_atomic(run.trainer_json, json.dumps(spec.to_json(with_fields=False), indent=2))
        write_command(run, spec.cli_command)
        run.write_status(Status(state="starting", name=run.name, trainer=spec.name,
                                host=os.uname().nodename))
        with journal.JournalWriter(run.events) as jw:
            for w in plan.warnings:
                jw.write(journal.warning(w, code="preset"))
    except BaseException:
        import shutil

        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return run


def _resolve_accelerate_config(run: RunFolder, preset: Preset) -> None:
    """An accelerate launch with a config (one TRL ships, or the user's): keep the resolved copy in
    the run folder (`accelerate.yaml`: processes, one machine, the run's precision) and launch
    from it, so the run says exactly how it was started."""
    from cockpit.config.launcher import check as check_launcher
    from cockpit.launch import launchers as launcher

    section = preset.cockpit.get("launcher")
    spec = check_launcher(section)
    if spec.kind != "accelerate" or not spec.config_file:
        return
    trl = trl_cli_config(preset.trl)
    precision = "bf16" if trl.get("bf16") else "fp16" if trl.get("fp16") else "no"
    path = run.path / ACCELERATE_YAML
    write_atomic(path, launcher.resolved_accelerate_config(spec, precision))
    section = {k: v for k, v in (section or {}).items() if k != "config"}
    section["config_file"] = ACCELERATE_YAML  # the run folder's own: read where it is (`run_launcher`)
    preset.cockpit["launcher"] = section


def trl_cli_config(trl: dict) -> dict:
    """The flat YAML for `trl <cmd> --config`: what the runner will really use, so on a machine
    without a GPU it says use_cpu/bf16 as the runner sets them (TRL refuses bf16 on CPU)."""
    return device_policy(trl, gpu=has_gpu())[0]


def write_command(run: RunFolder, cli_command: str | None, resume_from: Path | None = None) -> None:
    lines = ["# what cockpit runs (inside a detached supervisor), from the run folder:",
             shlex.join(runner_argv(run, resume_from))]
    if cli_command:
        lines += ["# the same training with TRL's own CLI, from the run folder:",
                  shlex.join(["trl", cli_command, "--config", run.trl_yaml.name])]
    write_atomic(run.command_txt, "\n".join(lines) + "\n")  # replaces a link there, never follows it


def start_supervisor(run: RunFolder, resume_from: Path | None = None, owner_fd: int | None = None) -> int:
    """Start the detached supervisor; returns its pid. `owner_fd`: the run's lock, already taken
    (`run/owner.py`), handed over so the folder is never without its one owner in between; without
    it the supervisor takes the lock itself (and refuses to run when another one holds it)."""
    if script_section(run) is None:  # a script trains in its own env: the cockpit's needs no [train]
        require_training_stack()  # every preset launch and resume passes here: one line, not a failed run
    argv = [sys.executable, "-m", "cockpit.supervisor", str(run.path)]
    if resume_from is not None:
        argv += ["--resume", str(resume_from)]
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(owner.LOCK_FD_ENV, None)
    if owner_fd is not None:
        env[owner.LOCK_FD_ENV] = str(owner_fd)
    from cockpit.files import open_own

    log_fd = open_own(run.supervisor_log, os.O_WRONLY | os.O_APPEND)  # never through a link
    with open(os.devnull, "rb") as devnull, os.fdopen(log_fd, "ab") as log:
        proc = subprocess.Popen(argv, stdin=devnull, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env,
                                cwd=str(run.path), pass_fds=() if owner_fd is None else (owner_fd,))
    return proc.pid


def launch(preset: Preset, runs_dir: Path, name: str | None = None) -> RunFolder:
    return launch_plan(validate(preset), runs_dir, name)


def launch_plan(plan: Plan, runs_dir: Path, name: str | None = None) -> RunFolder:
    return launch_prepared(prepare(plan, runs_dir, name))


def launch_prepared(run: RunFolder) -> RunFolder:
    """Start the supervisor of a prepared run folder (a preset's or a script's)."""
    lock = owner.acquire(run.path, run.name)
    try:
        pid = start_supervisor(run, owner_fd=lock)
    finally:
        os.close(lock)  # the supervisor holds it now
    _record_supervisor(run, pid)
    return run


def _record_supervisor(run: RunFolder, pid: int) -> None:
    """The supervisor's pid, unless it already wrote its own (with its start time): it may be
    quicker than this process, and its word is the better one."""
    status = run.read_status()
    if status.supervisor_pid != pid:
        status.supervisor_pid, status.supervisor_started = pid, owner.start_time(pid)
        run.write_status(status)


# -- stop ----------------------------------------------------------------------------------


def _run_procs(run: RunFolder, status: Status) -> list:
    """The run's own live processes (`run/owner.py`): proven by the recorded start time and the run's
    marker, its group and the helpers that left it alike; never the supervisor."""
    return owner.run_processes(run.path, status.pgid, status.pid_started, exclude=(status.supervisor_pid,),
                               marker=status.marker)


def _wait_reaped(pgid: int, limit_s: float) -> None:
    """After the run's own processes are dead: wait (never signal) until their parent has reaped
    them, so the group is gone when `stop` returns."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


END_WORD_WAIT_S = 15.0
"""How long a force stop waits for the run's supervisor to write the run's end once its processes are gone."""


def stop(run: RunFolder, *, save: bool, grace_s: float | None = None, wait: bool = True,
         finish_script: bool = False, by: str | None = None) -> Status:
    """save=True: the runner saves a checkpoint at the next step and ends `stopped`; a script ends
    there too (the hook: nothing after its train() runs), unless `finish_script` lets it run its
    own ending (its final save, evaluate, push_to_hub). `by` names who asked (an agent), for the journal.
    save=False: SIGTERM to the run's processes, SIGKILL after `grace_s`; ends `killed`.

    Signals go only to processes proved to be the run's (`run/owner.py`: the recorded start time
    and the run's marker in their environment), one by one: a pid that was reused is left alone,
    and a helper that left the group (`start_new_session`) is found by its marker all the same. A
    trainer whose supervisor died is stopped all the same, and its end is written here; with the
    supervisor alive, `stop` waits (bounded) for it to write the end, so it returns the final state.
    `by` says who asked, in the request file (`cockpit mcp`'s actions: "agent")."""
    from cockpit.run.summaries import effective_state, supervisor_alive

    status = run.read_status()
    state, reason = effective_state(run)
    if state not in LIVE_STATES:
        status, state, reason = _starting_now(run, status, state, reason)
    if state not in LIVE_STATES:
        why = f": {reason}" if reason and state != status.state else ""
        raise CockpitError(f"{run.name} is not running (state: {state}{why}) — nothing to stop")
    orphan = status.live and not supervisor_alive(status) and status.host == os.uname().nodename
    if save:
        extra: dict[str, object] = {"finish_script": True} if finish_script else {}
        if by:
            extra["by"] = by
        run.request(Request.STOP_SAVE, **extra)
        return status
    try:
        run.request(Request.STOP_FORCE)
    except OSError:  # the request cannot be left (a full disk): the signals below stop the run all the same
        pass
    if grace_s is None:
        grace_s = cockpit_section(run).stop_grace_s
    pgid = status.pgid
    if pgid is None:
        # The runner has not started yet: the supervisor sees the request and does not start it.
        return status
    if status.pid and status.pid == status.supervisor_pid:
        return _stop_in_code(run, status, grace_s)
    procs = _run_procs(run, status)
    if not procs:
        return run.read_status()  # gone already, or the number now belongs to another process
    if not wait and not orphan:
        owner.signal_all(procs, signal.SIGTERM)
        return status
    owner.end_processes(procs, grace_s)
    owner.end_processes(_run_procs(run, status), 1.0)  # a helper started while the others were ending
    _wait_reaped(pgid, 5.0)
    if orphan:
        return _end_orphan(run)
    deadline = time.monotonic() + END_WORD_WAIT_S
    while time.monotonic() < deadline and run.read_status().live and supervisor_alive(run.read_status()):
        time.sleep(0.1)
    return run.read_status()


def _starting_now(run: RunFolder, status: Status, state: str, reason: str | None
                  ) -> tuple[Status, str, str | None]:
    """A stop that finds the run ended may meet a resume (or launch) starting it this instant: the
    starter holds the run's lock before its status says `starting`. Holding the lock here for the
    moment of the look settles it: free, the run is truly not running (a resume that comes after
    this is a later one); held, the stop waits (bounded) for the new attempt to say it is live and
    stops that, or says why it cannot — never "nothing to stop" while a run starts."""
    from cockpit.run.summaries import effective_state, supervisor_alive

    try:
        lock = owner.acquire(run.path, run.name)
    except CockpitError as exc:
        if "already has an owner" not in str(exc) or supervisor_alive(status):
            # the lock cannot be opened at all, or the run's own supervisor holds it a moment more
            # while it exits after writing the end: the status is the word
            return status, state, reason
        deadline = time.monotonic() + ENDING_WAIT_S
        while time.monotonic() < deadline:
            state, reason = effective_state(run)
            if state in LIVE_STATES:
                return run.read_status(), state, reason
            time.sleep(0.1)
        raise CockpitError(f"{run.name} is being started or ended by another cockpit command (it holds the run's "
                           f"lock) and is not running yet — run `cockpit stop {run.name}` again in a moment") from None
    try:  # nobody can start it while this is held: what the status says now is the answer
        status = run.read_status()
        state, reason = effective_state(run)
    finally:
        os.close(lock)
    return status, state, reason


def _stop_in_code(run: RunFolder, status: Status, grace_s: float) -> Status:
    """A run made by `CockpitCallback` in a plain `python train.py`: the script is its own owner,
    and its process group may be the user's shell's. Only that one process is signalled, while it
    is still the one recorded (its start time) and holds the run's lock (its mark: its environment
    has no `COCKPIT_RUN_DIR`)."""
    pid = status.pid

    def ours() -> bool:
        return owner.same_process(pid, status.supervisor_started) and owner.holds_lock(pid, run.path)  # type: ignore[arg-type]

    if not ours() and owner.same_process(pid, status.supervisor_started):
        raise CockpitError(f"{run.name}: pid {pid} cannot be proven to be this run's script (it does not hold "
                           f"{owner.LOCK_FILE}) — it was not signalled; stop it yourself if it is")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not ours():
            break
        try:
            proc = psutil.Process(pid)
            proc.send_signal(sig)  # psutil signals it only while the pid is still this process
            psutil.wait_procs([proc], timeout=grace_s)
        except psutil.NoSuchProcess:
            break
    return _end_orphan(run, "stopped by request (`cockpit stop --force`)")


def _end_orphan(run: RunFolder, reason: str = "stopped by request (its supervisor was gone; the trainer was "
                                              "ended by `cockpit stop --force`)") -> Status:
    """The last word the dead supervisor could not write: `run_ended` and the final status."""
    status = run.read_status()
    if not status.live:
        return status
    fix = "resume it with `cockpit resume RUN`"
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_ended("killed", reason=reason, fix=fix))
    status.state, status.ended, status.reason, status.fix = "killed", time.time(), reason, fix
    run.write_status(status)
    for done in Request:
        run.clear_request(done)
    return status


# -- resume --------------------------------------------------------------------------------


def resume_checkpoint(run: RunFolder) -> Path | None:
    """The checkpoint `resume` would go on from, or None: what a UI offers its Resume key for.
    A script run's checkpoints are in the output_dir its trainer reported, not in the run folder."""
    import yaml

    try:
        out = output_dir(run)
        return newest_complete_checkpoint(out) if out is not None else None
    except (OSError, ValueError, CockpitError, yaml.YAMLError):
        return None


def _steps_done(output_dir: Path, ckpt: Path) -> tuple[int | None, int | None]:
    """(global_step, max_steps) as far as training got: the trainer_state.json the end of
    training leaves in output_dir, or the checkpoint's, whichever went further."""
    best: tuple[int | None, int | None] = (None, None)
    for state in (output_dir / "trainer_state.json", ckpt / "trainer_state.json"):
        try:
            obj = json.loads(state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        step, total = obj.get("global_step"), obj.get("max_steps")
        if isinstance(step, int) and (best[0] is None or step > best[0]):
            best = (step, total if isinstance(total, int) else None)
    return best


def resume(run: RunFolder, overrides: list[str] | None = None, notes: list[str] | None = None) -> RunFolder:
    """A new attempt from the newest complete checkpoint; `overrides` (`key=value`, as `--set`)
    change run.yaml first, e.g. a higher max_steps to train a finished run further. Each newer
    checkpoint passed over (weights cut short, no trainer_state.json) is named in `notes`, with
    the one resumed from.

    A run that already reached its max_steps is refused: resuming it would start a trainer
    with nothing left to do (or one step past the end)."""
    lock = _take_ownership(run)  # a second resume, or a live supervisor, is refused here
    try:
        return _resume(run, overrides, lock, notes if notes is not None else [])
    finally:
        os.close(lock)  # the new supervisor holds its own copy


ENDING_WAIT_S = 10.0
"""How long resume waits for a supervisor that has written the run's end but not yet exited."""


def _take_ownership(run: RunFolder) -> int:
    """The run's lock, for a new attempt. A supervisor writes the run's end a moment before it exits
    (and lets go of the lock): while the status says the run has ended, wait for it that moment
    rather than refuse; while it says live, refuse at once."""
    deadline = time.monotonic() + ENDING_WAIT_S
    while True:
        try:
            return owner.acquire(run.path, run.name)
        except CockpitError:
            try:
                live = run.read_status().live
            except CockpitError:
                live = True
            if live or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def _skipped_notes(skipped: list[tuple[Path, str]], ckpt: Path | None) -> list[str]:
    return [f"skipped {c.name} ({why})" + (f"; resuming from {ckpt.name}" if ckpt is not None else "")
            for c, why in skipped]


def _resume(run: RunFolder, overrides: list[str] | None, lock: int, notes: list[str]) -> RunFolder:
    from cockpit.run.summaries import SUPERVISOR_GONE, effective_state

    status = run.read_status()
    state, reason = effective_state(run)
    if state in LIVE_STATES:
        gone = f" ({SUPERVISOR_GONE}, its trainer still training)" if (reason or "").startswith(SUPERVISOR_GONE) else ""
        raise CockpitError(f"{run.name} is still {state}{gone} — stop it before resuming")
    if script_section(run) is not None:
        return _resume_script(run, status, overrides, lock, notes)

    from cockpit.config.presets import apply_overrides, preset_from_dict

    cfg = run.config(strict=True)
    preset = preset_from_dict(cfg, source=run.run_yaml)
    if overrides:
        preset = apply_overrides(preset, overrides)
        validate(preset, resuming=True)
    out = output_dir(run) or run.output  # the one rule: where the folder is now, whatever run.yaml wrote
    skipped: list[tuple[Path, str]] = []
    ckpt = newest_complete_checkpoint(out, skipped)
    notes.extend(_skipped_notes(skipped, ckpt))
    again = retrained_note(run, 0, ckpt) if ckpt is not None else None
    if again:
        notes.append(again)
    if ckpt is None:
        passed = f" ({'; '.join(f'{c.name}: {why}' for c, why in skipped)})" if skipped else ""
        raise CockpitError(f"{run.name}: no complete checkpoint in {out}{passed} — nothing to resume "
                           "from; start a new run instead")
    done, total = _steps_done(out, ckpt)
    max_steps = preset.trl.get("max_steps")
    if isinstance(max_steps, int) and max_steps > 0:
        total = max_steps
    elif overrides and any(o.partition("=")[0].strip() in ("max_steps", "num_train_epochs")
                           for o in overrides):
        total = None  # a new length in epochs: the trainer works out the steps
    if done is not None and total and done >= total:
        raise CockpitError(f"{run.name}: already finished at step {done} of {total} — nothing to "
                           f"resume; to train further, raise max_steps: cockpit resume {run.name} "
                           f"--set max_steps={total * 2}")
    if overrides:
        write_atomic(run.run_yaml, preset.to_yaml())
        write_atomic(run.trl_yaml, dump_yaml(trl_cli_config(preset.trl)))
    trainer = json.loads(run.trainer_json.read_text(encoding="utf-8"))
    write_command(run, trainer.get("cli_command"), ckpt)
    return _next_attempt(run, status, ckpt, lock)


def _next_attempt(run: RunFolder, status: Status, ckpt: Path | None, lock: int) -> RunFolder:
    for stale in Request:
        run.clear_request(stale)
    run.write_status(Status(state="starting", name=run.name, trainer=status.trainer,
                            attempt=status.attempt + 1, host=os.uname().nodename))
    pid = start_supervisor(run, resume_from=ckpt, owner_fd=lock)
    _record_supervisor(run, pid)
    return run


def _resume_script(run: RunFolder, status: Status, overrides: list[str] | None, lock: int,
                   notes: list[str]) -> RunFolder:
    """Script mode: the same command again, in the same folder; the hook hands each Trainer of the
    script the newest complete checkpoint of its own segment (control/resume.json), so a script
    with two Trainers resumes each from its own, never the second's into the first."""
    from cockpit.launch.script import script_segments, write_script_command

    segments = script_segments(run)
    if not segments:
        raise CockpitError(f"{run.name}: its script never started training, so there is no checkpoint "
                           "to resume from — run it again")
    asked = script_train_args(run.name, overrides or [])
    last = segments[-1].index
    chosen: dict[str, str] = {}
    unfinished = False
    for seg in segments:
        skipped: list[tuple[Path, str]] = []
        ckpt = None
        for c in reversed(seg.checkpoints):
            problem = checkpoint_problem(c)
            if problem is None:
                ckpt = c
                break
            skipped.append((c, problem))
        if ckpt is None and seg.output_dir is not None and seg.owns_output_dir:
            ckpt = newest_complete_checkpoint(seg.output_dir, skipped)
        notes.extend(_skipped_notes(list(dict.fromkeys(skipped)), ckpt))
        # output_dir's own trainer_state.json is this segment's only when no other segment shares it
        base = seg.output_dir if seg.output_dir is not None and seg.owns_output_dir else ckpt
        done, total = _steps_done(base, ckpt) if base is not None and ckpt is not None else (None, None)
        if seg.index == last and asked:
            if isinstance(asked.get("max_steps"), int) and asked["max_steps"] > 0:
                if done is not None and asked["max_steps"] <= done:
                    raise CockpitError(f"{run.name}: --set max_steps={asked['max_steps']} — its last Trainer is "
                                       f"already at step {done}; give more, e.g. --set max_steps={done * 2}")
                total = asked["max_steps"]
            elif "num_train_epochs" in asked or "max_steps" in asked:
                total = None  # a length in epochs: the trainer works out the steps
        if ckpt is not None:
            chosen[str(seg.index)] = str(ckpt)
            again = retrained_note(run, seg.index, ckpt)
            if again:
                notes.append(again)
        if not (done is not None and total and done >= total):
            unfinished = True
    if not chosen:
        where = ", ".join(sorted({str(s.output_dir) for s in segments if s.output_dir is not None})) or "its output_dir"
        raise CockpitError(f"{run.name}: no complete checkpoint in {where} — nothing to resume "
                           "from; run the script again")
    if not unfinished:
        trainers = f" (all {len(segments)} of its Trainers)" if len(segments) > 1 else ""
        raise CockpitError(f"{run.name}: already finished at step {done} of {total}{trainers} — nothing to "
                           f"resume; to train further: cockpit resume {run.name} --set max_steps="
                           f"{(total or 1) * 2}")
    if asked:
        _keep_script_train_args(run, last, asked, notes)
    run.control_dir()
    write_atomic(run.resume_json, json.dumps(chosen, indent=2))
    ckpt = Path(chosen[max(chosen, key=int)])
    write_script_command(run, ckpt)
    return _next_attempt(run, status, ckpt, lock)


SCRIPT_SETTABLE: dict[str, type] = {"max_steps": int, "num_train_epochs": float, "save_steps": float,
                                    "save_total_limit": int, "logging_steps": float, "eval_steps": float}
"""What `cockpit resume SCRIPT_RUN --set` may change: the TrainingArguments fields transformers reads
when train() starts (the hook sets them then). Anything else was read while the script built its
model, data and Trainer, before the hook could change it: refused."""


def script_train_args(name: str, overrides: list[str]) -> dict[str, Any]:
    """The `--set key=value`s of a script run's resume, checked: one line for anything else."""
    from cockpit.config.presets import parse_value

    asked: dict[str, Any] = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CockpitError(f"--set {item!r}: expected key=value, e.g. --set max_steps=50")
        kind = SCRIPT_SETTABLE.get(key)
        if kind is None:
            raise CockpitError(f"--set {key}: {name} is a script run — resume sets only what its Trainer reads "
                               f"at train() ({', '.join(SCRIPT_SETTABLE)}); change {key} in the script or its "
                               "config")
        value = parse_value(raw)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise CockpitError(f"--set {key}={raw}: {key} takes {'a whole number' if kind is int else 'a number'}")
        asked[key] = int(value) if kind is int or (isinstance(value, float) and value.is_integer()
                                                    and key != "num_train_epochs") else float(value)
    return asked


def _keep_script_train_args(run: RunFolder, segment: int, asked: dict[str, Any], notes: list[str]) -> None:
    """run.yaml's `cockpit.script.train_args` ({segment, set}): what every later attempt's hook
    applies to that Trainer's arguments (`cockpit.hook.apply_train_args`); a later --set adds to it."""
    cfg = run.config(strict=True)
    section = cfg.setdefault("cockpit", {}).setdefault("script", {})
    kept = section.get("train_args") if isinstance(section.get("train_args"), dict) else {}
    before: dict[str, Any] = kept["set"] if isinstance(kept.get("set"), dict) and kept.get("segment") == segment \
        else {}
    section["train_args"] = {"segment": segment, "set": {**before, **asked}}
    write_atomic(run.run_yaml, dump_yaml(cfg))
    changes = ", ".join(f"{k}={v}" for k, v in asked.items())
    notes.append(f"the script's Trainer {segment + 1} trains with {changes} (the hook sets it at train(); "
                 "the journal says what it changed)")


def retrained_note(run: RunFolder, segment: int, ckpt: Path) -> str | None:
    """Which steps a resume from `ckpt` trains again: those the segment had logged past it (a stop
    that saved nothing newer, `stop --force`, a crash). None when it goes on where it was."""
    from cockpit.run.folder import checkpoint_step

    at = checkpoint_step(ckpt.name)
    if at is None:
        return None
    reached, current = None, 0
    for rec in journal.read_all(run.events)[0]:
        if rec.kind == journal.RUN_STARTED:
            raw = rec.data.get("segment", 0)
            current = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
        elif rec.kind in (journal.METRICS, journal.PROGRESS) and current == segment and isinstance(rec.step, int):
            reached = rec.step if reached is None else max(reached, rec.step)
    if reached is None or reached <= at:
        return None
    steps = f"step {at + 1}" if reached == at + 1 else f"steps {at + 1}–{reached}"
    return (f"{steps} will be trained again: training had reached step {reached}, and the newest complete "
            f"checkpoint is {ckpt.name}")
