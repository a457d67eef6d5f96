"""Launch targets: the accelerate configs TRL ships (by name), the user's own, and what this
machine lacks for them, named before anything starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit.config.launcher import LauncherSpec, check, machine_problems, trl_accelerate_configs
from cockpit.errors import CockpitError
from cockpit.launch.launchers import resolved_accelerate_config
from helpers import NO_SFT_CHECK, cockpit_cmd


def test_every_accelerate_config_trl_ships_is_offered_by_name():
    assert {"single_gpu", "multi_gpu", "zero1", "zero2", "zero3", "fsdp1", "fsdp2"} <= set(trl_accelerate_configs())


def test_deepspeed_and_fsdp_are_refused_on_a_machine_without_gpus_with_every_reason_at_once():
    spec = LauncherSpec(kind="accelerate", num_processes=2, config_file=str(trl_accelerate_configs()["zero3"]))
    problems = machine_problems(spec, gpus=0)
    assert any("DeepSpeed needs GPUs" in p for p in problems)
    import importlib.util

    if importlib.util.find_spec("deepspeed") is None:
        assert any("pip install deepspeed" in p for p in problems)
    fsdp = spec.model_copy(update={"config_file": str(trl_accelerate_configs()["fsdp2"])})
    assert any("FSDP needs GPUs" in p for p in machine_problems(fsdp, gpus=0))
    assert machine_problems(fsdp.model_copy(update={"num_processes": 8}), gpus=4) == [
        "cockpit.launcher.num_processes 8 is more than this machine's 4 GPU(s) — set num_processes: 4"]
    assert machine_problems(fsdp.model_copy(update={"num_processes": 4}), gpus=4) == []


def test_an_unknown_config_name_lists_the_ones_trl_ships():
    with pytest.raises(CockpitError, match="zero3"):
        check({"config": "zero4"})


def test_the_resolved_copy_fills_in_processes_machines_and_precision():
    spec = check({"config": "single_gpu"})
    text = resolved_accelerate_config(spec.model_copy(update={"num_processes": 1}), "bf16")
    import yaml

    data = yaml.safe_load(text)
    assert data["num_processes"] == 1 and data["num_machines"] == 1 and data["mixed_precision"] == "bf16"
    assert data["distributed_type"] == "NO"


@pytest.mark.slow
def test_a_preset_launched_with_a_trl_config_keeps_the_resolved_copy_and_runs(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.run(cockpit_cmd("run", "demo-sft", "--set", "cockpit.launcher.config=single_gpu",
                                      "--set", "max_steps=2", "--set", NO_SFT_CHECK, "--runs-dir", str(runs),
                                      "--wait"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = Path(proc.stdout.splitlines()[0])
    assert (run / "accelerate.yaml").is_file()
    assert "--config_file accelerate.yaml" in (run / "command.txt").read_text()  # from the run folder
    assert "accelerate.yaml" in (run / "run.yaml").read_text()


@pytest.mark.proc
def test_a_gpu_config_on_this_machine_is_one_line_each_before_launch(tmp_path):
    if Path("/dev/nvidia0").exists():
        pytest.skip("this machine has a GPU")
    proc = subprocess.run(cockpit_cmd("run", "demo-sft", "--set", "cockpit.launcher.config=fsdp2",
                                      "--set", "cockpit.launcher.num_processes=2", "--dry-run"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "FSDP needs GPUs and this machine has none" in proc.stderr
    assert not (tmp_path / "runs").exists()
