"""The offline demo's datasets: small files in every format TRL trainers take, cut from the
demo corpus (`demo.corpus`) and written under the demo folder in the cache (`demo.cache`).

Everything here is deterministic: the same code writes byte-identical files, so a rebuild never
changes a dataset under a run that is reading it.
"""

from __future__ import annotations

import json
from pathlib import Path

from cockpit.demo.cache import (
    MODEL_NAMES,
    demo_dir,
    demo_lock,
    is_complete,
    model_dir,
    tokenizer_dir,
    write_file_atomic,
)
from cockpit.demo.corpus import QA, qa_rows
from cockpit.errors import CockpitError

TRAIN_ROWS = 64
TEST_ROWS = 16
"""Rows in each dataset's train and test split (different questions of the corpus)."""

DATA_FORMATS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "prompt_completion": ("prompt", "completion"),
    "messages": ("messages",),
    "preference": ("prompt", "chosen", "rejected"),
    "preference_conversational": ("prompt", "chosen", "rejected"),
    "preference_reference": ("prompt", "chosen", "rejected", "reference"),
    "unpaired_preference": ("prompt", "completion", "label"),
    "prompt_only": ("prompt",),
    "prompt_only_conversational": ("prompt",),
    "privileged": ("prompt", "privileged_context"),
}
"""Each dataset format cockpit ships, with its columns in file order.

Which trainer takes which: SFT text / prompt_completion / messages; DPO, CPO, ORPO, Reward,
BEMA-DPO preference(_conversational); TPO preference_reference; KTO unpaired_preference; GRPO,
RLOO, GMPO, SDPO, OnlineDPO, Distillation prompt_only(_conversational); GKD, GOLD, IW-OPD
messages; SDFT privileged.
"""

SPLITS: tuple[str, ...] = ("train", "test")


def data_dir(fmt: str, root: Path | None = None) -> Path:
    """The folder holding `train.jsonl` and `test.jsonl` of one format (a folder `load_dataset` accepts)."""
    if fmt not in DATA_FORMATS:
        known = ", ".join(DATA_FORMATS)
        raise CockpitError(f"no demo dataset in format {fmt!r} — choose one of: {known}")
    return (Path(root) if root is not None else demo_dir()) / "data" / fmt


def datasets_complete(root: Path | None = None) -> bool:
    root = Path(root) if root is not None else demo_dir()
    files = [data_dir(fmt, root) / f"{split}.jsonl" for fmt in DATA_FORMATS for split in SPLITS]
    files.append(root / "data" / "prompt_completion.jsonl")
    return all(f.is_file() for f in files)


def assets_complete(root: Path | None = None) -> bool:
    """True when datasets, tokenizer and every model are built — checked without importing torch."""
    root = Path(root) if root is not None else demo_dir()
    return (
        datasets_complete(root)
        and is_complete(tokenizer_dir(root))
        and all(is_complete(model_dir(name, root)) for name in MODEL_NAMES)
    )


def _prompt(qa: QA) -> str:
    return f"Question: {qa.question}\nAnswer:"


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def format_row(fmt: str, qa: QA, index: int) -> dict[str, object]:
    """One row of `fmt` for `qa`; `index` alternates KTO labels so they stay balanced."""
    if fmt == "text":
        return {"text": f"{_prompt(qa)} {qa.answer}"}
    if fmt == "prompt_completion":
        return {"prompt": _prompt(qa), "completion": f" {qa.answer}"}
    if fmt == "messages":
        return {"messages": _user(qa.question) + _assistant(qa.answer)}
    if fmt == "preference":
        return {"prompt": _prompt(qa), "chosen": f" {qa.answer}", "rejected": f" {qa.wrong}"}
    if fmt == "preference_conversational":
        return {
            "prompt": _user(qa.question),
            "chosen": _assistant(qa.answer),
            "rejected": _assistant(qa.wrong),
        }
    if fmt == "preference_reference":
        return {
            "prompt": _prompt(qa),
            "chosen": f" {qa.answer}",
            "rejected": f" {qa.wrong}",
            "reference": f" {qa.sentence}",
        }
    if fmt == "unpaired_preference":
        good = index % 2 == 0
        return {"prompt": _prompt(qa), "completion": f" {qa.answer if good else qa.wrong}", "label": good}
    if fmt == "prompt_only":
        return {"prompt": _prompt(qa)}
    if fmt == "prompt_only_conversational":
        return {"prompt": _user(qa.question)}
    if fmt == "privileged":
        return {"prompt": _prompt(qa), "privileged_context": qa.hint}
    raise CockpitError(f"no demo dataset in format {fmt!r} — choose one of: {', '.join(DATA_FORMATS)}")


def dataset_rows(fmt: str, split: str) -> list[dict[str, object]]:
    """The rows of one demo dataset split; train and test hold different questions."""
    rows = qa_rows(TRAIN_ROWS + TEST_ROWS)
    if split == "train":
        chosen = rows[:TRAIN_ROWS]
    elif split == "test":
        chosen = rows[TRAIN_ROWS : TRAIN_ROWS + TEST_ROWS]
    else:
        raise CockpitError(f"no demo split {split!r} — choose one of: {', '.join(SPLITS)}")
    return [format_row(fmt, qa, i) for i, qa in enumerate(chosen)]


def _jsonl(rows: list[dict[str, object]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def _write_datasets(root: Path) -> None:
    for fmt in DATA_FORMATS:
        for split in SPLITS:
            write_file_atomic(data_dir(fmt, root) / f"{split}.jsonl", _jsonl(dataset_rows(fmt, split)))
    # A bare file too, to exercise loading a single .jsonl (TRL's CLI can't; cockpit must).
    bare = _jsonl(dataset_rows("prompt_completion", "train"))
    write_file_atomic(root / "data" / "prompt_completion.jsonl", bare)


def ensure_datasets(root: Path | None = None) -> Path:
    """Write every demo dataset under `root/data/` (default: the demo folder) and return `root`.

    Idempotent: files whose content is already right are left untouched (same mtime), so a run
    reading them is never disturbed.
    """
    root = Path(root) if root is not None else demo_dir()
    with demo_lock(root):
        _write_datasets(root)
    return root
