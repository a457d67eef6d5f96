"""The runs of the runs folder, live ones first; Enter opens one. A script run's note is the
command it runs (`$ python train.py --lr 1e-5`), its trainer the one its journal reports."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from cockpit.formats import short_duration
from cockpit.run.summaries import RunSummary, age_of
from cockpit.ui.colors import STATE_STYLES, rich_style
from cockpit.ui.text import printable

DURATION_WIDTH = 6
NAME_MIN = 12


_BOLD_STATES = ("running", "failed")
"""States that stand out in the list: the runs to look at."""
_COLUMNS = ("name", "state", "trainer", "step", "metric", "eta", "age", "note")
_ENDED_COLUMNS = tuple(c for c in _COLUMNS if c != "eta")
"""The columns when no listed run is live: only a live run has an ETA, so the column goes and its
room is the names' (at 60 columns it was a cut `E` at the edge)."""
NOTE_WIDTH = 60
NOTE_ROOM = 16
"""The note's columns a long name leaves on screen (`training` whole, a reason's start)."""
COMMAND_WIDTH = 100
FIRST_ROWS = 50
"""Rows put in the table at once when it is (re)built (or its height and a few more, when it is
taller): more than a screen shows. The rest follow
in FILL_ROWS chunks between frames (`_fill`): DataTable measures every cell it is given, and
10,000 runs' 80,000 cells took seconds before the first frame (bench: home_10k_runs_s)."""
FILL_ROWS = 1000


def _step(r: RunSummary) -> str:
    return f"{r.step if r.step is not None else '-'}/{r.max_steps or '?'}"


def _name_len(name: str) -> int:
    """A name's width as its cell shows it (`printable`), without measuring a plain one."""
    return len(name) if name.isascii() and name.isprintable() else cell_len(printable(name))


def command_line(words: list[str]) -> str:
    """A script run's command as a person would type it: the program by its name, not the
    interpreter's full path."""
    words = list(words)
    words[0] = Path(words[0]).name or words[0]
    return shlex.join(words)


