"""Detectors of one trainer family's metrics (the ones `findings/judge.py` has had since the first
kinds live there): GRPO reward functions that never pay or always pay the same, length growing
without reward, entropy collapse, KL blow-up, clipping that drags a reward down; DPO saturation
and chosen log-probs falling; PPO updates too large.

Same contract as `findings/general.py`: findings, or `Quiet` / `Absent` with the one number.
"""

from __future__ import annotations

import numpy as np

from cockpit.findings.kinds import FindingKind
from cockpit.findings.model import Finding
from cockpit.findings.series import (
    Absent,
    Quiet,
    Reader,
    change_start,
    edges,
    fell,
    first_key,
    fmt,
    function_name,
    level,
    mostly_held,
    noise,
    points,
    reward_functions,
)

Outcome = list[Finding] | Quiet | Absent


# -- GRPO --------------------------------------------------------------------------------------


def _functions(r: Reader, kind: FindingKind) -> list[tuple[str, np.ndarray, np.ndarray]] | Absent:
    keys = reward_functions(r)
    if not keys:
        return Absent("no per-function rewards logged (rewards/<fn>/mean or rewards/<fn>)")
    need = r.needs(kind.thresholds["min_points"])
    out = []
    for key in keys:
        s, v = r.finite(key)
        if len(v) >= need:
            out.append((key, s, v))
    return out


