"""The demo's periodic samples show text, not only end-of-text tokens (a real demo run)."""

from __future__ import annotations

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch.plan import launch
from conftest import wait_for
from helpers import NO_SFT_CHECK


@pytest.mark.slow
def test_the_sft_demo_samples_show_text_after_training_starts(tmp_path):
    preset = apply_overrides(load_preset("demo-sft"), [
        "max_steps=40", "save_steps=1000", "eval_strategy=no",
        "cockpit.completions.every_steps=20", NO_SFT_CHECK])
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


@pytest.mark.slow
def test_the_dpo_demo_samples_carry_the_pair_its_loss_is_computed_on(tmp_path):
    """Issue 30: TRL's DPO trainer logs batch means only. The periodic samples of a preference
    trainer carry the training pair of their prompt as the trainer tokenized it: chosen and
    rejected, their log-probs under the policy and the frozen reference, and the margin."""
    import math

    preset = apply_overrides(load_preset("demo-dpo"), [
        "max_steps=4", "save_steps=1000", "cockpit.completions.every_steps=2"])
    run = launch(preset, tmp_path / "runs")
    wait_for(lambda: run.read_status().state in ("finished", "failed", "killed"), timeout=300)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-2000:]
    from cockpit.metrics.rundata import load_journal

    data, _ = load_journal(run.events, run.name)
    assert data.library is not None  # what the completions tab reads
    steps = data.library.steps()
    assert steps[-2:] == [2, 4], steps
    beta = float(preset.trl.get("beta", 0.1))
    refs = set()
    for step in (2, 4):
        rows = data.library.rows(step)
        assert len(rows) == 3
        for row in rows:
            pair = row["extra"]  # the tab's columns
            assert pair["chosen"].strip() and pair["rejected"].strip() and pair["chosen"] != pair["rejected"]
            c, r = pair["logps/chosen"], pair["logps/rejected"]
            rc, rr = pair["ref logps/chosen"], pair["ref logps/rejected"]
            assert all(math.isfinite(v) and v < 0 for v in (c, r, rc, rr))
            assert pair["margin"] == pytest.approx(beta * ((c - rc) - (r - rr)), rel=1e-6)
            refs.add((row["prompt"], rc, rr))
    assert len(refs) == 3, "the reference is frozen: the same log-probs at every step"
