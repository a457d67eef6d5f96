"""The user's keymap.toml remaps keys by binding id; entries that cannot work are reported in one
notification with their fix, never a crash; docs/keys.md lists every id the code declares."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui_helpers import SIZE, app_for, app_wait, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[1] / "docs" / "keys.md"


def keymap(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keymap.toml"
    path.write_text(text, encoding="utf-8")
    return path


def open_live(tmp_path: Path, keymap_file: Path):
    from cockpit.ui.screens.live import LiveRunScreen

    run = make_run(tmp_path / "runs", "keyed", sft_records(range(1, 4)))
    app = app_for(tmp_path, "live", [str(run.path)], keymap_file=keymap_file)
    return run, app, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.state


async def test_a_remapped_stop_key_asks_to_stop_and_the_old_key_does_nothing(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen

    run, app, live = open_live(tmp_path, keymap(tmp_path, '"live.stop_save" = "ctrl+s"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, live, "live screen with a state")
        await pilot.press("s")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirmation")
        await pilot.press("y")
        await app_wait(pilot, lambda: run.pending_request("stop_save"), "stop_save request")
        assert not notifications(app) or all("keymap" not in n for n in notifications(app))


async def test_a_home_key_remapped_with_a_table_works_and_help_shows_it_with_its_id(tmp_path):
    from textual.widgets import Static

    from cockpit.ui.screens.help import HelpScreen
    from cockpit.ui.screens.setup import SetupScreen

    app = app_for(tmp_path, keymap_file=keymap(tmp_path, '[home]\nnew_run = "N"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await app_wait(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
        body = "\n".join(str(s.render()) for s in app.screen.query(Static))
        line = next(x for x in body.splitlines() if "New run" in x)
        assert line.split()[0] == "N" and line.split()[-1] == "home.new_run"
        await pilot.press("escape")
        await app_wait(pilot, lambda: not isinstance(app.screen, HelpScreen), "help closed")
        await pilot.press("N")
        await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen), "the new run form")


async def test_a_bad_entry_is_one_line_naming_it_and_the_fix_and_the_rest_applies(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen

    path = keymap(tmp_path, '"live.stop_sav" = "x"\n"live.stop_save" = "ctrl+s"\n')
    _run, app, live = open_live(tmp_path, path)
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, live, "live screen with a state")
        told = [n for n in app._notifications if n.title.startswith("keymap.toml")]
        assert len(told) == 1
        assert told[0].message == "live.stop_sav: no such key binding — did you mean live.stop_save?"
        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the good entry applied")


def test_each_kind_of_bad_entry_says_what_is_wrong_and_how_to_write_it():
    from cockpit.ui.keymap import binding_ids, parse_keymap

    good, problems = parse_keymap({"run": {"toggle_x": 3, "pick_metric": ["m", "?"]},
                                   "home.quit": "ctrl+xx", "app.help": "Ctrl+h",
                                   "nothing.like.this": "a"}, binding_ids())
    assert good == {"run.pick_metric": "m,question_mark"}
    assert problems == [
        'run.toggle_x = 3: give a key as text, e.g. "ctrl+s" (several: ["s", "ctrl+s"])',
        "home.quit = 'ctrl+xx': 'xx' is not a key name — keys look like ctrl+s, shift+tab, f5, "
        "escape, question_mark, K",
        "app.help = 'Ctrl+h': 'Ctrl' is not a modifier (ctrl, shift, alt, meta, super, hyper) — "
        "keys look like ctrl+s, shift+tab, f5, escape, question_mark, K",
        "nothing.like.this: no such key binding — the ids are in the help screen (?)",
    ]


async def test_a_broken_file_leaves_the_default_keys_and_says_where_it_broke(tmp_path):
    from cockpit.ui.screens.setup import SetupScreen

    app = app_for(tmp_path, keymap_file=keymap(tmp_path, '"home.new_run" = \n'))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        told = [n.message for n in app._notifications if n.title.startswith("keymap.toml")]
        assert len(told) == 1 and "not valid TOML" in told[0] and "line 1" in told[0]
        await pilot.press("n")
        await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen), "n still opens the form")


async def test_a_key_taken_from_another_binding_of_the_screen_is_said(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen

    _run, app, live = open_live(tmp_path, keymap(tmp_path, '"live.stop_save" = "K"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, live, "live screen with a state")
        told = [n.message for n in app._notifications if n.title.startswith("keymap.toml")]
        assert told == ["live.stop_save = 'K': Force stop (live.force_stop) had K and loses it — "
                        "give live.force_stop another key if you want it"]
        await pilot.press("K")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirmation")
        assert "after saving a checkpoint" in app.screen.question


def test_every_key_has_an_id_and_docs_list_every_id():
    from textual.binding import Binding

    from cockpit.ui.keymap import binding_ids

    ids = binding_ids()
    ui = Path(__file__).resolve().parents[1] / "cockpit" / "ui"
    declared = sum(len(re.findall(r"\bBinding\(", p.read_text(encoding="utf-8"))) for p in ui.rglob("*.py"))
    assert declared == len(ids), "every Binding in cockpit/ui has its own id"
    documented = set(re.findall(r"^\| `([\w.]+)` \|", DOCS.read_text(encoding="utf-8"), re.M))
    assert documented == set(ids), "docs/keys.md lists exactly the binding ids of the code"
    for info in ids.values():
        assert isinstance(info.key, str) and Binding(info.key, "x").key == info.key


# -- a nonsense key in the keymap ------------------------------------------------------------------


async def test_a_nonsense_key_in_the_keymap_is_refused_and_the_default_key_keeps_working(tmp_path):
    from textual.widgets import Footer

    from cockpit.ui.screens.setup import SetupScreen

    keymap = tmp_path / "keymap.toml"
    keymap.write_text('"home.new_run" = "ctrl+shift+banana"\n', encoding="utf-8")
    app = app_for(tmp_path, keymap_file=keymap)
    async with app.run_test(size=(100, 30)) as pilot:
        told = [n for n in app._notifications if n.title.startswith("keymap.toml")]
        assert len(told) == 1 and "'banana' is not a key name" in told[0].message
        def keys():
            return list(app.screen.query_one(Footer).query("FooterKey"))

        await app_wait(pilot, lambda: any(k.description == "New run" for k in keys()), "the footer")
        new_run = next(k for k in keys() if k.description == "New run")
        assert new_run.key_display == "n"
        await pilot.press("n")
        await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen), "n still opens the form")


# -- help ----------------------------------------------------------------------------------------


async def test_help_is_titled_in_words_and_lists_each_own_key_once(tmp_path):
    from textual.widgets import Static

    from cockpit.ui.screens.help import HelpScreen

    run = make_run(tmp_path / "runs", "helped", sft_records(range(1, 4)))
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        from cockpit.ui.widgets.home.runs_table import RunsTable
        table = app.screen.query_one(RunsTable)
        await app_wait(pilot, lambda: table.row_count == 1 and app.focused is table,
                       "the runs list focused")
        for expected_title, must in (("Home: runs and presets — keys", ("New run", "Compare")),
                                     ("Live run — keys", ("Stop & save", "Pick metric"))):
            await pilot.press("question_mark")
            await app_wait(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
            texts = [str(s.render()) for s in app.screen.query(Static)]
            assert texts[0] == expected_title
            body = "\n".join(texts)
            for word in must:
                assert word in body
            for internal in ("Cursor up", "Page Left", "Focus Next", "Copy selected text",
                             "Previous tab", "palette\n"):
                assert internal not in body
            assert body.count("ctrl+p") == 1
            assert body.count("Quit") == 1 and body.count("Help") == 1
            await pilot.press("escape")
            await app_wait(pilot, lambda: not isinstance(app.screen, HelpScreen), "closed")
            app.open_live(str(run.path))
            await app_wait(pilot, lambda: getattr(app.screen, "sources", None), "the run open")
