"""The judge: a run's metrics (and completions) in, findings with their evidence out.

One code for every place a finding is made: the supervisor's `FindingsWatcher` calls it on the
live run every few seconds, the replay screen and `cockpit findings` on a finished run folder or a
trainer_state.json. It judges in two passes, so a live run pays for the second only once per new
finding: `detect` reads the metric store alone (numpy over at most a few series); `add_evidence`
reads the completions of the finding's window (the top-rewarded ones, the prompts whose group got
one reward, the longest ones).

Thresholds are data, in `findings/kinds.py`; which kinds apply is the trainer's family, a trait in
`trainers/knowledge.py`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from cockpit.findings.kinds import KINDS, FindingKind, kinds_for
from cockpit.findings.model import Finding
from cockpit.metrics.panels import guess_trainer
from cockpit.metrics.store import MetricStore
from cockpit.trainers.knowledge import traits

MAX_POINTS = 60
"""Metric points kept as evidence per series (evenly picked over the window)."""
EDGE_MAX = 500
"""The most points an early or a late window holds."""
_GUESSED_FAMILY = {"grpo": "grpo", "dpo": "preference", "ppo": "ppo", "sft": "sft"}


def family_of(trainer: str | None, keys: Sequence[str]) -> str | None:
    """The trainer's metric family from the knowledge table; for a script's own Trainer class or a
    trainer_state.json that names none, the family its keys belong to (as the panels guess it)."""
    known = traits((trainer or "").lower().replace("-", "_")).family
    if known:
        return known
    guessed = guess_trainer(list(keys))
    return _GUESSED_FAMILY.get(guessed.removesuffix("-like")) if guessed else None


def judge(store: MetricStore, library: Any = None, trainer: str | None = None, *,
          family: str | None = None) -> list[Finding]:
    """Every finding the data shows, with evidence; deduplicated by identity."""
    found = detect(store, trainer, family=family)
    return [add_evidence(f, library) for f in found]


def detect(store: MetricStore, trainer: str | None = None, *, family: str | None = None,
           views: bool = False) -> list[Finding]:
    """The findings the metrics show, evidence from metrics only (cheap: the supervisor runs it
    every few seconds). `views=True` reads the store's columns without copying them: only for
    the thread that also writes the store (the supervisor), never beside one that appends."""
    family = family or family_of(trainer, store.keys())
    reader = _Reader(store, copy=not views)
    out: dict[tuple, Finding] = {}
    for kind in kinds_for(family):
        for f in _DETECTORS[kind.name](reader, kind):
            out.setdefault(f.identity, f)
    return list(out.values())


def add_evidence(finding: Finding, library: Any) -> Finding:
    """The completions that show a finding: read only for the finding's window."""
    if library is None or finding.steps is None:
        return finding
    kind = KINDS.get(finding.kind)
    if kind is None:
        return finding
    try:
        extra = _completions_evidence(finding, kind, library)
    except Exception:  # noqa: BLE001 - an unreadable completions store leaves the metric evidence
        return finding
    if not extra:
        return finding
    return replace(finding, evidence=[*finding.evidence, *extra])


def _completions_evidence(finding: Finding, kind: FindingKind, library: Any) -> list[dict[str, Any]]:
    assert finding.steps is not None
    library.refresh()
    steps = [s for s in library.steps() if finding.steps[0] <= s <= finding.steps[1]]
    n = int(kind.thresholds.get("evidence_rows", 6))
    if finding.kind == "reward_hacking":
        return _top_rows(library, steps, n, key=_total_reward, what="the highest-rewarded completions of the window")
    if finding.kind == "clipping":
        return _top_rows(library, steps, n, key=lambda r: len(r.get("completion") or ""),
                         what="the longest completions of the window (the clipped ones are among them)")
    if finding.kind == "wasted_groups":
        prompts = same_reward_prompts(library, steps)
        limit = int(kind.thresholds.get("evidence_prompts", 50))
        return [{"type": "prompts", "what": "prompts whose whole group got one reward",
                 "count": len(prompts), "prompts": [p["prompt"] for p in prompts[:limit]]}] if prompts else []
    if finding.kind in ("rlhf_reward_falling", "ppo_ratio", "value_loss_blowup"):
        return _top_rows(library, steps[-1:], 4, key=_total_reward, what="completions at the end of the window")
    return []


def new_findings(found: Iterable[Finding], known: Iterable[Finding]) -> list[Finding]:
    """The findings of `found` not said already: one of the same kind whose step range overlaps
    a known one is the same finding seen again (a live window grows with the run)."""
    seen = list(known)
    out: list[Finding] = []
    for f in found:
        if not any(_same(f, k) for k in seen):
            out.append(f)
            seen.append(f)
    return out


