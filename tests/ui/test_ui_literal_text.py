"""Text from models, datasets, logs, file names and users is shown literally, everywhere.

A completion like `…A[oodbyedq` once took the whole TUI down (it was pasted into
markup). These tests put such text where a user meets it: a run folder whose
journal, log and name hold it, opened live, every tab visited, the completions
browsed, a stop asked for; a replay and a compare of it; a notification naming a
file; the help screen. A property test does the same with arbitrary strings.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from rich.text import Text

from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.text import one_line
from cockpit.ui.text import fold, printable
from helpers import make_run_folder
from helpers.ui import app_for, app_wait, notifications

pytestmark = pytest.mark.anyio
SIZE = (140, 44)

USER_REPORTED = ["…A[oodbyedq", "The answer is [1, 2", "a[0", "**[Note"]
MARKUP_PIECES = ["[", "]", "[/]", "[b]", "[/b]", "\\", "\\[", "$x", "[$warning]", "$", "[@click=app.quit]",
                 "[link=http://x]", ":smile:", "**", "[1, 2", "a[0", "\x1b[31m", "\r", "\n", "\t",
                 "[on red]", "[b", "=", " ", "'", '"', "…", "漢字", "🙂", "x"]
markupish = st.lists(st.sampled_from(MARKUP_PIECES), min_size=1, max_size=8).map("".join)
anything = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30)
texts = st.one_of(markupish, anything)


def plain(widget) -> str:
    """What a Static-like widget shows, as text (rendering it, as the screen does)."""
    visual = widget.render()
    return getattr(visual, "plain", None) or str(visual)


def shown_in(screen, selector: str) -> str:
    """What the widget `selector` shows ("" until its tab has built it)."""
    found = screen.query(selector)
    return plain(found.first()) if found else ""


def folder_name(text: str) -> str:
    """`text` as a directory name (what a file system accepts), keeping its markup-ish parts."""
    name = "".join(ch for ch in text if ch not in "/\x00")[:60].strip() or "run"
    return "run" + name if name in (".", "..") else name


def write_run(runs: Path, name: str, prompt: str, completion: str, key: str,
              warning: str) -> RunFolder:
    """A run folder written by hand: every piece of run text the screens show holds our strings."""
    records = [journal.run_started("grpo", max_steps=10), journal.phase("training")]
    for s in (1, 2):
        records.append(journal.metrics(s, {"loss": 1.0 / s, key: 0.5}))
        records.append(journal.completions(s, [
            {"prompt": prompt, "completion": completion, "rewards": {key: 1.0}, "advantage": 0.5},
            {"prompt": completion, "completion": prompt, "rewards": {key: 0.0}, "advantage": -0.5},
        ], source="trainer_logs"))
    records.append(journal.system({"cpu_percent": 10.0, key: 1.0}))
    records.append(journal.warning(warning, fix=completion, step=2))
    run = make_run_folder(runs, folder_name(name), state="running", records=records, trainer="grpo",
                          started=time.time(), here=False)
    run.stdout_log.write_text(f"{prompt}\n{completion}\r{warning}\n{END_OF_OUTPUT}\n", encoding="utf-8")
    return run


END_OF_OUTPUT = "end of the trainer's output"
"""The output's last line: the Output tab has read the whole file once it shows it (the lines
before may all be blank or carriage-returned away)."""


async def visit_everything(app, pilot, run: RunFolder, prompt: str, completion: str, key: str,
                           warning: str) -> None:
    """Open the run live, go through every tab and completion, ask to stop; check each shows
    our text as it is."""
    from textual.widgets import DataTable, Log, OptionList

    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.screens.metric_picker import MetricPicker
    from cockpit.ui.widgets.run.completions import CompletionsPane
    from cockpit.ui.widgets.run.log_history import LogHistoryTable

    await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.sources,
                   "the run loaded")
    screen = app.screen
    await app_wait(pilot, lambda: screen.query_one("#alert-bar").display, "the alert bar")
    assert printable(warning) in plain(screen.query_one("#alert-bar"))

    await pilot.press("2")
    pane = screen.query_one(CompletionsPane)
    table = pane.query_one(DataTable)
    await app_wait(pilot, lambda: table.row_count == 2, "two completions")
    table.focus()
    for row in (0, 1, 0):
        table.move_cursor(row=row)
        await pilot.pause()
        shown = plain(pane.query_one("#completions-text"))
        first, second = (prompt, completion) if row == 0 else (completion, prompt)
        assert f"prompt\n{printable(first)}\ncompletion\n{printable(second)}\n" in shown
    cells = table.get_row_at(0)
    assert all(isinstance(c, Text) for c in cells)  # a str cell is read as Rich markup
    assert cells[1].plain == fold(completion, 200)
    assert [str(c.label) for c in table.columns.values()][2] == fold(key, 18)
    await pilot.press("[")  # scrub to the older step and back
    await pilot.press("]")

    await pilot.press("3")
    history = screen.query_one(LogHistoryTable)
    await app_wait(pilot, lambda: history.row_count == 2, "two log rows")
    assert printable(key) in [c.label.plain for c in history.columns.values()]

    await pilot.press("4")
    log = screen.query_one("#output-log", Log)
    await app_wait(pilot, lambda: END_OF_OUTPUT in log.raw_lines, "the trainer's output")
    # A blank line of output is not kept, and terminal escapes in the trainer's output are
    # removed on purpose (progress bars move the cursor): only other text must stay literal.
    if not {"\r", "\n", "\x1b"} & set(prompt) and prompt.strip():
        assert printable(prompt) in log.raw_lines

    await pilot.press("5")
    await app_wait(pilot, lambda: printable(key) in shown_in(screen, "#system-pane"), "the system tab")

    await pilot.press("6")
    await app_wait(pilot, lambda: printable(warning) in shown_in(screen, "#alerts-list")
                   and printable(completion) in shown_in(screen, "#alerts-list"), "the alerts tab")

    await pilot.press("1", "m")  # the metric picker lists the key as it is
    await app_wait(pilot, lambda: isinstance(app.screen, MetricPicker), "the metric picker")
    options = app.screen.query_one(OptionList)
    assert key in [options.get_option_at_index(i).id for i in range(options.option_count)]
    await pilot.pause()
    await pilot.press("escape")

    await pilot.press("s")  # the question names the run
    await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the stop question")
    assert printable(run.name) in plain(app.screen.query_one(".dialog-question"))
    await pilot.press("n")
    await pilot.press("question_mark")
    await pilot.pause()
    await pilot.press("escape")
    await pilot.pause()
    assert app.is_running


async def replay_and_compare(app, pilot, run: RunFolder, missing: str) -> None:
    """Compare the run with itself and a path that does not exist: both labels shown, the
    missing path named in a notification as it is."""
    app.open_replay([str(run.path), str(run.path), missing])
    await app_wait(pilot, lambda: len(getattr(app.screen, "sources", [])) == 2, "two sources")
    await app_wait(pilot, lambda: any(missing in m for m in notifications(app)),
                   "the missing path named")
    await pilot.pause(0.3)
    assert app.is_running


async def test_the_reported_completions_do_not_take_the_tui_down(tmp_path):
    """The user's strings, in the completions pane (where it crashed) and everywhere else."""
    for i, text in enumerate(USER_REPORTED):
        runs = tmp_path / f"runs{i}"
        run = write_run(runs, f"run {text}", text, f"{text} more", f"reward/{text}", text)
        app = app_for(tmp_path, "live", [str(run.path)])
        async with app.run_test(size=SIZE) as pilot:
            await visit_everything(app, pilot, run, text, f"{text} more", f"reward/{text}", text)


