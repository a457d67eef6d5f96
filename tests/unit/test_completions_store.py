"""The completions store: every step kept, read by step on demand, crash-safe, and the older
sources (inline journal records, TRL's parquet files) in the same view."""

from __future__ import annotations

import math

import pytest

from cockpit.metrics.completions import CompletionsLibrary
from cockpit.run import journal
from cockpit.run.completions_store import INDEX, STORE, CompletionsWriter


def _rows(step: int, n: int = 3) -> list[dict]:
    return [{"prompt": f"p{step}-{i} [x", "completion": f"c{step}-{i}", "rewards": {"acc": i / n, "fmt": None},
             "advantage": i - 1.0, "judge_note": f"note {i}"} for i in range(n)]


def test_every_step_is_kept_and_read_back_by_step(tmp_path):
    w = CompletionsWriter(tmp_path)
    refs = [w.append(s, _rows(s), source="trainer_logs") for s in range(1, 201)]
    w.close()
    assert refs[0].kind == journal.COMPLETIONS_REF and refs[0].data == {"count": 3, "source": "trainer_logs"}
    assert len(journal.encode(refs[0])) < 120  # the journal carries only the pointer
    lib = CompletionsLibrary(tmp_path)
    assert lib.refresh()
    assert lib.steps() == list(range(1, 201))
    row = lib.rows(1)[2]
    assert row["prompt"] == "p1-2 [x" and row["step"] == 1 and row["advantage"] == 1.0
    assert row["rewards"]["acc"] == 2 / 3 and math.isnan(row["rewards"]["fmt"])
    assert row["extra"] == {"judge_note": "note 2"}  # a column a reward function added
    assert [r["completion"] for r in lib.rows(137)] == ["c137-0", "c137-1", "c137-2"]
    assert len(lib._cache) <= 8


def test_a_torn_last_record_is_skipped_never_fatal(tmp_path):
    w = CompletionsWriter(tmp_path)
    for s in (1, 2):
        w.append(s, _rows(s), source="generate")
    w.close()
    with open(tmp_path / STORE, "ab") as fh:  # a crash mid-write of step 3: data, and half an index entry
        fh.write(b'{"v":1,"kind":"completions","step":3,"data":{"rows":[{"prompt":"p')
    with open(tmp_path / INDEX, "ab") as fh:
        fh.write(b"\x03\x00\x00")
    lib = CompletionsLibrary(tmp_path)
    lib.refresh()
    assert lib.steps() == [1, 2]
    # An index entry whose bytes do not decode (the data was torn after it): that step is empty.
    import struct

    with open(tmp_path / INDEX, "r+b") as fh:
        fh.truncate(2 * 24)
        fh.seek(0, 2)
        fh.write(struct.pack("<qqq", 3, (tmp_path / STORE).stat().st_size - 40, 40))
    lib = CompletionsLibrary(tmp_path)
    lib.refresh()
    assert lib.steps() == [1, 2, 3] and lib.rows(3) == [] and len(lib.rows(2)) == 3


def test_a_live_reader_picks_up_new_steps_and_a_resumed_repeat_wins(tmp_path):
    w = CompletionsWriter(tmp_path)
    w.append(1, _rows(1), source="trainer_logs")
    lib = CompletionsLibrary(tmp_path)
    lib.refresh()
    assert lib.steps() == [1]
    w.append(2, _rows(2), source="trainer_logs")
    w.append(2, [{"prompt": "again", "completion": "resumed"}], source="trainer_logs")
    assert lib.refresh() and lib.steps() == [1, 2]
    assert [r["completion"] for r in lib.rows(2)] == ["resumed"]
    w.close()


def test_an_old_run_folder_with_inline_completions_still_reads(tmp_path):
    lib = CompletionsLibrary(tmp_path)
    lib.add_records([journal.completions(5, _rows(5), source="trainer_logs"), journal.metrics(5, {"loss": 1.0})])
    assert lib.steps() == [5] and lib.rows(5)[0]["prompt"] == "p5-0 [x"


