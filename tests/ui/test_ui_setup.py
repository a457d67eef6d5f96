"""Pilot tests of the setup screen: pick a trainer, fill the form, see the preset, validate,
search fields, save a preset, launch; plus the form's text <-> value rules."""

from __future__ import annotations

import pytest
import yaml
from textual.widgets import Input, OptionList, Select, Static

from cockpit.trainers.registry import ConfigField
from cockpit.ui.widgets.setup.values import UNSET, format_value, parse_text, same_as_default
from helpers.ui import (
    SETUP_SIZE,
    Host,
    app_wait,
    control,
    launch_button,
    pick,
    preview_text,
    setup_screen,
    type_into,
    type_keys,
)

pytestmark = pytest.mark.anyio


# -- the flows ---------------------------------------------------------------------------------


@pytest.mark.slow  # the launched runner imports the training stack before it is stopped
@pytest.mark.usefixtures("registry")
async def test_sft_form_previews_the_yaml_and_launches_a_run(runs_dir):
    from cockpit.launch.plan import stop
    from cockpit.run.folder import RunFolder

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        # Picking a trainer moves the focus to the model; type it like a person.
        await app_wait(pilot, lambda: app.focused is control(app, "model_name_or_path"),
                       "focus on the model input")
        await type_keys(pilot, "demo:models/tiny-lm")
        await type_into(pilot, app, "dataset_name", "demo:data/prompt_completion")
        await type_into(pilot, app, "max_steps", "2")
        await app_wait(pilot, lambda: not launch_button(app).disabled, "the preset validated")

        text = preview_text(app)
        assert "trainer: sft" in text
        assert "model_name_or_path: demo:models/tiny-lm" in text
        assert "dataset_name: demo:data/prompt_completion" in text
        assert "max_steps: 2" in text
        # Only what the user set goes into the preset: untouched defaults stay out.
        assert set(screen.current_preset().trl) == {"model_name_or_path", "dataset_name", "max_steps"}
        assert "✓" in str(screen.query_one("#validation", Static).content)

        await pilot.press("ctrl+l")
        await app_wait(pilot, lambda: isinstance(app.result, RunFolder), "the run launched",
                       limit=60)
    run = app.result
    assert isinstance(run, RunFolder)
    try:
        assert run.path.parent == runs_dir
        saved = yaml.safe_load(run.run_yaml.read_text(encoding="utf-8"))
        assert saved["trainer"] == "sft"
        assert saved["max_steps"] == 2
        assert saved["model_name_or_path"].endswith("models/tiny-lm")
        assert saved["dataset_name"].endswith("data/prompt_completion")
    finally:
        if run.read_status().live:
            stop(run, save=False, grace_s=2)


@pytest.mark.usefixtures("registry")
async def test_dpo_on_prompt_completion_data_names_the_missing_columns(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "dpo")
        screen = setup_screen(app)
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await type_into(pilot, app, "dataset_name", "demo:data/prompt_completion")

        box = screen.query_one("#validation", Static)
        await app_wait(pilot, lambda: "has no column" in str(box.content), "the column problem")
        assert "'chosen'" in str(box.content) and "'rejected'" in str(box.content)
        assert box.has_class("-bad")
        # The data section says it too, and the dataset field is the one marked.
        from cockpit.ui.widgets.setup.data_preview import DataPreview

        preview = screen.query_one(DataPreview)
        await app_wait(pilot, lambda: preview.has_class("-bad"), "the data check")
        assert screen.query_one("#field-dataset_name").has_class("-invalid")
        assert launch_button(app).disabled

        await pilot.press("ctrl+l")
        await pilot.pause(0.2)
        assert not list(runs_dir.iterdir())
        assert app.result == "not dismissed"


