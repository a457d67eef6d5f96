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

Conditions: above / below a value for N logged steps; is nan / inf; rises_pct / falls_pct over a
window of N steps; flat for N steps; no new step for T minutes; the run ended; free disk under X
GB; an eval metric not improved for N evals. `metric` may be a glob (`rewards/*/mean`).

Every firing is an `alert` line in the journal (rule, value, what each action did), so every
attached view shows it and rings its bell. Actions are rate-limited per rule. Built-in rule sets
per trainer family are on unless `cockpit.builtin_alerts: false`. Secrets: notify targets may be
`env:NAME`, read when an alert goes out; a literal URL is kept out of run.yaml and the journal
(`keep_secrets`), which name a target by its kind only.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run.folder import Request

ACTIONS = ("notify", "stop_save", "journal")
NOTIFY_KINDS = ("webhook", "ntfy", "command")
CONDITIONS = ("above", "below", "is", "rises_pct", "falls_pct", "flat", "stalled_minutes", "event",
              "disk_free_gb_below", "not_improved_evals")
RULE_KEYS = {"name", "metric", "for", "window", "do", "mode", "states", "every_minutes", "tolerance", *CONDITIONS}
DEFAULT_EVERY_MIN = 10.0
SECRET_PREFIX = "secret:"


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
    builtin: bool = False

    def describe(self) -> str:
        what = self.metric or self.condition
        cond = {"above": f"> {self.value}", "below": f"< {self.value}", "is": f"is {self.value}",
                "rises_pct": f"rises {self.value}% over {self.count} steps",
                "falls_pct": f"falls {self.value}% over {self.count} steps",
                "flat": f"flat for {self.count} steps", "stalled_minutes": f"no new step for {self.value} min",
                "event": f"{self.value}", "disk_free_gb_below": f"free disk < {self.value} GB",
                "not_improved_evals": f"not improved ({self.mode}) for {self.value} evals"}[self.condition]
        lasting = f" for {self.count} steps" if self.condition in ("above", "below") and self.count > 1 else ""
        return f"{what} {cond}{lasting}" if self.metric else cond


def _number(v: Any, what: str, problems: list[str], *, positive: bool = False) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        problems.append(f"{what}: {v!r} is not a number — give e.g. {what.rsplit('.', 1)[-1]}: 5")
        return None
    if positive and v <= 0:
        problems.append(f"{what}: must be above 0 (got {v})")
        return None
    return float(v)


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
        elif cond == "flat":
            value = _number(value, f"{at}.flat", problems, positive=True)
        elif cond == "not_improved_evals":
            value = _number(value, f"{at}.not_improved_evals", problems, positive=True)
        elif cond == "event" and value != "run_ended":
            problems.append(f"{at}.event: {value!r} — the event a rule can watch is run_ended")
            continue
        count = item.get("for", item.get("window", int(value) if cond == "flat" and value else 1))
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.append(f"{at}.for: must be a whole number ≥ 1 (got {count!r})")
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
        if value is None:
            continue
        states = item.get("states", Rule.states)
        rules.append(Rule(name=str(item.get("name") or ""), condition=cond, value=value, metric=metric,
                          count=int(count), do=tuple(do), mode=mode,
                          states=tuple(states) if isinstance(states, (list, tuple)) else (str(states),),
                          every_s=float(every) * 60, tolerance=float(item.get("tolerance", 1e-6))))
    if problems:
        raise CockpitError("\n".join(problems))
    for r in rules:
        r.name = r.name or r.describe()
    return rules


def parse_notify(raw: Any, *, where: str = "cockpit.notify") -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CockpitError(f"{where} must be a mapping like {{ntfy: https://ntfy.sh/my-topic}}")
    problems = [f"{where}.{k}: unknown target — use {', '.join(NOTIFY_KINDS)}" for k in raw if k not in NOTIFY_KINDS]
    problems += [f"{where}.{k}: must be a string (a URL, a command, or env:NAME)" for k, v in raw.items()
                 if k in NOTIFY_KINDS and not isinstance(v, str)]
    if problems:
        raise CockpitError("\n".join(problems))
    return {str(k): str(v) for k, v in raw.items()}


