"""The benchmark runs end to end and reports every figure it was asked for.

Only the fast figures, at --quick sizes; no timing is asserted (speed lives in the bench
itself, see docs/performance.md).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FAST = ("ui_first_frame_s", "latency_p95_ms", "replay_100k_sft_s", "frame_4x1M_ms", "ui_rss_mb_4x1M",
        "runs_cli_1000_s", "journal_10k_grpo_mb", "attach_10k_grpo_s")
"""One figure of each kind the bench measures (a screen, a replay, a frame, a CLI, a journal, an
attach), the quick ones: replay_100k_grpo_s (the SFT replay's code with more keys) and
completions_step_p95_ms (9 s of the smoke's 30) are left to the bench itself."""


@pytest.mark.proc
def test_quick_bench_reports_each_requested_figure_as_a_positive_number(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--json",
         "--only", ",".join(FAST), "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert set(result) == {*FAST, "machine"}
    for key in FAST:
        value = result[key]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), key
        assert math.isfinite(value) and value > 0, (key, value)
    machine = result["machine"]
    assert machine["cores"] >= 1 and machine["python"]
    for pkg in ("textual", "trl", "transformers", "torch", "numpy",
                "orjson", "tsdownsample"):
        assert pkg in machine["versions"]


@pytest.mark.proc
def test_peers_that_cannot_be_installed_are_reported_skipped_with_the_reason(tmp_path):
    """No estimate stands in for a peer: the figure is listed under `skipped`, with why."""
    import os

    env = {**os.environ, "COCKPIT_BENCH_PEERS_VENV": "/proc/no-such-place/.venv-peers"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--json", "--peers",
         "--only", "replay_vs_leet_x,rss_vs_leet_x", "--work", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert "replay_vs_leet_x" not in result and "rss_vs_leet_x" not in result
    assert set(result["skipped"]) == {"replay_vs_leet_x", "rss_vs_leet_x"}
    assert all("could not make" in why for why in result["skipped"].values())


@pytest.mark.proc
def test_unknown_figure_is_refused_with_the_list_of_figures():
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--only", "fps"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "ui_first_frame_s" in proc.stderr


# -- the fast paths the bench made (core), checked against the plain ones ----------------------


def _history(n: int) -> list[dict]:
    """Train entries, eval entries sharing a step, a mixed entry, a resume that goes back,
    and the summary at the end."""
    out: list[dict] = []
    for step in range(1, n + 1):
        out.append({"loss": 1.0 / step, "learning_rate": 1e-4, "step": step, "epoch": step / n})
        if step % 7 == 0:
            out.append({"eval_loss": 2.0 / step, "step": step, "epoch": step / n})
        if step % 11 == 0:
            out.append({"loss": 0.5, "eval_loss": 0.6, "step": step})
        if step == n // 2:  # resumed from an earlier checkpoint
            out.append({"loss": 9.0, "step": n // 3, "epoch": 0.3})
    out.append({"train_runtime": 10.0, "train_loss": 0.4, "step": n, "epoch": 1.0})
    return out


def test_tail_records_equal_the_end_of_all_records():
    from cockpit.metrics.trainer_state import parse_trainer_state

    raw = json.dumps({"log_history": _history(300), "global_step": 300, "max_steps": 300})
    for n in (1, 5, 40, 100, 149, 150, 151, 400, 1000):
        fresh = parse_trainer_state(raw)
        tail = fresh.tail_records(n)
        full = parse_trainer_state(raw).records[-n:]
        assert [(r.kind, r.step, r.data) for r in tail] == [(r.kind, r.step, r.data) for r in full]


def test_store_views_match_copies_and_cannot_be_written():
    import numpy as np
    import pytest

    from cockpit.metrics.plotmath import downsample
    from cockpit.metrics.store import MetricStore
    from cockpit.run import journal

    store = MetricStore.from_records(
        [journal.metrics(s, {"loss": float(np.sin(s / 50))}) for s in range(1, 5001)])
    x_view, y_view = store.series("loss", copy=False)
    x_copy, y_copy = store.series("loss")
    np.testing.assert_array_equal(x_view, x_copy)
    np.testing.assert_array_equal(y_view, y_copy)
    with pytest.raises(ValueError):
        y_view[0] = 1.0
    a = downsample(x_view, y_view, 300, sorted_x=True)
    b = downsample(x_copy, y_copy, 300)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# -- the runs list at scale (bench: runs_cli_1000_s, home_1000_runs_s) ------------------------


def _journal(path, records):
    from cockpit.run import journal

    with journal.JournalWriter(path) as jw:
        jw.write_all(records)


def test_tail_facts_equal_reading_every_record_of_the_tail(tmp_path):
    """The byte-search reading gives what decoding every line of the same tail gives, for
    resumed runs, steps without a number, look-alike text inside a record's data, and tails
    cut in the middle of a line."""
    from cockpit.run import journal
    from cockpit.run.summaries import _facts_from_records, tail_facts, tail_records

    recs = [journal.run_started("sft", max_steps=50), journal.phase("training")]
    for s in range(1, 40):
        recs.append(journal.metrics(s, {"loss": 1.0 / s}))
        recs.append(journal.progress(s, 50, eta_s=float(50 - s)))
        if s == 20:
            recs.append(journal.run_ended("stopped"))
            recs.append(journal.run_started("", max_steps=None, resumed_from="ckpt-10"))
            recs.append(journal.warning('saw "kind":"phase" in a message', step=s))
            recs.append(journal.Record(journal.SYSTEM, {"kind": "phase", "phase": "not this"}))
        if s == 30:
            recs.append(journal.phase("saving"))
            recs.append(journal.run_started("grpo", max_steps=80))
    recs.append(journal.metrics(None, {"loss": 0.1}))
    recs.append(journal.eval_metrics(41, {"eval_loss": 0.2}))
    path = tmp_path / "events.jsonl"
    _journal(path, recs)
    size = path.stat().st_size
    for nbytes in (60, 200, 333, 1000, 2500, size // 2, size - 7, size, 10 * size):
        fast = tail_facts(path, nbytes)
        slow = _facts_from_records(tail_records(path, nbytes))
        assert fast == slow, nbytes


def test_runs_index_rereads_only_the_runs_that_changed(tmp_path):
    from cockpit.run import journal
    from cockpit.run.folder import RunFolder, Status
    from cockpit.run.summaries import RunsIndex

    for i in range(3):
        run = RunFolder(tmp_path / f"run{i}")
        run.path.mkdir()
        run.run_yaml.write_text("trainer: sft\n")
        run.write_status(Status(state="finished", name=run.name, trainer="sft"))
        _journal(run.events, [journal.run_started("sft", max_steps=10), journal.metrics(5, {"loss": 1.0}),
                              journal.run_ended("finished")])
    index = RunsIndex(tmp_path)
    assert {r.step for r in index.summaries()} == {5} and index.reread == 3
    assert index.summaries() and index.reread == 0
    with journal.JournalWriter(tmp_path / "run1" / "events.jsonl") as jw:
        jw.write(journal.progress(7, 10))
    rows = {r.name: r for r in index.summaries()}
    assert index.reread == 1
    assert rows["run1"].step == 7 and rows["run0"].step == 5


def _summary(i: int, step: int, state: str = "finished"):
    from cockpit.run.summaries import RunSummary

    return RunSummary(f"run{i}", f"/runs/run{i}", state, "sft", step, 100, None, 1e9, None, None)


def _table_app():
    """An app holding Home's runs table alone."""
    from textual.app import App

    from cockpit.ui.widgets.home.runs_table import RunsTable

    class Host(App):
        def compose(self):
            yield RunsTable(id="runs-table")

    return Host()


@pytest.mark.anyio
async def test_runs_table_rewrites_only_the_cells_that_changed():
    from cockpit.ui.widgets.home.runs_table import RunsTable

    row = _summary
    app = _table_app()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(RunsTable)
        table.show([row(i, 10) for i in range(50)])
        assert table.row_count == 50 and table.cells_updated == 50 * 7  # seven columns: no ETA, none is live
        await pilot.pause()
        table.move_cursor(row=7)
        table.show([row(i, 11 if i == 3 else 10) for i in range(50)])
        assert table.cells_updated == 1
        await pilot.pause()
        assert str(table.get_row_at(3)[3]) == "11/100" and table.cursor_row == 7
        table.show([row(i, 10) for i in range(49)])  # a run went: rebuilt, the cursor kept
        await pilot.pause()
        assert table.row_count == 49 and table.cursor_row == 7


@pytest.mark.anyio
async def test_runs_table_shows_the_first_screen_first_and_the_rest_after(monkeypatch):
    """A long list: the table holds its first rows at once and the rest a chunk at a time after
    (bench: home_10k_runs_s); a refresh meanwhile rewrites what is in and what is still to come."""
    from cockpit.ui.widgets.home import runs_table
    from cockpit.ui.widgets.home.runs_table import RunsTable

    monkeypatch.setattr(runs_table, "FIRST_ROWS", 10)
    monkeypatch.setattr(runs_table, "FILL_ROWS", 15)
    row = _summary
    app = _table_app()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(RunsTable)
        table.show([row(i, 10) for i in range(50)])
        assert table.listed == 50 and table.row_count == 10
        table.show([row(i, 11 if i in (3, 40) else 10) for i in range(50)])  # before the rest is in
        assert table.cells_updated == 1 and table.row_count == 10
        for _ in range(50):
            if table.row_count == 50:
                break
            await pilot.pause(0.02)
        assert table.row_count == 50
        assert str(table.get_row_at(3)[3]) == "11/100" and str(table.get_row_at(40)[3]) == "11/100"
        table.wanted = "/runs/run30"
        table.show([row(i, 10) for i in range(48)])  # rebuilt: the run wanted is put in at once
        assert table.cursor_row == 30 and table.row_count >= 31
