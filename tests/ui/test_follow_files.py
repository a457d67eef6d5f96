"""A training started somewhere else: its output dir is followed live, as files, while another
process writes checkpoints and completions into it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers.ui import app_for, app_wait

WRITER = textwrap.dedent("""\
    import json, sys, time, os
    from pathlib import Path
    out = Path(sys.argv[1])
    go = out.parent / "go"
    deadline = time.time() + 60
    while not go.exists() and time.time() < deadline:  # the test says when it has seen the first state
        time.sleep(0.05)
    for n in (2, 3):
        time.sleep(1.5)
        ck = out / f"checkpoint-{n * 10}"
        ck.mkdir()
        hist = [{"step": s, "loss": 2.0 / s, "learning_rate": 1e-4, "epoch": s / 100} for s in range(1, n * 10 + 1)]
        state = {"global_step": n * 10, "max_steps": 30, "log_history": hist, "epoch": n / 10}
        (ck / "trainer_state.json").write_text(json.dumps(state))
    """)


def _state(out, steps: int) -> None:
    ck = out / f"checkpoint-{steps}"
    ck.mkdir(parents=True)
    hist = [{"step": s, "loss": 2.0 / s, "learning_rate": 1e-4, "epoch": s / 100} for s in range(1, steps + 1)]
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": steps, "max_steps": 30, "log_history": hist}))


@pytest.mark.anyio
@pytest.mark.proc
async def test_an_output_dir_another_process_writes_is_followed_live(tmp_path):
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.run_header import RunHeader

    out = tmp_path / "elsewhere" / "output"
    _state(out, 10)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out)])
    try:
        app = app_for(tmp_path, mode="replay", paths=[str(out)])
        async with app.run_test(size=(160, 48)) as pilot:
            await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.sources, "loaded")
            screen = app.screen
            await app_wait(pilot, lambda: "following files" in str(screen.query_one(RunHeader).render()),
                           "the header says it follows files")
            assert screen.sources[0].store.last_step == 10
            (out.parent / "go").touch()
            await app_wait(pilot, lambda: screen.sources[0].store.last_step == 30, "checkpoint-30 read", limit=30)
            header = str(screen.query_one(RunHeader).render())
            assert "following files · updated" in header and "30/30" in header
    finally:
        writer.wait(timeout=30)


def test_attach_takes_an_output_dir_written_elsewhere(tmp_path):
    from cockpit.metrics.follow import written_elsewhere

    out = tmp_path / "output"
    _state(out, 10)
    assert written_elsewhere(str(out)) == out
    assert written_elsewhere(str(out / "checkpoint-10")) is None  # a checkpoint never changes
    run = tmp_path / "runs" / "r1"
    (run / "output").mkdir(parents=True)
    (run / "status.json").write_text("{}")
    _state(run / "output", 10)
    assert written_elsewhere(str(run / "output")) is None  # a cockpit run: its journal is followed


def test_opening_a_journal_decodes_only_the_newest_progress_and_completions_refs(tmp_path):
    """`load_journal` passes over the older progress and completions_ref lines (bench:
    attach_100k_grpo_s): what it shows is the same as decoding every line, and the same text
    inside another record's data is not taken for its kind."""
    from collections import deque

    from cockpit.metrics.rundata import RunData, load_journal
    from cockpit.run import journal
    from cockpit.run.tailer import Tailer, hold_back

    path = tmp_path / "events.jsonl"
    recs = [journal.run_started("grpo", max_steps=50)]
    for s in range(1, 51):
        recs += [journal.metrics(s, {"loss": 1.0 / s, "reward": s / 50}),
                 journal.progress(s, 50 if s < 40 else 60, steps_per_s=float(s), eta_s=50.0 - s)]
    nested = journal.warning("a nested kind", step=50)
    nested.data["detail"] = {"kind": "progress"}  # the marker's text, inside the data
    recs.append(nested)
    with journal.JournalWriter(path) as jw:
        jw.write_all(recs)
    lines = path.read_bytes().splitlines()
    held: dict[bytes, deque[bytes]] = {journal.PROGRESS.encode(): deque(maxlen=2)}
    kept = hold_back(lines, held)
    assert len(kept) == len(lines) - 50 and kept[-1] == lines[-1]  # the nested one is no progress line
    assert [journal.decode(x).step for x in held[journal.PROGRESS.encode()]] == [49, 50]

    data, _tailer = load_journal(path, "x")
    every = RunData("x", run_dir=tmp_path)
    every.apply(Tailer(path).poll())
    for attr in ("step", "max_steps", "steps_per_s", "eta_s", "trainer", "phase"):
        assert getattr(data, attr) == getattr(every, attr), attr
    assert data.max_steps == 60 and data.store.max_steps == 60 and data.steps_per_s == 50.0
    assert len(data.log_rows) == len(every.log_rows) == 50
