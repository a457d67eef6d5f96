"""Following a run while it is written: the one follower, below the UI.

toolong's `Watcher` is the model: a thread outside the UI reads what was appended to the files
and hands it on. The live screen, the replay screen (each followed source of an overlay) and
`cockpit watch` all take their updates from here, at one cadence:

- `RunFollower`: a run folder's journal (and, for the live screen, stdout.log and a `RulesFeed`:
  the alert rules' files, watched by `alerts.board.RulesWatch`, which the screen hands in: metrics/
  does not import alerts/), polled every POLL_S (a poll that finds nothing is one open + fstat per file),
  read on at once while a poll finds more, and the run's state every STATUS_S;
- `FilesFollower`: an output dir that no cockpit run owns (a training started elsewhere), read
  again whenever a checkpoint's trainer_state.json or a completions parquet lands in it.

`open_path` is the replay's side of discovery: what a path given to replay is (a live run's
journal to follow, a snapshot of a live run, an output dir written elsewhere, or a finished
source) and its first read. Nothing here imports Textual: a screen runs `updates()` in a thread
worker and posts each update as a message; `cockpit watch` prints them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData, load_ends, load_journal
from cockpit.run.folder import LIVE_STATES, RunFolder, checkpoint_step
from cockpit.run.journal import Record
from cockpit.run.summaries import effective_state
from cockpit.run.tailer import Tailer
from cockpit.run.trainer_output import OutputTail

POLL_S = 0.02
"""How often the journal (and stdout.log) are polled: a new step shows within this."""
STATUS_S = 1.0
"""How often the run's state (status.json, reconciled) and the alert rules' files are read."""
FILES_POLL_S = 1.0
"""How often an output dir written elsewhere is looked at (a stat of its trainer_state files)."""
FILES_SETTLE_S = 0.2
"""transformers writes trainer_state.json without a rename: the pause that lets it finish."""
OUTPUT_MAX_LINES = 2000
"""stdout.log lines handed over by the first read."""

FIRST_LOOK_BYTES = 32 << 20
"""A journal longer than this (a 30,000-step GRPO run: a second or more to read whole on a slow
machine) is opened with a first look at its ends (`RunFollower.first_look`) before the whole."""
HEAD_BYTES = 256 << 10
"""The start of the journal a first look reads: the run_started and phase lines the header needs."""
TAIL_BYTES = 4 << 20
"""The end of the journal a first look reads: some 4,000 steps of a GRPO run (a metrics, a
progress and a completions_ref line a step), enough for every panel's first frame."""

TRIM_EVERY_RECORDS = 20_000
"""A follower gives the memory freed meanwhile back to the system (`give_back_freed_memory`) each
time it has read this many records: at a real run's step or two a second, every few hours; a
catch-up at thousands of steps a second, every few seconds."""

TRIM_IDLE_RECORDS = 2_000
"""... and once a poll finds nothing after at least this many: a burst (an attach's catch-up, a
fast stretch of steps) is over, and what its records took is given back at once, not at the next
TRIM_EVERY_RECORDS (a real run's 2,000 records are a quarter of an hour or more)."""

Stop = Callable[[], bool]
"""Asked before each poll: True ends the following (a cancelled worker, a closed screen)."""


_malloc_trim: Any = None


def give_back_freed_memory() -> bool:
    """Return to the system the memory the process freed that the C library still holds (glibc's
    `malloc_trim`): glibc keeps freed heap pages for reuse, so the records of a long follow, each
    batch freed once applied, left a 72-hour run's view ~7 MB larger than what it held (bench:
    follow_72h_rss_growth_mb). False where the C library has no malloc_trim (macOS, musl)."""
    global _malloc_trim
    if _malloc_trim is None:
        import ctypes

        try:
            _malloc_trim = getattr(ctypes.CDLL(None), "malloc_trim", False)
        except OSError:
            _malloc_trim = False
        if _malloc_trim:
            _malloc_trim.argtypes, _malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    if not _malloc_trim:
        return False
    _malloc_trim(0)
    return True


