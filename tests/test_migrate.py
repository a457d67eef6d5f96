"""Recipe configs written for older TRL/transformers or for a project's own script: every renamed
key named with its fix at once, a corrected copy, and the project-only keys pointed to script mode."""

from __future__ import annotations

from pathlib import Path

import yaml

from cockpit.config.migrate import RENAMED, key_problems, migrate
from cockpit.trainers.registry import known_config_keys
from conftest import REPO

RECIPES = REPO / "tests" / "fixtures" / "recipes"


def _load(name: str) -> dict:
    return yaml.safe_load((RECIPES / name).read_text(encoding="utf-8"))


def test_every_renamed_key_in_a_handbook_recipe_is_named_with_its_fix_at_once(registry):
    known = known_config_keys(registry.get("sft"))
    problems, rest = key_problems(_load("handbook_sft.yaml"), known)
    named = {p.key for p in problems}
    assert {"torch_dtype", "use_flash_attention_2", "chat_template", "dataset_mixture", "evaluation_strategy",
            "max_seq_length", "overwrite_output_dir", "warmup_ratio"} <= named
    by_key = {p.key: p.message for p in problems}
    assert "'dtype'" in by_key["torch_dtype"] and "cockpit migrate" in by_key["torch_dtype"]
    assert "'max_length'" in by_key["max_seq_length"]
    assert "removed" in by_key["overwrite_output_dir"]
    assert rest == []


def test_the_table_only_renames_to_keys_the_installed_libraries_know(registry):
    known = set().union(*(known_config_keys(registry.get(n)) for n in ("sft", "dpo", "grpo")))
    for old, entry in RENAMED.items():
        assert old not in known or old == "max_prompt_length", f"{old} is still a key of the installed TRL"
        if entry.new is not None:
            assert entry.new in known, f"{old} → {entry.new}: not a key of the installed TRL"


def test_migrating_a_handbook_recipe_writes_what_trl_takes(registry):
    known = known_config_keys(registry.get("sft"))
    m = migrate(_load("handbook_sft.yaml"), known)
    c = m.config
    assert c["dtype"] == "bfloat16" and c["attn_implementation"] == "flash_attention_2"
    assert c["max_length"] == 2048 and c["eval_strategy"] == "epoch" and c["warmup_steps"] == 0.1
    assert c["chat_template_path"] == "chat_template.jinja" and "<|im_start|>" in m.files["chat_template.jinja"]
    assert c["datasets"] == [{"path": "HuggingFaceH4/ultrachat_200k", "name": "default", "split": "train_sft",
                              "columns": ["messages"]}]
    assert c["test_split_size"] == 0.05
    assert "overwrite_output_dir" not in c and "torch_dtype" not in c
    assert "dataset_mixture.weight" in m.unmapped and "0.5" in m.unmapped["dataset_mixture.weight"]
    assert set(c) <= known


def test_an_open_r1_recipe_names_its_project_only_keys(registry):
    known = known_config_keys(registry.get("grpo"))
    m = migrate(_load("openr1_grpo.yaml"), known)
    assert {"dataset_prompt_column", "system_prompt"} <= set(m.unmapped)
    assert m.config["dataset_prompt_column"] == "problem"  # kept: the project's script reads it
    assert m.config["dtype"] == "bfloat16"
    assert "torch_dtype" not in m.config


def test_a_preset_with_cockpit_sections_keeps_them(registry):
    m = migrate({"trainer": "sft", "cockpit": {"name": "x"}, "torch_dtype": "float32"},
                known_config_keys(registry.get("sft")))
    assert m.config == {"trainer": "sft", "cockpit": {"name": "x"}, "dtype": "float32"}


def test_fixture_note_exists():
    assert (RECIPES / "README.md").is_file() and Path(RECIPES / "handbook_sft.yaml").is_file()
