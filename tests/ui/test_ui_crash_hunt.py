"""The crash hunt: seeded random keys on every screen, tab and modal of real runs, at 60×20, 100×30
and 160×48. The app never raises, and still answers afterwards (its help opens on F1).

Each case is one app: a source (a real public run's trainer_state.json from tests/fixtures, an
overlay of two, a GRPO run folder followed live while its journal grows, Home over several runs,
the setup form, the farm's trained runs), a terminal size, a start (the keys that open a tab or a
modal first) and a seed. The seed is in the test's id and in the failure message, with the keys
pressed so far: `pytest tests/ui/test_ui_crash_hunt.py -k 'seed7'` replays it, and
`COCKPIT_HUNT_KEYS=N` changes how many keys a case presses.

The default suite runs a fixed sample (`SAMPLE`); the marker `crash_sweep` holds the long sweep
(every source at every size from every start), which `.ci/run` runs as its own step:
`python -m pytest -m crash_sweep -p no:randomly tests/ui/test_ui_crash_hunt.py`.

What the keys may not do: quit (q on Home, ctrl+q, the palette's Quit: the app's quit action is a
no-op in the hunt), suspend (ctrl+z: not in the pool), or start a process: the few calls that start
or signal a process
(a launch, a resume, a stop, the sampler, the loss mask's TRL probe) say "not in the crash hunt"
as a CockpitError, the way they say any refusal, so the UI's refusal path is what is hunted.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from cockpit.errors import CockpitError
from cockpit.run import journal
from cockpit.run import owner as run_owner
from helpers import FIXTURES, REPO
from helpers.ui import T0, app_for, grpo_run, grpo_run_records

pytestmark = pytest.mark.anyio

REAL_RUNS = REPO / "tests" / "fixtures" / "real_runs"
SIZES = {"60x20": (60, 20), "100x30": (100, 30), "160x48": (160, 48)}
KEYS_PER_CASE = int(os.environ.get("COCKPIT_HUNT_KEYS", "0")) or None
"""Keys a case presses (default: the case's own, `Case.keys`)."""

# Every key a user can reach on a keyboard that the cockpit or Textual reads, weighted by how often
# the random stream presses it: the bound letters and digits often, the rest of the printable set,
# the editing and moving keys, and the control keys the screens bind.
LETTERS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
PUNCT = ["left_square_bracket", "right_square_bracket", "slash", "plus", "minus", "equals_sign",
         "question_mark", "exclamation_mark", "full_stop", "comma", "colon", "greater_than_sign",
         "less_than_sign", "underscore", "space"]
MOVES = ["up", "down", "left", "right", "pageup", "pagedown", "home", "end", "tab", "shift+tab",
         "enter", "escape", "backspace", "delete"]
CONTROLS = ["f1", "f5", "ctrl+q", "ctrl+l", "ctrl+r", "ctrl+p", "ctrl+f", "ctrl+s", "ctrl+t", "ctrl+k", "ctrl+c",
            "ctrl+a", "ctrl+e", "ctrl+u", "ctrl+w", "ctrl+left", "ctrl+right", "shift+up", "shift+down"]
POOL = LETTERS * 2 + PUNCT + MOVES * 3 + CONTROLS

RUN_STARTS = {
    "plots": "", "completions": "2", "history": "3", "output": "4", "system": "5", "alerts": "6",
    "findings": "7", "checkpoints": "8", "picker": "m", "glossary": "i", "steps": "v", "help": "f1",
    "add": "a", "filter": "2 slash", "goto": "2 g", "palette": "ctrl+p", "zoom": "z", "log": "l",
}
"""Where a run screen's hunt starts: the keys that open the tab or the modal first."""
HOME_STARTS = {
    "runs": "", "presets": "p", "replay": "r", "compare": "c", "rename": "R", "delete": "D",
    "archive": "A", "archived": "v", "help": "f1", "palette": "ctrl+p",
}
SETUP_STARTS = {"form": "n", "search": "n ctrl+f", "save": "n ctrl+s", "back": "n escape"}
"""The setup form, opened from Home (`n`)."""


# -- the sources -------------------------------------------------------------------------------


def _fixture(name: str) -> Path:
    path = FIXTURES / name
    return path if path.is_file() else REAL_RUNS / name


REPLAYS = {
    "grpo-multireward": ["trl_grpo_modern_multireward.json"],
    "grpo-legacy": ["trl_grpo_legacy_reward_keys.json"],
    "dpo-nan": ["trl_dpo_nan_gradnorm_midrun.json"],
    "sft-acc": ["trl_sft_token_accuracy.json"],
    "whisper-legacy": ["seq2seq_whisper_eval_wer_legacy_format.json"],
    "overlay": ["trl_sft_token_accuracy.json", "trl_dpo_nan_gradnorm_midrun.json"],
}
"""Replays of real public runs (tests/fixtures/trainer_states, real_runs), one or two overlaid."""
for _p in sorted(REAL_RUNS.glob("*.json")):
    REPLAYS.setdefault(f"real-{_p.stem}", [_p.name])


@dataclass(frozen=True)
class Case:
    source: str
    """A key of REPLAYS, or live, home, setup, farm-sft, farm-grpo."""
    size: str
    start: str
    seed: int
    keys: int = 120

    @property
    def id(self) -> str:
        return f"{self.source}-{self.size}-{self.start}-seed{self.seed}"


def _seed(*parts: str) -> int:
    return zlib.crc32("/".join(parts).encode()) % 10_000


def _starts(source: str) -> dict[str, str]:
    return HOME_STARTS if source == "home" else SETUP_STARTS if source == "setup" else RUN_STARTS


SAMPLE = [
    Case("grpo-multireward", "100x30", "plots", 1),
    Case("grpo-multireward", "60x20", "completions", 2),
    Case("dpo-nan", "160x48", "log", 3),
    Case("overlay", "100x30", "picker", 4),
    Case("sft-acc", "60x20", "findings", 5),
    Case("live", "100x30", "plots", 6),  # a live case costs ~3 others (its journal grows): one here, 18 in the sweep
    Case("home", "100x30", "runs", 9),
    Case("home", "60x20", "compare", 10),
]
"""The default suite's fixed sample: every kind of source, the three sizes, the busiest starts."""


SWEEP_KEYS = 150


def _sweep() -> list:
    """~80 cases, a few minutes on two cores: every start of the busiest sources (a real GRPO
    replay, the live run, Home) at a size that turns with it, the other replays and a third of the
    real-runs corpus at a start and size that turn too, the setup form and the farm's trained runs."""
    cases: list[Case] = []
    sizes = list(SIZES)

    def add(source: str, i: int, start: str) -> None:
        size = sizes[i % 3]
        cases.append(Case(source, size, start, _seed(source, size, start), keys=SWEEP_KEYS))

    for source in ("grpo-multireward", "live", "home"):
        for i, start in enumerate(_starts(source)):
            add(source, i, start)
    others = ["grpo-legacy", "dpo-nan", "sft-acc", "whisper-legacy", "overlay"]
    for j, source in enumerate(others):
        for i in range(3):
            add(source, i + j, list(RUN_STARTS)[(5 * j + 7 * i) % len(RUN_STARTS)])
    real = sorted(s for s in REPLAYS if s.startswith("real-"))[::3]
    for i, source in enumerate(real):
        add(source, i, list(RUN_STARTS)[i % len(RUN_STARTS)])
    for i, start in enumerate(SETUP_STARTS):
        add("setup", i, start)
    for source in ("farm-sft", "farm-grpo"):
        for i, start in enumerate(("completions", "checkpoints")):
            add(source, i, start)
    return [_param(c) for c in cases]


def _param(case: Case):
    """The case with its markers: the farm's runs are trained (torch) once per code version, slow
    where the farm is cold; the live run and Home start a stand-in supervisor (a `sleep`)."""
    marks = [pytest.mark.slow] if case.source.startswith("farm-") else \
        [pytest.mark.proc] if case.source in ("live", "home") else []
    return pytest.param(case, id=case.id, marks=marks)


# -- keeping the keys inside the app -------------------------------------------------------------


@pytest.fixture
def no_processes(monkeypatch):
    """The calls that start or signal a process refuse, as they refuse a bad request."""
    from cockpit.findings import sft_data
    from cockpit.launch import plan, sampler

    def refuse(*_a, **_k):
        raise CockpitError("not in the crash hunt: it starts no process")

    monkeypatch.setattr(plan, "start_supervisor", refuse)
    monkeypatch.setattr(plan, "stop", refuse)
    monkeypatch.setattr(plan, "resume", refuse)
    monkeypatch.setattr(sampler.Sampler, "for_run", classmethod(refuse))
    monkeypatch.setattr(sft_data, "probe", refuse)


BURST = 6
"""Keys sent one after another without waiting for the app between them (a quick typist), before
the hunt lets the app settle: ~8x faster than `Pilot.press`'s wait after every key."""


def keys_for(case: Case) -> list[str]:
    """The case's key sequence: the start's keys, then `case.keys` drawn from POOL by its seed (the
    same on every machine and run: the draw never depends on what the app shows)."""
    rng = random.Random(case.seed)
    without = set(os.environ.get("COCKPIT_HUNT_WITHOUT", "").split())
    pool = [k for k in POOL if k not in without]
    return [rng.choice(pool) for _ in range(KEYS_PER_CASE or case.keys)]


def _send(app, key: str) -> None:
    """One key event into the app's driver, as `Pilot.press` sends it, without the wait after it."""
    import unicodedata

    from textual import events
    from textual.keys import _character_to_key, _get_unicode_name_from_key

    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    try:
        char: str | None = unicodedata.lookup(_get_unicode_name_from_key(key))
    except KeyError:
        char = key if len(key) == 1 else None
    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


async def _settle(pilot) -> None:
    """The keys handled: `Pilot.pause()` without its full second when the app never goes idle (a
    live run's journal grows the whole time)."""
    from textual._wait import wait_for_idle

    await pilot._wait_for_screen()
    await wait_for_idle(0, 0.25)


async def _hunt(pilot, case: Case, pressed: list[str]) -> None:
    app = pilot.app
    for key in _starts(case.source)[case.start].split():
        pressed.append(key)
        await pilot.press(key)
    keys = keys_for(case)
    for i in range(0, len(keys), BURST):
        for key in keys[i:i + BURST]:
            pressed.append(key)
            _send(app, key)
        await _settle(pilot)
        if app._exception is not None or not app.is_running:
            return


async def _answers(pilot) -> str | None:
    """What is wrong with the app after the keys, or None: it is running, raised nothing, and F1
    opens the help (after an Escape or three where a modal that keeps F1 to itself is up: a
    confirmation, or the help is already there)."""
    from cockpit.ui.screens.help import HelpScreen

    app = pilot.app
    for _ in range(4):
        if app._exception is not None:
            return f"raised {type(app._exception).__name__}: {app._exception}"
        if not app.is_running:
            return "the app exited"
        await pilot.press("f1")
        for _ in range(20):
            if isinstance(app.screen, HelpScreen):
                return None
            await pilot.pause(0.05)
        await pilot.press("escape")
    if app._exception is not None:
        return f"raised {type(app._exception).__name__}: {app._exception}"
    return f"F1 did not open the help (the screen is {type(app.screen).__name__})"


# -- what each source opens ----------------------------------------------------------------------


def _sleeper():
    """A stand-in for a live run's supervisor: a process that is alive (the run reads as live)
    and the hunt's own, so nothing real is ever signalled (the stop refuses anyway)."""
    return subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL)


