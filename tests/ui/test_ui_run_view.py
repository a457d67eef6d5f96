"""The run screen around the plots: the header (ETA, newest checkpoint, a blank start), stop and
resume offered by the run's state and what follows them, log history across a resume, the trainer's
output tab, a live run in a compare. Driven with Pilot over run folders written with the core APIs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cockpit.run import journal
from cockpit.run.folder import Status
from helpers import FIXTURES
from helpers.ui import SIZE, app_for, app_wait, fake_checkpoint, footer_keys, make_run, notifications, sft_records

pytestmark = pytest.mark.anyio


# -- the ETA mid-run --------------------------------------------------------------------------------


async def test_an_eta_past_its_countdown_mid_run_is_not_shown_as_0_s(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    records = sft_records(range(1, 21), max_steps=40)
    records[0].t = time.time() - 600  # training started 10 minutes ago: the ETA is not rough
    stale = journal.progress(20, 40, steps_per_s=2.0, eta_s=5.0)
    stale.t = time.time() - 12  # written 12 s ago with 5 s to go: the next step is slow
    run = make_run(tmp_path / "runs", "slow-steps", [*records, stale])
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "step 20/40" in str(header.render()), "the header")
        text = str(header.render())
        assert "ETA …" in text and "ETA 0" not in text
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.progress(21, 40, steps_per_s=0.1, eta_s=190.0))
        await app_wait(pilot, lambda: "ETA 3m" in str(header.render()), "a fresh ETA")


async def test_the_eta_of_the_first_minutes_is_said_to_be_rough(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    records = sft_records(range(1, 11), max_steps=1000)  # training started now, 1 % trained
    run = make_run(tmp_path / "runs", "young", records)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "step 10/1000" in str(header.render()), "the header")
        text = str(header.render())
        assert "ETA ~" in text and "(rough)" in text, text


# -- attach to an output dir keeps its header current -------------------------------------------


def _trainer_state(folder: Path, step: int, max_steps: int = 150) -> None:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    history = [{"step": s, "epoch": s / max_steps, "loss": 1.0 / s} for s in range(1, step + 1)]
    (folder / "trainer_state.json").write_text(json.dumps(
        {"global_step": step, "max_steps": max_steps, "log_history": history}), encoding="utf-8")


async def test_attach_to_an_output_dir_names_the_newest_checkpoint_as_it_lands(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    out = tmp_path / "out"
    _trainer_state(out / "checkpoint-10", 10)
    app = app_for(tmp_path, "replay", [str(out)])  # what `cockpit attach out` opens
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "checkpoint-10" in str(header.render()), "the first checkpoint")
        assert "step 10/150" in str(header.render())
        _trainer_state(out / "checkpoint-20", 20)
        await app_wait(pilot, lambda: "step 20/150" in str(header.render()), "the next one followed")
        text = str(header.render())
        assert "checkpoint-20" in text and "checkpoint-10" not in text


# -- a blank start -----------------------------------------------------------------------------------


async def test_before_the_first_step_the_plots_say_what_the_run_is_doing_and_the_header_names_the_trainer(
        tmp_path):
    from textual.widgets import Static

    from cockpit.ui.widgets.run.run_header import RunHeader

    run = make_run(tmp_path / "runs", "blank", [journal.phase("importing", "torch, transformers, trl")],
                   state="running", trainer="grpo")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        header = app.screen.query_one(RunHeader)
        waiting = app.screen.query_one("#plots-waiting", Static)
        await app_wait(pilot, lambda: waiting.display and "importing TRL" in str(waiting.render()),
                       "the plots area says what is going on")
        assert "waiting for the first step (importing TRL…)" in str(waiting.render())
        assert "trainer grpo" in str(header.render()) and "unknown trainer" not in str(header.render())
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_ended("failed", reason="ImportError: no module named trl", step=0))
        run.write_status(Status(state="failed", name=run.name, trainer="grpo"))
        await app_wait(pilot, lambda: "ended before its first logged step" in str(waiting.render()),
                       "a failure before the first step", limit=20)
        assert "trainer grpo" in str(header.render())
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.metrics(1, {"loss": 1.0}))
        await app_wait(pilot, lambda: not waiting.display, "the plots once there is a metric")


async def test_steps_trained_before_the_first_log_are_said_with_the_step_of_the_first_log_and_a_spinner(tmp_path):
    from cockpit.metrics.rundata import RunData
    from cockpit.ui.screens.run_view.texts import steps_before_first_log
    from cockpit.ui.widgets.waiting import Waiting

    records = [journal.run_started("sft", max_steps=40, logging_steps=10), journal.phase("training"),
               journal.progress(3, 40, steps_per_s=1.0, eta_s=1.0)]
    run = make_run(tmp_path / "runs", "quiet", records)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        waiting = app.screen.query_one("#plots-waiting", Waiting)
        await app_wait(pilot, lambda: waiting.display and "step 3" in str(waiting.render()), "the step said")
        shown = str(waiting.render())
        assert "first step" not in shown, shown  # three steps are trained: not "waiting for the first step"
        assert "step 3/40 trained" in shown and "first metrics are logged at step 10" in shown, shown
        assert waiting.waiting  # a spinner: the wait is alive
    data = RunData("short")
    data.apply([journal.run_started("sft", max_steps=4, logging_steps=10), journal.progress(3, 4)])
    data.state = "running"
    assert steps_before_first_log(data) == (
        "step 3/4 trained · logging_steps 10 is more than the run's 4 steps: it logs only its summary at the end")


async def test_a_plain_trainer_file_is_named_as_such_not_unknown_trainer(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    app = app_for(tmp_path, "replay", [str(FIXTURES / "trainer_eval_best_checkpoint.json")])
    async with app.run_test(size=(100, 30)) as pilot:
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "step 120/120" in str(header.render()), "the file read")
        text = str(header.render())
        assert "unknown trainer" not in text and "trainer Trainer (no TRL metrics)" in text, text


async def test_the_phase_is_read_whole_in_the_header_at_100_and_60_columns(tmp_path):
    from cockpit.ui.widgets.run.run_header import RunHeader

    run = make_run(tmp_path / "runs", "demo-grpo-20261128-114837",
                   [journal.phase("importing", "torch, transformers, trl")], state="running", trainer="grpo")
    for size in ((100, 30), (60, 20)):
        app = app_for(tmp_path, "live", [str(run.path)])
        async with app.run_test(size=size) as pilot:
            header = app.screen.query_one(RunHeader)
            await app_wait(pilot, lambda h=header: "phase" in str(h.render()), "the header")
            await pilot.pause()
            first = str(header.render()).splitlines()[0]
            assert "phase importing" in first and len(first) <= size[0] - 2, (size, first)
            if size[0] == 100:
                assert "(torch, transformers, trl)" in first, first


async def test_a_compare_names_every_runs_trainer_and_end_in_the_header(tmp_path):
    from cockpit.ui.widgets.run.alert_bar import AlertBar
    from cockpit.ui.widgets.run.run_header import RunHeader

    a = make_run(tmp_path / "runs", "run-a", [*sft_records(range(1, 6)),
                                              journal.run_ended("finished", reason="training finished")],
                 state="finished")
    b = make_run(tmp_path / "runs", "run-b", [journal.run_started("grpo", max_steps=10),
                                              journal.metrics(1, {"loss": 1.0, "reward": 0.5}),
                                              journal.run_ended("failed", reason="CUDA out of memory",
                                                                fix="lower the batch size")],
                 state="failed", trainer="grpo")
    app = app_for(tmp_path, "replay", [str(a.path), str(b.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both sources")
        header = app.screen.query_one(RunHeader)
        bar = app.screen.query_one(AlertBar)
        await app_wait(pilot, lambda: "grpo" in str(header.render()), "both trainers named")
        assert "trainer sft, grpo" in str(header.render())
        await app_wait(pilot, lambda: "out of memory" in str(bar.render()), "the second run's end")
        shown = str(bar.render())
        assert "run-a" in shown and "training finished" in shown and "run-b" in shown, shown


# -- compare of a live run ---------------------------------------------------------------------


async def test_a_live_run_in_compare_keeps_updating_and_its_checkpoint_says_snapshot(tmp_path):
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.run_header import RunHeader

    run = make_run(tmp_path / "runs", "training", sft_records(range(1, 11)), state="running")
    checkpoint = run.output / "checkpoint-5"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_bytes(
        (FIXTURES / "trl_sft_token_accuracy.json").read_bytes())
    app = app_for(tmp_path, "replay", [str(run.path), str(checkpoint)])
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        await app_wait(pilot, lambda: len(screen.sources) == 2, "both sources")
        live = next(s for s in screen.sources if s.store.last_step == 10)
        await app_wait(pilot, lambda: any("snapshot" in m and "checkpoint" in m
                                          for m in notifications(app)), "the snapshot said")
        header = screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "running" in str(header.render()), "the live state shown")

        with journal.JournalWriter(run.events) as jw:  # the run goes on
            jw.write_all(sft_records(range(11, 21))[2:])
        await app_wait(pilot, lambda: live.store.last_step == 20, "new steps followed")

        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_ended("finished", reason="training finished"))
        from cockpit.run.folder import Status
        run.write_status(Status(state="finished", name=run.name, trainer="sft"))
        await app_wait(pilot, lambda: "finished" in str(header.render()), "its end shown")


# -- log history after a resume ------------------------------------------------------------------


async def test_log_history_after_a_resume_shows_each_step_once_and_marks_the_resume(tmp_path):
    from cockpit.ui.widgets.run.log_history import LogHistoryTable

    run = make_run(tmp_path / "runs", "resumed", sft_records(range(1, 8)), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("3")
        table = app.screen.query_one(LogHistoryTable)
        await app_wait(pilot, lambda: table.row_count == 7, "seven steps")

        # Stopped at step 7, resumed from checkpoint-4 (steps 5-7 come again, with new values).
        with journal.JournalWriter(run.events) as jw:
            jw.write(journal.run_started("sft", max_steps=100,
                                         resumed_from=str(run.output / "checkpoint-4")))
            for s in range(5, 10):
                jw.write(journal.metrics(s, {"loss": 100.0 + s}))
        await app_wait(pilot, lambda: table.row_count == 10, "9 steps and the marker")

        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        steps = [r[1] for r in rows]
        assert steps == ["1", "2", "3", "4", "4", "5", "6", "7", "8", "9"]
        assert rows[4][0] == "⟲ resumed from checkpoint-4"
        loss = [c.key.value for c in table.columns.values()].index("loss")
        assert [r[loss] for r in rows[5:8]] == ["105", "106", "107"]  # the newest values


# -- stop/resume keys follow the run's state -----------------------------------------------------


@pytest.mark.parametrize("state, checkpoint, offered", [
    ("running", False, {"Stop & save", "Force stop"}),
    ("finished", True, set()),
    ("failed", False, set()),
    ("failed", True, {"Resume"}),
    ("stopped", True, {"Resume"}),
])
async def test_stop_and_resume_are_offered_only_when_they_can_do_something(
        tmp_path, state, checkpoint, offered):
    run = make_run(tmp_path / "runs", "keys", sft_records(range(1, 6)), state=state)
    if checkpoint:
        fake_checkpoint(run.output, 5)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 40)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        keys = {"Stop & save", "Force stop", "Resume"}
        await app_wait(pilot, lambda: set(footer_keys(app)) & keys == offered,
                       f"the footer offering {offered or 'none of them'}")
        await pilot.pause(0.3)
        assert set(footer_keys(app)) & keys == offered  # and it stays so
        palette = {c.title for c in app.get_system_commands(app.screen)}
        assert palette & {"Stop & save", "Force stop", "Resume"} == offered
        if "Stop & save" not in offered:
            await pilot.press("s", "K")  # the keys do nothing either: no question comes up
            await pilot.pause(0.2)
            assert app.screen.__class__.__name__ == "LiveRunScreen"


# -- after a stop, and after a resume --------------------------------------------------------------


def _force_stopped_run(tmp_path):
    records = sft_records(range(1, 6))
    records.append(journal.run_ended("killed", signal=15, reason="stopped by request (SIGTERM)",
                                     fix="resume it with `cockpit resume RUN`", step=5))
    run = make_run(tmp_path / "runs", "stopped", records, state="killed")
    fake_checkpoint(run.output, 5)
    return run


async def test_a_stop_is_information_and_its_advice_is_the_resume_key(tmp_path):
    from cockpit.ui.widgets.run.alert_bar import AlertBar

    run = _force_stopped_run(tmp_path)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(AlertBar)
        await app_wait(pilot, lambda: bar.display, "the alert bar")
        text = str(bar.render())
        assert "stopped by request" in text and "press u to resume" in text
        assert "cockpit resume" not in text and "fix:" not in text
        assert bar.has_class("-info") and not bar.has_class("-error")
        await pilot.press("6")
        await pilot.pause(0.3)
        assert "press u to resume" in str(app.screen.query_one("#alerts-list").render())

    replay = app_for(tmp_path, "replay", [str(run.path)])  # no resume key there: the command
    async with replay.run_test(size=SIZE) as pilot:
        bar = replay.screen.query_one(AlertBar)
        await app_wait(pilot, lambda: bar.display, "the alert bar")
        assert f"`cockpit resume {run.name}`" in str(bar.render())


@pytest.mark.slow  # the resume starts a real runner (stopped at once)
async def test_resuming_clears_the_stop_banner_at_once_and_the_alerts_say_resumed(tmp_path):
    from cockpit.config.presets import load_preset
    from cockpit.config.validate import validate
    from cockpit.errors import CockpitError
    from cockpit.launch import plan as launch
    from cockpit.run.folder import Status
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.widgets.run.alert_bar import AlertBar

    # A real run folder (as launched), stopped at step 5 with a checkpoint.
    run = launch.prepare(validate(load_preset("demo-sft")), tmp_path / "runs", "stopped")
    with journal.JournalWriter(run.events) as jw:
        jw.write_all(sft_records(range(1, 6)))
        jw.write(journal.run_ended("killed", signal=15, reason="stopped by request (SIGTERM)",
                                   fix="resume it with `cockpit resume RUN`", step=5))
    run.write_status(Status(state="killed", name=run.name, trainer="sft"))
    fake_checkpoint(run.output, 5)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(AlertBar)
        await app_wait(pilot, lambda: bar.display and app.screen.resumable, "stopped, resumable")
        screen = app.screen
        await pilot.press("u")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        await pilot.press("y")
        try:
            # Gone before the new attempt wrote anything to the journal.
            await app_wait(pilot, lambda: not bar.display, "the stop banner cleared", limit=10)
            records, _ = journal.read_all(run.events)
            assert not any(r.data.get("resumed_from") for r in records)  # nothing new yet
            assert screen.sources[0].ended is None
        finally:
            try:
                launch.stop(run, save=False, grace_s=2)
            except CockpitError:
                pass  # it ended already (the checkpoint's weights are not real)

    # What the new attempt writes first: the alerts tab has the resume.
    with journal.JournalWriter(run.events) as jw:
        jw.write(journal.run_started("sft", max_steps=100,
                                     resumed_from=str(run.output / "checkpoint-5")))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("6")
        await app_wait(pilot, lambda: "resumed from checkpoint-5" in str(
            app.screen.query_one("#alerts-list").render()), "a resumed entry")


# -- the trainer's output ------------------------------------------------------------------------


async def test_output_tab_puts_a_progress_bar_and_the_table_glued_to_it_on_their_own_lines(
        tmp_path):
    from textual.widgets import Log

    run = make_run(tmp_path / "runs", "output", sft_records(range(1, 3)))
    # As a GRPO run writes them (from a demo run's stdout.log): tqdm redraws with \r, then rich
    # prints its table right after the bar; nested bars move the cursor up (ESC [A).
    run.stdout_log.write_bytes(
        b"\r  0%|          | 0/6 [00:00<?, ?it/s]\r 17%|\xe2\x96\x88\xe2\x96\x8b        | 1/6 "
        b"[00:00<00:02,  2.10it/s]\xe2\x95\xad\xe2\x94\x80\xe2\x94\x80 Step 1 \xe2\x94\x80\xe2\x94\x80"
        b"\xe2\x95\xae\n"
        b"\xe2\x95\xb0\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x95\xaf\r 33%|\xe2\x96\x88\xe2\x96\x88"
        b"\xe2\x96\x88       | 2/6 [00:01<00:02,  2.00it/s]\n"
        b"\r  0%|          | 0/2 [00:00<?, ?it/s]\x1b[A\r                    \r\n"
        b"\r                    \r\x1b[A{'eval_loss': '4.868'}\n")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=SIZE) as pilot:
        await app_wait(pilot, lambda: getattr(app.screen, "sources", None), "loaded")
        await pilot.press("4")
        log = app.screen.query_one("#output-log", Log)
        await app_wait(pilot, lambda: len(log.raw_lines) >= 5, "the output")
        assert log.raw_lines == [
            " 17%|█▋        | 1/6 [00:00<00:02,  2.10it/s]",
            "╭── Step 1 ──╮",
            "╰───╯",
            " 33%|███       | 2/6 [00:01<00:02,  2.00it/s]",
            "{'eval_loss': '4.868'}",
        ]


def test_the_end_of_a_resumed_run_says_how_long_every_attempt_took_together(tmp_path):
    from cockpit.runner.main import took

    first = [journal.phase("importing"), *sft_records(range(1, 4)), journal.run_ended("stopped")]
    for i, rec in enumerate(first):
        rec.t = 1000.0 + 50 * i / (len(first) - 1)  # 50 s from its first record to its end
    second = [journal.phase("importing"), *sft_records(range(4, 6))]
    for rec in second:
        rec.t = 2000.0
    run = make_run(tmp_path / "runs", "resumed", [*first, *second])
    assert took(run, 6.0) == "56s over 2 attempts, the last 6s"  # not "finished in 6s"
    fresh = make_run(tmp_path / "runs", "fresh", second)
    assert took(fresh, 6.0) == "6s"


def test_an_empty_system_tab_says_why_in_the_runs_own_terms(tmp_path):
    """A trainer_state.json never has samples, an ended run will not get one, a live run soon will:
    only the live one says "yet"."""
    from cockpit.metrics.rundata import Alert, RunData
    from cockpit.ui.widgets.run.system_pane import no_samples

    replay = RunData("state")
    assert "trainer_state.json holds no system samples" in no_samples(replay)
    live = RunData("live", run_dir=tmp_path)
    assert "yet" in no_samples(live)
    ended = RunData("ended", run_dir=tmp_path, ended=Alert("information", "run finished"))
    assert "yet" not in no_samples(ended) and "ended before" in no_samples(ended)


# -- a long journal: its newest steps first, then the whole -------------------------------------------


async def test_a_long_run_is_drawn_from_its_newest_steps_first_said_so_then_whole_and_followed(
        tmp_path, monkeypatch):
    """Attaching to a long run (bench: attach_100k_grpo_s): the first frame is the journal's first
    look (its start and newest steps), the header and every panel saying earlier steps are being
    read, no best value from the steps read so far and no findings judged from them; then the
    whole journal replaces it, and the follow goes on from where the whole read ended."""
    import threading

    from cockpit.metrics import follow
    from cockpit.ui.widgets.run.metric_plot import MetricPlot
    from cockpit.ui.widgets.run.run_header import RunHeader

    records = sft_records(range(1, 2001), max_steps=4000)
    for at in (1000, 3990):  # an alert fired mid-run and one among the newest steps
        records.insert(at, journal.alert("loss_high", "loss above 1", key="loss", value=1.5,
                                         step=at // 2, actions=[]))
    run = make_run(tmp_path / "runs", "long", records)
    size = run.events.stat().st_size
    monkeypatch.setattr(follow, "FIRST_LOOK_BYTES", size // 4)
    monkeypatch.setattr(follow, "TAIL_BYTES", size // 10)
    # The whole read held until the first look was seen here (it is quick at this size).
    seen = threading.Event()
    whole_read = follow.RunFollower.open

    def open_after_the_first_look(self, label=None):
        seen.wait(20)
        return whole_read(self, label)

    monkeypatch.setattr(follow.RunFollower, "open", open_after_the_first_look)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        header = app.screen.query_one(RunHeader)
        await app_wait(pilot, lambda: "reading the steps before" in str(header.render()), "the first look")
        look = app.screen.sources[0]
        assert "step 2000/4000" in str(header.render()) and "trainer sft" in str(header.render())
        assert list(look.store.series("loss")[0]) == list(range(look.tail_from, 2001))
        plots = list(app.screen.query(MetricPlot))
        await app_wait(pilot, lambda: plots and all(p.chart is not None for p in plots), "the panels")
        assert all(f"from step {look.tail_from}: earlier steps being read" in str(p.border_subtitle)
                   for p in plots)
        assert all("(min" not in str(p.border_title) for p in plots)  # no best of the newest steps alone
        assert not app.screen.panes_revealed  # the other tabs (the findings' judge) wait for the whole
        assert not app.screen.board.records  # the alerts are the whole read's, taken once
        await pilot.press("w")  # no CSV of the newest steps alone
        await app_wait(pilot, lambda: any("still being read" in n for n in notifications(app)), "the refusal")
        assert not (run.path / "metrics.csv").exists()
        seen.set()
        await app_wait(pilot, lambda: app.screen.sources[0].tail_from is None, "the whole journal")
        await app_wait(pilot, lambda: "reading" not in str(header.render())
                       and not any("being read" in str(p.border_subtitle) for p in plots), "the marks gone")
        whole = app.screen.sources[0]
        assert list(whole.store.series("loss")[0]) == list(range(1, 2001))
        await app_wait(pilot, lambda: any("(min" in str(p.border_title) for p in plots), "the best, of every step")
        await app_wait(pilot, lambda: app.screen.panes_revealed, "the other tabs")
        assert [r.step for r in app.screen.board.records] == [500, 1995]  # each once
        assert app.screen.board.fired["loss_high"].count == 2
        with journal.JournalWriter(run.events) as jw:
            jw.write_all(sft_records(range(2001, 2006), max_steps=4000)[2:])
        await app_wait(pilot, lambda: whole.store.count("loss") == 2005, "the steps written since")
        assert list(whole.store.series("loss")[0]) == list(range(1, 2006))  # none lost, none twice