@pytest.mark.usefixtures("registry")
async def test_field_search_finds_warmup_steps_with_its_help(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        screen.query_one("#trainer-picker").focus()
        await pilot.press("slash")
        search = screen.query_one("#field-search-input", Input)
        assert app.focused is search
        await pilot.press(*"warmup")
        options = screen.query_one("#field-search-list", OptionList)
        await app_wait(pilot, lambda: options.option_count > 0, "matches")
        ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert "warmup_steps" in ids
        option = options.get_option_at_index(ids.index("warmup_steps"))
        assert "linear warmup" in str(option.prompt)

        options.highlighted = ids.index("warmup_steps")
        await pilot.press("enter")
        await app_wait(pilot, lambda: screen.query("#field-warmup_steps"), "the field in the form")
        editor = screen.query_one("#field-warmup_steps")
        assert app.focused is control(app, "warmup_steps")
        assert "linear warmup" in str(editor.query_one(".field-help", Static).content)
        await pilot.press("1", "0")
        await app_wait(pilot, lambda: screen.current_preset().trl.get("warmup_steps") == 10,
                       "warmup_steps in the preset")
        assert "warmup_steps: 10" in preview_text(app)


@pytest.mark.usefixtures("registry")
async def test_invalid_number_is_marked_at_the_field_and_blocks_launch(runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await type_into(pilot, app, "dataset_name", "demo:data/prompt_completion")
        await app_wait(pilot, lambda: not launch_button(app).disabled, "valid first")
        await type_into(pilot, app, "max_steps", "2.5")
        editor = screen.query_one("#field-max_steps")
        assert editor.has_class("-invalid")
        assert "whole number" in str(editor.query_one(".field-error", Static).content)
        assert launch_button(app).disabled
        assert "max_steps" not in screen.current_preset().trl


@pytest.mark.usefixtures("registry")
async def test_save_as_preset_writes_the_yaml_and_asks_before_overwriting(runs_dir):
    from cockpit.paths import user_presets_dir
    from cockpit.ui.screens.confirm import ConfirmScreen
    from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt

    target = user_presets_dir() / "setup-test-save.yaml"
    target.unlink(missing_ok=True)
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        await type_into(pilot, app, "model_name_or_path", "demo:models/tiny-lm")
        await type_into(pilot, app, "max_steps", "7")
        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, SavePresetPrompt), "the name prompt")
        app.screen.query_one("#preset-name", Input).value = "setup-test-save"
        await pilot.press("enter")
        await app_wait(pilot, target.exists, "the preset file")
        saved = yaml.safe_load(target.read_text(encoding="utf-8"))
        assert saved == {"trainer": "sft", "model_name_or_path": "demo:models/tiny-lm",
                         "max_steps": 7}
        assert app.screen is screen
        assert f"cockpit run {target}" in str(screen.query_one("#command-preview", Static).content)

        # Same name again: a confirmation first; "n" keeps the old file.
        await type_into(pilot, app, "max_steps", "9")
        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, SavePresetPrompt), "the prompt")
        app.screen.query_one("#preset-name", Input).value = "setup-test-save"
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the overwrite question")
        await pilot.press("n")
        await app_wait(pilot, lambda: app.screen is screen, "back to the form")
        assert yaml.safe_load(target.read_text(encoding="utf-8"))["max_steps"] == 7

        await pilot.press("ctrl+s")
        await app_wait(pilot, lambda: isinstance(app.screen, SavePresetPrompt), "the prompt")
        app.screen.query_one("#preset-name", Input).value = "setup-test-save"
        await pilot.press("enter")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await app_wait(pilot, lambda: yaml.safe_load(target.read_text(encoding="utf-8"))
                       ["max_steps"] == 9, "the overwritten file")


@pytest.mark.usefixtures("registry")
async def test_opening_a_preset_fills_the_form(runs_dir):
    from cockpit.config.presets import load_preset

    preset = load_preset("demo-sft")
    app = Host(runs_dir, preset)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        screen = setup_screen(app)
        await app_wait(pilot, lambda: screen.spec is not None and screen.query("#field-dataset_name"),
                       "the form filled from the preset")
        # A Select takes its value once its options are mounted, a moment after the field.
        await app_wait(pilot, lambda: control(app, "eval_strategy").value is not Select.NULL,
                       "the choice fields set")
        assert screen.spec.name == "sft"
        assert control(app, "model_name_or_path").value == "demo:models/tiny-lm"
        assert control(app, "learning_rate").value == "0.001"
        assert control(app, "eval_strategy").value == "steps"
        # Keys outside the curated list get their own field.
        assert control(app, "warmup_steps").value == "10"
        assert control(app, "seed").value == "42"
        # Untouched, the preset comes back as it was (cockpit section included).
        assert screen.current_preset().trl == preset.trl
        assert screen.current_preset().cockpit == preset.cockpit
        await app_wait(pilot, lambda: not launch_button(app).disabled, "the preset validated")
        await pilot.press("escape")
        await app_wait(pilot, lambda: app.result is None, "dismissed with None")


