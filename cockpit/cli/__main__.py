"""`python -m cockpit.cli`: the same as the `cockpit` command."""

import sys

from cockpit.cli import main

sys.exit(main())
