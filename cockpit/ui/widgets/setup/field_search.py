"""Every field of the trainer's config (and the model / script arguments), searchable by name
and help; Enter puts the chosen one into the form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from cockpit.trainers.registry import ConfigField
from cockpit.ui.widgets.setup.values import first_sentence, format_value

MAX_HELP = 150


def matches(field: ConfigField, words: Sequence[str]) -> bool:
    """Every word appears in the field's name or its help (case-insensitive)."""
    haystack = f"{field.name} {field.help}".lower()
    return all(w in haystack for w in words)


def rank(field: ConfigField, words: Sequence[str]) -> tuple[int, str]:
    """Name hits first, then help-only hits."""
    name = field.name.lower()
    return (0 if all(w in name for w in words) else 1, field.name)


class FieldSearch(Vertical):
    DEFAULT_CSS = """
    FieldSearch {
        height: auto;
    }
    FieldSearch #field-search-title {
        margin-top: 1;
        color: $text-muted;
    }
    FieldSearch #field-search-list {
        height: 12;
        border: none;
        background: $surface;
        &:focus {
            border: none;
        }
    }
    """

    BINDINGS = [
        Binding("down", "move(1)", "Next field", show=False, id="setup.search.down"),
        Binding("up", "move(-1)", "Previous field", show=False, id="setup.search.up"),
    ]

    @dataclass
    class Picked(Message):
        """Enter on a field of the list."""

        field: ConfigField
        """The field to show (and add to the form when it is not there)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fields: list[ConfigField] = []
        self.shown: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static("", id="field-search-title")
        yield Input(placeholder="/ search every field by name or help, e.g. warmup",
                    id="field-search-input", compact=True)
        yield OptionList(id="field-search-list", compact=True)

    def set_fields(self, fields: Sequence[ConfigField], shown: set[str]) -> None:
        """The fields to search; `shown` ones are already in the form (marked, still listed)."""
        self.fields = list(fields)
        self.shown = set(shown)
        self.query_one("#field-search-title", Static).update(
            f"All {len(self.fields)} fields — ctrl+f searches, Enter puts one in the form")
        self.refilter()

    def mark_shown(self, name: str) -> None:
        self.shown.add(name)
        self.refilter()

    @property
    def query_text(self) -> str:
        return self.query_one("#field-search-input", Input).value

    def refilter(self) -> None:
        words = self.query_text.lower().split()
        found = sorted((f for f in self.fields if matches(f, words)), key=lambda f: rank(f, words))
        options = self.query_one("#field-search-list", OptionList)
        old = options.highlighted_option.id if options.highlighted_option else None
        options.clear_options()
        options.add_options([self._option(f) for f in found])
        if options.option_count:
            ids = [f.name for f in found]
            options.highlighted = ids.index(old) if old in ids else 0

    def _option(self, field: ConfigField) -> Option:
        text = Text()
        text.append(field.name, style="bold")
        text.append(f"  {field.type}", style="dim")
        if field.default not in (None, "", [], {}):
            text.append(f" = {format_value(field, field.default)}", style="dim")
        if field.name in self.shown:
            text.append("  (in the form)", style="italic dim")
        if field.help:
            text.append("\n  " + first_sentence(field.help, MAX_HELP), style="dim")
        return Option(text, id=field.name)

    def focus_input(self) -> None:
        self.query_one("#field-search-input", Input).focus()

    @on(Input.Changed, "#field-search-input")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self.refilter()

    @on(Input.Submitted, "#field-search-input")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        options = self.query_one("#field-search-list", OptionList)
        if options.highlighted_option is not None:
            self._pick(options.highlighted_option.id)

    @on(OptionList.OptionSelected, "#field-search-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._pick(event.option.id)

    def _pick(self, name: str | None) -> None:
        field = next((f for f in self.fields if f.name == name), None)
        if field is not None:
            self.post_message(self.Picked(field))

    def action_move(self, delta: int) -> None:
        options = self.query_one("#field-search-list", OptionList)
        if not options.option_count:
            return
        current = options.highlighted if options.highlighted is not None else -delta
        options.highlighted = max(0, min(options.option_count - 1, current + delta))
