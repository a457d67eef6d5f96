"""Findings that need more than metrics: a hang's stacks, a resume's continuity, whether the weights
moved, and what an SFT preset's max_length and loss mask do to its rows. Real runs on the offline
demo assets, real processes, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.findings import sft_data
from cockpit.findings.model import Finding
from cockpit.launch.plan import start_supervisor
from cockpit.launch.script import prepare_script
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import NO_SFT_CHECK, REPO, wait_for

PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"


@pytest.fixture(scope="module")
def demo():
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    return ensure_all(demo_dir())


def _findings(run: RunFolder, kind: str | None = None) -> list[Finding]:
    records = journal.read_all(run.events)[0]
    return [Finding.from_record(r) for r in records
            if r.kind == journal.FINDING and (kind is None or r.data.get("kind") == kind)]


def _kill_group(run: RunFolder) -> None:
    status = run.read_status()
    for pid in (status.pgid, status.supervisor_pid):
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL) if pid == status.pgid else os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.mark.slow
def test_a_script_blocked_in_a_callback_gets_a_hang_finding_with_its_stack_while_alive(tmp_path, runs_dir, demo):
    cmd = [sys.executable, str(PIPELINE), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--stage", "sft", "--max-steps", "50", "--save-steps", "100", "--block-at", "3"]
    run = prepare_script(cmd, cwd=tmp_path, runs_dir=runs_dir,
                         env={"COCKPIT_HANG_FLOOR_S": "4", "COCKPIT_HANG_FACTOR": "3"})
    start_supervisor(run)
    try:
        found = wait_for(lambda: _findings(run, "hang"), timeout=300)
        status = run.read_status()
        assert status.state == "running"
        os.kill(status.pid, 0)  # the trainer is still alive: the finding came while it hangs
        hang = found[0]
        assert hang.steps == (2, 2) and hang.severity == "warning"  # step 3 never got to its log
        assert "it waits in pid " in hang.summary, hang.summary
        assert "a callback (BlockingCallback.on_step_end at pipeline.py:" in hang.summary, hang.summary
        files = [e for e in hang.evidence if e["type"] == "file"]
        stacks = Path(files[0]["path"])
        assert stacks.parent == run.path / "hangs" and stacks.is_file()
        text = stacks.read_text()
        assert "on_step_end (pipeline.py" in text and "call_event" in text
    finally:
        _kill_group(run)
        wait_for(lambda: run.read_status().state not in ("starting", "running", "stopping"), timeout=60)
    assert len(_findings(run, "hang")) == 1


def _ended(run: RunFolder) -> journal.Record | None:
    ends = [r for r in journal.read_all(run.events)[0] if r.kind == journal.RUN_ENDED]
    return ends[-1] if ends else None


def _metric_steps(run: RunFolder) -> list[int]:
    return [r.step for r in journal.read_all(run.events)[0]
            if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]


def _tiny_sft(runs_dir: Path, *overrides: str) -> RunFolder:
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.launch.plan import launch

    preset = apply_overrides(load_preset("demo-sft"), ["max_steps=2", "save_steps=2", "eval_strategy=no",
                                                       "cockpit.completions={}", *overrides])
    run = launch(preset, runs_dir)
    wait_for(lambda: _ended(run), timeout=300)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-2000:]
    return run


@pytest.fixture(scope="module")
def still(tmp_path_factory) -> RunFolder:
    """A 2-step demo-sft run with learning rate 0, the SFT data check on beside it: the run whose
    weights did not move, and the run whose data check is read (one training for both tests)."""
    # The run's end waits for the SFT data check (8 s by default: on a loaded test machine the
    # niced probe's imports can take longer than the 2-step run and those 8 s).
    return _tiny_sft(tmp_path_factory.mktemp("still") / "runs", "learning_rate=0", "cockpit.doctor={end_wait_s: 120}")


@pytest.mark.slow
def test_a_run_with_learning_rate_0_is_named_the_model_did_not_change(still):
    unchanged = _findings(still, "model_unchanged")
    assert unchanged, [f.summary for f in _findings(still)]
    assert unchanged[0].summary.startswith("the model did not change")
    assert "the base model" in unchanged[0].summary and "checkpoint-2" in unchanged[0].summary
    layers = next(e for e in unchanged[0].evidence if e["type"] == "layers")
    assert layers["rows"] and all(v == 0.0 for _, v in layers["rows"])
    assert not _findings(still, "weight_change")


@pytest.mark.slow
def test_the_sft_data_check_runs_beside_a_real_run_and_its_finding_is_in_the_journal(still):
    # It ran at the start, beside the training: demo-sft's max_length 128 cuts nothing.
    cut = _findings(still, "truncation")
    assert [(f.steps, f.severity) for f in cut] == [((0, 0), "info")]
    assert cut[0].summary.startswith("max_length 128 cuts none of the 64 training rows")


@pytest.mark.slow
def test_a_normal_run_moves_its_weights_and_is_not_named_unchanged(farm_run):
    run = farm_run("sft")  # the run farm's: 4 demo-sft steps, checkpoints 2 and 4 (tests/helpers)
    assert not _findings(run, "model_unchanged") and not _findings(run, "one_layer_change")
    moved = _findings(run, "weight_change")
    assert moved[0].steps == (2, 2)  # checkpoint-2 first (then checkpoint-4 and the final model)
    layers = next(e for e in moved[0].evidence if e["type"] == "layers")
    assert all(v > 0 for _, v in layers["rows"]), layers["rows"]
    assert {name for name, _ in layers["rows"]} >= {"model.layers.0", "model.embed_tokens"}


@pytest.mark.slow
def test_a_lora_run_with_learning_rate_0_has_every_adapter_update_still_zero(runs_dir):
    run = _tiny_sft(runs_dir, "learning_rate=0", "use_peft=true", NO_SFT_CHECK)
    unchanged = _findings(run, "model_unchanged")
    assert unchanged and unchanged[0].summary.startswith("the model did not change: every LoRA update")
    layers = next(e for e in unchanged[0].evidence if e["type"] == "layers")
    assert any(name.endswith("self_attn.q_proj") for name, _ in layers["rows"])
    assert all(v == 0.0 for _, v in layers["rows"])


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_a_stopped_and_resumed_run_gets_a_resume_check_with_both_segments(farm_run):
    from cockpit.errors import CockpitError
    from cockpit.launch.plan import resume, stop

    run = farm_run("stopped")  # the run farm's: STOPPED_STEPS demo-sft steps, stopped with a save after 5 or more
    try:
        assert run.read_status().state == "stopped"
        last = _metric_steps(run)[-1]
        assert last >= 5
        assert not _findings(run, "resume_check")  # a first attempt has nothing to check
        resume(run)
        found = wait_for(lambda: _findings(run, "resume_check"), timeout=300)[0]
    finally:
        try:
            stop(run, save=False, grace_s=5)
        except CockpitError:
            pass  # the resumed attempt reached its last step and ended by itself
        wait_for(lambda: not run.read_status().live, timeout=60)
    assert found.severity == "info", found.summary
    assert found.summary.startswith(f"the resume from checkpoint-{last} carries on: step {last + 1} follows {last}")
    assert found.steps[0] == last + 1
    segments = {(e["key"], e["segment"]) for e in found.evidence if e["type"] == "metric"}
    assert segments == {("loss", "before"), ("loss", "after"), ("learning_rate", "before"),
                        ("learning_rate", "after")}
    before = next(e for e in found.evidence if e.get("segment") == "before" and e["key"] == "loss")["points"]
    after = next(e for e in found.evidence if e.get("segment") == "after" and e["key"] == "loss")["points"]
    assert before[-1][0] == last and after[0][0] == last + 1


def test_a_resume_whose_schedule_and_loss_start_over_is_a_warning_naming_both(tmp_path):
    """The judge, on a checkpoint's real trainer_state.json shape and an attempt that restarted."""
    import json

    ckpt = tmp_path / "checkpoint-20"
    ckpt.mkdir()
    history = [{"step": s, "loss": 3.0 - 0.1 * s, "learning_rate": 1e-3 * (1 - s / 40)} for s in range(1, 21)]
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 20, "log_history": history}))
    from cockpit.findings import resume

    after = [{"step": s, "loss": 3.0 - 0.1 * (s - 20), "learning_rate": 1e-4 * (s - 20)} for s in range(21, 24)]
    found = resume.check(ckpt, after)
    assert found is not None and found.severity == "warning"
    assert "the learning rate is 0.0001 at step 21 where the schedule gives 0.000475" in found.summary
    assert "the loss jumped back to 2.8" in found.summary
    same = [{"step": s, "loss": 1.0 - 0.01 * s, "learning_rate": 1e-3 * (1 - s / 40)} for s in range(21, 24)]
    assert resume.check(ckpt, same).severity == "info"


