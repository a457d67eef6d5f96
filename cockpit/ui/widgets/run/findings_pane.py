"""The findings tab: what the run's data says is wrong, one row a finding, and under it the
highlighted finding's fix and evidence (metric points, the completions that show it, the prompts
of wasted groups). Enter shows the evidence alone, `j` jumps to the completions browser at the
finding's step, `J` to the metric panel it is about (no other tab of the run screen gives these
letters a meaning of its own: `g` and `p` are the completions tab's).

A live run shows the findings its supervisor wrote (`finding` journal records); a replay also
asks the judge (`cockpit.findings.report.for_run`, the same code the supervisor runs) in a
thread worker, so a trainer_state.json gets its findings too.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from cockpit.findings import report
from cockpit.findings.judge import examine, judge_run
from cockpit.findings.model import Finding, Judgement
from cockpit.findings.series import sample
from cockpit.metrics.glossary import one_line
from cockpit.metrics.rundata import RunData
from cockpit.ui.text import markup, num, printable


class FindingsTable(DataTable):
    """One row a finding; the keys act on the highlighted one."""

    BINDINGS = [
        Binding("enter", "evidence", "Evidence", tooltip="Show the evidence alone (Enter again: back)",
                id="findings.evidence"),
        Binding("j", "jump('completions')", "Its completions", tooltip="Jump to the completions at the finding's step",
                id="findings.completions"),
        Binding("J", "jump('plot')", "Its metric", tooltip="Jump to the panel of the metric the finding is about",
                id="findings.plot"),
    ]

    @dataclass
    class Jumped(Message):
        """The user asked to see a finding where its data is."""

        target: str
        """"completions" or "plot"."""
        step: int | None
        """The step to show (the finding's completions evidence, else the end of its window)."""
        key: str | None
        """For "plot": the metric key of the finding's first metric evidence."""

    @dataclass
    class EvidenceToggled(Message):
        """Enter on a row: show the evidence alone, or go back to the list."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.findings: list[Finding] = []

    def on_mount(self) -> None:
        for label, key in (("", "severity"), ("finding", "kind"), ("steps", "steps"), ("summary", "summary")):
            self.add_column(label, key=key)

    def show(self, findings: list[Finding]) -> None:
        at = self.cursor_row if self.row_count else 0
        self.findings = findings
        self.clear()
        for i, f in enumerate(findings):
            self.add_row(Text(f.severity, style="bold" if f.severity != "info" else ""), Text(printable(f.kind)),
                         "whole run" if f.steps is None else f"{f.steps[0]}–{f.steps[1]}",
                         Text(printable(f.summary), no_wrap=True), key=str(i))
        if findings:
            self.move_cursor(row=min(at, len(findings) - 1))

    def highlighted(self) -> Finding | None:
        if not self.findings or not 0 <= self.cursor_row < len(self.findings):
            return None
        return self.findings[self.cursor_row]

    def action_evidence(self) -> None:
        self.post_message(self.EvidenceToggled())

    def action_jump(self, target: str) -> None:
        f = self.highlighted()
        if f is None:
            return
        steps = [int(ev["step"]) for ev in f.evidence if ev.get("type") == "completions" and ev.get("step") is not None]
        keys = [str(ev["key"]) for ev in f.evidence if ev.get("type") == "metric" and ev.get("key")]
        step = steps[0] if steps else (f.steps[1] if f.steps else None)
        if target == "plot" and not keys:
            self.notify("this finding has no metric to show", timeout=2)
            return
        self.post_message(self.Jumped(target, step, keys[0] if keys else None))


class FindingsPane(Vertical):
    DEFAULT_CSS = """
    FindingsPane #findings-title { padding: 0 1; text-style: bold; }
    FindingsPane #findings-table { height: auto; max-height: 12; }
    FindingsPane #findings-detail-scroll { height: 1fr; padding: 0 1; }
    FindingsPane.-evidence #findings-table { display: none; }
    FindingsPane.-empty #findings-table { display: none; }
    """

    def __init__(self, *, judge: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.judge = judge
        """Ask the judge too (a replay); a live run shows what its supervisor recorded until it
        ends, then it is judged whole too."""
        self.data: RunData | None = None
        self.findings: list[Finding] = []
        self._key: tuple | None = None
        self._judged: tuple[tuple, Judgement] | None = None
        self.checked: Judgement | None = None
        """What the judge checked (the latest judgement, live or replayed)."""
        self._detail_of: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="findings-title")
        yield FindingsTable(id="findings-table")
        with VerticalScroll(id="findings-detail-scroll"):
            yield Static("", id="findings-detail")

    def on_show(self) -> None:
        """The tab opened: its keys are the table's, so the table takes the focus."""
        if not isinstance(self.screen.focused, Input):
            self._focus_list()

    def _focus_list(self) -> None:
        """The table when there is a finding, else the scrollable list of what was checked (so
        the footer offers no key for rows that do not exist). Shown before its children were
        composed (the tab opened as the pane was revealed, under load): once they are."""
        if not self.query(FindingsTable):
            self.call_after_refresh(self._focus_list)
            return
        table = self.query_one(FindingsTable)
        # At once, not `focus()` (applied later): findings that arrive before a deferred focus
        # lands would see no focus here, and the focus would then stay on the scroll box.
        self.screen.set_focus(table if self.findings else self.query_one("#findings-detail-scroll"))

    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        if not self.query(FindingsTable):
            # Mounted, its children not yet (its screen was covered as the pane was revealed:
            # Home opened at once over a replay, the crash hunt): shown once they are.
            self.call_after_refresh(self.show, data)
            return
        if data.tail_from is not None:  # a long journal's first look: judged once read whole
            self.query_one("#findings-title", Static).update(Text("Reading the whole journal…"))
            return
        self.data = data
        whole = self.judge or data.ended is not None  # a run that ended is judged whole, as a replay
        key = (id(data), len(data.findings), data.store.version, whole)
        if key != self._key:
            self._key = key
            waiting = self._judged is None or self._judged[0] != key
            if waiting:
                self._judge(data, key, whole)
            else:
                assert self._judged is not None
                self.checked = self._judged[1]
            judged = self.checked.findings if self.checked is not None and whole and not waiting else []
            self.findings = report.merged_run(data, judged) if judged else \
                sorted(report.recorded(data), key=lambda f: (f.steps[0] if f.steps else -1, f.kind))
            table = self.query_one(FindingsTable)
            table.show(self.findings)
            # The screen's focus, not `has_focus` (that follows a Focus event, handled later).
            had_focus = self.screen.focused in (table, self.query_one("#findings-detail-scroll"))
            self.set_class(not self.findings, "-empty")
            table.can_focus = bool(self.findings)  # no row keys without rows
            if had_focus and self.is_on_screen:
                self._focus_list()
            if self.findings:
                title = f"Findings ({len(self.findings)})" + (" — judging…" if waiting else "")
                title += " · Enter: evidence · j: its completions · J: its metric's panel"
            else:
                title = "Judging…" if waiting and whole else "No findings"
            self.query_one("#findings-title", Static).update(Text(title))
            self._detail_of = None
        self._show_detail()

    @work(thread=True, exclusive=True, group="findings-judge", exit_on_error=False)
    def _judge(self, data: RunData, key: tuple, whole: bool) -> None:
        """A run judged whole (a replay, a run that ended): findings with their evidence; a live
        one: what the judge checks (its findings are the supervisor's, in the journal)."""
        try:
            found = judge_run(data.store, data.library, data.trainer) if whole else examine(data.store, data.trainer)
        except Exception:  # noqa: BLE001 - the tab then shows what was recorded
            found = Judgement([], [], None, 0, 0)
        self.app.call_from_thread(self._judged_done, key, found)

    def _judged_done(self, key: tuple, found: Judgement) -> None:
        self._judged = (key, found)
        self._key = None
        self.show(self.data)

    def _show_detail(self) -> None:
        f = self.query_one(FindingsTable).highlighted() if self.findings else None
        key = (id(f), self.has_class("-evidence"), id(self.checked))
        if key == self._detail_of:
            return
        self._detail_of = key
        family = self.checked.family if self.checked is not None else None
        shown = detail(f, family) if f else Content("")
        if self.checked is not None and not self.has_class("-evidence"):
            shown = Content("\n").join([shown, checked(self.checked)]) if f else checked(self.checked)
        self.query_one("#findings-detail", Static).update(shown)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def on_findings_table_evidence_toggled(self) -> None:
        self.toggle_class("-evidence")
        if self.has_class("-evidence"):
            self.query_one("#findings-detail-scroll").focus()
        self._show_detail()

    def on_key(self, event: events.Key) -> None:
        """Enter or Escape in the evidence view goes back to the list."""
        if self.has_class("-evidence") and event.key in ("enter", "escape"):
            event.stop()
            self.remove_class("-evidence")
            self._focus_list()
            self._show_detail()


def detail(f: Finding, family: str | None = None) -> Content:
    """A finding's summary, fix and evidence, as text (nothing from the run is markup); each
    metric of the evidence with what it means (the glossary, in the wording of `family`)."""
    lines = [markup("[b]$kind[/b] · $where · $severity", kind=f.kind, severity=f.severity,
                    where="whole run" if f.steps is None else f"steps {f.steps[0]}–{f.steps[1]}"),
             markup("$summary", summary=f.summary)]
    if f.fix:
        lines.append(markup("[b]fix:[/b] $fix", fix=f.fix))
    for ev in f.evidence:
        kind = ev.get("type")
        if kind == "metric":
            pts = ev.get("points") or []
            shown = ", ".join(f"{p[0]}: {num(p[1])}" for p in pts[:: max(1, -(-len(pts) // 12))])
            lines.append(markup("\n[b]$key[/b] ($n)  $pts", key=ev.get("key"), n=sample(ev), pts=shown))
            meaning = one_line(str(ev.get("key") or ""), family)
            if meaning:
                lines.append(markup("  [dim]$meaning[/dim]", meaning=meaning))
        elif kind == "completions":
            lines.append(markup("\n[b]step $step[/b] — $what", step=ev.get("step"),
                                what=ev.get("what") or "completions"))
            for row in ev.get("rows") or []:
                rewards = "  ".join(f"{k}={num(v)}" for k, v in (row.get("rewards") or {}).items())
                lines.append(markup("  [dim]$prompt[/dim]", prompt=_one_line(row.get("prompt"))[-120:]))
                lines.append(markup("  → $completion   [b]$rewards[/b]",
                                    completion=str(row.get("completion") or "")[:300], rewards=rewards))
        elif kind == "prompts":
            lines.append(markup("\n[b]$what[/b] ($count; export: cockpit findings RUN --export-prompts FILE)",
                                what=ev.get("what") or "prompts", count=ev.get("count")))
            for p in (ev.get("prompts") or [])[:20]:
                lines.append(markup("  • $p", p=_one_line(p)[-160:]))
        elif kind == "file":
            lines.append(markup("\n[b]$what[/b]: $path", what=ev.get("what") or "file", path=ev.get("path")))
    return Content("\n").join(lines)


def checked(j: Judgement) -> Content:
    """What the judge checked: the rules over how many steps, each quiet rule with the number that
    kept it quiet, and the rules the run logged nothing for."""
    lines = [markup("\n[b]$line[/b]", line=j.checked_line())]
    width = max((len(k) for k, _ in j.quiet_notes()), default=0)
    for kind, note in j.quiet_notes():
        lines.append(markup("  [dim]quiet[/dim] $kind  $note", kind=kind.ljust(width), note=note))
    absent = [c.kind for c in j.checks if not c.ran]
    if absent:
        lines.append(markup("  [dim]not run (they read what this run did not log, or do not apply to it): "
                            "$kinds[/dim]", kinds=", ".join(absent)))
    return Content("\n").join(lines)


def _one_line(text: object) -> str:
    return str(text or "").replace("\n", " ⏎ ")
