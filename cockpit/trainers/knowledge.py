"""What cannot be introspected about each trainer, as data: the knowledge table.

TRL's dataclasses tell cockpit every config field; they do not tell which data columns a trainer
takes, which extra models it needs, whether it runs on a CPU, which TRL last shipped it once it
was removed, or how it differs in ways the runner, validation and the screens must know (the
traits: the model head it trains, tokenized prompts, a reference model copied from the policy,
an eval set taken from the training rows, the metric family). Every per-trainer difference lives
here; no other module compares a trainer's name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The trainer name of a script run (`cockpit run -- CMD`): whatever Trainer the script builds.
# The run folder's contract names it; it is said here too, for the table's readers.
from cockpit.run.folder import SCRIPT_TRAINER as SCRIPT_TRAINER

MODEL_ROLES = ("ref_model", "reward_model", "value_model", "teacher_model")
"""The extra models a preset may name in `cockpit.models`."""
EXTRA_MODEL_KINDS = (*MODEL_ROLES, "reward_funcs")
"""What a trainer's constructor may take beside the policy."""
REWARD_FUNC_GIVEN = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                     "environments")
"""What GRPO-family trainers pass a reward function themselves (TRL 1.x `_calculate_rewards`); every
other parameter it needs without a default must be a dataset column."""


@dataclass(frozen=True)
class Knowledge:
    """Per-trainer facts TRL does not expose (measured on the supported TRL releases)."""

    title: str
    summary: str
    data_formats: tuple[tuple[str, ...], ...] = ()
    extra_models: tuple[str, ...] = ()
    cli: str | None = None
    needs: str | None = None
    samples: bool = False
    module: str | None = None
    """Where it lived, for trainers that may be missing from the installed TRL."""
    last_trl: str | None = None
    """Last TRL release that has it, for trainers TRL has removed."""
    family: str | None = None
    """Whose metrics it logs, for default panels and built-in alert rules: "sft", "preference"
    (DPO and its kin), "grpo" (group-sampling RL with reward functions), "ppo", or None."""
    head: str = "causal_lm"
    """What model it trains: "causal_lm", or "scorer" (sequence classification, one label), which
    cannot generate, so it gets no periodic samples."""
    tokenized_prompts: bool = False
    """Takes pre-tokenized `input_ids` prompts: the runner tokenizes a `prompt` column."""
    ref_from_policy: bool = False
    """Needs a reference model; without one given, the runner loads a copy of the policy."""
    eval_from_train: int = 0
    """Needs an eval dataset; without an eval split, the runner uses this many training rows."""


_PREFERENCE = (("prompt", "chosen", "rejected"), ("chosen", "rejected"))
_PROMPT_ONLY = (("prompt",),)
_CPU_SERVER = "a vLLM or teacher server"

