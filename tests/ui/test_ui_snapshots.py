"""Snapshot tests (pytest-textual-snapshot) at a fixed terminal size, on inputs that do not
change with the clock: fixture replays and a finished run's journal written by hand.

Update after an intended change with `pytest tests/ui/test_ui_snapshots.py --snapshot-update`,
then look at the SVGs in tests/ui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from cockpit.run import journal
from cockpit.run.folder import RunFolder, Status
from cockpit.ui.app import make_app
from helpers import FIXTURES

SIZE = (140, 44)


async def _settle(pilot) -> None:
    # Workers parse in threads (the live view's tail worker never completes, so wait by time)
    # and plots redraw at 4 Hz.
    await pilot.pause(1.5)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.5)


def test_replay_of_a_grpo_run(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_grpo_modern_multireward.json")], str(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_replay_overlay_of_two_runs(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_sft_token_accuracy.json"),
                              str(FIXTURES / "trl_dpo_nan_gradnorm_midrun.json")], str(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


@pytest.fixture
def finished_run(tmp_path):
    run = RunFolder(tmp_path / "runs" / "snap-sft-20260101-000000")
    run.path.mkdir(parents=True)
    run.run_yaml.write_text("trainer: sft\n")
    run.write_status(Status(state="finished", name=run.name, trainer="sft", started=0.0,
                            ended=100.0, exit_code=0, reason="training finished"))
    with journal.JournalWriter(run.events) as w:
        t = 1_700_000_000.0
        w.write(journal.Record("run_started", {"trainer": "sft", "world_size": 1, "max_steps": 50,
                                               "versions": {"trl": "1.16.0"}, "device": "cpu"},
                               step=0, t=t))
        for s in range(1, 51):
            w.write(journal.Record("metrics", {"epoch": s / 10, "loss": 3.0 / (1 + 0.1 * s),
                                               "learning_rate": 1e-3 * (1 - s / 50),
                                               "grad_norm": 1.0 + (s % 7) / 10,
                                               "mean_token_accuracy": 0.2 + s / 100,
                                               "entropy": 5 - s / 20}, step=s, t=t + s))
            w.write(journal.Record("progress", {"max_steps": 50, "epoch": s / 10,
                                                "steps_per_s": 1.0, "eta_s": 50.0 - s},
                                   step=s, t=t + s))
        w.write(journal.Record("completions", {"source": "generate", "rows": [
            {"prompt": "Question: What is 3 plus 4?\nAnswer:", "completion": " 7",
             "rewards": {"arith_reward": 1.2}, "advantage": 0.5}]}, step=50, t=t + 50))
        w.write(journal.Record("run_ended", {"state": "finished", "exit_code": 0, "signal": None,
                                             "reason": "training finished", "fix": None},
                               step=50, t=t + 51))
    return run


def test_live_view_of_a_finished_run(snap_compare, finished_run):
    app = make_app("live", [str(finished_run.path)], str(finished_run.path.parent))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_help_screen(snap_compare, tmp_path):
    app = make_app("replay", [str(FIXTURES / "trl_sft_token_accuracy.json")], str(tmp_path))

    async def open_help(pilot):
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=open_help)


@pytest.fixture
def fixed_runs_dir():
    """A runs folder at a fixed path (the path shows on screen), empty: no ages to drift."""
    import shutil
    from pathlib import Path

    d = Path("/tmp/cockpit-snapshot-runs")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_home_with_no_runs(snap_compare, fixed_runs_dir, tmp_path, monkeypatch):
    # Only the shipped presets: other tests save user presets into the session's config dir.
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    app = make_app("home", [], str(fixed_runs_dir))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


# The setup screen: its trainer list and its fields are the installed TRL's, so these change with
# the TRL the test extra pins (update them with it). tests/ui/test_ui_setup*.py drive it.
SETUP_VIEWS = [("picker", "100x30"), ("sft-form", "100x30"), ("sft-form", "60x20")]


@pytest.mark.parametrize(("view", "size"), SETUP_VIEWS, ids=[f"{v}-{s}" for v, s in SETUP_VIEWS])
def test_setup_views(snap_compare, fixed_runs_dir, tmp_path, monkeypatch, view, size):
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))
    app = make_app("home", [], str(fixed_runs_dir))

    async def run_before(pilot) -> None:
        from cockpit.ui.screens.setup import SetupScreen
        from helpers.ui import app_wait, pick

        await _views_settled(pilot)
        await pilot.press("n")
        await app_wait(pilot, lambda: isinstance(pilot.app.screen, SetupScreen), "the setup screen")
        await _views_settled(pilot)
        if view == "sft-form":
            await pick(pilot, pilot.app, "sft")
            await _views_settled(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# -- every screen, tab and modal on real runs (issue 40) --------------------------------------------
#
# Each test is one view: a source, the keys that open the view, a terminal size. Views are drawn at
# 100×30; the main ones at 60×20 and 160×48 too. The sources are real public runs
# (tests/fixtures/trainer_states, real_runs) and GRPO run folders written by hand at fixed times
# (ui_helpers.grpo_run: what the replay of a trainer_state.json has no place for: completions,
# trainer output, alerts, checkpoints). Nothing on screen moves with the clock: the few widgets that
# read the wall clock (ages, ETA, "sampled … ago") see FROZEN_NOW.

REAL = FIXTURES.parent / "real_runs"
SIZES = {"60x20": (60, 20), "100x30": (100, 30), "160x48": (160, 48)}
MAIN_SIZES = ["60x20", "100x30", "160x48"]
FROZEN_NOW = 1_700_000_000.0 + 26 * 3600  # a day and two hours after the runs' first record


@pytest.fixture
def frozen_clock(monkeypatch):
    """The wall clock the views read (ages on Home, a live run's ETA, the system tab's "ago")."""
    import time
    import types

    from cockpit.ui.widgets.home import runs_table
    from cockpit.ui.widgets.run import run_header, system_pane

    clock = types.SimpleNamespace(time=lambda: FROZEN_NOW, monotonic=time.monotonic)
    for module in (runs_table, run_header, system_pane):
        monkeypatch.setattr(module, "time", clock)


async def _views_settled(pilot) -> None:
    """Everything the view reads is read and drawn: the sources loaded, no worker running but the
    live view's tail, no spinner, and a redraw tick (4 Hz) after that."""
    from textual.widgets import Input, TextArea
    from textual.worker import WorkerState

    from cockpit.ui.screens.run_view import RunView
    from cockpit.ui.widgets.waiting import Waiting
    from helpers.ui import app_wait

    app = pilot.app

    def settled() -> bool:
        run_screens = [s for s in app.screen_stack if isinstance(s, RunView)]
        if any(not s.sources for s in run_screens):
            return False
        if any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) and w.group != "tail" for w in app.workers):
            return False
        if any(w.waiting for w in app.screen.query(Waiting)):
            return False
        return _status_read(app.screen) and _plots_drawn(app.screen)

    await app_wait(pilot, settled, "the view settled")
    for box in [*app.screen.query(Input), *app.screen.query(TextArea)]:
        box.cursor_blink = False  # the cursor shown, not caught mid-blink
    await pilot.pause(0.3)
    await pilot.wait_for_scheduled_animations()
    # A toast lasts a few seconds of wall clock: whether it is still up when the screen is taken
    # depends on how busy the machine is. The tests that are about a toast read it (notifications).
    app.clear_notifications()
    await pilot.pause()