def _same(a: Finding, b: Finding) -> bool:
    if a.kind != b.kind:
        return False
    if a.steps is None or b.steps is None:
        return a.steps == b.steps
    return a.steps[0] <= b.steps[1] and b.steps[0] <= a.steps[1]


# -- completions evidence ---------------------------------------------------------------------


def _total_reward(row: dict[str, Any]) -> float:
    values = [v for v in (row.get("rewards") or {}).values()
              if isinstance(v, (int, float)) and math.isfinite(v)]
    return float(sum(values)) if values else -math.inf


def _evidence_row(row: dict[str, Any]) -> dict[str, Any]:
    rewards = {k: (None if not isinstance(v, (int, float)) or not math.isfinite(v) else v)
               for k, v in (row.get("rewards") or {}).items()}
    return {"prompt": str(row.get("prompt") or "")[-400:], "completion": str(row.get("completion") or "")[:800],
            "rewards": rewards, "advantage": row.get("advantage")}


def _top_rows(library: Any, steps: list[int], n: int, *, key, what: str) -> list[dict[str, Any]]:
    best: list[tuple[float, int, int, dict[str, Any]]] = []
    for step in steps:
        for i, row in enumerate(library.peek(step)):
            best.append((key(row), step, i, row))
        best.sort(key=lambda t: (t[0], t[1]), reverse=True)
        del best[n:]
    by_step: dict[int, list[dict[str, Any]]] = {}
    for _, step, _, row in best:
        by_step.setdefault(step, []).append(_evidence_row(row))
    return [{"type": "completions", "step": step, "what": what, "rows": rows}
            for step, rows in sorted(by_step.items())]


def same_reward_prompts(library: Any, steps: Iterable[int]) -> list[dict[str, Any]]:
    """The prompts whose group (every completion of that prompt at one step) got one reward, with
    the steps it happened at and that reward: the list to filter a dataset with."""
    found: dict[str, dict[str, Any]] = {}
    for step in steps:
        groups: dict[str, list[float]] = {}
        for row in library.peek(step):
            groups.setdefault(str(row.get("prompt") or ""), []).append(_total_reward(row))
        for prompt, rewards in groups.items():
            if len(rewards) >= 2 and max(rewards) - min(rewards) <= 1e-9:
                entry = found.setdefault(prompt, {"prompt": prompt, "steps": [], "reward": rewards[0]})
                entry["steps"].append(step)
                entry["reward"] = rewards[0] if math.isfinite(rewards[0]) else None
    return sorted(found.values(), key=lambda e: -len(e["steps"]))


# -- metric helpers ---------------------------------------------------------------------------


class _Reader:
    """The store as the detectors read it: copies of its columns, or views (`detect(views=True)`)."""

    def __init__(self, store: MetricStore, *, copy: bool) -> None:
        self.store = store
        self.copy = copy

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        return self.store.series(key, copy=self.copy)

    def keys(self) -> list[str]:
        return self.store.keys()

    def __contains__(self, key: object) -> bool:
        return key in self.store


