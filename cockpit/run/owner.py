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

A run made by `CockpitCallback` in a plain `python train.py` has no supervisor: the script owns its
folder itself (it takes the same lock and records its own start time), and as its environment has
no marker, holding the run's lock is its proof (`holds_lock`).

Only the standard library and psutil: the supervisor imports this, and it must stay light; the
start time has a /proc fallback for the user's own Python, where psutil may be missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.files import open_own
from cockpit.run import HELPER_ENV, RUN_DIR_ENV

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
        fd = open_own(path, os.O_RDWR, 0o600)  # never through a link: a symlink here is replaced, not followed
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
    """A pid's start time as psutil's create_time (seconds since the epoch), None when it is gone or
    cannot be read. Without psutil (the user's own Python, in a `CockpitCallback` run) the same
    figure from /proc: the boot time plus the process's start in clock ticks."""
    if not pid:
        return None
    try:
        import psutil
    except ImportError:
        return _proc_start_time(pid)
    try:
        return psutil.Process(pid).create_time()
    except Exception:  # noqa: BLE001 - gone, a zombie: no time to compare
        return None


def _proc_start_time(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as fh:
            btime = next(float(line.split()[1]) for line in fh if line.startswith(b"btime "))
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def same_process(pid: int | None, started: float | None) -> bool:
    """The pid is alive and is the process that was recorded (same start time), not a newcomer
    that was given the same number. Without a recorded start time nothing is proven: a pid alone
    may be anyone's (a status.json from an older cockpit, or a damaged one)."""
    if not pid or started is None:
        return False
    try:
        import psutil
    except ImportError:
        now = _proc_start_time(pid)
        return now is not None and abs(now - started) <= START_SLACK_S and not _zombie(pid)
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(proc.create_time() - started) <= START_SLACK_S
    except Exception:  # noqa: BLE001 - gone, or not ours to look at
        return False


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def _marked(proc: Any, run_dir: Path, marker: str | None = None, *, trainer_only: bool = False) -> bool:
    """The process carries the run's marker: `COCKPIT_RUN_DIR` naming this folder, or naming the
    place this folder was when the run started (`marker`, for a folder moved mid-run) while no
    other folder is there now. `trainer_only`: and it is not one of the supervisor's helpers
    (`HELPER_ENV`)."""
    try:
        env = proc.environ()
        value = env.get(RUN_DIR_ENV)
    except Exception:  # noqa: BLE001 - another user's process, or gone: not provably ours
        return False
    if not value or (trainer_only and env.get(HELPER_ENV)):
        return False
    try:
        if Path(value).resolve() == Path(run_dir).resolve():
            return True
        return bool(marker) and value == marker and not os.path.lexists(str(marker))
    except OSError:
        return False


def holds_lock(pid: int, run_dir: Path) -> bool:
    """The process has this run's `supervisor.lock` open: the mark of a `CockpitCallback` run's own
    script (a plain `python train.py` has no `COCKPIT_RUN_DIR` in its environment; it takes the
    run's lock instead, and holds it for as long as it lives). Compared by inode, so a moved run
    folder is still recognised and a look-alike path is not."""
    try:
        want = os.stat(lock_path(run_dir), follow_symlinks=False)
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino):
            return True
    return False


def _own_lineage() -> set[int]:
    """This process and its ancestors: never signalled, even when they carry the marker (a notify
    command of the run that runs `cockpit stop --force` on it)."""
    out = {os.getpid()}
    try:
        import psutil

        out.update(p.pid for p in psutil.Process().parents())
    except Exception:  # noqa: BLE001
        out.add(os.getppid())
    return out


def run_processes(run_dir: Path, pgid: int | None, leader_started: float | None,
                  exclude: tuple[int | None, ...] = (), marker: str | None = None, *,
                  trainer_only: bool = False) -> list[Any]:
    """The live processes that provably belong to this run, wherever they are: the recorded leader
    of the run's process group must have had its start time recorded (and, while it lives, still
    have it), and every process returned carries the run's marker in its environment. That finds
    the helpers a script started in a session of their own (`start_new_session=True`, `setsid`) as
    well as the group. [] when nothing was recorded, or the number now belongs to someone else.
    This process, its ancestors and `exclude` (the supervisor) are never in the list; with
    `trainer_only`, neither are the supervisor's helpers (`HELPER_ENV`): "is the trainer still
    running" is asked of the trainer's own processes alone."""
    if not pgid or leader_started is None:
        return []
    try:
        import psutil
    except ImportError:
        return []
    try:
        leader = psutil.Process(pgid)
        if abs(leader.create_time() - leader_started) > START_SLACK_S:
            return []  # the number was given to another process: none of this is the run's
    except psutil.NoSuchProcess:
        pass  # the leader went; its children may still be there
    except Exception:  # noqa: BLE001
        return []
    return marked_processes(run_dir, exclude, marker, trainer_only=trainer_only)


def marked_processes(run_dir: Path, exclude: tuple[int | None, ...] = (), marker: str | None = None, *,
                     trainer_only: bool = False) -> list[Any]:
    """Every live process (not a zombie) carrying this run's marker, but this one, its ancestors and
    `exclude` (and the supervisor's helpers, with `trainer_only`)."""
    try:
        import psutil
    except ImportError:
        return []
    skip = _own_lineage() | {p for p in exclude if p}
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid in skip or proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        if _marked(proc, run_dir, marker, trainer_only=trainer_only):
            found.append(proc)
    return found


def signal_all(procs: list[Any], sig: int) -> None:
    """Send `sig` to each proven process; psutil checks each is still the process it found (same
    start time) before sending, so a pid reused in between is left alone."""
    for proc in procs:
        try:
            proc.send_signal(sig)
        except Exception:  # noqa: BLE001 - gone already, or no longer ours
            continue


def end_processes(procs: list[Any], grace_s: float) -> list[Any]:
    """SIGTERM each, SIGKILL whoever is still there after `grace_s`; returns those that outlived both."""
    if not procs:
        return []
    import psutil

    signal_all(procs, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    if alive:
        signal_all(alive, signal.SIGKILL)
        _, alive = psutil.wait_procs(alive, timeout=10)
    return alive