def _status_read(screen) -> bool:
    """A live screen shows its run's state as the folder has it (its tail reads the status on a
    timer: a busy machine showed a finished run as "starting" in the first frames)."""
    from cockpit.ui.screens.live import LiveRunScreen

    return not isinstance(screen, LiveRunScreen) or screen.state == screen.run.read_status().state


def _plots_drawn(screen) -> bool:
    """Each plot in sight is drawn with the screen's settings at its size: a key that changes them
    (e smoothing, x the axis, z zoom, l log) redraws through a message and the next layout, which a
    busy machine takes longer to get to than a fixed pause."""
    from cockpit.ui.screens.run_view import RunView
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    if not isinstance(screen, RunView):
        return True
    for plot in screen.query(MetricPlot):
        if not plot.size.width or plot._wanted is None:
            continue
        sig = plot.drawn_signature
        if not isinstance(sig, tuple) or sig[1] != screen.x_mode or sig[2] != round(screen.smoothing, 3) \
                or sig[4] != tuple(plot.size) or sig[5] != screen.view:
            return False
    return True


def _press(keys: str):
    async def run_before(pilot) -> None:
        await _views_settled(pilot)
        for key in keys.split():
            await pilot.press(key)
            await _views_settled(pilot)

    return run_before


SNAPSHOT_FIXTURES = "/tmp/cockpit-snapshot-fixtures"


