"""The Checkpoints tab (issue 24), on a real tiny demo run still training: two checkpoints answer
the same prompts side by side, from the sampler process, and a replay of the run shows the kept
answers afterwards."""

from __future__ import annotations

import time

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from cockpit.launch.plan import launch, stop
from cockpit.run import journal
from cockpit.run.folder import complete_checkpoint, list_checkpoints
from helpers import NO_SFT_CHECK, live
from helpers import wait_for as wait_until
from helpers.ui import app_for, app_wait, notifications

pytestmark = pytest.mark.anyio


def steps_per_s(run, since: float, until: float) -> float | None:
    """The training's rate between two wall times, from the journal's progress records."""
    records, _ = journal.read_all(run.events)
    points = [(r.t, r.step) for r in records
              if r.kind == journal.PROGRESS and r.step is not None and since <= r.t <= until]
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


@pytest.mark.field  # several training processes (attempts): the field pass runs it
@pytest.mark.slow
async def test_two_checkpoints_answer_the_same_prompts_side_by_side_while_the_run_trains(tmp_path):
    from textual.widgets import DataTable, TextArea

    from cockpit.metrics import samples
    from cockpit.ui.screens.live import LiveRunScreen
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
    from cockpit.ui.widgets.run.checkpoints.listing import split_prompts

    preset = apply_overrides(load_preset("demo-sft"), [
        # a checkpoint (and the supervisor's weight check of it) every 16 steps, not every 4: the run
        # trains on (~35 steps/s) all through the test, and each save costs the other processes CPU
        "max_steps=5000", "save_steps=16", "eval_strategy=no", "cockpit.completions.every_steps=16",
        "cockpit.completions.num_prompts=2", "cockpit.sample.max_new_tokens=8", NO_SFT_CHECK])
    run = launch(preset, tmp_path / "runs")
    try:
        wait_until(lambda: sum(map(complete_checkpoint, list_checkpoints(run.output))) >= 2, timeout=600)
        app = app_for(tmp_path, mode="live", paths=[str(run.path)])
        async with app.run_test(size=(160, 48)) as pilot:
            await app_wait(pilot, lambda: isinstance(app.screen, LiveRunScreen), "the live view", limit=60)
            await pilot.press("8")
            pane = app.screen.query_one(CheckpointsPane)
            table = pane.query_one(DataTable)
            await app_wait(pilot, lambda: table.row_count >= 3, "base and two checkpoints listed", limit=120)
            await app_wait(pilot, lambda: split_prompts(pane.query_one(TextArea).text), "the run's own prompts",
                           limit=60)
            prompts = split_prompts(pane.query_one(TextArea).text)
            assert len(prompts) == 2
            table.focus()
            picked = []
            for row in (1, 2):  # row 0 is the base model
                table.move_cursor(row=row)
                await pilot.press("space")
                picked.append(str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value))
            assert pane.picked == picked and all(p.startswith("checkpoint-") for p in picked)
            quiet_from = time.time()
            await pilot.pause(0.5)
            await pilot.press("r")
            sampling_from = time.time()
            await app_wait(pilot, lambda: not pane.busy, "both checkpoints answered", limit=400)
            sampling_until = time.time()
            assert pane.columns["a"].label == picked[0] and pane.columns["b"].label == picked[1]
            for slot in ("a", "b"):
                answers = pane.answers(slot)
                assert len(answers) == len(prompts) and all(answers), (slot, answers)
                assert [p for p, _a in pane.columns[slot].answers] == prompts  # the same prompts
            assert run.read_status().state == "running", "the run trained on while its checkpoints answered"
        kept = samples.read(run)
        assert {(r["checkpoint"], r["prompt"]) for r in kept} == {(c, p) for c in picked for p in prompts}
        # steps/s from the journal, before and during sampling (reported, not asserted: speed is the
        # bench's; the run is stopped now rather than trained on as long again to measure "after")
        during = steps_per_s(run, sampling_from, sampling_until)
        before = steps_per_s(run, quiet_from - 30, quiet_from)
        print(f"\nsteps/s: before {before} during sampling {during} "
              f"(sampling took {sampling_until - sampling_from:.1f}s)")
    finally:
        if run.read_status().live:
            stop(run, save=False)
        wait_until(lambda: not run.read_status().live, timeout=120)

    app = app_for(tmp_path, mode="replay", paths=[str(run.path)])
    async with app.run_test(size=(160, 48)) as pilot:
        await app_wait(pilot, lambda: isinstance(app.screen, ReplayScreen), "the replay", limit=60)
        await pilot.press("8")
        pane = app.screen.query_one(CheckpointsPane)
        await app_wait(pilot, lambda: len(pane.columns) == 2, "the kept answers shown", limit=120)
        shown = {pane.columns[s].label: pane.columns[s].answers for s in ("a", "b")}
        assert set(shown) == set(picked)
        for label, rows in shown.items():
            assert rows == [[r["prompt"], r["completion"]] for r in kept if r["checkpoint"] == label]


