"""The setup screen (`screen`): it composes the setup widgets (`cockpit.ui.widgets.setup`: the
trainer picker, the form, the data preview, the preview, the verdict, the buttons) over the
Textual-free `cockpit.config.draft.Draft`, and validates. Its styles: setup.tcss, next to
`screen`."""

from cockpit.ui.screens.setup.screen import SetupScreen

__all__ = ["SetupScreen"]