async def _grow(run, steps: range, max_steps: int) -> None:
    """Append the next steps to a live run's journal while the keys are pressed."""
    with journal.JournalWriter(run.events) as jw:
        for rec in grpo_run_records(steps, max_steps=max_steps, t0=T0)[2:]:
            jw.write(rec)
            if rec.kind == journal.PROGRESS:
                jw.flush()
                await asyncio.sleep(0.1)


def _open(case: Case, tmp_path: Path, farmed):
    """(app, the background task's coroutine or None, the stand-in supervisor or None); `farmed` is
    the farm's run of a farm case (taken before the processes are refused: a cold farm trains it)."""
    runs = tmp_path / "runs"
    if case.source in REPLAYS:
        return app_for(tmp_path, "replay", [str(_fixture(n)) for n in REPLAYS[case.source]]), None, None
    if case.source == "live":
        run = grpo_run(runs, "grpo-live", steps=12, max_steps=200, state="running", checkpoints=(10,))
        proc = _sleeper()
        run.update_status(supervisor_pid=proc.pid, supervisor_started=run_owner.start_time(proc.pid))
        return app_for(tmp_path, "live", [str(run.path)]), _grow(run, range(13, 200), 200), proc
    if case.source == "home":
        live = grpo_run(runs, "grpo-live", steps=12, max_steps=200, state="running", checkpoints=(10,))
        proc = _sleeper()
        live.update_status(supervisor_pid=proc.pid, supervisor_started=run_owner.start_time(proc.pid))
        grpo_run(runs, "grpo-done", steps=20, max_steps=20)
        grpo_run(runs, "grpo-stopped", steps=8, max_steps=40, state="stopped", checkpoints=(5,))
        return app_for(tmp_path), None, proc
    if case.source == "setup":
        runs.mkdir()
        return app_for(tmp_path), None, None
    return app_for(tmp_path, "live", [str(farmed.path)]), None, None


