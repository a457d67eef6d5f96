"""What the run screen says in words before and about its data: the plots area's wait (a live
run's phase, the steps trained before the first log) and the trainer the header names."""

from __future__ import annotations

import math

from cockpit.metrics.panels import guess_trainer
from cockpit.metrics.rundata import RunData

WAITING = {"starting": "starting…", "importing": "importing TRL…", "loading_model": "loading the model…",
           "preparing_data": "preparing the data…", "training": "training started…",
           "saving": "saving…"}
"""What a live run is doing before its first logged step, by its phase."""

PLAIN_TRAINER = "Trainer (no TRL metrics)"
"""A trainer_state.json whose metrics no TRL trainer alone logs: transformers' Trainer wrote it
(or a subclass that adds no metric of its own, as SFT did before mean_token_accuracy)."""


def trainer_of(data: RunData, keys: list[str]) -> str | None:
    """The trainer of one source, as the header names it."""
    if data.trainer:
        return data.trainer
    guessed = guess_trainer(keys)
    if guessed is None and data.run_dir is None and keys:  # a trainer_state.json, not a run's journal
        return PLAIN_TRAINER
    return guessed


def steps_before_first_log(data: RunData) -> str:
    """`step 3/40 trained · the first metrics are logged at step 10 (logging_steps 10)`: what a
    live run has done before it logged anything, and when it will."""
    done = f"step {data.step}/{data.max_steps or '?'} trained"
    every = data.logging_steps
    if every is None:
        return f"{done} · no metrics logged yet (the trainer logs every logging_steps steps)"
    first = every if every >= 1 else every * (data.max_steps or 0)  # below 1: a ratio of max_steps
    first_step = max(1, math.ceil(first)) if first else None
    said = f"logging_steps {every:g}"
    if first_step is None:
        return f"{done} · no metrics logged yet ({said})"
    if data.max_steps and first_step > data.max_steps:
        return f"{done} · {said} is more than the run's {data.max_steps} steps: it logs only its summary at the end"
    return f"{done} · the first metrics are logged at step {first_step} ({said})"

