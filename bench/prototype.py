"""UI changes the benchmark proposes but that are not in cockpit/ui, patched in for
`run.py --prototype` so their effect is measured before anyone edits the UI.

Changes 1-6 and 8 of docs/performance.md ("UI changes") were measured here first and are
now in cockpit/ui itself. What is left is change 7. Nothing imports this module unless
COCKPIT_BENCH_PROTOTYPE=1.
"""

from __future__ import annotations


def apply() -> None:
    # 7. home.py: the home screen under a live or replay screen loads nothing (its runs and
    #    presets workers and the 2 s runs refresh are work nobody sees; no measurable gain
    #    in these figures); it loads when shown (ScreenResume) and refreshes only while current.
    from cockpit.ui.screens.home import HomeScreen

    orig_refresh = HomeScreen.action_refresh
    orig_presets = HomeScreen.load_presets

    def action_refresh(self) -> None:  # type: ignore[no-untyped-def]
        if self.is_current:
            orig_refresh(self)

    def load_presets(self):  # type: ignore[no-untyped-def]
        if self.is_current:
            self._presets_loaded = True
            return orig_presets(self)
        return None

    def on_screen_resume(self) -> None:
        orig_refresh(self)
        if not getattr(self, "_presets_loaded", False):
            self._presets_loaded = True
            orig_presets(self)

    HomeScreen.action_refresh = action_refresh  # type: ignore[method-assign]
    HomeScreen.load_presets = load_presets  # type: ignore[method-assign]
    HomeScreen.on_screen_resume = on_screen_resume  # type: ignore[attr-defined]
