"""The cockpit Textual app: screens, themes, help and the command palette. Kept thin:
screens live in `screens/`, widgets in `widgets/<feature>/`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.dom import DOMNode
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.system_commands import SystemCommandsProvider

from cockpit.ui import textual_fixes
from cockpit.ui.choices import load_choices, remember
from cockpit.ui.keymap import KEYMAP_FILE, load_keymap
from cockpit.ui.screens.help import HelpScreen
from cockpit.ui.screens.home import HomeScreen
from cockpit.ui.themes import DEFAULT_THEME, load_themes

if TYPE_CHECKING:
    from cockpit.run.folder import RunFolder

Mode = Literal["home", "live", "replay"]
textual_fixes.apply()
MOUNT_WAIT_S = 2.0
"""How long a key waits for the screen it goes to to be mounted (`CockpitApp.on_event`)."""


class CommandsInOrder(SystemCommandsProvider):
    """The palette's list as `get_system_commands` orders it (cockpit's own first), not sorted
    by name (Textual's provider sorts, which put its Keys/Quit/Screenshot among ours)."""

    async def discover(self):
        from textual.command import DiscoveryHit

        for name, help_text, callback, discover in self.app.get_system_commands(self.screen):
            if discover:
                yield DiscoveryHit(name, callback, help=help_text)


class CockpitApp(App):
    CSS_PATH = "app.tcss"
    COMMANDS = {CommandsInOrder}
    TITLE = "cockpit"
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", show=False, id="app.quit"),
    ]

    def __init__(self, *, mode: Mode = "home", paths: list[str] | None = None,
                 runs_dir: Path, theme_dirs: list[Path] | None = None,
                 theme: str | None = None, keymap_file: Path | None = None) -> None:
        super().__init__()
        self.mode = mode
        self.paths = list(paths or [])
        self.runs_dir = Path(runs_dir)
        self.theme_errors: list[str] = []
        themes, self.theme_errors = load_themes(theme_dirs)
        for t in themes:
            self.register_theme(t)
        # A theme asked for on the command line, else the one last picked, else the default.
        wanted = theme or load_choices().get("theme") or DEFAULT_THEME
        self.theme = wanted if wanted in self.available_themes else "textual-dark"
        self.keymap, self.keymap_errors = load_keymap(keymap_file)
        """The user's keymap (binding id -> keys) and one line per entry skipped."""
        self.set_keymap(self.keymap)
        self._clashes_told: set[str] = set()
        self.last_opened: str | None = None
        self.watched: list[str] = []
        """The runs opened live in this session, in order (told of at exit when they train on)."""

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:  # noqa: ARG002 - App.notify's
        """Always literal: notifications carry file names, run names and error text, and a `[`
        in one read as markup would garble it or raise (widgets pass markup=True for us)."""
        super().notify(message, title=title, severity=severity,
                       timeout=timeout, markup=False)

    async def on_event(self, event: events.Event) -> None:
        """A key typed while the screen it goes to is still being built waits for it (at most
        MOUNT_WAIT_S): `q` then `e` typed at once landed `e` on a Home whose compose had not run,
        and its action found no preset list (the crash hunt, tests/ui/test_ui_crash_hunt.py)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            screen, deadline = self.screen, time.monotonic() + MOUNT_WAIT_S
            while not screen.is_mounted and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        await super().on_event(event)

    def action_help_quit(self) -> None:
        """ctrl+c (Textual's reflex catcher) says which key quits; Textual's own text is markup,
        and cockpit's notifications are literal."""
        for active in self.active_bindings.values():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(f"Press {self.get_key_display(active.binding)} to quit the app",
                            title="Do you want to quit?")
                return

    def pick_theme(self, name: str) -> None:
        """A theme picked in the palette: shown now, and the one the next start uses."""
        self.theme = name
        problem = remember(theme=name)
        if problem:
            self.notify(problem, severity="warning")

    def get_default_screen(self) -> Screen:
        if self.mode != "home" and self.paths:
            # A run or a replay opens over a blank screen: Home (its compose, the runs listing,
            # the presets) is built when the user goes there (`switch_to_home`), not while the
            # run's screen composes and reads its files beside it (issue 33).
            return Screen(id="base")
        return HomeScreen(self.runs_dir)

    def on_mount(self) -> None:
        if self.theme_errors:
            self.notify("\n".join(self.theme_errors), title="themes skipped", severity="warning",
                        timeout=10)
        if self.keymap_errors:
            self.notify("\n".join(self.keymap_errors), title=f"{KEYMAP_FILE}: entries skipped",
                        severity="warning", timeout=10)
        if self.mode == "live" and self.paths:
            self.open_live(self.paths[0])
        elif self.mode == "replay" and self.paths:
            self.open_replay(self.paths)

    # -- navigation (screens call these) ---------------------------------------------------------

    def open_live(self, run_path: str) -> None:
        from cockpit.ui.screens.live import LiveRunScreen

        self.last_opened = str(run_path)  # Home puts its cursor there when the user comes back
        if str(run_path) not in self.watched:
            self.watched.append(str(run_path))
        self.push_screen(LiveRunScreen(run_path))

    def open_replay(self, paths: list[str]) -> None:
        """Replay (or overlay) the paths that can be read; one that cannot is an error naming it,
        and when none can, no replay screen opens (an empty one would only be a dead end)."""
        from cockpit.errors import CockpitError
        from cockpit.metrics.replay_loader import prefetch
        from cockpit.metrics.sources import check_path

        usable = []
        for path in paths:
            try:
                check_path(path)
            except CockpitError as exc:
                self.notify(str(exc), title="cannot open", severity="error", timeout=10)
                continue
            usable.append(path)
        if not usable:
            if len(self.screen_stack) == 1:  # named on the command line: Home, not the blank base
                self.switch_to_home()
            return
        paths = usable
        for path in paths:  # the parse runs while the screen is imported and composed
            prefetch(path)
        from cockpit.ui.screens.replay import ReplayScreen

        self.push_screen(ReplayScreen(paths))

    def open_setup(self, preset_path: str | None = None) -> None:
        """The setup form, empty or filled from a preset; a launched run opens live."""
        from cockpit.config.presets import load_preset
        from cockpit.errors import CockpitError
        from cockpit.ui.screens.setup import SetupScreen

        preset = None
        if preset_path:
            try:
                preset = load_preset(preset_path)
            except CockpitError as exc:
                self.notify(str(exc), severity="error")
                return
        def launched(run: RunFolder | None) -> None:
            if run is not None:
                self.open_live(str(run.path))

        self.push_screen(SetupScreen(runs_dir=self.runs_dir, preset=preset), launched)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:  # noqa: ARG002 - App.handle_bindings_clash's signature
        """A keymap entry took a key one of Textual's own bindings had there (tab, ctrl+c...):
        said once per binding. (Clashes between cockpit's bindings are known when the keymap is
        read, and said with the other keymap problems.) Textual calls this at every key press."""
        for lost in clashed_bindings:
            name = lost.id or lost.action
            if name in self._clashes_told:
                continue
            self._clashes_told.add(name)
            taker = next((i for i, keys in self.keymap.items() if lost.key in keys.split(",")),
                         "a keymap entry")
            self.notify(f"{lost.key} is now {taker}'s, so {lost.description or lost.action} "
                        f"has no key on this screen — pick another key for {taker} in "
                        f"{KEYMAP_FILE} if you need it", title="keymap clash", severity="warning",
                        timeout=10)

    def switch_to_home(self) -> None:
        """Back to Home, building it the first time (a run or a replay opened from the command
        line starts over a blank screen: `get_default_screen`)."""
        while len(self.screen_stack) > 1 and not isinstance(self.screen, HomeScreen):
            self.pop_screen()
        if not isinstance(self.screen, HomeScreen):  # over the blank one: Textual keeps its default
            self.push_screen(HomeScreen(self.runs_dir))

    # -- help and the command palette ----------------------------------------------------------

    def _screen_bindings(self, screen: Screen) -> list[tuple[str, Binding, DOMNode]]:
        """(key shown, binding, node) of every binding active on a screen, one an action."""
        out = []
        seen: set[tuple[str, str]] = set()
        for _key, active in screen.active_bindings.items():
            b = active.binding
            if not b.description or (b.action, b.description) in seen:
                continue
            seen.add((b.action, b.description))
            out.append((self.get_key_display(b), b, active.node))
        return out

    def help_keys(self, screen: Screen) -> list[tuple[str, str, str]]:
        """(keys, description, binding ids) of the cockpit's own keys on a screen: its bindings
        and the app's (every one has an id, the name keymap.toml remaps it by), not Textual's
        focus/copy keys or the focused widget's cursor keys. Keys of one action are listed
        together (`q / ^q  Quit`)."""
        keys: dict[str, tuple[list[str], list[str]]] = {}
        tabs = self._tab_ids(screen)
        for active in screen.active_bindings.values():
            b = active.binding
            if not b.description or not b.id or active.node not in (screen, self):
                continue
            if b.id.partition(".")[0] in tabs:
                continue  # a tab's key (`completions.sort`): listed under that tab
            self._list_key(keys, b)
        out = [(" / ".join(k), d, ", ".join(i)) for d, (k, i) in keys.items()]
        out.append(("ctrl+p", "Command palette (every action, themes)", ""))
        return out

    def _list_key(self, keys: dict[str, tuple[list[str], list[str]]], b: Binding) -> None:
        """One binding into a help listing: its keys and ids gathered under its description
        (`q / ^q  Quit`)."""
        shown, ids = keys.setdefault(b.description, ([], []))
        key = self.get_key_display(b)
        if key not in shown:
            shown.append(key)
        if b.id and b.id not in ids:
            ids.append(b.id)

    @staticmethod
    def _tab_ids(screen: Screen) -> set[str]:
        from textual.widgets import TabPane

        return {p.id for p in screen.query(TabPane) if p.id}

    def tab_keys(self, screen: Screen) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """(tab title, keys) for every tab of a screen, whichever has the focus: the keys of the
        widgets in it (each with an id), so the help lists them all, not only the focused tab's."""
        from textual.widgets import TabbedContent, TabPane

        out = []
        for tabs in screen.query(TabbedContent):
            for pane in tabs.query(TabPane):
                keys: dict[str, tuple[list[str], list[str]]] = {}
                for node in [screen, *pane.walk_children(with_self=False)]:
                    for bindings in node._bindings.key_to_bindings.values():
                        for b in bindings:
                            if not b.description or not b.id:
                                continue
                            if node is screen and b.id.partition(".")[0] != pane.id:
                                continue  # the screen's keys that act on this tab only
                            self._list_key(keys, b)
                if keys:
                    tab = tabs.get_tab(pane.id or "")
                    title = str(tab.label).rstrip("¹²³⁴⁵⁶⁷⁸⁹ ") if tab is not None else str(pane.id)
                    out.append((f"{title} tab", [(" / ".join(k), d, ", ".join(i)) for d, (k, i) in keys.items()]))
        return out

    async def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        reveal = getattr(self.screen, "reveal_panes", None)
        if callable(reveal):  # a run screen's hidden tabs: mounted first, so their keys are listed
            await reveal()
        named = getattr(self.screen, "help_title", None)
        title = named() if callable(named) else getattr(self.screen, "HELP_TITLE", None) or "cockpit"
        self.push_screen(HelpScreen(title, self.help_keys(self.screen), self.tab_keys(self.screen)))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The screen's own commands first (what a user opens the palette for; one a name: the
        one the footer shows, so `Back` is `q`, not Escape's one level up too), then the
        cockpit's themes, then the focused widget's keys Textual gives it (scroll, copy, next
        tab), then Textual's own (theme picker, keys panel, screenshot, quit)."""
        own: dict[str, tuple[Binding, SystemCommand]] = {}
        later: list[SystemCommand] = []
        for key, b, node in self._screen_bindings(screen):
            if b.action in ("help", "quit", "app.quit", "command_palette"):
                continue
            command = SystemCommand(b.description, f"key: {key}",
                                    self._palette_command(b.action, node, screen))
            if not b.id:
                later.append(command)
            elif b.description not in own or (b.show and not own[b.description][0].show):
                own[b.description] = (b, command)
        yield from (command for _b, command in own.values())
        for name in sorted(self.available_themes):
            if name.startswith("cockpit-"):
                yield SystemCommand(f"Theme: {name}", "Switch to this theme",
                                    partial(self.pick_theme, name))
        yield from later
        yield from super().get_system_commands(screen)

    def _palette_command(self, action: str, node: DOMNode, screen: Screen) -> Callable[[], None]:
        """What choosing a binding in the palette runs: its action, once, on the screen it was
        offered for. Textual's palette runs its command once per Enter, and two Enters typed at
        once ran it twice, the second on whatever screen the first left on top (the crash hunt's
        farm-sft-100x30-checkpoints-seed1821)."""
        ran = False

        async def run() -> None:
            if self.screen is screen:
                await self.run_action(action, node)

        def command() -> None:
            nonlocal ran
            if not ran:
                ran = True
                self.call_later(run)

        return command


def trains_on(watched: list[str]) -> list[str]:
    """What to print as the TUI exits: one line for each run watched in this session that still
    trains (quitting the TUI never stops a run), with the command that comes back to it."""
    import shlex

    from cockpit.errors import CockpitError
    from cockpit.paths import runs_dir as default_runs_dir
    from cockpit.run.folder import LIVE_STATES, RunFolder
    from cockpit.run.summaries import effective_state

    lines = []
    for path in watched:
        run = RunFolder(Path(path))
        try:
            state, _why = effective_state(run)
        except (CockpitError, OSError):
            continue
        if state not in LIVE_STATES:
            continue
        # By name where `cockpit attach` looks by default (./runs, COCKPIT_RUNS_DIR), else by path.
        here = run.path.parent.resolve() == default_runs_dir().resolve()
        ref = run.name if here else str(run.path)
        lines.append(f"{run.name} trains on ({state}) — come back to it with: cockpit attach {shlex.quote(ref)}")
    return lines


def make_app(mode: Mode = "home", paths: list[str] | None = None,
             runs_dir: str | Path | None = None, *, theme_dirs: list[Path] | None = None,
             theme: str | None = None, keymap_file: Path | None = None) -> CockpitApp:
    """The app as the CLI and the tests build it (`keymap_file`: the user's keymap.toml unless
    given)."""
    from cockpit.paths import runs_dir as default_runs_dir

    return CockpitApp(mode=mode, paths=paths, runs_dir=default_runs_dir(runs_dir),
                      theme_dirs=theme_dirs, theme=theme, keymap_file=keymap_file)
