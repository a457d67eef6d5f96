"""What the setup screen's parts share: the state `SetupScreen` holds and its `flows` and `form`
mixins read, typed once, so each part is checked against the screen it runs in."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from textual.screen import Screen

from cockpit.config.draft import Draft
from cockpit.config.presets import Preset
from cockpit.trainers.registry import Registry, TrainerSpec

if TYPE_CHECKING:
    from cockpit.run.folder import RunFolder  # noqa: F401 - the screen's result type


class SetupBase(Screen["RunFolder | None"]):
    """The setup screen's state (set in `SetupScreen.__init__`) and what the parts read of it."""

    runs_dir: Path
    draft: Draft
    registry: Registry | None
    spec: TrainerSpec | None
    launching: bool
    _data_key: tuple | None

    @property
    def source(self) -> Path | None:
        return self.draft.source

    @property
    def dirty(self) -> bool:
        return self.draft.dirty

    @property
    def can_launch(self) -> bool:
        return not self.launching and self.draft.can_launch()

    def current_preset(self) -> Preset | None:
        """The preset the form adds up to (None until a trainer is picked, or for a command)."""
        return self.draft.preset()

    @abstractmethod
    def _refresh_preview(self) -> None:
        """Show the draft's YAML and command lines again (the screen's own)."""
