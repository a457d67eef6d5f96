"""Alert rules on a run, evaluated by the supervisor, so they fire with no UI attached.

A preset's `cockpit.alerts` (or a script run's `--alerts FILE`) is a list of rules; each has one
condition and the actions to take when it fires:

    cockpit:
      notify: {webhook: env:MY_WEBHOOK_URL, ntfy: https://ntfy.sh/my-topic, command: "notify-send cockpit"}
      alerts:
        - {metric: loss, above: 5.0, for: 3, do: [notify]}
        - {metric: grad_norm, is: nan, do: [notify, stop_save]}
        - {metric: eval_loss, not_improved_evals: 3, mode: min, do: [stop_save]}
        - {stalled_minutes: 20, do: [notify]}
        - {event: run_ended, do: [notify]}
        - {disk_free_gb_below: 20, do: [notify]}
        - {finding: reward_hacking, do: [notify]}

Conditions: above / below a value for N logged steps; is nan / inf; rises_pct / falls_pct over a
window of N steps; flat for N steps; no new step for T minutes; the run ended; free disk under X
GB; an eval metric not improved for N evals; a finding of a kind (`reward_hacking`, a glob, or `"*"`
for any) written to the journal (`docs/findings.md`). `metric` may be a glob (`rewards/*/mean`).

Every firing is an `alert` line in the journal (rule, value, what each action did), so every
attached view shows it and rings its bell. Actions are rate-limited per rule. Built-in rule sets
per trainer family are on unless `cockpit.builtin_alerts: false`. Secrets: notify targets may be
`env:NAME`, read when an alert goes out; a literal URL is kept out of run.yaml and the journal
(`keep_secrets`), which name a target by its kind only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cockpit.errors import CockpitError

ACTIONS = ("notify", "stop_save", "journal")
CONDITIONS = ("above", "below", "is", "rises_pct", "falls_pct", "flat", "stalled_minutes", "event",
              "disk_free_gb_below", "not_improved_evals", "finding")
RULE_KEYS = {"name", "metric", "for", "window", "do", "mode", "states", "every_minutes", "tolerance", "floor",
             *CONDITIONS}
DEFAULT_EVERY_MIN = 10.0
MAX_STEPS_WINDOW = 100_000
"""The longest `for` / `window` / `flat` / `not_improved_evals` a rule may ask for: each step of a
window is kept in memory by the supervisor, and a window of 1e26 steps can never be filled anyway."""
END_STATES = ("finished", "failed", "killed", "stopped")


@dataclass
class Rule:
    name: str
    condition: str
    value: Any
    metric: str | None = None
    count: int = 1
    """for: consecutive logged steps; window for rises/falls/flat; evals for not_improved."""
    do: tuple[str, ...] = ("notify",)
    mode: str = "min"
    states: tuple[str, ...] = ("finished", "failed", "killed", "stopped")
    every_s: float = DEFAULT_EVERY_MIN * 60
    tolerance: float = 1e-6
    floor: float = 0.0
    """rises/falls: the smallest base a percentage is taken of, so a move around zero (a GRPO loss
    of ±1e-8) is not a 600 % rise; the base is also never below the window's typical size."""
    builtin: bool = False

    def describe(self) -> str:
        what = self.metric or self.condition
        cond = {"above": f"> {self.value}", "below": f"< {self.value}", "is": f"is {self.value}",
                "rises_pct": f"rises {self.value}% over {self.count} steps",
                "falls_pct": f"falls {self.value}% over {self.count} steps",
                "flat": f"flat for {self.count} steps", "stalled_minutes": f"no new step for {self.value} min",
                "event": f"{self.value}", "disk_free_gb_below": f"free disk < {self.value} GB",
                "not_improved_evals": f"not improved ({self.mode}) for {self.value} evals",
                "finding": f"finding {self.value}"}[self.condition]
        lasting = f" for {self.count} steps" if self.condition in ("above", "below") and self.count > 1 else ""
        return f"{what} {cond}{lasting}" if self.metric else cond


