"""The project stands on its own: a clone with nothing beside it has everything it reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import FIXTURES, REPO

# A path that climbs out of the checkout, or names a folder that only exists beside it.
OUTSIDE = re.compile(r"\.\./(shared|seeds|fixtures)|(parents\[\d\]|\.parent)\s*/\s*[\"']shared|"
                     r"\bshared/(fixtures|seeds|tools)|TRL" r"-NOTES|DESIGN\.md|STYLE\.md")  # split on purpose


def _project_files(*tops: str) -> list[Path]:
    """The files git would submit under these folders (tracked, or new and not ignored): a bench
    venv or a build folder beside them is not the project."""
    import subprocess

    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *tops], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [REPO / line for line in out.splitlines() if (REPO / line).is_file()]


@pytest.mark.proc
def test_no_source_or_test_refers_outside_the_checkout():
    offenders = []
    for path in _project_files("cockpit", "tests", "docs", "bench"):
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


@pytest.mark.proc
def test_the_wheel_ships_every_preset_and_theme_and_finds_them(tmp_path):
    """`pip install .` (no -e) reads presets and themes from inside the package, as a checkout
    reads them from the top-level folders: both see the same files."""
    import subprocess
    import sys
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("cockpit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for top in ("presets", "themes"):
        shipped = {p.name for p in (REPO / top).iterdir() if p.is_file()}
        assert shipped and {f"cockpit/_data/{top}/{n}" for n in shipped} <= names, top
    # Every stylesheet travels next to the module whose CSS_PATH names it (hatchling ships every
    # file under cockpit/, so a screen moved into a package of its own keeps its .tcss).
    styles = {p.relative_to(REPO).as_posix() for p in (REPO / "cockpit").rglob("*.tcss")}
    assert "cockpit/ui/app.tcss" in styles and styles <= names, styles - names

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("from cockpit.paths import package_presets_dir; from cockpit.ui.themes import shipped_themes_dir;"
             "print(package_presets_dir()); print(shipped_themes_dir())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out == [str(site / "cockpit" / "_data" / "presets"), str(site / "cockpit" / "_data" / "themes")]


def test_tests_live_in_folders_by_kind_with_unique_module_names():
    """Every test module is in one of the four folders (docs/testing.md, Layout), and no two share
    a base name (pytest imports them by it: two would collide)."""
    from collections import Counter

    from helpers import REPO

    tests = REPO / "tests"
    kinds = {"unit", "ui", "processes", "field"}
    modules = sorted(tests.rglob("test_*.py"))
    misplaced = [str(p.relative_to(tests)) for p in modules
                 if p.parent.parent != tests or p.parent.name not in kinds]
    assert not misplaced, f"test modules outside tests/{{{','.join(sorted(kinds))}}}/: {misplaced}"
    dupes = [name for name, n in Counter(p.name for p in modules).items() if n > 1]
    assert not dupes, dupes
