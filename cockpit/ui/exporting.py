"""Export from inside the TUI: the same CSV and PNG `cockpit export` writes (metrics.export).

A screen that shows a source hands over its RunData, so the files hold what the plots hold; the
RunData is copied on the UI thread first (`shown`), since the screen keeps applying new journal
lines to it while the worker writes.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cockpit.metrics.rundata import RunData


def export_files(path: str | Path, folder: Path, stem: str = "", data: RunData | None = None,
                 colors: list[tuple[int, int, int]] | None = None) -> list[Path]:
    """Write `<stem>metrics.csv` and `<stem>panels.png` of the source at `path` (as `data` holds
    it, when given) into `folder`, the PNG in `colors` (the screen's palette); blocking
    (matplotlib draws the PNG): call it from a worker.
    Raises CockpitError."""
    from cockpit.metrics.export import export

    csv_out, png_out = folder / f"{stem}metrics.csv", folder / f"{stem}panels.png"
    export(path, csv_out=str(csv_out), png_out=str(png_out), data=data, colors=colors)
    return [csv_out, png_out]


def shown(data: RunData) -> RunData:
    """What an export needs of a RunData a screen keeps updating (label, trainer, metric store),
    as a copy no later journal line changes. Call it on the UI thread."""
    from cockpit.metrics.rundata import RunData

    return RunData(data.label, store=copy.deepcopy(data.store), trainer=data.trainer)


def file_stem(label: str) -> str:
    """A source's label as the start of a file name (`run-a/checkpoint-100` -> `run-a-checkpoint-100-`)."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "replay") + "-"


def export_and_notify(screen, jobs: list[tuple[str | Path, Path, str, RunData | None]]) -> None:
    """`export_files` of each (path, folder, stem, data) from a worker thread, the outcome one
    notification on `screen` (the live and replay screens' export key): the files written, and
    one line per source that could not be. `data`: the RunData the screen shows for `path`."""
    from cockpit.errors import CockpitError
    from cockpit.ui.colors import series_colors

    written: list[Path] = []
    failed: list[str] = []
    colors = screen.app.call_from_thread(series_colors, screen.app)  # the PNG wears the screen's colours
    for path, folder, stem, data in jobs:
        try:
            snapshot = screen.app.call_from_thread(shown, data) if data is not None else None
            written += export_files(path, folder, stem, snapshot, colors)
        except CockpitError as exc:
            failed.append(str(exc))
    if failed:
        screen.app.call_from_thread(screen.notify, "\n".join(failed), title="cannot export",
                                    severity="error", timeout=10)
    if written:
        screen.app.call_from_thread(screen.notify, "\n".join(str(p) for p in written),
                                    title="exported", timeout=10)
