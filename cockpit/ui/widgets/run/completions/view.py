"""What the completions tab shows of one step, without Textual: columns, filter, search, sort,
groups of generations. The pane and its tables only draw what this returns, and the tests can
check the rules without a terminal.

The filter box takes words: `acc>0.5` (also `>=`, `<`, `<=`, `=`, `!=`) keeps rows whose column
compares so, `advantage<0` works the same, anything else is searched for in the prompt and the
completion (case-insensitive; quote a phrase: `"the answer"`). Every word must hold.
"""

from __future__ import annotations

import math
import operator
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

ADVANTAGE = "advantage"
_COMPARE = re.compile(r"^(?P<name>[^<>=!]+?)\s*(?P<op>>=|<=|!=|==|=|>|<)\s*(?P<value>\S*)$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "=": operator.eq, "==": operator.eq, "!=": operator.ne,
}


@dataclass(frozen=True)
class Column:
    """A column of the table: where its value comes from and whether it is a number."""

    name: str
    kind: str  # "sum" | "reward" | "advantage" | "extra"
    numeric: bool = True

    def value(self, row: dict[str, Any]) -> Any:
        if self.kind == "sum":
            values = [v for v in row["rewards"].values() if isinstance(v, (int, float)) and not math.isnan(v)]
            return sum(values) if values else None
        if self.kind == "reward":
            return row["rewards"].get(self.name)
        if self.kind == "advantage":
            return row.get("advantage")
        return (row.get("extra") or {}).get(self.name)

    def number(self, row: dict[str, Any]) -> float | None:
        """The value as a float, None when it has none (NaN counts as none for sorting and
        comparing: a reward function that returned None)."""
        v = self.value(row)
        if isinstance(v, bool):
            return float(v)
        if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
            return float(v)
        return None


SUM = "sum"
"""The column of a row's rewards added up (the reward functions' sum, unweighted: as TRL totals
them with the default reward_weights), first when a step has two reward functions or more."""


def columns_of(rows: Sequence[dict[str, Any]]) -> list[Column]:
    """With two reward functions or more, their sum first (what the run is after); the reward
    columns in the order the rows name them, the advantage when any row has one, then whatever
    else reward functions logged (`extra`, numbers before texts): new columns show up by themselves."""
    rewards = dict.fromkeys(n for r in rows for n in r["rewards"])
    out = [Column(SUM, "sum")] if len(rewards) > 1 and SUM not in rewards else []
    out += [Column(n, "reward") for n in rewards]
    if any(r.get("advantage") is not None for r in rows):
        out.append(Column(ADVANTAGE, "advantage"))
    extras: dict[str, bool] = {}
    for r in rows:
        for k, v in (r.get("extra") or {}).items():
            if k in rewards or k in (ADVANTAGE, SUM):
                continue
            number = isinstance(v, (int, float)) or v is None
            extras[k] = extras.get(k, True) and number
    # Numbers before texts: a DPO sample's margin and log-probs before its chosen/rejected texts,
    # so a narrow table shows the scores (the texts are in the detail).
    out += [Column(k, "extra", True) for k, numeric in extras.items() if numeric]
    out += [Column(k, "extra", False) for k, numeric in extras.items() if not numeric]
    return out


def filter_hint(columns: Sequence[Column]) -> str:
    """The filter box's placeholder for what this step's rows hold: a comparison on its own
    first score column (`sum>1`, `accuracy_reward>0.5`) where it has scores, else text only
    (SFT/DPO samples carry no scores)."""
    numeric = [c for c in columns if c.numeric]
    words = [f"{numeric[0].name}>0.5"] if numeric else []
    if any(c.kind == "advantage" for c in columns):
        words.append("adv<0")
    return "  ".join([*words, '"some text"'] if words else ['"some text" (text only: no scores)'])


