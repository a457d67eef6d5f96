"""Script mode: a training script cockpit has never seen, run unchanged under the supervisor, gets
the same journal, states and stop/resume as a preset run. Real scripts, real training, no mocks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cockpit.launch.plan import start_supervisor
from cockpit.launch.script import default_name, prepare_script
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import NO_SFT_CHECK, REPO, hub_cache_env, wait_for, wait_journal_end

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


@pytest.fixture(scope="module")
def demo():
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    return ensure_all(demo_dir())


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _run_to_end(command: list[str], cwd: Path, runs_dir: Path, **kw) -> RunFolder:
    run = prepare_script(command, cwd=cwd, runs_dir=runs_dir, **kw)
    start_supervisor(run)
    wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=300)
    wait_journal_end(run)
    return run


# A hand-written GRPO script (pipeline.py's GRPO stage): test_field's
# test_a_hand_written_grpo_script_is_watched_with_its_python_reward_and_completions, whose run is
# shared with the test of a script's own GRPOTrainer subclass.


@pytest.mark.slow
def test_trl_own_sft_script_with_a_config_runs_under_script_mode(tmp_path, runs_dir, demo):
    config = tmp_path / "sft.yaml"
    config.write_text(textwrap.dedent(f"""\
        model_name_or_path: {demo / "models" / "tiny-lm"}
        dataset_name: {demo / "data" / "prompt_completion"}
        output_dir: {tmp_path / "sft-out"}
        max_steps: 3
        logging_steps: 1
        save_strategy: "no"
        per_device_train_batch_size: 4
        max_length: 64
        report_to: none
        use_cpu: true
        bf16: false
        """), encoding="utf-8")
    run = _run_to_end([sys.executable, "-m", "trl.scripts.sft", "--config", str(config)], tmp_path, runs_dir)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-2000:]
    records = _records(run)
    assert next(r for r in records if r.kind == journal.RUN_STARTED).data["trainer"] == "sft"
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2, 3]
    assert run.name.startswith("sft-")


@pytest.mark.proc
def test_a_users_own_sitecustomize_still_runs_under_the_hook(tmp_path, runs_dir):
    site = tmp_path / "usersite"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n", encoding="utf-8")
    probe = tmp_path / "probe.py"
    probe.write_text("import os, sys\nprint('site:', os.environ.get('USER_SITE_RAN'))\n"
                     "print('hooked:', any(type(f).__name__ == '_TrainerImportHook' for f in sys.meta_path))\n",
                     encoding="utf-8")
    run = _run_to_end([sys.executable, str(probe)], tmp_path, runs_dir, env={"PYTHONPATH": str(site)})
    out = run.stdout_log.read_text()
    assert "site: yes" in out and "hooked: True" in out
    assert run.read_status().state == "finished"


@pytest.mark.proc
def test_a_script_that_never_trains_still_gets_its_output_exit_code_and_reason(tmp_path, runs_dir):
    script = tmp_path / "broken.py"
    script.write_text("print('loading data')\nraise FileNotFoundError('data.jsonl')\n", encoding="utf-8")
    run = _run_to_end([sys.executable, str(script)], tmp_path, runs_dir)
    status = run.read_status()
    assert status.state == "failed" and status.exit_code == 1
    assert "data.jsonl" in (status.reason or "")
    assert "loading data" in run.stdout_log.read_text()
    assert _records(run)[-1].kind == journal.RUN_ENDED


@pytest.mark.slow
def test_cockpit_callback_in_a_plain_python_run_makes_a_run_folder_of_its_own(tmp_path, demo):
    script = tmp_path / "incode.py"
    script.write_text(textwrap.dedent(f"""\
        from datasets import load_dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
        from cockpit import CockpitCallback
        m = {str(demo / "models" / "tiny-lm")!r}
        data = load_dataset({str(demo / "data" / "prompt_completion")!r}, split="train")
        args = SFTConfig(output_dir="out", max_steps=3, logging_steps=1, use_cpu=True, bf16=False,
                         report_to="none", save_strategy="no", max_length=64)
        SFTTrainer(model=AutoModelForCausalLM.from_pretrained(m), args=args, train_dataset=data,
                   processing_class=AutoTokenizer.from_pretrained(m), callbacks=[CockpitCallback()]).train()
        """), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("COCKPIT_RUN_DIR", "COCKPIT_RUNS_DIR")}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (folder,) = (tmp_path / "runs").iterdir()
    run = RunFolder(folder)
    status = run.read_status()
    assert status.state == "finished" and status.trainer == "sft" and folder.name.startswith("incode-")
    records = _records(run)
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2, 3]
    assert sum(r.kind == journal.RUN_STARTED for r in records) == 1
    assert records[-1].kind == journal.RUN_ENDED or any(r.kind == journal.RUN_ENDED for r in records)


@pytest.mark.parametrize(("command", "name"), [
    (["python", "train.py", "--lr", "1e-5"], "train"),
    (["accelerate", "launch", "--config_file", "zero3.yaml", "src/open_r1/grpo.py", "--config", "r.yaml"], "grpo"),
    (["trl", "sft", "--config", "x.yaml"], "trl-sft"),
    (["python", "-m", "trl.scripts.dpo", "--config", "x.yaml"], "dpo"),
])
def test_a_script_run_is_named_after_its_script(command, name):
    assert default_name(command) == name


@pytest.mark.slow
def test_a_two_process_torchrun_script_has_exactly_one_journal_writer(tmp_path, runs_dir, demo):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out", "--stage", "sft",
           "--max-steps", "3", "--save-steps", "3"]
    run = _run_to_end(cmd, tmp_path, runs_dir)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-3000:]
    records = _records(run)
    started = [r for r in records if r.kind == journal.RUN_STARTED]
    assert len(started) == 1 and started[0].data["world_size"] == 2
    steps = [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")]
    assert steps == [1, 2, 3]  # one writer: every step once
    assert [r.step for r in records if r.kind == journal.CHECKPOINT] == [3]


# -- through the command line, as a user types it ------------------------------------------------

def _cli(*args: str, cwd: Path, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    from helpers import cockpit_cmd

    return subprocess.run(cockpit_cmd(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)


@pytest.mark.slow
def test_cockpit_run_dash_dash_launches_watches_stops_and_resumes_a_script(tmp_path, demo):
    runs = tmp_path / "runs"
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--stage", "sft", "--max-steps", "400", "--save-steps", "1000", "--sleep", "0.15"]
    proc = _cli("run", "--runs-dir", str(runs), "--name", "mine", "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = RunFolder(Path(proc.stdout.strip().splitlines()[0]))
    assert run.name.startswith("mine-")
    wait_for(lambda: sum(r.kind == journal.METRICS for r in _records(run)) >= 3, timeout=300)
    listed = _cli("runs", "--runs-dir", str(runs), "--json", cwd=tmp_path)
    assert '"sft"' in listed.stdout or "sft" in listed.stdout

    assert _cli("stop", run.name, "--runs-dir", str(runs), cwd=tmp_path).returncode == 0
    wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=300)
    assert run.read_status().state == "stopped"
    stopped_at = max(r.step for r in _records(run) if r.kind == journal.METRICS)
    assert (tmp_path / "out" / f"checkpoint-{stopped_at}").is_dir()

    # Resume: the same command again; the step goes on from the checkpoint.
    proc = _cli("resume", run.name, "--runs-dir", str(runs), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: sum(r.kind == journal.RUN_STARTED for r in _records(run)) == 2, timeout=300)
    wait_for(lambda: any(r.kind == journal.METRICS and r.step > stopped_at + 1 for r in _records(run)), timeout=300)
    second = [r for r in _records(run) if r.kind == journal.RUN_STARTED][-1]
    assert second.data["resumed_from"].endswith(f"checkpoint-{stopped_at}")
    resumed_steps = [r.step for r in _records(run) if r.kind == journal.METRICS and r.t > second.t]
    assert resumed_steps[0] == stopped_at + 1
    assert _cli("stop", run.name, "--force", "--runs-dir", str(runs), cwd=tmp_path).returncode == 0
    wait_for(lambda: not run.read_status().live, timeout=60)
    assert run.read_status().state == "killed"


@pytest.mark.slow
def test_a_trl_cli_config_runs_with_its_trainer_named_on_the_command_line(tmp_path, demo):
    config = tmp_path / "sft.yaml"
    config.write_text(f"model_name_or_path: {demo / 'models' / 'tiny-lm'}\n"
                      f"dataset_name: {demo / 'data' / 'prompt_completion'}\nmax_steps: 2\n", encoding="utf-8")
    # The subject is how the trainer is named: the SFT data check (a TRL import, ~5 s of CPU a
    # dry run) is off for the last two, and says so.
    for args in (["sft", str(config)], [str(config), "--trainer", "sft", "--set", NO_SFT_CHECK],
                 [str(config), "--set", "trainer=sft", "--set", NO_SFT_CHECK]):
        proc = _cli("run", *args, "--dry-run", cwd=tmp_path)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "trainer: sft" in proc.stdout
        measured = NO_SFT_CHECK not in args
        assert ("# data: not measured (the preset's cockpit.doctor.sft_data is false)" in proc.stdout) != measured
        assert ("# data: max_length" in proc.stdout) == measured, proc.stdout
    proc = _cli("run", str(config), "--dry-run", cwd=tmp_path)
    assert proc.returncode == 2 and "cockpit run sft" in proc.stderr


@pytest.mark.proc
def test_a_recipe_config_names_every_problem_at_once_and_migrate_fixes_all_but_project_keys(tmp_path):
    recipes = REPO / "tests" / "fixtures" / "recipes"
    # The recipes' models and datasets in the (offline) hub cache: the problems named are the recipes' own.
    env = hub_cache_env(tmp_path / "hf", models=("Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct"),
                     datasets=("HuggingFaceH4/ultrachat_200k", "open-r1/OpenR1-Math-220k"))
    proc = _cli("run", "sft", str(recipes / "handbook_sft.yaml"), "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    for key, fix in (("torch_dtype", "'dtype'"), ("max_seq_length", "'max_length'"),
                     ("evaluation_strategy", "'eval_strategy'"), ("chat_template", "'chat_template_path'"),
                     ("dataset_mixture", "'datasets'"), ("use_flash_attention_2", "'attn_implementation'")):
        assert any(f"'{key}'" in ln and fix in ln for ln in lines), (key, lines)
    assert all(ln.startswith("cockpit: ") for ln in lines)

    out = tmp_path / "fixed" / "sft.yaml"
    proc = _cli("migrate", str(recipes / "handbook_sft.yaml"), "--trainer", "sft", "--for", "trl-cli", "-o", str(out),
                cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (out.parent / "chat_template.jinja").is_file()
    # the SFT data check (a TRL import in a process of its own) is not the subject here: off
    proc = _cli("run", "sft", str(out), "--dry-run", "--set", NO_SFT_CHECK, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr

    # open-r1's recipe: its project-only keys stay, are named, and the dry-run stops only at them and at
    # its reward functions (open-r1's own registry: `accuracy`, `format`, `tag_count`), each named.
    out = tmp_path / "fixed" / "grpo.yaml"
    proc = _cli("migrate", str(recipes / "openr1_grpo.yaml"), "--trainer", "grpo", "--for", "trl-cli", "-o", str(out),
                cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "cockpit run -- " in proc.stdout
    assert "dataset_prompt_column" in proc.stdout and "system_prompt" in proc.stdout
    proc = _cli("run", "grpo", str(out), "--dry-run", cwd=tmp_path, env=env)
    problems = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(problems) == 4, problems
    assert "dataset_prompt_column" in problems[0] and "cockpit run -- " in problems[0]
    assert [p.split("'")[1] for p in problems[1:]] == ["accuracy", "format", "tag_count"], problems
    assert all("reward function" in p and "not found" in p for p in problems[1:]), problems
