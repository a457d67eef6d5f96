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

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

import psutil

from cockpit.config.launcher import LauncherSpec, run_launcher
from cockpit.errors import CockpitError, say
from cockpit.files import write_atomic
from cockpit.hook.bundle import child_env
from cockpit.launch import launchers as launcher
from cockpit.launch import slurm
from cockpit.run import HELPER_ENV, RUN_DIR_ENV, diagnose, journal, owner, secrets
from cockpit.run.folder import LIVE_STATES, Request, RunFolder, Status, parse_run_argv, read_tail
from cockpit.run.section import CockpitSection, ScriptSection, cockpit_section
from cockpit.supervisor.doctor import start_doctor
from cockpit.supervisor.findings import start as findings_watcher
from cockpit.supervisor.watch import Beat, JournalFeed, Watcher, start_alerts

SAMPLE_EVERY_S = 5.0


def _read_env(run: RunFolder, section: CockpitSection) -> dict[str, str]:
    """The command's environment: a script run's launch environment (kept outside the folder, so a
    resume from another shell runs as the launch did), else this process's; then run.yaml's `env:`
    with its secret references resolved, and the run's marker."""
    script = section.script
    kept = secrets.launch_env(script.launch_env) if script else None
    env = dict(kept if kept is not None else os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    env.update(secrets.resolve_env(section.env))
    env[RUN_DIR_ENV] = str(run.path)
    env.pop(HELPER_ENV, None)  # the trainer is the run's own, never one of the supervisor's helpers
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
    return Supervision(run, resume_from).run_to_end()


class Supervision:
    """One attempt of a run, supervised: the trainer started in its own process group, the loop
    that watches it (`supervisor/watch.py`: one tail of the journal for every watcher), and the
    run's end written whatever way it ended."""

    def __init__(self, run: RunFolder, resume_from: Path | None) -> None:
        self.run = run
        self.resume_from = resume_from
        self.status = run.read_status()
        self.status.journal_error = None  # a resumed run starts with a journal it can write, until it cannot
        run.reserve_status()  # room for the run's end on a disk that fills (a run folder made before it)
        self.jw = journal.JournalWriter(run.events, on_trouble=self._journal_trouble)
        self.child: subprocess.Popen[bytes] | None = None
        self.stopped_by_signal = False
        """SIGTERM or SIGINT reached the supervisor itself: the run ends as a forced stop does."""
        self.started_mono = time.monotonic()
        """When this attempt started, on the monotonic clock (`Beat.started_at`)."""
        self.section = CockpitSection()
        """run.yaml's `cockpit:` section, read once (strictly) as the attempt starts."""

    def _journal_trouble(self, why: str | None) -> None:  # a journal that cannot be written is a flag in status
        self.status.journal_error = why
        _save_status(self.run, self.status)

    def run_to_end(self) -> int:
        run, status = self.run, self.status
        # Everything this process starts carries the run's marker (notify commands and their children
        # included), so `stop --force` and the sweep at the end find them (`run/owner.py`); set after
        # the start, it is not in this process's own /proc environ: the supervisor is never "marked".
        os.environ[owner.RUN_DIR_ENV] = str(run.path)
        os.environ[HELPER_ENV] = "1"  # ... as a helper: the trainer's own environment leaves it out (`_read_env`)
        status.supervisor_pid = os.getpid()
        status.supervisor_started = owner.start_time(os.getpid())
        status.marker = str(run.path)
        status.started = time.time()
        self.started_mono = time.monotonic()
        _save_status(run, status)  # at once: readers prove this process by its start time
        self.alerts = start_alerts(run, self.jw, status.trainer)
        findings = findings_watcher(run, self.jw, status.trainer)
        self.feed = JournalFeed(run.events, history=findings.history)
        self.watchers: list[Watcher] = [findings, self.alerts]  # each ends after those before it
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)

        if run.pending_request(Request.STOP_FORCE):
            return self.finish("killed", None, None,
                               diagnose.Diagnosis("stopped_by_user", "stopped before it started", ""))
        try:
            self.section = cockpit_section(run, strict=True)
            script = self.section.script
            spec, argv, cwd, env = self._command(self.section, _read_env(run, self.section))
        except CockpitError as exc:
            return self.finish("failed", None, None,
                               diagnose.Diagnosis("config", str(exc), "fix the cockpit: section in the preset"))
        except OSError as exc:  # the hook's folder cannot be written (a full disk, something odd in its place)
            return self.finish("failed", None, None,
                               diagnose.Diagnosis("hook", f"cannot write the run's hook folder: {exc}",
                                                  "free some space in the run folder, then `cockpit resume RUN`"))
        if spec.kind == "slurm":
            self.watchers = [self.alerts]  # a Slurm job's trainer runs elsewhere: alerts only
            return self._supervise_slurm(spec, argv, cwd, env,
                                         engine=None if script is not None else launcher.slurm_engine(spec))
        run.control_dir()
        try:
            run.outcome_json.unlink()
        except FileNotFoundError:
            pass
        failed = self._start(argv, cwd, env)
        if failed is not None:
            return self.finish("failed", None, None, failed)
        rc = self._watch()
        return self.finish(*self._verdict(rc, script))

    def _command(self, section: CockpitSection, env: dict[str, str]
                 ) -> tuple[LauncherSpec, list[str], str, dict[str, str]]:
        """The launcher, the command line, where it runs and its environment: CockpitError for a
        bad launcher, OSError when a script's hook folder cannot be written."""
        cwd = str(self.run.path)
        spec = run_launcher(self.run, section.launcher)
        script = section.script
        if script is not None:  # script mode: the user's command, unchanged, where it was given
            argv = list(script.command)
            cwd = script.cwd or cwd
            env = child_env(self.run.path, env, self.resume_from)
        else:
            argv = launcher.runner_argv(self.run.path, spec, self.resume_from)
        return spec, argv, cwd, env

    def _start(self, argv: list[str], cwd: str, env: dict[str, str]) -> diagnose.Diagnosis | None:
        """The trainer, started in a process group of its own with its output in stdout.log; the
        diagnosis when it could not be."""
        run, status = self.run, self.status
        try:
            log = _open_log(run.stdout_log)
        except OSError as exc:  # a folder in stdout.log's place: the run cannot keep its output
            return diagnose.Diagnosis("stdout_log", f"cannot open {run.stdout_log.name}: {exc.strerror or exc}",
                                      f"remove what is in {run.stdout_log} and resume")
        with open(os.devnull, "rb") as devnull, log as out:
            try:
                self.child = subprocess.Popen(argv, stdin=devnull, stdout=out, stderr=subprocess.STDOUT,
                                              process_group=0, close_fds=True, env=env, cwd=cwd)
            except OSError as exc:  # a script whose program vanished or is not executable
                return diagnose.Diagnosis("not_found", f"could not start {argv[0]}: {exc.strerror or exc}",
                                          "check the command and its working folder")
        status.state = "running"
        status.pid = self.child.pid
        status.pgid = self.child.pid
        status.pid_started = owner.start_time(self.child.pid)  # signals later go to this process only (run/owner.py)
        _save_status(run, status)
        return None

    def _watch(self) -> int:
        """Follow the trainer until it exits: system samples, the stop-and-save state, the watchers;
        then whatever is left of its process group goes. Its exit code (-N: killed by signal N)."""
        run, status, child = self.run, self.status, self.child
        assert child is not None
        sampler = SystemSampler()
        self.watchers.insert(0, start_doctor(run, self.jw, self.resume_from, said=self.feed.finding_kinds))
        next_sample = time.monotonic() + 1.0
        while True:
            try:
                rc = child.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            _follow(run, self.jw, status)
            if time.monotonic() >= next_sample:
                next_sample = time.monotonic() + SAMPLE_EVERY_S
                values = sampler.sample(child.pid)
                if values:
                    self.jw.write(journal.system(values))
            if run.pending_request(Request.STOP_SAVE) and status.state == "running":
                status.state = "stopping"
                _save_status(run, status)
            self.feed.pump(self.beat(child.pid), self.watchers)
        # Anything left in the group (dataloader workers, accelerate children) goes too.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return rc

    def _verdict(self, rc: int, script: ScriptSection | None
                 ) -> tuple[str, int | None, int | None, diagnose.Diagnosis]:
        """How the attempt ended: state, exit code, signal and why, from the exit code and the
        training process's own word (control/outcome.json, read here once)."""
        run = self.run
        _follow(run, self.jw, self.status)  # a folder moved in the last moments: its verdict is where it is now
        outcome = run.read_outcome()
        if rc < 0:
            forced = run.pending_request(Request.STOP_FORCE) or self.stopped_by_signal
            return "killed", None, -rc, diagnose.classify_signal(-rc, requested=forced)
        if rc == 0:  # by the training process's own word: exiting 0 mid-training is not finishing
            self.feed.pump(self.beat(None), self.watchers)  # the trainer's last lines, read once, by the feed
            found = diagnose.verdict(outcome, script=script is not None, exit_code=0, trained=self.feed.trained)
            state, diag = found or ("finished", diagnose.Diagnosis("finished", "training finished", ""))
            return state, 0, None, diag
        tail = read_tail(run.stdout_log, 32_768)[0].decode("utf-8", errors="replace")
        if outcome.get("reason"):
            diag = diagnose.Diagnosis(outcome.get("code", "error"), outcome["reason"], outcome.get("fix", ""))
        else:
            diag = diagnose.explain(tail, fallback=f"the trainer exited with code {rc}",
                                    fix=f"see {run.stdout_log.name}")
        places: list[Path | str] = [run.path, run.output, *([script.cwd] if script else [])]
        diag = diagnose.disk_full(diag, tail, places)  # a full disk is named, with what is free where
        return "failed", rc, None, diag

    def _on_term(self, _signum: int, _frame: object) -> None:
        # Someone asked the supervisor itself to stop: stop the run the same way as a forced stop.
        self.stopped_by_signal = True
        try:
            self.run.request(Request.STOP_FORCE)
        except OSError:  # a full disk: the signal below and stopped_by_signal say it all the same
            pass
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def beat(self, pid: int | None) -> Beat:
        return Beat(pid=pid, started_at=self.started_mono,
                    live=self.status.state in LIVE_STATES)

    def finish(self, state: str, exit_code: int | None, signum: int | None, diag: diagnose.Diagnosis) -> int:
        """Write the run's end: each watcher's last word (in order, each seeing what those before it
        wrote), the final status, then `run_ended`; then the notifications still going, bounded, and
        whatever still carries the run's marker."""
        run, jw, status = self.run, self.jw, self.status
        _follow(run, jw, status)
        beat = self.beat(None)
        self.feed.pump(beat, self.watchers)  # what the trainer wrote last: the feed's last step is the run's
        ended = journal.run_ended(state, exit_code=exit_code, signal=signum, reason=diag.reason,
                                  fix=diag.fix or None, step=self.feed.last_step)
        for i, watcher in enumerate(self.watchers):
            if i:
                self.feed.pump(beat, self.watchers[i:])  # what the watchers before this one wrote last
            watcher.ended(ended, beat)
        status.state = state
        status.ended = time.time()
        status.exit_code = exit_code
        status.signal = signum
        status.reason = diag.reason
        status.fix = diag.fix or None
        unsaved = _save_status(run, status)  # first: a reader that sees run_ended finds the status final too
        jw.write(ended)  # when training ended, not when the notifications are done
        if unsaved:  # even the reserved room failed: the journal's run_ended is the run's end (`runs` reads it)
            jw.write(journal.warning(f"status.json could not be written at the run's end: {unsaved} — "
                                     "the run's end is this journal's run_ended line", code="status_unwritten"))
        for done in Request:
            run.clear_request(done)
        for watcher in self.watchers:
            watcher.close()
        _sweep(run, status.marker)
        jw.close()
        return 0

    def _supervise_slurm(self, spec: LauncherSpec, task: list[str], cwd: str, env: dict[str, str], *,
                         engine: str | None) -> int:
        """A Slurm attempt: write the job script, sbatch it, follow squeue until the job leaves the
        queue, forward a force stop as scancel, and say how the job ended."""
        run, status = self.run, self.status
        missing = slurm.available()
        if missing:
            return self.finish("failed", None, None,
                              diagnose.Diagnosis("config", missing, "run cockpit on a Slurm login node"))
        ours = {k: v for k, v in env.items() if k.startswith("COCKPIT_") or k in (
            "PYTHONPATH", "PYTHONUNBUFFERED", "TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_PROGRESS_BARS")}
        declared = self.section.env
        given = secrets.resolve_env(declared)
        hidden = {k: v for k, v in given.items()  # a secret goes through sbatch's environment, not the script
                  if declared.get(k, "").startswith(secrets.REF_PREFIX)}
        ours.update({k: v for k, v in given.items() if k not in hidden})
        script_path = run.path / "slurm.sbatch"
        write_atomic(script_path, slurm.sbatch_script(run_dir=run.path, chdir=Path(cwd), job_name=run.name,
                                                      launcher=spec, task=task, distributed=engine, env=ours))
        try:
            job = slurm.submit(script_path, env=hidden)
        except CockpitError as exc:
            return self.finish("failed", None, None, diagnose.Diagnosis("slurm", str(exc), "fix cockpit.launcher"))
        status.job_id = job
        status.state = "queued"
        status.reason = "submitted"
        _save_status(run, status)
        self.jw.write(journal.phase("starting", f"slurm job {job} submitted"))
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
            self.feed.pump(self.beat(None), self.watchers)
            time.sleep(1.0)
        end = slurm.job_end(job)
        if cancelled or (end.state == "killed" and run.pending_request(Request.STOP_FORCE)):
            return self.finish("killed", end.exit_code, None,
                              diagnose.Diagnosis("stopped_by_user", f"stopped by request (scancel of job {job})",
                                                 "resume it with `cockpit resume RUN`"))
        outcome = run.read_outcome()
        if end.state == "finished" and outcome.get("state") == "stopped":
            return self.finish("stopped", 0, None,
                              diagnose.Diagnosis("stopped", outcome.get("reason") or "stopped and saved on request",
                                                 outcome.get("fix", "")))
        if end.state == "failed" and outcome.get("reason"):
            return self.finish("failed", end.exit_code, None, diagnose.Diagnosis(
                outcome.get("code", "error"), outcome["reason"], outcome.get("fix", "")))
        return self.finish(end.state, end.exit_code, None, diagnose.Diagnosis(end.state, end.reason, end.fix))


