"""trainer_state.json → the same journal records the live callback writes.

transformers writes `trainer_state.json` into every `checkpoint-N/` (and at the
output root on `save_state()`), non-atomically, with `json.dumps(...,
sort_keys=True)`. Its `log_history` is the list of every dict the trainer
logged. Replay reads it into the same `Record`s and the same `MetricStore` the
live view uses, so one set of widgets serves both.

Real files are messier than the format suggests (see
tests/fixtures/trainer_states/PROVENANCE.md), so the parser is tolerant:

- bare `NaN` / `Infinity` literals (DPO NaN grad norms), a UTF-8 BOM;
- values as strings ("0.5" → 0.5, non-numeric strings dropped), bools and
  nulls dropped (GRPO logs None for a reward with no valid sample), one level
  of nested dicts flattened to "a/b" keys, anything deeper skipped;
- an entry without a step gets the previous step + 1 (and a warning);
- train and eval entries share a step: both are kept (`metrics` and `eval`
  records); an entry that mixes both is split;
- the final summary entry (the one with `train_runtime`; also `train_loss`,
  `total_flos`, ...) becomes a `metrics` record with `data["summary"] = True`;
- a step that repeats or goes back is what a resumed run looks like: the
  log is rewound to that step (every key's later points dropped) and within one
  step the last value of each key wins — the same rule `MetricStore` applies
  to a live journal, so replay and live agree.

What it refuses, with a one-line `CockpitError` naming the file: an empty or
cut-off file (transformers writes it non-atomically, so a crash mid-save
leaves half a file), something that is not JSON, or a `log_history` that is not
a list.

Parsing keeps the log entries as parsed dicts and builds `Record`s only when
asked (`ParsedState.records`); `MetricStore.from_trainer_state` reads the
entries column by column instead, which is what makes a 100k-entry file load
in a fraction of a second.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from cockpit.errors import CockpitError
from cockpit.files import QuotedLiterals
from cockpit.metrics.store.ingest import blocks_of, value_table
from cockpit.metrics.store.values import (
    NON_METRIC_KEYS,
    is_summary,
    metric_values,
    surviving,
    to_float,
    to_int,
)
from cockpit.run import journal

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

# Entry categories.
TRAIN = "train"
EVAL = "eval"
SUMMARY = "summary"
MIXED = "mixed"  # train and eval keys in one entry: split into two records

_INT64_MAX = 2**63 - 1  # a missing step after this one cannot be the previous + 1
_INCOMPLETE_HINT = ("half-written? transformers writes it non-atomically; "
                    "try the previous checkpoint")


def categorize(keys: Iterable[str]) -> str:
    """TRAIN, EVAL, SUMMARY or MIXED for an entry with these keys."""
    keys = list(keys)
    if is_summary(keys):
        return SUMMARY
    n_eval = sum(1 for k in keys if isinstance(k, str) and k.startswith("eval_"))
    if not n_eval:
        return TRAIN
    n_other = sum(1 for k in keys if k not in NON_METRIC_KEYS) - n_eval
    return EVAL if n_other == 0 else MIXED


# -- the parsed file --------------------------------------------------------------------------


class EntryBlock(NamedTuple):
    """Log entries with the same keys in the same order."""

    keys: tuple
    rows: np.ndarray
    """Their positions in `ParsedState.entries`."""
    table: np.ndarray | None
    """(rows × keys) float64 of their values when every one is numeric (`value_table`)."""
    category: str


@dataclass
class ParsedState:
    """One trainer_state.json: its header fields, its log entries, what was odd about it."""

    source: str
    global_step: int
    max_steps: int | None
    epoch: float | None
    best_metric: float | None
    best_model_checkpoint: str | None
    best_global_step: int | None
    should_training_stop: bool
    warnings: list[str]
    entries: list[dict[str, Any]] = field(repr=False)
    """The log_history dicts that survive resumes, in order (not cleaned: see `records`)."""
    steps: np.ndarray = field(repr=False)
    """int64 step of each entry (missing steps filled in)."""
    categories: list[str] = field(repr=False)
    """TRAIN / EVAL / SUMMARY / MIXED for each entry."""
    group_ids: list[int] = field(default_factory=list, repr=False)
    """Entries with the same keys (in the same order) share a group id..."""
    group_keys: dict[int, tuple] = field(default_factory=dict, repr=False)
    """...and these are the keys."""
    blocks: list[EntryBlock] = field(default_factory=list, repr=False)
    """The entries of each group, with their values read as a table where they could be:
    the store's columns come from these."""
    header: dict[str, Any] = field(default_factory=dict, repr=False)
    """Every other top-level scalar (logging_steps, save_steps, num_train_epochs, ...)."""
    _records: list[journal.Record] | None = field(default=None, repr=False)

    @property
    def has_summary(self) -> bool:
        return SUMMARY in self.categories

    @property
    def is_finished(self) -> bool:
        """Training got to its end: the last step, an early stop, or the summary entry."""
        return bool(
            (self.max_steps is not None and self.max_steps > 0 and self.global_step >= self.max_steps)
            or self.should_training_stop
            or self.has_summary
        )

    @property
    def records(self) -> list[journal.Record]:
        """The entries as journal records (built on first use; t is 0.0: the file has no times).

        Entries of one kind that share a step are merged, the later value of a
        key winning (a resumed run that logged the same step twice).
        """
        if self._records is None:
            self._records = _build_records(self.entries, self.steps, self.categories)
        return self._records

    def tail_records(self, n: int) -> list[journal.Record]:
        """The last `n` of `records`, building records for the end of the log only.

        Replay's log table holds 1000 rows; building a Record for every entry of a
        100k-entry file to keep the last 1000 took 0.7 s. Entries of one step merge,
        so the tail starts at a step boundary, and holds more entries than it keeps.
        """
        if n <= 0:
            return []
        total = len(self.entries)
        window = n + n // 8 + 1
        while self._records is None and total > window:
            start = total - window
            first = self.steps[start]
            while start < total and self.steps[start] == first:
                start += 1
            tail = _build_records(self.entries[start:], self.steps[start:], self.categories[start:])
            if len(tail) >= n:
                return tail[-n:]
            window *= 2
        return self.records[-n:]

    def __len__(self) -> int:
        return len(self.entries)