@dataclass
class Query:
    """The filter box's words, parsed: comparisons on columns and text to search for."""

    text: str = ""
    comparisons: list[tuple[str, str, float]] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    unfinished: list[tuple[str, str, str]] = field(default_factory=list)
    """Words shaped like a comparison without a number (`acc>`, `reward>abc`): (word, name,
    operator). Searched for as text; when the name is a column's, `problems` says what is wrong."""

    @classmethod
    def parse(cls, text: str) -> Query:
        try:
            words = shlex.split(text)
        except ValueError:  # an unclosed quote while typing: words as they are
            words = text.replace('"', " ").replace("'", " ").split()
        q = cls(text)
        for word in words:
            m = _COMPARE.match(word)
            value = _number(m.group("value")) if m else None
            if m and value is not None:
                q.comparisons.append((m.group("name").strip(), m.group("op"), value))
            else:
                if m:
                    q.unfinished.append((word, m.group("name").strip(), m.group("op")))
                q.terms.append(word.lower())
        return q

    def __bool__(self) -> bool:
        return bool(self.comparisons or self.terms)

    def problems(self, columns: Sequence[Column]) -> list[str]:
        """Comparisons naming no column of this step, said in words (they keep no row)."""
        names = [c.name for c in columns if c.numeric]
        out = []
        for name, _, _ in self.comparisons:
            if _find(columns, name) is not None:
                continue
            starting = [c.name for c in columns if c.name.lower().startswith(name.lower())]
            if len(starting) > 1:
                out.append(f"{name!r} could be {' or '.join(starting)}")
            else:
                have = ", ".join(names) if names else "none at this step"
                out.append(f"no column {name!r} (numeric ones: {have})")
        for word, name, op in self.unfinished:
            col = _find(columns, name)
            if col is None and not any(c.name.lower().startswith(name.lower()) for c in columns):
                continue  # text with a `>` in it, searched for as it is
            example = f"{col.name if col is not None else name}{op}0.5"
            out.append(f"{word!r}: put a number after {op}, e.g. {example}")
        return out

    def keeps(self, row: dict[str, Any], columns: Sequence[Column]) -> bool:
        for name, op, value in self.comparisons:
            col = _find(columns, name)
            got = col.number(row) if col is not None else None
            if got is None or not _OPS[op](got, value):
                return False
        if self.terms:
            haystack = f"{row['prompt']}\n{row['completion']}".lower()
            if not all(t in haystack for t in self.terms):
                return False
        return True


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _find(columns: Sequence[Column], name: str) -> Column | None:
    """A column by its name, any case, or by a start only it has (`acc` for accuracy_reward,
    `adv` for the advantage)."""
    low = name.lower()
    for c in columns:
        if c.name.lower() == low:
            return c
    starting = [c for c in columns if c.name.lower().startswith(low)]
    return starting[0] if len(starting) == 1 else None


@dataclass(frozen=True)
class Browse:
    """Where the completions browser stands: what the user chose, nothing drawn. The pane holds
    one in a reactive; a change is a new one (`dataclasses.replace`), and redraws what it changes."""

    step: int | None = None
    """The step shown; None follows the newest."""
    pinned: int | None = None
    """The step shown beside it, or None."""
    search: Query = field(default_factory=Query)
    """The filter box's words, parsed."""
    sort: str | None = None
    """The column rows are sorted by, or None for the order they were logged in."""
    descending: bool = True
    grouped: bool = False
    """The generations of each prompt together."""
    prompt: str | None = None
    """The prompt followed across steps, or None."""
    seeking: int = 0
    """-1/1 while a worker looks for the followed prompt in older/newer steps."""
    paused: bool = False
    """Following stopped by a zoom (not a scrub): the title says so, End resumes."""


@dataclass
class Shown:
    """One step as the table shows it: rows in order, each with its group (prompt) number."""

    rows: list[dict[str, Any]]
    groups: list[int]
    """The group (0-based, in order of first appearance) of each shown row."""
    group_sizes: dict[int, int]
    total: int
    """Rows the step has before the filter."""
    columns: list[Column]
    problems: list[str]


def arrange(rows: Sequence[dict[str, Any]], *, query: Query | None = None, sort: str | None = None,
            descending: bool = True, grouped: bool = False, prompt: str | None = None) -> Shown:
    """Filter, search, sort and group one step's rows.

    `prompt` keeps only that prompt's generations (following one prompt across steps). Sorting
    puts rows without a value last whichever the direction. Grouped, the groups stay together:
    in order of first appearance, or by the mean of the sort column, and sorted inside.
    """
    columns = columns_of(rows)
    query = query or Query()
    group_of: dict[str, int] = {}
    for r in rows:
        group_of.setdefault(r["prompt"], len(group_of))
    kept = [r for r in rows if (prompt is None or r["prompt"] == prompt) and query.keeps(r, columns)]
    col = _find(columns, sort) if sort else None

    def key(r: dict[str, Any]) -> tuple[bool, float]:
        v = col.number(r) if col is not None else None
        return (v is None, (-v if descending else v) if v is not None else 0.0)

    if col is not None:
        kept.sort(key=key)
    if grouped:
        members: dict[int, list[dict[str, Any]]] = {}
        for r in kept:
            members.setdefault(group_of[r["prompt"]], []).append(r)
        order = list(members)
        if col is not None:
            def group_key(g: int) -> tuple[bool, float]:
                values = [v for v in (col.number(r) for r in members[g]) if v is not None]
                if not values:
                    return (True, 0.0)
                mean = sum(values) / len(values)
                return (False, -mean if descending else mean)
            order.sort(key=group_key)
        else:
            order.sort()
        kept = [r for g in order for r in members[g]]
    groups = [group_of[r["prompt"]] for r in kept]
    sizes: dict[int, int] = {}
    for r in rows:
        g = group_of[r["prompt"]]
        sizes[g] = sizes.get(g, 0) + 1
    return Shown(kept, groups, sizes, len(rows), columns, query.problems(columns))


def sortable(columns: Sequence[Column]) -> list[str]:
    """What `o` cycles through: the advantage first (what GRPO ranks by), then each reward, then
    numeric extras."""
    adv = [c.name for c in columns if c.kind == "advantage"]
    return adv + [c.name for c in columns if c.kind != "advantage" and c.numeric]