def _follow(run: RunFolder, jw: journal.JournalWriter, status: Status) -> None:
    """The run folder was moved mid-run: go on where it is now (status, journal, requests), say so
    once in the journal and supervisor.log. Its processes keep the marker they were started with."""
    old = run.path
    if run.follow(jw):
        say(f"cockpit: the run folder moved from {old} to {run.path}; the run goes on there")
        jw.write(journal.warning(f"the run folder moved from {old} to {run.path} while it ran", code="run_moved"))
        _save_status(run, status)


SWEEP_PASSES = 3
SWEEP_AGAIN_S = 0.1


def _sweep(run: RunFolder, marker: str | None) -> None:
    """The run is over: whatever still carries its marker (a helper the script started in a session
    of its own, a notify command's `setsid` child) goes too, named in supervisor.log.

    Looked for again after a moment, until a look finds nothing new: a process caught in the
    middle of its exec (a notify command's `setsid sleep`, started as the command itself exits)
    shows no environment to read, so one look can miss it (seen under load)."""
    ended: dict[int, str] = {}
    try:
        for n in range(SWEEP_PASSES):
            left = [p for p in owner.marked_processes(run.path, marker=marker) if p.pid not in ended]
            if not left and n > 0:
                break
            for p in left:
                ended[p.pid] = _name(p)
            owner.end_processes(left, 2.0)
            time.sleep(SWEEP_AGAIN_S)
    except Exception as exc:  # noqa: BLE001 - the sweep never keeps the run's end from being written
        say(f"cockpit: could not end the run's leftover processes: {type(exc).__name__}: {exc}")
        return
    if ended:
        say(f"cockpit: ended {len(ended)} process(es) of the run still running after it: "
            f"{', '.join(sorted(ended.values()))}")


def _name(proc: psutil.Process) -> str:
    try:
        return f"{proc.name()} (pid {proc.pid})"
    except Exception:  # noqa: BLE001
        return f"pid {proc.pid}"


def _open_log(path: Path) -> BinaryIO:
    """stdout.log for appending, never through a link (a symlink there is replaced: the trainer's
    output never goes to a file outside the run folder)."""
    from cockpit.files import open_own

    return os.fdopen(open_own(path, os.O_WRONLY | os.O_APPEND), "ab")


def _save_status(run: RunFolder, status: Status) -> str | None:
    """status.json, whatever the disk says: the atomic write needs a free block and a free inode;
    on a full disk, or one out of inodes, it goes through the room reserved beside it
    (`RunFolder.reserve_status`), renamed in whole — a reader never sees half a status; when even
    that fails, one line on stderr naming why (out of inodes said as such), returned, and the
    supervisor and the run go on."""
    try:
        run.write_status(status)
    except OSError as exc:
        why = diagnose.write_failure(exc, run.path)
        say(f"cockpit: cannot write {run.status_json}: {why}")
        return why
    return None


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
