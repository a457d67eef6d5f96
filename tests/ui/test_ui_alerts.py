"""Alerts in the TUI (issue 14): the alerts tab lists a run's rules with their last firing, a
firing seen while attached rings the bell and shows in the bar, a mute goes to control/mute.json
and a rule added from a plot to control/alerts.yaml — the files the supervisor reads."""

from __future__ import annotations

import json

import pytest
import yaml

from cockpit.alerts.board import AlertBoard, add_rule, alert_records, read_sources, set_muted
from cockpit.run import journal
from helpers.ui import SIZE, app_for, app_wait, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio

RUN_YAML = """\
trainer: sft
cockpit:
  alerts:
    - {metric: loss, above: 1.5, do: [notify]}
"""


def fired(rule: str, message: str, step: int, *, key: str = "loss", value: float = 2.0) -> journal.Record:
    return journal.alert(rule, message, key=key, value=value, step=step,
                         actions=[{"action": "notify", "ok": False, "detail": "no notify targets"}])


async def test_the_alerts_tab_lists_the_rules_with_their_last_firing_and_mutes_one(tmp_path):
    from cockpit.ui.widgets.run.alerts_list import RulesTable

    run = make_run(tmp_path / "runs", "alerting", [*sft_records(range(1, 6)),
                                                   fired("loss > 1.5", "loss = 2 at step 1 (above 1.5)", 1)])
    run.run_yaml.write_text(RUN_YAML, encoding="utf-8")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        table = app.screen.query_one(RulesTable)
        await app_wait(pilot, lambda: table.row_count > 1, "the rules listed")
        names = [e.name for e in table.entries]
        assert names[0] == "loss > 1.5" and table.entries[0].source == "preset"
        assert {"loss is NaN", "no new step for 30 minutes"} <= set(names)  # the built-in set
        first = table.get_row_at(0)
        assert "@ 1" in str(first[4]) and "loss = 2 at step 1" in str(first[5])
        assert "failed: no notify targets" in str(first[5])
        assert str(table.get_row_at(1)[4]) == "never"
        history = str(app.screen.query_one("#alerts-list").render())
        assert "! loss > 1.5" in history

        table.focus()
        await pilot.press("enter")
        mute = run.control / "mute.json"
        await app_wait(pilot, mute.exists, "control/mute.json written")
        assert json.loads(mute.read_text()) == ["loss > 1.5"]
        await app_wait(pilot, lambda: table.entries[0].muted and "muted" in str(table.get_row_at(0)[0]),
                       "shown muted")
        await pilot.press("enter")
        await app_wait(pilot, lambda: json.loads(mute.read_text()) == [], "unmuted")


async def test_an_alert_fired_while_attached_rings_and_shows_in_the_bar_and_its_plot(tmp_path):
    from cockpit.ui.widgets.run.alert_bar import AlertBar
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    run = make_run(tmp_path / "runs", "ringing", sft_records(range(1, 6)))
    run.run_yaml.write_text(RUN_YAML, encoding="utf-8")
    app = app_for(tmp_path, "live", [str(run.path)])
    bells = []
    app.bell = lambda: bells.append(1)
    async with app.run_test(size=SIZE) as pilot:
        grid = app.screen.query_one(PlotGrid)
        await app_wait(pilot, lambda: grid.plots(), "the plots")
        bar = app.screen.query_one(AlertBar)
        assert not bells
        with journal.JournalWriter(run.events) as jw:
            jw.write(fired("loss > 1.5", "loss = 2 at step 6 (above 1.5)", 6))
        await app_wait(pilot, lambda: bells, "the bell")
        await app_wait(pilot, lambda: "! loss > 1.5" in str(bar.render()), "the bar")
        assert bar.display and bar.has_class("-ring")
        loss_plots = [p for p in grid.plots() if "loss" in p.panel.keys]
        assert loss_plots and all(p.has_class("-alerting") for p in loss_plots)
        # notify() posts a message to the app: the notification arrives on its next turn
        await app_wait(pilot, lambda: any("loss = 2 at step 6" in m for m in notifications(app)),
                       "the notification")


