"""The setup screen, in three modules: `screen` (the screen over the Textual-free
`cockpit.config.draft.Draft`: layout, validation, the trainer picker), `form` (the editors built
from the field catalogue and the draft's values, and the data check) and `flows` (save, launch,
leave). Its styles: setup.tcss, next to `screen`."""

from cockpit.ui.screens.setup.screen import SetupScreen

__all__ = ["SetupScreen"]
