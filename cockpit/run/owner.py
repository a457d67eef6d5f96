"""Who owns a run, and which processes are provably its own.

One owner: the live supervisor holds an exclusive `flock` on `supervisor.lock` in the run folder
for as long as it lives. `launch` and `resume` take the lock first (a second one is refused with
one line) and hand the locked descriptor to the supervisor they start, so there is no moment at
which two of them could both believe they own the folder. The kernel drops the lock when the
supervisor dies, however it dies (SIGKILL included): a lock is never left stale.

Proof before a signal: a pid or process group written in status.json may, once its process has
exited, belong to anyone (pids are reused). Before anything signals a run's processes it finds
them afresh: the recorded leader must still have the start time status.json recorded, and every
process signalled must carry the run's marker (`COCKPIT_RUN_DIR` naming this folder, set by the
supervisor for everything it starts) in its environment. Readers use the same proof to tell
"the supervisor died but the trainer is still training" from "everything is gone".

Only the standard library and psutil: the supervisor imports this, and it must stay light.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.run import RUN_DIR_ENV

LOCK_FILE = "supervisor.lock"
LOCK_FD_ENV = "COCKPIT_OWNER_FD"
"""The descriptor of the already-locked `supervisor.lock` that `launch` / `resume` hand the supervisor."""
START_SLACK_S = 1.0
"""How far a process's start time may be from the one recorded (psutil rounds to clock ticks)."""


def lock_path(run_dir: Path) -> Path:
    return Path(run_dir) / LOCK_FILE


def acquire(run_dir: Path, name: str | None = None) -> int:
    """Lock the run folder for one owner; returns the locked descriptor (inheritable, so it can be
    handed to the supervisor). CockpitError naming the owner when the folder is already owned."""
    path = lock_path(run_dir)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CockpitError(f"{path}: cannot open the run's lock ({exc.strerror}) — check the folder's "
                           "permissions") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        who = f" (pid {holder})" if holder else ""
        raise CockpitError(f"{name or Path(run_dir).name} already has an owner{who}: its live supervisor, or "
                           "a launch or resume starting one — one run has one owner; watch it with "
                           "`cockpit attach`, or stop it first") from None
    write_holder(fd)  # until the supervisor writes its own pid
    os.set_inheritable(fd, True)
    return fd


def adopt(fd: int) -> bool:
    """In the supervisor: make sure the descriptor handed over is locked by this process (flock on
    the same open file is a no-op when it is), and write this pid into it for the refusal line."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    write_holder(fd)
    return True


def write_holder(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


# -- proof --------------------------------------------------------------------------------------


def start_time(pid: int | None) -> float | None:
    """psutil's create_time of a pid, None when it is gone or cannot be read."""
    if not pid:
        return None
    try:
        import psutil

        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - gone, a zombie, psutil missing: no time to compare
        return None


def same_process(pid: int | None, started: float | None) -> bool:
    """The pid is alive and is the process that was recorded (same start time), not a newcomer
    that was given the same number. Without a recorded time the pid alone is all there is."""
    if not pid:
        return False
    try:
        import psutil

        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) <= START_SLACK_S
    except Exception:  # noqa: BLE001 - gone, or not ours to look at
        return False


def _marked(proc: Any, run_dir: Path) -> bool:
    try:
        value = proc.environ().get(RUN_DIR_ENV)
    except Exception:  # noqa: BLE001 - another user's process, or gone: not provably ours
        return False
    if not value:
        return False
    try:
        return Path(value).resolve() == Path(run_dir).resolve()
    except OSError:
        return False


def run_processes(run_dir: Path, pgid: int | None, leader_started: float | None) -> list[Any]:
    """The live processes of the run's process group that provably belong to this run: the leader
    (when still there) has the recorded start time, and each one carries the run's marker. [] when
    the group is gone or now belongs to someone else."""
    if not pgid:
        return []
    try:
        import psutil
    except ImportError:
        return []
    try:
        leader = psutil.Process(pgid)
        if leader_started is not None and abs(leader.create_time() - leader_started) > START_SLACK_S:
            return []  # the number was given to another process: none of this is the run's
    except psutil.NoSuchProcess:
        pass  # the leader went; its children may still hold the group
    except Exception:  # noqa: BLE001
        return []
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) != pgid or proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except (OSError, psutil.Error):
            continue
        if _marked(proc, run_dir):
            found.append(proc)
    return found
