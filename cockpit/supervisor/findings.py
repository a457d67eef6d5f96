"""The supervisor's side of findings: tail the run's journal into a metric store, ask the judge
every few seconds, and append each new finding (with its completions evidence) to the journal.

It runs in the supervisor, never in the training process: the trainer's `on_log` pays nothing
for it. Any failure turns it off with one warning line; it can never stop the supervisor.
"""

from __future__ import annotations

import time
from typing import Any

from cockpit.errors import failure
from cockpit.findings.judge import add_evidence, detect, new_findings
from cockpit.findings.model import Finding
from cockpit.run import journal

EVERY_S = 5.0
"""How often the judge looks at the run (it reads only the metric store; evidence once a finding)."""


class FindingsWatcher:
    """Findings for one supervised run. `poll()` from the supervisor's loop; `poll(final=True)`
    when the trainer has exited, so a short run is judged on its last steps too."""

    def __init__(self, run: Any, jw: journal.JournalWriter, trainer: str | None) -> None:
        from cockpit.metrics.completions import CompletionsLibrary
        from cockpit.metrics.store import MetricStore
        from cockpit.run.tailer import Tailer

        self.run = run
        self.jw = jw
        self.trainer = trainer
        self.store = MetricStore()
        self.library = CompletionsLibrary(run.path)
        self.tailer = Tailer(run.events)  # from the start: a resumed run's findings are known
        self.known: list[Finding] = []
        self.next_at = 0.0
        self.changed = False
        self.off = False

    def poll(self, *, final: bool = False) -> None:
        if self.off:
            return
        try:
            self._poll(final)
        except Exception as exc:  # noqa: BLE001 - findings must never stop the supervisor
            self.off = True
            self.jw.write(journal.warning(failure(exc, "findings are off for this run"),
                                          code="findings"))

    def _poll(self, final: bool) -> None:
        while True:  # one tailer poll reads a bounded chunk: read to the end
            records = self.tailer.poll()
            if not records:
                break
            self._take(records)
        now = time.monotonic()
        if not self.changed or (now < self.next_at and not final):
            return
        self.next_at = now + EVERY_S
        self.changed = False
        for f in new_findings(detect(self.store, self.trainer, views=True), self.known):
            f = add_evidence(f, self.library)
            self.jw.write(f.to_record())
            self.known.append(f)

    def _take(self, records: list[journal.Record]) -> None:
        metrics = []
        for rec in records:
            if rec.kind == journal.FINDING:
                self.known.append(Finding.from_record(rec))
            elif rec.kind in (journal.METRICS, journal.EVAL, journal.PROGRESS):
                metrics.append(rec)  # progress: max_steps, which says whether a warm-up can still end
            elif rec.kind == journal.RUN_STARTED:
                metrics.append(rec)
                if rec.data.get("trainer") and (not self.trainer or self.trainer == "script"):
                    self.trainer = str(rec.data["trainer"])
            elif rec.kind in (journal.COMPLETIONS, journal.COMPLETIONS_REF):
                self.library.add_records([rec])
        if metrics and self.store.add_many(metrics):
            self.changed = True


def start(run: Any, jw: journal.JournalWriter, trainer: str | None) -> FindingsWatcher:
    """A watcher for the run, or one that is off (with one warning line) if it cannot start."""
    try:
        return FindingsWatcher(run, jw, trainer)
    except Exception as exc:  # noqa: BLE001 - findings must never keep a run from starting
        w = FindingsWatcher.__new__(FindingsWatcher)
        w.off = True
        jw.write(journal.warning(failure(exc, "findings are off for this run"),
                                 code="findings"))
        return w