def _number(v: Any, what: str, problems: list[str], *, positive: bool = False) -> float | None:
    """A finite number (NaN, inf and numbers past float range can never be compared usefully:
    a rule with one could never fire, or would fire on everything)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        problems.append(f"{what}: {v!r} is not a number — give e.g. {what.rsplit('.', 1)[-1]}: 5")
        return None
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        problems.append(f"{what}: {v!r} is not a finite number — give e.g. {what.rsplit('.', 1)[-1]}: 5")
        return None
    if positive and f <= 0:
        problems.append(f"{what}: must be above 0 (got {v})")
        return None
    return f


def _steps(v: Any, what: str, problems: list[str]) -> int | None:
    """A whole number of steps (or evals), 1 to MAX_STEPS_WINDOW."""
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_STEPS_WINDOW:
        problems.append(f"{what}: must be a whole number from 1 to {MAX_STEPS_WINDOW:,} (got {v!r})")
        return None
    return v


def parse_rules(raw: Any, *, where: str = "cockpit.alerts") -> list[Rule]:
    """The rules, checked: every bad one named at once, one line each, CockpitError."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CockpitError(f"{where} must be a list of rules like {{metric: loss, above: 5, do: [notify]}}")
    problems: list[str] = []
    rules: list[Rule] = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{at}: a rule is a mapping like {{metric: loss, above: 5}}")
            continue
        unknown = sorted(set(map(str, item)) - RULE_KEYS)
        if unknown:
            import difflib

            close = difflib.get_close_matches(unknown[0], sorted(RULE_KEYS), n=1)
            problems.append(f"{at}: unknown key '{unknown[0]}'" + (f" — did you mean '{close[0]}'?" if close else
                            f" — a rule has one of {', '.join(CONDITIONS)}"))
            continue
        conds = [c for c in CONDITIONS if c in item]
        if len(conds) != 1:
            problems.append(f"{at}: give exactly one condition ({', '.join(CONDITIONS)}), got {conds or 'none'}")
            continue
        cond = conds[0]
        value = item[cond]
        metric = item.get("metric")
        metric_conds = ("above", "below", "is", "rises_pct", "falls_pct", "flat", "not_improved_evals")
        if cond in metric_conds and not isinstance(metric, str):
            problems.append(f"{at}: '{cond}' needs a metric, e.g. metric: loss")
            continue
        if cond in ("above", "below"):
            value = _number(value, f"{at}.{cond}", problems)
        elif cond == "is":
            if str(value).lower() not in ("nan", "inf", "nonfinite"):
                problems.append(f"{at}.is: {value!r} — use nan, inf or nonfinite")
                continue
            value = str(value).lower()
        elif cond in ("rises_pct", "falls_pct", "stalled_minutes", "disk_free_gb_below"):
            value = _number(value, f"{at}.{cond}", problems, positive=True)
        elif cond in ("flat", "not_improved_evals"):
            steps = _steps(value, f"{at}.{cond}", problems)
            value = None if steps is None else float(steps)
        elif cond == "finding":
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{at}.finding: {value!r} — name a finding kind, e.g. finding: reward_hacking "
                                "(\"*\" for any)")
                continue
            value = value.strip()
        elif cond == "event" and value != "run_ended":
            problems.append(f"{at}.event: {value!r} — the event a rule can watch is run_ended")
            continue
        key = "for" if "for" in item else "window" if "window" in item else None
        count = _steps(item[key], f"{at}.{key}", problems) if key else int(value) if cond == "flat" and value else 1
        if count is None:
            continue
        if cond in ("rises_pct", "falls_pct") and "window" not in item and "for" not in item:
            count = 10
        do = item.get("do", ["notify"])
        do = [do] if isinstance(do, str) else do
        bad = [a for a in do if a not in ACTIONS] if isinstance(do, list) else [do]
        if bad:
            problems.append(f"{at}.do: unknown action {bad[0]!r} — use {', '.join(ACTIONS)}")
            continue
        mode = item.get("mode", "min")
        if mode not in ("min", "max"):
            problems.append(f"{at}.mode: {mode!r} — use min or max")
            continue
        every = item.get("every_minutes", DEFAULT_EVERY_MIN)
        if isinstance(every, bool) or not isinstance(every, (int, float)) or every < 0:
            problems.append(f"{at}.every_minutes: must be a number ≥ 0 (got {every!r})")
            continue
        if isinstance(every, (int, float)) and not every <= 10**7:  # NaN, inf, or past any run's length
            problems.append(f"{at}.every_minutes: must be a finite number ≥ 0 (got {every!r})")
            continue
        tolerance = item.get("tolerance", 1e-6)
        tol = _number(tolerance, f"{at}.tolerance", problems) if "tolerance" in item else 1e-6
        if tol is None:
            continue
        if tol < 0:
            problems.append(f"{at}.tolerance: must be ≥ 0 (got {tolerance!r})")
            continue
        floor = item.get("floor", 0.0)
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor < math.inf:
            problems.append(f"{at}.floor: must be a number ≥ 0 (got {floor!r}) — the smallest base a "
                            "percentage is taken of, e.g. floor: 0.1")
            continue
        states = item.get("states", Rule.states)
        states = tuple(map(str, states)) if isinstance(states, (list, tuple)) else (str(states),)
        unknown_states = [s for s in states if s not in END_STATES]
        if unknown_states:
            problems.append(f"{at}.states: {unknown_states[0]!r} is not a state a run ends in — use "
                            f"{', '.join(END_STATES)}")
            continue
        if value is None:
            continue
        rules.append(Rule(name=str(item.get("name") or ""), condition=cond, value=value, metric=metric,
                          count=int(count), do=tuple(do), mode=mode, states=states,
                          every_s=float(every) * 60, tolerance=tol, floor=float(floor)))
    if problems:
        raise CockpitError("\n".join(problems))
    for r in rules:
        r.name = r.name or r.describe()
    return rules


