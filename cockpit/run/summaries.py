"""Runs as the user names them: one line per run for `cockpit runs` and the home screen
(without reading whole journals), and the one lookup of a run by path, name or name prefix
that every command uses."""

from __future__ import annotations

import difflib
import gc
import itertools
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.formats import fmt_duration
from cockpit.run import journal
from cockpit.run.folder import LIVE_STATES, SCRIPT_TRAINER, RunFolder, Status, list_runs, read_tail

TAIL_BYTES = 256 * 1024


@dataclass
class RunSummary:
    name: str
    path: str
    state: str
    trainer: str
    step: int | None
    max_steps: int | None
    eta_s: float | None
    created: float
    """When the run's newest attempt started (status.json; run.yaml's time for a run without one)."""
    phase: str | None
    reason: str | None
    error: str | None = None
    metric: str | None = None
    """The newest headline value, e.g. `loss 0.318` or `reward 0.71` (HEADLINE_KEYS)."""
    journal_error: str | None = None
    """Why the run's events.jsonl cannot be written (status.json), while that lasts: what is shown
    of the run may be behind what it did."""
    script: bool = False
    """A script run (status.json's trainer is SCRIPT_TRAINER): only its run.yaml names a command
    the home list shows. Kept in the index, not in `to_dict` (`cockpit runs --json`, MCP)."""

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def journal_note(self) -> str | None:
        """The one line lists show for a journal that cannot be written, or None."""
        if not self.journal_error:
            return None
        why = " ".join(str(self.journal_error).split())[:200]
        return f"journal not written ({why}) — what is shown is behind the training until it can be written"

    @property
    def state_label(self) -> str:
        """The state as lists show it: "running (supervisor gone)" for a trainer training on alone."""
        if self.live and (self.reason or "").startswith(SUPERVISOR_GONE):
            return f"{self.state} ({SUPERVISOR_GONE})"
        return self.state

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["script"]
        return out


_SUMMARY_FIELDS = fields(RunSummary)


def tail_records(path: Path, nbytes: int = TAIL_BYTES) -> list[journal.Record]:
    """The complete records in the last `nbytes` of a journal (the first, partial line dropped)."""
    data, start = read_tail(path, nbytes)
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    lines = lines[:-1]  # the last element is "" or a partial line
    out = []
    for line in lines:
        try:
            out.append(journal.decode(line))
        except journal.DecodeError:
            continue
    return out


SUPERVISOR_GONE = "supervisor gone"
"""The start of the reason of a run whose trainer trains on after its supervisor died: `runs` shows
such a run as "running (supervisor gone)"."""


def effective_state(run: RunFolder) -> tuple[str, str | None]:
    """The status, reconciled with what is alive when the supervisor died without its last word.

    The one place every reader (`runs`, `attach`, `watch`, `resume`, `stop`, the TUI) asks. With
    the supervisor gone: a trainer still provably the run's (`run/owner.py`) is still "running"
    (reason "supervisor gone …": a force stop works on it, resume waits for it); with the trainer
    gone too, the run "failed" with what its own verdict or its log's tail says (a stop-and-save it
    finished on its own reads "stopped"), and resume works."""
    return _effective(run.read_status(), run)


def supervisor_alive(st: Status) -> bool:
    """The recorded supervisor is alive and is the same process: its start time is recorded and still
    its own. A status without one (an older cockpit's, a damaged one) proves nothing: a pid alone
    may have been given to anyone since."""
    from cockpit.run import owner

    return owner.same_process(st.supervisor_pid, st.supervisor_started)


def _effective(st: Status, run: RunFolder | None = None) -> tuple[str, str | None]:
    if not (st.live and st.supervisor_pid and st.host == os.uname().nodename) or supervisor_alive(st):
        return st.state, st.reason
    if run is None:
        return "failed", "the supervisor process is gone (machine restarted or it was killed)"
    from cockpit.run import owner

    alive = [] if st.job_id is not None else owner.run_processes(
        run.path, st.pgid, st.pid_started, exclude=(st.supervisor_pid,), marker=st.marker, trainer_only=True)
    if alive:  # the pids named are the ones alive now: the recorded leader may have died before its children
        pids = ", ".join(str(p.pid) for p in sorted(alive, key=lambda p: p.pid != st.pid)[:4])
        return "running", (f"{SUPERVISOR_GONE} — the trainer is still running (pid {pids}); "
                           "`cockpit stop --force` ends it, `cockpit stop` saves and stops it")
    return _ended_unsupervised(run, st.started)


