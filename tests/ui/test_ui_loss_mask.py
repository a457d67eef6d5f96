"""The setup screen's loss-mask view: a key away on an SFT preset, it shows the rows with the
trained tokens marked (the text literal, never markup), measured by TRL in a subprocess."""

from __future__ import annotations

import pytest

from cockpit.config.presets import apply_overrides, load_preset
from helpers.ui import SETUP_SIZE, Host, app_wait, control

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.usefixtures("registry")
async def test_ctrl_o_on_an_sft_preset_shows_the_rows_with_the_assistant_replies_marked(runs_dir):
    from textual.widgets import Static

    from cockpit.ui.screens.loss_mask import TRAINED_STYLE, LossMaskScreen

    preset = apply_overrides(load_preset("demo-sft"), ["dataset_name=demo:data/messages",
                                                       "assistant_only_loss=true"])
    app = Host(runs_dir, preset)
    async with app.run_test(size=SETUP_SIZE) as pilot:
        await app_wait(pilot, lambda: getattr(app.screen, "registry", None) is not None, "the trainers read")
        await app_wait(pilot, lambda: app.screen.query("#field-learning_rate"), "the form built")
        field = control(app, "learning_rate")  # from inside a text field
        field.focus()
        await pilot.pause()
        typed = field.value
        field.cursor_position = 0
        await pilot.press("ctrl+o")
        await app_wait(pilot, lambda: isinstance(app.screen, LossMaskScreen), "the loss-mask view")
        assert field.value == typed  # not "deleted to the end of the line"
        screen = app.screen
        await app_wait(pilot, lambda: screen.query(".loss-mask-row"), "the rows measured", limit=400)
        summary = str(screen.query_one("#loss-mask-summary", Static).content)
        assert summary.startswith("assistant_only_loss: true — the loss trains on the assistant replies only")
        assert "max_length 128 cuts none of the 64 training rows" in summary
        rows = list(screen.query(".loss-mask-row"))
        assert len(rows) == 3
        content = rows[0].content
        marked = "".join(str(content)[s.start:s.end] for s in content.spans if str(s.style) == TRAINED_STYLE)
        assert marked == "oink<|im_end|>\n"
        await pilot.press("escape")
        await app_wait(pilot, lambda: not isinstance(app.screen, LossMaskScreen), "the view closed")
