"""A reader never dies on one bad run folder, and never hangs on one: each case is the real damaged
file (random bytes, wrong types, a folder, a FIFO, a link to /dev/zero, a 1 GB line) under the real
CLI (`runs`, `watch`, `stop`, `export`, `findings`, `checkpoints`), beside a good run that must still
be listed. Run folders and journals are written by hand with the real journal code; no training
starts here but where the case is about training."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cockpit.run import journal
from cockpit.run.folder import RunFolder, checkpoint_problem, complete_checkpoint
from helpers import NO_SFT_CHECK, checkpoint_folder, cli, make_run_folder, no_traceback, safetensors_file


def _mkfifo(path) -> bool:
    """A FIFO where a file was (the damage tables below are lambdas: one expression each)."""
    os.mkfifo(path)
    return True


# -- D1: a damaged status.json ------------------------------------------------------------------

DAMAGED_STATUS = {
    "random bytes": lambda p: p.write_bytes(bytes(range(256)) * 4),
    "state is an object": lambda p: p.write_text('{"state": {"a": 1}, "name": "x"}'),
    "state is a number": lambda p: p.write_text('{"state": 5}'),
    "pid is a string": lambda p: p.write_text('{"state": "running", "supervisor_pid": "12", "host": "h"}'),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
    "a FIFO": lambda p: (p.unlink(), _mkfifo(p)),
}


@pytest.mark.parametrize("damage", list(DAMAGED_STATUS))
def test_a_damaged_status_is_one_line_in_runs_watch_and_stop_and_the_other_runs_are_listed(tmp_path, damage):
    runs = tmp_path / "runs"
    make_run_folder(runs, "good-run")
    bad = make_run_folder(runs, "bad-run")
    DAMAGED_STATUS[damage](bad.status_json)

    listed = cli("runs", "--runs-dir", str(runs))
    no_traceback(listed)
    assert listed.returncode == 0
    assert "good-run" in listed.stdout and "finished" in listed.stdout
    assert "bad-run" in listed.stdout and "unknown" in listed.stdout  # still listed, as unknown
    said = [line for line in listed.stderr.splitlines() if "bad-run" in line]
    assert len(said) == 1 and "status.json" in said[0] and "delete it" in said[0], listed.stderr
    as_json = cli("runs", "--json", "--runs-dir", str(runs))
    assert {r["name"]: r["state"] for r in json.loads(as_json.stdout)} == {"good-run": "finished",
                                                                          "bad-run": "unknown"}

    for args in (("watch", "bad-run", "--no-follow"), ("stop", "bad-run"), ("stop", "bad-run", "--force")):
        proc = cli(*args, "--runs-dir", str(runs))
        no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "status.json" in lines[-1], (args, proc.stderr)


# -- D2: records of the right kind with the wrong types ------------------------------------------


def _hand_line(kind: str, data: dict, step: int | None = None) -> bytes:
    return json.dumps({"v": 1, "t": 1.0, "kind": kind, "step": step, "data": data}).encode() + b"\n"


def test_records_with_wrong_types_are_skipped_and_counted_and_every_reader_goes_on(tmp_path):
    runs = tmp_path / "runs"
    run = make_run_folder(runs, "typed-run")
    with open(run.events, "ab") as fh:
        fh.write(_hand_line("run_started", {"trainer": "sft", "max_steps": "abc", "versions": "x"}, 0))
        fh.write(_hand_line("progress", {"max_steps": 5, "eta_s": "x", "steps_per_s": "fast"}, 4))
        fh.write(_hand_line("finding", {"kind": "k", "severity": "warning", "summary": "s", "steps": "1-2",
                                        "evidence": "none"}, 4))
        fh.write(_hand_line("alert", {"rule": "r", "message": "m", "actions": ["not a dict"]}, 4))
        fh.write(_hand_line("run_ended", {"state": ["finished"], "exit_code": "0"}, 4))
        fh.write(journal.encode(journal.metrics(5, {"loss": 0.25})))
    records, skipped = journal.read_all(run.events)
    assert skipped == 5
    assert [r.step for r in records if r.kind == journal.METRICS] == [1, 2, 3, 5]

    listed = cli("runs", "--runs-dir", str(runs))
    no_traceback(listed)
    assert listed.returncode == 0 and "typed-run" in listed.stdout and "5/3" in listed.stdout, listed.stdout

    watched = cli("watch", "typed-run", "--no-follow", "--runs-dir", str(runs))
    no_traceback(watched)
    assert "step 5: loss=0.25" in watched.stdout
    assert "5 record(s) with fields of the wrong type skipped" in watched.stderr

    out = tmp_path / "m.csv"
    exported = cli("export", str(run.path), "--csv", str(out))
    no_traceback(exported)
    assert exported.returncode == 0 and "wrong type" in exported.stderr
    assert out.read_text().count("\n") == 5  # the header and steps 1, 2, 3, 5

    found = cli("findings", str(run.path))
    no_traceback(found)
    assert found.returncode == 0, found.stderr


# -- D3: only regular files are read --------------------------------------------------------------

HOSTILE = {
    "events.jsonl -> /dev/zero": lambda run: (run.events.unlink(), run.events.symlink_to("/dev/zero")),
    "events.jsonl is a FIFO": lambda run: (run.events.unlink(), _mkfifo(run.events)),
    "run.yaml is a FIFO": lambda run: (run.run_yaml.unlink(), _mkfifo(run.run_yaml)),
    "status.json -> /dev/zero": lambda run: (run.status_json.unlink(), run.status_json.symlink_to("/dev/zero")),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_fifo_or_dev_zero_in_one_folder_never_hangs_runs_for_the_others(tmp_path, case):
    runs = tmp_path / "runs"
    make_run_folder(runs, "good-run")
    bad = make_run_folder(runs, "hostile-run")
    HOSTILE[case](bad)
    listed = cli("runs", "--runs-dir", str(runs), timeout=30)  # it hung for ever before
    no_traceback(listed)
    assert listed.returncode == 0 and "good-run" in listed.stdout
    watched = cli("watch", "hostile-run", "--no-follow", "--runs-dir", str(runs), timeout=30)
    no_traceback(watched)
    assert watched.returncode in (0, 1, 2)
    if "events.jsonl" in case:
        assert "not a regular file" in watched.stderr


# -- D4: a 1 GB line ------------------------------------------------------------------------------


def test_a_one_gigabyte_line_is_skipped_and_named_by_watch_export_and_findings(tmp_path):
    """A sparse 1 GB run of NUL bytes with no newline between two good stretches of a journal: each
    reader keeps what comes after it, and says it skipped one line."""
    runs = tmp_path / "runs"
    run = make_run_folder(runs, "long-line", records=[journal.run_started("sft", max_steps=4),
                                              journal.metrics(1, {"loss": 1.0}), journal.metrics(2, {"loss": 0.9})])
    os.truncate(run.events, run.events.stat().st_size + 2**30)  # a hole: 1 GB of zeros that take no disk
    with open(run.events, "ab") as fh:
        fh.write(b"\n")
        fh.write(journal.encode(journal.metrics(3, {"loss": 0.8})))
        fh.write(journal.encode(journal.metrics(4, {"loss": 0.7})))
        fh.write(journal.encode(journal.run_ended("finished", reason="training finished")))
    watched = cli("watch", "long-line", "--no-follow", "--runs-dir", str(runs), timeout=120)
    no_traceback(watched)
    assert "step 4: loss=0.7" in watched.stdout and "ended: finished" in watched.stdout
    assert "1 line(s) longer than 16 MB skipped" in watched.stderr

    out = tmp_path / "m.csv"
    exported = cli("export", str(run.path), "--csv", str(out), timeout=120)
    no_traceback(exported)
    assert exported.returncode == 0 and "longer than 16 MB" in exported.stderr
    assert [line.split(",")[0] for line in out.read_text().splitlines()[1:]] == ["1", "2", "3", "4"]

    found = cli("findings", str(run.path), timeout=120)
    no_traceback(found)
    assert found.returncode == 0, found.stderr


# -- D6: deep YAML ------------------------------------------------------------------------------


def test_yaml_nested_a_hundred_thousand_deep_is_one_line(tmp_path):
    preset = tmp_path / "deep.yaml"
    preset.write_text("trainer: sft\nx: " + "[" * 100_000 + "\n", encoding="utf-8")
    proc = cli("run", str(preset), "--dry-run", cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"cockpit: {preset}: nested too deeply to read — flatten it "
                                                "— fix the YAML syntax"] or "nested too deeply" in proc.stderr


# -- D8: a step past 64 bits ------------------------------------------------------------------


def test_findings_json_writes_a_step_past_64_bits(tmp_path):
    """A NaN in the record sends it through the stdlib's JSON, which keeps ints past 64 bits whole
    (orjson would read them as floats); `findings --json` writes them back."""
    huge = 2**70
    run = make_run_folder(tmp_path / "runs", "huge-step", records=[
        journal.run_started("sft", max_steps=3), journal.metrics(1, {"loss": 1.0}),
        journal.finding("nan_loss", steps=(huge, huge + 1), severity="error", summary="loss became NaN", step=huge,
                        evidence=[{"type": "metric", "key": "loss", "points": [[huge, float("nan")]]}]),
        journal.run_ended("failed", reason="x")])
    proc = cli("findings", str(run.path), "--json")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert [huge, huge + 1] in [f["steps"] for f in json.loads(proc.stdout)["findings"]]


# -- D9, D10: checkpoints whose state or weights are damaged ---------------------------------------


def test_truncated_weights_are_incomplete_and_a_log_history_that_is_not_a_list_is_listed(tmp_path):
    run = make_run_folder(tmp_path / "runs", "ckpts")
    good = checkpoint_folder(run.output, 2)
    odd = checkpoint_folder(run.output, 4, log_history=5)
    cut = checkpoint_folder(run.output, 6, cut=100)
    assert complete_checkpoint(good) and complete_checkpoint(odd)
    assert not complete_checkpoint(cut) and "cut short" in checkpoint_problem(cut)

    proc = cli("checkpoints", str(run.path), "--json")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    complete = {c["step"]: c["complete"] for c in json.loads(proc.stdout)["checkpoints"]}
    assert complete == {2: True, 4: True, 6: False}
    text = cli("checkpoints", str(run.path))
    assert [line.split()[0] for line in text.stdout.splitlines() if "incomplete" in line] == ["6"]


def test_a_sharded_checkpoint_missing_a_shard_is_incomplete(tmp_path):
    ckpt = checkpoint_folder(tmp_path / "out", 3)
    (ckpt / "model.safetensors").unlink()
    safetensors_file(ckpt / "model-00001-of-00002.safetensors")
    (ckpt / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    assert checkpoint_problem(ckpt) == ("model.safetensors.index.json: shard model-00002-of-00002.safetensors "
                                        "is missing")
    safetensors_file(ckpt / "model-00002-of-00002.safetensors")
    assert complete_checkpoint(ckpt)


# -- D5: launching where nothing can be written ---------------------------------------------------


@pytest.fixture
def tiny_mount(tmp_path):
    """A mount point for a small tmpfs of the test's choosing (root only); unmounted at the end."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        got = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], capture_output=True)
        if got.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {got.stderr.decode(errors='replace').strip()}")
        mounted.append(mnt)
        return mnt

    yield mount
    for m in mounted:
        if subprocess.run(["umount", str(m)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(m)], capture_output=True)


