"""Every CPU-capable trainer of the installed TRL, through the real runner, on the tiny assets.

The runs share one process (TRL's import costs ~9 s; a tiny run 1-4 s), started once for the
module; each test then checks one trainer's run folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core import journal
from cockpit.core.launch import prepare
from cockpit.core.validate import validate
from trainer_matrix import tiny_preset

pytestmark = pytest.mark.slow

# Keys each trainer logs of its own (TRL-NOTES.md); any trainer not listed must log something
# beyond the generic ones.
OWN_KEYS = {
    "sft": {"mean_token_accuracy", "entropy"},
    "dpo": {"rewards/margins", "rewards/accuracies"},
    "bema_for_ref_model": {"rewards/margins"},
    "tpo": {"rewards/margins"},
    "kto": {"kl"},
    "cpo": {"nll_loss"},
    "orpo": {"log_odds_ratio"},
    "reward": {"accuracy", "margin"},
    "grpo": {"reward", "reward_std", "frac_reward_zero_std"},
    "gmpo": {"reward"},
    "rloo": {"reward"},
    "online_dpo": {"objective/kl", "objective/rlhf_reward"},
    "ppo": {"objective/kl", "objective/rlhf_reward", "val/ratio"},
}
GENERIC = {"epoch", "learning_rate", "grad_norm", "loss", "summary", "train_loss", "train_runtime",
           "train_samples_per_second", "train_steps_per_second", "total_flos"}
TRAINER_LOG_SAMPLERS = {"grpo", "rloo", "gmpo"}


def _specs(registry):
    return [s for s in registry.trainers if tiny_preset(s) is not None]


@pytest.fixture(scope="module")
def matrix(registry, tmp_path_factory):
    runs = tmp_path_factory.mktemp("matrix")
    folders = {}
    for spec in _specs(registry):
        plan = validate(tiny_preset(spec), registry)
        folders[spec.name] = prepare(plan, runs)
    code = ("import sys\nfrom cockpit.runner.main import main\n"
            "codes = [main([d]) for d in sys.argv[1:]]\nprint('CODES', codes)\n")
    proc = subprocess.run([sys.executable, "-c", code, *[str(r.path) for r in folders.values()]],
                          capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    (runs / "matrix.log").write_text(proc.stdout + proc.stderr)
    return folders, proc


def test_at_least_fifteen_trainers_run_on_cpu(registry):
    assert len(_specs(registry)) >= 15


def _outcome(run):
    return json.loads((run.control / "outcome.json").read_text())


@pytest.mark.parametrize("name", ["sft", "dpo", "kto", "reward", "grpo", "rloo", "distillation",
                                  "cpo", "orpo", "online_dpo", "gkd", "gold", "gmpo", "a2po", "tpo",
                                  "sdft", "sdpo", "iw_opd", "bema_for_ref_model", "ppo"])
def test_trainer_runs_through_the_runner(matrix, registry, name):
    folders, proc = matrix
    if name not in folders:
        pytest.skip(f"{name} is not in the installed TRL {registry.trl_version}")
    run = folders[name]
    outcome = _outcome(run)
    assert outcome["state"] == "finished", f"{name}: {outcome}\n{proc.stderr[-3000:]}"
    records, skipped = journal.read_all(run.events)
    assert skipped == 0
    kinds = {r.kind for r in records}
    assert {"phase", "run_started", "metrics", "progress", "checkpoint"} <= kinds
    started = next(r for r in records if r.kind == "run_started")
    assert started.data["trainer"] == name and started.data["versions"]["trl"] == registry.trl_version
    metrics = [r for r in records if r.kind == "metrics" and not r.data.get("summary")]
    assert [r.step for r in metrics] == [1, 2]
    keys = set().union(*(r.data for r in metrics))
    assert OWN_KEYS.get(name, set()) <= keys, f"{name} logged {sorted(keys)}"
    assert keys - GENERIC, f"{name} logged only generic keys"
    if name != "reward":
        comps = [r for r in records if r.kind == "completions"]
        assert comps, f"{name}: no completions"
        row = comps[-1].data["rows"][0]
        assert {"prompt", "completion", "rewards", "advantage"} <= set(row)
        if name in TRAINER_LOG_SAMPLERS:
            assert comps[-1].data["source"] == "trainer_logs"
            assert set(row["rewards"]) >= {"arith_reward", "length_reward"}
    out = run.output
    assert (out / "trainer_state.json").is_file()
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()
    assert (out / "model.safetensors").is_file() or (out / "adapter_model.safetensors").is_file()


def test_cpu_only_machine_turns_bf16_off_with_a_warning(matrix):
    folders, _ = matrix
    records, _ = journal.read_all(folders["sft"].events)
    codes = {r.data.get("code") for r in records if r.kind == "warning"}
    assert "cpu_only" in codes
