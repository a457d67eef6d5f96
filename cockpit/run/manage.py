"""Deleting, renaming and archiving a run folder from the runs list: never a live one (its supervisor
and trainer write there), and only the folder itself (an output_dir the preset put elsewhere is left
alone).

A rename or an archive is one `rename(2)` of the folder inside the runs folder (archived runs sit in
`<runs>/.archive/`, which no list of runs shows), with the run's lock held so no resume starts
meanwhile. Nothing in the folder is rewritten: run.yaml keeps the paths inside the folder relative
to it (`RunFolder.relative`; an older one's absolute paths are read where the folder is now,
`RunFolder.own_path`), and command.txt names them from the folder. The journal stays as it was:
history."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.run import owner
from cockpit.run.folder import LIVE_STATES, RunFolder
from cockpit.run.summaries import effective_state

ARCHIVE = ".archive"
"""The folder of archived runs, inside the runs folder (`list_runs` skips hidden names)."""
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""A name a run may be given: the letters `new_run_name` makes names of, not starting with a dot
(hidden, like .archive) or a dash (an option to every shell command), at most 200 characters (the
folder's own temp files need room beside it in a 255-byte file name)."""
_PATH_FILES = ("run.yaml", "trl.yaml")
"""The run's YAML files that may name the folder by its path (`output_dir`, an accelerate config)."""


def archive_dir(runs_dir: Path) -> Path:
    return Path(runs_dir) / ARCHIVE


def delete_run(run: RunFolder) -> None:
    """Remove the run folder; one line naming why not when it is live, not a run, or a link."""
    _check_run(run, "deleted")
    _refuse_live(run, "delete it")
    try:
        shutil.rmtree(run.path)
    except OSError as exc:
        raise CockpitError(f"{run.name}: could not delete all of it ({exc.strerror or exc}) — "
                           f"remove {run.path} by hand") from None


def rename_run(run: RunFolder, new_name: str) -> RunFolder:
    """The run under a new name in the same runs folder; returns it where it now is."""
    new_name = new_name.strip()
    if new_name == run.name:
        return run
    problem = name_problem(new_name)
    if problem:
        raise CockpitError(f"{new_name!r}: {problem}")
    return _move(run, run.path.parent / new_name, "rename it")


def archive_run(run: RunFolder) -> RunFolder:
    """The run moved into the runs folder's .archive/ (out of every list; `unarchive_run` brings it
    back)."""
    if run.path.parent.name == ARCHIVE:
        raise CockpitError(f"{run.name} is already archived")
    _check_run(run, "moved")
    _refuse_live(run, "archive it")  # before .archive is made for it
    target = archive_dir(run.path.parent)
    try:
        target.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise CockpitError(f"{target}: cannot make it ({exc.strerror or exc}) — check the runs folder's "
                           "permissions") from None
    if target.is_symlink() or not target.is_dir():
        raise CockpitError(f"{target}: not a folder of the runs folder's own (a link, or a file) — "
                           "remove it, then archive again")
    return _move(run, target / run.name, "archive it")


def unarchive_run(run: RunFolder) -> RunFolder:
    """An archived run back in the runs folder, under its name."""
    if run.path.parent.name != ARCHIVE:
        raise CockpitError(f"{run.name} is not archived (`cockpit runs --archived` lists those that are)")
    return _move(run, run.path.parent.parent / run.name, "unarchive it")


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a run's folder name, with the fix; None when it can."""
    if not name:
        return "a run needs a name"
    if "/" in name or os.sep in name:
        return "a name, not a path — give it without a slash"
    if not PLAIN_NAME.fullmatch(name):
        return ("not a plain folder name — use letters, digits, '.', '_' and '-' (not first), "
                "at most 200 characters")
    return None


def _check_run(run: RunFolder, done: str) -> None:
    if run.path.is_symlink() or not run.path.is_dir() or not run.exists():
        raise CockpitError(f"{run.path}: not a run folder — nothing {done}")


def _refuse_live(run: RunFolder, then: str) -> None:
    state, _ = effective_state(run)
    if state in LIVE_STATES:
        raise CockpitError(f"{run.name} is {state} — stop it first (s in its view, or `cockpit stop {run.name}`), "
                           f"then {then}")


def _move(run: RunFolder, target: Path, then: str) -> RunFolder:
    _check_run(run, "moved")
    _refuse_live(run, then)
    lock = owner.acquire(run.path, run.name)  # no resume (nor a second move) starts while it moves
    try:
        _refuse_live(run, then)  # a launch that ended just before the lock: its final word is in
        try:
            target.mkdir(mode=0o700)  # the name claimed: rename(2) would replace an empty folder there
        except FileExistsError:
            raise CockpitError(f"{target.name}: a run or folder of that name is already in {target.parent} "
                               "— pick another name") from None
        except OSError as exc:
            raise CockpitError(f"{target}: cannot make it ({exc.strerror or exc})") from None
        try:
            os.rename(run.path, target)
        except OSError as exc:
            target.rmdir()
            raise CockpitError(f"{run.name}: cannot move it to {target} ({exc.strerror or exc})") from None
        return RunFolder(target)
    finally:
        os.close(lock)
