"""Colours come from the theme: widgets name theme variables, so every theme (and a switch of
theme while the app runs) colours them."""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import pytest

from helpers.ui import app_for, app_wait, make_run, sft_records

pytestmark = pytest.mark.anyio

UI = Path(__file__).resolve().parents[2] / "cockpit" / "ui"
FIXED_COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b|\brgba?\(|\b(?:bright_)?(?:red|green|yellow|blue|magenta|"
                          r"cyan|white|black|grey|gray|orange|purple)\d*\b")
MARKUP_TAG = re.compile(r"\[(/?[^\[\]\n]*)\]")
STYLE_PHRASE = re.compile(r"(?:(?:bold|dim|italic|underline|reverse|not|on)\s+)*(?:bright_)?[a-z]+\d*"
                          r"(?:\s+on\s+(?:bright_)?[a-z]+\d*)?")
"""A whole string that reads as a Rich style ("bold red", "cyan"): a style table's value."""


def fixed_colours() -> list[str]:
    """Rich/markup styles and TCSS values in cockpit/ui that name a colour instead of a theme
    variable, as `file:line: text`."""
    out = []
    for path in sorted(UI.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            styles: list[str] = []
            if isinstance(node, ast.keyword) and node.arg and node.arg.endswith("style") \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                styles.append(node.value.value)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                styles += MARKUP_TAG.findall(node.value)
                if STYLE_PHRASE.fullmatch(node.value):
                    styles.append(node.value)
                if re.search(r"(?m)^\s*(color|background|border[a-z-]*|tint)\s*:", node.value):
                    styles += re.findall(r"(?m)^\s*(?:color|background|border[a-z-]*|tint)\s*:(.*)$",
                                         node.value)
            out += [f"{path.relative_to(UI)}:{getattr(node, 'lineno', '?')}: {s}" for s in styles
                    if FIXED_COLOUR.search(re.sub(r"\$[\w-]+", "", s))]
    for path in sorted(UI.rglob("*.tcss")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            _, colon, value = line.partition(":")
            if colon and not line.lstrip().startswith(("/*", "#", ".", "&")) \
                    and FIXED_COLOUR.search(re.sub(r"\$[\w-]+", "", value)):
                out.append(f"{path.relative_to(UI)}:{i}: {line.strip()}")
    return out


def test_the_ui_names_no_fixed_colours():
    assert fixed_colours() == []


async def test_rich_styles_are_resolved_from_the_current_theme(tmp_path):
    from rich.style import Style
    from textual.color import Color

    from cockpit.ui.colors import rich_style

    app = app_for(tmp_path)
    async with app.run_test():
        style = rich_style(app, "bold $error on $panel")
        assert style.bold
        assert style.color == Color.parse(app.theme_variables["error"]).rich_color
        assert style.bgcolor == Color.parse(app.theme_variables["panel"]).rich_color
        # Not a plain colour, or not a variable of the theme: left out, not guessed.
        assert rich_style(app, "dim $text-muted $no-such-variable") == Style.parse("dim")


async def test_run_states_take_the_colours_of_the_theme_in_use(tmp_path):
    from textual.color import Color

    from cockpit.ui.widgets.home.runs_table import RunsTable

    make_run(tmp_path / "runs", "going", sft_records(range(1, 4)), state="running")
    app = app_for(tmp_path, theme="cockpit-night")
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1, "the run listed")

        def state_colour():
            return table.get_cell_at((0, 1)).style.color

        def success():
            return Color.parse(app.theme_variables["success"]).rich_color

        night = success()
        assert state_colour() == night
        app.theme = "cockpit-day"
        deadline = time.monotonic() + 5
        while state_colour() == night and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert state_colour() == success() != night
        assert table.get_cell_at((0, 1)).style.bold
