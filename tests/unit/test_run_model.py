"""The run model without training: journal codec, run folders, presets, validation, CLI errors."""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
from pathlib import Path

import pytest

from cockpit.config.presets import apply_overrides, load_preset, preset_from_dict
from cockpit.config.validate import ValidationError, validate
from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import Status, create_run_folder, list_checkpoints
from helpers import NO_SFT_CHECK, REPO, cockpit_cmd, hub_cache_env

# -- journal ---------------------------------------------------------------------------------


def test_journal_round_trips_nan_and_infinity():
    rec = journal.metrics(7, {"loss": float("nan"), "grad_norm": float("inf"), "x": -float("inf"),
                              "lr": 1e-4}, epoch=0.5)
    line = journal.encode(rec)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b"NaN" in line and b"Infinity" in line
    back = journal.decode(line)
    assert back.kind == "metrics" and back.step == 7
    assert math.isnan(back.data["loss"])
    assert back.data["grad_norm"] == float("inf") and back.data["x"] == -float("inf")
    assert back.data["lr"] == 1e-4 and back.data["epoch"] == 0.5


def test_journal_line_has_the_versioned_shape():
    obj = json.loads(journal.encode(journal.progress(3, 10, steps_per_s=2.0, eta_s=3.5)))
    assert set(obj) == {"v", "t", "kind", "step", "data"}
    assert obj["v"] == 1 and obj["kind"] == "progress" and obj["step"] == 3


def test_journal_refuses_newer_versions_and_garbage():
    with pytest.raises(journal.DecodeError, match="newer"):
        journal.decode(b'{"v":99,"t":0,"kind":"metrics","step":1,"data":{}}')
    for bad in (b"", b"not json", b"[1,2]", b'{"kind":"metrics"}', b"\xff\xfe"):
        with pytest.raises(journal.DecodeError):
            journal.decode(bad)


def test_journal_encodes_numpy_like_scalars():
    class Scalar:
        def item(self):
            return 2.5

    line = journal.encode(journal.metrics(1, {"loss": Scalar()}))
    assert journal.decode(line).data["loss"] == 2.5


def test_read_all_skips_partial_and_bad_lines(tmp_path):
    p = tmp_path / "events.jsonl"
    with journal.JournalWriter(p) as w:
        w.write(journal.metrics(1, {"loss": 1.0}))
    with open(p, "ab") as fh:
        fh.write(b"garbage line\n")
        fh.write(b'{"v":1,"t":0,"kind":"metrics","step":2,"data":{"loss":0.5}}\n')
        fh.write(b'{"v":1,"t":0,"kind":"metr')  # a writer mid-line
    records, skipped = journal.read_all(p)
    assert [r.step for r in records] == [1, 2]
    assert skipped == 1


# -- run folder ------------------------------------------------------------------------------


def test_run_folder_is_user_only_and_unique(tmp_path):
    a = create_run_folder(tmp_path, "x")
    b = create_run_folder(tmp_path, "x")
    assert a.path != b.path
    assert stat.S_IMODE(a.path.stat().st_mode) == 0o700


def test_status_is_written_atomically_and_read_back(tmp_path):
    run = create_run_folder(tmp_path, "s")
    run.write_status(Status(state="running", pid=123, pgid=123, trainer="sft"))
    assert run.read_status().state == "running"
    run.update_status(state="finished", exit_code=0)
    st = run.read_status()
    assert st.state == "finished" and st.exit_code == 0 and st.pid == 123
    assert not [p for p in run.path.iterdir() if p.name.endswith(".tmp")]


def test_status_from_a_newer_cockpit_is_refused_with_one_line(tmp_path):
    run = create_run_folder(tmp_path, "new")
    run.status_json.write_text(json.dumps({"v": 9, "state": "running"}))
    with pytest.raises(CockpitError, match="newer cockpit"):
        run.read_status()


def test_checkpoints_sort_by_step_number(tmp_path):
    for n in (9, 10, 100, 2):
        (tmp_path / f"checkpoint-{n}").mkdir()
    (tmp_path / "checkpoint-x").mkdir()
    assert [p.name for p in list_checkpoints(tmp_path)] == [
        "checkpoint-2", "checkpoint-9", "checkpoint-10", "checkpoint-100"]


# -- presets ---------------------------------------------------------------------------------


def test_overrides_reach_nested_sections_and_parse_yaml_values():
    p = preset_from_dict({"trainer": "sft", "max_steps": 5})
    p2 = apply_overrides(p, ["max_steps=9", "cockpit.launcher.num_processes=2",
                             "lora_target_modules=[q_proj, v_proj]", "learning_rate=1e-4",
                             "use_peft=true"])
    assert p2.trl["max_steps"] == 9
    assert p2.cockpit["launcher"]["num_processes"] == 2
    assert p2.trl["lora_target_modules"] == ["q_proj", "v_proj"]
    assert p2.trl["learning_rate"] == 1e-4 and p2.trl["use_peft"] is True
    assert p.trl["max_steps"] == 5  # the original is untouched


