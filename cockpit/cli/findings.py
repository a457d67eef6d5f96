"""`cockpit findings RUN`: what the run's findings are, with their evidence, as text or JSON.

The recorded findings (the supervisor's) and what the judge finds in the data now: a finished run
folder, an output dir, a checkpoint or a trainer_state.json (with its completions parquet) all
work the same way.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import orjson

from cockpit.cli.common import runs_dir as _runs_dir
from cockpit.text import json_safe, one_line

if TYPE_CHECKING:
    from cockpit.findings.model import Judgement
    from cockpit.metrics.rundata import RunData


def cmd_findings(args: argparse.Namespace) -> int:
    from cockpit.findings import report
    from cockpit.metrics.sources import check_path
    from cockpit.run.summaries import resolve_run_or_path

    path = check_path(resolve_run_or_path(args.path, _runs_dir(args)))
    trainers = report.load_trainers(path)  # a script with several Trainers: judged one by one
    judgements = [report.judged_run(data) for data in trainers]
    if args.export_prompts:
        # several Trainers: the prompts of the last one that logged completions
        data = next((d for d in reversed(trainers) if d.library is not None), trainers[-1])
        n = report.export_prompts(data, args.export_prompts)
        print(f"{one_line(args.export_prompts)}: {n} prompts whose whole group got one reward", file=sys.stderr)
    if args.json:
        several = len(trainers) > 1
        found = [{**f.to_record().data, **({"trainer": i + 1} if several else {})}
                 for i, judged in enumerate(judgements) for f in judged.findings]
        checked = judgements[-1].to_json()
        if several:  # the last Trainer's at the top, as for one; each Trainer's in `trainers`
            checked["trainers"] = [{"trainer": i + 1, **j.to_json()} for i, j in enumerate(judgements)]
        document = {"findings": found, "checked": checked}
        try:
            out = orjson.dumps(document, option=orjson.OPT_INDENT_2)
        except TypeError:  # orjson refuses ints past 64 bits (a step from a damaged journal): the stdlib writes them
            import json

            out = json.dumps(document, indent=2, ensure_ascii=True, default=str).encode()
        sys.stdout.buffer.write(json_safe(out.decode()).encode() + b"\n")
        return 0
    if len(trainers) > 1:
        total = sum(len(j.findings) for j in judgements)
        print(f"{one_line(report.run_label(trainers[0]))}: {total} finding{'s' if total != 1 else ''} "
              f"from {len(trainers)} Trainers")
    for data, judged in zip(trainers, judgements, strict=True):
        _print_one(data, judged)
    return 0


def _print_one(data: RunData, judged: Judgement) -> None:
    from cockpit.findings import report

    found = judged.findings
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
