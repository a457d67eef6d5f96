"""A yes/no question before anything that stops or starts a process."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from cockpit.ui.text import literal


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]
    AUTO_FOCUS = "#no"
    """The safe answer has the focus (Textual focuses it once the screen is mounted: a question
    answered before its buttons mount finds no button to focus, and raises nothing)."""

    def __init__(self, question: str, *, yes: str = "Yes", danger: bool = False,
                 detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        """Shown under the question as it is (e.g. the command that will run)."""
        self.yes_label = yes
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(literal(self.question), classes="dialog-question")
            if self.detail:
                yield Static(literal(self.detail), classes="dialog-detail", id="confirm-detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes_label} (y)", id="yes",
                             variant="error" if self.danger else "primary")
                yield Button("No (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)
