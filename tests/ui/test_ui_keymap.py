"""The user's keymap.toml remaps keys by binding id; entries that cannot work are reported in one
notification with their fix, never a crash; docs/keys.md lists every id the code declares."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.ui import SIZE, app_for, app_wait, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


def keymap(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keymap.toml"
    path.write_text(text, encoding="utf-8")
    return path


def keymap_notes(app) -> list:
    """The notifications about keymap.toml (notify() reaches the app on its next turn: wait for them)."""
    return [n for n in app._notifications if n.title.startswith("keymap.toml")]


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
        await app_wait(pilot, lambda: keymap_notes(app), "the keymap's notification")
        told = keymap_notes(app)
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
        await app_wait(pilot, lambda: keymap_notes(app), "the keymap's notification")
        told = [n.message for n in keymap_notes(app)]
        assert len(told) == 1 and "not valid TOML" in told[0] and "line 1" in told[0]
        await pilot.press("n")
        await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen), "n still opens the form")


async def test_a_key_taken_from_another_binding_of_the_screen_is_said(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen

    _run, app, live = open_live(tmp_path, keymap(tmp_path, '"live.stop_save" = "K"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, live, "live screen with a state")
        await app_wait(pilot, lambda: keymap_notes(app), "the keymap's notification")
        told = [n.message for n in keymap_notes(app)]
        assert told == ["live.stop_save = 'K': Force stop (live.force_stop) had K and loses it — "
                        "give live.force_stop another key if you want it"]
        await pilot.press("K")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirmation")
        assert "after saving a checkpoint" in app.screen.question


def test_every_key_has_an_id_and_docs_list_every_id():
    from textual.binding import Binding

    from cockpit.ui.keymap import binding_ids

    ids = binding_ids()
    ui = Path(__file__).resolve().parents[2] / "cockpit" / "ui"
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
        await app_wait(pilot, lambda: keymap_notes(app), "the keymap's notification")
        told = keymap_notes(app)
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
                                     (f"Live run · {run.name} — keys", ("Stop & save", "Pick metric"))):
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


async def test_the_palette_lists_the_screens_own_commands_first_each_once(tmp_path):
    """Issue 30: the palette listed Textual's internals first (Previous tab, Focus Next, the focused
    scroll box's Scroll Up…) and `Back` twice (Escape's and q's)."""
    from textual.widgets import TabbedContent

    run = make_run(tmp_path / "runs", "palette", sft_records(range(1, 4)))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: getattr(app.screen, "sources", None), "the run open")
        for tab, pane in (("1", "plots"), ("7", "findings")):  # the findings: the focus in a scroll box
            await pilot.press(tab)

            def shown(pane=pane) -> bool:
                focused = app.screen.focused
                return app.screen.query_one(TabbedContent).active == pane and (
                    pane == "plots" or (focused is not None and pane in [a.id for a in focused.ancestors_with_self]))

            await app_wait(pilot, shown, f"the {pane} tab shown (the findings' focus in it)")
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert titles.count("Back") == 1, titles
            themes = next(i for i, t in enumerate(titles) if t.startswith("Theme: "))
            for internal in ("Previous tab", "Focus Next", "Copy selected text", "Scroll Up"):
                assert internal not in titles[:themes], (internal, titles)
            assert "What is this?" in titles[:themes]
        back = next(c for c in app.get_system_commands(app.screen) if c.title == "Back")
        assert back.help == "key: q"


ROW_KEYS = frozenset({"enter", "escape"})
"""Keys every tab gives its own meaning on purpose: Enter acts on the highlighted row, Escape
climbs one level. Any other key means one thing on a run screen, whichever tab is shown."""


def _meanings_by_key(screen) -> dict[str, dict[str, list[str]]]:
    """key -> {binding id: the tabs it means that on} for a run screen: the app's keys, the
    screen's keys its `check_action` lets act on each tab, and the keys of every widget in each
    tab (Textual's own only where they are a printable character)."""
    from textual.actions import parse
    from textual.keys import key_to_character
    from textual.widgets import TabbedContent, TabPane

    tabs = screen.query_one(TabbedContent)
    found: dict[str, dict[str, list[str]]] = {}

    def add(node, binding, tab: str) -> None:
        if binding.key in ROW_KEYS:
            return
        char = key_to_character(binding.key)
        if binding.id is None and not (char and char.isprintable()):
            return  # Textual's cursor and focus keys, the same on every tab
        meaning = binding.id or f"{type(node).__name__}.{binding.action}"
        tabs_of = found.setdefault(binding.key, {}).setdefault(meaning, [])
        if tab not in tabs_of:
            tabs_of.append(tab)

    for pane in tabs.query(TabPane):
        tab = pane.id or "?"
        tabs.active = tab
        for node in (screen.app, screen):
            for bindings in node._bindings.key_to_bindings.values():
                for b in bindings:
                    _, action, params = parse(b.action)
                    if node is screen and not screen.check_action(action, params):
                        continue
                    add(node, b, tab)
        for node in pane.walk_children(with_self=False):
            for bindings in node._bindings.key_to_bindings.values():
                for b in bindings:
                    add(node, b, tab)
    return found


@pytest.mark.parametrize("mode", ["live", "replay"])
async def test_on_a_run_screen_every_key_means_one_thing_on_every_tab(tmp_path, mode):
    """Issue 30: `g`, `c`, `p` and `m` meant one thing on a tab and another on the next (typing on
    the findings tab jumped to the completions and sorted them). Every tab's keys are walked."""
    from textual.widgets import TabPane

    if mode == "live":
        _run, app, ready = open_live(tmp_path, keymap(tmp_path, ""))
    else:
        state = Path(__file__).resolve().parents[1] / "fixtures" / "real_runs" / \
            "dpo_healthy_margins_grow_chosen_steady.json"
        app = app_for(tmp_path, "replay", [str(state)], keymap_file=keymap(tmp_path, ""))

        def ready():
            return getattr(app.screen, "sources", None)
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, ready, "the run screen with its run")
        screen = app.screen
        await screen.reveal_panes()
        for pane in list(screen.query(TabPane)):  # each tab shown once: what mounts on its showing
            await screen.action_tab(pane.id)
            await pilot.pause()
        found = _meanings_by_key(screen)
        await pilot.pause()
    tabs_seen = {t for meanings in found.values() for ts in meanings.values() for t in ts}
    assert {"plots", "completions", "findings", "checkpoints", "alerts"} <= tabs_seen
    twice = {key: meanings for key, meanings in found.items() if len(meanings) > 1}
    assert not twice, "a key with two meanings on the run screen: " + "; ".join(
        f"{key}: " + ", ".join(f"{m} (on {'/'.join(ts)})" for m, ts in meanings.items())
        for key, meanings in twice.items())
    # The letters issue 30 named, each with its one meaning now:
    assert set(found["g"]) == {"completions.goto"} and set(found["p"]) == {"completions.group"}
    assert set(found["c"]) == {"checkpoints.chat"} and set(found["m"]) == {"run.pick_metric"}
