# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The journal: one JSON object a line, append-only, the one file every reader tails.

Both sides import this module: the runner's callback and the supervisor write
records, the UI, `cockpit watch` and replay read them. A line looks like

    {"v":1,"t":1732240000.12,"kind":"metrics","step":40,"data":{"loss":1.23}}

Metric values may be NaN or ±Infinity (PPO logs NaN for `val/ratio_var`, DPO
NaN grad norms). Strict JSON has no spelling for them, so the codec writes the
bare literals `NaN`, `Infinity`, `-Infinity` that Python's json (and
trainer_state.json) use, and the reader accepts them.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from cockpit.errors import failure, say

_orjson: ModuleType | None
try:  # orjson is a dependency, but the codec keeps working without it.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    _orjson = None

VERSION = 1

# Every kind a journal may hold; a reader skips (and counts) lines of other kinds
# only when their version is newer than it knows.
RUN_STARTED = "run_started"
PHASE = "phase"
METRICS = "metrics"
EVAL = "eval"
PROGRESS = "progress"
CHECKPOINT = "checkpoint"
COMPLETIONS = "completions"
SYSTEM = "system"
WARNING = "warning"
STOP_REQUESTED = "stop_requested"
RUN_ENDED = "run_ended"
ALERT = "alert"
COMPLETIONS_REF = "completions_ref"
FINDING = "finding"

KINDS = frozenset(
    {RUN_STARTED, PHASE, METRICS, EVAL, PROGRESS, CHECKPOINT, COMPLETIONS, SYSTEM, WARNING,
     STOP_REQUESTED, RUN_ENDED, ALERT, COMPLETIONS_REF, FINDING}
)


@dataclass(**({"slots": True} if sys.version_info >= (3, 10) else {}))  # the hook runs on 3.9 too
class Record:
    """One journal line. `data` holds the kind's payload (see the constructors below)."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    step: int | None = None
    t: float = field(default_factory=time.time)
    v: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return {"v": self.v, "t": self.t, "kind": self.kind, "step": self.step, "data": self.data}


# -- constructors: one per kind, so writers agree on the payload's shape --------------------


def run_started(trainer: str, *, world_size: int = 1, max_steps: int | None = None,
                versions: dict[str, str] | None = None, device: str = "cpu",
                resumed_from: str | None = None, **extra: Any) -> Record:
    data = {"trainer": trainer, "world_size": world_size, "max_steps": max_steps,
            "versions": versions or {}, "device": device, "resumed_from": resumed_from, **extra}
    return Record(RUN_STARTED, data, step=0)


def phase(name: str, detail: str | None = None) -> Record:
    return Record(PHASE, {"phase": name, "detail": detail})


def metrics(step: int, values: dict[str, Any], *, epoch: float | None = None) -> Record:
    return Record(METRICS, {"epoch": epoch, **values}, step=step)


def eval_metrics(step: int, values: dict[str, Any], *, epoch: float | None = None) -> Record:
    return Record(EVAL, {"epoch": epoch, **values}, step=step)


def progress(step: int, max_steps: int | None, *, epoch: float | None = None,
             steps_per_s: float | None = None, eta_s: float | None = None) -> Record:
    return Record(PROGRESS, {"max_steps": max_steps, "epoch": epoch, "steps_per_s": steps_per_s,
                             "eta_s": eta_s}, step=step)


def checkpoint(step: int, path: str) -> Record:
    return Record(CHECKPOINT, {"path": path}, step=step)


def completions(step: int, rows: list[dict[str, Any]], *, source: str) -> Record:
    """rows: {"prompt", "completion", "rewards": {name: value}, "advantage"}; source names where
    they came from (trainer_logs, parquet, ppo_samples, generate)."""
    return Record(COMPLETIONS, {"rows": rows, "source": source}, step=step)


def completions_ref(step: int, count: int, *, source: str) -> Record:
    """A step's completions went to the run folder's completions store (`run/completions_store.py`);
    the journal keeps only this pointer, so tailing it stays cheap."""
    return Record(COMPLETIONS_REF, {"count": count, "source": source}, step=step)


def system(values: dict[str, Any]) -> Record:
    return Record(SYSTEM, values)


def warning(message: str, *, code: str = "warning", step: int | None = None,
            fix: str | None = None) -> Record:
    return Record(WARNING, {"code": code, "message": message, "fix": fix}, step=step)


def alert(rule: str, message: str, *, key: str, value: Any, step: int | None,
          actions: list[dict[str, Any]], builtin: bool = False) -> Record:
    """An alert rule fired: which rule, on what value, and what each action did (targets are named
    by kind only, never by URL)."""
    return Record(ALERT, {"rule": rule, "message": message, "key": key, "value": value,
                          "actions": actions, "builtin": builtin}, step=step)


def finding(kind: str, *, steps: tuple[int, int] | list[int] | None, severity: str, summary: str,
            fix: str | None = None, evidence: list[dict[str, Any]] | None = None,
            step: int | None = None) -> Record:
    """The run explaining itself: a finding of `kind` (a key of the findings table) over the step
    range `steps` ([first, last], inclusive), `severity` info | warning | error, a one-line
    `summary`, a `fix`, and the `evidence` that shows it: a list of
    {"type": "completions", "step": S, "what": ..., "rows": [...]} | {"type": "metric", "key": K, "points":
    [[step, value], ...]} | {"type": "prompts", "what": ..., "count": N, "prompts": [...]}
    | {"type": "file", "path": P, "what": ...}. `cockpit.findings` writes and reads these."""
    return Record(FINDING, {"kind": kind, "steps": list(steps) if steps is not None else None,
                            "severity": severity, "summary": summary, "fix": fix,
                            "evidence": evidence or []}, step=step)


def run_ended(state: str, *, exit_code: int | None = None, signal: int | None = None,
              reason: str | None = None, fix: str | None = None, step: int | None = None) -> Record:
    return Record(RUN_ENDED, {"state": state, "exit_code": exit_code, "signal": signal,
                              "reason": reason, "fix": fix}, step=step)


def is_summary(keys: Iterable[str]) -> bool:
    """The end-of-training summary entry: transformers always puts `train_runtime` in it
    (with train_loss, total_flos, train_samples_per_second, ...), and nothing else does.
    The callback flags it as it writes; replay applies the same rule to trainer_state.json."""
    return "train_runtime" in (keys if isinstance(keys, (set, frozenset, dict, tuple, list))
                               else set(keys))


# -- codec ---------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """Make a value JSON-encodable: numpy/torch scalars to Python, NaN kept as float."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return _clean(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _clean(tolist())
    return str(value)


