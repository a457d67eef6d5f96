"""What the live judge costs the supervisor: `detect` on a long run's metric store.

    python bench/findings_cost.py [STEPS] [TRAINERS]

The supervisor asks the judge every `supervisor.findings.EVERY_S` seconds; the training process
never runs it. This prints, for each trainer of TRAINERS (comma-separated, `grpo,sft` unless
given: GRPO's family has the most rules; SFT's loss gets the loss rules RL trainers skip), the
median time of one `detect` over a store of STEPS logged steps (bench/gen_state.py: 28 keys a
GRPO step), wall and CPU time (the CPU time is what a pass costs when other processes share the
core), and that as a share of one core at that rate.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))


def main(steps: int = 100_000, trainers: str = "grpo,sft") -> None:
    for trainer in trainers.split(","):
        judge(steps, trainer)


def judge(steps: int, trainer: str) -> None:
    from gen_state import write_trainer_state

    from cockpit.findings.judge import detect
    from cockpit.metrics.store import MetricStore
    from cockpit.supervisor.findings import EVERY_S

    with tempfile.TemporaryDirectory() as tmp:
        path = write_trainer_state(Path(tmp) / "trainer_state.json", trainer, steps)
        store = MetricStore.from_trainer_state(path.read_bytes())
    times, cpu = [], []
    for _ in range(15):
        t0, c0 = time.perf_counter(), time.thread_time()
        detect(store, trainer, views=True)  # as the supervisor calls it
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    ms, cpu_ms = statistics.median(times) * 1000, statistics.median(cpu) * 1000
    # On a shared machine the wall time counts the time other processes held the core; the CPU
    # time is what one pass costs.
    print(f"detect on {steps} {trainer} steps: {ms:.1f} ms median of 15 ({cpu_ms:.1f} ms of CPU); every "
          f"{EVERY_S:g} s that is {cpu_ms / 10 / EVERY_S:.2f}% of one core, in the supervisor")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, *sys.argv[2:3])
