"""The run's end (reason + fix) or its latest warning, where nobody can miss it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from cockpit.ui.rundata import RunData
from cockpit.ui.text import markup


class AlertBar(Static):
    """Hidden while there is nothing to say."""

    def show(self, data: RunData) -> None:
        alert = data.ended
        warnings = [a for a in data.alerts if a.level == "warning"]
        if alert is None and warnings:
            alert = warnings[-1]
        key = (id(alert), len(warnings))
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
            parts.append(markup("  [b]fix:[/b] $fix", fix=alert.fix))
        if warnings and alert is not warnings[-1]:
            parts.append(markup(f"  [dim]({len(warnings)} warning(s) — see the alerts tab)[/]"))
        elif len(warnings) > 1:
            parts.append(markup(f"  [dim](+{len(warnings) - 1} more in the alerts tab)[/]"))
        self.update(Content.assemble(*parts))