def _has_nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nonfinite(v) for v in value)
    return False


def encode(record: Record) -> bytes:
    """One line, newline included. Uses orjson when the record has only finite numbers
    (orjson would write NaN as null), else the stdlib, which writes NaN/Infinity literals."""
    obj = record.to_dict()
    obj["data"] = _clean(obj["data"])
    if _orjson is not None and not _has_nonfinite(obj):
        try:
            return _orjson.dumps(obj) + b"\n"
        except TypeError:  # orjson refuses ints beyond 64 bits; the stdlib writes them
            pass
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=True) + "\n").encode()


class DecodeError(ValueError):
    """A line that is not a journal record (garbage, or a newer version than we know)."""


class InvalidRecord(DecodeError):
    """A record of a known kind whose fields have the wrong types (`max_steps: "abc"`): skipped and
    counted like garbage, so no reader meets a value it cannot compare, format or index."""


# -- record shapes: what each known kind's fields may hold ----------------------------------
# Checked at the decoder, by hand: a dict lookup and a few isinstance calls a record (metrics, the
# bulk of a journal, have one optional field), so tailing stays as fast as orjson's parse allows;
# the hook's copy of this module runs on the user's Python with the standard library alone.

_N: type = type(None)
_S: frozenset[type] = frozenset({str, _N})
_I: frozenset[type] = frozenset({int, _N})
_F: frozenset[type] = frozenset({int, float, _N})
_L: frozenset[type] = frozenset({list, _N})
_SHAPES: dict[str, dict[str, frozenset[type]]] = {
    RUN_STARTED: {"trainer": _S, "world_size": _I, "max_steps": _I, "versions": frozenset({dict, _N}), "device": _S,
                  "resumed_from": _S, "segment": _I, "output_dir": _S},
    PHASE: {"phase": _S, "detail": _S},
    METRICS: {"epoch": _F},
    EVAL: {"epoch": _F},
    PROGRESS: {"max_steps": _I, "epoch": _F, "steps_per_s": _F, "eta_s": _F},
    CHECKPOINT: {"path": _S},
    COMPLETIONS: {"rows": _L, "source": _S},
    COMPLETIONS_REF: {"count": _I, "source": _S},
    WARNING: {"code": _S, "message": _S, "fix": _S},
    ALERT: {"rule": _S, "message": _S, "key": _S, "actions": _L, "builtin": frozenset({bool, _N})},
    FINDING: {"kind": _S, "steps": _L, "severity": _S, "summary": _S, "fix": _S, "evidence": _L, "segment": _I},
    RUN_ENDED: {"state": _S, "exit_code": _I, "signal": _I, "reason": _S, "fix": _S},
}
"""Each known kind's fields and the exact types each may hold (JSON gives no subclasses; a bool is
not a count). Checked by type identity: a metrics line pays one dict lookup."""
_LISTS_OF_OBJECTS = {COMPLETIONS: ("rows",), ALERT: ("actions",), FINDING: ("evidence",)}
_DEEP_CHECKED = frozenset({COMPLETIONS, ALERT, FINDING, RUN_STARTED})


