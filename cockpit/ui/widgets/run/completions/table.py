"""One step's completions as a table: a row a generation, a column a score.

Cells are folded one-line `Text` (a plain string would be read as markup). Grouped by prompt, a
`#` column numbers prompt and generation (`3.2`), and the prompt is written once a group.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import DataTable

from cockpit.ui.text import fold, fold_words, num
from cockpit.ui.widgets.run.completions.detail import SPECIAL_TOKEN
from cockpit.ui.widgets.run.completions.view import Column, Shown

DITTO = '"'  # ASCII: 〃 is double-width and missing from many fonts
SHARED_MIN = 8
"""Fewer shared characters at a prompt's start or end are kept (`Question: ` goes, `?` stays)."""


class StepTable(DataTable):
    """The rows of one step, as `arrange` left them (`shown`)."""

    @dataclass
    class Moved(Message):
        """The user moved the highlight (a key or a click), not a redraw."""

        table: StepTable
        step: int | None
        """The step the table showed when the highlight moved."""

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
        # Each score column as wide as its label (cut at 18) or a value, plus the cell padding:
        # at 100 columns `advantage` is read whole, not `advan` at the edge.
        scores = sum(max(len(fold(c.name, 18)) + (2 if c.name == sort else 0), 8) + 2 for c in cols)
        room = max(20, width - scores - (6 if grouped else 0) - 4 - (2 if prompts else 0) - 2)
        prompt_w = max(12, room // 3) if prompts else 0
        texts = [r["prompt"] for r in shown.rows] if prompts else []
        # Whole prompts when they fit; else the part of each that the others do not share.
        differ = distinct_parts(texts) if texts and max(len(t) for t in texts) > prompt_w else {}
        if grouped:
            self.add_column("#", key="#")
        if prompts:
            self.add_column("prompt", width=prompt_w, key="prompt")
        # A narrow table (two steps side by side) still gives the completion close to half its
        # width; the scores past the edge scroll into view.
        narrow = width < 90
        completion_w = max(16, room - prompt_w, int(width * 0.45) if narrow else 0)
        self.add_column("completion", width=completion_w, key="completion")
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
                cells.append(Text(fold_words(preview(differ.get(r["prompt"], r["prompt"])), prompt_w)))
            previous = g
            cells.append(Text(fold_words(preview(r["completion"]), completion_w)))
            cells += [Text(_cell(c, r), justify="right" if c.numeric else "left") for c in cols]
            self.add_row(*cells, key=str(i))
        if shown.rows:
            self.move_cursor(row=min(keep, len(shown.rows) - 1), animate=False)

    def _moved(self) -> None:
        self.post_message(self.Moved(self, self.step))

    def action_cursor_up(self) -> None:
        super().action_cursor_up()
        self._moved()

    def action_cursor_down(self) -> None:
        super().action_cursor_down()
        self._moved()

    def action_page_up(self) -> None:
        super().action_page_up()
        self._moved()

    def action_page_down(self) -> None:
        super().action_page_down()
        self._moved()

    async def _on_click(self, event: events.Click) -> None:
        await super()._on_click(event)
        self._moved()

    def highlighted(self) -> tuple[dict, int] | None:
        """The highlighted row and its group, if any."""
        if self.shown is None or not 0 <= self.cursor_row < len(self.shown.rows):
            return None
        return self.shown.rows[self.cursor_row], self.shown.groups[self.cursor_row]


def preview(text: str) -> str:
    """A text as a table cell shows it: the tokenizer's special tokens (`<|endoftext|>` padding a
    DPO text, `<|im_end|>`) left out; the detail below shows them, marked."""
    return SPECIAL_TOKEN.sub("", text).strip() if SPECIAL_TOKEN.search(text) else text


def distinct_parts(prompts: list[str]) -> dict[str, str]:
    """Each prompt by the part that tells it from the others: what all of them share at the
    start (a system prompt) and at the end (a chat template's assistant turn) becomes `…`, so a
    narrow column shows the question, not the same text on every row."""
    unique = list(dict.fromkeys(prompts))
    if len(unique) < 2:
        return {p: p for p in unique}
    shortest = min(len(p) for p in unique)
    pre = 0
    while pre < shortest and len({p[pre] for p in unique}) == 1:
        pre += 1
    suf = 0
    while suf < shortest - pre and len({p[len(p) - 1 - suf] for p in unique}) == 1:
        suf += 1
    pre = pre if pre >= SHARED_MIN else 0  # a few shared letters are no system prompt
    suf = suf if suf >= SHARED_MIN else 0
    out = {}
    for p in unique:
        middle = p[pre:len(p) - suf].strip()
        out[p] = ("…" if pre else "") + middle + ("…" if suf else "")
    return out


def _cell(column: Column, row: dict) -> str:
    value = column.value(row)
    if column.numeric or value is None:
        return num(value)
    return fold(str(value), 24)