def _journal_end(records: list[journal.Record], since: float | None) -> journal.Record | None:
    """The `run_ended` this attempt's supervisor wrote (at or after `since`, the attempt's start),
    if it got to write one."""
    for rec in reversed(records):
        if rec.kind == journal.RUN_ENDED and isinstance(rec.data, dict):
            return rec if since is not None and rec.t is not None and rec.t >= since - 1.0 else None
    return None


def _ended_unsupervised(run: RunFolder, since: float | None = None) -> tuple[str, str]:
    """How an attempt ended when no supervisor saw it end: the training process's own verdict
    (control/outcome.json), else the tail of its log."""
    from cockpit.run import diagnose
    from cockpit.run.section import script_section  # pydantic: only for a run whose supervisor died

    gone = "the supervisor process is gone (it was killed, or the machine restarted) and the trainer has exited"
    records = tail_records(run.events)
    ended = _journal_end(records, since)
    if ended is not None:  # the supervisor wrote the end in the journal but could not write status.json
        data = ended.data
        said = data.get("state")
        state = said if isinstance(said, str) and said in ("finished", "stopped", "failed", "killed") else "failed"
        return state, (f"{data.get('reason') or state} (status.json could not be written at the end: the "
                       "journal's run_ended says how it ended)")
    script = script_section(run) is not None
    found = diagnose.verdict(run.read_outcome(), script=script, exit_code=None,
                             trained=script and any(r.kind == journal.RUN_STARTED for r in records))
    if found is not None:  # its own word: a run that trained to the end and saved reads finished
        return found[0], f"{gone}: {found[1].reason}"
    tail = read_tail(run.stdout_log, 32_768)[0].decode("utf-8", errors="replace")
    diag = diagnose.explain(tail, fallback="", fix="")
    return "failed", f"{gone}: {diag.reason}" if diag.reason else gone


HEADLINE_KEYS = ("reward", "objective/rlhf_reward", "rewards/margins", "loss", "train_loss")
"""A run's key metric, the first of these it logs: what an RL run is after (its mean reward; a
GRPO loss sits near 0), a preference run's margin (chosen over rejected), else the loss. The runs
list shows its newest value; the Checkpoints tab shows its value at each checkpoint."""


HEADLINE_LOOKBACK = 16
"""Metrics records read back, at most, for one with a headline key (a 1,000-run list reads a few)."""
LOSS_KEYS = ("loss", "train_loss")
"""Headline keys an eval loss says more than (held-out data, not the batch trained on)."""
EVAL_HEADLINE = "eval_loss"


def headline(values: dict, evals: dict | None = None) -> str | None:
    """`loss 0.318` from a metrics record's values, or None when it has none of HEADLINE_KEYS.
    A run whose headline would be its loss shows its newest eval loss instead, when it has one
    (`evals`: the newest eval record's values). The runs list and `cockpit runs` both show it."""
    for key in HEADLINE_KEYS:
        v = values.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            e = (evals or {}).get(EVAL_HEADLINE)
            if key in LOSS_KEYS and isinstance(e, (int, float)) and not isinstance(e, bool):
                return f"{EVAL_HEADLINE} {e:.3g}"
            return f"{key.rsplit('/', 1)[-1]} {v:.3g}"
    return None


def _headline_record(rec: journal.Record) -> bool:
    """A metrics record the list's headline comes from: not the end-of-training summary
    (`train_loss` after a GRPO run's rewards), unless nothing else was logged."""
    return not journal.is_summary(rec.data) and headline(rec.data) is not None


@dataclass
class _TailFacts:
    step: int | None = None
    max_steps: int | None = None
    eta: float | None = None
    phase: str | None = None
    trainer: str | None = None
    metric: str | None = None


