"""The checkpoints tab (`pane.CheckpointsPane`), split by job: `listing` (the layout, the listing
and the picks), `table` (the rows), `answers` (the answer columns), `settings` (temperature, max
tokens, seed)."""

from cockpit.ui.widgets.run.checkpoints.pane import CheckpointsPane

__all__ = ["CheckpointsPane"]
