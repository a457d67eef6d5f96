"""Turn a replay path (trainer_state.json, checkpoint, output dir, run folder) into a RunData.

Called from a worker thread (parsing a big trainer_state.json takes time), and parsed in a
child process where the platform allows; `prefetch` starts that child before the screen that
will ask for it exists. Which file a path means is `cockpit.metrics.sources.open_source`'s
business; every problem the user can cause comes back as a CockpitError naming the path.
"""

from __future__ import annotations

import atexit
import functools
import gc
import json
import os
import pickle
import sys
import time
from typing import TYPE_CHECKING

from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData
from cockpit.metrics.sources import KIND_CHECKPOINT, Source, open_source

if TYPE_CHECKING:
    import subprocess

_SHM = "/dev/shm"


def prefetch(path: str) -> None:
    """Start parsing `path` in a child now, for the `load_replay(path)` that will follow.

    A UI calls it as soon as it knows the path — before importing and composing the replay
    screen — so the parse runs on another core meanwhile instead of starting once the screen
    is mounted. A prefetch that nobody collects is discarded at exit (or when older than
    `_FRESH_S`: the file may have changed since)."""
    if not _child_allowed():
        return
    key = os.path.abspath(path)
    old = _pending.get(key)
    if old is not None and time.monotonic() - old.started <= _FRESH_S:
        return  # already under way (the CLI starts it before the app, the app asks again)
    _pending.pop(key, None)
    if old is not None:
        old.discard()
    child = _Child.start(path)
    if child is not None:
        _pending[key] = child


def load_replay(path: str) -> RunData:
    """Parse in a child process when the platform allows: the worker thread and the UI share
    one GIL, so parsing in-process slows both down (a 100k-entry file took twice as long in
    the app as alone); in a child it overlaps with composing and drawing the screen. The
    child only parses and pickles a RunData back (its store's rows: 6 MB for 100k×8)."""
    if _child_allowed():
        child = _pending.pop(os.path.abspath(path), None)
        if child is not None and time.monotonic() - child.started > _FRESH_S:
            child.discard()
            child = None
        child = child or _Child.start(path)
        loaded = child.result() if child is not None else None
        if loaded is not None:
            return loaded
    return from_source(open_source(path))


def _child_allowed() -> bool:
    return not os.environ.get("COCKPIT_REPLAY_IN_PROCESS")


def _load_in_child(path: str) -> RunData | None:
    """The RunData parsed in a child, or None when the child could not say."""
    child = _Child.start(path)
    return child.result() if child is not None else None


_FRESH_S = 30.0

_CHILD_CODE = ("import gc; gc.disable(); import json, sys; sys.path[:] = json.loads(sys.argv.pop()); "
               "from cockpit.metrics.replay_loader import _child_main; _child_main()")
"""What the child runs: a fresh interpreter with the parent's sys.path (so it imports the same
cockpit, as a multiprocessing child would) that imports the loader and nothing else (not the
parent's main module, as a multiprocessing child does: `cockpit.cli`, a test runner). No
garbage collection from its first line: the imports and the parse make no cycles worth
collecting, and the child frees everything by leaving."""

_CHILD_FLAGS = ("-S",)
"""The child's interpreter skips `site`: the parent's sys.path comes with the command, so the
site-packages scan and every .pth file's code (~30 ms of a bare start here, against ~10 ms
without) would only rebuild what is replaced at once. What a .pth adds beyond a path entry (an
import hook) is not there; the cockpit's own folder goes at the end of the path
(`_child_path`) so an editable install served by such a hook still imports."""


_CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1"}
"""The child does no linear algebra: numpy's import starts no BLAS thread pool (~60 ms of its
~120 ms import on two cores)."""

_THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def _child_env() -> dict[str, str]:
    """The child's environment: the parent's, `_CHILD_ENV`, and where glibc can ask for
    transparent huge pages (Linux with THP on "always" or "madvise", glibc 2.35 or later) its
    objects in glibc's malloc with that asked for (`PYTHONMALLOC=malloc`, the tunable
    `glibc.malloc.hugetlb=1`). A 100,000-entry parse builds ~170 MB of objects in fresh
    memory: in Python's own 1 MB arenas that is ~45,000 page faults (~175 MB touched), ~60 ms
    of the child's ~0.32 s; in huge pages ~4,000. A PYTHONMALLOC the user set is kept."""
    env = dict(os.environ) | _CHILD_ENV
    if _huge_pages() and "PYTHONMALLOC" not in env:
        env["PYTHONMALLOC"] = "malloc"
        env["GLIBC_TUNABLES"] = ":".join(filter(None, (env.get("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=1")))
    return env


@functools.cache
def _huge_pages() -> bool:
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        with open(_THP) as fh:
            mode = fh.read()
    except (OSError, ValueError):  # not Linux, or no THP
        return False
    name, _, version = libc.partition(" ")
    parts = version.split(".")
    if name != "glibc" or len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return False
    return (int(parts[0]), int(parts[1])) >= (2, 35) and ("[always]" in mode or "[madvise]" in mode)


def _child_main() -> None:
    """The child: `python -S -c _CHILD_CODE PATH OUT PARENT_PID SYS_PATH` parses PATH and pickles ("ok",
    RunData) or ("error", message) into OUT, which the parent made and removes. A parent that
    is gone by then (killed) cannot remove it: the child does."""
    # No garbage collection: the parse makes no cycles, and the child frees everything by leaving.
    gc.disable()
    path, name, parent = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        # The source (its 100,000 parsed entries) is held until the exit: freeing it before
        # the pickle is written cost ~20 ms the parent waited.
        source = open_source(path)
        payload: tuple[str, object] = ("ok", from_source(source))
    except CockpitError as exc:
        payload = ("error", str(exc))
    with open(name, "wb") as fh:
        pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)
    gone = os.getppid() != parent
    if gone:
        _unlink(name)
    # Out at once: tearing down the interpreter would free every object of the parse first
    # (~30 ms on 100,000 entries) while the parent waits for the exit.
    os._exit(1 if gone else 0)


