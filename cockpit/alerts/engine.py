"""Alert evaluation: journal records (and the clock) in, firings out. Pure: the supervisor's
`Alerter` carries out the actions, and tests can drive it with a fake clock."""

from __future__ import annotations

import fnmatch
import math
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.alerts.rules import Rule
from cockpit.run import journal


@dataclass
class Firing:
    rule: Rule
    key: str
    value: Any
    step: int | None
    message: str


@dataclass
class _State:
    streak: dict[str, int] = field(default_factory=dict)
    history: dict[str, deque] = field(default_factory=dict)
    best: dict[str, float] = field(default_factory=dict)
    since_best: dict[str, int] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    last_fired: float = -math.inf


class AlertEngine:
    """Feeds on journal records; `tick()` covers the time-based rules. Pure: actions go through
    `act`, so tests can see what would be sent and the supervisor sends it."""

    def __init__(self, rules: list[Rule], *, output_dir: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rules = list(rules)
        self.output_dir = output_dir
        self.clock = clock
        self._state = {id(r): _State() for r in self.rules}
        self.last_step_at: float | None = None
        self.last_step: int | None = None
        self.muted: set[str] = set()

    def add_rules(self, rules: Iterable[Rule]) -> None:
        for r in rules:
            self.rules.append(r)
            self._state[id(r)] = _State()

    def _fire(self, rule: Rule, key: str, value: Any, step: int | None, message: str) -> Firing | None:
        st = self._state[id(rule)]
        now = self.clock()
        if rule.name in self.muted or now - st.last_fired < rule.every_s:
            return None
        st.last_fired = now
        return Firing(rule, key, value, step, message)

    def _edge(self, rule: Rule, key: str, firing: bool) -> bool:
        """True on the step a condition starts holding (a rule fires once, then again after clearing)."""
        st = self._state[id(rule)]
        if firing and key not in st.active:
            st.active.add(key)
            return True
        if not firing:
            st.active.discard(key)
        return False

    def feed(self, records: Iterable[journal.Record]) -> list[Firing]:
        out: list[Firing] = []
        for rec in records:
            if rec.kind in (journal.METRICS, journal.EVAL) and not rec.data.get("summary"):
                if rec.step is not None:
                    self.last_step, self.last_step_at = rec.step, self.clock()
                for rule in self.rules:
                    if rule.metric is None:
                        continue
                    for key, value in rec.data.items():
                        if key == "epoch" or not fnmatch.fnmatchcase(key, rule.metric):
                            continue
                        try:
                            f = self._metric(rule, key, value, rec)
                        except (ArithmeticError, ValueError, TypeError, MemoryError):
                            f = None  # one rule that cannot be computed never switches off the others
                        if f is not None:
                            out.append(f)
            elif rec.kind == journal.FINDING:
                kind = str(rec.data.get("kind") or "")
                for rule in self.rules:
                    if rule.condition == "finding" and fnmatch.fnmatchcase(kind, rule.value):
                        f = self._fire(rule, kind, rec.data.get("severity"), rec.step,
                                       f"finding {kind}: {rec.data.get('summary') or ''}".rstrip(": "))
                        if f is not None:
                            out.append(f)
            elif rec.kind == journal.RUN_ENDED:
                state = str(rec.data.get("state"))
                for rule in self.rules:
                    if rule.condition == "event" and state in rule.states:
                        reason = rec.data.get("reason") or ""
                        f = self._fire(rule, "run_ended", state, rec.step,
                                       f"run {state}" + (f": {reason}" if reason else ""))
                        if f is not None:
                            out.append(f)
        return out

    def _metric(self, rule: Rule, key: str, value: Any, rec: journal.Record) -> Firing | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        v = float(value)
        st = self._state[id(rule)]
        step = rec.step
        c = rule.condition
        if c == "is":
            bad = (math.isnan(v) if rule.value == "nan" else math.isinf(v) if rule.value == "inf"
                   else not math.isfinite(v))
            if self._edge(rule, key, bad):
                return self._fire(rule, key, v, step, f"{key} is {v} at step {step}")
            return None
        if not math.isfinite(v):
            return None
        if c in ("above", "below"):
            over = v > rule.value if c == "above" else v < rule.value
            st.streak[key] = st.streak.get(key, 0) + 1 if over else 0
            if self._edge(rule, key, st.streak[key] >= rule.count):
                return self._fire(rule, key, v, step, f"{key} = {v:.4g} at step {step} "
                                  f"({'above' if c == 'above' else 'below'} {rule.value:g}"
                                  + (f" for {rule.count} steps)" if rule.count > 1 else ")"))
            return None
        if c == "not_improved_evals":
            if rec.kind != journal.EVAL and not key.startswith("eval_"):
                return None
            best = st.best.get(key)
            better = best is None or (v < best - rule.tolerance if rule.mode == "min" else v > best + rule.tolerance)
            if better:
                st.best[key], st.since_best[key] = v, 0
            else:
                st.since_best[key] = st.since_best.get(key, 0) + 1
            if self._edge(rule, key, st.since_best[key] >= rule.value):
                return self._fire(rule, key, v, step, f"{key} has not improved for {st.since_best[key]} evals "
                                  f"(best {st.best[key]:.4g}, now {v:.4g} at step {step})")
            return None
        hist = st.history.setdefault(key, deque(maxlen=rule.count + 1))
        hist.append(v)
        if len(hist) <= rule.count:
            return None
        first, last = hist[0], hist[-1]
        if c == "flat":
            holds = max(hist) - min(hist) <= rule.tolerance * max(1.0, abs(first))
            msg = f"{key} has not moved for {rule.count} steps (≈{last:.4g} at step {step})"
        else:
            change = (last - first) / base * 100 if (base := _base(rule, hist)) else 0.0
            holds = change >= rule.value if c == "rises_pct" else -change >= rule.value
            msg = f"{key} {'rose' if change > 0 else 'fell'} {abs(change):.0f}% over {rule.count} steps " \
                  f"({first:.4g} → {last:.4g} at step {step})"
        if self._edge(rule, key, holds):
            return self._fire(rule, key, last, step, msg)
        return None

    def tick(self, *, started_at: float, live: bool) -> list[Firing]:
        """Time-based rules: stalls (only while the run is live) and free disk. `started_at` is on
        the engine's clock (`time.monotonic()` by default: a wall-clock jump is no stall)."""
        out: list[Firing] = []
        now = self.clock()
        for rule in self.rules:
            if rule.condition == "stalled_minutes" and live:
                since = self.last_step_at or started_at
                minutes = (now - since) / 60
                if self._edge(rule, "stall", minutes >= rule.value):
                    f = self._fire(rule, "stall", round(minutes, 1), self.last_step,
                                   f"no new step for {minutes:.0f} min"
                                   + (f" (last: step {self.last_step})" if self.last_step is not None else ""))
                    if f:
                        out.append(f)
            elif rule.condition == "disk_free_gb_below" and self.output_dir is not None:
                folder = self.output_dir
                while not folder.exists() and folder != folder.parent:
                    folder = folder.parent
                try:
                    free_gb = shutil.disk_usage(folder).free / 2**30
                except OSError:
                    continue
                if self._edge(rule, "disk", free_gb < rule.value):
                    f = self._fire(rule, "disk", round(free_gb, 2), self.last_step,
                                   f"free disk under {folder} is {free_gb:.1f} GB (below {rule.value:g} GB)")
                    if f:
                        out.append(f)
        return out


def _base(rule: Rule, hist: deque) -> float:
    """What a rise or fall is a percentage of: the first value of the window, but never less than
    the window's typical size (the median |value| before the last) nor the rule's floor. A series
    that wanders around zero has no meaningful percentage of its first value."""
    earlier = sorted(abs(v) for v in list(hist)[:-1])
    typical = earlier[len(earlier) // 2] if earlier else 0.0
    return max(abs(hist[0]), typical, rule.floor)
