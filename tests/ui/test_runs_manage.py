"""Renaming and archiving a run (issue 30, §5 "Runs table"): the real CLI on a finished run folder
laid out as a launch leaves it (run.yaml and trl.yaml naming its output/ relative to the folder, or
by absolute path as an older launch wrote them, a complete checkpoint), then the readers on the
moved run, nothing in it rewritten; a folder moved by hand; a live run refused; the home keys
driven with Pilot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cockpit.run.folder import RunFolder
from cockpit.run.section import output_dir
from helpers import checkpoint_folder, cli, live, make_run_folder, no_traceback
from helpers.ui import app_for, app_wait, make_run, notifications, row_of, runs_listed, sft_records


def finished_run(runs: Path, name: str, *, older: bool = False) -> RunFolder:
    """A finished SFT run of 3 steps whose files name its output/ as `launch` writes them (relative
    to the folder), or `older`: by absolute path, as a launch before issue 45 did."""
    run = make_run_folder(runs, name)
    out = run.output.resolve() if older else "output"
    run.run_yaml.write_text(f"trainer: sft\nmodel_name_or_path: demo:models/tiny-lm\noutput_dir: {out}\n"
                            "max_steps: 3\ncockpit:\n  name: sft\n", encoding="utf-8")
    run.trl_yaml.write_text(f"output_dir: {out}\nmax_steps: 3\n", encoding="utf-8")
    run.command_txt.write_text(f"# what cockpit runs:\npython -m cockpit.runner {run.path.resolve()}\n"
                               f"trl sft --config {run.path.resolve()}/trl.yaml\n", encoding="utf-8")
    checkpoint_folder(run.output, 3)
    return run


@pytest.mark.parametrize("older", [False, True], ids=["relative", "older-absolute"])
def test_a_renamed_run_is_read_where_it_now_is_by_checkpoints_export_resume_and_replay(runs_dir, tmp_path, older):
    run = finished_run(runs_dir, "sft-20260101-000000", older=older)
    files = {name: (run.path / name).read_bytes() for name in ("run.yaml", "trl.yaml", "command.txt")}
    said = cli("rename", "sft-2026", "lr-sweep-a", "--runs-dir", str(runs_dir))
    assert said.returncode == 0, said.stderr
    moved = RunFolder(runs_dir / "lr-sweep-a")
    assert said.stdout.strip() == str(moved.path) and not run.path.exists() and moved.exists()
    for name, was in files.items():  # nothing rewritten: an older folder's absolute paths are read where it is
        assert (moved.path / name).read_bytes() == was, name
    assert output_dir(moved) == moved.output.resolve()
    listed = cli("runs", "--runs-dir", str(runs_dir))
    assert "lr-sweep-a" in listed.stdout and "sft-2026" not in listed.stdout
    ckpts = cli("checkpoints", "lr-sweep-a", "--runs-dir", str(runs_dir))
    assert ckpts.returncode == 0 and str(moved.path.resolve() / "output") in ckpts.stdout, ckpts.stderr
    assert "complete" in ckpts.stdout
    # Resume looks for its checkpoint in the moved output/ (in the old one it would find none).
    resumed = cli("resume", "lr-sweep-a", "--runs-dir", str(runs_dir))
    assert resumed.returncode == 2 and "already finished at step 3 of 3" in resumed.stderr, resumed.stderr
    csv = tmp_path / "m.csv"
    exported = cli("export", "lr-sweep-a", "--csv", str(csv), "--runs-dir", str(runs_dir))
    assert exported.returncode == 0, exported.stderr
    assert csv.read_text().splitlines()[1:4] == ["1,train,0.0001,2", "2,train,0.0001,1",
                                                 "3,train,0.0001,0.6666666666666666"]
    from cockpit.metrics.sources import open_source
    from cockpit.run import journal

    source = open_source(moved.path)  # what `cockpit replay lr-sweep-a` opens
    assert source.journal_records is not None
    assert [r.step for r in source.journal_records if r.kind == journal.METRICS] == [1, 2, 3]


@pytest.mark.parametrize(("name", "why"), [("a/b", "without a slash"), (".hidden", "not a plain folder name"),
                                           ("-x", "not a plain folder name"), ("x" * 201, "at most 200"),
                                           ("taken", "already in")])
def test_rename_refuses_a_name_that_is_a_path_hidden_too_long_or_taken(runs_dir, name, why):
    run = finished_run(runs_dir, "first")
    make_run_folder(runs_dir, "taken")
    said = cli("rename", "--runs-dir", str(runs_dir), "--", "first", name)
    assert said.returncode == 2 and why in said.stderr and len(said.stderr.splitlines()) == 1, said.stderr
    no_traceback(said)
    assert run.exists() and output_dir(run) == run.output.resolve()


def test_a_live_run_is_neither_renamed_nor_archived_and_a_link_is_not_followed(runs_dir, tmp_path):
    run = live(finished_run(runs_dir, "busy"))
    for args in (("rename", "busy", "other"), ("archive", "busy")):
        said = cli(*args, "--runs-dir", str(runs_dir))
        assert said.returncode != 0 and "busy is running — stop it first" in said.stderr, said.stderr
        assert len(said.stderr.splitlines()) == 1
    assert run.exists() and not (runs_dir / "other").exists() and not (runs_dir / ".archive" / "busy").exists()
    # A .archive that is a link to a folder elsewhere: the run is not moved out of the runs folder.
    done = finished_run(runs_dir, "done")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (runs_dir / ".archive").symlink_to(elsewhere)
    said = cli("archive", "done", "--runs-dir", str(runs_dir))
    assert said.returncode == 1 and "not a folder of the runs folder's own" in said.stderr, said.stderr
    assert done.exists() and not any(elsewhere.iterdir())


def test_archive_hides_runs_from_the_list_and_undo_brings_them_back(runs_dir):
    finished_run(runs_dir, "old-a")
    finished_run(runs_dir, "old-b")
    finished_run(runs_dir, "kept")
    said = cli("archive", "old-a", "old-b", "nope", "--runs-dir", str(runs_dir))
    # Every run that can go goes; the one that cannot is named on its own line.
    assert said.returncode == 1 and said.stderr.count("\n") == 1 and "nope: no such run" in said.stderr
    assert {Path(p).name for p in said.stdout.split()} == {"old-a", "old-b"}
    listed = cli("runs", "--runs-dir", str(runs_dir)).stdout
    assert "kept" in listed and "old-a" not in listed and ".archive" not in listed
    archived = cli("runs", "--archived", "--runs-dir", str(runs_dir)).stdout
    assert "old-a" in archived and "old-b" in archived and "kept" not in archived
    # An archived run is still read where it is (its paths are its own, relative to it).
    archived_a = RunFolder(runs_dir / ".archive" / "old-a")
    assert output_dir(archived_a) == archived_a.output.resolve()
    back = cli("archive", "--undo", "old-a", "--runs-dir", str(runs_dir))
    assert back.returncode == 0, back.stderr
    assert "old-a" in cli("runs", "--runs-dir", str(runs_dir)).stdout
    assert output_dir(RunFolder(runs_dir / "old-a")) == (runs_dir / "old-a" / "output").resolve()


def test_a_run_with_a_broken_run_yaml_is_renamed_all_the_same(runs_dir):
    run = finished_run(runs_dir, "broken")
    run.run_yaml.write_text("trainer: [sft\n", encoding="utf-8")
    said = cli("rename", "broken", "mended", "--runs-dir", str(runs_dir))
    assert said.returncode == 0, said.stderr
    moved = runs_dir / "mended"
    assert (moved / "run.yaml").read_text() == "trainer: [sft\n"  # left as it was, for the user to fix


@pytest.mark.parametrize("older", [False, True], ids=["relative", "older-absolute"])
def test_a_folder_moved_by_hand_keeps_its_checkpoints(runs_dir, tmp_path, older):
    """`mv` with no cockpit in the loop, to another runs folder under another name: its checkpoints
    are found where the folder is now, by the listing and by resume."""
    run = finished_run(runs_dir, "sft-20260101-000000", older=older)
    elsewhere = tmp_path / "other-runs"
    elsewhere.mkdir()
    os.rename(run.path, elsewhere / "kept-by-hand")
    moved = RunFolder(elsewhere / "kept-by-hand")
    assert output_dir(moved) == moved.output.resolve()
    from cockpit.launch.plan import resume_checkpoint
    from cockpit.metrics.checkpoints import list_run_checkpoints

    assert resume_checkpoint(moved) == moved.output.resolve() / "checkpoint-3"
    assert [c.name for c in list_run_checkpoints(moved.path).checkpoints] == ["checkpoint-3"]



@pytest.mark.anyio
async def test_home_renames_a_run_keeps_the_cursor_on_it_archives_the_marked_ones_and_brings_one_back(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.name_prompt import NamePrompt

    runs = tmp_path / "runs"
    busy = live(make_run(runs, "busy", sft_records(range(1, 5)), state="running"))
    first = make_run(runs, "first", sft_records(range(1, 11)), state="finished")
    second = make_run(runs, "second", sft_records(range(1, 11)), state="stopped")
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = await runs_listed(app, pilot, 3)

        table.move_cursor(row=row_of(table, busy.path))
        await pilot.press("R")
        await app_wait(pilot, lambda: any("stop it first, then rename" in n for n in notifications(app)), "refused")
        assert not isinstance(app.screen, NamePrompt)
        table.move_cursor(row=row_of(table, first.path))
        await pilot.press("R")
        await app_wait(pilot, lambda: isinstance(app.screen, NamePrompt), "the name asked")
        prompt = app.screen
        await pilot.press("ctrl+u", *"bad/name", "enter")
        await app_wait(pilot, lambda: "without a slash" in str(prompt.query_one("#name-problem").render()),
                       "a bad name said")
        assert isinstance(app.screen, NamePrompt)
        await pilot.press("ctrl+u", *"best-run", "enter")
        renamed = str(runs / "best-run")
        await app_wait(pilot, lambda: any(r.path == renamed for r in table.summaries), "listed under its new name")
        await app_wait(pilot, lambda: table.highlighted_path() == renamed, "the cursor on it")
        assert not first.path.exists()
        # A: the marked runs archived, after a yes; the list no longer shows them.
        for path in (renamed, second.path):
            table.move_cursor(row=row_of(table, path))
            await pilot.press("space")
        await pilot.press("A")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked first")
        await pilot.press("y")
        await app_wait(pilot, lambda: table.row_count == 1, "archived out of the list")
        assert sorted(p.name for p in (runs / ".archive").iterdir()) == ["best-run", second.path.name]
        assert busy.path.is_dir()
        # v: the archived runs; U brings the highlighted one back; v again: the runs, with it.
        await pilot.press("v")
        title = app.screen.query_one("#runs-title")
        await app_wait(pilot, lambda: table.row_count == 2 and "Archived runs" in str(title.render()),
                       "the archived runs listed")
        back = str(runs / ".archive" / "best-run")
        table.move_cursor(row=row_of(table, back))
        await pilot.press("A")  # archiving has no meaning here
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("U")
        await app_wait(pilot, lambda: table.row_count == 1, "brought back out of the archive")
        assert (runs / "best-run").is_dir()
        await pilot.press("v")
        await app_wait(pilot, lambda: {Path(r.path).name for r in table.summaries} == {"best-run", busy.path.name},
                       "the runs again, with it")


@pytest.mark.anyio
async def test_compare_clears_the_marks_and_archive_then_takes_the_highlighted_run(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.home.runs_table import RunsTable

    runs = tmp_path / "runs"
    a = make_run(runs, "a", sft_records(range(1, 6)), state="finished")
    b = make_run(runs, "b", sft_records(range(1, 6)), state="finished")
    c = make_run(runs, "c", sft_records(range(1, 6)), state="finished")
    app = app_for(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        table = await runs_listed(app, pilot, 3)

        for run in (a, b):
            table.move_cursor(row=row_of(table, run.path))
            await pilot.press("space")
        await pilot.press("c")
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen), "the compare")
        await pilot.press("escape")
        await app_wait(pilot, lambda: not isinstance(app.screen, ReplayScreen), "home again")
        table = app.screen.query_one(RunsTable)
        assert table.marked == []
        assert not any(str(table.get_row_at(i)[0]).startswith("✓") for i in range(table.row_count))
        table.move_cursor(row=row_of(table, c.path))
        await pilot.press("A")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked first")
        await pilot.press("y")
        await app_wait(pilot, lambda: table.row_count == 2, "archived out of the list")
        assert [p.name for p in (runs / ".archive").iterdir()] == [c.path.name]  # the highlighted run


def test_a_runs_age_counts_from_its_start_not_from_a_rename_or_an_unarchive(runs_dir):
    import time

    from cockpit.run.folder import Status
    from cockpit.run.manage import archive_run, rename_run, unarchive_run
    from cockpit.run.summaries import run_summaries

    run = make_run(runs_dir, "old", sft_records(range(1, 4)), state="finished")
    three_days = time.time() - 3 * 86400
    run.write_status(Status(state="finished", name=run.name, trainer="sft", started=three_days,
                            ended=three_days + 60))
    run = rename_run(run, "renamed")
    run = unarchive_run(archive_run(run))
    [row] = run_summaries(runs_dir)
    assert row.name == "renamed" and abs(row.created - three_days) < 1