def _build_records(entries: list[dict[str, Any]], steps: np.ndarray,
                   categories: list[str]) -> list[journal.Record]:
    out: list[journal.Record] = []
    open_at: dict[str, journal.Record] = {}  # kind -> record of the current step
    current: int | None = None
    for entry, step, cat in zip(entries, steps.tolist(), categories, strict=False):
        if step != current:
            open_at = {}
            current = step
        epoch = to_float(entry.get("epoch"))
        values = metric_values(entry)
        if cat == MIXED:
            evals = {k: v for k, v in values.items() if k.startswith("eval_")}
            train = {k: v for k, v in values.items() if not k.startswith("eval_")}
            parts = [(kind, vals) for kind, vals in ((journal.METRICS, train), (journal.EVAL, evals))
                     if vals] or [(journal.METRICS, train)]  # keep the step even when empty
        elif cat == EVAL:
            parts = [(journal.EVAL, values)]
        elif cat == SUMMARY:
            parts = [(SUMMARY, values)]
        else:
            parts = [(journal.METRICS, values)]
        for kind, vals in parts:
            rec = open_at.get(kind)
            if rec is not None:
                rec.data.update(vals)
                if epoch is not None:
                    rec.data["epoch"] = epoch
                continue
            if kind == journal.EVAL:
                rec = journal.eval_metrics(step, vals, epoch=epoch)
            else:
                rec = journal.metrics(step, vals, epoch=epoch)
                if kind == SUMMARY:
                    rec.data["summary"] = True
            rec.t = 0.0
            open_at[kind] = rec
            out.append(rec)
    return out


# -- loading ----------------------------------------------------------------------------------


