"""Rules added while a run goes (control/alerts.yaml, what the TUI writes): a real run under the
supervisor picks one up and fires it; a bad one is a journal warning and the run goes on."""

from __future__ import annotations

import pytest
import yaml

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch.plan import launch, stop
from cockpit.run import journal
from helpers import NO_SFT_CHECK, wait_for

pytestmark = pytest.mark.slow


def _records(run) -> list[journal.Record]:
    return journal.read_all(run.events)[0]


def _first_step(run) -> int | None:
    steps = [r.step for r in _records(run) if r.kind == journal.METRICS and r.step and not r.data.get("summary")]
    return steps[0] if steps else None


def test_a_rule_added_to_a_running_run_fires_and_a_bad_one_is_a_warning(runs_dir):
    preset = apply_overrides(load_preset("demo-sft"), ["max_steps=400", "logging_steps=1", "save_steps=1000",
                                                             NO_SFT_CHECK])
    preset.cockpit["builtin_alerts"] = False
    run = launch(preset, runs_dir)
    try:
        seen = wait_for(lambda: _first_step(run), timeout=300)
        (run.control / "alerts.yaml").write_text(yaml.safe_dump({"alerts": [
            {"metric": "loss", "above": 0.0, "do": ["stop_save"]},
            {"metric": "loss", "abov": 1},
        ]}), encoding="utf-8")
        wait_for(lambda: not run.read_status().live, timeout=300)
    finally:
        if run.read_status().live:
            stop(run, save=False, grace_s=2)
    records = _records(run)
    (alert,) = [r for r in records if r.kind == journal.ALERT]
    assert alert.data["rule"] == "loss > 0.0" and alert.step >= seen  # from the records the supervisor had not read yet
    assert alert.data["actions"][0]["action"] == "stop_save"
    warnings = [r.data["message"] for r in records if r.kind == journal.WARNING]
    assert "added alert rule: control/alerts.yaml[1]: unknown key 'abov' — did you mean 'above'?" in warnings
    assert run.read_status().state == "stopped"
    assert max(r.step for r in records if r.kind == journal.METRICS and r.step) < 400
