"""Shared by the command modules. Every user mistake is one line on stderr (one per problem when validation
finds several) and exit code 2."""

from __future__ import annotations

import argparse
from pathlib import Path


def runs_dir(args: argparse.Namespace) -> Path:
    from cockpit.paths import runs_dir

    return runs_dir(getattr(args, "runs_dir", None))


RUNS_DIR_HELP = "folder of runs (default: $COCKPIT_RUNS_DIR or ./runs)"
JSON_HELP = "print JSON instead of a table"
