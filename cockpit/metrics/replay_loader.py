"""Turn a replay path (trainer_state.json, checkpoint, output dir, run folder) into a RunData.

Called from a worker thread (parsing a big trainer_state.json takes time), and parsed in a
forked child where the platform allows; `prefetch` starts that child before the screen that
will ask for it exists. Which file a path means is `cockpit.metrics.sources.open_source`'s
business; every problem the user can cause comes back as a CockpitError naming the path.
"""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import signal
import tempfile
import time

from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData
from cockpit.metrics.sources import KIND_CHECKPOINT, Source, open_source

_SHM = "/dev/shm"


def prefetch(path: str) -> None:
    """Start parsing `path` in a child now, for the `load_replay(path)` that will follow.

    A UI calls it as soon as it knows the path — before importing and composing the replay
    screen — so the parse runs on another core meanwhile instead of starting once the screen
    is mounted. A prefetch that nobody collects is discarded at exit (or when older than
    `_FRESH_S`: the file may have changed since)."""
    if not _can_fork():
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
    """Parse in a forked child when the platform allows: the worker thread and the UI share
    one GIL, so parsing in-process slows both down (a 100k-entry file took twice as long in
    the app as alone); in a child it overlaps with composing and drawing the screen. The
    child only parses and pickles a RunData back (its store's rows: 6 MB for 100k×8)."""
    if _can_fork():
        child = _pending.pop(os.path.abspath(path), None)
        if child is not None and time.monotonic() - child.started > _FRESH_S:
            child.discard()
            child = None
        child = child or _Child.start(path)
        loaded = child.result() if child is not None else None
        if loaded is not None:
            return loaded
    return from_source(open_source(path))


def _can_fork() -> bool:
    return hasattr(os, "fork") and not os.environ.get("COCKPIT_REPLAY_IN_PROCESS")


def _load_in_child(path: str) -> RunData | None:
    """The RunData parsed in a child, or None when the child could not say."""
    child = _Child.start(path)
    return child.result() if child is not None else None


_FRESH_S = 30.0


class _Child:
    """A forked parse of one path: the child pickles ("ok", RunData) or ("error", message)
    into a file in RAM (/dev/shm where there is one: a pipe moves tens of MB 64 KB at a
    time) and says "done" through a pipe. The parent made the file, so it removes it
    whatever the child did."""

    def __init__(self, pid: int, pipe: int, name: str) -> None:
        self.pid, self.pipe, self.name = pid, pipe, name
        self.started = time.monotonic()
        atexit.register(self.discard)

    @classmethod
    def start(cls, path: str) -> _Child | None:
        try:
            fd, name = tempfile.mkstemp(prefix="cockpit-replay-",
                                        dir=_SHM if os.path.isdir(_SHM) else None)
        except OSError:
            return None
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:
            os.close(fd)
            os.unlink(name)
            return None
        if pid == 0:  # the child: parse, pickle, leave without running any parent cleanup
            # No garbage collection: a collection walks every object the child inherited (the
            # whole UI's heap), copying the pages it touches, and doubled the child's time in
            # the app. The parse makes no cycles; the child frees everything by leaving.
            gc.disable()
            code = 0
            try:
                os.close(r)
                # Nothing the parse might print may reach the terminal the TUI draws on.
                quiet = os.open(os.devnull, os.O_WRONLY)
                os.dup2(quiet, 1)
                os.dup2(quiet, 2)
                try:
                    payload: tuple[str, object] = ("ok", from_source(open_source(path)))
                except CockpitError as exc:
                    payload = ("error", str(exc))
                with os.fdopen(fd, "wb") as fh:
                    pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)
                os.write(w, b"done")
            except BaseException:  # noqa: BLE001 - the parent falls back to parsing itself
                code = 1
            finally:
                os._exit(code)
        os.close(fd)
        os.close(w)
        return cls(pid, r, name)

    def result(self) -> RunData | None:
        """Wait for the child; its RunData, None when it died (then parse in-process)."""
        atexit.unregister(self.discard)
        try:
            with os.fdopen(self.pipe, "rb") as fh:
                said = fh.read()  # blocks in the kernel, the GIL released
            os.waitpid(self.pid, 0)
            if said != b"done":
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
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        try:
            os.close(self.pipe)
        except OSError:
            pass
        _unlink(self.name)


_pending: dict[str, _Child] = {}


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