def _fixed_copy(src) -> str:
    """The fixture copied to a fixed path: a replay's folder shows on screen (the checkpoints view),
    and a checkout's own path differs from machine to machine."""
    import os
    from pathlib import Path

    dest = Path(SNAPSHOT_FIXTURES) / src.name
    data = src.read_bytes()
    if not dest.is_file() or dest.read_bytes() != data:
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(f".{dest.name}.{os.getpid()}")
        part.write_bytes(data)
        os.replace(part, dest)  # atomic: workers may copy the same file at once
    return str(dest)


def _replay(*names: str):
    paths = [FIXTURES / n if (FIXTURES / n).is_file() else REAL / n for n in names]
    return make_app("replay", [_fixed_copy(p) for p in paths], "/tmp/cockpit-snapshot-unused")


RUN_VIEWS = {
    "plots": "", "completions": "2", "history": "3", "system": "5", "alerts": "6", "findings": "7",
    "checkpoints": "8", "picker": "m", "glossary": "i", "steps-prompt": "v", "help": "f1",
    "palette": "ctrl+p", "zoom": "z", "smoothing-off": "e", "time-axis": "x",
}
"""A run screen's tabs, modals and modes: the keys that open each."""
MODALS_AND_MODES = ["picker", "glossary", "steps-prompt", "palette", "zoom", "smoothing-off", "time-axis"]
REPLAY_VIEWS = {**{k: v for k, v in RUN_VIEWS.items() if k not in ("help", "system", "alerts")},
                "add-source": "a", "findings-evidence": "7 enter"}
"""The replay of a real run: each tab and every modal and mode of a run screen (the help, the system
and alerts tabs are the run folder's)."""
LIVE_VIEWS = {**{k: v for k, v in RUN_VIEWS.items() if k not in MODALS_AND_MODES},
              "output": "4", "add-rule": "a", "stop-finished": "s",
              "completions-filter": "2 slash", "completions-goto": "2 g", "completions-row": "2 enter",
              "completions-group": "2 p", "completions-compare": "2 b left_square_bracket",
              "completions-sort": "2 o", "checkpoints-picked": "8 down space"}
"""A run folder: each tab (the ones a trainer_state.json has nothing for included), the completions'
modes and the live screen's own modals (the modals and modes a replay shares are the replay's)."""


def _cases(views: dict[str, str], main: list[str]) -> list:
    return [pytest.param(keys, size, id=f"{name}-{size}") for name, keys in views.items()
            for size in (MAIN_SIZES if name in main else ["100x30"])]


@pytest.mark.parametrize(("keys", "size"), _cases(REPLAY_VIEWS, ["plots", "completions", "findings"]))
def test_replay_views(snap_compare, keys, size):
    """A real GRPO run's trainer_state.json (two reward functions) in every view of the replay."""
    app = _replay("trl_grpo_modern_multireward.json")
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_press(keys))


