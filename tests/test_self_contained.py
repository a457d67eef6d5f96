"""The project stands on its own: a clone with nothing beside it has everything it reads."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import FIXTURES, REPO

# A path that climbs out of the checkout, or names a folder that only exists beside it.
OUTSIDE = re.compile(r"\.\./(shared|seeds|fixtures)|parents\[[2-9]\]|\bshared/(fixtures|seeds|tools)|"
                     r"TRL-NOTES|DESIGN\.md|STYLE\.md")


def test_no_source_or_test_refers_outside_the_checkout():
    offenders = []
    for top in ("cockpit", "tests", "docs", "bench"):
        for path in (REPO / top).rglob("*"):
            if path.suffix not in {".py", ".md", ".tcss", ".toml", ".yaml"} or "fixtures" in path.parts:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line) and path.name != Path(__file__).name:
                    offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_trainer_state_fixtures_live_in_the_checkout_with_their_provenance():
    assert FIXTURES.is_relative_to(REPO)
    provenance = (FIXTURES / "PROVENANCE.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in FIXTURES.glob("*.json"))
    assert len(files) >= 8
    for name in files:
        assert f"`{name}`" in provenance, f"{name} has no provenance row"
