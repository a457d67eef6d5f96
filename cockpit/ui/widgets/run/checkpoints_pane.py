"""The Checkpoints tab: the run's checkpoints (and its base model), one or two picked, prompts to
edit (the run's own by default), and the answers streaming in side by side; a chat mode keeps
several turns with one checkpoint. The answers come from the sampler process
(`cockpit.runner.sample`), read line by line in a thread worker, never from a model in the TUI;
they are kept in the run folder's samples/, so a replay shows them later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static, TextArea
from textual.worker import Worker, WorkerState

from cockpit.errors import CockpitError, failure
from cockpit.launch import sampler as smp
from cockpit.ui.text import fold_tail, literal, markup, num, printable
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


DEFAULT_MAX_NEW_TOKENS = 64
"""An answer's length when run.yaml's `cockpit.sample` does not say."""
MAX_SEED = 2**32 - 1

LOADING_ROW = "loading"
"""The table's one row, not a checkpoint: until the first listing arrives, or when it found none."""
TRAINER_ROW = "trainer:"
"""A script with several Trainers: the row that heads each one's checkpoints (`trainer:N`), not a
checkpoint. An earlier Trainer's checkpoint rows are keyed as `--checkpoint` takes them
(`launch.sampler.trainer_key`: `t1:checkpoint-8`, N from 1)."""


def pickable(key: str) -> bool:
    return key != LOADING_ROW and not key.startswith(TRAINER_ROW)
METRIC_LABELS = {"reward": "mean reward", "objective/rlhf_reward": "rlhf reward", "rewards/margins": "margin",
                 "train_loss": "loss"}


def metric_label(key: str) -> str:
    """A logged metric's name as a column says it: `reward` -> `mean reward`, `eval_wer` -> `eval wer`."""
    return METRIC_LABELS.get(key, key.replace("_", " "))


@dataclass
class Column:
    """What one picked model answered: (prompt, answer so far) in order."""

    label: str
    answers: list[list[str]] = field(default_factory=list)
    chat: bool = False
    """Turns of a chat (speaker labels), not prompts answered side by side."""


def settings_text(request: smp.SampleRequest | None) -> str:
    """What an answer was generated with, in a few words: `greedy · 64 tokens max · seed 0`."""
    if request is None:
        return "no request"
    how = f"temperature {request.temperature:g}" if request.temperature else "greedy"
    return f"{how} · {request.max_new_tokens} tokens max · seed {request.seed}"


def answer_text(answer: str, *, pending: bool, waiting: str = "generating…") -> Content:
    """An answer as shown: what it waits for (`generating…`, `loading the model…`) while it is
    empty and to come, and a word where it is empty or only whitespace (which would otherwise
    look like nothing happened)."""
    if not answer:
        return markup("[dim]$waiting[/]", waiting=waiting) if pending else markup("[dim](an empty answer)[/]")
    if not answer.strip() and not pending:
        return markup("[dim](only whitespace: $n characters)[/]", n=len(answer))
    return literal(answer)


