"""The alert rules of one run as a person sees them — where each comes from, whether it is muted,
when it last fired and with what — and the two things a UI changes while the run goes: mutes
(`control/mute.json`) and rules added at run time (`control/alerts.yaml`). The supervisor's
`Alerter` reads both files on every poll, so a change made here reaches the run with nobody
restarting anything.

No Textual here: the alerts tab shows an `AlertBoard`; the files are read in a worker
(`read_sources`) and the journal's `alert` records are fed on the UI thread (`feed`).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.alerts.alerter import ADDED_FILE, MUTE_FILE, builtins_on, user_alerts
from cockpit.alerts.rules import Rule, builtin_rules, parse_rules
from cockpit.errors import CockpitError
from cockpit.files import read_text_regular
from cockpit.run import journal
from cockpit.run.folder import RunFolder, write_atomic
from cockpit.run.section import cockpit_section
from cockpit.trainers.knowledge import SCRIPT_TRAINER

USER_FILE = "~/.config/cockpit/alerts.yaml"
ADDED_WHERE = f"control/{ADDED_FILE}"
SCAN_CHUNK = 8 * 2**20


@dataclass
class Fired:
    """The newest firing of one rule, and how many there were."""

    t: float
    step: int | None
    message: str
    value: Any
    actions: list[dict[str, Any]]
    count: int = 1

    def outcome(self) -> str:
        """What the actions did, in a few words: `notify:webhook ok, stop_save ok`."""
        parts = [f"{a.get('action')} {'ok' if a.get('ok') else 'failed: ' + str(a.get('detail') or '?')}"
                 for a in self.actions]
        return ", ".join(parts) or "journal"


@dataclass
class RuleEntry:
    """One line of the alerts tab."""

    name: str
    source: str
    """preset, user (~/.config/cockpit/alerts.yaml), added (at run time) or built-in; `fired` for
    a rule the journal names that none of these holds any more."""
    rule: Rule | None
    muted: bool
    fired: Fired | None

    @property
    def actions(self) -> str:
        return ", ".join(self.rule.do) if self.rule is not None else "?"


@dataclass
class RuleSources:
    """What the run's files say about its rules, read in one go (in a worker)."""

    preset: list[Rule] = field(default_factory=list)
    user: list[Rule] = field(default_factory=list)
    added: list[Rule] = field(default_factory=list)
    builtins: bool = True
    trainer: str | None = None
    """run.yaml's trainer (`script` for a script run: the journal names the real one)."""
    muted: frozenset[str] = frozenset()
    problems: list[str] = field(default_factory=list)


def _parse(raw: Any, where: str, problems: list[str]) -> list[Rule]:
    """Rules one by one, so a bad one is named and the others still listed (as the supervisor
    does for added rules)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(f"{where} must be a list of rules")
        return []
    out: list[Rule] = []
    for i, item in enumerate(raw):
        try:
            out += parse_rules([item], where=f"{where}[{i}]")
        except CockpitError as exc:
            problems += [line.replace(f"{where}[{i}][0]", f"{where}[{i}]") for line in str(exc).splitlines()]
    return out


def read_added(run: RunFolder) -> list[Any]:
    """control/alerts.yaml as a list of rule mappings ([] when there is none)."""
    import yaml

    from cockpit.files import safe_load

    path = run.control / ADDED_FILE
    try:
        raw = safe_load(read_text_regular(path))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CockpitError(f"{ADDED_WHERE}: not readable ({type(exc).__name__}) — fix or delete it") from None
    if isinstance(raw, dict):
        raw = raw.get("alerts")
    return list(raw) if isinstance(raw, list) else []


def read_mutes(run: RunFolder) -> frozenset[str]:
    try:
        names = json.loads(read_text_regular(run.control / MUTE_FILE))
    except (OSError, ValueError):
        return frozenset()
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def read_sources(run: RunFolder) -> RuleSources:
    """The rules the supervisor evaluates for this run, from the same files it reads."""
    problems: list[str] = []
    cfg = run.config()
    section = cockpit_section(run)
    user = user_alerts()
    try:
        added_raw = read_added(run)
    except CockpitError as exc:
        problems.append(str(exc))
        added_raw = []
    return RuleSources(
        preset=_parse(section.alerts, "cockpit.alerts", problems),
        user=_parse(user.get("alerts"), f"{USER_FILE}: alerts", problems),
        added=_parse(added_raw, ADDED_WHERE, problems),
        builtins=builtins_on(section, user),
        trainer=str(cfg.get("trainer")) if cfg.get("trainer") else None,
        muted=read_mutes(run), problems=problems)


class RulesWatch:
    """The watching of a run's alert-rule files, owned here: the files `read_sources` reads, stat
    only until one of them changed. A follower (`metrics/follow.RunFollower`, for the live screen)
    holds one and asks it; it never names the files itself."""

    def __init__(self, run: RunFolder) -> None:
        self.run = run
        self._stamp = sources_stamp(run)

    def first(self) -> RuleSources:
        """The rules as they are now."""
        return read_sources(self.run)

    def changed(self) -> RuleSources | None:
        """The rules again when one of their files changed since the last look, else None."""
        stamp = sources_stamp(self.run)
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        return read_sources(self.run)

    def alerts(self) -> list[journal.Record]:
        """The journal's `alert` records so far."""
        return alert_records(self.run.events)


