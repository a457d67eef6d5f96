"""The detectors every trainer gets (the `general` family of `findings/kinds.py`): nothing
trains, a learning rate of 0, a warm-up longer than the run, a schedule that restarted,
overfitting (or an eval metric that still improves while the eval loss rises), a widening
train–eval gap, and spikes in the loss, the gradient norm and the KL.

Each detector takes the store (through `series.Reader`) and its kind, and returns its findings,
or `Quiet` (the one number that kept it quiet) or `Absent` (what it needs that the run did not
log), so a run that gets no finding still says what was checked.
"""

from __future__ import annotations

import re

import numpy as np

from cockpit.findings.kinds import KINDS, FindingKind
from cockpit.findings.model import Finding
from cockpit.findings.series import (
    Absent,
    Quiet,
    Reader,
    edges,
    fmt,
    index_runs,
    interval,
    merge_ranges,
    noise,
    points,
)

Outcome = list[Finding] | Quiet | Absent


# -- nothing trains, LR 0, warm-up, schedule restarts ------------------------------------------


def nothing_trains(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    keys = [k for k in ("loss", "grad_norm") if k in r]
    if not keys:
        return Absent("no loss or grad_norm logged")
    # A GRPO-style loss is 0 by construction at beta 0 (and rounded to 4 digits): a loss of 0
    # says nothing while the gradient norm moves, or when only a reward shows training.
    def zero_loss_counts() -> bool:
        return _all_zero(r, "grad_norm") if "grad_norm" in r else "reward" not in r

    said: list[str] = []
    evidence = []
    first = last = None
    quiet = ""
    for key in keys:
        steps, raw = r.series(key)
        n = len(raw)
        if n < t["min_points"]:
            continue
        finite = np.isfinite(raw)
        tail = int(t["nan_tail"])
        what = ""
        a = int(steps[0])
        if not finite[-tail:].any():
            i = n - int(np.argmax(finite[::-1])) if finite.any() else 0  # the first point of the non-finite tail
            a = int(steps[i])
            bad = "NaN" if np.isnan(raw[-1]) else str(raw[-1])
            what = f"{key} is {bad} from step {a:,} to the end ({n - i} logged points)"
        else:
            v = raw[finite]
            zeros = int(np.count_nonzero(v == 0.0))
            if zeros >= t["zero_share"] * n and (key != "loss" or zero_loss_counts()):
                what = f"{key} is exactly 0 at {zeros} of {n} logged points"
            elif n >= t["constant_points"] and finite.all() and v.min() == v.max() and v[0] != 0.0:
                what = f"{key} is {fmt(float(v[0]))} at every one of {n} logged points"
            elif not quiet:
                quiet = (f"{key} moves ({fmt(float(v.min()))} … {fmt(float(v.max()))}, "
                         f"{n - int(finite.sum())} non-finite)")
        if what:
            said.append(what)
            evidence.append(points(key, steps, raw, a, int(steps[-1])))
            first = a if first is None else min(first, a)
            last = int(steps[-1]) if last is None else max(last, int(steps[-1]))
    if not said:
        return Quiet(quiet or f"fewer than {t['min_points']} points of {' or '.join(keys)}")
    assert first is not None and last is not None
    fix = kind.fix
    spread = _zero_spread(r)
    if spread is not None:
        said.append(spread[0])
        evidence.append(spread[1])
        fix = ZERO_SPREAD_FIX
    return [Finding(kind.name, (first, last), kind.severity, "; ".join(said), fix, evidence)]


ZERO_SPREAD_FIX = ("every group of completions got one reward for all its members, so every advantage is 0 and "
                   "nothing is learnt: the cause is the reward functions or the prompts, not the optimizer. Run "
                   "the reward functions on a few completions (do they ever pay, or always pay the same?), drop "
                   "the prompts whose groups all get one reward (cockpit findings RUN --export-prompts FILE), "
                   "or raise num_generations or the sampling temperature")
"""nothing_trains's fix when the data shows why: every GRPO group had zero reward spread."""


def _zero_spread(r: Reader) -> tuple[str, dict] | None:
    """("every group had zero reward spread at N of M logged steps", its evidence) when nearly
    every group of a GRPO run got one reward (frac_reward_zero_std at 0.9 or more at 90% of the
    logged steps), else None."""
    if "frac_reward_zero_std" not in r:
        return None
    s, v = r.finite("frac_reward_zero_std")
    if len(v) < 5:
        return None
    full = int(np.count_nonzero(v >= 0.9))
    if full < 0.9 * len(v):
        return None
    high = v[v >= 0.9]
    lo, hi = float(high.min()), float(high.max())
    level = fmt(lo) if lo == hi else f"between {fmt(lo)} and {fmt(hi)}"
    return (f"frac_reward_zero_std is {level} at {full} of {len(v)} logged steps (every group got one reward)",
            points("frac_reward_zero_std", s, v, int(s[0]), int(s[-1])))


def nonfinite_values(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    tail = int(KINDS["nothing_trains"].thresholds["nan_tail"])
    bad_steps: list[np.ndarray] = []
    by_key: list[tuple[str, int]] = []
    logged = 0  # the logged steps: as many as the longest series has
    for key in r.keys():
        if key.endswith(_NOT_METRICS):
            continue
        steps, raw = r.series(key)
        logged = max(logged, len(steps))
        if np.isfinite(raw.sum()):  # one pass: a sum is finite only when every value is
            continue
        bad = ~np.isfinite(raw)
        if key in ("loss", "grad_norm") and bad[-tail:].all():
            continue  # diverged for good: nothing_trains says it
        bad &= steps > t["calibration"]  # fp16's loss scaler skips overflowed steps while it calibrates
        if not bad.any():
            continue
        bad_steps.append(steps[bad])
        by_key.append((key, int(bad.sum())))
    if not logged:
        return Absent("no metric logged")
    at = np.unique(np.concatenate(bad_steps)) if bad_steps else np.empty(0, dtype=np.int64)
    if len(at) < t["count"] or len(at) < t["share"] * logged:
        return Quiet(f"NaN/inf at {len(at)} of {logged} logged steps (fires at {t['count']} and {t['share']:.0%})")
    shown = ", ".join(f"{int(s):,}" for s in at[:8]) + (f" and {len(at) - 8} more" if len(at) > 8 else "")
    keys = ", ".join(f"{k} ×{n}" for k, n in sorted(by_key, key=lambda kn: -kn[1])[:6])
    summary = f"NaN or inf at {len(at)} of {logged} logged steps (steps {shown}): {keys}"
    evidence = []
    for key, _ in sorted(by_key, key=lambda kn: -kn[1])[:3]:
        steps, raw = r.series(key)
        evidence.append(points(key, steps, raw, int(steps[0]), int(steps[-1]), keep=steps[~np.isfinite(raw)]))
    return [Finding(kind.name, (int(at[0]), int(at[-1])), kind.severity, summary, kind.fix, evidence)]


def loss_rises_in_warmup(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if _rl(r):
        # GRPO's loss is β·KL plus a term that averages to 0: it rises as the policy leaves the
        # reference, whatever the learning rate does (its spikes are kl_spike's).
        return Absent("an RL trainer's loss measures no fit to data")
    if isinstance(rate := r.pick("learning_rate", need=3), str):
        return rate
    if isinstance(loss := r.pick("loss", need=3), str):
        return loss
    _, ls, lr = rate
    _, ts, tv = loss
    peak_i = int(np.argmax(lr))
    peak, peak_step = float(lr[peak_i]), int(ls[peak_i])
    if peak <= 0 or lr[0] > t["cold"] * peak:
        return Quiet("no warm-up (the learning rate starts at its peak)")
    before = tv[ts < peak_step]
    if not len(before):
        return Quiet(f"no loss logged before the learning rate's peak (step {peak_step:,})")
    low = float(before.min())
    at = int(np.searchsorted(ts, peak_step))
    around = tv[at: at + int(t["around"])]
    if len(around) < t["around"] or peak_i == len(lr) - 1:
        return Quiet(f"the learning rate is still at its peak (step {peak_step:,}): judged once it decays")
    level = float(np.median(around))
    rise = level / low - 1 if low > 0 else 0.0
    # per-step noise is no rise: the loss's step-to-step spread before the peak
    wobble = t["sigma"] * noise(np.diff(before)) / np.sqrt(2) if len(before) >= 5 else 0.0
    if rise < t["rise"] or level - low <= wobble:
        return Quiet(f"around the learning rate's peak (step {peak_step:,}) the loss is {rise:+.0%} from its lowest "
                     f"before it (fires at +{t['rise']:.0%})")
    first = int(ts[int(np.argmin(np.where(ts < peak_step, tv, np.inf)))])
    last = int(ts[min(at + int(t["around"]), len(ts)) - 1])
    summary = (f"the train loss rose {fmt(low)} → {fmt(level)} ({rise:+.0%}) while the learning rate warmed up to "
               f"{fmt(peak)} (step {peak_step:,})")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [points("loss", ts, tv, int(ts[0]), last), points("learning_rate", ls, lr, int(ls[0]), last)])]


def _all_zero(r: Reader, key: str) -> bool:
    _, v = r.series(key)
    return bool(len(v)) and bool(np.all(v[np.isfinite(v)] == 0.0))


def lr_zero(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("learning_rate", need=t["min_points"], raw=True), str):
        return got
    _, steps, lr = got
    n = len(lr)
    zero = lr == 0.0
    lead = int(np.argmax(~zero)) if (~zero).any() else n  # the warm-up's first points start at 0
    body = zero.copy()
    total = r.max_steps or int(steps[-1])
    if lead < n and int(steps[lead - 1 if lead else 0]) <= max(t["lead_steps"], 0.1 * total):
        body[:lead] = False
    body[-1] = False  # a linear decay ends at 0
    count = int(body.sum())
    if count < max(2, t["share"] * n):
        return Quiet(f"learning_rate is above 0 (peak {fmt(float(np.nanmax(lr)))}) at {n - int(zero.sum())} "
                     f"of {n} points")
    idx = np.nonzero(body)[0]
    a, b = int(steps[idx[0]]), int(steps[idx[-1]])
    summary = (f"learning_rate is 0 at {count} of {n} logged points"
               + (" — the whole run" if count >= n - 2 else f", steps {a:,}–{b:,}"))
    return [Finding(kind.name, (a, b), kind.severity, summary, kind.fix,
                    [points("learning_rate", steps, lr, int(steps[0]), int(steps[-1]))])]


def warmup_longer_than_run(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(got := r.pick("learning_rate", need=t["min_points"], raw=True), str):
        return got
    _, steps, lr = got
    n = len(lr)
    peak_i = int(np.nanargmax(lr)) if np.isfinite(lr).any() else 0
    peak_at = int(steps[peak_i])
    last = int(steps[-1])
    d = np.diff(lr)
    moved = d[d != 0]
    rising = float(np.mean(moved > 0)) if len(moved) else 0.0
    if r.max_steps is None:
        return Quiet("max_steps is not known: a warm-up may still end")
    ended = last >= t["near_end"] * r.max_steps
    if not (len(moved) >= 2 and rising >= t["rising_share"] and peak_i >= n - 2 and lr[-1] > lr[0] and ended):
        share = f" ({peak_at / last:.0%} of the run)" if last > 0 else ""
        if not ended and peak_i >= n - 2:
            return Quiet(f"still warming up at step {last:,} of {r.max_steps:,}")
        return Quiet(f"the learning rate peaked at step {peak_at:,}{share}")
    total = f" of max_steps {r.max_steps:,}" if r.max_steps else ""
    summary = (f"the learning rate rose until the last logged step ({last:,}{total}): "
               f"{fmt(float(lr[0]))} → {fmt(float(lr[-1]))}, never reaching a peak to decay from")
    return [Finding(kind.name, (int(steps[0]), last), kind.severity, summary, kind.fix,
                    [points("learning_rate", steps, lr, int(steps[0]), last)])]


def schedule_restart(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    falls = r.epoch_falls
    said, evidence, marks_at = [], [], []
    if "learning_rate" in r:
        steps, lr = r.finite("learning_rate")
        got = _lr_restarts(steps, lr, t) if len(lr) >= 3 else None
        if got is not None:
            text, marks = got
            said.append(f"the learning rate went back up after decaying: {text}")
            evidence.append(points("learning_rate", steps, lr, int(steps[0]), int(steps[-1]), keep=steps[marks]))
            marks_at += [int(steps[marks[0]]), int(steps[marks[-1]])]
    elif not falls:
        return Absent("no learning_rate logged")
    lr_restarted = bool(said)
    if falls:
        shown = "; ".join(f"{fmt(a)} → {fmt(b)} at step {s:,}" for s, a, b in falls[:10])
        more = f" (and {len(falls) - 10} more)" if len(falls) > 10 else ""
        times = f"{len(falls)} times" if len(falls) > 1 else "once"
        said.append(f"the epoch fell back {times} while the step went on: {shown}{more}")
        marks_at += [falls[0][0], falls[-1][0]]
        if not lr_restarted and "learning_rate" in r:
            ls, lv = r.finite("learning_rate")
            said.append(_lr_held(ls, lv))
            if len(lv):
                evidence.append(points("learning_rate", ls, lv, int(ls[0]), int(ls[-1])))
    if not said:
        return Quiet("the learning rate never rose back after decaying, and the epoch never fell back")
    fix = kind.fix if lr_restarted else EPOCH_FIX
    return [Finding(kind.name, (min(marks_at), max(marks_at)), kind.severity, "; ".join(said), fix, evidence)]


EPOCH_FIX = ("the epoch counter started over while the step went on, and the learning rate did not restart: "
             "the data changed under the run (a resume on a dataset of another size counts its epochs anew), "
             "the run was resumed without its trainer state (the data loader began the data again), or a "
             "streaming dataset's epochs were counted anew. Resume on the same data with "
             "resume_from_checkpoint=<the checkpoint> so it goes on where it stopped; with an IterableDataset, "
             "set max_steps and read the epoch as passes over the stream")
"""schedule_restart's fix when only the epoch fell back (the learning rate held its course)."""


def _lr_held(steps: np.ndarray, lr: np.ndarray) -> str:
    if not len(lr):
        return "the learning rate did not restart"
    if float(lr.max() - lr.min()) <= 1e-12 * max(abs(float(lr.max())), 1e-30):
        return f"the learning rate did not restart (constant at {fmt(float(lr[0]))})"
    return (f"the learning rate did not restart ({fmt(float(lr[0]))} at step {int(steps[0]):,} → "
            f"{fmt(float(lr[-1]))} at step {int(steps[-1]):,})")


def _lr_restarts(steps: np.ndarray, lr: np.ndarray, t: dict) -> tuple[str, list[int]] | None:
    """Where the learning rate rose back after decaying: ("a at step s → b at step s'; ...", the
    indexes of each low and each rise), or None."""
    falls = np.nonzero(np.diff(lr) < 0)[0]
    if not len(falls):
        return None
    start = int(falls[0])  # the first peak: the warm-up is over
    low = np.minimum.accumulate(lr[start:])  # the lowest it decayed to so far
    peak = np.maximum.accumulate(lr)[start:]
    rest = lr[start:]
    # back up from the lowest it had decayed to, by a share of the peak: a decay never rises
    up = rest - low >= t["rise"] * peak
    runs = [a for a, _ in index_runs(up, 1)]
    if not runs:
        return None
    events, marks = [], []
    prev = 0
    for a in runs[:5]:
        lo = prev + int(np.argmin(rest[prev: a + 1]))  # where it had decayed to before the jump
        events.append(f"{fmt(float(rest[lo]))} at step {int(steps[start + lo]):,} → {fmt(float(rest[a]))} at step "
                      f"{int(steps[start + a]):,}")
        marks += [start + lo, start + a]
        prev = a
    more = f" (and {len(runs) - 5} more)" if len(runs) > 5 else ""
    return "; ".join(events) + more, marks


# -- eval: overfitting, metrics that still improve, the train–eval gap ---------------------------

_NOT_METRICS = ("runtime", "samples_per_second", "steps_per_second", "epoch", "model_preparation_time", "num_tokens")
_LOWER_BETTER = re.compile(r"loss|wer|cer|perplexity|ppl|error|mse|mae|rmse|nll|bpb|bpc")


def eval_loss_keys(keys: list[str]) -> list[str]:
    """`eval_loss` and each named eval set's loss (`eval_<set>_loss`), `eval_loss` first."""
    out = [k for k in keys if k.startswith("eval_") and k.endswith("loss") and "/" not in k]
    return sorted(out, key=lambda k: (k != "eval_loss", k))


def eval_metric_keys(keys: list[str]) -> list[str]:
    """The eval metrics that are not losses or timings (accuracy, f1, wer, rouge, ...)."""
    return [k for k in keys if k.startswith("eval_") and not k.endswith("loss")
            and not any(k.endswith(s) for s in (*_NOT_METRICS, *_NO_SCORE))]


_NO_SCORE = ("entropy", "mean_reward", "min_reward", "max_reward")
"""Eval keys that are no score to get better or worse at: an entropy, a reward model's rewards."""


def paired_metrics(loss_key: str, keys: list[str]) -> list[str]:
    """The eval metrics of the eval set `loss_key` is the loss of: `eval_<set>_*` for
    `eval_<set>_loss`; for `eval_loss`, the metrics of no named set (`eval_wer`, `eval_accuracy`)."""
    prefix = loss_key[: -len("loss")]
    metrics = [k for k in eval_metric_keys(keys) if k.startswith(prefix)]
    if prefix != "eval_":
        return metrics
    sets = {k[len("eval_"):-len("_loss")] for k in eval_loss_keys(keys) if k != "eval_loss"}
    return [k for k in metrics if not any(k.startswith(f"eval_{s}_") for s in sets)]


def lower_is_better(key: str) -> bool:
    return bool(_LOWER_BETTER.search(key[len("eval_"):]))


def _rose(r: Reader, key: str, t: dict) -> tuple[int, int, float, float, int] | str:
    """(best step, last step, best, last, eval points after the best), or why it did not rise."""
    steps, v = r.finite(key)
    n = len(v)
    if n < t["min_evals"]:
        return f"{n} eval points of {key}"
    best_i = int(np.argmin(v))
    best, now = float(v[best_i]), float(v[-1])
    after = n - 1 - best_i
    if after == 0:
        return f"{key} is still at its best ({fmt(best)}, step {int(steps[-1]):,})"
    rise = (now - best) / max(abs(best), 1e-12)
    wander = t["rise_sigma"] * noise(np.diff(v[: best_i + 1])) if best_i >= 3 else 0.0
    after_level = float(np.median(v[best_i + 1:]))
    if after < t["after"] or rise < t["rise"] or now - best <= wander or after_level <= best * (1 + t["rise"] / 2):
        return (f"{key} is {rise:+.1%} from its best ({fmt(best)} at step {int(steps[best_i]):,}; "
                f"fires at +{t['rise']:.0%} over {t['after']} evals)")
    return int(steps[best_i]), int(steps[-1]), best, now, after


def _at(steps: np.ndarray, values: np.ndarray, step: int) -> float:
    """The value at the logged step nearest `step` (at or before it when there is one)."""
    i = int(np.searchsorted(steps, step, side="right")) - 1
    return float(values[max(i, 0)])


def _rl(r: Reader) -> bool:
    """An RL trainer (it logs a reward): its loss, train or eval, measures no fit to data."""
    return "reward" in r or "objective/rlhf_reward" in r


def overfitting(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    keys = eval_loss_keys(r.keys())
    if not keys:
        return Absent("no eval loss logged")
    if _rl(r):
        return Absent("an RL trainer's eval loss measures no fit to data")
    rose: dict[str, tuple[int, int, float, float, int]] = {}
    quiet = ""
    for key in keys:
        got = _rose(r, key, t)
        if isinstance(got, str):
            quiet = quiet or got
        else:
            rose[key] = got
    if not rose:
        return Quiet(quiet)
    main = next(iter(rose))
    best_step, last_step, best, now, _ = rose[main]
    # The train loss over the same stretch: both rising is instability, not overfitting.
    train = ""
    if "loss" in r:
        ts, tv = r.finite("loss")
        later = tv[ts > best_step]
        if len(later) < 2:
            return Quiet(f"{main} rose from step {best_step:,}; too few train points after it to tell overfitting "
                         "from instability")
        if len(later) >= 2:
            k = max(1, min(len(later) // 2, 5))
            t0, t1 = float(np.median(later[:k])), float(np.median(later[-k:]))
            if t1 > t0 * (1 + t["train_flat"]) and t1 - t0 > 0:
                return Quiet(f"{main} rose from step {best_step:,}, but so did the train loss "
                             f"({fmt(t0)} → {fmt(t1)}): not overfitting")
            train = f" while the train loss went {fmt(t0)} → {fmt(t1)}"
    # An eval metric that still improves says the eval loss is not the whole story.
    # "Still improves": better now than at the eval loss's best, and still near its own best
    # (it kept most of what it gained since); one that peaked and fell back is overfitting too.
    better, worse = [], []
    for key in paired_metrics(main, r.keys()):
        ms, mv = r.finite(key)
        if len(mv) < 2 or ms[-1] <= best_step:
            continue
        sign = -1.0 if lower_is_better(key) else 1.0
        at_best, last = _at(ms, mv, best_step), float(mv[-1])
        top = float((sign * mv[ms >= best_step]).max()) * sign
        gain, kept = sign * (last - at_best), sign * (last - at_best) / max(sign * (top - at_best), 1e-12)
        if abs(gain) <= 1e-9 * max(abs(at_best), 1.0):
            continue
        if gain > 0 and kept >= t["kept"]:
            better.append(f"{key} {fmt(at_best)} → {fmt(last)}")
        else:
            peak = f" (best {fmt(top)})" if gain > 0 else ""
            worse.append(f"{key} {fmt(at_best)} → {fmt(last)}{peak}")
    sets = [f"{k} {fmt(v[2])} → {fmt(v[3])}" for k, v in list(rose.items())[1:4]]
    others = f" (also {', '.join(sets)}{' …' if len(rose) > 4 else ''})" if sets else ""
    what = (f"{main} reached its best {fmt(best)} at step {best_step:,}, then rose {(now - best) / abs(best):.0%} "
            f"to {fmt(now)} by step {last_step:,}{others}{train}")
    evidence = [points(k, *r.finite(k), int(r.series(k)[0][0]), last_step) for k in list(rose)[:3]]
    if "loss" in r:
        evidence.append(points("loss", *r.finite("loss"), int(r.series("loss")[0][0]), last_step))
    if better:
        improves = KINDS["eval_metric_improves_while_loss_rises"]
        for key in paired_metrics(main, r.keys())[:2]:
            evidence.append(points(key, *r.finite(key), int(r.series(key)[0][0]), last_step))
        return [Finding(improves.name, (best_step, last_step), improves.severity,
                        f"{what}; but {', '.join(better)} still improves after step {best_step:,}",
                        improves.fix, evidence)]
    fell = f"; {', '.join(worse)}" if worse else ""
    for key in [w.split(" ", 1)[0] for w in worse][:2]:
        evidence.append(points(key, *r.finite(key), int(r.series(key)[0][0]), last_step))
    return [Finding(kind.name, (best_step, last_step), kind.severity,
                    f"{what}{fell}. The best checkpoint is the one nearest step {best_step:,}",
                    kind.fix, evidence)]


def memorisation_no_eval(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    if isinstance(loss := r.pick("loss"), str):
        return loss
    if eval_loss_keys(r.keys()):
        return Absent("an eval loss is logged (overfitting and the train–eval gap judge the run)")
    if _rl(r):
        return Absent("an RL trainer's loss measures no fit to data")
    epoch = r.epoch
    if epoch is None or epoch < t["epochs"]:
        return Quiet(f"{0 if epoch is None else epoch:.1f} epochs (needs {t['epochs']:g})")
    _, ts, tv = loss
    if len(tv) < 5:
        return Quiet(f"{len(tv)} points of loss (needs 5)")
    k = edges(len(tv), t["edge"])
    late, early = float(np.median(tv[-k:])), float(np.median(tv[:k]))
    if early < 2 * t["below"]:
        return Quiet(f"the train loss was about {fmt(early)} over its first {k} logged points, already under "
                     f"{fmt(2 * t['below'])}: nothing was learnt down to it (see nothing_trains)")
    if late >= t["below"]:
        return Quiet(f"the train loss ends at about {fmt(late)} (the median of its last {k} logged points) after "
                     f"{epoch:.1f} epochs (fires below {t['below']:g})")
    under = np.nonzero(tv < 2 * t["below"])[0]
    first, last = int(ts[under[0]]), int(ts[-1])
    summary = (f"the train loss fell to {fmt(late)} over {epoch:.1f} epochs (under {fmt(2 * t['below'])} from step "
               f"{first:,}; it started at {fmt(float(tv[0]))}) and no eval loss was logged")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [points("loss", ts, tv, int(ts[0]), last)])]


def best_metric_inverted(r: Reader, kind: FindingKind) -> Outcome:
    best = r.best
    if best is None:
        return Absent("no best_metric recorded (a trainer_state.json with metric_for_best_model has one)")
    value, at = best
    matches = []
    for key in [*eval_loss_keys(r.keys()), *eval_metric_keys(r.keys())]:
        s, v = r.finite(key)
        i = np.nonzero(s == at)[0]
        if len(i) and abs(float(v[i[-1]]) - value) <= 1e-6 * max(1.0, abs(value)) and len(v) >= 3:
            matches.append((key, s, v))
    if not matches:
        return Quiet(f"best_metric {fmt(value)} at step {at:,} matches no logged eval metric")
    key, s, v = matches[0]
    lower = lower_is_better(key)
    better = float(v.min()) if lower else float(v.max())
    worse = float(v.max()) if lower else float(v.min())
    if abs(value - better) <= 1e-6 * max(1.0, abs(value)) or abs(value - worse) > 1e-6 * max(1.0, abs(value)):
        return Quiet(f"best_metric is {key}'s {'lowest' if lower else 'highest'} ({fmt(value)} at step {at:,})"
                     if abs(value - better) <= 1e-6 * max(1.0, abs(value))
                     else f"best_metric {fmt(value)} ({key} at step {at:,}) is not its worst")
    best_at = int(s[int(np.argmin(v) if lower else np.argmax(v))])
    summary = (f"best_metric {fmt(value)} (step {at:,}) is the {'highest' if lower else 'lowest'} {key} of the "
               f"run, where {'lower' if lower else 'higher'} is better: the best is {fmt(better)} at step "
               f"{best_at:,}. greater_is_better is set the wrong way")
    return [Finding(kind.name, (min(at, best_at), max(at, best_at)), kind.severity, summary, kind.fix,
                    [points(key, s, v, int(s[0]), int(s[-1]), keep=np.array([at, best_at]))])]


def train_eval_gap(r: Reader, kind: FindingKind) -> Outcome:
    t = kind.thresholds
    keys = eval_loss_keys(r.keys())
    if not keys:
        return Absent("no eval loss logged")
    if _rl(r):
        return Absent("an RL trainer's eval loss measures no fit to data")
    if isinstance(loss := r.pick("loss", what="train loss"), str):
        return loss
    _, ts, tv = loss
    es, ev = r.finite(keys[0])
    if len(ev) < t["min_evals"] or not len(tv):
        return Quiet(f"{len(ev)} eval points of {keys[0]}")
    # the train loss at each eval: the median of the train points since the eval before
    at = np.searchsorted(ts, es, side="right")
    starts = np.concatenate(([0], at[:-1]))
    train = np.array([float(np.median(tv[a:b])) if b > a else np.nan for a, b in zip(starts, at, strict=True)])
    ok = np.isfinite(train)
    if ok.sum() < t["min_evals"]:
        return Quiet("too few eval points with a train loss before them")
    if not isinstance(_rose(r, keys[0], KINDS["overfitting"].thresholds), str):
        return Quiet(f"{keys[0]} rose past its best: that is the overfitting rule's")
    half = len(ev) // 2
    gain = (float(np.min(ev[:half + 1])) - float(np.min(ev[half:]))) / max(abs(float(ev[half])), 1e-12)
    if gain > t["plateau"]:
        return Quiet(f"{keys[0]} still improves ({gain:.0%} over the last half of the evals)")
    gap, gs = ev[ok] - train[ok], es[ok]
    g0, g1 = float(np.median(gap[:2])), float(np.median(gap[-2:]))
    widened = g1 - g0
    scale = max(abs(float(ev[0])), 1e-12)
    if not (widened >= t["widen"] * scale and g1 > 0 and gap[-1] >= 0.8 * float(gap.max())):
        return Quiet(f"the eval − train gap went {fmt(g0)} → {fmt(g1)} "
                     f"({widened / scale:+.0%} of the first eval loss; fires at +{t['widen']:.0%})")
    first, last = int(gs[0]), int(gs[-1])
    summary = (f"the gap between {keys[0]} and the train loss widened {fmt(g0)} → {fmt(g1)} over steps "
               f"{first:,}–{last:,} (train {fmt(float(train[ok][0]))} → {fmt(float(train[ok][-1]))}, "
               f"eval {fmt(float(ev[ok][0]))} → {fmt(float(ev[ok][-1]))})")
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [points(keys[0], es, ev, first, last), points("loss", ts, tv, first, last)])]


# -- spikes ------------------------------------------------------------------------------------


def _between_centres(med: np.ndarray, b: int, n: int) -> np.ndarray:
    """The block medians `med` (blocks of `b` points) drawn as a line through the blocks' centres
    at each of `n` points, flat before the first centre and after the last: `np.interp` over
    `arange(n)`, without its search (the centres are evenly spaced, so the points between two
    centres sit at the same fractions of the way, `w`), in a third of its time."""
    h = b // 2  # the first point past the first centre, (b - 1) / 2
    w = (h + np.arange(b) - (b - 1) / 2) / b
    inner = (med[:-1, None] + np.diff(med)[:, None] * w).ravel()
    base = np.empty(n)
    base[:h] = med[0]
    base[h:h + len(inner)] = inner
    base[h + len(inner):] = med[-1]
    return base


def spikes(r: Reader, kind: FindingKind, *keys: str) -> Outcome:
    """Points far above the run's own level around them (the first of `keys` the run logged): a
    baseline of block medians (robust to the spikes themselves), the spread of the points around
    it as 1.4826 × MAD."""
    t = kind.thresholds
    if isinstance(got := r.pick(*keys, need=t["min_points"], what=keys[0]), str):
        return got
    key, steps, v = got
    n = len(v)
    b = max(4, min(int(t["block"]), n // 4))
    nb = n // b
    med = np.partition(v[: nb * b].reshape(nb, b), b // 2, axis=1)[:, b // 2]  # each block's (upper) median
    base = _between_centres(med, b, n)
    # the level before: the median of the block before each point's own (a falling start is no spike)
    before = np.repeat(np.concatenate(([np.inf], med)), b)[:n]
    resid = v - base
    skip = max(b, int(t["skip"] * n))  # the first block is the warm-up: not judged
    # the spread of the points around their level; a few thousand evenly picked points tell it as
    # well as a hundred thousand, for a tenth of the time
    scale = noise(resid[skip:: max(1, (n - skip) // 4096)])
    positive = float(np.median(med)) > 0
    floor = float(t.get("floor", 0.0))
    # the run's typical level: the median of a few thousand evenly picked points tells it as well
    typical = float(np.median(v[skip:: max(1, (n - skip) // 4096)])) if t.get("typical") and skip < n else 0.0
    high = resid > t["sigma"] * max(scale, 1e-12)
    if positive:
        high &= (v > t["ratio"] * np.maximum(base, 1e-12)) & (v > t["ratio"] * before)
    if floor:
        high &= v > floor
    high[:skip] = False
    idx = np.nonzero(high)[0]
    if typical > 0 and len(idx):
        # measured against the run's typical level too (a quiet stretch is no baseline): a higher
        # level only drops candidates, so only theirs is raised
        base[idx] = np.maximum(base[idx], typical)
        resid[idx] = v[idx] - base[idx]
        keep = (resid[idx] > t["sigma"] * max(scale, 1e-12)) & (v[idx] > t["ratio"] * base[idx]) \
            & (v[idx] > t["ratio"] * np.maximum(before[idx], typical))
        idx = idx[keep]
    if not len(idx):
        if skip >= n:
            return Quiet(f"{n} points of {key}")
        top = int(np.argmax(resid[skip:])) + skip
        if resid[top] <= 0:
            return Quiet(f"no {key} point rose above its running level")
        if scale <= 0:
            return Quiet(f"{key} does not spread around its level (a spread of 0); its largest excursion is "
                         f"{fmt(float(resid[top]))} at step {int(steps[top]):,}, under ×{t['ratio']:g} its level")
        if typical > 0:
            big = int(np.argmax(v[skip:])) + skip
            at = max(float(base[big]), typical)
            return Quiet(f"the largest {key} is {fmt(float(v[big]))} at step {int(steps[big]):,}, "
                         f"×{v[big] / at:.2g} its level ({fmt(at)}; the run's median is "
                         f"{fmt(typical)}; fires at {t['sigma']:g} σ and ×{t['ratio']:g})")
        ratio = f", ×{v[top] / base[top]:.2g} its level" if positive and base[top] > 0 else ""
        return Quiet(f"the largest {key} excursion is {resid[top] / max(scale, 1e-12):.1f} robust σ "
                     f"(step {int(steps[top]):,}{ratio}; fires at {t['sigma']:g} σ"
                     + (f" and ×{t['ratio']:g})" if positive else ")"))
    if len(idx) > t["max_share"] * (n - skip):
        # Spikes are rare: a series that is this high this often has two regimes (a GRPO run
        # whose gradient is 0 whenever its groups got one reward), not spikes.
        return Quiet(f"{key} is far above its level at {len(idx)} of {n - skip} points: two regimes, not spikes "
                     f"(spikes are under {t['max_share']:.0%} of the points)")
    worst = idx[np.argsort(-resid[idx])][:8]
    shown = "; ".join(f"step {int(steps[i]):,}: {fmt(float(v[i]))}"
                      + (f" (×{v[i] / base[i]:.1f})" if positive and base[i] > 0 else "")
                      for i in sorted(worst))
    more = f" and {len(idx) - len(worst)} more" if len(idx) > len(worst) else ""
    level = fmt(float(np.median(base[idx])))
    ranges = merge_ranges([(int(steps[i]), int(steps[i])) for i in idx], b * interval(steps))
    big = int(idx[np.argmax(v[idx])])
    typ = f" (the run's median {fmt(typical)})" if typical > 0 else ""
    summary = (f"{key} spiked at {len(idx)} step{'s' if len(idx) > 1 else ''} "
               f"({len(ranges)} burst{'s' if len(ranges) > 1 else ''}) above its level of about {level}{typ}: "
               f"{shown}{more}; the largest {fmt(float(v[big]))} at step {int(steps[big]):,}")
    a, z = int(steps[idx[0]]), int(steps[idx[-1]])
    evidence = [points(key, steps, v, int(steps[0]), int(steps[-1]), keep=steps[idx])]
    severity = kind.severity
    if t.get("loss_after") and key != "loss" and "loss" in r and not _rl(r):
        moved = _loss_moved(r, steps[idx], int(t["loss_after"]))
        ls, lv = r.finite("loss")
        if len(lv):
            evidence.append(points("loss", ls, lv, int(ls[0]), int(ls[-1]), keep=steps[idx]))
        if moved is None:
            severity = "info"
            summary += "; the loss did not move with them"
        else:
            summary += f"; the loss rose after it (the spike at step {moved:,})"
    return [Finding(kind.name, (a, z), severity, summary, kind.fix, evidence)]


def _loss_moved(r: Reader, at: np.ndarray, after: int) -> int | None:
    """The first spike step after which the loss rose: a loss at one of the next `after` logged
    points above its level before the spike (the median of up to 16 points) by more than 4 robust σ
    of its step-to-step changes and 10% of that level. None: it never did. The loss logged at the
    spike's own step is the batch's that made the gradient (a hard batch has both high), from
    before the update: what the update did shows only in the losses after it."""
    ls, lv = r.finite("loss")
    if len(lv) < 8:
        return None
    for step in at.tolist():
        i = int(np.searchsorted(ls, step))
        prior = lv[max(0, i - 16): i]
        if len(prior) < 4:
            continue
        lvl = float(np.median(prior))
        bar = max(4 * noise(np.diff(prior)) / np.sqrt(2), 0.1 * abs(lvl))
        j = int(np.searchsorted(ls, step, side="right"))
        window = lv[j: j + after]
        if len(window) and float(window.max()) > lvl + bar:
            return int(step)
    return None


def _level_before(med: np.ndarray, k: int) -> np.ndarray:
    """For each block i, the median of the (up to) k blocks before it (NaN for the first)."""
    out = np.full(len(med), np.nan)
    for i in range(1, min(k, len(med))):
        out[i] = np.median(med[:i])
    if len(med) > k:
        out[k:] = np.median(np.lib.stride_tricks.sliding_window_view(med, k)[:-1], axis=1)
    return out


def loss_level_shift(r: Reader, kind: FindingKind) -> Outcome:
    """The train loss at a new, higher level for a long stretch (a regime, not a spike): each
    block's median against the level before the stretch began."""
    t = kind.thresholds
    if _rl(r):
        return Absent("an RL trainer's loss measures no fit to data")
    if isinstance(got := r.pick("loss", need=t["min_points"]), str):
        return got
    _, steps, v = got
    n = len(v)
    b = max(4, min(int(t["block"]), n // 16))
    nb = n // b
    med = np.median(v[: nb * b].reshape(nb, b), axis=1)
    skip = max(1, int(np.ceil(t["skip"] * n / b)))
    need = max(int(t["min_blocks"]), int(np.ceil(t["min_share"] * n / b)))
    stretches: list[tuple[int, int, float]] = []
    level = np.minimum(_level_before(med, int(t["before"])), _level_before(med, int(t["recent"])))
    top, top_at = 0.0, skip
    i = skip
    while i < nb:
        lvl = float(level[i])
        if lvl > 0 and med[i] >= t["times"] * lvl:
            j = i
            while j < nb and med[j] >= t["times"] * lvl:
                j += 1
            if j - i >= need:
                stretches.append((i, j, lvl))
            elif med[i] / lvl > top:
                top, top_at = float(med[i] / lvl), i
            i = j
            continue
        if lvl > 0 and med[i] / lvl > top:
            top, top_at = float(med[i] / lvl), i
        i += 1
    if not stretches:
        return Quiet(f"the loss's level (the median of every {b} logged points) rose at most ×{top:.2g} over the "
                     f"level before it (step {int(steps[min(top_at * b, n - 1)]):,}; fires at ×{t['times']:g} for "
                     f"{need * b} logged points)")
    said = []
    for i, j, lvl in stretches:
        a, z = int(steps[i * b]), int(steps[min(j * b, n) - 1])
        inside = v[i * b: j * b]
        said.append(f"steps {a:,}–{z:,} ({len(inside)} logged points): about {fmt(lvl)} before, "
                    f"{fmt(float(np.median(inside)))} there (×{float(np.median(inside)) / lvl:.1f})")
    after = ""
    i, j, lvl = stretches[-1]
    if j < nb:
        back = float(np.median(v[j * b:]))
        after = f"; after it the loss was about {fmt(back)}"
    first, last = int(steps[stretches[0][0] * b]), int(steps[min(stretches[-1][1] * b, n) - 1])
    stretch = "long stretches" if len(stretches) > 1 else "a long stretch"
    summary = (f"the train loss moved to a new level for {stretch}: "
               + "; ".join(said) + after)
    keep = np.array([steps[i * b] for i, _, _ in stretches])
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix,
                    [points("loss", steps, v, int(steps[0]), int(steps[-1]), keep=keep)])]


def reward_model_at_chance(r: Reader, kind: FindingKind) -> Outcome:
    """A reward model (TRL's RewardTrainer logs `accuracy` and `margin`) whose pairwise accuracy
    stays at a coin toss's: the labels, not the optimizer."""
    t = kind.thresholds
    if "margin" not in r and "eval_margin" not in r:
        return Absent("no reward-model accuracy logged (accuracy and margin)")
    # held-out pairs say it best: a model can learn its training pairs by heart, labels or not
    if "eval_accuracy" in r and len(r.finite("eval_accuracy")[1]) >= t["min_evals"]:
        key = "eval_accuracy"
        s, v = r.finite(key)
    elif isinstance(got := r.pick("accuracy", need=t["min_points"]), str):
        return got
    else:
        key, s, v = got
    k = max(3, min(len(v) // 3, round(len(v) * t["edge"]))) if key == "eval_accuracy" else edges(len(v), t["edge"])
    early, late = float(np.median(v[:k])), float(np.median(v[-k:]))
    what = "evals" if key == "eval_accuracy" else "logged steps"
    if late > t["chance"]:
        return Quiet(f"{key} went {fmt(early)} → {fmt(late)} (the medians of its first and last {k} {what}; "
                     f"fires at {t['chance']:g} or below)")
    first, last = int(s[0]), int(s[-1])
    summary = (f"the reward model's {key} stayed at chance over steps {first:,}–{last:,}: the median of its "
               f"first {k} {what} was {fmt(early)} and of its last {k} {what} {fmt(late)} (a coin toss gets half "
               f"the pairs right)")
    evidence = [points(key, s, v, first, last)]
    if key == "eval_accuracy" and "accuracy" in r:
        ts, tv = r.finite("accuracy")
        if len(tv):
            summary += f", while the training accuracy went {fmt(float(tv[0]))} → {fmt(float(tv[-1]))}"
            evidence.append(points("accuracy", ts, tv, int(ts[0]), int(ts[-1])))
    return [Finding(kind.name, (first, last), kind.severity, summary, kind.fix, evidence)]


def loss_spike(r: Reader, kind: FindingKind) -> Outcome:
    if "loss" in r and "kl" in r and "reward" in r:
        # An RL trainer's loss is β·KL plus a term that averages to 0: its spikes are the KL's.
        return Quiet("the loss of an RL trainer follows its KL: see kl_spike")
    return spikes(r, kind, "loss")


def grad_spike(r: Reader, kind: FindingKind) -> Outcome:
    return spikes(r, kind, "grad_norm")


def kl_spike(r: Reader, kind: FindingKind) -> Outcome:
    return spikes(r, kind, "kl", "objective/kl")


DETECTORS = {
    "nothing_trains": nothing_trains,
    "nonfinite_values": nonfinite_values,
    "loss_rises_in_warmup": loss_rises_in_warmup,
    "lr_zero": lr_zero,
    "warmup_longer_than_run": warmup_longer_than_run,
    "schedule_restart": schedule_restart,
    "overfitting": overfitting,
    "memorisation_no_eval": memorisation_no_eval,
    "best_metric_inverted": best_metric_inverted,
    "train_eval_gap": train_eval_gap,
    "loss_spike": loss_spike,
    "grad_spike": grad_spike,
    "loss_level_shift": loss_level_shift,
    "reward_model_at_chance": reward_model_at_chance,
    "kl_spike": kl_spike,
}
