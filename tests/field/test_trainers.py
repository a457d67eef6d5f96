"""Every CPU-capable trainer of the installed TRL, through the real runner, on the tiny assets,
and the demo presets' periodic samples.

The runs share one process (TRL's import costs ~9 s; a tiny run 1-4 s), started once for the
module; each test then checks one run folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.config.validate import validate
from cockpit.launch.plan import prepare
from cockpit.run import journal
from helpers import stored_completions
from helpers.trainer_matrix import tiny_preset

pytestmark = pytest.mark.slow

# Keys each trainer logs of its own (measured on TRL 1.16); any trainer not listed must log something
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
ONLY_GENERIC = {"gkd"}  # GKD logs loss, grad_norm, learning_rate and nothing of its own


def _specs(registry):
    """Every CPU-capable trainer; COCKPIT_MATRIX_ONLY=ppo,sft narrows it (CI's old-TRL pass)."""
    only = {n for n in os.environ.get("COCKPIT_MATRIX_ONLY", "").split(",") if n}
    return [s for s in registry.trainers if tiny_preset(s) is not None
            and (not only or s.name in only)]


@pytest.fixture(scope="module")
def matrix(registry, tmp_path_factory):
    runs = tmp_path_factory.mktemp("matrix")
    folders = {}
    for spec in _specs(registry):
        plan = validate(tiny_preset(spec), registry)
        folders[spec.name] = prepare(plan, runs)
    # The pad-token traps users hit: a tokenizer saved without a pad token, for SFT and for GRPO
    # (which fails when handed a model name whose tokenizer has none).
    for name in ("sft", "grpo"):
        if name in folders:
            spec = registry.get(name)
            preset = tiny_preset(spec)
            preset.trl["model_name_or_path"] = "demo:models/tiny-lm-nopad"
            preset.cockpit["name"] = f"matrix-{name}-nopad"
            folders[f"{name}-nopad"] = prepare(validate(preset, registry), runs)
    # A reward function from a file the preset names (path/file.py:function).
    if "grpo" in folders:
        reward_file = runs / "my_rewards.py"
        reward_file.write_text("def brevity(completions, **kwargs):\n"
                               "    return [1.0 / (1 + len(str(c))) for c in completions]\n")
        preset = tiny_preset(registry.get("grpo"))
        preset.cockpit["reward_funcs"] = [f"{reward_file}:brevity"]
        preset.cockpit["name"] = "matrix-grpo-file-reward"
        plan = validate(preset, registry)
        assert any("reward function code will run" in w for w in plan.warnings)
        folders["grpo-file-reward"] = prepare(plan, runs)
    # The demo presets' periodic samples (written by the runner, so they share this process, first):
    # demo-sft trained long enough to write text, and demo-dpo's training pairs.
    demos = {}
    if "sft" in folders:
        demos["demo-sft"] = prepare(validate(apply_overrides(load_preset("demo-sft"), [
            "max_steps=40", "save_steps=1000", "eval_strategy=no", "cockpit.completions.every_steps=20"]),
            registry), runs)
    if "dpo" in folders:
        demos["demo-dpo"] = prepare(validate(apply_overrides(load_preset("demo-dpo"), [
            "max_steps=4", "save_steps=1000", "cockpit.completions.every_steps=2"]), registry), runs)
    folders = {**demos, **folders}
    # First, before the runner is imported, each trainer's trl.yaml goes through TRL's own CLI parser
    # (`trl <cmd> --config`), as a fresh `trl` process parses it: the process has imported TRL and
    # nothing of the cockpit yet, and the parse is TRL's import's only other user (a process of its
    # own cost a TRL import, ~9 s of CPU here). Then the runs.
    pairs = [(registry.get(n).cli_command, str(r.trl_yaml)) for n, r in folders.items()
             if n in {s.name for s in registry.trainers} and registry.get(n).cli_command]
    code = ("import importlib, json, sys\n"
            "for cmd, path in json.loads(sys.argv[1]):\n"
            "    try:\n"
            "        parser = importlib.import_module(f'trl.scripts.{cmd}').make_parser()\n"
            "        parser.parse_args_and_config(['--config', path])\n"
            "        print('PARSED', json.dumps([cmd, path]), flush=True)\n"
            "    except BaseException as exc:\n"
            "        print('NOT PARSED', json.dumps([cmd, path, repr(exc)]), flush=True)\n"
            "assert 'cockpit' not in sys.modules, 'the parse ran beside the cockpit'\n"
            "from cockpit.runner.main import main\n"
            "codes = [main([d]) for d in sys.argv[2:]]\nprint('CODES', codes)\n")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(pairs), *[str(r.path) for r in folders.values()]],
                          capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    (runs / "matrix.log").write_text(proc.stdout + proc.stderr)
    return folders, proc


