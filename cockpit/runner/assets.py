"""Build the offline demo tokenizer and tiny models (and the datasets) under the demo folder.

Tests and `cockpit demo` cannot download anything, so the assets come from code: a byte-level
BPE tokenizer trained on the corpus embedded in `cockpit.demo.datasets`, and tiny random-init Qwen2
models saved like any hub checkpoint, so cockpit's real loading code (`from_pretrained` on a
path) is what gets exercised. Heavy imports happen inside the functions; checking that
everything is already built costs no torch import.

    python -m cockpit.runner.assets [--root DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cockpit.demo import (
    MODEL_NAMES,
    assets_complete,
    corpus_lines,
    demo_dir,
    demo_lock,
    ensure_datasets,
    is_complete,
    mark_complete,
    model_dir,
    tokenizer_dir,
)

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS: tuple[str, ...] = (EOS_TOKEN, PAD_TOKEN, IM_START, IM_END)

# Qwen2's pre-tokenizer split (transformers.models.qwen2.tokenization_qwen2.PRETOKENIZE_REGEX).
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

VOCAB_SIZE = 768
MAX_LENGTH = 512

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}"
    "{{- message['content'] + '<|im_end|>\\n' }}"
    "{%- endgeneration %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)
"""ChatML as Qwen uses it, with `{% generation %}` markers around each assistant reply.

