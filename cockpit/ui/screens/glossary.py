"""What a panel's metrics mean, and what healthy looks like (`i` on the plots): the glossary's
entries for the metrics of the focused panel, or of every panel shown."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.metrics.glossary import explain
from cockpit.ui.text import literal, markup


def explained(keys: list[str], family: str | None) -> Content:
    """Each key's meaning and what healthy looks like (a key the glossary does not know says so)."""
    lines: list[Content] = []
    for key in keys:
        e = explain(key, family)
        lines.append(markup("[b]$key[/b]", key=key))
        if e is None:
            lines.append(markup("  [dim]not in the glossary: a metric of this run's own[/dim]"))
        else:
            lines.append(markup("  $meaning", meaning=e.meaning))
            lines.append(markup("  [dim]healthy:[/dim] $healthy", healthy=e.healthy))
    return Content("\n").join(lines)


class GlossaryScreen(ModalScreen[None]):
    """Escape or i closes it."""

    BINDINGS = [Binding("escape,i,q", "close", "Close", id="glossary.close")]
    # As tall as its entries (a panel's one or two metrics are a few lines), scrolling past 70 %
    # of the screen: not a tall dialog of empty space.
    DEFAULT_CSS = """
    GlossaryScreen .dialog { height: auto; }
    GlossaryScreen #glossary-scroll { height: auto; max-height: 70vh; }
    """

    def __init__(self, title: str, keys: list[str], family: str | None) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys
        self.family = family

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="glossary"):
            yield Static(literal(self.title_text), classes="dialog-question")
            with VerticalScroll(id="glossary-scroll"):
                yield Static(explained(self.keys, self.family), id="glossary-text")

    def action_close(self) -> None:
        self.dismiss(None)
