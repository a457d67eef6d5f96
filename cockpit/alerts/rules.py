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
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

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
EndState = Literal["finished", "failed", "killed", "stopped"]
END_STATES: tuple[EndState, ...] = ("finished", "failed", "killed", "stopped")


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


def _fix(message: str) -> PydanticCustomError:
    """A problem whose line is written here (pydantic's own wording names no fix)."""
    return PydanticCustomError("cockpit_rule", "{fix}", {"fix": message})


def _finite(v: Any, key: str, *, positive: bool = False) -> float:
    """A finite number (NaN, inf and numbers past float range can never be compared usefully:
    a rule with one could never fire, or would fire on everything)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _fix(f"{v!r} is not a number — give e.g. {key}: 5")
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise _fix(f"{v!r} is not a finite number — give e.g. {key}: 5")
    if positive and f <= 0:
        raise _fix(f"must be above 0 (got {v})")
    return f


def _steps(v: Any) -> int:
    """A whole number of steps (or evals), 1 to MAX_STEPS_WINDOW."""
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_STEPS_WINDOW:
        raise _fix(f"must be a whole number from 1 to {MAX_STEPS_WINDOW:,} (got {v!r})")
    return v


def _is(v: Any) -> str:
    if str(v).lower() not in ("nan", "inf", "nonfinite"):
        raise _fix(f"{v!r} — use nan, inf or nonfinite")
    return str(v).lower()


def _finding(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _fix(f"{v!r} — name a finding kind, e.g. finding: reward_hacking (\"*\" for any)")
    return v.strip()


def _event(v: Any) -> str:
    if v != "run_ended":
        raise _fix(f"{v!r} — the event a rule can watch is run_ended")
    return str(v)


def _do(v: Any) -> list[str]:
    do = [v] if isinstance(v, str) else v
    bad = [a for a in do if a not in ACTIONS] if isinstance(do, list) else [do]
    if bad:
        raise _fix(f"unknown action {bad[0]!r} — use {', '.join(ACTIONS)}")
    return list(do)


def _mode(v: Any) -> str:
    if v not in ("min", "max"):
        raise _fix(f"{v!r} — use min or max")
    return str(v)


def _every(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise _fix(f"must be a number ≥ 0 (got {v!r})")
    if not v <= 10**7:  # NaN, inf, or past any run's length
        raise _fix(f"must be a finite number ≥ 0 (got {v!r})")
    return float(v)


def _tolerance(v: Any) -> float:
    f = _finite(v, "tolerance")
    if f < 0:
        raise _fix(f"must be ≥ 0 (got {v!r})")
    return f


def _floor(v: Any) -> float:
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v < math.inf
    try:
        f = float(v) if ok else math.nan
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise _fix(f"must be a number ≥ 0 (got {v!r}) — the smallest base a percentage is taken of, "
                   "e.g. floor: 0.1")
    return f


def _states(v: Any) -> tuple[str, ...]:
    states = tuple(map(str, v)) if isinstance(v, (list, tuple)) else (str(v),)
    unknown = [s for s in states if s not in END_STATES]
    if unknown:
        raise _fix(f"{unknown[0]!r} is not a state a run ends in — use {', '.join(END_STATES)}")
    return states


# Each field's schema says what its check accepts (a condition given is never null).
Finite = Annotated[float | None, BeforeValidator(lambda v, info: _finite(v, _key(info))),
                   WithJsonSchema({"type": "number"})]
Positive = Annotated[float | None, BeforeValidator(lambda v, info: _finite(v, _key(info), positive=True)),
                     WithJsonSchema({"type": "number", "exclusiveMinimum": 0})]
Steps = Annotated[int | None, BeforeValidator(_steps),
                  WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_STEPS_WINDOW})]


def _one_or_list(values: tuple[str, ...]) -> dict[str, Any]:
    """The schema of a key that takes one of `values` or a list of them."""
    return {"anyOf": [{"enum": list(values)}, {"type": "array", "items": {"enum": list(values)}}]}




def _key(info: ValidationInfo) -> str:
    return RuleSpec.model_fields[str(info.field_name)].alias or str(info.field_name)


class RuleSpec(BaseModel):
    """One rule as written in `cockpit.alerts` (or `--alerts FILE`, control/alerts.yaml): exactly
    one condition, the metric it watches, what to do. `parse_rules` turns it into a `Rule`; the
    JSON Schema of `cockpit.alerts` items is this model's (`cockpit schema`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)

    name: Annotated[str | None, BeforeValidator(lambda v: str(v) if v else None),
                    WithJsonSchema({"type": "string"})] = None
    metric: Annotated[str | None, BeforeValidator(lambda v: v if isinstance(v, str) else None),
                      WithJsonSchema({"type": "string", "description": "a metric name or glob"})] = None
    above: Finite = None
    below: Finite = None
    is_: Annotated[Literal["nan", "inf", "nonfinite"] | None, BeforeValidator(_is),
                   WithJsonSchema({"enum": ["nan", "inf", "nonfinite"]})] = Field(None, alias="is")
    rises_pct: Positive = None
    falls_pct: Positive = None
    flat: Steps = None
    stalled_minutes: Positive = None
    event: Annotated[Literal["run_ended"] | None, BeforeValidator(_event),
                     WithJsonSchema({"const": "run_ended"})] = None
    disk_free_gb_below: Positive = None
    not_improved_evals: Steps = None
    finding: Annotated[str | None, BeforeValidator(_finding),
                       WithJsonSchema({"type": "string", "minLength": 1,
                                       "description": 'a finding kind, a glob, "*"'})] = None
    for_: Steps = Field(None, alias="for")
    window: Steps = None
    do: Annotated[list[Literal["notify", "stop_save", "journal"]], BeforeValidator(_do),
                  WithJsonSchema(_one_or_list(ACTIONS))] = ["notify"]
    mode: Annotated[Literal["min", "max"], BeforeValidator(_mode)] = "min"
    states: Annotated[tuple[EndState, ...], BeforeValidator(_states),
                      WithJsonSchema(_one_or_list(END_STATES))] = END_STATES
    every_minutes: Annotated[float, BeforeValidator(_every),
                             WithJsonSchema({"type": "number", "minimum": 0, "maximum": 10**7})] = DEFAULT_EVERY_MIN
    tolerance: Annotated[float, BeforeValidator(_tolerance), WithJsonSchema({"type": "number", "minimum": 0})] = 1e-6
    floor: Annotated[float, BeforeValidator(_floor), WithJsonSchema({"type": "number", "minimum": 0})] = 0.0

    @property
    def conditions(self) -> list[str]:
        """The conditions this rule gives, as written (one, once checked)."""
        given = {type(self).model_fields[f].alias or f for f in self.model_fields_set}
        return [c for c in CONDITIONS if c in given]

    @model_validator(mode="after")
    def _one_condition(self) -> RuleSpec:
        conds = self.conditions
        if len(conds) != 1:
            raise _fix(f"give exactly one condition ({', '.join(CONDITIONS)}), got {conds or 'none'}")
        if conds[0] in METRIC_CONDITIONS and self.metric is None:
            raise _fix(f"'{conds[0]}' needs a metric, e.g. metric: loss")
        return self

    def to_rule(self) -> Rule:
        cond = self.conditions[0]
        value = getattr(self, "is_" if cond == "is" else cond)
        steps = self.for_ if self.for_ is not None else self.window
        count = steps if steps is not None else 10 if cond in ("rises_pct", "falls_pct") else \
            int(value) if cond == "flat" else 1
        return Rule(name=self.name or "", condition=cond, value=float(value) if cond in METRIC_STEPS else value,
                    metric=self.metric, count=count, do=tuple(self.do), mode=self.mode, states=self.states,
                    every_s=self.every_minutes * 60, tolerance=self.tolerance, floor=self.floor)


