"""`python -m cockpit.runner RUN_DIR [--resume CKPT]` — the training process."""

from __future__ import annotations

import os
import sys

from cockpit.runner.main import main

if __name__ == "__main__":
    code = main()
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        # Several ranks: everything is saved and recorded by now. Skip interpreter teardown,
        # where gloo's C++ threads can abort a rank ("terminate called without an active
        # exception") and make torchrun report a finished run as failed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
