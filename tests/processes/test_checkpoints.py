"""Checkpoints you can talk to (issue 24), on two real tiny demo runs trained here on the CPU, one
with a LoRA adapter and one full-weight: `cockpit checkpoints` lists them with their steps and
losses, `cockpit sample` answers from a checkpoint and the base side by side (the same seed, the
same text), `cockpit merge` writes a full model whose logits are base + adapter's, and each kind
of bad input is one line naming the fix.

The module's sampling goes through one sampler process (`helpers.SharedSampler`, the `sampler`
fixture: `cockpit sample` run in this process, its sampler the shared one), so the training stack
is imported once for all of it; the memory check, which a sampler makes when it loads a model, and
`cockpit merge` (its own process by design) run as the user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.run.folder import RunFolder
from helpers import SharedSampler, cockpit_cmd, farm_copy

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, RunFolder]:
    """A LoRA SFT demo run and a full-weight one, both finished: copies of the run farm's
    (tests/helpers: trained once through the real supervisor, 4 steps, checkpoints 2 and 4)."""
    runs_dir = tmp_path_factory.mktemp("ckpt") / "runs"
    return {"lora": farm_copy("sft-lora", runs_dir), "full": farm_copy("sft", runs_dir)}


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    """The module's one sampler process (its log in the module's temp folder)."""
    shared = SharedSampler(tmp_path_factory.mktemp("sampler") / "sampler.log")
    yield shared
    shared.close()


@pytest.fixture
def sample(sampler, monkeypatch):
    """`sample("sample", ...)`: `cockpit sample ...` (in this process, the shared sampler) as `cli` gives it."""
    monkeypatch.setenv("COLUMNS", "120")
    return sampler.cli


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "120", **(env or {})})


def problem_line(done: subprocess.CompletedProcess) -> str:
    """The one `cockpit: ...` line a refused command prints (exit 2, no traceback); notes, and the
    progress lines that say what is awaited (they end with '…': the sampler starting, a model
    loading), come before it."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines()
             if line.startswith("cockpit: ") and "note:" not in line and not line.endswith("…")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_checkpoints_lists_each_checkpoint_with_its_step_loss_size_and_kind(runs):
    for name, run in runs.items():
        done = cli("checkpoints", str(run.path), "--json")
        assert done.returncode == 0, done.stderr
        listing = json.loads(done.stdout)
        ckpts = listing["checkpoints"]
        assert [c["step"] for c in ckpts] == [2, 4]
        state = json.loads((run.output / "checkpoint-4" / "trainer_state.json").read_text())

        def logged(step: int, key: str, history=state["log_history"]) -> float:
            return next(e[key] for e in history if e["step"] == step and key in e)

        for c in ckpts:
            assert c["complete"] and not c["being_written"]
            assert c["loss"] == pytest.approx(logged(c["step"], "loss"))
            assert c["eval_loss"] == pytest.approx(logged(c["step"], "eval_loss"))
            assert c["size"] > c["weights"] > 0
            assert c["kind"] == ("lora" if name == "lora" else "full")
        base = str(yaml_model(run))
        assert listing["base_model"] == base
        if name == "lora":
            assert all(c["base"] == base for c in ckpts)
        text = cli("checkpoints", run.name, "--runs-dir", str(run.path.parent))
        assert text.returncode == 0, text.stderr
        rows = text.stdout.splitlines()[2:]
        assert [r.split()[0] for r in rows] == ["2", "4"]
        assert ("lora on " + base if name == "lora" else "full") in rows[-1]


def yaml_model(run: RunFolder) -> str:
    from cockpit.files import safe_load

    return safe_load(run.run_yaml.read_text())["model_name_or_path"]


