"""The plot keys on real runs: log y (`l`), smoothing, the x axis (`x`), zoom, an x range. No key
kills the app; what a panel cannot draw it says in its title."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from ui_helpers import app_for, app_wait

pytestmark = pytest.mark.anyio

SMALL = (100, 30)


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


async def all_drawn(pilot, app) -> None:
    await app_wait(pilot, lambda: plots(app) and all(p.drawn_signature for p in plots(app)),
                   "every panel drawn")


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def test_log_y_on_a_learning_rate_that_starts_at_zero_draws_and_says_so(tmp_path):
    """trl_sft_token_accuracy logs learning_rate 0.0 at step 1: `l` used to kill the app
    (`ValueError: repeats may not contain negative values` in the braille plot)."""
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SMALL) as pilot:
        await all_drawn(pilot, app)
        await pilot.press("l")
        await app_wait(pilot, lambda: all(p.drawn_signature and p.drawn_signature[-2].log_y
                                          for p in plots(app)), "redrawn with log y")
        await pilot.pause()
        lr = next(p for p in plots(app) if p.panel.title == "learning rate")
        assert "log y: ≤0 left out" in str(lr.border_subtitle)
        assert lr.points_drawn > 1
        assert any("⠀" < ch <= "⣿" for ch in str(lr.render()))
        assert "learning rate" in screen_text(app)