class CheckpointsPane(Vertical):
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
    class Listed(Message):
        """The listing was read (in a worker)."""

        found: Any
        """metrics.checkpoints.CheckpointSet, or None when the path has no checkpoints to list."""
        problem: str | None = None
        prompts: list[Any] | None = None
        kept: list[dict[str, Any]] | None = None
        earlier: list[Any] | None = None
        """A script's earlier Trainers' CheckpointSets (`launch.script.earlier_trainers`), oldest first."""

    @dataclass
    class Sampled(Message):
        """One event from the sampler process (loading, token, answer, note, error, done)."""

        event: smp.SamplerEvent

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path: str | None = None
        self.found: Any = None
        self.earlier: list[Any] = []
        """The earlier Trainers' checkpoints of a script that built several; `found` is the last one's."""
        self.picked: list[str] = []
        """Row keys (`base`, `checkpoint-N`) in the order they were picked."""
        self.columns: dict[str, Column] = {}
        self.chat_turns: list[dict[str, str]] = []
        self.sampler: smp.Sampler | None = None
        self.busy = False
        self._session: Path | None = None
        self._listed_once = False
        self._metric_labels: tuple[str, str] | None = None
        self._request: smp.SampleRequest | None = None
        self._chat_choice: smp.Choice | None = None
        self._chat_column: Column | None = None
        """The chat's turns as shown, kept while the chat is left (Escape, a side-by-side run)."""
        self._prompts_given = False
        """The prompt box has had prompts (the run's, or typed): a later listing leaves it alone."""
        self._loading: set[str] = set()
        """The slots whose model the sampler is loading (or, before its first word, will load)."""
        self.last_prompt = ""
        """The text the model saw last (a chat: every turn so far, through the chat template)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="ckpt-top"):
            yield DataTable(id="ckpt-table", cursor_type="row", zebra_stripes=True)
            yield TextArea("", id="ckpt-prompts", soft_wrap=True, show_line_numbers=False,
                           placeholder="the run's own sample prompts come here once it logs some; "
                                       "or write yours (a line of --- between two)")
        yield Waiting("", id="ckpt-status")
        with Horizontal(id="ckpt-answers"):
            for slot in ("a", "b"):
                with VerticalScroll(classes="ckpt-column", id=f"ckpt-col-{slot}"):
                    yield Static("", id=f"ckpt-answer-{slot}")
        with Horizontal(id="ckpt-settings"):  # what each answer is generated with (a chat's turn too)
            yield Label("temperature")
            yield Input("0", id="ckpt-temperature", type="number", compact=True,
                        tooltip="0: greedy, the same answer every time; above 0: sampled (the seed decides)")
            yield Label("max tokens")
            yield Input("", id="ckpt-max-new-tokens", type="integer", compact=True,
                        tooltip="The longest answer, in tokens (run.yaml's cockpit.sample.max_new_tokens)")
            yield Label("seed")
            yield Input("0", id="ckpt-seed", type="integer", compact=True,
                        tooltip="Set before each answer: the same seed, the same sampled answer")
        yield Input(placeholder="your turn — Enter sends it to the first picked checkpoint", id="ckpt-chat")

    def on_mount(self) -> None:
        tables = self.query(DataTable)
        if not tables:
            return  # mounted as the app closes (a deferred tab): its children never came
        table = tables.first()
        self._set_columns(None, None)
        table.add_row("", Text("reading the checkpoints…", style="dim italic"), key=LOADING_ROW)
        box = self.query_one("#ckpt-prompts", TextArea)
        box.border_title = f"prompts (a line of {PROMPT_SEPARATOR} between two)"
        box.border_subtitle = "ctrl+r runs them · Esc leaves the box"
        self.set_status(markup(HINT))
        source = getattr(self.screen, "checkpoints_source", None)
        if callable(source):
            path, live = source()
            self.show_path(path, live=live)

    def on_unmount(self) -> None:
        self.stop_sampler()

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

    def on_checkpoints_pane_listed(self, message: Listed) -> None:
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
            box = self.query_one("#ckpt-max-new-tokens", Input)
            box.value = box.value or str(smp.sample_settings(self.found).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        self._fill_table()
        prompt_box = self.query_one("#ckpt-prompts", TextArea)
        if message.prompts and not self._prompts_given and not prompt_box.text.strip():
            self._prompts_given = True
            prompt_box.text = f"\n{PROMPT_SEPARATOR}\n".join(
                p if isinstance(p, str) else str(p) for p in message.prompts)
        if first and message.kept:
            self._show_kept(message.kept)

    def _set_columns(self, key_metric: str | None, eval_metric: str | None) -> None:
        """The table's columns: the trainer's key metric at each step (mean reward, the DPO
        margin, else loss) and its eval metric, named for what they are."""
        labels = (metric_label(key_metric or "loss"), metric_label(eval_metric or "eval_loss"))
        if labels == self._metric_labels:
            return
        self._metric_labels = labels
        table = self.query_one(DataTable)
        table.clear(columns=True)
        table.add_columns(" ", "checkpoint", *labels, "size", "state", "what it is")

    def _fill_table(self) -> None:
        found = self.found
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        self._set_columns(found.key_metric, found.eval_metric)
        table.clear()
        trainers = len(self.earlier) + 1
        for i, one in enumerate(self.earlier):
            self._trainer_row(i, trainers, one)
            self._checkpoint_rows(one, i + 1)
        if self.earlier:
            self._trainer_row(trainers - 1, trainers, found)
        if found.base_model:
            table.add_row(self._mark("base"), "base model", "", "", "", "",
                          Text(fold_tail(f"what training started from: {found.base_model}", 60)), key="base")
        self._checkpoint_rows(found, None)
        if not table.row_count:  # an empty state that says where it looked, not a blank table
            where = fold_tail(str(found.output_dir), 60)
            table.add_row("", Text(f"no checkpoints {'yet ' if found.live else ''}in {where}", style="dim italic"),
                          key=LOADING_ROW)
        if table.row_count:
            table.move_cursor(row=min(max(cursor, 0), table.row_count - 1))

    def _trainer_row(self, i: int, trainers: int, one: Any) -> None:
        self.query_one(DataTable).add_row(
            "", Text(f"Trainer {i + 1} of {trainers}", style="bold"), "", "", "", "",
            Text(fold_tail(f"its output folder: {one.output_dir}", 60), style="dim"), key=f"{TRAINER_ROW}{i}")

    def _checkpoint_rows(self, found: Any, trainer: int | None) -> None:
        """One Trainer's rows: the last one's keyed by the checkpoint's name, an earlier one's by its
        `tN:` key."""
        from cockpit.formats import fmt_size

        table = self.query_one(DataTable)
        for c in found.checkpoints:
            state = "complete" if c.complete else ("being written" if c.being_written else "incomplete")
            # The kind first, whole; a long base path gives way from its start (its end names it).
            kind = {"lora": f"LoRA on {fold_tail(c.base, 28) if c.base else 'the base model'}",
                    "full": "full model"}.get(c.kind, "unknown (no config.json)")
            key = c.name if trainer is None else smp.trainer_key(trainer, c.name)
            # Text, not str: a DataTable reads a str cell as markup, and paths are data
            table.add_row(self._mark(key), Text(printable(c.name)), num(c.key_value), num(c.eval_value),
                          fmt_size(c.size), state, Text(fold_tail(kind, 60)), key=key)

    def _mark(self, key: str) -> str:
        return {0: "A", 1: "B"}.get(self.picked.index(key), "") if key in self.picked else ""

    # -- picking and sampling ---------------------------------------------------------------------

    def action_pick(self) -> None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
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
            table = self.query_one(DataTable)
            picks = [str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)] \
                if table.row_count else []
            if not picks or picks == [LOADING_ROW] or self.found is None:
                raise CockpitError("no checkpoints yet — wait for the first save")
            if not pickable(picks[0]):
                raise CockpitError("that row names a Trainer — pick one of its checkpoints below it")
        return [self._choose(key, slot) for key, slot in zip(picks, ("a", "b"), strict=False)]

    def _choose(self, key: str, slot: str) -> smp.Choice:
        """The sampler's model for a row: the last Trainer's by its name, an earlier one's by its
        `tN:` key, labelled with its Trainer (`launch.sampler.choose`, as `cockpit sample` does)."""
        return smp.choose(self.found, key, slot, earlier=self.earlier)

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
        settings = self._generation_settings()
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
        settings = self._generation_settings()
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

    def _generation_settings(self) -> dict[str, Any] | None:
        """temperature, max_new_tokens and seed as their boxes say (empty: the default), or None
        after one notification that lists every box with a value that cannot be used."""

        def read(box: str, kind: type, default: object) -> object:
            text = self.query_one(box, Input).value.strip()
            try:
                return kind(text) if text else default
            except ValueError:
                return text

        default_max = smp.sample_settings(self.found).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS) \
            if self.found is not None else DEFAULT_MAX_NEW_TOKENS
        temperature = read("#ckpt-temperature", float, 0.0)
        max_new_tokens = read("#ckpt-max-new-tokens", int, default_max)
        seed = read("#ckpt-seed", int, 0)
        # The sampler's own checks (the CLI's too), in the words of the boxes.
        problems = [p.removeprefix("--").replace("max-new-tokens", "max new tokens", 1)
                    for p in smp.request_problems(max_new_tokens=max_new_tokens, temperature=temperature, prompts=[])]
        if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            problems.append(f"seed {str(seed)[:40]}: give a whole number from 0 to {MAX_SEED:,}")
        if problems:
            self.app.notify("\n".join(problems), title="sampling settings", severity="error", markup=False)
            return None
        return {"temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed}

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

    # -- showing -----------------------------------------------------------------------------------

    def set_status(self, content: Content) -> None:
        self.query_one("#ckpt-status", Static).update(content)

    def _render_columns(self) -> None:
        for slot in ("a", "b"):
            col = self.columns.get(slot)
            self.query_one(f"#ckpt-col-{slot}").display = col is not None or slot == "a"
            static = self.query_one(f"#ckpt-answer-{slot}", Static)
            if col is None:
                static.update("")
                continue
            parts = [markup("[b]$label[/b]", label=col.label)]
            for i, (prompt, answer) in enumerate(col.answers):
                pending = self.busy and i == len(col.answers) - 1 if col.chat else self.busy
                waiting = "loading the model…" if slot in self._loading else "generating…"
                if col.chat:
                    parts.append(markup("[b $accent]you[/] $prompt", prompt=prompt))
                    parts.append(markup("[b $secondary]$who[/] ", who=col.label.removeprefix("chat with "))
                                 + answer_text(answer, pending=pending, waiting=waiting))
                else:
                    parts.append(markup("[dim]$prompt[/]", prompt=prompt))
                    parts.append(answer_text(answer, pending=pending, waiting=waiting))
                parts.append(Content(""))
            static.update(Content("\n").join(parts))

    def answers(self, slot: str) -> list[str]:
        """What the model in `slot` answered so far, in prompt order (for tests and the bench)."""
        col = self.columns.get(slot)
        return [a for _p, a in col.answers] if col else []

    def _show_kept(self, rows: list[dict[str, Any]]) -> None:
        """The newest kept session's answers, one column a checkpoint (two at most)."""
        session = rows[-1].get("session")
        latest = [r for r in rows if r.get("session") == session]
        # Side by side shows the compared answers; a chat's turns are shown as a chat, alone.
        compared = [r for r in latest if r.get("mode") != "chat"]
        chat = not compared
        self.columns = {}
        for r in latest if chat else compared:
            label = str(r.get("checkpoint", "?"))
            label = f"chat with {label}" if chat else label
            slot = next((s for s, c in self.columns.items() if c.label == label), None)
            if slot is None:
                if len(self.columns) == 2:
                    continue
                slot = "ab"[len(self.columns)]
                self.columns[slot] = Column(label, chat=chat)
            self.columns[slot].answers.append([str(r.get("prompt", "")), str(r.get("completion", ""))])
        self._render_columns()
        self.set_status(literal(f"kept answers: {len(rows)} in samples/ — the newest session ({session}) shown"))
