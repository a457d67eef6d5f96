"""A run's findings, whatever it is read from: the `finding` records its supervisor wrote, plus
what the judge finds in the data now (a finished run folder, a trainer_state.json and its
completions parquet, a run whose supervisor judged nothing). The CLI and the run screens read
this; the judge is the same one the supervisor calls.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from cockpit.findings.judge import judge_run, new_findings, same_reward_prompts
from cockpit.findings.kinds import WHOLE_RUN
from cockpit.findings.model import Finding, Judgement
from cockpit.findings.series import sample
from cockpit.metrics.rundata import RunData
from cockpit.text import one_line


def recorded(data: RunData) -> list[Finding]:
    return [f for found in by_trainer(data).values() for f in found]


def by_trainer(data: RunData) -> dict[int, list[Finding]]:
    """The recorded findings, Trainer by Trainer (a script's segments; {0: ...} for one): a kind
    said at every checkpoint is one finding a Trainer, and where there are several each finding
    says whose it is ("Trainer 2: ...")."""
    segments = data.finding_segments if len(data.finding_segments) == len(data.findings) else \
        [0] * len(data.findings)
    groups: dict[int, list[Finding]] = {}
    for seg, rec in zip(segments, data.findings, strict=True):
        groups.setdefault(seg, []).append(Finding.from_record(rec))
    several = _several(data, groups)
    return {seg: [_whose(f, seg) if several else f for f in once_per_run(found)]
            for seg, found in sorted(groups.items())}


def _several(data: RunData, groups: dict[int, list[Finding]]) -> bool:
    """A script that built more than one Trainer (one past the first trained, or said something)."""
    return max([data.segment, *groups]) > 0


def _whose(f: Finding, segment: int) -> Finding:
    return replace(f, summary=f"Trainer {segment + 1}: {f.summary}")


def merged_run(data: RunData, judged: list[Finding]) -> list[Finding]:
    """`merged` Trainer by Trainer: what the judge finds in the data now is the newest Trainer's
    (a script's second Trainer rewinds the store over the first's points), so it is merged with
    that Trainer's recorded findings only; no Trainer's finding hides another's."""
    groups = by_trainer(data)
    if not _several(data, groups):
        return merged(groups.get(0, []), judged)
    judged = [_whose(f, data.segment) for f in judged]
    found = [f for seg, fs in groups.items() if seg != data.segment for f in new_findings(fs, [])]
    found += merged(groups.get(data.segment, []), judged)
    return sorted(found, key=lambda f: (f.steps[0] if f.steps else -1, f.kind))


def for_run(data: RunData) -> list[Finding]:
    """What the judge finds in the data now, and the recorded findings it does not say again (a
    live judge saw a window while it grew: the judged one covers it whole; kinds the judge does
    not make stay as recorded), by first step."""
    return judged_run(data).findings


def judged_run(data: RunData) -> Judgement:
    """`for_run`'s findings, with what the judge checked to find them."""
    found = judge_run(data.store, data.library, data.trainer)
    return replace(found, findings=merged_run(data, found.findings))


def merged(recorded: list[Finding], judged: list[Finding]) -> list[Finding]:
    found = judged + new_findings(recorded, judged)
    return sorted(found, key=lambda f: (f.steps[0] if f.steps else -1, f.kind))


def once_per_run(found: list[Finding]) -> list[Finding]:
    """A kind said at every checkpoint (`kinds.WHOLE_RUN`: the model did not change, ...) is one
    condition: one finding over every checkpoint that said it, in the latest one's words and
    evidence; other kinds as they are."""
    groups: dict[str, list[Finding]] = {}
    out: list[Finding] = []
    for f in found:
        if f.kind in WHOLE_RUN:
            if f.kind not in groups:
                out.append(f)  # its place in the list
            groups.setdefault(f.kind, []).append(f)
        else:
            out.append(f)
    for kind, said in groups.items():
        if len(said) < 2:
            continue
        ranges = [f.steps for f in said if f.steps]
        latest = max(said, key=lambda f: f.steps[1] if f.steps else -1)
        steps = (min(a for a, _ in ranges), max(b for _, b in ranges)) if ranges else None
        where = f", steps {steps[0]:,}–{steps[1]:,}" if steps else ""
        one = replace(latest, steps=steps, summary=f"{latest.summary} (said at {len(said)} checkpoints{where})")
        out[next(i for i, f in enumerate(out) if f.kind == kind)] = one
    return out


def load(path: str | os.PathLike[str]) -> RunData:
    """The `RunData` of a run folder, journal, trainer_state.json, checkpoint or output dir."""
    from cockpit.metrics.replay_loader import from_source
    from cockpit.metrics.sources import open_source

    return from_source(open_source(path))


TRAINER_OF = " · Trainer "
"""Between a run's label and which Trainer of a script's several it is (`load_trainers`)."""


def run_label(data: RunData) -> str:
    """The run's label, without which Trainer it is."""
    return data.label.split(TRAINER_OF, 1)[0]


def load_trainers(path: str | os.PathLike[str]) -> list[RunData]:
    """`load`, one `RunData` a Trainer: a script that built several (segments of its journal,
    `metrics.export.journal_segments`) is judged Trainer by Trainer. Judged as one, the second
    Trainer's step 1 rewinds the store over the first's points, and a finding of the first hides
    one of the same kind at the same steps of the second. Anything else: `[load(path)]`."""
    from cockpit.metrics.export import journal_segments
    from cockpit.metrics.replay_loader import from_source
    from cockpit.metrics.sources import open_source

    source = open_source(path)
    parts = journal_segments(list(source.records)) if source.is_journal and source.records else {}
    if len(parts) < 2:
        return [from_source(source)]
    out = []
    for n, seg in enumerate(sorted(parts), 1):
        data = RunData(f"{source.label}{TRAINER_OF}{n} of {len(parts)}", name=source.name,
                       run_dir=source.path.parent)
        data.apply(parts[seg])
        data.segment, data.finding_segments = 0, [0] * len(data.findings)  # one Trainer: its label says which
        data.notes.extend(str(w) for w in source.warnings)
        out.append(data)
    return out


def export_prompts(data: RunData, out: str | os.PathLike[str]) -> int:
    """Every prompt whose whole group got one reward, at any logged step, as JSON lines
    ({"prompt", "steps", "reward"}): the list to filter a GRPO dataset with. Returns how many."""
    from cockpit.errors import CockpitError
    from cockpit.files import write_atomic

    if data.library is None:
        raise CockpitError(f"{data.label}: no completions were logged — the prompts of wasted groups come "
                           "from them (GRPO: log_completions: true)")
    data.library.refresh()
    prompts = same_reward_prompts(data.library, data.library.steps())
    write_atomic(Path(out), b"".join(orjson.dumps(p) + b"\n" for p in prompts))
    return len(prompts)


def describe(f: Finding) -> str:
    """One line for a finding (watch, the CLI), safe for a terminal (`text.one_line`)."""
    where = where_of(f)
    return one_line(f"[{f.severity}] {f.kind} ({where}): {f.summary}")


def checked_lines(judged: Judgement) -> list[str]:
    """What the judge checked: one line for the rules, one a quiet rule with the number that
    kept it quiet, one for the rules the run logged nothing for."""
    out = [judged.checked_line() + (":" if judged.checks else "")]
    width = max((len(c.kind) for c in judged.checks), default=0)
    for kind, note in judged.quiet_notes():
        out.append(f"  quiet  {kind:<{width}}  {note}")
    absent = [c for c in judged.checks if not c.ran]
    if absent:
        out.append("  not run (they read what this run did not log, or do not apply to it): "
                   + ", ".join(c.kind for c in absent))
    return out


def where_of(f: Finding) -> str:
    """"steps 10–250", "step 130" or "whole run"."""
    if f.steps is None:
        return "whole run"
    return f"step {f.steps[0]}" if f.steps[0] == f.steps[1] else f"steps {f.steps[0]}–{f.steps[1]}"


def evidence_lines(f: Finding, *, rows: int = 3) -> list[str]:
    """The evidence in a few lines of plain text, each safe for a terminal (`text.one_line`); a
    piece of evidence of the wrong shape (a hand-edited or damaged journal) is left out."""
    out: list[str] = []
    for ev in f.evidence:
        try:
            out.extend(_evidence(ev, rows))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            continue
    return [one_line(line) for line in out]


def _evidence(ev: dict[str, Any], rows: int) -> list[str]:
    out: list[str] = []
    kind = ev.get("type")
    if kind == "metric":
        pts = ev.get("points") or []
        if pts:
            out.append(f"{ev.get('key')}: {sample(ev)}, {_num(pts[0][1])} at step {pts[0][0]} → "
                       f"{_num(pts[-1][1])} at step {pts[-1][0]}")
    elif kind == "completions":
        for row in (ev.get("rows") or [])[:rows]:
            rewards = " ".join(f"{k}={_num(v)}" for k, v in (row.get("rewards") or {}).items())
            comp = one_line(row.get("completion") or "")[:80]
            out.append(f"step {ev.get('step')}: “{comp}” {rewards}".rstrip())
    elif kind == "prompts":
        shown = [one_line(p)[-60:] for p in (ev.get("prompts") or [])[:rows]]
        out.append(f"{ev.get('count')} prompts, e.g. " + "; ".join(f"“{p}”" for p in shown))
    elif kind == "file":
        out.append(f"{ev.get('what') or 'file'}: {ev.get('path')}")
    return out


def _num(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
