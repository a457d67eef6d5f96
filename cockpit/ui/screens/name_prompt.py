"""Ask for a run's new name (`R` on home): a name that cannot be a run's folder name says why and
the prompt stays open; Escape cancels."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from cockpit.ui.text import literal


class NamePrompt(ModalScreen[str | None]):
    """Dismissed with the name typed, or None (Escape, or the name it already has)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="name_prompt.cancel")]

    def __init__(self, title: str, value: str, problem: Callable[[str], str | None]) -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.problem = problem
        """Why a name cannot be taken, or None (`run.manage.name_problem`)."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(literal(self.title_text), classes="dialog-question")
            yield Input(value=self.value, id="name-input")
            yield Static("", id="name-problem")
            yield Static("[dim]Enter renames · Escape cancels[/]")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        if name == self.value:
            self.dismiss(None)
            return
        why = self.problem(name)
        if why:
            self.query_one("#name-problem", Static).update(literal(why))
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
