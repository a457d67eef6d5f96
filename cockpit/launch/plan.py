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

from cockpit.config.presets import Preset, device_policy, dump_yaml
from cockpit.config.validate import Plan, has_gpu, validate
from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import Request, RunFolder, Status, create_run_folder, list_checkpoints, script_section
from cockpit.trainers.discovery import require_training_stack

DEFAULT_GRACE_S = 10.0


def runner_argv(run: RunFolder, resume_from: Path | None = None) -> list[str]:
    from cockpit.launch.launchers import runner_argv as argv_for

    return argv_for(run.path, run.cockpit_section().get("launcher"), resume_from)


def prepare(plan: Plan, runs_dir: Path, name: str | None = None) -> RunFolder:
    """Create the run folder and write what was asked; start nothing."""
    run = create_run_folder(runs_dir, name or plan.preset.name)
    try:
        preset = plan.preset.copy()
        if not preset.trl.get("output_dir"):
            preset.trl["output_dir"] = str(run.output.resolve())
        run.output.mkdir(exist_ok=True)
        _resolve_accelerate_config(run, preset)
        if preset.cockpit.get("notify"):  # literal URLs may carry tokens: not in run.yaml
            from cockpit.alerts.notify import keep_secrets, parse_notify

            run.control.mkdir(exist_ok=True)
            preset.cockpit["notify"] = keep_secrets(parse_notify(preset.cockpit["notify"]),
                                                    run.control / "notify.secret.json")
        run.run_yaml.write_text(preset.to_yaml(), encoding="utf-8")
        run.trl_yaml.write_text(dump_yaml(trl_cli_config(preset.trl)), encoding="utf-8")
        spec = plan.spec
        run.trainer_json.write_text(json.dumps(spec.to_json(with_fields=False), indent=2), encoding="utf-8")
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
    if spec["kind"] != "accelerate" or not spec["config_file"]:
        return
    trl = trl_cli_config(preset.trl)
    precision = "bf16" if trl.get("bf16") else "fp16" if trl.get("fp16") else "no"
    path = run.path / "accelerate.yaml"
    path.write_text(launcher.resolved_accelerate_config(spec, precision), encoding="utf-8")
    section = {k: v for k, v in section.items() if k != "config"}
    section["config_file"] = str(path)
    preset.cockpit["launcher"] = section


def trl_cli_config(trl: dict) -> dict:
    """The flat YAML for `trl <cmd> --config`: what the runner will really use, so on a machine
    without a GPU it says use_cpu/bf16 as the runner sets them (TRL refuses bf16 on CPU)."""
    return device_policy(trl, gpu=has_gpu())[0]


def write_command(run: RunFolder, cli_command: str | None, resume_from: Path | None = None) -> None:
    lines = ["# what cockpit runs (inside a detached supervisor):",
             shlex.join(runner_argv(run, resume_from))]
    if cli_command:
        lines += ["# the same training with TRL's own CLI:",
                  shlex.join(["trl", cli_command, "--config", str(run.trl_yaml.resolve())])]
    run.command_txt.write_text("\n".join(lines) + "\n", encoding="utf-8")


def start_supervisor(run: RunFolder, resume_from: Path | None = None) -> int:
    """Start the detached supervisor; returns its pid."""
    if script_section(run) is None:  # a script trains in its own env: the cockpit's needs no [train]
        require_training_stack()  # every preset launch and resume passes here: one line, not a failed run
    argv = [sys.executable, "-m", "cockpit.supervisor", str(run.path)]
    if resume_from is not None:
        argv += ["--resume", str(resume_from)]
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    with open(os.devnull, "rb") as devnull, open(run.supervisor_log, "ab") as log:
        proc = subprocess.Popen(argv, stdin=devnull, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env,
                                cwd=str(run.path))
    return proc.pid


def launch(preset: Preset, runs_dir: Path, name: str | None = None) -> RunFolder:
    return launch_plan(validate(preset), runs_dir, name)


def launch_plan(plan: Plan, runs_dir: Path, name: str | None = None) -> RunFolder:
    return launch_prepared(prepare(plan, runs_dir, name))


def launch_prepared(run: RunFolder) -> RunFolder:
    """Start the supervisor of a prepared run folder (a preset's or a script's)."""
    pid = start_supervisor(run)
    run.update_status(supervisor_pid=pid)
    return run


# -- stop ----------------------------------------------------------------------------------


