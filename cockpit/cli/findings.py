"""`cockpit findings RUN`: what the run's findings are, with their evidence, as text or JSON.

The recorded findings (the supervisor's) and what the judge finds in the data now: a finished run
folder, an output dir, a checkpoint or a trainer_state.json (with its completions parquet) all
work the same way.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from cockpit.cli.common import runs_dir as _runs_dir
from cockpit.text import json_safe, one_line


def cmd_findings(args: argparse.Namespace) -> int:
    from cockpit.findings import report
    from cockpit.metrics.sources import check_path
    from cockpit.run.summaries import resolve_run_or_path

    path = check_path(resolve_run_or_path(args.path, _runs_dir(args)))
    data = report.load(path)
    judged = report.judged_run(data)
    found = judged.findings
    if args.export_prompts:
        n = report.export_prompts(data, args.export_prompts)
        print(f"{one_line(args.export_prompts)}: {n} prompts whose whole group got one reward", file=sys.stderr)
    if args.json:
        document = {"findings": [f.to_record().data for f in found], "checked": judged.to_json()}
        try:
            out = orjson.dumps(document, option=orjson.OPT_INDENT_2)
        except TypeError:  # orjson refuses ints past 64 bits (a step from a damaged journal): the stdlib writes them
            import json

            out = json.dumps(document, indent=2, ensure_ascii=True, default=str).encode()
        sys.stdout.buffer.write(json_safe(out.decode()).encode() + b"\n")
        return 0
    print(f"{one_line(data.label)}: {len(found)} finding{'s' if len(found) != 1 else ''}" if found
          else f"{one_line(data.label)}: no findings")
    for f in found:
        print(report.describe(f))
        if f.fix:
            print(f"    fix: {one_line(f.fix)}")
        for line in report.evidence_lines(f):
            print(f"    · {line}")
    for line in report.checked_lines(judged):
        print(one_line(line))
    return 0
