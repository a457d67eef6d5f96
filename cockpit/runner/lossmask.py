"""What SFT does to the training rows, measured with the installed TRL's own code: how many rows
`max_length` cuts, how full packed rows are, and which tokens of a few rows the loss trains on.

    python -m cockpit.runner.lossmask < REQUEST.json      (or --run RUN_DIR)

The request is {"trl": flat keys, "cockpit": section, "info": the trainer's spec, "rows": N,
"limit": M}; the answer, on stdout, one JSON object: {"truncation": {...}, "packing": {...} | null,
"rows": [{"index", "tokens": [[text, trained], ...]}], "chat_template_markers": bool} or
{"error": "..."}. Training-side (it imports trl), so the core runs it as a subprocess
(`cockpit.findings.sft_data`). The rows go through `SFTTrainer._prepare_dataset` (the chat
template, `return_assistant_tokens_mask`, completion masks, labels) with truncation and packing
off, then through TRL's `DataCollatorForLanguageModeling`: the mask shown is what training uses.
"""

from __future__ import annotations

import json
import math
import os
import sys
import types
from pathlib import Path
from typing import Any

from cockpit.errors import failure
from cockpit.runner import startup

DEFAULT_LIMIT = 20_000
"""Rows measured for truncation; a larger set is sampled evenly (and the answer says so)."""


def _prepare(train, tokenizer, config):
    """TRL's SFT preparation of `train` with truncation and packing off: input_ids and labels."""
    import dataclasses

    from trl import SFTTrainer

    try:
        from trl.chat_template_utils import get_training_chat_template, has_generation_markers
    except ImportError:  # an older TRL: the tokenizer's own template
        has_generation_markers = get_training_chat_template = None
    from trl.data_utils import is_conversational

    args = dataclasses.replace(config, max_length=None, packing=False) if dataclasses.is_dataclass(config) \
        else config
    first = next(iter(train))
    chat_template = None
    if getattr(config, "assistant_only_loss", False) and has_generation_markers is not None \
            and not has_generation_markers(tokenizer.chat_template):
        chat_template = get_training_chat_template(tokenizer)
    only = getattr(config, "completion_only_loss", None)
    stand_in = types.SimpleNamespace(
        _tokenizer=getattr(tokenizer, "tokenizer", tokenizer), chat_template=chat_template,
        completion_only_loss=("prompt" in first and "completion" in first) if only is None else only)
    prepared = SFTTrainer._prepare_dataset(stand_in, train, tokenizer, args, False, None, "train")
    return prepared, is_conversational(first)


def _token_text(tokenizer, ids: list[int]) -> list[str]:
    """Each token's text as it appears in the decoded row (byte-level pieces decoded, not Ġ)."""
    out, prev = [], ""
    for i in range(len(ids)):
        text = tokenizer.decode(ids[: i + 1], skip_special_tokens=False)
        out.append(text[len(prev):] if text.startswith(prev) else tokenizer.decode([ids[i]]))
        prev = text
    return out


