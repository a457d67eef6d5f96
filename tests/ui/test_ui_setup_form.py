"""The new-run form as people use it: the search key from a text field, Escape on a changed or an untouched
form, field help read as text, the layout at 100 columns, list-valued fields typed as text, the
field count."""

from __future__ import annotations

import pytest
from textual.widgets import Footer, Input

from helpers.ui import (
    SETUP_SIZE,
    Host,
    app_wait,
    control,
    pick,
    setup_screen,
)

pytestmark = pytest.mark.anyio


def footer_bindings(app) -> dict[str, str]:
    """Description -> the key the footer shows for it."""
    return {k.description: k.key_display or k.key for k in app.screen.query_one(Footer).query("FooterKey")}


@pytest.mark.usefixtures("registry")
async def test_search_key_in_the_footer_works_from_a_text_field_and_slash_types_there(
        runs_dir):
    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        model = control(app, "model_name_or_path")
        await app_wait(pilot, lambda: app.focused is model, "the model field focused")
        # the footer is recomposed a frame after the focus moves: wait for it, then read it
        await app_wait(pilot, lambda: "Search fields" in footer_bindings(app), "the footer's search key")
        shown = footer_bindings(app)["Search fields"]
        assert "f" in shown.lower() and "/" not in shown  # the key that works everywhere
        await pilot.press("slash")  # in a text field `/` is a character (model ids have one)
        assert model.value.endswith("/") and app.focused is model
        await pilot.press("ctrl+f")
        assert app.focused is screen.query_one("#field-search-input", Input)


@pytest.mark.usefixtures("registry")
async def test_escape_on_a_changed_form_asks_before_discarding_it(runs_dir):
    from cockpit.ui.screens.confirm import ConfirmScreen

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        await app_wait(pilot, lambda: app.focused is control(app, "model_name_or_path"),
                       "the model field focused")
        await pilot.press(*"my-model")
        await pilot.press("escape")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked")
        assert "Discard" in str(app.screen.query_one(".dialog-question").render())
        await pilot.press("n")
        await app_wait(pilot, lambda: app.screen is screen, "back in the form")
        assert control(app, "model_name_or_path").value == "my-model"
        assert app.result == "not dismissed"
        await pilot.press("escape")
        await app_wait(pilot, lambda: isinstance(app.screen, ConfirmScreen), "asked again")
        await pilot.press("y")
        await app_wait(pilot, lambda: app.result is None, "discarded")


@pytest.mark.usefixtures("registry")
async def test_escape_on_an_untouched_preset_leaves_at_once(runs_dir):
    from cockpit.config.presets import load_preset

    app = Host(runs_dir, load_preset("demo-sft"))
    async with app.run_test(size=SETUP_SIZE) as pilot:
        screen = setup_screen(app)
        await app_wait(pilot, lambda: screen.spec is not None and screen.query("#field-dataset_name"),
                       "the form filled from the preset")
        await pilot.press("escape")
        await app_wait(pilot, lambda: app.result is None, "dismissed without a question")


@pytest.mark.usefixtures("registry")
async def test_help_under_fields_reads_as_text_and_the_verdict_speaks_of_fields(runs_dir):
    from textual.widgets import OptionList, Static

    from cockpit.ui.widgets.setup.field_editor import FieldEditor

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        verdict = screen.query_one("#validation", Static)
        await app_wait(pilot, lambda: "model" in str(verdict.render()), "the verdict")
        said = str(verdict.render())
        assert "--set" not in said and "model_name_or_path field" in said

        editors = list(screen.query(FieldEditor))
        assert len(editors) > 5
        for editor in editors:
            editor.focus_control()  # the whole help shows while focused
            await pilot.pause()
            shown = [str(s.render()) for s in editor.query(".field-help")]
            for text in shown:
                assert "`" not in text and ":class:" not in text and "](http" not in text, text
        await pilot.press("ctrl+f")
        options = screen.query_one("#field-search-list", OptionList)
        await app_wait(pilot, lambda: options.option_count > 20, "every field listed")
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert not [p for p in prompts if "`" in p or "](http" in p]


@pytest.mark.parametrize("raw, shown", [
    ("It defaults to ``'float32'``.", "It defaults to 'float32'."),
    ("See :class:`~transformers.TrainingArguments` and :func:`trl.get_peft_config`.",
     "See TrainingArguments and trl.get_peft_config."),
    ("Use [`~trl.SFTConfig`] as in the [ScaleRL](https://huggingface.co/papers/2510.13786) recipe.",
     "Use SFTConfig as in the ScaleRL recipe."),
    ("Refer to the `test_size` argument; values in `[0, 1]`; a[0] stays.",
     "Refer to the test_size argument; values in [0, 1]; a[0] stays."),
])
def test_trl_help_markup_is_cleaned_for_the_terminal(raw, shown):
    from cockpit.ui.widgets.setup.values import clean_help

    assert clean_help(raw) == shown


