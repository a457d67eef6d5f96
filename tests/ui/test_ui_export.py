"""`w` exports from the TUI: a run's metrics (csv) and panels (png) into its folder, a replay's shown
source into the current folder, and every source of an overlay."""

from __future__ import annotations

import pytest

from helpers import FIXTURES
from helpers.ui import SIZE, app_for, app_wait, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio


# -- export from an overlay writes every source ----------------------------------------------------


async def test_w_in_an_overlay_exports_every_source_added_with_a(tmp_path, monkeypatch):
    from textual.widgets import Input

    from cockpit.ui.screens.path_prompt import PathPrompt

    monkeypatch.chdir(tmp_path)
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("a")
        await app_wait(pilot, lambda: isinstance(app.screen, PathPrompt), "the path prompt")
        app.screen.query_one(Input).value = str(FIXTURES / "trl_orpo_recsys.json")
        await pilot.press("enter")
        await app_wait(pilot, lambda: len(getattr(app.screen, "sources", [])) == 2, "two sources")
        await pilot.press("f", "w")
        await app_wait(pilot, lambda: sum("panels.png" in m for m in "\n".join(notifications(app)).split("\n"))
                       == 2, "both sources' files", limit=120)
        written = sorted(p.name for p in (*tmp_path.glob("*.csv"), *tmp_path.glob("*.png")))
        assert written == ["trl_orpo_recsys-metrics.csv", "trl_orpo_recsys-panels.png",
                           "trl_sft_token_accuracy-metrics.csv", "trl_sft_token_accuracy-panels.png"]


# -- export from the TUI -------------------------------------------------------------------------


async def test_w_exports_the_run_as_csv_and_png_into_its_folder(tmp_path):
    from cockpit.ui.screens.live import LiveRunScreen

    run = make_run(tmp_path / "runs", "export-me", sft_records(range(1, 11)), state="finished")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("w")
        await app_wait(pilot, lambda: any("panels.png" in m for m in notifications(app)),
                       "the written paths", limit=60)
        header = (run.path / "metrics.csv").read_text().splitlines()[0].split(",")
        assert header[:2] == ["step", "kind"] and "loss" in header
        assert (run.path / "panels.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(run.path / "metrics.csv") in "\n".join(notifications(app))
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert "Export CSV+PNG" in palette
        assert isinstance(app.screen, LiveRunScreen)


async def test_w_in_a_replay_exports_the_shown_source_into_the_current_folder(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("w")
        await app_wait(pilot, lambda: any("panels.png" in m for m in notifications(app)),
                       "the written paths", limit=60)
        written = sorted(p.name for p in tmp_path.glob("*.csv")) + sorted(
            p.name for p in tmp_path.glob("*.png"))
        assert len(written) == 2 and all(n.startswith("trl_sft_token_accuracy-") for n in written)
