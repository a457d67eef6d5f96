"""What users did through the CLI and tripped over (issue 8), each done again the same way.

Real runs of the offline demo through the detached supervisor; nothing is mocked.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.config.presets import load_preset
from cockpit.config.validate import ValidationError, validate
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import NO_SFT_CHECK, STOPPED_STEPS, cockpit_cmd, farm_copy, wait_for


def cockpit(*args: str, columns: int | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)


def _records(run: RunFolder) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _metric_steps(run: RunFolder) -> list[int]:
    return [r.step for r in _records(run)
            if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]


def _ends(run: RunFolder) -> list[journal.Record]:
    return [r for r in _records(run) if r.kind == journal.RUN_ENDED]


def _stopped_run(runs: Path) -> tuple[RunFolder, int]:
    """A run stopped with a checkpoint a few steps in, the way a user does it: `cockpit stop` (a copy of
    the run farm's `stopped` run: STOPPED_STEPS steps, stopped with a save after 5 or more, tests/helpers)."""
    run = farm_copy("stopped", runs)
    end = wait_for(lambda: _ends(run)[-1] if _ends(run) else None)
    assert end.data["state"] == "stopped", end.data
    wait_for(lambda: not run.read_status().live)
    last = _metric_steps(run)[-1]
    assert last < STOPPED_STEPS and run.checkpoints()[-1].name == f"checkpoint-{last}"
    return run, last


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> RunFolder:
    """One finished 4-step demo run (checkpoints 2 and 4), only read by the tests that use it: a copy
    of the run farm's (tests/helpers)."""
    return farm_copy("sft", tmp_path_factory.mktemp("finished") / "runs")


# -- 2, 3: following a resumed run -----------------------------------------------------------


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """The stopped run resumed once, the way a user does it, for both tests below: `cockpit resume
    --wait` starts the new attempt and waits for it, and `cockpit watch`, started once that attempt
    is under way, follows the same run. Each test reads its own command's output (one training)."""
    runs = tmp_path_factory.mktemp("resumed") / "runs"
    run, last = _stopped_run(runs)
    started = time.monotonic()
    waiting = subprocess.Popen(cockpit_cmd("resume", run.name, "--runs-dir", str(runs), "--wait",
                                           "--set", NO_SFT_CHECK),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: (run.read_status().attempt == 2 and run.read_status().live) or waiting.poll() is not None)
        watch = cockpit("watch", run.name, "--runs-dir", str(runs), timeout=600)
        live_after_watch = run.read_status().live
        out, err = waiting.communicate(timeout=600)
        waited = time.monotonic() - started
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    resume = subprocess.CompletedProcess(waiting.args, waiting.returncode, out, err)
    return {"run": run, "last": last, "resume": resume, "waited": waited, "watch": watch,
            "live_after_watch": live_after_watch}


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_resume_wait_follows_the_new_attempt_and_exits_0_when_it_finishes(resumed):
    run, last, proc = resumed["run"], resumed["last"], resumed["resume"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert resumed["waited"] > 2  # it waited for the training, not the old outcome
    # It followed the attempt it started, to that attempt's own end.
    assert re.search(rf"resumed from \S*/checkpoint-{last}\b", proc.stdout), proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("ended: finished")
    assert "ended: stopped" not in proc.stdout
    assert run.read_status().state == "finished" and run.read_status().attempt == 2
    # The journal shows the steps continuing from the checkpoint to max_steps.
    steps = _metric_steps(run)
    resumed_steps = steps[steps.index(last) + 1:]
    assert resumed_steps[0] == last + 1 and resumed_steps[-1] == STOPPED_STEPS
    assert [e.data["state"] for e in _ends(run)] == ["stopped", "finished"]


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_watch_follows_a_resumed_run_to_the_end_of_its_newest_attempt(resumed):
    last, watch = resumed["last"], resumed["watch"]
    assert watch.returncode == 0, watch.stdout[-2000:] + watch.stderr[-2000:]
    # Only the newest attempt's end stops the watch: by then the run is over.
    assert not resumed["live_after_watch"]
    lines = watch.stdout.rstrip().splitlines()
    assert lines[-1].startswith("ended: finished"), lines[-5:]
    ended = [line for line in lines if line.startswith("ended:")]
    assert [e.split()[1] for e in ended] == ["stopped", "finished"]
    assert f"step {last + 1}:" in watch.stdout and f"step {STOPPED_STEPS}:" in watch.stdout


# -- 4: a finished run is not resumed past its end -------------------------------------------


@pytest.mark.slow
def test_resuming_a_finished_run_is_refused_and_starts_nothing(finished):
    runs = finished.path.parent
    before = finished.events.read_bytes(), finished.status_json.read_bytes()
    proc = cockpit("resume", finished.name, "--runs-dir", str(runs))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "already finished at step 4 of 4" in lines[0]
    assert "--set max_steps=" in lines[0]  # the fix
    time.sleep(1.0)  # anything launched would have written by now
    assert (finished.events.read_bytes(), finished.status_json.read_bytes()) == before
    assert [c.name for c in finished.checkpoints()] == ["checkpoint-2", "checkpoint-4"]


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_the_fix_for_a_finished_run_trains_it_further(tmp_path):
    """`resume --set max_steps=N`, as the refusal says, continues from the last checkpoint."""
    run = farm_copy("sft", tmp_path / "runs")  # a finished 4-step run, this test's own copy
    proc = cockpit("resume", run.name, "--runs-dir", str(run.path.parent), "--wait",
                   "--set", "max_steps=6", "--set", NO_SFT_CHECK)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert _metric_steps(run) == [1, 2, 3, 4, 5, 6]
    assert "max_steps: 6" in run.run_yaml.read_text()
    again = cockpit("resume", run.name, "--runs-dir", str(run.path.parent))
    assert again.returncode == 2 and "already finished at step 6 of 6" in again.stderr


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_resume_names_the_steps_it_will_train_again(tmp_path):
    """Issue 42: a resume after `stop --force` (or a crash) trained steps again, and nothing said
    so. Here the newest checkpoint (4) is gone: the resume from checkpoint-2 says steps 3–4 go again."""
    run = farm_copy("sft", tmp_path / "runs")
    shutil.rmtree(run.output / "checkpoint-4")
    proc = cockpit("resume", run.name, "--runs-dir", str(run.path.parent), "--wait",
                   "--set", "max_steps=5", "--set", NO_SFT_CHECK)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert ("cockpit: steps 3–4 will be trained again: training had reached step 4, and the newest complete "
            "checkpoint is checkpoint-2") in proc.stderr.splitlines(), proc.stderr
    assert _metric_steps(run) == [1, 2, 3, 4, 3, 4, 5]


# -- 5, 30: every command finds a run by name or prefix, and near misses get a suggestion ------


@pytest.mark.slow
def test_export_takes_a_run_name_and_a_name_prefix(finished, tmp_path):
    runs = finished.path.parent
    for ref in (finished.name, "demo-sft"):
        out = tmp_path / f"{ref}.csv"
        proc = cockpit("export", ref, "--runs-dir", str(runs), "--csv", str(out))
        assert proc.returncode == 0, proc.stderr
        with open(out, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r["kind"] == "train"]
        assert [int(r["step"]) for r in rows] == [1, 2, 3, 4]


@pytest.mark.proc
def test_export_errors_speak_of_export_not_replay(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = cockpit("export", str(empty), "--csv", str(tmp_path / "o.csv"))
    assert proc.returncode == 2 and str(empty) in proc.stderr
    assert "replay" not in proc.stderr


def _tmux_screen(command: list[str], until: str, limit: float = 60.0) -> str:
    session = f"cockpit-cli-user-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "140", "-y", "40",
                    shlex.join(command) + "; sleep 600"], check=True)
    try:
        deadline = time.monotonic() + limit
        screen = ""
        while time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True).stdout
            if until in screen or "Traceback" in screen:
                break
        return screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_replay_takes_a_run_name(finished):
    screen = _tmux_screen([sys.executable, "-m", "cockpit.cli", "--runs-dir",
                           str(finished.path.parent), "replay", "demo-sft"], until="step 4/4")
    assert "Traceback" not in screen and "no such" not in screen
    assert "step 4/4" in screen and finished.name in screen, screen


