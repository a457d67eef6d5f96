"""Offline demo assets: an embedded corpus and small datasets in every format TRL trainers take.

No machine that runs cockpit's tests (or a first-time demo) can be assumed to reach a model
hub, so cockpit builds its own tiny assets under the cache. This module is the part that needs
nothing but the standard library: the corpus, the datasets, where everything lives, and the
lock and completion markers that let several processes build at once without clashing. The
tokenizer and the models are built by `cockpit.runner.assets`, which may import torch.

Everything here is deterministic: the same code writes byte-identical files, so a rebuild never
changes a dataset under a run that is reading it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.paths import cache_dir
from cockpit.run.folder import write_atomic

DEMO_VERSION = 1
"""Bump when the assets change shape; a new version builds into a fresh folder."""

DEMO_PREFIX = "demo:"
"""Preset values may name demo assets as `demo:models/tiny-lm`."""

COMPLETE_MARKER = ".complete"
"""Written last into a built folder; a folder without it is half-built and gets rebuilt."""

LOCK_NAME = ".lock"

TRAIN_ROWS = 64
TEST_ROWS = 16

MODEL_NAMES: tuple[str, ...] = ("tiny-lm", "tiny-rm", "tiny-lm-nopad")
"""Model folders under `models/`: a causal LM, a reward model, and the LM whose tokenizer has no pad."""

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


# --------------------------------------------------------------------------- where things live


def demo_dir() -> Path:
    """The versioned demo folder in the cache, so an old cockpit's assets never mix with a new one's."""
    return cache_dir() / "demo" / f"v{DEMO_VERSION}"


def demo_path(rel: str, root: Path | None = None) -> Path:
    """Resolve a demo asset such as `models/tiny-lm` (a leading `demo:` is accepted) under the demo folder.

    Refuses paths that would leave the demo folder, since preset values reach here.
    """
    base = Path(root) if root is not None else demo_dir()
    if rel.startswith(DEMO_PREFIX):
        rel = rel[len(DEMO_PREFIX) :]
    rel = rel.strip().lstrip("/")
    parts = Path(rel).parts
    if not rel or ".." in parts:
        raise CockpitError(
            f"demo asset {rel!r} is not a path inside the demo folder — use e.g. 'demo:models/tiny-lm'"
        )
    return base / rel


def data_dir(fmt: str, root: Path | None = None) -> Path:
    """The folder holding `train.jsonl` and `test.jsonl` of one format (a folder `load_dataset` accepts)."""
    if fmt not in DATA_FORMATS:
        known = ", ".join(DATA_FORMATS)
        raise CockpitError(f"no demo dataset in format {fmt!r} — choose one of: {known}")
    return (Path(root) if root is not None else demo_dir()) / "data" / fmt


def model_dir(name: str, root: Path | None = None) -> Path:
    if name not in MODEL_NAMES:
        raise CockpitError(f"no demo model {name!r} — choose one of: {', '.join(MODEL_NAMES)}")
    return (Path(root) if root is not None else demo_dir()) / "models" / name


def tokenizer_dir(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else demo_dir()) / "tokenizer"


# --------------------------------------------------------------------------- lock and markers

_held = threading.local()


@contextmanager
def demo_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on `root/.lock` while building, so two processes don't clash.

    Re-entrant within one thread (a build that holds it can call helpers that take it again);
    other threads and processes wait. Without `fcntl` (Windows) nothing is locked, which is
    acceptable for a demo cache.
    """
    root = Path(root)
    key = str(root.resolve())
    if not hasattr(_held, "counts"):
        _held.counts = {}
    counts: dict[str, int] = _held.counts
    if counts.get(key):
        counts[key] += 1
        try:
            yield
        finally:
            counts[key] -= 1
        return
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        fcntl = None  # type: ignore[assignment]
    with open(root / LOCK_NAME, "a+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        counts[key] = 1
        try:
            yield
        finally:
            counts[key] = 0
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def write_file_atomic(path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temporary file and a rename; skip if already identical.

    Returns True when the file was (re)written. Readers never see a half-written file.
    """
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return True


def mark_complete(folder: Path) -> None:
    """Write the completion marker; call it after everything else in the folder is written."""
    payload = json.dumps({"demo_version": DEMO_VERSION}, sort_keys=True) + "\n"
    write_file_atomic(Path(folder) / COMPLETE_MARKER, payload.encode())


def is_complete(folder: Path) -> bool:
    return (Path(folder) / COMPLETE_MARKER).is_file()


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


# --------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class QA:
    """One question with a correct and a wrong short answer, a full-sentence answer and a hint."""

    category: str
    question: str
    answer: str
    wrong: str
    sentence: str

    @property
    def hint(self) -> str:
        """Privileged context for self-distillation: what a teacher may see and the student may not."""
        return f"Hint: {self.sentence}"


_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                 "nineteen", "twenty"]

_COLORS = (
    ("the sky", "blue"),
    ("grass", "green"),
    ("snow", "white"),
    ("a banana", "yellow"),
    ("coal", "black"),
    ("a ripe tomato", "red"),
    ("a carrot", "orange"),
    ("a lemon", "yellow"),
    ("milk", "white"),
    ("a leaf", "green"),
    ("the night sky", "black"),
    ("a strawberry", "red"),
)

_CAPITALS = (
    ("France", "Paris"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Japan", "Tokyo"),
    ("Germany", "Berlin"),
    ("Egypt", "Cairo"),
    ("Canada", "Ottawa"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Norway", "Oslo"),
    ("Greece", "Athens"),
    ("Poland", "Warsaw"),
)

_OPPOSITES = (
    ("hot", "cold"),
    ("big", "small"),
    ("up", "down"),
    ("fast", "slow"),
    ("day", "night"),
    ("happy", "sad"),
    ("old", "new"),
    ("open", "closed"),
    ("light", "dark"),
    ("early", "late"),
    ("full", "empty"),
    ("wet", "dry"),
)

_ANIMALS = (
    ("a cow", "moo"),
    ("a dog", "woof"),
    ("a cat", "meow"),
    ("a duck", "quack"),
    ("a sheep", "baa"),
    ("a pig", "oink"),
    ("an owl", "hoot"),
    ("a snake", "hiss"),
    ("a horse", "neigh"),
    ("a bee", "buzz"),
)

_PLURALS = (
    ("cat", "cats", "cat"),
    ("mouse", "mice", "mouses"),
    ("child", "children", "childs"),
    ("foot", "feet", "foots"),
    ("tooth", "teeth", "tooths"),
    ("man", "men", "mans"),
    ("box", "boxes", "boxs"),
    ("city", "cities", "citys"),
    ("leaf", "leaves", "leafs"),
    ("dog", "dogs", "doges"),
    ("woman", "women", "womans"),
    ("goose", "geese", "gooses"),
)

_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

_NAMES = ("Anna", "Ben", "Carla", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas")

_EXTRA_SENTENCES = (
    "You are a helpful assistant.",
    "Hello! How can I help you today?",
    "Thank you, that was very helpful.",
    "Good morning. The weather is nice today.",
    "Please answer the question in one word.",
    "The cat sat on the mat and looked at the bird.",
    "Water boils at one hundred degrees.",
    "There are seven days in a week and twelve months in a year.",
    "A triangle has three sides and a square has four sides.",
    "The sun rises in the east and sets in the west.",
    "Reading a book before bed helps me sleep.",
    "She bought apples, bread and cheese at the market.",
    "Two plus two is four, and four plus four is eight.",
    "The train leaves at nine and arrives at noon.",
    "My favourite colour is green, like the grass in spring.",
    "Can you tell me the answer, please?",
    "I am not sure, but I think the answer is yes.",
    "Let me think about that for a moment.",
    "The quick brown fox jumps over the lazy dog.",
    "Small models learn quickly on small data.",
)


def _pick(options: tuple[str, ...] | list[str], key: str, avoid: str) -> str:
    """A deterministic 'random' choice from `options` that differs from `avoid`."""
    candidates = [o for o in options if o != avoid]
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return candidates[digest % len(candidates)]


def _wrong_number(correct: int, key: str) -> str:
    offsets = (1, -1, 2, -2, 3, 10)
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    for i in range(len(offsets)):
        value = correct + offsets[(digest + i) % len(offsets)]
        if value >= 0:
            return str(value)
    return str(correct + 1)


def qa_by_category() -> dict[str, list[QA]]:
    """Every question the corpus holds, grouped by kind, each group in a fixed order."""
    groups: dict[str, list[QA]] = {}

    def add(qa: QA) -> None:
        groups.setdefault(qa.category, []).append(qa)

    for a in range(10):
        for b in range(10):
            q = f"What is {a} plus {b}?"
            add(QA("plus", q, str(a + b), _wrong_number(a + b, q), f"{a} plus {b} is {a + b}."))
            if a >= b:
                q = f"What is {a} minus {b}?"
                add(QA("minus", q, str(a - b), _wrong_number(a - b, q), f"{a} minus {b} is {a - b}."))
            if a >= 1 and b >= 1:
                q = f"What is {a} times {b}?"
                add(QA("times", q, str(a * b), _wrong_number(a * b, q), f"{a} times {b} is {a * b}."))
    for n in range(20):
        q = f"What number comes after {n}?"
        add(QA("count", q, str(n + 1), _wrong_number(n + 1, q), f"After {n} comes {n + 1}."))
        q = f"How do you write {n} in words?"
        word = _NUMBER_WORDS[n]
        add(QA("words", q, word, _pick(_NUMBER_WORDS, q, word), f"{n} is written {word}."))
    all_colors = sorted({c for _, c in _COLORS})
    for thing, color in _COLORS:
        q = f"What color is {thing}?"
        add(QA("color", q, color, _pick(all_colors, q, color), f"{thing[0].upper() + thing[1:]} is {color}."))
    all_capitals = [c for _, c in _CAPITALS]
    for country, capital in _CAPITALS:
        q = f"What is the capital of {country}?"
        sentence = f"The capital of {country} is {capital}."
        add(QA("capital", q, capital, _pick(all_capitals, q, capital), sentence))
    all_opposites = [o for _, o in _OPPOSITES]
    for word, opposite in _OPPOSITES:
        q = f"What is the opposite of {word}?"
        sentence = f"The opposite of {word} is {opposite}."
        add(QA("opposite", q, opposite, _pick(all_opposites, q, opposite), sentence))
    all_sounds = [s for _, s in _ANIMALS]
    for animal, sound in _ANIMALS:
        q = f"What sound does {animal} make?"
        sentence = f"{animal[0].upper() + animal[1:]} says {sound}."
        add(QA("animal", q, sound, _pick(all_sounds, q, sound), sentence))
    for word, plural, wrong in _PLURALS:
        q = f"What is the plural of {word}?"
        add(QA("plural", q, plural, wrong, f"The plural of {word} is {plural}."))
    for i, day in enumerate(_DAYS):
        following = _DAYS[(i + 1) % 7]
        q = f"What day comes after {day}?"
        add(QA("weekday", q, following, _pick(_DAYS, q, following), f"The day after {day} is {following}."))
    for i in range(25):
        letter, following = chr(ord("A") + i), chr(ord("A") + i + 1)
        q = f"What letter comes after {letter}?"
        wrong = chr(ord("A") + (i + 2) % 26)
        add(QA("letter", q, following, wrong, f"After {letter} comes {following}."))
    for name in _NAMES:
        add(QA("greeting", f"Say hello to {name}.", f"Hello, {name}!", f"Goodbye, {name}!",
               f"To greet {name}, say: Hello, {name}!"))
        add(QA("greeting", f"Say goodbye to {name}.", f"Goodbye, {name}!", f"Hello, {name}!",
               f"To part from {name}, say: Goodbye, {name}!"))
    return groups


def _stable_order(items: list[QA]) -> list[QA]:
    """A fixed pseudo-random order that does not depend on Python's `random` implementation."""
    return sorted(items, key=lambda qa: hashlib.sha256(qa.question.encode()).hexdigest())


def qa_rows(count: int = TRAIN_ROWS + TEST_ROWS) -> list[QA]:
    """The questions the datasets use: categories interleaved so any slice mixes every kind."""
    groups = {name: _stable_order(items) for name, items in sorted(qa_by_category().items())}
    rows: list[QA] = []
    depth = 0
    while len(rows) < count:
        added = False
        for items in groups.values():
            if depth < len(items) and len(rows) < count:
                rows.append(items[depth])
                added = True
        if not added:
            break
        depth += 1
    return rows


def corpus_lines() -> list[str]:
    """Text the tokenizer is trained on: every question, answer and sentence in the prompt styles used."""
    lines: list[str] = list(_EXTRA_SENTENCES)
    for items in qa_by_category().values():
        for qa in items:
            lines.append(f"Question: {qa.question}\nAnswer: {qa.answer}")
            lines.append(qa.sentence)
            lines.append(qa.hint)
            lines.append(qa.wrong)
            # Chat turns as the ChatML template lays them out after `<|im_start|>`, so role
            # names and line-initial words become whole tokens.
            lines.append(f"user\n{qa.question}")
            lines.append(f"assistant\n{qa.answer}")
    lines.append("system\nYou are a helpful assistant.")
    return lines


# --------------------------------------------------------------------------- the datasets


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
    rows = qa_rows()
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
