"""The completions tab: every logged step's sampled completions, one step at a time.

Rows come from the run's `CompletionsLibrary` (`RunData.library`), which reads a step when it is
shown and keeps a few: a 10,000-step run costs what one step costs. The newest step is shown,
following new ones, until the user moves (the highlight too): `[` `]` older/newer, Home the first, End the newest
again, `g` a typed step. The filter box (`/`) keeps rows by score (`acc>0.5`, `adv<0`) and text;
`o` sorts by a score, `p` groups the generations of each prompt, `t` follows the highlighted
prompt across steps, `b` pins the step and shows another beside it. Enter shows one completion whole.

The keys are the run screen's (`RunView`), live while this tab is shown wherever the focus is;
each runs one of this pane's actions (`completions('sort')` → `action_sort`). Where the browser
stands is one `Browse` in a reactive: an action makes a new one, and its watcher redraws.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import var
from textual.widgets import DataTable, Input, Static
from textual.worker import get_current_worker

from cockpit.metrics.rundata import RunData
from cockpit.run.folder import LIVE_STATES
from cockpit.ui.text import fold_tail, markup
from cockpit.ui.widgets.run.completions.bar import DetailScroll, StepInput
from cockpit.ui.widgets.run.completions.detail import detail
from cockpit.ui.widgets.run.completions.table import StepTable
from cockpit.ui.widgets.run.completions.view import Browse, Query, arrange, filter_hint, sortable

EMPTY = ("no completions yet — GRPO-family trainers log them, others when "
         "`cockpit.completions` asks for samples")
NONE_HERE = ("no completions in $label — a run folder has them when its trainer logged them "
             "(GRPO family, or `cockpit.completions`); a trainer_state.json has only metrics, "
             "its output dir TRL's completions/*.parquet when `log_completions` was on")
"""For a source that will not change (a replay): "yet" would promise rows that never come."""


class CompletionsPane(Vertical):
    """A step's rows in a table (two, side by side, when comparing), the highlighted one below."""

    @dataclass
    class PromptFound(Message):
        """The step-by-step search for the followed prompt ended."""

        step: int | None
        """The nearest step that sampled the prompt, or None: not found."""
        direction: int
        """-1 searched older steps, 1 newer ones."""
        prompt: str | None
        """The prompt searched for."""

    browse: var[Browse] = var(Browse(), init=False)
    """Where the browser stands (step, pinned step, filter, order, grouping, followed prompt)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: RunData | None = None
        self._shown: tuple = ()
        self._rows: list[dict] = []

    def watch_browse(self) -> None:
        self.show(self.data)

    def on_resize(self) -> None:
        """The tables are cut to the pane's width: a new width draws them again at once (a
        finished run brings no new data that would, and a pane drawn before its first layout
        had no width yet). A pane hidden with its tab has no width: it is drawn when shown."""
        if self.size.width:
            self.show(self.data)

    def _set(self, **changes: Any) -> None:
        self.browse = replace(self.browse, **changes)

    # What the browser stands on, read (tests, the run screen); changed only through `browse`.
    @property
    def step(self) -> int | None:
        return self.browse.step

    @property
    def pinned(self) -> int | None:
        return self.browse.pinned

    @property
    def sort(self) -> str | None:
        return self.browse.sort

    @property
    def grouped(self) -> bool:
        return self.browse.grouped

    @property
    def prompt(self) -> str | None:
        return self.browse.prompt

    @property
    def paused(self) -> bool:
        return self.browse.paused

    def compose(self) -> ComposeResult:
        yield Static(EMPTY, classes="pane-title", id="completions-title")
        with Horizontal(id="completions-bar"):
            yield Static(markup("[b $accent]g[/] step"), classes="completions-label")
            yield StepInput(type="integer", compact=True, id="completions-step")
            yield Static(markup("[b $accent]/[/] filter"), classes="completions-label")
            yield StepInput(placeholder="acc>0.5  adv<0  \"some text\"", compact=True,
                            id="completions-query")
            yield Static("", id="completions-state")
        with Horizontal(id="completions-tables"):
            # The moving table first: it is the pane's first table and first in the focus chain.
            with Vertical(id="completions-side-main", classes="completions-side"):
                yield Static("", classes="completions-side-label", id="completions-label-main")
                yield StepTable(id="completions-table")
            with Vertical(id="completions-side-pinned", classes="completions-side"):
                yield Static("", classes="completions-side-label", id="completions-label-pinned")
                yield StepTable(id="completions-compare")
        with DetailScroll(id="completions-detail"):
            yield Static("", id="completions-text")

    # -- drawing -------------------------------------------------------------------------------

    @property
    def library(self) -> Any:
        return self.data.library if self.data is not None else None

    def steps(self) -> list[int]:
        lib = self.library
        return lib.steps() if lib is not None else []

    def shown_step(self) -> int | None:
        steps = self.steps()
        if not steps:
            return None
        step = self.browse.step
        return step if step is not None and _has(steps, step) else steps[-1]

    def show(self, data: RunData | None, *, force: bool = False) -> None:
        """Draw what changed. The tables are rebuilt when what they show changed (a step,
        the filter, the order, the width; new rows only for the newest step, followed); the
        title, which counts the steps, whenever a step was logged."""
        self.data = data
        if data is None:
            return
        lib = self.library
        steps = self.steps()
        step = self.shown_step()
        b = self.browse
        if b.pinned is not None and not _has(steps, b.pinned):
            # Another source's details, with other steps (no redraw of its own: this is one).
            b = replace(b, pinned=None)
            self.set_reactive(CompletionsPane.browse, b)
        width = self.size.width or 120
        view = (id(data), step, b.pinned, b.search.text, b.sort, b.descending,
                b.grouped, b.prompt, width, lib.version if b.step is None and lib else None)
        key = (view, len(steps), b.seeking)
        if key == self._shown and not force:
            return
        redraw = force or not self._shown or view != self._shown[0]
        self._shown = key
        title = self.query_one("#completions-title", Static)
        main = self.query_one("#completions-table", StepTable)
        if step is None:
            self.set_class(False, "-comparing")
            title.add_class("-empty")  # the whole sentence, wrapped: there is no table under it
            title.update(EMPTY if data.state in LIVE_STATES else markup(NONE_HERE, label=data.label))
            main.show_step(None, None, width=width, grouped=False, sort=None, descending=True)
            self._rows = []
            self._show_detail(main)
            return
        title.remove_class("-empty")
        if redraw:
            self._redraw(lib, step, width)
        assert main.shown is not None
        title.update(self._title(step, main.shown.total, steps))

    def _redraw(self, lib: Any, step: int, width: int) -> None:
        main = self.query_one("#completions-table", StepTable)
        pinned = self.browse.pinned
        comparing = pinned is not None
        self.set_class(comparing, "-comparing")
        side = width // 2 - 1 if comparing else width
        shown = self._arrange(lib.rows(step))
        self._draw(main, step, shown, side)
        self._rows = shown.rows
        if pinned is not None:
            other = self.query_one("#completions-compare", StepTable)
            self._draw(other, pinned, self._arrange(lib.rows(pinned)), side)
            self.query_one("#completions-label-pinned", Static).update(markup(
                "[b]step $step[/b] [dim]pinned · b unpins[/]", step=pinned))
            self.query_one("#completions-label-main", Static).update(markup(
                "[b]step $step[/b] [dim]moves with [ ] Home End[/]", step=step))
        self.query_one("#completions-step", Input).placeholder = str(step)
        query = self.query_one("#completions-query", Input)
        query.placeholder = filter_hint(shown.columns)
        query.styles.min_width = len(query.placeholder) + 2  # the hint is read whole; the state line gives way
        self.query_one("#completions-state", Static).update(self._state(shown))
        self._show_detail(self._detail_table())

    def _arrange(self, rows: list[dict]):
        b = self.browse
        return arrange(rows, query=b.search, sort=b.sort, descending=b.descending,
                       grouped=b.grouped, prompt=b.prompt)

    def _draw(self, table: StepTable, step: int, shown, width: int) -> None:
        b = self.browse
        table.show_step(step, shown, width=width, grouped=b.grouped, sort=b.sort,
                        descending=b.descending, prompts=b.prompt is None)

    def _title(self, step: int, n_rows: int, steps: list[int]):
        """`step 291 · 4 samples · 7 steps kept · following newest`: what is shown, how much
        history there is to move through, and whether new steps will replace it."""
        samples = f"{n_rows} sample{'s' if n_rows != 1 else ''}"
        kept = f"{len(steps)} step{'s' if len(steps) != 1 else ''} kept"
        b = self.browse
        if b.step is None:
            where, keys = "following newest", "[ older  Home first"
        elif b.paused:
            where, keys = f"[$warning]paused at step {step}[/]", "End resumes following"
        else:
            where = f"[$warning]{bisect.bisect_left(steps, step) + 1} of {len(steps)}[/], scrubbed back"
            keys = "[ older  ] newer  End newest  Home first"
        if b.seeking:
            where += " · [$warning]looking for that prompt in $dir steps…[/]"
        return markup(f"[b]step {step}[/b] · {samples} · {kept} · {where} · [dim]$keys[/]",
                      keys=keys, dir="older" if b.seeking < 0 else "newer")

    def _state(self, shown) -> Any:
        """What narrows or orders the rows, so a short table never looks like missing data."""
        parts: list[str] = []
        values: dict[str, object] = {}
        b = self.browse
        if b.prompt is not None:
            parts.append("[$accent]one prompt[/] $prompt")
            values["prompt"] = fold_tail(b.prompt, 24)
        if b.search or b.prompt is not None:
            parts.append(f"{len(shown.rows)} of {shown.total} shown")
        if shown.problems:
            parts.append("[$error]$problem[/]")
            values["problem"] = shown.problems[0]
        if b.sort is not None:
            parts.append("by $sort " + ("↓" if b.descending else "↑"))
            values["sort"] = b.sort
        if b.grouped:
            n = len(shown.group_sizes)
            parts.append(f"{n} prompt{'s' if n != 1 else ''}")
        if not parts:
            return markup("[dim]o sort  p group  t one prompt  b side by side[/]")
        return markup(" · ".join(parts), **values)

    def _show_detail(self, table: StepTable) -> None:
        text = self.query_one("#completions-text", Static)
        got = table.highlighted()
        if got is None:
            text.update("")
            return
        row, group = got
        assert table.shown is not None
        text.update(detail(row, table.shown.columns, group=group if self.browse.grouped else None,
                           group_size=table.shown.group_sizes.get(group)))

    def _detail_table(self) -> StepTable:
        """The table whose highlighted row the detail shows: the focused one, else the main."""
        focused = self.screen.focused if self.is_mounted else None
        if isinstance(focused, StepTable) and self.browse.pinned is not None:
            return focused
        return self.query_one("#completions-table", StepTable)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.data_table is self._detail_table():
            self._show_detail(event.data_table)

    def on_step_table_moved(self, event: StepTable.Moved) -> None:
        """Moving the highlight means reading a row: following pauses on the step shown, so
        the next step neither swaps the rows nor puts the highlight back on the first."""
        event.stop()
        if event.table.id == "completions-table" and self.browse.step is None and event.step is not None:
            self._set(step=event.step, paused=True)

    def on_descendant_focus(self, event) -> None:
        if isinstance(event.widget, StepTable):
            self._show_detail(event.widget)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row: the completion whole, the tables out of the way; Enter or Escape
        brings them back."""
        event.stop()
        self.action_zoom()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a score's header sorts by it; a second click turns the order round."""
        event.stop()
        key = str(event.column_key.value or "")
        if key.startswith("col:"):
            name = key[4:]
            if self.browse.sort == name:
                self._set(descending=not self.browse.descending)
            else:
                self._set(sort=name, descending=True)

    # -- the inputs ----------------------------------------------------------------------------

    @on(Input.Changed, "#completions-query")
    def _query_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._set(search=Query.parse(event.value))

    @on(Input.Submitted, "#completions-query")
    def _query_done(self, event: Input.Submitted) -> None:
        event.stop()
        self._leave_input(event.input)

    @on(Input.Submitted, "#completions-step")
    def _step_typed(self, event: Input.Submitted) -> None:
        event.stop()
        self._leave_input(event.input)
        try:
            wanted = int(event.value)
        except ValueError:
            return
        steps = self.steps()
        if not steps:
            return
        i = bisect.bisect_left(steps, wanted)
        near = min((j for j in (i - 1, i) if 0 <= j < len(steps)), key=lambda j: abs(steps[j] - wanted))
        if steps[near] != wanted:
            self.notify(f"no completions at step {wanted}: showing step {steps[near]}, the nearest",
                        timeout=3)
        self._go(near, steps)

    @on(DetailScroll.Unzoomed)
    def _unzoom(self, event: DetailScroll.Unzoomed) -> None:
        event.stop()
        self.action_zoom()

    @on(StepInput.Left)
    def _input_left(self, event: StepInput.Left) -> None:
        event.stop()
        self._leave_input(event.input)

    def _leave_input(self, widget: Input) -> None:
        widget.can_focus = False
        if widget.id == "completions-step":
            widget.value = ""
        self.query_one("#completions-table", StepTable).focus()

    def _open_input(self, selector: str, value: str | None = None) -> None:
        widget = self.query_one(selector, Input)
        widget.can_focus = True
        if value is not None:
            widget.value = value
        widget.focus()

    # -- actions (the run screen's keys) -------------------------------------------------------

    def leave_mode(self) -> bool:
        """Escape on this tab: the zoomed completion, then the pinned step, then the followed
        prompt are left one at a time (the run screen asks; True: one was left)."""
        if self.has_class("-zoomed"):
            self.action_zoom()
        elif self.browse.pinned is not None:
            self.action_compare()
        elif self.browse.prompt is not None:
            self.action_track()
        else:
            return False
        return True

    def action_filter(self) -> None:
        self._open_input("#completions-query")

    def action_goto(self) -> None:
        self._open_input("#completions-step", str(self.shown_step() or ""))

    def action_first(self) -> None:
        steps = self.steps()
        if self.browse.prompt is not None and steps:
            self._seek(steps[0], 1)
        elif steps:
            self._go(0, steps)

    def action_sort(self) -> None:
        """The next score column to sort by (then the order the rows were logged in)."""
        names = sortable(self._columns())
        order: list[str | None] = [None, *names]
        at = order.index(self.browse.sort) if self.browse.sort in order else 0
        self._set(sort=order[(at + 1) % len(order)], descending=True)
        if not names:
            self.notify("nothing to sort by: this step has no scores", timeout=2)

    def action_reverse(self) -> None:
        self._set(descending=not self.browse.descending)

    def action_group(self) -> None:
        self._set(grouped=not self.browse.grouped)

    def action_compare(self) -> None:
        self._set(pinned=None if self.browse.pinned is not None else self.shown_step())

    def action_zoom(self) -> None:
        """One completion whole, the tables out of the way (and back)."""
        self.toggle_class("-zoomed")
        zoomed = self.has_class("-zoomed")
        if zoomed and self.browse.step is None:
            # Reading one completion pauses following: the next step must not swap it out.
            self._set(step=self.shown_step(), paused=True)
        if zoomed:
            self.query_one(DetailScroll).focus()
        else:
            self.query_one("#completions-table", StepTable).focus()
        self.show(self.data)

    def _columns(self):
        table = self.query_one("#completions-table", StepTable)
        return table.shown.columns if table.shown is not None else []

    def action_track(self) -> None:
        """Follow the highlighted row's prompt across steps (or stop following it)."""
        if self.browse.prompt is not None:
            self._set(prompt=None)
            return
        focused = self.screen.focused
        table = focused if isinstance(focused, StepTable) and focused.display else \
            self.query_one("#completions-table", StepTable)
        got = table.highlighted()
        if got is None:
            self.notify("no row to follow: pick a row first", timeout=2)
            return
        if table.id == "completions-table":
            steps = self.steps()
            step = table.step if table.step != (steps[-1] if steps else None) else None
            self._set(prompt=got[0]["prompt"], step=step)
        else:
            self._set(prompt=got[0]["prompt"])

    def show_step(self, step: int | None) -> None:
        """Show `step` (None: follow the newest)."""
        self._set(step=step, paused=False)

    def _go(self, index: int, steps: list[int]) -> None:
        """Show steps[index]; the newest means following new steps again."""
        self.show_step(None if index == len(steps) - 1 else steps[index])

    def action_scrub(self, delta: int) -> None:
        steps = self.steps()
        if not steps:
            return
        current = self.shown_step()
        assert current is not None
        i = bisect.bisect_left(steps, current)
        if self.browse.prompt is not None:
            j = i + delta
            if 0 <= j < len(steps):
                self._seek(steps[j], delta)
            return
        self._go(max(0, min(len(steps) - 1, i + delta)), steps)

    def action_follow(self) -> None:
        steps = self.steps()
        if self.browse.prompt is not None and steps:
            self._set(paused=False)
            self._seek(steps[-1], -1)
            return
        self.show_step(None)

    # -- following one prompt ------------------------------------------------------------------

    def _seek(self, start: int, direction: int) -> None:
        """Look for the next step (from `start`, in `direction`) where the followed prompt was
        sampled, a step at a time in a worker; the UI thread keeps answering keys."""
        steps = list(self.steps())
        self._set(seeking=direction)
        self._seek_worker(steps, start, direction, self.browse.prompt)

    @work(thread=True, exclusive=True, group="completions-seek", exit_on_error=False)
    def _seek_worker(self, steps: list[int], start: int, direction: int, prompt: str | None) -> None:
        worker = get_current_worker()
        lib = self.library
        i = bisect.bisect_left(steps, start)
        found = None
        try:
            while 0 <= i < len(steps) and lib is not None:
                if worker.is_cancelled:
                    return
                if any(r["prompt"] == prompt for r in lib.peek(steps[i])):
                    found = steps[i]
                    break
                i += direction
        finally:  # an unreadable step ends the search as "not found", never "looking…" forever
            if not worker.is_cancelled:
                self.post_message(self.PromptFound(found, direction, prompt))

    def on_completions_pane_prompt_found(self, message: PromptFound) -> None:
        self._set(seeking=0)
        if message.prompt != self.browse.prompt:  # stopped following (t) while it looked
            return
        if message.step is None:
            self.notify(f"that prompt was not sampled in any {'older' if message.direction < 0 else 'newer'} step",
                        timeout=3)
        else:
            steps = self.steps()
            self._go(bisect.bisect_left(steps, message.step), steps)


def _has(steps: list[int], step: int) -> bool:
    i = bisect.bisect_left(steps, step)
    return i < len(steps) and steps[i] == step
