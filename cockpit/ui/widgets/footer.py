"""The footer every screen shows: Textual's, rebuilt only when what it shows changed, and showing
only the keys that fit whole."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

KEPT_ACTIONS = ("help", "quit", "leave", "stop(True)")
"""Keys the footer keeps when others must go: the way out, a live run's stop-and-save, and help
(it lists every key that was left out). Compared without the namespace (`app.help`)."""


class CockpitFooter(Footer):
    """Textual rebuilds its footer (every key a widget, mounted and styled again) at each signal
    that the bindings may have changed: every focus move, every `refresh_bindings`. Most change
    nothing it shows — in one walk through a run's tabs, 28 of 41 rebuilds drew the same keys,
    about a tenth of the walk's CPU. This one rebuilds when the keys, their labels, groups,
    tooltips or enabled states differ from the last it drew.

    Where the keys do not fit its width, Textual's footer cuts the last one mid-label (`A Arch`).
    This one shows whole keys only: it leaves out the last ones, keeping the way out (Quit,
    Back), Stop & save and Help (which lists them all)."""

    _shown: tuple[Any, ...] | None = None
    _tries = 0
    """Looks at a layout not made yet (keys just mounted): a few, then the next resize."""

    def bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            shown = _shown_keys(screen)
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        await super().recompose()
        self._tries = 0
        self.call_after_refresh(self._fit)

    def on_resize(self) -> None:
        hidden = [unit for unit in _units(self) if not unit[0].display]
        for unit in hidden:
            for widget in unit:
                widget.display = True
        self._tries = 0
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """Hide the keys (a group with its label) that would not be drawn whole, last first,
        keeping the way out and Help where they fit."""
        if not self.is_attached:
            return
        units = _units(self)
        if not units or any(not unit[0].display for unit in units):
            return
        if any(not widget.region.width for unit in units for widget in unit):
            self._tries += 1
            if self._tries < 10:
                self.call_after_refresh(self._fit)  # mounted, not laid out yet
            return
        docked = sum(child.outer_size.width for child in self.children
                     if child.styles.dock != "none" and child.display)
        room = self.content_region.width - docked
        left = self.content_region.x
        costs: list[int] = []
        for unit in units:
            right = max(widget.region.right + widget.styles.margin.right for widget in unit)
            costs.append(right - left)
            left = right
        if sum(costs) <= room:
            return
        order = sorted(range(len(units)), key=lambda i: (not _kept(units[i]), i))
        used = 0
        keep: set[int] = set()
        for i in order:
            if used + costs[i] <= room:
                keep.add(i)
                used += costs[i]
        for i, unit in enumerate(units):
            if i not in keep:
                for widget in unit:
                    widget.display = False


def _units(footer: Footer) -> list[list[Widget]]:
    """The footer's keys in order, each a list of widgets shown or hidden together (a group of
    keys and the label after it); the docked palette key is not one."""
    units: list[list[Widget]] = []
    for child in footer.children:
        if child.styles.dock != "none":
            continue
        if isinstance(child, FooterLabel) and units and isinstance(units[-1][-1], KeyGroup):
            units[-1].append(child)
        else:
            units.append([child])
    return units


def _kept(unit: list[Widget]) -> bool:
    key = unit[0]
    return isinstance(key, FooterKey) and key.action.rpartition(".")[2] in KEPT_ACTIONS


def _shown_keys(screen: Screen) -> tuple[Any, ...]:
    """What the footer draws from the screen's active bindings (those it shows)."""
    return tuple((binding.key, binding.key_display, binding.action, binding.description,
                  (binding.group.description, binding.group.compact) if binding.group else None,
                  enabled, tooltip)
                 for (_, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show)
