"""Reading the installed TRL without importing it here: a discovery subprocess, cached.

`python -m cockpit.runner.discover` imports trl (10-30 s, and the training stack, which this side
must not load) and prints every trainer, config field and constructor parameter as JSON; the
result is cached per TRL / transformers version pair under the user cache dir.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.paths import cache_dir
from cockpit.trainers import versions

SCHEMA = 3
DISCOVER_MODULE = "cockpit.runner.discover"
DISCOVER_TIMEOUT_S = 180.0


def require_training_stack() -> None:
    """Launching, setting up and checking preset runs need the `train` extra, at the versions
    presets are proven on (`versions.PRESET_RANGE`); the viewer and script runs do not.

    One line naming every missing package and the extra that brings them, or the versions found
    and the range supported, before anything starts.
    """
    missing = [name for name in versions.STACK if importlib.util.find_spec(name) is None]
    if missing:
        raise CockpitError(
            f"this needs the training stack, and {', '.join(missing)} {'is' if len(missing) == 1 else 'are'}"
            " not installed — pip install 'cockpit[train]' (viewing, replay and export work without it)"
        )
    problem = preset_range_problem(versions.installed())
    if problem:
        raise CockpitError(problem)


def preset_range_problem(found: dict[str, str]) -> str | None:
    """One line when the installed trl/transformers are older than preset mode supports."""
    from packaging.version import InvalidVersion, Version

    def older(have: str, floor: str) -> bool:
        try:
            return Version(have) < Version(floor)
        except InvalidVersion:  # not a version a package could have: nothing to compare
            return False

    low = [f"{pkg} {found[pkg]}" for pkg, floor in versions.PRESET_RANGE.items()
           if pkg in found and older(found[pkg], floor)]
    if not low:
        return None
    wanted = ", ".join(f"{pkg}>={floor}" for pkg, floor in versions.PRESET_RANGE.items())
    return (f"presets and the demo need {wanted}; found {', '.join(low)} — pip install -U 'cockpit[train]' "
            "(a script on an older TRL runs under `cockpit run -- python train.py`)")


def installed_versions() -> tuple[str, str]:
    """(trl, transformers) versions from package metadata — cheap, imports neither."""
    require_training_stack()
    return importlib.metadata.version("trl"), importlib.metadata.version("transformers")


def schema_cache_path(trl_version: str, transformers_version: str) -> Path:
    return cache_dir() / "schemas" / f"trl-{trl_version}-transformers-{transformers_version}-schema{SCHEMA}.json"


def read_cache(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent or half-written by an old cockpit: rediscover
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("trainers"), list):
        return None
    return data


PRIVATE = "_cockpit_discover"
"""Discovery's own folder (`cockpit.bundle`): the discover module and what it imports, so it runs
on any Python with TRL — a project's own, from a light cockpit on another Python — importing that
env's packages and none of the cockpit env's."""


def _folder() -> Path:
    from cockpit import bundle

    try:
        return bundle.cached((DISCOVER_MODULE,), PRIVATE, cache_dir() / "bundles")
    except OSError as exc:
        raise CockpitError(f"cannot write discovery's folder under {cache_dir() / 'bundles'} "
                           f"({exc.strerror or exc}) — free some space there, or set COCKPIT_CACHE_DIR") from None


def versions_of(python: str) -> tuple[str, str]:
    """(trl, transformers) versions another Python sees (a project's venv), or one line saying
    why that Python cannot be read."""
    probe = ("import importlib.metadata as m\nfor p in ('trl', 'transformers'):\n"
             "    try:\n        print(m.version(p))\n    except m.PackageNotFoundError:\n        print('-')\n")
    try:
        proc = subprocess.run([python, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CockpitError(f"--python {python}: cannot run it ({type(exc).__name__}) — give the python of "
                           "the env your script trains in, e.g. /path/to/venv/bin/python") from None
    found = proc.stdout.split()
    if proc.returncode != 0 or len(found) != 2 or "-" in found:
        seen = [*found, "-", "-"][:2]
        missing = " and ".join(p for p, v in zip(("trl", "transformers"), seen, strict=True) if v == "-")
        raise CockpitError(f"--python {python}: {missing or 'trl'} is not installed there — give the python "
                           "of the env your script trains in")
    return found[0], found[1]


def run_discovery(python: str = sys.executable, timeout: float = DISCOVER_TIMEOUT_S) -> dict[str, Any]:
    """Run discovery (`cockpit.runner.discover`, from its own folder) on `python` and return its
    JSON; CockpitError on any failure."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_folder()), env.get("PYTHONPATH", "")) if p)
    env.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    env.setdefault("PYTHONWARNINGS", "ignore")
    try:
        proc = subprocess.run(
            [python, "-m", f"{PRIVATE}.{DISCOVER_MODULE.split('.', 1)[1]}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        raise CockpitError(f"cannot run {python} to read the TRL trainers — check the Python path") from None
    except PermissionError:
        raise CockpitError(f"cannot run {python} to read the TRL trainers — it is not executable") from None
    except subprocess.TimeoutExpired:
        raise CockpitError(
            f"reading the TRL trainers took over {timeout:.0f} s — try again, or check `python -c 'import trl'`"
        ) from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        raise CockpitError(f"reading the TRL trainers failed: {last}")
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise CockpitError("reading the TRL trainers failed: discovery printed something other than JSON") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CockpitError(
            f"reading the TRL trainers failed: schema {data.get('schema') if isinstance(data, dict) else '?'}"
            f" from {python}, expected {SCHEMA} — is it running an older cockpit?"
        )
    return data


