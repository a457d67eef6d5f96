"""The findings table: each kind a judge can name, for which trainer family, with its thresholds
as data.

Like the default panels (`metrics/panels.py`) and the built-in alert rules (`alerts/rules.py`),
findings are keyed by the trainer's metric family, a trait in `trainers/knowledge.py`. The judge
(`findings/judge.py`) reads the thresholds from here, so a threshold is changed in one place and
`docs/findings.md` says the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FindingKind:
    name: str
    # The key written in the `finding` record (`{finding: reward_hacking}` in an alert rule).
    title: str
    family: str
    # The metric family it applies to: grpo, preference, ppo (see `Knowledge.family`).
    severity: str
    fix: str
    thresholds: dict[str, Any] = field(default_factory=dict)


KINDS: dict[str, FindingKind] = {k.name: k for k in (
    # --- GRPO and its kin
    FindingKind(
        "reward_hacking", "Reward hacking", "grpo", "warning",
        "read the top-rewarded completions: if they game the reward (too short, too long, one "
        "function only), fix that reward function or add one that pays for what you want",
        {
            "min_points": 10,
            # The judge waits for this many logged points: the early and late windows never overlap.
            "edge": 0.2,
            # The early and late windows: this share of the logged points each (at least 5, at most
            # 500).
            "reward_rise": 0.5,
            # The late reward above the early one by this many early reward standard deviations
            # (reward_std, else the spread of the early reward), and by 5% of |early| at least ...
            "reward_sigma": 2.0,
            # ... and by this many robust standard deviations (1.4826 × MAD) of the early reward
            # points: a noisy reward that does not move is no rise.
            "length_collapse": 0.4,
            # completions/mean_length fell by this share or more.
            "length_balloon": 1.0,
            # completions/mean_length rose by this share (1.0 = doubled) or more.
            "entropy_fall": 0.6,
            # entropy fell by this share or more.
            "one_function_share": 0.9,
            # With two reward functions or more: one of them carries this share of the rise.
            "evidence_rows": 6,
        }),
    FindingKind(
        "wasted_groups", "Wasted groups", "grpo", "warning",
        "most groups got one reward for all their completions and teach nothing: drop those "
        "prompts (cockpit findings RUN --export-prompts FILE), raise num_generations or the "
        "sampling temperature, or make the reward finer-grained",
        {
            "above": 0.5,
            # frac_reward_zero_std above this ...
            "for": 5,
            # ... for this many logged steps in a row.
            "evidence_prompts": 50,
        }),
    FindingKind(
        "clipping", "Completions clipped", "grpo", "warning",
        "completions hit max_completion_length before they ended: raise max_completion_length, "
        "or reward shorter answers",
        {"above": 0.5, "for": 5, "evidence_rows": 6}),
    # --- DPO and its kin
    FindingKind(
        "logps_falling", "Both log-probs falling", "preference", "warning",
        "the chosen answers lose likelihood along with the rejected ones (the margin grows by "
        "pushing both down): lower the learning rate or beta, or add an SFT term on chosen "
        "(rpo_alpha in DPOConfig, or CPO/ORPO)",
        {
            "min_points": 20,
            "edge": 0.2,
            "fall": 0.05,
            # Both logps/chosen and logps/rejected fell by this share of their |early| level ...
            "fall_sigma": 2.0,
            # ... and by this many robust standard deviations (1.4826 × MAD) of their early points.
        }),
    # --- PPO (the PPO article's debugging recipes)
    FindingKind(
        "ppo_ratio", "Value ratio far from 1", "ppo", "warning",
        "val/ratio should hover near 1: lower the learning rate, raise num_mini_batches, or "
        "lower cliprange_value",
        {"far": 0.5, "for": 3}),
    FindingKind(
        "rlhf_reward_falling", "RLHF reward falling", "ppo", "warning",
        "objective/rlhf_reward should rise: check the reward model on a few completions, lower "
        "the learning rate, or raise kl_coef if the KL grows",
        {"min_points": 8, "edge": 0.2, "fall_sigma": 2.0}),
    FindingKind(
        "value_loss_blowup", "Value loss blow-up", "ppo", "error",
        "the value head diverges: lower the learning rate, lower vf_coef or cliprange_value, "
        "or whiten the rewards",
        {"min_points": 6, "edge": 0.2, "times": 10.0}),
)}


def kinds_for(family: str | None) -> list[FindingKind]:
    # The kinds that apply to a trainer family, in table order.
    return [k for k in KINDS.values() if k.family == family]
