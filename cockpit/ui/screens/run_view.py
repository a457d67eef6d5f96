"""What live runs and replays share: header, alert bar, plot grid and the detail tabs.

Subclasses fill `self.sources` (one RunData for a live run, several for an
overlay). A 4 Hz timer redraws what changed; plots only when a store's
version, the view settings, the size or the theme changed. New data asks for a
redraw at once (`request_redraw`: a `RedrawAsked` message), so a new step shows without
waiting for the tick (bench: latency_p95_ms); the asks that queue up while a redraw runs are
one redraw (`Message.can_replace`), so a burst of polls is drawn once.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane, TextArea

from cockpit.metrics.panels import Panel, default_panels, guess_trainer, panel_for_key
from cockpit.metrics.rundata import RunData
from cockpit.run.folder import LIVE_STATES
from cockpit.trainers.knowledge import metric_family
from cockpit.ui.colors import series_colors
from cockpit.ui.screens.glossary import GlossaryScreen
from cockpit.ui.screens.metric_picker import MetricPicker
from cockpit.ui.text import fold_tail, literal
from cockpit.ui.widgets.footer import CockpitFooter
from cockpit.ui.widgets.run.alert_bar import AlertBar
from cockpit.ui.widgets.run.alerts_list import AlertsList
from cockpit.ui.widgets.run.checkpoints_pane import CheckpointsPane
from cockpit.ui.widgets.run.completions import CompletionsPane
from cockpit.ui.widgets.run.deferred import Deferred
from cockpit.ui.widgets.run.findings_pane import FindingsPane, FindingsTable
from cockpit.ui.widgets.run.log_history import LogHistoryTable
from cockpit.ui.widgets.run.metric_plot import DEFAULT_VIEW, View, XMode, window_text
from cockpit.ui.widgets.run.plot_grid import PlotGrid
from cockpit.ui.widgets.run.run_header import RunHeader
from cockpit.ui.widgets.run.system_pane import SystemPane
from cockpit.ui.widgets.run.tabs_overflow import TabsOverflow
from cockpit.ui.widgets.waiting import Waiting

if TYPE_CHECKING:
    from textual import getters

    from cockpit.ui.app import CockpitApp

PLOT_ACTIONS = frozenset({"pick_metric", "remove_panel", "reset_panels", "toggle_smoothing",
                          "smoothing", "toggle_x", "toggle_log", "zoom", "x_range"})
"""Keys that act on the plots tab; elsewhere they are off and out of the footer (at 100
columns the completions keys and the live screen's stop/resume keys need the room)."""
SMOOTHING_STEPS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
WAITING = {"starting": "starting…", "importing": "importing TRL…", "loading_model": "loading the model…",
           "preparing_data": "preparing the data…", "training": "training started…",
           "saving": "saving…"}
"""What a live run is doing before its first logged step, by its phase."""
REDRAW_HZ = 4


PLAIN_TRAINER = "Trainer (no TRL metrics)"
"""A trainer_state.json whose metrics no TRL trainer alone logs: transformers' Trainer wrote it
(or a subclass that adds no metric of its own, as SFT did before mean_token_accuracy)."""


def trainer_of(data: RunData, keys: list[str]) -> str | None:
    """The trainer of one source, as the header names it."""
    if data.trainer:
        return data.trainer
    guessed = guess_trainer(keys)
    if guessed is None and data.run_dir is None and keys:  # a trainer_state.json, not a run's journal
        return PLAIN_TRAINER
    return guessed


def steps_before_first_log(data: RunData) -> str:
    """`step 3/40 trained · the first metrics are logged at step 10 (logging_steps 10)`: what a
    live run has done before it logged anything, and when it will."""
    done = f"step {data.step}/{data.max_steps or '?'} trained"
    every = data.logging_steps
    if every is None:
        return f"{done} · no metrics logged yet (the trainer logs every logging_steps steps)"
    first = every if every >= 1 else every * (data.max_steps or 0)  # below 1: a ratio of max_steps
    first_step = max(1, math.ceil(first)) if first else None
    said = f"logging_steps {every:g}"
    if first_step is None:
        return f"{done} · no metrics logged yet ({said})"
    if data.max_steps and first_step > data.max_steps:
        return f"{done} · {said} is more than the run's {data.max_steps} steps: it logs only its summary at the end"
    return f"{done} · the first metrics are logged at step {first_step} ({said})"


class RunView(Screen):
    HELP_TITLE = "Run"
    BINDINGS = [
        # The footer has one row: the keys shown there are short and few enough to fit 100
        # columns with the live screen's stop/resume keys (and no palette hint: help names
        # ctrl+p); the others are in help and the palette.
        Binding("escape", "back", "Back", show=False, id="run.back"),
        Binding("q", "leave", "Back", tooltip="Back to where you came from (Escape climbs one level "
                "at a time: box, mode, tab, screen)", id="run.leave"),
        Binding("m", "pick_metric", "Pick metric", tooltip="Add a panel, or replace the focused one",
                id="run.pick_metric"),
        Binding("d", "remove_panel", "Remove panel", show=False, id="run.remove_panel"),
        Binding("i", "explain_metric", "What is this?", show=False,
                tooltip="What the focused panel's metrics mean, and what healthy looks like (every panel's "
                "when none is focused)", id="run.explain_metric"),
        Binding("0", "reset_panels", "Default panels", show=False, id="run.reset_panels"),
        Binding("e", "toggle_smoothing", "Smoothing", id="run.toggle_smoothing"),
        Binding("plus,equals_sign", "smoothing(1)", "More smoothing", show=False,
                id="run.smoothing_up"),
        Binding("minus", "smoothing(-1)", "Less smoothing", show=False, id="run.smoothing_down"),
        Binding("x", "toggle_x", "Step/time", tooltip="x axis: step or wall time", id="run.toggle_x"),
        Binding("z", "zoom", "Zoom", tooltip="The focused panel alone, full size (z again: all)",
                id="run.zoom"),
        Binding("l", "toggle_log", "Log y", show=False, tooltip="A log scale on the y axes",
                id="run.toggle_log"),
        Binding("v", "x_range", "Steps shown", show=False,
                tooltip="Show only a range of steps (empty: all)", id="run.x_range"),
        Binding("1", "tab('plots')", "Plots tab", show=False, id="run.tab_plots"),
        Binding("2", "tab('completions')", "Completions tab", show=False, id="run.tab_completions"),
        Binding("3", "tab('history')", "Log history tab", show=False, id="run.tab_history"),
        Binding("4", "tab('output')", "Trainer output tab", show=False, id="run.tab_output"),
        Binding("5", "tab('system')", "System tab", show=False, id="run.tab_system"),
        Binding("6", "tab('alerts')", "Alerts tab", show=False, id="run.tab_alerts"),
        Binding("7", "tab('findings')", "Findings tab", show=False, id="run.tab_findings"),
        Binding("8", "tab('checkpoints')", "Checkpoints tab", show=False, id="run.tab_checkpoints"),
        # The completions keys belong to the screen while that tab is shown (check_action), so
        # they work and show wherever the focus is; End beats the tables' own End there.
        Binding("left_square_bracket", "scrub(-1)", "Older", tooltip="Older completions step",
                id="completions.older"),
        Binding("right_square_bracket", "scrub(1)", "Newer", tooltip="Newer completions step",
                id="completions.newer"),
        Binding("end", "follow", "Follow", tooltip="Follow the newest completions step",
                priority=True, id="completions.follow"),
        Binding("home", "completions('first')", "First step", show=False,
                tooltip="The oldest completions step", priority=True, id="completions.first"),
        Binding("g", "completions('goto')", "Go to step", show=False,
                tooltip="Type a step; the nearest logged one is shown", id="completions.goto"),
        Binding("slash", "completions('filter')", "Filter", tooltip="Filter by score (acc>0.5, "
                "adv<0) and search the text", id="completions.filter"),
        Binding("o", "completions('sort')", "Sort", show=False,
                tooltip="Sort by the next score column (advantage, each reward)", id="completions.sort"),
        Binding("O", "completions('reverse')", "Reverse sort", show=False, id="completions.reverse"),
        Binding("p", "completions('group')", "Group by prompt", show=False, id="completions.group"),
        Binding("t", "completions('track')", "Track one prompt", show=False,
                tooltip="Only the highlighted row's prompt, step after step ([ ] skip to the steps "
                "that sampled it)", id="completions.track"),
        Binding("b", "completions('compare')", "Steps side by side", show=False,
                tooltip="Pin this step; the one [ ] ] move to is shown beside it", id="completions.compare"),
    ]

    if TYPE_CHECKING:  # `self.app` as a type checker sees it (runtime: Textual's own property)
        app = getters.app(CockpitApp)

    # The view settings are `var`s (reactives that do not repaint the screen themselves): their
    # watchers ask for the one redraw that is needed; the plots redraw only what they change.
    x_mode: var[XMode] = var("step", init=False)
    """The plots' x axis: "step", or "time" (wall time; a source without wall times stays by step)."""
    smoothing: var[float] = var(0.6, init=False)
    """The weight of the debiased EMA the plots draw (0: raw values), on by default; the raw
    points stay faint behind, and schedules, eval and sparse series are never smoothed
    (`panels.smoothing_for`). `e` turns it on and off, `+`/`-` move it along SMOOTHING_STEPS."""
    view: var[View] = var(DEFAULT_VIEW, init=False)
    """Log y axes (`l`) and the steps shown (`v`); the y range is robust (outliers marked)."""
    chosen_panels: var[tuple[Panel, ...] | None] = var(None, init=False)
    """The panels the user picked (`m` adds or replaces the focused one, `d` removes it), in
    order; None while the defaults for the run's metrics are shown (`0` goes back to them)."""

    judges_findings = False
    """The findings tab asks the judge too (a replay); a live run shows what its supervisor found."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: list[RunData] = []
        self.smoothing_index = 2
        """Where in SMOOTHING_STEPS `e` turns smoothing on (kept while it is off)."""
        self._keys_seen: tuple[str, ...] = ()
        self._tabs_found: TabbedContent | None = None
        self._reveal_asked = False
        self._revealing: asyncio.Event | None = None
        self.panes_revealed = False
        self._waiting_shown: str | None = None
        """The hidden tabs' panes are mounted (after the first frame, or a tab opened first)."""

    # -- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield RunHeader("loading…", id="run-header")
        alert = AlertBar("", id="alert-bar")
        alert.display = False
        yield alert
        with TabbedContent(initial="plots", id="run-tabs"):
            with TabPane("Plots ¹", id="plots"):
                waiting = Waiting("", id="plots-waiting")
                waiting.display = False  # until the source is read and has no metric yet
                yield waiting
                yield PlotGrid(id="plot-grid")
            # The hidden tabs' panes are mounted after the first frame (reveal_panes): the
            # first frame is the plots' alone. The alerts list stays: the live screen hands
            # it the run's alert board as it mounts.
            with TabPane("Completions ²", id="completions"):
                yield Deferred(CompletionsPane(id="completions-pane"))
            with TabPane("Log history ³", id="history"):
                yield Deferred(LogHistoryTable(id="history-table"))
            yield from self.compose_output_tab()
            with TabPane("System ⁵", id="system"):
                yield Deferred(VerticalScroll(SystemPane("", id="system-pane")))
            with TabPane("Alerts ⁶", id="alerts"), VerticalScroll():
                yield AlertsList("", id="alerts-list")
            with TabPane("Findings ⁷", id="findings"):
                yield Deferred(FindingsPane(judge=self.judges_findings, id="findings-pane"))
            with TabPane("Checkpoints ⁸", id="checkpoints"):
                yield Deferred(CheckpointsPane(id="checkpoints-pane"))
        yield CockpitFooter(compact=True, show_command_palette=False)

    def checkpoints_source(self) -> tuple[str | None, bool]:
        """(the run or output dir the Checkpoints tab lists, whether it is still training)."""
        return None, False

    def compose_output_tab(self) -> ComposeResult:
        """The live screen adds the trainer's output here."""
        yield from ()

    def on_mount(self) -> None:
        self.set_interval(1 / REDRAW_HZ, self.refresh_view)
        TabsOverflow.attach(self.query_one(TabbedContent))  # `6 7 8 →` where tabs are off screen

    # -- what subclasses provide ---------------------------------------------------------------

    @property
    def detail(self) -> RunData | None:
        """The source the completions/history/system tabs show (the first one)."""
        return self.sources[0] if self.sources else None

    def header_state(self) -> str | None:
        return None

    def header_trainer(self, data: RunData, keys: list[str]) -> str | None:
        """The trainer the header names: the journal's, else a guess from the metric keys, else
        for a trainer_state.json with no TRL metric `Trainer (no TRL metrics)` (transformers'
        Trainer wrote it). A compare names each run's (`sft, grpo`)."""
        if len(self.sources) > 1:
            names = dict.fromkeys(trainer_of(s, list(s.store.keys())) or "unknown" for s in self.sources)
            return ", ".join(names)
        return trainer_of(data, keys)

    def waiting_text(self, data: RunData) -> str:
        """What the plots area says before there is a metric to draw."""
        state = self.header_state() or data.state
        if state in LIVE_STATES:
            if data.step:  # steps trained, none logged yet (logging_steps)
                return steps_before_first_log(data)
            doing = WAITING.get(data.phase or "importing", "training…")
            return f"waiting for the first step ({doing})"
        if data.ended is not None:
            return "the run ended before its first logged step — its end is in the bar above; " \
                "the trainer's output is on tab 4"
        return "no metrics in this source"

    def help_title(self) -> str:
        """The help dialog's title: the screen and what it shows (`Replay · sft-run`,
        `Compare · 3 runs`), not one title for a replay and an overlay alike."""
        if len(self.sources) > 1:
            return f"Compare · {len(self.sources)} runs"
        name = fold_tail(self.sources[0].label, 40) if self.sources else ""
        return f"{self.HELP_TITLE} · {name}" if name else self.HELP_TITLE

    def header_title(self) -> str | None:
        if len(self.sources) > 1:
            return f"{len(self.sources)} runs: " + ", ".join(s.label for s in self.sources)
        return None

    # -- refresh -------------------------------------------------------------------------------

    def validate_smoothing(self, smoothing: float) -> float:
        return min(max(float(smoothing), 0.0), SMOOTHING_STEPS[-1])

    def watch_x_mode(self) -> None:
        self.request_redraw()

    def watch_smoothing(self) -> None:
        self.request_redraw()

    def watch_view(self) -> None:
        self.request_redraw()

    async def watch_chosen_panels(self, panels: tuple[Panel, ...] | None) -> None:
        if panels is None:
            self._keys_seen = ()  # the defaults are recomputed by the redraw
        else:
            await self.query_one(PlotGrid).set_panels(panels)
        await self.refresh_view()

    def all_keys(self) -> list[str]:
        keys: dict[str, None] = {}
        for s in self.sources:
            keys.update(dict.fromkeys(s.store.keys()))
        return list(keys)

    async def refresh_view(self) -> None:
        if not self.is_current:
            return
        data = self.detail
        if data is None:
            return
        settings = f"x: {self.x_mode} · smoothing " + (f"{self.smoothing:.2f}" if self.smoothing
                                                        else "off")
        settings += " · log y" if self.view.log_y else ""
        if self.view.x_window:
            settings += " · " + window_text(self.view.x_window)
        keys = tuple(self.all_keys())
        self.query_one(RunHeader).show(data, state=self.header_state(), extra=settings,
                                       title=self.header_title(),
                                       trainer=self.header_trainer(data, list(keys)))
        waiting = self.query_one("#plots-waiting", Waiting)
        waiting.display = not keys
        if not keys:
            text = self.waiting_text(data)
            if (self.header_state() or data.state) not in LIVE_STATES:
                if text != self._waiting_shown:
                    waiting.update(literal(text))
            elif text != self._waiting_shown or not waiting.waiting:
                waiting.wait(text, since=data.started)
            self._waiting_shown = text
        self.query_one(AlertBar).show_all(self.sources, data)
        grid = self.query_one(PlotGrid)
        if keys != self._keys_seen and self.chosen_panels is None:
            self._keys_seen = keys
            before = list(grid.panels)
            await grid.set_panels(default_panels(data.trainer, list(keys)))
            if grid.panels != before:
                # New panels have no size until the next layout and are skipped below:
                # finish this redraw right after it, not a tick later.
                self.call_after_refresh(self.refresh_view)
            if not self.is_current:  # taken down while its panels were set
                return
        with self.app.batch_update():
            grid.redraw(self.sources, x_mode=self.x_mode, smoothing=self.smoothing,
                        colors=series_colors(self.app), theme=self.app.theme, view=self.view)
        if not self._reveal_asked and (not keys or all(p.chart is not None for p in grid.plots())):
            # The first frame holds the plots (or says why there are none): the other tabs'
            # panes, and the work they start, come after it.
            self._reveal_asked = True
            self.call_after_refresh(self.reveal_panes)
        if not self.panes_revealed:
            return
        tabs = self._tabbed()
        active = tabs.active if tabs is not None else None
        try:
            self._show_active(active, data)
        except NoMatches:  # the screen is being taken down under this redraw (the crash hunt's)
            return

    def _show_active(self, active: str | None, data: RunData) -> None:
        if active == "completions":
            self.query_one(CompletionsPane).show(data)
        elif active == "history":
            self.query_one(LogHistoryTable).show(data)
        elif active == "system":
            self.query_one(SystemPane).show(data)
        elif active == "alerts":
            self.query_one(AlertsList).show(data)
        elif active == "findings":
            self.query_one(FindingsPane).show(data)

    async def reveal_panes(self) -> None:
        """Mount the hidden tabs' panes (each pane starts its own work as it mounts: the
        checkpoints listing and the kept samples), then ask the findings pane for its findings
        (a replay's judge, in a worker): its tab fills in when the judge is done."""
        if self._revealing is not None:  # under way (the first frame and a tab key both ask)
            await self._revealing.wait()
            return
        self._reveal_asked = True
        self._revealing = asyncio.Event()
        try:
            for deferred in list(self.query(Deferred)):
                await deferred.reveal()
        finally:
            self.panes_revealed = True
            self._revealing.set()
        findings = self.query(FindingsPane)
        if self.detail is not None and findings:
            findings.first().show(self.detail)

    @dataclass
    class RedrawAsked(Message):
        """New data or a new view setting: the plots and the shown tab redrawn. Those that queue
        up while a redraw runs are one (`can_replace`)."""

        bubble = False

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, RunView.RedrawAsked)

    def request_redraw(self) -> None:
        """New data: a redraw as soon as the screen gets to it; one for a burst of asks."""
        self.post_message(self.RedrawAsked())

    async def on_run_view_redraw_asked(self) -> None:
        await self.refresh_view()

    @on(TabbedContent.TabActivated)
    async def _tab_changed(self) -> None:
        tabs = self._tabbed()
        if tabs is not None and tabs.active != "plots":
            await self.reveal_panes()  # a tab opened before the first frame was drawn
        self.refresh_bindings()
        await self.refresh_view()

    def _tabbed(self) -> TabbedContent | None:
        """The screen's tabs, found once: check_action runs for every binding whenever the
        footer is brought up to date, and a DOM query each time cost ~0.1 s of a replay."""
        tabs = self._tabs_found
        if tabs is None or not tabs.is_attached:
            found = self.query(TabbedContent)
            tabs = self._tabs_found = found.first() if found else None
        return tabs

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        tabs = self._tabbed()
        if action in ("scrub", "follow", "completions"):
            if tabs is None or tabs.active != "completions":
                return False
            # End and Home go before the focused widget: in a text box they move its cursor.
            return not (isinstance(self.focused, Input) and (action == "follow" or parameters == ("first",)))
        if action == "tab" and tabs is not None:  # a replay has no trainer output tab
            try:  # a look-up among the tabs' panes: a query walked every widget of every tab
                tabs.get_pane(str(parameters[0]))
            except NoMatches:
                return False
            return True
        if action in PLOT_ACTIONS:  # only where the plots are: the footer keeps room for the rest
            return tabs is None or tabs.active == "plots"
        return True

    def action_scrub(self, delta: int) -> None:
        self.query_one(CompletionsPane).action_scrub(delta)

    def action_follow(self) -> None:
        self.query_one(CompletionsPane).action_follow()

    async def action_completions(self, verb: str) -> None:
        """A completions key: the pane's action of that name (`sort` → `action_sort`)."""
        await self.query_one(CompletionsPane).run_action(verb)

    @on(FindingsTable.Jumped)
    async def _finding_jump(self, event: FindingsTable.Jumped) -> None:
        """From a finding to its data: the completions browser at its step, or its metric's panel."""
        if event.target == "completions":
            await self.action_tab("completions")
            pane = self.query_one(CompletionsPane)
            pane.show_step(event.step)
            pane.show(self.detail)
            return
        await self.action_tab("plots")
        grid = self.query_one(PlotGrid)
        if event.key and not any(event.key in p.panel.resolve([event.key]) for p in grid.plots()):
            self.chosen_panels = (*grid.panels, panel_for_key(event.key))

        def focus_its_panel() -> None:
            plot = next((p for p in grid.plots() if event.key in p.panel.resolve([event.key or ""])), None)
            if plot is not None:
                plot.focus()

        self.call_after_refresh(focus_its_panel)
        self.notify(f"{event.key} at step {event.step}", timeout=3)

    # -- actions -------------------------------------------------------------------------------

    def action_back(self) -> None:
        """Escape climbs one level at a time: out of a text box (what was typed is kept), out of
        a pane's mode (chat, compare, zoom; a zoomed plot panel back into the grid), back to the
        plots tab, and only then off the screen."""
        if self._leave_box() or self._leave_mode() or self._leave_zoom() or self._leave_tab():
            return
        self.action_leave()

    def _leave_zoom(self) -> bool:
        grid = self.query_one(PlotGrid)
        tabs = self._tabbed()
        if grid.zoomed is None or (tabs is not None and tabs.active != "plots"):
            return False
        grid.zoom(None)
        self.request_redraw()
        return True

    def action_leave(self) -> None:
        """`q`: off this screen at once, to the one it came from (Home at the top)."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.switch_to_home()

    def _active_pane(self) -> TabPane | None:
        tabs = self._tabbed()
        if tabs is None or not tabs.active:
            return None
        try:
            return tabs.get_pane(tabs.active)
        except Exception:  # noqa: BLE001 - a tab being switched: no pane to climb out of
            return None

    def _leave_box(self) -> bool:
        """A focused text box inside a tab gives the focus to its pane's list; its text stays."""
        focused = self.focused
        pane = self._active_pane()
        if pane is None or not isinstance(focused, Input | TextArea) or pane not in focused.ancestors:
            return False
        target = next((w for w in pane.query("*") if w.focusable and w.display
                       and not isinstance(w, Input | TextArea)), None)
        self.set_focus(target)
        return True

    def _leave_mode(self) -> bool:
        """A pane in a mode of its own (the checkpoints chat, compared completions steps) leaves
        it: each such pane has `leave_mode() -> bool`."""
        pane = self._active_pane()
        if pane is None:
            return False
        for widget in pane.query("*"):
            leave = getattr(widget, "leave_mode", None)
            if callable(leave) and leave():
                return True
        return False

    def _leave_tab(self) -> bool:
        tabs = self._tabbed()
        if tabs is None or tabs.active in ("plots", ""):
            return False
        self.call_later(self.action_tab, "plots")
        return True

    async def action_tab(self, tab: str) -> None:
        """Digits switch tabs wherever the focus is, and the tab's pane takes the focus (Right
        scrolls the log history, Enter mutes on the alerts tab), not the tab strip. The plots tab
        keeps the focus on the strip when it had it: a focused panel is one `m` replaces."""
        if tab != "plots":
            await self.reveal_panes()  # a tab opened before the first frame: its pane first
        try:
            tabs = self.query_one(TabbedContent)
        except NoMatches:
            return  # the screen is being taken down (the crash hunt, live-60x20-palette)
        focused = self.focused
        inside = focused is not None and any(isinstance(a, TabPane) for a in focused.ancestors)
        if inside:  # focus left inside the old tab would pull it back (TabbedContent shows it)
            self.set_focus(None)
        try:
            tabs.active = tab
        except ValueError:
            return
        if inside or tab != "plots":
            def focus_new_pane(tries: int = 3) -> None:
                if tabs.active != tab:
                    return  # another digit came first
                try:
                    pane = tabs.get_pane(tab)
                except NoMatches:
                    return  # the screen is being taken down (q right after the digit: the crash hunt)
                found = [w for w in pane.query("*") if w.focusable]
                # The innermost: a table rather than the scroll box around it. (The alerts tab
                # mounts its rules table at its first showing; `AlertsList` hands it the focus.)
                target = next((w for w in found if not any(o is not w and w in o.ancestors
                                                           for o in found)), None)
                if target is None and tries:
                    self.call_after_refresh(focus_new_pane, tries - 1)
                    return
                self.set_focus(target)

            self.call_after_refresh(focus_new_pane)

    def action_pick_metric(self) -> None:
        keys = self.all_keys()
        if not keys:
            self.notify("no metrics logged yet", severity="warning")
            return
        grid = self.query_one(PlotGrid)
        target = grid.focused_plot()
        title = f"Replace panel '{target.panel.title}'" if target else "Add a panel"

        def chosen(key: str | None) -> None:
            if not key:
                return
            panels = list(grid.panels)
            new = panel_for_key(key)
            shown = next((p for p in panels if key in p.covers(keys) and (target is None or p != target.panel)), None)
            if shown is not None:  # one panel a metric: a second learning-rate panel says nothing new
                self.notify(f"{key} is already shown in the panel '{shown.title}'", timeout=3)
                for plot in grid.plots():
                    if plot.panel == shown:
                        plot.focus()
                return
            if target is not None and target.panel in panels:
                panels[panels.index(target.panel)] = new
            else:
                panels.append(new)
            self.chosen_panels = tuple(panels)

        self.app.push_screen(MetricPicker(keys, title=title, family=self.metric_family()), chosen)

    def metric_family(self) -> str | None:
        """The run's metric family (the glossary's wording), from the one place that decides it."""
        data = self.detail
        return metric_family(data.trainer if data else None, self.all_keys())

    def action_explain_metric(self) -> None:
        """The glossary for the focused panel's metrics, or for every panel shown."""
        grid = self.query_one(PlotGrid)
        target = grid.focused_plot()
        keys = self.all_keys()
        panels = [target.panel] if target is not None else list(grid.panels)
        shown = list(dict.fromkeys(k for p in panels for k in (p.resolve(keys) or list(p.keys))))
        if not shown:
            self.notify("no panel to explain yet", timeout=2)
            return
        title = f"What '{target.panel.title}' shows" if target is not None else "What the panels show"
        self.app.push_screen(GlossaryScreen(title, shown, self.metric_family()))

    def action_remove_panel(self) -> None:
        grid = self.query_one(PlotGrid)
        target = grid.focused_plot()
        if target is None:
            self.notify("focus a panel first (Tab), then d removes it")
            return
        self.chosen_panels = tuple(p for p in grid.panels if p != target.panel)

    async def action_reset_panels(self) -> None:
        """The default panels, drawn afresh (titles and legends) even when they are shown."""
        if self.chosen_panels is not None:
            self.chosen_panels = None
            return
        for plot in self.query_one(PlotGrid).plots():
            plot.drawn_signature = None
        await self.refresh_view()

    def action_toggle_smoothing(self) -> None:
        self.smoothing = 0.0 if self.smoothing else SMOOTHING_STEPS[self.smoothing_index]
        self.notify(f"smoothing {f'{self.smoothing:.2f}' if self.smoothing else 'off'}",
                    timeout=1.5)

    def action_smoothing(self, delta: int) -> None:
        self.smoothing_index = max(1, min(len(SMOOTHING_STEPS) - 1, self.smoothing_index + delta))
        self.smoothing = SMOOTHING_STEPS[self.smoothing_index]
        self.notify(f"smoothing {self.smoothing:.2f} (debiased EMA)", timeout=1.5)

    def action_zoom(self) -> None:
        grid = self.query_one(PlotGrid)
        if grid.zoomed is not None:
            grid.zoom(None)
        else:
            target = grid.focused_plot() or next(iter(grid.plots()), None)
            if target is None:
                return
            grid.zoom(target)
            target.focus()
            self.notify(f"{target.panel.title} alone · z or escape: all panels", timeout=2)
        self.request_redraw()

    def action_toggle_log(self) -> None:
        self.view = replace(self.view, log_y=not self.view.log_y)
        self.notify("log y axes" if self.view.log_y else "linear y axes", timeout=1.5)

    def action_x_range(self) -> None:
        """Ask for the steps to show (`200-1500`, `1000-`, empty for all)."""
        from cockpit.ui.screens.steps_prompt import StepsPrompt

        def chosen(window: tuple[int, int] | bool | None) -> None:
            if window is False:  # cancelled
                return
            self.view = replace(self.view, x_window=window)  # type: ignore[arg-type]

        self.app.push_screen(StepsPrompt(self.view.x_window), chosen)

    def action_toggle_x(self) -> None:
        self.x_mode = "time" if self.x_mode == "step" else "step"
        if self.x_mode == "time" and not all(s.store.has_wall_time for s in self.sources):
            self.notify("some sources have no wall times (trainer_state.json): they stay by step",
                        severity="warning")
