"""The launch target: how the run starts (`cockpit.launcher`) — one process, torchrun,
accelerate with a config TRL ships or a file of the user's, or a Slurm job with its fields.

Every field is a `FieldEditor` named by its dotted key (`cockpit.launcher.num_processes`), so its
changes reach the draft like any other field's and validation problems land on it. Only the
fields the chosen kind uses are shown; a command keeps its own launcher line, so for a command
the choice is "as typed" or Slurm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.suggester import SuggestFromList

from cockpit.ui.widgets.setup.catalogue import (
    CONFIG_KINDS,
    KIND_FIELD,
    LAUNCH_KINDS,
    PROCESS_KINDS,
    PROCESSES_FIELD,
    SLURM_FIELDS,
    config_field,
)
from cockpit.ui.widgets.setup.field_editor import FieldEditor

COMMAND_KINDS = {"python": "as typed, on this machine", "slurm": LAUNCH_KINDS["slurm"]}
COMMAND_HELP = ("A command starts as typed, with its own launcher line (python, torchrun, accelerate "
                "launch), or goes to Slurm as a job.")


class LaunchTarget(Vertical):
    DEFAULT_CSS = """
    LaunchTarget {
        height: auto;
    }
    """

    def __init__(self, get: Callable[[str], Any], kind: str, shipped: list[str], *,
                 command: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.get = get
        """The draft's value of a field (UNSET when not set)."""
        self.kind = kind
        self.shipped = shipped
        self.command = command

    def compose(self) -> ComposeResult:
        labels = COMMAND_KINDS if self.command else LAUNCH_KINDS
        kind_field = KIND_FIELD
        if self.command:
            from dataclasses import replace

            kind_field = replace(KIND_FIELD, choices=tuple(COMMAND_KINDS), help=COMMAND_HELP)
        # The kind the launcher ends up with (num_processes: 2 alone means accelerate).
        yield FieldEditor(kind_field, self.get(KIND_FIELD.name) or self.kind, label="launch target",
                          choice_labels=labels)
        yield FieldEditor(PROCESSES_FIELD, self.get(PROCESSES_FIELD.name), label="processes",
                          classes="launch-processes")
        yield FieldEditor(config_field(self.shipped), self.get("cockpit.launcher.config"),
                          label="accelerate config", suggester=SuggestFromList(self.shipped),
                          placeholder="zero2, fsdp2, ... or a path", classes="launch-config")
        for field in SLURM_FIELDS:
            yield FieldEditor(field, self.get(field.name), label=field.name.rsplit(".", 1)[-1].replace("_", " "),
                              classes="launch-slurm")

    def on_mount(self) -> None:
        self.show_kind(self.kind)

    def on_field_editor_changed(self, message: FieldEditor.Changed) -> None:
        if message.name == KIND_FIELD.name:  # not stopped: the screen records the value
            self.show_kind(str(message.value or KIND_FIELD.default))

    def show_kind(self, kind: str) -> None:
        """Only the fields this kind uses."""
        self.kind = kind
        for editor in self.query(".launch-processes"):
            editor.display = kind in PROCESS_KINDS and not self.command
        for editor in self.query(".launch-config"):
            editor.display = kind in CONFIG_KINDS and not self.command
        for editor in self.query(".launch-slurm"):
            editor.display = kind == "slurm"
