"""Themes as data files: the shipped `themes/` folder and the user's theme folder.

A theme file is TOML or YAML whose keys are the fields of `textual.theme.Theme`
(name, primary, secondary, accent, warning, error, success, foreground,
background, surface, panel, boost, dark, luminosity_spread, text_alpha) plus an
optional `variables` table. A file that does not parse or names no valid
colours is skipped and reported; the app falls back to a built-in theme.
"""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from cockpit.files import safe_load
from cockpit.paths import config_dir, shipped_dir

DEFAULT_THEME = "cockpit-night"
_SUFFIXES = (".toml", ".yaml", ".yml")
_FIELDS = {f.name for f in fields(Theme)}
_COLOR_FIELDS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground",
                 "background", "surface", "panel", "boost")


def shipped_themes_dir() -> Path:
    """Themes shipped with cockpit (the repository's top-level `themes/`, packaged in a wheel)."""
    return shipped_dir("themes")


def user_themes_dir() -> Path:
    return config_dir() / "themes"


class ThemeFileError(ValueError):
    """A theme file that cannot become a Theme; the message names the problem."""


def theme_from_dict(obj: Any, *, where: str) -> Theme:
    if not isinstance(obj, dict):
        raise ThemeFileError(f"{where}: expected a table of theme fields")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise ThemeFileError(f"{where}: unknown key(s) {', '.join(unknown)} — "
                             f"theme keys are {', '.join(sorted(_FIELDS))}")
    if not isinstance(obj.get("name"), str) or not obj["name"].strip():
        raise ThemeFileError(f"{where}: needs a name")
    if not isinstance(obj.get("primary"), str):
        raise ThemeFileError(f"{where}: needs a primary colour")
    for key in _COLOR_FIELDS:
        value = obj.get(key)
        if value is None:
            continue
        try:
            Color.parse(value)
        except (ColorParseError, TypeError, ValueError):
            raise ThemeFileError(f"{where}: {key} = {value!r} is not a colour") from None
    variables = obj.get("variables") or {}
    if not isinstance(variables, dict):
        raise ThemeFileError(f"{where}: variables must be a table")
    kwargs = dict(obj)
    kwargs["variables"] = {str(k): str(v) for k, v in variables.items()}
    try:
        return Theme(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ThemeFileError(f"{where}: {exc}") from None


def load_theme_file(path: Path) -> Theme:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ThemeFileError(f"{path.name}: cannot read ({exc.strerror})") from None
    try:
        if path.suffix == ".toml":
            obj = tomllib.loads(raw.decode("utf-8-sig"))
        else:  # the one YAML dialect the cockpit reads (YAML 1.2 scalars, bounded aliases)
            obj = safe_load(raw.decode("utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise ThemeFileError(f"{path.name}: not valid {path.suffix[1:].upper()} "
                             f"({str(exc).splitlines()[0][:80]})") from None
    except Exception as exc:  # noqa: BLE001 - yaml's errors have no common ValueError base
        raise ThemeFileError(f"{path.name}: not valid YAML ({str(exc).splitlines()[0][:80]})") \
            from None
    return theme_from_dict(obj, where=path.name)


def load_themes(folders: list[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """Every theme of the folders (shipped first, then the user's, which may override), and
    one line per file that failed."""
    errors: list[str] = []
    if folders is None:
        folders = [shipped_themes_dir(), user_themes_dir()]
        if not folders[0].is_dir():  # a broken install: say so instead of falling back in silence
            errors.append(f"the shipped themes are missing ({folders[0]}) — reinstall cockpit")
    themes: dict[str, Theme] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in _SUFFIXES or not path.is_file():
                continue
            try:
                theme = load_theme_file(path)
            except ThemeFileError as exc:
                errors.append(str(exc))
                continue
            themes[theme.name] = theme
    return list(themes.values()), errors
