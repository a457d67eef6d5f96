"""Script runs say what they saw: a script that builds no Trainer ends with that as its outcome, and a
script with two Trainers is journaled, resumed and exported as two segments. Real scripts, real
training on the offline demo assets, real CLI invocations."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.launch.plan import launch_prepared
from cockpit.launch.script import prepare_script, script_segments
from cockpit.run import journal
from cockpit.run.folder import RunFolder
from helpers import REPO, cockpit_cmd, wait_for, wait_journal_end

TWO = REPO / "tests" / "fixtures" / "scripts" / "two_trainers.py"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _ended(run: RunFolder) -> bool:
    return not run.read_status().live


@pytest.mark.proc
def test_a_script_that_builds_no_trainer_ends_saying_so(tmp_path, runs_dir):
    run = launch_prepared(prepare_script([sys.executable, "-c", "print('hello, no training here')"], cwd=tmp_path,
                                         runs_dir=runs_dir, name="plain"))
    wait_for(lambda: _ended(run), timeout=120)
    status = run.read_status()
    assert status.state == "finished" and status.exit_code == 0
    assert status.reason.startswith("no Trainer was built")
    assert "training finished" not in status.reason
    end = [r for r in wait_journal_end(run) if r.kind == journal.RUN_ENDED][-1]
    assert end.data["reason"] == status.reason and "builds a transformers or TRL Trainer" in end.data["fix"]
    rows = json.loads(_cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)
    assert [r["reason"] for r in rows if r["name"] == run.name] == [status.reason]


@pytest.mark.slow
def test_two_trainers_in_one_script_resume_and_export_as_two_segments(tmp_path, runs_dir):
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    demo = ensure_all(demo_dir())
    flag = tmp_path / "slow"
    flag.touch()
    cmd = [sys.executable, str(TWO), str(demo / "models" / "tiny-lm"), str(demo / "data"), "out",
           "--first-steps", "2", "--second-steps", "8", "--slow-while", str(flag)]
    run = launch_prepared(prepare_script(cmd, cwd=tmp_path, runs_dir=runs_dir, name="two"))
    second = tmp_path / "out" / "second"
    try:
        wait_for(lambda: (second / "checkpoint-2" / "model.safetensors").exists()
                 and any(r.kind == journal.CHECKPOINT and "second" in r.data["path"]
                         for r in journal.read_all(run.events)[0]), timeout=400)
        stopped = _cli("stop", run.name, "--force", "--grace", "3", "--runs-dir", str(runs_dir))
        assert stopped.returncode == 0, stopped.stderr
        assert wait_for(lambda: _ended(run), timeout=60)
    finally:
        flag.unlink()
        if run.read_status().live:  # a failed assertion above: end the run before leaving
            _cli("stop", run.name, "--force", "--grace", "1", "--runs-dir", str(runs_dir))

    segments = script_segments(run)
    assert [s.index for s in segments] == [0, 1]
    assert [s.output_dir for s in segments] == [tmp_path / "out" / "first", second]
    assert segments[0].checkpoints == [tmp_path / "out" / "first" / "checkpoint-2"]
    newest_second = segments[1].checkpoints[-1]

    first_model = (tmp_path / "out" / "first" / "checkpoint-2" / "model.safetensors").read_bytes()
    resumed = _cli("resume", run.name, "--runs-dir", str(runs_dir), "--wait")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-2000:]
    assert json.loads(run.resume_json.read_text()) == {"0": str(tmp_path / "out" / "first" / "checkpoint-2"),
                                                       "1": str(newest_second)}
    records = journal.read_all(run.events)[0]
    starts = [r.data for r in records if r.kind == journal.RUN_STARTED]
    # The first Trainer had finished before the stop: loaded from its last checkpoint, not trained a
    # step past its end (transformers' own resume of a finished checkpoint does that, issue 31).
    assert [(s["segment"], s["resumed_from"]) for s in starts] == [(0, None), (1, None), (1, str(newest_second))]
    done = [r for r in records if r.kind == journal.WARNING and r.data.get("code") == "segment_done"]
    assert len(done) == 1 and "Trainer 1 of the script had finished (step 2)" in done[0].data["message"]
    assert not (tmp_path / "out" / "first" / "checkpoint-3").exists()
    assert (tmp_path / "out" / "first" / "checkpoint-2" / "model.safetensors").read_bytes() == first_model
    # The resume check compares the second Trainer with its own checkpoint, never with the first's losses.
    checks = [r for r in records if r.kind == journal.FINDING and r.data["kind"] == "resume_check"]
    assert all(r.data["severity"] != "warning" for r in checks), [r.data["summary"] for r in checks]
    # The doctor's findings name the Trainer they are about, as the live judge's do: a weight check ends
    # on its worker thread, maybe after the next Trainer began, where its place in the journal would
    # give it to that one.
    assert checks and all(r.data.get("segment") == 1 for r in checks), [r.data for r in checks]
    weighed = [r.data for r in records if r.kind == journal.FINDING
               and r.data["kind"] in ("weight_change", "model_unchanged", "one_layer_change")]
    assert weighed
    for f in weighed:
        [ckpt] = [e["path"] for e in f["evidence"] if e.get("what") == "the checkpoint"]
        assert f.get("segment") == (0 if "first" in Path(ckpt).parts else 1), f
    listed = _cli("checkpoints", run.name, "--runs-dir", str(runs_dir))
    assert listed.returncode == 0, listed.stderr
    heads = [line for line in listed.stdout.splitlines() if line.startswith("# ")]
    assert [(h.split("  (")[0], h.split("  ")[-1]) for h in heads] == [  # (base: …) between, when known
        (f"# Trainer 1 of 2: {tmp_path / 'out' / 'first'}", "(--checkpoint t1:STEP)"),
        (f"# Trainer 2 of 2: {second}", "(--checkpoint STEP)")], heads
    # The first Trainer's checkpoint, answered by the real sampler beside the second's of the same step,
    # each labelled with its Trainer where the key named one; the kept rows say which.
    sampled = _cli("sample", run.name, "--checkpoint", "t1:checkpoint-2", "--vs", "2", "--prompt", "hello",
                   "--max-new-tokens", "2", "--runs-dir", str(runs_dir))
    assert sampled.returncode == 0, sampled.stderr[-2000:]
    assert "Trainer 1: checkpoint-2" in sampled.stdout and "│ checkpoint-2" in sampled.stdout, sampled.stdout
    kept = [json.loads(line) for f in sorted(run.samples.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert sorted((k["checkpoint"], k["step"]) for k in kept) == [("Trainer 1: checkpoint-2", 2),
                                                                  ("checkpoint-2", 2)], kept
    # The second Trainer starts from the first's checkpoint, named relative to the script's folder:
    # the doctor compares its weights with that folder, not with one the supervisor's folder does not hold.
    moved = [r.data for r in records if r.kind == journal.FINDING and r.data["kind"] == "weight_change"
             and "second" in json.dumps(r.data["evidence"])]
    start = str(tmp_path / "out" / "first" / "checkpoint-2")
    assert moved and all(any(e.get("path") == start for e in f["evidence"]) for f in moved), moved
    assert not [r for r in records if r.kind == journal.FINDING and r.data["kind"] == "model_unchanged"]
    judged = json.loads(_cli("findings", run.name, "--json", "--runs-dir", str(runs_dir)).stdout)
    assert {f["trainer"] for f in judged["findings"] if f["kind"] == "weight_change"} == {1, 2}
    state = json.loads((second / "checkpoint-8" / "trainer_state.json").read_text())
    assert (state["global_step"], state["max_steps"]) == (8, 8)
    assert run.read_status().state == "finished"

    out = tmp_path / "metrics.csv"
    done = _cli("export", str(run.path), "--csv", str(out))
    assert done.returncode == 0, done.stderr
    rows = [r for r in csv.DictReader(out.read_text(encoding="utf-8").splitlines()) if r["kind"] == "train"]
    by_segment = {seg: sorted({int(r["step"]) for r in rows if r["segment"] == seg and r.get("loss")})
                  for seg in ("0", "1")}
    assert by_segment["1"] == list(range(1, 9))
    assert by_segment["0"] == [1, 2]  # the first Trainer's points are all there beside the second's

    # `cockpit runs` shows each Trainer, not the last one's steps alone (issue 42)
    listed = _cli("runs", "--runs-dir", str(runs_dir)).stdout.splitlines()
    rows = [line.split() for line in listed if line.strip().startswith("Trainer ")]
    assert [r[:6] for r in rows] == [["Trainer", "1", "of", "2", "sft", "2/2"], ["Trainer", "2", "of", "2", "sft",
                                                                             "8/8"]], listed
    as_json = json.loads(_cli("runs", "--json", "--runs-dir", str(runs_dir)).stdout)
    assert [(t["step"], t["max_steps"]) for t in as_json[0]["trainers"]] == [(2, 2), (8, 8)]
    # a step there is not: every key there is, the first Trainer's too
    missing = _cli("sample", run.name, "--checkpoint", "999", "--prompt", "hi", "--runs-dir", str(runs_dir))
    assert missing.returncode == 2 and missing.stderr.strip().endswith(
        "no checkpoint at step 999 — there are: t1:2, 2, 4, 6, 8 (and base)"), missing.stderr


def test_segments_of_an_old_journal_without_segment_numbers_are_one(tmp_path):
    run = RunFolder(tmp_path)
    run.run_yaml.write_text("trainer: script\ncockpit:\n  script: {command: [python, t.py], cwd: /w}\n")
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("sft", output_dir="out"))
        jw.write(journal.checkpoint(2, "out/checkpoint-2"))
    [only] = script_segments(run)
    assert (only.index, only.output_dir, only.checkpoints) == (0, Path("/w/out"), [Path("/w/out/checkpoint-2")])


def _two_trainer_run(tmp_path: Path, runs_dir: Path) -> RunFolder:
    """A script run folder as two Trainers leave it (the real journal and run-folder writers, real
    checkpoint folders): Trainer 1 trained 24 steps into out/first, Trainer 2 16 steps into
    out/second, each NaN at steps 13 and 14, saving every 8 steps with a `weight_change` each."""
    from cockpit.run.folder import Status

    work = tmp_path / "work"
    run = RunFolder(runs_dir / "two-20250101-000000")
    run.path.mkdir(parents=True)
    run.run_yaml.write_text(f"trainer: script\ncockpit:\n  script: {{command: [python, t.py], cwd: {work}}}\n")
    run.write_status(Status(state="finished", name=run.name, trainer="script"))
    with journal.JournalWriter(run.events) as jw:
        for seg, (name, steps) in enumerate((("first", 24), ("second", 16))):
            jw.write(journal.run_started("sft", output_dir=f"out/{name}", max_steps=steps, segment=seg))
            for step in range(1, steps + 1):
                jw.write(journal.metrics(step, {"loss": float("nan") if step in (13, 14) else 3.0 - step / 10,
                                                "learning_rate": 1e-4, "grad_norm": 1.0 + step / 100}))
                if step % 8 == 0:
                    ckpt = work / "out" / name / f"checkpoint-{step}"
                    ckpt.mkdir(parents=True)
                    (ckpt / "config.json").write_text("{}")
                    (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")
                    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
                    jw.write(journal.checkpoint(step, f"out/{name}/checkpoint-{step}"))
                    jw.write(journal.finding("weight_change", steps=(step, step), severity="info",
                                             summary=f"the weights moved at {name}/checkpoint-{step}"))
        jw.write(journal.run_ended("finished"))
    return run


def _judge_as_the_supervisor(run: RunFolder) -> None:
    """The supervisor's live judge over the whole journal, fed as its one tail feeds it, then told
    the trainer ended (its last word)."""
    import time

    from cockpit.supervisor.findings import FindingsWatcher
    from cockpit.supervisor.watch import Beat

    records = journal.read_all(run.events)[0]
    beat = Beat(pid=None, started_at=time.time(), live=False)
    with journal.JournalWriter(run.events) as jw:
        watcher = FindingsWatcher(run, jw, "script")
        watcher.poll(records, beat)
        watcher.ended(records[-1], beat)


def test_findings_of_a_two_trainer_script_count_every_trainers_own(tmp_path, runs_dir):
    """Issue 31: `cockpit findings` showed 17 of the journal's 31 findings — judged as one run, the
    second Trainer's step 1 rewound the first's points, and a finding of one Trainer hid the other's
    of the same kind at the same steps. Each Trainer is judged on its own, live and after."""
    run = _two_trainer_run(tmp_path, runs_dir)
    # Live: the supervisor's judge says the NaN steps of each Trainer, not the first's alone.
    _judge_as_the_supervisor(run)
    records = journal.read_all(run.events)[0]
    said = [(r.data["kind"], r.data["steps"], r.data.get("segment")) for r in records
            if r.kind == journal.FINDING and r.data["kind"] == "nonfinite_values"]
    # written after both Trainers ran, each names its Trainer (readers place it by that, not by position)
    assert said == [("nonfinite_values", [13, 14], 0), ("nonfinite_values", [13, 14], 1)], said

    done = _cli("findings", run.name, "--json", "--runs-dir", str(runs_dir))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["findings"]
    by_trainer = {t: sorted(f["kind"] for f in found if f["trainer"] == t) for t in (1, 2)}
    # weight_change said at every save is one finding a Trainer (3 saves, then 2), never one for both
    assert by_trainer == {1: ["nonfinite_values", "weight_change"], 2: ["nonfinite_values", "weight_change"]}
    weights = [f["summary"] for f in found if f["kind"] == "weight_change"]
    assert "first/checkpoint-24" in weights[0] and "said at 3 checkpoints" in weights[0]
    assert "second/checkpoint-16" in weights[1] and "said at 2 checkpoints" in weights[1]
    checked = json.loads(done.stdout)["checked"]
    assert [(t["trainer"], t["steps"]) for t in checked["trainers"]] == [(1, 24), (2, 16)]
    text = _cli("findings", run.name, "--runs-dir", str(runs_dir))
    assert text.returncode == 0, text.stderr
    assert f"{run.name}: 4 findings from 2 Trainers" in text.stdout
    assert f"{run.name} · Trainer 1 of 2: 2 findings" in text.stdout
    assert f"{run.name} · Trainer 2 of 2: 2 findings" in text.stdout


def test_the_cli_names_and_picks_an_earlier_trainers_checkpoint_by_its_key(tmp_path, runs_dir):
    """`cockpit checkpoints` says how `--checkpoint` names each Trainer's checkpoints (`t1:STEP` for
    an earlier one, as the Checkpoints tab keys its rows), `--json` gives each its key, and `sample`
    and `merge` take the key: a Trainer or a step that is not there is one line naming what is."""
    from helpers import no_traceback

    run = _two_trainer_run(tmp_path, runs_dir)
    listed = _cli("checkpoints", run.name, "--runs-dir", str(runs_dir))
    assert listed.returncode == 0, listed.stderr
    first, second = tmp_path / "work" / "out" / "first", tmp_path / "work" / "out" / "second"
    assert f"# Trainer 1 of 2: {first}  (--checkpoint t1:STEP)" in listed.stdout.splitlines()
    assert f"# Trainer 2 of 2: {second}  (--checkpoint STEP)" in listed.stdout.splitlines()
    listed = json.loads(_cli("checkpoints", run.name, "--json", "--runs-dir", str(runs_dir)).stdout)
    [earlier] = listed["earlier_trainers"]
    assert [(c["key"], c["path"]) for c in earlier["checkpoints"]] == [
        (f"t1:checkpoint-{n}", str(first / f"checkpoint-{n}")) for n in (8, 16, 24)]

    for cmd in (("sample", run.name, "--prompt", "x"), ("merge", run.name, "-o", str(tmp_path / "merged"))):
        wrong = _cli(*cmd, "--checkpoint", "t3:checkpoint-8", "--runs-dir", str(runs_dir))
        no_traceback(wrong)
        assert (wrong.returncode, wrong.stderr.strip()) == (2, (
            f"cockpit: t3:checkpoint-8: there is no Trainer 3 — {run.name} built 2 Trainers; give "
            "t1:checkpoint-8 or t2:checkpoint-8 (`cockpit checkpoints` lists each one's)"))
    missing = _cli("sample", run.name, "--checkpoint", "t1:20", "--prompt", "x", "--runs-dir", str(runs_dir))
    no_traceback(missing)
    assert missing.returncode == 2
    assert missing.stderr.strip() == (f"cockpit: {run.name}: no checkpoint at step 20 of Trainer 1 — there are: "
                                      "t1:8, t1:16, t1:24, 8, 16 (and base)"), missing.stderr
    full = _cli("merge", run.name, "--checkpoint", "t1:24", "-o", str(tmp_path / "merged"), "--runs-dir", str(runs_dir))
    assert full.returncode == 2 and full.stderr.strip().startswith(
        "cockpit: Trainer 1: checkpoint-24 holds a full model, not a LoRA adapter"), full.stderr
    assert str(first / "checkpoint-24") in full.stderr


def test_a_doctor_check_written_after_the_next_trainer_began_names_its_own(tmp_path, runs_dir):
    """The supervisor's doctor weighs a checkpoint on its worker thread: the first Trainer's last
    checkpoint is often judged after the script began its second. The finding names the Trainer that
    saved it (`segment`), so `cockpit findings` gives it to that one, not to the Trainer its place
    in the journal falls in."""
    from cockpit.run.folder import Status
    from cockpit.supervisor.doctor import Doctor
    from cockpit.supervisor.watch import Beat
    from helpers import safetensors_file

    work = tmp_path / "work"
    (work / "base").mkdir(parents=True)
    safetensors_file(work / "base" / "model.safetensors")
    ckpt = work / "out" / "first" / "checkpoint-2"
    ckpt.mkdir(parents=True)
    safetensors_file(ckpt / "model.safetensors")  # the same weights: the model did not move
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 2, "log_history": []}))
    run = RunFolder(runs_dir / "two-20250101-000000")
    run.path.mkdir(parents=True)
    run.run_yaml.write_text(f"trainer: script\ncockpit:\n  script: {{command: [python, t.py], cwd: {work}}}\n")
    run.write_status(Status(state="running", name=run.name, trainer="script"))
    records = [journal.run_started("sft", model=str(work / "base"), output_dir="out/first", segment=0),
               journal.checkpoint(2, "out/first/checkpoint-2"),
               journal.run_started("sft", model="out/first", output_dir="out/second", segment=1)]
    with journal.JournalWriter(run.events) as jw:
        jw.write_all(records)
        doctor = Doctor(run, jw)
        doctor.poll(records, Beat(pid=None, started_at=0.0, live=True))  # the check is queued, then Trainer 2 begins
        doctor.ended(records[-1], Beat(pid=None, started_at=0.0, live=False))  # waits for the queued checks
    written = [r for r in journal.read_all(run.events)[0] if r.kind == journal.FINDING]
    assert [(r.data["kind"], r.data.get("segment")) for r in written] == [("model_unchanged", 0)]
    done = _cli("findings", run.name, "--json", "--runs-dir", str(runs_dir))
    assert done.returncode == 0, done.stderr
    assert [(f["kind"], f["trainer"]) for f in json.loads(done.stdout)["findings"]] == [("model_unchanged", 1)]


@pytest.mark.anyio
async def test_the_checkpoints_tab_lists_every_trainers_checkpoints_under_its_trainer(tmp_path, runs_dir):
    """Issue 31: the Checkpoints tab listed only the last Trainer's output folder. Each Trainer's
    checkpoints are listed under a row naming it; an earlier Trainer's checkpoint is picked and
    sampled from its own folder, labelled with its Trainer."""
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
    from helpers.ui import app_for, app_wait

    run = _two_trainer_run(tmp_path, runs_dir)
    app = app_for(tmp_path, mode="replay", paths=[str(run.path)])
    async with app.run_test(size=(140, 36)) as pilot:
        await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the replay", limit=60)
        await pilot.press("8")
        pane = app.screen.query_one(CheckpointsPane)
        table = pane.query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count >= 7, "both Trainers' checkpoints", limit=60)
        rows = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert rows == ["Trainer 1 of 2", "checkpoint-8", "checkpoint-16", "checkpoint-24",
                        "Trainer 2 of 2", "checkpoint-8", "checkpoint-16"], rows
        assert str(table.get_row_at(0)[6]).endswith("work/out/first")
        table.focus()
        for row in (0, 2, 6):  # a Trainer's row is not a checkpoint: not picked
            table.move_cursor(row=row)
            await pilot.press("space")
        assert pane.picked == ["t1:checkpoint-16", "checkpoint-16"]
        first, second = pane._choices(2)
        assert (first.label, first.spec["path"]) == (
            "Trainer 1: checkpoint-16", str(tmp_path / "work" / "out" / "first" / "checkpoint-16"))
        assert (second.label, second.spec["path"]) == (
            "checkpoint-16", str(tmp_path / "work" / "out" / "second" / "checkpoint-16"))


@pytest.mark.anyio
async def test_the_findings_tab_of_a_two_trainer_script_shows_every_trainers_findings(tmp_path, runs_dir):
    """The Findings tab of the same run replayed: each Trainer's findings, said whose they are; the
    judge's (the newest Trainer's, whose points the store holds) merged with that Trainer's only."""
    from cockpit.ui.widgets.run.findings_pane import FindingsPane
    from helpers.ui import app_for, app_wait

    run = _two_trainer_run(tmp_path, runs_dir)
    _judge_as_the_supervisor(run)  # what the supervisor records, Trainer by Trainer
    app = app_for(tmp_path, mode="replay", paths=[str(run.path)])
    async with app.run_test(size=(140, 36)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded", limit=60)
        await pilot.press("7")
        pane = app.screen.query_one(FindingsPane)
        await app_wait(pilot, lambda: pane.checked is not None and "judging" not in
                       str(app.screen.query_one("#findings-title").render()), "the judge", limit=60)
        shown = sorted((f.summary.split(":")[0], f.kind) for f in pane.findings)
        assert shown == [("Trainer 1", "nonfinite_values"), ("Trainer 1", "weight_change"),
                         ("Trainer 2", "nonfinite_values"), ("Trainer 2", "weight_change")], shown
        assert str(app.screen.query_one("#findings-title").render()).startswith("Findings (4)")
