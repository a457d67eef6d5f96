"""The four shapes the held-out real runs of issue 41 showed, on series of those shapes (numpy, a
fixed seed; the numbers are the issue's), and quiet on healthy runs of the same family. The real
files that show them are judged in tests/unit/test_findings_real_runs.py (the corpus and the zoo):

- a GRPO reward that never rose over 400 steps (40-step means between −0.29 and −0.19) while KL
  grew 0.0011 → 0.0040;
- a causal-LM loss at ~4× its level (about 6 → 21–25) over steps ~1500–2200, that came back;
- isolated grad-norm spikes with no effect on the loss (82 at step 22,360 of 40,000), and a DPO run
  whose median grad norm is 7.15 with a quiet stretch at 2.79 and its largest value 63.8 at 193;
- the epoch falling back to 0 three times (5,050, 52,050, 66,050) with a constant learning rate.

Fast: no torch."""

from __future__ import annotations

import numpy as np

from cockpit.findings.judge import judge_run
from cockpit.metrics.store import MetricStore
from cockpit.run import journal


def _store(steps: np.ndarray, columns: dict[str, np.ndarray], *, epochs: np.ndarray | None = None,
           max_steps: int | None = None) -> MetricStore:
    recs = [journal.metrics(int(s), {k: float(v[i]) for k, v in columns.items()},
                            epoch=None if epochs is None else float(epochs[i]))
            for i, s in enumerate(steps)]
    return MetricStore.from_records([journal.run_started("x", max_steps=max_steps or int(steps[-1])), *recs])


def _by_kind(store: MetricStore, family: str | None = None):
    judged = judge_run(store, None, family=family)
    return {f.kind: f for f in judged.findings}, {c.kind: c.note for c in judged.checks}


# -- a reward that does not improve while the policy moves ----------------------------------------


def _grpo_400(reward: np.ndarray, kl: np.ndarray) -> MetricStore:
    rng = np.random.default_rng(1)
    s = np.arange(1, 401)
    return _store(s, {"reward": reward, "reward_std": 0.3 + 0.02 * rng.standard_normal(400), "kl": kl,
                      "loss": 0.04 * kl, "grad_norm": 0.3 + 0.03 * rng.standard_normal(400),
                      "learning_rate": np.full(400, 1e-6), "frac_reward_zero_std": 0.1 + 0.02 * rng.random(400),
                      "entropy": 0.8 + 0.02 * rng.standard_normal(400)}, epochs=s / 60)


def test_a_reward_that_never_rose_while_kl_grew_is_named_over_the_run():
    rng = np.random.default_rng(0)
    s = np.arange(1, 401)
    wander = np.repeat(rng.uniform(-0.29, -0.19, 10), 40)  # 40-step means between −0.29 and −0.19
    reward = wander + 0.15 * rng.standard_normal(400)
    kl = np.linspace(0.0011, 0.0040, 400) * (1 + 0.1 * rng.standard_normal(400))
    found, _ = _by_kind(_grpo_400(reward, kl), "grpo")
    flat = found["reward_flat"]
    assert flat.steps == (1, 400) and flat.severity == "warning"
    assert "400 logged steps, 6.7 epochs" in flat.summary and "while kl grew" in flat.summary
    assert {e["key"] for e in flat.evidence} == {"reward", "kl"}
    assert "reward_hacking" not in found and s[-1] == 400


def test_a_reward_that_rises_slowly_through_its_noise_is_no_finding():
    rng = np.random.default_rng(0)
    reward = np.linspace(-0.25, 0.05, 400) + 0.15 * rng.standard_normal(400)
    kl = np.linspace(0.0011, 0.0040, 400)
    found, notes = _by_kind(_grpo_400(reward, kl), "grpo")
    assert "reward_flat" not in found and notes["reward_flat"].startswith("the reward rose")


def test_a_flat_reward_from_a_policy_that_does_not_move_is_not_the_rewards_story():
    rng = np.random.default_rng(0)
    reward = -0.24 + 0.15 * rng.standard_normal(400)
    found, notes = _by_kind(_grpo_400(reward, np.full(400, 0.002)), "grpo")
    assert "reward_flat" not in found and notes["reward_flat"].startswith("the policy did not move")


# -- a loss that moves to a new level ---------------------------------------------------------


