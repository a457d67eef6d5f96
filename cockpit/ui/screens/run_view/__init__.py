"""The run screen (`screen.RunView`) that the live screen and the replay build on, split by job:
`display` (what is shown and the redraw), `plots` (the plot keys), `tabs` (the tabs, the
completions keys, Escape's steps), `texts` (the wait and trainer wording)."""

from cockpit.ui.screens.run_view.screen import RunView

__all__ = ["RunView"]