def _fill(where: Path) -> None:
    """Fill a filesystem: its blocks, then its inodes."""
    try:
        with open(where / "filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 65536)
    except OSError:
        pass
    i = 0
    try:
        while True:
            (where / f"f{i}").touch()
            i += 1
    except OSError:
        pass


@pytest.mark.parametrize("fault, said", [("read-only", "EROFS"), ("full", "ENOSPC"), ("no inodes", "ENOSPC")])
def test_launching_where_the_runs_dir_cannot_be_written_is_one_line(tiny_mount, tmp_path, fault, said):
    if fault == "read-only":
        runs = tiny_mount("ro,size=1m")
    elif fault == "full":
        runs = tiny_mount("size=256k,nr_inodes=1024")  # so its inodes run out in a second, not a minute
        _fill(runs)
    else:
        runs = tiny_mount("size=16m,nr_inodes=64")
        _fill(runs)
    for args in (("run", "--runs-dir", str(runs), "--", "python", "-c", "pass"),
                 ("run", "demo-sft", "--runs-dir", str(runs))):
        proc = cli(*args, cwd=tmp_path, timeout=300)
        no_traceback(proc)
        assert proc.returncode != 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0] and str(runs) in lines[0], (args, proc.stderr)


# -- D7: a 300-character name -------------------------------------------------------------------


