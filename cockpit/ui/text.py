"""Text from runs made safe to show: control characters visible, long text folded."""

from __future__ import annotations

import re

from cockpit.core.watch import fmt_value

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Control characters (tiny models emit plenty) shown as `·`, never sent to the terminal."""
    return _CONTROL.sub("·", text)


def fold(text: str, width: int) -> str:
    """One line of at most `width` characters: newlines as ⏎, an ellipsis when cut."""
    one = printable(text).replace("\r\n", "\n").replace("\n", "⏎ ")
    return one if len(one) <= width else one[: max(1, width - 1)] + "…"


def num(value: object) -> str:
    """A metric value as the cockpit prints it everywhere (`-` for none)."""
    return "-" if value is None else fmt_value(value)


def fold_tail(text: str, width: int) -> str:
    """Like `fold`, keeping the end (prompts share their start; their end is what differs)."""
    one = printable(text).replace("\r\n", "\n").replace("\n", "⏎ ")
    return one if len(one) <= width else "…" + one[-max(1, width - 1):]
