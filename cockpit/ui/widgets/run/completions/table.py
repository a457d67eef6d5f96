"""One step's completions as a table: a row a generation, a column a score.

Cells are folded one-line `Text` (a plain string would be read as markup). Grouped by prompt, a
`#` column numbers prompt and generation (`3.2`), and the prompt is written once a group.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from cockpit.ui.text import fold, fold_tail, num
from cockpit.ui.widgets.run.completions.view import Column, Shown

SCORE_WIDTH = 14
"""Room a score column takes (label or value, and the cell padding)."""
DITTO = "〃"


class StepTable(DataTable):
    """The rows of one step, as `arrange` left them (`shown`)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.shown: Shown | None = None
        self.step: int | None = None

    def show_step(self, step: int | None, shown: Shown | None, *, width: int, grouped: bool,
                  sort: str | None, descending: bool, prompts: bool = True) -> None:
        """Draw `shown`, keeping the highlighted row where it was when the step is the same.
        Without `prompts` (one prompt followed: the state line names it) the completion has
        the room."""
        keep = self.cursor_row if step == self.step else 0
        self.step, self.shown = step, shown
        self.clear(columns=True)
        if shown is None:
            return
        cols = shown.columns
        room = max(20, width - SCORE_WIDTH * len(cols) - (6 if grouped else 0) - 8)
        prompt_w = max(12, room // 3) if prompts else 0
        if grouped:
            self.add_column("#", key="#")
        if prompts:
            self.add_column("prompt", width=prompt_w, key="prompt")
        # A narrow table (two steps side by side) still gives the completion close to half its
        # width; the scores past the edge scroll into view.
        self.add_column("completion", width=max(16, room - prompt_w, int(width * 0.45)), key="completion")
        for c in cols:
            label = fold(c.name, 18)
            if sort is not None and c.name == sort:
                label += " ↓" if descending else " ↑"
            self.add_column(Text(label), key=f"col:{c.name}")
        numbers: dict[int, int] = {}
        previous = None
        for i, (r, g) in enumerate(zip(shown.rows, shown.groups, strict=True)):
            cells: list[Text] = []
            if grouped:
                numbers[g] = numbers.get(g, 0) + 1
                cells.append(Text(f"{g + 1}.{numbers[g]}"))
            if prompts and grouped and g == previous:
                cells.append(Text(DITTO, style="dim"))
            elif prompts:
                cells.append(Text(fold_tail(r["prompt"], prompt_w)))
            previous = g
            cells.append(Text(fold(r["completion"], 200)))
            cells += [Text(_cell(c, r), justify="right" if c.numeric else "left") for c in cols]
            self.add_row(*cells, key=str(i))
        if shown.rows:
            self.move_cursor(row=min(keep, len(shown.rows) - 1), animate=False)

    def highlighted(self) -> tuple[dict, int] | None:
        """The highlighted row and its group, if any."""
        if self.shown is None or not 0 <= self.cursor_row < len(self.shown.rows):
            return None
        return self.shown.rows[self.cursor_row], self.shown.groups[self.cursor_row]


def _cell(column: Column, row: dict) -> str:
    value = column.value(row)
    if column.numeric or value is None:
        return num(value)
    return fold(str(value), 24)