def _output_dir_with_checkpoints(root, steps=(10, 20, 30)):
    """An output dir as a Trainer leaves it (trainer_state.json, weights, config per checkpoint);
    the listing reads files only, so the weights need not load."""
    from helpers import checkpoint_folder

    out = root / "out"
    history = [{"step": s, "loss": 3.0 - s / 10} for s in range(1, max(steps) + 1)]
    for step in steps:
        checkpoint_folder(out, step, log_history=[h for h in history if h["step"] <= step], max_steps=30)
    return out


def _stand_in(tmp_path, script: str):
    """A sampler process without a model (the model is not what these tests are about): `script`
    run by this Python, as the executable `fake-python`."""
    import stat
    import sys

    fake = tmp_path / "fake-python"
    fake.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def _settings_sampler(tmp_path, monkeypatch):
    """SETTINGS_SAMPLER as the tab's sampler; the requests it got are in `.requests` next to it."""
    from cockpit.launch import sampler as smp

    fake = _stand_in(tmp_path, SETTINGS_SAMPLER)
    monkeypatch.setattr(smp, "sampler_python", lambda _found, _given=None: str(fake))
    return fake


async def _checkpoints_tab(app, pilot, *, listed: int | None = None):
    """A replay's Checkpoints tab, opened with its key; given `listed`, once it lists that many rows."""
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the replay", limit=60)
    await pilot.press("8")
    pane = app.screen.query_one(CheckpointsPane)
    if listed is not None:
        await app_wait(pilot, lambda: pane.query_one(DataTable).row_count == listed, "the checkpoints listed")
    return pane


async def test_the_prompt_box_takes_keys_as_text_and_two_picks_at_most(tmp_path):
    from textual.widgets import DataTable, TabbedContent, TextArea

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
    from cockpit.ui.widgets.run.checkpoints.listing import split_prompts

    out = _output_dir_with_checkpoints(tmp_path)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the replay", limit=60)
        await pilot.press("8")
        tabs = app.screen.query_one(TabbedContent)
        await app_wait(pilot, lambda: tabs.active == "checkpoints", "the Checkpoints tab")
        pane = app.screen.query_one(CheckpointsPane)
        table = pane.query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count == 3, "three checkpoints (no base model known)")
        assert [str(table.get_row_at(i)[1]) for i in range(3)] == ["checkpoint-10", "checkpoint-20", "checkpoint-30"]
        assert str(table.get_row_at(2)[2]) == "0"  # the loss logged at step 30
        table.focus()
        for row in (0, 1, 2):
            table.move_cursor(row=row)
            await pilot.press("space")
        assert pane.picked == ["checkpoint-20", "checkpoint-30"]  # a third pick lets the oldest go
        assert [str(table.get_row_at(i)[0]) for i in range(3)] == ["", "A", "B"]
        box = pane.query_one(TextArea)
        box.focus()
        await pilot.press("r", "8", "c", "1", "space", "enter", "-", "-", "-", "enter", "x")
        assert box.text == "r8c1 \n---\nx" and tabs.active == "checkpoints" and not pane.busy
        assert split_prompts(box.text) == ["r8c1 ", "x"]
        box.text = ""
        table.focus()
        await pilot.press("r")
        assert not pane.busy and pane.sampler is None
        await app_wait(pilot, lambda: any("no prompts" in m for m in notifications(app)),
                       "the notification")  # notify() reaches the app on its next turn


