"""The keys of the screen underneath and of the app, from their bindings (so remaps show)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.ui.keymap import KEYMAP_FILE
from cockpit.ui.text import markup


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, title: str, keys: list[tuple[str, str, str]]) -> None:
        """`keys`: (keys, description, binding ids) per action."""
        super().__init__()
        self.title_text = title
        self.keys = keys

    def compose(self) -> ComposeResult:
        width = max((len(k) for k, _, _ in self.keys), default=4) + 2
        said = max((len(d) for _, d, i in self.keys if i), default=4) + 2
        lines = [markup("[b $accent]$key[/] $what[dim]$ids[/]", key=f"{k:<{width}}",
                        what=f"{d:<{said}}" if i else d, ids=i) for k, d, i in self.keys]
        with Vertical(classes="dialog dialog-tall", id="help-dialog"):
            yield Static(markup("[b]$title[/b] — keys", title=self.title_text),
                         classes="dialog-question")
            with VerticalScroll():
                yield Static(Content("\n").join(lines))
            yield Static(f"[dim]Every action is also in the command palette. Escape closes. A key is "
                         f"remapped by its id (dim) in {KEYMAP_FILE}, in cockpit's config folder.[/]")

    def action_close(self) -> None:
        self.dismiss(None)