@pytest.mark.slow
@pytest.mark.parametrize("command", [["watch"], ["stop"], ["resume"], ["attach"],
                                     ["export", "--csv", "o.csv"], ["replay"]])
def test_a_mistyped_run_name_gets_a_did_you_mean(finished, command):
    runs = finished.path.parent
    proc = cockpit(command[0], "demo-stf", *command[1:], "--runs-dir", str(runs))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert f"did you mean '{finished.name}'?" in lines[0]


# -- 27: every validation problem at once ----------------------------------------------------

THREE_TYPOS = """\
trainer: grpo
model_name_or_path: demo:models/tiny-lm
dataset_name: demo:data/prompt_only
learnign_rate: 1.0e-4
num_generation: 4
max_steps: 3
cockpit:
  descripton: three typos, one try
  reward_funcs: [think_format_reward]
"""


@pytest.mark.proc
def test_validation_reports_every_problem_at_once(tmp_path):
    preset = tmp_path / "typos.yaml"
    preset.write_text(THREE_TYPOS)
    runs = tmp_path / "runs"
    for extra in ([], ["--dry-run"]):
        proc = cockpit("run", str(preset), "--runs-dir", str(runs), *extra)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert "Traceback" not in proc.stderr
        assert len(lines) == 3, lines
        assert all(line.startswith("cockpit: ") for line in lines)
        assert "'learnign_rate'" in lines[0] and "did you mean 'learning_rate'" in lines[0]
        assert "'num_generation'" in lines[1] and "did you mean 'num_generations'" in lines[1]
        assert "'cockpit.descripton'" in lines[2] and "did you mean 'cockpit.description'" in lines[2]
        assert not runs.exists() or list(runs.iterdir()) == []