@pytest.fixture
def grpo_runs():
    """Home's runs, at a fixed path (Home shows it): a finished GRPO run, a stopped one that can be
    resumed, a failed one. Tests using it share an xdist group (one worker: one path)."""
    import shutil
    from pathlib import Path

    from helpers.ui import grpo_run

    d = Path("/tmp/cockpit-snapshot-grpo-runs")
    shutil.rmtree(d, ignore_errors=True)
    grpo_run(d, "grpo-finished", steps=20, max_steps=20)
    grpo_run(d, "grpo-stopped", steps=8, max_steps=40, state="stopped", checkpoints=(5,))
    failed = grpo_run(d, "grpo-failed", steps=3, max_steps=40, state="failed", checkpoints=())
    failed.update_status(exit_code=1, reason="the trainer exited 1: CUDA out of memory")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.xdist_group("snapshot-grpo-runs")
@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize(("keys", "size"), _cases(LIVE_VIEWS, ["plots", "completions", "checkpoints", "help"]))
def test_run_folder_views(snap_compare, grpo_runs, keys, size):
    """A finished GRPO run folder (completions, output, alerts, a finding, checkpoints) in every
    view of the run screen."""
    app = make_app("live", [str(grpo_runs / "grpo-finished")], str(grpo_runs))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_press(keys))


HOME_VIEWS = {"runs": "", "presets": "p", "archived": "v", "replay-prompt": "r", "compare-prompt": "c",
              "rename": "R", "delete": "D", "archive": "A", "marked": "space down space", "help": "f1",
              "palette": "ctrl+p"}


@pytest.mark.xdist_group("snapshot-grpo-runs")
@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize(("keys", "size"), _cases(HOME_VIEWS, ["runs"]))
def test_home_views(snap_compare, grpo_runs, keys, size, tmp_path, monkeypatch):
    monkeypatch.setenv("COCKPIT_CONFIG_DIR", str(tmp_path / "config"))  # the shipped presets only
    app = make_app("home", [], str(grpo_runs))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=_press(keys))


REPLAYS = {
    "dpo-nan-gradnorm": ["trl_dpo_nan_gradnorm_midrun.json"],
    "sft-token-accuracy": ["trl_sft_token_accuracy.json"],
    "grpo-legacy-rewards": ["trl_grpo_legacy_reward_keys.json"],
    "orpo": ["trl_orpo_recsys.json"],
    "whisper-legacy": ["seq2seq_whisper_eval_wer_legacy_format.json"],
    "dpo-margins": ["dpo_healthy_margins_grow_chosen_steady.json"],
    "sft-six-eval-sets": ["sft_six_eval_sets_overfitting_30_epochs.json"],
    "sft-resumed-lr-restarts": ["sft_unsloth_resumed_60_to_300_steps_lr_restarts_from_zero.json"],
    "overlay-sft-dpo": ["trl_sft_token_accuracy.json", "trl_dpo_nan_gradnorm_midrun.json"],
}
"""Real public runs of every trainer family the fixtures hold, the plots first."""
MAIN_REPLAYS = ["dpo-nan-gradnorm", "overlay-sft-dpo"]


@pytest.mark.parametrize(("names", "size"), [
    pytest.param(names, size, id=f"{name}-{size}") for name, names in REPLAYS.items()
    for size in (MAIN_SIZES if name in MAIN_REPLAYS else ["100x30"])])
def test_real_run_plots(snap_compare, names, size):
    assert snap_compare(_replay(*names), terminal_size=SIZES[size], run_before=_press(""))


@pytest.mark.parametrize("view", ["completions", "findings", "history"])
def test_overlay_tabs(snap_compare, view):
    app = _replay(*REPLAYS["overlay-sft-dpo"])
    assert snap_compare(app, terminal_size=SIZES["100x30"], run_before=_press(RUN_VIEWS[view]))
