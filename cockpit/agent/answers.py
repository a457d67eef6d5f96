"""What an answer may hold: bounded in size, said when cut, numbers as numbers, no control
characters, no secrets.

Every tool's answer goes through `bound` last. Strings lose every control character but newline
and tab (an answer is read by a program that may print it: no escape sequence from a model's
output or a logged key gets through) and are cut at `MAX_TEXT` characters; JSON has no NaN, so a
non-finite number the run logged is the string "nan", "inf" or "-inf" (everything else that is a
number stays a number); and an answer still over `MAX_BYTES` has its biggest lists halved until
it fits, each cut named in `cut`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

MAX_BYTES = 48_000
"""An answer's most bytes of JSON (~12k tokens): room for an agent's context, whatever the run."""
MAX_TEXT = 4_000
"""A string's most characters (a completion, a prompt, a reason)."""
_ROOM = MAX_TEXT + 64
"""What `clean` lets through: a string a tool cut at MAX_TEXT, with its "[cut: …]" note."""

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")
"""`text.printable`'s set: control characters but tab and newline, and the Unicode ones that
reorder text. Here they are dropped, not shown as `·`: the reader is a program."""


def number(v: Any) -> Any:
    """A float as JSON can hold it: itself, or "nan"/"inf"/"-inf"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def text(s: Any, limit: int = MAX_TEXT) -> str:
    """`s` as clean text, cut at `limit` characters with how long it was."""
    s = _CONTROL.sub("", s if isinstance(s, str) else str(s))
    if len(s) > limit:
        return f"{s[:limit]}… [cut: {len(s):,} characters]"
    return s


def clean(obj: Any, limit: int = _ROOM) -> Any:
    """A copy of `obj` that JSON holds exactly: text cleaned and cut, numbers kept (numpy's too),
    keys as clean strings; anything else as its text."""
    if obj is None or isinstance(obj, bool | int):
        return obj
    if isinstance(obj, float):
        return number(obj)
    if isinstance(obj, str):
        return text(obj, limit)
    if isinstance(obj, dict):
        return {text(k, 200): clean(v, limit) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v, limit) for v in obj]
    item = getattr(obj, "item", None)  # numpy scalars
    if callable(item):
        try:
            return clean(item(), limit)
        except (TypeError, ValueError):
            pass
    return text(obj, limit)


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def bound(doc: dict[str, Any], limit: int = MAX_BYTES) -> dict[str, Any]:
    """`doc` cleaned, and cut until its JSON fits `limit` bytes: the list holding the most bytes is
    halved, again and again (a list of one item has its strings cut instead). Each cut is named in
    `doc["cut"]` (with any the tool made itself), so the reader knows the answer is not whole."""
    doc = clean(doc)
    size = len(dumps(doc))
    cuts: list[str] = list(doc.get("cut") or []) if isinstance(doc.get("cut"), list) else []
    tries = 0
    while size > limit and tries < 200:
        tries += 1
        where, biggest = _biggest_list(doc, "")
        if biggest is None or len(biggest) < 2:
            doc = clean(doc, max(200, MAX_TEXT // (2 ** tries)))
            cuts.append(f"text cut to {max(200, MAX_TEXT // (2 ** tries))} characters")
        else:
            before = len(biggest)
            del biggest[max(1, before // 2):]
            cuts.append(f"{where or 'the list'}: {len(biggest)} of {before} kept")
        size = len(dumps(doc))
    if cuts:
        doc["cut"] = _merge_cuts(cuts)
    else:
        doc.pop("cut", None)  # present only when something was left out
    return doc


def _merge_cuts(cuts: list[str]) -> list[str]:
    """One note a list: the last word on it (how many of the first length are kept)."""
    firsts: dict[str, str] = {}
    lasts: dict[str, str] = {}
    for c in cuts:
        where, sep, rest = c.rpartition(": ")
        if not sep or " of " not in rest:
            lasts[c] = c
            continue
        kept, _, total = rest.removesuffix(" kept").partition(" of ")
        firsts.setdefault(where, total)
        lasts[where] = f"{where}: {kept} of {firsts[where]} kept"
    return list(lasts.values())


def _biggest_list(obj: Any, where: str) -> tuple[str, list[Any] | None]:
    """The list (anywhere in `obj`) whose JSON is longest, and where it is."""
    best: tuple[int, str, list[Any] | None] = (-1, "", None)
    stack: list[tuple[Any, str]] = [(obj, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, f"{at}.{k}" if at else str(k)) for k, v in node.items() if k != "cut")
        elif isinstance(node, list):
            if len(node) > 1:
                size = len(dumps(node))
                if size > best[0]:
                    best = (size, at, node)
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(node))
    return best[1], best[2]


def limited(items: list[Any], most: int, what: str, cut: list[str]) -> list[Any]:
    """The first `most` of `items`; the cut named in `cut` when there were more."""
    if len(items) > most:
        cut.append(f"{what}: {most} of {len(items)} kept")
        return items[:most]
    return items
