"""The log history: one row per step of metrics/eval records, appended as they come, bounded.

A step logged again (after a resume from an older checkpoint) shows its newest value only, and
a `resumed from checkpoint-N` row marks where the new attempt starts (`metrics.buffers.LogRows`).
"""

from __future__ import annotations

from pathlib import PurePath

from rich.text import Text
from textual.widgets import DataTable

from cockpit.metrics.buffers import resumed_step
from cockpit.metrics.rundata import RunData
from cockpit.run import journal
from cockpit.ui.text import num, printable


class LogHistoryTable(DataTable):
    """Rows are appended, rebuilt only when new columns appear or rows were dropped (a resume);
    at most `LogRows.capacity`."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self._source: int | None = None
        self._version = 0
        self._dropped = 0
        self._columns_shown: list[str] = []
        self._next_key = 0

    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        rows = data.log_rows
        if self._source == id(data) and rows.version == self._version:
            return
        columns = rows.columns()
        new = rows.version - self._version if self._source == id(data) else None
        if self._source != id(data) or columns != self._columns_shown or new is None \
                or new > rows.capacity or rows.dropped != self._dropped:
            self.clear(columns=True)
            self._columns_shown = columns
            self.add_column("kind", key="kind")
            self.add_column("step", key="step")
            for c in columns:
                self.add_column(Text(printable(c)), key=c)  # a str label would be read as markup
            fresh = rows.rows()
        else:
            fresh = rows.rows()[-new:] if new else []
        self._source = id(data)
        self._version = rows.version
        self._dropped = rows.dropped
        at_end = self.cursor_row >= self.row_count - 1
        for rec in fresh:
            if rec.kind == journal.RUN_STARTED:
                self.add_row(*self._resume_cells(rec, len(columns)), key=str(self._next_key))
            else:
                kind = "eval" if rec.kind == journal.EVAL else "train"
                self.add_row(kind, str(rec.step), *[Text(num(rec.data.get(c))) for c in columns],
                             key=str(self._next_key))
            self._next_key += 1
        while self.row_count > rows.capacity:
            self.remove_row(self.ordered_rows[0].key)
        if at_end and self.row_count:
            self.move_cursor(row=self.row_count - 1)

    @staticmethod
    def _resume_cells(rec: journal.Record, n_columns: int) -> list[Text]:
        step = resumed_step(rec)
        where = PurePath(str(rec.data.get("resumed_from"))).name
        cells = [Text(f"⟲ resumed from {printable(where)}", style="bold"),
                 Text(str(step) if step is not None else "-", style="bold")]
        return cells + [Text("") for _ in range(n_columns)]
