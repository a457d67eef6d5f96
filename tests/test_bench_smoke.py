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

REPO = Path(__file__).resolve().parents[1]
FAST = ("ui_first_frame_s", "latency_p95_ms", "replay_100k_sft_s", "replay_100k_grpo_s",
        "frame_4x1M_ms", "ui_rss_mb_4x1M")


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
    for pkg in ("textual", "textual-plotext", "plotext", "trl", "transformers", "torch", "numpy",
                "orjson", "tsdownsample"):
        assert pkg in machine["versions"]


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
    from cockpit.core.trainer_state import parse_trainer_state

    raw = json.dumps({"log_history": _history(300), "global_step": 300, "max_steps": 300})
    for n in (1, 5, 40, 100, 149, 150, 151, 400, 1000):
        fresh = parse_trainer_state(raw)
        tail = fresh.tail_records(n)
        full = parse_trainer_state(raw).records[-n:]
        assert [(r.kind, r.step, r.data) for r in tail] == [(r.kind, r.step, r.data) for r in full]


def test_store_views_match_copies_and_cannot_be_written():
    import numpy as np
    import pytest

    from cockpit.core import journal
    from cockpit.core.store import MetricStore, downsample

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
