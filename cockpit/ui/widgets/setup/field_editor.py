"""One TRL config field in the setup form: its name, the right control for its type, TRL's help.

A Select for fields with choices, a Switch for booleans, an Input with type checking for the
rest. The editor reports what the preset should hold (UNSET when the value is TRL's default) and
only after the user changed something, so a preset opened for editing keeps its keys as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.suggester import Suggester
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, Switch

from cockpit.trainers.registry import ConfigField
from cockpit.ui.text import fold_words
from cockpit.ui.widgets.setup.values import (
    UNSET,
    default_text,
    first_sentence,
    format_value,
    full_help,
    is_bool_field,
    parse_text,
    same_as_default,
    select_choices,
)


def bool_glyph(value: bool) -> str:
    """A boolean in words and a glyph, beside the switch."""
    return "✓ on" if value else "✗ off"

class FieldValueValidator(Validator):
    """Refuses text the field's type cannot hold, with the reason shown under the field."""

    def __init__(self, field: ConfigField) -> None:
        super().__init__()
        self.field = field

    def validate(self, value: str) -> ValidationResult:
        try:
            parse_text(self.field, value)
        except ValueError as exc:
            return self.failure(str(exc))
        return self.success()


def editor_id(name: str) -> str:
    """The DOM id of a field's editor ('cockpit.dataset.split' -> 'field-cockpit-dataset-split')."""
    return "field-" + name.replace(".", "-")


class HelpLine(Static):
    """A field's help: one line cut after a whole word (`that ship…`, not `that sh…`) while
    the field is not focused, all of it wrapped while it is."""

    def render(self) -> RenderResult:
        width = self.content_size.width
        if width <= 0 or self.parent is None or self.parent.has_class("-focused"):
            return super().render()
        return Content(fold_words(str(self.content), width))


