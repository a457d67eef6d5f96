"""Shipped and user presets; Enter launches one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cockpit.config.presets import PresetInfo


class PresetList(OptionList):
    @dataclass
    class Chosen(Message):
        """Enter on a preset."""

        info: PresetInfo
        """The preset chosen."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.infos: dict[str, PresetInfo] = {}

    def show(self, infos: Sequence[PresetInfo]) -> None:
        self.clear_options()
        self.infos = {str(i.path): i for i in infos}
        options = []
        for info in infos:
            text = Text()
            text.append(info.name, style="bold")
            text.append(f"  {info.trainer}  ", style="cyan")
            text.append(info.origin, style="dim")
            if info.error:
                text.append(f"\n  {info.error[:100]}", style="red")
            elif info.description:
                text.append(f"\n  {info.description[:100]}", style="dim")
            options.append(Option(text, id=str(info.path), disabled=bool(info.error)))
        self.add_options(options)
        if options:
            self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        info = self.infos.get(event.option.id or "")
        if info is not None:
            self.post_message(self.Chosen(info))
