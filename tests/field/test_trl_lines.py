"""One TRL line users are pinned to, proven in its own env: `.ci/run` builds a venv per line of
`cockpit.trainers.versions.TRL_LINES` (that TRL, the transformers it is tested with, the CPU torch)
and runs this module once per venv, with

    COCKPIT_TRL_LINE_PYTHON=/that/venv/bin/python      the env the scripts train in
    COCKPIT_TRL_LINE_COCKPIT=/light/venv/bin/cockpit   the cockpit that watches (optional: a wheel
                                                       installed without [train]; else this checkout)

The scripts (`tests/fixtures/scripts/pipeline.py`) run under `cockpit run -- PYTHON ...`, unchanged,
in their env: the journal gets metrics and eval, checkpoints, GRPO's completions with their reward
columns, and a stop-and-save; the oldest and the newest line also resume it (`_resumes_here`). On a
line whose venv has peft (open-r1's), the light cockpit (on Python 3.12 in CI) samples, chats with
and merges the script's LoRA checkpoints on the line's own Python. Without COCKPIT_TRL_LINE_PYTHON
the module is skipped (the main pass). DPO is not run per line: its logged keys
(rewards/chosen|rejected|margins|accuracies, logps/*, logits/*) are the same in 0.18, 1.12 and 1.16.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.trainers.versions import TRL_LINES
from helpers import REPO, stored_completions, wait_for

PYTHON = os.environ.get("COCKPIT_TRL_LINE_PYTHON", "")
COCKPIT = os.environ.get("COCKPIT_TRL_LINE_COCKPIT")
PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"

pytestmark = [pytest.mark.slow, pytest.mark.trl_line,
              pytest.mark.skipif(not PYTHON, reason="the TRL-lines matrix: .ci/run gives COCKPIT_TRL_LINE_PYTHON")]


def _cli(*args: str, cwd: Path, timeout: float = 900, env_extra: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    """This checkout's cockpit, or the installed one named (then as a stranger runs it: no PYTHONPATH)."""
    cmd = [COCKPIT, *args] if COCKPIT else [sys.executable, "-m", "cockpit.cli", *args]
    env = {k: v for k, v in os.environ.items() if not (COCKPIT and k == "PYTHONPATH")} | (env_extra or {})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=env)