def test_checkpoints_of_an_output_dir_trained_elsewhere(runs, tmp_path):
    out = tmp_path / "elsewhere"
    shutil.copytree(runs["lora"].output, out)
    done = cli("checkpoints", str(out), "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["run"] is None
    assert [c["step"] for c in listing["checkpoints"]] == [2, 4]
    assert listing["base_model"] == yaml_model(runs["lora"])  # from the adapter's config


@pytest.mark.parametrize("name", ["lora", "full"])
def test_sample_latest_vs_base_prints_both_answers_side_by_side_and_keeps_them(runs, name, sample):
    run = runs[name]
    args = ("sample", str(run.path), "--checkpoint", "latest", "--vs", "base", "--prompt", "2+2=",
            "--max-new-tokens", "8", "--temperature", "1.0", "--seed", "3")
    first = sample(*args)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "── prompt 1: 2+2="
    left, right = (part.strip() for part in lines[1].split("│"))
    assert (left, right) == ("checkpoint-4", "base")
    answers = [line.split("│") for line in lines[3:] if "│" in line]
    assert answers and all(len(a) == 2 for a in answers)
    kept = [json.loads(line) for f in sorted(run.samples.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert {(k["checkpoint"], k["step"], k["prompt"]) for k in kept[-2:]} == {("checkpoint-4", 4, "2+2="),
                                                                             ("base", None, "2+2=")}
    if name == "lora":
        second = sample(*args)
        assert second.returncode == 0, second.stderr
        assert second.stdout == first.stdout  # the same seed, the same text


def test_the_agents_sample_tool_answers_and_keeps_as_cockpit_sample_does(runs, sampler, sample):
    """One collector of a request's events (`launch.sampler.collect`) behind `cockpit sample` and the
    agent's sample tool: the same request (greedy, seed 0) gives the same answers, kept alike."""
    from cockpit.agent.actions import Actions
    from cockpit.metrics import samples

    run = runs["lora"]
    done = sample("sample", str(run.path), "--checkpoint", "latest", "--vs", "base", "--prompt", "2+2=",
                  "--max-new-tokens", "6")
    assert done.returncode == 0, done.stderr
    with sampler.use():
        said = Actions(run.path.parent).sample(run.name, checkpoint="latest", vs="base", prompts=["2+2="],
                                               max_new_tokens=6)
    assert said["models"] == {"a": "checkpoint-4", "b": "base"}
    kept = samples.read(run)
    by_cli = {r["checkpoint"]: r["completion"] for r in kept[-4:-2]}
    by_agent = {r["checkpoint"]: r["completion"] for r in kept[-2:]}
    assert by_agent == by_cli and set(by_cli) == {"checkpoint-4", "base"}
    assert said["answers"] == [{"prompt": "2+2=", "a": by_cli["checkpoint-4"], "b": by_cli["base"]}]


def test_sample_without_prompts_uses_the_runs_own_sample_prompts(runs, sample):
    run = runs["full"]
    done = sample("sample", str(run.path), "--checkpoint", "2", "--max-new-tokens", "4", "--no-keep")
    assert done.returncode == 0, done.stderr
    from cockpit.metrics.completions import CompletionsLibrary

    lib = CompletionsLibrary(run.path)
    lib.refresh()
    own = list(dict.fromkeys(r["prompt"] for r in lib.rows(lib.steps()[0])))
    shown = [line.removeprefix("── prompt ").split(": ", 1)[1] for line in done.stdout.splitlines()
             if line.startswith("── prompt ")]
    assert shown == [p.splitlines()[0] for p in own]


def test_a_checkpoint_still_being_written_is_one_line_naming_the_fix(runs, tmp_path):
    """A live run (its supervisor is this test's process) with a newest checkpoint that has
    weights but no trainer_state.json yet."""
    src = runs["full"]
    run = RunFolder(tmp_path / "live-run")
    shutil.copytree(src.path, run.path, ignore=shutil.ignore_patterns("samples"))
    run.run_yaml.write_text(run.run_yaml.read_text().replace(str(src.path), str(run.path)))
    from cockpit.run import owner

    # live as a supervisor proves it: its pid with its own start time (a pid alone proves nothing)
    run.update_status(state="running", supervisor_pid=os.getpid(), supervisor_started=owner.start_time(os.getpid()),
                      host=os.uname().nodename)
    (run.output / "checkpoint-6").mkdir()
    shutil.copy(run.output / "checkpoint-4" / "model.safetensors", run.output / "checkpoint-6")
    listing = json.loads(cli("checkpoints", str(run.path), "--json").stdout)
    assert listing["live"] and listing["checkpoints"][-1]["being_written"]
    line = problem_line(cli("sample", str(run.path), "--checkpoint", "6", "--prompt", "x"))
    assert "checkpoint-6 is still being written" in line and "--checkpoint latest" in line
    assert run.read_status().state == "running"  # a refused sample touches nothing of the run


def test_a_missing_base_model_for_an_adapter_is_one_line_naming_the_fix(runs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(runs["lora"].output / "checkpoint-4", out / "checkpoint-4")
    cfg_path = out / "checkpoint-4" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = str(tmp_path / "gone" / "tiny-lm")
    cfg_path.write_text(json.dumps(cfg))
    line = problem_line(cli("sample", str(out), "--prompt", "x"))
    assert "is a LoRA adapter on" in line and "not there any more" in line and "adapter_config.json" in line
    line = problem_line(cli("merge", str(out), "-o", str(tmp_path / "merged")))
    assert "not there any more" in line


def test_a_tokenizer_without_a_chat_template_is_one_line_naming_the_fix(runs, tmp_path, sample):
    out = tmp_path / "out"
    ckpt = out / "checkpoint-4"
    shutil.copytree(runs["full"].output / "checkpoint-4", ckpt)
    (ckpt / "chat_template.jinja").unlink()
    tok_cfg = json.loads((ckpt / "tokenizer_config.json").read_text())
    tok_cfg.pop("chat_template", None)
    (ckpt / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    line = problem_line(sample("sample", str(out), "--chat", "--prompt", "hello", "--max-new-tokens", "2"))
    assert "no chat template" in line and "no --chat" in line
    plain = sample("sample", str(out), "--prompt", "hello", "--max-new-tokens", "2")  # plain text needs none
    assert plain.returncode == 0, plain.stderr


def test_a_model_too_big_for_the_device_is_one_line_naming_the_fix(runs):
    line = problem_line(cli("sample", str(runs["lora"].path), "--prompt", "x", "--max-memory", "64KB",
                            "--no-keep"))
    assert "checkpoint-4 needs about" in line and "cpu has" in line and "cockpit.sample.device" in line


def test_merge_writes_a_full_model_whose_logits_match_base_plus_adapter(runs, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = runs["lora"]
    out = tmp_path / "merged"
    done = cli("merge", str(run.path), "--checkpoint", "4", "-o", str(out))
    assert done.returncode == 0, done.stderr
    ids = torch.tensor([[5, 17, 42, 99, 3, 250, 7]])
    base = AutoModelForCausalLM.from_pretrained(yaml_model(run))
    with torch.no_grad():
        want = PeftModel.from_pretrained(base, str(run.output / "checkpoint-4")).eval()(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(out).eval()
        got = merged(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(yaml_model(run)).eval()(ids).logits
    assert torch.allclose(got, want, atol=1e-4)
    assert not torch.allclose(got, plain, atol=1e-6)  # the adapter did change the model
    assert not any(out.glob("adapter_*")), "a full model, not an adapter"
    tok = AutoTokenizer.from_pretrained(out)
    assert tok.chat_template and tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)


def test_merge_push_offline_says_so_in_one_line_and_keeps_the_merged_model(runs, tmp_path):
    out = tmp_path / "merged"
    done = cli("merge", str(runs["lora"].path), "-o", str(out), "--push", "someone/tiny-merged",
               env={"HF_HUB_OFFLINE": "1"})
    line = problem_line(done)
    assert line == (f"cockpit: {out} is saved, but the Hugging Face Hub cannot be reached (offline) — push it "
                    f"later: hf upload someone/tiny-merged {out}")
    assert (out / "model.safetensors").is_file()


def test_merge_refuses_a_full_weight_checkpoint(runs, tmp_path):
    line = problem_line(cli("merge", str(runs["full"].path), "-o", str(tmp_path / "m")))
    assert "holds a full model, not a LoRA adapter" in line


def test_export_completions_includes_the_kept_samples(runs, tmp_path, sample):
    run = runs["lora"]
    if not list(run.samples.glob("*.jsonl")):
        assert sample("sample", str(run.path), "--prompt", "2+2=", "--max-new-tokens", "4").returncode == 0
    out = tmp_path / "completions.jsonl"
    done = cli("export", str(run.path), "--completions", str(out))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sampled = [r for r in rows if r["source"] == "sampled"]
    assert sampled and all(r["extra"]["checkpoint"] in ("checkpoint-4", "base") for r in sampled)
    assert any(r["source"] != "sampled" for r in rows)  # the training's own samples are there too


def _venv_like_this_one(where: Path) -> Path:
    """A real venv (pyvenv.cfg, its own bin/python) that sees this interpreter's packages: a link to
    sys.executable alone loses them when the tests themselves run in a venv (a venv's packages are
    found through the pyvenv.cfg beside its python, not the link's target)."""
    import site
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    found = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                           capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    Path(found, "outer_env.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in dirs),
                                            encoding="utf-8")
    return python


def test_a_script_run_is_sampled_with_the_python_its_script_ran_with(tmp_path):
    """The hook writes `python` (sys.executable) into run_started; the sampler is started with it."""
    from cockpit.launch.sampler import sampler_python
    from cockpit.launch.script import prepare_script
    from cockpit.metrics.checkpoints import locate
    from cockpit.run import journal

    venv_python = _venv_like_this_one(tmp_path / "venv")
    run = prepare_script([str(venv_python), "train.py"], cwd=tmp_path, runs_dir=tmp_path / "runs")
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("sft", script=True, output_dir="out", python=str(venv_python)))
    found = locate(run.path)
    assert found.output_dir == tmp_path / "out"
    assert sampler_python(found) == str(venv_python)


@pytest.mark.anyio
async def test_chat_mode_keeps_the_turns_with_one_checkpoint_and_keeps_the_answers(runs, sampler):
    from textual.widgets import DataTable, Input

    from cockpit.metrics import samples
    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
    from helpers.ui import app_for, app_wait

    run = runs["lora"]
    app = app_for(run.path.parent.parent, mode="replay", paths=[str(run.path)])
    with sampler.use():  # the tab's sampler is the module's
        async with app.run_test(size=(100, 30)) as pilot:
            await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the run view", limit=60)
            await pilot.press("8")
            pane = app.screen.query_one(CheckpointsPane)
            table = pane.query_one(DataTable)
            await app_wait(pilot, lambda: table.row_count == 3, "base and two checkpoints", limit=60)
            table.focus()
            table.move_cursor(row=1)  # checkpoint-2: no other test loads it, so the tab shows it loading
            await pilot.press("c")
            assert pane.query_one(Input).has_focus
            for turn in ("What is 2+2?", "And 3+3?"):
                pane.query_one(Input).value = turn
                await pilot.press("enter")
                # the sampler at work, or already done: a warm machine answers between two polls
                await app_wait(pilot, lambda: pane.busy or pane.chat_turns[-1]["role"] == "assistant",
                             "the sampler at work", limit=10)
                await app_wait(pilot, lambda: not pane.busy, "the answer", limit=300)
            assert [t["role"] for t in pane.chat_turns] == ["user", "assistant", "user", "assistant"]
            assert "What is 2+2?" in pane.last_prompt and "And 3+3?" in pane.last_prompt  # both turns sent
            assert pane.last_prompt.count("<|im_start|>assistant") == 2  # the run's chat template
    kept = [r for r in samples.read(run) if r.get("mode") == "chat"]
    assert [(r["checkpoint"], r["turn"], r["prompt"]) for r in kept[-2:]] == [
        ("checkpoint-2", 1, "What is 2+2?"), ("checkpoint-2", 2, "And 3+3?")]
    assert [r["completion"] for r in kept[-2:]] == [t["content"] for t in pane.chat_turns[1::2]]
