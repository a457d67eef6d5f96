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


def export_and_notify(screen, path: str | Path, folder: Path, stem: str = "") -> None:
    """`export_files` from a worker thread, its outcome a notification on `screen` (the live and
    replay screens' export key)."""
    from cockpit.errors import CockpitError

    try:
        written = export_files(path, folder, stem)
    except CockpitError as exc:
        screen.app.call_from_thread(screen.notify, str(exc), title="cannot export", severity="error", timeout=10)
        return
    screen.app.call_from_thread(screen.notify, "\n".join(str(p) for p in written), title="exported", timeout=10)

