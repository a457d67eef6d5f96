"""The run's end (reason + fix) or its latest warning, where nobody can miss it.

A run that ended as asked (finished, stopped) is information, not an error; its advice says
the screen's key (`press u to resume`) where the screen has one (`resume_key`). An alert rule's
firing (the live screen's `board`) shows here when it is newer than the latest warning."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Static

from cockpit.metrics.rundata import RunData
from cockpit.ui.text import fix_for_screen, markup

if TYPE_CHECKING:  # a replay's screen does not import the alert rules (pydantic) for its first frame
    from cockpit.alerts.board import AlertBoard


class AlertBar(Static):
    """Hidden while there is nothing to say."""

    board: AlertBoard | None = None
    """The live screen's alert rules and firings (None in a replay)."""

    def show(self, data: RunData) -> None:
        alert = data.ended
        warnings = [a for a in data.alerts if a.level == "warning"]
        if alert is None and warnings:
            alert = warnings[-1]
        fired = self.board.records[-1] if self.board is not None and self.board.records else None
        if fired is not None and (data.ended is not None or (alert is not None and alert.t > fired.t)):
            fired = None  # the run's end, or a newer warning, says more
        resume_key = getattr(self.screen, "resume_key", None)
        key = (id(alert), len(warnings), resume_key, id(fired))
        if key == getattr(self, "_last_key", None):
            return
        self._last_key = key
        if fired is not None:
            self.display = True
            self.set_class(False, "-error", "-info")
            self.add_class("-warning", "-alert")
            count = len(self.board.records) if self.board is not None else 1
            self.update(Content.assemble(
                markup("[b]![/b] $rule: $message", rule=fired.data.get("rule") or "?",
                       message=fired.data.get("message") or ""),
                markup(f"  [dim]({count} alert(s) — see the alerts tab)[/]") if count > 1 else ""))
            return
        self.remove_class("-alert")
        if alert is None:
            self.display = False
            return
        self.display = True
        self.set_class(alert.level == "error", "-error")
        self.set_class(alert.level == "warning", "-warning")
        self.set_class(alert.level == "information", "-info")
        icon = {"error": "✖", "warning": "⚠", "information": "●"}.get(alert.level, "●")
        parts = [markup(f"{icon} $message", message=alert.message)]
        if alert.fix:
            label = "next" if alert.level == "information" else "fix"
            parts.append(markup(f"  [b]{label}:[/b] $fix", fix=fix_for_screen(
                alert.fix, run_name=data.label, resume_key=resume_key)))
        if warnings and alert is not warnings[-1]:
            parts.append(markup(f"  [dim]({len(warnings)} warning(s) — see the alerts tab)[/]"))
        elif len(warnings) > 1:
            parts.append(markup(f"  [dim](+{len(warnings) - 1} more in the alerts tab)[/]"))
        self.update(Content.assemble(*parts))
