"""`python -m cockpit.runner RUN_DIR [--resume CKPT]` — the training process."""

from __future__ import annotations

import sys

from cockpit.runner.main import main

if __name__ == "__main__":
    sys.exit(main())
