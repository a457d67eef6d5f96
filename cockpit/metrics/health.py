# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""Health checks on a live run: the debugging recipes of TRL's PPO docs, as rules.

The runner's callback feeds every metrics row to a `HealthMonitor` and writes what it
returns as `warning` journal lines, so the TUI, `cockpit watch` and a later replay all show
the same warnings. Each rule fires once, then again only after it has cleared — a run is
not flooded with the same line every step.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from cockpit.run import journal


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass
class HealthMonitor:
    window: int = 10
    _active: set[str] = field(default_factory=set)
    _history: dict[str, deque[float]] = field(default_factory=dict)
    _first: dict[str, float] = field(default_factory=dict)
    _zero_std_streak: int = 0
    _nan_streak: int = 0

    def _series(self, key: str, value: float) -> deque[float]:
        d = self._history.setdefault(key, deque(maxlen=4 * self.window))
        d.append(value)
        self._first.setdefault(key, value)
        return d

    def _rule(self, code: str, firing: bool, message: str, fix: str, step: int,
              out: list[journal.Record]) -> None:
        if firing and code not in self._active:
            self._active.add(code)
            out.append(journal.warning(message, code=code, step=step, fix=fix))
        elif not firing:
            self._active.discard(code)

    def observe(self, step: int, values: dict[str, Any]) -> list[journal.Record]:
        out: list[journal.Record] = []

        loss = values.get("loss")
        if isinstance(loss, float) and not math.isfinite(loss):
            self._nan_streak += 1
        elif loss is not None:
            self._nan_streak = 0
        self._rule("nan_loss", self._nan_streak >= 1, f"loss became {loss} at step {step}",
                   "lower learning_rate, set max_grad_norm (e.g. 1.0), or use bf16 instead of fp16",
                   step, out)

        ratio = _finite(values.get("val/ratio"))
        if ratio is not None:
            self._rule("ppo_ratio", abs(ratio - 1.0) > 0.5,
                       f"PPO val/ratio is {ratio:.3g} at step {step} (it should hover near 1.0): "
                       "updates are too violent",
                       "lower learning_rate, or take fewer optimizer steps on each batch (lower num_ppo_epochs or "
                       "num_mini_batches)", step, out)

        for key in ("objective/rlhf_reward", "reward"):
            v = _finite(values.get(key))
            if v is None:
                continue
            d = self._series(key, v)
            if len(d) >= 2 * self.window:
                early = list(d)[: self.window]
                late = list(d)[-self.window:]
                m_early = sum(early) / len(early)
                m_late = sum(late) / len(late)
                spread = max(1e-8, (max(early) - min(early)) / 2)
                self._rule(f"{key}_falling", m_late < m_early - spread,
                           f"{key} is falling: {m_early:.3g} → {m_late:.3g} over the last "
                           f"{len(d)} logs (it should rise)",
                           "lower learning_rate or raise beta (KL penalty); check the reward "
                           "function for a bug", step, out)

        for key in ("entropy", "objective/entropy", "policy/entropy_avg"):
            v = _finite(values.get(key))
            if v is None:
                continue
            self._series(key, v)
            first = self._first[key]
            self._rule(f"{key}_collapse", first > 0 and v < 0.1 * first,
                       f"{key} collapsed to {v:.3g} from {first:.3g}: the policy has become "
                       "nearly deterministic",
                       "raise temperature or beta, lower learning_rate, or add an entropy bonus",
                       step, out)
            break

        frac = _finite(values.get("frac_reward_zero_std"))
        if frac is not None:
            self._zero_std_streak = self._zero_std_streak + 1 if frac >= 0.9 else 0
            self._rule("zero_reward_std", self._zero_std_streak >= 3,
                       f"frac_reward_zero_std is {frac:.2f}: almost every group of completions got "
                       "the same reward, so advantages are zero and nothing is learned",
                       "raise num_generations or temperature, or use a reward that varies more",
                       step, out)
        return out
