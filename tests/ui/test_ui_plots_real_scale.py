"""Issue 30 §1, plots you can read at real scale: each item driven through the real replay and
live screens (Pilot) on real trainer_state.json files (tests/fixtures/trainer_states/PROVENANCE.md)
and journal runs. What a panel drew is read back from the widget (its chart, title, colours)."""

from __future__ import annotations

import numpy as np
import pytest

from cockpit.run import journal
from cockpit.run.folder import Status
from helpers import FIXTURES
from helpers.ui import app_for, app_wait, make_run, sft_records

pytestmark = pytest.mark.anyio
SFT_SPIKE = FIXTURES / "sft_3765_steps_first_log_spike.json"
"""3,765 SFT steps: loss 14.75 at the first log (step 50), ~0.5 after; 19 evals 0.997 → 0.733."""
GRPO_NOISY = FIXTURES / "trl_grpo_1134_steps_noisy.json"
"""1,134 noisy GRPO steps (every 5th logged) with three reward functions."""


def plots(app):
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    return list(app.screen.query(MetricPlot))


def panel(app, title: str):
    return next(p for p in plots(app) if p.panel.title == title)


async def drawn(pilot, app) -> None:
    await app_wait(pilot, lambda: plots(app) and all(p.chart is not None and p.points_drawn
                                                     for p in plots(app) if p.display), "the panels drawn")


def canvas_rows(plot) -> list[str]:
    """The panel's rows as text (legend rows, canvas, x axis, x labels)."""
    return [strip.text for strip in plot.build_lines()]


