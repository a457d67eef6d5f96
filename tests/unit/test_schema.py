"""The JSON Schema of the cockpit's own config comes from the models that check it, and the copies
in docs/schema/ are those schemas."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cockpit.alerts.rules import parse_rules
from cockpit.cli.schema import schemas
from cockpit.errors import CockpitError
from helpers import cockpit_cmd

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schema"


@pytest.mark.parametrize("name", ["alerts", "cockpit", "launcher", "trainer"])
def test_the_schema_copy_in_docs_is_the_models(name):
    written = json.loads((DOCS / f"{name}.json").read_text(encoding="utf-8"))
    assert written == schemas()[name], f"refresh it: cockpit schema {name} > docs/schema/{name}.json"


def test_the_alert_schema_names_every_key_a_rule_may_hold():
    rule = schemas()["alerts"]["$defs"]["RuleSpec"]
    assert rule["additionalProperties"] is False
    assert {"for", "is", "metric", "do", "floor", "finding"} <= set(rule["properties"])
    with pytest.raises(CockpitError, match="unknown key 'bogus'"):
        parse_rules([{"metric": "loss", "above": 1, "bogus": 2}])


@pytest.mark.proc
def test_cockpit_schema_prints_one_schema_as_json():
    proc = subprocess.run(cockpit_cmd("schema", "launcher"), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["properties"]["kind"]["enum"] == ["python", "torchrun", "accelerate", "slurm"]
