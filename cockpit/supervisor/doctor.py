"""The supervisor's doctor: findings that need the live process or the checkpoints, not only the
metrics. A `Watcher` (`supervisor/watch.py`): it reads the journal records the supervisor's one
tail hands it and

- names a hang: no step for k × the median step time while the process is alive → every
  process's Python stack in `hangs/` and a `hang` finding (`findings/hang.py`);
- checks each checkpoint's weights against the start (`findings/weights.py`);
- after a resume, checks that step, learning rate and loss carry on (`findings/resume.py`).

Reading a checkpoint or dumping stacks can take seconds, so they run on one worker thread; the
supervisor's loop only pays a look at the new records. Every failure here is one warning line in the
journal and turns the doctor off: it can never stop the run or its supervisor.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError, failure
from cockpit.findings import hang, resume, sft_data
from cockpit.findings.model import Finding
from cockpit.run import journal
from cockpit.run.folder import RunFolder, checkpoint_step, list_checkpoints
from cockpit.run.section import cockpit_section, reported_path
from cockpit.supervisor.watch import Beat

POLL_EVERY_S = 1.0
SAVING_SLACK = 5.0
"""The hang limit is this many times longer while the runner saves the final model."""
END_WAIT_S = 8.0
"""How long the end of a run waits for the checks still queued (the last checkpoint's weights, the
SFT data probe): run_ended and the final status wait for them, and a resume waits for this
supervisor to let go of the run, so what is not done by then is dropped (the probe is killed).
`cockpit.doctor.end_wait_s` in the preset sets another (a busy machine's probe may need longer)."""
KILLED_WAIT_S = 2.0
"""How long the end waits for the SFT data thread to say its probe was stopped."""


class Doctor:
    """A `Watcher`: `poll` from the supervisor's loop (this attempt's records only: a resumed run's
    journal holds the earlier ones), `ended` once the trainer exited."""

    def __init__(self, run: RunFolder, jw: journal.JournalWriter, resume_from: Path | None = None, *,
                 said: set[str] | None = None) -> None:
        self.run = run
        self.jw = jw
        section = self.section = cockpit_section(run)
        self.settings: dict[str, Any] = section.doctor
        env = {**os.environ, **section.env}  # `cockpit run --env COCKPIT_HANG_FLOOR_S=30 -- ...`
        self.clock = hang.StepClock(hang.HangLimits.from_settings(self.settings.get("hang"), env))
        self.end_wait_s = hang.positive(self.settings.get("end_wait_s"), END_WAIT_S)
        self.resume_from = resume_from
        self.after: list[dict[str, Any]] = []
        self.resume_done = resume_from is None
        self.hung_at: int | None = None
        """The step of the hang already reported (one finding a hang, not one a poll)."""
        self.model: str | None = None
        self.output_dir: Path | None = None
        self.segment: int | None = None
        """The Trainer training now, as its run_started names it (a script's; None for a preset run)."""
        self._after_segment: int | None = None
        """The Trainer whose steps `after` holds: the one the resume check is about."""
        self.checked: set[str] = set()
        self._said: set[str] = said if said is not None else set()
        """The kinds of finding the run's journal holds: the supervisor's feed keeps it as it reads."""
        self._resumed_here = True
        self._world_said = False
        """False while the journal follows a script's Trainer resumed from another checkpoint."""
        self.next_poll = 0.0
        self.phase = ""
        self.off = False
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="cockpit-doctor", daemon=True)
        self._worker.start()
        self._probe: subprocess.Popen | None = None
        self._sft = None
        if section.script is None and sft_data.is_sft(run.read_status().trainer) \
                and not sft_data.turned_off(self.settings):
            self._sft = threading.Thread(target=self._sft_data, name="cockpit-doctor-sft", daemon=True)
            self._sft.start()

    # -- the supervisor's calls ----------------------------------------------------------------
    def poll(self, records: Sequence[journal.Record], beat: Beat) -> None:
        if self.off:
            return
        self._guard(lambda: self._read(records, time.monotonic()))  # when seen: a wall-clock jump is no silence
        now = time.monotonic()
        if self.off or now < self.next_poll:
            return
        self.next_poll = now + POLL_EVERY_S
        self._guard(lambda: self._poll(beat.pid))

    def ended(self, record: journal.Record, beat: Beat) -> None:  # noqa: ARG002 - Watcher's signature
        """The trainer is gone: the resume check with what it logged, the final model's weights,
        then wait (bounded) for the queued checks."""
        if not self.off:
            self._guard(self._end)
        self._jobs.put(None)
        self._stop_spying()  # the trainer is gone: a py-spy still dumping it would only hold the end up
        deadline = time.monotonic() + self.end_wait_s
        self._worker.join(self.end_wait_s)
        if self._sft is not None:
            if self._sft.is_alive() and self._probe is not None:
                _renice(self._probe.pid)  # the training is over: the measuring may have the CPU now
            self._sft.join(max(0.0, deadline - time.monotonic()))
            if self._sft.is_alive() and self._probe is not None:
                self._probe.kill()  # ours (not the run's group): the run is over, so is its measuring
                self._sft.join(KILLED_WAIT_S)  # its one line says so before run_ended, not after it

    def close(self) -> None:
        pass

    def _end(self) -> None:
        if not self.resume_done and self.after:
            self._resume_check()
        if self.output_dir is not None and any(self.output_dir.glob("*.safetensors")):
            self._queue_weights(self.output_dir, self.clock.last_step or 0)

    # -- inside ------------------------------------------------------------------------------
    def _spying(self, proc: subprocess.Popen) -> None:
        self._spy = proc

    def _stop_spying(self) -> None:
        spy = getattr(self, "_spy", None)
        if spy is not None and spy.poll() is None:
            try:
                spy.kill()  # the doctor's own child (not the run's): py-spy dumping a process that is gone
            except OSError:
                pass

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the doctor never takes the supervisor down
            self.off = True
            self._warn(failure(exc, "the doctor stopped (hang, resume and weight checks are off)"))

    def _warn(self, message: str) -> None:
        try:
            self.jw.write(journal.warning(message[:400], code="doctor"))
        except Exception:  # noqa: BLE001 - a closed or full journal: nothing more to say
            pass

    def _write(self, findings: list[Finding], segment: int | None = None) -> None:
        """Each finding a record; one about a script's Trainer names it (`segment`, as the live
        judge's do): a check done on the worker thread may be written after the next Trainer began,
        and a reader that placed it by its position in the journal would give it to that one. Named
        whenever the Trainer's run_started named it: the doctor cannot know, when it writes, whether
        the script has already begun its next Trainer."""
        for f in findings:
            rec = f.to_record()
            if segment is not None:
                rec.data["segment"] = segment
            self.jw.write(rec)

    def _poll(self, pid: int | None) -> None:
        if not self.resume_done and len(self.after) >= resume.WANT_POINTS:
            self._resume_check()
        if pid is not None:
            self._check_hang(pid)

    def _read(self, records: Sequence[journal.Record], now: float) -> None:
        for rec in records:
            self._see(rec, now)

    def _see(self, rec: journal.Record, now: float) -> None:
        kind = rec.kind
        if kind == journal.RUN_STARTED:
            self.model = str(rec.data.get("model") or "") or None
            seg = rec.data.get("segment")
            self.segment = seg if isinstance(seg, int) and not isinstance(seg, bool) and seg >= 0 else None
            self._check_world_size(rec)
            # A script's Trainers are segments of their own: the resume check compares only the
            # steps of the one resumed from this attempt's checkpoint (another's losses are another
            # model's, and its step count starts over).
            other = rec.data.get("resumed_from")
            self._resumed_here = not (other and self.resume_from is not None
                                      and self._path(str(other)) != Path(self.resume_from))
            if other and not self._resumed_here:
                self._command_names(rec)
            out = rec.data.get("output_dir")
            if out:
                self.output_dir = self._path(str(out))
        elif kind == journal.PHASE:
            self.phase = str(rec.data.get("phase") or "")
            if self.phase == "training":
                self.clock.training_since = self.clock.training_since or now
        elif kind in (journal.METRICS, journal.PROGRESS) and rec.step is not None:
            if self.clock.step(rec.step, now, _wall(rec)):  # silence on our monotonic clock; step times the trainer's
                self.hung_at = None
            if kind == journal.METRICS and not rec.data.get("summary") and not self.resume_done \
                    and self._resumed_here:
                if not self.after:
                    self._after_segment = self.segment
                self.after.append({"step": rec.step, **rec.data})
        elif kind == journal.CHECKPOINT and rec.step is not None and rec.data.get("path"):
            self._queue_weights(self._path(str(rec.data["path"])), rec.step)

    def _check_world_size(self, rec: journal.Record) -> None:
        """A script command that asked its launcher for N processes and trains with another world
        size (accelerate launch --num_processes 2 on a CPU runs one) is said once an attempt."""
        script = self.section.script
        if self._world_said or script is None:
            return
        from cockpit.config.launcher import asked_world_size

        asked = asked_world_size(list(script.command))
        got = rec.data.get("world_size")
        if asked is None or not isinstance(got, int) or got == asked[0]:
            return
        self._world_said = True
        self._warn_line(f"the command asked for {asked[0]} processes ({asked[1]}) and the trainer runs with world "
                        f"size {got}: check the launcher's flags — on a CPU, accelerate launch starts one process "
                        "unless given --multi_gpu; torchrun --nproc_per_node N starts N", code="world_size")

    def _warn_line(self, message: str, code: str) -> None:
        try:
            self.jw.write(journal.warning(message[:400], code=code))
        except Exception:  # noqa: BLE001 - a closed or full journal: nothing more to say
            pass

    def _path(self, p: str) -> Path:
        return reported_path(self.run, self.section.script, p)

    # -- SFT data -----------------------------------------------------------------------------
    def _sft_data(self) -> None:
        """At run start: what max_length cuts and how full packed rows are, measured in a
        subprocess at the lowest priority (nice 19) beside the training, never inside it: on a
        busy CPU the training keeps the cores, and the answer comes later."""
        def keep(proc: subprocess.Popen) -> None:
            self._probe = proc

        try:
            self._write(sft_data.findings(sft_data.probe(run_dir=self.run.path, nice=True, on_start=keep)))
        except CockpitError as exc:
            self._warn(f"the SFT data check could not run: {exc}")
        except Exception as exc:  # noqa: BLE001 - a failed check is a line, never the run's end
            self._warn(failure(exc, "the SFT data check failed"))

    # -- hang ----------------------------------------------------------------------------------
    def _check_hang(self, pid: int) -> None:
        limit = self.clock.limit_s()
        if self.phase == "done":
            return  # training is over: what is left is the process exiting
        if limit is not None and self.phase == "saving":
            limit *= SAVING_SLACK  # the final save of a large model takes many steps' time
        silent = self.clock.silent_for(time.monotonic())
        if limit is None or silent is None or silent < limit:
            return
        step = self.clock.last_step
        if self.hung_at == (step if step is not None else -1):
            return
        self.hung_at = step if step is not None else -1
        median = self.clock.median_step_s()
        pids = _python_pids(pid)
        segment = self.segment

        def job() -> None:
            stacks, waits, errors = hang.record_stacks(self.run.path, pids, step, on_start=self._spying)
            self._write([hang.hang_finding(step=step, silent_s=silent, limit_s=limit, median_s=median,
                                           stacks=stacks, waits=waits, errors=errors)], segment)
        self._jobs.put(job)

    # -- resume --------------------------------------------------------------------------------
    def _command_names(self, rec: journal.Record) -> None:
        """command.txt names the checkpoint the resumed Trainer used: a script that resumes from one
        of its own choosing (the hook keeps it, and says so) is named there, not the one `cockpit
        resume` chose. Another Trainer of the script, handed its own checkpoint, changes nothing."""
        import json

        if self.section.script is None or self.resume_from is None:
            return
        segment = rec.data.get("segment", 0)
        try:
            handed = json.loads(self.run.resume_json.read_text(encoding="utf-8")).get(str(segment))
        except (OSError, ValueError, AttributeError):
            handed = None  # one Trainer: the attempt's checkpoint is its
        if handed is not None and Path(str(handed)) != Path(self.resume_from):
            return
        from cockpit.launch.script import write_script_command

        try:
            write_script_command(self.run, self._path(str(rec.data["resumed_from"])), scripts_own=True)
        except OSError as exc:
            self._warn(f"command.txt could not name the checkpoint the script resumed from ({exc})")

    def _resume_check(self) -> None:
        self.resume_done = True
        if self.resume_from is None:
            return
        found = resume.check(Path(self.resume_from), self.after)
        if found is not None:
            self._write([found], self._after_segment)

    # -- weights -------------------------------------------------------------------------------
    def _queue_weights(self, folder: Path, step: int) -> None:
        if self.settings.get("weights") is False or str(folder) in self.checked:
            return
        self.checked.add(str(folder))
        base = self._base()
        segment = self.segment  # the Trainer that saved it, though the check may end after the next began

        def job() -> None:
            from cockpit.findings import weights  # numpy: loaded when the first checkpoint comes

            # The run's first checkpoint: the start when the base model is not a local folder.
            ckpts = list_checkpoints(folder.parent if checkpoint_step(folder.name) is not None else folder)
            first = ckpts[0] if ckpts else None
            found = weights.check_checkpoint(folder, step=step, base=base, first=first,
                                             script=self.section.script is not None)
            self._write([f for f in found if self._first_time(f)], segment)
        self._jobs.put(job)

    ONCE_A_RUN = frozenset({"model_unchanged"})
    """Warnings said once a run: a model that did not move at checkpoint-2 says nothing new at
    checkpoint-4 (one run wrote fifteen)."""

    def _first_time(self, finding: Finding) -> bool:
        """False for a once-a-run kind this run's journal (any attempt) already holds."""
        if finding.kind not in self.ONCE_A_RUN:
            return True
        if finding.kind in self._said:
            return False
        self._said.add(finding.kind)
        return True

    def _base(self) -> Path | None:
        """The model the run started from, when it is a local folder: what the trainer loaded
        (run_started), else run.yaml's model_name_or_path."""
        names = [self.model]
        names.append(str(self.run.config().get("model_name_or_path") or ""))  # none in a plain callback run
        for name in names:
            if not name:
                continue
            path = Path(name).expanduser()
            # A script's relative path (`out/sft`, a second Trainer starting from the first's
            # output) is its own folder's, not the supervisor's (which runs in the run folder).
            path = self._path(str(path)) if not path.is_absolute() and name == self.model else path
            if path.is_dir():
                return path
        return None

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - one failed check is a line, not the doctor's end
                self._warn(failure(exc, "a doctor check failed"))


