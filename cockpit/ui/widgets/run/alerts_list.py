"""The alerts tab: the run's alert rules (the preset's, the user's defaults, rules added at run
time and the built-in set for its trainer family), each with when it last fired and with what,
muted or not; under them every warning, firing and the run's end, newest last, with the fix
when there is one.

The rules come from an `AlertBoard` the live screen keeps (`board`); a replay has none and
shows the warnings alone. Enter on a rule asks the screen to mute or unmute it (`m` is the plots' pick metric).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import DataTable, Static

from cockpit.metrics.rundata import RunData
from cockpit.ui.text import fix_for_screen, markup, num, printable

if TYPE_CHECKING:  # a replay's screen does not import the alert rules (pydantic) for its first frame
    from cockpit.alerts.board import AlertBoard, RuleEntry

SOURCE_LABEL = {"user": "yours", "preset": "preset", "added": "added", "built-in": "built-in",
                "fired": "(gone)"}


def clock(t: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if t else "--:--:--"


class RulesTable(DataTable):
    """One row per rule; the row key is the rule's name (what control/mute.json holds)."""

    BINDINGS = [Binding("enter", "toggle_mute", "Mute/unmute", id="alerts.toggle_mute")]

    @dataclass
    class MuteToggled(Message):
        """The user asked to mute or unmute a rule."""

        name: str
        """The rule's name (what control/mute.json holds)."""
        muted: bool
        """True: mute it; False: unmute it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.entries: list[RuleEntry] = []

    def on_mount(self) -> None:
        for label, key in (("", "state"), ("rule", "rule"), ("from", "source"), ("does", "does"),
                           ("last fired", "when"), ("with", "what")):
            self.add_column(label, key=key)

    def show(self, entries: list[RuleEntry]) -> None:
        current = None
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            current = self.ordered_rows[self.cursor_row].key.value
        self.entries = entries
        self.clear()
        for e in entries:
            fired = e.fired
            state = Text("muted", style="dim") if e.muted else Text("● on", style="bold")
            when = Text("never", style="dim") if fired is None else Text(
                clock(fired.t) + (f" @ {fired.step}" if fired.step is not None else "")
                + (f" ×{fired.count}" if fired.count > 1 else ""), style="bold")
            what = "" if fired is None else f"{printable(fired.message)} → {fired.outcome()}"
            if fired is not None and isinstance(fired.value, (int, float)) and not isinstance(fired.value, bool) \
                    and fired.message.find(num(fired.value)) < 0:
                what = f"{num(fired.value)}: {what}"
            self.add_row(state, Text(printable(e.name), style="dim" if e.muted else ""),
                         SOURCE_LABEL.get(e.source, e.source), e.actions, when, Text(what, no_wrap=True),
                         key=e.name)
        if current is not None:
            for i, e in enumerate(entries):
                if e.name == current:
                    self.move_cursor(row=i)
                    break

    def action_toggle_mute(self) -> None:
        if not self.entries or not 0 <= self.cursor_row < len(self.entries):
            return
        entry = self.entries[self.cursor_row]
        self.post_message(self.MuteToggled(entry.name, not entry.muted))


class AlertRules(Vertical):
    """The rules part of the tab: a title (counts, keys, rule-file problems) and the table."""

    DEFAULT_CSS = """
    AlertRules {
        height: auto;
        padding: 1 2 0 2;
    }
    AlertRules #alert-rules {
        height: auto;
        max-height: 24;
    }
    AlertRules .alerts-title {
        text-style: bold;
        margin-bottom: 1;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static("", classes="alerts-title", id="alert-rules-title")
        yield RulesTable(id="alert-rules")

    _pending: tuple[list[RuleEntry], list[str]] | None = None

    def on_mount(self) -> None:
        if self._pending is not None:
            self.show(*self._pending)

    def show(self, entries: list[RuleEntry], problems: list[str]) -> None:
        if not self.query("#alert-rules-title"):  # not composed yet: shown once it is mounted
            self._pending = (entries, problems)
            return
        self._pending = None
        muted = sum(e.muted for e in entries)
        self.query_one("#alert-rules-title", Static).update(Content("\n".join([
            f"Alert rules ({len(entries)}, {muted} muted) — Enter mutes or unmutes the highlighted one; "
            "a adds one (on the focused plot's metric)", *(f"✗ {p}" for p in problems)])))
        self.query_one(RulesTable).show(entries)


class AlertsList(Static):
    """Every warning, firing and the run's end, newest last. With a `board` (a live run) the
    rules are listed above it (`AlertRules`, mounted beside this widget when first needed)."""

    def __init__(self, content: str = "", *, id: str | None = None) -> None:
        super().__init__(content, id=id)
        self.board: AlertBoard | None = None
        """The live screen's rules and firings; None (a replay): the warnings alone."""
        self._key: tuple | None = None

    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        resume_key = getattr(self.screen, "resume_key", None)
        board = self.board
        key = (id(data), len(data.alerts), id(data.ended), resume_key, data.trainer,
               board.version if board is not None else None)
        if key == self._key:
            return
        self._key = key
        if board is not None and isinstance(self.parent, Widget):
            rules = self.screen.query(AlertRules)
            if rules:
                rules.first().show(board.entries(data.trainer), board.sources.problems)
            else:
                box = AlertRules(id="alert-rules-box")
                self.parent.mount(box, before=self)
                box.call_after_refresh(box.show, board.entries(data.trainer), board.sources.problems)
                if self.screen.focused is self.parent:  # the tab was opened by its key: the
                    def focus_rules() -> None:          # rules take the focus once composed
                        found = box.query(RulesTable)
                        if found:
                            found.first().focus()

                    box.call_after_refresh(focus_rules)
        self.update(self._history(data, resume_key))
    def _history(self, data: RunData, resume_key: str | None) -> Content:
        notes = [markup("[dim]• $note[/]", note=n) for n in data.notes]
        items: list[tuple[float, Content]] = []
        for a in data.alerts:
            style = {"error": "$error", "warning": "$warning"}.get(a.level, "$primary")
            step = f" @ step {a.step}" if a.step is not None else ""
            line = markup(f"[{style}]{clock(a.t)}{step}  $message[/]", message=a.message)
            if a.fix:
                label = "next" if a.level == "information" else "fix"
                line += markup(f"\n    [b]{label}:[/b] $fix", fix=fix_for_screen(
                    a.fix, run_name=data.label, resume_key=resume_key))
            items.append((a.t, line))
        if self.board is not None:
            for rec in self.board.records:
                step = f" @ step {rec.step}" if rec.step is not None else ""
                items.append((rec.t, markup(f"[b $warning]{clock(rec.t)}{step}  ! $rule:[/] $message",
                                            rule=rec.data.get("rule") or "?",
                                            message=rec.data.get("message") or "")))
        items.sort(key=lambda item: item[0] or 0.0)
        lines = notes + [line for _, line in items]
        return Content("\n").join(lines) if lines else Content("no warnings")
