"""Guards around Textual bugs the crash hunt (tests/ui/test_ui_crash_hunt.py) found in widgets the
cockpit uses but does not own (the command palette's list is Textual's). Each says what it
guards and goes when Textual fixes it: the option lists' page keys and a screen's dismiss are
guarded once, when the app module is imported (`apply`); the screens use this module's Header."""

from __future__ import annotations

from textual.await_complete import AwaitComplete
from textual.css.query import NoMatches
from textual.dom import NoScreen
from textual.events import Mount
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header as _Header
from textual.widgets import OptionList
from textual.widgets._header import HeaderTitle

_move_page = OptionList._move_page


def _move_page_laid_out(self: OptionList, direction: int) -> None:
    """Page up/down in an option list that has options but no lines yet (not laid out: zero
    height, e.g. the command palette's list while it opens) raised KeyError (Textual 8.2.8,
    `OptionList._move_page` reads `_index_to_line[highlighted]`): the key does nothing then."""
    if not self._lines:
        return
    _move_page(self, direction)  # type: ignore[arg-type]


_dismiss = Screen.dismiss


def _dismiss_once(self: Screen, result: object = None) -> AwaitComplete:
    """Dismissing a screen that is not the top of the stack (dismissed already, or under another)
    does nothing. Textual's `Screen.dismiss` pops whatever screen is on top (Textual 8.2.8): two
    Enters typed at once in the command palette dismissed it twice, the second taking the modal
    under it, and a modal's Escape queued behind that took the run screen, then raised
    ScreenStackError (the crash hunt's farm-sft-100x30-checkpoints-seed1821)."""
    if not self.is_active:
        return AwaitComplete.nothing()
    return _dismiss(self, result)


def apply() -> None:
    OptionList._move_page = _move_page_laid_out  # type: ignore[method-assign]
    Screen.dismiss = _dismiss_once  # type: ignore[method-assign]


class Header(_Header):
    """Textual's Header (the screens use it with icon=""), whose title update does nothing when its
    title widget is gone: a title changing while the header was being taken down (Home left for
    the setup form at once, under load) raised NoMatches from Textual's own watcher, which
    forgives only NoScreen (Textual 8.2.8, `Header._on_mount`)."""

    def _on_mount(self, event: Mount) -> None:
        # Instead of Header's own (Textual calls each class's `_on_mount` up the MRO until one
        # prevents the default); Widget's, which it skips then, is called here.
        event.prevent_default()
        Widget._on_mount(self, event)

        async def set_title() -> None:
            try:
                self.query_one(HeaderTitle).update(self.format_title())
            except (NoScreen, NoMatches):
                pass

        for owner in (self.app, self.screen):
            self.watch(owner, "title", set_title)
            self.watch(owner, "sub_title", set_title)
