"""The cockpit callback's own cost per training step, measured alone (issue 46).

    python bench/callback_cost.py OUT.json [STEPS]

A real `CockpitCallback` on a run folder made with the core APIs, its journal a real file;
real transformers `TrainingArguments`, `TrainerState` and `TrainerControl`. Each step is what
the trainer calls with logging_steps=1: `on_step_end`, then `on_log` with the keys TRL's SFT
trainer logs. Timed in batches of STEPS (wall and this process's CPU time); the median batch
is the figure. What the step itself costs is what the throughput figure compares: this is the
part of it that is the cockpit's."""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    out = Path(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    from transformers import TrainingArguments
    from transformers.trainer_callback import TrainerControl, TrainerState

    from cockpit.run import journal
    from cockpit.run.folder import RunFolder, Status
    from cockpit.runner.callback import CockpitCallback

    with tempfile.TemporaryDirectory(prefix="cockpit-bench-cb-") as d:
        run = RunFolder(Path(d) / "run")
        run.path.mkdir()
        run.control.mkdir(exist_ok=True)
        run.run_yaml.write_text("trainer: sft\n", encoding="utf-8")
        run.write_status(Status(state="running", name=run.name, trainer="sft", started=time.time()))
        args = TrainingArguments(output_dir=str(run.path / "output"), use_cpu=True, report_to=[])
        state = TrainerState(max_steps=steps * 6, logging_steps=1)
        state.is_world_process_zero = True
        control = TrainerControl()
        rnd = random.Random(0)
        with journal.JournalWriter(run.events) as writer:
            cb = CockpitCallback(run, writer)
            cb.on_train_begin(args, state, control)
            walls, cpus = [], []
            for _batch in range(6):
                w0, c0 = time.perf_counter(), time.process_time()
                for _ in range(steps):
                    state.global_step += 1
                    state.epoch = state.global_step / 3000
                    cb.on_step_end(args, state, control)
                    logs = {"loss": 2.0 + rnd.random(), "grad_norm": 1.0 + rnd.random(), "learning_rate": 1e-4,
                            "entropy": 1.5 + rnd.random(), "num_tokens": 1024.0 * state.global_step,
                            "mean_token_accuracy": rnd.random(), "epoch": state.epoch}
                    cb.on_log(args, state, control, logs=logs)
                walls.append((time.perf_counter() - w0) / steps)
                cpus.append((time.process_time() - c0) / steps)
        lines = run.events.read_bytes().count(b"\n") if run.events.exists() else 0
        walls, cpus = walls[1:], cpus[1:]  # the first batch warms the caches
        out.write_text(json.dumps({"wall_us": statistics.median(walls) * 1e6, "cpu_us": statistics.median(cpus) * 1e6,
                                   "wall_us_all": [round(w * 1e6, 1) for w in walls],
                                   "steps": steps * 6, "journal_lines": lines, "pid": os.getpid()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
