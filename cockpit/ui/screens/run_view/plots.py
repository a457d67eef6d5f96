"""The keys that act on the run screen's plots: panels picked, replaced, removed, explained and
reset; smoothing, the x axis, log y, the steps shown and the zoom. They are live only on the
plots tab (`PLOT_ACTIONS`, checked by `tabs.TabKeys.check_action`)."""

from __future__ import annotations

from dataclasses import replace

from cockpit.metrics.panels import panel_for_key
from cockpit.trainers.knowledge import metric_family
from cockpit.ui.screens.glossary import GlossaryScreen
from cockpit.ui.screens.metric_picker import MetricPicker
from cockpit.ui.screens.run_view.display import SMOOTHING_STEPS, RunDisplay
from cockpit.ui.widgets.run.plot_grid import PlotGrid

PLOT_ACTIONS = frozenset({"pick_metric", "remove_panel", "reset_panels", "toggle_smoothing",
                          "smoothing", "toggle_x", "toggle_log", "zoom", "x_range"})
"""Keys that act on the plots tab; elsewhere they are off and out of the footer (at 100
columns the completions keys and the live screen's stop/resume keys need the room)."""


class PlotKeys(RunDisplay):
    """The plot keys' actions (their bindings are `screen.RunView`'s)."""

    def _leave_zoom(self) -> bool:
        grid = self.query_one(PlotGrid)
        tabs = self._tabbed()
        if grid.zoomed is None or (tabs is not None and tabs.active != "plots"):
            return False
        grid.zoom(None)
        self.request_redraw()
        return True

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
