"""A metric panel's legend: what each series is called and where the names go (the top
border when they fit, else rows above the plot, never on the data)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.color import Color
from rich.style import Style
from rich.text import Text


def legend_names(series: Sequence[tuple[str, str]], *, multi: bool,
                 short: bool = False, runs: Sequence[str] = ()) -> list[str]:
    """What the legend calls each (source label, key): the key, and in an overlay the run
    first (only the run when the panel draws one key). `short` drops what all the panel's
    names share (`rewards/format_reward_fn/mean` -> `format`, two runs `trl_grpo_a` and
    `trl_grpo_b` -> `a` and `b`), for when the full names do not fit; a run's name is
    shortened among `runs` (every run of the compare) when given, so a panel that draws one
    run's keys still calls it `dpo_…`, not `trl_dpo_…`."""
    keys = list(dict.fromkeys(key for _, key in series))
    runs = list(dict.fromkeys([*runs, *(label for label, _ in series)]))
    key_name = dict(zip(keys, distinguishing(keys) if short else keys, strict=False))
    run_name = dict(zip(runs, distinguishing(runs) if short else runs, strict=False))
    if not multi:
        return [key_name[key] for _, key in series]
    if len(keys) == 1:
        return [run_name[label] for label, _ in series]
    if short:  # each run's keys shortened among themselves: runs name their functions differently
        per_run = {label: [key for lab, key in series if lab == label] for label in runs}
        run_keys = {label: dict(zip(ks, distinguishing(ks), strict=True)) for label, ks in per_run.items()}
        return [f"{run_name[label]}: {run_keys[label][key]}" for label, key in series]
    return [f"{run_name[label]}: {key_name[key]}" for label, key in series]


_WORD = re.compile(r"[^/_\-:. ]+")


def distinguishing(names: Sequence[str]) -> list[str]:
    """Names without the leading and trailing words (split at / _ - : . and spaces) that all
    of them share; single-word names are left as they are. Unchanged when that would make two
    names equal."""
    spans = {n: [m.span() for m in _WORD.finditer(n)] for n in names}
    split = [n for n in names if len(spans[n]) > 1]
    if len(split) < 2:
        return list(names)
    words = [[n[a:b] for a, b in spans[n]] for n in split]
    head = 0
    while all(len(w) > head + 1 for w in words) and len({w[head] for w in words}) == 1:
        head += 1
    tail = 0
    while all(len(w) > head + tail + 1 for w in words) \
            and len({w[-1 - tail] for w in words}) == 1:
        tail += 1
    out = []
    for n in names:
        sp = spans[n]
        if n not in split:
            out.append(n)
        else:
            out.append(n[sp[head][0]: sp[len(sp) - 1 - tail][1]])
    return out if len(set(out)) == len(out) else list(names)


LEGEND_MARK = "━ "
DOTTED_MARK = "┅ "
"""The legend's mark of a dotted series (an eval twin, in its train series' colour)."""
LEGEND_GAP = " "
LEGEND_MIN_LABEL = 10
LEGEND_MIN_BORDER_LABEL = 8


@dataclass
class Legend:
    """Where a panel's legend goes: after the title in the top border when it fits there,
    else in rows above the plot; never on the plot."""

    in_border: Text | None = None
    rows: list[Text] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    """The label shown for each series, in order (fewer than the series: "+N more")."""


