"""Periodic samples: the policy answers a few fixed training prompts every N steps, for trainers
that do not sample on their own (SFT, DPO, ...), so the completions tab shows what the model
leans towards as it trains. The GRPO family's own samples are read by the callback instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.runner.sample import encode
from cockpit.trainers.knowledge import traits

if TYPE_CHECKING:
    from cockpit.runner.build import Built


def sample_prompts(train, cockpit: dict[str, Any]) -> list[Any]:
    """The first few training prompts (`cockpit.completions.num_prompts`), as the model will see
    them: a conversation up to its first user turn, a plain text cut to its first third."""
    comp = cockpit.get("completions") or {}
    n = int(comp.get("num_prompts", 4))
    for col in ("prompt", "messages", "text"):
        if col in train.column_names:
            rows = train.select(range(min(n, len(train))))[col]
            if col == "messages":
                rows = [[m for m in msgs if m.get("role") != "assistant"][:1] or msgs[:1] for msgs in rows]
            if col == "text":
                rows = [str(t)[: max(8, len(str(t)) // 3)] for t in rows]
            return list(rows)
    return []


MIN_NEW_TOKENS = 8
"""Tokens of each periodic sample generated before EOS may end it."""


def make_sampler(built: Built, cockpit: dict[str, Any]):
    """Periodic generation on a few fixed prompts for trainers that do not sample themselves."""
    comp = cockpit.get("completions") or {}
    every = comp.get("every_steps")
    if not every or not built.sample_prompts or traits(built.trainer_info["name"]).head == "scorer":
        return None, None
    max_new = int(comp.get("max_new_tokens", 24))
    # A model trained on short completions that end in EOS soon answers every prompt with EOS
    # first, or with spaces when EOS is held back (the tiny demo model from step 2 on). These
    # samples are for seeing what the model leans towards: EOS is held back for the first
    # tokens and no pair of tokens repeats. `min_new_tokens: 0` shows the raw greedy answer.
    min_new = max(0, min(max_new, int(comp.get("min_new_tokens", MIN_NEW_TOKENS))))
    shaping = {"min_new_tokens": min_new, "no_repeat_ngram_size": 2} if min_new else {}
    prompts = built.sample_prompts

    def sample() -> list[dict[str, Any]]:
        import torch

        model = built.model  # the policy itself: trainers may wrap it (PPO's policy+value wrapper)
        tok = built.tokenizer
        was_training = model.training
        model.eval()
        rows = []
        try:
            with torch.no_grad():
                for p in prompts:
                    if isinstance(p, list):
                        text = tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                    else:
                        text = str(p)
                    enc = encode(tok, text, model.device)
                    out = model.generate(**enc, max_new_tokens=max_new, do_sample=False,
                                         eos_token_id=tok.eos_token_id,
                                         pad_token_id=tok.pad_token_id, **shaping)
                    # Special tokens stay visible: a model that answers with an immediate EOS
                    # should show that, not an empty string.
                    new = out[0, enc["input_ids"].shape[1]:].tolist()
                    while len(new) > 1 and new[-1] == tok.pad_token_id and new[-2] == tok.pad_token_id:
                        new.pop()
                    completion = tok.decode(new, skip_special_tokens=False)
                    rows.append({"prompt": text, "completion": completion, "rewards": {},
                                 "advantage": None})
        finally:
            if was_training:
                model.train()
        return rows

    return sample, int(every)
