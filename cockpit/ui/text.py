"""Text from runs made safe to show: control characters visible, long text folded, never markup.

Model output, dataset rows, log lines, metric keys, file and run names and
whatever a user typed are shown literally. Cockpit's own styling goes in a
markup template and such text is filled in as `$name` variables (`markup`), or
it is wrapped in `rich.text.Text` / `Content` before reaching a widget; it is
never pasted into markup, escaped or not (`textual.markup.escape` leaves
`\\` and `[$x]` to be read as markup, and a `\\` before a closing tag breaks
the tag).
"""

from __future__ import annotations

import functools
import re

from textual.content import Content

from cockpit.run.summaries import fmt_value
from cockpit.text import printable

__all__ = ["fix_for_screen", "fold", "fold_tail", "fold_words", "literal", "markup", "num", "printable"]


def fold(text: str, width: int) -> str:
    """One line of at most `width` characters: newlines as ⏎, an ellipsis when cut."""
    one = printable(text).replace("\r\n", "\n").replace("\n", "⏎ ")
    return one if len(one) <= width else one[: max(1, width - 1)] + "…"


def fold_words(text: str, width: int) -> str:
    """Like `fold`, cut after a whole word where one ends in the last 40 % (a preview reads
    `the answer is…`, not `the answ…`)."""
    one = printable(text).replace("\r\n", "\n").replace("\n", "⏎ ")
    if len(one) <= width:
        return one
    cut = one[: max(1, width - 1)]
    space = cut.rfind(" ")
    if space >= width * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…"


def num(value: object) -> str:
    """A metric value as the cockpit prints it everywhere (`-` for none)."""
    return "-" if value is None else fmt_value(value)


def fold_tail(text: str, width: int) -> str:
    """Like `fold`, keeping the end (prompts share their start; their end is what differs)."""
    one = printable(text).replace("\r\n", "\n").replace("\n", "⏎ ")
    return one if len(one) <= width else "…" + one[-max(1, width - 1):]


def markup(template: str, **values: object) -> Content:
    """Cockpit's own `template` markup with each `$name` filled in literally by `values`
    (control characters shown as `·`), e.g. `markup("[b]$name[/b]", name=run_name)`."""
    filled = tuple((k, printable(str(v))) for k, v in values.items())
    if sum(len(v) for _, v in filled) > _CACHED_UP_TO:
        return Content.from_markup(template, **dict(filled))
    return _markup(template, filled)


_CACHED_UP_TO = 400
"""Values longer than this (a folded completion, a long path) are parsed each time, not kept."""


@functools.lru_cache(maxsize=1024)
def _markup(template: str, values: tuple[tuple[str, str], ...]) -> Content:
    """Parsed once for each template and values: the live header asks for the same dozen pieces
    at every redraw (a Content is immutable, so one can be handed out again)."""
    return Content.from_markup(template, **dict(values))


def literal(text: object) -> Content:
    """Text shown exactly as it is (control characters as `·`), for widgets that would read a
    plain string as markup."""
    return Content(printable(str(text)))


_RESUME_ADVICE = re.compile(r"resume(?: it)? with `cockpit resume RUN`")


def fix_for_screen(fix: str, *, run_name: str, resume_key: str | None = None) -> str:
    """A fix is written for the shell (`cockpit resume RUN`): on a screen that resumes with a
    key it says the key, elsewhere it names the run."""
    if resume_key:
        fix = _RESUME_ADVICE.sub(f"press {resume_key} to resume", fix)
    return fix.replace("`cockpit resume RUN`", f"`cockpit resume {run_name}`")
