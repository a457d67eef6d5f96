"""The runs of the runs folder, live ones first; Enter opens one."""

from __future__ import annotations

import time
from typing import Sequence

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from cockpit.core.runs import RunSummary
from cockpit.core.watch import fmt_duration

_STATE_STYLE = {"running": "bold green", "starting": "cyan", "stopping": "yellow",
                "finished": "blue", "stopped": "yellow", "failed": "bold red", "killed": "red",
                "unknown": "magenta"}


class RunsTable(DataTable):
    """Keeps the highlighted run when the rows are refreshed."""

    class Chosen(Message):
        """Enter on a run."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.summaries: list[RunSummary] = []

    def on_mount(self) -> None:
        for label, key in (("name", "name"), ("state", "state"), ("trainer", "trainer"),
                           ("step", "step"), ("ETA", "eta"), ("age", "age"), ("note", "note")):
            self.add_column(label, key=key)

    def show(self, rows: Sequence[RunSummary]) -> None:
        current = None
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            current = self.ordered_rows[self.cursor_row].key.value
        self.summaries = list(rows)
        self.clear()
        now = time.time()
        for r in rows:
            step = f"{r.step if r.step is not None else '-'}/{r.max_steps or '?'}"
            eta = fmt_duration(r.eta_s) if r.eta_s is not None else "-"
            note = r.error or r.reason or (r.phase if r.live else "") or ""
            self.add_row(Text(r.name), Text(r.state, style=_STATE_STYLE.get(r.state, "")),
                         r.trainer, step, eta, fmt_duration(now - r.created) if r.created else "?",
                         Text(note[:60], style="dim"), key=r.path)
        if current is not None:
            for i, r in enumerate(rows):
                if r.path == current:
                    self.move_cursor(row=i)
                    break

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(self.Chosen(event.row_key.value))
