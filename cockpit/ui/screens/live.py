"""A run folder followed live (or a finished one shown from its first line).

The follower (`metrics.follow.RunFollower`) runs in a thread worker: it reads the whole journal
once (building the RunData off the UI thread), then the journal and stdout.log as they grow and
the run's state, and the screen gets one message per poll that found something. A long journal
is first looked at (its start and its newest steps, `first_look`): the screen draws that, saying
earlier steps are being read, and the whole read replaces it.

Alerts: the run's rules (`cockpit.alerts.board`: the files the supervisor reads, re-read when
they change) and every `alert` record fill the alerts tab and the alert bar; a firing seen while
attached rings the terminal bell and marks the bar and the plot of its metric. `a` adds a rule
(on the focused plot's metric) through control/alerts.yaml; the alerts tab mutes rules through
control/mute.json.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
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
from cockpit.metrics.follow import OUTPUT_MAX_LINES, POLL_S, Opened, RunFollower, Update, give_back_freed_memory
from cockpit.metrics.rundata import RunData
from cockpit.run.folder import LIVE_STATES, Request, RunFolder
from cockpit.trainers.knowledge import SCRIPT_TRAINER
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.screens.run_view import RunView
from cockpit.ui.widgets.run.alert_bar import AlertBar
from cockpit.ui.widgets.run.alerts_list import AlertsList, RulesTable
from cockpit.ui.widgets.run.output_log import OutputLog
from cockpit.ui.widgets.run.plot_grid import PlotGrid

RING_S = 4.0
"""How long the bar and a plot stay marked after an alert fired."""
FIRST_LOOK_WAIT_S = 2.0
"""The longest the whole read of a long journal waits for its first look to be drawn (a screen
covered by another draws nothing)."""


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
        """The whole journal so far, the end of stdout.log, the state and the alert rules: the
        follower's first read."""

        opened: Opened
        """What the follower read first."""

    @dataclass
    class Polled(Message):
        """What one poll found: new records, new output lines, the state (and then whether the
        run can be resumed) and the alert rules when they changed."""

        update: Update
        """What changed since the last poll."""

    def __init__(self, run_path: str | Path, *, poll_interval: float = POLL_S) -> None:
        super().__init__()
        self.run = RunFolder(Path(run_path))
        self.poll_interval = poll_interval
        self.state: str | None = None
        """The supervisor's view (status.json), corrected when the supervisor is gone."""
        self.resumable = False
        """Ended, not finished, with a complete checkpoint to go on from: `u` is offered."""
        self.board = alert_board.AlertBoard()
        """The run's alert rules and their firings (the alerts tab and the alert bar read it)."""
        self._first_look_drawn = threading.Event()
        """A long journal's first look is on screen: the follower reads the whole now."""

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
        worker = get_current_worker()
        from cockpit.alerts.board import RulesWatch  # pydantic models: not on a replay's way to its first frame

        follower = RunFollower(self.run, output=True, rules=RulesWatch(self.run), journal_errors=True,
                               resumable=self._can_resume, poll_s=self.poll_interval)
        first = follower.first_look()
        if first is not None:  # a long journal: its ends drawn first, then the whole read
            self.post_message(self.Loaded(first))
            del first  # not held here once the whole replaces it
            # The whole read waits for that frame (it would take turns with its drawing).
            self._first_look_drawn.wait(FIRST_LOOK_WAIT_S)
            if worker.is_cancelled:
                return
        self.post_message(self.Loaded(follower.open()))
        for update in follower.updates(lambda: worker.is_cancelled):
            self.post_message(self.Polled(update))
            # Not held here until the next one: the last batch of a run gone quiet would stay
            # alive (and its memory taken) for as long as the run is watched.
            del update

    def _can_resume(self, state: str | None) -> bool:
        """(In the follower's thread) Ended, not finished, with a checkpoint where `cockpit
        resume` looks."""
        from cockpit.launch.plan import resume_checkpoint

        if state is None or state in LIVE_STATES or state == "finished":
            return False
        return resume_checkpoint(self.run) is not None

    def _said(self, journal_error: str | None, problem: str | None) -> None:
        """status.json's journal_error (what is shown is then behind), and a state that cannot be
        read, each said when it changes."""
        if journal_error:
            self.notify(f"the journal cannot be written ({' '.join(journal_error.split())[:200]}) — "
                        "what is shown is behind the training until it can be", severity="warning",
                        timeout=30, markup=False)
        if problem:
            self.notify(problem, severity="error", timeout=10)

    def first_look_drawn(self) -> None:
        self._first_look_drawn.set()

    def on_live_run_screen_loaded(self, message: Loaded) -> None:
        opened = message.opened
        if self.sources and self.sources[0].tail_from is not None:
            # The first look, replaced: what it held goes back to the system once the plots
            # drop it (the follower gave back the whole read's before it was let go).
            self.call_after_refresh(give_back_freed_memory)
        self.sources = [opened.data]
        self.state = opened.state or opened.data.state
        self.resumable = opened.resumable
        self.refresh_bindings()
        if opened.first_look:  # the rest comes with the whole read, once
            self.request_redraw()
            return
        if opened.rules is not None:
            self.board.set_sources(opened.rules)
        self.board.feed(opened.alerts)
        if opened.output:
            self.query_one("#output-log", OutputLog).add_lines(opened.output)
        for note in opened.data.notes:
            self.notify(note, severity="warning")
        self._said(opened.journal_error, opened.problem)
        self.request_redraw()

    def on_live_run_screen_polled(self, message: Polled) -> None:
        if not self.sources:
            return
        update = message.update
        self.sources[0].apply(update.records)
        self._said(update.journal_error, update.problem)
        if update.rules is not None:
            self.board.set_sources(update.rules)
            self.request_redraw()
        fired = self.board.feed(update.records)
        if fired:
            self._ring(fired)
        if update.state is not None:
            self.state = update.state
            self.resumable = update.resumable
            self.refresh_bindings()
        if update.output:
            self.query_one("#output-log", OutputLog).add_lines(update.output)
        if update.records:
            self.request_redraw()

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
            # The step shown can be behind the one training (a progress line every 2 s): the stop
            # comes at the end of the step in progress, which may be a step or two past it.
            question = (f"Stop {self.run.name} after saving a checkpoint when the step in progress ends? "
                        "(the step shown may be a step or two behind it)")
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
        if self.detail is not None and self.detail.tail_from is not None:
            # A first look holds the newest steps alone: a CSV of it would be a part said as whole.
            self.notify("the journal is still being read — export in a moment, once every step is",
                        severity="warning", timeout=4)
            return
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
                msg = "asked to save a checkpoint and stop when the step in progress ends"
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
