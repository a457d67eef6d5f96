"""The preset the form adds up to, as YAML, and the command lines that would run it."""

from __future__ import annotations

import shlex

from textual.content import Content
from textual.widgets import Static

from cockpit.config.presets import Preset


def yaml_content(text: str) -> Content:
    """YAML with its top-level keys picked out (theme colours, so every theme works)."""
    out: list[Content] = []
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key and not key.startswith((" ", "-", "#")):
            out.append(Content.assemble((key, "bold $accent"), ":" + rest))
        elif sep and key.strip() and not key.strip().startswith("-"):
            out.append(Content.assemble((key, "$accent"), ":" + rest))
        else:
            out.append(Content(line))
    return Content("\n").join(out)


def command_lines(preset: Preset, cli_command: str | None, saved_as: str | None) -> list[str]:
    """`cockpit run <file>`, and TRL's own command when the trainer has one."""
    target = saved_as or f"{preset.name}.yaml"
    lines = [f"$ {shlex.join(['cockpit', 'run', target])}"]
    if not saved_as:
        lines[0] += "   (save it first: ctrl+s)"
    if cli_command:
        lines.append(f"$ trl {cli_command} --config RUN/trl.yaml   (written at launch)")
    return lines


class PresetPreview(Static):
    """Updated on every change of the form (it is cheap: a dict to YAML)."""

    DEFAULT_CSS = """
    PresetPreview {
        height: auto;
        padding: 0 1;
    }
    """

    def show(self, preset: Preset | None, cli_command: str | None = None,
             saved_as: str | None = None) -> None:
        if preset is None:
            self.update(Content.from_markup("[dim]pick a trainer to start the preset[/]"))
            return
        self.update(yaml_content(preset.to_yaml().rstrip()))


class CommandPreview(Static):
    DEFAULT_CSS = """
    CommandPreview {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def show(self, preset: Preset | None, cli_command: str | None = None,
             saved_as: str | None = None) -> None:
        if preset is None:
            self.update("")
            return
        # Literal: commands hold whatever was typed into the form.
        self.update(Content("\n".join(command_lines(preset, cli_command, saved_as))))
