# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""Errors the user can cause, each one line that names the problem and the fix."""

from __future__ import annotations

import sys


class CockpitError(Exception):
    """A user-facing problem: the CLI prints it as one line and exits 2; the UI notifies.

    The message names the thing and the fix, e.g.
    "dataset has no column 'chosen' — DPO needs prompt/chosen/rejected".
    """

    exit_code = 2


def one_line(text: str, limit: int = 300) -> str:
    """A message as one line: its lines, blank ones dropped, joined by spaces and cut at `limit`.
    An exception whose message starts on the next line (numpy's ImportError does) keeps what it
    says, where the first line alone is empty."""
    joined = " ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"


def describe(exc: BaseException, limit: int = 300) -> str:
    """`TypeName: message` in one line (just the type's name when it says nothing)."""
    said = one_line(str(exc), limit)
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def failure(exc: BaseException, what: str = "", *, limit: int = 300) -> str:
    """How a broad `except` says what it caught: "what: ErrorType: message" (without `what`,
    "ErrorType: message") on one line, at most `limit` characters."""
    text = describe(exc, limit)
    return (f"{what}: {text}" if what else text)[:limit]


def say(line: str) -> None:
    """One line on stderr; a closed or full stderr does not make it raise (the supervisor's log
    on a full disk, the user's process whose stderr went away)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - nowhere left to say it
        pass