def load_json(raw: bytes | bytearray | memoryview | str, *, source: str = "") -> Any:
    """Parse a JSON document that may carry NaN/Infinity literals and a BOM.

    orjson first; for bare NaN/Infinity (which orjson refuses) the literals are
    quoted and orjson tried again — `to_float` reads "nan" back as NaN — before
    falling back to the (slower) stdlib parser. Quoting a literal that sat
    inside a string breaks the document (the inserted quote closes the string
    and a bare letter or '-' follows), so that case falls through to the
    stdlib parser rather than changing any text.

    Costs on a 100 MB file are ~0.1 s per pass over the bytes, so: a NaN in
    the first MB (DPO's first steps) skips the doomed plain attempt, and each
    literal is searched for only when the previous attempt failed.
    """
    name = source or "trainer_state.json"
    if isinstance(raw, str):
        data = raw.encode("utf-8", errors="surrogatepass")
    else:
        data = bytes(raw)  # no copy for bytes
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data or (data[:1].isspace() and not data.strip()):
        raise CockpitError(f"{name}: the file is empty — {_INCOMPLETE_HINT}")
    try:
        if _orjson is not None:
            parsed = _orjson_lenient(data)
            if parsed is not _FAILED:
                return parsed
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise CockpitError(f"{name}: nested too deeply to be a trainer_state.json") from None
    except UnicodeError:
        raise CockpitError(f"{name}: not UTF-8 text — is this a trainer_state.json?") from None
    except ValueError as exc:
        detail = str(exc).split("\n")[0][:120]
        raise CockpitError(f"{name}: incomplete or not JSON ({detail}) — {_INCOMPLETE_HINT}") from None


_FAILED = object()


def _orjson_lenient(data: bytes) -> Any:
    """orjson with NaN/Infinity literals quoted as needed; _FAILED when it cannot parse."""
    assert _orjson is not None
    if data.find(b"NaN", 0, 1 << 20) < 0:
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    if b"NaN" in data:
        data = data.replace(b"NaN", b'"nan"')
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    if b"Infinity" in data:
        data = data.replace(b"-Infinity", b'"-inf"').replace(b"Infinity", b'"inf"')
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return _FAILED


def stream_log_history(fh: BinaryIO) -> Iterator[dict[str, Any]]:
    """The log_history entries of an open trainer_state.json, one at a time, without holding the
    file or its tree: what a reader keeps of a 200 MB state is what it takes from each entry
    (`cockpit checkpoints` takes a few values at its checkpoints' steps). Raises ValueError on a
    cut-off or broken file; entries that are not objects
    are skipped. Numbers are floats (or ints), NaN literals the strings `load_json` makes them."""
    import ijson

    try:
        for entry in ijson.items(QuotedLiterals(fh), "log_history.item", use_float=True):
            if type(entry) is dict:
                yield entry
    except ijson.JSONError as exc:
        raise ValueError(str(exc).split("\n")[0]) from None


def parse_trainer_state(raw: bytes | str, *, source: str = "") -> ParsedState:
    """Parse the text of a trainer_state.json (see the module docstring for the rules)."""
    obj = load_json(raw, source=source)
    return parse_trainer_state_obj(obj, source=source)