def test_at_least_fifteen_trainers_run_on_cpu(registry):
    assert len([s for s in registry.trainers if tiny_preset(s) is not None]) >= 15


def _outcome(run):
    return json.loads((run.control / "outcome.json").read_text())


def _finished(matrix, key: str, trainer: str):
    """The matrix's run `key`, trained to its end (skipped where `trainer` is not in the matrix)."""
    folders, proc = matrix
    if key not in folders:
        pytest.skip(f"{trainer} not in this matrix")
    run = folders[key]
    assert _outcome(run)["state"] == "finished", f"{key}: {_outcome(run)}\n{proc.stderr[-3000:]}"
    return run


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
    if name in ONLY_GENERIC:
        assert "loss" in keys
    else:
        assert keys - GENERIC, f"{name} logged only generic keys"
    if registry.get(name).traits.head != "scorer":  # a scorer cannot generate: no samples
        comps = stored_completions(run)
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
    if "sft" not in folders:
        pytest.skip("sft not in this matrix")
    records, _ = journal.read_all(folders["sft"].events)
    codes = {r.data.get("code") for r in records if r.kind == "warning"}
    assert "cpu_only" in codes


@pytest.mark.parametrize("name", ["sft-nopad", "grpo-nopad"])
def test_a_tokenizer_without_pad_token_gets_one_and_trains(matrix, name):
    run = _finished(matrix, name, name.split("-")[0])
    records, _ = journal.read_all(run.events)
    pad = [r for r in records if r.kind == "warning" and r.data.get("code") == "pad_token"]
    assert pad and "no pad token" in pad[0].data["message"]


def test_ppo_value_model_defaults_to_the_reward_model(matrix):
    """A common PPO trap: value_model=None crashes; the preset gives only a reward model."""
    folders, _ = matrix
    if "ppo" not in folders:
        pytest.skip("PPO needs TRL <= 1.12")
    run = folders["ppo"]
    assert "value_model" not in (run.run_yaml.read_text())
    assert _outcome(run)["state"] == "finished"


def test_trl_yaml_is_accepted_by_trls_own_cli_parser(matrix, registry):
    """For trainers TRL's CLI has, the run folder's trl.yaml parses with `trl <cmd> --config` (in the
    matrix's process, before it imports the cockpit: see `matrix`)."""
    folders, proc = matrix
    pairs = [[registry.get(n).cli_command, str(r.trl_yaml)] for n, r in folders.items()
             if n in {s.name for s in registry.trainers} and registry.get(n).cli_command]
    if not pairs:
        pytest.skip("no CLI trainer in this matrix")
    said = proc.stdout.splitlines()
    assert not [ln for ln in said if ln.startswith("NOT PARSED")], [ln for ln in said if ln.startswith("NOT PARSED")]
    assert [json.loads(ln.removeprefix("PARSED ")) for ln in said if ln.startswith("PARSED ")] == pairs, \
        proc.stderr[-3000:]


def test_a_reward_function_from_a_named_file_is_used(matrix):
    run = _finished(matrix, "grpo-file-reward", "grpo")
    records, _ = journal.read_all(run.events)
    metrics = [r for r in records if r.kind == "metrics" and not r.data.get("summary")]
    assert any("rewards/brevity/mean" in r.data for r in metrics)
    comps = stored_completions(run)
    assert "brevity" in comps[-1].data["rows"][0]["rewards"]


# -- the demo presets' periodic samples ----------------------------------------------------------


def test_the_sft_demo_samples_show_text_after_training_starts(matrix):
    """The demo's periodic samples show text, not only end-of-text tokens (40 steps of demo-sft)."""
    run = _finished(matrix, "demo-sft", "sft")
    from cockpit.metrics.rundata import load_journal

    data, _ = load_journal(run.events, run.name)  # as the completions tab reads them
    samples = {step: [row["completion"] for row in data.completions.rows(step)]
               for step in data.completions.steps()}
    assert 40 in samples, samples
    for step, completions in samples.items():
        for text in completions:
            visible = text.replace("<|endoftext|>", "").replace("<|pad|>", "").strip()
            assert visible, f"step {step}: {completions}"


def test_the_dpo_demo_samples_carry_the_pair_its_loss_is_computed_on(matrix):
    """Issue 30: TRL's DPO trainer logs batch means only. The periodic samples of a preference
    trainer carry the training pair of their prompt as the trainer tokenized it: chosen and
    rejected, their log-probs under the policy and the frozen reference, and the margin."""
    import math

    import yaml

    run = _finished(matrix, "demo-dpo", "dpo")
    from cockpit.metrics.rundata import load_journal

    data, _ = load_journal(run.events, run.name)
    assert data.library is not None  # what the completions tab reads
    steps = data.library.steps()
    assert steps[-2:] == [2, 4], steps
    beta = float(yaml.safe_load(run.run_yaml.read_text(encoding="utf-8")).get("beta", 0.1))
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
