"""The setup form's model without a terminal (`cockpit.config.draft`): values in and the preset
out, dirty tracking, verdicts about stale content ignored, problems placed on form fields by their
`Problem.field`, and command drafts."""

from __future__ import annotations

import sys
from pathlib import Path

from cockpit.config.draft import COMMAND, UNSET, Draft
from cockpit.config.presets import Preset
from cockpit.config.validate import Problem


def test_only_what_was_set_goes_into_the_preset_in_the_order_of_the_form():
    draft = Draft()
    assert draft.preset() is None  # no trainer, no preset
    draft.pick_trainer("sft", known={"model_name_or_path", "max_steps", "learning_rate"})
    draft.edit("max_steps", 5)
    draft.edit("model_name_or_path", "demo:models/tiny-lm")
    draft.edit("cockpit.launcher.kind", "torchrun")
    draft.edit("cockpit.launcher.num_processes", 2)
    draft.set_order(["model_name_or_path", "learning_rate", "max_steps"])
    preset = draft.preset()
    assert preset.trainer == "sft"
    assert list(preset.trl) == ["model_name_or_path", "max_steps"]
    assert preset.cockpit == {"launcher": {"kind": "torchrun", "num_processes": 2}}
    # Back to the defaults: the keys and the emptied section go.
    draft.edit("cockpit.launcher.kind", UNSET)
    draft.edit("cockpit.launcher.num_processes", UNSET)
    draft.edit("max_steps", UNSET)
    assert draft.preset().cockpit == {} and list(draft.preset().trl) == ["model_name_or_path"]


def test_an_opened_preset_comes_back_unchanged_and_clean_until_edited():
    preset = Preset("sft", {"model_name_or_path": "m", "seed": 1}, {"dataset": {"split": "train[:10]"}})
    draft = Draft(preset)
    draft.pick_trainer("sft")  # filling the form from the preset: nothing dropped, nothing changed
    assert not draft.dirty
    assert draft.preset().trl == preset.trl and draft.preset().cockpit == preset.cockpit
    assert draft.get("cockpit.dataset.split") == "train[:10]" and draft.get("cockpit.nothing") is UNSET
    draft.edit("seed", 2)
    assert draft.dirty
    draft.mark_saved(Path("/tmp/p.yaml"))
    assert not draft.dirty and draft.saved_as == "/tmp/p.yaml"


def test_switching_trainer_drops_the_keys_the_new_one_does_not_take():
    draft = Draft(Preset("grpo", {"model_name_or_path": "m", "num_generations": 4}, {}))
    draft.pick_trainer("grpo")
    dropped = draft.pick_trainer("sft", known={"model_name_or_path"})
    assert dropped == ["num_generations"] and draft.trl == {"model_name_or_path": "m"} and draft.dirty


def test_a_verdict_about_older_content_is_ignored_and_a_clean_one_allows_launch():
    draft = Draft()
    draft.pick_trainer("sft", known=set())
    draft.edit("model_name_or_path", "m")
    old = draft.key()
    draft.edit("max_steps", 3)
    assert not draft.accept_verdict(old, [], [])
    assert not draft.can_launch()
    assert draft.accept_verdict(draft.key(), [], ["a warning"])
    assert draft.can_launch() and draft.warnings == ["a warning"]
    draft.edit("max_steps", UNSET, "must be a whole number, e.g. 8")
    assert not draft.can_launch() and draft.blocker() == "max_steps: must be a whole number, e.g. 8"


def test_problems_land_on_the_field_they_name():
    draft = Draft()
    draft.pick_trainer("distillation", known=set())
    problems = [
        Problem("dataset_name", "dataset x: has no column 'prompt'"),
        Problem("teacher_model_name_or_path", "distillation needs a teacher model — set it"),
        Problem("cockpit.launcher", "cockpit.launcher.config zero9: no such file\n"
                                    "cockpit.launcher.num_processes must be a whole number ≥ 1 (got 0)\n"
                                    "cockpit.launcher.bogus: unknown key — use args, config"),
        Problem("reward_funcs", "reward function f.py:g: no file f.py"),
        Problem(None, "something about the whole preset"),
    ]
    assert draft.accept_verdict(draft.key(), problems, [])
    form = {"dataset_name", "cockpit.models.teacher_model", "cockpit.launcher.kind",
            "cockpit.launcher.config", "cockpit.launcher.num_processes", "cockpit.reward_funcs"}
    placed = draft.field_problems(form)
    assert placed["dataset_name"].startswith("dataset x")
    assert placed["cockpit.models.teacher_model"].startswith("distillation needs a teacher")
    assert placed["cockpit.launcher.config"].startswith("cockpit.launcher.config zero9")
    assert placed["cockpit.launcher.num_processes"].endswith("(got 0)")
    assert placed["cockpit.launcher.kind"].startswith("cockpit.launcher.bogus")
    assert placed["cockpit.reward_funcs"].startswith("reward function")
    assert len(draft.lines()) == 7  # every line of every problem, for the verdict box


def test_a_command_draft_is_checked_on_its_fields_and_becomes_a_script_run_yaml(tmp_path):
    draft = Draft(cwd=tmp_path)
    draft.use_command()
    assert draft.mode == COMMAND and draft.preset() is None
    draft.edit("command", "nosuchprogram-xyz --lr 1e-5")
    assert [p.field for p in draft.command_problems()] == ["command"]
    draft.edit("command", "python -c 'print(1")
    assert "does not parse" in draft.command_problems()[0].message
    draft.edit("cwd", str(tmp_path / "missing"))
    draft.edit("command", f"{sys.executable} train.py --lr 1e-5")
    assert [p.field for p in draft.command_problems()] == ["cwd"]
    draft.edit("cwd", str(tmp_path))
    assert draft.command_problems() == []
    assert "name: train" in draft.script_yaml() and "trainer: script" in draft.script_yaml()
    draft.edit("cockpit.launcher.kind", "torchrun")  # a command keeps its own launcher line
    assert [p.field for p in draft.command_problems()] == ["cockpit.launcher.kind"]
    draft.edit("cockpit.launcher.kind", "slurm")
    draft.edit("cockpit.launcher.partition", "gpu")
    assert draft.script_launcher() == {"kind": "slurm", "partition": "gpu"}
    assert draft.command_problems() == []
    assert draft.accept_verdict(draft.key(), [], []) and draft.can_launch()


def test_what_is_not_filled_in_yet_is_not_marked_on_a_field():
    draft = Draft()
    draft.pick_trainer("sft", known=set())
    draft.accept_verdict(draft.key(), [Problem("model_name_or_path", "no model: set model_name_or_path"),
                                       Problem("learning_rate", "learning_rate must be a number")], [])
    assert draft.field_problems({"model_name_or_path", "learning_rate"}) == {
        "learning_rate": "learning_rate must be a number"}
