"""What a metric means, and what healthy looks like: one line each, per trainer family where the
same key means different things (the `loss` of SFT, DPO and GRPO are three different numbers).

Written for this project from TRL's documentation of what its trainers log and from the PPO
article's glossary; data only, shown from a panel (`i`), in the metric picker and beside a
finding's evidence. `explain(key, family)` is the one way in; `eval_<key>` is `<key>` measured on
the eval set.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    key: str
    """a metric key, or a pattern (`rewards/*/mean`)"""
    meaning: str
    healthy: str
    families: tuple[str, ...] = ()
    """the metric families (trainers.knowledge.FAMILIES) this wording is for; () for any"""


_ANY = ()
_SFT = ("sft",)
_PREF = ("preference",)
_GRPO = ("grpo",)
_PPO = ("ppo",)

GLOSSARY: tuple[Entry, ...] = (
    # --- every trainer
    Entry("loss", "the training loss the optimizer minimizes, averaged over the steps since the last log",
          "falls quickly at first, then slowly; a loss stuck at one value, at 0, or NaN means nothing trains"),
    Entry("eval_loss", "the loss on the eval set: the same loss as training, on examples the model does not "
          "train on", "falls with the train loss and levels off; climbing past its best while the train loss "
          "falls is overfitting (keep the best checkpoint)"),
    Entry("learning_rate", "the step size the scheduler gives the optimizer now",
          "warms up over the first steps, then decays (linear, cosine) or stays flat; it should not jump back up "
          "mid-run or be 0 after the warm-up"),
    Entry("grad_norm", "the size of the gradient before clipping (max_grad_norm clips it for the update)",
          "settles after the first steps and moves slowly; isolated 10× jumps are spikes, and a norm of exactly 0 "
          "means no parameter gets a gradient"),
    Entry("epoch", "how many passes over the training data so far (fractions are part-way)",
          "rises steadily; falling back mid-run means the run restarted its data"),
    Entry("accuracy", "the share of examples the model gets right",
          "rises and levels off; on an eval set, compare it with the eval loss"),
    Entry("reward", "the mean reward the run's completions got", "rises as the policy learns what pays"),
    Entry("entropy", "how spread the model's next-token distribution is (nats per token)",
          "falls slowly as the model grows sure; a collapse toward 0 means it stopped exploring"),
    Entry("num_tokens", "how many tokens the model has been trained on so far", "grows by about the same each step"),
    # --- SFT
    Entry("loss", "cross-entropy of the tokens trained on (the completion or assistant turns when the rest is "
          "masked), per token", "falls fast in the first hundred steps, then slowly; far below the eval loss "
          "means memorizing", _SFT),
    Entry("mean_token_accuracy", "the share of trained tokens whose most likely next token is the right one",
          "rises as the loss falls, typically to 0.6–0.9 on chat data; 1.0 on train alone suggests memorizing"),
    Entry("entropy", "how spread the model's next-token distribution is on the trained tokens (nats per token)",
          "falls as the model grows sure of the data; a fall to near 0 with a rising eval loss is overconfidence",
          _SFT),
    # --- DPO and its kin
    Entry("loss", "the preference loss: how badly the model still ranks the chosen answer over the rejected one "
          "(sigmoid DPO starts at ln 2 ≈ 0.693)", "falls below 0.693 steadily; near 0 within the first steps "
          "means the pairs are too easy or the learning rate too high (saturation)", _PREF),
    Entry("rewards/margins", "chosen reward minus rejected reward: how far apart the model puts a pair, relative "
          "to the reference model", "grows from 0 and levels off (a few units with beta 0.1); margins in the tens "
          "that keep growing mean the rejected answers are being pushed down without limit"),
    Entry("rewards/accuracies", "the share of pairs where the chosen answer gets the higher implicit reward",
          "rises from ~0.5 toward 0.7–0.9; pinned at 1.0 early, with a loss near 0, is saturation"),
    Entry("rewards/chosen", "beta × how much more likely the chosen answer is under the model than under the "
          "reference", "stays near 0 or rises; a steady fall means the chosen answers lose likelihood too"),
    Entry("rewards/rejected", "beta × how much more likely the rejected answer is under the model than under "
          "the reference", "falls below rewards/chosen; the margin between them is what training buys"),
    Entry("logps/chosen", "log-probability of the chosen answers under the model (summed over their tokens)",
          "holds or rises; a steady fall means the model unlearns good answers while widening the margin"),
    Entry("logps/rejected", "log-probability of the rejected answers under the model",
          "falls, faster than logps/chosen"),
    Entry("entropy", "how spread the model's next-token distribution is on the answers", "changes slowly", _PREF),
    # --- GRPO and its kin
    Entry("loss", "the policy-gradient loss plus beta × KL; its mean is near 0 by construction (advantages are "
          "centred per group)", "hovers near 0 and is no progress signal: watch the reward, KL and entropy",
          _GRPO),
    Entry("reward", "the mean total reward of the sampled completions (the weighted sum of the reward "
          "functions)", "rises over the run; a rise with collapsing length or entropy can be reward hacking",
          _GRPO),
    Entry("rewards/*/mean", "one reward function's mean over the sampled completions",
          "moves: a function that is 0, or the same value, at every step teaches nothing"),
    Entry("rewards/*", "one reward function's mean over the sampled completions (TRL before 0.16)",
          "moves: a function that is 0, or the same value, at every step teaches nothing"),
    Entry("reward_std", "the spread of the reward within each prompt's group of completions, averaged",
          "stays above 0: with no spread a group has no advantage to learn from"),
    Entry("frac_reward_zero_std", "the share of groups whose completions all got the same reward",
          "stays low (under ~0.5): those groups teach nothing"),
    Entry("kl", "how far the policy has moved from the reference model, per token (scaled by beta in the loss)",
          "grows slowly from 0; sudden spikes or a steady climb past ~1 mean the policy runs away"),
    Entry("entropy", "how spread the policy's next-token distribution is on its completions",
          "falls slowly; a collapse toward 0 means the completions of a group stop differing", _GRPO),
    Entry("completions/mean_length", "the mean length of the sampled completions, in tokens",
          "changes with the task; growing without the reward rising is rambling, a collapse can be reward hacking"),
    Entry("completion_length", "the mean length of the sampled completions, in tokens (TRL before 0.16)",
          "as completions/mean_length"),
    Entry("completions/clipped_ratio", "the share of completions cut at max_completion_length before they ended",
          "stays low; most completions clipped means max_completion_length is too short"),
    Entry("clip_ratio/region_mean", "the share of tokens whose probability ratio the PPO-style clip bounded",
          "small (a few percent); high means the updates are large for the clip range"),
    Entry("clip_ratio/*", "the share of tokens whose probability ratio hit the lower (low_*) or upper (high_*) "
          "clip bound, averaged (mean) or at its extreme (min, max)", "small (a few percent)"),
    Entry("completions/*", "a statistic of the sampled completions' lengths in tokens (terminated: those that "
          "ended with EOS before max_completion_length)", "steady or moving with the task; max at the cap means "
          "completions are cut"),
    Entry("rewards/*/std", "the spread of one reward function over the sampled completions",
          "above 0: a function with no spread gives no advantage"),
    # --- PPO (the PPO article's glossary)
    Entry("objective/rlhf_reward", "the goal itself: the reward model's score minus the KL penalty",
          "rises over the run; this is the number training is for"),
    Entry("objective/scores", "the mean score the reward model (or environment) gave the completions",
          "rises; rising while rlhf_reward falls means the KL penalty eats the gain"),
    Entry("objective/kl", "the KL divergence between the policy and the reference policy, summed over "
          "each completion's tokens (so it grows with their length), averaged over the completions",
          "grows slowly and stays bounded; a runaway KL is the policy leaving the reference behind"),
    Entry("objective/entropy", "the entropy of the policy, summed over each completion's tokens: how "
          "random its token choices are (policy/entropy_avg is the per-token one)",
          "falls slowly; a fast collapse means the policy stopped exploring"),
    Entry("objective/non_score_reward", "the KL part of the reward: minus kl_coef × the summed per-token KL",
          "small and negative; growing in size as the KL grows"),
    Entry("val/ratio", "the mean ratio of new to old policy probabilities in the PPO update",
          "hovers near 1.0; values like 2 or 0.1 mean the updates are too violent"),
    Entry("loss/policy_avg", "the mean policy (clipped surrogate) loss", "small and noisy around 0"),
    Entry("loss/value_avg", "the mean value-head loss: how far predicted values are from the returns",
          "falls and stays small; a blow-up means the value head diverges"),
    Entry("policy/approxkl_avg", "the approximate KL between consecutive policies (one update's size), not "
          "objective/kl", "small (≪ 0.1) and steady"),
    Entry("policy/clipfrac_avg", "the share of policy updates the clip range bounded",
          "small; a high share means updates keep hitting the clip"),
    Entry("val/clipfrac_avg", "the share of value updates the value clip range bounded", "small"),
    Entry("policy/entropy_avg", "the mean per-token entropy of the policy during the updates",
          "falls slowly; near 0 the policy writes one completion a prompt"),
    Entry("eps", "episodes (prompts) processed per second", "steady; a drop means a slowdown"),
)


def explain(key: str, family: str | None = None) -> Entry | None:
    """The entry for a metric key: the family's own wording first, then the one for any trainer,
    exact keys before patterns; `eval_<key>` explains `<key>` on the eval set."""
    found = _find(key, family)
    if found is not None:
        return found
    if key.startswith("eval_"):
        base = _find(key[len("eval_"):], family)
        if base is not None:
            return Entry(key, f"on the eval set: {base.meaning}", base.healthy, base.families)
        if key.endswith("loss"):
            return Entry(key, "the loss on one named eval set", "falls with the train loss; rising while the train "
                         "loss falls is overfitting")
        return Entry(key, "a metric measured on the eval set (compute_metrics)", "improves, then levels off")
    return None


def _find(key: str, family: str | None) -> Entry | None:
    for exact in (True, False):
        for fams in ((family,), _ANY) if family else (_ANY,):
            for e in GLOSSARY:
                if e.families and e.families != fams:
                    continue
                if not e.families and fams != _ANY:
                    continue
                if (e.key == key) if exact else ("*" in e.key and fnmatch.fnmatchcase(key, e.key)
                                                  and key.count("/") == e.key.count("/")):
                    return e
    return None


def one_line(key: str, family: str | None = None) -> str | None:
    """"meaning — healthy: …", or None for a key the glossary does not know."""
    e = explain(key, family)
    return f"{e.meaning} — healthy: {e.healthy}" if e else None
