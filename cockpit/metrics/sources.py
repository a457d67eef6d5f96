"""What a user can point replay or export at, resolved to one readable source.

    cockpit replay runs/sft-20250101-120000     a run folder: its journal (events.jsonl),
                                                 its output/ when the journal has nothing
    cockpit replay out/                          an output dir: out/trainer_state.json, else the
                                                 newest checkpoint-N/ (by N: 10 after 9)
    cockpit replay out/checkpoint-250            a checkpoint: its trainer_state.json
    cockpit replay path/trainer_state.json       the file itself (any *.json)
    cockpit replay runs/x/events.jsonl           a journal directly (any *.jsonl)

Journals and trainer_state.json files become the same thing — journal records
and a `MetricStore` — so replay uses the live view's widgets. An output dir
whose newest checkpoint holds a half-written trainer_state.json (transformers
writes it non-atomically) falls back to the previous checkpoint, with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.errors import CockpitError
from cockpit.metrics import trainer_state as ts
from cockpit.metrics.buffers import CompletionsBuffer, LogRows
from cockpit.metrics.store import MetricStore
from cockpit.run import journal
from cockpit.run.folder import checkpoint_step, list_checkpoints
from cockpit.run.tailer import Tailer

TRAINER_STATE = "trainer_state.json"
EVENTS = "events.jsonl"
_WHAT = ("a run folder, an output dir, a checkpoint-N folder, a trainer_state.json "
         "or an events.jsonl")

# Source kinds: what the user pointed at.
KIND_TRAINER_STATE = "trainer_state"
KIND_CHECKPOINT = "checkpoint"
KIND_OUTPUT_DIR = "output_dir"
KIND_RUN_FOLDER = "run_folder"
KIND_JOURNAL = "journal"
RUN_MARKERS = ("run.yaml", "status.json", EVENTS)
"""A folder holding one of these is a run folder: sources inside it are named after the run."""


@dataclass(frozen=True)
class SourceName:
    """What a source is called, from its path: `head` ends with the run folder's name (or the
    file's own name outside a run), `tail` is where inside the run it was read from.

    The label is the last `n` parts of `head`, plus `tail` when that is needed to tell two
    sources apart (`distinct_labels`): one replay of runs/x/output/checkpoint-100 is "x", two
    checkpoints of the same run are "x/checkpoint-100" and "x/checkpoint-200", two
    output/checkpoint-100 outside any run are "a/output/checkpoint-100" and
    "b/output/checkpoint-100".
    """

    head: tuple[str, ...]
    tail: tuple[str, ...] = ()
    shortest: int = 1

    def label(self, n: int | None = None, with_tail: bool = False) -> str:
        n = min(len(self.head), max(1, n or self.shortest))
        return "/".join(self.head[-n:] + (self.tail if with_tail else ()))


def source_name(path: Path) -> SourceName:
    """The name of the source read from `path` (a trainer_state.json, an events.jsonl, any
    other file). A run folder is found only where cockpit puts things: the file's folder,
    its output/, or a checkpoint-N/ in its output/."""
    p = Path(os.path.abspath(path))
    if p.name in (TRAINER_STATE, EVENTS):
        folder = p.parent
        parts = folder.parts
    else:
        folder = p.parent
        parts = (*folder.parts, p.stem)
    candidates = [folder]
    if folder.name == "output":
        candidates.append(folder.parent)
    elif checkpoint_step(folder.name) is not None and folder.parent.name == "output":
        candidates.append(folder.parent.parent)
    for run in candidates:
        if any((run / marker).is_file() for marker in RUN_MARKERS):
            n = len(run.parts)
            tail = tuple(x for x in parts[n:] if x != "output")
            if p.name not in (TRAINER_STATE, EVENTS) and run == folder:
                tail = (p.stem,)  # some other file inside a run folder
            return SourceName(head=_relative(run.parts), tail=tail)
    # "checkpoint-100" or "output" alone says nothing: say whose.
    shortest = 2 if checkpoint_step(parts[-1]) is not None or parts[-1] == "output" else 1
    return SourceName(head=_relative(parts) or (str(p),), shortest=shortest)


def _relative(parts: tuple[str, ...]) -> tuple[str, ...]:
    """Path parts without the root ("/" or "C:\\"), which is no part of a name."""
    return parts[1:] if parts and parts[0] == Path(parts[0]).anchor else parts


def distinct_labels(names: Sequence[SourceName]) -> list[str]:
    """One label per source, each the shortest that tells it apart from the others: the run
    name (or file name) alone, then more of the path above it for different runs of one name,
    then where inside the run for sources of the same run."""
    n = [name.shortest for name in names]
    with_tail = [False] * len(names)
    labels = [name.label(n[i]) for i, name in enumerate(names)]
    while True:
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            groups.setdefault(label, []).append(i)
        changed = False
        for members in groups.values():
            if len(members) < 2:
                continue
            if len({names[i].head for i in members}) > 1:  # different runs (or files)
                for i in members:
                    if n[i] < len(names[i].head):
                        n[i] += 1
                        changed = True
            else:  # one run: where inside it
                for i in members:
                    if names[i].tail and not with_tail[i]:
                        with_tail[i] = True
                        changed = True
        if not changed:
            break
        labels = [name.label(n[i], with_tail[i]) for i, name in enumerate(names)]
    # The same path twice: nothing in it tells the two apart.
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


if TYPE_CHECKING:
    from cockpit.metrics.completions import CompletionsLibrary


@dataclass
class Source:
    """One replayable thing: where it is, what it holds, what was odd about it.

    `path` is the file actually read (a trainer_state.json or an events.jsonl);
    `parsed` is set for trainer_state.json sources, `journal_records` for journals.
    """

    kind: str
    path: Path
    warnings: list[str] = field(default_factory=list)
    parsed: ts.ParsedState | None = None
    journal_records: list[journal.Record] | None = None
    skipped: int = 0
    """Journal lines that could not be read (newer-version lines included)."""
    newer_version: int = 0
    """Journal lines written by a newer cockpit (skipped)."""
    completions_dir: Path | None = None
    """Where GRPO-style trainers wrote completions/*.parquet, for sources without a journal."""
    name: SourceName = field(init=False)
    """What it is called beside other sources (`distinct_labels`), from the file read."""

    def __post_init__(self) -> None:
        self.name = source_name(self.path)

    def completions_library(self) -> CompletionsLibrary:
        """Every step's completions, on demand: the run folder's store, rows still inline in an
        old journal, and TRL's completions/*.parquet."""
        from cockpit.metrics.completions import CompletionsLibrary

        lib = CompletionsLibrary(self.path.parent if self.is_journal else None, self.completions_dir)
        if self.journal_records:
            lib.add_records(self.journal_records)
        lib.refresh()
        return lib

    @property
    def label(self) -> str:
        """The source alone: its run's name, else its file's or folder's."""
        return self.name.label()

    @property
    def is_journal(self) -> bool:
        return self.journal_records is not None

    @property
    def records(self) -> list[journal.Record]:
        """Every record: the journal's, or the trainer_state.json entries as records."""
        if self.journal_records is not None:
            return self.journal_records
        assert self.parsed is not None
        return self.parsed.records

    @property
    def max_steps(self) -> int | None:
        if self.parsed is not None:
            return self.parsed.max_steps
        found = None
        for rec in self.records:
            if rec.kind in (journal.RUN_STARTED, journal.PROGRESS):
                found = ts.to_int(rec.data.get("max_steps")) or found
        return found

    def load_store(self) -> MetricStore:
        """A fresh store of every metric series (the columnar fast path for trainer_state.json)."""
        if self.parsed is not None:
            return MetricStore.from_parsed(self.parsed)
        return MetricStore.from_records(self.records)

    def load_log_rows(self, capacity: int = 1000) -> LogRows:
        rows = LogRows(capacity)
        if self.parsed is not None:
            # Build records only for the tail the table can hold.
            rows.add_many(self.parsed.tail_records(capacity))
        else:
            rows.add_many(self.records)
        return rows

    def known_checkpoints(self) -> list[tuple[int, str]]:
        """(step, path) of the checkpoints a trainer_state.json source knows of, for the plots'
        `C` marks as a journal's `checkpoint` records give them: the checkpoint-N folders beside
        it (its output dir's; a checkpoint's own file: it and its siblings up to its step), and
        the best_model_checkpoint it names (a public file's is seldom there: its step is known
        all the same). Nothing is guessed from save_steps (the save strategy is not written)."""
        parsed = self.parsed
        if parsed is None:
            return []
        here = self.path.parent
        inside = checkpoint_step(here.name) is not None
        found: dict[int, str] = {}
        for folder in list_checkpoints(here.parent if inside else here):
            step = checkpoint_step(folder.name)
            if step is not None and (not inside or step <= parsed.global_step):
                found[step] = str(folder)
        best = parsed.best_model_checkpoint
        step = checkpoint_step(best.replace("\\", "/").rstrip("/").rpartition("/")[2]) if best else None
        if best and step is not None and step <= parsed.global_step:
            found.setdefault(step, best)
        return sorted(found.items())

    def load_completions(self, capacity: int = 2000) -> CompletionsBuffer:
        """Sampled completions: the journal's completions records, else the newest steps of the
        parquet files GRPO/Distillation write with log_completions=True (output_dir/completions/,
        read through a `CompletionsLibrary`)."""
        buf = CompletionsBuffer(capacity)
        if self.journal_records is not None:
            buf.add_many(r for r in self.journal_records if r.kind == journal.COMPLETIONS)
        if not len(buf) and self.completions_dir is not None:
            from cockpit.metrics.completions import CompletionsLibrary

            lib = CompletionsLibrary(parquet_dir=self.completions_dir)
            if self.kind == KIND_CHECKPOINT and self.parsed is not None:
                lib.last_step = self.parsed.global_step  # nothing logged after the checkpoint
            lib.refresh()
            chosen: list[tuple[int, list[dict[str, Any]]]] = []
            total = 0
            for step in reversed(lib.steps()):  # the newest steps the buffer holds
                rows = lib.rows(step)
                if rows:
                    chosen.append((step, rows))
                    total += len(rows)
                if total >= buf.capacity:
                    break
            for step, rows in reversed(chosen):
                buf.add_rows(step, rows, source="parquet")
            self.warnings.extend(w for w in lib.warnings if w not in self.warnings)
        return buf


# -- resolution -------------------------------------------------------------------------------


def check_path(path: str | os.PathLike[str]) -> Path:
    """What `open_source` would refuse without reading a file, as the same one line: the CLI
    says it before the TUI starts, and the replay screen still parses only once."""
    p = Path(path).expanduser()
    if not p.exists():
        raise CockpitError(f"{p}: no such file or folder — give {_WHAT}")
    if p.is_file():
        return p
    if not p.is_dir():
        raise CockpitError(f"{p}: not a file or a folder — give {_WHAT}")
    for d in (p, p / "output"):
        if (d / EVENTS).is_file() or (d / TRAINER_STATE).is_file() or \
                any((c / TRAINER_STATE).is_file() for c in list_checkpoints(d)):
            return p
    if checkpoint_step(p.name) is not None:
        raise CockpitError(f"{p}: no {TRAINER_STATE} in this checkpoint — give {_WHAT}")
    raise CockpitError(f"{p}: no {EVENTS}, {TRAINER_STATE} or checkpoint-N/{TRAINER_STATE} "
                       f"here — give {_WHAT}")


def open_source(path: str | os.PathLike[str]) -> Source:
    """Resolve what the user pointed replay at; `CockpitError` (one line) when nothing is usable."""
    p = Path(path).expanduser()
    if not p.exists():
        raise CockpitError(f"{p}: no such file or folder — give {_WHAT}")
    if p.is_file():
        if p.suffix == ".jsonl":
            return _journal_source(p, kind=KIND_JOURNAL)
        return _state_source(p, kind=KIND_TRAINER_STATE)
    if not p.is_dir():
        raise CockpitError(f"{p}: not a file or a folder — give {_WHAT}")

    events = p / EVENTS
    if events.is_file():
        return _run_folder_source(p)
    if checkpoint_step(p.name) is not None and (p / TRAINER_STATE).is_file():
        return _state_source(p / TRAINER_STATE, kind=KIND_CHECKPOINT, completions_dir=_completions_dir(p.parent))
    found = _output_dir_source(p)
    if found is not None:
        return found
    output = _run_output(p)
    if output is not None and output.is_dir():  # a run folder without a journal
        found = _output_dir_source(output)
        if found is not None:
            found.kind = KIND_RUN_FOLDER
            return found
    raise CockpitError(f"{p}: no {EVENTS}, {TRAINER_STATE} or checkpoint-N/{TRAINER_STATE} "
                       f"here — give {_WHAT}")


def _read(p: Path) -> bytes:
    from cockpit.files import NotRegularFile, read_regular

    try:
        return read_regular(p, 4 << 30)  # a trainer_state.json of millions of steps is some GB at most
    except NotRegularFile as exc:
        why = "is a folder" if p.is_dir() else exc.strerror
        raise CockpitError(f"{p}: {why} — give {_WHAT}") from None
    except PermissionError:
        raise CockpitError(f"{p}: permission denied — check the file's owner and mode") from None
    except IsADirectoryError:
        raise CockpitError(f"{p}: is a folder — give {_WHAT}") from None
    except OSError as exc:
        raise CockpitError(f"{p}: could not be read ({exc.strerror or exc})") from None


def _state_source(p: Path, *, kind: str, completions_dir: Path | None = None) -> Source:
    parsed = ts.parse_trainer_state(_read(p), source=str(p))
    return Source(kind=kind, path=p, warnings=list(parsed.warnings), parsed=parsed,
                  completions_dir=completions_dir)


def _completions_dir(output_dir: Path) -> Path | None:
    d = output_dir / "completions"
    return d if d.is_dir() else None


def _output_dir_source(d: Path) -> Source | None:
    """The root trainer_state.json, else the newest checkpoint whose file parses; None if none."""
    completions = _completions_dir(d)
    if (d / TRAINER_STATE).is_file():
        return _state_source(d / TRAINER_STATE, kind=KIND_OUTPUT_DIR,
                             completions_dir=completions)
    checkpoints = list_checkpoints(d)
    skipped: list[str] = []
    first_error: CockpitError | None = None
    for ckpt in reversed(checkpoints):
        state = ckpt / TRAINER_STATE
        if not state.is_file():
            skipped.append(f"{ckpt.name} has no {TRAINER_STATE}")
            continue
        try:
            src = _state_source(state, kind=KIND_OUTPUT_DIR,
                                completions_dir=completions)
        except CockpitError as exc:
            first_error = first_error or exc
            skipped.append(f"{ckpt.name}/{TRAINER_STATE} is unreadable (half-written?)")
            continue
        if skipped:
            src.warnings.insert(0, f"replaying {ckpt.name}: newer " + "; ".join(skipped))
        return src
    if first_error is not None:
        raise first_error
    return None


def _read_journal(p: Path) -> tuple[list[journal.Record], Tailer]:
    tailer = Tailer(p)
    records: list[journal.Record] = []
    while True:  # one poll reads at most 64 MB
        before = tailer.offset
        records.extend(tailer.poll())
        if tailer.offset == before:
            break
    return records, tailer


def _journal_warnings(p: Path, tailer: Tailer) -> list[str]:
    return [f"{p}: {problem}" for problem in tailer.problems()]


def _journal_source(p: Path, *, kind: str) -> Source:
    try:
        records, tailer = _read_journal(p)
    except PermissionError:
        raise CockpitError(f"{p}: permission denied — check the file's owner and mode") from None
    skipped, newer = tailer.skipped, tailer.newer_version
    if tailer.refused:
        raise CockpitError(f"{p}: {tailer.refused} — not read; a journal is a regular file")
    if not records:
        if skipped:
            raise CockpitError(f"{p}: none of its {skipped} line(s) could be read ({'; '.join(tailer.problems())})"
                               + (" — upgrade cockpit" if newer else ""))
        raise CockpitError(f"{p}: the journal is empty — nothing was recorded yet")
    output = _run_output(p.parent)
    return Source(kind=kind, path=p, warnings=_journal_warnings(p, tailer),
                  journal_records=records, skipped=skipped, newer_version=newer,
                  completions_dir=_completions_dir(output) if output is not None and output.is_dir() else None)


def _run_output(d: Path) -> Path | None:
    """A run folder's output_dir, by the one rule (`run.section.output_dir`); None when it has none yet."""
    from cockpit.run.folder import RunFolder
    from cockpit.run.section import output_dir

    return output_dir(RunFolder(d))


def _run_folder_source(d: Path) -> Source:
    """The journal; the output dir when the journal has no metrics (or cannot be read)."""
    events = d / EVENTS
    try:
        src: Source | None = _journal_source(events, kind=KIND_RUN_FOLDER)
        journal_error: CockpitError | None = None
    except CockpitError as exc:
        src, journal_error = None, exc
    has_metrics = src is not None and any(
        r.kind in (journal.METRICS, journal.EVAL) for r in src.records)
    if src is not None and has_metrics:
        return src
    output = _run_output(d)
    fallback = _output_dir_source(output) if output is not None and output.is_dir() else None
    if fallback is not None:
        fallback.kind = KIND_RUN_FOLDER
        why = "has no metrics" if journal_error is None else f"is unusable ({journal_error})"
        fallback.warnings.insert(0, f"{events} {why} — replaying {fallback.path} instead")
        if src is not None:
            fallback.warnings.extend(src.warnings)
        return fallback
    if src is not None:  # a run that has not logged yet: still a run
        src.warnings.append(f"{events}: no metrics logged yet")
        return src
    assert journal_error is not None
    raise CockpitError(f"{d}: {journal_error} and output/ holds no {TRAINER_STATE}")
