"""Nothing a run wrote reaches the terminal raw: an OSC title set, a screen clear, a colour, a bell, a
C1 CSI and a bidi override, put in every kind of text a run holds (a logged metric key, a warning,
a phase detail, an alert, a finding, a run_ended reason, the trainer's and the run folder's names,
a prompt and a model answer, a checkpoint's base model), printed by the real CLI: `watch`,
`run --wait`, `runs`, `findings`, `checkpoints`, `export`, `stop`, `sample`. All of it goes through
one function, `cockpit.text.printable` (`one_line` for a line)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from cockpit.run import journal
from cockpit.text import one_line, printable
from helpers import checkpoint_folder, cli, make_run_folder, no_traceback

OSC_TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J\x1b[H"
RED = "\x1b[31m"
C1_CSI = "\x9b2J"
BIDI = "\u202e"
HOSTILE = OSC_TITLE + CLEAR + RED + C1_CSI + BIDI
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_clean(*texts: str) -> None:
    for text in texts:
        bad = RAW.findall(text.replace("\r\n", "\n"))
        assert not bad, f"raw control characters reached the terminal: {bad!r} in {text[:400]!r}"


def test_the_one_escaping_function_keeps_text_and_shows_controls():
    assert printable("a" + HOSTILE + "b\n\tc") == "a·]0;PWNED··[2J·[H·[31m·2J·b\n\tc"
    assert one_line("two\nlines\tand" + RED) == "two⏎ lines and·[31m"
    assert printable("naïve 日本語 ✓") == "naïve 日本語 ✓"  # printable text is kept as it is


@pytest.fixture
def hostile_runs(tmp_path):
    runs = tmp_path / "runs"
    name = f"evil{HOSTILE}run"
    records = [
        journal.run_started(f"sft{HOSTILE}", max_steps=3, versions={"trl": f"1.16{HOSTILE}"}, device=f"cpu{RED}"),
        journal.phase("loading_model", f"model{HOSTILE}"),
        journal.metrics(1, {f"loss{HOSTILE}": 1.0, "loss": 1.0}),
        journal.warning(f"careful{HOSTILE}", fix=f"fix{HOSTILE}"),
        journal.alert(f"rule{HOSTILE}", f"alert{HOSTILE}", key="loss", value=1.0, step=1,
                      actions=[{"action": "webhook", "ok": False, "detail": f"detail{HOSTILE}"}]),
        journal.completions(2, [{"prompt": f"prompt{HOSTILE}", "completion": f"answer{HOSTILE}",
                                 "rewards": {f"r{HOSTILE}": 1.0}}], source="trainer_logs"),
        journal.finding("nan_loss", steps=(1, 2), severity="warning", summary=f"summary{HOSTILE}",
                        fix=f"fix{HOSTILE}", evidence=[{"type": "completions", "step": 2, "what": "x",
                                                        "rows": [{"completion": f"ev{HOSTILE}"}]}]),
        journal.checkpoint(2, f"/ckpt{HOSTILE}"),
        journal.metrics(3, {"loss": 0.5}),
        journal.run_ended("failed", reason=f"reason{HOSTILE}\nsecond line", fix=f"fix{HOSTILE}"),
    ]
    run = make_run_folder(runs, name, state="failed", records=records, trainer="sft")
    ckpt = checkpoint_folder(run.output, 2)
    (ckpt / "config.json").unlink()
    (ckpt / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": f"base{HOSTILE}"}))
    return runs, run


def test_watch_runs_findings_checkpoints_export_and_stop_show_run_text_escaped(hostile_runs, tmp_path):
    runs, run = hostile_runs
    watched = cli("watch", str(run.path), "--no-follow")
    no_traceback(watched)
    assert_clean(watched.stdout, watched.stderr)
    for seen in ("loss·]0;PWNED", "careful·]0;PWNED", "alert·]0;PWNED", "summary·]0;PWNED", "answer·]0;PWNED",
                 "reason·]0;PWNED", "⏎ second line", "model·]0;PWNED", "sft·]0;PWNED", "detail·]0;PWNED"):
        assert seen in watched.stdout, (seen, watched.stdout)

    listed = cli("runs", "--runs-dir", str(runs))
    no_traceback(listed)
    assert_clean(listed.stdout, listed.stderr)
    assert "evil·]0;PWNED" in listed.stdout

    found = cli("findings", str(run.path))
    no_traceback(found)
    assert_clean(found.stdout, found.stderr)
    assert "summary·]0;PWNED" in found.stdout and "ev·]0;PWNED" in found.stdout
    as_json = cli("findings", str(run.path), "--json")
    assert_clean(as_json.stdout)  # JSON escapes them itself (\u001b)
    assert any(f["summary"] == f"summary{HOSTILE}" for f in json.loads(as_json.stdout)["findings"])

    ckpts = cli("checkpoints", str(run.path))
    no_traceback(ckpts)
    assert_clean(ckpts.stdout, ckpts.stderr)
    assert "lora on base·]0;PWNED" in ckpts.stdout

    out = tmp_path / f"out{RED}.csv"
    exported = cli("export", str(run.path), "--csv", str(out))
    no_traceback(exported)
    assert_clean(exported.stdout, exported.stderr)

    stopped = cli("stop", str(run.path))  # not running: the refusal names the run, escaped
    assert_clean(stopped.stdout, stopped.stderr)
    assert "evil·]0;PWNED" in stopped.stdout + stopped.stderr


def test_run_wait_shows_a_failing_scripts_own_words_escaped(tmp_path):
    """A real script run whose error text carries the escapes: the supervisor quotes it in its
    run_ended reason, and `run --wait` prints that reason through `one_line`."""
    script = tmp_path / "boom.py"
    script.write_text("import sys\nsys.stderr.write('RuntimeError: boom " + HOSTILE.encode("unicode_escape").decode()
                      + "\\n')\nsys.exit(3)\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "cockpit.cli", "run", "--wait", "--runs-dir", str(tmp_path / "runs"), "--",
         sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path,
        stdin=subprocess.DEVNULL, env={**os.environ})
    no_traceback(proc)
    assert proc.returncode == 1
    assert_clean(proc.stdout, proc.stderr)
    assert "ended: failed" in proc.stdout


@pytest.mark.slow
def test_sample_prints_a_prompt_and_the_models_answer_escaped(tmp_path):
    """The real sampler on a checkpoint of the demo's tiny model, asked with a prompt full of escapes
    (as a run's own logged prompts may be): the prompt line and the answer reach stdout escaped."""
    import shutil

    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    ckpt = tmp_path / "out" / "checkpoint-1"
    shutil.copytree(ensure_all(demo_dir()) / "models" / "tiny-lm", ckpt)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 1, "max_steps": 1, "log_history": []}))
    proc = cli("sample", str(tmp_path / "out"), "--prompt", f"say {HOSTILE} back", "--max-new-tokens", "24",
               "--temperature", "1.5", "--seed", "3", "--no-keep", timeout=300)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout, proc.stderr)
    assert "── prompt 1: say ·]0;PWNED" in proc.stdout