async def _run_case(case: Case, tmp_path: Path, request) -> None:
    """The case, its farm run taken first (trained through the real supervisor where the farm is
    cold), then the processes refused (`no_processes`) for the keys."""
    farmed = request.getfixturevalue("farm_run")(case.source.removeprefix("farm-")) \
        if case.source.startswith("farm-") else None
    request.getfixturevalue("no_processes")
    app, background, proc = _open(case, tmp_path, farmed)
    quits: list[str] = []
    app.action_quit = lambda: quits.append(type(app.screen).__name__)  # q on Home, the palette's Quit
    pressed: list[str] = []
    problem = None
    try:
        async with app.run_test(size=SIZES[case.size]) as pilot:
            grow = asyncio.create_task(background) if background is not None else None
            await pilot.pause(0.3)  # the source read
            try:
                await _hunt(pilot, case, pressed)
                problem = await _answers(pilot)
            finally:
                if grow is not None:
                    grow.cancel()
    except Exception as exc:  # noqa: BLE001 - what the app raised, said with the seed below
        problem = problem or f"raised {type(exc).__name__}: {exc}"
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
    if problem:
        raise AssertionError(f"crash hunt {case.id}: {problem}\nreplay: pytest tests/ui/test_ui_crash_hunt.py "
                             f"-k '{case.id}'\nthe last keys: {' '.join(pressed[-40:])}")