def _facts_from_records(records: list[journal.Record]) -> _TailFacts:
    """What the list shows, read forwards: the later record wins each fact."""
    f = _TailFacts()
    best: dict | None = None
    summary: dict | None = None
    evals: dict | None = None
    for rec in records:
        if rec.kind == journal.PROGRESS:
            f.step, f.max_steps, f.eta = rec.step, rec.data.get("max_steps"), rec.data.get("eta_s")
        elif rec.kind == journal.METRICS and rec.step is not None:
            f.step = rec.step
            if _headline_record(rec):
                best = rec.data
            elif headline(rec.data) is not None:
                summary = rec.data
        elif rec.kind == journal.EVAL and EVAL_HEADLINE in rec.data:
            evals = rec.data
        elif rec.kind == journal.PHASE:
            f.phase = rec.data.get("phase")
        elif rec.kind == journal.RUN_STARTED:
            f.trainer = rec.data.get("trainer") or f.trainer
            f.max_steps = rec.data.get("max_steps") or f.max_steps
    chosen = best if best is not None else summary
    f.metric = headline(chosen, evals) if chosen is not None else None
    return f


def _newest(data: bytes, lo: int, hi: int, kind: str) -> Iterator[tuple[journal.Record, int]]:
    """Records of `kind` among the complete lines data[lo:hi], newest first: found with a byte
    search for the `"kind":"..."` every cockpit writer emits, decoding only those lines."""
    marker = b'"kind":"' + kind.encode() + b'"'
    end = hi
    while end > lo:
        pos = data.rfind(marker, lo, end)
        if pos < 0:
            return
        start = max(lo, data.rfind(b"\n", lo, pos) + 1)
        stop = data.find(b"\n", pos, hi)
        try:
            rec = journal.decode(data[start:stop if stop >= 0 else hi])
        except journal.DecodeError:
            rec = None
        if rec is not None and rec.kind == kind:  # not the same text inside another record's data
            yield rec, start
        end = start


NEWEST_CHUNK = 4 << 20
"""How much of a journal `newest_record` reads at a time, from the end backwards."""
_NEWEST: dict[tuple[str, str], tuple[int, int, journal.Record | None]] = {}
"""(path, kind) -> (inode, bytes scanned: the end of the last whole line, the newest record found):
a journal only grows, so the next call reads what was appended since."""


def newest_record(path: Path, kind: str, chunk: int = NEWEST_CHUNK) -> journal.Record | None:
    """The newest record of `kind` in the whole journal, without decoding every line: the file is
    read from its end backwards a chunk at a time, and only the lines holding the
    `"kind":"..."` marker are decoded (`_newest`); a later call reads only what was appended
    since. A 100,000-step journal's `run_started` is on its first line: found by reading the
    file once, where decoding all 200,000 lines took seconds. A journal not written by cockpit's
    codec (no marker anywhere) is read record by record."""
    from cockpit.files import open_regular

    codec = b'"kind":"'
    try:
        fh = open_regular(path)
    except OSError:
        return None
    with fh:
        st = os.fstat(fh.fileno())
        key = (str(path), kind)
        ino, floor, known = _NEWEST.get(key, (st.st_ino, 0, None))
        if ino != st.st_ino or floor > st.st_size:  # replaced or truncated: from the start
            floor, known = 0, None
        end = st.st_size
        whole = None  # the end of the file's last whole line
        carry = b""  # the head of a line the previous chunk began inside
        seen_codec = floor > 0
        found = None
        while end > floor:
            start = max(floor, end - chunk)
            fh.seek(start)
            block = fh.read(end - start) + carry
            if whole is None:
                whole = start + block.rfind(b"\n") + 1 if b"\n" in block else None
            lo = block.find(b"\n") + 1 if start > floor else 0
            if lo == 0 and start > floor:  # a line longer than the chunk: read on with all of it
                carry, end = block, start
                continue
            seen_codec = seen_codec or block.find(codec) >= 0
            found = next((rec for rec, _ in _newest(block, lo, len(block), kind)), None)
            if found is not None:
                break
            carry, end = block[:lo], start
    result = found or known
    if result is None and not seen_codec and st.st_size:
        every = [r for r in journal.read_all(path)[0] if r.kind == kind]
        result = every[-1] if every else None
    _NEWEST[key] = (st.st_ino, whole if whole is not None else floor, result)
    return result


