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
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from cockpit.findings import families, general
from cockpit.findings.kinds import KINDS, FindingKind, kinds_for
from cockpit.findings.model import Check, Finding, Judgement
from cockpit.findings.series import Absent, Quiet, Reader
from cockpit.findings.series import change_start as _change_start
from cockpit.findings.series import edges as _edges
from cockpit.findings.series import fell as _fell
from cockpit.findings.series import fmt as _fmt
from cockpit.findings.series import index_runs as _index_runs
from cockpit.findings.series import level as _level
from cockpit.findings.series import mostly_held as _mostly_held
from cockpit.findings.series import noise as _noise
from cockpit.findings.series import points as _points
from cockpit.findings.series import reward_functions as _reward_functions
from cockpit.findings.series import runs_where as _runs_where
from cockpit.findings.series import sustained as _sustained
from cockpit.metrics.store import MetricStore
from cockpit.trainers.knowledge import metric_family


def judge(store: MetricStore, library: Any = None, trainer: str | None = None, *,
          family: str | None = None) -> list[Finding]:
    """Every finding the data shows, with evidence; one per condition."""
    return judge_run(store, library, trainer, family=family).findings


def judge_run(store: MetricStore, library: Any = None, trainer: str | None = None, *,
              family: str | None = None) -> Judgement:
    """The findings with their evidence, and what was checked to find them."""
    found = examine(store, trainer, family=family)
    return replace(found, findings=[add_evidence(f, library) for f in found.findings])


def detect(store: MetricStore, trainer: str | None = None, *, family: str | None = None,
           views: bool = False) -> list[Finding]:
    """The findings the metrics show, evidence from metrics only (cheap: the supervisor runs it
    every few seconds). `views=True` reads the store's columns without copying them: only for
    the thread that also writes the store (the supervisor), never beside one that appends."""
    return examine(store, trainer, family=family, views=views).findings


def examine(store: MetricStore, trainer: str | None = None, *, family: str | None = None,
            views: bool = False) -> Judgement:
    """Every rule of the run's family (and the general ones) on the metric store: the findings
    (metric evidence only), and for each rule what it checked."""
    keys = store.keys()
    family = family or metric_family(trainer, keys)
    reader = Reader(store, copy=not views)
    found: list[Finding] = []
    checks: list[Check] = []
    for kind in kinds_for(family):
        detector = _DETECTORS.get(kind.name)
        if detector is None:  # made by another kind's rule (overfitting's eval-metric case)
            continue
        got = detector(reader, kind)
        if isinstance(got, Absent):
            checks.append(Check(kind.name, False, 0, str(got)))
        elif isinstance(got, str):
            checks.append(Check(kind.name, True, 0, str(got)))
        else:
            got = collapse(got)
            checks.append(Check(kind.name, True, len(got), "" if got else "quiet"))
            found += got
    points = max((store.count(k) for k in keys), default=0)
    return Judgement(found, checks, family, int(store.last_step or 0), points)


def collapse(found: list[Finding]) -> list[Finding]:
    """One finding per condition: a kind's findings whose windows overlap or touch are one, over
    the whole range (the first one's words, every one's evidence); a whole-run one is said once."""
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.kind, f.steps or (-1, -1))):
        prev = out[-1] if out and out[-1].kind == f.kind else None
        if prev is not None and (prev.steps is None or f.steps is None
                                 or f.steps[0] <= prev.steps[1] + 1):
            steps = None if prev.steps is None or f.steps is None else \
                (prev.steps[0], max(prev.steps[1], f.steps[1]))
            out[-1] = replace(prev, steps=steps, evidence=[*prev.evidence, *f.evidence])
        else:
            out.append(f)
    return out


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
    if finding.kind in ("length_without_reward", "clipping_drags_reward"):
        return _top_rows(library, steps, n, key=lambda r: len(r.get("completion") or ""),
                         what="the longest completions of the window")
    if finding.kind == "kl_spike":
        return _top_rows(library, [s for s in steps if s == finding.steps[0]] or steps[:1], 4, key=_total_reward,
                         what="completions at the first spike")
    if finding.kind in ("rlhf_reward_falling", "ppo_ratio", "value_loss_blowup", "reward_never_pays",
                        "reward_constant", "entropy_collapse", "kl_blowup", "kl_nonzero_at_start"):
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


# -- detectors --------------------------------------------------------------------------------