# -- a sampler that fails: one line in the tab, the app goes on ------------------------------------

FAKE_SAMPLER = """#!/bin/sh
# A stand-in for the sampler process: reads the request, says it loads, then answers with an event
# of the wrong shape, and waits on its stdin like the real one.
read request
echo '{"event": "loading", "slot": "a", "label": "checkpoint-2"}'
echo '{"event": "answer", "slot": "a", "index": "first", "prompt": "hello", "text": "hi"}'
exec cat > /dev/null
"""


def _run_sampled_by(tmp_path, python_text: str, mode: int):
    """A finished run with one complete checkpoint whose run_started names `python` (as a script
    run's does: its sampler starts with that Python), here a stand-in written from `python_text`."""
    from cockpit.run import journal
    from helpers.ui import fake_checkpoint, make_run

    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(python_text)
    python.chmod(mode)
    run = make_run(tmp_path / "runs", "sampled", [journal.run_started("sft", max_steps=2, python=str(python))],
                   state="finished")
    fake_checkpoint(run.output, 2)
    return run


async def _ask(app, pilot):
    """Open the Checkpoints tab, write a prompt, press r on the checkpoint; the pane."""
    from textual.widgets import DataTable, TextArea

    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane

    await app_wait(pilot, lambda: app.screen.query("#checkpoints-pane"), "the run view", limit=60)
    await pilot.press("8")
    await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the Checkpoints tab")
    pane = app.screen.query_one(CheckpointsPane)
    table = pane.query_one(DataTable)
    await app_wait(pilot, lambda: table.row_count == 1 and str(table.get_row_at(0)[1]) == "checkpoint-2",
                   "the checkpoint listed")
    pane.query_one(TextArea).text = "hello"
    table.focus()
    await pilot.press("r")
    return pane


async def _generate(app, pilot):
    """`_ask`, then the pane once it is idle."""
    pane = await _ask(app, pilot)
    await app_wait(pilot, lambda: pane.sampler is not None or not pane.busy, "the sampler asked")
    await app_wait(pilot, lambda: not pane.busy, "the request ended", limit=60)
    return pane


def _status(pane) -> str:
    from textual.widgets import Static

    return str(pane.query_one("#ckpt-status", Static).render())


@pytest.mark.proc  # the sampler's stand-in is a real process, on real pipes
async def test_a_sampler_event_of_the_wrong_shape_is_one_line_in_the_tab_and_the_app_goes_on(tmp_path):
    run = _run_sampled_by(tmp_path, FAKE_SAMPLER, 0o755)
    app = app_for(tmp_path, mode="live", paths=[str(run.path)])
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _generate(app, pilot)
        status = _status(pane)
        assert "the sampler sent a 'answer' event whose index is wrong" in status, status
        assert "\n" not in status.strip()
        assert pane.sampler is not None and pane.sampler.proc.poll() is not None  # stopped, not left running
        assert app.is_running
        await pilot.press("1")  # the app still answers keys
        assert app.is_running


async def test_a_sampler_that_cannot_start_is_one_line_in_the_tab_and_the_app_goes_on(tmp_path):
    run = _run_sampled_by(tmp_path, FAKE_SAMPLER, 0o644)  # not executable: Popen raises PermissionError
    app = app_for(tmp_path, mode="live", paths=[str(run.path)])
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _generate(app, pilot)
        status = _status(pane)
        assert status.startswith("cannot run the sampler:") and "Permission denied" in status, status
        assert app.is_running


