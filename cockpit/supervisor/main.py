"""The supervisor: a tiny stdlib process that outlives the UI and the SSH session.

`python -m cockpit.supervisor RUN_DIR [--resume CKPT]`, started by
`launch.start_supervisor` in a new session with stdin from /dev/null. It starts
the runner in its own process group with its output in stdout.log, records
pids in status.json, samples CPU/RAM (and GPUs when nvidia-ml-py is there) into
the journal so the system pane keeps moving even when the training loop is
stuck, and writes the final `run_ended` line and status whatever way the runner
ended — exit code, exception it reported, or a signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from cockpit.alerts.alerter import Alerter
from cockpit.config.launcher import check as check_launcher
from cockpit.errors import CockpitError
from cockpit.hook.bundle import child_env
from cockpit.launch import launchers as launcher
from cockpit.launch import slurm
from cockpit.run import diagnose, journal, owner
from cockpit.run.folder import LIVE_STATES, Request, RunFolder, Status, parse_run_argv, read_tail, script_section
from cockpit.run.summaries import tail_records
from cockpit.supervisor.doctor import start_doctor
from cockpit.supervisor.findings import start as findings_watcher

SAMPLE_EVERY_S = 5.0


def _read_env(run: RunFolder) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["COCKPIT_RUN_DIR"] = str(run.path)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    extra = run.cockpit_section().get("env") or {}
    if isinstance(extra, dict):
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


class SystemSampler:
    """CPU/RAM of the run's processes; GPU figures when nvidia-ml-py and a GPU are there."""

    def __init__(self) -> None:
        self._nvml: ModuleType | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
        except Exception:  # noqa: BLE001 - no driver, no library: no GPU figures
            self._nvml = None
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, pid: int) -> dict[str, object]:
        out: dict[str, object] = {}
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
            cpu = 0.0
            rss = 0
            for p in procs:
                cached = self._procs.setdefault(p.pid, p)
                try:
                    cpu += cached.cpu_percent(None)
                    rss += p.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            out.update(cpu_percent=round(cpu, 1), rss_mb=round(rss / 2**20, 1),
                       processes=len(procs))
            vm = psutil.virtual_memory()
            out.update(ram_used_percent=vm.percent, ram_total_mb=round(vm.total / 2**20),
                       cpus=psutil.cpu_count() or 1)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
        if self._nvml is not None:
            gpus = []
            nv = self._nvml
            try:
                for i in range(nv.nvmlDeviceGetCount()):
                    h = nv.nvmlDeviceGetHandleByIndex(i)
                    mem = nv.nvmlDeviceGetMemoryInfo(h)
                    gpus.append({
                        "index": i,
                        "util_percent": nv.nvmlDeviceGetUtilizationRates(h).gpu,
                        "mem_used_mb": round(mem.used / 2**20), "mem_total_mb": round(mem.total / 2**20),
                        "temp_c": nv.nvmlDeviceGetTemperature(h, 0),
                        "power_w": round(nv.nvmlDeviceGetPowerUsage(h) / 1000, 1),
                    })
            except Exception:  # noqa: BLE001 - a GPU query failing must not end the run
                pass
            if gpus:
                out["gpus"] = gpus
        return out


