"""The glossary (issue 27): every default panel's metric has a meaning and what healthy looks
like, in the wording of the run's family where the same key means different things."""

from __future__ import annotations

import pytest

from cockpit.metrics import panels
from cockpit.metrics.glossary import explain, one_line


@pytest.mark.parametrize("family,shown", [("sft", panels.SFT), ("preference", panels.DPO), ("grpo", panels.GRPO),
                                          ("ppo", panels.PPO), (None, panels.GENERIC)])
def test_every_default_panels_metric_is_explained(family, shown):
    for panel in shown:
        for key in panel.keys:
            e = explain(key, family)
            assert e is not None and e.meaning and e.healthy, (family, key)


def test_the_same_key_reads_in_its_familys_words():
    assert "0.693" in explain("loss", "preference").meaning
    assert "near 0 by construction" in explain("loss", "grpo").meaning
    assert "cross-entropy" in explain("loss", "sft").meaning
    assert explain("loss", None).families == ()


def test_eval_keys_and_reward_functions_of_both_namings_are_explained():
    assert explain("eval_loss", "sft").meaning.startswith("the loss on the eval set")
    assert explain("eval_rewards/margins", "preference").meaning.startswith("on the eval set:")
    assert explain("eval_wer").meaning  # a compute_metrics metric
    assert explain("rewards/format_reward/mean", "grpo").key == "rewards/*/mean"
    assert explain("rewards/format_reward", "grpo").key == "rewards/*"  # TRL before 0.16
    assert explain("rewards/margins", "grpo").key == "rewards/margins"  # an exact key wins over a pattern
    assert one_line("a_key_of_the_runs_own") is None