@pytest.mark.parametrize("text, message", [
    ("trainer: sft\nmax_steps: [1,\n", "line"),
    ("- a\n- b\n", "mapping"),
    ("max_steps: 3\n", "no 'trainer:'"),
])
def test_malformed_presets_get_one_clear_line(tmp_path, text, message):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(CockpitError, match=message) as info:
        load_preset(f)
    assert "\n" not in str(info.value)


def test_shipped_presets_all_load():
    presets = sorted((REPO / "presets").glob("*.yaml"))
    assert {p.stem for p in presets} >= {"demo-sft", "demo-dpo", "demo-grpo"}
    for p in presets:
        assert load_preset(p).trainer


# -- validation ------------------------------------------------------------------------------


def _demo(trainer="sft", **trl):
    base = {"trainer": trainer, "model_name_or_path": "demo:models/tiny-lm",
            "dataset_name": "demo:data/prompt_completion", "max_steps": 2}
    base.update(trl)
    return preset_from_dict(base)


def test_unknown_config_key_suggests_the_close_match(registry):
    with pytest.raises(CockpitError, match=r"unknown config key 'learning_rat'.*did you mean 'learning_rate'"):
        validate(_demo(learning_rat=1e-4), registry)


def test_unknown_cockpit_key_suggests_the_close_match(registry):
    p = _demo()
    p.cockpit["modles"] = {}
    with pytest.raises(ValidationError, match=r"unknown key 'cockpit\.modles'.*did you mean "
                                              r"'cockpit\.models'") as info:
        validate(p, registry)
    assert [(x.field, "\n" in x.message) for x in info.value.problems] == [("cockpit.modles", False)]


def test_unknown_trainer_suggests_the_close_match(registry):
    with pytest.raises(CockpitError, match="did you mean 'sft'"):
        validate(_demo(trainer="sfft"), registry)


def test_wrong_value_types_are_named(registry):
    with pytest.raises(CockpitError, match="max_steps must be an integer"):
        validate(_demo(max_steps="many"), registry)
    with pytest.raises(CockpitError, match="must be true or false"):
        validate(_demo(use_peft="yes please"), registry)


def test_data_without_the_trainers_columns_is_refused_naming_them(registry):
    with pytest.raises(CockpitError, match=r"no columns? 'chosen', 'rejected'.*dpo needs"):
        validate(_demo(trainer="dpo"), registry)


def test_column_renames_make_data_fit(registry, tmp_path):
    data = tmp_path / "qa.jsonl"
    data.write_text('{"question": "q", "answer": "a"}\n')
    plan = validate(preset_from_dict({
        "trainer": "sft", "model_name_or_path": "demo:models/tiny-lm", "dataset_name": str(data),
        "cockpit": {"dataset": {"columns": {"question": "prompt", "answer": "completion"}}}}), registry)
    assert plan.spec.name == "sft"


def test_missing_local_data_and_model_are_named(registry, tmp_path):
    with pytest.raises(CockpitError, match="no such file or folder"):
        validate(_demo(dataset_name=str(tmp_path / "nope.jsonl")), registry)
    with pytest.raises(CockpitError, match="no such folder"):
        validate(_demo(model_name_or_path=str(tmp_path / "no-model")), registry)


def test_reward_trainers_need_rewards(registry):
    with pytest.raises(CockpitError, match="needs rewards"):
        validate(_demo(trainer="grpo", dataset_name="demo:data/prompt_only"), registry)


def test_output_dir_with_checkpoints_is_refused_with_resume_hint(registry, tmp_path):
    (tmp_path / "out" / "checkpoint-5").mkdir(parents=True)
    with pytest.raises(CockpitError, match="cockpit resume"):
        validate(_demo(output_dir=str(tmp_path / "out")), registry)


def test_demo_references_resolve_to_the_cache(registry):
    plan = validate(_demo(), registry)
    assert plan.preset.trl["model_name_or_path"].startswith(os.environ["COCKPIT_CACHE_DIR"])
    assert Path(plan.preset.trl["dataset_name"], "train.jsonl").is_file()


def test_ppo_needs_a_reward_model_or_the_old_trl(registry):
    p = preset_from_dict({"trainer": "ppo", "model_name_or_path": "demo:models/tiny-lm",
                          "dataset_name": "demo:data/prompt_only"})
    with pytest.raises(CockpitError) as info:
        validate(p, registry)
    msg = str(info.value)
    assert ("trl==1.12" in msg) or ("reward model" in msg)


# -- CLI: bad input is one line, exit 2, no traceback, no half-made run folder ----------------


