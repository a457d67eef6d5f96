"""Shipped and user presets; Enter launches one. A preset that cannot start on this machine (its
trainer is not in the installed TRL, or its model is on the hub while offline) is greyed out with
the reason, as the trainer picker does; it stays selectable so `e` can open it to change it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cockpit.ui.text import markup

if TYPE_CHECKING:  # the presets are read in home's worker: yaml and the demo's assets not on the way to the first frame
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
        self.blocked: dict[str, str] = {}

    def show(self, infos: Sequence[PresetInfo], blocked: dict[str, str] | None = None) -> None:
        """The presets, read again (`blocked`: path -> why it cannot run here; None: not known
        yet, the last answer stays): the highlight stays on the preset it was on."""
        blocked = self.blocked if blocked is None else dict(blocked)
        if list(infos) == list(self.infos.values()) and blocked == self.blocked and self.option_count:
            return
        self.blocked = blocked
        index = self.highlighted
        was = self.get_option_at_index(index).id if index is not None and index < self.option_count else None
        self.clear_options()
        self.infos = {str(i.path): i for i in infos}
        options = []
        for info in infos:
            reason = blocked.get(str(info.path))
            if reason:  # greyed: the problem, not the fix (Enter shows the whole line)
                text = markup("[dim]$name  $trainer  $origin[/]", name=info.name, trainer=info.trainer,
                              origin=info.origin)
                text += markup("\n  [dim i]✗ $reason[/]", reason=reason.split(" — ")[0])
                options.append(Option(text, id=str(info.path)))
                continue
            text = markup("[b]$name[/b]  [$text-primary]$trainer[/]  [dim]$origin[/]",
                          name=info.name, trainer=info.trainer, origin=info.origin)
            if info.error:
                text += markup("\n  [$text-error]$error[/]", error=info.error[:100])
            elif info.description:
                text += markup("\n  [dim]$description[/]", description=info.description[:100])
            options.append(Option(text, id=str(info.path), disabled=bool(info.error)))
        self.add_options(options)
        if options:
            ids = [o.id for o in options]
            self.highlighted = ids.index(was) if was in ids else 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        info = self.infos.get(event.option.id or "")
        if info is not None:
            self.post_message(self.Chosen(info))
