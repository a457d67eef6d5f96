"""What a run screen shows, in one object: metric store, completions, log rows, header facts.

Live runs and replays both fill a `RunData`; the widgets read only this. It
holds no Textual objects, so a worker thread can build one from a whole
journal and hand it to the screen (the first poll of a long run is big; later
polls are small and are applied on the UI thread).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.metrics.buffers import CompletionsBuffer, LogRows, resumed_step
from cockpit.metrics.sources import SourceName, distinct_labels
from cockpit.metrics.store import MetricStore
from cockpit.run import journal

SYSTEM_HISTORY = 2000
"""System samples kept (one every few seconds: a few hours' worth, bounded)."""


@dataclass
class Alert:
    """A warning or the run's end, shown prominently."""

    level: str  # "warning" | "error" | "information"
    message: str
    fix: str | None = None
    step: int | None = None
    t: float = 0.0


@dataclass
class RunData:
    label: str
    store: MetricStore = field(default_factory=MetricStore)
    completions: CompletionsBuffer = field(default_factory=lambda: CompletionsBuffer(2000))
    log_rows: LogRows = field(default_factory=lambda: LogRows(1000))
    trainer: str | None = None
    phase: str | None = None
    phase_detail: str | None = None
    state: str | None = None
    step: int | None = None
    max_steps: int | None = None
    epoch: float | None = None
    steps_per_s: float | None = None
    eta_s: float | None = None
    eta_at: float | None = None
    """Wall time the ETA was computed at (the ETA counts down from there)."""
    started: float | None = None
    device: str | None = None
    system: dict[str, Any] | None = None
    system_t: float | None = None
    system_history: deque = field(default_factory=lambda: deque(maxlen=SYSTEM_HISTORY))
    """(t, values) of the system samples over the run, the newest last (the System tab's sparklines)."""
    alerts: deque = field(default_factory=lambda: deque(maxlen=200))
    ended: Alert | None = None
    checkpoints: list[tuple[int | None, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Problems met while loading (skipped lines, repaired files), shown once."""
    version: int = 0
    """Goes up whenever anything shown changed (the store has its own version too)."""
    name: SourceName | None = None
    """Where a replayed source was read from, to label it apart from the others (`relabel`)."""
    run_dir: Path | None = None
    """The run folder whose completions store `completions_ref` records point into."""
    library: Any = None
    """Every logged step's completions (`metrics.completions.CompletionsLibrary`), made on the
    first completions record (or by the replay loader for TRL's parquet files); the completions
    tab reads it a step at a time. It holds paths, an index and a few cached steps: it pickles."""
    findings: list[journal.Record] = field(default_factory=list)
    """The run's `finding` records, as the journal holds them (the findings tab and
    `cockpit.findings.report` read them; a replay adds what the judge finds)."""
    logging_steps: float | None = None
    """The trainer's logging_steps (a ratio of max_steps below 1), as run_started names it."""
    segment: int = 0
    """Which Trainer of a script the newest `run_started` was (its `segment`; 0 for one)."""
    finding_segments: list[int] = field(default_factory=list)
    """The Trainer each of `findings` was said of (the segment training when it was written)."""
    tail_from: int | None = None
    """Set on a first look at a long journal (`load_ends`: its start and its newest steps, read
    for the live screen's first frame while the whole is read): the first step it holds (0 when
    it holds none); the steps before it are not read yet. None: the whole journal (or source)."""

    def apply(self, records: Iterable[journal.Record]) -> int:
        """Take a batch of journal records; returns how many there were."""
        records = list(records)
        if not records:
            return 0
        self.store.add_many(records)
        self.completions.add_many(records)
        self._stored_completions(records)
        self.log_rows.add_many(records)
        for rec in records:
            self._header(rec)
        self.version += 1
        return len(records)

    def _stored_completions(self, records: list[journal.Record]) -> None:
        """Completions records feed the library (every step, read on demand by the completions
        tab); the ring buffer gets the rows of the newest pointed-to steps, only as many steps
        as it holds, so attaching to a long run reads a few steps, not all of them."""
        if not any(r.kind in (journal.COMPLETIONS, journal.COMPLETIONS_REF) for r in records):
            return
        if self.library is None:
            from cockpit.metrics.completions import CompletionsLibrary

            self.library = CompletionsLibrary(self.run_dir)
        self.library.add_records(records)  # inline rows kept; a pointer reads the store's index
        refs = [(r.step, r) for r in records if r.kind == journal.COMPLETIONS_REF and r.step is not None]
        if not refs or self.run_dir is None:
            return
        wanted: list[tuple[int, journal.Record]] = []
        room = self.completions.capacity
        for step, ref in reversed(refs):
            count = int(ref.data.get("count") or 0)
            if wanted and count > room:
                break
            wanted.append((step, ref))
            room -= count
        for step, ref in reversed(wanted):
            self.completions.add_rows(step, self.library.rows(step), source=str(ref.data.get("source") or ""))

    def _header(self, rec: journal.Record) -> None:
        d = rec.data
        kind = rec.kind
        if kind in (journal.METRICS, journal.EVAL):
            if rec.step is not None and not d.get("summary"):
                self.step = rec.step if self.step is None else max(self.step, rec.step)
            if isinstance(d.get("epoch"), (int, float)):
                self.epoch = float(d["epoch"])
        elif kind == journal.PROGRESS:
            if rec.step is not None:
                self.step = rec.step
            if d.get("max_steps"):
                self.max_steps = int(d["max_steps"])
            if d.get("epoch") is not None:
                self.epoch = d["epoch"]
            self.steps_per_s = d.get("steps_per_s")
            self.eta_s = d.get("eta_s")
            self.eta_at = rec.t or None
        elif kind == journal.RUN_STARTED:
            seg = d.get("segment", 0)
            self.segment = seg if isinstance(seg, int) and not isinstance(seg, bool) and seg >= 0 else 0
            self.trainer = d.get("trainer") or self.trainer
            if d.get("max_steps"):
                self.max_steps = int(d["max_steps"])
            every = d.get("logging_steps")
            self.logging_steps = float(every) if isinstance(every, (int, float)) and every > 0 else None
            self.device = d.get("device")
            self.started = rec.t or self.started
            self.ended = None
            self.state = "running"
            if d.get("resumed_from"):
                where = Path(str(d["resumed_from"])).name
                self.alerts.append(Alert("information", f"resumed from {where}", None,
                                         resumed_step(rec), rec.t))
        elif kind == journal.PHASE:
            self.phase = d.get("phase")
            self.phase_detail = d.get("detail")
        elif kind == journal.SYSTEM:
            self.system = dict(d)
            self.system_t = rec.t
            self.system_history.append((rec.t, self.system))
        elif kind == journal.WARNING:
            self.alerts.append(Alert("warning", str(d.get("message") or d.get("code") or "warning"),
                                     d.get("fix"), rec.step, rec.t))
        elif kind == journal.STOP_REQUESTED:
            self.alerts.append(Alert("information", f"stop requested at step {rec.step}: "
                                     "saving a checkpoint", None, rec.step, rec.t))
            self.state = "stopping"
        elif kind == journal.FINDING:
            self.findings.append(rec)
            said = d.get("segment")  # the live judge names the Trainer when it wrote after the next began
            self.finding_segments.append(said if isinstance(said, int) and said >= 0 else self.segment)
        elif kind == journal.CHECKPOINT:
            self.checkpoints.append((rec.step, str(d.get("path"))))
        elif kind == journal.RUN_ENDED:
            state = str(d.get("state") or "ended")
            self.state = state
            self.phase = "done"
            self.eta_s = None
            msg = f"run {state}"
            if d.get("reason"):
                msg += f": {d['reason']}"
            # A stop the user asked for is no fault, forced or not (a forced one ends "killed").
            asked = str(d.get("reason") or "").startswith("stopped by request")
            level = "information" if state in ("finished", "stopped") or asked else "error"
            self.ended = Alert(level, msg, d.get("fix"), rec.step, rec.t)
            self.alerts.append(self.ended)

    # -- derived -------------------------------------------------------------------------------

    def eta_now(self, now: float | None = None) -> float | None:
        """The last ETA, counted down since it was written; None once it ran out before the last
        step (a slow step, an eval, a save): "0 s" mid-run would be a made-up number, and the
        next progress line brings a fresh one."""
        if self.eta_s is None:
            return None
        if self.eta_at is None:
            return self.eta_s
        left = self.eta_s - ((now or time.time()) - self.eta_at)
        if left > 0:
            return left
        done = self.max_steps is not None and self.step is not None and self.step >= self.max_steps
        return 0.0 if done else None


def relabel(sources: Sequence[RunData]) -> None:
    """Label replayed sources so that no two read the same: each by its run's name, with as
    much of its path as it takes to tell it from the others (`metrics.sources.distinct_labels`)."""
    named = [(s, s.name) for s in sources if s.name is not None]
    for (data, _), label in zip(named, distinct_labels([name for _, name in named]), strict=False):
        data.label = label


LOAD_READ = 8 << 20
"""The bytes `load_journal` reads at a time (a line longer than this is read whole all the same)."""


def load_journal(path: Path, label: str) -> tuple[RunData, Any]:
    """A RunData from a whole journal and the tailer positioned at its end (for live follow)."""
    from cockpit.run.tailer import Tailer

    tailer = Tailer(path)
    data = RunData(label, run_dir=Path(path).parent)
    # Of the lines that only their newest matter to (the progress line's step and ETA; the
    # completions_ref lines of the steps the completions buffer keeps: each step has a row or
    # more), only those are decoded, and applied after the rest: a 100,000-step GRPO journal is
    # 300,000 lines, 100,000 of them metrics (bench: attach_100k_grpo_s). Later polls (the live
    # follow) decode every line.
    held = _held_newest(data)
    # In reads of LOAD_READ bytes: what one read holds at once (its lines, their records) is what
    # the whole load's memory peaks at, and a process keeps its peak (attach_100k_grpo_rss_mb).
    following, tailer.max_read = tailer.max_read, LOAD_READ
    while True:  # one poll reads at most LineTailer.max_read bytes; a long journal (or line) takes several
        before = tailer.offset
        batch = tailer.poll(held=held)
        if batch:
            data.apply(batch)
        if tailer.offset == before:
            break
    tailer.max_read = following
    _apply_held(data, tailer, held)
    data.notes.extend(f"{path}: {problem}" for problem in tailer.problems())
    return data, tailer


def _held_newest(data: RunData) -> dict[bytes, deque[bytes]]:
    """The kinds of line only the newest of which a first read needs, each with the deque its
    lines are held back in undecoded (`tailer.hold_back`): the progress line (the step, the ETA)
    and the completions_ref lines of as many steps as `data`'s completions buffer keeps."""
    return {journal.PROGRESS.encode(): deque(maxlen=1),
            journal.COMPLETIONS_REF.encode(): deque(maxlen=data.completions.capacity)}


def _apply_held(data: RunData, decoder: Any, held: dict[bytes, deque[bytes]]) -> None:
    """The held-back lines (`_held_newest`), decoded once and applied after the rest."""
    data.apply(decoder.decode(line for kept in held.values() for line in kept))


_STEP_KINDS = frozenset({journal.METRICS, journal.EVAL, journal.PROGRESS, journal.COMPLETIONS,
                         journal.COMPLETIONS_REF})
"""The records a step writes: a first look takes them from the journal's end alone."""


def load_ends(path: Path, label: str, head: int, tail: int) -> RunData:
    """A first look at a long journal, for a first frame while the whole is read: of its first
    `head` bytes the records that are no step's (run_started, phase: what the header says), and
    every record of its last `tail` bytes (its newest steps); `tail_from` names the first step
    held. Problems met are left to the whole read to say (`load_journal`), which replaces it.
    Raises OSError when the journal cannot be read."""
    from cockpit.files import open_regular
    from cockpit.run.tailer import Tailer, hold_back

    decoder = Tailer(path)  # decodes and counts; never reads
    data = RunData(label, run_dir=Path(path).parent)
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        start = fh.read(min(head, size))
        fh.seek(max(0, size - tail))
        end = fh.read(size - fh.tell())
    # Complete lines only: the head's last and the tail's first may be cut (and the very last
    # may be half written).
    data.apply(r for r in decoder.decode(x for x in start.split(b"\n")[:-1] if x.strip())
               if r.kind not in _STEP_KINDS)
    held = _held_newest(data)
    newest = decoder.decode(hold_back([x for x in end.split(b"\n")[1:-1] if x.strip()], held))
    data.apply(newest)
    _apply_held(data, decoder, held)
    data.tail_from = next((r.step for r in newest if r.step is not None and r.kind in _STEP_KINDS), 0)
    return data
