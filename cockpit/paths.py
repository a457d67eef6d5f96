"""Where cockpit keeps things on disk: runs, caches, user presets and themes."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def _user_dir(env: str, xdg: str, fallback: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env]).expanduser()
    base = os.environ.get(xdg)
    return (Path(base).expanduser() if base else Path.home() / fallback) / "cockpit"


def cache_dir() -> Path:
    """Per-user cache (demo assets, TRL schema cache). `COCKPIT_CACHE_DIR` overrides."""
    return _user_dir("COCKPIT_CACHE_DIR", "XDG_CACHE_HOME", ".cache")


CONFIG_DIR_ENV = "COCKPIT_CONFIG_DIR"
"""Where the config folder is when it is not ~/.config/cockpit (a read-only HOME)."""


def config_dir() -> Path:
    """Per-user config (own presets and themes, a run's kept secrets). `COCKPIT_CONFIG_DIR` overrides."""
    return _user_dir(CONFIG_DIR_ENV, "XDG_CONFIG_HOME", ".config")


def runs_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The runs folder: an explicit one, else `COCKPIT_RUNS_DIR`, else `./runs` — always absolute:
    the supervisor runs inside the run folder, where a relative path would point elsewhere."""
    if explicit:
        return Path(explicit).expanduser().absolute()
    if os.environ.get("COCKPIT_RUNS_DIR"):
        return Path(os.environ["COCKPIT_RUNS_DIR"]).expanduser().absolute()
    return Path.cwd() / "runs"


def shipped_dir(name: str) -> Path:
    """A folder shipped with cockpit (`presets`, `themes`).

    A wheel carries the repository's top-level folders inside the package as `cockpit/_data/<name>`
    (hatchling's force-include), read through importlib.resources; a source checkout or an editable
    install reads them where they stand, next to the package. Both find the same files.
    """
    packaged = Path(str(resources.files("cockpit").joinpath("_data", name)))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / name


def package_presets_dir() -> Path:
    """Presets shipped with cockpit."""
    return shipped_dir("presets")


def user_presets_dir() -> Path:
    return config_dir() / "presets"
