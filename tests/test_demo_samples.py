"""The demo's periodic samples show text, not only end-of-text tokens (a real demo run)."""

from __future__ import annotations

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch.plan import launch
from conftest import wait_for


@pytest.mark.slow
def test_the_sft_demo_samples_show_text_after_training_starts(tmp_path):
    preset = apply_overrides(load_preset("demo-sft"), [
        "max_steps=40", "save_steps=1000", "eval_strategy=no",
        "cockpit.completions.every_steps=20"])
    run = launch(preset, tmp_path / "runs")
    wait_for(lambda: run.read_status().state in ("finished", "failed", "killed"), timeout=300)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-2000:]
    from cockpit.metrics.rundata import load_journal

    data, _ = load_journal(run.events, run.name)  # as the completions tab reads them
    samples = {step: [row["completion"] for row in data.completions.rows(step)]
               for step in data.completions.steps()}
    assert 40 in samples, samples
    for step, completions in samples.items():
        for text in completions:
            visible = text.replace("<|endoftext|>", "").replace("<|pad|>", "").strip()
            assert visible, f"step {step}: {completions}"