def _renice(pid: int) -> None:
    """Back to normal priority; a user who may not raise a priority leaves it low."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 0)
    except OSError:
        pass


def _python_pids(root: int) -> list[int]:
    """The run's Python processes: the root and its descendants (torchrun's ranks, workers)."""
    try:
        import psutil
    except ImportError:
        return [root]
    try:
        proc = psutil.Process(root)
        procs = [proc, *proc.children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return [root]
    out = []
    for p in procs:
        try:
            text = " ".join([p.name(), *(p.cmdline()[:1])]).lower()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "python" in text or "torchrun" in text or "accelerate" in text:
            out.append(p.pid)
    return out or [root]


class _Off:
    """The doctor that could not start: does nothing."""

    def poll(self, records: Sequence[journal.Record], beat: Beat) -> None:
        pass

    def ended(self, record: journal.Record, beat: Beat) -> None:
        pass

    def close(self) -> None:
        pass


def start_doctor(run: RunFolder, jw: journal.JournalWriter, resume_from: Path | None = None, *,
                 said: set[str] | None = None) -> Doctor | _Off:
    """A Doctor, or one that does nothing when it cannot start (a warning line says why). `said`:
    the kinds of finding the run's journal holds, as the supervisor's feed keeps them."""
    try:
        return Doctor(run, jw, resume_from, said=said)
    except Exception as exc:  # noqa: BLE001 - the doctor never keeps a run from starting
        try:
            jw.write(journal.warning(failure(exc, "the doctor is off for this run", limit=400),
                                     code="doctor"))
        except Exception:  # noqa: BLE001
            pass
        return _Off()


def _wall(rec: journal.Record) -> float | None:
    t = getattr(rec, "t", None)
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
