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
