"""Ask for one or more paths (replay, compare, add a run to the overlay)."""

from __future__ import annotations

import shlex

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PathPrompt(ModalScreen[list[str] | None]):
    """Paths separated by spaces (quote ones with spaces); Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, placeholder: str = "path/to/trainer_state.json or a run folder",
                 value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.title_text, classes="dialog-question", markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="path-input")
            yield Static("[dim]Enter opens · several paths overlay · Escape cancels[/]")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            paths = shlex.split(event.value)
        except ValueError:
            paths = event.value.split()
        self.dismiss(paths or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
