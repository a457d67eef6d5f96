"""Export from inside the TUI: the same CSV and PNG `cockpit export` writes (core.export)."""

from __future__ import annotations

import re
from pathlib import Path


def export_files(path: str | Path, folder: Path, stem: str = "") -> list[Path]:
    """Write `<stem>metrics.csv` and `<stem>panels.png` of the source at `path` into `folder`;
    blocking (matplotlib draws the PNG): call it from a worker. Raises CockpitError."""
    from cockpit.metrics.export import export

    csv_out, png_out = folder / f"{stem}metrics.csv", folder / f"{stem}panels.png"
    export(path, csv_out=str(csv_out), png_out=str(png_out))
    return [csv_out, png_out]


def file_stem(label: str) -> str:
    """A source's label as the start of a file name (`run-a/checkpoint-100` -> `run-a-checkpoint-100-`)."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "replay") + "-"
