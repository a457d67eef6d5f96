"""Turn a replay path (trainer_state.json, checkpoint, output dir, run folder) into a RunData.

Runs in a worker thread: parsing a big trainer_state.json takes time. Which
file a path means is core's business (`cockpit.metrics.sources.open_source`);
every problem the user can cause comes back as a CockpitError naming the path.
"""

from __future__ import annotations

import os
import pickle
import tempfile

from cockpit.errors import CockpitError
from cockpit.metrics.rundata import RunData
from cockpit.metrics.sources import KIND_CHECKPOINT, Source, open_source

_SHM = "/dev/shm"


def load_replay(path: str) -> RunData:
    """Parse in a forked child when the platform allows: the worker thread and the UI share
    one GIL, so parsing in-process slows both down (a 100k-entry file took twice as long in
    the app as alone); in a child it overlaps with composing and drawing the screen. The
    child only parses and pickles a RunData back (arrays, ~15 MB for 100k×8, a few ms)."""
    if hasattr(os, "fork") and not os.environ.get("COCKPIT_REPLAY_IN_PROCESS"):
        loaded = _load_in_child(path)
        if loaded is not None:
            return loaded
    return from_source(open_source(path))


def _load_in_child(path: str) -> RunData | None:
    """The RunData, or None when the child could not say (then the caller parses here)."""
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the child: parse, pickle, leave without running any parent cleanup
        code = 0
        try:
            os.close(r)
            try:
                payload: tuple[str, object] = ("ok", from_source(open_source(path)))
            except CockpitError as exc:
                payload = ("error", str(exc))
            # The pickle goes through a file in RAM (/dev/shm where there is one): a pipe moves
            # tens of MB 64 KB at a time. Only its name goes through the pipe.
            fd, name = tempfile.mkstemp(prefix="cockpit-replay-", dir=_SHM if os.path.isdir(_SHM)
                                        else None)
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb") as fh:
                fh.write(name.encode())
        except BaseException:  # noqa: BLE001 - the parent falls back to parsing itself
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    try:
        with os.fdopen(r, "rb") as fh:
            name = fh.read().decode()  # blocks in the kernel, the GIL released
    finally:
        os.waitpid(pid, 0)
    if not name:
        return None  # the child died before it could say: parse in-process
    try:
        with open(name, "rb") as fh:
            kind, value = pickle.load(fh)
    except Exception:  # noqa: BLE001 - a child that died mid-write: parse in-process
        return None
    finally:
        try:
            os.unlink(name)
        except OSError:
            pass
    if kind == "error":
        raise CockpitError(str(value))
    return value  # type: ignore[return-value]


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
    from cockpit.metrics.completions import INDEX, CompletionsLibrary

    run_dir = next((d for d in list(source.path.parents)[:3]
                    if (d / INDEX).is_file() and (d / "events.jsonl").is_file()), None)
    if run_dir is None and source.completions_dir is None:
        return None
    lib = CompletionsLibrary(run_dir, source.completions_dir)
    if source.kind == KIND_CHECKPOINT and source.parsed is not None:
        lib.last_step = source.parsed.global_step
    lib.refresh()
    return lib
