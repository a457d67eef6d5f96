"""The supervisor's side of alerts: read the rules (the preset's, the user's defaults, rules added
at run time), tail the journal, carry out what fires, and write one `alert` line per firing.
Checked with no UI attached; a failing rule or a refusing URL is a journal line, never the run's end."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cockpit.alerts.engine import AlertEngine, Firing
from cockpit.alerts.notify import END_WAIT_S, NOTIFY_TIMEOUT_S, Notifier, parse_notify, resolve_target, send_all
from cockpit.alerts.rules import Rule, builtin_rules, parse_rules
from cockpit.errors import CockpitError
from cockpit.files import read_text_regular, safe_load
from cockpit.run import journal
from cockpit.run.folder import Request
from cockpit.run.section import CockpitSection, cockpit_section, output_dir
from cockpit.trainers.knowledge import SCRIPT_TRAINER

MUTE_FILE = "mute.json"
"""control/mute.json: rule names muted from a UI; read on every poll."""
ADDED_FILE = "alerts.yaml"
"""control/alerts.yaml: rules added while the run goes (from a UI): a list of rules written like
`cockpit.alerts` (or `{alerts: [...]}`), re-read whenever the file changes."""


def user_alerts(problems: list[str] | None = None) -> dict[str, Any]:
    """The user's defaults (`~/.config/cockpit/alerts.yaml`: notify targets and rules for every run,
    script runs included); {} when there is none. A broken one is {} too (a run never fails over
    it), with one line naming it appended to `problems`, so it is never ignored in silence."""
    import yaml

    from cockpit.paths import config_dir

    path = config_dir() / "alerts.yaml"
    try:
        text = read_text_regular(path)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        if problems is not None:
            problems.append(f"{path}: cannot read it ({type(exc).__name__}) — its rules and notify targets are off")
        return {}
    try:
        data = safe_load(text) or {}
    except (yaml.YAMLError, CockpitError) as exc:
        if problems is not None:
            where = getattr(exc, "problem_mark", None)
            at = f" (line {where.line + 1})" if where is not None else ""
            problems.append(f"{path}: not valid YAML{at} — its rules and notify targets are off until it is fixed")
        return {}
    if not isinstance(data, dict):
        if problems is not None:
            problems.append(f"{path}: must be a mapping like {{notify: ..., alerts: [...]}} — its rules are off")
        return {}
    return data


class Alerter:
    """Feeds the engine the journal records the supervisor hands it (`poll`, from its one tail of
    the journal), carries out the actions and writes one `alert` line per firing. A bad rule or a
    refusing URL becomes a journal line; nothing here can stop training except a stop_save action."""

    def __init__(self, run: Any, jw: journal.JournalWriter, *, trainer: str | None) -> None:
        self.run = run
        self.jw = jw
        section = cockpit_section(run)
        broken: list[str] = []
        user = user_alerts(broken)
        for line in broken:
            jw.write(journal.warning(f"alert rules: {line}", code="alert_rule"))
        self.secrets = run.path / "control" / "notify.secret.json"
        rules: list[Rule] = []
        self.notify: dict[str, str] = {}
        for where, notify, alerts in (("~/.config/cockpit/alerts.yaml", user.get("notify"), user.get("alerts")),
                                      ("cockpit", section.notify, section.alerts)):
            try:
                self.notify.update(parse_notify(notify, where=f"{where}.notify"))
                rules += parse_rules(alerts, where=f"{where}.alerts")
            except CockpitError as exc:
                for line in str(exc).splitlines():
                    jw.write(journal.warning(f"alert rules: {line}", code="alert_rule"))
        self.builtins = builtins_on(section, user)
        output_dir = _output_dir(run, section)
        self.engine = AlertEngine(rules, output_dir=output_dir)
        self.family_done = False
        self._add_family(trainer)
        self._mute_mtime = 0.0
        self.added: list[Rule] = []
        """The rules of control/alerts.yaml, as last read."""
        self._added_stamp: tuple | None = None
        self.notifier = Notifier()
        self.notify_timeout = NOTIFY_TIMEOUT_S

    def _add_family(self, trainer: str | None) -> None:
        if self.family_done or not self.builtins or not trainer or trainer == SCRIPT_TRAINER:
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
                self.engine.muted = set(json.loads(read_text_regular(path)))
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
                raw = safe_load(read_text_regular(path))
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

    def poll(self, records: Sequence[journal.Record], *, started_at: float, live: bool) -> None:
        """The journal's new records, then the rules on time (a stall, a run that never started)."""
        self._read_mutes()
        self._read_added()
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
        """Carry out a firing. stop_save is done here; notifications go to the worker thread, which
        writes the alert line once every target has answered or timed out (NOTIFY_TIMEOUT_S at
        most): nothing here waits on the network."""
        results: list[dict[str, Any]] = []
        targets: list[tuple[str, str]] = []
        payload = {"run": self.run.name, "rule": f.rule.name, "key": f.key, "value": f.value, "step": f.step,
                   "message": f.message}
        for action in f.rule.do:
            if action == "stop_save":
                try:
                    # an early stop ends the training, not the script: its own ending (final save,
                    # evaluate, push_to_hub) runs, as after transformers' EarlyStoppingCallback
                    self.run.request(Request.STOP_SAVE, finish_script=True)
                    results.append({"action": "stop_save", "ok": True, "detail": "asked the trainer to save and stop"})
                except OSError as exc:
                    results.append({"action": "stop_save", "ok": False,
                                    "detail": f"could not leave the request: {type(exc).__name__}"})
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
                    targets.append((kind, target))

        def line(sent: list[dict[str, Any]]) -> journal.Record:
            return journal.alert(f.rule.name, f.message, key=f.key, value=f.value, step=f.step,
                                 actions=results + sent, builtin=f.rule.builtin)

        if not targets:
            self.jw.write(line([]))
            return

        fired = time.monotonic()
        said = threading.Lock()  # one line a firing: sent, or dropped, never both

        def write(sent: list[dict[str, Any]]) -> None:
            if said.acquire(blocking=False):
                self.jw.write(line(sent))

        def deliver() -> None:
            sent: list[dict[str, Any]] = []
            try:
                sent = send_all(targets, payload, self.notify_timeout)
                late = time.monotonic() - fired
                if late > self.notify_timeout + LATE_SLACK_S:  # it waited behind others: said, with how long
                    sent = [{**r, "detail": f"{r['detail']} (late: {late:.0f}s after the alert, behind other "
                                            "notifications)"} for r in sent]
            except Exception as exc:  # noqa: BLE001 - the alert line is written whatever happens
                sent = [{"action": f"notify:{kind}", "ok": False, "detail": type(exc).__name__} for kind, _ in targets]
            finally:
                write(sent)

        def drop(why: str) -> None:
            write([{"action": f"notify:{kind}", "ok": False, "detail": why} for kind, _ in targets])

        if not self.notifier.submit(deliver, drop):
            self.jw.write(line([{"action": f"notify:{kind}", "ok": False,
                                 "detail": "not sent: too many notifications waiting"} for kind, _ in targets]))

    def close(self, timeout: float | None = None) -> bool:
        """The run has ended: the notifications still going get up to `timeout` seconds
        (`END_WAIT_S` by default; those still queued are sent at once, not behind a hanging one),
        then each one not done is dropped with its journal line; True when all went out."""
        return self.notifier.drain(END_WAIT_S if timeout is None else timeout)


LATE_SLACK_S = 2.0
"""A notification's line says "late" when it went out more than its timeout and this after the alert
fired: it waited behind others in the queue."""


def _rule_identity(rule: Rule) -> tuple:
    return (rule.name, rule.condition, rule.value, rule.metric, rule.count, rule.do, rule.mode,
            rule.states, rule.every_s, rule.tolerance, rule.floor)


def _output_dir(run: Any, section: CockpitSection) -> Path | None:
    """The run's output_dir (`run.section.output_dir`); a script that has not said yet: its folder."""
    return output_dir(run, section) or (Path(section.script.cwd) if section.script else run.path)


def builtins_on(section: CockpitSection, user: dict[str, Any]) -> bool:
    """The built-in rules are on unless the run's section, else the user's alerts file, says
    `builtin_alerts: false`."""
    said = section.builtin_alerts if section.builtin_alerts is not None else user.get("builtin_alerts", True)
    return said is not False