KNOWLEDGE: dict[str, Knowledge] = {
    # --- stable (`trl`)
    "sft": Knowledge(
        "Supervised fine-tuning",
        "Trains the model to continue example texts; data: text, prompt/completion, or messages.",
        (("text",), ("prompt", "completion"), ("messages",)),
        cli="sft",
        family="sft",
    ),
    "dpo": Knowledge(
        "Direct preference optimization",
        "Raises the chosen answer over the rejected one against a frozen reference; data: prompt/chosen/rejected.",
        _PREFERENCE,
        cli="dpo",
        family="preference",
    ),
    "kto": Knowledge(
        "Kahneman-Tversky optimization",
        "Learns from answers labelled good or bad, no pairs needed; data: prompt/completion/label (bool).",
        (("prompt", "completion", "label"), *_PREFERENCE),
        cli="kto",
        family="preference",
    ),
    "reward": Knowledge(
        "Reward model training",
        "Trains a sequence-classification model to score chosen above rejected; data: prompt/chosen/rejected.",
        _PREFERENCE,
        cli="reward",
        head="scorer",
    ),
    "grpo": Knowledge(
        "Group relative policy optimization",
        "Samples a group of completions per prompt and reinforces the better-rewarded ones; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        cli="grpo",
        samples=True,
        family="grpo",
    ),
    "rloo": Knowledge(
        "REINFORCE leave-one-out",
        "Samples several completions per prompt, baseline = the others' mean reward; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        cli="rloo",
        samples=True,
        family="grpo",
    ),
    "distillation": Knowledge(
        "Knowledge distillation",
        "Trains a student to match a teacher model on its own generations; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("teacher_model",),
        cli="distillation",
        samples=True,
    ),
    # --- experimental (`trl.experimental.<name>`)
    "cpo": Knowledge(
        "Contrastive preference optimization",
        "Preference tuning without a reference model, plus an NLL term on chosen; data: prompt/chosen/rejected.",
        _PREFERENCE,
        family="preference",
    ),
    "orpo": Knowledge(
        "Odds-ratio preference optimization",
        "SFT plus an odds-ratio penalty on rejected answers, no reference model; data: prompt/chosen/rejected.",
        _PREFERENCE,
        family="preference",
    ),
    "online_dpo": Knowledge(
        "Online DPO",
        "Generates two answers per prompt, a reward model or judge picks the better, then a DPO step; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="preference",
    ),
    "gkd": Knowledge(
        "Generalized knowledge distillation",
        "Distils a teacher into the student on a mix of dataset and student-generated answers; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "gold": Knowledge(
        "General on-policy logit distillation",
        "On-policy distillation that also works across tokenizers of different model families; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "gmpo": Knowledge(
        "Geometric-mean policy optimization",
        "A steadier GRPO that averages token importance ratios geometrically; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "a2po": Knowledge(
        "A*-PO optimal advantage regression",
        "Estimates each prompt's optimal value offline, then regresses on sampled advantages; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "tpo": Knowledge(
        "Triple preference optimization",
        "DPO-style preference tuning plus SFT on a gold reference answer; data: prompt/chosen/rejected/reference.",
        (("prompt", "chosen", "rejected", "reference"),),
        family="preference",
    ),
    "sdft": Knowledge(
        "Self-distillation fine-tuning",
        "The model, shown privileged context, teaches itself without it, on its own samples; "
        "data: prompt + privileged_context.",
        (("prompt", "privileged_context"),),
        samples=True,
    ),
    "sdpo": Knowledge(
        "Self-distillation policy optimization",
        "On-policy RL that also distils from the model's own high-reward rollouts; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        family="grpo",
    ),
    "iw_opd": Knowledge(
        "Importance-weighted on-policy distillation",
        "On-policy distillation that down-weights tokens after the student drifts from the teacher; data: messages.",
        (("messages",),),
        extra_models=("teacher_model",),
        samples=True,
    ),
    "bema_for_ref_model": Knowledge(
        "DPO with a BEMA reference model",
        "DPO whose reference model tracks the policy by a bias-corrected moving average; data: prompt/chosen/rejected.",
        _PREFERENCE,
        family="preference",
    ),
    "async_grpo": Knowledge(
        "Asynchronous GRPO",
        "GRPO with generation decoupled from training on a vLLM rollout worker; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        needs="CUDA",
        samples=True,
        family="grpo",
    ),
    "async_distillation": Knowledge(
        "Asynchronous distillation",
        "Distillation with rollouts and teacher served from a vLLM server; data: prompt (conversational).",
        _PROMPT_ONLY,
        needs=_CPU_SERVER,
        samples=True,
    ),
    "server_distillation": Knowledge(
        "Server distillation",
        "Distillation whose teacher log-probs come from a vLLM teacher server; data: prompt.",
        _PROMPT_ONLY,
        needs=_CPU_SERVER,
        samples=True,
    ),
    # --- removed from TRL; kept so `cockpit` can say which TRL still has them
    "ppo": Knowledge(
        "Proximal policy optimization",
        "Classic RLHF: samples, scores with a reward model, updates policy and value heads; "
        "data: prompt (cockpit tokenizes it) or input_ids.",
        (("prompt",), ("input_ids",)),
        extra_models=MODEL_ROLES[:3],
        samples=True,
        module="trl.experimental.ppo",
        last_trl="1.12",
        family="ppo",
        tokenized_prompts=True,
        ref_from_policy=True,
        eval_from_train=8,
    ),
    "bco": Knowledge(
        "Binary classifier optimization",
        "Learns from answers labelled good or bad via a binary classifier; data: prompt/completion/label.",
        (("prompt", "completion", "label"),),
        module="trl.experimental.bco",
        last_trl="1.13",
        family="preference",
    ),
    "nash_md": Knowledge(
        "Nash mirror descent",
        "Online preference tuning against a mixture of policy and reference; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.nash_md",
        last_trl="1.13",
        family="preference",
    ),
    "xpo": Knowledge(
        "Exploratory preference optimization",
        "Online DPO with an exploration bonus; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.xpo",
        last_trl="1.13",
        family="preference",
    ),
    "prm": Knowledge(
        "Process reward model training",
        "Trains a model to score each reasoning step; data: prompt/completions/labels.",
        (("prompt", "completions", "labels"),),
        module="trl.experimental.prm",
        last_trl="1.13",
    ),
    "gspo_token": Knowledge(
        "GSPO-token",
        "GRPO with sequence-level importance ratios applied per token; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.gspo_token",
        last_trl="1.13",
        family="grpo",
    ),
    "grpo_with_replay_buffer": Knowledge(
        "GRPO with a replay buffer",
        "GRPO that replays past high-variance groups; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("reward_funcs",),
        samples=True,
        module="trl.experimental.grpo_with_replay_buffer",
        last_trl="1.13",
        family="grpo",
    ),
    "minillm": Knowledge(
        "MiniLLM",
        "On-policy distillation minimising reverse KL to a teacher; data: prompt.",
        _PROMPT_ONLY,
        extra_models=("teacher_model",),
        samples=True,
        module="trl.experimental.minillm",
        last_trl="1.14",
    ),
    "ssd": Knowledge(
        "SSD self-distillation",
        "Fine-tunes with cross-entropy on the model's own sampled completions; data: prompt.",
        _PROMPT_ONLY,
        samples=True,
        module="trl.experimental.ssd",
        last_trl="1.15",
    ),
}