def place_legend(full: Sequence[str], short: Sequence[str], colors: Sequence[tuple[int, int, int]],
                 *, width: int, max_rows: int, border_room: int, dotted: Sequence[bool] = ()) -> Legend:
    """The roomiest place that holds every label, trying full names before short ones: the
    border, then rows; then shortened labels (both ends kept) in the border, then in rows,
    the last row saying how many did not fit."""
    if not full:
        return Legend()
    for names in (full, short):
        if _line_width(names) <= border_room:
            return Legend(in_border=_legend_line(names, range(len(names)), colors, dotted), shown=list(names))
    fitting = [names for names in (full, short)
               if max(cell_len(n) for n in names) + len(LEGEND_MARK) <= width
               and len(_wrap(names, width)) <= max_rows]
    if fitting:  # the one in fewer rows; full names when equal
        names = min(fitting, key=lambda n: len(_wrap(n, width)))
        return Legend(rows=[_legend_line(names, row, colors, dotted) for row in _wrap(names, width)],
                      shown=list(names))
    cap = max(cell_len(n) for n in short)
    while cap > max(LEGEND_MIN_BORDER_LABEL, _min_label(short)):
        cap -= 1
        names = elide_all(short, cap)
        if _line_width(names) <= border_room:
            return Legend(in_border=_legend_line(names, range(len(names)), colors, dotted), shown=names)
    rows, names = legend_rows(short, colors, width, max_rows, dotted)
    return Legend(rows=rows, shown=names)


def _line_width(names: Sequence[str]) -> int:
    return sum(len(LEGEND_MARK) + cell_len(n) for n in names) + len(LEGEND_GAP) * (len(names) - 1)


def _legend_line(names: Sequence[str], which: Sequence[int] | range,
                 colors: Sequence[tuple[int, int, int]], dotted: Sequence[bool] = ()) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for n, i in enumerate(which):
        if n:
            text.append(LEGEND_GAP)
        mark = DOTTED_MARK if i < len(dotted) and dotted[i] else LEGEND_MARK
        text.append(mark + names[i], Style(color=Color.from_rgb(*colors[i])))
    return text


def cells_head(text: str, width: int) -> str:
    """The start of `text` that fits `width` terminal cells (a wide character takes two)."""
    out, used = [], 0
    for ch in text:
        used += cell_len(ch)
        if used > width:
            break
        out.append(ch)
    return "".join(out)


def cells_tail(text: str, width: int) -> str:
    """The end of `text` that fits `width` terminal cells."""
    return cells_head(text[::-1], width)[::-1]


def elide(text: str, width: int) -> str:
    """Both ends of a long label: run names differ at the start, keys at the end. Widths are
    terminal cells: an emoji in a key takes two."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return cells_head(text, width)
    left = (width - 1) // 2
    return cells_head(text, left) + "…" + cells_tail(text, width - 1 - left)


def elide_all(names: Sequence[str], width: int) -> list[str]:
    """Labels cut to `width` cells each. `run: key` labels (an overlay) are cut alike once one
    is too long: every run to the same first letters, then the key's start, so the runs still
    line up (`mod:diversity`, `mod:format`, `leg:reward`)."""
    if all(cell_len(n) <= width for n in names):
        return list(names)
    pairs = [n.partition(": ") for n in names]
    if width < 6 or not all(sep for _, sep, _ in pairs):
        return _unique_cuts(names, width)
    runs = word_prefixes([run for run, _, _ in pairs])
    if max(cell_len(r) for r in runs.values()) > width - 1 - MIN_KEY_CELLS:
        run_w = max(2, width // 3)
        runs = {run: word_head(run, run_w) for run, _, _ in pairs}
    out = []
    for run, _, key in pairs:
        head = runs[run]
        key_w = width - cell_len(head) - 1
        out.append(f"{head}:{key if cell_len(key) <= key_w else cells_head(key, key_w - 1) + '…'}")
    return out if len(set(out)) == len(set(names)) else _unique_cuts(names, width)


def _min_label(names: Sequence[str]) -> int:
    """The narrowest a label is cut to: in an overlay, room for each run's first words and
    a few cells of the key (fewer labels shown, with "+N more", rather than `113:re…`)."""
    pairs = [n.partition(": ") for n in names]
    if not names or not all(sep for _, sep, _ in pairs):
        return 0
    runs = word_prefixes([run for run, _, _ in pairs])
    return max(cell_len(r) for r in runs.values()) + 1 + MIN_KEY_CELLS + 1


MIN_KEY_CELLS = 4
"""The fewest cells a cut label leaves the key after the run's name (`1134:corr…`)."""