class _Child:
    """The parse of one path in a child process: a fresh interpreter (`subprocess`, no shell)
    that pickles ("ok", RunData) or ("error", message) into a file in RAM (/dev/shm where there
    is one: a pipe moves tens of MB 64 KB at a time) and exits 0 once it is written. The parent
    made the file, so it removes it whatever the child did.

    Not `multiprocessing`: inside a running Textual app, sys.stderr is Textual's capture, whose
    fileno() is -1, and starting a fork server (its resource tracker passes stderr's fd on)
    fails there — the parse then ran in the app, sharing its GIL (issue 33). Nor `os.fork()` of
    the app, whose threads could leave a lock held in the child. The child's stdin, stdout and
    stderr are /dev/null: nothing it says reaches the terminal the TUI draws on."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str) -> None:
        self.name = name
        self.started = time.monotonic()
        self.proc = proc
        self.pid = proc.pid
        atexit.register(self.discard)

    @classmethod
    def start(cls, path: str) -> _Child | None:
        # Imported here: the child imports this module too, and needs neither (~7 ms of its start).
        import subprocess
        import tempfile

        try:
            fd, name = tempfile.mkstemp(prefix="cockpit-replay-",
                                        dir=_SHM if os.path.isdir(_SHM) else None)
        except OSError:
            return None
        os.close(fd)
        try:
            proc = subprocess.Popen([sys.executable, *_CHILD_FLAGS, "-c", _CHILD_CODE, path, name,
                                     str(os.getpid()), json.dumps(_child_path())],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=_child_env())
        except (OSError, ValueError):  # no child: the caller parses in-process
            _unlink(name)
            return None
        return cls(proc, name)

    def result(self) -> RunData | None:
        """Wait for the child; its RunData, None when it died (then parse in-process)."""
        atexit.unregister(self.discard)
        try:
            if self.proc.wait() != 0:  # blocks in the kernel, the GIL released
                return None
            with open(self.name, "rb") as fh:
                kind, value = pickle.load(fh)
        except Exception:  # noqa: BLE001 - a child that died mid-write: parse in-process
            return None
        finally:
            _unlink(self.name)
        if kind == "error":
            raise CockpitError(str(value))
        return value

    def discard(self) -> None:
        atexit.unregister(self.discard)
        try:
            self.proc.kill()
            self.proc.wait()
        except OSError:
            pass
        _unlink(self.name)


_pending: dict[str, _Child] = {}


def _child_path() -> list[str]:
    """The parent's sys.path, and the folder this cockpit package lies in after it (for an
    install that a .pth import hook serves, which the child's `-S` leaves out)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return [*sys.path, root] if root not in sys.path else list(sys.path)


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def from_source(source: Source) -> RunData:
    """Journals replay record by record (header, completions, alerts, system);
    trainer_state.json takes the columnar fast path into the store."""
    data = RunData(source.label, name=source.name, run_dir=source.path.parent if source.is_journal else None)
    if source.is_journal:
        data.apply(source.records)
    else:
        data.store = source.load_store()
        data.log_rows = source.load_log_rows()
        data.completions = source.load_completions()
        data.step = data.store.last_step
        data.max_steps = source.max_steps or data.store.max_steps
        data.epoch = data.store.epoch
        data.state = "replay"
        data.version += 1
        data.library = _completions_library(source)
        data.checkpoints = [(step, path) for step, path in source.known_checkpoints()]
    data.notes.extend(str(w) for w in source.warnings)
    return data


def _completions_library(source: Source):
    """For a trainer_state.json source: TRL's completions/*.parquet of its output dir, and the
    completions store of the cockpit run folder it lies in, if any; a checkpoint shows only
    the steps logged up to it. None when there is neither."""
    from cockpit.metrics.completions import CompletionsLibrary
    from cockpit.run.completions_store import INDEX

    run_dir = next((d for d in list(source.path.parents)[:3]
                    if (d / INDEX).is_file() and (d / "events.jsonl").is_file()), None)
    if run_dir is None and source.completions_dir is None:
        return None
    lib = CompletionsLibrary(run_dir, source.completions_dir)
    if source.kind == KIND_CHECKPOINT and source.parsed is not None:
        lib.last_step = source.parsed.global_step
    lib.refresh()
    return lib