def traits(name: str) -> Knowledge:
    """The knowledge of a trainer, or the defaults for one the table does not know (a trainer TRL
    added later, a script's own Trainer subclass)."""
    return KNOWLEDGE.get(name) or _UNKNOWN


_UNKNOWN = Knowledge("", "")


# -- the metric family: the one place that decides it -----------------------------------------

FAMILIES = ("sft", "preference", "grpo", "ppo")
"""The metric families: which panels, built-in alert rules and findings a run gets."""

METRIC_SIGNATURES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # PPO's own keys: online DPO (and XPO, Nash-MD) log objective/rlhf_reward and objective/scores
    # too, beside the preference family's rewards/* — those read as preference
    ("ppo", "ppo", ("val/ratio", "loss/policy_avg", "loss/value_avg", "policy/approxkl_avg")),
    ("preference", "dpo", ("rewards/margins", "rewards/chosen", "rewards/accuracies")),
    ("grpo", "grpo", ("frac_reward_zero_std", "reward_std", "completions/mean_length")),
    ("sft", "sft", ("mean_token_accuracy",)),
)
"""(family, the trainer it reads as, metric keys only that family logs), for a run that names no
trainer the table knows (a trainer_state.json, a script's own Trainer). A bare `reward` is not
among them: PPO runs made with other tools log loss/reward/learning_rate too."""


def family_from_keys(keys: Iterable[str]) -> tuple[str, str] | None:
    """(family, trainer it reads as) of the first signature the keys hold, or None."""
    present = set(keys)
    return next(((fam, name) for fam, name, signature in METRIC_SIGNATURES if present.intersection(signature)),
                None)


def metric_family(trainer: str | None, keys: Iterable[str] = ()) -> str | None:
    """A run's metric family: its trainer's (the knowledge table), else the one its metric keys
    belong to, else None (the general findings and panels only)."""
    known = traits((trainer or "").lower().replace("-", "_")).family
    if known:
        return known
    found = family_from_keys(keys)
    return found[0] if found else None


# Config keys only one trainer's recipes hold, to name the trainer of a recipe that does not say
# (`cockpit migrate` without --trainer), the way replay names a family from the metric keys it
# logs. Checked against TRL 1.16's configs; RLOO shares GRPO's reward keys, and GRPO is the one
# recipes use them for. A key two trainers' recipes both hold (beta, max_prompt_length) is no sign.
CONFIG_SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("grpo", ("reward_funcs", "num_generations", "reward_weights", "scale_rewards", "mask_truncated_completions")),
    ("sft", ("max_seq_length", "dataset_text_field", "packing", "packing_strategy", "completion_only_loss",
             "assistant_only_loss")),
    ("dpo", ("rpo_alpha", "precompute_ref_log_probs", "use_weighting", "ref_adapter_name")),
    ("kto", ("desirable_weight", "undesirable_weight")),
    ("reward", ("center_rewards_coefficient",)),
)


def guess_trainer_from_keys(keys: list[str] | set[str]) -> tuple[str | None, dict[str, list[str]]]:
    """(the one trainer the config's keys point to, or None; trainer → the keys that point to it).
    None when no key points anywhere, or keys point to more than one trainer: then ask."""
    present = set(keys)
    found = {name: [k for k in signature if k in present] for name, signature in CONFIG_SIGNATURES}
    found = {name: ks for name, ks in found.items() if ks}
    return (next(iter(found)) if len(found) == 1 else None), found