def sources_stamp(run: RunFolder) -> tuple:
    """Changes whenever one of the files `read_sources` reads changes (stat only)."""
    from cockpit.paths import config_dir

    out: list[tuple[int, int, int] | None] = []
    for p in (run.run_yaml, run.control / ADDED_FILE, run.control / MUTE_FILE, config_dir() / "alerts.yaml"):
        try:
            st = p.stat()
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def family_of(trainer: str | None) -> str | None:
    from cockpit.trainers.registry import KNOWLEDGE

    known = KNOWLEDGE.get(trainer) if trainer else None
    return known.family if known else None


class AlertBoard:
    """The rules of one run with their last firing. Feed it journal records; `entries` lists the
    rules in the order the tab shows them."""

    def __init__(self) -> None:
        self.sources = RuleSources()
        self.fired: dict[str, Fired] = {}
        self.records: deque[journal.Record] = deque(maxlen=200)
        """The newest `alert` records, oldest first."""
        self.version = 0
        """Goes up whenever what `entries` returns may have changed."""

    def set_sources(self, sources: RuleSources) -> None:
        self.sources = sources
        self.version += 1

    def feed(self, records: list[journal.Record]) -> list[journal.Record]:
        """Take a batch of records; returns the `alert` ones (newest last)."""
        alerts = [r for r in records if r.kind == journal.ALERT]
        for rec in alerts:
            self.records.append(rec)
            name = str(rec.data.get("rule") or "?")
            before = self.fired.get(name)
            self.fired[name] = Fired(rec.t, rec.step, str(rec.data.get("message") or name),
                                     rec.data.get("value"), list(rec.data.get("actions") or []),
                                     (before.count + 1) if before else 1)
        if alerts:
            self.version += 1
        return alerts

    def rules(self, trainer: str | None) -> list[tuple[str, Rule]]:
        """(source, rule) in the order the supervisor adds them, built-ins last. `trainer`: the
        one the journal reports (a script run's real trainer), else run.yaml's."""
        s = self.sources
        out = [("user", r) for r in s.user] + [("preset", r) for r in s.preset] + \
              [("added", r) for r in s.added]
        trainer = trainer or s.trainer
        if s.builtins and trainer and trainer != SCRIPT_TRAINER:
            out += [("built-in", r) for r in builtin_rules(family_of(trainer))]
        return out

    def entries(self, trainer: str | None) -> list[RuleEntry]:
        out, seen = [], set()
        for source, rule in self.rules(trainer):
            seen.add(rule.name)
            out.append(RuleEntry(rule.name, source, rule, rule.name in self.sources.muted,
                                 self.fired.get(rule.name)))
        for name, fired in self.fired.items():
            if name not in seen:
                out.append(RuleEntry(name, "fired", None, name in self.sources.muted, fired))
        return out


def write_mutes(run: RunFolder, names: set[str] | frozenset[str]) -> None:
    """control/mute.json, replaced whole (the supervisor reads it on every poll)."""
    run.control_dir()
    write_atomic(run.control / MUTE_FILE, json.dumps(sorted(names)) + "\n")


def set_muted(run: RunFolder, name: str, muted: bool) -> frozenset[str]:
    """Mute or unmute one rule by name; returns the muted names now."""
    names = set(read_mutes(run))
    if muted:
        names.add(name)
    else:
        names.discard(name)
    write_mutes(run, names)
    return frozenset(names)


def notify_targets(run: RunFolder) -> list[str]:
    """The kinds of notify target the supervisor would send to (`webhook`, `ntfy`...), from the
    files it reads them from; none means a `notify` action can only fail."""
    from cockpit.alerts.notify import parse_notify

    kinds: list[str] = []
    for notify in (user_alerts().get("notify"), cockpit_section(run).notify):
        try:
            kinds += [k for k in parse_notify(notify) if k not in kinds]
        except (CockpitError, AttributeError):
            continue
    return kinds


def add_rule(run: RunFolder, item: dict[str, Any]) -> Rule:
    """Check one rule and append it to control/alerts.yaml (atomically); the supervisor picks it
    up at its next poll. CockpitError names what is wrong with it."""
    from cockpit.files import dump_yaml

    (rule,) = parse_rules([item], where="the new rule")
    existing = read_added(run)
    for other in _parse(existing, ADDED_WHERE, []):
        if other.name == rule.name:
            raise CockpitError(f"'{rule.name}' is already watched — mute or change it in the alerts tab")
    run.control_dir()
    write_atomic(run.control / ADDED_FILE, dump_yaml({"alerts": [*existing, dict(item)]}))
    return rule


def alert_records(path: Path) -> list[journal.Record]:
    """The `alert` records of a whole journal, found by a byte search (alerts are rare; a long
    run's journal is not decoded again just for them)."""
    out: list[journal.Record] = []
    try:
        fh = path.open("rb")
    except OSError:
        return out
    with fh:
        rest = b""
        while True:
            chunk = fh.read(SCAN_CHUNK)
            if not chunk:
                break
            data = rest + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            body, rest = data[:cut], data[cut + 1:]
            if b'"alert"' not in body:
                continue
            for line in body.split(b"\n"):
                if b'"alert"' in line:
                    try:
                        rec = journal.decode(line)
                    except journal.DecodeError:
                        continue
                    if rec.kind == journal.ALERT:
                        out.append(rec)
    return out
