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

from cockpit.errors import CockpitError
from cockpit.ui.text import fold_tail, literal, markup, num, printable
from cockpit.ui.widgets.waiting import Waiting

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


def settings_text(request: dict[str, Any]) -> str:
    """What an answer was generated with, in a few words: `greedy · 64 tokens max · seed 0`."""
    temperature = request.get("temperature") or 0.0
    how = f"temperature {temperature:g}" if temperature else "greedy"
    return f"{how} · {request.get('max_new_tokens')} tokens max · seed {request.get('seed')}"


def answer_text(answer: str, *, pending: bool) -> Content:
    """An answer as shown: `generating…` while it streams in empty, and a word where it is
    empty or only whitespace (which would otherwise look like nothing happened)."""
    if not answer:
        return markup("[dim]generating…[/]") if pending else markup("[dim](an empty answer)[/]")
    if not answer.strip() and not pending:
        return markup("[dim](only whitespace: $n characters)[/]", n=len(answer))
    return literal(answer)


class CheckpointsPane(Vertical):
    """Pick with space (two at most), `r` runs the prompts through them, `c` chats with the first
    (`g` is the completions tab's "go to step": one meaning per letter on the run screen)."""

    BINDINGS = [
        Binding("space", "pick", "Pick", tooltip="Pick this checkpoint (two side by side)", id="checkpoints.pick"),
        Binding("r", "sample", "Run prompts", tooltip="The picked checkpoints answer the prompts",
                id="checkpoints.sample"),
        Binding("c", "chat", "Chat", tooltip="Chat with the first picked checkpoint", id="checkpoints.chat"),
        Binding("f5,ctrl+r", "reload", "Reload", show=False, tooltip="List the checkpoints again",
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

    @dataclass
    class Sampled(Message):
        """One event from the sampler process (loading, token, answer, note, error, done)."""

        event: dict[str, Any]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path: str | None = None
        self.found: Any = None
        self.picked: list[str] = []
        """Row keys (`base`, `checkpoint-N`) in the order they were picked."""
        self.columns: dict[str, Column] = {}
        self.chat_turns: list[dict[str, str]] = []
        self.sampler: Any = None
        self.busy = False
        self._session: Path | None = None
        self._listed_once = False
        self._labels: dict[str, Any] = {}
        self._metric_labels: tuple[str, str] | None = None
        self._request: dict[str, Any] = {}
        self._chat_choice: Any = None
        self.last_prompt = ""
        """The text the model saw last (a chat: every turn so far, through the chat template)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="ckpt-top"):
            yield DataTable(id="ckpt-table", cursor_type="row", zebra_stripes=True)
            yield TextArea("", id="ckpt-prompts", soft_wrap=True, show_line_numbers=False)
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
        table = self.query_one(DataTable)
        self._set_columns(None, None)
        table.add_row("", Text("reading the checkpoints…", style="dim italic"), key=LOADING_ROW)
        self.query_one("#ckpt-prompts", TextArea).border_title = f"prompts (a line of {PROMPT_SEPARATOR} between two)"
        self.set_status(markup("[dim]space picks one or two · r runs the prompts on them · c chats with the first[/]"))
        source = getattr(self.screen, "checkpoints_source", None)
        if callable(source):
            path, live = source()
            self.show_path(path, live=live)

    def on_unmount(self) -> None:
        self.stop_sampler()

    # -- the listing -------------------------------------------------------------------------

    def show_path(self, path: str | None, *, live: bool) -> None:
        """The run (or output dir) whose checkpoints to list; a live one is listed again every few
        seconds while this tab is on screen."""
        if path is None or path == self.path:
            return
        self.path = path
        self.action_reload()
        if live:
            self.set_interval(5.0, self._reload_if_shown)

    def _reload_if_shown(self) -> None:
        if self.display and self.is_on_screen and not self.busy:
            self.action_reload()

    def action_reload(self) -> None:
        if self.path:
            self._list(self.path, first=not self._listed_once)

    @work(thread=True, exclusive=True, group="checkpoints-list")
    def _list(self, path: str, first: bool) -> None:
        from cockpit.launch.sampler import run_prompts
        from cockpit.metrics import samples as kept
        from cockpit.metrics.checkpoints import list_run_checkpoints

        target = Path(path)
        if target.is_file():
            target = target.parent
        try:
            found = list_run_checkpoints(target)
        except CockpitError as exc:
            self.post_message(self.Listed(None, str(exc)))
            return
        prompts = run_prompts(found) if first else None
        rows = kept.read(found.run) if first and found.run is not None else None
        self.post_message(self.Listed(found, None, prompts, rows))

    def on_checkpoints_pane_listed(self, message: Listed) -> None:
        if message.found is None:
            if not self._listed_once:
                self.query_one(DataTable).clear()  # the loading row
            self.set_status(literal(message.problem or "no checkpoints here"))
            return
        first = not self._listed_once
        self._listed_once = True
        self.found = message.found
        if first:
            from cockpit.launch.sampler import sample_settings

            box = self.query_one("#ckpt-max-new-tokens", Input)
            box.value = box.value or str(sample_settings(self.found).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        self._fill_table()
        if first and message.prompts:
            self.query_one("#ckpt-prompts", TextArea).text = f"\n{PROMPT_SEPARATOR}\n".join(
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
        if found.base_model:
            table.add_row(self._mark("base"), "base model", "", "", "", "",
                          Text(fold_tail(f"what training started from: {found.base_model}", 60)), key="base")
        from cockpit.formats import fmt_size

        for c in found.checkpoints:
            state = "complete" if c.complete else ("being written" if c.being_written else "incomplete")
            kind = {"lora": f"LoRA adapter on {c.base or 'the base model'}", "full": "full model"}.get(
                c.kind, "unknown (no config.json)")
            # Text, not str: a DataTable reads a str cell as markup, and paths are data
            table.add_row(self._mark(c.name), Text(printable(c.name)), num(c.key_value), num(c.eval_value),
                          fmt_size(c.size), state, Text(fold_tail(kind, 60)), key=c.name)
        if not table.row_count:  # an empty state that says where it looked, not a blank table
            where = fold_tail(str(found.output_dir), 60)
            table.add_row("", Text(f"no checkpoints {'yet ' if found.live else ''}in {where}", style="dim italic"),
                          key=LOADING_ROW)
        if table.row_count:
            table.move_cursor(row=min(max(cursor, 0), table.row_count - 1))

    def _mark(self, key: str) -> str:
        return {0: "A", 1: "B"}.get(self.picked.index(key), "") if key in self.picked else ""

    # -- picking and sampling ---------------------------------------------------------------------

    def action_pick(self) -> None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key == LOADING_ROW:
            return
        if key in self.picked:
            self.picked.remove(key)
        else:
            self.picked.append(str(key))
            self.picked = self.picked[-2:]
        self._fill_table()

    def _choices(self, n: int) -> list[Any]:
        from cockpit.launch.sampler import choose

        picks = self.picked[:n]
        if not picks:
            table = self.query_one(DataTable)
            picks = [str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)] \
                if table.row_count else []
            if not picks or picks == [LOADING_ROW] or self.found is None:
                raise CockpitError("no checkpoints yet — wait for the first save")
        return [choose(self.found, key, slot) for key, slot in zip(picks, ("a", "b"), strict=False)]

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
        self.remove_class("-chat")
        self.columns = {c.spec["slot"]: Column(c.label) for c in choices}
        self._labels = {c.spec["slot"]: c for c in choices}
        for col in self.columns.values():
            col.answers = [[p, ""] for p in prompts]
        self._render_columns()
        self._start({"id": "compare", "models": [c.spec for c in choices], "prompts": prompts, "chat": False,
                     **settings})

    def action_chat(self) -> None:
        if self.found is None:
            return
        try:
            self._chat_choice = self._choices(1)[0]
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return
        self.add_class("-chat")
        self.chat_turns = []
        self.columns = {"a": Column(f"chat with {self._chat_choice.label}", chat=True)}
        self._labels = {"a": self._chat_choice}
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
        if event.input.id != "ckpt-chat" or not event.value.strip() or self.busy:
            return
        event.stop()
        settings = self._generation_settings()
        if settings is None:
            return  # what is typed stays, to send once the settings are fixed
        text = event.value
        event.input.value = ""
        self.chat_turns.append({"role": "user", "content": text})
        self.columns["a"].answers.append([text, ""])
        self._render_columns()
        self._start({"id": "chat", "models": [self._chat_choice.spec], "prompts": [list(self.chat_turns)],
                     "chat": True, **settings})

    def _generation_settings(self) -> dict[str, Any] | None:
        """temperature, max_new_tokens and seed as their boxes say (empty: the default), or None
        after one notification that lists every box with a value that cannot be used."""
        from cockpit.launch.sampler import request_problems, sample_settings

        def read(box: str, kind: type, default: object) -> object:
            text = self.query_one(box, Input).value.strip()
            try:
                return kind(text) if text else default
            except ValueError:
                return text

        default_max = sample_settings(self.found).get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS) \
            if self.found is not None else DEFAULT_MAX_NEW_TOKENS
        temperature = read("#ckpt-temperature", float, 0.0)
        max_new_tokens = read("#ckpt-max-new-tokens", int, default_max)
        seed = read("#ckpt-seed", int, 0)
        # The sampler's own checks (the CLI's too), in the words of the boxes.
        problems = [p.removeprefix("--").replace("max-new-tokens", "max new tokens", 1)
                    for p in request_problems(max_new_tokens=max_new_tokens, temperature=temperature, prompts=[])]
        if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            problems.append(f"seed {str(seed)[:40]}: give a whole number from 0 to {MAX_SEED:,}")
        if problems:
            self.app.notify("\n".join(problems), title="sampling settings", severity="error", markup=False)
            return None
        return {"temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed}

    def _start(self, request: dict[str, Any]) -> None:
        from cockpit.launch import sampler as smp
        from cockpit.metrics import samples as kept

        settings = smp.sample_settings(self.found)
        device = str(settings.get("device") or "cpu")
        note = smp.live_note(self.found, device)
        if note:
            self.app.notify(note, title="sampling beside a live run", markup=False, timeout=8)
        try:
            cap = smp.parse_size(settings.get("max_memory"))
        except CockpitError as exc:
            self.app.notify(str(exc), severity="error", markup=False)
            return
        request.update(device=device, max_memory=cap, gentle=note is not None and device == "cpu")
        self._request = request
        if self._session is None and self.found.run is not None:
            self._session = kept.new_session(self.found.run)
        self.busy = True
        self.query_one("#ckpt-status", Waiting).wait("starting the sampler", "answers stream in below")
        self._run_sampler(request)

    @work(thread=True, exclusive=True, group="checkpoints-sample")
    def _run_sampler(self, request: dict[str, Any]) -> None:
        from cockpit.launch import sampler as smp

        try:
            if self.sampler is None or self.sampler.proc.poll() is not None:
                self.sampler = smp.Sampler(smp.sampler_python(self.found), smp.sampler_log(self.found))
            self.sampler.send(request)
            for event in self.sampler.events():
                self.post_message(self.Sampled(event))
        except OSError as exc:
            self.post_message(self.Sampled({"event": "error", "message": f"cannot run the sampler: {exc}"}))

    def stop_sampler(self) -> None:
        if self.sampler is not None:
            self.sampler.kill()
            self.sampler = None

    def on_checkpoints_pane_sampled(self, message: Sampled) -> None:
        from cockpit.metrics import samples as kept

        ev = message.event
        kind = ev.get("event")
        slot = str(ev.get("slot", "a"))
        col = self.columns.get(slot)
        if kind == "start":
            self.last_prompt = str(ev.get("prompt", ""))
        elif kind in ("loading", "loaded"):
            where = f" on {ev.get('device')}" if ev.get("device") else ""
            if kind == "loading":
                self.query_one("#ckpt-status", Waiting).wait(f"loading {ev.get('label')}{where}")
            else:
                self.query_one("#ckpt-status", Waiting).wait(f"generating with {ev.get('label')}{where}")
        elif kind == "note":
            self.app.notify(str(ev.get("text")), markup=False, timeout=6)
        elif kind == "token" and col is not None:
            i = self._row(int(ev["index"]))
            if i < len(col.answers):
                col.answers[i][1] += str(ev.get("text", ""))
                self._render_columns()
        elif kind == "answer" and col is not None:
            i = self._row(int(ev["index"]))
            if i < len(col.answers):
                col.answers[i][1] = str(ev.get("text", ""))
            self._render_columns()
            choice = self._labels.get(slot)
            chat = self._request.get("chat")
            if chat:
                self.chat_turns.append({"role": "assistant", "content": str(ev.get("text", ""))})
            if self._session is not None and choice is not None:
                try:
                    kept.append(self._session, {
                        "mode": "chat" if chat else "compare", "checkpoint": choice.label, "step": choice.step,
                        "turn": len(self.chat_turns) // 2 if chat else None,
                        "prompt": col.answers[i][0] if chat else ev.get("prompt", ""),
                        "completion": ev.get("text", ""), "seed": self._request.get("seed"),
                        "temperature": self._request.get("temperature"),
                        "max_new_tokens": self._request.get("max_new_tokens"),
                        "device": self._request.get("device")})
                except OSError as exc:
                    self.app.notify(f"cannot keep the answer in samples/: {exc}", severity="warning", markup=False)
        elif kind == "error":
            self.busy = False
            self._render_columns()
            self.set_status(literal(str(ev.get("message"))))
            self.app.notify(str(ev.get("message")), severity="error", markup=False, timeout=10)
        elif kind == "done":
            self.busy = False
            self._render_columns()
            self.set_status(markup("[dim]done ($how) · answers kept in samples/ · r again · c chats[/]",
                                   how=settings_text(self._request)))

    def _row(self, index: int) -> int:
        """Chat answers go to the newest turn; compared ones to their prompt's row."""
        if self._request.get("chat"):
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
                if col.chat:
                    parts.append(markup("[b $accent]you[/] $prompt", prompt=prompt))
                    parts.append(markup("[b $secondary]$who[/] ", who=col.label.removeprefix("chat with "))
                                 + answer_text(answer, pending=pending))
                else:
                    parts.append(markup("[dim]$prompt[/]", prompt=prompt))
                    parts.append(answer_text(answer, pending=pending))
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
