"""Every warning of the run and its end, newest last, with the fix when there is one."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from cockpit.metrics.rundata import RunData
from cockpit.ui.text import fix_for_screen, markup


class AlertsList(Static):
    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        resume_key = getattr(self.screen, "resume_key", None)
        key = (id(data), len(data.alerts), id(data.ended), resume_key)
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
                label = "next" if a.level == "information" else "fix"
                line += markup(f"\n    [b]{label}:[/b] $fix", fix=fix_for_screen(
                    a.fix, run_name=data.label, resume_key=resume_key))
            lines.append(line)
        self.update(Content("\n").join(notes + lines) if notes or lines else "no warnings")
