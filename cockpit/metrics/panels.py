"""Which metric panels a run shows first, chosen by what the run logged.

The trainer name is only a hint: panels are picked from the keys present, so
an unknown trainer (or a TRL release that renamed a metric) still gets loss,
learning rate and whatever else it logged, never an empty grid.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

MAX_PANELS = 6


@dataclass(frozen=True)
class Panel:
    """One plot: a title and the metric keys drawn in it (patterns allowed, e.g. rewards/*/mean)."""

    title: str
    keys: tuple[str, ...]
    user: bool = field(default=False, compare=False)
    """Picked by the user: kept when the defaults are recomputed."""
    renamed: bool = False
    """The keys are one metric's names across TRL releases, newest first: each source draws
    the first one it logged (an older GRPO file's `completion_length` beside a newer run's
    `completions/mean_length`, in one panel)."""
    exclude: tuple[str, ...] = ()
    """Patterns of keys the panel's patterns match but it does not draw (`rewards/*/std`)."""

    def resolve(self, available: list[str]) -> list[str]:
        """The concrete keys to draw, in pattern order, eval twins right after their train key."""
        return self._resolve(available, first_only=self.renamed)

    def covers(self, available: list[str]) -> list[str]:
        """Every logged key the panel stands for (each name of a renamed metric): no other
        panel is made for them."""
        return self._resolve(available, first_only=False)

    def _resolve(self, available: list[str], *, first_only: bool) -> list[str]:
        out: list[str] = []
        for pattern in self.keys:
            if first_only and out:
                break
            # A logged key is itself first: `[bold]weird[/]` is a name, not a character class.
            matches = [pattern] if pattern in available else \
                [k for k in available if fnmatch.fnmatchcase(k, pattern)] if any(c in pattern for c in "*?[") else []
            matches = [k for k in matches if not any(fnmatch.fnmatchcase(k, x) for x in self.exclude)]
            for key in matches:
                if key not in out:
                    out.append(key)
                for twin in eval_twins(key, available):
                    if twin not in out:
                        out.append(twin)
        return out


def eval_twins(key: str, available: list[str]) -> list[str]:
    """The eval series logged beside a train key: `eval_loss`, and one per named eval set
    (transformers logs `eval_{name}_loss` when eval_dataset is a dict), in logged order.

    `eval_nll_loss` is the twin of `nll_loss` when that is logged, not an eval set "nll" of
    `loss`: a candidate whose train-side name is itself a logged key belongs to that key.
    """
    present = set(available)
    out = [f"eval_{key}"] if f"eval_{key}" in present else []
    suffix = f"_{key}"
    for k in available:
        if k.startswith("eval_") and k.endswith(suffix) and len(k) > len("eval_") + len(suffix):
            name = k[len("eval_"):-len(suffix)]
            if "/" not in name and f"{name}{suffix}" not in present and k not in out:
                out.append(k)
    return out


SFT = (
    Panel("loss", ("loss",)),
    Panel("learning rate", ("learning_rate",)),
    Panel("grad norm", ("grad_norm",)),
    Panel("mean token accuracy", ("mean_token_accuracy",)),
    Panel("entropy", ("entropy",)),
)
DPO = (
    Panel("loss", ("loss",)),
    Panel("reward margin", ("rewards/margins",)),
    Panel("reward accuracy", ("rewards/accuracies",)),
    Panel("rewards chosen vs rejected", ("rewards/chosen", "rewards/rejected")),
    Panel("grad norm", ("grad_norm",)),
    Panel("learning rate", ("learning_rate",)),
)
GRPO = (
    # Every reward component, in either naming: `rewards/<fn>/mean` (TRL ≥ 0.16) and `rewards/<fn>`.
    Panel("reward", ("reward", "rewards/*/mean", "rewards/*"), exclude=("rewards/*/std",)),
    Panel("reward std", ("reward_std",)),
    Panel("KL", ("kl",)),
    Panel("entropy", ("entropy",)),
    Panel("completion length", ("completions/mean_length", "completion_length"), renamed=True),
    Panel("zero-std reward groups", ("frac_reward_zero_std",)),
)
PPO = (
    Panel("RLHF reward", ("objective/rlhf_reward",)),
    Panel("scores", ("objective/scores",)),
    Panel("KL", ("objective/kl",)),
    Panel("entropy", ("objective/entropy",)),
    Panel("value ratio", ("val/ratio",)),
    Panel("policy & value loss", ("loss/policy_avg", "loss/value_avg")),
)
# For anything else: what most trainers log.
GENERIC = (
    Panel("loss", ("loss",)),
    Panel("learning rate", ("learning_rate",)),
    Panel("grad norm", ("grad_norm",)),
    Panel("accuracy", ("mean_token_accuracy", "accuracy")),
    Panel("entropy", ("entropy",)),
    Panel("reward", ("reward",)),
)

_BY_FAMILY = {"sft": SFT, "preference": DPO, "grpo": GRPO, "ppo": PPO}
"""Panels per metric family; which trainer belongs to which is a trait in the knowledge table."""
_SKIP_KEYS = ("epoch", "step", "total_flos", "num_tokens", "step_time")


def family(trainer: str | None, keys: list[str]) -> tuple[Panel, ...]:
    """The panel family for a run: by the trainer's family when known, else guessed from the keys."""
    from cockpit.trainers.knowledge import metric_family

    known = metric_family(trainer, keys)
    if known in _BY_FAMILY:
        return _BY_FAMILY[known]
    # A bare `reward` names no family (see _SIGNATURES), but its panels are the reward ones.
    return GRPO if "reward" in keys else GENERIC


def default_panels(trainer: str | None, keys: list[str], limit: int = MAX_PANELS) -> list[Panel]:
    """Panels with at least one present key; topped up with other logged keys up to `limit`."""
    chosen = [p for p in family(trainer, keys) if p.resolve(keys)]
    used = {k for p in chosen for k in p.covers(keys)}
    for p in GENERIC:
        if len(chosen) >= limit:
            break
        if p.title not in {c.title for c in chosen} and p.resolve(keys) \
                and not used.intersection(p.resolve(keys)):
            chosen.append(p)
            used.update(p.resolve(keys))
    for key in keys:
        if len(chosen) >= limit:
            break
        if key in used or key.startswith("eval_") or key in _SKIP_KEYS \
                or key.startswith("train_"):
            continue
        chosen.append(Panel(key, (key,)))
        used.add(key)
    if not chosen:
        # Eval-only sources (an eval-only trainer_state.json) still show something.
        for key in keys[:limit]:
            chosen.append(Panel(key, (key,)))
        chosen = chosen[:limit]
    # Every eval metric is drawn, past the limit: a train key's eval twin in its panel, the
    # others (`eval_wer`, six eval sets' `eval_<set>_accuracy`) in panels of their own, one
    # per metric name.
    used = {k for p in chosen for k in p.covers(keys)}
    groups: dict[str, list[str]] = {}
    present = set(keys)
    for key in keys:
        # An eval series of a namespaced train diagnostic that has no default panel (GRPO's
        # eval clip ratios beside its train ones) is not one either: thirteen panels left one
        # row of canvas each.
        if is_eval(key) and key not in used and not key.endswith(EVAL_NOT_PLOTTED) \
                and not ("/" in key and key[len("eval_"):] in present):
            groups.setdefault(key.rsplit("_", 1)[-1], []).append(key)
    for name, group in groups.items():
        chosen.append(Panel(group[0], (group[0],)) if len(group) == 1 else Panel(f"eval {name}", tuple(group)))
    return chosen[:limit] + [p for p in chosen[limit:] if all(is_eval(k) for k in p.keys)]


def panel_for_key(key: str) -> Panel:
    """A user-picked panel for one key."""
    return Panel(key, (key,), user=True)


def guess_trainer(keys: list[str]) -> str | None:
    """A trainer family for sources that do not say (trainer_state.json): "grpo-like" etc.,
    only from keys that family alone logs; None (shown as "unknown trainer") otherwise."""
    from cockpit.trainers.knowledge import family_from_keys

    found = family_from_keys(keys)
    return f"{found[1]}-like" if found else None


# -- how a panel draws a key (smoothing, best value): one home for what each metric is ------------

SCHEDULE_KEYS = ("learning_rate", "lr", "epoch", "num_tokens", "num_input_tokens_seen", "step",
                 "total_flos", "beta", "temperature")
"""Values the trainer sets, not measures: never smoothed (an EMA moves a warm-up's peak)."""
SPARSE_POINTS = 50
"""A series with fewer points than this (an eval every few hundred steps) is not smoothed: an
EMA over 10 points lags by several of them."""
EVAL_NOT_PLOTTED = ("_runtime", "_samples_per_second", "_steps_per_second", "_num_tokens")
"""Eval bookkeeping, not a metric: never a default panel (`eval_num_tokens` is a counter of the
tokens trained on, and goes back at a resume: a zig-zag that means nothing)."""
_HIGHER_IS_BETTER = ("reward", "accuracy", "acc", "f1", "bleu", "rouge", "margin", "score",
                     "precision", "recall", "exact_match", "em", "auc", "pass")
_LOWER_IS_BETTER = ("loss", "wer", "cer", "perplexity", "ppl", "error", "nll")


def is_schedule(key: str) -> bool:
    last = key.rsplit("/", 1)[-1]
    return last in SCHEDULE_KEYS or last.endswith("learning_rate") or last.endswith("_lr")


def is_eval(key: str) -> bool:
    return key.startswith("eval_") or key.startswith("eval/")


DENSE_WEIGHTS = (0.6, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999)
"""The EMA weights a dense series may be drawn with (few, so a plot's kept summary per weight
is reused while a live series grows)."""
DENSE_SPAN_COLUMNS = 3
"""A dense series is smoothed over at least this many columns' worth of points: 2,000 noisy
GRPO steps in 50 columns read as a trend, not a barcode."""


def smoothing_for(key: str, points: int, asked: float, columns: int = 0) -> float:
    """The smoothing a series is drawn with: none for a schedule (learning rate, epoch, token
    counts), an eval series, or any sparse series; else what the user asked for, raised for a
    series with many points a column (an EMA of weight w spans ~1/(1-w) points)."""
    if asked <= 0 or is_schedule(key) or is_eval(key) or points < SPARSE_POINTS:
        return 0.0
    if columns <= 0:
        return asked
    wanted = 1 - 1 / max(1.0, DENSE_SPAN_COLUMNS * points / columns)
    return max(asked, next((w for w in DENSE_WEIGHTS if w >= wanted), DENSE_WEIGHTS[-1]))


def best_direction(key: str) -> str | None:
    """"min" or "max" when a key has a best value (loss: min, reward: max), else None."""
    if is_schedule(key):
        return None
    words = set(key.lower().replace("/", "_").replace("-", "_").split("_"))
    if words.intersection(_LOWER_IS_BETTER):
        return "min"
    if words.intersection(_HIGHER_IS_BETTER) or "rewards" in words:
        return "max"
    return None