SETTINGS_SAMPLER = '''
import json, pathlib, sys
log = pathlib.Path(sys.argv[0]).with_suffix(".requests")
for line in sys.stdin:
    req = json.loads(line)
    with log.open("a", encoding="utf-8") as f:
        f.write(line)
    for spec in req["models"]:
        for i, prompt in enumerate(req["prompts"]):
            text = "t=%s n=%s s=%s" % (req["temperature"], req["max_new_tokens"], req["seed"])
            print(json.dumps({"event": "answer", "slot": spec["slot"], "index": i, "text": text,
                              "prompt": str(prompt)}), flush=True)
    print(json.dumps({"event": "done", "id": req.get("id")}), flush=True)
'''
"""The sampler process without a model (the model is not what the test is about): it keeps each
request line it is sent beside itself and answers with the settings it was given."""


async def test_the_chat_shows_its_sampling_settings_takes_new_ones_and_sends_them_to_the_sampler(
        tmp_path, monkeypatch):
    """Issue 30: temperature, max_new_tokens and seed were fixed (greedy, run.yaml's length, 0) and
    not shown. They are boxes under the answers; bad values are named at once and nothing is sent;
    the sampler gets what the boxes say."""
    import json

    from textual.widgets import DataTable, Input, Label

    requests = _settings_sampler(tmp_path, monkeypatch).with_suffix(".requests")
    out = _output_dir_with_checkpoints(tmp_path)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _checkpoints_tab(app, pilot, listed=3)
        table = pane.query_one(DataTable)
        boxes = {name: pane.query_one(f"#ckpt-{name}", Input) for name in ("temperature", "max-new-tokens", "seed")}
        await app_wait(pilot, lambda: boxes["max-new-tokens"].value == "64", "run.yaml's length (the default)")
        assert [b.value for b in boxes.values()] == ["0", "64", "0"]
        row = pane.query_one("#ckpt-settings")
        assert row.region.width > 0 and row.region.height == 1
        assert [str(label.render()) for label in row.query(Label)] == ["temperature", "max tokens", "seed"]

        table.focus()
        table.move_cursor(row=2)
        await pilot.press("c")
        chat = pane.query_one("#ckpt-chat", Input)
        assert chat.has_focus and row.region.width > 0  # shown in the chat too
        for name, typed in (("temperature", "150"), ("max-new-tokens", "0"), ("seed", "-3")):
            boxes[name].value = ""
            boxes[name].focus()
            await pilot.press(*typed)  # digits are text in a box, not tab keys
            assert boxes[name].value == typed and app.screen.query_one("#run-tabs").active == "checkpoints"
        await pilot.press("escape")  # out of the box, still in the chat
        assert not boxes["seed"].has_focus and pane.has_class("-chat")
        chat.focus()
        await pilot.press(*"hello", "enter")
        await app_wait(pilot, lambda: any(n.title == "sampling settings" for n in app._notifications),
                       "the notification")
        told = [n for n in app._notifications if n.title == "sampling settings"]
        assert len(told) == 1 and told[0].message.splitlines() == [
            "max new tokens 0: give a whole number from 1 to 32,768",
            "temperature 150.0: give a number from 0 (greedy) to 100",
            "seed -3: give a whole number from 0 to 4,294,967,295"]
        assert chat.value == "hello" and not pane.chat_turns and not requests.exists()

        for name, typed in (("temperature", "0.7"), ("max-new-tokens", "12"), ("seed", "5")):
            boxes[name].value = typed
        chat.focus()
        await pilot.press("enter")
        await app_wait(pilot, lambda: len(pane.chat_turns) == 2 and not pane.busy, "the answer")
        sent = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines()]
        assert [(r["temperature"], r["max_new_tokens"], r["seed"], r["chat"]) for r in sent] == [(0.7, 12, 5, True)]
        assert pane.chat_turns[1]["content"] == "t=0.7 n=12 s=5"
        assert "temperature 0.7 · 12 tokens max · seed 5" in str(pane.query_one("#ckpt-status").render())


