"""The supervisor's side of findings: the run's journal records (from the supervisor's one tail,
`supervisor/watch.py`) into a metric store, the judge asked every few seconds, and each new finding
(with its completions evidence) appended to the journal.

It runs in the supervisor, never in the training process: the trainer's `on_log` pays nothing
for it. Any failure turns it off with one warning line; it can never stop the supervisor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from cockpit.errors import failure
from cockpit.findings.judge import add_evidence, detect, new_findings
from cockpit.findings.model import Finding
from cockpit.run import journal
from cockpit.supervisor.watch import Beat

EVERY_S = 5.0
"""How often the judge looks at the run (it reads only the metric store; evidence once a finding)."""


class FindingsWatcher:
    """Findings for one supervised run, a `Watcher`: `history(records)` once with what earlier
    attempts wrote (their findings are known, their metrics judged with this attempt's), `poll`
    each turn of the supervisor's loop, `ended` when the trainer has exited, so a short run is
    judged on its last steps too."""

    def __init__(self, run: Any, jw: journal.JournalWriter, trainer: str | None) -> None:
        from cockpit.metrics.completions import CompletionsLibrary
        from cockpit.metrics.store import MetricStore

        self.run = run
        self.jw = jw
        self.trainer = trainer
        self.store = MetricStore()
        self.library = CompletionsLibrary(run.path)
        self.known: list[Finding] = []
        self.next_at = 0.0
        self.changed = False
        self.off = False

    def history(self, records: list[journal.Record]) -> None:
        self._guard(lambda: self._take(records))

    def poll(self, records: Sequence[journal.Record], beat: Beat) -> None:  # noqa: ARG002 - Watcher's signature
        self._guard(lambda: self._judge(records, final=False))

    def ended(self, record: journal.Record, beat: Beat) -> None:  # noqa: ARG002 - Watcher's signature
        self._guard(lambda: self._judge((), final=True))

    def close(self) -> None:
        pass

    def _guard(self, fn: Callable[[], None]) -> None:
        if self.off:
            return
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - findings must never stop the supervisor
            self.off = True
            self.jw.write(journal.warning(failure(exc, "findings are off for this run"),
                                          code="findings"))

    def _judge(self, records: Sequence[journal.Record], *, final: bool) -> None:
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

    def _take(self, records: Sequence[journal.Record]) -> None:
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