def keep_secrets(notify: dict[str, str], secrets_file: Path) -> dict[str, str]:
    """Literal targets move to a user-only file beside run.yaml; run.yaml keeps `secret:KIND`."""
    literal = {k: v for k, v in notify.items() if not v.startswith(("env:", SECRET_PREFIX))}
    if not literal:
        return dict(notify)
    fd = os.open(secrets_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(literal, fh)
    return {k: (f"{SECRET_PREFIX}{k}" if k in literal else v) for k, v in notify.items()}


def resolve_target(value: str, secrets_file: Path | None) -> str | None:
    if value.startswith("env:"):
        return os.environ.get(value[4:]) or None
    if value.startswith(SECRET_PREFIX) and secrets_file is not None:
        try:
            return json.loads(secrets_file.read_text(encoding="utf-8")).get(value[len(SECRET_PREFIX):])
        except (OSError, ValueError):
            return None
    return value


# -- built-in rule sets -----------------------------------------------------------------------

def builtin_rules(family: str | None) -> list[Rule]:
    """On for every run unless `cockpit.builtin_alerts: false`; family from the trainer's traits."""
    every = [
        Rule("loss is NaN", "is", "nonfinite", metric="loss", builtin=True),
        Rule("loss spike: up 200% over 5 steps", "rises_pct", 200.0, metric="loss", count=5, builtin=True),
        Rule("no new step for 30 minutes", "stalled_minutes", 30.0, builtin=True),
        Rule("free disk under 5 GB", "disk_free_gb_below", 5.0, builtin=True),
    ]
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


# -- evaluation -------------------------------------------------------------------------------

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
                 clock: Callable[[], float] = time.time) -> None:
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
                        f = self._metric(rule, key, value, rec)
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
            base = abs(first) if first != 0 else None
            change = (last - first) / base * 100 if base else 0.0
            holds = change >= rule.value if c == "rises_pct" else -change >= rule.value
            msg = f"{key} {'rose' if change > 0 else 'fell'} {abs(change):.0f}% over {rule.count} steps " \
                  f"({first:.4g} → {last:.4g} at step {step})"
        if self._edge(rule, key, holds):
            return self._fire(rule, key, last, step, msg)
        return None

    def tick(self, *, started_at: float, live: bool) -> list[Firing]:
        """Time-based rules: stalls (only while the run is live) and free disk."""
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


# -- actions ----------------------------------------------------------------------------------

