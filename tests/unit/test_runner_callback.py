"""What the runner's `CockpitCallback` writes to the journal between the trainer's logs."""

from __future__ import annotations

import pytest

from cockpit.run import journal

pytestmark = pytest.mark.anyio


def test_the_callback_writes_progress_between_logs_but_not_at_every_step(tmp_path):
    from transformers import TrainerControl, TrainerState

    from cockpit.run.folder import create_run_folder
    from cockpit.runner.callback import CockpitCallback

    run = create_run_folder(tmp_path / "runs", "eta")
    state = TrainerState(max_steps=40, global_step=20, is_world_process_zero=True)
    with journal.JournalWriter(run.events) as jw:
        cb = CockpitCallback(run, jw)
        cb.on_train_begin(None, TrainerState(max_steps=40, is_world_process_zero=True), TrainerControl())
        cb._last_progress = 0.0  # as if the last progress line were long ago
        cb.on_step_end(None, state, TrainerControl())   # a step between two logs: one line
        state.global_step = 21
        cb.on_step_end(None, state, TrainerControl())   # right after it: none
    records, _ = journal.read_all(run.events)
    progress = [r.step for r in records if r.kind == journal.PROGRESS]
    assert progress == [0, 20]


def test_steps_per_second_and_the_eta_leave_the_slow_first_step_and_old_stretches_behind(tmp_path, monkeypatch):
    """On an H100 the first step (CUDA set-up, the first batch) took as long as the next hundred: the
    header said 2.7 steps/s and 3m35s left at step 30 of a run going at 22. The rate counts from the
    end of the first step, over the last minute."""
    from transformers import TrainerControl, TrainerState

    from cockpit.run.folder import create_run_folder
    from cockpit.runner import callback as cbmod

    clock = [1000.0]
    monkeypatch.setattr(cbmod.time, "time", lambda: clock[0])
    run = create_run_folder(tmp_path / "runs", "rate")
    state = TrainerState(max_steps=1000, global_step=0, is_world_process_zero=True)
    with journal.JournalWriter(run.events) as jw:
        cb = cbmod.CockpitCallback(run, jw)
        cb.on_train_begin(None, state, TrainerControl())
        clock[0] += 10.0  # the first step: 10 s
        for step in range(1, 31):
            if step > 1:
                clock[0] += 0.1  # then 10 steps/s
            state.global_step = step
            cb.on_log(None, state, TrainerControl(), logs={"loss": 1.0})
        early = [r for r in journal.read_all(run.events)[0] if r.kind == journal.PROGRESS][-1]
        assert early.data["steps_per_s"] == pytest.approx(10.0, rel=0.01)
        assert early.data["eta_s"] == pytest.approx(97.0, rel=0.01)
        for step in range(31, 1001):  # later the run slows to 2 steps/s: after a minute the rate is 2
            clock[0] += 0.5
            state.global_step = step
            cb.on_log(None, state, TrainerControl(), logs={"loss": 1.0})
            if step == 300:
                break
    late = [r for r in journal.read_all(run.events)[0] if r.kind == journal.PROGRESS][-1]
    assert late.data["steps_per_s"] == pytest.approx(2.0, rel=0.02)