The markers cover the reply *and* its `<|im_end|>`, so with SFT `assistant_only_loss=True` the
model is trained to stop (TRL 1.16 warns when the end-of-turn token falls outside the mask).
No default system prompt: the tiny models have only 512 positions.
"""

LM_SEED = 0
RM_SEED = 1


def _model_config(tokenizer, *, num_labels: int | None = None):
    """Qwen2 at toy size: ~120k parameters, a training step in milliseconds on a CPU."""
    from transformers import Qwen2Config

    extra: dict[str, Any] = {"num_labels": num_labels} if num_labels is not None else {}
    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=MAX_LENGTH,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids(EOS_TOKEN),
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def _build_into(final: Path, build: Callable[[Path], None]) -> Path:
    """Build a folder beside `final`, mark it complete, then swap it in, so `final` is never half-built.

    Callers hold the demo lock, so leftovers from a crashed build can be removed safely.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.build-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = final.parent / f".{final.name}.build-{os.getpid()}"
    tmp.mkdir()
    try:
        build(tmp)
        mark_complete(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _train_tokenizer(*, with_pad: bool = True):
    """A byte-level BPE trained on the embedded corpus, wrapped as a transformers fast tokenizer.

    The pipeline copies Qwen2's (NFC, Qwen's split regex, byte-level without its own regex):
    transformers 5 loads a folder whose config says `qwen2` through `Qwen2Tokenizer`, which
    rebuilds that pipeline around the saved vocab and merges whatever tokenizer.json says, so a
    GPT-2-style pre-tokenizer would tokenize differently from the model folders than from
    `tokenizer/`.

    Training is deterministic and takes ~50 ms, so each model folder gets a freshly built copy
    rather than a reloaded one (reloading stamps load-time keys such as `is_local` into the
    saved tokenizer_config.json).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus_lines(), trainer=trainer)
    # The chat markers as special tokens: a list named `extra_special_tokens` in transformers 5,
    # `additional_special_tokens` before it (where `extra_special_tokens` is a dict of named ones).
    from packaging.version import Version
    from transformers import __version__ as transformers_version

    markers = "extra_special_tokens" if Version(transformers_version).major >= 5 else "additional_special_tokens"
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN if with_pad else None,
        model_max_length=MAX_LENGTH,
        # What a decoder-only model takes, as Qwen2's tokenizer says: without it the tokenizer also
        # returns token_type_ids, which GRPO's generate() in TRL 0.2x passes on and the model refuses.
        model_input_names=["input_ids", "attention_mask"],
        **{markers: [IM_START, IM_END]},
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def ensure_tokenizer(root: Path | None = None) -> Path:
    """The demo tokenizer folder (`root/tokenizer/`), trained and saved if not built yet."""
    root = Path(root) if root is not None else demo_dir()
    final = tokenizer_dir(root)
    with demo_lock(root):
        if not is_complete(final):
            _build_into(final, lambda tmp: _train_tokenizer().save_pretrained(tmp))
    return final


def _generation_config(tokenizer):
    from transformers import GenerationConfig

    # Stop on either terminator: `<|endoftext|>` ends plain completions, `<|im_end|>` chat turns.
    return GenerationConfig(
        eos_token_id=[tokenizer.convert_tokens_to_ids(EOS_TOKEN), tokenizer.convert_tokens_to_ids(IM_END)],
        pad_token_id=tokenizer.pad_token_id,
    )


def _save_causal_lm(folder: Path, tokenizer) -> None:
    import torch
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(LM_SEED)
    model = Qwen2ForCausalLM(_model_config(tokenizer)).float()
    model.generation_config = _generation_config(tokenizer)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def _save_reward_model(folder: Path, tokenizer) -> None:
    import torch
    from transformers import Qwen2ForSequenceClassification

    torch.manual_seed(RM_SEED)
    model = Qwen2ForSequenceClassification(_model_config(tokenizer, num_labels=1)).float()
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


@contextmanager
def _quiet_saves() -> Iterator[None]:
    """Hide transformers' "Writing model shards" bars while saving, then restore the setting."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def ensure_models(root: Path | None = None) -> dict[str, Path]:
    """The demo model folders by name (`tiny-lm`, `tiny-rm`, `tiny-lm-nopad`), built if missing.

    Each folder is a self-contained checkpoint (config, float32 safetensors, tokenizer) that
    `AutoModelFor*.from_pretrained` and `AutoTokenizer.from_pretrained` load offline.
    """
    root = Path(root) if root is not None else demo_dir()
    folders = {name: model_dir(name, root) for name in MODEL_NAMES}
    with demo_lock(root):
        builders: dict[str, Callable[[Path], None]] = {
            "tiny-lm": lambda tmp: _save_causal_lm(tmp, _train_tokenizer()),
            "tiny-rm": lambda tmp: _save_reward_model(tmp, _train_tokenizer()),
            # Same weights as tiny-lm; only the tokenizer lacks a pad token, as many hub models do.
            "tiny-lm-nopad": lambda tmp: _save_causal_lm(tmp, _train_tokenizer(with_pad=False)),
        }
        with _quiet_saves():
            for name, folder in folders.items():
                if not is_complete(folder):
                    _build_into(folder, builders[name])
    return folders


def ensure_all(root: Path | None = None) -> Path:
    """Build datasets, tokenizer and models under `root` (default: the demo folder); return `root`.

    Fast when everything is already built: only marker files are checked, nothing heavy imported.
    """
    root = Path(root) if root is not None else demo_dir()
    if assets_complete(root):
        # Datasets are cheap and content-compared, so rewrite-if-changed keeps them exact.
        ensure_datasets(root)
        return root
    with demo_lock(root):
        ensure_datasets(root)
        ensure_tokenizer(root)
        ensure_models(root)
    return root


def ensure_for_run(run_yaml: Path) -> None:
    """A run whose config names the offline demo assets builds them on first use, under the lock:
    the trainer and the data check the doctor starts beside it (`runner/lossmask.py`) both call
    this, so whichever comes first builds and the other waits for it."""
    root = demo_dir()
    if str(root) in run_yaml.read_text(encoding="utf-8"):
        ensure_all(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cockpit.runner.assets",
        description="Build cockpit's offline demo assets (datasets, tokenizer, tiny models); "
        "print their folder.",
    )
    parser.add_argument(
        "--root", type=Path, default=None, help="build here instead of the cache's demo folder"
    )
    args = parser.parse_args(argv)
    root = ensure_all(args.root)
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
