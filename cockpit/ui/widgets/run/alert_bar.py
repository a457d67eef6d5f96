"""The run's end (reason + fix) or its latest warning, where nobody can miss it.

A run that ended as asked (finished, stopped) is information, not an error; its advice says
the screen's key (`press u to resume`) where the screen has one (`resume_key`)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from cockpit.metrics.rundata import RunData
from cockpit.ui.text import fix_for_screen, markup


class AlertBar(Static):
    """Hidden while there is nothing to say."""

    def show(self, data: RunData) -> None:
        alert = data.ended
        warnings = [a for a in data.alerts if a.level == "warning"]
        if alert is None and warnings:
            alert = warnings[-1]
        resume_key = getattr(self.screen, "resume_key", None)
        key = (id(alert), len(warnings), resume_key)
        if key == getattr(self, "_last_key", None):
            return
        self._last_key = key
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