def _check_shape(kind: str, data: dict[str, Any]) -> None:
    """A record's fields against `_SHAPES`, and inside the lists and maps some kinds hold;
    `InvalidRecord` naming the first that is wrong. `decode` inlines the first loop."""
    shape = _SHAPES.get(kind)
    if shape is None:
        return
    for key, types in shape.items():
        if type(data.get(key)) not in types:
            raise InvalidRecord(f"{kind} record: {key} is {type(data.get(key)).__name__}")
    if kind in _LISTS_OF_OBJECTS:
        for key in _LISTS_OF_OBJECTS[kind]:
            if not all(type(x) is dict for x in data.get(key) or ()):
                raise InvalidRecord(f"{kind} record: {key} holds something that is not an object")
    if kind == RUN_STARTED and data.get("versions") and not all(type(v) is str for v in data["versions"].values()):
        raise InvalidRecord("run_started record: versions holds something that is not a string")
    if kind == FINDING and data.get("steps") is not None and not (
            len(data["steps"]) == 2 and all(type(x) is int for x in data["steps"])):
        raise InvalidRecord("finding record: steps is not [first, last]")


def loads_lenient(raw: bytes | str) -> Any:
    """Parse JSON that may carry NaN/Infinity literals (orjson refuses them, json takes them)."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8")
    return json.loads(raw)


def decode(line: bytes | str) -> Record:
    """One line to a Record; raises DecodeError for anything that is not a version we know, and
    InvalidRecord (a DecodeError) for a known kind whose fields have the wrong types."""
    try:
        obj = loads_lenient(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # deep nesting: RecursionError
        raise DecodeError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict) or "kind" not in obj:
        raise DecodeError("not a journal record")
    v = obj.get("v")
    if not isinstance(v, int) or v < 1:
        raise DecodeError("record has no version")
    if v > VERSION:
        raise DecodeError(f"record version {v} is newer than this cockpit reads ({VERSION})")
    data = obj.get("data")
    if not isinstance(data, dict):
        data = {}
    kind = obj["kind"]
    if type(kind) is not str:
        raise DecodeError("record kind is not a string")
    if kind == METRICS:  # the bulk of a journal: its one typed field, checked inline
        epoch = data.get("epoch")
        if epoch is not None and type(epoch) is not float and type(epoch) is not int:
            raise InvalidRecord(f"metrics record: epoch is {type(epoch).__name__}")
        shape = None
    else:
        shape = _SHAPES.get(kind)
    if shape is not None:  # inlined: see _check_shape
        for key, types in shape.items():
            if type(data.get(key)) not in types:
                raise InvalidRecord(f"{kind} record: {key} is {type(data.get(key)).__name__}")
        if kind in _DEEP_CHECKED:
            _check_shape(kind, data)
    step = obj.get("step")
    t = obj.get("t")
    return Record(
        kind=kind,
        data=data,
        step=step if isinstance(step, int) and not isinstance(step, bool) else None,
        t=float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else 0.0,
        v=v,
    )


# -- writer --------------------------------------------------------------------------------


class JournalWriter:
    """Appends records to events.jsonl, one write() per call, and never raises.

    Opened with O_APPEND so the supervisor and the runner can both write: each call is one
    write() of whole lines, and O_APPEND keeps concurrent writers from overwriting each other.

    Watching must never harm training, so a write that fails (a full disk, `chattr +i`, the
    file replaced by a folder) is one line on stderr, `trouble` says why, and the records wait
    in memory (at most `MAX_PENDING` bytes: the oldest go first, and are counted) until a later
    write finds the file writable again; then the journal catches up, in order. `on_trouble`
    hears the change both ways (a message, then None), so the supervisor can flag status.json.
    """

    MAX_PENDING = 8 * 2**20
    RETRY_EVERY_S = 1.0

    def __init__(self, path: str | os.PathLike[str], *,
                 on_trouble: Callable[[str | None], None] | None = None) -> None:
        self.path = os.fspath(path)
        self.on_trouble = on_trouble
        self.trouble: str | None = None
        """Why the last write failed (one line), or None while writes work."""
        self.lost = 0
        """Records dropped because the memory buffer was full while the file could not be written."""
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._lost_file: str | None = None
        self._closed = False
        self._pending: deque[bytes] = deque()
        self._pending_bytes = 0
        self._lost_since = 0
        self._caught_up = 0
        self._next_try = 0.0
        self._lock = threading.Lock()
        with self._lock:
            change = self._flush(force=True)
        self._tell(change)

    # -- public ----------------------------------------------------------------------------
    def write(self, record: Record) -> None:
        self._write(lambda: encode(record))

    def write_all(self, records: Iterable[Record]) -> None:
        records = list(records)
        if records:
            self._write(lambda: b"".join(encode(r) for r in records))

    @property
    def pending(self) -> int:
        """Bytes waiting to be written."""
        return self._pending_bytes

    def flush(self) -> bool:
        """Try to write what is waiting now (not waiting for the next retry); True when nothing is left."""
        with self._lock:
            change = self._flush(force=True)
            done = not self._pending
        self._tell(change)
        return done

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            change = self._flush(force=True)
        self._tell(change)  # a recovery may add its journal_lost line: it goes out below
        with self._lock:
            if self._closed:
                return
            change = self._flush(force=True)
            if self._pending:
                say(f"cockpit: {len(self._pending)} journal write(s) to {self.path} could not be made "
                     f"({self.trouble}) and are lost")
            self._closed = True
            if self._fd is not None:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = None
        self._tell(change)

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside ----------------------------------------------------------------------------
    def _write(self, make: Callable[[], bytes]) -> None:
        try:
            data = make()
        except Exception as exc:  # noqa: BLE001 - a record that cannot be encoded is dropped, not raised
            say(failure(exc, "cockpit: a journal record could not be encoded and was dropped"))
            return
        with self._lock:
            if self._closed:
                return
            self._pending.append(data)
            self._pending_bytes += len(data)
            while self._pending_bytes > self.MAX_PENDING and len(self._pending) > 1:
                dropped = self._pending.popleft()
                self._pending_bytes -= len(dropped)
                self.lost += dropped.count(b"\n")
                self._lost_since += dropped.count(b"\n")
            change = self._flush(force=False)
        self._tell(change)

    def _flush(self, *, force: bool) -> tuple[str, str | None] | None:
        """Write what is pending; returns a change to announce ("fail", why) / ("ok", None)."""
        if self.trouble is not None and not force and time.monotonic() < self._next_try:
            return None
        try:
            if self._fd is not None and self._pending and self._replaced():
                self._fd = None
            if self._fd is None:
                self._fd = self._open()
            while self._pending:
                chunk = self._pending[0]
                n = os.write(self._fd, chunk)
                self._pending_bytes -= n
                if n < len(chunk):  # a short write (the disk filled mid-line): the rest goes next
                    self._pending[0] = chunk[n:]
                    continue
                self._pending.popleft()
                if self.trouble is not None:
                    self._caught_up += chunk.count(b"\n")
        except OSError as exc:
            self._next_try = time.monotonic() + self.RETRY_EVERY_S
            if self._fd is not None and exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                try:  # EPERM/EBADF/ESTALE: the file may have been replaced; open it again next time
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = None
            if self.trouble is None:
                self.trouble = _why(exc)
                return ("fail", self.trouble)
            return None
        if self.trouble is not None:
            self.trouble = None
            return ("ok", None)
        return None

    def where(self) -> str:
        """Where the file this writer has open is now (it moves with a run folder that is moved);
        its path as given where that cannot be told."""
        fd = self._fd
        if fd is not None and self.path != os.devnull:
            try:
                now = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                return self.path
            if not now.endswith(" (deleted)") and os.path.isfile(now):
                return now
        return self.path

    def _open(self) -> int:
        """The journal for appending, never through a link (`files.open_own`); a writer that found its
        file deleted or replaced says so at the head of what it writes into the new one."""
        if self.path == os.devnull:  # a rank other than 0: nothing to write, nothing to check
            return os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        from cockpit.files import open_own

        fd = open_own(self.path, os.O_WRONLY | os.O_APPEND)
        st = os.fstat(fd)
        self._inode = (st.st_dev, st.st_ino)
        if self._lost_file:
            note = self._lost_file
            self._lost_file = None
            say(f"cockpit: {note} — writing to a new one from here")
            data = encode(warning(f"{note}; this journal goes on from there (what was written to the old "
                                  "file after that is not here)", code="journal_replaced"))
            self._pending.appendleft(data)
            self._pending_bytes += len(data)
        return fd

    def _replaced(self) -> bool:
        """events.jsonl is no longer the file this writer has open (deleted, or replaced by an editor's
        save or a `mv`): compared by inode before each write, as appending to the old one would lose
        the rest of the run without a word. The descriptor is closed; the next open makes a new one."""
        if self.path == os.devnull or self._inode is None:
            return False
        try:
            st = os.stat(self.path, follow_symlinks=False)
            now: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            now = None
        if now == self._inode:
            return False
        if now is None and not os.path.isdir(os.path.dirname(self.path) or "."):
            return False  # the run folder itself moved: the open file moved with it, keep writing there
        gone = "deleted" if now is None else "replaced"
        self._lost_file = f"the journal {self.path} was {gone} while the run wrote it"
        try:
            os.close(self._fd)  # type: ignore[arg-type]
        except OSError:
            pass
        self._inode = None
        return True

    def _tell(self, change: tuple[str, str | None] | None) -> None:
        if change is None:
            return
        what, why = change
        if what == "fail":
            say(f"cockpit: cannot write the journal {self.path}: {why} — training goes on; "
                 f"its lines wait in memory (up to {self.MAX_PENDING // 2**20} MB) until it can be written")
        else:
            lost, self._lost_since = self._lost_since, 0
            caught, self._caught_up = self._caught_up, 0
            say(f"cockpit: the journal {self.path} is writable again: {caught} line(s) caught up"
                 + (f", {lost} lost" if lost else ""))
            if lost:
                self.write(warning(f"{lost} journal line(s) were lost while the journal could not be written",
                                   code="journal_lost"))
        if self.on_trouble is not None:
            try:
                self.on_trouble(why)
            except Exception as exc:  # noqa: BLE001 - the writer's listener must not break the writer
                say(failure(exc, "cockpit: journal trouble listener failed"))


def _why(exc: OSError) -> str:
    """One line for a failed write, the errno's name first: 'ENOSPC: No space left on device'."""
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{name}: {exc.strerror or exc}"



