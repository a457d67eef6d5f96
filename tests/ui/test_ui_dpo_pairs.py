"""Issue 30: the completions tab of a DPO run shows the pair its loss is computed on — chosen and
rejected, their log-probs under the policy and the reference, the margin — as the runner's
periodic samples carry them (`runner/samples.py`; the real run is in test_trainers.py, beside the trainer matrix)."""

from __future__ import annotations

import pytest

from cockpit.run import journal
from helpers.ui import app_for, app_wait, make_run

pytestmark = pytest.mark.anyio


def _pair_row(prompt: str, chosen: str, rejected: str, c: float, r: float, rc: float, rr: float,
              beta: float = 0.1) -> dict:
    """A sample row as the runner writes it for a preference trainer."""
    return {"prompt": prompt, "completion": ":kk}} of of", "rewards": {}, "advantage": None,
            "chosen": chosen, "rejected": rejected, "margin": beta * ((c - rc) - (r - rr)),
            "logps/chosen": c, "logps/rejected": r, "ref logps/chosen": rc, "ref logps/rejected": rr}


async def test_a_dpo_sample_shows_the_pair_its_logps_and_the_margin_first(tmp_path):
    from cockpit.ui.widgets.run.completions import CompletionsPane

    records = [journal.run_started("dpo", max_steps=4), journal.phase("training"),
               journal.metrics(2, {"loss": 0.69, "rewards/margins": 0.01}),
               journal.completions(2, [
                   _pair_row("Question: What sound does a pig make?\nAnswer:", " oink<|endoftext|>",
                             " buzz<|endoftext|>", -13.17, -20.05, -13.39, -20.09),
                   _pair_row("Question: What is the capital of France?\nAnswer:", " Paris<|endoftext|>",
                             " Ottawa<|endoftext|>", -20.14, -19.84, -20.29, -19.93)], source="generate")]
    run = make_run(tmp_path / "runs", "dpo-pairs", records, trainer="dpo", state="finished")
    app = app_for(tmp_path, "replay", [str(run.path)])
    async with app.run_test(size=(120, 40)) as pilot:
        await app_wait(pilot, lambda: app.screen.sources, "the run loaded")
        await pilot.press("2")
        pane = app.screen.query_one(CompletionsPane)
        await app_wait(pilot, lambda: pane._rows, "the samples shown")
        table = pane.query_one("#completions-table")
        labels = [str(c.label).split(" ")[0] for c in table.columns.values()]
        assert labels.index("margin") < labels.index("logps/chosen") < labels.index("logps/rejected")
        assert "margin>" in str(pane.query_one("#completions-query").placeholder)  # the filter hint
        detail = str(pane.query_one("#completions-text").render())
        for part in ("chosen log-prob -13.17 (reference -13.39)", " oink<|endoftext|>",
                     "rejected log-prob -20.05 (reference -20.09)", " buzz<|endoftext|>",
                     "margin 0.018 ", "the model's own answer at this step (greedy)"):
            assert part in detail, (part, detail)
        assert "advantage=" not in detail  # no GRPO words for a DPO sample
