"""The runs folder's kept summaries (`.cockpit-index`, `run/summaries.py`): a fresh process reads
only the runs whose files changed; the files always win over the index (bench: runs_cli_10k_s,
home_10k_runs_s)."""

from __future__ import annotations

import json
import os
import shutil

from cockpit.run import journal
from cockpit.run.folder import RunFolder, Status
from cockpit.run.summaries import INDEX_NAME, RunsIndex


def _runs(root, n=4, live=()):
    for i in range(n):
        run = RunFolder(root / f"run{i}")
        run.path.mkdir(parents=True)
        run.run_yaml.write_text("trainer: sft\n")
        state = "running" if i in live else "finished"
        run.write_status(Status(state=state, name=run.name, trainer="sft", started=1000.0 + i))
        recs = [journal.run_started("sft", max_steps=10), journal.metrics(i + 1, {"loss": 1.0 / (i + 1)})]
        if state != "running":
            recs.append(journal.run_ended(state))
        with journal.JournalWriter(run.events) as jw:
            jw.write_all(recs)
    return root


def _rows(root):
    return [r.to_dict() for r in RunsIndex(root, keep=False).summaries()]


def test_a_fresh_process_reads_only_the_live_runs_and_lists_the_same(tmp_path):
    root = _runs(tmp_path / "runs", live=(0,))
    first = RunsIndex(root)
    listed = [r.to_dict() for r in first.summaries()]
    assert first.reread == 4 and (root / INDEX_NAME).is_file()
    fresh = RunsIndex(root)
    assert [r.to_dict() for r in fresh.summaries()] == listed == _rows(root)
    assert fresh.reread == 1  # the live run: its supervisor may have died without a word
    assert set(json.loads((root / INDEX_NAME).read_text())["runs"]) == {"run1", "run2", "run3"}


def test_a_run_changed_since_the_index_is_read_again(tmp_path):
    root = _runs(tmp_path / "runs")
    RunsIndex(root).summaries()
    with journal.JournalWriter(root / "run2" / "events.jsonl") as jw:
        jw.write(journal.progress(9, 10))
    fresh = RunsIndex(root)
    rows = {r.name: r for r in fresh.summaries()}
    assert fresh.reread == 1 and rows["run2"].step == 9
    # and the index now holds what was read
    again = RunsIndex(root)
    assert {r.name: r.step for r in again.summaries()}["run2"] == 9 and again.reread == 0


def test_a_deleted_run_is_dropped_from_the_list_and_the_index(tmp_path):
    root = _runs(tmp_path / "runs")
    RunsIndex(root).summaries()
    shutil.rmtree(root / "run1")
    fresh = RunsIndex(root)
    assert [r.name for r in fresh.summaries()] == ["run3", "run2", "run0"] and fresh.reread == 0
    assert "run1" not in json.loads((root / INDEX_NAME).read_text())["runs"]


def test_a_damaged_index_is_ignored_and_rewritten(tmp_path):
    root = _runs(tmp_path / "runs")
    want = _rows(root)
    good = RunsIndex(root)
    good.summaries()
    index = json.loads((root / INDEX_NAME).read_text())
    fields = index["fields"]
    stamp, values = index["runs"]["run0"]
    wrong = [*values]
    wrong[fields.index("step")] = "many"  # a wrong type
    old_fields = dict(index, fields=[*fields[:-1], "bogus"])  # written for another RunSummary
    damaged = [
        b"\x00garbage{", b"[]", b'{"version": 99, "runs": {}}', b'{"version": 2, "runs": []}',
        json.dumps(old_fields).encode(),
        json.dumps({"version": 1, "runs": {"run0": {"stamp": [None] * 3, "row": {}}}}).encode(),  # the old format
        json.dumps({**index, "runs": {
            "run0": [stamp, wrong],
            "run1": ["x", values],
            "run2": [stamp, [*values, 1]],  # a value too many
            "run3": [[*stamp[:8], "9"], values],  # a stamp of the wrong type
            "../x": [stamp, values], "run4": 7}}).encode(),
    ]
    for data in damaged:
        (root / INDEX_NAME).write_bytes(data)
        fresh = RunsIndex(root)
        assert [r.to_dict() for r in fresh.summaries()] == want, data
        assert fresh.reread == 4, data
        assert json.loads((root / INDEX_NAME).read_text())["version"] == 2