def earlier_attempts(path: str | os.PathLike[str]) -> tuple[int, float]:
    """(how many attempts of the run ended before this one, their seconds together): each from
    its first record after the previous `run_ended` to its own `run_ended`. Decodes only those
    lines: a long journal is read once, at the end of training."""
    marker = b'"kind":"' + RUN_ENDED.encode() + b'"'
    count, total, start = 0, 0.0, None
    try:
        with open(path, "rb") as f:
            for line in f:
                if start is None:
                    try:
                        start = decode(line).t or None
                    except DecodeError:
                        continue
                if marker not in line:
                    continue
                try:
                    rec = decode(line)
                except DecodeError:
                    continue
                if rec.kind == RUN_ENDED:
                    if start and rec.t and rec.t >= start:
                        total += rec.t - start
                        count += 1
                    start = None
    except OSError:
        return 0, 0.0
    return count, total


def read_all(path: str | os.PathLike[str]) -> tuple[list[Record], int]:
    """Every complete record of a journal, and how many lines were skipped."""
    from cockpit.run.tailer import Tailer

    tailer = Tailer(path)
    records: list[Record] = []
    while True:  # one poll reads at most max_read bytes: read to the end
        before = tailer.offset
        records.extend(tailer.poll())
        if tailer.offset == before:
            break
    return records, tailer.skipped