def _reward_hacking(store: Reader, kind: FindingKind) -> list[Finding] | str:
    t = kind.thresholds
    if isinstance(got := store.pick("reward", need=t["min_points"]), str):
        return got
    _, steps, reward = got
    n = len(steps)
    k = _edges(n, t["edge"])
    early, late = _level(reward[:k]), _level(reward[-k:])
    _, std = store.finite("reward_std") if "reward_std" in store else (None, np.empty(0))
    scale = float(np.median(std[:k])) if len(std) >= k else _noise(reward[:k])
    rise = late - early
    if not (rise > t["reward_rise"] * max(scale, 1e-12) and rise > 0.05 * abs(early)
            and rise > t["reward_sigma"] * max(_noise(reward[:k]), float(np.std(reward[:k])) / 2)):
        # (a reward that is mostly 0 has no median spread: half its standard deviation stands in)
        return Quiet(f"the reward went {_fmt(early)} → {_fmt(late)}: no rise beyond its noise")
    if (t_mean := _welch(reward[:k], reward[-k:])) <= t["reward_sigma"]:
        # The medians of two short windows of a sparse reward (one group a step, most steps paying
        # 0) jump with a single step; the early window's spread alone (0 when it paid nothing) is
        # no measure of that. The means must differ beyond both windows' spread too.
        return Quiet(f"the reward went {_fmt(early)} → {_fmt(late)} (medians of {k} points), its means "
                     f"{_fmt(float(reward[:k].mean()))} → {_fmt(float(reward[-k:].mean()))}: "
                     f"{t_mean:.1f} standard errors apart (fires above {t['reward_sigma']:g})")
    first, last = _change_start(steps, reward, early, late), int(steps[-1])
    why: list[str] = []
    evidence = [_points("reward", steps, reward, int(steps[0]), last)]
    if not isinstance(got := store.pick("completions/mean_length", "completion_length", need=t["min_points"]), str):
        length_key, ls, length = got
        kl = _edges(len(ls), t["edge"])
        l0, l1 = _level(length[:kl]), _level(length[-kl:])
        if l0 > 0 and l1 <= l0 * (1 - t["length_collapse"]):
            why.append(f"completion length collapsed {l0:.0f} → {l1:.0f} tokens")
        elif l0 > 0 and l1 >= l0 * (1 + t["length_balloon"]):
            why.append(f"completion length ballooned {l0:.0f} → {l1:.0f} tokens")
        if why:
            evidence.append(_points(length_key, ls, length, int(ls[0]), last))
    if not isinstance(got := store.pick("entropy", need=t["min_points"]), str):
        _, es, ent = got
        ke = _edges(len(es), t["edge"])
        e0, e1 = _level(ent[:ke]), _level(ent[-ke:])
        if e0 > 0 and e1 <= e0 * (1 - t["entropy_fall"]):
            why.append(f"entropy fell {e0:.3g} → {e1:.3g}")
            evidence.append(_points("entropy", es, ent, int(es[0]), last))
    # rewards/<fn>/mean, or rewards/<fn> in TRL before 0.16
    funcs = _reward_functions(store)
    if len(funcs) >= 2:
        rises = {}
        for key in funcs:
            fs, fv = store.finite(key)
            if len(fs) >= t["min_points"]:
                kf = _edges(len(fs), t["edge"])
                rises[key] = _level(fv[-kf:]) - _level(fv[:kf])
        total = sum(abs(r) for r in rises.values())
        top = max(rises, key=lambda key: rises[key], default=None)
        if top is not None and total > 0 and rises[top] > 0 and rises[top] / total >= t["one_function_share"]:
            name = top[len("rewards/"):].removesuffix("/mean")
            why.append(f"{name} carries {rises[top] / total:.0%} of the rise")
            fs, fv = store.finite(top)
            evidence.append(_points(top, fs, fv, int(fs[0]), last))
    if not why:
        return Quiet(f"the reward rose {_fmt(early)} → {_fmt(late)} with no sign of gaming (length, entropy "
                     "and the reward functions' shares held)")
    summary = (f"reward rose {early:.3g} → {late:.3g} over steps {first}–{last} while "
               + "; ".join(why))
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def _welch(a: np.ndarray, b: np.ndarray) -> float:
    """How many standard errors the mean of `b` is above that of `a` (Welch's t): a difference of
    two windows' levels judged against both windows' spread and size."""
    se = math.sqrt(float(np.var(a, ddof=1)) / len(a) + float(np.var(b, ddof=1)) / len(b))
    rise = float(b.mean() - a.mean())
    return rise / se if se > 0 else (math.inf if rise > 0 else 0.0)