@pytest.fixture(scope="module")
def line() -> dict[str, str]:
    """The env's own versions, read by its own Python."""
    out = subprocess.run([PYTHON, "-c", "import importlib.metadata as m, json; print(json.dumps("
                          "{p: m.version(p) for p in ('trl', 'transformers', 'torch')}))"],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def assets() -> Path:
    """The demo's tiny model and data, built by the line's own transformers (a tokenizer saved by
    another line may not load) into the cockpit's own demo folder of the session's cache, which
    `cockpit.demo.demo_dir` keys by the transformers and tokenizers lines: lines that share them
    (0.24 and 1.0, 1.12 and 1.16) build them once, the first under the demo lock, and the cache is
    kept between runs as the main pass's is."""
    proc = subprocess.run([PYTHON, "-m", "cockpit.runner.assets"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    root = Path(proc.stdout.strip().splitlines()[-1])
    assert root.is_relative_to(os.environ["COCKPIT_CACHE_DIR"]), root
    return root


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _script(assets: Path, stage: str, *extra: str) -> list[str]:
    return [PYTHON, str(PIPELINE), str(assets / "models" / "tiny-lm"), str(assets / "data"), "out",
            "--stage", stage, *extra]


def test_sft_on_this_line_journals_metrics_eval_and_checkpoints(tmp_path, line, assets):
    runs = tmp_path / "runs"
    proc = _cli("run", "--wait", "--runs-dir", str(runs), "--",
                *_script(assets, "sft", "--max-steps", "4", "--save-steps", "2", "--eval-steps", "2"), cwd=tmp_path)
    run = RunFolder(next(runs.iterdir()))
    assert proc.returncode == 0, (proc.stderr, run.stdout_log.read_text()[-3000:])
    assert run.read_status().state == "finished"
    records = _records(run)
    started = next(r for r in records if r.kind == journal.RUN_STARTED)
    assert started.data["trainer"] == "sft"
    assert {k: started.data["versions"][k] for k in line} == line  # the script trained on its env's packages
    assert [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary")] == [1, 2, 3, 4]
    assert [r.step for r in records if r.kind == journal.EVAL and "eval_loss" in r.data] == [2, 4]
    assert [r.step for r in records if r.kind == journal.CHECKPOINT] == [2, 4]
    assert (tmp_path / "out" / "checkpoint-4" / "trainer_state.json").is_file()


def _resumes_here(line: dict[str, str]) -> bool:
    """Whether this line's leg also resumes its stopped GRPO run: the oldest and the newest line only.

    The resume is a second training process, the dearest part of a leg, and what it runs through
    is the same on every line: cockpit's side (the hook's `Trainer.train` wrapper handing
    `resume_from_checkpoint` the checkpoint `cockpit resume` chose, `resume_for`/`finished_at`) has
    no version branch, and transformers' side (`Trainer.train(resume_from_checkpoint=...)`, the
    checkpoint's trainer_state and RNG) is proven at both ends of the range: the oldest line on
    transformers 4.x (0.18, 4.52), the newest on 5.x (1.16, 5.23); the middle lines' transformers
    (4.53, 4.56, 5.23) lie between them. The one version branch the callback has,
    `versions.sampled_batch_attrs` (`_textual_logs` before 0.20, `_logs` from it), is the
    completions', and every line still proves those, and the stop-and-save, which the callback
    asks of transformers through `control` on every line alike."""
    return line["trl"] in (TRL_LINES[0].trl, TRL_LINES[-1].trl)


def test_grpo_on_this_line_journals_completions_with_rewards_and_stops_saves_and_resumes(tmp_path, line, assets):
    """GRPO's completions with their reward columns and the stop-and-save on every line; the resume
    on the oldest and the newest (`_resumes_here` says why)."""
    runs = tmp_path / "runs"
    proc = _cli("run", "--runs-dir", str(runs), "--",
                *_script(assets, "grpo", "--max-steps", "5", "--save-steps", "100", "--sleep", "1"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = RunFolder(Path(proc.stdout.strip().splitlines()[0]))
    wait_for(lambda: any(r.kind == journal.COMPLETIONS_REF for r in _records(run)) or not run.read_status().live,
             timeout=600)
    assert any(r.kind == journal.COMPLETIONS_REF for r in _records(run)), \
        f"the run ended before its first completions: {run.read_status().reason}"
    assert _cli("stop", run.name, "--runs-dir", str(runs), cwd=tmp_path).returncode == 0
    wait_for(lambda: not run.read_status().live, timeout=600)
    assert run.read_status().state == "stopped", run.stdout_log.read_text()[-3000:]
    records = _records(run)
    started = next(r for r in records if r.kind == journal.RUN_STARTED)
    assert started.data["trainer"] == "grpo"
    assert {k: started.data["versions"][k] for k in line} == line
    stopped_at = max(r.step for r in records if r.kind == journal.METRICS)
    assert stopped_at < 5
    assert [r.step for r in records if r.kind == journal.CHECKPOINT] == [stopped_at]
    assert (tmp_path / "out" / f"checkpoint-{stopped_at}").is_dir()
    assert all("rewards/number_reward/mean" in r.data for r in records
               if r.kind == journal.METRICS and not r.data.get("summary"))
    rows = [row for c in stored_completions(run) for row in c.data["rows"]]
    assert rows and all(row["completion"] and "number_reward" in row["rewards"] for row in rows)
    assert not [r for r in records if r.kind == journal.WARNING and r.data.get("code") == "completions_not_found"]
    if not _resumes_here(line):
        return

    proc = _cli("resume", run.name, "--runs-dir", str(runs), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: run.read_status().state in ("finished", "failed", "killed"), timeout=900)
    assert run.read_status().state == "finished", run.stdout_log.read_text()[-3000:]
    records = _records(run)
    second = [r for r in records if r.kind == journal.RUN_STARTED][-1]
    assert second.data["resumed_from"].endswith(f"checkpoint-{stopped_at}")
    resumed = [r.step for r in records if r.kind == journal.METRICS and r.t > second.t and not r.data.get("summary")]
    assert resumed == list(range(stopped_at + 1, 6))


_LOADED = re.compile(r"^# (?:code object from|extension module '[^']*' loaded from) '?([^'\n]+?)'?$", re.M)
"""A file `python -v` says it loaded: quoted when read from a .pyc or a C extension, bare from source."""


def _python_facts(python: str) -> dict[str, str]:
    out = subprocess.run([python, "-c", "import json, sys, sysconfig; print(json.dumps({'version': '%d.%d' % "
                          "sys.version_info[:2], 'prefix': sys.prefix, 'stdlib': sysconfig.get_paths()['stdlib'], "
                          "'platstdlib': sysconfig.get_paths()['platstdlib']}))"],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.usefixtures("line")
def test_the_sampler_and_merger_run_on_this_lines_python_with_its_own_packages(tmp_path, assets):
    """Issue 31: the light cockpit on its Python (pipx's default, 3.12 in CI), the project on its own
    (open-r1 pins 3.11): `sample`, `sample --chat`, a two-turn chat through the Checkpoints tab's
    Sampler, and `merge` of its LoRA checkpoint all run on the project's Python, and every
    file the sampler loads is that env's, its Python's standard library, or the cockpit's bundled
    copy (`_cockpit_sampler`). The model's tokenizer was saved without `model_input_names`, so it
    returns token_type_ids, which generate() must not be given."""
    model = tmp_path / "tiny-lm"
    shutil.copytree(assets / "models" / "tiny-lm", model)
    config = json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("model_input_names", None)
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    if subprocess.run([PYTHON, "-c", "import peft"], capture_output=True, timeout=120).returncode != 0:
        pytest.skip("run on the lines whose venv has peft (.ci/run gives open-r1's line peft)")
    runs = tmp_path / "runs"
    proc = _cli("run", "--wait", "--runs-dir", str(runs), "--", PYTHON, str(PIPELINE), str(model),
                str(assets / "data"), "out", "--stage", "sft", "--max-steps", "2", "--save-steps", "2",
                "--lora", cwd=tmp_path)
    run = RunFolder(next(runs.iterdir()))
    assert proc.returncode == 0 and run.read_status().state == "finished", (proc.stderr,
                                                                            run.stdout_log.read_text()[-3000:])
    project = _python_facts(PYTHON)
    tool = _python_facts(str(Path(COCKPIT).parent / "python")) if COCKPIT else _python_facts(sys.executable)
    print(f"the cockpit on Python {tool['version']}, the project on {project['version']}")

    log = run.samples / "sampler.log"
    done = _cli("sample", run.name, "--runs-dir", str(runs), "--vs", "base", "--prompt", "2+2=",
                "--max-new-tokens", "4", cwd=tmp_path, env_extra={"PYTHONVERBOSE": "1"})
    assert done.returncode == 0, (done.stderr[-3000:], log.read_text(errors="replace")[-3000:])
    assert "── prompt 1: 2+2=" in done.stdout and "checkpoint-2" in done.stdout and "base" in done.stdout
    loaded = set(_LOADED.findall(log.read_text(errors="replace")))
    allowed = (project["prefix"], project["stdlib"], project["platstdlib"],
               str(Path(os.environ["COCKPIT_CACHE_DIR"]) / "bundles" / "_cockpit_sampler-"))
    assert any("/torch/" in p for p in loaded) and any("_cockpit_sampler" in p for p in loaded), len(loaded)
    strangers = sorted(p for p in loaded if not p.startswith(allowed)
                       or ("/site-packages/" in p and not p.startswith(project["prefix"])))
    assert not strangers, strangers[:20]

    done = _cli("sample", run.name, "--runs-dir", str(runs), "--chat", "--prompt", "What is 2+2?",
                "--max-new-tokens", "4", cwd=tmp_path)
    assert done.returncode == 0, (done.stderr[-3000:], log.read_text(errors="replace")[-3000:])

    # The Checkpoints tab's chat: one Sampler process, two turns, the model loaded once.
    chat = textwrap.dedent(f"""
        import json
        from cockpit.launch import sampler as smp
        from cockpit.metrics.checkpoints import list_run_checkpoints
        found = list_run_checkpoints({str(run.path)!r})
        spec = smp.choose(found, "latest", "a").spec
        s = smp.Sampler(smp.sampler_python(found), smp.sampler_log(found))
        turns = [{{"role": "user", "content": "What is 2+2?"}}]
        try:
            for n in range(2):
                s.send({{"models": [spec], "prompts": [turns], "chat": True, "max_new_tokens": 4, "seed": 0}})
                events = list(s.events())
                assert isinstance(events[-1], smp.Done), events[-1]
                answer = [e for e in events if isinstance(e, smp.Answer)][0].text
                turns += [{{"role": "assistant", "content": answer}}, {{"role": "user", "content": "And 3+3?"}}]
                print("loads:", sum(isinstance(e, smp.Loading) for e in events))
        finally:
            s.close()
    """)
    tool_python = str(Path(COCKPIT).parent / "python") if COCKPIT else sys.executable
    env = {k: v for k, v in os.environ.items() if not (COCKPIT and k == "PYTHONPATH")}
    done = subprocess.run([tool_python, "-c", chat], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stderr[-3000:], log.read_text(errors="replace")[-3000:])
    assert done.stdout.split() == ["loads:", "1", "loads:", "0"]

    merged = tmp_path / "merged"  # the adapter into its base, on the project's Python
    done = _cli("merge", run.name, "--runs-dir", str(runs), "-o", str(merged), cwd=tmp_path)
    assert done.returncode == 0, (done.stderr, (run.samples / "merge.log").read_text(errors="replace")[-3000:])
    assert (merged / "model.safetensors").is_file() and not list(merged.glob("adapter_*"))
    check = subprocess.run([PYTHON, "-c", "import sys; from transformers import AutoModelForCausalLM as M, "
                            "AutoTokenizer as T; T.from_pretrained(sys.argv[1]); M.from_pretrained(sys.argv[1])",
                            str(merged)], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-2000:]


def test_a_light_cockpit_reads_this_lines_trl_through_the_projects_python(tmp_path, line):
    """Issue 31: `migrate`, `fields` and `trainers` refused in a light install ("needs the training
    stack"); with --python they read the project's TRL on its own Python (discovery from the
    cockpit's bundled copy), and without it the refusal names --python."""
    if not COCKPIT:
        pytest.skip("the light install is what this is about (.ci/run gives COCKPIT_TRL_LINE_COCKPIT)")
    recipe = tmp_path / "sft.yaml"
    shutil.copy(REPO / "tests" / "fixtures" / "recipes" / "handbook_sft.yaml", recipe)
    refused = _cli("migrate", str(recipe), "--trainer", "sft", cwd=tmp_path)
    assert refused.returncode == 2 and "--python /path/to/its/venv/bin/python" in refused.stderr, refused.stderr
    listed = _cli("trainers", "--python", PYTHON, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert listed.stdout.startswith(f"TRL {line['trl']}") and "sft" in listed.stdout
    field = _cli("fields", "sft", "max_length", "--python", PYTHON, cwd=tmp_path)
    assert field.returncode == 0 and "max_length" in field.stdout, field.stderr[-2000:]
    done = _cli("migrate", str(recipe), "--trainer", "sft", "--python", PYTHON, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert (tmp_path / "sft.migrated.yaml").is_file() and "for script: it holds" in done.stdout, done.stdout