def test_a_loss_at_four_times_its_level_for_800_steps_is_a_regime_change_judged_against_the_level_before():
    rng = np.random.default_rng(0)
    s = np.arange(10, 4001, 10)  # logged every 10 steps
    loss = 6.0 + 0.4 * rng.standard_normal(len(s))
    loss[:20] = np.linspace(11, 6.5, 20)  # the start falls
    high = (s >= 1500) & (s <= 2200)
    loss[high] = rng.uniform(21, 25, high.sum())
    loss[s > 3400] = 6.0 * 4 + rng.standard_normal((s > 3400).sum())  # rose again
    found, _ = _by_kind(_store(s, {"loss": loss, "learning_rate": np.full(len(s), 2e-5),
                                    "grad_norm": 1 + 0.1 * rng.random(len(s))}))
    shift = found["loss_level_shift"]
    assert shift.severity == "warning"
    assert 1400 <= shift.steps[0] <= 1600 and shift.steps[1] == 4000
    assert "about 6.081 before, 23.13 there (×3.8)" in shift.summary and "long stretches" in shift.summary
    assert shift.summary.count("logged points)") == 2  # both stretches, each with its steps


def test_a_healthy_sft_loss_has_no_level_shift():
    rng = np.random.default_rng(0)
    s = np.arange(1, 2001)
    epochs = s / 500  # 4 epochs: the loss steps down at each
    loss = 2.0 * np.exp(-s / 400) + 0.8 - 0.1 * np.floor(epochs) + 0.05 * rng.standard_normal(len(s))
    found, notes = _by_kind(_store(s, {"loss": loss, "learning_rate": np.full(len(s), 2e-5)}, epochs=epochs))
    assert "loss_level_shift" not in found and notes["loss_level_shift"].startswith("the loss's level")


# -- grad-norm spikes against the run's typical level -----------------------------------------


def test_an_isolated_grad_norm_spike_that_leaves_the_loss_alone_is_info_and_names_the_largest():
    rng = np.random.default_rng(0)
    s = np.arange(10, 40001, 10)
    grad = np.abs(1.5 + 0.3 * rng.standard_normal(len(s)))
    grad[s == 22360] = 82.0
    loss = 1.2 + 0.05 * rng.standard_normal(len(s))
    found, _ = _by_kind(_store(s, {"loss": loss, "grad_norm": grad, "learning_rate": np.full(len(s), 1e-5)}))
    spike = found["grad_spike"]
    assert spike.severity == "info" and spike.steps == (22360, 22360)
    assert "the largest 82 at step 22,360" in spike.summary and "the loss did not move" in spike.summary


def test_a_grad_norm_spike_the_loss_follows_is_a_warning():
    rng = np.random.default_rng(0)
    s = np.arange(10, 40001, 10)
    grad = np.abs(1.5 + 0.3 * rng.standard_normal(len(s)))
    grad[s == 22360] = 82.0
    loss = 1.2 + 0.05 * rng.standard_normal(len(s))
    loss[(s >= 22370) & (s <= 22390)] = 3.5
    found, _ = _by_kind(_store(s, {"loss": loss, "grad_norm": grad, "learning_rate": np.full(len(s), 1e-5)}))
    assert found["grad_spike"].severity == "warning" and "the loss rose after it (the spike at step 22,360)" in \
        found["grad_spike"].summary


def test_spikes_are_judged_against_the_runs_median_not_a_quiet_stretch():
    """A 200-step DPO run: grad norm about 7.15, a quiet stretch at about 2.8, 63.8 at step 193."""
    rng = np.random.default_rng(0)
    s = np.arange(1, 201)
    grad = np.abs(7.15 + 2.0 * rng.standard_normal(200))
    grad[120:170] = np.abs(2.79 + 0.3 * rng.standard_normal(50))
    grad[150] = 30.0  # ×10 the quiet stretch, ×4 the run's median
    grad[192] = 63.8
    loss = 0.69 - 0.001 * s + 0.02 * rng.standard_normal(200)
    found, notes = _by_kind(_store(s, {"loss": loss, "grad_norm": grad, "rewards/margins": 0.01 * s,
                                       "logps/chosen": -50 + 0.0 * s, "learning_rate": np.full(200, 5e-7)}),
                            "preference")
    assert "grad_spike" not in found
    assert "the largest grad_norm is 63.8 at step 193" in notes["grad_spike"]
    from cockpit.findings.series import fmt

    # the first 16 points (a block) are the warm-up, not judged
    assert f"the run's median is {fmt(float(np.median(grad[16:])))}" in notes["grad_spike"]