@pytest.mark.parametrize("args, needle", [
    (["run", "no-such-preset"], "no such preset"),
    (["run", "demo-sft", "--set", "learning_rat=1"], "did you mean 'learning_rate'"),
    (["run", "demo-sft", "--set", "trainer=sfft"], "did you mean 'sft'"),
    (["run", "demo-sft", "--set", "dataset_name=/nonexistent/x.jsonl"], "no such file"),
    (["run", "demo-dpo", "--set", "dataset_name=demo:data/prompt_only"], "dpo needs"),
    (["run", "demo-sft", "--set", "novalue"], "expected key=value"),
    (["watch", "nope"], "no such run"),
    (["stop", "nope"], "no such run"),
    (["replay", "/nonexistent/trainer_state.json"], "nonexistent"),
    (["fields", "sfft"], "did you mean 'sft'"),
])
@pytest.mark.proc
def test_cli_bad_input_is_one_line_and_exit_2(runs_dir, args, needle):
    proc = subprocess.run(cockpit_cmd("--runs-dir", str(runs_dir), *args), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0] and "Traceback" not in proc.stderr
    assert list(runs_dir.iterdir()) == []


@pytest.mark.proc
def test_malformed_preset_file_is_one_line(runs_dir, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer: sft\n  max_steps: : 3\n")
    proc = subprocess.run(cockpit_cmd("run", str(bad), "--runs-dir", str(runs_dir)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "bad.yaml" in proc.stderr and "line" in proc.stderr


@pytest.mark.proc
def test_dry_run_prints_config_and_command_and_starts_nothing(runs_dir):
    proc = subprocess.run(cockpit_cmd("run", "demo-grpo", "--dry-run", "--runs-dir", str(runs_dir),
                                      "--set", "max_steps=3"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "trainer: grpo" in proc.stdout and "max_steps: 3" in proc.stdout
    assert "trl grpo --config" in proc.stdout
    assert list(runs_dir.iterdir()) == []


@pytest.mark.parametrize("preset", ["sft-lora-qwen", "grpo-qwen", "dpo-ultrafeedback"])
@pytest.mark.proc
def test_real_model_presets_pass_dry_run_where_their_hub_files_can_load(runs_dir, tmp_path, preset):
    """Offline (as the tests run), a hub model or dataset loads only from the cache: without it the
    dry-run names what is missing (the run would fail ~40 s in); with it, the preset passes."""

    import yaml

    from cockpit.paths import package_presets_dir

    env = hub_cache_env(tmp_path)
    # (The SFT data check, a TRL import of its own, is not the subject: off.)
    args = cockpit_cmd("run", preset, "--dry-run", "--runs-dir", str(runs_dir), "--set", NO_SFT_CHECK)
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "not in the local Hugging Face cache" in proc.stderr, proc.stderr
    trl = yaml.safe_load((package_presets_dir() / f"{preset}.yaml").read_text(encoding="utf-8"))
    hub_cache_env(tmp_path, models=(trl["model_name_or_path"],), datasets=(trl["dataset_name"],))
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "model_name_or_path: Qwen/" in proc.stdout


@pytest.mark.proc
def test_ppo_preset_dry_run_matches_the_installed_trl(runs_dir, registry, tmp_path):
    # Offline, as the tests run: the preset's models and data are in the local cache.
    env = hub_cache_env(tmp_path, models=("EleutherAI/pythia-160m-deduped",),
                        datasets=("trl-internal-testing/descriptiveness-sentiment-trl-style",))
    proc = subprocess.run(cockpit_cmd("run", "ppo-tldr", "--dry-run", "--runs-dir", str(runs_dir)),
                          capture_output=True, text=True, timeout=120, env=env)
    if any(s.name == "ppo" for s in registry.trainers):
        assert proc.returncode == 0, proc.stderr
        assert "value_model" in proc.stdout
    else:
        assert proc.returncode == 2
        assert "trl==1.12" in proc.stderr


@pytest.mark.proc
@pytest.mark.usefixtures("registry")
def test_trainers_json_lists_at_least_twenty():
    proc = subprocess.run(cockpit_cmd("trainers", "--json"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = {t["name"] for t in json.loads(proc.stdout)}
    assert len(names) >= 20 and {"sft", "dpo", "grpo"} <= names


@pytest.mark.parametrize("launcher, needle", [
    ({"num_processes": 0}, "≥ 1"),
    ({"kind": "mpi"}, "must be one of"),
    ({"kind": "python", "num_processes": 2}, "needs kind"),
    ({"config_file": "/nonexistent/ds.yaml"}, "no such file"),
    ({"nodes": 2}, "unknown key"),
])
def test_bad_launcher_sections_are_refused(registry, launcher, needle):
    p = _demo()
    p.cockpit["launcher"] = launcher
    with pytest.raises(CockpitError, match=needle):
        validate(p, registry)


def test_launcher_command_lines():
    from cockpit.launch.launchers import runner_argv

    one = runner_argv(Path("/r"), None)
    assert one[1:] == ["-m", "cockpit.runner", "/r"]
    two = runner_argv(Path("/r"), {"kind": "torchrun", "num_processes": 2}, Path("/r/output/ck"))
    assert "torch.distributed.run" in two and two[-3:] == ["/r", "--resume", "/r/output/ck"]
