"""The run screens' view settings (x axis, smoothing, the panels) are reactives: the keys set them,
their watchers redraw, and the header and the plots follow."""

from __future__ import annotations

import pytest

from helpers.ui import app_for, app_wait, make_run, sft_records

pytestmark = pytest.mark.anyio

SIZE = (120, 40)


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


def header(app) -> str:
    from cockpit.ui.widgets.run.run_header import RunHeader

    return str(app.screen.query_one(RunHeader).render())


async def test_x_and_smoothing_keys_set_the_reactives_and_the_plots_follow(tmp_path):
    run = make_run(tmp_path / "runs", "settings", sft_records(range(1, 21)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: plots(app) and all(p.drawn_signature for p in plots(app)),
                       "every panel drawn")
        screen = app.screen
        assert (screen.x_mode, screen.smoothing) == ("step", 0.6)  # smoothing on by default (issue 30)

        await pilot.press("x")
        assert screen.x_mode == "time"
        await app_wait(pilot, lambda: all("time" in p.drawn_signature for p in plots(app)),
                       "every panel redrawn by time")
        assert "x: time" in header(app)

        await pilot.press("e")
        assert screen.smoothing == 0.0
        await app_wait(pilot, lambda: all(0.0 in p.drawn_signature for p in plots(app)),
                       "every panel redrawn raw")
        await app_wait(pilot, lambda: "smoothing off" in header(app), "smoothing off in the header")
        await pilot.press("e")
        assert screen.smoothing == 0.6
        await app_wait(pilot, lambda: all(0.6 in p.drawn_signature for p in plots(app)),
                       "every panel redrawn smoothed")
        assert "smoothing 0.60" in header(app)
        await pilot.press("minus")
        assert screen.smoothing == 0.3
        await pilot.press("e")
        assert screen.smoothing == 0.0
        await app_wait(pilot, lambda: "smoothing off" in header(app), "smoothing off in the header")
        await pilot.press("e")  # back on where it was left
        assert screen.smoothing == 0.3

        screen.smoothing = 5.0  # what a script sets is kept within the steps
        assert screen.smoothing == 0.99


async def test_removing_a_panel_keeps_the_choice_until_the_defaults_come_back(tmp_path):
    run = make_run(tmp_path / "runs", "panels", sft_records(range(1, 11)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: len(plots(app)) >= 5, "plots mounted")
        screen = app.screen
        defaults = [p.panel for p in plots(app)]
        assert screen.chosen_panels is None

        plots(app)[0].focus()
        await pilot.press("d")
        await app_wait(pilot, lambda: len(plots(app)) == len(defaults) - 1, "a panel removed")
        assert screen.chosen_panels == tuple(defaults[1:])
        assert [p.panel for p in plots(app)] == defaults[1:]

        await pilot.press("0")
        await app_wait(pilot, lambda: [p.panel for p in plots(app)] == defaults, "defaults back")
        assert screen.chosen_panels is None