class FieldEditor(Vertical):
    DEFAULT_CSS = """
    FieldEditor {
        height: auto;
        padding: 0 1 0 0;
    }
    FieldEditor .field-row {
        height: auto;
    }
    FieldEditor .field-name {
        width: 29;
        padding: 0 1 0 0;
        color: $text-muted;
    }
    FieldEditor.-set .field-name {
        color: $accent;
        text-style: bold;
    }
    FieldEditor:focus-within .field-name {
        color: $text;
        text-style: bold;
    }
    FieldEditor .field-control {
        width: 1fr;
    }
    FieldEditor Switch.field-control {
        width: auto;
        height: 1;
        border: none;
        padding: 0 1;
    }
    FieldEditor .bool-glyph {
        width: auto;
        padding: 0 1;
    }
    FieldEditor .field-help {
        padding-left: 2;
        color: $text-muted;
        height: auto;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    FieldEditor.-focused .field-help {
        text-wrap: wrap;
        color: $text;
    }
    FieldEditor .field-error {
        padding-left: 2;
        color: $text-error;
        height: auto;
        display: none;
    }
    FieldEditor.-invalid .field-error {
        display: block;
    }
    FieldEditor.-invalid .field-name {
        color: $text-error;
    }
    """

    @dataclass
    class Changed(Message):
        """The user changed the field."""

        editor: FieldEditor
        """The editor that changed."""
        value: Any
        """What the preset holds (UNSET: TRL's default)."""
        error: str | None
        """Why the typed text is not a valid value (then `value` is UNSET)."""

        @property
        def name(self) -> str:
            return self.editor.field.name

    def __init__(self, field: ConfigField, value: Any = UNSET, *, label: str | None = None,
                 suggester: Suggester | None = None, placeholder: str | None = None,
                 choice_labels: dict[str, str] | None = None,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id or editor_id(field.name), classes=classes)
        self.field = field
        self.label = label or field.name
        self.choice_labels = choice_labels or {}
        """What a Select shows for each choice (the choice itself when not given)."""
        self.suggester = suggester
        self.placeholder = placeholder
        self.initial = value
        self._raw: Any = value
        self.value: Any = value
        """What the preset holds for this field (UNSET: the key is left out)."""
        self.input_error: str | None = None
        """Why the typed text is not a value of the field's type, or None."""
        self._problem: str | None = None
        self._shown = ""
        """What the error line under the field says."""

    # -- building ------------------------------------------------------------------------------

    def _control(self) -> Widget:
        field, value = self.field, self.initial
        choices = select_choices(field)
        if choices is not None:
            current = value if value is not UNSET else field.default
            options = [(self.choice_labels.get(c, c), c) for c in choices]
            selected = current if current in choices else Select.NULL
            return Select(options, value=selected, allow_blank=field.default not in choices,
                          prompt=default_text(field) or "choose", compact=True,
                          classes="field-control", id="control")
        if is_bool_field(field):
            current = value if value is not UNSET else field.default
            return Switch(bool(current), animate=False, classes="field-control", id="control")
        text = format_value(field, value) if value is not UNSET else ""
        return Input(text, placeholder=self.placeholder or default_text(field), suggester=self.suggester,
                     validators=[FieldValueValidator(field)], compact=True,
                     classes="field-control", id="control")

    def compose(self) -> ComposeResult:
        with Horizontal(classes="field-row"):
            yield Label(self.label, classes="field-name")
            control = self._control()
            yield control
            if isinstance(control, Switch):  # the switch's colour alone is not enough to read
                yield Static(bool_glyph(control.value), classes="bool-glyph")
        if self.field.help:
            yield HelpLine(first_sentence(self.field.help), classes="field-help", markup=False)
        yield Static("", classes="field-error", markup=False)

    def on_mount(self) -> None:
        self.set_class(self.initial is not UNSET, "-set")
        if self.field.help:
            self.tooltip = Content(full_help(self.field.help))

    @property
    def control(self) -> Widget:
        return self.query_one("#control")

    def focus_control(self) -> None:
        self.control.focus()

    # -- help in full while focused --------------------------------------------------------

    def on_descendant_focus(self) -> None:
        self.add_class("-focused")
        if self.field.help:
            self.query_one(".field-help", Static).update(full_help(self.field.help))

    def on_descendant_blur(self) -> None:
        self.remove_class("-focused")
        if self.field.help:
            self.query_one(".field-help", Static).update(first_sentence(self.field.help))

    # -- changes -------------------------------------------------------------------------------

    @on(Input.Changed, "#control")
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        result = event.validation_result
        if result is not None and not result.is_valid:
            self._report(UNSET, "; ".join(result.failure_descriptions) or "invalid value")
            return
        try:
            value = parse_text(self.field, event.value)
        except ValueError as exc:
            self._report(UNSET, str(exc))
            return
        self._report(value, None)

    @on(Select.Changed, "#control")
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        value = UNSET if event.value is Select.NULL else event.value
        self._report(value, None)

    @on(Switch.Changed, "#control")
    def _switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        for glyph in self.query(".bool-glyph").results(Static):
            glyph.update(bool_glyph(event.value))
        self._report(bool(event.value), None)

    def _report(self, raw: Any, error: str | None) -> None:
        if error is None and self.input_error is None and raw == self._raw:
            return  # a control announcing the value it was given
        self._raw = raw
        value = UNSET if same_as_default(self.field, raw) else raw
        if error is None and self.input_error is None and value == self.value:
            return  # e.g. a Select announcing TRL's default it shows preselected
        self.value = value
        self.input_error = error
        self.set_class(value is not UNSET, "-set")
        self._show_problem()
        self.post_message(self.Changed(self, value, error))

    # -- problems from validation ------------------------------------------------------------

    def set_problem(self, message: str | None) -> None:
        """Mark the field with a problem the preset validator found (None clears it)."""
        if message == self._problem:
            return  # every change of the form asks every field: most have nothing new to say
        self._problem = message
        self._show_problem()

    def _show_problem(self) -> None:
        message = self.input_error or self._problem
        text = f"✗ {message}" if message else ""
        self.set_class(message is not None, "-invalid")
        if text != self._shown:  # an update lays the screen out again: only when it says more
            self._shown = text
            self.query_one(".field-error", Static).update(text)
