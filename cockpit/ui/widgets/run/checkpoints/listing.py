"""The checkpoints tab's layout and its listing: the table (`table.CheckpointTable`), read in a
thread worker and again every few seconds for a live run, the prompt box filled with the run's
own prompts, the kept answers of the newest session, and the rows picked for sampling. The
sampling itself is `pane.CheckpointsPane`'s."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Static, TextArea

from cockpit.errors import CockpitError
from cockpit.launch import sampler as smp
from cockpit.ui.text import literal, markup
from cockpit.ui.widgets.run.checkpoints.answers import AnswerColumns, Column, kept_columns
from cockpit.ui.widgets.run.checkpoints.settings import SampleSettings
from cockpit.ui.widgets.run.checkpoints.table import LOADING_ROW, CheckpointTable, pickable
from cockpit.ui.widgets.waiting import Waiting

HINT = "[dim]space picks one or two · r runs the prompts on them · c chats with the first[/]"
PROMPT_SEPARATOR = "---"
"""A line holding only this separates two prompts in the prompt box (prompts may hold newlines)."""


def split_prompts(text: str) -> list[str]:
    prompts: list[str] = []
    current: list[str] = []
    for line in text.split("\n"):
        if line.strip() == PROMPT_SEPARATOR:
            prompts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    prompts.append("\n".join(current))
    return [p for p in prompts if p.strip()]


class CheckpointListing(Vertical):
    """What the tab lists and what is picked; `pane.CheckpointsPane` binds the keys."""

    @dataclass
    class Listed(Message):
        """The listing was read (in a worker)."""

        found: Any
        """metrics.checkpoints.CheckpointSet, or None when the path has no checkpoints to list."""
        problem: str | None = None
        prompts: list[Any] | None = None
        kept: list[dict[str, Any]] | None = None
        earlier: list[Any] | None = None
        """A script's earlier Trainers' CheckpointSets (`launch.script.earlier_trainers`), oldest first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path: str | None = None
        self.found: Any = None
        self.earlier: list[Any] = []
        """The earlier Trainers' checkpoints of a script that built several; `found` is the last one's."""
        self.picked: list[str] = []
        """Row keys (`base`, `checkpoint-N`) in the order they were picked."""
        self.columns: dict[str, Column] = {}
        self.busy = False
        self._listed_once = False
        self._prompts_given = False
        """The prompt box has had prompts (the run's, or typed): a later listing leaves it alone."""
        self._loading: set[str] = set()
        """The slots whose model the sampler is loading (or, before its first word, will load)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="ckpt-top"):
            yield CheckpointTable(id="ckpt-table")
            yield TextArea("", id="ckpt-prompts", soft_wrap=True, show_line_numbers=False,
                           placeholder="the run's own sample prompts come here once it logs some; "
                                       "or write yours (a line of --- between two)")
        yield Waiting("", id="ckpt-status")
        yield AnswerColumns(id="ckpt-answers")
        yield SampleSettings(id="ckpt-settings")
        yield Input(placeholder="your turn — Enter sends it to the first picked checkpoint", id="ckpt-chat")

    def on_mount(self) -> None:
        tables = self.query(CheckpointTable)
        if not tables:
            return  # mounted as the app closes (a deferred tab): its children never came
        tables.first().show_loading()
        self._fit_box_titles()
        self.set_status(markup(HINT))
        source = getattr(self.screen, "checkpoints_source", None)
        if callable(source):
            path, live = source()
            self.show_path(path, live=live)

    def on_resize(self) -> None:
        self._fit_box_titles()  # laid out already: the box has its new width
        self.call_after_refresh(self._fit_box_titles)  # and if the table's width moved it again

    def _fit_box_titles(self) -> None:
        """The prompt box's title and subtitle, the longest that fits its border whole (at 60
        columns `prompts`, not `prompts (a line o…`)."""
        box = self.query_one("#ckpt-prompts", TextArea)
        room = box.size.width - 4 if box.size.width else 1_000
        box.border_title = _longest_fitting(
            (f"prompts (a line of {PROMPT_SEPARATOR} between two)", f"prompts ({PROMPT_SEPARATOR} between two)",
             "prompts"), room)
        box.border_subtitle = _longest_fitting(
            ("ctrl+r runs them · Esc leaves the box", "ctrl+r runs them · Esc leaves",
             "ctrl+r runs them", "ctrl+r"), room)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id == "ckpt-prompts" and event.text_area.text.strip():
            self._prompts_given = True

    # -- the listing -------------------------------------------------------------------------

    def show_path(self, path: str | None, *, live: bool) -> None:
        """The run (or output dir) whose checkpoints to list; a live one is listed again every few
        seconds while this tab is on screen."""
        if path is None or path == self.path:
            return
        self.path = path
        if not self._listed_once:
            self.query_one("#ckpt-status", Waiting).wait("reading the checkpoints")
        self.action_reload()
        if live:
            self.set_interval(5.0, self._reload_if_shown)

    def _reload_if_shown(self) -> None:
        if self.display and self.is_on_screen and not self.busy:
            self.action_reload()

    def action_reload(self) -> None:
        if self.path:
            # The run's own prompts (those `cockpit sample` uses) until the box has some: a live run
            # logs its first samples after its first listing.
            self._list(self.path, first=not self._listed_once, prompts=not self._prompts_given)

    @work(thread=True, exclusive=True, group="checkpoints-list", exit_on_error=False)
    def _list(self, path: str, first: bool, prompts: bool = True) -> None:
        from cockpit.launch.script import earlier_trainers
        from cockpit.metrics import samples as kept
        from cockpit.metrics.checkpoints import list_run_checkpoints

        target = Path(path)
        try:
            if target.is_file():
                target = target.parent
            found = list_run_checkpoints(target)
            earlier = earlier_trainers(found)  # a script's several Trainers: every one's are listed
            own = smp.run_prompts(found) if prompts else None
            rows = kept.read(found.run) if first and found.run is not None else None
        except (CockpitError, OSError) as exc:
            self.post_message(self.Listed(None, str(exc)))
            return
        self.post_message(self.Listed(found, None, own, rows, earlier))

    def on_checkpoint_listing_listed(self, message: Listed) -> None:
        if message.found is None:
            if not self._listed_once:
                self.query_one(DataTable).clear()  # the loading row
            self.set_status(literal(message.problem or "no checkpoints here"))
            return
        first = not self._listed_once
        self._listed_once = True
        self.found = message.found
        if first and not self.busy:
            self.set_status(markup(HINT))
        self.earlier = list(message.earlier or [])
        if first:
            self.query_one(SampleSettings).suggest_max_new_tokens(self.found)
        self._fill_table()
        prompt_box = self.query_one("#ckpt-prompts", TextArea)
        if message.prompts and not self._prompts_given and not prompt_box.text.strip():
            self._prompts_given = True
            prompt_box.text = f"\n{PROMPT_SEPARATOR}\n".join(
                p if isinstance(p, str) else str(p) for p in message.prompts)
        if first and message.kept:
            self._show_kept(message.kept)

    def _fill_table(self) -> None:
        self.query_one(CheckpointTable).fill(self.found, self.earlier, self.picked)

    # -- picking -----------------------------------------------------------------------------

    def action_pick(self) -> None:
        key = self.query_one(CheckpointTable).key_at_cursor()
        if key is None or not pickable(key):
            return
        if key in self.picked:
            self.picked.remove(key)
        else:
            self.picked.append(str(key))
            self.picked = self.picked[-2:]
        self._fill_table()

    def _choices(self, n: int) -> list[smp.Choice]:
        picks = self.picked[:n]
        if not picks:
            table = self.query_one(CheckpointTable)
            picks = [str(table.key_at_cursor())] if table.row_count else []
            if not picks or picks == [LOADING_ROW] or self.found is None:
                raise CockpitError("no checkpoints yet — wait for the first save")
            if not pickable(picks[0]):
                raise CockpitError("that row names a Trainer — pick one of its checkpoints below it")
        return [self._choose(key, slot) for key, slot in zip(picks, ("a", "b"), strict=False)]

    def _choose(self, key: str, slot: str) -> smp.Choice:
        """The sampler's model for a row: the last Trainer's by its name, an earlier one's by its
        `tN:` key, labelled with its Trainer (`launch.sampler.choose`, as `cockpit sample` does)."""
        return smp.choose(self.found, key, slot, earlier=self.earlier)

    # -- showing -----------------------------------------------------------------------------

    def set_status(self, content: Content) -> None:
        self.query_one("#ckpt-status", Static).update(content)

    def _render_columns(self) -> None:
        self.query_one(AnswerColumns).show(self.columns, busy=self.busy, loading=self._loading)

    def answers(self, slot: str) -> list[str]:
        """What the model in `slot` answered so far, in prompt order (for tests and the bench)."""
        col = self.columns.get(slot)
        return [a for _p, a in col.answers] if col else []

    def _show_kept(self, rows: list[dict[str, Any]]) -> None:
        """The newest kept session's answers, one column a checkpoint (two at most)."""
        self.columns, session = kept_columns(rows)
        self._render_columns()
        self.set_status(literal(f"kept answers: {len(rows)} in samples/ — the newest session ({session}) shown"))


def _longest_fitting(texts: tuple[str, ...], room: int) -> str:
    """The first of `texts` (longest first) that fits `room` cells, else the last."""
    return next((t for t in texts if len(t) <= room), texts[-1])