@pytest.mark.parametrize("case", [_param(c) for c in SAMPLE])
async def test_random_keys_never_crash_the_app(case, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)  # a replay's export writes into the current folder
    await _run_case(case, tmp_path, request)


@pytest.mark.crash_sweep
@pytest.mark.parametrize("case", _sweep())
async def test_crash_sweep(case, tmp_path, monkeypatch, request):
    if case.source == "setup":
        request.getfixturevalue("registry")  # the installed TRL's trainers, read once a session
    monkeypatch.chdir(tmp_path)
    await _run_case(case, tmp_path, request)


async def test_page_keys_in_an_option_list_not_laid_out_do_nothing():
    """What the hunt found first (home-100x30-runs-seed9: ctrl+p, three letters, page down): an
    option list with options but no lines laid out raised KeyError on page up/down (Textual's
    OptionList, guarded by cockpit.ui.textual_fixes)."""
    from textual.app import App
    from textual.widgets import OptionList

    import cockpit.ui.app  # noqa: F401 - applies the guard, as the cockpit's app does

    class Hidden(App):
        def compose(self):
            yield OptionList("one", "two", "three", id="list")

    app = Hidden()
    async with app.run_test(size=(40, 10)) as pilot:
        options = app.query_one(OptionList)
        options.styles.height = 0  # no room: no line is laid out
        await pilot.pause()
        options._clear_caches()
        options.highlighted = 1
        options.focus()
        await pilot.press("pagedown", "pageup")
        assert options.highlighted == 1


