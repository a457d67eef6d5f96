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
from cockpit.metrics.store import MetricStore
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

        self.run = run
        self.jw = jw
        self.trainer = trainer
        self.library = CompletionsLibrary(run.path)
        # One store and one list of what was said per Trainer (a script's segments): the second
        # Trainer's step 1 would rewind a shared store over the first's points, and a finding of the
        # first would hide one of the same kind at the same steps of the second.
        self.segments: dict[int, tuple[MetricStore, list[Finding]]] = {0: (MetricStore(), [])}
        self.segment = 0
        self.changed: set[int] = set()
        self.next_at = 0.0
        self.off = False

    @property
    def store(self) -> MetricStore:
        """The metric store of the Trainer training now."""
        return self.segments[self.segment][0]

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
        changed, self.changed = sorted(self.changed), set()
        for seg in changed:
            store, known = self.segments[seg]
            for f in new_findings(detect(store, self.trainer, views=True), known):
                f = add_evidence(f, self.library)
                rec = f.to_record()
                if len(self.segments) > 1:  # said of this Trainer, though written after the next one began
                    rec.data["segment"] = seg
                self.jw.write(rec)
                known.append(f)

    def _take(self, records: Sequence[journal.Record]) -> None:
        metrics: list[journal.Record] = []
        for rec in records:
            if rec.kind == journal.FINDING:
                said = rec.data.get("segment")
                seg = said if isinstance(said, int) and said in self.segments else self.segment
                self.segments[seg][1].append(Finding.from_record(rec))
            elif rec.kind in (journal.METRICS, journal.EVAL, journal.PROGRESS):
                metrics.append(rec)  # progress: max_steps, which says whether a warm-up can still end
            elif rec.kind == journal.RUN_STARTED:
                self._add(metrics)  # the points so far are the Trainer's before this one
                metrics = [rec]
                seg = rec.data.get("segment", 0)
                self.segment = seg if isinstance(seg, int) and not isinstance(seg, bool) and seg >= 0 else 0
                self.segments.setdefault(self.segment, (MetricStore(), []))
                if rec.data.get("trainer") and (not self.trainer or self.trainer == "script"):
                    self.trainer = str(rec.data["trainer"])
            elif rec.kind in (journal.COMPLETIONS, journal.COMPLETIONS_REF):
                self.library.add_records([rec])
        self._add(metrics)

    def _add(self, metrics: list[journal.Record]) -> None:
        if metrics and self.store.add_many(metrics):
            self.changed.add(self.segment)


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
