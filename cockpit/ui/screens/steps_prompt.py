"""Ask for the steps the plots show (`v`): `200-1500`, `1000-` (from 1000 on), `-500`, or
nothing for every step. A range that cannot be read says why and stays open."""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from cockpit.ui.text import literal
from cockpit.ui.widgets.run.metric_plot import LAST_STEP

_RANGE = re.compile(r"^\s*(\d*)\s*(?:-|–|\.\.)\s*(\d*)\s*$")


def parse_steps(text: str) -> tuple[int, int] | None:
    """(first, last) steps, inclusive; None for every step. ValueError naming the fix."""
    if not text.strip():
        return None
    found = _RANGE.match(text)
    if found is None or not (found.group(1) or found.group(2)):
        raise ValueError(f"{text.strip()!r}: give the steps as FIRST-LAST (200-1500), FIRST- or -LAST")
    first = int(found.group(1)) if found.group(1) else 0
    last = int(found.group(2)) if found.group(2) else LAST_STEP
    if last < first:
        raise ValueError(f"{text.strip()!r}: the last step comes before the first — swap them")
    return first, last


class StepsPrompt(ModalScreen[tuple[int, int] | None | bool]):
    """Dismissed with (first, last), None (every step), or False (Escape: nothing changes)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="steps_prompt.cancel")]

    def __init__(self, current: tuple[int, int] | None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        value = "" if self.current is None else \
            f"{self.current[0]}-{'' if self.current[1] >= LAST_STEP else self.current[1]}"
        with Vertical(classes="dialog"):
            yield Static("Steps to show", classes="dialog-question")
            yield Input(value=value, placeholder="200-1500 · 1000- · -500 · empty: every step",
                        id="steps-input")
            yield Static("", id="steps-problem")
            yield Static("[dim]Enter shows them · empty shows every step · Escape cancels[/]")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            window = parse_steps(event.value)
        except ValueError as exc:
            self.query_one("#steps-problem", Static).update(literal(str(exc)))
            return
        self.dismiss(window)

    def action_cancel(self) -> None:
        self.dismiss(False)
