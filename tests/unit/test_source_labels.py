"""Overlay labels: each source by its run's name, with as much path as it takes to tell it apart."""

from __future__ import annotations

import json
from pathlib import Path

from cockpit.metrics.sources import distinct_labels, open_source


def write_state(folder: Path, step: int = 100) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = {"global_step": step, "max_steps": 200,
             "log_history": [{"step": s, "loss": 1.0 / s} for s in range(1, step + 1, 10)]}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    return folder


def make_run_folder(folder: Path, marker: str = "run.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / marker).write_text("trainer: sft\n" if marker == "run.yaml" else "{}")
    return folder


def labels(*paths: Path) -> list[str]:
    return distinct_labels([open_source(p).name for p in paths])


def test_two_checkpoints_of_the_same_name_outside_runs_differ_by_the_folder_above(tmp_path):
    a = write_state(tmp_path / "a" / "output" / "checkpoint-100")
    b = write_state(tmp_path / "b" / "output" / "checkpoint-100")
    assert labels(a, b) == ["a/output/checkpoint-100", "b/output/checkpoint-100"]
    assert labels(a) == ["output/checkpoint-100"]


def test_a_checkpoint_inside_a_run_folder_is_named_after_the_run(tmp_path):
    run = make_run_folder(tmp_path / "runs" / "grpo-math")
    ckpt = write_state(run / "output" / "checkpoint-100")
    assert open_source(ckpt).label == "grpo-math"
    assert labels(ckpt) == ["grpo-math"]
    # status.json alone marks a run folder too (a run whose run.yaml was removed)
    other = make_run_folder(tmp_path / "elsewhere" / "dpo-a", marker="status.json")
    assert open_source(write_state(other / "output")).label == "dpo-a"


def test_two_checkpoints_of_one_run_say_which_checkpoint(tmp_path):
    run = make_run_folder(tmp_path / "runs" / "x")
    c1 = write_state(run / "output" / "checkpoint-100", 100)
    c2 = write_state(run / "output" / "checkpoint-200", 200)
    assert labels(c1, c2) == ["x/checkpoint-100", "x/checkpoint-200"]


def test_two_runs_of_one_name_say_which_runs_folder(tmp_path):
    a = write_state(make_run_folder(tmp_path / "runs" / "x") / "output" / "checkpoint-100")
    b = write_state(make_run_folder(tmp_path / "old-runs" / "x") / "output")
    c = write_state(tmp_path / "runs" / "x" / "output" / "checkpoint-200", 200)
    assert labels(a, b) == ["runs/x", "old-runs/x"]
    assert labels(a, b, c) == ["runs/x/checkpoint-100", "old-runs/x", "runs/x/checkpoint-200"]


def test_the_same_path_twice_is_numbered(tmp_path):
    a = write_state(tmp_path / "a" / "output" / "checkpoint-100")
    assert labels(a, a) == ["output/checkpoint-100", "output/checkpoint-100 (2)"]


def test_differently_named_sources_keep_their_short_labels(tmp_path):
    a = write_state(tmp_path / "a" / "output" / "checkpoint-100")
    run = write_state(make_run_folder(tmp_path / "runs" / "x") / "output" / "checkpoint-5", 5)
    named = tmp_path / "some_state.json"
    named.write_text((a / "trainer_state.json").read_text())
    assert labels(a, run, named) == ["output/checkpoint-100", "x", "some_state"]