async def test_escape_out_of_a_chat_and_c_again_goes_on_with_the_earlier_turns(tmp_path, monkeypatch):
    import json

    from textual.widgets import DataTable, Input

    fake = _settings_sampler(tmp_path, monkeypatch)
    out = _output_dir_with_checkpoints(tmp_path)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _checkpoints_tab(app, pilot, listed=3)
        table = pane.query_one(DataTable)
        table.focus()
        table.move_cursor(row=2)
        await pilot.press("c", *"hello", "enter")
        await app_wait(pilot, lambda: len(pane.chat_turns) == 2 and not pane.busy, "the first answer")
        chat = pane.query_one("#ckpt-chat", Input)
        await pilot.press(*"draft")
        await pilot.press("escape")  # out of the chat box
        await pilot.press("escape")  # out of the chat
        assert not pane.has_class("-chat")
        await pilot.press("c")
        assert pane.has_class("-chat") and chat.value == "draft"
        shown = str(pane.query_one("#ckpt-answer-a").render())
        assert "hello" in shown and "t=0.0 n=64 s=0" in shown, shown  # the earlier turns, still there
        chat.value = ""
        await pilot.press(*"again", "enter")
        await app_wait(pilot, lambda: len(pane.chat_turns) == 4 and not pane.busy, "the second answer")
        sent = [json.loads(line) for line in fake.with_suffix(".requests").read_text(encoding="utf-8").splitlines()]
        assert [t["content"] for t in sent[-1]["prompts"][0]] == ["hello", "t=0.0 n=64 s=0", "again"]


LOADING_SAMPLER = """#!/bin/sh
# A stand-in for the sampler process that is still loading its model: it says so, then waits.
read request
echo '{"event": "loading", "slot": "a", "label": "checkpoint-2"}'
exec cat > /dev/null
"""


@pytest.mark.proc  # the sampler's stand-in is a real process, on real pipes
async def test_while_the_model_loads_the_answer_pane_says_so_not_an_empty_answer(tmp_path):
    run = _run_sampled_by(tmp_path, LOADING_SAMPLER, 0o755)
    app = app_for(tmp_path, mode="live", paths=[str(run.path)])
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _ask(app, pilot)
        answer = pane.query_one("#ckpt-answer-a")
        await app_wait(pilot, lambda: "loading checkpoint-2" in _status(pane), "the sampler loading")
        await pilot.pause()
        shown = str(answer.render())
        assert "empty answer" not in shown and "loading the model" in shown, shown
        pane.stop_sampler()


async def test_the_checkpoint_list_spins_while_it_is_read(tmp_path, monkeypatch):
    import threading

    from textual.widgets import DataTable

    from cockpit.metrics import checkpoints
    from cockpit.ui.widgets.waiting import Waiting

    real, slow_disk = checkpoints.list_run_checkpoints, threading.Event()

    def listed_once_the_disk_answers(path):  # a slow disk, not what the test is about
        slow_disk.wait(20)
        return real(path)

    monkeypatch.setattr(checkpoints, "list_run_checkpoints", listed_once_the_disk_answers)
    out = _output_dir_with_checkpoints(tmp_path)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _checkpoints_tab(app, pilot)
        status = pane.query_one("#ckpt-status", Waiting)
        await app_wait(pilot, lambda: status.waiting, "a spinner")
        assert "reading the checkpoints" in str(status.render())
        slow_disk.set()
        table = pane.query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count == 3 and not status.waiting, "listed, the spinner gone")
        assert "space picks" in str(status.render())


LOADING_THEN_ANSWERING = '''
import json, sys
req = json.loads(sys.stdin.readline())
for spec in req["models"]:
    print(json.dumps({"event": "loading", "slot": spec["slot"], "label": "checkpoint-30"}), flush=True)
    print(json.dumps({"event": "loaded", "slot": spec["slot"], "label": "checkpoint-30", "device": "cpu"}), flush=True)
    for i, prompt in enumerate(req["prompts"]):
        print(json.dumps({"event": "answer", "slot": spec["slot"], "index": i, "text": "4", "prompt": prompt}),
              flush=True)
print(json.dumps({"event": "done", "id": req.get("id")}), flush=True)
'''
"""The sampler process without a model (the model is not what the test is about)."""


