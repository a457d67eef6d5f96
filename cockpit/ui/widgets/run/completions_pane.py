"""Sampled completions of one step: prompt, completion, each reward, advantage.

Rows of the newest step are shown (following new steps as they arrive) until
the user scrubs back with `[` / `]`. Cells hold folded one-line text; the
highlighted row is shown whole underneath.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from cockpit.metrics.rundata import RunData
from cockpit.ui.text import fold, fold_tail, markup, num


class CompletionsPane(Vertical):
    """Its keys ([, ], End) are the run screen's while this tab is shown, wherever the focus is."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: RunData | None = None
        self.step: int | None = None
        """The step shown; None follows the newest."""
        self._shown: tuple = ()
        self._rows: list[dict] = []

    def compose(self) -> ComposeResult:
        yield Static("no completions yet", classes="pane-title", id="completions-title")
        table = DataTable(cursor_type="row", zebra_stripes=True, id="completions-table")
        yield table
        with VerticalScroll(id="completions-detail"):
            yield Static("", id="completions-text")

    def show(self, data: RunData | None) -> None:
        self.data = data
        if data is None:
            return
        buf = data.completions
        steps = buf.steps()
        step = self.step if self.step in steps else (steps[-1] if steps else None)
        key = (id(data), buf.version, step)
        if key == self._shown:
            return
        self._shown = key
        title = self.query_one("#completions-title", Static)
        table = self.query_one("#completions-table", DataTable)
        if step is None:
            title.update("no completions yet — GRPO-family trainers log them, others when "
                         "`cockpit.completions` asks for samples")
            table.clear(columns=True)
            return
        rows = buf.rows(step)
        self._rows = rows
        reward_names = list(dict.fromkeys(n for r in rows for n in r["rewards"]))
        # Columns that would be empty are left out (periodic samples have no advantage).
        advantage = any(r.get("advantage") is not None for r in rows)
        title.update(self._title(step, len(rows), steps))
        table.clear(columns=True)
        extra = len(reward_names) + (1 if advantage else 0)
        width = max(20, (self.size.width or 120) - 14 * extra - 8)
        # Cells and labels are Text: a plain string would be read as Rich markup.
        table.add_column("prompt", width=max(12, width // 3))
        table.add_column("completion", width=max(16, width - width // 3))
        for name in reward_names:
            table.add_column(Text(fold(name, 18)))
        if advantage:
            table.add_column("advantage")
        for i, r in enumerate(rows):
            cells = [Text(fold_tail(r["prompt"], max(12, width // 3))),
                     Text(fold(r["completion"], 200))]
            cells += [Text(num(r["rewards"].get(n))) for n in reward_names]
            if advantage:
                cells.append(Text(num(r["advantage"])))
            table.add_row(*cells, key=str(i))
        self._show_detail(0)

    def _title(self, step: int, n_rows: int, steps: list[int]):
        """`step 291 · 4 samples · 7 steps kept · following newest`: what is shown, how much
        history there is to scrub through, and whether new steps will replace it."""
        samples = f"{n_rows} sample{'s' if n_rows != 1 else ''}"
        kept = f"{len(steps)} step{'s' if len(steps) != 1 else ''} kept"
        if self.step is None:
            where, keys = "following newest", "[ older"
        else:
            where = f"[$warning]{steps.index(step) + 1} of {len(steps)}[/], scrubbed back"
            keys = "[ older  ] newer  End newest"
        return markup(f"[b]step {step}[/b] · {samples} · {kept} · {where} · [dim]$keys[/]",
                      keys=keys)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail(event.cursor_row)

    def _show_detail(self, index: int) -> None:
        text = self.query_one("#completions-text", Static)
        rows = self._rows
        if not 0 <= index < len(rows):
            text.update("")
            return
        r = rows[index]
        rewards = "  ".join(f"{k}={num(v)}" for k, v in r["rewards"].items())
        text.update(markup("[b]prompt[/b]\n$prompt\n[b]completion[/b]\n$completion\n"
                           "[dim]$rewards  advantage=$advantage  source=$source[/]",
                           prompt=r["prompt"], completion=r["completion"], rewards=rewards,
                           advantage=num(r["advantage"]), source=r.get("source") or "-"))

    def action_scrub(self, delta: int) -> None:
        if self.data is None:
            return
        steps = self.data.completions.steps()
        if not steps:
            return
        current = self.step if self.step in steps else steps[-1]
        i = max(0, min(len(steps) - 1, steps.index(current) + delta))
        self.step = None if i == len(steps) - 1 else steps[i]
        self.show(self.data)

    def action_follow(self) -> None:
        self.step = None
        self.show(self.data)