async def test_unavailable_trainers_are_listed_disabled_with_the_reason(registry, runs_dir):
    from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        picker = setup_screen(app).query_one(TrainerPicker)
        await app_wait(pilot, lambda: picker.option_count > 0, "the trainers listed")
        ids = [picker.get_option_at_index(i).id for i in range(picker.option_count)]
        for spec in registry.all_known():
            assert spec.name in ids
        ppo = picker.get_option("ppo")
        assert ppo.disabled
        assert "trl==1.12" in str(ppo.prompt)
        assert not picker.get_option("sft").disabled
        assert ids.index("sft") < ids.index("cpo")  # stable before experimental


@pytest.mark.usefixtures("registry")
async def test_a_misspelt_preset_key_is_marked_and_can_be_cleared(runs_dir):
    from cockpit.config.presets import load_preset

    preset = load_preset("demo-sft")
    preset.trl["learning_rat"] = 0.1
    app = Host(runs_dir, preset)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        screen = setup_screen(app)
        await app_wait(pilot, lambda: screen.query("#field-learning_rat"), "the unknown key shown")
        editor = screen.query_one("#field-learning_rat")
        await app_wait(pilot, lambda: editor.has_class("-invalid"), "the key marked")
        assert "did you mean 'learning_rate'" in str(editor.query_one(".field-error", Static).content)
        assert launch_button(app).disabled
        await type_into(pilot, app, "learning_rat", "")
        await app_wait(pilot, lambda: not launch_button(app).disabled, "valid without it")
        assert "learning_rat" not in screen.current_preset().trl


async def test_model_input_completes_demo_models_and_local_folders(tmp_path):
    from cockpit.ui.widgets.setup.suggest import CandidateSuggester, find_datasets, find_models

    (tmp_path / "ckpts" / "my-model").mkdir(parents=True)
    (tmp_path / "ckpts" / "my-model" / "config.json").write_text("{}")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"text": "a"}\n')
    models = find_models(tmp_path, tmp_path / "no-demo", ["tiny-lm"])
    assert models == ["demo:models/tiny-lm", "./ckpts/my-model"]
    assert "./data/train.jsonl" in find_datasets(tmp_path, ["text"])
    suggester = CandidateSuggester(models)
    assert await suggester.get_suggestion("demo:") == "demo:models/tiny-lm"
    assert await suggester.get_suggestion("./ck") == "./ckpts/my-model"
    assert await suggester.get_suggestion("zzz") is None


# -- text <-> value ----------------------------------------------------------------------------


def _field(type_: str, default=None, name: str = "x") -> ConfigField:
    return ConfigField(name=name, type=type_, default=default, help="", choices=None, group="T")


def test_typed_text_becomes_the_value_trl_would_read():
    assert parse_text(_field("int"), " 8 ") == 8
    assert parse_text(_field("float"), "1e-4") == 1e-4
    assert parse_text(_field("float"), "10") == 10
    assert parse_text(_field("int|None"), "") is UNSET
    assert parse_text(_field("list[str]|None"), "q_proj, v_proj") == ["q_proj", "v_proj"]
    assert parse_text(_field("str|list[str]|None"), "none") == "none"
    assert parse_text(_field("dict[str,Any]|str|None"), "{a: 1}") == {"a": 1}
    assert parse_text(_field("str"), "no") == "no"
    assert parse_text(_field("map"), "question:prompt, answer:completion") == {
        "question": "prompt", "answer": "completion"}
    for type_, text in (("int", "2.5"), ("float", "fast"), ("map", "question")):
        with pytest.raises(ValueError):
            parse_text(_field(type_), text)


def test_a_value_shown_in_a_field_reads_back_as_itself():
    """One YAML dialect both ways (issue 45): a field shows a value in the dialect it reads back
    with, so strings that read as a number or a switch in YAML 1.1 or 1.2 stay strings."""
    for type_, value in (("list[Any]|None", ["1e-5", "no", "a,b", 1e-5, True, 3]),
                         ("dict[str,Any]|str|None", {"lr": "1e-5", "resume": "no", "n": 3, "on": "yes"})):
        shown = format_value(_field(type_), value)
        assert parse_text(_field(type_), shown) == value, shown


def test_values_equal_to_the_default_stay_out_of_the_preset():
    assert same_as_default(_field("float", 2e-5), 2e-5)
    assert same_as_default(_field("bool|None", None), False)
    assert not same_as_default(_field("bool", True), False)
    assert not same_as_default(_field("int", -1), 2)
    assert same_as_default(_field("int", -1), UNSET)
