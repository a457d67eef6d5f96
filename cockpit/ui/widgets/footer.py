"""The footer every screen shows: Textual's, rebuilt only when what it shows changed."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class CockpitFooter(Footer):
    """Textual rebuilds its footer (every key a widget, mounted and styled again) at each signal
    that the bindings may have changed: every focus move, every `refresh_bindings`. Most change
    nothing it shows — in one walk through a run's tabs, 28 of 41 rebuilds drew the same keys,
    about a tenth of the walk's CPU. This one rebuilds when the keys, their labels, groups,
    tooltips or enabled states differ from the last it drew."""

    _shown: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            shown = _shown_keys(screen)
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)


def _shown_keys(screen: Screen) -> tuple[Any, ...]:
    """What the footer draws from the screen's active bindings (those it shows)."""
    return tuple((binding.key, binding.key_display, binding.action, binding.description,
                  (binding.group.description, binding.group.compact) if binding.group else None,
                  enabled, tooltip)
                 for (_, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show)
