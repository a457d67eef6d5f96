"""The completions tab's small widgets: the step and filter boxes, and the detail view.

The boxes take the focus only when asked (`g`, `/`, a click): Tab and the digit keys that
switch tabs must not land in a box where a digit would be typed instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input


class StepInput(Input):
    """A one-line box that is out of the focus chain until opened; Escape leaves it."""

    BINDINGS = [Binding("escape", "leave", "Leave the box", show=False, id="completions.leave_box")]

    @dataclass
    class Left(Message):
        """Escape in the box: the focus goes back to the table."""

        input: StepInput
        """The box left."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.can_focus = False

    def on_click(self) -> None:
        if not self.can_focus:
            self.can_focus = True
            self.focus()

    def action_leave(self) -> None:
        self.post_message(self.Left(self))


class DetailScroll(VerticalScroll):
    """The highlighted completion, whole. Zoomed (Enter on a row) it fills the tab; Enter or
    Escape goes back to the table."""

    BINDINGS = [
        Binding("enter", "unzoom", "Back to the table", show=False, id="completions.unzoom"),
        Binding("escape", "unzoom", "Table", tooltip="Back to the table", id="completions.unzoom_escape"),
    ]

    class Unzoomed(Message):
        """The user asked for the table back."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:  # noqa: ARG002 - Widget.check_action's signature
        if action == "unzoom":  # not zoomed: Escape is the screen's (back)
            return self.parent is not None and self.parent.has_class("-zoomed")
        return True

    def action_unzoom(self) -> None:
        self.post_message(self.Unzoomed())
