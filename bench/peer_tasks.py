"""What the benchmark runs inside the peers' venv (bench/.venv-peers: wandb, tensorboard).

    python peer_tasks.py write-wandb TRAINER_STATE.json OUT_DIR      an offline W&B run
    python peer_tasks.py write-tb TRAINER_STATE.json OUT_DIR         a TensorBoard event file
    python peer_tasks.py tb-ingest EVENT_DIR                         EventAccumulator.Reload()
    python peer_tasks.py live-writer RUN_DIR WANDB_DIR FIRST N RATE CONTROL_DIR

Every task prints one JSON object on its last stdout line. The data written to W&B and to
TensorBoard is the trainer_state.json the cockpit replays, entry by entry: the same steps and
values. W&B runs offline (WANDB_MODE=offline): nothing leaves this machine.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

os.environ["WANDB_MODE"] = "offline"
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_DISABLE_GIT", "true")


def _entries(state_path: str):  # type: ignore[no-untyped-def]
    """The trainer_state.json's logged steps (the summary entry at the end has no loss)."""
    state = json.loads(Path(state_path).read_text(encoding="utf-8"))
    for entry in state["log_history"]:
        if "loss" in entry:
            yield int(entry["step"]), {k: float(v) for k, v in entry.items() if k != "step"}


def _wandb_init(out_dir: Path, name: str):  # type: ignore[no-untyped-def]
    import wandb

    out_dir.mkdir(parents=True, exist_ok=True)
    # No system metrics, console capture or code saving: the run holds the logged scalars only,
    # as the trainer_state.json does.
    settings = wandb.Settings(x_disable_stats=True, x_disable_meta=True, console="off",
                              save_code=False)
    return wandb.init(project="cockpit-bench", name=name, dir=str(out_dir), mode="offline",
                      settings=settings)


def write_wandb(state_path: str, out_dir: str) -> dict:
    t0 = time.perf_counter()
    run = _wandb_init(Path(out_dir), "replay")
    n = 0
    for step, values in _entries(state_path):
        run.log(values, step=step, commit=True)
        n += 1
    run_dir = Path(run.dir).parent  # .../wandb/offline-run-*/files -> the run folder
    run.finish()
    files = list(run_dir.glob("run-*.wandb"))
    return {"run_dir": str(run_dir), "wandb_file": str(files[0]) if files else None, "steps": n,
            "write_s": time.perf_counter() - t0,
            "bytes": files[0].stat().st_size if files else None}


def write_tb(state_path: str, out_dir: str) -> dict:
    from tensorboard.summary import Writer  # TensorBoard's own writer, no TensorFlow needed

    t0 = time.perf_counter()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    writer = Writer(out_dir)
    n = 0
    for step, values in _entries(state_path):
        for key, value in values.items():
            writer.add_scalar(key, value, step, wall_time=1.7e9 + step)
        n += 1
    writer.close()
    files = list(Path(out_dir).glob("events.out.tfevents.*"))
    return {"steps": n, "write_s": time.perf_counter() - t0,
            "bytes": sum(f.stat().st_size for f in files)}


def tb_ingest(event_dir: str) -> dict:
    """TensorBoard's EventAccumulator reading the event file whole (size_guidance 0 keeps every
    point, as the cockpit's replay does; its default keeps a 10,000-point reservoir per tag)."""
    import resource

    t0 = time.perf_counter()
    from tensorboard.backend.event_processing import event_accumulator as ea

    t1 = time.perf_counter()
    acc = ea.EventAccumulator(event_dir, size_guidance={ea.TENSORS: 0, ea.SCALARS: 0})
    acc.Reload()
    t2 = time.perf_counter()
    tags = acc.Tags()
    points = {tag: len(acc.Tensors(tag)) for tag in tags.get("tensors", [])}
    return {"import_s": t1 - t0, "ingest_s": t2 - t1, "points": points,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _live_values(step: int) -> dict[str, float]:
    return {"loss": 2.0 / (1 + step / 50) + 0.05 * math.sin(step), "learning_rate": 1e-4,
            "grad_norm": 1.0 + 0.1 * math.cos(step), "mean_token_accuracy": min(1.0, step / 400),
            "entropy": 1.5, "num_tokens": 1024.0 * step}


def live_writer(run_dir: str, wandb_dir: str, first: int, n: int, rate: float, control: str) -> dict:
    """One writer, two logs: each step goes to the cockpit journal (one write of the metrics and
    progress lines, as the callback does) and to an offline W&B run (`run.log`), stamped with
    the time just before both writes. Steps 1..first-1 are written at once; then it waits for
    CONTROL/go and writes `n` more at `rate` a second (the measured ones), and 5 s more."""
    from cockpit.run import journal

    ctl = Path(control)
    run = _wandb_init(Path(wandb_dir), "live")
    jw = journal.JournalWriter(Path(run_dir) / "events.jsonl")
    for step in range(1, first):
        values = _live_values(step)
        jw.write_all([journal.metrics(step, values, epoch=step / 1000),
                      journal.progress(step, 100000, steps_per_s=rate, eta_s=1000.0)])
        run.log(values, step=step, commit=True)
    (ctl / "ready").write_text(json.dumps({"wandb_run_dir": str(Path(run.dir).parent)}))
    deadline = time.monotonic() + 120
    while not (ctl / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go from the bench")
        time.sleep(0.01)
    stamps: dict[int, float] = {}
    start = time.time() + 0.05
    # Then 5 s more at the same pace, not measured: a run goes on after any step, and W&B writes
    # its log in blocks, so the last steps of a writer that stops would wait for run.finish().
    for i in range(n + int(5 * rate)):
        due = start + i / rate
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        step = first + i
        values = _live_values(step)
        t = time.time()
        rec = journal.metrics(step, values, epoch=step / 1000)
        rec.t = t
        jw.write_all([rec, journal.progress(step, 100000, steps_per_s=rate, eta_s=1000.0)])
        run.log(values, step=step, commit=True)
        if i < n:
            stamps[step] = t
    (ctl / "done").write_text("")
    deadline = time.monotonic() + 15.0  # the run stays open while the viewers catch up
    while not (ctl / "close").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    run.finish()
    jw.close()
    return {"stamps": stamps}


def main() -> None:
    task, args = sys.argv[1], sys.argv[2:]
    if task == "write-wandb":
        out = write_wandb(*args)
    elif task == "write-tb":
        out = write_tb(*args)
    elif task == "tb-ingest":
        out = tb_ingest(*args)
    elif task == "live-writer":
        out = live_writer(args[0], args[1], int(args[2]), int(args[3]), float(args[4]), args[5])
    else:
        raise SystemExit(f"unknown task {task}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
