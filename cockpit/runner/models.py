"""Tokenizer and models from a path or a hub name, loaded the way TRL's scripts load them, plus
what users trip over: a tokenizer without a pad token gets one, one without a chat template gets a
simple template, and a model whose embeddings are smaller than the tokenizer is resized. A scorer
(reward or value model) is a sequence-classification head with one label.
"""

from __future__ import annotations

from typing import Any

from cockpit.run import journal

SIMPLE_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


def _trust_remote_code(model_args) -> bool:
    """TRL moved trust_remote_code from ModelConfig to the trainer config; read either."""
    return bool(getattr(model_args, "trust_remote_code", False)
                or getattr(model_args, "_cockpit_trust_remote_code", False))


def load_tokenizer(model_args, warnings: list[journal.Record], path: str | None = None):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(
        path or model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=_trust_remote_code(model_args))
    if tok.pad_token is None:
        fallback = tok.eos_token or tok.unk_token
        if fallback is None:
            tok.add_special_tokens({"pad_token": "<|pad|>"})
            fallback = "<|pad|>"
        tok.pad_token = fallback
        warnings.append(journal.warning(
            f"the tokenizer has no pad token — using {fallback!r}", code="pad_token",
            fix="save the tokenizer with a pad token to silence this"))
    if getattr(tok, "chat_template", None) is None:
        tok.chat_template = SIMPLE_CHAT_TEMPLATE
        warnings.append(journal.warning("the tokenizer has no chat template — using a simple one",
                                        code="chat_template"))
    return tok


def _model_kwargs(model_args) -> dict[str, Any]:
    from trl import get_quantization_config

    kwargs: dict[str, Any] = {
        "revision": model_args.model_revision,
        "trust_remote_code": _trust_remote_code(model_args),
    }
    if model_args.attn_implementation:
        kwargs["attn_implementation"] = model_args.attn_implementation
    dtype = getattr(model_args, "dtype", None) or getattr(model_args, "torch_dtype", None)
    if dtype and dtype != "auto":
        import torch

        kwargs["dtype"] = getattr(torch, dtype)
    quant = get_quantization_config(model_args)
    if quant is not None:
        kwargs["quantization_config"] = quant
        from accelerate import PartialState

        # What TRL's get_kbit_device_map did before it was removed: the process's own GPU.
        kwargs["device_map"] = {"": PartialState().local_process_index}
    return kwargs


def load_causal_lm(path: str, model_args, tokenizer):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, **_model_kwargs(model_args))
    if getattr(model.config, "pad_token_id", None) is None and tokenizer is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    fit_embeddings(model, tokenizer)
    return model


def fit_embeddings(model: Any, tokenizer: Any) -> None:
    """A model whose input embeddings are smaller than the tokenizer grows to it (added tokens)."""
    from torch import nn

    emb = model.get_input_embeddings()
    if isinstance(emb, nn.Embedding) and emb.num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))


def load_scorer(path: str, model_args, tokenizer):
    """Reward and value models: sequence classification with one label, as TRL's reward examples do."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=1, **_model_kwargs(model_args))
    if getattr(model.config, "pad_token_id", None) is None and tokenizer is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model