# Each example opens the app and visits every screen (~5 s of CPU): few examples a run, and no
# shrinking (minutes a step); a failure is printed as found. Each run draws new ones, and the explicit
# examples (earlier finds) run every time. The suite draws 1; `.ci/run`'s crash sweep step draws
# more (COCKPIT_LITERAL_EXAMPLES).
FEW = settings(max_examples=int(os.environ.get("COCKPIT_LITERAL_EXAMPLES", "1")), deadline=None,
               suppress_health_check=list(HealthCheck),
               phases=(Phase.explicit, Phase.reuse, Phase.generate))


@FEW
@given(prompt=texts, completion=texts, key=texts, warning=texts)
@example(prompt="…A[oodbyedq", completion="[/b]\\", key="[$x]", warning="a\\[b]c[/]")
@example(prompt="\t", completion="\x87î\x06¤\x1eÉ\U000b202a", key="Â>Î", warning="[@click=app.quit]\r ")  # all blank
async def test_any_text_from_a_run_is_shown_literally_and_never_kills_the_app(
        prompt, completion, key, warning):
    """Completions, metric keys, warnings, fixes, trainer output, system keys, a runs folder
    and a missing file's name, all arbitrary (the run's own name is the test below)."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / folder_name(warning)
        run = write_run(runs, "run", prompt, completion, key, warning)
        app = app_for(Path(tmp), "live", [str(run.path)])
        async with app.run_test(size=SIZE) as pilot:
            await visit_everything(app, pilot, run, prompt, completion, key, warning)
            await replay_and_compare(app, pilot, run, str(Path(tmp) / folder_name(key) / "x.json"))


@FEW
@given(name=texts)
@example(name="\x1b[31m🙂[@click=app.quit]")
@example(name="[1, 2[b][link=http://x][1, 2\n[link=http://x][link=http://x][b")  # CI, 2026-11-28: cut, one line
async def test_any_run_name_is_shown_literally_in_every_screen(name):
    """Home's runs list, the live header, the stop question, a compare's header."""
    from cockpit.ui.widgets.home.runs_table import RunsTable
    from cockpit.ui.widgets.run.run_header import RunHeader

    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"
        run = write_run(runs, name, "prompt", "completion", "loss/x", "careful")
        app = app_for(Path(tmp))
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(RunsTable)
            await app_wait(pilot, lambda: table.row_count == 1, "the run listed")
            assert table.get_row_at(0)[0].plain == printable(run.name)
            app.open_live(str(run.path))
            await visit_everything(app, pilot, run, "prompt", "completion", "loss/x", "careful")
            assert one_line(run.name) in plain(app.screen.query_one(RunHeader))
            await replay_and_compare(app, pilot, run, str(Path(tmp) / "missing.json"))
            header = plain(app.screen.query_one(RunHeader))
            # both sources, named literally on the header's one line (a newline shows as ⏎), the
            # title cut with … where the line is too short for it
            expected = f"2 runs: {one_line(run.name)}, {one_line(run.name)}"
            title = header.split("\n")[0].rsplit(" · trainer ", 1)[0]
            assert title.startswith(expected) or (title.endswith("…") and expected.startswith(title[:-1])), header
