"""The completions tab as a browser over every logged step: jump, sort, filter, search, group,
follow one prompt, two steps side by side, from every source (the run folder's store, TRL's
parquet files, old journals with the rows inline). Driven with Pilot, keys as a person presses
them."""

from __future__ import annotations

import json

import pytest

from cockpit.run import journal
from cockpit.run.completions_store import CompletionsWriter
from cockpit.ui.text import num
from helpers import FIXTURES
from helpers.ui import (
    app_for,
    app_wait,
    completions_column,
    completions_header,
    grpo_rows,
    make_run,
    notifications,
    open_completions_tab,
    sft_records,
    stored_run,
)

pytestmark = pytest.mark.anyio

WIDE = (160, 48)


def _title(pane) -> str:
    return str(pane.query_one("#completions-title").render())


async def test_a_long_run_is_browsable_back_to_step_1_after_it_ended(tmp_path):
    run = stored_run(tmp_path, range(1, 2001))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        assert _title(pane).startswith("step 2000 · 4 samples · 2000 steps kept · following newest")
        await pilot.press("home")
        await app_wait(pilot, lambda: pane.shown_step() == 1, "Home shows the first step")
        assert completions_column(pane, "completion")[0] == "answer 1.0"
        await pilot.press("right_square_bracket")
        await app_wait(pilot, lambda: pane.shown_step() == 2, "] the next one")
        await pilot.press("g", *"1500", "enter")
        await app_wait(pilot, lambda: pane.shown_step() == 1500, "a typed step")
        assert completions_column(pane, "completion")[0] == "answer 1500.0"
        assert "1500 of 2000, scrubbed back" in _title(pane)
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.shown_step() == 1499, "[ the previous one")
        await pilot.press("end")
        await app_wait(pilot, lambda: pane.step is None and pane.shown_step() == 2000, "End: newest")
        # Whatever was visited, the library holds a few steps, not the run.
        assert len(app.screen.sources[0].library._cache) <= 8


async def test_a_typed_step_that_was_not_logged_shows_the_nearest(tmp_path):
    run = stored_run(tmp_path, (10, 20, 30))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("g", "2", "4", "enter")
        await app_wait(pilot, lambda: pane.shown_step() == 20, "step 20, the nearest to 24")
        await app_wait(pilot, lambda: any("showing step 20" in m for m in notifications(app)),
                       "the notification")  # notify() reaches the app on its next turn
        step_box = pane.query_one("#completions-step")
        assert not step_box.can_focus and app.focused is pane.query_one("#completions-table")
        await pilot.press("3")  # out of the box, digits switch tabs again
        await app_wait(pilot, lambda: app.screen.query_one("TabbedContent").active == "history",
                       "3 shows the log history")


async def test_filter_by_score_search_the_text_and_sort(tmp_path):
    run = stored_run(tmp_path, (1, 2))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("slash", *"acc>0.5")
        await app_wait(pilot, lambda: len(pane._rows) == 2, "acc>0.5 keeps two rows")
        assert completions_column(pane, "completion") == ["answer 2.0", "answer 2.3"]
        assert "2 of 4 shown" in str(pane.query_one("#completions-state").render())
        await pilot.press("enter")  # back to the table, the filter stays
        assert app.focused is pane.query_one("#completions-table")
        await pilot.press("left_square_bracket")  # and holds on other steps
        await app_wait(pilot, lambda: pane.shown_step() == 1, "step 1")
        assert completions_column(pane, "completion") == ["answer 1.0", "answer 1.3"]

        await pilot.press("slash", "ctrl+u", *"adv<0 3+3")  # a score and text, both must hold
        await app_wait(pilot, lambda: completions_column(pane, "completion") == ["answer 1.1"], "adv<0 and 3+3")
        await pilot.press("ctrl+u", *'"answer 1.2"')
        await app_wait(pilot, lambda: completions_column(pane, "completion") == ["answer 1.2"], "a quoted phrase")
        await pilot.press("ctrl+u", *"nope>1")
        await app_wait(pilot, lambda: not pane._rows, "an unknown column keeps nothing")
        assert "no column 'nope'" in str(pane.query_one("#completions-state").render())
        await pilot.press("ctrl+u", "escape")
        await app_wait(pilot, lambda: len(pane._rows) == 4, "an empty filter keeps every row")

        await pilot.press("o")  # sort: the advantage first, highest first
        await app_wait(pilot, lambda: pane.sort == "advantage", "sorted by advantage")
        assert completions_column(pane, "advantage") == ["0.9", "0.3", "-0.4", "-0.8"]
        await pilot.press("O")
        await app_wait(pilot, lambda: completions_column(pane, "advantage") == ["-0.8", "-0.4", "0.3", "0.9"],
                       "O turns the order round")
        await pilot.press("o")
        await app_wait(pilot, lambda: pane.sort == "accuracy_reward", "then the reward")
        assert completions_column(pane, "accuracy_reward")[:2] == ["1", "1"]
        await pilot.press("o")
        await app_wait(pilot, lambda: pane.sort is None, "then the order they were logged in")
        assert completions_column(pane, "completion") == [f"answer 1.{i}" for i in range(4)]


