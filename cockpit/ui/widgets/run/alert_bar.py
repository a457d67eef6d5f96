"""The run's end (reason + fix) or its latest warning, where nobody can miss it."""

from __future__ import annotations

from textual.markup import escape
from textual.widgets import Static

from cockpit.ui.rundata import RunData


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
        text = f"{icon} {escape(alert.message)}"
        if alert.fix:
            text += f"  [b]fix:[/b] {escape(alert.fix)}"
        if warnings and alert is not warnings[-1]:
            text += f"  [dim]({len(warnings)} warning(s) — see the alerts tab)[/]"
        elif len(warnings) > 1:
            text += f"  [dim](+{len(warnings) - 1} more in the alerts tab)[/]"
        self.update(text)