async def test_a_spike_at_the_first_log_does_not_flatten_the_eval_trend_at_160x48(tmp_path):
    app = app_for(tmp_path, "replay", [str(SFT_SPIKE)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        loss = panel(app, "loss")
        assert loss.labels_drawn == ["loss", "eval_loss"]
        lo, hi = loss.chart.ylim
        assert hi < 3, "the 14.75 spike is cut from the y range"
        assert loss.clipped[0] >= 1 and "▲" in "".join(canvas_rows(loss)), "and marked where it was"
        assert "off range" in str(loss.border_subtitle)
        # The eval trend (0.997 → 0.733) spans a good part of the panel's height.
        assert (0.997 - 0.733) / (hi - lo) > 0.12
        # Train and eval of one metric: the eval dotted, in a colour of its own (issue 40).
        assert loss.colors_drawn[0] != loss.colors_drawn[1]
        assert [s.dotted for s in loss.chart.series][-2:] == [False, True]
        assert "┅ eval_loss" in str(loss.border_title) or any("┅" in str(r) for r in loss.legend)
        # Latest value and best with its step, of the train and the eval series.
        assert str(loss.border_title).startswith("loss 0.439 (min 0.389 @2800) · eval 0.733 (min 0.733 @3765)")
        assert str(panel(app, "learning rate").border_title).startswith("learning rate 8.76e-7")


async def test_a_noisy_grpo_run_reads_as_a_smoothed_trend_with_its_raw_points_faint_behind(tmp_path):
    app = app_for(tmp_path, "replay", [str(GRPO_NOISY)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        assert app.screen.smoothing > 0, "smoothing is on without a key pressed"
        length = panel(app, "completion length")
        assert length.faint_drawn == [True, False], "the raw series faint, the smoothed line over it"
        raw, smooth = length.chart.series
        wiggle = lambda s: float(np.abs(np.diff(s.y)).sum() / (np.ptp(s.y) or 1))  # noqa: E731
        assert wiggle(smooth) * 4 < wiggle(raw), "the line is a trend, not a barcode"
        # Every reward component is drawn with the total, each in a hue of its own.
        reward = panel(app, "reward")
        assert reward.labels_drawn[0] == "reward" and len(reward.labels_drawn) == 4
        assert len(set(reward.colors_drawn)) == 4
        await pilot.press("e")
        await app_wait(pilot, lambda: not length.faint_drawn or not any(length.faint_drawn), "raw again")


async def test_schedules_and_sparse_eval_series_are_never_smoothed(tmp_path):
    app = app_for(tmp_path, "replay", [str(SFT_SPIKE)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        lr = panel(app, "learning rate")
        assert not any(lr.faint_drawn), "the learning rate is drawn as it was scheduled"
        peak = int(np.argmax(lr.chart.series[0].y))
        assert lr.chart.series[0].x[peak] == 150  # the schedule's peak, not an EMA's lag
        loss = panel(app, "loss")
        assert loss.faint_drawn[-1] is False and loss.faint_drawn.count(True) == 1, \
            "the train loss is smoothed (a faint raw copy), its 19 evals are not"


@pytest.mark.parametrize(("fixture", "wanted", "not_wanted"), [
    ("trl_grpo_legacy_reward_keys.json", {"rewards/correctness_reward_func", "rewards/int_reward_func"}, set()),
    ("seq2seq_whisper_eval_wer_legacy_format.json", {"eval_wer", "eval_loss"}, {"eval_runtime"}),
    ("trainer_early_stopping_windows_path.json", {"eval_accuracy", "eval_f1"},
     {"eval_samples_per_second", "eval_steps_per_second"}),
])
async def test_every_eval_metric_and_every_reward_component_is_a_default_panel(tmp_path, fixture, wanted,
                                                                                 not_wanted):
    app = app_for(tmp_path, "replay", [str(FIXTURES / fixture)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        shown = {key for p in plots(app) for key in p.labels_drawn}
        assert wanted <= shown
        assert not not_wanted & shown


async def test_an_overlay_keeps_each_runs_colour_on_every_panel(tmp_path):
    a, b = FIXTURES / "trl_grpo_modern_multireward.json", GRPO_NOISY
    app = app_for(tmp_path, "replay", [str(a), str(b)])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: len(app.screen.sources) == 2, "both runs")
        await app_wait(pilot, lambda: all(len({lbl.split(":")[0] for lbl in p.labels_drawn}) == 2
                                          for p in plots(app) if p.panel.title != "completion length"),
                       "both runs on each panel")
        colours: dict[str, set] = {}
        for p in plots(app):
            assert len(set(p.colors_drawn)) == len(p.colors_drawn), f"{p.panel.title}: one hue a series"
            for label, colour in zip(p.labels_drawn, p.colors_drawn, strict=True):
                run, _, key = label.partition(": ")
                if key.startswith("rewards/"):
                    continue  # a run's further reward components are shades of its colour
                colours.setdefault(run, set()).add(colour)
        assert all(len(c) == 1 for c in colours.values()), colours
        assert len({next(iter(c)) for c in colours.values()}) == 2


async def test_zoom_log_scale_and_a_picked_step_range(tmp_path):
    from cockpit.ui.screens.steps_prompt import StepsPrompt

    app = app_for(tmp_path, "replay", [str(SFT_SPIKE)])
    async with app.run_test(size=(100, 30)) as pilot:
        await drawn(pilot, app)
        await pilot.press("z")
        await app_wait(pilot, lambda: [p.display for p in plots(app)].count(True) == 1, "one panel alone")
        zoomed = next(p for p in plots(app) if p.display)
        await app_wait(pilot, lambda: zoomed.size.width > 90, "full width")
        await pilot.press("l")
        await app_wait(pilot, lambda: app.screen.view.log_y and zoomed.chart.ylim[1] < 1.0, "log y")
        assert all("e" not in t for t in zoomed.yticks_drawn), zoomed.yticks_drawn  # 3 digits, plain
        await pilot.press("escape")
        await app_wait(pilot, lambda: all(p.display for p in plots(app)), "all panels again")
        assert app.screen.is_current
        await pilot.press("v")
        await app_wait(pilot, lambda: isinstance(app.screen, StepsPrompt), "asked for steps")
        await pilot.press(*"1000-2000", "enter")
        loss = panel(app, "loss")
        await app_wait(pilot, lambda: app.screen.view.x_window == (1000, 2000)
                       and loss.chart.xlim[0] >= 1000 and loss.chart.xlim[1] <= 2000, "steps 1000-2000")
        assert "steps 1000–2000" in str(loss.border_subtitle)
        await pilot.press("v")
        await app_wait(pilot, lambda: isinstance(app.screen, StepsPrompt), "asked again")
        await pilot.press(*"9-3", "enter")
        assert isinstance(app.screen, StepsPrompt), "a reversed range says so and stays open"
        await pilot.press("ctrl+a", "ctrl+k", "enter")
        await app_wait(pilot, lambda: app.screen.view.x_window is None, "every step again")


async def test_time_axis_in_hours_lone_point_on_its_tick_and_marks_for_checkpoints_resumes_stops(tmp_path):
    records = sft_records(range(1, 41), max_steps=100)
    t0 = 1_700_000_000.0
    for i, rec in enumerate(records):
        rec.t = t0 + i * 900.0  # ~10 hours of training
    records[20:20] = [journal.checkpoint(8, "output/checkpoint-8")]
    records += [journal.run_ended("stopped", reason="stopped by request", step=20)]
    records += [journal.run_started("sft", max_steps=100, resumed_from="output/checkpoint-15")]
    records += [journal.metrics(41, {"only_once": 0.6931471805599453})]
    for rec in records[-3:]:
        rec.t = records[-4].t + 60
    run = make_run(tmp_path / "runs", "marks", records, state="running")
    run.write_status(Status(state="running", name=run.name, trainer="sft"))
    app = app_for(tmp_path, "replay", [str(run.events)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        loss = panel(app, "loss")
        axis = canvas_rows(loss)[-2]
        assert {"C", "R", "S"} <= set(axis), axis
        assert "C checkpoint R resume S stop" in str(loss.border_subtitle)
        await pilot.press("x")
        await app_wait(pilot, lambda: str(loss.border_subtitle).split(" · ")[1] == "hours",
                       f"hours, not seconds: {loss.border_subtitle}")
        # Time mode marks the checkpoint, the stop and the resume too (issue 40), each in its own
        # column (the resume used to be drawn under the stop).
        await app_wait(pilot, lambda: {"C", "R", "S"} <= set(canvas_rows(loss)[-2]), "marks on the time axis")
        await pilot.press("x")
        await pilot.press("m")
        await pilot.press(*"only_once", "enter")
        await app_wait(pilot, lambda: any(p.panel.title == "only_once" for p in plots(app)), "picked")
        lone = panel(app, "only_once")
        await app_wait(pilot, lambda: lone.chart is not None and lone.points_drawn == 1, "drawn")
        rows = canvas_rows(lone)
        point_row = next(i for i, r in enumerate(rows) if "•" in r)
        assert rows[point_row].lstrip().startswith("0.693┤"), rows[point_row]


async def test_u_names_the_checkpoint_it_resumes_from(tmp_path):
    from cockpit.ui.screens.confirm import ConfirmScreen

    records = [*sft_records(range(1, 21)), journal.run_ended("stopped", reason="stopped by request", step=20)]
    run = make_run(tmp_path / "runs", "stopped", records, state="stopped")
    for step in (10, 20):
        ckpt = run.path / "output" / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        (ckpt / "trainer_state.json").write_text(f'{{"global_step": {step}, "max_steps": 100, "log_history": []}}')
        (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources and app.screen.resumable, "resumable")
        await pilot.press("u")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        assert "from checkpoint-20 (" in app.screen.question, app.screen.question
        await pilot.press("escape")


async def test_a_replayed_trainer_state_marks_the_checkpoints_it_knows_of(tmp_path):
    """Issue 30: the `C` marks were drawn for journal runs only. A trainer_state.json replay marks
    the checkpoint-N folders beside it (a checkpoint's own file: those up to its step) and the
    best_model_checkpoint it names, even where that folder is not here (a public file's)."""
    import json
    import shutil

    from cockpit.metrics.sources import open_source

    out = tmp_path / "outputs"
    out.mkdir()
    shutil.copy(SFT_SPIKE, out / "trainer_state.json")
    for step in (1000, 2000, 3000):
        (out / f"checkpoint-{step}").mkdir()
    state = json.loads(SFT_SPIKE.read_text())  # checkpoint-2000's own file: the state at its step
    state.update(global_step=2000, best_model_checkpoint=None,
                 log_history=[e for e in state["log_history"] if e.get("step", 0) <= 2000])
    (out / "checkpoint-2000" / "trainer_state.json").write_text(json.dumps(state))
    assert [s for s, _ in open_source(out).known_checkpoints()] == [1000, 2000, 3000, 3765]  # + the best
    assert [s for s, _ in open_source(out / "checkpoint-2000").known_checkpoints()] == [1000, 2000]
    public = FIXTURES.parent / "real_runs" / "seq2seq_whisper_small_wer_improves_eval_loss_rises.json"
    assert open_source(public).known_checkpoints() == [(4000, "./whisper-small-colab/checkpoint-4000")]
    assert open_source(FIXTURES / "trl_grpo_1134_steps_noisy.json").known_checkpoints() == []

    app = app_for(tmp_path, "replay", [str(out)])
    async with app.run_test(size=(160, 48)) as pilot:
        await drawn(pilot, app)
        loss = panel(app, "loss")
        axis = canvas_rows(loss)[-2]
        assert axis.count("C") == 4, axis
        assert "C checkpoint" in str(loss.border_subtitle)
