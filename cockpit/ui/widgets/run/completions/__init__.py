"""The completions tab: a browser over every logged step (`pane.CompletionsPane`)."""

from cockpit.ui.widgets.run.completions.pane import CompletionsPane

__all__ = ["CompletionsPane"]
