"""Search every logged metric key and pick one for a panel; the highlighted key's meaning (the
glossary) shows under the list."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from cockpit.metrics.glossary import explain
from cockpit.ui.text import markup, printable


class MetricPicker(ModalScreen[str | None]):
    """Type to filter (every word must match); Enter picks; Escape cancels."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel"),
        Binding("down", "move(1)", "Down", show=False, id="picker.down"),
        Binding("up", "move(-1)", "Up", show=False, id="picker.up"),
    ]

    def __init__(self, keys: list[str], *, title: str = "Add a panel", family: str | None = None) -> None:
        super().__init__()
        self.keys = keys
        self.title_text = title
        self.family = family
        """The run's metric family: the glossary's wording for it."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog dialog-tall"):
            yield Static(f"{self.title_text} — {len(self.keys)} logged keys", classes="dialog-question",
                         markup=False)
            yield Input(placeholder="filter, e.g. reward mean", id="picker-filter")
            yield OptionList(*[Option(Text(printable(k)), id=k) for k in self.keys], id="picker-options")
            yield Static("", id="picker-meaning")

    def on_mount(self) -> None:
        self.query_one("#picker-filter", Input).focus()
        options = self.query_one(OptionList)
        if options.option_count:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        words = event.value.lower().split()
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(Text(printable(k)), id=k) for k in self.keys
                             if all(w in k.lower() for w in words)])
        if options.option_count:
            options.highlighted = 0

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            self.dismiss(options.get_option_at_index(options.highlighted).id)
        elif event.value.strip() in self.keys:
            self.dismiss(event.value.strip())

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        key = event.option.id or ""
        e = explain(key, self.family)
        self.query_one("#picker-meaning", Static).update(
            markup("[b]$key[/b]: $meaning\n[dim]healthy:[/dim] $healthy", key=key, meaning=e.meaning,
                   healthy=e.healthy) if e else markup("[dim]$key: not in the glossary[/dim]", key=key))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, delta: int) -> None:
        options = self.query_one(OptionList)
        if not options.option_count:
            return
        current = options.highlighted if options.highlighted is not None else -delta
        options.highlighted = max(0, min(options.option_count - 1, current + delta))

    def action_cancel(self) -> None:
        self.dismiss(None)
