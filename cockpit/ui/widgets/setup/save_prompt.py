"""Ask the name a preset is saved under (the user's preset folder); Escape cancels."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Regex
from textual.widgets import Input, Static

from cockpit.ui.text import markup

NAME_RE = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def preset_file_name(name: str) -> str | None:
    """'my-sft' or 'my-sft.yaml' -> 'my-sft.yaml'; None when it is not a plain file name."""
    name = name.strip()
    if name.endswith((".yaml", ".yml")):
        name = name.rsplit(".", 1)[0]
    if not re.fullmatch(NAME_RE, name):
        return None
    return f"{name}.yaml"


class SavePresetPrompt(ModalScreen[str | None]):
    """Dismisses with a file name like 'my-sft.yaml', or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="setup.save_prompt.cancel")]

    def __init__(self, folder: str, name: str = "") -> None:
        super().__init__()
        self.folder = folder
        self.name_value = name

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Save as preset", classes="dialog-question")
            yield Input(value=self.name_value, placeholder="a name, e.g. my-sft",
                        validators=[Regex(NAME_RE + r"(\.ya?ml)?",
                                          failure_description="letters, digits, . _ - only")],
                        id="preset-name")
            yield Static(markup("[dim]into $folder · Enter saves · Escape cancels[/]",
                                folder=self.folder),
                         id="preset-name-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        file_name = preset_file_name(event.value)
        if file_name is None:
            self.query_one("#preset-name-hint", Static).update(
                "[b]a plain name[/b]: letters, digits, '.', '_' or '-' (no folders)")
            return
        self.dismiss(file_name)

    def action_cancel(self) -> None:
        self.dismiss(None)