def test_an_index_with_the_right_stamp_but_another_folder_is_not_trusted(tmp_path):
    """A run deleted and made again under the same name has another inode: read again."""
    root = _runs(tmp_path / "runs", n=2)
    RunsIndex(root).summaries()
    shutil.rmtree(root / "run0")
    _runs(tmp_path / "other", n=1)
    shutil.move(str(tmp_path / "other" / "run0"), str(root / "run0"))
    fresh = RunsIndex(root)
    fresh.summaries()
    assert fresh.reread >= 1


def test_the_index_is_never_read_or_written_through_a_link(tmp_path):
    root = _runs(tmp_path / "runs")
    want = _rows(root)
    RunsIndex(root).summaries()
    outside = tmp_path / "outside.json"
    forged = json.loads((root / INDEX_NAME).read_text())
    for _stamp, values in forged["runs"].values():
        values[forged["fields"].index("state")] = "failed"
        values[forged["fields"].index("reason")] = "forged"
    payload = json.dumps(forged)
    outside.write_text(payload)
    (root / INDEX_NAME).unlink()
    os.symlink(outside, root / INDEX_NAME)
    fresh = RunsIndex(root)
    assert [r.to_dict() for r in fresh.summaries()] == want and fresh.reread == 4
    assert outside.read_text() == payload  # the file outside is untouched
    assert not (root / INDEX_NAME).is_symlink() and (root / INDEX_NAME).is_file()


def test_an_unwritable_index_lists_the_same(tmp_path):
    """A shared runs folder where the index cannot be written (here a folder in its place)."""
    root = _runs(tmp_path / "runs")
    (root / INDEX_NAME).mkdir()
    index = RunsIndex(root)
    assert [r.to_dict() for r in index.summaries()] == _rows(root)
    assert [r.to_dict() for r in index.summaries()] == _rows(root) and index.reread == 0


def test_the_kept_rows_come_before_any_file_is_checked_and_summaries_then_corrects_them(tmp_path):
    """Home's first frame shows `kept` (the index's rows, the live runs read now); the `summaries`
    after it checks every run's files: what changed since the index was written shows then."""
    root = _runs(tmp_path / "runs", n=5, live=(0,))
    RunsIndex(root).summaries()
    assert json.loads((root / INDEX_NAME).read_text())["live"] == ["run0"]
    before = {r["name"]: r for r in _rows(root)}
    for name, step in (("run0", 7), ("run2", 9)):  # the live run and a settled one move on
        with journal.JournalWriter(root / name / "events.jsonl") as jw:
            jw.write(journal.progress(step, 10))
    shutil.rmtree(root / "run1")
    _runs(tmp_path / "more", n=6)
    shutil.move(str(tmp_path / "more" / "run5"), str(root / "run5"))  # a run made since

    fresh = RunsIndex(root)
    kept = {r.name: r for r in fresh.kept() or []}
    assert set(kept) == {"run0", "run1", "run2", "run3", "run4"}  # as the index has them
    assert kept["run0"].step == 7 and kept["run0"].live  # read now
    assert kept["run2"].to_dict() == before["run2"]  # as kept: not checked yet
    assert fresh.kept() is None  # once: then the checked list
    checked = [r.to_dict() for r in fresh.summaries()]
    assert checked == _rows(root)
    assert [r["name"] for r in checked] == ["run0", "run5", "run4", "run3", "run2"]
    assert {r["name"]: r["step"] for r in checked}["run2"] == 9
    assert fresh.reread == 3  # the live run, the changed one and the new one


def test_nothing_is_kept_without_an_index(tmp_path):
    root = _runs(tmp_path / "runs")
    assert RunsIndex(root).kept() is None and RunsIndex(root, keep=False).kept() is None
    index = RunsIndex(root)
    index.summaries()
    assert index.kept() is None  # this one has read the folder: its list is `summaries`
    (root / INDEX_NAME).write_text(json.dumps({"version": 2, "fields": json.loads((root / INDEX_NAME).read_text())["fields"],
                                                   "runs": {}, "live": ["../x", 3, ".h", "nope"]}))
    assert RunsIndex(root).kept() is None