METRIC_CONDITIONS = ("above", "below", "is", "rises_pct", "falls_pct", "flat", "not_improved_evals")
METRIC_STEPS = ("flat", "not_improved_evals")
"""Conditions counted in steps or evals: a whole number, kept as a float `value`."""


def _problem(at: str, err: Any) -> str:
    """One pydantic error as the line a user reads: where, what, the fix."""
    loc = [str(part) for part in err["loc"]]
    if err["type"] == "extra_forbidden":
        import difflib

        close = difflib.get_close_matches(loc[0], sorted(RULE_KEYS), n=1)
        return f"{at}: unknown key '{loc[0]}'" + (f" — did you mean '{close[0]}'?" if close else
                                                  f" — a rule has one of {', '.join(CONDITIONS)}")
    return f"{at}.{loc[0]}: {err['msg']}" if loc else f"{at}: {err['msg']}"


def parse_rules(raw: Any, *, where: str = "cockpit.alerts") -> list[Rule]:
    """The rules, checked against `RuleSpec`: every problem named at once, one line each,
    CockpitError."""
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
        try:
            spec = RuleSpec.model_validate({str(k): v for k, v in item.items()})
        except ValidationError as exc:
            problems += [_problem(at, err) for err in exc.errors(include_url=False, include_input=False)]
            continue
        rules.append(spec.to_rule())
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
