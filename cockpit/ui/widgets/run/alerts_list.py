"""Every warning of the run and its end, newest last, with the fix when there is one."""

from __future__ import annotations

import time

from textual.markup import escape
from textual.widgets import Static

from cockpit.ui.rundata import RunData


class AlertsList(Static):
    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        key = (id(data), len(data.alerts), id(data.ended))
        if key == getattr(self, "_key", None):
            return
        self._key = key
        notes = [f"[dim]• {escape(n)}[/]" for n in data.notes]
        lines = []
        for a in data.alerts:
            style = {"error": "$error", "warning": "$warning"}.get(a.level, "$primary")
            when = time.strftime("%H:%M:%S", time.localtime(a.t)) if a.t else "--:--:--"
            step = f" @ step {a.step}" if a.step is not None else ""
            line = f"[{style}]{when}{step}  {escape(a.message)}[/]"
            if a.fix:
                line += f"\n    [b]fix:[/b] {escape(a.fix)}"
            lines.append(line)
        self.update("\n".join(notes + lines) or "no warnings")