def _series(store: _Reader, key: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite points of a series."""
    steps, values = store.series(key)
    keep = np.isfinite(values)
    if keep.all():
        return steps, values
    return steps[keep], values[keep]


def _edges(n: int, edge: float) -> int:
    """How many points the early and the late window hold: a share of the run, at least 5, at
    most EDGE_MAX (a long run's "late" is its last few hundred steps, not its last fifth)."""
    return max(5, min(round(n * edge), EDGE_MAX))


def _noise(values: np.ndarray) -> float:
    """The spread of a window, robust to a spike: 1.4826 × the median absolute deviation (the
    standard deviation for normal noise)."""
    return 1.4826 * float(np.median(np.abs(values - np.median(values))))


def _points(key: str, steps: np.ndarray, values: np.ndarray, first: int, last: int) -> dict[str, Any]:
    inside = (steps >= first) & (steps <= last)
    s, v = steps[inside], values[inside]
    if len(s) > MAX_POINTS:
        pick = np.unique(np.linspace(0, len(s) - 1, MAX_POINTS).round().astype(int))
        s, v = s[pick], v[pick]
    return {"type": "metric", "key": key, "points": [[int(a), float(b)] for a, b in zip(s, v, strict=True)]}


def _runs_where(steps: np.ndarray, holds: np.ndarray, min_len: int) -> list[tuple[int, int]]:
    """The step ranges where `holds` is true for at least `min_len` logged points in a row."""
    edges = np.diff(np.concatenate(([0], holds.astype(np.int8), [0])))
    starts, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]  # ends: one past the last
    return [(int(steps[a]), int(steps[b - 1])) for a, b in zip(starts, ends, strict=True) if b - a >= min_len]


def _level(values: np.ndarray) -> float:
    return float(np.median(values))


def _change_start(steps: np.ndarray, values: np.ndarray, early: float, late: float) -> int:
    """The step a move from `early` to `late` began: after the last point still on the early side
    of a quarter of the way."""
    mark = early + 0.25 * (late - early)
    before = values <= mark if late > early else values >= mark
    idx = np.nonzero(before)[0]
    i = int(idx[-1]) if len(idx) else 0
    return int(steps[min(i, len(steps) - 1)])


def _key(store: _Reader, *candidates: str) -> str | None:
    return next((k for k in candidates if k in store), None)


# -- detectors --------------------------------------------------------------------------------


def _reward_hacking(store: _Reader, kind: FindingKind) -> list[Finding]:
    t = kind.thresholds
    steps, reward = _series(store, "reward")
    n = len(steps)
    if n < t["min_points"]:
        return []
    k = _edges(n, t["edge"])
    early, late = _level(reward[:k]), _level(reward[-k:])
    _, std = _series(store, "reward_std")
    scale = float(np.median(std[:k])) if len(std) >= k else _noise(reward[:k])
    rise = late - early
    if not (rise > t["reward_rise"] * max(scale, 1e-12) and rise > 0.05 * abs(early)
            and rise > t["reward_sigma"] * _noise(reward[:k])):
        return []
    first, last = _change_start(steps, reward, early, late), int(steps[-1])
    why: list[str] = []
    evidence = [_points("reward", steps, reward, first, last)]
    length_key = _key(store, "completions/mean_length", "completion_length") or "completions/mean_length"
    ls, length = _series(store, length_key)
    if len(ls) >= t["min_points"]:
        kl = _edges(len(ls), t["edge"])
        l0, l1 = _level(length[:kl]), _level(length[-kl:])
        if l0 > 0 and l1 <= l0 * (1 - t["length_collapse"]):
            why.append(f"completion length collapsed {l0:.0f} → {l1:.0f} tokens")
        elif l0 > 0 and l1 >= l0 * (1 + t["length_balloon"]):
            why.append(f"completion length ballooned {l0:.0f} → {l1:.0f} tokens")
        if why:
            evidence.append(_points(length_key, ls, length, first, last))
    es, ent = _series(store, "entropy")
    if len(es) >= t["min_points"]:
        ke = _edges(len(es), t["edge"])
        e0, e1 = _level(ent[:ke]), _level(ent[-ke:])
        if e0 > 0 and e1 <= e0 * (1 - t["entropy_fall"]):
            why.append(f"entropy fell {e0:.3g} → {e1:.3g}")
            evidence.append(_points("entropy", es, ent, first, last))
    # rewards/<fn>/mean, or rewards/<fn> in TRL before 0.16
    funcs = [key for key in store.keys() if key.startswith("rewards/")
             and (key.endswith("/mean") or key.count("/") == 1)]
    if len(funcs) >= 2:
        rises = {}
        for key in funcs:
            fs, fv = _series(store, key)
            if len(fs) >= t["min_points"]:
                kf = _edges(len(fs), t["edge"])
                rises[key] = _level(fv[-kf:]) - _level(fv[:kf])
        total = sum(abs(r) for r in rises.values())
        top = max(rises, key=lambda key: rises[key], default=None)
        if top is not None and total > 0 and rises[top] > 0 and rises[top] / total >= t["one_function_share"]:
            name = top[len("rewards/"):].removesuffix("/mean")
            why.append(f"{name} carries {rises[top] / total:.0%} of the rise")
            fs, fv = _series(store, top)
            evidence.append(_points(top, fs, fv, first, last))
    if not why:
        return []
    summary = (f"reward rose {early:.3g} → {late:.3g} over steps {first}–{last} while "
               + "; ".join(why))
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def _sustained(steps: np.ndarray, values: np.ndarray, above: float, n: int) -> list[tuple[int, int]]:
    """The step ranges where the mean of every `n` logged points in a row is above `above`: a
    noisy ratio (0.5, 1, 0.75, 1 ...) makes one range, not one per dip."""
    if len(values) < n:
        return []
    means = np.convolve(values, np.ones(n) / n, mode="valid")  # means[i]: points i .. i+n-1
    out: list[tuple[int, int]] = []
    for first, last in _runs_where(steps[n - 1:], means > above, 1):
        start = int(steps[int(np.searchsorted(steps, first)) - (n - 1)])
        out.append((start, last))
    return out


def _above_for(store: _Reader, kind: FindingKind, key: str, what: str) -> list[Finding]:
    t = kind.thresholds
    steps, values = _series(store, key)
    out = []
    for first, last in _sustained(steps, values, t["above"], int(t["for"])):
        inside = (steps >= first) & (steps <= last)
        mean = float(values[inside].mean())
        out.append(Finding(kind.name, (first, last), kind.severity,
                           f"{what}: {key} averaged {mean:.2f} over steps {first}–{last} "
                           f"(above {t['above']:g} on average over every {int(t['for'])} logged steps)",
                           kind.fix, [_points(key, steps, values, first, last)]))
    return out


def _wasted_groups(store: _Reader, kind: FindingKind) -> list[Finding]:
    return _above_for(store, kind, "frac_reward_zero_std", "groups with one reward for all their completions")


def _clipping(store: _Reader, kind: FindingKind) -> list[Finding]:
    return _above_for(store, kind, "completions/clipped_ratio", "completions cut at max_completion_length")


def _fell(values: np.ndarray, k: int, share: float, sigma: float) -> tuple[float, float, bool]:
    early, late = _level(values[:k]), _level(values[-k:])
    noise = _noise(values[:k])
    return early, late, (early - late) > max(share * abs(early), sigma * noise, 1e-12)


def _logps_falling(store: _Reader, kind: FindingKind) -> list[Finding]:
    t = kind.thresholds
    chosen = _key(store, "logps/chosen", "logps_chosen")
    rejected = _key(store, "logps/rejected", "logps_rejected")
    if chosen is None or rejected is None:
        return []
    cs, cv = _series(store, chosen)
    rs, rv = _series(store, rejected)
    if min(len(cs), len(rs)) < t["min_points"]:
        return []
    c0, c1, c_fell = _fell(cv, _edges(len(cs), t["edge"]), t["fall"], t["fall_sigma"])
    r0, r1, r_fell = _fell(rv, _edges(len(rs), t["edge"]), t["fall"], t["fall_sigma"])
    if not (c_fell and r_fell):
        return []
    first, last = _change_start(cs, cv, c0, c1), int(max(cs[-1], rs[-1]))
    summary = (f"both log-probs fell over steps {first}–{last}: chosen {c0:.4g} → {c1:.4g}, "
               f"rejected {r0:.4g} → {r1:.4g}")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [_points(chosen, cs, cv, first, last), _points(rejected, rs, rv, first, last)])]


