"""Every warning of the run and its end, newest last, with the fix when there is one."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from cockpit.ui.rundata import RunData
from cockpit.ui.text import markup


class AlertsList(Static):
    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        key = (id(data), len(data.alerts), id(data.ended))
        if key == getattr(self, "_key", None):
            return
        self._key = key
        notes = [markup("[dim]• $note[/]", note=n) for n in data.notes]
        lines: list[Content] = []
        for a in data.alerts:
            style = {"error": "$error", "warning": "$warning"}.get(a.level, "$primary")
            when = time.strftime("%H:%M:%S", time.localtime(a.t)) if a.t else "--:--:--"
            step = f" @ step {a.step}" if a.step is not None else ""
            line = markup(f"[{style}]{when}{step}  $message[/]", message=a.message)
            if a.fix:
                line += markup("\n    [b]fix:[/b] $fix", fix=a.fix)
            lines.append(line)
        self.update(Content("\n").join(notes + lines) if notes or lines else "no warnings")
