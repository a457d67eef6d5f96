"""Texts you can check (issue 41): every number of every finding the judge makes on a real file —
the labelled corpus (tests/fixtures/real_runs, ../trainer_states), the run folders of
tests/fixtures/findings and the zoo (tests/fixtures/zoo, each run's journal and its
trainer_state.json) — is read back from the series its evidence shows:

- a value ("went 0.2585 → 0.2402", "the largest 63.8") lies within the values of one of the
  finding's evidence series, over the steps that evidence covers (the whole series there, not only
  the points shown: a thinned evidence keeps 60 of them);
- a step ("at step 1,234", "steps 100–200") lies within the steps the evidence covers;
- a count ("at 12 of 400 logged steps", "61 points") is no more than the points the run logged;
- ratios, shares and σ (×4.1, 37%, 8.2 σ) are derived, and thresholds (fires above 0.5) are the
  kind's own numbers: neither is read back.

And the wording the issue asked for: a sample says so ("61 of 2,000 points"), "needs N points",
never "judged from N", and a spread of 0 is said in words, not as a huge σ. Fast: no torch.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cockpit.findings import report
from cockpit.findings.kinds import KINDS
from cockpit.findings.model import Finding
from cockpit.findings.series import MAX_POINTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def sources() -> list[Path]:
    out = sorted((FIXTURES / "real_runs").glob("*.json")) + sorted((FIXTURES / "trainer_states").glob("*.json"))
    out += sorted(p.parent for p in (FIXTURES / "findings").glob("*/events.jsonl"))
    out += sorted((FIXTURES / "findings").glob("*/trainer_state.json"))
    for run in sorted(p.parent for p in (FIXTURES / "zoo").glob("*/events.jsonl")):
        out.append(run)
        if (run / "trainer_state.json").is_file():
            out.append(run / "trainer_state.json")
    return out


NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
DERIVED_AFTER = ("%", " σ", "σ", " robust σ", "×")
COUNT_AFTER = re.compile(r"^\s*(?:of\b|logged|points?\b|times\b|reward functions?\b|burst|steps? \(|checkpoints|"
                         r"prompts|more\b|in a row|blocks?\b|evals?\b|epochs?\b|stretch)")


def _ranges(f: Finding, data) -> tuple[list[tuple[float, float]], tuple[int, int] | None]:
    """The value range of each evidence series over the steps its evidence covers, and the steps
    every evidence covers together."""
    values, lo_step, hi_step = [], None, None
    for ev in f.evidence:
        if ev.get("type") != "metric" or not ev.get("points"):
            continue
        steps = [int(p[0]) for p in ev["points"]]
        a, z = min(steps), max(steps)
        lo_step = a if lo_step is None else min(lo_step, a)
        hi_step = z if hi_step is None else max(hi_step, z)
        s, v = data.store.series(ev["key"])
        inside = (s >= a) & (s <= z) & np.isfinite(v)
        if inside.any():
            values.append((float(v[inside].min()), float(v[inside].max())))
    return values, (lo_step, hi_step) if lo_step is not None and hi_step is not None else None


def _close(x: float, lo: float, hi: float) -> bool:
    tol = max(abs(lo), abs(hi), abs(x)) * 2e-3 + 1e-9  # a summary rounds to 4 significant digits
    return lo - tol <= x <= hi + tol


def problems(f: Finding, data) -> list[str]:
    """Each number of the summary that its evidence does not show."""
    values, span = _ranges(f, data)
    if span is None:
        return []  # a finding about files (weights, a hang): no metric series to read back
    thresholds = {float(v) for v in KINDS[f.kind].thresholds.values() if isinstance(v, (int, float))} \
        if f.kind in KINDS else set()
    logged = max((data.store.count(k) for k in data.store.keys()), default=0)
    epochs = {round(x, 3) for _, a, b in data.store.epoch_falls for x in (a, b)}
    text = f.summary
    bad = []
    prev = ""  # what the number before was: a list of steps goes on after ", "
    for m in NUMBER.finditer(text):
        raw = m.group(0)
        x = float(raw.replace(",", ""))
        before, after = text[max(0, m.start() - 12): m.start()], text[m.end(): m.end() + 16]
        if after.startswith(DERIVED_AFTER) or before.endswith(("×", "x")) or before.endswith("fires at "):
            continue
        if before.endswith("Trainer "):
            continue  # which Trainer of a script's several it is about
        if re.search(r"widened (-?[\d.e-]+ → )?$", before):
            continue  # a gap: the difference of the two series shown (eval − train)
        if re.search(r"(fires (above|below|at)|above|below|under|needs) $", before) and x in thresholds:
            continue
        is_step = re.search(r"(steps?|from step|until the last logged step \() $", before) or \
            re.search(r"\d–$", before) or (prev == "step" and before.endswith(", "))
        prev = "step" if is_step else "value"
        if is_step:
            if not span[0] <= x <= span[1]:
                bad.append(f"step {raw} outside the evidence's steps {span[0]}–{span[1]}")
            continue
        if COUNT_AFTER.match(after) and x == int(x):
            if "epoch" in after[:8]:
                if data.store.epoch is not None and x > data.store.epoch + 1:
                    bad.append(f"{raw} epochs, beyond the run's {data.store.epoch}")
            elif not 0 <= x <= max(logged, 1):
                bad.append(f"count {raw} above the {logged} points the run logged")
            continue
        if "epoch" in after[:8] or round(x, 3) in epochs:
            continue
        if x in thresholds and re.search(r"(above|below|under|fires)", before):
            continue
        if not any(_close(x, lo, hi) for lo, hi in values):
            bad.append(f"{raw} ({before!r}…{after!r}) is in no evidence series ({values})")
    if f.steps is not None and not (span[0] <= f.steps[0] and f.steps[1] <= span[1]):
        bad.append(f"the finding's steps {f.steps} reach beyond its evidence's {span}")
    return bad


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_number_of_every_finding_is_read_back_from_its_evidence(path):
    data = report.load(path)
    judged = report.judged_run(data)
    said = {f"{f.kind} {f.steps}: {f.summary}": problems(f, data) for f in judged.findings}
    assert {k: v for k, v in said.items() if v} == {}


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_words_say_samples_needs_and_spreads_of_zero(path):
    data = report.load(path)
    judged = report.judged_run(data)
    notes = [c.note for c in judged.checks]
    texts = [*notes, *(f.summary for f in judged.findings)]
    assert not [t for t in texts if "judged from" in t], texts
    assert not [t for t in texts if re.search(r"\d{7,}(\.\d+)? robust σ", t)], texts
    for f in judged.findings:
        for ev in f.evidence:
            if ev.get("type") == "metric" and len(ev["points"]) >= MAX_POINTS:
                s, _ = data.store.series(ev["key"])
                a, z = ev["points"][0][0], ev["points"][-1][0]
                total = int(((s >= a) & (s <= z)).sum())
                if total > len(ev["points"]):
                    assert ev.get("of") == total, (f.kind, ev["key"], len(ev["points"]), total)
                    shown = "\n".join(report.evidence_lines(f, rows=0))
                    assert f"of {total:,} points" in shown, shown
