"""The resume check: after a resume, do the step, the learning-rate schedule and the loss level
carry on from the checkpoint? (huggingface/trl#3247: resumed runs that train worse than
uninterrupted ones.)

Before: the checkpoint's trainer_state.json (its global_step and log_history). After: the first
logged steps of the new attempt, from the journal. Either way one `resume_check` finding, whose
evidence carries both segments' points so a view can overlay them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from cockpit.findings.model import Finding

WANT_POINTS = 3
"""Logged steps after the resume the check waits for (fewer when the attempt ends sooner)."""
_WINDOW = 5


def checkpoint_history(checkpoint: Path) -> tuple[int | None, list[dict[str, Any]]]:
    """(global_step, log_history) of a checkpoint's trainer_state.json; (None, []) without one."""
    try:
        state = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, []
    hist = state.get("log_history") if isinstance(state, dict) else None
    step = state.get("global_step") if isinstance(state, dict) else None
    return (int(step) if isinstance(step, (int, float)) else None), (hist if isinstance(hist, list) else [])


def _points(rows: list[dict[str, Any]], key: str) -> list[list[float]]:
    out = []
    for r in rows:
        v, s = r.get(key), r.get("step")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(s, (int, float)):
            out.append([int(s), float(v)])
    return out


def check(checkpoint: Path, after: list[dict[str, Any]]) -> Finding | None:
    """`after`: the new attempt's logged training rows ({"step", "loss", "learning_rate", ...}), in
    order. None when the checkpoint has no trainer_state.json or nothing was logged after."""
    ckpt_step, history = checkpoint_history(checkpoint)
    if ckpt_step is None or not after:
        return None
    before = [r for r in history if isinstance(r.get("step"), (int, float)) and r["step"] <= ckpt_step]
    problems: list[str] = []
    notes: list[str] = []

    first = int(after[0]["step"])
    if first <= ckpt_step:
        problems.append(f"the step started over at {first} (the checkpoint was at step {ckpt_step})")
    else:
        notes.append(f"step {first} follows {ckpt_step}")

    lr_b, lr_a = _points(before, "learning_rate"), _points(after, "learning_rate")
    if lr_b and lr_a:
        expected = _extrapolate(lr_b, lr_a[0][0])
        got = lr_a[0][1]
        scale = max(abs(expected), abs(lr_b[-1][1]), 1e-30)
        if abs(got - expected) > 0.25 * scale + 1e-15:
            problems.append(f"the learning rate is {got:.3g} at step {lr_a[0][0]} where the schedule gives "
                            f"{expected:.3g} (a scheduler that restarted, or a changed lr/warmup)")
        else:
            notes.append(f"lr {got:.3g} (expected {expected:.3g})")

    loss_b, loss_a = _points(before, "loss"), _points(after, "loss")
    if loss_b and loss_a:
        last = [v for _, v in loss_b[-_WINDOW:]]
        now = [v for _, v in loss_a[:_WINDOW]]
        level, got = statistics.fmean(last), statistics.fmean(now)
        start = statistics.fmean([v for _, v in loss_b[:min(_WINDOW, max(1, len(loss_b) // 4))]])
        spread = statistics.pstdev(last) if len(last) > 1 else 0.0
        learned = start - level
        if learned > 0.1 * abs(level) and got - level > max(0.5 * learned, 3 * spread):
            problems.append(f"the loss jumped back to {got:.3g} from {level:.3g} before the stop (it started "
                            f"at {start:.3g}: the weights or the optimizer state may not have been restored)")
        elif learned <= 0.1 * abs(level) and got > 2 * level + 3 * spread and got - level > 1e-6:
            problems.append(f"the loss is {got:.3g} after the resume against {level:.3g} before")
        else:
            notes.append(f"loss {got:.3g} against {level:.3g} before")

    evidence: list[dict[str, Any]] = [{"type": "file", "path": str(checkpoint / "trainer_state.json"),
                                       "what": "the checkpoint's trainer state"}]
    for key in ("loss", "learning_rate"):
        for segment, rows in (("before", before), ("after", after)):
            pts = _points(rows, key)
            if pts:
                evidence.append({"type": "metric", "key": key, "segment": segment, "points": pts})
    last_after = int(after[-1]["step"])
    if problems:
        return Finding("resume_check", (first, last_after), "warning",
                       f"the resume from {checkpoint.name} did not carry on: " + "; ".join(problems),
                       fix="resume from a complete checkpoint with the same config (learning_rate, "
                           "lr_scheduler_type, warmup, max_steps); `cockpit resume RUN` does", evidence=evidence)
    return Finding("resume_check", (first, last_after), "info",
                   f"the resume from {checkpoint.name} carries on: " + ", ".join(notes), evidence=evidence)


def _extrapolate(points: list[list[float]], step: float) -> float:
    """The value at `step` by a straight line through the last two points (one point: itself)."""
    if len(points) == 1:
        return points[0][1]
    (s1, v1), (s2, v2) = points[-2], points[-1]
    if s2 == s1:
        return v2
    return v2 + (v2 - v1) / (s2 - s1) * (step - s2)