@pytest.mark.proc  # the real CLI, and the sampler's stand-in a real process
def test_cockpit_sample_says_on_stderr_what_it_waits_for_while_the_model_loads(tmp_path):
    from helpers import cli

    fake = _stand_in(tmp_path, LOADING_THEN_ANSWERING)
    out = _output_dir_with_checkpoints(tmp_path)
    done = cli("sample", str(out), "--prompt", "2+2=", "--python", str(fake), "--no-keep")
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert said[0].startswith(f"cockpit: starting the sampler ({fake}: given with --python)"), said
    assert "cockpit: loading checkpoint-30…" in said
    assert any(line.startswith("cockpit: checkpoint-30 loaded on cpu in ") for line in said), said
    assert "4" in done.stdout and "loading" not in done.stdout  # stdout: the answers alone


async def test_a_lora_checkpoint_says_lora_first_whatever_the_length_of_its_base_path(tmp_path):
    import json

    from textual.widgets import DataTable


    out = _output_dir_with_checkpoints(tmp_path, steps=(10,))
    ckpt = out / "checkpoint-10"
    (ckpt / "config.json").unlink()
    base = "/home/someone/models/cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/abc123"
    (ckpt / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        table = (await _checkpoints_tab(app, pilot)).query_one(DataTable)
        await app_wait(pilot, lambda: any(str(table.get_row_at(i)[1]) == "checkpoint-10"
                                          for i in range(table.row_count)), "listed")
        row = next(i for i in range(table.row_count) if str(table.get_row_at(i)[1]) == "checkpoint-10")
        what = str(table.get_row_at(row)[-1])
        assert what.startswith("LoRA on …") and what.endswith("snapshots/abc123") and len(what) <= 40, what


async def test_the_prompt_box_takes_the_runs_own_prompts_once_a_live_run_logs_them(tmp_path):

    from textual.widgets import DataTable, TextArea

    from cockpit.run.completions_store import CompletionsWriter
    from cockpit.ui.widgets.run.checkpoints import CheckpointsPane
    from cockpit.ui.widgets.run.checkpoints.listing import split_prompts
    from helpers.ui import fake_checkpoint, grpo_rows, make_run

    run = make_run(tmp_path / "runs", "young", [journal.run_started("grpo", max_steps=100)], trainer="grpo")
    live(run)
    fake_checkpoint(run.output, 2)
    app = app_for(tmp_path, mode="live", paths=[str(run.path)])
    async with app.run_test(size=(120, 40)) as pilot:
        await app_wait(pilot, lambda: app.screen.query("#checkpoints-pane"), "the run view", limit=60)
        await pilot.press("8")
        await app_wait(pilot, lambda: app.screen.query(CheckpointsPane), "the Checkpoints tab")
        pane = app.screen.query_one(CheckpointsPane)
        await app_wait(pilot, lambda: pane.query_one(DataTable).row_count >= 1 and pane.found is not None, "listed")
        box = pane.query_one("#ckpt-prompts", TextArea)
        assert box.text == ""  # nothing logged yet
        writer = CompletionsWriter(run.path)
        with journal.JournalWriter(run.events) as jw:
            jw.write(writer.append(1, grpo_rows(1), source="trainer_logs"))
        writer.close()
        await app_wait(pilot, lambda: box.text, "the run's prompts, at the next listing", limit=20)
        assert split_prompts(box.text) == ["Question: 2+2?", "Question: 3+3?"]  # what `cockpit sample` uses


async def test_from_the_prompt_box_r_is_a_letter_and_ctrl_r_runs_the_prompts(tmp_path, monkeypatch):
    from textual.widgets import TextArea

    _settings_sampler(tmp_path, monkeypatch)
    out = _output_dir_with_checkpoints(tmp_path)
    app = app_for(tmp_path, mode="replay", paths=[str(out)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await _checkpoints_tab(app, pilot, listed=3)
        box = pane.query_one("#ckpt-prompts", TextArea)
        assert "ctrl+r" in str(box.border_subtitle)
        box.focus()
        await pilot.press(*"run r")
        assert box.text == "run r" and not pane.busy  # letters
        await pilot.press("ctrl+r")
        await app_wait(pilot, lambda: pane.answers("a") and not pane.busy, "the prompts answered")
        assert pane.answers("a") == ["t=0.0 n=64 s=0"] and box.text == "run r"
