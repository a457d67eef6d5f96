"""A tiny preset for every CPU-capable trainer of the installed TRL, on the offline demo assets.

Built from the registry (what the installed TRL ships and which columns each trainer takes),
so a trainer TRL adds later is exercised without a code change here as long as it takes one of
the demo data formats.
"""

from __future__ import annotations

from typing import Any

from cockpit.config.presets import Preset
from cockpit.demo.datasets import DATA_FORMATS
from cockpit.trainers.registry import TrainerSpec

# Settings that keep a run to a couple of seconds; each applies only where the config has it.
TINY = {
    "max_steps": 2,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "learning_rate": 1e-4,
    "logging_steps": 1,
    "save_steps": 2,
    "report_to": "none",
    "seed": 0,
    "max_length": 64,
    "max_prompt_length": 32,
    "max_completion_length": 8,
    "max_new_tokens": 8,
    "num_generations": 2,
    "num_value_samples": 2,
    "dataloader_num_workers": 0,
    "disable_tqdm": True,
    # PPO (TRL <= 1.12) counts episodes, not steps: 8 episodes of batch 4 are 2 updates.
    "total_episodes": 8,
    "response_length": 8,
    "num_ppo_epochs": 1,
    "num_mini_batches": 1,
    "local_rollout_forward_batch_size": 4,
    "num_sample_generations": 2,
}


def demo_format_for(spec: TrainerSpec) -> str | None:
    by_columns = {tuple(cols): name for name, cols in DATA_FORMATS.items()}
    for cols in spec.data_formats:
        if tuple(cols) in by_columns:
            return by_columns[tuple(cols)]
    return None


def tiny_preset(spec: TrainerSpec) -> Preset | None:
    fmt = demo_format_for(spec)
    if fmt is None or spec.needs:
        return None
    fields = {f.name for f in spec.fields}
    trl: dict[str, Any] = {"model_name_or_path": "demo:models/tiny-lm",
                           "dataset_name": f"demo:data/{fmt}"}
    trl.update({k: v for k, v in TINY.items() if k in fields})
    cockpit: dict[str, Any] = {"name": f"matrix-{spec.name}"}
    if "reward_funcs" in spec.extra_models:
        cockpit["reward_funcs"] = ["arith_reward", "length_reward"]
    if "teacher_model" in spec.extra_models:
        if "teacher_model_name_or_path" in fields:
            trl["teacher_model_name_or_path"] = "demo:models/tiny-lm"
        else:
            cockpit["models"] = {"teacher_model": "demo:models/tiny-lm"}
    if "value_model" in spec.extra_models:
        cockpit["models"] = {"reward_model": "demo:models/tiny-rm"}
    if spec.traits.head == "scorer":
        trl["model_name_or_path"] = "demo:models/tiny-rm"
    else:
        cockpit["completions"] = {"every_steps": 1, "num_prompts": 2, "max_new_tokens": 4}
    return Preset(trainer=spec.name, trl=trl, cockpit=cockpit)
