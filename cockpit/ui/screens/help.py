"""The keys of the screen underneath and of the app, from their bindings (so remaps show), then
every tab's own keys under the tab's name (not only the focused tab's). The dialog is as wide
and as tall as what it lists, within the screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.ui.keymap import KEYMAP_FILE
from cockpit.ui.text import markup

Keys = list[tuple[str, str, str]]
"""(keys, description, binding ids) per action."""
CHROME_W = 8
"""Columns the dialog adds around its lines (border and padding)."""
CHROME_H = 9
"""Rows the dialog adds around its lines (border, padding, title, the note under them)."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, title: str, keys: Keys, tabs: list[tuple[str, Keys]] | None = None) -> None:
        """`keys`: the screen's and the app's; `tabs`: (tab title, its keys) per tab."""
        super().__init__()
        self.title_text = title
        self.keys = keys
        self.tabs = tabs or []

    def compose(self) -> ComposeResult:
        every = [*self.keys, *(k for _, keys in self.tabs for k in keys)]
        width = max((len(k) for k, _, _ in every), default=4) + 2
        said = max((len(d) for _, d, i in every if i), default=4) + 2

        def lines_of(keys: Keys) -> list[Content]:
            return [markup("[b $accent]$key[/] $what[dim]$ids[/]", key=f"{k:<{width}}",
                           what=f"{d:<{said}}" if i else d, ids=i) for k, d, i in keys]

        lines = lines_of(self.keys)
        for title, keys in self.tabs:
            lines += [Content(""), markup("[b]$title[/b]", title=title), *lines_of(keys)]
        note = (f"Every action is also in the command palette. Escape closes. A key is remapped by "
                f"its id (dim) in {KEYMAP_FILE}, in cockpit's config folder.")
        longest = max((line.cell_length for line in lines), default=20)
        screen_w, screen_h = self.app.size
        box_w = min(max(longest, 50) + CHROME_W, max(20, screen_w - 2))
        with Vertical(classes="dialog", id="help-dialog") as dialog:
            dialog.styles.width = box_w
            dialog.styles.max_width = "100%"
            dialog.styles.height = min(len(lines) + CHROME_H + len(note) // max(1, box_w - CHROME_W),
                                       max(8, screen_h - 2))
            dialog.styles.max_height = "100%"
            yield Static(markup("[b]$title[/b]", title=self.title_text) + Content(" — keys"),
                         classes="dialog-question")
            with VerticalScroll(id="help-keys"):
                yield Static(Content("\n").join(lines))
            yield Static(f"[dim]{note}[/]", id="help-note")

    def action_close(self) -> None:
        self.dismiss(None)
