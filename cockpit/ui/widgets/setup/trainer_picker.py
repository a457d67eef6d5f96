"""Every trainer of the installed TRL, stable then experimental, one line each (the highlighted
one's summary is shown beside it, in the form); the ones that cannot run here are listed,
disabled, with the reason. Before them, `command`: any training script, run unchanged (script
mode)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cockpit.config.validate import trainer_unavailable
from cockpit.trainers.registry import TrainerSpec

COMMAND_ID = "command:"
"""The option of a command line (no trainer has a colon in its name)."""


unavailable_reason = trainer_unavailable
"""Why this trainer cannot be picked on this machine, or None (the rule lives in validate)."""


class TrainerPicker(OptionList):
    DEFAULT_CSS = """
    TrainerPicker {
        height: 1fr;
        border: none;
        background: $surface;
        scrollbar-gutter: stable;
        &:focus {
            border: none;
        }
    }
    """

    @dataclass
    class Picked(Message):
        """Enter (or a click) on a trainer that can run here."""

        spec: TrainerSpec
        """The trainer picked."""

    class CommandPicked(Message):
        """Enter (or a click) on `command`: the user brings a training command of their own."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.specs: dict[str, TrainerSpec] = {}
        self.reasons: dict[str, str] = {}

    def show(self, specs: Sequence[TrainerSpec], *, gpu: bool, current: str | None = None) -> None:
        self.clear_options()
        self.specs = {s.name: s for s in specs}
        self.reasons = {s.name: r for s in specs if (r := unavailable_reason(s, gpu))}
        groups = (
            ("Stable", [s for s in specs if not s.experimental and s.name not in self.reasons]),
            ("Experimental", [s for s in specs if s.experimental and s.name not in self.reasons]),
            ("Not available here", [s for s in specs if s.name in self.reasons]),
        )
        options: list[Option] = self._command_options()
        for title, members in groups:
            if not members:
                continue
            options.append(self._group(title, len(members)))
            options.extend(self._option(s) for s in members)
        self.add_options(options)
        if current and current in self.specs and current not in self.reasons:
            self.highlighted = self.get_option_index(current)
        else:  # the first trainer: `command` is one key up
            self.highlighted = next((i for i, o in enumerate(options)
                                     if not o.disabled and o.id != COMMAND_ID), None)

    @staticmethod
    def _group(title: str, count: int) -> Option:
        return Option(Text(f"{title} ({count})", style="bold reverse"), id=f"group:{title}", disabled=True)

    def _command_options(self) -> list[Option]:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("command", style="bold")
        text.append("  your own script", style="italic")
        return [self._group("Your own script", 1), Option(text, id=COMMAND_ID)]

    def _option(self, spec: TrainerSpec) -> Option:
        """One line: the name and what it is, or for one that cannot run here, why not."""
        reason = self.reasons.get(spec.name)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(spec.name, style="bold" if reason is None else "")
        if reason:
            text.append(f"  ✗ {reason.removeprefix(spec.name).strip()}", style="italic")
        else:
            text.append(f"  {spec.title}", style="italic dim")
        return Option(text, id=spec.name, disabled=reason is not None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == COMMAND_ID:
            self.post_message(self.CommandPicked())
            return
        spec = self.specs.get(event.option.id or "")
        if spec is not None and spec.name not in self.reasons:
            self.post_message(self.Picked(spec))