def _above_for(store: Reader, kind: FindingKind, key: str, what: str) -> list[Finding] | str:
    t = kind.thresholds
    if isinstance(got := store.pick(key), str):
        return got
    _, steps, values = got
    want = int(t["for"])
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    if binary and len(values) >= 4 * want:
        # only 0 and 1: one group (or one completion batch) a step, each point a coin toss; a
        # streak of a few is chance, so the window is four times as long
        want *= 4
    elif binary and 0.0 < float(values.mean()) < 1.0 and len(values) >= want:
        return _share_beyond_chance(kind, key, what, steps, values)
    # every `for` logged steps in a row; a finished run with fewer, over all it logged
    n = min(want, max(len(values), store.needs(want)))
    over = f"every {n} logged steps" if n == want else f"the run's {n} logged steps"
    out = []
    for first, last in _sustained(steps, values, t["above"], n):
        inside = (steps >= first) & (steps <= last)
        mean = float(values[inside].mean())
        out.append(Finding(kind.name, (first, last), kind.severity,
                           f"{what}: {key} averaged {_fmt(mean)} over steps {first:,}–{last:,} "
                           f"({int(inside.sum()):,} logged steps; above {t['above']:g} on average over {over})",
                           kind.fix, [_points(key, steps, values, first, last)]))
    if out or not len(values):
        return out or Quiet(f"no {key} points")
    if len(values) < n:
        return Quiet(f"{len(values)} points of {key} (needs {n} in a row, or {store.needs(n)} once the run "
                     "has finished)")
    means = np.convolve(values, np.ones(n) / n, mode="valid")
    top_i = int(np.argmax(means))
    return Quiet(f"the mean of {key} over {n} logged steps in a row peaked at {_fmt(float(means[top_i]))} "
                 f"(steps {int(steps[top_i]):,}–{int(steps[top_i + n - 1]):,}; logged at {len(values):,} steps; "
                 f"fires above {t['above']:g})")


def _share_beyond_chance(kind: FindingKind, key: str, what: str, steps: np.ndarray,
                         values: np.ndarray) -> list[Finding] | str:
    """A series of 0 and 1 too short for four windows (a live run's first steps, one group a
    step): judged over every point it has, its share of 1s above the rule's level by more than 2
    standard errors of a coin toss (1/√n): 3 wasted groups in the first 5 steps is chance, 16 in
    19 is not."""
    above, n = float(kind.thresholds["above"]), len(values)
    hits, bar = int(values.sum()), float(kind.thresholds["above"]) + 1.0 / math.sqrt(n)
    first, last = int(steps[0]), int(steps[-1])
    if hits / n > bar:
        return [Finding(kind.name, (first, last), kind.severity,
                        f"{what}: {key} was 1 at {hits:,} of the {n:,} logged steps {first:,}–{last:,} (each "
                        f"point 0 or 1, one group a step: above {above:g} beyond chance)",
                        kind.fix, [_points(key, steps, values, first, last)])]
    return Quiet(f"{key} was 1 at {hits:,} of {n:,} logged steps (each point 0 or 1: fires above "
                 f"{bar:.0%} until {4 * int(kind.thresholds['for'])} points)")


def _wasted_groups(store: Reader, kind: FindingKind) -> list[Finding] | str:
    return _above_for(store, kind, "frac_reward_zero_std", "groups with one reward for all their completions")


def _clipping(store: Reader, kind: FindingKind) -> list[Finding] | str:
    return _above_for(store, kind, "completions/clipped_ratio", "completions cut at max_completion_length")


def _ppo_ratio(store: Reader, kind: FindingKind) -> list[Finding] | str:
    t = kind.thresholds
    if isinstance(got := store.pick("val/ratio"), str):
        return got
    _, steps, values = got
    away = np.abs(values - 1.0)
    far = away > t["far"]
    extreme = (values >= t["high"]) | (values <= t["low"])
    out = []
    for a, b in _index_runs(far, min(int(t["for"]), int(t["for_extreme"]))):
        if b - a < t["for"] and not extreme[a:b].any():
            continue
        first, last = int(steps[a]), int(steps[b - 1])
        worst = float(values[a:b][np.argmax(away[a:b])])
        why = f"at {b - a} logged steps in a row its distance from one was above {t['far']:g}"
        if b - a < t["for"]:
            why += f", one of them at the PPO article's warning level (above {t['high']:g} or below {t['low']:g})"
        out.append(Finding(kind.name, (first, last), kind.severity,
                           f"val/ratio stayed far from one over steps {first}–{last} (up to {worst:.3g}): {why}",
                           kind.fix, [_points("val/ratio", steps, values, first, last)]))
    if not out and len(values):
        farthest = float(np.max(away))
        if not far.any():
            return Quiet(f"val/ratio stayed within {farthest:.3g} of 1 "
                         f"(fires {t['far']:g} away for {t['for']} logged steps in a row)")
        longest = max(b - a for a, b in _index_runs(far, 1))
        return Quiet(f"val/ratio was more than {t['far']:g} from 1 at {int(far.sum())} logged "
                     f"step{'s' if far.sum() > 1 else ''}, at most {longest} in a row (the farthest "
                     f"{farthest:.3g} away; fires at {t['for']} in a row, or {t['for_extreme']} with one at "
                     f"{t['high']:g} or {t['low']:g})")
    return out