def test_trl_parquet_files_are_a_source(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path / "completions"
    d.mkdir()
    for step in (10, 20):
        pq.write_table(pa.table({"step": [step, step], "prompt": ["a", "b"], "completion": ["x", "y"],
                                 "accuracy_reward": [1.0, None], "advantage": [0.5, -0.5]}),
                       d / f"completions_{step:05d}.parquet")
    (d / "completions_00030.parquet").write_bytes(b"PAR1 half written")
    lib = CompletionsLibrary(parquet_dir=d)
    lib.refresh()
    assert lib.steps() == [10, 20, 30]
    rows = lib.rows(20)
    assert rows[0]["rewards"]["accuracy_reward"] == 1.0 and math.isnan(rows[1]["rewards"]["accuracy_reward"])
    assert rows[0]["advantage"] == 0.5 and rows[0]["source"] == "parquet"
    assert lib.rows(30) == [] and lib.warnings


def test_attaching_reads_only_the_newest_steps_the_view_holds(tmp_path):
    from cockpit.metrics.rundata import load_journal

    w = CompletionsWriter(tmp_path)
    with journal.JournalWriter(tmp_path / "events.jsonl") as jw:
        for s in range(1, 1001):
            jw.write(journal.metrics(s, {"loss": 1.0 / s}))
            jw.write(w.append(s, _rows(s, 16), source="trainer_logs"))
    w.close()
    data, _ = load_journal(tmp_path / "events.jsonl", "run")
    held = data.completions.steps()
    assert held[-1] == 1000 and len(held) == data.completions.capacity // 16
    assert data.completions.rows(1000)[0]["prompt"] == "p1000-0 [x"


def test_export_writes_every_step_as_jsonl_csv_or_parquet_within_a_step_range(tmp_path):
    import csv
    import json

    import pyarrow.parquet as pq

    from cockpit.metrics.export import export

    run = tmp_path / "run"
    run.mkdir()
    w = CompletionsWriter(run)
    with journal.JournalWriter(run / "events.jsonl") as jw:
        for s in range(1, 11):
            jw.write(journal.metrics(s, {"loss": 1.0}))
            jw.write(w.append(s, _rows(s, 2), source="trainer_logs"))
    w.close()
    done = export(run, completions_out=str(tmp_path / "c.jsonl"))
    lines = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert done["completions"] == 20 and sorted({x["step"] for x in lines}) == list(range(1, 11))
    export(run, completions_out=str(tmp_path / "c.csv"), steps="3:4")
    rows = list(csv.DictReader((tmp_path / "c.csv").read_text(encoding="utf-8").splitlines()))
    assert {r["step"] for r in rows} == {"3", "4"} and {"acc", "fmt", "extra/judge_note"} <= set(rows[0])
    export(run, completions_out=str(tmp_path / "c.parquet"), steps="9:")
    table = pq.read_table(tmp_path / "c.parquet").to_pylist()
    assert [r["step"] for r in table] == [9, 9, 10, 10] and table[0]["prompt"] == "p9-0 [x"


@pytest.mark.slow
def test_a_grpo_demo_run_exports_one_entry_per_logged_step(farm_run, tmp_path):
    """The farm's `grpo` run (tests/helpers: demo-grpo, 18 steps, its completions logged every step)."""
    import json
    import subprocess

    from helpers import cockpit_cmd

    run = str(farm_run("grpo").path)
    out = tmp_path / "comp.jsonl"
    proc = subprocess.run(cockpit_cmd("export", run, "--completions", str(out)), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted({r["step"] for r in rows}) == list(range(1, 19))
    for r in rows:
        assert r["prompt"] and r["completion"] is not None and r["rewards"] and r["advantage"] is not None
    # The journal itself holds pointers only.
    records, _ = journal.read_all(f"{run}/events.jsonl")
    assert not [r for r in records if r.kind == journal.COMPLETIONS]
    assert len([r for r in records if r.kind == journal.COMPLETIONS_REF]) == 18


def test_the_store_and_a_kept_answer_are_written_in_the_folder_never_through_a_link(tmp_path):
    """A symlink put where the completions store, its index or a samples/ session file should be is
    replaced by a regular file (`files.open_own`); what it pointed at is left as it was."""
    from cockpit.metrics import samples
    from cockpit.run.folder import RunFolder

    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    run = RunFolder(tmp_path / "run")
    run.samples.mkdir(parents=True)
    for name in (STORE, INDEX):
        (run.path / name).symlink_to(outside)
    session = samples.new_session(run)
    session.symlink_to(outside)
    w = CompletionsWriter(run.path)
    w.append(1, _rows(1), source="trainer_logs")
    w.close()
    samples.append(session, {"mode": "compare", "checkpoint": "base", "completion": "hi"})
    assert outside.read_text() == "theirs\n"
    assert not any(p.is_symlink() for p in (run.path / STORE, run.path / INDEX, session))
    assert [r["completion"] for r in samples.read(run)] == ["hi"]
    lib = CompletionsLibrary(run.path)
    assert lib.refresh() and lib.steps() == [1]