async def test_a_key_typed_while_a_screen_is_built_waits_for_it(tmp_path):
    """What the hunt found next (live-100x30-plots-seed6: `q` then `e` typed at once): the key
    landed on a Home whose compose had not run yet, and its action found no preset list. A key
    now waits for the screen it goes to (CockpitApp.on_event). Under load the setup form's selects
    then raised NoMatches in their mount (the select test below)."""
    from textual import events

    from cockpit.ui.screens.home import HomeScreen
    from cockpit.ui.screens.setup import SetupScreen
    from helpers.ui import app_wait, notifications

    (tmp_path / "runs").mkdir()
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        app.push_screen(HomeScreen(app.runs_dir))
        app.post_message(events.Key("e", "e"))  # before Home's compose runs
        early = "highlight a preset first (p moves to the list)"  # the presets are read after the runs
        await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen) or early in notifications(app),
                       "the preset opened in the setup form, or Home said to pick one")
        if not isinstance(app.screen, SetupScreen):
            await pilot.press("n")
            await app_wait(pilot, lambda: isinstance(app.screen, SetupScreen), "the setup form")
        assert app._exception is None


async def test_two_enters_in_the_palette_dismiss_it_once_and_run_its_command_once(tmp_path):
    """What the sweep found (farm-sft-100x30-checkpoints-seed1821: a modal, ctrl+p, its Cancel, two
    Enters at once): Textual's palette dismissed itself twice and ran its command twice; each
    dismiss popped the screen on top, the modal's, then the run screen's, then raised
    ScreenStackError. A screen not on top now dismisses nothing (cockpit.ui.textual_fixes), and a
    palette command runs once, on the screen it was offered for (CockpitApp._palette_command)."""
    from textual.command import CommandPalette

    from cockpit.ui.screens.metric_picker import MetricPicker
    from cockpit.ui.screens.replay import ReplayScreen
    from helpers.ui import app_wait

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the replay loaded")
        await pilot.press("m")
        await app_wait(pilot, lambda: isinstance(app.screen, MetricPicker), "the metric picker open")
        picker = app.screen
        await pilot.press("ctrl+p")
        await app_wait(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette open")
        await pilot.press(*"Cancel")
        await pilot.pause(0.3)  # the palette's search
        _send(app, "enter")
        _send(app, "enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen), "back on the replay")
        await pilot.pause(0.2)
        assert app._exception is None
        assert isinstance(app.screen, ReplayScreen) and picker not in app.screen_stack
        picker.dismiss(None)  # gone already: nothing happens
        await pilot.pause()
        assert isinstance(app.screen, ReplayScreen)


async def test_a_select_value_set_before_the_select_composed_shows_once_it_is():
    """What the test above hit under two workers: a select of the setup form, mounted before its
    current-value box composed its label, set the value there and raised NoMatches (Textual's
    SelectCurrent.update; guarded by cockpit.ui.textual_fixes). The value shows once composed."""
    from textual.app import App
    from textual.widgets import Static
    from textual.widgets._select import SelectCurrent

    import cockpit.ui.app  # noqa: F401 - applies the guard, as the cockpit's app does

    current = SelectCurrent("pick one")
    current.update("sft")  # not composed: no label yet

    class Holder(App):
        def compose(self):
            yield current

    app = Holder()
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause()
        assert str(current.query_one("#label", Static).render()) == "sft"
        assert current.has_value