async def test_group_the_generations_of_each_prompt(tmp_path):
    run = stored_run(tmp_path, (1,))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("p")
        await app_wait(pilot, lambda: pane.grouped and "#" in completions_header(pane), "grouped")
        assert completions_column(pane, "#") == ["1.1", "1.2", "2.1", "2.2"]
        assert completions_column(pane, "completion") == ["answer 1.0", "answer 1.2", "answer 1.1", "answer 1.3"]
        assert completions_column(pane, "prompt") == ["Question: 2+2?", '"', "Question: 3+3?", '"']
        assert "2 prompts" in str(pane.query_one("#completions-state").render())
        await pilot.press("p")
        await app_wait(pilot, lambda: "#" not in completions_header(pane), "ungrouped")


def _rows_by_step(step: int) -> list[dict]:
    """A rare prompt sampled only at steps 10 and 30, among the common ones."""
    rows = grpo_rows(step)
    if step in (10, 30):
        rows.append({"prompt": "Question: rare?", "completion": f"rare {step}",
                     "rewards": {"accuracy_reward": 1.0}, "advantage": 0.0})
    return rows


async def test_follow_one_prompt_across_the_steps_that_sampled_it(tmp_path):
    run = stored_run(tmp_path, range(1, 41), _rows_by_step)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("g", *"30", "enter")
        await app_wait(pilot, lambda: pane.shown_step() == 30, "step 30")
        table = pane.query_one("#completions-table")
        table.move_cursor(row=4)
        await pilot.press("t")
        await app_wait(pilot, lambda: pane.prompt == "Question: rare?", "following the rare prompt")
        assert completions_column(pane, "completion") == ["rare 30"]
        assert "prompt" not in completions_header(pane)  # the state line names it once
        await pilot.press("left_square_bracket")  # skips the 19 steps that did not sample it
        await app_wait(pilot, lambda: pane.shown_step() == 10, "back to step 10")
        assert completions_column(pane, "completion") == ["rare 10"]
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: any("not sampled in any older step" in n.message
                                          for n in app._notifications), "nothing older")
        assert pane.shown_step() == 10
        await pilot.press("end")
        await app_wait(pilot, lambda: pane.shown_step() == 30, "End: the newest step that has it")
        await pilot.press("t")
        await app_wait(pilot, lambda: pane.prompt is None and len(pane._rows) == 5, "every prompt again")


async def test_two_steps_side_by_side(tmp_path):
    run = stored_run(tmp_path, range(1, 6))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        other = pane.query_one("#completions-compare")
        assert not other.parent.display or not pane.has_class("-comparing")
        await pilot.press("b")
        await app_wait(pilot, lambda: pane.pinned == 5 and pane.has_class("-comparing"), "step 5 pinned")
        await pilot.press("left_square_bracket", "left_square_bracket")
        await app_wait(pilot, lambda: pane.shown_step() == 3, "the other side moved to step 3")
        assert completions_column(pane, "completion", "#completions-compare")[0] == "answer 5.0"
        assert completions_column(pane, "completion")[0] == "answer 3.0"
        assert other.region.width > 0 and other.region.x > pane.query_one("#completions-table").region.x
        assert "step 5" in str(pane.query_one("#completions-label-pinned").render())
        other.focus()  # the detail follows the side that has the focus
        await pilot.pause()
        assert "answer 5.0" in str(pane.query_one("#completions-text").render())
        await pilot.press("b")
        await app_wait(pilot, lambda: not pane.has_class("-comparing"), "one table again")