# -- built-in rule sets -----------------------------------------------------------------------

NO_LOSS_SPIKE = frozenset({"grpo"})
"""Families whose logged `loss` is no objective that falls: GRPO's is the policy-gradient surrogate,
zero on average by construction (one iteration a batch) plus beta × KL, so it rises from ~0 as the
policy leaves the reference (TRL 0.18's beta 0.04: 1.4e-07 → 0.39 in open-r1's run), which is no
spike; the family's KL and entropy rules watch what matters."""


def builtin_rules(family: str | None) -> list[Rule]:
    """On for every run unless `cockpit.builtin_alerts: false`; family from the trainer's traits."""
    every = [
        Rule("loss is NaN", "is", "nonfinite", metric="loss", builtin=True),
        Rule("no new step for 30 minutes", "stalled_minutes", 30.0, builtin=True),
        Rule("free disk under 5 GB", "disk_free_gb_below", 5.0, builtin=True),
    ]
    if family not in NO_LOSS_SPIKE:
        # floor 0.1: a loss that sits near zero only counts as spiking once it rose by 0.2 or more,
        # not by 600 % of 1e-8.
        every.insert(1, Rule("loss spike: up 200% over 5 steps", "rises_pct", 200.0, metric="loss", count=5,
                             floor=0.1, builtin=True))
    if family == "ppo":
        every += [Rule("PPO val/ratio far from 1", "above", 1.5, metric="val/ratio", count=3, builtin=True),
                  Rule("PPO entropy collapse", "falls_pct", 90.0, metric="objective/entropy", count=20, builtin=True)]
    if family == "grpo":
        every += [
            Rule("frac_reward_zero_std near 1", "above", 0.9, metric="frac_reward_zero_std", count=5, builtin=True),
            Rule("entropy collapse", "falls_pct", 90.0, metric="entropy", count=20, builtin=True),
            Rule("completions clipped", "above", 0.5, metric="completions/clipped_ratio", count=5, builtin=True),
            Rule("KL runaway", "above", 10.0, metric="kl", count=3, builtin=True),
            Rule("completion length collapse", "falls_pct", 70.0, metric="completions/mean_length", count=20,
                 builtin=True),
            Rule("completion length explosion", "rises_pct", 300.0, metric="completions/mean_length", count=20,
                 builtin=True),
        ]
    for r in every:
        r.do = ("journal",)
    return every
