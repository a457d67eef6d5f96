"""Errors the user can cause, each one line that names the problem and the fix."""

from __future__ import annotations


class CockpitError(Exception):
    """A user-facing problem: the CLI prints it as one line and exits 2; the UI notifies.

    The message names the thing and the fix, e.g.
    "dataset has no column 'chosen' — DPO needs prompt/chosen/rejected".
    """

    exit_code = 2