def _pgid_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(run: RunFolder, *, save: bool, grace_s: float | None = None, wait: bool = True) -> Status:
    """save=True: the runner saves a checkpoint at the next step and ends `stopped`.
    save=False: SIGTERM to the run's process group, SIGKILL after `grace_s`; ends `killed`."""
    status = run.read_status()
    if not status.live:
        raise CockpitError(f"{run.name} is not running (state: {status.state}) — nothing to stop")
    if save:
        run.request(Request.STOP_SAVE)
        return status
    run.request(Request.STOP_FORCE)
    if grace_s is None:
        grace_s = float(run.cockpit_section().get("stop_grace_s", DEFAULT_GRACE_S))
    pgid = status.pgid
    if pgid is None:
        # The runner has not started yet: the supervisor sees the request and does not start it.
        return status
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return run.read_status()
    if not wait:
        return status
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _pgid_alive(pgid):
        time.sleep(0.05)
    if _pgid_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while _pgid_alive(pgid):
            time.sleep(0.05)
    return run.read_status()


# -- resume --------------------------------------------------------------------------------


def complete_checkpoint(path: Path) -> bool:
    """A checkpoint is complete when its trainer_state.json parses and model weights are there."""
    state = path / "trainer_state.json"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    weights = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin",
               "model.safetensors.index.json", "adapter_model.bin")
    return any((path / w).exists() for w in weights)


def newest_complete_checkpoint(output_dir: Path) -> Path | None:
    for ckpt in reversed(list_checkpoints(output_dir)):
        if complete_checkpoint(ckpt):
            return ckpt
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


def resume(run: RunFolder, overrides: list[str] | None = None) -> RunFolder:
    """A new attempt from the newest complete checkpoint; `overrides` (`key=value`, as `--set`)
    change run.yaml first, e.g. a higher max_steps to train a finished run further.

    A run that already reached its max_steps is refused: resuming it would start a trainer
    with nothing left to do (or one step past the end)."""
    status = run.read_status()
    if status.live:
        raise CockpitError(f"{run.name} is still {status.state} — stop it before resuming")
    if script_section(run) is not None:
        return _resume_script(run, status, overrides)
    import yaml

    from cockpit.config.presets import apply_overrides, preset_from_dict, safe_load

    try:
        cfg = safe_load(run.run_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CockpitError(f"{run.run_yaml}: cannot read it ({exc}) — not a cockpit run folder?") \
            from None
    preset = preset_from_dict(cfg, source=run.run_yaml)
    if overrides:
        preset = apply_overrides(preset, overrides)
        validate(preset, resuming=True)
    output_dir = Path(str(preset.trl.get("output_dir") or run.output))
    ckpt = newest_complete_checkpoint(output_dir)
    if ckpt is None:
        raise CockpitError(f"{run.name}: no complete checkpoint in {output_dir} — nothing to resume "
                           "from; start a new run instead")
    done, total = _steps_done(output_dir, ckpt)
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
        run.run_yaml.write_text(preset.to_yaml(), encoding="utf-8")
        run.trl_yaml.write_text(dump_yaml(trl_cli_config(preset.trl)), encoding="utf-8")
    trainer = json.loads(run.trainer_json.read_text(encoding="utf-8"))
    write_command(run, trainer.get("cli_command"), ckpt)
    return _next_attempt(run, status, ckpt)


def _next_attempt(run: RunFolder, status: Status, ckpt: Path) -> RunFolder:
    for stale in Request:
        run.clear_request(stale)
    run.write_status(Status(state="starting", name=run.name, trainer=status.trainer,
                            attempt=status.attempt + 1, host=os.uname().nodename))
    pid = start_supervisor(run, resume_from=ckpt)
    run.update_status(supervisor_pid=pid)
    return run


def _resume_script(run: RunFolder, status: Status, overrides: list[str] | None) -> RunFolder:
    """Script mode: the same command again, in the same folder; the hook hands the newest complete
    checkpoint of the output_dir the script's trainer reported to `Trainer.train`."""
    from cockpit.launch.script import script_output_dir, write_script_command

    if overrides:
        raise CockpitError(f"{run.name} is a script run: its settings are the script's — change the "
                           "script or its config, then resume without --set")
    output_dir = script_output_dir(run)
    if output_dir is None:
        raise CockpitError(f"{run.name}: its script never started training, so there is no checkpoint "
                           "to resume from — run it again")
    ckpt = newest_complete_checkpoint(output_dir)
    if ckpt is None:
        raise CockpitError(f"{run.name}: no complete checkpoint in {output_dir} — nothing to resume "
                           "from; run the script again")
    done, total = _steps_done(output_dir, ckpt)
    if done is not None and total and done >= total:
        raise CockpitError(f"{run.name}: already finished at step {done} of {total} — nothing to resume")
    write_script_command(run, ckpt)
    return _next_attempt(run, status, ckpt)
