"""The UI changes the benchmark proposes, applied as patches for `run.py --prototype`.

The UI belongs to another engineer; these patches show what each proposed change is worth
on the same benchmark before anyone edits cockpit/ui. Each patch names the change it
stands for (see docs/performance.md, "Proposed UI changes"). Nothing imports this module
unless COCKPIT_BENCH_PROTOTYPE=1.
"""

from __future__ import annotations

import time

MIN_REDRAW_S = 0.1  # data-driven redraws at most 10 a second


def apply() -> None:
    from cockpit.ui.screens import live, run_view
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.metric_plot import MetricPlot
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    RunView = run_view.RunView

    # 1. live.py: poll the journal every 50 ms, not 200 ms (a poll with nothing new is one
    #    open + fstat).
    orig_init = live.LiveRunScreen.__init__

    def init(self, run_path, *, poll_interval: float = 0.05):  # type: ignore[no-untyped-def]
        orig_init(self, run_path, poll_interval=poll_interval)

    live.LiveRunScreen.__init__ = init  # type: ignore[method-assign]

    # 2. run_view.py: redraw when data arrives (at most every MIN_REDRAW_S), instead of
    #    waiting for the next 4 Hz tick; the tick stays for the header's clock.
    orig_refresh = RunView.refresh_view

    async def refresh_view(self) -> None:  # type: ignore[no-untyped-def]
        self._last_redraw = time.monotonic()
        self._redraw_pending = False
        n_panels = len(self.query_one(PlotGrid).panels)
        await orig_refresh(self)
        # 3. run_view.py: panels mounted in this pass have no size until the next layout,
        #    so redraw right after it rather than a tick later.
        if len(self.query_one(PlotGrid).panels) != n_panels:
            self.call_after_refresh(self.request_redraw)

    def request_redraw(self) -> None:  # type: ignore[no-untyped-def]
        if getattr(self, "_redraw_pending", False):
            return
        self._redraw_pending = True
        wait = MIN_REDRAW_S - (time.monotonic() - getattr(self, "_last_redraw", 0.0))
        if wait <= 0:
            self.call_later(self.refresh_view)
        else:
            self.set_timer(wait, self.refresh_view)

    RunView.refresh_view = refresh_view  # type: ignore[method-assign]
    RunView.request_redraw = request_redraw  # type: ignore[attr-defined]

    orig_polled = live.LiveRunScreen.on_live_run_screen_polled
    orig_loaded = live.LiveRunScreen.on_live_run_screen_loaded

    def polled(self, message):  # type: ignore[no-untyped-def]
        orig_polled(self, message)
        if message.records:
            self.request_redraw()

    def loaded(self, message):  # type: ignore[no-untyped-def]
        orig_loaded(self, message)
        self.request_redraw()

    live.LiveRunScreen.on_live_run_screen_polled = polled  # type: ignore[method-assign]
    live.LiveRunScreen.on_live_run_screen_loaded = loaded  # type: ignore[method-assign]

    # 4. replay.py: draw as soon as a source is loaded.
    orig_rloaded = ReplayScreen.on_replay_screen_loaded

    def rloaded(self, message):  # type: ignore[no-untyped-def]
        orig_rloaded(self, message)
        self.request_redraw()

    ReplayScreen.on_replay_screen_loaded = rloaded  # type: ignore[method-assign]

    # 7. home.py: the home screen under a live or replay screen loads nothing (its runs and
    #    presets workers, and the 2 s runs refresh, competed with the replay parse for the
    #    GIL); it loads when it is shown (ScreenResume) and refreshes only while current.
    from cockpit.ui.screens.home import HomeScreen

    orig_refresh_home = HomeScreen.action_refresh
    orig_presets = HomeScreen.load_presets

    def action_refresh(self) -> None:  # type: ignore[no-untyped-def]
        if self.is_current:
            orig_refresh_home(self)

    def load_presets(self):  # type: ignore[no-untyped-def]
        if self.is_current:
            self._presets_loaded = True
            return orig_presets(self)
        return None

    def on_screen_resume(self, event) -> None:  # type: ignore[no-untyped-def]
        orig_refresh_home(self)
        if not getattr(self, "_presets_loaded", False):
            self._presets_loaded = True
            orig_presets(self)

    HomeScreen.action_refresh = action_refresh  # type: ignore[method-assign]
    HomeScreen.load_presets = load_presets  # type: ignore[method-assign]
    HomeScreen.on_screen_resume = on_screen_resume  # type: ignore[attr-defined]

    # 6. metric_plot.py: a panel that has not been drawn yet renders blank instead of
    #    building an empty plotext figure (5-10 ms a panel) just before its first draw.
    from rich.text import Text

    orig_render = MetricPlot.render

    def render(self):  # type: ignore[no-untyped-def]
        if self.drawn_signature is None:
            return Text("")
        return orig_render(self)

    MetricPlot.render = render  # type: ignore[method-assign]

    # 5. metric_plot.py: read the store's arrays without copying them, and tell downsample
    #    that steps are sorted (both keyword arguments exist in cockpit.core.store).
    import cockpit.ui.widgets.run.metric_plot as mp

    orig_downsample = mp.downsample

    def downsample(x, y, n_out, **kw):  # type: ignore[no-untyped-def]
        return orig_downsample(x, y, n_out, sorted_x=x.dtype.kind in "iu", **kw)

    mp.downsample = downsample
    from cockpit.core.store import MetricStore

    orig_series = MetricStore.series

    def series(self, key, x="step", *, copy=False):  # type: ignore[no-untyped-def]
        return orig_series(self, key, x, copy=copy)

    # Only MetricPlot.draw reads through this patched class attribute while drawing.
    orig_draw = MetricPlot.draw

    def draw(self, sources, **kw):  # type: ignore[no-untyped-def]
        MetricStore.series = series  # type: ignore[method-assign]
        try:
            return orig_draw(self, sources, **kw)
        finally:
            MetricStore.series = orig_series  # type: ignore[method-assign]

    MetricPlot.draw = draw  # type: ignore[method-assign]
