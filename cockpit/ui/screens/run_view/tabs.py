"""The keys that move about the run screen: the digits switch tabs (and give the new tab's pane
the focus), the completions keys go to that tab's pane wherever the focus is, a finding jumps to
its data, and Escape climbs out of a text box, a pane's mode and a tab (`screen.RunView.action_back`
puts these in order). `check_action` says which keys are live where."""

from __future__ import annotations

from textual import on
from textual.css.query import NoMatches
from textual.widgets import Input, TabbedContent, TabPane, TextArea

from cockpit.metrics.panels import panel_for_key
from cockpit.ui.screens.run_view.display import RunDisplay
from cockpit.ui.screens.run_view.plots import PLOT_ACTIONS
from cockpit.ui.widgets.run.completions import CompletionsPane
from cockpit.ui.widgets.run.findings_pane import FindingsTable
from cockpit.ui.widgets.run.plot_grid import PlotGrid


class TabKeys(RunDisplay):
    """Tabs, the completions keys, finding jumps and the Escape steps (bindings: `screen.RunView`)."""

    @on(TabbedContent.TabActivated)
    async def _tab_changed(self) -> None:
        tabs = self._tabbed()
        if tabs is not None and tabs.active != "plots":
            await self.reveal_panes()  # a tab opened before the first frame was drawn
        self.refresh_bindings()
        await self.refresh_view()

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
