"""The run screen that live runs and replays are built on: `display.RunDisplay` (the header,
alert bar, plot grid, detail tabs and the redraw) with the keys of `plots.PlotKeys` and
`tabs.TabKeys`, bound here in the order the footer and help show them."""

from __future__ import annotations

from textual.binding import Binding

from cockpit.ui.screens.run_view.plots import PlotKeys
from cockpit.ui.screens.run_view.tabs import TabKeys


class RunView(TabKeys, PlotKeys):
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

    def action_back(self) -> None:
        """Escape climbs one level at a time: out of a text box (what was typed is kept), out of
        a pane's mode (chat, compare, zoom; a zoomed plot panel back into the grid), back to the
        plots tab, and only then off the screen."""
        if self._leave_box() or self._leave_mode() or self._leave_zoom() or self._leave_tab():
            return
        self.action_leave()

    def action_leave(self) -> None:
        """`q`: off this screen at once, to the one it came from (Home at the top)."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.switch_to_home()

