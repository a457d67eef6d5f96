"""`python -m cockpit.supervisor RUN_DIR [--resume CKPT]`: the detached process of one run."""

import sys

from cockpit.supervisor.main import main

sys.exit(main())