async def test_columns_reward_functions_add_appear_by_themselves(tmp_path):
    def rows(step):
        out = grpo_rows(step)
        if step == 2:  # a new reward function, and a column one of them logged
            for r in out:
                r["rewards"]["format_reward"] = 0.5
                r["judge_note"] = "[b]fine[/b]"
        return out

    run = stored_run(tmp_path, (1, 2), rows)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        # Two reward functions: their sum comes first (issue 30: the total reward first).
        assert completions_header(pane) == ["prompt", "completion", "sum", "accuracy_reward", "format_reward",
                                            "advantage", "judge_note"]
        assert completions_column(pane, "sum")[0] == num(grpo_rows(2)[0]["rewards"]["accuracy_reward"] + 0.5)
        assert pane.query_one("#completions-query").placeholder.startswith("sum>0.5  adv<0")
        assert completions_column(pane, "judge_note")[0] == "[b]fine[/b]"  # literal, never markup
        await pilot.press("slash", *"format>0.4")
        await app_wait(pilot, lambda: "4 of 4 shown" in str(pane.query_one("#completions-state").render()),
                       "a new column is filterable by a unique start of its name")
        await pilot.press("enter", "left_square_bracket")
        await app_wait(pilot, lambda: pane.shown_step() == 1, "step 1")
        assert completions_header(pane) == ["prompt", "completion", "accuracy_reward", "advantage"]
        assert pane.query_one("#completions-query").placeholder.startswith("accuracy_reward>0.5  adv<0")


async def test_enter_shows_one_completion_whole_and_escape_goes_back(tmp_path):
    def rows(_step):
        return [{"prompt": "Say it", "completion": "line one\nline two<|endoftext|><|pad|>",
                 "rewards": {"r": 1.0}, "advantage": 0.0}]

    run = stored_run(tmp_path, (1,), rows)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        pane.query_one("#completions-table").focus()
        await pilot.press("enter")
        await app_wait(pilot, lambda: pane.has_class("-zoomed"), "zoomed")
        text = pane.query_one("#completions-text").render()
        assert "line one\nline two<|endoftext|><|pad|>" in text.plain
        assert any(text.plain[s.start:s.end] == "<|endoftext|>" for s in text.spans)  # marked
        assert not pane.query_one("#completions-tables").display
        await pilot.press("escape")
        await app_wait(pilot, lambda: not pane.has_class("-zoomed"), "the table back")
        assert app.screen.__class__.__name__ == "LiveRunScreen"


async def test_a_live_run_is_followed_until_the_user_moves(tmp_path):
    run = stored_run(tmp_path, (1, 2), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        writer = CompletionsWriter(run.path)
        with journal.JournalWriter(run.events) as jw:
            jw.write(writer.append(3, grpo_rows(3), source="trainer_logs"))
        await app_wait(pilot, lambda: pane.shown_step() == 3, "the new step shown")
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.shown_step() == 2, "moved back")
        with journal.JournalWriter(run.events) as jw:
            jw.write(writer.append(4, grpo_rows(4), source="trainer_logs"))
        writer.close()
        await app_wait(pilot, lambda: "4 steps kept" in _title(pane), "step 4 counted")
        assert pane.shown_step() == 2  # and the view stays where the user put it