def supervise(run: RunFolder, resume_from: Path | None = None) -> int:
    status = run.read_status()
    status.journal_error = None  # a resumed run starts with a journal it can write, until it cannot

    def journal_trouble(why: str | None) -> None:  # a journal that cannot be written is a flag in status
        status.journal_error = why
        _save_status(run, status)

    jw = journal.JournalWriter(run.events, on_trouble=journal_trouble)
    status.supervisor_pid = os.getpid()
    status.supervisor_started = owner.start_time(os.getpid())
    status.started = time.time()
    _save_status(run, status)  # at once: readers prove this process by its start time
    alerter = _alerter(run, jw, status.trainer)
    findings = findings_watcher(run, jw, status.trainer)

    def finish(*args: object) -> int:
        findings.poll(final=True)
        return _finish(*args, alerter=alerter)  # type: ignore[arg-type]
    forced = {"by_signal": False}
    child: subprocess.Popen[bytes] | None = None

    def on_term(_signum: int, _frame: object) -> None:
        # Someone asked the supervisor itself to stop: stop the run the same way as a forced stop.
        forced["by_signal"] = True
        try:
            run.request(Request.STOP_FORCE)
        except OSError:  # a full disk: the signal below and forced["by_signal"] say it all the same
            pass
        if child is not None and child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    if run.pending_request(Request.STOP_FORCE):
        return finish(run, jw, status, "killed", None, None,
                       diagnose.Diagnosis("stopped_by_user", "stopped before it started", ""))

    script = script_section(run)
    env = _read_env(run)
    cwd = str(run.path)
    try:
        spec = check_launcher(run.cockpit_section().get("launcher"))
        if script is not None:  # script mode: the user's command, unchanged, where it was given
            argv = [str(a) for a in script["command"]]
            cwd = str(script.get("cwd") or cwd)
            env = child_env(run.path, env, resume_from)
        else:
            argv = launcher.runner_argv(run.path, spec, resume_from)
    except CockpitError as exc:
        return finish(run, jw, status, "failed", None, None,
                       diagnose.Diagnosis("config", str(exc), "fix cockpit.launcher in the preset"))
    if spec["kind"] == "slurm":
        return _supervise_slurm(run, jw, status, spec, argv, cwd, env, alerter=alerter,
                                engine=None if script is not None else launcher.slurm_engine(spec))
    (run.control).mkdir(exist_ok=True)
    outcome_file = run.outcome_json
    try:
        outcome_file.unlink()
    except FileNotFoundError:
        pass
    try:
        journal_start = run.events.stat().st_size  # this attempt's records come after
    except OSError:
        journal_start = 0
    with open(os.devnull, "rb") as devnull, open(run.stdout_log, "ab") as out:
        try:
            child = subprocess.Popen(argv, stdin=devnull, stdout=out, stderr=subprocess.STDOUT,
                                     process_group=0, close_fds=True, env=env, cwd=cwd)
        except OSError as exc:  # a script whose program vanished or is not executable
            return finish(run, jw, status, "failed", None, None, diagnose.Diagnosis(
                "not_found", f"could not start {argv[0]}: {exc.strerror or exc}",
                "check the command and its working folder"))
    status.state = "running"
    status.pid = child.pid
    status.pgid = child.pid
    status.pid_started = owner.start_time(child.pid)  # signals later go to this process only (run/owner.py)
    _save_status(run, status)

    sampler = SystemSampler()
    doctor = start_doctor(run, jw, resume_from)
    next_sample = time.monotonic() + 1.0
    while True:
        try:
            rc = child.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= next_sample:
            next_sample = time.monotonic() + SAMPLE_EVERY_S
            values = sampler.sample(child.pid)
            if values:
                jw.write(journal.system(values))
        if run.pending_request(Request.STOP_SAVE) and status.state == "running":
            status.state = "stopping"
            _save_status(run, status)
        _poll_alerts(alerter, status)
        findings.poll()
        doctor.poll(child.pid)

    # Anything left in the group (dataloader workers, accelerate children) goes too.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    doctor.ended()

    outcome: dict[str, Any] = {}
    try:
        outcome = json.loads(outcome_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    requested_force = run.pending_request(Request.STOP_FORCE) or forced["by_signal"]
    if rc < 0:
        diag = diagnose.classify_signal(-rc, requested=requested_force)
        return finish(run, jw, status, "killed", None, -rc, diag)
    if rc == 0:
        unseen = _no_trainer(run, journal_start, outcome) if script is not None and not outcome.get("state") else None
        if unseen is not None:
            return finish(run, jw, status, "finished", 0, None, unseen)
        state = outcome.get("state") or "finished"
        reason = outcome.get("reason") or ("stopped and saved on request" if state == "stopped"
                                           else "training finished")
        return finish(run, jw, status, state, 0, None,
                       diagnose.Diagnosis(outcome.get("code", state), reason, outcome.get("fix", "")))
    tail = read_tail(run.stdout_log, 32_768)[0].decode("utf-8", errors="replace")
    if outcome.get("reason"):
        diag = diagnose.Diagnosis(outcome.get("code", "error"), outcome["reason"], outcome.get("fix", ""))
    else:
        diag = diagnose.explain(tail, fallback=f"the trainer exited with code {rc}", fix=f"see {run.stdout_log.name}")
    places = [run.path, run.output, *([script["cwd"]] if script and script.get("cwd") else [])]
    diag = diagnose.disk_full(diag, tail, places)  # a full disk is named, with what is free where
    return finish(run, jw, status, "failed", rc, None, diag)


def _supervise_slurm(run: RunFolder, jw: journal.JournalWriter, status: Status, spec: dict, task: list[str],
                     cwd: str, env: dict[str, str], *, engine: str | None, alerter: Alerter | None) -> int:
    """A Slurm attempt: write the job script, sbatch it, follow squeue until the job leaves the
    queue, forward a force stop as scancel, and say how the job ended."""
    def finish(*args: object) -> int:
        return _finish(*args, alerter=alerter)  # type: ignore[arg-type]

    missing = slurm.available()
    if missing:
        return finish(run, jw, status, "failed", None, None,
                       diagnose.Diagnosis("config", missing, "run cockpit on a Slurm login node"))
    ours = {k: v for k, v in env.items() if k.startswith("COCKPIT_") or k in (
        "PYTHONPATH", "PYTHONUNBUFFERED", "TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_PROGRESS_BARS")}
    ours.update({str(k): str(v) for k, v in (run.cockpit_section().get("env") or {}).items()})
    script_path = run.path / "slurm.sbatch"
    script_path.write_text(slurm.sbatch_script(run_dir=run.path, chdir=Path(cwd), job_name=run.name,
                                               launcher=spec, task=task, distributed=engine, env=ours),
                           encoding="utf-8")
    try:
        job = slurm.submit(script_path)
    except CockpitError as exc:
        return finish(run, jw, status, "failed", None, None,
                       diagnose.Diagnosis("slurm", str(exc), "fix cockpit.launcher"))
    status.job_id = job
    status.state = "queued"
    status.reason = "submitted"
    _save_status(run, status)
    jw.write(journal.phase("starting", f"slurm job {job} submitted"))
    cancelled = False
    while True:
        seen = slurm.queue_state(job)
        if seen is None:
            break
        state, why = seen
        want = "queued" if state in ("PENDING", "CONFIGURING", "REQUEUED", "SUSPENDED") else "running"
        if status.state == "stopping" and want == "running":
            want = "stopping"
        if run.pending_request(Request.STOP_SAVE) and want == "running":
            want = "stopping"
        reason = why if want == "queued" and why not in ("None", "") else None
        if (want, reason) != (status.state, status.reason):
            status.state, status.reason = want, reason
            _save_status(run, status)
        if run.pending_request(Request.STOP_FORCE) and not cancelled:
            cancelled = True
            slurm.cancel(job)
        _poll_alerts(alerter, status)
        time.sleep(1.0)
    end = slurm.job_end(job)
    if cancelled or (end.state == "killed" and run.pending_request(Request.STOP_FORCE)):
        return finish(run, jw, status, "killed", end.exit_code, None,
                       diagnose.Diagnosis("stopped_by_user", f"stopped by request (scancel of job {job})",
                                          "resume it with `cockpit resume RUN`"))
    outcome = _read_outcome(run)
    if end.state == "finished" and outcome.get("state") == "stopped":
        return finish(run, jw, status, "stopped", 0, None,
                       diagnose.Diagnosis("stopped", outcome.get("reason") or "stopped and saved on request",
                                          outcome.get("fix", "")))
    if end.state == "failed" and outcome.get("reason"):
        return finish(run, jw, status, "failed", end.exit_code, None,
                       diagnose.Diagnosis(outcome.get("code", "error"), outcome["reason"], outcome.get("fix", "")))
    return finish(run, jw, status, end.state, end.exit_code, None,
                   diagnose.Diagnosis(end.state, end.reason, end.fix))


def _alerter(run: RunFolder, jw: journal.JournalWriter, trainer: str | None) -> Alerter | None:
    try:
        return Alerter(run, jw, trainer=trainer)
    except Exception as exc:  # noqa: BLE001 - alerts must never keep a run from starting
        jw.write(journal.warning(f"alerts are off for this run: {type(exc).__name__}: {exc}"[:300], code="alert_rule"))
        return None


def _poll_alerts(alerter: Alerter | None, status: Status) -> None:
    if alerter is None:
        return
    try:
        alerter.poll(started_at=status.started or time.time(), live=status.state in LIVE_STATES)
    except Exception as exc:  # noqa: BLE001 - a failing alert is a journal line, never the run's end
        alerter.jw.write(journal.warning(f"alert check failed: {type(exc).__name__}: {exc}"[:300], code="alert_rule"))


def _no_trainer(run: RunFolder, journal_start: int, outcome: dict) -> diagnose.Diagnosis | None:
    """A script that exited 0 without training: its own outcome, not "training finished". The hook
    says how many Trainers it saw (outcome.json); the journal says whether any of them started
    training in this attempt (a `run_started` line after `journal_start`). None when one did."""
    marker = b'"kind":"' + journal.RUN_STARTED.encode() + b'"'
    try:
        with open(run.events, "rb") as fh:
            fh.seek(journal_start)
            tail = b""
            while chunk := fh.read(1 << 20):
                if marker in tail + chunk:
                    return None
                tail = chunk[-len(marker):]
    except OSError:
        return None  # the journal cannot be read: no claim either way
    built = outcome.get("trainers_built")
    if isinstance(built, int) and built > 0:
        return diagnose.Diagnosis("no_training", f"the script built {built} Trainer{'s' if built > 1 else ''} "
                                  "but never started training (Trainer.train was not called)",
                                  "call trainer.train() in the script")
    return diagnose.Diagnosis("no_trainer", "no Trainer was built — the script ended without building a "
                              "transformers Trainer, so nothing was trained or watched",
                              "check that the script builds a transformers or TRL Trainer and calls train()")


def _read_outcome(run: RunFolder) -> dict:
    try:
        return json.loads(run.outcome_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _finish(run: RunFolder, jw: journal.JournalWriter, status, state: str, exit_code: int | None,
            signum: int | None, diag: diagnose.Diagnosis, *, alerter: Alerter | None = None) -> int:
    # The last step from the journal's tail: the whole journal may be large.
    steps = [r.step for r in tail_records(run.events) if r.kind == journal.METRICS and r.step is not None]
    last_step = steps[-1] if steps else None
    ended = journal.run_ended(state, exit_code=exit_code, signal=signum, reason=diag.reason,
                              fix=diag.fix or None, step=last_step)
    if alerter is not None:
        _poll_alerts(alerter, status)  # what the trainer wrote last, then the rules on the run's end
        try:
            alerter.ended(ended)
        except Exception as exc:  # noqa: BLE001
            jw.write(journal.warning(f"alert check failed: {type(exc).__name__}: {exc}"[:300], code="alert_rule"))
    jw.write(ended)  # when training ended, not when the notifications are done
    status.state = state
    status.ended = time.time()
    status.exit_code = exit_code
    status.signal = signum
    status.reason = diag.reason
    status.fix = diag.fix or None
    _save_status(run, status)
    for done in Request:
        run.clear_request(done)
    if alerter is not None:
        alerter.close()  # the run_ended notifications, bounded; a command still going is killed
    jw.close()
    return 0


def _save_status(run: RunFolder, status: Status) -> None:
    """status.json, whatever the disk says: the atomic write needs a free block; when the disk is
    full, overwrite the file in place (a status fits in the block it already has); when even that
    fails, one line on stderr — the supervisor and the run go on."""
    try:
        run.write_status(status)
        return
    except OSError as exc:
        first = exc
    data = (json.dumps(asdict(status), indent=2) + "\n").encode()
    try:
        fd = os.open(run.status_json, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError as exc:
        _say(f"cockpit: cannot write {run.status_json}: {first}; in place: {exc}")


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - supervisor.log on a full disk
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        run, resume_from = parse_run_argv(sys.argv[1:] if argv is None else argv, "cockpit.supervisor")
        _own(run)
    except CockpitError as exc:
        print(exc, file=sys.stderr)
        return 2
    return supervise(run, resume_from)


def _own(run: RunFolder) -> int:
    """Hold the run's lock for as long as this process lives (`run/owner.py`): the one handed over by
    `launch` / `resume`, or a fresh one. Another live supervisor of the folder: CockpitError, and
    this one leaves the folder untouched. The descriptor is not passed on to the trainer."""
    handed = os.environ.pop(owner.LOCK_FD_ENV, "")
    fd = int(handed) if handed.isdigit() and owner.adopt(int(handed)) else None
    if fd is None:
        fd = owner.acquire(run.path, run.name)
    os.set_inheritable(fd, False)
    return fd


if __name__ == "__main__":
    sys.exit(main())
