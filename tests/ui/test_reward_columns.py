"""A reward function's required columns are part of the data check (issue 22, item 2): grpo with
`accuracy_reward` on prompt-only data was "valid" and then died at step 0 with `accuracy_reward()
missing 1 required positional argument: 'solution'`. Validation, `cockpit run --dry-run` and the
setup form now name the column before anything starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cockpit.config.presets import load_preset
from cockpit.config.rewards import reward_needs
from cockpit.config.validate import ValidationError, validate
from helpers import cockpit_cmd

GRPO = """\
trainer: grpo
model_name_or_path: demo:models/tiny-lm
dataset_name: {data}
reward_funcs: {rewards}
max_steps: 2
per_device_train_batch_size: 4
num_generations: 4
max_completion_length: 8
report_to: none
"""


def _preset(tmp_path: Path, rewards: str, data: str = "demo:data/prompt_only", extra: str = "") -> Path:
    path = tmp_path / "grpo.yaml"
    path.write_text(GRPO.format(data=data, rewards=rewards) + extra, encoding="utf-8")
    return path


def _cockpit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=dict(os.environ))


@pytest.mark.proc
def test_dry_run_and_run_name_the_column_accuracy_reward_needs(tmp_path):
    preset = _preset(tmp_path, "[accuracy_reward]")
    runs = tmp_path / "runs"
    for extra in (["--dry-run"], []):
        proc = _cockpit("run", str(preset), "--runs-dir", str(runs), *extra)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, lines
        assert "accuracy_reward needs column 'solution'" in lines[0]
        assert "demo:data/prompt_only lacks (it has prompt)" in lines[0]
        assert "cockpit.dataset.columns" in lines[0]
    assert not runs.exists() or not any(runs.iterdir())


def test_data_with_the_column_or_a_rename_to_it_passes(tmp_path, registry):
    data = tmp_path / "math.jsonl"
    data.write_text('{"prompt": "What is 2 plus 2?", "answer": "4"}\n', encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        validate(load_preset(_preset(tmp_path, "[accuracy_reward]", str(data))), registry)
    assert [p.field for p in info.value.problems] == ["dataset_name"]
    renamed = _preset(tmp_path, "[accuracy_reward]", str(data), "cockpit:\n  dataset: {columns: {answer: solution}}\n")
    validate(load_preset(renamed), registry)  # no problem: the column it reads is there
    # cockpit's own rewards read only what the trainer passes
    validate(load_preset(_preset(tmp_path, "[arith_reward, cockpit.runner.rewards.length_reward]")), registry)


def test_a_reward_function_in_a_file_is_read_from_its_source(tmp_path, registry):
    rewards = tmp_path / "my_rewards.py"
    rewards.write_text("raise SystemExit('never imported by validation')\n\n"
                       "def graded(completions, answer, *, level, prompts=None, bonus=0.0, **kwargs):\n"
                       "    return [0.0] * len(completions)\n", encoding="utf-8")
    ref = f"{rewards}:graded"
    assert reward_needs(ref, registry.rewards).columns == ("answer", "level")
    with pytest.raises(ValidationError) as info:
        validate(load_preset(_preset(tmp_path, f"['{ref}']")), registry)
    message = str(info.value)
    assert f"{ref} needs columns 'answer', 'level'" in message
    with pytest.raises(ValidationError) as info:
        validate(load_preset(_preset(tmp_path, f"['{rewards}:nothing_here']")), registry)
    assert "has no function 'nothing_here'" in str(info.value)


def test_trl_rewards_are_recorded_by_discovery_and_a_wrong_name_is_named(tmp_path, registry):
    assert registry.rewards["accuracy_reward"]["required"][-1] == "solution"
    assert registry.rewards["get_cosine_scaled_reward"]["factory"] is True
    assert reward_needs("trl.rewards.think_format_reward", registry.rewards).columns == ()
    with pytest.raises(ValidationError) as info:
        validate(load_preset(_preset(tmp_path, "[accuracy]")), registry)
    assert "reward function 'accuracy' not found — did you mean 'accuracy_reward'?" in str(info.value)
    with pytest.raises(ValidationError) as info:
        validate(load_preset(_preset(tmp_path, "[get_cosine_scaled_reward]")), registry)
    assert "builds a reward function" in str(info.value)


@pytest.mark.anyio
@pytest.mark.usefixtures("registry")
async def test_the_setup_form_shows_the_missing_column_and_does_not_say_valid(tmp_path, runs_dir):
    from textual.widgets import Static

    from cockpit.ui.widgets.setup.data_preview import DataPreview
    from helpers.ui import SETUP_SIZE, Host, app_wait, launch_button, setup_screen

    app = Host(runs_dir, load_preset(_preset(tmp_path, "[accuracy_reward]")))
    async with app.run_test(size=SETUP_SIZE) as pilot:
        screen = setup_screen(app)
        box = screen.query_one("#validation", Static)
        await app_wait(pilot, lambda: "'solution'" in str(box.content), "the reward column problem", limit=60)
        assert "✓ valid" not in str(box.content) and launch_button(app).disabled
        preview = screen.query_one(DataPreview)
        await app_wait(pilot, lambda: preview.has_class("-bad"), "the data check")
        content = preview.content
        head = str(content.renderables[0] if hasattr(content, "renderables") else content)  # the check's line
        assert head.startswith("✗ ") and "fit grpo" not in head and "'solution'" in head, head
