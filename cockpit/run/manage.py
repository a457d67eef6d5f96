"""Deleting, renaming and archiving a run folder from the runs list: never a live one (its supervisor
and trainer write there), and only the folder itself (an output_dir the preset put elsewhere is left
alone).

A rename or an archive is one `rename(2)` of the folder inside the runs folder (archived runs sit in
`<runs>/.archive/`, which no list of runs shows), with the run's lock held so no resume starts
meanwhile. run.yaml, trl.yaml and command.txt name the folder by its absolute path (launch writes
`output_dir: <run>/output`); those paths are rewritten to the new place, each file atomically, so
resume, replay, checkpoints and export read the moved run where it is. The journal stays as it was:
history. A move whose rewrite fails is undone."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.files import dump_yaml, read_text_regular, safe_load, write_atomic
from cockpit.run import owner
from cockpit.run.folder import LIVE_STATES, RUN_YAML_MAX_BYTES, RunFolder
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
        old = run.path
        try:
            old_real = old.resolve()
            os.rename(old, target)
        except OSError as exc:
            target.rmdir()
            raise CockpitError(f"{run.name}: cannot move it to {target} ({exc.strerror or exc})") from None
        moved = RunFolder(target)
        new_real = target.resolve()
        try:
            _repath(moved, {str(old), str(old_real)}, str(new_real))
        except (OSError, ValueError) as exc:
            try:
                os.rename(target, old)
            except OSError:
                raise CockpitError(f"{run.name}: moved to {target}, but its files still name {old} "
                                   f"({exc}) — move it back by hand: mv {target} {old}") from None
            try:  # a file rewritten before the one that failed names the old place again
                _repath(run, {str(new_real)}, str(old_real))
            except (OSError, ValueError):
                pass
            raise CockpitError(f"{run.name}: cannot rewrite its paths ({exc}) — nothing moved") from None
        return moved
    finally:
        os.close(lock)


def _repath(run: RunFolder, olds: set[str], new: str) -> None:
    """Every path in the run's files that lay in its old folder, mapped onto the new one."""
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(o) for o in sorted(olds, key=len, reverse=True))
                         + r")(?=/|$|[\s'\"])")

    def remap(node: Any) -> Any:
        if isinstance(node, str):
            return pattern.sub(lambda _m: new, node) if pattern.match(node) else node
        if isinstance(node, dict):
            return {k: remap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [remap(v) for v in node]
        return node

    for name in _PATH_FILES:
        path = run.path / name
        if path.is_symlink() or not path.is_file():
            continue  # a link is never followed; a missing file names nothing
        text = read_text_regular(path, RUN_YAML_MAX_BYTES)
        try:
            data = safe_load(text)
        except Exception:  # noqa: BLE001 - a broken file names no path to map: the runner reports it
            continue
        mapped = remap(data)
        if mapped != data:
            write_atomic(path, dump_yaml(mapped))
    command = run.command_txt
    if command.is_file() and not command.is_symlink():
        text = read_text_regular(command)
        mapped_text = pattern.sub(lambda _m: new, text)
        if mapped_text != text:
            write_atomic(command, mapped_text)