def test_a_300_character_name_makes_a_run_with_a_shorter_name(tmp_path):
    runs = tmp_path / "runs"
    proc = cli("run", "--name", "n" * 300, "--wait", "--runs-dir", str(runs), "--", "python", "-c", "pass",
               cwd=tmp_path, timeout=180)
    no_traceback(proc)
    made = [p for p in runs.iterdir() if p.is_dir()]
    assert len(made) == 1 and made[0].name.startswith("n" * 96 + "-") and len(made[0].name) < 128
    assert RunFolder(made[0]).read_status().state == "finished", proc.stderr


# -- D11: merge -o where it cannot write ----------------------------------------------------------


def _lora_run(runs: Path) -> RunFolder:
    run = make_run_folder(runs, "lora-run")
    (runs / "base").mkdir()
    (runs / "base" / "config.json").write_text("{}")
    ckpt = checkpoint_folder(run.output, 2)
    (ckpt / "model.safetensors").rename(ckpt / "adapter_model.safetensors")
    (ckpt / "config.json").unlink()
    (ckpt / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(runs / "base"),
                                                          "peft_type": "LORA"}))
    return run


def test_merge_to_a_file_or_a_read_only_folder_is_one_line_and_leaves_nothing(tmp_path, tiny_mount):
    run = _lora_run(tmp_path / "runs")
    a_file = tmp_path / "model.bin"
    a_file.write_text("mine")
    proc = cli("merge", str(run.path), "-o", str(a_file))
    no_traceback(proc)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"cockpit: -o {a_file}: a file is there — give a new folder with -o"]
    assert a_file.read_text() == "mine"

    ro = tiny_mount("ro,size=1m")
    proc = cli("merge", str(run.path), "-o", str(ro / "merged"))
    no_traceback(proc)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "EROFS" in proc.stderr
    assert list(ro.iterdir()) == []


