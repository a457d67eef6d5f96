"""Replay sources (file, checkpoint, output dir, run folder, journal) and the journal tailer."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.errors import CockpitError
from cockpit.metrics.sources import open_source
from cockpit.run import journal
from cockpit.run.tailer import LineTailer, Tailer
from helpers import FIXTURES

SFT = FIXTURES / "trl_sft_token_accuracy.json"


def write_state(path: Path, global_step: int, steps=None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    steps = steps or range(1, global_step + 1)
    state = {"global_step": global_step, "max_steps": 100,
             "log_history": [{"step": s, "loss": 1.0 / s, "epoch": s / 100} for s in steps]}
    (path / "trainer_state.json").write_text(json.dumps(state))
    return path / "trainer_state.json"


def write_journal(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with journal.JournalWriter(path) as w:
        w.write_all(records)
    return path


# -- resolving what the user points at -----------------------------------------------------------


def test_a_trainer_state_file_is_a_source():
    src = open_source(SFT)
    assert src.kind == "trainer_state" and src.path == SFT
    assert len(src.records) == 30
    store = src.load_store()
    assert store.count("loss") == 30 and store.max_steps == 30
    assert src.parsed.is_finished


def test_a_checkpoint_folder_reads_its_trainer_state(tmp_path):
    write_state(tmp_path / "out" / "checkpoint-7", 7)
    src = open_source(tmp_path / "out" / "checkpoint-7")
    assert src.kind == "checkpoint" and src.label == "out/checkpoint-7"
    assert src.load_store().last_step == 7


def test_an_output_dir_prefers_its_root_trainer_state(tmp_path):
    out = tmp_path / "out"
    write_state(out / "checkpoint-50", 50)
    write_state(out, 60)
    src = open_source(out)
    assert src.path == out / "trainer_state.json" and src.parsed.global_step == 60


def test_an_output_dir_uses_the_checkpoint_with_the_highest_step_number(tmp_path):
    out = tmp_path / "out"
    for n in (2, 9, 10):
        write_state(out / f"checkpoint-{n}", n)
    (out / "checkpoint-final").mkdir()  # not a checkpoint-N: ignored
    src = open_source(out)
    assert src.path == out / "checkpoint-10" / "trainer_state.json"
    assert src.kind == "output_dir" and src.load_store().last_step == 10


def test_a_half_written_newest_checkpoint_falls_back_to_the_previous_one(tmp_path):
    out = tmp_path / "out"
    write_state(out / "checkpoint-9", 9)
    newest = write_state(out / "checkpoint-10", 10)
    newest.write_bytes(newest.read_bytes()[:40])  # a crash mid-save
    src = open_source(out)
    assert src.path.parent.name == "checkpoint-9"
    assert any("checkpoint-10" in w and "half-written" in w for w in src.warnings)


def test_only_half_written_checkpoints_is_the_incomplete_error(tmp_path):
    out = tmp_path / "out"
    bad = write_state(out / "checkpoint-3", 3)
    bad.write_bytes(b"")
    with pytest.raises(CockpitError, match=r"checkpoint-3/trainer_state\.json.*empty.*previous checkpoint"):
        open_source(out)


def test_a_run_folder_reads_its_journal(tmp_path):
    run = tmp_path / "sft-20250101-000000"
    write_journal(run / "events.jsonl", [
        journal.run_started("sft", max_steps=20),
        journal.metrics(1, {"loss": 2.0}),
        journal.eval_metrics(1, {"eval_loss": 2.5}),
        journal.completions(1, [{"prompt": "p", "completion": "c", "rewards": {"r": 1.0},
                                 "advantage": 0.1}], source="trainer_logs"),
        journal.metrics(2, {"loss": 1.5}),
    ])
    write_state(run / "output" / "checkpoint-1", 1)  # the journal wins
    src = open_source(run)
    assert src.kind == "run_folder" and src.is_journal and src.label == run.name
    store = src.load_store()
    assert store.series("loss")[0].tolist() == [1, 2] and store.count("eval_loss") == 1
    assert store.max_steps == 20 and src.max_steps == 20
    assert len(src.load_completions()) == 1
    assert len(src.load_log_rows()) == 3


def test_journal_lines_from_a_newer_cockpit_are_counted_and_the_rest_loads(tmp_path):
    run = tmp_path / "run"
    events = write_journal(run / "events.jsonl", [journal.metrics(1, {"loss": 2.0})])
    with open(events, "ab") as fh:
        fh.write(b'{"v":2,"t":0,"kind":"metrics","step":2,"data":{"loss":1.0}}\n')
        fh.write(b"garbage\n")
        fh.write(journal.encode(journal.metrics(3, {"loss": 0.5})))
    src = open_source(run)
    assert src.newer_version == 1 and src.skipped == 2
    assert any("newer cockpit" in w for w in src.warnings)
    assert src.load_store().series("loss")[0].tolist() == [1, 3]


def test_a_run_folder_without_metrics_falls_back_to_its_output(tmp_path):
    run = tmp_path / "run"
    write_journal(run / "events.jsonl", [journal.phase("loading_model")])
    write_state(run / "output" / "checkpoint-4", 4)
    src = open_source(run)
    assert src.kind == "run_folder" and not src.is_journal
    assert src.load_store().last_step == 4
    assert "has no metrics" in src.warnings[0]


def test_a_run_folder_without_a_journal_uses_its_output(tmp_path):
    run = tmp_path / "run"
    (run).mkdir()
    (run / "run.yaml").write_text("trainer: sft\n")
    write_state(run / "output", 5)
    assert open_source(run).load_store().last_step == 5


def test_a_journal_file_directly(tmp_path):
    events = write_journal(tmp_path / "r" / "events.jsonl", [journal.metrics(1, {"loss": 1.0})])
    src = open_source(events)
    assert src.kind == "journal" and src.label == "r"


def test_completions_come_from_the_grpo_parquet_files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    write_state(out / "checkpoint-4", 4)
    (out / "completions").mkdir()
    for step in (2, 4, 6):  # step 6 was written after checkpoint-4... replay it from out/
        table = pa.table({"step": [step] * 2, "prompt": ["p", "q"], "completion": ["c", "d"],
                          "accuracy_reward": [1.0, None], "advantage": [0.5, -0.5]})
        pq.write_table(table, out / "completions" / f"completions_{step:05d}.parquet")
    (out / "completions" / "completions_00008.parquet").write_bytes(b"PAR1 cut")
    buf = open_source(out).load_completions()
    assert buf.steps() == [2, 4, 6] and len(buf) == 6
    row = buf.rows()[0]
    assert row["prompt"] == "p" and row["rewards"]["accuracy_reward"] == 1.0
    assert row["advantage"] == 0.5 and row["source"] == "parquet"
    ckpt = open_source(out / "checkpoint-4").load_completions()
    assert ckpt.steps() == [2, 4]  # nothing logged after the checkpoint


@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "nope", "no such file or folder"),
    (lambda d: d, "no events.jsonl, trainer_state.json or checkpoint-N"),
    (lambda d: write_journal(d / "events.jsonl", []), "journal is empty"),
])
def test_nothing_usable_is_one_line_naming_the_path(tmp_path, make, needle):
    target = make(tmp_path)
    with pytest.raises(CockpitError) as err:
        open_source(target)
    msg = str(err.value)
    assert needle in msg and str(target) in msg and "\n" not in msg


# -- the tailer --------------------------------------------------------------------------------

_line = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b""))


def _complete_lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n")[:-1] if line.strip()]


def _write(path: str, data: bytes, mode: str = "ab") -> None:
    with open(path, mode) as fh:
        fh.write(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, max_size=15), tail=_line, cuts=st.lists(st.integers(0, 200), max_size=10),
       polls=st.lists(st.booleans(), min_size=12, max_size=12), max_read=st.integers(1, 64))
def test_tailer_returns_exactly_the_complete_lines_however_writes_are_split(
        lines, tail, cuts, polls, max_read):
    data = b"".join(line + b"\n" for line in lines) + tail  # tail: a line still being written
    bounds = sorted({0, len(data), *[c % (len(data) + 1) for c in cuts]})
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.jsonl")
        tailer = LineTailer(path, max_read=max_read)
        got = tailer.poll()  # before the file exists
        for i, (a, b) in enumerate(itertools.pairwise(bounds)):
            _write(path, data[a:b])
            if polls[i % len(polls)]:
                got += tailer.poll()
        for _ in range(len(data) + 1):  # small max_read: a poll reads at most that much
            got += tailer.poll()
        assert got == _complete_lines(data)
        assert tailer.pending == data.rsplit(b"\n", 1)[-1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(_line, min_size=1, max_size=8), after=st.lists(_line, max_size=8),
       half=_line, shrink_first=st.booleans())
def test_tailer_starts_over_when_the_file_is_truncated_or_rewritten(before, after, half, shrink_first):
    first = b"".join(b"A" + line + b"\n" for line in before) + half
    second = b"".join(b"B" + line + b"\n" for line in after)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "events.jsonl")
        _write(path, first)
        tailer = LineTailer(path)
        got = tailer.poll()
        assert got == _complete_lines(first)
        if shrink_first:  # truncated to nothing, seen, then written again
            _write(path, b"", "wb")
            assert tailer.poll() == []
            _write(path, second)
        else:  # truncated and rewritten between two polls, to any length
            _write(path, second, "wb")
        assert tailer.poll() == _complete_lines(second)
        assert tailer.restarts == 1  # first's last bytes hold "\nA", second's never do


def test_tailer_follows_a_replaced_file(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"one\ntwo\n")
    tailer = LineTailer(path)
    assert tailer.poll() == [b"one", b"two"]
    tmp = tmp_path / "new"
    tmp.write_bytes(b"three\nfour\nfive\n")
    os.replace(tmp, path)
    assert tailer.poll() == [b"three", b"four", b"five"]
    path.unlink()
    assert tailer.poll() == []


def test_journal_tailer_decodes_and_counts(tmp_path):
    path = tmp_path / "events.jsonl"
    write_journal(path, [journal.metrics(1, {"loss": float("nan")})])
    tailer = Tailer(path)
    assert [r.step for r in tailer.poll()] == [1]
    with open(path, "ab") as fh:
        fh.write(b"[" * 5000 + b"]" * 5000 + b"\n")  # deep nesting: skipped, not a crash
        fh.write(b'{"v":3,"kind":"metrics"}\n')
    assert tailer.poll() == []
    assert tailer.skipped == 2 and tailer.newer_version == 1


def test_read_all_reads_past_one_poll(tmp_path, monkeypatch):
    path = write_journal(tmp_path / "events.jsonl", [journal.metrics(i, {"loss": 1.0}) for i in range(50)])
    monkeypatch.setattr(LineTailer, "max_read", 100)  # far less than the file
    records, skipped = journal.read_all(path)
    assert [r.step for r in records] == list(range(50)) and skipped == 0


def test_copied_fixtures_replay_from_a_checkpoint_tree(tmp_path):
    out = tmp_path / "out"
    for name, n in (("trl_grpo_legacy_reward_keys.json", 250), ("trl_sft_token_accuracy.json", 30)):
        (out / f"checkpoint-{n}").mkdir(parents=True)
        shutil.copy(FIXTURES / name, out / f"checkpoint-{n}" / "trainer_state.json")
    src = open_source(out)
    assert src.path.parent.name == "checkpoint-250"
    assert "rewards/correctness_reward_func" in src.load_store().keys()