def reward_flat(r: Reader, kind: FindingKind) -> Outcome:
    """The reward does not rise beyond its own wander over a long run while the policy moves."""
    t = kind.thresholds
    if isinstance(got := r.pick("reward", need=t["min_points"]), str):
        return got
    _, s, v = got
    n = len(v)
    if float(v.max() - v.min()) <= 1e-12 * max(1.0, abs(float(v[0]))):
        return Quiet(f"the reward is {fmt(float(v[0]))} at every logged step: see reward_constant and wasted_groups")
    moved = _policy_moved(r, t)
    if isinstance(moved, str):
        return moved
    nb = max(2, min(int(t["blocks"]), n // 5))
    starts = (np.arange(nb) * n) // nb  # nb stretches of (nearly) equal length
    sizes = np.diff(np.append(starts, n))
    means = np.add.reduceat(v, starts) / sizes
    rise = float(means[-1] - means[0])
    wander = noise(np.diff(means))
    spread = float(v.max() - v.min())
    bar = max(t["rise_sigma"] * wander, t["rise_share"] * spread)
    first, last = int(s[0]), int(s[-1])
    size = int(sizes[0])
    if rise > bar:
        return Quiet(f"the reward rose {fmt(means[0])} → {fmt(means[-1])} (the means of its first and last "
                     f"{size} logged steps; fires at a rise of {fmt(bar)} or less)")
    epochs = f", {r.epoch:.1f} epochs" if r.epoch else ""
    summary = (f"the reward did not rise over steps {first:,}–{last:,} ({n:,} logged steps{epochs}): its "
               f"mean was {fmt(means[0])} over the first {size} logged steps and {fmt(means[-1])} over the last "
               f"{int(sizes[-1])} logged steps, and the mean of every {size} logged steps stayed between "
               f"{fmt(float(means.min()))} "
               f"and {fmt(float(means.max()))}, while {moved[0]}")
    evidence = [points("reward", s, v, first, last), *moved[1]]
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def _policy_moved(r: Reader, t: dict) -> tuple[str, list[dict]] | Quiet | Absent:
    """("kl grew a → b", its evidence) when the policy moved away from where it started, or why
    the rule stays quiet: a reward that does not rise from a policy that does not move is the
    learning rate's (or beta's) story, not the reward's."""
    said = []
    for key, how in (("kl", "kl_times"), ("entropy", "entropy_move")):
        if key not in r:
            continue
        ks, kv = r.finite(key)
        if len(kv) < 10:
            continue
        k = edges(len(kv), 0.2)
        k0, k1 = level(kv[:k]), level(kv[-k:])
        if key == "kl" and k1 > t[how] * max(k0, 1e-6):
            return (f"kl grew {fmt(k0)} → {fmt(k1)} (the medians of its first and last {k} logged steps)",
                    [points("kl", ks, kv, int(ks[0]), int(ks[-1]))])
        if key == "entropy" and abs(k1 - k0) >= t[how] * max(abs(k0), 1e-6):
            return (f"entropy went {fmt(k0)} → {fmt(k1)} (the medians of its first and last {k} logged steps)",
                    [points("entropy", ks, kv, int(ks[0]), int(ks[-1]))])
        said.append(f"{key} {fmt(k0)} → {fmt(k1)}")
    if not said:
        return Absent("no kl or entropy logged (what shows the policy moved)")
    return Quiet("the policy did not move (" + ", ".join(said) + "): nothing to judge the reward against")


def reward_never_pays(r: Reader, kind: FindingKind) -> Outcome:
    funcs = _functions(r, kind)
    if isinstance(funcs, Absent):
        return funcs
    never = [(k, s, v) for k, s, v in funcs if np.all(v == 0.0)]
    if not never:
        paid = [(function_name(k), float(np.mean(v != 0.0))) for k, s, v in funcs]
        least = min(paid, key=lambda p: p[1], default=None)
        return Quiet(f"every reward function paid something (least often: {least[0]}, at {least[1]:.0%} of "
                     "the logged steps)" if least else "too few reward points")
    return [_per_function(kind, never, len(funcs), "never paid: 0 at every one of {n} logged steps")]


def reward_constant(r: Reader, kind: FindingKind) -> Outcome:
    funcs = _functions(r, kind)
    if isinstance(funcs, Absent):
        return funcs
    same = [(k, s, v) for k, s, v in funcs
            if v[0] != 0.0 and float(v.max() - v.min()) <= 1e-9 * max(1.0, abs(float(v[0])))]
    if not same:
        spread = [(function_name(k), float(v.max() - v.min())) for k, s, v in funcs if not np.all(v == 0.0)]
        least = min(spread, key=lambda p: p[1], default=None)
        return Quiet(f"every paying reward function varies (least: {least[0]}, range {fmt(least[1])})"
                     if least else "no paying reward function to judge")
    return [_per_function(kind, same, len(funcs), "always paid the same: {v} at every one of {n} logged steps")]


def _per_function(kind: FindingKind, hits: list[tuple[str, np.ndarray, np.ndarray]], total: int,
                  what: str) -> Finding:
    first = min(int(s[0]) for _, s, _ in hits)
    last = max(int(s[-1]) for _, s, _ in hits)
    names = [f"{function_name(k)} " + what.format(n=len(v), v=fmt(float(v[0]))) for k, _, v in hits]
    summary = (f"{len(hits)} of {total} reward function{'s' if total > 1 else ''} "
               f"{'teach' if len(hits) > 1 else 'teaches'} nothing: " + "; ".join(names))
    return Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                   [points(k, s, v, first, last) for k, s, v in hits[:4]])


def length_without_reward(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(length := r.pick("completions/mean_length", "completion_length", need=t["min_points"],
                                   what="completion length"), str):
        return length
    if isinstance(reward := r.pick("reward", need=t["min_points"]), str):
        return reward
    key, ls, lv = length
    _, rs, rv = reward
    k = edges(len(lv), t["edge"])
    l0, l1 = level(lv[:k]), level(lv[-k:])
    grow = l1 / l0 - 1 if l0 > 0 else 0.0
    kr = edges(len(rv), t["edge"])
    r0, r1 = level(rv[:kr]), level(rv[-kr:])
    bar = max(t["reward_sigma"] * noise(rv[:kr]), t["reward_share"] * abs(r0), 1e-12)
    if grow < t["grow"]:
        return Quiet(f"{key} went {fmt(l0)} → {fmt(l1)} ({grow:+.0%}; fires at +{t['grow']:.0%})")
    if r1 - r0 > bar:
        return Quiet(f"{key} grew {grow:+.0%}, and the reward rose with it ({fmt(r0)} → {fmt(r1)})")
    first, last = change_start(ls, lv, l0, l1), int(ls[-1])
    summary = (f"completions grew {fmt(l0)} → {fmt(l1)} tokens ({grow:+.0%}) over steps {first:,}–{last:,} "
               f"while the reward went {fmt(r0)} → {fmt(r1)}")
    evidence = [points(key, ls, lv, int(ls[0]), last), points("reward", rs, rv, int(rs[0]), last)]
    for fk in reward_functions(r)[:3]:
        evidence.append(points(fk, *r.finite(fk), int(ls[0]), last))
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def entropy_collapse(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("entropy", "policy/entropy_avg", need=t["min_points"]), str):
        return got
    key, s, v = got
    k = edges(len(v), t["edge"])
    # an entropy that collapsed inside the early window is judged against where it began
    e0, e1 = max(level(v[:k]), level(v[:t["start"]])), level(v[-k:])
    fell = 1 - e1 / e0 if e0 > 0 else 0.0
    if not ((fell >= t["fall"] and e1 < t["below"]) or fell >= t["fall_alone"]):
        return Quiet(f"{key} went {fmt(e0)} → {fmt(e1)} ({-fell:+.0%}; fires at −{t['fall']:.0%} and "
                     f"below {t['below']:g}, or at −{t['fall_alone']:.0%})")
    first, last = change_start(s, v, e0, e1), int(s[-1])
    return [Finding(kind.name, (first, last), kind.severity,
                    f"{key} fell {fmt(e0)} → {fmt(e1)} ({-fell:.0%}) over steps {first:,}–{last:,}",
                    kind.fix, [points(key, s, v, int(s[0]), last)])]


def kl_nonzero_at_start(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("kl", need=3), str):
        return got
    _, s, v = got
    if s[0] > t["within"]:
        return Quiet(f"the first kl is logged at step {int(s[0]):,}, after the policy could move")
    if s[0] <= 1 and v[0] <= t["above"]:
        # logged at the first step, before any update: the policy is the reference there
        return Quiet(f"kl is {fmt(float(v[0]))} at step {int(s[0]):,}, before the first update: the reference is "
                     "the model training starts from")
    start = level(v[:3])
    if start <= t["above"]:
        return Quiet(f"kl starts at {fmt(start)} (fires above {t['above']:g})")
    last = int(s[min(len(s), 10) - 1])
    return [Finding(kind.name, (int(s[0]), int(s[-1])), kind.severity,
                    f"kl is {fmt(float(v[0]))} at step {int(s[0]):,} (median {fmt(start)} over its first 3 logged "
                    "steps, "
                    f"{fmt(level(v))} over the run): the policy had not moved yet",
                    kind.fix, [points("kl", s, v, int(s[0]), max(last, int(s[-1])))])]


def kl_blowup(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("kl", "objective/kl", need=t["min_points"]), str):
        return got
    key, s, v = got
    above = t["above"] if key == "kl" else t["above_sum"]
    per = "" if key == "kl" else " (a sum over each completion's tokens)"
    k = edges(len(v), t["edge"])
    k0, k1 = level(v[:k]), level(v[-k:])
    if k1 > above and k1 > t["times"] * max(k0, 1e-6):
        first, last = change_start(s, v, k0, k1), int(s[-1])
        return [Finding(kind.name, (first, last), kind.severity,
                        f"{key}{per} grew {fmt(k0)} → {fmt(k1)} (×{k1 / max(k0, 1e-6):.0f}) over steps "
                        f"{first:,}–{last:,}", kind.fix, [points(key, s, v, int(s[0]), last)])]
    # A blow-up inside the early window (the early level holds it): judged against the first
    # points, before the policy had moved, from the first point of the early window that crossed
    # the bar, if the median from there to the end stays above it.
    n0 = int(t["start"])
    start = level(v[:n0])
    bar = max(above, t["times"] * max(start, 1e-6))
    crossed = np.nonzero(v[:k] > bar)[0]
    if len(crossed):
        j = int(crossed[0])
        after = level(v[j:])
        if after > bar:
            first, last = int(s[j]), int(s[-1])
            return [Finding(kind.name, (first, last), kind.severity,
                            f"{key}{per} jumped to {fmt(float(v[j]))} at step {first:,} from {fmt(start)} (the median "
                            f"of its first {n0} logged steps) and stayed up: {fmt(after)} (median) over steps "
                            f"{first:,}–{last:,}", kind.fix, [points(key, s, v, int(s[0]), last)])]
    # A blow-up that came back (the policy collapsed, or the penalty pulled it in): a stretch of
    # consecutive points, `stretch_share` of the run and at least `stretch_min`, more than half of
    # them (its median) at ×`stretch_times` the level and ×times the first points or more. Far
    # above the level, not at it: a KL that creeps to about the level stays quiet.
    w = max(int(t["stretch_min"]), round(len(v) * t["stretch_share"]))
    high = max(t["stretch_times"] * above, t["times"] * max(start, 1e-6))
    over = v >= high
    if (stretch := mostly_held(over, w)) is not None:
        i, j = stretch
        first, last = int(s[i]), int(s[j])
        n_over = int(over[i: j + 1].sum())
        return [Finding(kind.name, (first, last), kind.severity,
                        f"{key}{per} stayed far above {above:g} (×{high / above:.2g} or more) at {n_over} of "
                        f"the {j - i + 1} logged steps {first:,}–{last:,} (median {fmt(level(v[i: j + 1]))}); "
                        f"it began at {fmt(start)} (the median of its first {n0} logged steps) and ended at "
                        f"{fmt(k1)} (the median of its last {k} logged steps)",
                        kind.fix, [points(key, s, v, int(s[0]), int(s[-1]))])]
    return Quiet(f"{key}{per} went {fmt(k0)} → {fmt(k1)} (fires above {above:g} and ×{t['times']:g}, or from a "
                 f"jump above {fmt(bar)} in its early window that holds to the end, or at ×{high / above:.2g} "
                 f"that level over most of {w} logged steps in a row)")


def clipping_drags_reward(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("completions/clipped_ratio", need=t["min_points"]), str):
        return got
    _, cs, cv = got
    k = edges(len(cv), t["edge"])
    c0, c1 = level(cv[:k]), level(cv[-k:])
    if c0 >= t["early_below"]:
        return Quiet(f"completions/clipped_ratio was {fmt(c0)} from the start (clipping's, not a change)")
    if c1 - c0 < t["clip_rise"]:
        return Quiet(f"completions/clipped_ratio went {fmt(c0)} → {fmt(c1)} (fires at +{t['clip_rise']:g})")
    worst = None
    for key in reward_functions(r):
        s, v = r.finite(key)
        if len(v) < t["min_points"]:
            continue
        kf = edges(len(v), t["edge"])
        f0, f1 = level(v[:kf]), level(v[-kf:])
        span = max(abs(f0), float(v.max() - v.min()), 1e-12)
        drop = (f0 - f1) / span
        if drop >= t["fall"] and (worst is None or drop > worst[0]):
            worst = (drop, key, s, v, f0, f1)
    if worst is None:
        return Quiet(f"clipping rose {fmt(c0)} → {fmt(c1)}, but no reward function fell with it")
    _, key, s, v, f0, f1 = worst
    first, last = change_start(cs, cv, c0, c1), int(cs[-1])
    summary = (f"completions/clipped_ratio rose {fmt(c0)} → {fmt(c1)} while {function_name(key)} fell "
               f"{fmt(f0)} → {fmt(f1)} over steps {first:,}–{last:,}")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [points("completions/clipped_ratio", cs, cv, int(cs[0]), last),
                     points(key, s, v, int(s[0]), last)])]


