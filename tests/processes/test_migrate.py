"""Recipe configs written for older TRL/transformers or for a project's own script: every renamed
key named with its fix at once, a corrected copy, and the project-only keys pointed to script mode."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cockpit.config.migrate import RENAMED, VALUE_RENAMED, key_problems, migrate
from cockpit.trainers.registry import known_config_keys
from helpers import REPO

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


# -- the real command (issue 22, items 18-21) ------------------------------------------------------

def _cockpit(*args: str, cwd: Path, timeout: float = 600):
    import os
    import subprocess

    from helpers import cockpit_cmd

    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=dict(os.environ))


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_bytes((RECIPES / name).read_bytes())
    return target


@pytest.mark.proc
def test_migrate_guesses_grpo_from_its_reward_keys_and_leaves_open_r1s_own_keys(tmp_path):
    recipe = _copy(tmp_path, "openr1_grpo.yaml")
    proc = _cockpit("migrate", str(recipe), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "trainer: grpo (guessed from reward_funcs, num_generations" in out and "--trainer sft" not in out
    assert "for script: it holds dataset_prompt_column, system_prompt" in out and "--for trl-cli" in out
    copy = yaml.safe_load((tmp_path / "openr1_grpo.migrated.yaml").read_text(encoding="utf-8"))
    assert copy["dataset_prompt_column"] == "problem" and copy["reward_funcs"] == ["accuracy", "format", "tag_count"]
    assert copy["dtype"] == "bfloat16" and "torch_dtype" not in copy


@pytest.mark.proc
def test_migrate_for_the_handbooks_script_keeps_dataset_mixture_and_chat_template(tmp_path):
    """The handbook's and open-r1's scripts read dataset_mixture themselves ("Either dataset_name or
    dataset_mixture must be provided" once it was turned into `datasets`)."""
    recipe = _copy(tmp_path, "handbook_sft.yaml")
    original = _load("handbook_sft.yaml")
    proc = _cockpit("migrate", str(recipe), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "trainer: sft (guessed from max_seq_length" in proc.stdout
    assert "for script: it holds chat_template, dataset_mixture" in proc.stdout
    assert "kept: chat_template, dataset_mixture" in proc.stdout
    copy = yaml.safe_load((tmp_path / "handbook_sft.migrated.yaml").read_text(encoding="utf-8"))
    assert copy["dataset_mixture"] == original["dataset_mixture"] and copy["chat_template"] == original["chat_template"]
    assert "datasets" not in copy and "chat_template_path" not in copy
    assert copy["max_length"] == 2048 and copy["eval_strategy"] == "epoch"  # what the libraries renamed
    # asked for TRL's CLI, the same recipe is mapped onto TRL's own keys
    proc = _cockpit("migrate", str(recipe), "--for", "trl-cli", "-o", str(tmp_path / "cli.yaml"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    copy = yaml.safe_load((tmp_path / "cli.yaml").read_text(encoding="utf-8"))
    assert copy["datasets"][0]["path"] == "HuggingFaceH4/ultrachat_200k" and "dataset_mixture" not in copy


@pytest.mark.proc
def test_migrate_asks_for_the_trainer_only_when_no_key_tells(tmp_path):
    recipe = _copy(tmp_path, "trl_dpo.yaml")
    proc = _cockpit("migrate", str(recipe), cwd=tmp_path)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "which trainer is it for?" in line and "give --trainer (" in line
    assert "dpo" in line and "Traceback" not in proc.stderr
    assert _cockpit("migrate", str(recipe), "--trainer", "dpo", cwd=tmp_path).returncode == 0


@pytest.mark.proc
def test_smollm3s_packing_strategy_ffd_is_renamed_bfd(tmp_path):
    recipe = _copy(tmp_path, "smollm3_sft.yaml")
    proc = _cockpit("migrate", str(recipe), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "changed: packing_strategy: ffd → bfd (TRL 0.20 renamed it" in proc.stdout
    copy = yaml.safe_load((tmp_path / "smollm3_sft.migrated.yaml").read_text(encoding="utf-8"))
    assert copy["packing_strategy"] == "bfd" and copy["packing"] is True
    # before launch, the old name is named with what it became (not "must be one of bfd, wrapped")
    proc = _cockpit("run", "demo-sft", "--set", "packing_strategy=ffd", "--dry-run", "--runs-dir",
                    str(tmp_path / "runs"), cwd=tmp_path)
    assert proc.returncode == 2
    said = proc.stderr.strip()
    assert said.startswith("cockpit: packing_strategy: 'ffd' is now 'bfd': " + VALUE_RENAMED[
        "packing_strategy"][0].why + " — set packing_strategy: bfd (`cockpit migrate "), said
    assert said.endswith("demo-sft.yaml --for trl-cli` writes a corrected copy)") and "\n" not in said, said


CHAT_RECIPE = """\
# handbook-style: an inline chat template, on the offline demo model and conversational data
model_name_or_path: demo:models/tiny-lm
dataset_name: demo:data/messages
chat_template: "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\\n' }}{% endfor %}"
max_seq_length: 64
max_steps: 2
per_device_train_batch_size: 4
logging_steps: 1
save_strategy: "no"
report_to: none
"""


@pytest.mark.slow
def test_a_migrated_chat_template_launches_from_another_folder(tmp_path):
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "chat.yaml").write_text(CHAT_RECIPE, encoding="utf-8")
    proc = _cockpit("migrate", "recipes/chat.yaml", "--for", "trl-cli", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    copy = yaml.safe_load((recipes / "chat.migrated.yaml").read_text(encoding="utf-8"))
    template = Path(copy["chat_template_path"])
    assert template.is_absolute() and template.parent == recipes and "message['role']" in template.read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = tmp_path / "runs"
    proc = _cockpit("run", "sft", str(recipes / "chat.migrated.yaml"), "--runs-dir", str(runs), "--wait",
                    "--quiet", cwd=elsewhere)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    run_yaml = yaml.safe_load(next(runs.iterdir()).joinpath("run.yaml").read_text(encoding="utf-8"))
    assert run_yaml["chat_template_path"] == str(template)


@pytest.mark.proc
def test_a_chat_template_path_is_the_presets_neighbour_and_a_missing_one_is_refused(tmp_path):
    folder = tmp_path / "recipes"
    folder.mkdir()
    (folder / "tmpl.jinja").write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    preset = folder / "p.yaml"
    preset.write_text(CHAT_RECIPE.replace('chat_template: "', 'chat_template_path: tmpl.jinja\n#: "')
                      .replace("max_seq_length", "max_length"), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _cockpit("run", "sft", str(preset), "--dry-run", "--runs-dir", str(tmp_path / "runs"), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert f"chat_template_path: {folder / 'tmpl.jinja'}" in proc.stdout
    preset.write_text(preset.read_text().replace("tmpl.jinja", "templates/missing.jinja"), encoding="utf-8")
    proc = _cockpit("run", "sft", str(preset), "--dry-run", "--runs-dir", str(tmp_path / "runs"), cwd=elsewhere)
    assert proc.returncode == 2
    assert "chat_template_path templates/missing.jinja: no such file" in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