class RulesFeed(Protocol):
    """Files watched beside the journal and read at the state's cadence: the alert rules
    (`alerts.board.RulesWatch`, handed in by the live screen). What it reads is passed on as it is."""

    def first(self) -> Any:
        """Everything, read now."""

    def changed(self) -> Any | None:
        """Everything again when a file changed since the last read, else None."""

    def alerts(self) -> list[Record]:
        """The journal's alert records so far."""


@dataclass
class Update:
    """What one poll found: only what changed is set."""

    records: list[Record] = field(default_factory=list)
    """Journal records appended since the last poll."""
    output: list[str] = field(default_factory=list)
    """stdout.log lines appended since the last poll, readable (`run.trainer_output`)."""
    state: str | None = None
    """The run's new state, or None when it did not change."""
    resumable: bool = False
    """With a new state: whether the run can be resumed (the follower's `resumable` rule)."""
    rules: Any | None = None
    """The `RulesFeed`'s read (the alert rules), when one of their files changed."""
    journal_error: str | None = None
    """status.json's journal_error, when it changed to a new trouble (the supervisor cannot
    write events.jsonl: what is shown is behind the training)."""
    problem: str | None = None
    """Why the run's state cannot be read (a damaged status.json), when that changed."""
    data: RunData | None = None
    """A followed output dir read again whole (`FilesFollower`)."""
    at: float | None = None
    """When (time.time()) a followed output dir was seen to change (`FilesFollower`)."""

    def __bool__(self) -> bool:
        return bool(self.records or self.output or self.state is not None or self.rules is not None
                    or self.journal_error or self.problem or self.data is not None or self.at is not None)


@dataclass
class Opened:
    """The first read of what is followed: everything so far."""

    data: RunData
    """The run (or source) as read so far."""
    output: list[str] = field(default_factory=list)
    """The end of stdout.log, when the follower reads it."""
    state: str | None = None
    """The run's state (None when it could not be read, or for a source that is not a run)."""
    resumable: bool = False
    """Whether the run can be resumed."""
    rules: Any | None = None
    """The `RulesFeed`'s first read (the alert rules), when the follower has one."""
    alerts: list[Record] = field(default_factory=list)
    """The journal's `alert` records so far (history: no bell)."""
    journal_error: str | None = None
    """status.json's journal_error, when set."""
    problem: str | None = None
    """Why the run's state cannot be read."""
    following: bool = False
    """A live run's journal: followed from here on."""
    first_look: bool = False
    """Only the journal's ends (`RunFollower.first_look`; `data.tail_from` says from which step):
    the whole read (`open`) follows and replaces it."""
    snapshot_of: str | None = None
    """The live run this path is a fixed part of (a checkpoint, its output dir)."""


