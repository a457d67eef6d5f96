"""Ask for one or more paths (replay, compare, add a run to the overlay); the path being typed
is completed from the file system (→ takes the suggestion)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Input, Static


class PathSuggester(Suggester):
    """Completes the last space-separated word as a path: the first entry (folders first, then
    files, by name) of its folder that starts with what was typed; a folder gets its `/`.
    Hidden entries only when the typed name starts with a dot."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        word = value.rpartition(" ")[2]
        if not word:
            return None
        typed = os.path.expanduser(word)
        cut = typed.rfind("/") + 1
        folder, prefix = Path(typed[:cut] or "."), typed[cut:]
        try:
            entries = [(not e.is_dir(), e.name) for e in os.scandir(folder)
                       if e.name.startswith(prefix) and e.name != prefix
                       and (prefix.startswith(".") or not e.name.startswith("."))]
        except OSError:
            return None
        if not entries:
            return None
        is_file, name = min(entries)
        return value + name[len(prefix):] + ("" if is_file else "/")


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
            yield Input(value=self.value, placeholder=self.placeholder, id="path-input",
                        suggester=PathSuggester())
            yield Static("[dim]→ completes the path · Enter opens · several paths overlay · "
                         "Escape cancels[/]")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            paths = shlex.split(event.value)
        except ValueError:
            paths = event.value.split()
        self.dismiss(paths or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