# -- D12: <run>/hook as a symlink ----------------------------------------------------------------


def test_a_link_in_place_of_the_hook_folder_is_replaced_and_its_target_left_alone(tmp_path):
    from cockpit.hook.bundle import build

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("not the cockpit's")
    run = tmp_path / "run"
    run.mkdir()
    (run / "hook").symlink_to(theirs)
    build(run / "hook")
    assert (run / "hook").is_dir() and not (run / "hook").is_symlink()
    assert (run / "hook" / "sitecustomize.py").is_file()
    assert (theirs / "keep.txt").read_text() == "not the cockpit's" and len(list(theirs.iterdir())) == 1


def test_a_script_run_whose_hook_folder_is_a_link_trains_and_leaves_the_links_target_alone(tmp_path):
    """The real supervisor of a script run, with `<run>/hook` made a link to a folder of the user's
    before it starts: it replaces the link with its own folder, the run ends finished, and the
    folder the link pointed to is untouched."""
    import sys

    from cockpit.launch.plan import launch_prepared
    from cockpit.launch.script import prepare_script
    from helpers import wait_for

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("not the cockpit's")
    run = prepare_script([sys.executable, "-c", "print('hello')"], cwd=tmp_path, runs_dir=tmp_path / "runs",
                         name="hooklink", env={})
    hook = run.path / "hook"
    if hook.is_dir() and not hook.is_symlink():
        import shutil

        shutil.rmtree(hook)
    hook.symlink_to(theirs)
    launch_prepared(run)
    wait_for(lambda: run.read_status().state not in ("starting", "queued", "running", "stopping"), timeout=180)
    status = run.read_status()
    assert status.state == "finished", (status, run.supervisor_log.read_text()[-2000:])
    assert hook.is_dir() and not hook.is_symlink()
    assert [p.name for p in theirs.iterdir()] == ["keep.txt"]
    assert (theirs / "keep.txt").read_text() == "not the cockpit's"


