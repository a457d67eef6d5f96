"""Logged dicts to value columns, many at once (a journal poll, a trainer_state.json log).

Dicts with the same keys in the same order (nearly all of them, in a real log) are read as
one block with one numpy conversion instead of a Python step per value. The result is, per
set of rows, the columns of the keys logged in exactly those rows: the store keeps such keys
in one row group.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cockpit.metrics.store.values import to_float

NOT_SERIES = frozenset({"step", "epoch", "summary"})
"""Keys of a metrics record's data that are not metric series."""

Fragments = dict[str, list[tuple[np.ndarray, np.ndarray]]]
"""key -> [(row positions, values there)]"""


def blocks_of(dicts: Sequence[Mapping[str, Any]], positions: np.ndarray | None,
              groups: tuple[Sequence[int], Mapping[int, tuple]] | None) -> list[tuple[tuple, np.ndarray]]:
    """(keys, row positions) of each set of dicts that share their keys, in order.

    `positions` (sorted) limits it to those rows; `groups` (a group id per dict and each
    group's keys, as the trainer_state.json parser finds them) saves finding them again."""
    ids: Sequence[int]
    if groups is None:
        first_of: dict[tuple, int] = {}
        ids = list(map(first_of.setdefault, map(tuple, dicts), itertools.count()))
        keys_of: Mapping[int, tuple] = {gid: sig for sig, gid in first_of.items()}
    else:
        ids, keys_of = groups
    if len(keys_of) == 1:
        every = positions if positions is not None else np.arange(len(dicts), dtype=np.int64)
        return [(next(iter(keys_of.values())), every)]
    ids_arr = np.array(ids, dtype=np.int64)
    if positions is not None:
        ids_arr = ids_arr[positions]
    order = np.argsort(ids_arr, kind="stable")
    cuts = np.flatnonzero(np.diff(ids_arr[order])) + 1
    out = []
    for part in np.split(order, cuts):
        if len(part):
            idx = positions[part] if positions is not None else part
            out.append((keys_of[int(ids_arr[part[0]])], idx))
    return out


Block = tuple[tuple, np.ndarray, "np.ndarray | None"]
"""(keys, row positions, their `value_table` when read already) of dicts sharing their keys."""


def read_blocks(dicts: Sequence[dict[str, Any]], blocks: Sequence[Block]) -> Fragments:
    """Every numeric value of the blocks' rows, as (positions, values) per key."""
    fragments: Fragments = {}
    n_all = len(dicts)
    for sig, idx, table in blocks:
        if all(k in NOT_SERIES for k in sig) or not len(idx):
            continue
        rows: Sequence[dict[str, Any]] = \
            [] if table is not None else dicts if len(idx) == n_all else [dicts[i] for i in idx.tolist()]
        read_block(sig, rows, idx, fragments, table)
    return fragments


def logged_together(fragments: Fragments) -> list[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Keys read from exactly the same rows, with those rows: each becomes rows of one group.

    A key read from several blocks (the same key in dicts of different shapes) has its parts
    merged in row order."""
    by_rows: dict[tuple[int, ...], list[str]] = {}
    for key, parts in fragments.items():
        by_rows.setdefault(tuple(id(p[0]) for p in parts), []).append(key)
    out = []
    for keys in by_rows.values():
        parts0 = fragments[keys[0]]
        if len(parts0) == 1:
            out.append((parts0[0][0], {k: fragments[k][0][1] for k in keys}))
            continue
        idx = np.concatenate([p[0] for p in parts0])
        order = np.argsort(idx, kind="stable")
        out.append((idx[order], {k: np.concatenate([p[1] for p in fragments[k]])[order] for k in keys}))
    return out


_NUMERIC_OR_TEXT = frozenset({float, int, str})


def value_table(sig: tuple, rows: Sequence[dict[str, Any]]) -> np.ndarray | None:
    """(rows × keys) float64 of dicts that share their keys, in the order of `sig`, when every
    value is a number or a numeric string (numpy parses those exactly as float() does);
    None otherwise (then read column by column).

    One flat conversion, no pass over the values' types first: numpy also takes None (as
    NaN) and bools (as 1.0 and 0.0), which are not metrics, so only the cells that came out
    NaN, 0 or 1 have their type looked at."""
    n, width = len(rows), len(sig)
    try:
        flat = np.fromiter(itertools.chain.from_iterable(map(dict.values, rows)),
                           dtype=np.float64, count=n * width)
    except (ValueError, OverflowError, TypeError):  # text, nested dicts, lists, not dicts
        return None
    table = flat.reshape(n, width)
    suspect = np.isnan(table)
    suspect |= table == 0.0
    suspect |= table == 1.0
    count = suspect.sum(axis=0)
    few = [j for j in np.flatnonzero(count).tolist() if count[j] <= n // 8]
    many = [sig[j] for j in np.flatnonzero(count > n // 8).tolist()]
    kinds: set[type] = set()
    for j in few:
        key = sig[j]
        kinds.update(type(rows[i][key]) for i in np.flatnonzero(suspect[:, j]).tolist())
    if len(many) == 1:  # columns where most cells are suspect: every value, in one pass
        kinds.update(map(type, map(operator.itemgetter(many[0]), rows)))
    elif many:
        kinds.update(map(type, itertools.chain.from_iterable(map(operator.itemgetter(*many), rows))))
    return table if kinds <= _NUMERIC_OR_TEXT else None


def read_block(sig: tuple, rows: Sequence[dict[str, Any]], idx: np.ndarray,
               fragments: Fragments, table: np.ndarray | None = None) -> None:
    """Rows that share their keys, in the order of `sig`: their value table when every value
    is numeric (`table`, when the caller read it already), else column by column."""
    cols = [(j, k if type(k) is str else str(k)) for j, k in enumerate(sig) if k not in NOT_SERIES]
    if table is None:
        table = value_table(sig, rows)
    if table is not None:
        for j, name in cols:
            fragments.setdefault(name, []).append((idx, table[:, j]))
        return
    for j, name in cols:
        key = sig[j]
        col = [row[key] for row in rows]
        if set(map(type, col)) <= _NUMERIC_OR_TEXT:
            try:
                values = np.array(col, dtype=np.float64)
            except (ValueError, OverflowError, TypeError):
                pass
            else:
                fragments.setdefault(name, []).append((idx, values))
                continue
        _slow_column(name, col, idx, fragments)


def _slow_column(key: str, col: list[Any], idx: np.ndarray, fragments: Fragments) -> None:
    """A column with non-numeric strings, nulls, bools or nested dicts: value by value."""
    out_idx: dict[str, list[int]] = {}
    out_val: dict[str, list[float]] = {}
    for i, value in zip(idx.tolist(), col, strict=False):
        f = to_float(value)
        if f is not None:
            out_idx.setdefault(key, []).append(i)
            out_val.setdefault(key, []).append(f)
        elif isinstance(value, dict):
            for sub, inner in value.items():
                g = to_float(inner)
                if g is not None:
                    name = f"{key}/{sub}"
                    out_idx.setdefault(name, []).append(i)
                    out_val.setdefault(name, []).append(g)
    for name, ids in out_idx.items():
        fragments.setdefault(name, []).append(
            (np.array(ids, dtype=np.int64), np.array(out_val[name], dtype=np.float64)))