def tail_facts(path: Path, nbytes: int = TAIL_BYTES) -> _TailFacts:
    """The same facts as `_facts_from_records(tail_records(path))`, without decoding every line:
    a 1,000-run folder's journals hold ~1M lines in their last 256 KB, and the list needs about
    five of them per run (bench: runs_cli_1000_s)."""
    data, start = read_tail(path, nbytes)
    hi = data.rfind(b"\n")
    lo = data.find(b"\n") + 1 if start > 0 else 0
    if hi < 0 or lo > hi:
        return _TailFacts()
    if data.find(b'"kind":"', lo, hi) < 0:  # not written by cockpit's codec: read it all
        return _facts_from_records(tail_records(path, nbytes))
    f = _TailFacts()
    progress = next(_newest(data, lo, hi, journal.PROGRESS), None)
    metrics = next(((r, at) for r, at in _newest(data, lo, hi, journal.METRICS) if r.step is not None), None)
    # The headline: the newest metrics record that is not the end-of-training summary (a few
    # records back at most), and the newest eval loss.
    shown = next((r for r, _at in itertools.islice(_newest(data, lo, hi, journal.METRICS), HEADLINE_LOOKBACK)
                  if r.step is not None and _headline_record(r)), None)
    if shown is None and metrics is not None and headline(metrics[0].data) is not None:
        shown = metrics[0]
    evals = next((r for r, _at in _newest(data, lo, hi, journal.EVAL) if EVAL_HEADLINE in r.data), None)
    started_max = started_trainer = None
    for rec, at in _newest(data, lo, hi, journal.RUN_STARTED):
        if started_max is None and rec.data.get("max_steps"):
            started_max = (rec, at)
        if started_trainer is None and rec.data.get("trainer"):
            started_trainer = rec
        if started_max is not None and started_trainer is not None:
            break
    phase = next(_newest(data, lo, hi, journal.PHASE), None)
    newest_step = max((c for c in (progress, metrics) if c is not None), key=lambda c: c[1], default=None)
    if newest_step is not None:
        f.step = newest_step[0].step
    if shown is not None:
        f.metric = headline(shown.data, evals.data if evals is not None else None)
    if progress is not None:
        f.eta = progress[0].data.get("eta_s")
    newest_max = max((c for c in (progress, started_max) if c is not None), key=lambda c: c[1], default=None)
    if newest_max is not None:
        f.max_steps = newest_max[0].data.get("max_steps")
    if phase is not None:
        f.phase = phase[0].data.get("phase")
    if started_trainer is not None:
        f.trainer = started_trainer.data.get("trainer")
    return f


def summarize(run: RunFolder) -> RunSummary:
    try:
        st = run.read_status()
        state, reason = _effective(st, run)
        error = None
    except CockpitError as exc:
        from cockpit.run.folder import Status

        st, state, reason, error = Status(), "unknown", None, str(exc)
    f = tail_facts(run.events)
    trainer = f.trainer or st.trainer
    max_steps = f.max_steps
    # When its newest attempt started (status.json), not a file's time: a rename, an archive or
    # an unarchive rewrites run.yaml, and a run renamed today is not a run started today.
    created = st.started if isinstance(st.started, (int, float)) and st.started > 0 else None
    if created is None:
        try:
            created = run.run_yaml.stat().st_mtime
        except OSError:
            created = 0.0
    if max_steps is not None and max_steps < 0:
        max_steps = None
    return RunSummary(run.name, str(run.path), state, trainer or "?", f.step, max_steps,
                      f.eta if state in LIVE_STATES else None, created, f.phase, reason, error,
                      f.metric, st.journal_error or None, st.trainer == SCRIPT_TRAINER)


def run_summaries(runs_dir: Path) -> list[RunSummary]:
    """Live runs first, then newest first."""
    return RunsIndex(runs_dir).summaries()