def _rlhf_reward_falling(store: Reader, kind: FindingKind) -> list[Finding] | str:
    t = kind.thresholds
    if isinstance(got := store.pick("objective/rlhf_reward", need=t["min_points"]), str):
        return got
    _, steps, values = got
    k = _edges(len(steps), t["edge"])
    early, late, fell = _fell(values, k, 0.0, t["fall_sigma"])
    n0 = int(t["start"])
    first_level, spread = _level(values[:n0]), _noise(values[:n0])
    if not fell and len(values) > k:
        # a fall inside the early window: the early median is itself below the first points
        bar = first_level - t["fall_sigma"] * max(spread, 1e-12)
        if early < bar and late < bar:
            # from the first point of the early window below the bar
            first, last = int(steps[int(np.argmax(values[:k] < bar))]), int(steps[-1])
            return [Finding(kind.name, (first, last), kind.severity,
                            f"objective/rlhf_reward fell {first_level:.4g} → {late:.4g} over steps {first}–{last}: "
                            f"from the median of its first {n0} logged steps (its early median, {early:.4g}, had "
                            "fallen already) to the late median", kind.fix,
                            [_points("objective/rlhf_reward", steps, values, int(steps[0]), last)])]
    if not fell and len(values) > k:
        # a fall that came back (the penalty of a KL that blew up, until the policy collapsed):
        # most of a stretch of `stretch_share` of the run in a row (at least `stretch_min`) far
        # below the first points, by `stretch_sigma` robust σ of them and `fall_sigma` robust σ of
        # the whole run (first points that happen to agree are no measure of its noise)
        w = max(int(t["stretch_min"]), round(len(values) * t["stretch_share"]))
        gap = max(t["stretch_sigma"] * spread, t["fall_sigma"] * _noise(values))
        under = values < first_level - gap
        if gap > 0 and (stretch := _mostly_held(under, w)) is not None:
            i, j = stretch
            first, last = int(steps[i]), int(steps[j])
            by = (f"{t['stretch_sigma']:g} robust σ of its first {n0} points"
                  if gap == t["stretch_sigma"] * spread else f"{t['fall_sigma']:g} robust σ of the whole run")
            return [Finding(kind.name, (first, last), kind.severity,
                            f"objective/rlhf_reward fell from {first_level:.4g} (the median of its first {n0} "
                            f"logged steps) to a median of {_level(values[i: j + 1]):.4g} over the logged steps "
                            f"{first}–{last} ({int(under[i: j + 1].sum())} of its {j - i + 1} points there below "
                            f"it by more than {by}), and ended at {late:.4g} (the median of its last {k} logged "
                            "steps)", kind.fix,
                            [_points("objective/rlhf_reward", steps, values, int(steps[0]), int(steps[-1]))])]
    if not fell:
        moved = "rose" if late > early else "fell" if late < early else "stayed at"
        return Quiet(f"objective/rlhf_reward {moved} {_fmt(early)} → {_fmt(late)}"
                     + (f", less than {t['fall_sigma']:g} robust σ of its early spread (fires beyond it)"
                        if moved == "fell" else ""))
    first, last = _change_start(steps, values, early, late), int(steps[-1])
    return [Finding(kind.name, (first, last), kind.severity,
                    f"objective/rlhf_reward fell {early:.4g} → {late:.4g} over steps {first}–{last}",
                    kind.fix, [_points("objective/rlhf_reward", steps, values, int(steps[0]), last)])]


def _value_loss_blowup(store: Reader, kind: FindingKind) -> list[Finding] | str:
    t = kind.thresholds
    if isinstance(got := store.pick("loss/value_avg", need=t["min_points"]), str):
        return got
    key, steps, values = got
    k = _edges(len(steps), t["edge"])
    base = _level(np.abs(values[:k]))
    over = np.abs(values) > t["times"] * max(base, 1e-12)
    over[:k] = False
    runs = _runs_where(steps, over, int(t["for"]))
    if not runs:
        return Quiet(f"{key} stayed under {t['times']:g}× its early level {base:.3g} (or above it for fewer than "
                     f"{t['for']} logged steps in a row)")
    first, last = runs[0][0], int(steps[-1])
    peak = float(np.max(np.abs(values[steps >= first])))
    return [Finding(kind.name, (first, last), kind.severity,
                    f"{key} blew up from {base:.3g} to {peak:.3g} (×{peak / max(base, 1e-12):.0f}) "
                    f"from step {first}", kind.fix, [_points(key, steps, values, int(steps[0]), last)])]


_DETECTORS = {
    "reward_hacking": _reward_hacking,
    "wasted_groups": _wasted_groups,
    "clipping": _clipping,
    "ppo_ratio": _ppo_ratio,
    "rlhf_reward_falling": _rlhf_reward_falling,
    "value_loss_blowup": _value_loss_blowup,
    **general.DETECTORS,
    **families.DETECTORS,
}
