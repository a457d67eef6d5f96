"""Deleting a run folder from the runs list: never a live one (its supervisor and trainer write
there), and only the folder itself (an output_dir the preset put elsewhere is left alone)."""

from __future__ import annotations

import shutil

from cockpit.errors import CockpitError
from cockpit.run.folder import LIVE_STATES, RunFolder
from cockpit.run.summaries import effective_state


def delete_run(run: RunFolder) -> None:
    """Remove the run folder; one line naming why not when it is live, not a run, or a link."""
    if run.path.is_symlink() or not run.path.is_dir() or not run.exists():
        raise CockpitError(f"{run.path}: not a run folder — nothing deleted")
    state, _ = effective_state(run)
    if state in LIVE_STATES:
        raise CockpitError(f"{run.name} is {state} — stop it first (s in its view, or `cockpit stop {run.name}`), "
                           "then delete it")
    try:
        shutil.rmtree(run.path)
    except OSError as exc:
        raise CockpitError(f"{run.name}: could not delete all of it ({exc.strerror or exc}) — "
                           f"remove {run.path} by hand") from None
