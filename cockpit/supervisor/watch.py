"""What watches a supervised run: one tail of its journal, and the watchers it feeds.

The supervisor reads the run's journal in one place, `JournalFeed`, and hands what it read to
each `Watcher` — the alerter (`AlertWatch`, over `alerts/alerter.py`), the live findings judge
(`supervisor/findings.py`) and the doctor (`supervisor/doctor.py`) — once a turn of its loop,
with a `Beat` saying where the run stands. When the trainer has exited, each watcher is told the
run's end before `run_ended` is written (`ended`), and finishes what it still has going, bounded,
once it is written (`close`). A watcher never raises: a failure is one warning line in the
journal, and that watcher is off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cockpit.alerts.alerter import Alerter
from cockpit.errors import failure
from cockpit.run import journal
from cockpit.run.tailer import Tailer


@dataclass(frozen=True)
class Beat:
    """Where the run stands at one turn of the supervisor's loop."""

    pid: int | None
    """The trainer's process while it lives (None before it started and once it exited)."""
    started_at: float
    """When this attempt started, on `time.monotonic()`'s clock: every "how long since" in the
    supervisor is measured on it, so a wall clock set forward or back makes no stall."""
    live: bool
    """Whether the run's state is a live one (`folder.LIVE_STATES`)."""


class Watcher(Protocol):
    """One of the supervisor's watchers. No call may raise or block the loop for long."""

    def poll(self, records: Sequence[journal.Record], beat: Beat) -> None:
        """The records appended to the journal since the last turn (often none)."""

    def ended(self, record: journal.Record, beat: Beat) -> None:
        """The trainer has exited and `record` (`run_ended`) is about to be written: the last word."""

    def close(self) -> None:
        """`run_ended` is written: finish what is still going (bounded), then let go."""


class JournalFeed:
    """The supervisor's one tail of the run's journal. What the journal held when the feed was
    made is the earlier attempts' (`history`: handed once, at the first pump, to the one watcher
    that reads it, so the trainer starts without waiting on a long journal); everything appended
    afterwards goes to every watcher (`pump`). What the supervisor itself asks of the journal is
    kept as it goes by, so nothing reads the file again: the newest metrics step (`last_step`, the
    run's end says it), whether a Trainer started training in this attempt (`trained`, the verdict
    of a run that exited 0) and the kinds of finding said so far (`finding_kinds`, the doctor's
    once-a-run warnings)."""

    def __init__(self, events: Path, *, history: Callable[[list[journal.Record]], None] | None = None) -> None:
        self._tailer = Tailer(events)
        try:
            self._start = os.stat(events).st_size
        except OSError:
            self._start = 0
        self._history = history
        self._history_read = False
        self.last_step: int | None = None
        """The newest metrics step the journal holds (any attempt, as far as pumped)."""
        self.trained = False
        """A `run_started` was appended in this attempt (a journal cut shorter meanwhile: read anew, whole)."""
        self.finding_kinds: set[str] = set()
        """The kinds of finding the journal holds (any attempt, as far as pumped)."""

    def _note(self, records: Sequence[journal.Record], *, this_attempt: bool) -> None:
        for rec in records:
            if rec.kind == journal.METRICS and rec.step is not None:
                self.last_step = rec.step
            elif rec.kind == journal.RUN_STARTED and this_attempt:
                self.trained = True
            elif rec.kind == journal.FINDING:
                self.finding_kinds.add(str(rec.data.get("kind")))

    def _history_records(self) -> list[journal.Record]:
        records: list[journal.Record] = []
        while self._tailer.offset < self._start:  # one poll reads a bounded chunk
            before = self._tailer.offset
            records.extend(self._tailer.poll(upto=self._start))
            if self._tailer.offset == before:
                break
        return records

    def pump(self, beat: Beat, watchers: Sequence[Watcher]) -> None:
        """Read what the journal gained since the last pump, and hand it to each watcher."""
        if not self._history_read:
            self._history_read = True
            history = self._history_records()
            self._note(history, this_attempt=False)
            if self._history is not None:
                self._history(history)
        records: list[journal.Record] = []
        while True:  # one poll reads a bounded chunk: read to the end
            before = self._tailer.offset
            records.extend(self._tailer.poll())
            if self._tailer.offset == before:
                break
        self._note(records, this_attempt=True)
        for watcher in watchers:
            watcher.poll(records, beat)


class AlertWatch:
    """The alerter as a watcher: a failing rule is a journal line, never the run's end; an
    alerter that could not start (None) does nothing."""

    def __init__(self, alerter: Alerter | None) -> None:
        self.alerter = alerter

    def poll(self, records: Sequence[journal.Record], beat: Beat) -> None:
        if self.alerter is None:
            return
        try:
            self.alerter.poll(records, started_at=beat.started_at, live=beat.live)
        except Exception as exc:  # noqa: BLE001 - a failing alert is a journal line, never the run's end
            self.alerter.jw.write(journal.warning(failure(exc, "alert check failed"), code="alert_rule"))

    def ended(self, record: journal.Record, beat: Beat) -> None:  # noqa: ARG002 - Watcher's signature
        if self.alerter is None:
            return
        try:
            self.alerter.ended(record)
        except Exception as exc:  # noqa: BLE001
            self.alerter.jw.write(journal.warning(failure(exc, "alert check failed"), code="alert_rule"))

    def close(self) -> None:
        if self.alerter is not None:
            self.alerter.close()  # the run_ended notifications, bounded; a command still going is killed


def start_alerts(run: object, jw: journal.JournalWriter, trainer: str | None) -> AlertWatch:
    """The run's alerter, or one that is off (with one warning line) when its rules cannot be read."""
    try:
        return AlertWatch(Alerter(run, jw, trainer=trainer))
    except Exception as exc:  # noqa: BLE001 - alerts must never keep a run from starting
        jw.write(journal.warning(failure(exc, "alerts are off for this run"), code="alert_rule"))
        return AlertWatch(None)
