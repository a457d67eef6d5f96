"""Each new kind of issue 27 on the shape of its problem, and quiet on a healthy run of the same
family. The series are made here (numpy, a fixed seed) where the real-runs corpus
(tests/unit/test_findings_real_runs.py) has no file showing the problem yet; their shapes are the ones
the issue saw in real files (a resume whose learning rate jumps 7.6e-6 → 2e-4, KL reaching ~150 at
two steps, DPO margins of 140 with the loss at 0 from step 20, length 206 → 640 with a flat
reward). Fast: no torch."""

from __future__ import annotations

import numpy as np
import pytest

from cockpit.findings.judge import judge_run
from cockpit.metrics.store import MetricStore
from cockpit.run import journal

N = 200


def _store(columns: dict[str, np.ndarray], *, max_steps: int | None = None,
           evals: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> MetricStore:
    """Records as a run logs them: metrics every step, evals at their steps after that step's."""
    records = [(i + 1, 0, journal.metrics(i + 1, {k: float(v[i]) for k, v in columns.items()})) for i in range(N)]
    for key, (steps, values) in (evals or {}).items():
        records += [(int(st), 1, journal.eval_metrics(int(st), {key: float(v)})) for st, v in zip(steps, values,
                                                                                                 strict=True)]
    records.sort(key=lambda t: (t[0], t[1]))
    return MetricStore.from_records([journal.run_started("x", max_steps=max_steps or N), *(r for *_, r in records)])


def _rng():
    return np.random.default_rng(0)


def _lr(peak=2e-4, warm=10):
    s = np.arange(1, N + 1)
    return np.where(s <= warm, peak * s / warm, peak * (N - s) / (N - warm))


def _sft(**over) -> dict[str, np.ndarray]:
    r = _rng()
    s = np.arange(1, N + 1)
    cols = {"loss": 2.0 * np.exp(-s / 60) + 1.0 + 0.03 * r.standard_normal(N),
            "grad_norm": 1.0 + 0.1 * r.standard_normal(N), "learning_rate": _lr(),
            "mean_token_accuracy": 0.5 + 0.3 * (1 - np.exp(-s / 60))}
    cols.update(over)
    return cols


def _grpo(**over) -> dict[str, np.ndarray]:
    r = _rng()
    cols = {"loss": 0.001 * r.standard_normal(N), "grad_norm": 0.5 + 0.05 * r.standard_normal(N),
            "learning_rate": _lr(1e-6), "reward": 0.5 + 0.002 * np.arange(N) + 0.05 * r.standard_normal(N),
            "reward_std": 0.3 + 0.02 * r.standard_normal(N), "kl": np.abs(0.02 + 0.005 * r.standard_normal(N)),
            "entropy": 0.8 + 0.02 * r.standard_normal(N), "frac_reward_zero_std": 0.1 + 0.02 * r.random(N),
            "completions/mean_length": 200 + 10 * r.standard_normal(N),
            "completions/clipped_ratio": 0.02 + 0.01 * r.random(N),
            "rewards/format/mean": 0.6 + 0.001 * np.arange(N) + 0.05 * r.standard_normal(N),
            "rewards/correct/mean": 0.3 + 0.002 * np.arange(N) + 0.05 * r.standard_normal(N)}
    cols.update(over)
    return cols


def _dpo(**over) -> dict[str, np.ndarray]:
    r = _rng()
    s = np.arange(1, N + 1)
    cols = {"loss": 0.693 - 0.2 * (1 - np.exp(-s / 80)) + 0.03 * r.standard_normal(N),
            "grad_norm": 3 + 0.3 * r.standard_normal(N), "learning_rate": _lr(5e-7),
            "rewards/accuracies": np.clip(0.5 + 0.25 * (1 - np.exp(-s / 80)) + 0.05 * r.standard_normal(N), 0, 1),
            "rewards/margins": 1.5 * (1 - np.exp(-s / 80)) + 0.1 * r.standard_normal(N),
            "rewards/chosen": 0.1 * r.standard_normal(N), "rewards/rejected": -1.5 * (1 - np.exp(-s / 80)),
            "logps/chosen": -300 + 5 * r.standard_normal(N), "logps/rejected": -310 - 20 * (1 - np.exp(-s / 80))}
    cols.update(over)
    return cols


def _warnings(store: MetricStore, trainer: str) -> dict[str, tuple[int, int] | None]:
    j = judge_run(store, None, trainer)
    return {f.kind: f.steps for f in j.findings if f.severity != "info"}


@pytest.mark.parametrize("trainer,cols", [("sft", _sft()), ("grpo", _grpo()), ("dpo", _dpo())])
def test_a_healthy_run_of_each_family_gets_no_warning(trainer, cols):
    assert _warnings(_store(cols), trainer) == {}


def _restart() -> np.ndarray:
    lr = _lr()
    lr[120:] = _lr()[: N - 120]  # a new schedule from step 121: warm-up again, then decay
    lr[119] = 7.6e-6
    return lr


CASES = [
    ("schedule_restart", "sft", lambda: _sft(learning_rate=_restart()), (120, 130)),
    ("warmup_longer_than_run", "sft", lambda: _sft(learning_rate=2e-4 * np.arange(1, N + 1) / (2 * N)), (1, N)),
    ("lr_zero", "sft", lambda: _sft(learning_rate=np.zeros(N)), (1, N - 1)),
    ("loss_spike", "sft", lambda: _sft(loss=np.where(np.arange(1, N + 1) == 150, 6.0, _sft()["loss"])), (150, 150)),
    # a grad-norm spike the loss follows (one that leaves the loss alone is info: test_findings_shapes.py)
    ("grad_spike", "sft", lambda: _sft(grad_norm=np.where(np.arange(1, N + 1) == 90, 40.0, _sft()["grad_norm"]),
                                       loss=np.where(np.isin(np.arange(1, N + 1), (90, 91)), 3.0, _sft()["loss"])),
     (90, 90)),
    ("kl_spike", "grpo", lambda: _grpo(kl=np.where(np.isin(np.arange(1, N + 1), (80, 160)), 150.0, _grpo()["kl"])),
     (80, 160)),
    ("dpo_saturated", "dpo", lambda: _dpo(
        loss=np.where(np.arange(1, N + 1) >= 20, 0.0005, 0.69),
        **{"rewards/accuracies": np.where(np.arange(1, N + 1) >= 20, 1.0, 0.6),
           "rewards/margins": np.linspace(0, 140, N), "logps/rejected": np.linspace(-433, -1784, N)}), (20, N)),
    ("chosen_logps_falling", "dpo", lambda: _dpo(**{"logps/chosen": np.linspace(-300, -420, N)}), (None, N)),
    ("length_without_reward", "grpo", lambda: _grpo(**{"completions/mean_length": np.linspace(206, 640, N),
                                                      "reward": 0.5 + 0.05 * _rng().standard_normal(N)}), (None, N)),
    ("entropy_collapse", "grpo", lambda: _grpo(entropy=np.linspace(1.0, 0.05, N)), (None, N)),
    ("kl_blowup", "grpo", lambda: _grpo(kl=np.geomspace(0.01, 5.0, N)), (None, N)),
    ("clipping_drags_reward", "grpo", lambda: _grpo(**{"completions/clipped_ratio": np.linspace(0.05, 0.6, N),
                                                      "rewards/format/mean": np.linspace(0.9, 0.2, N)}), (None, N)),
]


@pytest.mark.parametrize("kind,trainer,make,steps", CASES, ids=[c[0] for c in CASES])
def test_each_kind_fires_on_the_shape_of_its_problem_with_its_steps(kind, trainer, make, steps):
    found = _warnings(_store(make()), trainer)
    assert kind in found, found
    first, last = found[kind]
    lo, hi = steps
    if lo is not None:
        assert first <= lo <= last or abs(first - lo) <= 10, (first, last)
    assert last >= hi - 10 if hi else True


def test_a_kl_that_blew_up_inside_the_early_window_is_judged_against_its_first_points():
    """The KL at its reference (0) for 2 steps, then ~2 a token from step 3 to the end (the zoo's
    rloo-lr-too-high): the early window holds the jump, so late against early is ×1; against the
    first 3 points it is a blow-up from step 3. A KL that creeps to ~1.1 over the run (the level
    of grpo-clipped-midrun, labelled no blow-up) is under 1 in its early window: quiet. PPO's
    objective/kl, a sum over a completion's tokens, is judged at 10 a completion: ~2 is not one."""
    s = np.arange(1, N + 1)
    noise = 0.1 * _rng().standard_normal(N)
    jumped = np.where(s <= 2, 0.0, 2.0 + noise)
    assert _warnings(_store(_grpo(kl=jumped)), "grpo")["kl_blowup"] == (3, N)
    creeping = np.abs(1.1 * s / N + 0.02 * noise)
    assert "kl_blowup" not in _warnings(_store(_grpo(kl=creeping)), "grpo")
    ppo = {"objective/rlhf_reward": 0.1 + 0.01 * noise, "val/ratio": 1.0 + 0.001 * noise,
           "loss/value_avg": 0.01 + 0.001 * np.abs(noise), "loss/policy_avg": 0.01 * noise}
    assert "kl_blowup" not in _warnings(_store({**ppo, "objective/kl": jumped}), "ppo")
    assert _warnings(_store({**ppo, "objective/kl": 10 * jumped}), "ppo")["kl_blowup"] == (3, N)


def test_a_kl_that_blew_up_and_came_back_is_named_over_its_stretch():
    """The KL at ~0.02 a token, ~3 (3× the level of 1) over steps 60–100, ~0.05 after (the policy
    collapsed, as the zoo's ppo-kl-penalty-20x did): judged by where it ends it is no blow-up; over
    a stretch of 20% of the run far above the level, it is one. Twice as long at 1.5 (a creep to
    about the level, grpo-clipped-midrun's 1.03-1.17) is not far above it."""
    s = np.arange(1, N + 1)
    noise = 0.1 * _rng().standard_normal(N)
    base = np.abs(0.02 + 0.01 * noise)
    came_back = np.where((s >= 60) & (s <= 100), 3.0 + noise, np.where(s > 100, 0.05 + 0.01 * noise, base))
    first, last = _warnings(_store(_grpo(kl=came_back)), "grpo")["kl_blowup"]
    assert 60 <= first <= 62 and 98 <= last <= 100
    near_level = np.where((s >= 60) & (s <= 140), 1.5 + 0.1 * noise, base)
    assert "kl_blowup" not in _warnings(_store(_grpo(kl=near_level)), "grpo")


def test_an_rlhf_reward_that_fell_and_came_back_is_named_over_its_stretch():
    """PPO's RLHF reward at ~0.1, ~-5 over steps 60-100 (the KL penalty of a blow-up), back to ~0.1
    after: judged by its late level it did not fall; over a stretch of 20% of the run far below its
    first points, it did. A dip of 2 robust σ over the same stretch is noise, not a fall."""
    s = np.arange(1, N + 1)
    noise = _rng().standard_normal(N)
    ppo = {"val/ratio": 1.0 + 0.001 * noise, "loss/value_avg": 0.01 + 0.001 * np.abs(noise),
           "loss/policy_avg": 0.01 * noise, "objective/kl": 0.1 + 0.01 * np.abs(noise)}
    fell = np.where((s >= 60) & (s <= 100), -5.0, 0.1) + 0.02 * noise
    first, last = _warnings(_store({**ppo, "objective/rlhf_reward": fell}), "ppo")["rlhf_reward_falling"]
    assert 60 <= first <= 62 and 98 <= last <= 100
    dip = np.where((s >= 60) & (s <= 100), 0.06, 0.1) + 0.02 * noise
    assert "rlhf_reward_falling" not in _warnings(_store({**ppo, "objective/rlhf_reward": dip}), "ppo")


@pytest.mark.parametrize("far,named", [({1: 3.06}, False), ({150: 2.13, 151: 1.78}, True),
                                       ({150: 1.6, 151: 1.6}, False), ({150: 1.6, 151: 1.6, 152: 1.6}, True),
                                       ({150: 0.08, 151: 0.4}, True)])
def test_ppo_ratio_far_from_one_two_updates_in_a_row_one_at_the_articles_level(far, named):
    """val/ratio more than 0.5 from 1 for 3 updates in a row, or for 2 when one is at the PPO
    article's "too far" (2.0 and above, 0.1 and below: the zoo's ppo-many-updates-a-batch, 2.13
    then 1.78); one such update alone is not named."""
    s = np.arange(1, N + 1)
    ratio = 1.0 + 0.01 * _rng().standard_normal(N)
    for step, v in far.items():
        ratio[step - 1] = v
    cols = {"objective/rlhf_reward": 0.1 + 0.0 * s, "val/ratio": ratio, "loss/value_avg": 0.01 + 0.0 * s,
            "loss/policy_avg": 0.0 * s, "objective/kl": 0.0 * s}
    found = _warnings(_store(cols), "ppo")
    assert found.get("ppo_ratio") == ((min(far), max(far)) if named else None)


def test_a_train_eval_gap_that_widens_while_the_eval_loss_stalls():
    s = np.arange(1, N + 1)
    cols = _sft(loss=1.0 - 0.5 * s / N + 0.01 * _rng().standard_normal(N))
    es = np.arange(20, N + 1, 20)
    ev = 1.05 - 0.01 * (1 - np.exp(-es / 30))
    found = {f.kind: f for f in judge_run(_store(cols, evals={"eval_loss": (es, ev)}), None, "sft").findings}
    assert "train_eval_gap" in found and "overfitting" not in found
    assert found["train_eval_gap"].severity == "info"  # the eval loss has not turned: a note, not a warning


def test_a_kl_spike_in_grpo_is_the_kls_not_the_losss():
    kl = np.where(np.isin(np.arange(1, N + 1), (80, 160)), 150.0, _grpo()["kl"])
    loss = np.where(np.isin(np.arange(1, N + 1), (80, 160)), 6.0, _grpo()["loss"])
    found = _warnings(_store(_grpo(kl=kl, loss=loss)), "grpo")
    assert "kl_spike" in found and "loss_spike" not in found


def test_a_grpo_loss_that_rises_in_the_warm_up_is_no_warm_up_finding():
    """GRPO's loss is β·KL: it grows as the policy leaves the reference while the learning rate
    warms up (the real 1,134-step GRPO run of tests/fixtures/trainer_states: 0.0003 → 0.002). That
    says nothing about the learning rate; the SFT loss rule does not judge it."""
    s = np.arange(1, N + 1)
    kl = 0.02 + 0.3 * np.minimum(s, 20) / 20
    lr = _lr(5e-6, warm=20)
    found = judge_run(_store(_grpo(kl=kl, loss=0.001 * kl, learning_rate=lr)), None, "grpo")
    assert "loss_rises_in_warmup" not in {f.kind for f in found.findings}
    assert "loss_rises_in_warmup" not in {c.kind for c in found.checks if c.ran}
    rising = _sft(loss=np.where(s <= 20, 1.0 + 0.1 * s, 3.0 - 0.005 * s), learning_rate=lr)
    assert "loss_rises_in_warmup" in _warnings(_store(rising), "sft")  # an SFT loss that rises is still said


@pytest.mark.parametrize("finished", [False, True])
def test_a_short_run_is_judged_on_each_points_level_once_it_has_finished(finished):
    """Four logs of a 20-step GRPO run (the real one of tests/fixtures/real_runs): clipped, groups
    of one reward, a reward function at 0 throughout. While it runs that may still change (the
    rules wait for 5 or 20 points); once it reached max_steps, four points are all there is."""
    steps = [5, 10, 15, 20]
    records = [journal.run_started("x", max_steps=20 if finished else 40)]
    for s, clipped, zero in zip(steps, (0.65, 0.65, 0.4, 0.7), (0.7, 0.6, 0.6, 0.6), strict=True):
        records.append(journal.metrics(s, {"reward": 0.2, "completions/clipped_ratio": clipped,
                                           "frac_reward_zero_std": zero, "rewards/fmt/mean": 0.0,
                                           "rewards/answer/mean": 0.2 + s / 100}))
    found = _warnings(MetricStore.from_records(records), "grpo")
    if finished:
        assert found == {"clipping": (5, 20), "wasted_groups": (5, 20), "reward_never_pays": (5, 20)}
    else:
        assert found == {}


@pytest.mark.parametrize("kind,what", [("length_without_reward", "the longest completions of the window"),
                                       ("reward_never_pays", "completions at the end of the window"),
                                       ("kl_spike", "completions at the first spike")])
def test_the_new_grpo_kinds_carry_completions_from_their_window(kind, what):
    """A real tiny GRPO run's completions (tests/fixtures/findings/grpo-short-reward): a finding of
    each kind over steps 8–18 gets the completions of its window as evidence."""
    from cockpit.findings import report
    from cockpit.findings.judge import add_evidence
    from cockpit.findings.model import Finding
    from helpers import REPO

    data = report.load(REPO / "tests" / "fixtures" / "findings" / "grpo-short-reward")
    f = add_evidence(Finding(kind, (8, 18), "warning", "x"), data.library)
    rows = [(e["step"], r) for e in f.evidence if e["type"] == "completions" and e["what"] == what for r in e["rows"]]
    assert rows and all(8 <= step <= 18 and r["completion"] is not None for step, r in rows)


def test_an_epoch_that_falls_back_while_the_step_goes_on_is_a_restart_live_and_replayed(tmp_path):
    """The issue's resumed run: the epoch falls 8.0 → 0.73 between two steps and the learning rate
    jumps 7.6e-6 → 2e-4. Live (journal records) and replayed (its trainer_state.json) alike."""
    import json

    from cockpit.findings import report

    entries = []
    for step in range(1, 81):
        restarted = step > 40
        epoch = (step - 40) * 0.0183 if restarted else step * 0.2
        lr = 2e-4 * (1 - (step - 41) / 80) if restarted else 2e-4 * (1 - step / 42.1)
        entries.append({"step": step, "epoch": round(epoch, 4), "loss": 1.0, "learning_rate": lr, "grad_norm": 1.0})
    records = [journal.run_started("sft", max_steps=80)] + [
        journal.metrics(e["step"], {k: v for k, v in e.items() if k not in ("step", "epoch")}, epoch=e["epoch"])
        for e in entries]
    live = {f.kind: f for f in judge_run(MetricStore.from_records(records), None, "sft").findings}
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 80, "max_steps": 80, "epoch": entries[-1]["epoch"],
                                "log_history": entries}))
    replayed = {f.kind: f for f in report.judged_run(report.load(path)).findings}
    for found in (live, replayed):
        f = found["schedule_restart"]
        assert "the epoch fell back once while the step went on: 8 → 0.0183 at step 41" in f.summary
        assert "the learning rate went back up" in f.summary and f.steps[0] <= 41 <= f.steps[1]


def test_a_resume_that_goes_back_in_steps_is_no_epoch_fall():
    """A resume from an earlier checkpoint repeats steps (and their epochs): the store rewinds, and
    that is no restart of the data."""
    records = [journal.metrics(s, {"loss": 1.0}, epoch=s / 10) for s in range(1, 31)]
    records += [journal.metrics(s, {"loss": 1.0}, epoch=s / 10) for s in range(21, 41)]
    assert MetricStore.from_records(records).epoch_falls == []