def _ppo_ratio(store: _Reader, kind: FindingKind) -> list[Finding]:
    t = kind.thresholds
    steps, values = _series(store, "val/ratio")
    out = []
    for first, last in _runs_where(steps, np.abs(values - 1.0) > t["far"], int(t["for"])):
        inside = (steps >= first) & (steps <= last)
        worst = float(values[inside][np.argmax(np.abs(values[inside] - 1.0))])
        out.append(Finding(kind.name, (first, last), kind.severity,
                           f"val/ratio stayed far from 1 over steps {first}–{last} (up to {worst:.3g})",
                           kind.fix, [_points("val/ratio", steps, values, first, last)]))
    return out


def _rlhf_reward_falling(store: _Reader, kind: FindingKind) -> list[Finding]:
    t = kind.thresholds
    steps, values = _series(store, "objective/rlhf_reward")
    if len(steps) < t["min_points"]:
        return []
    early, late, fell = _fell(values, _edges(len(steps), t["edge"]), 0.0, t["fall_sigma"])
    if not fell:
        return []
    first, last = _change_start(steps, values, early, late), int(steps[-1])
    return [Finding(kind.name, (first, last), kind.severity,
                    f"objective/rlhf_reward fell {early:.4g} → {late:.4g} over steps {first}–{last}",
                    kind.fix, [_points("objective/rlhf_reward", steps, values, first, last)])]


def _value_loss_blowup(store: _Reader, kind: FindingKind) -> list[Finding]:
    t = kind.thresholds
    key = _key(store, "loss/value_avg")
    if key is None:
        return []
    steps, values = _series(store, key)
    if len(steps) < t["min_points"]:
        return []
    k = _edges(len(steps), t["edge"])
    base = _level(np.abs(values[:k]))
    over = np.abs(values) > t["times"] * max(base, 1e-12)
    over[:k] = False
    runs = _runs_where(steps, over, 1)
    if not runs:
        return []
    first, last = runs[0][0], int(steps[-1])
    peak = float(np.max(np.abs(values[steps >= first])))
    return [Finding(kind.name, (first, last), kind.severity,
                    f"{key} blew up from {base:.3g} to {peak:.3g} (×{peak / max(base, 1e-12):.0f}) "
                    f"from step {first}", kind.fix, [_points(key, steps, values, int(steps[0]), last)])]


_DETECTORS = {
    "reward_hacking": _reward_hacking,
    "wasted_groups": _wasted_groups,
    "clipping": _clipping,
    "logps_falling": _logps_falling,
    "ppo_ratio": _ppo_ratio,
    "rlhf_reward_falling": _rlhf_reward_falling,
    "value_loss_blowup": _value_loss_blowup,
}
