"""Which fields the setup form shows, in which section, and the `cockpit:` keys it edits like TRL
fields (split, column renames, extra models, reward functions, launch target, command). No
Textual: the screen builds its editors from these."""

from __future__ import annotations

from typing import Any

from cockpit.trainers.registry import ConfigField, TrainerSpec

MODEL_FIELDS = ("model_name_or_path", "dtype", "attn_implementation", "trust_remote_code",
                "use_peft", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules",
                "load_in_4bit", "load_in_8bit")
LORA_FIELDS = frozenset({"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules"})
COMMON_FIELDS = ("learning_rate", "max_steps", "num_train_epochs", "per_device_train_batch_size",
                 "gradient_accumulation_steps", "max_length", "logging_steps", "save_steps",
                 "eval_strategy", "bf16", "gradient_checkpointing")
TRAINER_FIELDS = ("beta", "num_generations", "max_completion_length", "max_prompt_length", "lmbda",
                  "temperature", "packing")
"""Shown after the common fields when the trainer's config has them."""
ATTENTION = ("eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")


def cockpit_field(name: str, type_: str, help_: str, default: Any = None,
                  choices: tuple[str, ...] | None = None) -> ConfigField:
    """A key of the preset's `cockpit:` section (or of a command), edited like a TRL field."""
    return ConfigField(name=name, type=type_, default=default, help=help_, choices=choices,
                       group="cockpit")


SPLIT_FIELD = cockpit_field(
    "cockpit.dataset.split", "str",
    "The split to train on, with an optional slice: train, train[:500] or train[:10%].", "train")
COLUMNS_FIELD = cockpit_field(
    "cockpit.dataset.columns", "map",
    "Rename columns to what the trainer needs, as old:new pairs, e.g. question:prompt, "
    "answer:completion.")
MODEL_ROLE_HELP = {
    "ref_model": "The frozen reference model (a local folder or hub id); empty: a copy of the model.",
    "reward_model": "A sequence-classification model that scores completions (folder or hub id).",
    "value_model": "The value head's model (folder or hub id); empty: the reward model.",
    "teacher_model": "The teacher the student learns from (a local folder or hub id).",
}
REWARDS_FIELD = cockpit_field(
    "cockpit.reward_funcs", "list[str]",
    "Reward functions, comma-separated: TRL reward names, dotted import paths "
    "(e.g. cockpit.runner.rewards.arith_reward) or path/file.py:function.")
DATA_KEYS = frozenset({"dataset_name", "dataset_config", "dataset_train_split",
                       SPLIT_FIELD.name, COLUMNS_FIELD.name,
                       "reward_funcs", REWARDS_FIELD.name})  # the reward functions' columns are in the data check

# -- launch target (cockpit.launcher) ---------------------------------------------------------

LAUNCH_KINDS = {
    "python": "one process (python -m cockpit.runner)",
    "torchrun": "torchrun: several processes on this machine",
    "accelerate": "accelerate launch: multi-GPU, DeepSpeed, FSDP",
    "slurm": "Slurm: an sbatch job",
}
KIND_FIELD = cockpit_field(
    "cockpit.launcher.kind", "str",
    "How the trainer starts: one process, several through torchrun or accelerate launch (a "
    "DeepSpeed/FSDP config TRL ships), or a Slurm job.", "python", tuple(LAUNCH_KINDS))
PROCESSES_FIELD = cockpit_field(
    "cockpit.launcher.num_processes", "int",
    "Processes to start (one per GPU); on Slurm, per node.", 1)
SLURM_FIELDS = (
    cockpit_field("cockpit.launcher.partition", "str|None", "The partition (queue) to submit to."),
    cockpit_field("cockpit.launcher.nodes", "int", "Nodes to run on (one task per node).", 1),
    cockpit_field("cockpit.launcher.gpus_per_node", "int", "GPUs asked for on each node.", 0),
    cockpit_field("cockpit.launcher.cpus_per_task", "int|None", "CPUs asked for on each node's task."),
    cockpit_field("cockpit.launcher.time", "str|None", "The time limit, e.g. 04:00:00 or 2-00:00:00."),
    cockpit_field("cockpit.launcher.account", "str|None", "The account charged for the job."),
    cockpit_field("cockpit.launcher.sbatch", "list[str]|None",
                  "Extra #SBATCH options, comma-separated, e.g. --qos=high, --mem=64G."),
    cockpit_field("cockpit.launcher.setup", "str|None",
                  "Shell lines run on each node before training (module loads, venv activation); "
                  "separate them with ; on this line."),
)
PROCESS_KINDS = frozenset({"torchrun", "accelerate", "slurm"})
CONFIG_KINDS = frozenset({"accelerate", "slurm"})


def config_field(shipped: list[str]) -> ConfigField:
    names = ", ".join(shipped) or "none found: is trl installed?"
    return cockpit_field(
        "cockpit.launcher.config", "str|None",
        f"An accelerate config TRL ships ({names}) or the path of your own "
        "(`accelerate config` writes one).")


# -- a command (script mode) ------------------------------------------------------------------

COMMAND_FIELD = cockpit_field(
    "command", "str",
    "Any training command, run unchanged with its own arguments (python train.py --lr 1e-5, "
    "trl sft --config x.yaml, accelerate launch ... ): every transformers Trainer it builds "
    "reports to the cockpit.")
CWD_FIELD = cockpit_field("cwd", "str", "The folder the command runs in (relative paths in it "
                          "start here).")
NAME_FIELD = cockpit_field("name", "str|None", "The run's name; empty: from the command "
                           "(train.py -> train).")


# -- lookups ----------------------------------------------------------------------------------


def field_of(spec: TrainerSpec | None, name: str) -> ConfigField | None:
    """A field by name: the trainer's config, the model config, the script arguments."""
    if spec is None:
        return None
    for group in (spec.fields, spec.model_config, spec.script_args, spec.dataset_mixture):
        for f in group:
            if f.name == name:
                return f
    return None


def searchable(spec: TrainerSpec) -> list[ConfigField]:
    seen: set[str] = set()
    out: list[ConfigField] = []
    for f in (*spec.fields, *spec.model_config, *spec.script_args):
        if f.name not in seen:
            seen.add(f.name)
            out.append(f)
    return out


def unknown_field(name: str, spec: TrainerSpec) -> ConfigField:
    """A key the preset holds that no config of the trainer has: shown so it can be fixed or
    cleared (validation names it, with the close match)."""
    return ConfigField(name=name, type="any", default=None, choices=None, group="unknown",
                       help=f"Not an option of {spec.config_class or spec.name}, the model config "
                            "or the script arguments — correct the value's key in the file, or "
                            "clear it to leave it out.")


def script_extra_keys() -> set[str]:
    from cockpit.config.validate import SCRIPT_EXTRA_KEYS

    return set(SCRIPT_EXTRA_KEYS)
