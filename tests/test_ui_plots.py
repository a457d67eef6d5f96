"""What a person reads on the run screens: header, legends, axes, labels, panels, footer.

Each test drives the app with Pilot at the sizes people use (100x30, 160x48) and reads the
screen as text, the way it is shown.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from cockpit.core import journal

from conftest import FIXTURES
from test_ui_app import app_for, make_run, sft_records, wait_for

pytestmark = pytest.mark.anyio

SMALL = (100, 30)
LARGE = (160, 48)


def screen_lines(app) -> list[str]:
    """The screen as a person sees it, one string per row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def header_lines(app) -> list[str]:
    from cockpit.ui.widgets.run.run_header import RunHeader

    return str(app.screen.query_one(RunHeader).render()).splitlines()


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


async def all_drawn(pilot, app) -> None:
    await wait_for(pilot, lambda: plots(app) and all(p.drawn_signature for p in plots(app)),
                   "every panel drawn")


def half_run(max_steps: int = 10000, last: int = 5000) -> list[journal.Record]:
    """A journal that stopped being written at `last` of `max_steps`, ETA left in it."""
    out = [journal.run_started("sft", max_steps=max_steps), journal.phase("training")]
    for s in range(100, last + 1, 100):
        out.append(journal.metrics(s, {"loss": 1.0 / s, "learning_rate": 1e-4}, epoch=s / 1000))
        out.append(journal.progress(s, max_steps, epoch=s / 1000, steps_per_s=2.0,
                                    eta_s=(max_steps - s) / 2))
    return out


# -- header ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_header_facts_are_separated_and_a_live_run_shows_its_eta(tmp_path, size):
    run = make_run(tmp_path / "runs", "live", sft_records(range(1, 51)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: "step 50/100" in " ".join(header_lines(app)), "header")
        line1, line2 = header_lines(app)
        assert "trainer sft · state running · phase training" in line1
        assert line2.startswith("step 50/100 ")
        assert "· epoch 1.00 · steps/s 2.00 · ETA " in line2
        assert "x: step · smoothing off" in line2
        shown = screen_lines(app)
        assert "· ETA " in shown[1] and "smoothing off" in shown[1]  # fits on the screen


async def test_a_replay_of_a_live_run_has_no_eta(tmp_path):
    run = make_run(tmp_path / "runs", "still-running", half_run(), state="running")
    app = app_for(tmp_path, "replay", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: "step 5000/10000" in " ".join(header_lines(app)), "header")
        text = "\n".join(header_lines(app))
        assert "ETA" not in text
        assert "state replay" in text


async def test_a_compare_of_two_half_runs_has_no_eta(tmp_path):
    a = make_run(tmp_path / "runs", "a", half_run(), state="running")
    b = make_run(tmp_path / "runs", "b", half_run(last=3000), state="stopped")
    app = app_for(tmp_path, "replay", [str(a.events), str(b.events)])
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: len(app.screen.sources) == 2, "both loaded")
        await wait_for(pilot, lambda: "2 runs" in " ".join(header_lines(app)), "header")
        assert "ETA" not in "\n".join(header_lines(app))


async def test_a_live_view_of_a_finished_run_has_no_eta(tmp_path):
    records = half_run() + [journal.run_ended("stopped", reason="stop requested")]
    run = make_run(tmp_path / "runs", "ended", records, state="stopped")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: "state stopped" in " ".join(header_lines(app)), "header")
        assert "ETA" not in "\n".join(header_lines(app))
