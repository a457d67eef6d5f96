"""The checkpoints tab's answers: one column a picked model (two side by side), or a chat's
turns in one; what each answer waits for while it streams in, and the kept answers of an
earlier session shown again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from cockpit.launch import sampler as smp
from cockpit.ui.text import literal, markup


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


def kept_columns(rows: list[dict[str, Any]]) -> tuple[dict[str, Column], object]:
    """The newest kept session's answers (rows of samples/), one column a checkpoint (two at
    most), and that session's name."""
    session = rows[-1].get("session")
    latest = [r for r in rows if r.get("session") == session]
    # Side by side shows the compared answers; a chat's turns are shown as a chat, alone.
    compared = [r for r in latest if r.get("mode") != "chat"]
    chat = not compared
    columns: dict[str, Column] = {}
    for r in latest if chat else compared:
        label = str(r.get("checkpoint", "?"))
        label = f"chat with {label}" if chat else label
        slot = next((s for s, c in columns.items() if c.label == label), None)
        if slot is None:
            if len(columns) == 2:
                continue
            slot = "ab"[len(columns)]
            columns[slot] = Column(label, chat=chat)
        columns[slot].answers.append([str(r.get("prompt", "")), str(r.get("completion", ""))])
    return columns, session


class AnswerColumns(Horizontal):
    """Slots `a` and `b`, each a scrolling column; the pane says what they hold (`show`)."""

    def compose(self) -> ComposeResult:
        for slot in ("a", "b"):
            with VerticalScroll(classes="ckpt-column", id=f"ckpt-col-{slot}"):
                yield Static("", id=f"ckpt-answer-{slot}")

    def show(self, columns: dict[str, Column], *, busy: bool, loading: set[str]) -> None:
        """The columns as they stand: the last answer (a chat's last turn) waits while `busy`,
        for its model while its slot is `loading`."""
        for slot in ("a", "b"):
            col = columns.get(slot)
            self.query_one(f"#ckpt-col-{slot}").display = col is not None or slot == "a"
            static = self.query_one(f"#ckpt-answer-{slot}", Static)
            if col is None:
                static.update("")
                continue
            parts = [markup("[b]$label[/b]", label=col.label)]
            for i, (prompt, answer) in enumerate(col.answers):
                pending = busy and i == len(col.answers) - 1 if col.chat else busy
                waiting = "loading the model…" if slot in loading else "generating…"
                if col.chat:
                    parts.append(markup("[b $accent]you[/] $prompt", prompt=prompt))
                    parts.append(markup("[b $secondary]$who[/] ", who=col.label.removeprefix("chat with "))
                                 + answer_text(answer, pending=pending, waiting=waiting))
                else:
                    parts.append(markup("[dim]$prompt[/]", prompt=prompt))
                    parts.append(answer_text(answer, pending=pending, waiting=waiting))
                parts.append(Content(""))
            static.update(Content("\n").join(parts))