# -- every epoch discontinuity, with a fix that matches what changed --------------------------


def test_every_epoch_fall_is_named_and_a_constant_learning_rate_is_no_restart():
    s = np.arange(50, 100001, 50)
    epochs = s / 11000.0
    for at in (5050, 52050, 66050):  # the epoch starts over, the step goes on
        epochs[s >= at] = (s[s >= at] - at) / 11000.0 + 0.0001
    store = _store(s, {"loss": 0.3 + 0.0 * s, "learning_rate": np.full(len(s), 1e-5)}, epochs=epochs)
    restart = _by_kind(store)[0]["schedule_restart"]
    assert restart.steps == (5050, 66050)
    assert "fell back 3 times" in restart.summary
    for at in ("5,050", "52,050", "66,050"):
        assert f"at step {at}" in restart.summary
    assert "the learning rate did not restart (constant at 1e-05)" in restart.summary
    assert "learning rate jumped" not in restart.fix and "epoch counter started over" in restart.fix


def test_a_learning_rate_restart_keeps_the_schedule_fix():
    s = np.arange(1, 401)
    lr = np.where(s <= 200, 2e-4 * (200 - s) / 200, 2e-4 * (400 - s) / 200)
    restart = _by_kind(_store(s, {"loss": 1.0 + 0.0 * s, "learning_rate": lr}))[0]["schedule_restart"]
    assert "learning rate jumped back up" in restart.fix


# -- a reward model at chance -----------------------------------------------------------------


def test_a_reward_model_whose_accuracy_stays_at_a_coin_toss_is_named_and_one_that_learns_is_not():
    rng = np.random.default_rng(0)
    s = np.arange(1, 41)
    chance = rng.choice([0.375, 0.5, 0.625], 40)
    learns = np.clip(0.5 + 0.45 * (1 - np.exp(-s / 10)) + 0.05 * rng.standard_normal(40), 0, 1)
    for acc, fires in ((chance, True), (learns, False)):
        store = _store(s, {"loss": 0.69 - 0.3 * (acc - 0.5), "accuracy": acc, "margin": acc - 0.5,
                           "learning_rate": np.full(40, 1e-3)})
        found, notes = _by_kind(store)
        assert ("reward_model_at_chance" in found) == fires, notes["reward_model_at_chance"]
    assert found == {} or "reward_model_at_chance" not in found


def test_a_reward_model_that_learns_shuffled_pairs_by_heart_is_judged_on_its_held_out_pairs():
    rng = np.random.default_rng(0)
    s = np.arange(1, 41)
    train = np.clip(0.5 + 0.4 * (1 - np.exp(-s / 10)) + 0.05 * rng.standard_normal(40), 0, 1)
    recs = [journal.run_started("reward", max_steps=40)]
    for i in s:
        recs.append(journal.metrics(int(i), {"loss": 0.5, "accuracy": float(train[i - 1]), "margin": 0.5,
                                             "learning_rate": 1e-3}))
        if i % 5 == 0:
            recs.append(journal.eval_metrics(int(i), {"eval_loss": 0.7, "eval_accuracy": float(rng.choice([0.4375, 0.5,
                                                                                                            0.5625])),
                                                      "eval_margin": 0.01}))
    found = {f.kind: f for f in judge_run(MetricStore.from_records(recs), None).findings}
    chance = found["reward_model_at_chance"]
    assert "eval_accuracy stayed at chance" in chance.summary and "training accuracy went" in chance.summary


def test_the_spike_baseline_is_the_block_medians_line_np_interp_draws():
    """The spike rules' baseline (a line through the block medians at the blocks' centres, flat
    outside them) is computed without `np.interp`'s search; it is the same line, for even and odd
    blocks, short and long series."""
    from cockpit.findings.general import _between_centres

    rng = np.random.default_rng(0)
    for b in (4, 5, 16):
        for n in (b, b + 3, 1001, 20_000):
            nb = n // b
            med = rng.random(nb)
            want = np.interp(np.arange(n), np.arange(nb) * b + (b - 1) / 2, med)
            assert np.allclose(_between_centres(med, b, n), want, rtol=1e-12, atol=1e-12), (b, n)
