"""The findings tab (key 7): a replay asks the judge and lists what it finds, the evidence is one
key away, and from a finding `j` jumps to the completions browser at its step and `J` to the
panel of its metric. A live run lists the findings its supervisor wrote."""

from __future__ import annotations

import shutil

import pytest

from cockpit.findings.model import Finding
from cockpit.run import journal
from helpers import REPO
from helpers.ui import SIZE, app_for, app_wait

pytestmark = pytest.mark.anyio
WASTED = REPO / "tests" / "fixtures" / "findings" / "grpo-wasted-groups"


async def test_a_replay_lists_the_judges_findings_with_the_evidence_and_jumps_to_their_data(tmp_path):
    from cockpit.ui.widgets.run.completions import CompletionsPane
    from cockpit.ui.widgets.run.findings_pane import FindingsTable
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    app = app_for(tmp_path, "replay", [str(WASTED)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("7")
        table = app.screen.query_one(FindingsTable)
        await app_wait(pilot, lambda: table.row_count == 2, "the findings listed")
        assert [f.kind for f in table.findings] == ["clipping", "wasted_groups"]
        await app_wait(pilot, lambda: app.screen.focused is table, "the table takes the focus")
        detail = app.screen.query_one("#findings-detail")
        await app_wait(pilot, lambda: "completions/clipped_ratio" in str(detail.render()), "evidence shown")
        await pilot.press("down")
        await app_wait(pilot, lambda: "prompts whose whole group got one reward" in str(detail.render()),
                       "the highlighted finding's evidence")
        await pilot.press("enter")
        await app_wait(pilot, lambda: not table.display or table.styles.display == "none", "evidence alone")
        await pilot.press("enter")
        await app_wait(pilot, lambda: app.screen.focused is table, "back to the list")

        await pilot.press("up", "j")
        pane = app.screen.query_one(CompletionsPane)
        await app_wait(pilot, lambda: app.screen.query_one("#run-tabs").active == "completions", "completions tab")
        first_step = next(e["step"] for e in table.findings[0].evidence if e["type"] == "completions")
        await app_wait(pilot, lambda: pane.shown_step() == first_step, "the finding's step shown")

        await pilot.press("7")
        await app_wait(pilot, lambda: app.screen.focused is table, "back on the findings")
        await pilot.press("down", "J")
        await app_wait(pilot, lambda: app.screen.query_one("#run-tabs").active == "plots", "plots tab")
        await app_wait(pilot, lambda: isinstance(app.screen.focused, MetricPlot)
                       and app.screen.focused.panel.resolve(["frac_reward_zero_std"]) == ["frac_reward_zero_std"],
                       "the metric's panel, focused")


async def test_a_live_run_lists_the_findings_its_supervisor_wrote_and_judges_it_whole_once_ended(tmp_path):
    from cockpit.ui.widgets.run.findings_pane import FindingsTable

    runs = tmp_path / "runs"
    runs.mkdir()
    run_dir = runs / WASTED.name
    shutil.copytree(WASTED, run_dir)
    events = run_dir / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    events.write_text("".join(line for line in lines if '"kind":"run_ended"' not in line))  # still going
    with journal.JournalWriter(events) as jw:
        jw.write(Finding("reward_hacking", (4, 15), "warning", "reward rose [b]while[/b] entropy fell",
                         "fix the reward").to_record())
    app = app_for(tmp_path, "live", [str(run_dir)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        table = app.screen.query_one(FindingsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the recorded finding listed")
        assert table.findings[0].kind == "reward_hacking"
        detail = str(app.screen.query_one("#findings-detail").render())
        assert "reward rose [b]while[/b] entropy fell" in detail  # text from runs is never markup
        with journal.JournalWriter(events) as jw:
            jw.write(journal.run_ended("killed", reason="stopped by request (SIGTERM)", step=19))
        await app_wait(pilot, lambda: table.row_count == 3, "judged whole once it ended")
        assert [f.kind for f in table.findings] == ["clipping", "wasted_groups", "reward_hacking"]


async def test_a_run_with_no_finding_says_what_was_checked_and_offers_no_row_keys(tmp_path):
    """The empty state: which rules ran over how many steps, the number that kept each quiet, and
    no Enter/g/p for rows that do not exist."""
    from cockpit.ui.widgets.run.findings_pane import FindingsPane, FindingsTable
    from helpers import FIXTURES

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("7")
        pane = app.screen.query_one(FindingsPane)
        detail = app.screen.query_one("#findings-detail")
        await app_wait(pilot, lambda: "checked " in str(detail.render()), "what was checked")
        text = str(detail.render())
        assert "for sft over 30 steps" in text and "quiet" in text and "lr_zero" in text
        assert "not run" in text and "overfitting" in text
        title = str(app.screen.query_one("#findings-title").render())
        assert title.startswith("No findings") and "Enter" not in title
        assert pane.has_class("-empty") and not app.screen.query_one(FindingsTable).has_focus


async def test_i_on_a_panel_says_what_its_metric_means_and_the_picker_says_it_too(tmp_path):
    from cockpit.ui.screens.glossary import GlossaryScreen
    from cockpit.ui.screens.metric_picker import MetricPicker
    from helpers import FIXTURES

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json")])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("tab", "i")
        await app_wait(pilot, lambda: isinstance(app.screen, GlossaryScreen), "the glossary")
        text = str(app.screen.query_one("#glossary-text").render())
        assert "loss" in text and "0.693" in text and "healthy" in text  # DPO's loss, in DPO's words
        await pilot.pause()
        dialog = app.screen.query_one(".dialog")
        lines = app.screen.query_one("#glossary-text").region.height
        assert dialog.region.height <= lines + 8, (dialog.region.height, lines)  # as tall as what it says
        await pilot.press("escape")
        await app_wait(pilot, lambda: not isinstance(app.screen, GlossaryScreen), "closed")
        await pilot.press("m")
        await app_wait(pilot, lambda: isinstance(app.screen, MetricPicker), "the picker")
        await pilot.press(*"margins")
        meaning = app.screen.query_one("#picker-meaning")
        await app_wait(pilot, lambda: "chosen reward minus rejected" in str(meaning.render()), "its meaning")
