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

    @property
    def identity(self) -> tuple[str, tuple[int, int] | None]:
        """Two findings with the same kind and range are one: a live judge and a replay agree."""
        return (self.kind, self.steps)