def send(kind: str, target: str, payload: dict[str, Any], timeout: float = 10.0) -> tuple[bool, str]:
    """One notification; (ok, what happened) — never raises: a refusing URL is a journal line."""
    text = f"[cockpit] {payload['run']}: {payload['message']}"
    try:
        if kind == "command":
            env = {**os.environ, "COCKPIT_ALERT_RUN": payload["run"], "COCKPIT_ALERT_RULE": payload["rule"],
                   "COCKPIT_ALERT_MESSAGE": payload["message"], "COCKPIT_ALERT_VALUE": str(payload["value"])}
            proc = subprocess.run(f"{target} {_shell_quote(text)}", shell=True, env=env, capture_output=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL, check=False)
            return proc.returncode == 0, f"command exit {proc.returncode}"
        if kind == "ntfy":
            req = urllib.request.Request(target, data=text.encode("utf-8"), method="POST",
                                         headers={"Title": f"cockpit: {payload['run']}", "Tags": "warning"})
        else:
            req = urllib.request.Request(target, data=json.dumps(payload).encode("utf-8"), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return 200 <= resp.status < 300, f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, subprocess.SubprocessError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"{type(exc).__name__}: {reason}"[:200]


def _shell_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


# -- in the supervisor ------------------------------------------------------------------------

MUTE_FILE = "mute.json"
"""control/mute.json: rule names muted from a UI; read on every poll."""
ADDED_FILE = "alerts.yaml"
"""control/alerts.yaml: rules added while the run goes (from a UI): a list of rules written like
`cockpit.alerts` (or `{alerts: [...]}`), re-read whenever the file changes."""


def user_alerts() -> dict[str, Any]:
    """The user's defaults (`~/.config/cockpit/alerts.yaml`: notify targets and rules for every run,
    script runs included); {} when there is none or it is broken (a run never fails over it)."""
    import yaml

    from cockpit.paths import config_dir

    try:
        data = yaml.safe_load((config_dir() / "alerts.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


class Alerter:
    """Tails the run's journal from where it stands, feeds the engine, carries out the actions
    and writes one `alert` line per firing. A bad rule or a refusing URL becomes a journal line;
    nothing here can stop training except a stop_save action."""

    def __init__(self, run: Any, jw: journal.JournalWriter, *, trainer: str | None) -> None:
        from cockpit.run.tailer import Tailer

        self.run = run
        self.jw = jw
        section = run.cockpit_section()
        user = user_alerts()
        self.secrets = run.path / "control" / "notify.secret.json"
        rules: list[Rule] = []
        self.notify: dict[str, str] = {}
        for where, src in (("~/.config/cockpit/alerts.yaml", user), ("cockpit", section)):
            try:
                self.notify.update(parse_notify(src.get("notify"), where=f"{where}.notify"))
                rules += parse_rules(src.get("alerts"), where=f"{where}.alerts")
            except CockpitError as exc:
                for line in str(exc).splitlines():
                    jw.write(journal.warning(f"alert rules: {line}", code="alert_rule"))
        self.builtins = section.get("builtin_alerts", user.get("builtin_alerts", True)) is not False
        output_dir = _output_dir(run)
        self.engine = AlertEngine(rules, output_dir=output_dir)
        self.family_done = False
        self._add_family(trainer)
        self.tailer = Tailer(run.events)
        self.tailer.seek_end()
        self._mute_mtime = 0.0
        self.added: list[Rule] = []
        """The rules of control/alerts.yaml, as last read."""
        self._added_stamp: tuple | None = None

    def _add_family(self, trainer: str | None) -> None:
        if self.family_done or not self.builtins or not trainer or trainer == "script":
            return
        from cockpit.trainers.registry import KNOWLEDGE

        known = KNOWLEDGE.get(trainer)
        self.engine.add_rules(builtin_rules(known.family if known else None))
        self.family_done = True

    def _read_mutes(self) -> None:
        path = self.run.control / MUTE_FILE
        try:
            mtime = path.stat().st_mtime
        except OSError:
            self.engine.muted = set()
            return
        if mtime != self._mute_mtime:
            self._mute_mtime = mtime
            try:
                self.engine.muted = set(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                pass

    def _read_added(self) -> None:
        """Rules added at run time. Each rule is checked on its own: a bad one becomes a journal
        warning (once per change of the file) and the others still apply; a rule that stays the
        same keeps its state (streaks, when it last fired) across re-reads."""
        path = self.run.control / ADDED_FILE
        try:
            st = path.stat()
            stamp: tuple | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp == self._added_stamp:
            return
        self._added_stamp = stamp
        rules: list[Rule] = []
        if stamp is not None:
            import yaml

            where = f"control/{ADDED_FILE}"
            try:
                raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                self._added_warning(f"{where}: not readable ({type(exc).__name__}) — the rules "
                                    "added before stay on; fix the file")
                return
            if isinstance(raw, dict):
                raw = raw.get("alerts")
            if raw is not None and not isinstance(raw, list):
                self._added_warning(f"{where}: must be a list of rules like "
                                    "{metric: loss, above: 5, do: [notify]}")
                raw = []
            for i, item in enumerate(raw or []):
                try:
                    rules += parse_rules([item], where=f"{where}[{i}]")
                except CockpitError as exc:
                    for line in str(exc).splitlines():
                        self._added_warning(line.replace(f"{where}[{i}][0]", f"{where}[{i}]"))
        before = {_rule_identity(r): r for r in self.added}
        kept = [before.pop(_rule_identity(r), r) for r in rules]
        gone = {id(r) for r in before.values()}
        had = {id(r) for r in self.added}
        self.engine.rules = [r for r in self.engine.rules if id(r) not in gone]
        self.engine.add_rules(r for r in kept if id(r) not in had)
        self.added = kept

    def _added_warning(self, message: str) -> None:
        self.jw.write(journal.warning(f"added alert rule: {message}", code="alert_rule"))

    def poll(self, *, started_at: float, live: bool) -> None:
        self._read_mutes()
        self._read_added()
        records = list(self.tailer.poll())
        for rec in records:
            if rec.kind == journal.RUN_STARTED:
                self._add_family(str(rec.data.get("trainer") or ""))
        for f in self.engine.feed(records) + self.engine.tick(started_at=started_at, live=live):
            self.act(f)

    def ended(self, record: journal.Record) -> None:
        """The run is ending: rules on run_ended fire before the final line is written."""
        self._read_mutes()
        self._read_added()
        for f in self.engine.feed([record]):
            self.act(f)

    def act(self, f: Firing) -> None:
        results: list[dict[str, Any]] = []
        payload = {"run": self.run.name, "rule": f.rule.name, "key": f.key, "value": f.value, "step": f.step,
                   "message": f.message}
        for action in f.rule.do:
            if action == "stop_save":
                self.run.request(Request.STOP_SAVE)
                results.append({"action": "stop_save", "ok": True, "detail": "asked the trainer to save and stop"})
            elif action == "notify":
                if not self.notify:
                    results.append({"action": "notify", "ok": False,
                                    "detail": "no notify targets — add cockpit.notify (see docs/alerts.md)"})
                for kind, value in self.notify.items():
                    target = resolve_target(value, self.secrets)
                    if not target:
                        results.append({"action": f"notify:{kind}", "ok": False,
                                        "detail": f"{value} is not set" if value.startswith("env:") else "no target"})
                        continue
                    ok, detail = send(kind, target, payload)
                    results.append({"action": f"notify:{kind}", "ok": ok, "detail": detail})
        self.jw.write(journal.alert(f.rule.name, f.message, key=f.key, value=f.value, step=f.step,
                                    actions=results, builtin=f.rule.builtin))


def _rule_identity(rule: Rule) -> tuple:
    return (rule.name, rule.condition, rule.value, rule.metric, rule.count, rule.do, rule.mode,
            rule.states, rule.every_s, rule.tolerance)


def _output_dir(run: Any) -> Path | None:
    from cockpit.run.script import script_section

    if script_section(run) is not None:
        section = script_section(run) or {}
        return Path(str(section.get("cwd") or run.path))
    try:
        import yaml

        cfg = yaml.safe_load(run.run_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, ValueError):
        return run.output
    return Path(str(cfg.get("output_dir") or run.output)) if isinstance(cfg, dict) else run.output
