"""One finding: what the judge says about a step range, and the evidence that shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cockpit.run import journal


@dataclass(frozen=True)
class Finding:
    kind: str
    """a key of the findings table (reward_hacking, wasted_groups, clipping, ...)"""
    steps: tuple[int, int] | None
    """the first and last step it covers, inclusive; None for a finding about the whole run"""
    severity: str
    """info, warning or error"""
    summary: str
    """one line, in the user's words"""
    fix: str | None = None
    """what to do about it"""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    """completions rows, metric points or files that show it (see `journal.finding`)"""

    def to_record(self) -> journal.Record:
        return journal.finding(self.kind, steps=self.steps, severity=self.severity, summary=self.summary,
                               fix=self.fix, evidence=self.evidence,
                               step=self.steps[1] if self.steps else None)

    @classmethod
    def from_record(cls, rec: journal.Record) -> Finding:
        d = rec.data
        steps = d.get("steps")
        return cls(kind=str(d.get("kind", "")),
                   steps=(int(steps[0]), int(steps[1])) if isinstance(steps, list) and len(steps) == 2 else None,
                   severity=str(d.get("severity", "info")), summary=str(d.get("summary", "")),
                   fix=d.get("fix"), evidence=list(d.get("evidence") or []))


@dataclass(frozen=True)
class Check:
    """One rule the judge ran (or could not run) on a run."""

    kind: str
    """the rule: a key of the findings table"""
    ran: bool
    """False when the run logged nothing the rule reads"""
    fired: int
    """how many findings it made"""
    note: str
    """quiet: the one number that kept it quiet; not run: what it needs; fired: empty"""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ran": self.ran, "fired": self.fired, "note": self.note}


@dataclass(frozen=True)
class Judgement:
    """What the judge said about a run, and what it checked to say it."""

    findings: list[Finding]
    checks: list[Check]
    family: str | None
    """the metric family judged (None: the general rules only)"""
    steps: int
    """the last step judged"""
    points: int
    """how many steps logged a metric"""

    def checked_line(self) -> str:
        """"checked 9 rules for sft over 3,500 steps" (rules that ran; the others read keys the
        run did not log)."""
        ran = [c for c in self.checks if c.ran]
        fam = f" for {self.family}" if self.family else " (general)"
        return (f"checked {len(ran)} rule{'s' if len(ran) != 1 else ''}{fam} over {self.steps:,} steps "
                f"({self.points:,} logged)")

    def quiet_notes(self) -> list[tuple[str, str]]:
        """(rule, the number that kept it quiet) for each rule that ran and did not fire."""
        return [(c.kind, c.note) for c in self.checks if c.ran and not c.fired and c.note]

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "steps": self.steps, "points": self.points,
                "summary": self.checked_line(), "checks": [c.to_json() for c in self.checks]}
