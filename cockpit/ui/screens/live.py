"""A run folder followed live (or a finished one shown from its first line).

A thread worker reads the whole journal once (building the RunData off the UI
thread), then polls the journal and stdout.log every 0.02 s (a poll that finds
nothing is one open + fstat) and status.json every second, and posts one message per
poll with whatever was new.

Alerts: the run's rules (`cockpit.alerts.board`: the files the supervisor reads, re-read when
they change) and every `alert` record fill the alerts tab and the alert bar; a firing seen while
attached rings the terminal bell and marks the bar and the plot of its metric. `a` adds a rule
(on the focused plot's metric) through control/alerts.yaml; the alerts tab mutes rules through
control/mute.json.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TabPane
from textual.worker import get_current_worker

from cockpit.alerts import board as alert_board
from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData, load_journal
from cockpit.run.folder import LIVE_STATES, Request, RunFolder
from cockpit.run.journal import Record
from cockpit.run.tailer import LineTailer
from cockpit.trainers.knowledge import SCRIPT_TRAINER
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.screens.run_view import RunView
from cockpit.ui.text import printable
from cockpit.ui.widgets.run.alert_bar import AlertBar
from cockpit.ui.widgets.run.alerts_list import AlertsList, RulesTable
from cockpit.ui.widgets.run.output_log import OutputLog
from cockpit.ui.widgets.run.plot_grid import PlotGrid

OUTPUT_TAIL_BYTES = 256 * 1024
OUTPUT_MAX_LINES = 2000
STATUS_EVERY_S = 1.0
RING_S = 4.0
"""How long the bar and a plot stay marked after an alert fired."""


_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
"""Terminal control sequences (tqdm's cursor-up between nested bars, colours): not text."""
_PROGRESS_END = re.compile(r"\[\d+:\d\d(?::\d\d)?(?:<[^\]]*)?(?:,[^\]]*)?\]")
"""Where a tqdm state ends: its `[00:01<00:04, 23.69it/s]` (or `[00:00, 64 examples/s]`)."""


def _output_lines(raw: list[bytes]) -> list[str]:
    """stdout.log lines for the Log widget. A line redrawn with \\r (a progress bar) shows its
    last state, on its own line: text written before the first \\r (the end of a table) keeps
    its own line, and text another writer put right after the bar (rich starts a table there)
    goes to the next one. A bar cleared at the end leaves nothing."""
    out = []
    for line in raw:
        text = _CSI.sub("", line.decode("utf-8", errors="replace").rstrip("\r"))
        if "\r" not in text:
            out.append(printable(text))
            continue
        parts = text.split("\r")
        first, last = parts[0], parts[-1]
        if first.strip() and not _PROGRESS_END.search(first):
            out.append(printable(first))
        end = _PROGRESS_END.search(last)
        if end and last[end.end():].strip():
            out.append(printable(last[:end.end()]))
            out.append(printable(last[end.end():]))
        elif last.strip():
            out.append(printable(last))
    return out


class LiveRunScreen(RunView):
    HELP_TITLE = "Live run"
    CSS_PATH = "alerts.tcss"
    BINDINGS = [
        Binding("s", "stop(True)", "Stop & save", id="live.stop_save"),
        Binding("K", "stop(False)", "Force stop", id="live.force_stop"),
        Binding("u", "resume", "Resume", id="live.resume"),
        Binding("w", "export", "Export CSV+PNG", show=False,
                tooltip="metrics.csv and panels.png into the run folder", id="live.export"),
        Binding("a", "add_rule", "Add alert rule", show=False,
                tooltip="Alert when the focused plot's metric crosses a threshold", id="live.add_rule"),
    ]

    @dataclass
    class Loaded(Message):
        """The whole journal so far, read by the worker."""

        data: RunData
        """The run as its journal tells it so far."""
        output: list[str]
        """The tail of stdout.log, as lines for the output tab."""
        state: str | None
        """The run's state (status.json, corrected when the supervisor is gone)."""
        resumable: bool = False
        """Ended, not finished, with a complete checkpoint to go on from."""
        rules: alert_board.RuleSources | None = None
        """The alert rules the supervisor reads."""
        alerts: list[Record] = field(default_factory=list)
        """The journal's `alert` records so far (history: no bell)."""

    @dataclass
    class Polled(Message):
        """What one poll found: new records, new output lines, the status if it changed (and
        then whether the run can be resumed), the alert rules if their files changed."""

        records: list[Record]
        """Journal records appended since the last poll."""
        output: list[str]
        """stdout.log lines appended since the last poll."""
        state: str | None
        """The new state, or None when it did not change."""
        resumable: bool = False
        """With a new state: whether `u` can resume the run."""
        rules: alert_board.RuleSources | None = None
        """The alert rules, when one of their files changed."""

    @dataclass
    class Failed(Message):
        """Reading the run folder failed (e.g. written by a newer cockpit)."""

        message: str
        """What went wrong, with the fix."""

    def __init__(self, run_path: str | Path, *, poll_interval: float = 0.02) -> None:
        super().__init__()
        self.run = RunFolder(Path(run_path))
        self.poll_interval = poll_interval
        self.state: str | None = None
        """The supervisor's view (status.json), corrected when the supervisor is gone."""
        self.resumable = False
        """Ended, not finished, with a complete checkpoint to go on from: `u` is offered."""
        self.board = alert_board.AlertBoard()
        """The run's alert rules and their firings (the alerts tab and the alert bar read it)."""

    def checkpoints_source(self) -> tuple[str | None, bool]:
        return str(self.run.path), True

    def compose_output_tab(self) -> ComposeResult:
        with TabPane("Output ⁴", id="output"):
            yield OutputLog(max_lines=OUTPUT_MAX_LINES, id="output-log")

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = self.run.name
        self.query_one(AlertBar).board = self.board
        self.query_one(AlertsList).board = self.board
        self.follow()

    def header_state(self) -> str | None:
        return self.state

    def header_trainer(self, data: RunData, keys: list[str]) -> str | None:
        """Before the journal names it (or when the run failed before it could), the trainer
        the run was launched with (run.yaml)."""
        return super().header_trainer(data, keys) or self.asked_trainer

    @property
    def asked_trainer(self) -> str | None:
        if not hasattr(self, "_asked_trainer"):
            name = self.run.config().get("trainer")  # a broken run.yaml leaves the trainer unsaid
            self._asked_trainer = str(name) if name and name != SCRIPT_TRAINER else None
        return self._asked_trainer

    @property
    def resume_key(self) -> str | None:
        """The key Resume is bound to here (remaps included), for advice shown on screen."""
        for bindings in self._bindings.key_to_bindings.values():
            for b in bindings:
                if b.action == "resume":
                    return self.app.get_key_display(b)
        return None

    # -- the tail worker -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="tail", exit_on_error=False)
    def follow(self) -> None:
        from cockpit.run.summaries import effective_state

        worker = get_current_worker()
        run = self.run

        def read_state() -> str | None:
            try:
                return effective_state(run)[0]
            except CockpitError as exc:
                self.post_message(self.Failed(str(exc)))
                return None

        def can_resume(state: str | None) -> bool:
            from cockpit.launch.plan import resume_checkpoint

            if state is None or state in LIVE_STATES or state == "finished":
                return False
            return resume_checkpoint(run) is not None  # where `cockpit resume` looks

        data, tailer = load_journal(run.events, run.name)
        out = LineTailer(run.stdout_log)
        try:
            size = run.stdout_log.stat().st_size
        except OSError:
            size = 0
        skip_first = size > OUTPUT_TAIL_BYTES
        out.offset = max(0, size - OUTPUT_TAIL_BYTES)
        first = out.poll()
        if skip_first and first:
            first = first[1:]  # the first line was cut in the middle
        state = read_state()
        rules_stamp = alert_board.sources_stamp(run)
        self.post_message(self.Loaded(data, _output_lines(first[-OUTPUT_MAX_LINES:]), state,
                                      can_resume(state), alert_board.read_sources(run),
                                      alert_board.alert_records(run.events)))
        last_status = time.monotonic()
        said_trouble: str | None = None

        def journal_trouble() -> None:
            """status.json's journal_error, said once each time it changes (the supervisor sets it
            while events.jsonl cannot be written: what this screen shows is then behind)."""
            nonlocal said_trouble
            try:
                trouble = run.read_status().journal_error or None
            except CockpitError:
                return
            if trouble != said_trouble:
                said_trouble = trouble
                if trouble:
                    self.app.call_from_thread(
                        self.notify, f"the journal cannot be written ({' '.join(trouble.split())[:200]}) — "
                        "what is shown is behind the training until it can be", severity="warning",
                        timeout=30, markup=False)

        journal_trouble()
        while not worker.is_cancelled:
            time.sleep(self.poll_interval)
            records = tailer.poll()
            lines = _output_lines(out.poll())
            new_state = rules = None
            if time.monotonic() - last_status >= STATUS_EVERY_S:
                last_status = time.monotonic()
                current = read_state()
                if current != state:
                    state = new_state = current
                journal_trouble()
                stamp = alert_board.sources_stamp(run)
                if stamp != rules_stamp:
                    rules_stamp, rules = stamp, alert_board.read_sources(run)
            if records or lines or new_state is not None or rules is not None:
                resumable = can_resume(new_state) if new_state is not None else False
                self.post_message(self.Polled(records, lines, new_state, resumable, rules))

    def on_live_run_screen_loaded(self, message: Loaded) -> None:
        self.sources = [message.data]
        self.state = message.state or message.data.state
        self.resumable = message.resumable
        self.refresh_bindings()
        if message.rules is not None:
            self.board.set_sources(message.rules)
        self.board.feed(message.alerts)
        if message.output:
            self.query_one("#output-log", OutputLog).add_lines(message.output)
        for note in message.data.notes:
            self.notify(note, severity="warning")
        self.request_redraw()

    def on_live_run_screen_polled(self, message: Polled) -> None:
        if not self.sources:
            return
        self.sources[0].apply(message.records)
        if message.rules is not None:
            self.board.set_sources(message.rules)
            self.request_redraw()
        fired = self.board.feed(message.records)
        if fired:
            self._ring(fired)
        if message.state is not None:
            self.state = message.state
            self.resumable = message.resumable
            self.refresh_bindings()
        if message.output:
            self.query_one("#output-log", OutputLog).add_lines(message.output)
        if message.records:
            self.request_redraw()

    def on_live_run_screen_failed(self, message: Failed) -> None:
        self.notify(message.message, severity="error", timeout=10)

    # -- alerts ----------------------------------------------------------------------------------

    def _ring(self, fired: list) -> None:
        """Alerts fired while attached: the bell, a notification, and for a few seconds the bar
        and the plots of the metrics they are about marked."""
        self.app.bell()
        for rec in fired[-3:]:
            self.notify(str(rec.data.get("message") or ""), title=f"alert: {rec.data.get('rule')}",
                        severity="warning", timeout=8)
        bar = self.query_one(AlertBar)
        bar.add_class("-ring")
        keys = {str(rec.data.get("key") or "") for rec in fired}
        marked = []
        if self.sources:
            available = self.sources[0].store.keys()
            for plot in self.query_one(PlotGrid).plots():
                if keys & set(plot.panel.resolve(available)):
                    plot.add_class("-alerting")
                    marked.append(plot)

        def calm() -> None:
            bar.remove_class("-ring")
            for plot in marked:
                plot.remove_class("-alerting")

        self.set_timer(RING_S, calm)
        self.request_redraw()

    def action_add_rule(self) -> None:
        """Alert when a metric crosses a threshold: the focused plot's metrics first."""
        from cockpit.ui.screens.add_rule import AddRuleScreen

        if not self.sources or not self.sources[0].store.keys():
            self.notify("no metrics logged yet — a rule needs a metric to watch", severity="warning")
            return
        store = self.sources[0].store
        keys = [k for k in store.keys() if k != "epoch"]
        plot = self.query_one(PlotGrid).focused_plot()
        first = plot.panel.resolve(keys) if plot is not None else []
        metrics = [*first, *(k for k in keys if k not in first)]
        latest = {k: store.latest(k) for k in metrics}

        def chosen(item: dict | None) -> None:
            if item:
                self._add_rule(item)

        self.app.push_screen(AddRuleScreen(metrics, latest, notify_targets=alert_board.notify_targets(self.run),
                                           live=self.state in LIVE_STATES), chosen)

    @work(thread=True, group="alert-rules", exit_on_error=False)
    def _add_rule(self, item: dict) -> None:
        try:
            rule = alert_board.add_rule(self.run, item)
        except (CockpitError, OSError) as exc:
            self.app.call_from_thread(self.notify, str(exc), title="cannot add the rule",
                                      severity="error", timeout=10)
            return
        sources = alert_board.read_sources(self.run)
        from cockpit.ui.screens.add_rule import when_checked

        self.app.call_from_thread(self._rules_changed, sources,
                                  f"watching {rule.name}: {when_checked(self.state in LIVE_STATES)}")

    def on_rules_table_mute_toggled(self, message: RulesTable.MuteToggled) -> None:
        self._mute(message.name, message.muted)

    @work(thread=True, group="alert-rules", exit_on_error=False)
    def _mute(self, name: str, muted: bool) -> None:
        try:
            alert_board.set_muted(self.run, name, muted)
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"cannot write {self.run.control}: {exc}",
                                      severity="error", timeout=10)
            return
        self.app.call_from_thread(self._rules_changed, alert_board.read_sources(self.run),
                                  f"{'muted' if muted else 'unmuted'}: {name}")

    def _rules_changed(self, sources: alert_board.RuleSources, note: str) -> None:
        self.board.set_sources(sources)
        self.notify(note, timeout=4)
        self.request_redraw()

    # -- control -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Stop keys only while the run is live; Resume only when there is something to resume
        (hidden from the footer and the palette otherwise)."""
        if action == "stop":
            return self.state in LIVE_STATES
        if action == "resume":
            return self.resumable and self.state not in LIVE_STATES
        return super().check_action(action, parameters)

    def action_stop(self, save: bool) -> None:
        if self.state not in LIVE_STATES:
            self.notify(f"{self.run.name} is not running ({self.state or 'unknown'}) — nothing to stop")
            return
        if save:
            question = f"Stop {self.run.name} after saving a checkpoint at the next step?"
        else:
            question = (f"Force-stop {self.run.name} now? Its processes get SIGTERM, then SIGKILL; "
                        "steps since the last checkpoint are lost.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._control(Request.STOP_SAVE if save else Request.STOP_FORCE)

        self.app.push_screen(ConfirmScreen(question, yes="Stop" if save else "Force stop",
                                           danger=not save), answered)

    def action_resume(self) -> None:
        if self.state in LIVE_STATES:
            self.notify(f"{self.run.name} is still {self.state} — stop it before resuming")
            return

        from cockpit.launch.plan import resume_checkpoint

        def answered(yes: bool | None) -> None:
            if yes:
                self._control("resume")

        try:
            checkpoint = resume_checkpoint(self.run)
        except Exception:  # noqa: BLE001 - the dialog still asks; the resume says what is wrong
            checkpoint = None
        where = f"{checkpoint.name} ({checkpoint})" if checkpoint is not None else \
            "its newest complete checkpoint"
        self.app.push_screen(ConfirmScreen(f"Resume {self.run.name} from {where}?", yes="Resume"),
                             answered)

    def action_export(self) -> None:
        self.notify(f"exporting {self.run.name}…", timeout=2)
        self._export()

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self) -> None:
        from cockpit.ui.exporting import export_and_notify

        # The RunData on screen (copied on the UI thread), so the files hold what the plots do.
        export_and_notify(self, [(self.run.path, self.run.path, "", self.detail)])

    def _resumed(self) -> None:
        """A new attempt is starting: the old end is history at once (the banner would stay
        until the runner's first journal line, seconds away); its start adds a 'resumed from'
        entry to the alerts."""
        if self.sources:
            self.sources[0].ended = None
            self.sources[0].version += 1
        self.state = "starting"
        self.resumable = False
        self.refresh_bindings()
        self.request_redraw()

    @work(thread=True, group="control", exit_on_error=False)
    def _control(self, what: Request | Literal["resume"]) -> None:
        """A stop request (written by `launch.stop`), or a resume."""
        from cockpit.launch import plan as launch

        try:
            if what is Request.STOP_SAVE:
                launch.stop(self.run, save=True)
                msg = "asked to save a checkpoint and stop at the next step"
            elif what is Request.STOP_FORCE:
                status = launch.stop(self.run, save=False)
                msg = f"force-stopped ({status.state})"
            else:
                launch.resume(self.run)
                msg = "resumed from the newest complete checkpoint"
                self.app.call_from_thread(self._resumed)
        except CockpitError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error", timeout=8)
            return
        except OSError as exc:
            self.app.call_from_thread(self.notify, f"{self.run.name}: {exc}", severity="error",
                                      timeout=8)
            return
        self.app.call_from_thread(self.notify, f"{self.run.name}: {msg}")
