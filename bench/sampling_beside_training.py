"""What sampling a live run's checkpoints costs its training: steps/s from the journal's progress
records while the sampler answers prompts beside it, against the same run left alone.

    python bench/sampling_beside_training.py [--window 45] [--rounds 2] [--work DIR]

It trains the demo SFT preset (tiny, CPU), waits for two checkpoints, then alternates windows:
quiet, then the sampler (the Checkpoints tab's process, `launch.sampler.Sampler`, with the same
request the tab sends: two checkpoints side by side on the run's own prompts) answering again
and again. Prints one JSON object; the run is force-stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch import sampler as smp
from cockpit.launch.plan import launch, stop
from cockpit.metrics.checkpoints import list_run_checkpoints
from cockpit.run import journal


def rate(run, since: float, until: float) -> float | None:
    records, _ = journal.read_all(run.events)
    pts = [(r.t, r.step) for r in records if r.kind == journal.PROGRESS and since <= r.t <= until]
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--window", type=float, default=45.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--work", default=None)
    args = p.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="cockpit-sampling-bench-"))
    preset = apply_overrides(load_preset("demo-sft"), [
        "max_steps=100000", "save_steps=10", "eval_strategy=no", "cockpit.completions.every_steps=100000"])
    run = launch(preset, work / "runs")
    quiet: list[float] = []
    sampling: list[float] = []
    answers = 0
    try:
        while True:
            found = list_run_checkpoints(run.path)
            if sum(c.complete for c in found.checkpoints) >= 2:
                break
            if not run.read_status().live:
                raise SystemExit(f"the run ended: {run.read_status().state}")
            time.sleep(1)
        done = [c for c in found.checkpoints if c.complete]
        choices = [smp.choose(found, done[0].name, "a"), smp.choose(found, done[1].name, "b")]
        prompts = smp.run_prompts(found) or ["Question: What is 2+2?\nAnswer:"]
        request = smp.sample_request(found, choices, prompts, id="bench", chat=False, device="cpu",
                                     max_new_tokens=32)
        note = request.note
        sampler = smp.Sampler(smp.sampler_python(found), work / "sampler.log")
        try:
            for ev in sampler.ask(request):  # load both models before measuring
                if isinstance(ev, smp.Failed):
                    raise SystemExit(ev.message)
            for _ in range(args.rounds):
                t0 = time.time()
                time.sleep(args.window)
                quiet.append(rate(run, t0, time.time()) or float("nan"))
                t0 = time.time()
                while time.time() < t0 + args.window:
                    for ev in sampler.ask(request):
                        answers += isinstance(ev, smp.Answer)
                sampling.append(rate(run, t0, time.time()) or float("nan"))
        finally:
            sampler.close()
    finally:
        if run.read_status().live:
            stop(run, save=False)
    ratio = statistics.mean(sampling) / statistics.mean(quiet)
    print(json.dumps({"steps_per_s_quiet": quiet, "steps_per_s_sampling": sampling,
                      "ratio_sampling_over_quiet": round(ratio, 3), "answers": answers,
                      "window_s": args.window, "gentle": note is not None, "cores": os.cpu_count()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
