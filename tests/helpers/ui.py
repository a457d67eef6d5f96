"""The Pilot tests' shared machinery: apps and setup screens to drive, run folders written by hand
with the core APIs (no training), and the waits and reads every UI test module uses.

`app_wait` lets a running app work until a condition holds; it is not `helpers.wait_for`,
which polls a predicate from a plain (non-async) test."""

from __future__ import annotations

import math
import time
from pathlib import Path

from textual.app import App
from textual.widgets import Button, Input

from cockpit.run import journal
from cockpit.run.completions_store import CompletionsWriter
from cockpit.run.folder import RunFolder, Status
from helpers import make_run_folder

SIZE = (120, 40)  # the app's terminal in most Pilot tests
SETUP_SIZE = (140, 45)  # the setup screen's
APP_CSS = Path(__file__).resolve().parents[2] / "cockpit" / "ui" / "app.tcss"


async def app_wait(pilot, condition, what: str, limit: float = 20.0) -> None:
    """Let the app work until `condition()` holds (a deadline, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        await pilot.pause(0.05)


# -- the app and its runs ------------------------------------------------------------------------


def make_run(runs_dir: Path, name: str, records: list[journal.Record], *, state: str = "running",
             trainer: str = "sft") -> RunFolder:
    """The Pilot tests' run: `helpers.make_run_folder` as a launch names it, running, started now."""
    return make_run_folder(runs_dir, name, records=records, state=state, trainer=trainer, stamped=True,
                           started=time.time(), here=False)


def sft_records(steps: range, *, max_steps: int = 100) -> list[journal.Record]:
    out = [journal.run_started("sft", max_steps=max_steps), journal.phase("training")]
    for s in steps:
        out.append(journal.metrics(s, {"loss": 2.0 / s, "learning_rate": 1e-4,
                                       "grad_norm": math.nan if s == 3 else 1.0 + s / 10,
                                       "mean_token_accuracy": s / 100, "entropy": 1.5},
                                   epoch=s / 50))
        out.append(journal.progress(s, max_steps, steps_per_s=2.0, eta_s=(max_steps - s) / 2))
    return out