def test_validation_problems_name_their_field(tmp_path, registry):
    preset = tmp_path / "typos.yaml"
    preset.write_text(THREE_TYPOS.replace("max_steps: 3", "max_steps: many"))
    with pytest.raises(ValidationError) as info:
        validate(load_preset(preset), registry)
    fields = [p.field for p in info.value.problems]
    assert fields == ["learnign_rate", "num_generation", "max_steps", "cockpit.descripton"]
    assert str(info.value).splitlines() == [p.message for p in info.value.problems]


# -- 28: fields --------------------------------------------------------------------------------


@pytest.mark.proc
def test_fields_use_the_terminal_width_and_mark_cuts(registry):
    help_of = {f.name: f.help for f in registry.fields("grpo")}
    for width in (100, 220):
        proc = cockpit("fields", "grpo", columns=width)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert all(len(line) <= width for line in lines)
        long_help = [line for line in lines if len(help_of[line.split()[0]]) > width]
        assert long_help and all(line.endswith("…") for line in long_help)
    # at 220 columns the help gets what is left of them, not a fixed 80
    assert max(len(line) for line in lines) > 200


@pytest.mark.proc
def test_fields_search_ranks_names_before_help_text():
    proc = cockpit("fields", "grpo", "--search", "kl", columns=200)
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names.index("beta") < names.index("enable_jit_checkpoint")
    in_name = [i for i, n in enumerate(names) if "kl" in n]
    assert in_name == list(range(len(in_name)))  # every name match comes first


@pytest.mark.proc
def test_fields_search_without_matches_says_so_and_fails():
    proc = cockpit("fields", "grpo", "--search", "zzzz")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "no field matches 'zzzz'" in proc.stderr


@pytest.mark.proc
def test_fields_of_one_field_shows_all_of_it(registry):
    beta = next(f for f in registry.fields("grpo") if f.name == "beta")
    proc = cockpit("fields", "grpo", "beta", columns=80)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0].startswith("beta")
    assert re.search(r"type:\s+float", out) and re.search(rf"default:\s+{re.escape(repr(beta.default))}", out)
    assert " ".join(beta.help.split()) in " ".join(out.split())  # the whole help, wrapped
    miss = cockpit("fields", "grpo", "bta")
    assert miss.returncode == 2 and "did you mean 'beta'" in miss.stderr


# -- 29: trainers ------------------------------------------------------------------------------


@pytest.mark.proc
def test_trainers_fit_the_terminal_and_cut_descriptions_at_a_word():
    specs = json.loads(cockpit("trainers", "--all", "--json").stdout)
    for width in (80, 120):
        proc = cockpit("trainers", "--all", columns=width)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert all(len(line) <= width for line in lines), width
        for spec in specs:
            line = next(ln for ln in lines if ln.startswith(spec["name"] + " "))
            title = spec["title"]
            whole_words = [title] + [title[:i] + "…" for i, ch in enumerate(title) if ch == " "]
            assert any(t in line for t in whole_words), (width, line)


# -- 42: every argument says what it is -------------------------------------------------------


def test_every_argument_of_every_command_has_help():
    """Walks the whole parser: a positional or an option without a help line (`migrate FILE`,
    `stop RUN`, `serve --host` once) shows as a bare name in `--help`."""
    import argparse

    from cockpit.cli import build_parser

    bare: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and (not action.help or action.help == argparse.SUPPRESS):
                bare.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "cockpit")
    assert bare == [], bare
