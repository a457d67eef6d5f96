"""Health rules from the PPO debugging recipes: each fires once when its condition holds."""

from __future__ import annotations

from cockpit.metrics.health import HealthMonitor


def _codes(records):
    return [r.data["code"] for r in records]


def test_ppo_ratio_far_from_one_warns_once_then_again_after_clearing():
    h = HealthMonitor()
    assert _codes(h.observe(1, {"val/ratio": 1.02})) == []
    assert _codes(h.observe(2, {"val/ratio": 2.0})) == ["ppo_ratio"]
    assert _codes(h.observe(3, {"val/ratio": 1000.0})) == []
    assert _codes(h.observe(4, {"val/ratio": 1.0})) == []
    assert _codes(h.observe(5, {"val/ratio": 0.1})) == ["ppo_ratio"]


def test_nan_ratio_variance_is_not_a_warning():
    h = HealthMonitor()
    assert h.observe(1, {"val/ratio_var": float("nan"), "val/ratio": 1.0}) == []


def test_falling_rlhf_reward_warns():
    h = HealthMonitor(window=5)
    out = []
    for i in range(20):
        out += h.observe(i, {"objective/rlhf_reward": 1.0 - 0.1 * i})
    assert "objective/rlhf_reward_falling" in _codes(out)


def test_rising_reward_does_not_warn():
    h = HealthMonitor(window=5)
    out = []
    for i in range(20):
        out += h.observe(i, {"reward": 0.1 * i})
    assert out == []


def test_entropy_collapse_warns():
    h = HealthMonitor()
    out = h.observe(1, {"entropy": 5.0}) + h.observe(2, {"entropy": 0.2})
    assert _codes(out) == ["entropy_collapse"]


def test_zero_reward_std_needs_three_logs_in_a_row():
    h = HealthMonitor()
    assert h.observe(1, {"frac_reward_zero_std": 1.0}) == []
    assert h.observe(2, {"frac_reward_zero_std": 1.0}) == []
    out = h.observe(3, {"frac_reward_zero_std": 0.95})
    assert _codes(out) == ["zero_reward_std"] and "num_generations" in out[0].data["fix"]


def test_nan_loss_warns_with_a_fix():
    out = HealthMonitor().observe(7, {"loss": float("nan")})
    assert _codes(out) == ["nan_loss"] and out[0].step == 7 and out[0].data["fix"]
