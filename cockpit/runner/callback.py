# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""CockpitCallback: the training process's voice in the journal.

Rank 0 only (`state.is_world_process_zero`), one flushed line per event, and
nothing heavier than serialize-and-append in `on_log`: the training loop must
not notice it. It also watches for the cooperative stop-and-save request.

Script mode runs this module inside the user's own Python (`cockpit.hook.bundle` copies it): it
and everything it imports need only the standard library and transformers.
"""

from __future__ import annotations

import functools
import os
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

from cockpit.errors import failure, say
from cockpit.metrics.health import HealthMonitor
from cockpit.run import journal
from cockpit.run.completions_store import CompletionsWriter, as_text
from cockpit.run.folder import Request, RunFolder
from cockpit.trainers import versions

_EVAL_PREFIX = "eval_"
COMPLETIONS_ROWS = 16
PROGRESS_EVERY_S = 2.0
"""Between logs, a progress line at most this often: with logging_steps 10 and slow steps the
ETA would otherwise count down to 0 long before the next log."""
RATE_WINDOW_S = 60.0
"""Steps/s and the ETA are reckoned over the last minute of steps, counted from the end of the
segment's first step: the first step carries the start (CUDA set-up, the first batch), which on a
GPU can be as long as the next hundred steps, and an early slow stretch must not hold the ETA for
the whole run (seen on an H100: 2.7 steps/s and 3m35s left at step 30 of a run going at 22)."""


def _folder_fd(path: Any) -> int | None:
    """A descriptor of the run folder (it follows the folder when it is moved), or None where one
    cannot be had (no such folder; a system whose os.stat takes no dir_fd)."""
    if os.stat not in os.supports_dir_fd:
        return None
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None


def _number(v: Any) -> Any:
    """Metrics as numbers; TRL sometimes hands tensors or numpy scalars."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    item = getattr(v, "item", None)
    if callable(item):
        try:  # a tensor of several values raises RuntimeError (torch), others what they like: skip it
            value = item()
        except Exception:  # noqa: BLE001 - one odd value never costs the step's other metrics
            return None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _never_raises(method: Callable[..., Any]) -> Callable[..., Any]:
    """A callback hook that fails says so once on stderr and returns None: the trainer goes on."""
    if getattr(method, "_cockpit_guarded", False):
        return method

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - watching must never stop training
            failed = self.__dict__.setdefault("_failed_hooks", set())
            if method.__name__ not in failed:
                failed.add(method.__name__)
                say(failure(exc, f"cockpit: {method.__name__} failed, training goes on", limit=400))
            return None

    guarded._cockpit_guarded = True  # type: ignore[attr-defined]
    return guarded