def fake_checkpoint(folder: Path, step: int, max_steps: int = 100) -> None:
    """A complete checkpoint folder: its trainer state and a real (empty) safetensors file."""
    ckpt = folder / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(f'{{"global_step": {step}, "max_steps": {max_steps}}}')
    (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")


def app_for(tmp_path: Path, mode="home", paths=None, **kw):
    from cockpit.ui.app import make_app

    return make_app(mode, paths or [], str(tmp_path / "runs"), **kw)


async def runs_listed(app, pilot, n: int):
    """Home's runs table once it lists `n` runs and has the focus."""
    from cockpit.ui.widgets.home.runs_table import RunsTable

    table = app.screen.query_one(RunsTable)
    await app_wait(pilot, lambda: table.row_count == n and app.focused is table, "the runs listed")
    return table


def row_of(table, path) -> int:
    """The runs table's row of the run at `path`."""
    return [r.key.value for r in table.ordered_rows].index(str(path))


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


def footer_keys(app) -> list[str]:
    """The descriptions the footer shows, in order (not those left out for want of room)."""
    from textual.widgets import Footer

    return [k.description for k in app.screen.query_one(Footer).query("FooterKey") if k.display]


# -- the completions tab ---------------------------------------------------------------------------


def grpo_rows(step: int) -> list[dict]:
    """Two prompts, interleaved, two generations each; scores that tell the rows apart."""
    rows = []
    for i, (prompt, acc, adv) in enumerate([("Question: 2+2?", 1.0, 0.9), ("Question: 3+3?", 0.0, -0.4),
                                            ("Question: 2+2?", 0.0, -0.8), ("Question: 3+3?", 1.0, 0.3)]):
        rows.append({"prompt": prompt, "completion": f"answer {step}.{i}",
                     "rewards": {"accuracy_reward": acc}, "advantage": adv})
    return rows


def stored_run(tmp_path, steps, rows=grpo_rows, *, state="finished", name="grpo"):
    """A run folder as the training process leaves it: rows in the completions store, pointers
    in the journal."""
    run = make_run(tmp_path / "runs", name, [journal.run_started("grpo", max_steps=max(steps))],
                   state=state, trainer="grpo")
    writer = CompletionsWriter(run.path)
    with journal.JournalWriter(run.events) as jw:
        for s in steps:
            jw.write(journal.metrics(s, {"loss": 1.0 / s}))
            jw.write(writer.append(s, rows(s), source="trainer_logs"))
    writer.close()
    return run


async def open_completions_tab(app, pilot):
    from cockpit.ui.widgets.run.completions import CompletionsPane

    await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
    await pilot.press("2")
    pane = app.screen.query_one(CompletionsPane)
    await app_wait(pilot, lambda: pane._rows, "completions shown")
    return pane


def completions_column(pane, name: str, table="#completions-table") -> list[str]:
    t = pane.query_one(table)
    keys = [k for k, c in t.columns.items() if str(c.label).split(" ")[0] == name]
    return [str(t.get_cell_at((r, list(t.columns).index(keys[0])))) for r in range(t.row_count)]


def completions_header(pane) -> list[str]:
    return [str(c.label) for c in pane.query_one("#completions-table").columns.values()]


# -- the setup screen ------------------------------------------------------------------------------


class Host(App):
    """The setup screen alone, pushed the way the home screen pushes it."""

    CSS_PATH = str(APP_CSS)

    def __init__(self, runs_dir: Path, preset=None) -> None:
        super().__init__()
        self.runs_dir = runs_dir
        self.preset = preset
        self.result: object = "not dismissed"

    def on_mount(self) -> None:
        from cockpit.ui.screens.setup import SetupScreen

        self.push_screen(SetupScreen(runs_dir=self.runs_dir, preset=self.preset), self._done)

    def _done(self, result: object) -> None:
        self.result = result


def setup_screen(app):
    from cockpit.ui.screens.setup import SetupScreen

    screen = app.screen
    assert isinstance(screen, SetupScreen)
    return screen


async def pick(pilot, app, trainer: str) -> None:
    """Highlight a trainer in the picker and press Enter, as a person would."""
    from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker

    screen = setup_screen(app)
    picker = screen.query_one(TrainerPicker)
    await app_wait(pilot, lambda: picker.option_count > 0, "the trainers listed")
    picker.focus()
    picker.highlighted = picker.get_option_index(trainer)
    await pilot.press("enter")
    await app_wait(pilot, lambda: screen.spec is not None and screen.spec.name == trainer
                     and screen.query("#field-dataset_name"), f"the form for {trainer}")


def control(app, name: str):
    from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id

    return setup_screen(app).query_one(f"#{editor_id(name)}", FieldEditor).control


async def type_into(pilot, app, name: str, text: str) -> None:
    widget = control(app, name)
    assert isinstance(widget, Input)
    widget.focus()
    widget.value = ""
    await type_keys(pilot, text, into=widget)


async def type_keys(pilot, text: str, into: Input | None = None) -> None:
    """`text` typed the way a quick typist types it: one real key event a character, each sent
    without waiting for the app to go idle after the one before (`Pilot.press` waits ~60 ms a
    key), then the app settles. `into`: the box the keys go to (the focused one when not given)."""
    from textual import events
    from textual.keys import _character_to_key  # the name Pilot.press gives a character's key

    box = into or pilot.app.focused  # a focus() just asked for is applied before the keys
    before = box.value if isinstance(box, Input) else None
    for char in text:
        pilot.app.post_message(events.Key(_character_to_key(char), char))
    if before is not None:  # every key handled (a starved process can look idle between two)
        await app_wait(pilot, lambda: box.value == before + text, f"{text!r} typed")
    await pilot.pause()


def preview_text(app) -> str:
    from cockpit.ui.widgets.setup.preset_preview import PresetPreview

    return str(setup_screen(app).query_one(PresetPreview).content)


def launch_button(app) -> Button:
    return setup_screen(app).query_one("#launch-button", Button)


# -- a GRPO run with every tab filled, at fixed times (the crash hunt and the snapshots) ------------

T0 = 1_700_000_000.0
"""The wall time of a hand-written run's first record: the snapshots show no clock that moves."""


def grpo_run_records(steps: range, *, max_steps: int, t0: float = T0) -> list[journal.Record]:
    """A GRPO run's journal for `steps` (two rewards, eval every 5, a warning, an alert and a
    finding), each record at `t0 + step`."""
    out = [journal.run_started("grpo", max_steps=max_steps, versions={"trl": "1.16.0"}),
           journal.phase("training")]
    for s in steps:
        out.append(journal.metrics(s, {
            "loss": 0.02 * math.sin(s / 3), "learning_rate": 1e-5 * min(1.0, s / 5),
            "grad_norm": 0.5 + (s % 7) / 10, "kl": 0.01 * s, "entropy": 1.2 - s / 200,
            "reward": 0.2 + s / 60, "reward_std": 0.3,
            "rewards/accuracy_reward/mean": s / 60, "rewards/format_reward/mean": 0.2 if s % 3 else 0.0,
            "completions/mean_length": 40.0 + s, "completions/clipped_ratio": 0.05 * (s % 4),
            "frac_reward_zero_std": 0.25}, epoch=s / 40))
        out.append(journal.progress(s, max_steps, steps_per_s=1.0, eta_s=float(max_steps - s)))
        if s % 5 == 0:
            out.append(journal.eval_metrics(s, {"eval_loss": 0.5 - s / 100, "eval_reward": s / 50}, epoch=s / 40))
        if s == 4:
            out.append(journal.warning("the tokenizer has no pad token; using eos", code="no_pad", step=s,
                                       fix="set tokenizer.pad_token"))
        if s == 6:
            out.append(journal.alert("kl_high", "kl above 0.05 at step 6", key="kl", value=0.06, step=s,
                                     actions=[{"kind": "bell", "ok": True}]))
        if s == 8:
            out.append(journal.finding("wasted_groups", steps=(3, 8), severity="warning",
                                       summary="a quarter of the groups have one reward for every completion",
                                       fix="raise num_generations or the temperature",
                                       evidence=[{"type": "metric", "key": "frac_reward_zero_std",
                                                  "points": [[3, 0.25], [8, 0.25]]}], step=s))
    for r in out:
        r.t = t0 + (r.step or 0)
    return out


def grpo_completion_rows(step: int) -> list[dict]:
    """Two prompts, two generations each, with both rewards and an advantage."""
    rows = []
    for i, (prompt, acc, fmt) in enumerate([("Question: What is 2+2?\nAnswer:", 1.0, 0.2),
                                            ("Question: Name a prime above 10.\nAnswer:", 0.0, 0.0),
                                            ("Question: What is 2+2?\nAnswer:", 0.0, 0.2),
                                            ("Question: Name a prime above 10.\nAnswer:", 1.0, 0.0)]):
        rows.append({"prompt": prompt, "completion": f"<think>step {step}, try {i}</think> {4 if acc else 9}",
                     "rewards": {"accuracy_reward": acc, "format_reward": fmt}, "advantage": acc - 0.5})
    return rows


def grpo_run(runs_dir: Path, name: str, *, steps: int = 20, max_steps: int = 40, state: str = "finished",
             checkpoints: tuple[int, ...] = (10, 20), t0: float = T0) -> RunFolder:
    """A GRPO run folder as the supervisor and runner leave it, written by hand at fixed times: its
    journal (grpo_run_records), completions every 2 steps in the store, trainer output, complete
    checkpoints in output/ and its status (`state`; a finished or stopped run has ended)."""
    run = RunFolder(Path(runs_dir) / name)
    run.path.mkdir(parents=True)
    run.run_yaml.write_text("trainer: grpo\nmodel_name_or_path: tiny-gpt2\n", encoding="utf-8")
    ended = state not in ("running", "starting")
    run.write_status(Status(state=state, name=name, trainer="grpo", started=t0,
                            ended=t0 + steps + 1 if ended else None, exit_code=0 if state == "finished" else None,
                            reason={"finished": "training finished", "stopped": "stopped by request"}.get(state)))
    records = grpo_run_records(range(1, steps + 1), max_steps=max_steps, t0=t0)
    writer = CompletionsWriter(run.path)
    with journal.JournalWriter(run.events) as jw:
        for rec in records:
            jw.write(rec)
            if rec.kind == journal.PROGRESS and rec.step and rec.step % 2 == 0:
                ref = writer.append(rec.step, grpo_completion_rows(rec.step), source="trainer_logs")
                ref.t = rec.t
                jw.write(ref)
        if ended:
            jw.write(journal.Record(journal.RUN_ENDED, {"state": state, "exit_code": 0 if state == "finished" else None,
                                                        "signal": None, "reason": "training finished", "fix": None},
                                    step=steps, t=t0 + steps + 1))
    writer.close()
    run.stdout_log.write_text("".join(f"{{'loss': {0.02 * math.sin(s / 3):.4f}, 'step': {s}}}\n"
                                      for s in range(1, steps + 1)), encoding="utf-8")
    for step in checkpoints:
        if step <= steps:
            fake_checkpoint(run.path / "output", step, max_steps)
    return run
