"""Periodic samples: the policy answers a few fixed training prompts every N steps, for trainers
that do not sample on their own (SFT, DPO, ...), so the completions tab shows what the model
leans towards as it trains. The GRPO family's own samples are read by the callback instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cockpit.runner.sample import encode
from cockpit.trainers.knowledge import traits

if TYPE_CHECKING:
    from cockpit.run.section import CockpitSection
    from cockpit.runner.build import Built


def sample_prompts(train, cockpit: CockpitSection) -> list[Any]:
    """The first few training prompts (`cockpit.completions.num_prompts`), as the model will see
    them: a conversation up to its first user turn, a plain text cut to its first third."""
    comp = cockpit.completions
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


PAIR_COLUMNS = (("prompt_ids", "chosen_ids", "rejected_ids"),
                ("prompt_input_ids", "chosen_input_ids", "rejected_input_ids"))
"""The token-id columns a DPO-family trainer's tokenized train_dataset holds (TRL 1.x, then the
0.x lines): the very tokens its loss is computed on."""


def preference_pairs(built: Built, n: int) -> list[dict[str, Any]]:
    """The first `n` training pairs as the trainer tokenized them (prompt, chosen and rejected
    token ids, and the reference log-probs when it precomputed them), for a trainer of the
    preference family that does: [] for any other trainer or dataset layout."""
    if traits(built.trainer_info["name"]).family != "preference":
        return []
    data: Any = getattr(built.trainer, "train_dataset", None)
    names = getattr(data, "column_names", None) or []
    columns = next((c for c in PAIR_COLUMNS if all(name in names for name in c)), None)
    if columns is None or not hasattr(data, "select"):
        return []
    keep = [*columns, *(k for k in ("ref_chosen_logps", "ref_rejected_logps") if k in names)]
    rows = data.select(range(min(n, len(data))))
    return [{"prompt": [int(i) for i in r[columns[0]]], "chosen": [int(i) for i in r[columns[1]]],
             "rejected": [int(i) for i in r[columns[2]]],
             **{k: float(r[k]) for k in keep[3:]}} for r in rows]


def _completion_logp(model: Any, prompt: list[int], completion: list[int]) -> float:
    """log p(completion | prompt) under `model`: the sum over the completion's tokens, teacher
    forced (as DPO's loss sums them)."""
    import torch

    ids = torch.tensor([prompt + completion], device=model.device)
    logits = model(input_ids=ids).logits[0, :-1].float()
    per_token = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
    return float(per_token[len(prompt) - 1:].sum())


def _reference(built: Built) -> Any:
    """How to score with the reference: a context manager around the policy's forward (a LoRA
    run's base: the adapter disabled), the reference model itself, or None (no reference here:
    a run that precomputed its reference log-probs carries them in its pairs)."""
    ref = getattr(built.trainer, "ref_model", None)
    if ref is not None:
        return ref
    model = built.model
    peft_config = getattr(model, "peft_config", None)
    if peft_config and "ref" not in peft_config and hasattr(model, "disable_adapter"):
        return model.disable_adapter
    return None


def score_pair(built: Built, pair: dict[str, Any]) -> dict[str, Any]:
    """One pair as DPO's loss sees it at this step: the chosen and rejected log-probs under the
    policy and the reference, and the margin β·((chosen − ref) − (rejected − ref)), as TRL's
    `rewards/margins` averages it over a batch. The texts are the tokens decoded."""
    tok = built.tokenizer
    model = built.model
    row: dict[str, Any] = {
        "chosen": tok.decode(pair["chosen"], skip_special_tokens=False),
        "rejected": tok.decode(pair["rejected"], skip_special_tokens=False)}
    chosen = _completion_logp(model, pair["prompt"], pair["chosen"])
    rejected = _completion_logp(model, pair["prompt"], pair["rejected"])
    ref_chosen, ref_rejected = pair.get("ref_chosen_logps"), pair.get("ref_rejected_logps")
    reference = _reference(built) if ref_chosen is None else None
    if callable(reference) and not hasattr(reference, "forward"):  # the policy, its adapter off
        with reference():
            ref_chosen = _completion_logp(model, pair["prompt"], pair["chosen"])
            ref_rejected = _completion_logp(model, pair["prompt"], pair["rejected"])
    elif reference is not None:
        ref_chosen = _completion_logp(reference, pair["prompt"], pair["chosen"])
        ref_rejected = _completion_logp(reference, pair["prompt"], pair["rejected"])
    beta = getattr(built.trainer, "beta", None) or getattr(built.config, "beta", None)
    if ref_chosen is not None and ref_rejected is not None and beta is not None:
        row["margin"] = float(beta) * ((chosen - ref_chosen) - (rejected - ref_rejected))
    row.update({"logps/chosen": chosen, "logps/rejected": rejected})
    if ref_chosen is not None and ref_rejected is not None:
        row.update({"ref logps/chosen": ref_chosen, "ref logps/rejected": ref_rejected})
    return row


MIN_NEW_TOKENS = 8
"""Tokens of each periodic sample generated before EOS may end it."""


def make_sampler(built: Built, cockpit: CockpitSection):
    """Periodic generation on a few fixed prompts for trainers that do not sample themselves."""
    comp = cockpit.completions
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
    # A preference trainer's samples carry the pair its loss is computed on (same first rows).
    pairs = preference_pairs(built, len(prompts))

    def sample() -> list[dict[str, Any]]:
        import torch

        model = built.model  # the policy itself: trainers may wrap it (PPO's policy+value wrapper)
        tok = built.tokenizer
        was_training = model.training
        model.eval()
        rows = []
        try:
            with torch.no_grad():
                for i, p in enumerate(prompts):
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
                    row = {"prompt": text, "completion": completion, "rewards": {}, "advantage": None}
                    if i < len(pairs):
                        try:
                            row.update(score_pair(built, pairs[i]))
                        except Exception:  # noqa: BLE001 - a layout this code did not foresee: the answers stay
                            pairs.clear()
                    rows.append(row)
        finally:
            if was_training:
                model.train()
        return rows

    return sample, int(every)
