"""The Textual UI. Importing this package is cheap: the app loads on `run_app`.

Never imports torch, transformers, trl, peft or datasets (a test proves it):
the UI reads run folders through cockpit's non-UI packages (run, metrics, config,
trainers), never through the runner.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cockpit.ui.app import Mode


def run_app(mode: Mode = "home", paths: list[str] | None = None, runs_dir: str | None = None) -> int:
    """Run the TUI until the user quits; the exit code for the CLI."""
    from cockpit.ui.app import make_app

    app = make_app(mode, paths or [], runs_dir,
                   theme=os.environ.get("COCKPIT_THEME") or None)
    app.run()
    from cockpit.ui.app import trains_on

    for line in trains_on(app.watched):  # quitting the TUI never stops a run: say so
        print(line, flush=True)
    return int(app.return_code or 0)