def _stamp(run: RunFolder) -> tuple:
    """What a summary depends on, from stat alone: a run whose stamp is unchanged needs no
    re-read (its pid is still checked while it says it is live)."""
    return _stamp_of(str(run.path))[0]


_STAMPED = ("events.jsonl", "status.json", "run.yaml")


def _stamp_of(path: str) -> tuple[tuple, float | None]:
    """(the stamp of the run folder at `path`: size, mtime_ns, inode of each of _STAMPED, in one
    flat tuple of 9, None three times for a file that is missing; run.yaml's mtime or None), with
    plain `os.stat` calls: 10,000 runs are 30,000 of them."""
    out: list[int | None] = []
    for name in _STAMPED:
        try:
            st = os.stat(f"{path}/{name}")
            out += (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            out += (None, None, None)
    yaml = out[7]
    return tuple(out), (yaml / 1e9 if yaml is not None else None)


def _stamped_runs(runs_dir: Path) -> list[tuple[str, tuple]]:
    """The runs of `list_runs` (the same folders, the same order: newest run.yaml first), each
    as its path and stamp, listed with `os.scandir` and stamped in the same pass."""
    try:
        entries = list(os.scandir(runs_dir))
    except OSError:
        return []
    found = []
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            if not e.is_dir():
                continue
        except OSError:
            continue
        path = os.path.join(runs_dir, e.name)
        stamp, created = _stamp_of(path)
        if created is None:  # no run.yaml: not a run (list_runs)
            continue
        found.append((created, path, stamp))
    found.sort(key=lambda r: r[0], reverse=True)
    return [(path, stamp) for _, path, stamp in found]


INDEX_NAME = ".cockpit-index"
"""The runs folder's kept summaries (`RunsIndex`): hidden, so never listed as a run."""
INDEX_VERSION = 2
"""2: each run a list [stamp, values in `fields` order] (1 held a dict of fields a run: read ~3× slower)."""
INDEX_MAX_BYTES = 64 << 20
"""An index larger than this is not read (100,000 runs' summaries are ~30 MB)."""


_STAMP_TYPES = frozenset(tuple(t for part in parts for t in part)
                         for parts in itertools.product(((int, int, int), (type(None),) * 3), repeat=len(_STAMPED)))
"""The types a stamp read back from the index may have (`_stamp_of`: three ints or three None a file)."""


def _stamp_key(stamp: Any) -> tuple | None:
    """A stamp read back from the index (a list) as `_stamp_of` makes it (a tuple), or None if malformed."""
    if type(stamp) is not list:
        return None
    key = tuple(stamp)
    return key if tuple(map(type, key)) in _STAMP_TYPES else None


def index_bytes(runs_dir: Path) -> int:
    """The size of the runs folder's index (INDEX_NAME), 0 when there is none: what reading it costs."""
    try:
        return os.lstat(os.path.join(runs_dir, INDEX_NAME)).st_size
    except OSError:
        return 0


def read_index(runs_dir: Path) -> dict[str, tuple[tuple, RunSummary]]:
    """The kept summaries of a runs folder by run name, each with the stamp it was read at; {} when
    there is no index, or it is a link, not a regular file, too large, damaged or from another
    version (an entry that does not parse is skipped). Never raises: the index only saves reads."""
    return read_index_and_live(runs_dir)[0]


def read_index_and_live(runs_dir: Path) -> tuple[dict[str, tuple[tuple, RunSummary]], list[str]]:
    """`read_index`, and the names of the runs that were live when it was written (their rows are
    not kept: they are read again each time)."""
    import stat as _stat

    path = Path(runs_dir) / INDEX_NAME
    try:
        # Never through a link: an index pointing out of the runs folder is no index.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}, []
    try:
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not _stat.S_ISREG(st.st_mode) or st.st_size > INDEX_MAX_BYTES:
                return {}, []
            raw = fh.read(INDEX_MAX_BYTES + 1)
    except OSError:
        return {}, []
    with _gc_paused():  # 10,000 runs are ~300,000 objects: collections while they are made doubled the read
        return _index_entries(raw)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector off while a bulk of acyclic objects is made (back on after, as it was)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _index_entries(raw: bytes) -> tuple[dict[str, tuple[tuple, RunSummary]], list[str]]:
    try:
        obj = _json_loads(raw)
    except (ValueError, RecursionError, TypeError):
        return {}, []
    if not isinstance(obj, dict) or obj.get("version") != INDEX_VERSION or not isinstance(obj.get("runs"), dict) \
            or obj.get("fields") != _FIELD_ORDER:  # written for another RunSummary
        return {}, []
    live = obj.get("live")  # absent from an index written before it was kept: none known
    live_names = [name for name in live if _run_name_ok(name)] if type(live) is list else []
    out: dict[str, tuple[tuple, RunSummary]] = {}
    # Exact types (orjson and json give exactly these): a bool is never taken for an int. A row's
    # types as one tuple, checked once for each such tuple met (a folder's runs share a few).
    good, bad, n = set(), set(), len(_FIELD_ORDER)
    for name, entry in obj["runs"].items():
        if type(entry) is not list or len(entry) != 2 or not _run_name_ok(name):
            continue
        stamp = _stamp_key(entry[0])
        values = entry[1]
        if stamp is None or type(values) is not list or len(values) != n:
            continue
        types = tuple(map(type, values))
        if types not in good:
            if types in bad or not all(t in want for t, want in zip(types, _FIELD_WANTS, strict=True)):
                bad.add(types)
                continue
            good.add(types)
        out[name] = (stamp, RunSummary(*values))
    return out, live_names


def _run_name_ok(name: Any) -> bool:
    """A run's name as the index may hold it: a folder right in the runs folder, not hidden."""
    return type(name) is str and bool(name) and "/" not in name and not name.startswith(".") \
        and "\0" not in name


def _json_loads(raw: bytes) -> Any:
    try:
        import orjson

        return orjson.loads(raw)
    except ImportError:
        import json

        return json.loads(raw)


_NONE = type(None)
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    f.name: {"name": (str,), "path": (str,), "state": (str,), "trainer": (str,), "created": (int, float),
             "step": (int, _NONE), "max_steps": (int, _NONE), "eta_s": (int, float, _NONE),
             "script": (bool,)}.get(f.name, (str, _NONE))
    for f in _SUMMARY_FIELDS}