# -- SFT data ----------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    from helpers import cockpit_cmd

    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _rows(demo: Path, fmt: str) -> list[dict]:
    return [json.loads(line) for line in (demo / "data" / fmt / "train.jsonl").read_text().splitlines() if line]


@pytest.mark.slow
def test_an_sft_preset_whose_max_length_cuts_a_known_share_says_so_before_launch(demo):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo / "models" / "tiny-lm")
    # The known share, counted here without TRL: prompt + completion + EOS, tokenized.
    lengths = [len(tok(r["prompt"] + r["completion"] + tok.eos_token)["input_ids"])
               for r in _rows(demo, "prompt_completion")]
    max_length = sorted(lengths)[len(lengths) // 2]
    cut = sum(n > max_length for n in lengths)
    assert 0 < cut < len(lengths)
    proc = _cli("run", "demo-sft", "--dry-run", "--set", f"max_length={max_length}")
    assert proc.returncode == 0, proc.stderr
    share = f"{cut / len(lengths):.0%}"
    assert (f"# data: max_length {max_length} cuts {share} of the training rows ({cut} of {len(lengths)}; "
            f"longest {max(lengths)} tokens)") in proc.stdout.splitlines(), proc.stdout[-800:]


@pytest.mark.slow
def test_the_loss_mask_marks_exactly_the_assistant_tokens_of_a_chat_row(demo):
    proc = _cli("lossmask", "demo-sft", "--rows", "3", "--json", "--set", "dataset_name=demo:data/messages",
                "--set", "assistant_only_loss=true", "--set", "max_length=128")
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["summary"].startswith("assistant_only_loss: true")
    rows = _rows(demo, "messages")
    assert len(answer["rows"]) == 3
    for shown, data in zip(answer["rows"], rows[:3], strict=True):
        replies = [m["content"] for m in data["messages"] if m["role"] == "assistant"]
        # The template's {% generation %} covers each reply and its end of turn: exactly those are trained.
        assert sft_data.trained_spans(shown) == [r + "<|im_end|>\n" for r in replies]
        text = "".join(t for t, _ in shown["tokens"])
        assert text.startswith("<|im_start|>user\n" + data["messages"][0]["content"])


@pytest.mark.slow
@pytest.mark.usefixtures("demo")
def test_without_assistant_only_loss_the_mask_trains_every_token_and_shows_the_cut():
    proc = _cli("lossmask", "demo-sft", "--rows", "1", "--set", "dataset_name=demo:data/messages",
                "--set", "max_length=8")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("the loss trains on every token")
    assert lines[1].startswith("max_length 8 cuts 100% of the training rows")
    body = proc.stdout.split("tokens trained\n", 1)[1]
    assert body.startswith("[<|im_start|>") and "]✂" in body  # trained up to the cut, nothing after it
    assert "8 of " in proc.stdout


@pytest.mark.slow
def test_a_process_stuck_in_its_data_loader_is_said_to_wait_there(tmp_path):
    """A real process blocked in a torch DataLoader (a dataset whose rows never come), dumped by py-spy."""
    from cockpit.findings import hang

    script = tmp_path / "loader.py"
    script.write_text(
        "import sys, time\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class Slow(Dataset):\n    def __len__(self):\n        return 4\n"
        "    def __getitem__(self, i):\n        print('reading', flush=True)\n        time.sleep(600)\n"
        "for batch in DataLoader(Slow(), batch_size=2):\n    pass\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "reading"
        stacks, waits, errors = hang.record_stacks(tmp_path, [proc.pid], 7)
    finally:
        proc.kill()
        proc.wait()
    assert not errors and stacks == tmp_path / "hangs" / stacks.name and stacks.name.startswith("step-7-")
    assert waits == [f"pid {proc.pid}: the data loader, in Slow.__getitem__ at loader.py:8"]
    assert "__getitem__ (loader.py:8)" in stacks.read_text()


def test_one_layer_that_takes_all_the_change_is_named_from_bf16_safetensors(tmp_path):
    """Checkpoints written by safetensors (bf16, as a GPU run saves them): only layer 1 moved."""
    import torch
    from safetensors.torch import save_file

    from cockpit.findings import weights

    torch.manual_seed(0)
    base = {f"model.layers.{i}.mlp.weight": torch.randn(64, 32).to(torch.bfloat16) for i in range(3)}
    base["model.embed_tokens.weight"] = torch.randn(100, 32).to(torch.bfloat16)
    moved = dict(base)
    moved["model.layers.1.mlp.weight"] = (base["model.layers.1.mlp.weight"].float() * 1.1).to(torch.bfloat16)
    for name, tensors in (("base", base), ("checkpoint-10", moved)):
        (tmp_path / name).mkdir()
        save_file(tensors, str(tmp_path / name / "model.safetensors"))
    found = weights.check_checkpoint(tmp_path / "checkpoint-10", step=10, base=tmp_path / "base", first=None)
    kinds = {f.kind: f for f in found}
    assert set(kinds) == {"one_layer_change", "weight_change"}
    one = kinds["one_layer_change"]
    assert one.summary.startswith("one layer takes all the change at checkpoint-10: model.layers.1 moved 1.0")
    rows = dict(next(e for e in one.evidence if e["type"] == "layers")["rows"])
    assert abs(rows["model.layers.1"] - 0.1) < 0.01  # bf16 widened right: 10% of the weight
    assert rows["model.layers.0"] == rows["model.layers.2"] == rows["model.embed_tokens"] == 0.0
    same = weights.check_checkpoint(tmp_path / "base", step=0, base=tmp_path / "base", first=None)
    assert [f.kind for f in same] == ["model_unchanged"]


@pytest.mark.slow
def test_the_data_check_beside_a_first_demo_run_builds_the_demo_it_measures(tmp_path, monkeypatch):
    """On a fresh machine the doctor's SFT data check starts beside the trainer, before the trainer
    has built the demo assets (seen on a GPU box: `Repo id must be in the form ...` for the
    tokenizer's folder): it builds them under the same lock first, and measures."""
    import shutil

    from cockpit.config.presets import load_preset
    from cockpit.config.validate import validate
    from cockpit.demo import demo_dir
    from cockpit.demo.datasets import assets_complete
    from cockpit.launch.plan import prepare

    cache = tmp_path / "cache"
    shutil.copytree(Path(os.environ["COCKPIT_CACHE_DIR"]) / "schemas", cache / "schemas")  # TRL read once
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(cache))
    run = prepare(validate(load_preset("demo-sft")), tmp_path / "runs", "fresh")
    assert not assets_complete(demo_dir())
    probe = sft_data.probe(run_dir=run.path)
    assert probe.truncation.get("rows"), probe
    assert assets_complete(demo_dir())


@pytest.mark.parametrize(("given", "waits"), [("30", 30.0), ("2.5", 2.5), ("soon", 8.0), ("-1", 8.0), (None, 8.0)])
def test_the_run_s_end_waits_for_the_checks_as_long_as_cockpit_doctor_end_wait_s_says(tmp_path, given, waits):
    """`cockpit.doctor.end_wait_s`: how long the run's end waits for the checks still running (a
    busy machine's SFT data check may need more than the 8 s default); a value that is not a
    positive number keeps the default."""
    from cockpit.run.folder import Status
    from cockpit.supervisor.doctor import END_WAIT_S, Doctor
    from cockpit.supervisor.watch import Beat

    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    doctor_yaml = "" if given is None else f"\n  doctor: {{end_wait_s: {given}}}"
    run.run_yaml.write_text(f"trainer: script\ncockpit:\n  script: {{command: [python, t.py]}}{doctor_yaml}\n",
                            encoding="utf-8")
    run.write_status(Status(state="running", name=run.name, trainer="script"))
    with journal.JournalWriter(run.events) as jw:
        doctor = Doctor(run, jw)
        assert doctor.end_wait_s == waits
        assert END_WAIT_S == 8.0
        doctor.ended(journal.run_ended("finished"), Beat(pid=None, started_at=0.0, live=False))  # its thread ends
