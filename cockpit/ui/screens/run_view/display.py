"""The run screen's display: what live runs and replays share (header, alert bar, plot grid and
the detail tabs) and the redraw. The keys that act on it are `plots.PlotKeys` and
`tabs.TabKeys`; `screen.RunView` binds them.

Subclasses fill `self.sources` (one RunData for a live run, several for an
overlay). A 4 Hz timer redraws what changed; plots only when a store's
version, the view settings, the size or the theme changed. New data asks for a
redraw at once (`request_redraw`: a `RedrawAsked` message), so a new step shows without
waiting for the tick (bench: latency_p95_ms); the asks that queue up while a redraw runs are
one redraw (`Message.can_replace`), so a burst of polls is drawn once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

from cockpit.metrics.panels import Panel, default_panels
from cockpit.metrics.rundata import RunData
from cockpit.run.folder import LIVE_STATES
from cockpit.ui.colors import series_colors
from cockpit.ui.screens.run_view.texts import WAITING, steps_before_first_log, trainer_of
from cockpit.ui.text import fold_tail, literal
from cockpit.ui.widgets.footer import CockpitFooter
from cockpit.ui.widgets.run.alert_bar import AlertBar
from cockpit.ui.widgets.run.alerts_list import AlertsList
from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
from cockpit.ui.widgets.run.completions import CompletionsPane
from cockpit.ui.widgets.run.deferred import Deferred
from cockpit.ui.widgets.run.findings_pane import FindingsPane
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

SMOOTHING_STEPS = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
REDRAW_HZ = 4


class RunDisplay(Screen):
    HELP_TITLE = "Run"

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

    def first_look_drawn(self) -> None:
        """A first look at a long journal (`RunData.tail_from`) is on screen: the live screen's
        follower reads the whole now."""

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
        if data.tail_from is not None:
            settings = (f"reading the steps before {data.tail_from}…" if data.tail_from > 1
                        else "reading the whole journal…") + " · " + settings
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
            if data.tail_from is not None:
                # A long journal's first look: the whole is read once it is on screen, and the
                # other tabs' panes come after the whole.
                self.call_after_refresh(self.first_look_drawn)
            else:
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
            return isinstance(message, RunDisplay.RedrawAsked)

    def request_redraw(self) -> None:
        """New data: a redraw as soon as the screen gets to it; one for a burst of asks."""
        self.post_message(self.RedrawAsked())

    async def on_run_display_redraw_asked(self) -> None:
        await self.refresh_view()

    def _tabbed(self) -> TabbedContent | None:
        """The screen's tabs, found once: check_action runs for every binding whenever the
        footer is brought up to date, and a DOM query each time cost ~0.1 s of a replay."""
        tabs = self._tabs_found
        if tabs is None or not tabs.is_attached:
            found = self.query(TabbedContent)
            tabs = self._tabs_found = found.first() if found else None
        return tabs