"""What each summary field read back from the index may hold: the types `summarize` writes (a
damaged or hand-edited entry is read again, never shown)."""
_FIELD_ORDER = [f.name for f in _SUMMARY_FIELDS]
"""The index's `fields`: the order of each run's values."""
_FIELD_WANTS = tuple(frozenset(_FIELD_TYPES[name]) for name in _FIELD_ORDER)


def write_index(runs_dir: Path, known: dict[str, tuple[tuple, RunSummary]]) -> bool:
    """Keep the settled runs' summaries in the runs folder (atomically: a reader sees the old or
    the new index whole; a link in its place is replaced, never followed). Live runs are left
    out: they are read again every time anyway. False when it cannot be written (a read-only
    shared folder): the list is the same, only the next start reads more."""
    from cockpit.files import write_atomic

    runs = {os.path.basename(key): [stamp, [getattr(row, name) for name in _FIELD_ORDER]]
            for key, (stamp, row) in known.items() if not row.live}
    # The live runs by name only: a fresh process shows them, read at once, with the kept rows
    # before it checks any file (`RunsIndex.kept`).
    index = {"version": INDEX_VERSION, "fields": _FIELD_ORDER, "runs": runs,
             "live": [os.path.basename(key) for key, (_stamp, row) in known.items() if row.live]}
    try:
        import orjson

        data = orjson.dumps(index)
    except ImportError:
        import json

        data = json.dumps(index).encode()
    try:
        write_atomic(Path(runs_dir) / INDEX_NAME, data)
    except OSError:
        return False
    return True