def measure(request: dict[str, Any]) -> dict[str, Any]:
    from cockpit.run.section import parse_section
    from cockpit.runner.build import load_data, parse_args
    from cockpit.runner.models import load_tokenizer

    flat, cockpit, info = dict(request["trl"]), parse_section(request.get("cockpit")), dict(request["info"])
    warnings: list = []
    script_args, config, model_args, mixture = parse_args(flat, info, cuda=False, warnings=warnings)
    tokenizer = load_tokenizer(model_args, warnings)
    train, _ = load_data(script_args, types.SimpleNamespace(eval_strategy="no"), mixture, cockpit, info)
    total = len(train)
    limit = int(request.get("limit") or DEFAULT_LIMIT)
    sampled = total > limit
    if sampled:
        step = total / limit
        train = train.select([int(i * step) for i in range(limit)])
    prepared, chat = _prepare(train, tokenizer, config)
    lengths = [len(ids) for ids in prepared["input_ids"]]
    max_length = getattr(config, "max_length", None)
    cut = sum(1 for n in lengths if max_length is not None and n > max_length)
    answer: dict[str, Any] = {
        "truncation": {"rows": len(lengths), "of": total, "sampled": sampled, "max_length": max_length,
                       "cut": cut, "longest": max(lengths) if lengths else 0,
                       "tokens": sum(lengths),
                       "tokens_cut": sum(max(0, n - max_length) for n in lengths) if max_length else 0,
                       "mode": getattr(config, "truncation_mode", "keep_start")},
        "packing": None,
        "conversational": chat,
        "assistant_only_loss": bool(getattr(config, "assistant_only_loss", False)),
        "completion_only_loss": getattr(config, "completion_only_loss", None),
        "chat_template_markers": "{% generation %}" in (tokenizer.chat_template or "").replace("{%-", "{%")
                                 .replace("-%}", "%}"),
    }
    if getattr(config, "packing", False) and max_length:
        from trl.data_utils import pack_dataset

        strategy = getattr(config, "packing_strategy", "bfd")
        # TRL's packing itself: "bfd" cuts the rows longer than max_length, "bfd_split"/"wrapped" split them.
        packed = pack_dataset(prepared.select_columns(["input_ids", "labels"]), max_length, strategy)
        used = sum(len(ids) for ids in packed["input_ids"])
        if strategy != "bfd":
            answer["truncation"].update(cut=0, tokens_cut=0)
        answer["packing"] = {"strategy": strategy, "packed_rows": len(packed), "tokens": used,
                             "capacity": len(packed) * max_length,
                             "fill": used / (len(packed) * max_length) if len(packed) else math.nan}
    answer["rows"] = _mask_rows(prepared, tokenizer, config, int(request.get("rows") or 0))
    return answer


def _mask_rows(prepared, tokenizer, config, n: int) -> list[dict[str, Any]]:
    """The first n rows through TRL's collator, each token with whether the loss trains on it."""
    if n <= 0 or len(prepared) == 0:
        return []
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    collator = DataCollatorForLanguageModeling(pad_token_id=pad, padding_free=bool(getattr(config, "padding_free",
                                                                                              False)))
    out = []
    max_length = getattr(config, "max_length", None)
    for i in range(min(n, len(prepared))):
        row = prepared[i]
        keep = {"input_ids": row["input_ids"], "labels": row["labels"]}
        batch = collator([keep])
        ids = batch["input_ids"][0].tolist()
        labels = batch["labels"][0].tolist()
        texts = _token_text(tokenizer, ids)
        # Training keeps max_length tokens (the start, or the end with truncation_mode keep_end): the
        # tokens cut off are not trained whatever their label says.
        kept = (0, len(ids))
        if max_length is not None and len(ids) > max_length and not getattr(config, "packing", False):
            kept = (len(ids) - max_length, len(ids)) if getattr(config, "truncation_mode", "") == "keep_end" \
                else (0, max_length)
        out.append({"index": i, "length": len(ids), "kept": list(kept),
                    "tokens": [[t, lab != -100 and kept[0] <= j < kept[1]]
                               for j, (t, lab) in enumerate(zip(texts, labels, strict=True))]})
    return out


def _request_from_run(run_dir: str, rows: int) -> dict[str, Any]:
    from cockpit.run.folder import RunFolder
    from cockpit.runner.assets import ensure_for_run
    from cockpit.runner.build import read_run

    run = RunFolder(Path(os.path.abspath(run_dir)))
    ensure_for_run(run.run_yaml)  # started beside the trainer: on a fresh machine the demo may not be built yet
    flat, cockpit, info = read_run(run)
    return {"trl": flat, "cockpit": cockpit.model_dump(mode="json", exclude_defaults=True), "info": info, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    try:
        if args[:1] == ["--run"] and len(args) >= 2:
            request = _request_from_run(args[1], 0)
        else:
            request = json.loads(sys.stdin.read())
        with startup.heavy_start():  # the whole check is the training stack's start and one measure
            from datasets.utils.logging import disable_progress_bar

            disable_progress_bar()
            answer = measure(request)
    except Exception as exc:  # noqa: BLE001 - the caller gets one line, never a traceback
        answer = {"error": failure(exc)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0 if "error" not in answer else 1


if __name__ == "__main__":
    sys.exit(main())
