"""The Checkpoints tab: the run's checkpoints (and its base model), one or two picked, prompts to
edit (the run's own by default), and the answers streaming in side by side; a chat mode keeps
several turns with one checkpoint. The answers come from the sampler process
(`cockpit.runner.sample`), read line by line in a thread worker, never from a model in the TUI;
they are kept in the run folder's samples/, so a replay shows them later.

The listing, the picks and the layout are `listing.CheckpointListing`'s; this pane binds the keys
and talks to the sampler. Its parts: `table` (the rows), `answers` (the columns), `settings`
(temperature, max tokens, seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Input, TextArea
from textual.worker import Worker, WorkerState

from cockpit.errors import CockpitError, failure
from cockpit.launch import sampler as smp
from cockpit.ui.text import literal, markup
from cockpit.ui.widgets.run.checkpoints.answers import Column, settings_text
from cockpit.ui.widgets.run.checkpoints.listing import CheckpointListing, split_prompts
from cockpit.ui.widgets.run.checkpoints.settings import SampleSettings
from cockpit.ui.widgets.waiting import Waiting


class CheckpointsPane(CheckpointListing):
    """Pick with space (two at most), `r` runs the prompts through them, `c` chats with the first
    (`g` is the completions tab's "go to step": one meaning per letter on the run screen)."""

    BINDINGS = [
        Binding("space", "pick", "Pick", tooltip="Pick this checkpoint (two side by side)", id="checkpoints.pick"),
        # ctrl+r too: in the prompt box `r` is a letter, and ctrl+r still runs the prompts.
        Binding("r,ctrl+r", "sample", "Run prompts", tooltip="The picked checkpoints answer the prompts "
                "(ctrl+r from the prompt box)", id="checkpoints.sample"),
        Binding("c", "chat", "Chat", tooltip="Chat with the first picked checkpoint", id="checkpoints.chat"),
        Binding("f5", "reload", "Reload", show=False, tooltip="List the checkpoints again",
                id="checkpoints.reload"),
    ]

    DEFAULT_CSS = """
    CheckpointsPane { height: 1fr; }
    CheckpointsPane #ckpt-top { height: 12; max-height: 45%; }
    CheckpointsPane.-chat #ckpt-top { height: 7; }
    CheckpointsPane #ckpt-table { width: 3fr; height: 100%; }
    CheckpointsPane #ckpt-prompts { width: 2fr; height: 100%; }
    CheckpointsPane #ckpt-status { height: auto; color: $text-muted; }
    CheckpointsPane #ckpt-answers { height: 1fr; }
    CheckpointsPane .ckpt-column { width: 1fr; height: 100%; border-left: vkey $foreground 20%; padding: 0 1; }
    CheckpointsPane #ckpt-settings { height: 1; }
    CheckpointsPane #ckpt-settings Label { padding: 0 1; color: $text-muted; }
    CheckpointsPane #ckpt-settings Input { width: 7; }
    CheckpointsPane #ckpt-chat { display: none; }
    CheckpointsPane.-chat #ckpt-chat { display: block; }
    """

    @dataclass
    class Sampled(Message):
        """One event from the sampler process (loading, token, answer, note, error, done)."""

        event: smp.SamplerEvent

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chat_turns: list[dict[str, str]] = []
        self.sampler: smp.Sampler | None = None
        self._session: Path | None = None
        self._request: smp.SampleRequest | None = None
        self._chat_choice: smp.Choice | None = None
        self._chat_column: Column | None = None
        """The chat's turns as shown, kept while the chat is left (Escape, a side-by-side run)."""
        self.last_prompt = ""
        """The text the model saw last (a chat: every turn so far, through the chat template)."""

    def on_unmount(self) -> None:
        self.stop_sampler()

    # -- sampling ------------------------------------------------------------------------------

    def action_sample(self) -> None:
        if self.found is None or self.busy:
            return
        prompts = split_prompts(self.query_one("#ckpt-prompts", TextArea).text)
        try:
            if not prompts:
                raise CockpitError("no prompts — write some in the prompt box (a line of --- between two)")
            choices = self._choices(2)
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return
        settings = self.query_one(SampleSettings).read(self.found)
        if settings is None:
            return
        request = self._request_for("compare", choices, list(prompts), settings)
        if request is None:
            return
        self.remove_class("-chat")
        self.columns = {c.spec["slot"]: Column(c.label) for c in choices}
        for col in self.columns.values():
            col.answers = [[p, ""] for p in prompts]
        self._render_columns()
        self._start(request)

    def action_chat(self) -> None:
        if self.found is None:
            return
        try:
            choice = self._choices(1)[0]
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return
        self.add_class("-chat")
        # `c` again on the same checkpoint goes on with the chat left with Escape (its turns are
        # shown again and sent with the next one); another checkpoint starts a new chat.
        same = self._chat_choice is not None and self._chat_column is not None and \
            (choice.label, choice.spec) == (self._chat_choice.label, self._chat_choice.spec)
        self._chat_choice = choice
        if not same:
            self.chat_turns = []
            self._chat_column = Column(f"chat with {choice.label}", chat=True)
        assert self._chat_column is not None
        self.columns = {"a": self._chat_column}
        self._render_columns()
        self.set_status(markup("[dim]Enter sends your turn · temperature, max tokens and seed (shift+tab) apply to "
                               "each turn · Escape leaves the chat[/]"))
        self.query_one("#ckpt-chat", Input).focus()

    def leave_mode(self) -> bool:
        """Escape on this tab: chat mode is left for the listing (the run screen asks); the
        turns so far stay on screen and in samples/."""
        if not self.has_class("-chat"):
            return False
        self.remove_class("-chat")
        self.query_one(DataTable).focus()
        self.set_status(markup("[dim]chat left · c chats again · r runs the prompts[/]"))
        return True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "ckpt-chat" or not event.value.strip() or self.busy or self._chat_choice is None:
            return
        event.stop()
        settings = self.query_one(SampleSettings).read(self.found)
        if settings is None:
            return  # what is typed stays, to send once the settings are fixed
        text = event.value
        turns = [*self.chat_turns, {"role": "user", "content": text}]
        request = self._request_for("chat", [self._chat_choice], [turns], settings)
        if request is None:
            return
        event.input.value = ""
        self.chat_turns.append({"role": "user", "content": text})
        self.columns["a"].answers.append([text, ""])
        self._render_columns()
        self._start(request)


    def _request_for(self, kind: str, choices: list[smp.Choice], prompts: list[Any],
                     settings: dict[str, Any]) -> smp.SampleRequest | None:
        """The request, with the boxes' `settings` and run.yaml's `cockpit.sample` device and memory
        cap; None (and one line said) when they are wrong."""
        try:
            return smp.sample_request(self.found, choices, prompts, id=kind, chat=kind == "chat", **settings)
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return None

    def _start(self, request: smp.SampleRequest) -> None:
        from cockpit.metrics import samples as kept

        if request.note:
            self.app.notify(request.note, title="sampling beside a live run", markup=False, timeout=8)
        self._request = request
        if self._session is None and self.found.run is not None:
            self._session = kept.new_session(self.found.run)
        self.busy = True
        self._loading = {str(c.spec.get("slot", "a")) for c in request.choices}  # until a model starts
        self._render_columns()
        self.query_one("#ckpt-status", Waiting).wait("starting the sampler", "answers stream in below")
        self._run_sampler(request)

    @work(thread=True, exclusive=True, group="checkpoints-sample", exit_on_error=False)
    def _run_sampler(self, request: smp.SampleRequest) -> None:
        try:
            if self.sampler is None or self.sampler.proc.poll() is not None:
                self.sampler = smp.Sampler.for_run(self.found)
            for event in self.sampler.ask(request):
                self.post_message(self.Sampled(event))
        except (OSError, CockpitError) as exc:
            self.post_message(self.Sampled(smp.Failed(f"cannot run the sampler: {exc}")))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this tab that failed in a way it did not foresee: one line here, and the app
        goes on (its workers never exit the app)."""
        if event.state != WorkerState.ERROR or event.worker.group not in ("checkpoints-list", "checkpoints-sample"):
            return
        event.stop()
        self.busy = False
        what = "reading the checkpoints failed" if event.worker.group == "checkpoints-list" else "sampling failed"
        self._render_columns()
        self.set_status(literal(failure(event.worker.error or RuntimeError("?"), what)))

    def stop_sampler(self) -> None:
        if self.sampler is not None:
            self.sampler.kill()
            self.sampler = None

    def on_checkpoints_pane_sampled(self, message: Sampled) -> None:
        ev = message.event
        if isinstance(ev, smp.Started):
            self.last_prompt = ev.prompt
            if ev.slot in self._loading:
                self._loading.discard(ev.slot)
                self._render_columns()
        elif isinstance(ev, (smp.Loading, smp.Loaded)):
            where = f" on {ev.device}" if isinstance(ev, smp.Loaded) and ev.device else ""
            doing = "loading" if isinstance(ev, smp.Loading) else "generating with"
            self.query_one("#ckpt-status", Waiting).wait(f"{doing} {ev.label}{where}")
            if isinstance(ev, smp.Loading):
                self._loading.add(ev.slot)
            else:
                self._loading.discard(ev.slot)
            self._render_columns()
        elif isinstance(ev, smp.Note):
            self.app.notify(ev.text, markup=False, timeout=6)
        elif isinstance(ev, smp.Token):
            col = self.columns.get(ev.slot)
            i = self._row(ev.index)
            if col is not None and 0 <= i < len(col.answers):
                col.answers[i][1] += ev.text
                self._render_columns()
        elif isinstance(ev, smp.Answer):
            self._answered(ev)
        elif isinstance(ev, smp.Failed):
            self.busy = False
            self._render_columns()
            self.set_status(literal(ev.message))
            self.app.notify(ev.message, severity="error", markup=False, timeout=10)
        elif isinstance(ev, smp.Done):
            self.busy = False
            self._render_columns()
            self.set_status(markup("[dim]done ($how) · answers kept in samples/ · r again · c chats[/]",
                                   how=settings_text(self._request)))

    def _answered(self, ev: smp.Answer) -> None:
        """An answer whole: shown in its column, a chat's next turn, and kept in samples/."""
        from cockpit.metrics import samples as kept

        col = self.columns.get(ev.slot)
        if col is None:
            return
        i = self._row(ev.index)
        if 0 <= i < len(col.answers):
            col.answers[i][1] = ev.text
        self._render_columns()
        request = self._request
        chat = request is not None and request.chat
        if chat:
            self.chat_turns.append({"role": "assistant", "content": ev.text})
        if self._session is not None and request is not None and request.choice(ev.slot) is not None:
            row = request.kept_row(ev, mode="chat" if chat else "compare",
                                   prompt=col.answers[i][0] if chat and 0 <= i < len(col.answers) else None,
                                   turn=len(self.chat_turns) // 2 if chat else None)
            try:
                kept.append(self._session, row)
            except OSError as exc:
                self.app.notify(f"cannot keep the answer in samples/: {exc}", severity="warning", markup=False)

    def _row(self, index: int) -> int:
        """Chat answers go to the newest turn; compared ones to their prompt's row."""
        if self._request is not None and self._request.chat:
            return len(self.columns["a"].answers) - 1
        return index