# -- DPO and its kin ---------------------------------------------------------------------------


ONLINE_KEYS = ("objective/scores", "val/contain_eos_token")
"""Keys an online preference trainer logs (online DPO, XPO, Nash-MD: it samples its pairs each
step and scores them), an offline one (DPO on a dataset's pairs) does not."""


def chosen_logps_falling(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if any(k in r for k in ONLINE_KEYS):
        # the chosen answers are the policy's own samples, drawn anew each step: their log-probs
        # (sums over the tokens) move with how long and how likely each step's samples are, not
        # with the same answers being pushed down
        return Absent("an online trainer's chosen answers are its own samples of each step, not a dataset's")
    if isinstance(got := r.pick("logps/chosen", "logps_chosen", need=t["min_points"], what="logps/chosen"), str):
        return got
    chosen, cs, cv = got
    c0, c1, c_fell = fell(cv, edges(len(cs), t["edge"]), t["fall"], t["fall_sigma"])
    if not c_fell:
        return Quiet(f"{chosen} went {fmt(c0)} → {fmt(c1)} (fires at a fall of {t['fall']:.0%} of its level "
                     f"and {t['fall_sigma']:g} robust σ)")
    first, last = change_start(cs, cv, c0, c1, over=t["start_over"]), int(cs[-1])
    evidence = [points(chosen, cs, cv, int(cs[0]), last)]
    also = ""
    if not isinstance(rejected := r.pick("logps/rejected", "logps_rejected", need=t["min_points"]), str):
        key, rs, rv = rejected
        k = edges(len(rs), t["edge"])
        r0, r1 = level(rv[:k]), level(rv[-k:])
        also = f"; rejected {fmt(r0)} → {fmt(r1)}"
        evidence.append(points(key, rs, rv, int(rs[0]), last))
    summary = f"the chosen log-probs fell over steps {first:,}–{last:,}: {fmt(c0)} → {fmt(c1)}{also}"
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def _one_side_saturated(r: Reader, kind: FindingKind) -> list[Finding] | None:
    """KTO logs no accuracy, and a batch of its unpaired rows may hold one side only (a paired
    dataset unpaired by the trainer: its chosen rows, then its rejected ones): such a batch logs
    that side's log-probs alone, and its loss is that side's loss. Saturated when, on one side's
    batches, the loss is below the kind's floor from its first half on, at `hold` of them."""
    t = kind.thresholds
    if "loss" not in r:
        return None
    ls, lv = r.finite("loss")
    for what, other in (("rejected", "chosen"), ("chosen", "rejected")):
        key = f"logps/{what}"
        if key not in r:
            continue
        alone = r.finite(key)[0]
        if f"logps/{other}" in r:
            alone = alone[~np.isin(alone, r.finite(f"logps/{other}")[0])]
        on = np.isin(ls, alone)
        steps, loss = ls[on], lv[on]
        n = len(steps)
        if n < t["min_points"]:
            continue
        pinned = loss < t["loss"]
        suffix = np.cumsum(pinned[::-1])[::-1] / (n - np.arange(n))
        ok = np.nonzero((suffix >= t["hold"]) & pinned)[0]
        if not len(ok) or ok[0] > t["early"] * n or n - ok[0] < 3:
            continue
        i = int(ok[0])
        first, last = int(steps[i]), int(ls[-1])
        ks, kv = r.finite(key)
        summary = (f"saturated over steps {first:,}–{last:,} on the batches of {what} answers alone (KTO: "
                   f"each held one side): their loss below {t['loss']:g} at {int(pinned[i:].sum())} of "
                   f"{n - i} points (median {fmt(float(np.median(loss[i:])))}) while {key} went "
                   f"{fmt(float(kv[0]))} → {fmt(float(kv[-1]))}")
        evidence = [points("loss", ls, lv, int(ls[0]), last), points(key, ks, kv, int(ks[0]), last)]
        return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]
    return None