def parse_trainer_state_obj(obj: Any, *, source: str = "") -> ParsedState:
    """As `parse_trainer_state`, for an already-decoded JSON value."""
    name = source or "trainer_state.json"
    if not isinstance(obj, dict):
        raise CockpitError(f"{name}: expected a JSON object with a log_history list, "
                           f"found a {type(obj).__name__} — is this a trainer_state.json?")
    if "log_history" not in obj:
        raise CockpitError(f"{name}: has no log_history — is this a trainer_state.json?")
    history = obj["log_history"]
    if not isinstance(history, list):
        raise CockpitError(f"{name}: log_history is a {type(history).__name__}, not a list — "
                           "the file is damaged or not a trainer_state.json")
    warnings: list[str] = []

    if set(map(type, history)) <= {dict}:
        entries = history
    else:
        entries = [e for e in history if type(e) is dict]
        warnings.append(f"{len(history) - len(entries)} log_history entries are not objects — skipped")

    # An entry's key tuple decides its category; real logs have a handful of distinct tuples.
    # setdefault hands each new tuple the counter value of its first entry: a group id.
    group_keys: dict[tuple, int] = {}
    group_ids = list(map(group_keys.setdefault, map(tuple, entries), itertools.count()))
    keys_of = {gid: sig for sig, gid in group_keys.items()}
    category_of = {gid: categorize(sig) for sig, gid in group_keys.items()}
    categories = list(map(category_of.__getitem__, group_ids))
    # Each group's values, read once as a table: the steps come from it, and so do the store's
    # columns (`MetricStore.add_parsed`).
    blocks = [EntryBlock(sig, idx, value_table(sig, _rows(entries, idx)), categorize(sig))
              for sig, idx in blocks_of(entries, None, (group_ids, keys_of))]
    steps = _table_steps(blocks, len(entries))
    if steps is None:
        steps = _entry_steps(entries, warnings)

    if SUMMARY in category_of.values():
        # The summary stands outside the step sequence (the store keeps it apart too):
        # it neither rewinds the log nor is dropped by a rewind.
        in_sequence = np.flatnonzero(np.array(categories, dtype=object) != SUMMARY)
        kept, rewound_to = surviving(steps[in_sequence])
        keep = np.ones(len(steps), dtype=bool)
        keep[in_sequence] = kept
    else:
        keep, rewound_to = surviving(steps)
    if rewound_to is not None:
        dropped = int(len(keep) - keep.sum())
        warnings.append(f"log_history goes back to step {rewound_to} (a resumed run?) — "
                        f"kept the later entries, dropped {dropped} earlier ones")
        idx = np.flatnonzero(keep).tolist()
        entries = [entries[i] for i in idx]
        categories = [categories[i] for i in idx]
        group_ids = [group_ids[i] for i in idx]
        steps = steps[keep]
        new_position = np.cumsum(keep) - 1
        blocks = [EntryBlock(b.keys, new_position[b.rows[keep[b.rows]]],
                        None if b.table is None else b.table[keep[b.rows]], b.category)
                  for b in blocks]
    if len(steps) > 1:
        same = steps[1:] == steps[:-1]
        if same.any():
            cats = np.array(categories, dtype=object)
            repeats = int(np.count_nonzero(same & (cats[1:] == cats[:-1])))
            if repeats:
                warnings.append(f"{repeats} log_history entries repeat the step of the entry "
                                "before — kept the last value of each metric")

    global_step = to_int(obj.get("global_step"))
    if global_step is None:
        global_step = int(steps.max()) if len(steps) else 0
    max_steps = to_int(obj.get("max_steps"))
    best_metric = to_float(obj.get("best_metric"))
    best_ckpt = obj.get("best_model_checkpoint")
    header = {k: v for k, v in obj.items()
              if k != "log_history" and (v is None or isinstance(v, (int, float, str, bool)))}
    return ParsedState(
        source=source,
        global_step=global_step,
        max_steps=max_steps,
        epoch=to_float(obj.get("epoch")),
        best_metric=best_metric,
        best_model_checkpoint=best_ckpt if isinstance(best_ckpt, str) else None,
        best_global_step=to_int(obj.get("best_global_step")),
        should_training_stop=obj.get("should_training_stop") is True,
        warnings=warnings,
        entries=entries,
        steps=steps,
        categories=categories,
        group_ids=group_ids,
        group_keys=keys_of,
        blocks=[b for b in blocks if len(b.rows)],
        header=header,
    )


def _rows(entries: list[dict[str, Any]], idx: np.ndarray) -> list[dict[str, Any]]:
    return entries if len(idx) == len(entries) else [entries[i] for i in idx.tolist()]


_EXACT = float(2**53)  # integers up to here are exact as float64


def _table_steps(blocks: list[EntryBlock], n: int) -> np.ndarray | None:
    """Every entry's step read from its group's value table (truncated, as `to_int` does);
    None when some group has no table, no step key, or a step that is not finite or too
    large to be exact as a float (then `_entry_steps` reads them one by one)."""
    steps = np.empty(n, dtype=np.int64)
    for block in blocks:
        if block.table is None or "step" not in block.keys:
            return None
        col = block.table[:, block.keys.index("step")]
        if len(col) and not (np.isfinite(col).all() and np.abs(col).max() < _EXACT):
            return None
        steps[block.rows] = col.astype(np.int64)
    return steps


def _entry_steps(entries: list[dict[str, Any]], warnings: list[str]) -> np.ndarray:
    """The step of each entry; a missing or unreadable one is the previous step + 1."""
    raw = [e.get("step") for e in entries]
    if set(map(type, raw)) <= {int}:
        try:
            return np.array(raw, dtype=np.int64)
        except OverflowError:
            pass
    out = np.empty(len(raw), dtype=np.int64)
    prev = 0
    missing = 0
    for i, value in enumerate(raw):
        step = to_int(value)
        if step is None:
            missing += 1
            step = min(prev + 1, _INT64_MAX)
        out[i] = step
        prev = step
    if missing:
        warnings.append(f"{missing} log_history entries have no usable step — "
                        "gave each the previous step + 1")
    return out