class RunsTable(DataTable):
    """Keeps the highlighted run when the rows are refreshed; a refresh that finds the same runs
    in the same order rewrites only the cells that changed (a 1,000-run folder refreshed every
    2 s would otherwise rebuild 7,000 cells each time)."""

    @dataclass
    class Chosen(Message):
        """Enter on a run."""

        path: str
        """The run folder."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.summaries: list[RunSummary] = []
        self.commands: dict[str, str] = {}
        """Run path -> a script run's command (its note)."""
        self._keys: list[str] = []
        """The row key (run path) of every run listed, in order: the table holds the first
        `len(_drawn)` of them, the rest are added a chunk at a time (`_fill`)."""
        self._drawn: list[tuple[str, ...]] = []
        """The cell texts of the rows in the table (`_values`), in order."""
        self._now = 0.0
        """The time the ages are counted to (the last `show`)."""
        self._marked_set: set[str] = set()
        self._fixed = 0
        """The columns' width but the name's, and the note's start (the last `show`)."""
        self._longest = 0
        """The longest name's width (the last `show`)."""
        self._cursor_to: str | None = None
        """The run the cursor goes back to once the rows of the last `show` are in."""
        self._laid_out_width: int | None = None
        """The width the rows were last laid out for (`show`)."""
        self._filling = False
        """A `_fill` is scheduled."""
        self._name_width: int | None = None
        self._columns: tuple[str, ...] = _COLUMNS
        """The columns the table has now (`_ENDED_COLUMNS` while no listed run is live)."""
        self.wanted: str | None = None
        """A run path the cursor goes to at the next `show` that lists it (the run just left with
        Esc, or just renamed)."""
        self.cells_updated = 0
        """Cells rewritten by the last `show` (all of them when it rebuilt the table)."""
        self._state_styles: dict[str, Style] = {}
        self._muted: Style | None = None
        """Each state's style in the current theme (cells are Rich text: no `$variables`)."""
        self.marked: list[str] = []
        """Run paths marked with space, in the order they were marked (c compares them)."""
        self._painted = False
        """The rows of the last `show` have been drawn (`render_lines`) since it rebuilt the table."""
        self._after_paint: list[Callable[[], object]] = []

    def after_rows_drawn(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the table has drawn its rows (at once if it has): the work that
        can wait for the first frame with the runs in it (the rows below the first screen, the
        check of every run's files) does not slow that frame down."""
        if self._painted:
            callback()
        else:
            self._after_paint.append(callback)

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        if not self._painted and self.row_count:
            self._painted = True
            waiting, self._after_paint = self._after_paint, []
            for callback in waiting:
                callback()
        return lines

    def on_mount(self) -> None:
        self._add_columns(None)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._state_styles = {}
        self._muted = None
        self._name_width = None  # the next show rebuilds every cell, in the new theme's colours
        if self.summaries:
            self.show(self.summaries)

    def _state_style(self, state: str) -> Style:
        if not self._state_styles and self.app.theme_variables:
            self._state_styles = {
                name: rich_style(self.app, f"bold {style}" if name in _BOLD_STATES else style)
                for name, style in STATE_STYLES.items()}
        return self._state_styles.get(state, Style())

    def _muted_style(self) -> Style:
        """The theme's muted foreground, blended onto its surface (a plain colour)."""
        if self._muted is None:
            from textual.color import Color

            variables = self.app.theme_variables
            try:
                # Every Textual theme's variables have these; one without falls to the default colour.
                under = Color.parse(variables.get("surface") or variables["background"])
                muted = under + Color.parse(variables["foreground-muted"])
                self._muted = Style(color=muted.rich_color)
            except Exception:  # noqa: BLE001 - a theme without plain colours: the default colour
                self._muted = Style()
        return self._muted

    def _add_columns(self, name_width: int | None) -> None:
        self.add_column("name", key="name", width=name_width)
        for label, key in (("state", "state"), ("trainer", "trainer"), ("step", "step"), ("last", "metric")):
            self.add_column(label, key=key)
        # Durations are right-aligned in a column as wide as the longest one can be.
        if "eta" in self._columns:
            self.add_column(Text("ETA", justify="right"), key="eta", width=DURATION_WIDTH)
        self.add_column(Text("age", justify="right"), key="age", width=DURATION_WIDTH)
        self.add_column("note", key="note")

    def on_resize(self) -> None:
        # The name's column is sized from the width: only a new width lays the rows out again.
        if self.summaries and self.scrollable_content_region.width != self._laid_out_width:
            self._lay_out()

    def show(self, rows: Sequence[RunSummary], commands: Mapping[str, str] | None = None) -> None:
        """`commands`: run path -> the command of a script run, shown as its note.

        The columns are measured over every run; each row's cells are made as it goes into the
        table (`_values`): 10,000 runs' cells, made at once, were a tenth of a second before
        home's first frame (bench: home_10k_runs_s)."""
        if commands is not None:
            self.commands = dict(commands)
        current = None
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            current = self.ordered_rows[self.cursor_row].key.value
        if self.wanted is not None and any(r.path == self.wanted for r in rows):
            current, self.wanted = self.wanted, None  # the run the user just came back from, or renamed
        self.summaries = list(rows)
        self.marked = [p for p in self.marked if any(r.path == p for r in rows)]  # deleted ones go
        self._marked_set = set(self.marked)
        self._now = time.time()
        columns = _COLUMNS if any(r.live for r in rows) else _ENDED_COLUMNS
        # The columns up to age, and the start of the note, fit the table's width: a long name is
        # cut at the column's edge (the cell keeps the whole name).
        self._fixed = (max([len("state")] + [len(r.state_label) for r in rows])
                       + max([len("trainer")] + [len(r.trainer) for r in rows])
                       + max([len("step")] + [len(_step(r)) for r in rows])
                       + max([len("last")] + [len(r.metric or "-") for r in rows])
                       + DURATION_WIDTH * (1 + ("eta" in columns)) + NOTE_ROOM)
        self._longest = max([len("name")] + [_name_len(r.name) + 2 * (r.path in self._marked_set) for r in rows])
        keys = [r.path for r in rows]
        self._cursor_to = current
        if self._name_width_now(columns) == self._name_width and columns == self._columns and keys == self._keys:
            self._update_cells()
            self._place_cursor()
        else:
            self._columns = columns
            self._keys = keys
            self._lay_out(force=True)

    def _name_width_now(self, columns: tuple[str, ...]) -> int:
        """The name's column width at the table's width now. Before its first layout (home's
        first frame, with the runs read before it), the terminal's width: the names fit as they
        will, unless they are longer than the room left (then the first resize cuts them)."""
        pad = 2 * self.cell_padding * len(columns)
        room = (self.scrollable_content_region.width or self.app.size.width) - pad - self._fixed
        return min(self._longest, max(NAME_MIN, room))

    def _lay_out(self, *, force: bool = False) -> None:
        """The rows again from the first, when the name's column width changed (or `force`)."""
        self._laid_out_width = self.scrollable_content_region.width
        name_width = self._name_width_now(self._columns)
        if force or name_width != self._name_width:
            if self._cursor_to is None:  # a new width: the cursor stays on its run
                self._cursor_to = self.highlighted_path()
            self._rebuild(name_width)
            self._place_cursor()

    def _place_cursor(self) -> None:
        """The cursor on the run it was on before the last `show` (or the one `wanted`)."""
        current, self._cursor_to = self._cursor_to, None
        if current is None:
            return
        for i, path in enumerate(self._keys):
            if path == current:
                self._fill_to(i + 1)
                if i != self.cursor_row:
                    self.move_cursor(row=i)
                break

    def _values(self, i: int) -> tuple[str, ...]:
        """The cell texts of the `i`th run listed, in the columns' order."""
        r = self.summaries[i]
        # Only a live run will finish at some time; an ended one has no ETA.
        eta = short_duration(r.eta_s) if r.live and r.eta_s is not None else "-"
        age = age_of(r.created, self._now, short_duration) if r.created else "?"
        note = (r.error or r.journal_note or r.reason or (r.phase if r.live else "") or "")[:NOTE_WIDTH]
        command = self.commands.get(r.path)
        if command:  # what ran comes first, unless it failed: then why does
            failed = bool(r.error) or r.state in ("failed", "killed")
            parts = [note, f"$ {command}"] if failed else [f"$ {command}", note]
            note = " · ".join(p for p in parts if p)
            note = note if len(note) <= COMMAND_WIDTH else note[:COMMAND_WIDTH - 1] + "…"
        name = f"✓ {r.name}" if r.path in self._marked_set else r.name
        head = (name, r.state_label, r.trainer, _step(r), r.metric or "-")
        return (*head, eta, age, note) if self._columns is _COLUMNS else (*head, age, note)

    @property
    def rows_drawn(self) -> bool:
        """The rows of the last `show` have been drawn since it rebuilt the table."""
        return self._painted

    @property
    def listed(self) -> int:
        """How many runs the table lists (some may still be on their way into it: `_fill`)."""
        return len(self._keys)

    def toggle_mark(self) -> None:
        """Space: mark the highlighted run (or unmark it); its name gets a ✓."""
        if not self.row_count or not 0 <= self.cursor_row < self.row_count:
            return
        path = str(self.ordered_rows[self.cursor_row].key.value)
        if path in self.marked:
            self.marked.remove(path)
        else:
            self.marked.append(path)
        self._name_width = None  # the names' cells are drawn again, with the marks
        self.show(self.summaries)

    def clear_marks(self) -> None:
        if self.marked:
            self.marked = []
            self._name_width = None  # the names' cells are drawn again, without the marks
            self.show(self.summaries)

    def highlighted_path(self) -> str | None:
        if not self.row_count or not 0 <= self.cursor_row < self.row_count:
            return None
        return str(self.ordered_rows[self.cursor_row].key.value)

    def _cell(self, column: str, value: str) -> Text:
        if column == "name":
            return Text(printable(value), overflow="ellipsis", no_wrap=True)
        if column == "state":
            return Text(value, style=self._state_style(value.split(" (", 1)[0]))  # "running (supervisor gone)"
        if column in ("eta", "age"):
            return Text(value, justify="right")
        if column == "note":
            # A colour, not "dim": the cursor row's colour replaces a cell's colour, while "dim"
            # stayed and drew the note dark blue on the cursor's blue.
            return Text(printable(value), style=self._muted_style(), no_wrap=True, overflow="ellipsis")
        return Text(printable(value))  # trainer and step come from files: never markup

    def _rebuild(self, name_width: int) -> None:
        self.clear(columns=True)
        self._add_columns(name_width)
        self._name_width, self._drawn = name_width, []
        self._painted = False
        self._fill_to(max(FIRST_ROWS, self.scrollable_content_region.height + 2))
        self.cells_updated = len(self._keys) * len(self._columns)

    def _fill_to(self, n: int) -> None:
        """The listed runs up to the `n`th in the table; a `_fill` scheduled for the rest."""
        for i in range(len(self._drawn), min(n, len(self._keys))):
            values = self._values(i)
            self.add_row(*(self._cell(c, v) for c, v in zip(self._columns, values, strict=True)), key=self._keys[i])
            self._drawn.append(values)
        if len(self._drawn) < len(self._keys) and not self._filling:
            self._filling = True
            # after the frame with the first screen of rows: it is drawn first
            self.after_rows_drawn(lambda: self.set_timer(0.01, self._fill))

    def _fill(self) -> None:
        self._filling = False
        self._fill_to(len(self._drawn) + FILL_ROWS)

    def _update_cells(self) -> None:
        """The same runs in the same order: only the cells that changed are written again."""
        updated = 0
        for i, (key, before) in enumerate(zip(self._keys, self._drawn, strict=False)):
            values = self._values(i)
            if values == before:
                continue
            for column, value, old in zip(self._columns, values, before, strict=True):
                if value != old:
                    # A cell grows its column (`running` -> `finished`, `5/120` -> `120/120`);
                    # the name's column has its width set from the room left. Only a cell wider
                    # than its column asks for the column to be measured again: that measures
                    # every cell of it (a live run's step and ETA change at every refresh).
                    grow = column != "name" and cell_len(value) > self.columns[ColumnKey(column)].content_width
                    self.update_cell(key, column, self._cell(column, value), update_width=grow)
                    updated += 1
            self._drawn[i] = values
        self.cells_updated = updated

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value:
            self.post_message(self.Chosen(event.row_key.value))
