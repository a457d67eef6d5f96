"""What validation said about the draft, above the preview: checking, the next thing to fill in,
the problems (each is also marked on its field), or valid with the warnings."""

from __future__ import annotations

from textual.content import Content

from cockpit.config.draft import Draft, is_todo
from cockpit.ui.widgets.waiting import Waiting

SHOWN_PROBLEMS = 4
"""Problems listed here; the rest are counted (each is on its field)."""


class Verdict(Waiting):
    """A spinner while the draft is checked (the first check reads the trainer's config: seconds)."""

    _said: tuple[str, str] | None = None
    """The text and level shown."""

    def show(self, draft: Draft, *, pending: bool = False) -> None:
        if draft.key() is None:
            self._say("", "")
            return
        lines = [line for _, line in draft.lines()] if draft.checked else []
        if draft.input_errors:
            name, error = next(iter(draft.input_errors.items()))
            self._say(f"✗ {name}: {error}", "-bad")
        elif pending or not draft.checked:
            if self._said != ("checking", "-pending"):
                self._said = ("checking", "-pending")
                self.set_classes("-pending")
                self.wait("checking the preset")
        elif lines and all(is_todo(line) for line in lines):
            # Not a mistake yet, just the next thing to fill in: say so without alarm.
            self._say(f"→ next: {lines[0]}", "-pending")
        elif lines:
            todo = [f"→ next: {line}" for line in lines if is_todo(line)][:1]
            bad = [f"✗ {line}" for line in lines if not is_todo(line)]
            shown = todo + bad[:SHOWN_PROBLEMS]
            if len(bad) > SHOWN_PROBLEMS:
                shown.append(f"(+{len(bad) - SHOWN_PROBLEMS} more, each on its field)")
            self._say("\n".join(shown), "-bad")
        else:
            self._say("\n".join(["✓ valid — ctrl+l launches"] + [f"⚠ {w}" for w in draft.warnings]), "-ok")

    def _say(self, text: str, level: str) -> None:
        if (text, level) == self._said:
            return  # each keystroke says "checking" again: the screen is laid out only for news
        self._said = (text, level)
        self.update(Content(text))  # literal: problems quote what was typed
        self.set_classes(level)
