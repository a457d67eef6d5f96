"""Errors the user can cause, each one line that names the problem and the fix."""

from __future__ import annotations

import sys


class CockpitError(Exception):
    """A user-facing problem: the CLI prints it as one line and exits 2; the UI notifies.

    The message names the thing and the fix, e.g.
    "dataset has no column 'chosen' — DPO needs prompt/chosen/rejected".
    """

    exit_code = 2


def failure(exc: BaseException, what: str = "", *, limit: int = 300) -> str:
    """How a broad `except` says what it caught: "what: ErrorType: message" (without `what`,
    "ErrorType: message") on one line, at most `limit` characters."""
    message = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return (f"{what}: {text}" if what else text)[:limit]


def say(line: str) -> None:
    """One line on stderr; a closed or full stderr does not make it raise (the supervisor's log
    on a full disk, the user's process whose stderr went away)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001 - nowhere left to say it
        pass
