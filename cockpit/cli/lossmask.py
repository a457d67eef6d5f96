"""`cockpit lossmask PRESET [--rows N] [--set K=V] [--json]`: before launch, a few training rows of
an SFT preset with the tokens the loss trains on marked, and what max_length cuts. It answers "is
`assistant_only_loss` doing what I think?" with TRL's own preparation of the rows."""

from __future__ import annotations

import argparse
import json
import sys

from cockpit.errors import CockpitError

MARK = ("[", "]")
"""Around each run of trained tokens, for a terminal without colour (and for copy-paste)."""


def cmd_lossmask(args: argparse.Namespace) -> int:
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.config.validate import validate
    from cockpit.findings import sft_data

    if args.rows < 1:
        raise CockpitError(f"--rows {args.rows}: give at least 1")
    plan = validate(apply_overrides(load_preset(args.preset), args.set or []))
    if not sft_data.is_sft(plan.spec.name):
        raise CockpitError(f"the loss mask is for SFT presets; {args.preset} trains {plan.spec.name}, "
                           "whose trainer builds its own batches")
    probe = sft_data.probe(sft_data.request_for(plan.preset.trl, plan.preset.cockpit,
                                                plan.spec.to_json(with_fields=False), rows=args.rows))
    if args.json:
        json.dump({"summary": sft_data.mask_summary(probe), "truncation": probe.truncation,
                   "packing": probe.packing, "rows": probe.rows}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"{sft_data.mask_summary(probe)}\n{sft_data.truncation_line(probe)}\n")
    packing = sft_data.packing_line(probe)
    if packing:
        out.write(packing + "\n")
    out.write(f"trained tokens are between {MARK[0]} and {MARK[1]}; ✂ marks where max_length cuts a row\n")
    for row in probe.rows:
        trained = sum(1 for _, t in row["tokens"] if t)
        out.write(f"\n── row {row['index']}: {trained} of {row['length']} tokens trained\n")
        out.write(sft_data.render_row(row, marked=MARK[0], end=MARK[1]) + "\n")
    return 0
