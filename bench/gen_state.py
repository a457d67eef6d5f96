"""Generate trainer_state.json files shaped like the ones TRL writes.

transformers writes `json.dumps(asdict(state), indent=2, sort_keys=True) + "\n"`, so the
file here is written the same way. Each log_history entry carries the keys TRL's SFT
trainer (8 keys with step and epoch) or GRPO trainer (28 keys) logs, with full-precision
floats; a summary entry (train_runtime, ...) ends the log, as after a finished run.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

SFT_KEYS = ("entropy", "epoch", "grad_norm", "learning_rate", "loss", "mean_token_accuracy",
            "num_tokens", "step")
GRPO_KEYS = (
    "clip_ratio/high_max", "clip_ratio/high_mean", "clip_ratio/low_mean", "clip_ratio/low_min",
    "clip_ratio/region_mean", "completions/clipped_ratio", "completions/max_length",
    "completions/max_terminated_length", "completions/mean_length",
    "completions/mean_terminated_length", "completions/min_length",
    "completions/min_terminated_length", "entropy", "epoch", "frac_reward_zero_std", "grad_norm",
    "kl", "learning_rate", "loss", "num_tokens", "reward", "reward_std",
    "rewards/accuracy_reward/mean", "rewards/accuracy_reward/std", "rewards/format_reward/mean",
    "rewards/format_reward/std", "step", "step_time",
)
assert len(SFT_KEYS) == 8 and len(GRPO_KEYS) == 28


def _entry(kind: str, step: int, n: int, rnd: random.Random) -> dict[str, float | int]:
    frac = step / n
    noise = rnd.random
    if kind == "sft":
        return {
            "entropy": 1.2 + 0.8 * (1 - frac) + 0.05 * noise(),
            "epoch": 3 * frac,
            "grad_norm": 0.8 + 0.4 * noise() + (12.5 if step % 9973 == 0 else 0.0),
            "learning_rate": 2e-5 * (1 - frac),
            "loss": 2.5 * math.exp(-3 * frac) + 0.3 + 0.1 * noise(),
            "mean_token_accuracy": 0.4 + 0.5 * frac + 0.02 * noise(),
            "num_tokens": float(4096 * step),
            "step": step,
        }
    reward = 0.2 + 0.7 * frac + 0.1 * noise()
    length = 120 + 80 * noise()
    return {
        "clip_ratio/high_max": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/low_mean": 0.0,
        "clip_ratio/low_min": 0.0, "clip_ratio/region_mean": 0.0,
        "completions/clipped_ratio": 0.1 * noise(),
        "completions/max_length": float(int(length + 60)),
        "completions/max_terminated_length": float(int(length + 40)),
        "completions/mean_length": length,
        "completions/mean_terminated_length": length - 5 * noise(),
        "completions/min_length": float(int(length - 60)),
        "completions/min_terminated_length": float(int(length - 60)),
        "entropy": 0.9 + 0.3 * noise(),
        "epoch": 2 * frac,
        "frac_reward_zero_std": 0.25 * noise(),
        "grad_norm": 0.3 + 0.2 * noise(),
        "kl": 0.002 * step / n + 0.0005 * noise(),
        "learning_rate": 1e-6 * (1 - frac),
        "loss": 0.01 * (noise() - 0.5),
        "num_tokens": float(2048 * step),
        "reward": reward,
        "reward_std": 0.3 * noise(),
        "rewards/accuracy_reward/mean": reward * 0.6,
        "rewards/accuracy_reward/std": 0.4 * noise(),
        "rewards/format_reward/mean": reward * 0.4,
        "rewards/format_reward/std": 0.3 * noise(),
        "step": step,
        "step_time": 2.0 + noise(),
    }


def write_trainer_state(path: Path, kind: str, entries: int, seed: int = 0) -> Path:
    """A finished run of `entries` logged steps (logging_steps=1) plus the summary entry."""
    rnd = random.Random(seed)
    log = [_entry(kind, step, entries, rnd) for step in range(1, entries + 1)]
    log.append({"epoch": 3.0 if kind == "sft" else 2.0, "step": entries, "total_flos": 1.2e17,
                "train_loss": 0.9, "train_runtime": 86400.5, "train_samples_per_second": 9.3,
                "train_steps_per_second": 1.16})
    state = {
        "best_global_step": None, "best_metric": None, "best_model_checkpoint": None,
        "epoch": log[-1]["epoch"], "eval_steps": 500, "global_step": entries,
        "is_hyper_param_search": False, "is_local_process_zero": True,
        "is_world_process_zero": True, "log_history": log, "logging_steps": 1,
        "max_steps": entries, "num_input_tokens_seen": 0, "num_train_epochs": 3,
        "save_steps": 500, "stateful_callbacks": {"TrainerControl": {"args": {
            "should_epoch_stop": False, "should_evaluate": False, "should_log": False,
            "should_save": True, "should_training_stop": True}, "attributes": {}}},
        "total_flos": 1.2e17, "train_batch_size": 8, "trial_name": None, "trial_params": None,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
