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


MAX_COMPARE_ROWS = 3
"""A compare's bar shows at most this many runs' ends (a row each)."""


def _said(data: RunData):
    """What the bar says of one run: its end, else its latest warning, else None."""
    if data.ended is not None:
        return data.ended
    warnings = [a for a in data.alerts if a.level == "warning"]
    return warnings[-1] if warnings else None


class AlertBar(Static):
    """Hidden while there is nothing to say."""

    board: AlertBoard | None = None
    _last_key: object = None
    """The live screen's alert rules and firings (None in a replay)."""

    def show_all(self, sources: list[RunData], detail: RunData) -> None:
        """One run: its end or warning (`show`). A compare: a row for each run that ended or
        warned, named, so the second run's failure is not hidden behind the first's end."""
        if len(sources) < 2:
            if self.styles.height is not None and self.styles.height.value != 1:
                self.styles.height = 1
                self._last_key = None
            self.show(detail)
            return
        rows = [(s, _said(s)) for s in sources]
        rows = [(s, a) for s, a in rows if a is not None]
        key: object = ("compare", tuple((id(s), id(a), len(s.alerts)) for s, a in rows))
        if key == getattr(self, "_last_key", None):
            return
        self._last_key = key
        self.remove_class("-alert")
        if not rows:
            self.display = False
            return
        self.display = True
        levels = {a.level for _s, a in rows}
        worst = next((lv for lv in ("error", "warning", "information") if lv in levels), "information")
        self.set_class(worst == "error", "-error")
        self.set_class(worst == "warning", "-warning")
        self.set_class(worst == "information", "-info")
        shown = rows[:MAX_COMPARE_ROWS]
        self.styles.height = len(shown)
        lines = []
        for s, a in shown:
            icon = {"error": "✖", "warning": "⚠", "information": "●"}.get(a.level, "●")
            line = markup(f"{icon} [b]$label[/b]: $message", label=s.label, message=a.message)
            if a.fix:
                label = "next" if a.level == "information" else "fix"
                line += markup(f"  [b]{label}:[/b] $fix", fix=fix_for_screen(a.fix, run_name=s.label))
            lines.append(line)
        if len(rows) > len(shown):
            lines[-1] += markup(f"  [dim](+{len(rows) - len(shown)} more run(s))[/]")
        self.update(Content("\n").join(lines))

    def show(self, data: RunData) -> None:
        alert = data.ended
        warnings = [a for a in data.alerts if a.level == "warning"]
        if alert is None and warnings:
            alert = warnings[-1]
        fired = self.board.records[-1] if self.board is not None and self.board.records else None
        if fired is not None and (data.ended is not None or (alert is not None and alert.t > fired.t)):
            fired = None  # the run's end, or a newer warning, says more
        resume_key = getattr(self.screen, "resume_key", None)
        key: object = (id(alert), len(warnings), resume_key, id(fired))
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
