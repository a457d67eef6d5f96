"""The offline demo assets: datasets in every trainer format, a tokenizer and tiny models."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cockpit import demo
from cockpit.errors import CockpitError


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def all_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != demo.LOCK_NAME
    }


def is_messages(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(m, dict) and set(m) == {"role", "content"} for m in value)
    )


# --------------------------------------------------------------------------- datasets


def test_every_format_is_written_with_its_columns_and_row_counts(tmp_path: Path) -> None:
    assert demo.ensure_datasets(tmp_path) == tmp_path
    assert set(demo.DATA_FORMATS) == {
        "text", "prompt_completion", "messages", "preference", "preference_conversational",
        "preference_reference", "unpaired_preference", "prompt_only", "prompt_only_conversational",
        "privileged",
    }  # fmt: skip
    for fmt, columns in demo.DATA_FORMATS.items():
        for split, count in (("train", demo.TRAIN_ROWS), ("test", demo.TEST_ROWS)):
            rows = read_jsonl(tmp_path / "data" / fmt / f"{split}.jsonl")
            assert len(rows) == count, (fmt, split)
            for row in rows:
                assert tuple(row) == columns, (fmt, split, row)


def test_conversational_formats_hold_message_lists_and_standard_ones_hold_strings(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    for fmt, columns in demo.DATA_FORMATS.items():
        for row in read_jsonl(tmp_path / "data" / fmt / "train.jsonl"):
            for column in columns:
                value = row[column]
                if column == "label":
                    assert isinstance(value, bool)
                elif fmt in ("messages", "preference_conversational", "prompt_only_conversational"):
                    assert is_messages(value), (fmt, column, value)
                else:
                    assert isinstance(value, str) and value.strip(), (fmt, column, value)
    for row in read_jsonl(tmp_path / "data" / "messages" / "train.jsonl"):
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"]
    for row in read_jsonl(tmp_path / "data" / "preference_conversational" / "train.jsonl"):
        assert [m["role"] for m in row["prompt"]] == ["user"]
        assert [m["role"] for m in row["chosen"] + row["rejected"]] == ["assistant", "assistant"]


def test_preferences_prefer_the_correct_answer(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    arithmetic = re.compile(r"What is (\d+) (plus|minus|times) (\d+)\?")
    ops = {"plus": lambda a, b: a + b, "minus": lambda a, b: a - b, "times": lambda a, b: a * b}
    checked = 0
    for fmt in ("preference", "preference_reference"):
        for split in demo.SPLITS:
            for row in read_jsonl(tmp_path / "data" / fmt / f"{split}.jsonl"):
                assert row["chosen"] != row["rejected"]
                match = arithmetic.search(row["prompt"])
                if match:
                    a, op, b = int(match[1]), match[2], int(match[3])
                    assert row["chosen"].strip() == str(ops[op](a, b))
                    assert row["rejected"].strip() != str(ops[op](a, b))
                    checked += 1
    assert checked > 0
    for row in read_jsonl(tmp_path / "data" / "preference_reference" / "train.jsonl"):
        assert row["chosen"].strip() in row["reference"]


def test_kto_labels_are_balanced_and_match_correctness(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    paired = {row["prompt"]: row for row in read_jsonl(tmp_path / "data" / "preference" / "train.jsonl")}
    rows = read_jsonl(tmp_path / "data" / "unpaired_preference" / "train.jsonl")
    assert sum(row["label"] for row in rows) == len(rows) // 2
    for row in rows:
        expected = paired[row["prompt"]]["chosen" if row["label"] else "rejected"]
        assert row["completion"] == expected


def test_train_and_test_splits_ask_different_questions(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    for fmt in demo.DATA_FORMATS:
        train = {json.dumps(r, sort_keys=True) for r in read_jsonl(tmp_path / "data" / fmt / "train.jsonl")}
        test = {json.dumps(r, sort_keys=True) for r in read_jsonl(tmp_path / "data" / fmt / "test.jsonl")}
        assert not train & test, fmt
    prompts = [r["prompt"] for r in read_jsonl(tmp_path / "data" / "prompt_only" / "train.jsonl")]
    assert len(set(prompts)) == len(prompts)


def test_bare_jsonl_file_holds_the_prompt_completion_train_rows(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    bare = tmp_path / "data" / "prompt_completion.jsonl"
    assert bare.read_bytes() == (tmp_path / "data" / "prompt_completion" / "train.jsonl").read_bytes()


def test_datasets_are_byte_identical_across_builds(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path / "a")
    demo.ensure_datasets(tmp_path / "b")
    first, second = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    assert first and first == second


def test_rebuilding_leaves_correct_files_untouched_and_repairs_damaged_ones(tmp_path: Path) -> None:
    demo.ensure_datasets(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.jsonl")}
    expected = all_files(tmp_path)
    damaged = tmp_path / "data" / "messages" / "train.jsonl"
    damaged.write_text('{"messages": []}\n')
    demo.ensure_datasets(tmp_path)
    assert all_files(tmp_path) == expected
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.jsonl")}
    changed = {p for p in before if before[p] != after[p]}
    assert changed <= {damaged}
    assert not list(tmp_path.rglob("*.tmp"))


def test_default_root_lives_under_the_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path))
    assert demo.demo_dir().parent == tmp_path / "demo" / f"v{demo.DEMO_VERSION}"
    root = demo.ensure_datasets()
    assert root == demo.demo_dir()
    assert demo.datasets_complete()
    assert (root / "data" / "text" / "train.jsonl").is_file()


def test_the_demo_folder_is_keyed_by_the_transformers_and_tokenizers_lines_that_shape_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import version

    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path))
    tf, tok = (".".join(version(p).split(".")[:2]) for p in ("transformers", "tokenizers"))
    assert demo.demo_dir().name == f"transformers-{tf}-tokenizers-{tok}"
    # Two envs on different lines, one cache: `.ci/run` runs the demo from the floor env, then this one.


def test_demo_path_resolves_demo_references_inside_the_demo_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COCKPIT_CACHE_DIR", str(tmp_path))
    assert demo.demo_path("models/tiny-lm") == demo.demo_dir() / "models" / "tiny-lm"
    assert demo.demo_path("demo:data/messages") == demo.demo_dir() / "data" / "messages"
    assert demo.demo_path("models/tiny-rm", root=tmp_path) == tmp_path / "models" / "tiny-rm"
    for bad in ("", "demo:", "../outside", "models/../../x"):
        with pytest.raises(CockpitError):
            demo.demo_path(bad)


def test_unknown_format_or_model_names_the_choices() -> None:
    with pytest.raises(CockpitError, match="prompt_completion"):
        demo.data_dir("chat")
    with pytest.raises(CockpitError, match="tiny-lm"):
        demo.model_dir("huge-lm")


def test_nothing_counts_as_built_in_an_empty_folder(tmp_path: Path) -> None:
    assert not demo.datasets_complete(tmp_path)
    assert not demo.assets_complete(tmp_path)
    demo.ensure_datasets(tmp_path)
    assert demo.datasets_complete(tmp_path)
    assert not demo.assets_complete(tmp_path)  # tokenizer and models are the runner's job


def test_corpus_covers_every_dataset_question() -> None:
    corpus = "\n".join(demo.corpus_lines())
    assert len(demo.corpus_lines()) > 300
    for qa in demo.qa_rows(demo.TRAIN_ROWS + demo.TEST_ROWS):
        assert qa.question in corpus and qa.answer in corpus


# --------------------------------------------------------------------------- the lock


def test_lock_is_reentrant_in_one_thread(tmp_path: Path) -> None:
    with demo.demo_lock(tmp_path), demo.demo_lock(tmp_path):
        demo.ensure_datasets(tmp_path)  # takes the lock a third time
    assert demo.datasets_complete(tmp_path)


@pytest.mark.proc
def test_lock_keeps_other_processes_out_while_held(tmp_path: Path) -> None:
    probe = (
        "import fcntl, sys\n"
        "f = open(sys.argv[1], 'a+b')\n"
        "try:\n"
        "    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n"
        "    print('busy')\n"
        "else:\n"
        "    print('free')\n"
    )
    lock_file = str(tmp_path / demo.LOCK_NAME)
    def try_lock() -> str:
        cmd = [sys.executable, "-c", probe, lock_file]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()

    with demo.demo_lock(tmp_path):
        held = try_lock()
    released = try_lock()
    assert held == "busy"
    assert released == "free"


def test_concurrent_builds_agree(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def build() -> None:
        try:
            demo.ensure_datasets(tmp_path / "shared")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    demo.ensure_datasets(tmp_path / "single")
    assert all_files(tmp_path / "shared") == all_files(tmp_path / "single")


# --------------------------------------------------------------------------- tokenizer and models


@pytest.fixture(scope="module")
def built_assets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cockpit.runner.assets import ensure_all

    root = tmp_path_factory.mktemp("demo-assets")
    assert ensure_all(root) == root
    return root


@pytest.mark.slow
def test_built_models_load_with_transformers(built_assets: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    root = built_assets
    assert demo.assets_complete(root)

    lm_tok = AutoTokenizer.from_pretrained(root / "models" / "tiny-lm")
    assert lm_tok.pad_token == "<|pad|>" and lm_tok.pad_token_id is not None
    assert lm_tok.eos_token == "<|endoftext|>"
    lm = AutoModelForCausalLM.from_pretrained(root / "models" / "tiny-lm")
    assert lm.config.vocab_size == len(lm_tok)
    assert lm.config.pad_token_id == lm_tok.pad_token_id
    assert lm.config.hidden_size == 64 and lm.config.num_hidden_layers == 2

    nopad_tok = AutoTokenizer.from_pretrained(root / "models" / "tiny-lm-nopad")
    assert nopad_tok.pad_token is None
    nopad = AutoModelForCausalLM.from_pretrained(root / "models" / "tiny-lm-nopad")
    assert nopad.config.pad_token_id is None

    rm_tok = AutoTokenizer.from_pretrained(root / "models" / "tiny-rm")
    rm = AutoModelForSequenceClassification.from_pretrained(root / "models" / "tiny-rm")
    assert rm.config.num_labels == 1
    assert rm.config.pad_token_id == rm_tok.pad_token_id
    batch = rm_tok(["What is 3 plus 4? 7", "Hello"], return_tensors="pt", padding=True)
    assert tuple(rm(**batch).logits.shape) == (2, 1)

    for folder in ("tokenizer", "models/tiny-lm", "models/tiny-rm", "models/tiny-lm-nopad"):
        assert (root / folder / demo.COMPLETE_MARKER).is_file()
    assert (root / "models" / "tiny-lm" / "model.safetensors").is_file()


@pytest.mark.slow
def test_chat_template_renders_and_masks_the_assistant_reply(built_assets: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(built_assets / "models" / "tiny-lm")
    question = [{"role": "user", "content": "What is 3 plus 4?"}]
    prompt = tok.apply_chat_template(question, tokenize=False, add_generation_prompt=True)
    assert prompt == "<|im_start|>user\nWhat is 3 plus 4?<|im_end|>\n<|im_start|>assistant\n"

    conversation = [*question, {"role": "assistant", "content": "7"}]
    out: Any = tok.apply_chat_template(  # with return_dict: a BatchEncoding, which its stubs do not say
        conversation, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    masked = [tid for tid, m in zip(out["input_ids"], out["assistant_masks"], strict=False) if m]
    assert tok.decode(masked) == "7<|im_end|>\n"  # the end-of-turn token is trained too


@pytest.mark.slow
def test_every_folder_tokenizes_alike(built_assets: Path) -> None:
    # transformers 5 loads a qwen2 model folder through Qwen2Tokenizer, which rebuilds the
    # pre-tokenizer; the standalone tokenizer folder must still agree with the model folders.
    from transformers import AutoTokenizer

    texts = [*demo.corpus_lines()[:200], "Hello   world!! 123456 ünïcödé", "tabs\tand\nnewlines\n\n"]
    reference = AutoTokenizer.from_pretrained(built_assets / "tokenizer")
    for folder in ("models/tiny-lm", "models/tiny-rm", "models/tiny-lm-nopad"):
        tok = AutoTokenizer.from_pretrained(built_assets / folder)
        for text in texts:
            assert tok(text)["input_ids"] == reference(text)["input_ids"], (folder, text)
            assert tok.decode(tok(text)["input_ids"]) == text


@pytest.mark.slow
def test_built_assets_are_reused_and_half_built_folders_rebuilt(built_assets: Path) -> None:
    root = built_assets
    weights = root / "models" / "tiny-rm" / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    check = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cockpit.runner.assets import ensure_all\n"
        "ensure_all(Path(sys.argv[1]))\n"
        "print(sorted(m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules))\n"
    )
    cmd = [sys.executable, "-c", check, str(root)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # an up-to-date check imports nothing heavy
    assert weights.stat().st_mtime_ns == stamp

    from cockpit.runner.assets import ensure_models

    lm_weights = root / "models" / "tiny-lm" / "model.safetensors"
    original = lm_weights.read_bytes()
    (root / "models" / "tiny-lm" / demo.COMPLETE_MARKER).unlink()
    lm_weights.write_bytes(b"half written")
    folders = ensure_models(root)
    assert folders["tiny-lm"] == root / "models" / "tiny-lm"
    assert lm_weights.read_bytes() == original  # rebuilt, deterministically
    assert weights.stat().st_mtime_ns == stamp  # complete folders untouched
    assert not list((root / "models").glob(".*build*"))
