"""The demo's corpus: a few hundred short questions (sums, capitals, colours, plurals, ...), each
with a right and a wrong answer, a full sentence and a hint, in a fixed order.

The datasets (`demo.datasets`) are cut from it and the demo tokenizer is trained on it. Nothing
here is random: the same code gives the same questions in the same order on every machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


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


def qa_rows(count: int) -> list[QA]:
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