def dpo_saturated(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if "rewards/accuracies" not in r and (one_side := _one_side_saturated(r, kind)):
        return one_side
    if isinstance(base := r.pick("rewards/accuracies", "rewards/margins", need=t["min_points"]), str):
        return base
    acc_key, margin_key = first_key(r, "rewards/accuracies"), first_key(r, "rewards/margins")
    steps = base.steps
    n = len(steps)

    def on_steps(key: str | None) -> np.ndarray | None:
        if key is None or key not in r:
            return None
        s, v = r.finite(key)
        if not len(s):
            return None
        i = np.searchsorted(s, steps).clip(0, len(s) - 1)
        return np.where(s[i] == steps, v[i], np.nan)

    loss, acc, margin = on_steps("loss"), on_steps(acc_key), on_steps(margin_key)
    pinned = np.zeros(n, dtype=bool)
    if loss is not None and acc is not None:
        pinned |= (loss < t["loss"]) & (acc >= t["accuracy"])
    if margin is not None:
        pinned |= margin > t["margin"]
    suffix = np.cumsum(pinned[::-1])[::-1] / (n - np.arange(n))
    ok = np.nonzero((suffix >= t["hold"]) & pinned)[0]
    if not len(ok) or ok[0] > t["early"] * n or n - ok[0] < 3:
        parts = []
        if loss is not None:
            parts.append(f"loss {fmt(float(np.nanmedian(loss[-edges(n, 0.2):])))}")
        if margin is not None:
            parts.append(f"{margin_key} {fmt(float(np.nanmedian(margin[-edges(n, 0.2):])))}")
        return Quiet("late " + ", ".join(parts) + f" (fires below loss {t['loss']:g} with accuracy ≥ "
                     f"{t['accuracy']:g}, or margins above {t['margin']:g}, from the first half on)")
    i = int(ok[0])
    first, last = int(steps[i]), int(steps[-1])
    said = []
    if loss is not None:
        said.append(f"loss {fmt(float(np.nanmedian(loss[i:])))}")
    if acc is not None:
        said.append(f"{acc_key} {fmt(float(np.nanmedian(acc[i:])))}")
    if margin is not None:
        said.append(f"{margin_key} {fmt(float(margin[i]))} → {fmt(float(margin[-1]))}")
    evidence = []
    for key in ("loss", margin_key, acc_key, "logps/rejected", "logps/chosen"):
        if key and key in r:
            evidence.append(points(key, *r.finite(key), int(steps[0]), last))
    rejected = ""
    if "logps/rejected" in r:
        _, rv = r.finite("logps/rejected")
        if len(rv):
            rejected = f"; logps/rejected {fmt(float(rv[0]))} → {fmt(float(rv[-1]))}"
    summary = (f"saturated from step {first:,} of {last:,} (median from then on: {', '.join(said)}{rejected})")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


# -- PPO ---------------------------------------------------------------------------------------


def ppo_update_too_large(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("policy/approxkl_avg", need=int(t["count"])), str):
        return got
    key, s, v = got
    over = v > t["above"]
    n = int(over.sum())
    if n < t["count"]:
        return Quiet(f"{key} peaked at {fmt(float(v.max()))} (step {int(s[int(v.argmax())]):,}; fires above "
                     f"{t['above']:g} at {t['count']} logged steps)")
    hit = s[over]
    first, last = int(hit[0]), int(hit[-1])
    i = int(v.argmax())
    evidence = [points(key, s, v, int(s[0]), int(s[-1]), keep=hit)]
    clip = ""
    if isinstance(c := r.pick("policy/clipfrac_avg"), tuple):
        cs, cv = c[1], c[2]
        at = np.isin(cs, hit)
        if at.any():
            clip = (f"; policy/clipfrac_avg between {fmt(float(cv[at].min()))} and {fmt(float(cv[at].max()))} "
                    "at those steps")
        evidence.append(points(c[0], cs, cv, int(cs[0]), int(cs[-1]), keep=hit))
    return [Finding(kind.name, (first, last), kind.severity,
                    f"{key} was above {t['above']:g} at {n:,} of {len(v):,} logged steps {first:,}–{last:,} "
                    f"(its largest {fmt(float(v[i]))} at step {int(s[i]):,}){clip}",
                    kind.fix, evidence)]


DETECTORS = {
    "reward_flat": reward_flat,
    "reward_never_pays": reward_never_pays,
    "reward_constant": reward_constant,
    "length_without_reward": length_without_reward,
    "entropy_collapse": entropy_collapse,
    "kl_nonzero_at_start": kl_nonzero_at_start,
    "kl_blowup": kl_blowup,
    "clipping_drags_reward": clipping_drags_reward,
    "chosen_logps_falling": chosen_logps_falling,
    "dpo_saturated": dpo_saturated,
    "ppo_update_too_large": ppo_update_too_large,
}