class RunsIndex:
    """The runs of a runs folder, kept between refreshes: each refresh re-reads only the runs
    whose journal, status or run.yaml changed, and the live ones (their supervisor may have
    died without a word). The home screen holds one and refreshes it every 2 s.

    The settled runs' summaries are also kept in the runs folder (`.cockpit-index`, INDEX_NAME),
    so a fresh process (`cockpit runs`, home's first frame) reads only the runs whose files
    changed since: each entry holds the stamp (size, mtime, inode of events.jsonl, status.json,
    run.yaml) it was read at, and is used only while the files still have it. The files always
    win: a changed run is read again, a deleted one dropped, a damaged index ignored.

    Home shows the kept rows before checking them (`kept`, then `summaries`): stat-ing 10,000
    folders is a third of a second its first frame does not wait for."""

    def __init__(self, runs_dir: Path, *, keep: bool = True) -> None:
        self.runs_dir = Path(runs_dir)
        self._known: dict[str, tuple[tuple | None, RunSummary]] = {}
        self.reread = 0
        """How many runs the last refresh read again (the rest came from the cache)."""
        self.keep = keep
        """Read and write the runs folder's index (INDEX_NAME)."""
        self._saved: tuple[dict[str, tuple], list[str]] | None = None
        """The settled runs' stamps and the live runs' names as the index on disk holds them
        (None: not read yet)."""

    def _read_saved(self) -> dict[str, tuple[tuple | None, RunSummary]]:
        """The index on disk, once: its entries by run path (and `_saved` from it)."""
        on_disk, live = read_index_and_live(self.runs_dir)
        self._saved = ({name: stamp for name, (stamp, _row) in on_disk.items()}, live)
        entries: dict[str, tuple[tuple | None, RunSummary]] = {}
        folder = os.path.join(self.runs_dir, "")  # a name holds no "/" (`_run_name_ok`): joined by hand, 10,000 times
        for name, entry in on_disk.items():
            key = folder + name
            if entry[1].path != key:  # where the folder is now
                entry[1].path = key
            entries[key] = entry
        return entries

    def kept(self) -> list[RunSummary] | None:
        """The runs as the runs folder's index keeps them, before any of their files is checked:
        the settled runs' rows as they were written, and the runs that were live then read now
        (a live run's row changes at every step). None when there is nothing kept, or this index
        has read the folder already: then `summaries`.

        What changed since the index was written shows at the next `summaries`, which checks
        every run's files (a run changed, made or deleted since: read again, added, dropped)."""
        if not self.keep or self._saved is not None or self._known:
            return None
        known = self._read_saved()
        if not known:
            return None
        live: list[str] = self._saved[1] if self._saved else []
        for name in live:
            key = os.path.join(self.runs_dir, name)
            if key in known or not os.path.isfile(os.path.join(key, "run.yaml")):
                continue
            known[key] = (None, summarize(RunFolder(Path(key))))  # no stamp: read again by `summaries`
        self._known = known
        rows = [row for _stamp, row in known.values()]
        rows.sort(key=lambda r: (not r.live, -r.created))
        return rows

    def summaries(self) -> list[RunSummary]:
        rows: list[RunSummary] = []
        known: dict[str, tuple[tuple, RunSummary]] = {}
        reread = 0
        previous = self._known
        if self.keep and self._saved is None:
            on_disk = self._read_saved()
            if not previous:
                previous = on_disk
        for key, stamp in _stamped_runs(self.runs_dir):
            cached = previous.get(key)
            if cached is not None and cached[0] == stamp and not cached[1].live:
                row = cached[1]
            else:
                row = summarize(RunFolder(Path(key)))
                reread += 1
            known[key] = (stamp, row)
            rows.append(row)
        self._known, self.reread = dict(known), reread
        if self.keep:
            saved = ({os.path.basename(key): stamp for key, (stamp, row) in known.items() if not row.live},
                     [os.path.basename(key) for key, (_stamp, row) in known.items() if row.live])
            if saved != self._saved:
                write_index(self.runs_dir, known)
                self._saved = saved
        rows.sort(key=lambda r: (not r.live, -r.created))
        return rows


# -- finding a run by what the user typed ---------------------------------------------------