def word_prefixes(names: Sequence[str]) -> dict[str, str]:
    """Each name's first whole words, as few as keep the names apart (`1134_steps_noisy` and
    `modern_multireward` -> `1134` and `modern`): a run's name is cut after a word, never in one."""
    spans = {n: [m.end() for m in _WORD.finditer(n)] or [len(n)] for n in names}
    for k in range(1, max(len(ends) for ends in spans.values()) + 1):
        heads = {n: n[: ends[min(k, len(ends)) - 1]] for n, ends in spans.items()}
        if len(set(heads.values())) == len(heads):
            return heads
    return {n: n for n in names}


def _unique_cuts(names: Sequence[str], width: int) -> list[str]:
    """Each name cut to `width` cells, both ends kept, or else its start, or else its end: the
    first way that keeps different names different (`rewards/…ward_func` twice said nothing)."""
    ways = (elide, lambda t, w: t if cell_len(t) <= w else cells_head(t, w - 1) + "…",
            lambda t, w: t if cell_len(t) <= w else "…" + cells_tail(t, w - 1))
    for cut in ways:
        out = [cut(n, width) for n in names]
        if len(set(out)) == len(set(names)):
            return out
    return [elide(n, width) for n in names]


def word_head(text: str, width: int) -> str:
    """The start of a run name that fits `width` cells, cut after a whole word when one ends in
    it (`sft-2026-11-28`, not `sft-2026-1`)."""
    if cell_len(text) <= width:
        return text
    head = cells_head(text, width)
    ends = [m.end() for m in _WORD.finditer(head) if m.end() < len(head) or not text[m.end():m.end() + 1].isalnum()]
    return head[:ends[-1]] if ends and ends[-1] >= 2 else head


def legend_rows(names: Sequence[str], colors: Sequence[tuple[int, int, int]], width: int,
                max_rows: int, dotted: Sequence[bool] = ()) -> tuple[list[Text], list[str]]:
    """At most `max_rows` rows of `width` cells: labels are shortened (both ends kept) until
    every one fits; when even short ones do not, the last row says how many more there are.
    Returns the rows and the label shown for each item shown."""
    if not names or max_rows <= 0 or width <= len(LEGEND_MARK) + 1:
        return [], []
    cap = min(max(cell_len(n) for n in names), width - len(LEGEND_MARK))
    least = min(cap, max(LEGEND_MIN_LABEL, _min_label(names)))
    while True:
        rows = _wrap(elide_all(names, cap), width)
        if len(rows) <= max_rows or cap <= least:
            break
        cap = max(least, cap - max(1, cap // 8))
    labels = elide_all(names, cap)
    more = ""
    if len(rows) > max_rows:  # not all fit: keep what does and say how many are left
        rows = rows[:max_rows]
        while True:
            shown = sum(len(r) for r in rows)
            more = f"+{len(names) - shown} more"
            last = rows[-1]
            if not last or _line_width([labels[i] for i in last]) + len(LEGEND_GAP) + len(more) <= width:
                break
            last.pop()
        labels = labels[:shown]
    out = [_legend_line(labels, row, colors, dotted) for row in rows]
    if more:
        out[-1].append((LEGEND_GAP if rows[-1] else "") + more, "dim")
    return out, labels


def _wrap(labels: Sequence[str], width: int) -> list[list[int]]:
    """Item indexes per row, greedily, each item `━ label`, items a gap apart."""
    rows: list[list[int]] = [[]]
    used = 0
    for i, label in enumerate(labels):
        w = len(LEGEND_MARK) + cell_len(label)
        if rows[-1] and used + len(LEGEND_GAP) + w > width:
            rows.append([])
            used = 0
        used += (len(LEGEND_GAP) if rows[-1] else 0) + w
        rows[-1].append(i)
    return rows
