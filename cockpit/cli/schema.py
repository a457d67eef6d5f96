"""`cockpit schema`: the JSON Schema of the cockpit's own config, made from the typed models that
check it (so it cannot drift from them): the whole `cockpit:` section (`run/section.py`, with the
two below in their places), `cockpit.alerts` (a list of rules), `cockpit.launcher`, and a trainer's
description as `cockpit trainers --json` prints it. docs/schema/ holds a copy of each,
kept equal to these by a test; editors that read JSON Schema (YAML language servers) can use them."""

from __future__ import annotations

import argparse
import json
from typing import Any

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schemas() -> dict[str, dict[str, Any]]:
    """Each schema by name, from its model."""
    from pydantic import TypeAdapter

    from cockpit.alerts.rules import RuleSpec
    from cockpit.config.launcher import LauncherSpec
    from cockpit.run.section import CockpitSection
    from cockpit.trainers.registry import TrainerSpec

    alerts = TypeAdapter(list[RuleSpec]).json_schema(by_alias=True)
    launcher = LauncherSpec.model_json_schema()
    # What a preset may write besides the checked fields: a config TRL ships, by name.
    launcher["properties"]["config"] = {"type": "string", "title": "Config", "description":
                                        "an accelerate config TRL ships, by name (zero3, fsdp2, ...), or a path"}
    trainer = TypeAdapter(TrainerSpec).json_schema(mode="serialization")
    cockpit = CockpitSection.model_json_schema()
    for key, owned in (("launcher", launcher), ("alerts", alerts)):  # the models that check them, in place
        owned = dict(owned)
        cockpit.setdefault("$defs", {}).update(owned.pop("$defs", {}))
        cockpit["properties"][key] = {**owned, "description": cockpit["properties"][key].get("description", "")}
    out = {"alerts": alerts, "cockpit": cockpit, "launcher": launcher, "trainer": trainer}
    for name, schema in out.items():
        schema["$schema"] = SCHEMA_DIALECT
        schema.setdefault("title", f"cockpit {name}")
    return out


def cmd_schema(args: argparse.Namespace) -> int:
    found = schemas()
    print(json.dumps(found[args.name] if args.name else found, indent=2, sort_keys=True))
    return 0


def add_parsers(sub: Any) -> None:
    s = sub.add_parser("schema", help="the JSON Schema of the cockpit: section, cockpit.alerts, cockpit.launcher "
                       "or a trainer's description")
    s.add_argument("name", nargs="?", choices=("alerts", "cockpit", "launcher", "trainer"),
                   help="one schema (default: all)")
    s.set_defaults(func=cmd_schema)