class RunFollower:
    """A run folder followed through its journal.

    `open(label)` reads the whole journal once (and what else is asked for), then `updates(stop)`
    yields one `Update` per poll that found something, until `stop()` says so (or, with
    `until_ended`, the run is no longer live). `poll()` is one step of it, for a caller with a
    loop of its own. Before `open`, `first_look` reads a long journal's ends alone, for a screen
    to draw while the whole is read (the live screen)."""

    def __init__(self, run: RunFolder, *, output: bool = False, rules: RulesFeed | None = None,
                 journal_errors: bool = False, resumable: Callable[[str | None], bool] | None = None,
                 until_ended: bool = False, tailer: Tailer | None = None,
                 poll_s: float = POLL_S, status_s: float = STATUS_S) -> None:
        self.run = run
        self.tailer = tailer or Tailer(run.events)
        self.output = OutputTail(run.stdout_log) if output else None
        self.poll_s, self.status_s = poll_s, status_s
        self.state: str | None = None
        """The run's state as last read (None until read, or when it cannot be)."""
        self.ended = False
        """With `until_ended`: the run was seen not live; `updates` stops after saying so."""
        self._until_ended = until_ended
        self._journal_errors = journal_errors
        self._resumable = resumable
        self._rules = rules
        self._status_due = 0.0
        self._trouble: str | None = None
        self._problem: str | None = None
        self._read_since_trim = 0
        self.trims = 0
        """How many times the memory freed meanwhile was given back (TRIM_EVERY_RECORDS)."""

    def first_look(self, label: str | None = None) -> Opened | None:
        """A journal longer than FIRST_LOOK_BYTES: its start and its newest steps (`load_ends`)
        and the run's state, to draw while `open` reads the whole; None for a shorter one (or
        one that cannot be read now: `open` says why). Nothing else is read, and the tailer is
        left alone: `open` reads every record, this one's too, once."""
        try:
            if self.run.events.stat().st_size <= FIRST_LOOK_BYTES:
                return None
            data = load_ends(self.run.events, label or self.run.name, HEAD_BYTES, TAIL_BYTES)
        except OSError:
            return None
        try:  # for the header alone: `open` reads it again, and says what is wrong
            state: str | None = effective_state(self.run)[0]
        except (CockpitError, OSError):
            state = None
        return Opened(data, state=state, following=True, first_look=True)

    def open(self, label: str | None = None) -> Opened:
        """The whole journal so far (the tailer left at its end), the end of stdout.log, the
        state, the alert rules and records: what a screen shows first."""
        data, self.tailer = load_journal(self.run.events, label or self.run.name)
        self.trims += give_back_freed_memory()  # the journal's reads, freed batch by batch
        first = Update()
        self._status(first, force=True)
        return Opened(data, output=self.output.first(OUTPUT_MAX_LINES) if self.output else [],
                      state=self.state, resumable=first.resumable,
                      rules=self._rules.first() if self._rules else None,
                      alerts=self._rules.alerts() if self._rules else [],
                      journal_error=first.journal_error, problem=first.problem, following=True)

    def poll(self) -> Update:
        """One poll: new records, new output lines, and at STATUS_S the state, the journal's
        trouble and the alert rules when they changed."""
        update = Update(records=self.tailer.poll(), output=self.output.poll() if self.output else [])
        self._status(update)
        # The records of earlier polls are applied and freed by now (those of this one are not
        # yet: the next trim takes them).
        self._read_since_trim += len(update.records)
        if self._read_since_trim >= TRIM_EVERY_RECORDS or (
                not update.records and self._read_since_trim >= TRIM_IDLE_RECORDS):
            self._read_since_trim = 0
            self.trims += give_back_freed_memory()
        return update

    def caught_up(self, before: tuple[int, int]) -> bool:
        """Nothing was read since `before` (`self.offsets()`): the files hold no more for now."""
        return self.offsets() == before

    def offsets(self) -> tuple[int, int]:
        return self.tailer.offset, self.output.offset if self.output else 0

    def updates(self, stop: Stop, *, idle: bool = False) -> Iterator[Update]:
        """One update per poll that found something (every poll with `idle`); a poll that read
        something is followed at once by another (one poll reads at most 64 MB), else by a pause
        of `poll_s`."""
        while not stop():
            before = self.offsets()
            update = self.poll()
            if update or idle:
                yield update
            if self.ended:
                return
            if self.caught_up(before):
                time.sleep(self.poll_s)

    def _status(self, update: Update, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now < self._status_due:
            return
        self._status_due = now + self.status_s
        try:
            state: str | None = effective_state(self.run)[0]
            problem = None
        except (CockpitError, OSError) as exc:
            state, problem = self.state, str(exc)
        if problem != self._problem:
            self._problem = update.problem = problem
        if state != self.state or force:
            self.state = update.state = state
            if self._resumable is not None:
                update.resumable = self._resumable(state)
            if self._until_ended and state is not None and state not in LIVE_STATES:
                self.ended = True
        if self._journal_errors:
            try:
                trouble = self.run.read_status().journal_error or None
            except CockpitError:
                trouble = self._trouble
            if trouble != self._trouble:
                self._trouble = trouble
                update.journal_error = trouble
        if self._rules and not force:
            update.rules = self._rules.changed()


class FilesFollower:
    """An output dir that no cockpit run owns, read again (`load_replay`) whenever a checkpoint or
    a completions file lands in it. The first update only starts the clock (`at`)."""

    def __init__(self, path: str, folder: Path, *, poll_s: float = FILES_POLL_S) -> None:
        self.path, self.folder, self.poll_s = path, folder, poll_s

    def updates(self, stop: Stop) -> Iterator[Update]:
        from cockpit.metrics.replay_loader import load_replay

        seen = files_signature(self.folder)
        yield Update(at=time.time())
        while not stop():
            time.sleep(self.poll_s)
            now = files_signature(self.folder)
            if now == seen:
                continue
            time.sleep(FILES_SETTLE_S)
            try:
                data = load_replay(self.path)
            except Exception:  # noqa: BLE001 - a half-written file: try again at the next change
                continue
            seen = now
            yield Update(data=data, at=time.time())


Follower = RunFollower | FilesFollower


def open_path(path: str) -> tuple[Opened, Follower | None]:
    """A path given to replay, read, and what follows it from here: a live run's journal (its
    folder, or its events.jsonl) is tailed; an output dir no cockpit run owns is followed as
    files; anything else inside a live run is a snapshot (`snapshot_of` names the run); the rest
    is read once. Raises CockpitError (or whatever the loader meets) when it cannot be read."""
    from cockpit.metrics.replay_loader import load_replay

    data = load_replay(path)
    run, whole = live_run(path)
    if run is not None and whole:
        # Read it again, keeping the tailer where this read ended: lines written after the
        # loader's pass are neither lost nor counted twice.
        follower = RunFollower(run, until_ended=True)
        opened = follower.open(data.label)
        opened.data.name, opened.data.notes = data.name, data.notes
        return opened, follower
    opened = Opened(data, snapshot_of=run.name if run else None)
    folder = written_elsewhere(path)
    return opened, (FilesFollower(path, folder) if folder is not None else None)


def written_elsewhere(path: str) -> Path | None:
    """The output dir to follow as files, when `path` is one that no cockpit run folder holds."""
    p = Path(path).absolute()
    if not p.is_dir() or checkpoint_step(p.name) is not None \
            or any((c / "status.json").is_file() for c in (p, *list(p.parents)[:3])):
        return None  # a checkpoint never changes; a cockpit run's journal is followed instead
    if (p / "trainer_state.json").is_file() or any(p.glob("checkpoint-*")) or (p / "completions").is_dir():
        return p
    return None


def files_signature(folder: Path) -> tuple:
    """What changes when a trainer writes a checkpoint or a completions file."""
    sig = []
    for f in (folder / "trainer_state.json", *folder.glob("checkpoint-*/trainer_state.json")):
        try:
            st = f.stat()
        except OSError:
            continue
        sig.append((str(f), st.st_mtime_ns, st.st_size))
    comp = folder / "completions"
    count = sum(1 for _ in comp.glob("completions_*.parquet")) if comp.is_dir() else 0
    return (tuple(sorted(sig)), count)


def live_run(path: str) -> tuple[RunFolder | None, bool]:
    """(the live run a path belongs to, whether the path is that run's journal); (None, False)
    when it belongs to no run, or to one that has ended."""
    p = Path(path).absolute()
    whole = (p.is_dir() and (p / "events.jsonl").is_file()) or p.name == "events.jsonl"
    folder = p if p.is_dir() else p.parent
    for candidate in (folder, *list(folder.parents)[:3]):
        if (candidate / "status.json").is_file() and (candidate / "events.jsonl").is_file():
            run = RunFolder(candidate)
            try:
                live = effective_state(run)[0] in LIVE_STATES
            except (CockpitError, OSError):
                return None, False
            if not live:
                return None, False
            return run, whole and (p == candidate or p == candidate / "events.jsonl")
    return None, False
