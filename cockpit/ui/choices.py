"""What the user chose in the TUI and should find again next time: the theme picked in the
palette. Kept as JSON in the config dir (`tui.json`); a missing or damaged file is no choice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from cockpit.files import write_atomic
from cockpit.paths import config_dir

CHOICES_FILE = "tui.json"


def _path() -> Path:
    return config_dir() / CHOICES_FILE


def load_choices() -> dict[str, Any]:
    """The kept choices; {} when there are none or the file can't be read as a JSON object."""
    try:
        data = orjson.loads(_path().read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(**choices: Any) -> str | None:
    """Keep these choices beside the others; returns one line naming the problem when the
    config dir can't be written (the TUI says it and goes on)."""
    kept = load_choices()
    kept.update(choices)
    try:
        _path().parent.mkdir(parents=True, exist_ok=True)
        write_atomic(_path(), orjson.dumps(kept, option=orjson.OPT_INDENT_2))
    except OSError as exc:
        return f"could not keep your choice in {_path()}: {exc.strerror or exc}"
    return None