def resolve_run(ref: str, runs_dir: Path) -> RunFolder:
    """A run folder path, or a run's name (or unique name prefix) in the runs folder.

    Every command that takes a run goes through here, so they all accept the same things and a
    near miss gets the same "did you mean".
    """
    p = Path(ref).expanduser()
    _refuse_both(ref, p, runs_dir)
    if p.is_dir():
        run = RunFolder(p)
        if not run.exists():
            raise CockpitError(f"{ref}: not a run folder (no run.yaml or events.jsonl)")
        return run
    found = _find_by_name(ref, runs_dir)
    if found is None:
        raise CockpitError(f"{ref}: no such run in {runs_dir} — "
                           f"{_did_you_mean(ref, runs_dir) or '`cockpit runs` lists them'}")
    return found


def resolve_run_or_path(ref: str, runs_dir: Path) -> Path:
    """For commands that also read files and folders outside the runs dir (replay, export): an
    existing path as given, else the run of that name or prefix."""
    p = Path(ref).expanduser()
    _refuse_both(ref, p, runs_dir)
    if p.exists() or os.sep in ref or p.suffix in (".json", ".jsonl"):
        return p  # a path: the source reader names what is wrong with it
    found = _find_by_name(ref, runs_dir)
    if found is None:
        raise CockpitError(f"{ref}: no such file, folder or run in {runs_dir} — "
                           f"{_did_you_mean(ref, runs_dir) or 'give a path, or a run name from `cockpit runs`'}")
    return found.path


def _refuse_both(ref: str, p: Path, runs_dir: Path) -> None:
    """A bare word that is both a file or folder here and a run's name (or unique prefix) in the
    runs folder: one line naming both and how to give each (with a slash, neither is a name)."""
    if not ref or os.sep in ref or ref.startswith("~") or ref in (".", "..") or not p.exists():
        return
    try:
        run = _find_by_name(ref, runs_dir)
    except CockpitError:  # a prefix of several runs names no one run: the path is what was meant
        return
    if run is None or run.path.resolve() == p.resolve():
        return
    what = "folder" if p.is_dir() else "file"
    raise CockpitError(f"{ref}: both a {what} here and the run {run.name} in {runs_dir} — give ./{ref} for the "
                       f"{what}, or {run.path} for the run")


def _run_names(runs_dir: Path) -> list[str]:
    """Names of the run folders, newest first."""
    return [r.name for r in list_runs(runs_dir)]


def _find_by_name(ref: str, runs_dir: Path) -> RunFolder | None:
    names = _run_names(runs_dir)
    if ref in names:
        return RunFolder(runs_dir / ref)
    matches = [n for n in names if n.startswith(ref)] if ref else []
    if len(matches) == 1:
        return RunFolder(runs_dir / matches[0])
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise CockpitError(f"{ref}: matches {len(matches)} runs ({shown}) — give more of the name")
    return None


def _did_you_mean(ref: str, runs_dir: Path, n: int = 3) -> str:
    """"did you mean 'x'?" naming the closest run names, or "".

    Run names end in a timestamp, so a typo in the preset part is compared with the same
    length of each name as well as with the whole name.
    """
    scored = []
    for order, name in enumerate(_run_names(runs_dir)):
        score = max(difflib.SequenceMatcher(None, ref, name).ratio(),
                    difflib.SequenceMatcher(None, ref, name[:len(ref)]).ratio())
        if score >= 0.75:
            scored.append((-score, order, name))
    close = [name for _, _, name in sorted(scored)[:n]]
    if not close:
        return ""
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


def fmt_value(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
            return f"{v:.3e}"
        return f"{v:.4g}"
    return str(v)


CLOCK_SKEW_S = 60.0
"""A file dated up to this far ahead is "now" (two machines' clocks differ a little); further is "future"."""


def age_of(t: float | None, now: float, fmt: Callable[[float], str] = fmt_duration) -> str:
    """How long ago `t` was, for a list: "future" for a run dated ahead of this clock (a wrong
    clock, a folder copied from elsewhere), never a negative age."""
    if t is None or not math.isfinite(t):
        return "?"
    if now - t < -CLOCK_SKEW_S:
        return "future"
    return fmt(max(now - t, 0.0))