@pytest.mark.usefixtures("registry")
async def test_at_100_columns_the_picked_trainer_list_makes_room_for_the_inputs(runs_dir):
    from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker

    app = Host(runs_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        picker = screen.query_one(TrainerPicker)
        model = control(app, "model_name_or_path")
        await app_wait(pilot, lambda: not screen.query_one("#setup-trainers").display,
                       "the list out of the way")
        await pilot.pause(0.2)
        assert model.size.width >= 30
        await pilot.press("ctrl+t")
        await app_wait(pilot, lambda: app.focused is picker, "the trainers back, focused")
        assert screen.query_one("#setup-trainers").display and picker.size.width > 20


# -- the reward-functions field -------------------------------------------------------------------


@pytest.mark.usefixtures("registry")
async def test_reward_functions_typed_as_a_bracketed_list_are_names(runs_dir):
    from textual.widgets import Static

    from helpers.ui import Host, pick, setup_screen, type_into

    app = Host(runs_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        await pick(pilot, app, "grpo")
        screen = setup_screen(app)
        # GRPO has one reward field, TRL's own `reward_funcs` (issue 30 §4).
        await type_into(pilot, app, "reward_funcs", "[accuracy_reward, rewards.py:my_fn, 1]")
        await app_wait(pilot, lambda: screen.current_preset().trl.get("reward_funcs")
                       == ["accuracy_reward", "rewards.py:my_fn", "1"], "three names")
        await type_into(pilot, app, "reward_funcs", "[accuracy_reward")
        editor = screen.query_one("#field-reward_funcs")
        await app_wait(pilot, lambda: editor.has_class("-invalid"), "an unclosed list is refused")
        assert "closing ]" in str(editor.query_one(".field-error", Static).content)


# -- the field count --------------------------------------------------------------------------------


@pytest.mark.usefixtures("registry")
async def test_the_setup_form_counts_its_fields_as_the_field_search_does(runs_dir):
    import re

    from textual.widgets import Static

    from helpers.ui import Host, pick, setup_screen

    app = Host(runs_dir)
    async with app.run_test(size=(100, 30)) as pilot:
        await pick(pilot, app, "grpo")
        screen = setup_screen(app)
        top = str(screen.query_one("#trainer-info", Static).render())
        below = str(screen.query_one("#field-search-title", Static).render())
        total = re.search(r"All (\d+) fields", below).group(1)
        assert f"{total} fields:" in top and "of GRPOConfig" in top


@pytest.mark.usefixtures("registry")
async def test_ctrl_k_in_a_text_field_deletes_to_the_end_of_the_line_and_the_loss_mask_has_its_own_key(
        runs_dir):
    from cockpit.ui.screens.loss_mask import LossMaskScreen

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        model = control(app, "model_name_or_path")
        await app_wait(pilot, lambda: app.focused is model, "the model field focused")
        model.value = "org/model-name"
        await pilot.pause()
        await pilot.press("home", "right", "right", "right", "right")  # the cursor after "org/"
        await app_wait(pilot, lambda: model.cursor_position == 4, "the cursor after org/")
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert not isinstance(app.screen, LossMaskScreen)
        assert model.value == "org/"  # as in every other text field (the rename box too)
        await app_wait(pilot, lambda: "Loss mask" in footer_bindings(app), "the footer's loss-mask key")
        assert "k" not in footer_bindings(app)["Loss mask"].lower()


@pytest.mark.usefixtures("registry")
async def test_while_the_preset_is_checked_the_verdict_spins_and_counts_seconds(runs_dir):
    from cockpit.ui.widgets.setup.verdict import Verdict

    app = Host(runs_dir)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await pick(pilot, app, "sft")
        verdict = setup_screen(app).query_one(Verdict)
        model = control(app, "model_name_or_path")
        await app_wait(pilot, lambda: app.focused is model, "the model field focused")
        await app_wait(pilot, lambda: not verdict.waiting, "the first check done")
        said: list[str] = []  # each spinner line, as it is drawn (a loaded machine may check
        tick = verdict._tick  # and finish between two looks at the screen)

        def spied() -> None:
            tick()
            said.append(str(verdict.render()))

        verdict._tick = spied
        await pilot.press("x")  # a change: checked again after a short pause
        await app_wait(pilot, lambda: said, "checking")
        assert "checking the preset" in said[0] and " s" in said[0]
        await app_wait(pilot, lambda: not verdict.waiting, "checked")


@pytest.mark.usefixtures("registry")
async def test_at_60x20_the_form_has_the_rows_and_no_help_is_cut_in_a_word(runs_dir):
    """A 60x20 terminal: the preview keeps its verdict only (launch and save are in the
    footer), the field being typed in is in sight and wide enough, and each help line is cut
    after a whole word."""
    import re

    app = Host(runs_dir)
    async with app.run_test(size=(60, 20)) as pilot:
        await pick(pilot, app, "sft")
        screen = setup_screen(app)
        model = control(app, "model_name_or_path")

        def in_sight() -> bool:
            return (screen.has_class("-short") and app.focused is model and model.size.width >= 20
                    and model.region.y >= 1 and model.region.bottom <= 18
                    and screen.query_one("#validation").region.height > 0)

        await app_wait(pilot, in_sight, "the short layout, the model field in sight and wide enough")
        assert not screen.query_one("#preset-preview").region.height  # hidden: the verdict stays
        for help_line in screen.query(".field-help"):
            shown = str(help_line.render())
            whole = str(help_line.content)
            if help_line.region.width and shown != whole and shown.endswith("…"):
                kept = shown[:-1]
                assert whole.startswith(kept) and re.match(r"\W|$", whole[len(kept):]), (shown, whole)