class CockpitCallback(TrainerCallback):
    """Every `on_*` hook, a subclass's too, is wrapped so that no failure of the cockpit's
    (a journal or completions file that cannot be written, a surprise in the logs) reaches the
    trainer: it is one line on stderr and the hook returns None."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if name.startswith("on_") and callable(value):
                setattr(cls, name, _never_raises(value))

    def __init__(self, run: RunFolder, writer: journal.JournalWriter, *,
                 samples_fn: Callable[[], list[dict[str, Any]] | None] | None = None,
                 samples_every: int | None = None) -> None:
        self.run = run
        self.writer = writer
        self.trainer: Any = None
        self.samples_fn = samples_fn
        self.samples_every = samples_every
        self._segment_start: tuple[float, int] | None = None
        self._rate_marks: deque[tuple[float, int]] = deque()
        """(time, step) of the progress lines after the segment's first step, the last RATE_WINDOW_S."""
        self._last_completions_step = -1
        self._last_completions_key: Any = None
        self._stop_file = os.fspath(run.control / Request.STOP_SAVE)
        self._stop_in_folder = os.path.join(run.control.name, Request.STOP_SAVE)
        self._run_fd = _folder_fd(run.path)
        """The run folder held open: a stop request is found through it after the folder was moved
        (`mv RUN RUN-moved` mid-run), by every rank, where the path would still name the old place."""
        self.stop_requested = False
        self._saved_steps: set[int] = set()
        self.health = HealthMonitor()
        self._completions_writer: CompletionsWriter | None = None
        self._batch_attrs = versions.sampled_batch_attrs(versions.installed().get("trl"))
        self._said_no_batch = False
        self._last_progress = 0.0

    # -- helpers ---------------------------------------------------------------------------
    def _progress(self, state: Any) -> journal.Record:
        now = time.time()
        step = int(state.global_step)
        if self._segment_start is None:
            self._segment_start = (now, step)
        t0, s0 = self._segment_start
        rate = (step - s0) / (now - t0) if now > t0 and step > s0 else None
        marks = self._rate_marks
        if step > s0:
            marks.append((now, step))
            while len(marks) > 2 and now - marks[1][0] >= RATE_WINDOW_S:
                marks.popleft()  # the oldest mark kept is the last one at least a window ago
            (tw, sw) = marks[0]
            if step > sw and now > tw:
                rate = (step - sw) / (now - tw)
        eta = (state.max_steps - step) / rate if rate and state.max_steps and state.max_steps > step \
            else (0.0 if state.max_steps and step >= state.max_steps else None)
        self._last_progress = now
        return journal.progress(step, state.max_steps or None, epoch=state.epoch,
                                steps_per_s=rate, eta_s=eta)

    # -- hooks -----------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
        if state.is_world_process_zero:
            # ETA is measured on this segment only: a resumed run starts its clock here.
            self._segment_start = (time.time(), int(state.global_step))
            self._rate_marks.clear()
            self.writer.write(journal.phase("training"))
            self.writer.write(self._progress(state))

    def _stop_asked(self) -> bool:
        if os.path.exists(self._stop_file):
            return True
        if self._run_fd is None:
            return False
        try:  # the folder where it is now, moved or not: the open descriptor follows it
            os.stat(self._stop_in_folder, dir_fd=self._run_fd)
        except (OSError, NotImplementedError):
            return False
        return True

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
        if not self.stop_requested and self._stop_asked():
            self.stop_requested = True
            control.should_save = True
            control.should_training_stop = True
            if state.is_world_process_zero:
                self.writer.write(journal.Record(journal.STOP_REQUESTED, {"save": True},
                                                 step=int(state.global_step)))
        if state.is_world_process_zero and time.time() - self._last_progress >= PROGRESS_EVERY_S:
            self.writer.write(self._progress(state))
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
        if not state.is_world_process_zero or not logs:
            return
        step = int(state.global_step)
        train: dict[str, Any] = {}
        evals: dict[str, Any] = {}
        for key, value in logs.items():
            num = _number(value)
            if num is None:
                continue
            (evals if key.startswith(_EVAL_PREFIX) else train)[key] = num
        epoch = train.pop("epoch", None)
        if epoch is None:
            epoch = evals.pop("epoch", state.epoch)
        records = []
        if train:
            summary = journal.is_summary(train)  # the same rule replay applies to trainer_state.json
            rec = journal.metrics(step, train, epoch=epoch)
            if summary:
                rec.data["summary"] = True
            records.append(rec)
            if not summary:
                records.extend(self.health.observe(step, train))
        if evals:
            records.append(journal.eval_metrics(step, evals, epoch=epoch))
        records.append(self._progress(state))
        comp = self._completions(step)
        if comp is not None:
            records.append(comp)
        elif train and not self._said_no_batch and self._batch_missing():
            self._said_no_batch = True
            records.append(journal.warning(
                "completions: not found in this TRL's trainer (looked for "
                f"{' / '.join('trainer.' + a for a in self._batch_attrs)})",
                code="completions_not_found", step=step,
                fix="the metrics are journaled; sampled completions are not shown for this TRL"))
        self.writer.write_all(records)

    def on_save(self, args, state, control, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
        if state.is_world_process_zero:
            step = int(state.global_step)
            path = os.path.join(args.output_dir, f"checkpoint-{step}")
            if step not in self._saved_steps:
                self._saved_steps.add(step)
                self.writer.write(journal.checkpoint(step, path))

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ARG002 - TrainerCallback's signature
        if state.is_world_process_zero:
            self.writer.write(self._progress(state))

    # -- completions -----------------------------------------------------------------------
    def _store_completions(self, step: int, rows: list[dict[str, Any]], source: str) -> journal.Record | None:
        """The rows go to the run folder's completions store; the journal gets the pointer."""
        try:
            if self._completions_writer is None:
                self._completions_writer = CompletionsWriter(self.run.path)
            return self._completions_writer.append(step, rows, source=source)
        except OSError as exc:  # a full disk: the metrics still go to the journal
            if not getattr(self, "_completions_failed", False):
                self._completions_failed = True
                say(failure(exc, f"cockpit: completions of step {step} not stored"))
            return None

    def capture_printed_tables(self, module: Any) -> None:
        """PPO shows its periodic samples only as a rich table printed from a DataFrame
        (query / model response / score); take the rows from that call instead."""
        original = getattr(module, "print_rich_table", None)
        if original is None or getattr(original, "_cockpit", False):
            return

        def print_rich_table(df, *args, **kwargs):
            try:
                self._table_rows(df)
            except Exception:  # noqa: BLE001 - showing samples must never break training
                pass
            return original(df, *args, **kwargs)

        print_rich_table._cockpit = True  # type: ignore[attr-defined]
        module.print_rich_table = print_rich_table

    def _table_rows(self, df: Any) -> None:
        cols = list(df.columns)
        prompt_col = next((c for c in cols if c in ("query", "prompt")), None)
        comp_col = next((c for c in cols if "response" in c or c == "completion"), None)
        if prompt_col is None or comp_col is None:
            return
        rows = []
        for rec in df.to_dict("records")[-COMPLETIONS_ROWS:]:
            rewards = {c: _number(rec[c]) for c in cols if c not in (prompt_col, comp_col)}
            rows.append({"prompt": as_text(rec[prompt_col]), "completion": as_text(rec[comp_col]),
                         "rewards": {k: v for k, v in rewards.items() if v is not None},
                         "advantage": None})
        state = getattr(self.trainer, "state", None)
        step = int(getattr(state, "global_step", 0) or 0)
        ref = self._store_completions(step, rows, "printed_table") if rows else None
        if ref is not None:
            self.writer.write(ref)

    def _completions(self, step: int) -> journal.Record | None:
        rows = self._trainer_logs_rows()
        if rows:  # trainers that keep their sampled batch (GRPO family); others get samples_fn
            key = (rows[0]["prompt"], rows[0]["completion"], rows[-1]["completion"])
            if key != self._last_completions_key:
                self._last_completions_key = key
                return self._store_completions(step, rows, "trainer_logs")
            return None
        if self.samples_fn and self.samples_every and step // self.samples_every > \
                self._last_completions_step // self.samples_every and step > 0:
            self._last_completions_step = step
            try:
                generated = self.samples_fn()
            except Exception as exc:  # noqa: BLE001 - sampling for display must never stop training
                self.samples_fn = None
                self.writer.write(journal.warning(
                    failure(exc, "periodic samples turned off"),
                    code="samples_failed", step=step))
                return None
            if generated:
                return self._store_completions(step, generated, "generate")
        return None

    def _sampled_batch(self) -> dict[str, Any] | None:
        """GRPO-family trainers keep their last sampled batch in `trainer._logs` (TRL >= 0.20) or
        `trainer._textual_logs` (before): `versions.sampled_batch_attrs` says which."""
        for attr in self._batch_attrs:
            logs = getattr(self.trainer, attr, None)
            if isinstance(logs, dict) and "completion" in logs:
                return logs
        return None

    def _batch_missing(self) -> bool:
        """A trainer that logs completions (its config has `log_completions`) but keeps no batch
        where this TRL line should: say so once instead of showing nothing without a word."""
        args = getattr(self.trainer, "args", None)
        return hasattr(args, "log_completions") and self._sampled_batch() is None

    def _trainer_logs_rows(self) -> list[dict[str, Any]] | None:
        logs = self._sampled_batch()
        if logs is None:
            return None
        prompts = list(logs.get("prompt") or [])
        comps = list(logs.get("completion") or [])
        rewards = logs.get("rewards") or {}
        advantages = list(logs.get("advantages") or [])
        n = min(len(prompts), len(comps))
        rows = []
        for i in range(max(0, n - COMPLETIONS_ROWS), n):
            rows.append({
                "prompt": as_text(prompts[i]),
                "completion": as_text(comps[i]),
                "rewards": {name: _number(vals[i]) for name, vals in rewards.items()
                            if i < len(vals)},
                "advantage": _number(advantages[i]) if i < len(advantages) else None,
            })
        return rows


for _name, _value in list(vars(CockpitCallback).items()):
    if _name.startswith("on_") and callable(_value):
        setattr(CockpitCallback, _name, _never_raises(_value))