# -- D13: numbers no training can use -------------------------------------------------------------


def test_non_finite_negative_and_huge_numbers_are_all_refused_before_launch(tmp_path):
    proc = cli("run", "demo-sft", "--dry-run", "--set", "learning_rate=.inf", "--set",
               "per_device_train_batch_size=1e12", "--set", "warmup_steps=-1e300", cwd=tmp_path, timeout=300)
    no_traceback(proc)
    assert proc.returncode == 2
    said = proc.stderr
    assert "learning_rate must be a finite number (got inf)" in said
    assert "per_device_train_batch_size must be a whole number from 1 to 1,048,576" in said
    assert "warmup_steps must be 0 or more (got -1e+300)" in said


def test_a_120_kb_value_is_named_not_echoed(tmp_path):
    big = "x" * 120_000
    for item in (f"learning_rate={big}", f"{big}=1"):
        proc = cli("run", "demo-sft", "--dry-run", "--set", item, cwd=tmp_path, timeout=300)
        no_traceback(proc)
        assert proc.returncode == 2
        assert len(proc.stderr) < 2_000, len(proc.stderr)
        assert "characters)" in proc.stderr


# -- D10: resume past a checkpoint whose weights were cut short -----------------------------------


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
def test_resume_skips_a_checkpoint_with_truncated_weights_to_the_newest_good_one_and_names_it(farm_run):
    run = farm_run("sft")  # the run farm's: 4 demo-sft steps, checkpoints 2 and 4 (tests/helpers)
    assert run.read_status().state == "finished"
    weights = run.output / "checkpoint-4" / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)  # the disk filled while it was written

    proc = cli("resume", str(run.path), "--set", "max_steps=6", "--set", NO_SFT_CHECK, "--wait", timeout=600)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr + run.stdout_log.read_text()[-3000:]
    said = [line for line in proc.stderr.splitlines() if "skipped" in line]
    assert len(said) == 1 and "checkpoint-4 (model.safetensors: cut short" in said[0] \
        and "resuming from checkpoint-2" in said[0], proc.stderr
    started = [r for r in journal.read_all(run.events)[0] if r.kind == journal.RUN_STARTED]
    assert str(started[-1].data.get("resumed_from")).endswith("checkpoint-2")
    assert run.read_status().state == "finished"


@pytest.mark.slow
def test_merge_onto_a_full_disk_is_one_line_and_leaves_no_half_written_folder(farm_run, tiny_mount):
    """A real LoRA run's adapter (a copy of the run farm's `sft-lora`: the demo's tiny model, trained
    once through the real supervisor), merged onto a 96 KB tmpfs: the merged weights do not fit. One
    line naming ENOSPC; the mount holds nothing afterwards."""
    run = farm_run("sft-lora")
    assert (run.output / "checkpoint-4" / "adapter_model.safetensors").is_file()

    full = tiny_mount("size=96k")
    proc = cli("merge", str(run.path), "-o", str(full / "merged"), timeout=300)
    no_traceback(proc)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("cockpit:")]
    assert len(lines) == 1 and "ENOSPC" in lines[0] and "nothing was left there" in lines[0], proc.stderr
    assert list(full.iterdir()) == []
