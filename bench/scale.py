"""Figures at scale: a runs folder of 1,000 runs, a 72 h run followed live, a 10,000-step GRPO
run with its completions store. Each generator writes with the core APIs (JournalWriter,
CompletionsWriter, RunFolder) what the runner and supervisor would leave; each `measure_*`
is one figure of bench/run.py (how: docs/performance.md)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

SFT_KEYS = ("loss", "learning_rate", "grad_norm", "mean_token_accuracy", "entropy", "num_tokens")


def _sft_values(step: int, rnd: random.Random) -> dict[str, float]:
    return {"loss": 2.0 / (1 + step / 500) + 0.05 * rnd.random(), "learning_rate": 1e-4,
            "grad_norm": 1.0 + 0.2 * rnd.random(), "mean_token_accuracy": min(1.0, step / 4000),
            "entropy": 1.5 + 0.1 * rnd.random(), "num_tokens": 1024.0 * step}


# -- a runs folder of 1,000 runs -------------------------------------------------------------

_ENDED = ("finished", "finished", "finished", "failed", "stopped", "finished", "killed")


def make_runs_folder(runs_dir: Path, n: int, *, live: int = 10, seed: int = 0) -> Path:
    """`n` run folders as `cockpit run` leaves them: run.yaml, status.json, a journal of 20 to
    3,000 SFT steps (metrics + progress lines, a checkpoint every 500), a few failed with a
    reason; `live` of them still running (their supervisor pid is set by `mark_live`).
    Ages spread over 60 days (run.yaml's mtime is a run's creation time)."""
    from cockpit.run import journal
    from cockpit.run.folder import RunFolder, Status

    done = runs_dir / ".complete"
    if done.exists() and int(done.read_text()) == n:
        return runs_dir
    rnd = random.Random(seed)
    now = time.time()
    for i in range(n):
        name = f"sft-demo-{i:04d}"
        if (runs_dir / name / "status.json").exists():
            continue
        (runs_dir / name).mkdir(parents=True, exist_ok=True)
        run = RunFolder(runs_dir / name)
        run.run_yaml.write_text(f"trainer: sft\nname: {name}\ntrl:\n  max_steps: 3000\n", encoding="utf-8")
        is_live = i < live
        state = "running" if is_live else _ENDED[i % len(_ENDED)]
        steps = rnd.randint(20, 3000)
        created = now - (1 + i) * 86400 * 60 / n
        head = [journal.run_started("sft", max_steps=3000), journal.phase("training")]
        body = _sft_journal_body(steps, created, run.path, rnd)
        end: list = []
        reason = None
        if state != "running":
            reason = {"failed": "CUDA out of memory", "stopped": "stopped by request",
                      "killed": "killed by signal 9"}.get(state)
            end.append(journal.run_ended(state, reason=reason, step=steps))
        # The same bytes JournalWriter would write (`_sft_journal_body` checks itself against the
        # codec), in one write a run: 10,000 runs hold ~15M steps.
        with open(run.events, "wb") as fh:
            fh.write(b"".join(journal.encode(r) for r in head) + body
                     + b"".join(journal.encode(r) for r in end))
        run.write_status(Status(state=state, name=run.name, trainer="sft", started=created,
                                reason=reason, supervisor_pid=None, host=os.uname().nodename))
        os.utime(run.run_yaml, (created, created))
    done.write_text(str(n))
    return runs_dir


def _sft_journal_body(steps: int, created: float, path: Path, rnd: random.Random) -> bytes:
    """The metrics + progress lines of `steps` SFT steps half a second apart from `created`, a
    checkpoint every 500: the records `journal.metrics`/`progress`/`checkpoint` make, encoded
    as `journal.encode` does (orjson, finite numbers), built as plain dicts to write 10,000 runs
    in minutes. The first steps are checked against the codec itself."""
    import orjson

    from cockpit.run import journal

    out = []
    dumps, v = orjson.dumps, journal.VERSION
    t = created
    for s in range(1, steps + 1):
        t += 0.5
        values = _sft_values(s, rnd)
        m = {"v": v, "t": t, "kind": journal.METRICS, "step": s, "data": {"epoch": s / 3000, **values}}
        p = {"v": v, "t": t, "kind": journal.PROGRESS, "step": s,
             "data": {"max_steps": 3000, "epoch": None, "steps_per_s": 2.0, "eta_s": (3000 - s) / 2.0}}
        out.append(dumps(m))
        out.append(dumps(p))
        if s % 500 == 0:
            ck = journal.checkpoint(s, f"{path}/output/checkpoint-{s}")
            out.append(journal.encode(ck)[:-1])
        if s <= 2:
            rm, rp = journal.metrics(s, values, epoch=s / 3000), journal.progress(
                s, 3000, steps_per_s=2.0, eta_s=(3000 - s) / 2.0)
            rm.t = rp.t = t
            assert out[-2] + b"\n" == journal.encode(rm) and out[-1] + b"\n" == journal.encode(rp), "codec drift"
    return b"\n".join(out) + b"\n" if out else b""


def mark_live(runs_dir: Path, pid: int, live: int = 10) -> None:
    """The first `live` runs are running under `pid` (a process alive while measured), recorded
    as the supervisor records itself: its pid and its start time. (With the pid alone a reader
    cannot tell the supervisor from a newcomer given the same number, and looks for the run's
    trainer among every process instead: the "supervisor gone" case, not a live run's.)"""
    from cockpit.run import owner
    from cockpit.run.folder import RunFolder

    for i in range(live):
        run = RunFolder(runs_dir / f"sft-demo-{i:04d}")
        st = run.read_status()
        st.supervisor_pid, st.supervisor_started = pid, owner.start_time(pid)
        run.write_status(st)


def _live_run_folder(path: Path, trainer: str, max_steps: int):  # type: ignore[no-untyped-def]
    """A running run supervised by this process (alive while measured), recorded as `mark_live`
    records it: with the pid alone, every status check of the view read the run as one whose
    supervisor is gone (and its journal's tail again, to say how it ended)."""
    from cockpit.run import owner
    from cockpit.run.folder import RunFolder, Status

    path.mkdir(parents=True, exist_ok=True)
    run = RunFolder(path)
    run.run_yaml.write_text(f"trainer: {trainer}\ntrl:\n  max_steps: {max_steps}\n", encoding="utf-8")
    pid = os.getpid()
    run.write_status(Status(state="running", name=run.name, trainer=trainer, started=time.time(),
                            supervisor_pid=pid, supervisor_started=owner.start_time(pid),
                            host=os.uname().nodename))
    return run


# -- a 10,000-step GRPO run with its completions store ----------------------------------------

GRPO_KEYS = (
    "loss", "grad_norm", "learning_rate", "reward", "reward_std", "kl", "entropy",
    "frac_reward_zero_std", "completions/mean_length", "completions/min_length",
    "completions/max_length", "completions/clipped_ratio", "completions/mean_terminated_length",
    "rewards/accuracy_reward/mean", "rewards/accuracy_reward/std", "rewards/format_reward/mean",
    "rewards/format_reward/std", "clip_ratio/region_mean", "num_tokens", "step_time",
)
assert len(GRPO_KEYS) == 20


def _text(rnd: random.Random, n: int) -> str:
    words = ("the", "answer", "is", "so", "we", "add", "both", "sides", "therefore", "x", "=", "42",
             "<think>", "</think>", "step", "first", "then", "check", "which", "gives", "value")
    out, size = [], 0
    while size < n:
        w = rnd.choice(words)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def make_grpo_run(path: Path, steps: int, *, per_step: int = 16, row_bytes: int = 2048,
                  seed: int = 0):  # type: ignore[no-untyped-def]
    """A live GRPO run as the callback leaves it after `steps` steps: each step one write of
    the metrics (20 GRPO keys), progress and completions_ref records; the step's `per_step`
    completions (~`row_bytes` each: prompt, completion, two rewards, advantage) appended to the
    completions store with CompletionsWriter."""
    from cockpit.run import journal
    from cockpit.run.completions_store import CompletionsWriter

    done = path / ".complete"
    if done.exists() and done.read_text() == str(steps):
        return _live_run_folder(path, "grpo", steps)
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    run = _live_run_folder(path, "grpo", steps)
    rnd = random.Random(seed)
    prompts = [_text(rnd, row_bytes // 4) for _ in range(64)]
    completions = [_text(rnd, row_bytes - row_bytes // 4 - 120) for _ in range(256)]
    writer = CompletionsWriter(run.path)
    t = time.time() - steps * 8.0
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.run_started("grpo", max_steps=steps), journal.phase("training")])
        for s in range(1, steps + 1):
            t += 8.0
            frac = s / steps
            # As TRL computes them: means over the step's 16 completions of integer lengths and
            # 0/1 rewards are multiples of 1/16; the rest are full-precision floats.
            lengths = [rnd.randint(40, 256) for _ in range(per_step)]
            correct = sum(rnd.random() < 0.2 + 0.7 * frac for _ in range(per_step))
            values = {k: rnd.random() for k in GRPO_KEYS}
            values.update({
                "loss": 0.01 * (rnd.random() - 0.5), "reward": correct / per_step + rnd.random(),
                "learning_rate": 1e-6 * (1 - frac), "num_tokens": float(2048 * s),
                "completions/mean_length": sum(lengths) / per_step,
                "completions/min_length": float(min(lengths)), "completions/max_length": float(max(lengths)),
                "completions/clipped_ratio": sum(n == 256 for n in lengths) / per_step,
                "completions/mean_terminated_length": sum(n for n in lengths if n < 256)
                / max(1, sum(n < 256 for n in lengths)),
                "frac_reward_zero_std": rnd.randrange(5) / 4, "rewards/accuracy_reward/mean": correct / per_step,
                "clip_ratio/region_mean": 0.0})
            rows = [{"prompt": prompts[(s + i) % 64], "completion": f"[{s}.{i}] " + completions[rnd.randrange(256)],
                     "rewards": {"accuracy_reward": float(rnd.random() > 0.5), "format_reward": rnd.random()},
                     "advantage": rnd.random() - 0.5} for i in range(per_step)]
            m = journal.metrics(s, values, epoch=2 * frac)
            p = journal.progress(s, steps, epoch=2 * frac, steps_per_s=0.125, eta_s=(steps - s) * 8.0)
            ref = writer.append(s, rows, source="trainer_logs")
            m.t = p.t = ref.t = t
            jw.write_all([m, p, ref])
    writer.close()
    done.write_text(str(steps))
    return run


# -- a 72 h run at 1 step/s, generated, then followed ----------------------------------------


def make_follow_feed(path: Path, steps: int, *, seed: int = 0) -> Path:
    """The journal lines of `steps` SFT steps one second apart (metrics + progress a step), as
    the callback writes them; the bench appends them to a live run's journal at a faster pace."""
    from cockpit.run import journal

    if path.exists() and (path.parent / f"{path.name}.steps").exists() \
            and (path.parent / f"{path.name}.steps").read_text() == str(steps):
        return path
    rnd = random.Random(seed)
    t = time.time() - steps
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        batch = []
        for s in range(1, steps + 1):
            t += 1.0
            m = journal.metrics(s, _sft_values(s, rnd), epoch=s / steps)
            p = journal.progress(s, steps, steps_per_s=1.0, eta_s=float(steps - s))
            m.t = p.t = t
            batch += (journal.encode(m), journal.encode(p))
            if len(batch) >= 20_000:
                fh.write(b"".join(batch))
                batch = []
        fh.write(b"".join(batch))
    (path.parent / f"{path.name}.steps").write_text(str(steps))
    return path


FOLLOW_FROM = 3600
"""The followed run's journal holds its first hour when the view opens; the feed the rest.
From the first hour on every panel is drawn across its whole width (2 points a column need
~160 steps), so what grows after it is what the run's length costs, not the plots filling up."""


def follow_run(path: Path, feed: Path, steps: int):  # type: ignore[no-untyped-def]
    """A live run folder at its first hour: run_started, the training phase and the feed's
    first FOLLOW_FROM steps. Returns the run and the feed of the remaining steps."""
    import shutil

    from cockpit.run import journal

    shutil.rmtree(path, ignore_errors=True)
    run = _live_run_folder(path, "sft", steps)
    lines = feed.read_bytes().split(b"\n")
    head, rest = lines[:2 * FOLLOW_FROM], lines[2 * FOLLOW_FROM:]
    with journal.JournalWriter(run.events) as jw:
        jw.write_all([journal.run_started("sft", max_steps=steps), journal.phase("training")])
    with open(run.events, "ab") as fh:
        fh.write(b"\n".join(head) + b"\n")
    tail = path.parent / "feed-rest.jsonl"
    tail.write_bytes(b"\n".join(rest))
    return run, tail
