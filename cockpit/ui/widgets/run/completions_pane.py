"""Where the run screen and the tests have always found the completions pane; it lives in
`widgets/run/completions/` now, split by part (view rules, table, detail, boxes, pane)."""

from cockpit.ui.widgets.run.completions.pane import CompletionsPane

__all__ = ["CompletionsPane"]