async def test_a_rule_added_from_a_focused_plot_reaches_control_alerts_yaml(tmp_path):
    from cockpit.ui.screens.add_rule import AddRuleScreen
    from cockpit.ui.widgets.run.alerts_list import RulesTable
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    run = make_run(tmp_path / "runs", "adding", sft_records(range(1, 6)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        grid = app.screen.query_one(PlotGrid)
        await app_wait(pilot, lambda: grid.plots(), "the plots")
        plot = next(p for p in grid.plots() if "grad_norm" in p.panel.keys)
        plot.focus()
        await pilot.press("a")
        await app_wait(pilot, lambda: isinstance(app.screen, AddRuleScreen), "the question")
        dialog = app.screen
        from textual.widgets import Input, Select

        assert dialog.query_one("#rule-metric", Select).value == "grad_norm"
        threshold = dialog.query_one("#rule-threshold", Input)
        assert threshold.value == "1.5"  # what it is now, to start from
        threshold.value = ""
        await pilot.press(*"3")
        dialog.query_one("#rule-for", Input).value = "2"
        await pilot.press("enter")
        added = run.control / "alerts.yaml"
        await app_wait(pilot, added.exists, "control/alerts.yaml")
        assert yaml.safe_load(added.read_text()) == {
            "alerts": [{"metric": "grad_norm", "above": 3.0, "do": ["journal"], "for": 2}]}  # no notify targets
        await pilot.press("6")
        table = app.screen.query_one(RulesTable)
        await app_wait(pilot, lambda: any(e.source == "added" for e in table.entries), "listed as added")
        assert next(e for e in table.entries if e.source == "added").name == "grad_norm > 3.0 for 2 steps"


def test_the_board_reads_what_the_supervisor_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "alerts.yaml").write_text("alerts:\n  - {event: run_ended}\n", encoding="utf-8")
    run = make_run(tmp_path / "runs", "board", [fired("x", "m", 1), journal.metrics(2, {"loss": 1.0})])
    run.run_yaml.write_text("trainer: script\ncockpit:\n  builtin_alerts: false\n  alerts: [{metric: loss, abov: 1}]\n",
                            encoding="utf-8")
    add_rule(run, {"metric": "loss", "below": 0.1, "do": ["journal"]})
    with pytest.raises(Exception, match="already watched"):
        add_rule(run, {"metric": "loss", "below": 0.1, "do": ["journal"]})
    set_muted(run, "run_ended", True)
    board = AlertBoard()
    board.set_sources(read_sources(run))
    board.feed(alert_records(run.events))
    entries = board.entries("grpo")  # builtin_alerts: false — none even once the trainer is known
    assert [(e.source, e.name, e.muted) for e in entries] == [
        ("user", "run_ended", True), ("added", "loss < 0.1", False), ("fired", "x", False)]
    assert board.sources.problems == ["cockpit.alerts[0]: unknown key 'abov' — did you mean 'above'?"]


def test_the_add_rule_question_offers_actions_the_rule_syntax_knows():
    from cockpit.alerts.rules import ACTIONS as RULE_ACTIONS
    from cockpit.ui.screens.add_rule import ACTIONS

    assert {action for _, action in ACTIONS} <= set(RULE_ACTIONS)


# -- the add-rule dialog ----------------------------------------------------------------------------


@pytest.mark.parametrize("state, targets, action, when", [
    ("running", False, "journal", "from its next poll"),
    ("running", True, "notify", "from its next poll"),
    ("stopped", False, "journal", "once it is resumed"),
])
async def test_the_add_rule_dialog_offers_notify_only_with_targets_and_says_when_like_the_note(
        tmp_path, state, targets, action, when):
    import yaml
    from textual.widgets import Select, Static

    from cockpit.ui.screens.add_rule import AddRuleScreen

    run = make_run(tmp_path / "runs", "rules", sft_records(range(1, 6)), state=state)
    if targets:
        run.run_yaml.write_text("trainer: sft\ncockpit:\n  notify: {ntfy: 'https://ntfy.example/t'}\n")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources and app.screen.state == state, "loaded")
        await pilot.press("a")
        await app_wait(pilot, lambda: isinstance(app.screen, AddRuleScreen), "the dialog")
        dialog = app.screen
        assert dialog.query_one("#rule-action", Select).value == action
        assert when in str(dialog.query_one("#rule-hint", Static).render())
        await pilot.press("enter")
        added = run.control / "alerts.yaml"
        await app_wait(pilot, added.exists, "control/alerts.yaml")
        assert yaml.safe_load(added.read_text())["alerts"][0]["do"] == [action]
        await app_wait(pilot, lambda: any(m.startswith("watching") and when in m for m in notifications(app)),
                       "the note says the same")