async def test_moving_the_highlight_with_the_arrows_pauses_following(tmp_path):
    run = stored_run(tmp_path, (1, 2), state="running")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        table = pane.query_one("#completions-table")
        table.focus()
        await pilot.press("down", "down")
        await app_wait(pilot, lambda: table.cursor_row == 2, "the third row highlighted")
        detail = str(pane.query_one("#completions-text").render())
        assert "answer 2.2" in detail
        await app_wait(pilot, lambda: "paused at step 2" in _title(pane), "following paused")
        writer = CompletionsWriter(run.path)
        with journal.JournalWriter(run.events) as jw:
            jw.write(writer.append(3, grpo_rows(3), source="trainer_logs"))
        writer.close()
        await app_wait(pilot, lambda: "3 steps kept" in _title(pane), "step 3 counted")
        assert pane.shown_step() == 2 and table.cursor_row == 2  # the row read stays
        assert str(pane.query_one("#completions-text").render()) == detail
        await pilot.press("end")  # End follows again
        await app_wait(pilot, lambda: pane.shown_step() == 3 and "following newest" in _title(pane),
                       "following again")


async def test_trl_parquet_files_in_an_output_dir_replay(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    (out / "completions").mkdir(parents=True)
    (out / "trainer_state.json").write_text(json.dumps({
        "global_step": 6, "max_steps": 6,
        "log_history": [{"step": s, "loss": 1.0 / s} for s in range(1, 7)]}))
    for step in (2, 4, 6):
        pq.write_table(pa.table({"step": [step] * 2, "prompt": ["p", "q"],
                                 "completion": [f"c{step}", f"d{step}"],
                                 "accuracy_reward": [1.0, None], "advantage": [0.5, -0.5]}),
                       out / "completions" / f"completions_{step:05d}.parquet")
    app = app_for(tmp_path, "replay", [str(out)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        assert _title(pane).startswith("step 6 · 2 samples · 3 steps kept")
        assert completions_header(pane) == ["prompt", "completion", "accuracy_reward", "advantage"]
        assert pane.query_one("#completions-query").placeholder.startswith("accuracy_reward>0.5  adv<0")
        assert completions_column(pane, "completion") == ["c6", "d6"]
        await pilot.press("home")
        await app_wait(pilot, lambda: completions_column(pane, "completion") == ["c2", "d2"], "the first file")


async def test_an_old_run_folder_with_inline_completions_still_replays(tmp_path):
    records = [journal.run_started("grpo", max_steps=3)]
    for s in (1, 2, 3):
        records += [journal.metrics(s, {"loss": 1.0}), journal.completions(s, grpo_rows(s), source="trainer_logs")]
    run = make_run(tmp_path / "runs", "old", records, state="finished", trainer="grpo")
    assert not (run.path / "completions.idx").exists()
    app = app_for(tmp_path, "replay", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        assert _title(pane).startswith("step 3 · 4 samples · 3 steps kept")
        await pilot.press("home")
        await app_wait(pilot, lambda: completions_column(pane, "completion")[0] == "answer 1.0", "step 1")


async def test_the_tab_keys_are_in_the_footer_only_where_they_work(tmp_path):
    from textual.widgets import Footer

    run = stored_run(tmp_path, (1, 2))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        def footer() -> list[str]:
            return [k.description for k in app.screen.query_one(Footer).query("FooterKey")]

        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        assert "Filter" not in footer()
        pane = await open_completions_tab(app, pilot)
        await app_wait(pilot, lambda: "Filter" in footer(), "Filter offered on the tab")
        await pilot.press("slash")
        await app_wait(pilot, lambda: "Follow" not in footer(), "End is the box's while typing")
        await pilot.press(*"end")  # typed, not a tab switch or a key of the tab
        await app_wait(pilot, lambda: pane.query_one("#completions-query").value == "end", "typed")
        await pilot.press("escape")
        await app_wait(pilot, lambda: "Follow" in footer(), "and back")


async def test_markup_like_text_in_the_filter_the_followed_prompt_and_a_reward_name_is_shown_as_is(tmp_path):
    nasty = "…A[oodbyedq [/b]\\ [$x]"

    def rows(step):
        return [{"prompt": nasty, "completion": f"{nasty} {step}", "rewards": {"[$x]": 1.0}, "advantage": 0.1},
                {"prompt": "plain", "completion": "plain", "rewards": {"[$x]": 0.0}, "advantage": -0.1}]

    run = stored_run(tmp_path, (1, 2), rows)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        await pilot.press("o", "o")
        await app_wait(pilot, lambda: pane.sort == "[$x]", "sorted by the odd reward name")
        assert "[$x] ↓" in completions_header(pane)
        await pilot.press("t")
        await app_wait(pilot, lambda: pane.prompt == nasty, "the odd prompt followed")
        state = str(pane.query_one("#completions-state").render())
        assert "[/b]\\ [$x]" in state
        await pilot.press("slash", *"[/b]\\", "enter")
        await app_wait(pilot, lambda: len(pane._rows) == 1, "a search for markup finds the row")
        await pilot.press("slash", "ctrl+u", *"[oops>1")
        await app_wait(pilot, lambda: "no column '[oops'" in str(pane.query_one("#completions-state").render()),
                       "the problem names the column as typed")
        assert app.is_running


async def test_a_checkpoint_of_a_cockpit_run_shows_the_steps_logged_up_to_it(tmp_path):
    run = stored_run(tmp_path, range(1, 11))
    ckpt = run.output / "checkpoint-4"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({
        "global_step": 4, "max_steps": 10, "log_history": [{"step": s, "loss": 1.0 / s} for s in range(1, 5)]}))
    app = app_for(tmp_path, "replay", [str(ckpt)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        assert _title(pane).startswith("step 4 · 4 samples · 4 steps kept · following newest")


async def test_samples_without_scores_get_a_text_only_filter_hint_and_no_score_columns(tmp_path):
    def rows(step):  # what the periodic sampler logs for SFT and DPO: prompt and answer only
        return [{"prompt": "Say hi", "completion": f"hi {step}", "rewards": {}, "advantage": None}]

    run = stored_run(tmp_path, (1, 2), rows, name="dpo")
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=WIDE) as pilot:
        pane = await open_completions_tab(app, pilot)
        assert completions_header(pane) == ["prompt", "completion"]
        assert "text only" in pane.query_one("#completions-query").placeholder
        assert ">" not in pane.query_one("#completions-query").placeholder


# -- the completions filter -----------------------------------------------------------------------


async def test_a_filter_comparison_without_a_number_says_what_to_write(tmp_path):
    from helpers.ui import open_completions_tab, stored_run

    run = stored_run(tmp_path, (1, 2))
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_completions_tab(app, pilot)

        def state() -> str:
            return str(pane.query_one("#completions-state").render())

        await pilot.press("slash", *"accuracy_reward>abc")
        await app_wait(pilot, lambda: "put a number after >" in state(), "a hint for reward>abc")
        assert "accuracy_reward>0.5" in state()
        await pilot.press("ctrl+u", *"acc>")
        await app_wait(pilot, lambda: "'acc>': put a number after >" in state(), "a hint for acc>")
        await pilot.press("ctrl+u", *"2+2>1")  # text with a > in it is searched for, no hint
        await app_wait(pilot, lambda: "put a number" not in state(), "no hint for text")


# -- a replayed file without completions ---------------------------------------------------------


async def test_a_replayed_file_without_completions_says_so_without_yet(tmp_path):
    app = app_for(tmp_path, "replay", [str(FIXTURES / "trl_sft_token_accuracy.json")])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "loaded")
        await pilot.press("2")
        title = app.screen.query_one("#completions-title")
        await app_wait(pilot, lambda: "no completions in trl_sft_token_accuracy" in str(title.render()),
                       "no completions in this file")
        assert "yet" not in str(title.render())


# -- prompts and scores at 100 columns --------------------------------------------------------------


def _chat_rows(_step: int) -> list[dict]:
    """Prompts as a chat template leaves them: one system prompt, the question, one assistant turn."""
    system = "<|im_start|>system\nYou are a careful assistant. Think step by step.<|im_end|>\n<|im_start|>user\n"
    end = "<|im_end|>\n<|im_start|>assistant\n"
    return [{"prompt": f"{system}What is {a}+{b}?{end}", "completion": f"{a + b}",
             "rewards": {"accuracy_reward": 1.0}, "advantage": 0.5 - i / 4}
            for i, (a, b) in enumerate([(2, 2), (3, 5), (7, 1)])]


async def test_at_100_columns_prompts_show_the_part_that_differs_and_scores_are_whole(tmp_path):
    from helpers.ui import completions_column, completions_header, open_completions_tab, stored_run

    run = stored_run(tmp_path, (1,), rows=_chat_rows)
    app = app_for(tmp_path, "live", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_completions_tab(app, pilot)
        prompts = completions_column(pane, "prompt")
        assert len(set(prompts)) == 3 and all("+" in p for p in prompts), prompts
        assert completions_header(pane)[-1] == "advantage"
        table = pane.query_one("#completions-table")

        def fits() -> bool:  # every column on screen, none cut at the edge
            return 0 < sum(c.get_render_width(table) for c in table.columns.values()) <= table.size.width

        # The table is laid out for the pane's width once the pane has one (a table drawn before
        # the first layout has no width to fit: it is drawn again when the pane is sized).
        await app_wait(pilot, fits, "the columns fitted to 100 columns")
        # A finished run brings no new data that would redraw it: the resize does. (Under 90
        # columns the completion keeps close to half the width and the scores scroll instead.)
        await pilot.resize_terminal(92, 30)
        await app_wait(pilot, lambda: table.size.width <= 92 and fits(), "the columns fitted to 92 columns")


# -- completions title and columns ---------------------------------------------------------------


async def test_completions_title_reads_as_words_and_empty_columns_are_left_out(tmp_path):
    from textual.widgets import DataTable

    from cockpit.ui.widgets.run.completions import CompletionsPane

    records = sft_records(range(1, 300))
    for step in range(1, 292, 50):  # periodic samples, as SFT has them: no advantage
        records.append(journal.completions(step, [
            {"prompt": f"p{i}", "completion": f"c{i}", "rewards": {}, "advantage": None}
            for i in range(4)], source="generate"))
    records.append(journal.completions(291, [
        {"prompt": f"p{i}", "completion": f"c{i}", "rewards": {}, "advantage": None}
        for i in range(4)], source="generate"))
    app = app_for(tmp_path, "live", [str(make_run(tmp_path / "runs", "sft", records).path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("2")
        pane = app.screen.query_one(CompletionsPane)
        table = pane.query_one(DataTable)
        await app_wait(pilot, lambda: table.row_count == 4, "four samples")
        title = str(pane.query_one("#completions-title").render())
        assert title.startswith("step 291 · 4 samples · 7 steps kept · following newest")
        assert "held" not in title
        assert [str(c.label) for c in table.columns.values()] == ["prompt", "completion"]
        await pilot.press("left_square_bracket")
        await app_wait(pilot, lambda: pane.step == 251, "one step back")
        title = str(pane.query_one("#completions-title").render())
        assert title.startswith("step 251 · 4 samples · 7 steps kept · 6 of 7, scrubbed back")
        assert "End newest" in title


async def test_previews_cut_on_a_word_without_special_tokens_and_the_filter_hint_is_whole(tmp_path):
    long = ("the model answers with a sentence long enough to be cut somewhere in the middle of its words "
            "so that the preview has to end before it does, " * 3)

    def rows(_step: int) -> list[dict]:
        return [{"prompt": "Say something long", "completion": long + "<|endoftext|><|endoftext|>", "rewards": {}},
                {"prompt": "Say it short", "completion": "short<|im_end|>", "rewards": {}}]

    run = stored_run(tmp_path, (1,), rows)
    app = app_for(tmp_path, "replay", [str(run.path)])
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_completions_tab(app, pilot)
        cells = completions_column(pane, "completion")
        assert cells[1] == "short" and all("<|" not in c for c in cells), cells
        cut = cells[0]
        assert cut.endswith("…") and long.startswith(cut[:-1]) and long[len(cut) - 1] == " ", cut
        query = pane.query_one("#completions-query")
        await pilot.pause()
        assert query.region.width >= len(query.placeholder) + 2, (query.region.width, query.placeholder)
