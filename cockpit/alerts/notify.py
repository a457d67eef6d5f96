"""Where `notify` goes: webhook (a JSON POST), ntfy (a text POST) and a shell command; targets
may be `env:NAME` (read when an alert goes out) or kept out of run.yaml in a user-only file."""

from __future__ import annotations

import collections
import errno
import json
import os
import shlex
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError, say

NOTIFY_KINDS = ("webhook", "ntfy", "command")
SECRET_PREFIX = "secret:"


def parse_notify(raw: Any, *, where: str = "cockpit.notify") -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CockpitError(f"{where} must be a mapping like {{ntfy: https://ntfy.sh/my-topic}}")
    problems = [f"{where}.{k}: unknown target — use {', '.join(NOTIFY_KINDS)}" for k in raw if k not in NOTIFY_KINDS]
    problems += [f"{where}.{k}: must be a string (a URL, a command, or env:NAME)" for k, v in raw.items()
                 if k in NOTIFY_KINDS and not isinstance(v, str)]
    if problems:
        raise CockpitError("\n".join(problems))
    return {str(k): str(v) for k, v in raw.items()}


def keep_secrets(notify: dict[str, str], run_id: str) -> dict[str, str]:
    """Literal targets are kept outside the run folder, in the user's config dir (`cockpit.run.secrets`);
    run.yaml keeps `secret:<id>/KIND`."""
    from cockpit.run import secrets

    literal = {k: v for k, v in notify.items() if not v.startswith(("env:", SECRET_PREFIX))}
    refs = secrets.keep(run_id, literal)
    return {k: refs.get(k, v) for k, v in notify.items()}


def resolve_target(value: str, legacy_file: Path | None) -> str | None:
    """A target as it is sent: `env:NAME` read now, `secret:...` read from where it is kept
    (`legacy_file`: control/notify.secret.json, where an older cockpit kept a run's)."""
    from cockpit.run import secrets

    if value.startswith("env:"):
        return os.environ.get(value[4:]) or None
    return secrets.resolve(value, legacy=legacy_file) or None


NOTIFY_TIMEOUT_S = 10.0
"""How long one target may take; every target of a firing is sent at once, so a firing takes at
most about this long, whatever the targets do."""


def send(kind: str, target: str, payload: dict[str, Any], timeout: float = NOTIFY_TIMEOUT_S) -> tuple[bool, str]:
    """One notification; (ok, what happened). Never raises, and never says the target: the URL,
    the ntfy topic and the command may carry tokens, so the detail is a status, an error class or
    an errno name ('HTTP 404', 'timed out after 10s', 'URLError: ConnectionRefusedError',
    'BadStatusLine', 'exit 3')."""
    text = f"[cockpit] {payload['run']}: {payload['message']}"
    try:
        if kind == "command":
            return _run_command(target, text, payload, timeout)
        if kind == "ntfy":
            req = urllib.request.Request(target, data=text.encode("utf-8"), method="POST",
                                         headers={"Title": f"cockpit: {payload['run']}", "Tags": "warning"})
        else:
            req = urllib.request.Request(target, data=json.dumps(payload).encode("utf-8"), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return 200 <= resp.status < 300, f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}"
    except TimeoutError:
        return False, f"timed out after {timeout:g}s"
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return False, f"timed out after {timeout:g}s"
        return False, f"URLError: {_error_name(reason) if isinstance(reason, BaseException) else 'unreachable'}"
    except Exception as exc:  # noqa: BLE001 - BadStatusLine, a bad URL, anything: one target's failure only
        return False, _error_name(exc)


def _error_name(exc: BaseException) -> str:
    """The error's class (and errno name for OS errors), never its message: messages quote URLs."""
    name = type(exc).__name__
    code = errno.errorcode.get(exc.errno) if isinstance(exc, OSError) and exc.errno is not None else None
    if code is not None and name != code:
        return f"{name} ({code})"
    return name


_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


def _run_command(target: str, text: str, payload: dict[str, Any], timeout: float) -> tuple[bool, str]:
    """The command in a session of its own, so that at its timeout its whole process group (the
    shell and whatever it started) is killed, not only the shell."""
    env = {**os.environ, "COCKPIT_ALERT_RUN": payload["run"], "COCKPIT_ALERT_RULE": payload["rule"],
           "COCKPIT_ALERT_MESSAGE": payload["message"], "COCKPIT_ALERT_VALUE": str(payload["value"])}
    proc = subprocess.Popen(f"{target} {shlex.quote(text)}", shell=True, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    with _running_lock:
        _running.add(proc)
    try:
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return False, f"timed out after {timeout:g}s (its process group was killed)"
        return code == 0, f"exit {code}"
    finally:
        with _running_lock:
            _running.discard(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: its pgid is its pid
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def kill_running_commands() -> int:
    """Kill the process group of every notify command still running (the supervisor is leaving)."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        _kill_group(proc)
    return len(procs)


def send_all(targets: list[tuple[str, str]], payload: dict[str, Any],
             timeout: float = NOTIFY_TIMEOUT_S) -> list[dict[str, Any]]:
    """Every target at once, each in a daemon thread of its own, for at most `timeout` (+ a little)
    in all: one that hangs or fails costs only its own line, and one that is still going at the
    deadline is left to its thread (a daemon: it never keeps the supervisor from exiting; urllib's
    timeout is per read, so a server that dribbles bytes could hold it much longer). Results in
    the targets' order, named by kind."""
    results: list[tuple[bool, str] | None] = [None] * len(targets)

    def one(i: int, kind: str, target: str) -> None:
        results[i] = send(kind, target, payload, timeout)

    threads = [threading.Thread(target=one, args=(i, kind, target), daemon=True, name=f"notify-{kind}")
               for i, (kind, target) in enumerate(targets)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout + 2.0
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    out = []
    for (kind, _), got in zip(targets, results, strict=True):
        ok, detail = got if got is not None else (False, f"timed out after {timeout:g}s")
        out.append({"action": f"notify:{kind}", "ok": ok, "detail": detail})
    return out


END_WAIT_S = 5.0
"""How long the supervisor waits, once the run has ended and `run_ended` is written, for the
notifications still going (the run_ended notice among them): then each one not done is dropped
with its journal line, and the supervisor exits — within a few seconds of the run's end,
whatever a webhook does."""


class _Job:
    """A notification queued: `send` sends it and writes its journal line, `drop(why)` writes the
    line of one that did not go out (the caller makes sure only the first of the two writes)."""

    def __init__(self, send: Callable[[], None], drop: Callable[[str], None] | None) -> None:
        self.send = send
        self.drop = drop
        self.done = threading.Event()


class Notifier:
    """Notifications off the supervisor's loop: one daemon worker thread sends the jobs in turn, at
    most `max_queued` waiting behind the one being sent, so a webhook that never answers holds up
    neither sampling, nor stop requests, nor `run_ended`, nor the supervisor's exit. A job sends and
    writes its own journal line; it must not raise (a raise is swallowed and said on stderr).
    `drain` at the run's end sends what is still queued at once (not behind a hanging one) and
    drops, each with its line, what is not done by its deadline."""

    def __init__(self, max_queued: int = 32) -> None:
        self._max = max_queued + 1  # the one being sent and those waiting
        self._queue: collections.deque[_Job] = collections.deque()
        self._jobs: list[_Job] = []
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None

    def submit(self, job: Callable[[], None], drop: Callable[[str], None] | None = None) -> bool:
        """Queue a job (`drop`: how to say it was not sent); False when the queue is full (the
        caller says so in the journal)."""
        with self._cond:
            if self.pending >= self._max:
                return False
            entry = _Job(job, drop)
            self._queue.append(entry)
            self._jobs.append(entry)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, daemon=True, name="cockpit-notify")
                self._worker.start()
            self._cond.notify()
        return True

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                job = self._queue.popleft()
            _run(job)

    @property
    def pending(self) -> int:
        """Jobs queued or being sent."""
        with self._cond:
            self._jobs = [j for j in self._jobs if not j.done.is_set()]
            return len(self._jobs)

    def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every job; True when all are done. Called when the run
        has ended (after `run_ended` is written): the jobs still queued are each sent at once in a
        thread of their own; what is not done at the deadline is dropped (each its line, through
        its `drop`), and a notify command still running has its process group killed."""
        with self._cond:
            queued = list(self._queue)
            self._queue.clear()
            jobs = [j for j in self._jobs if not j.done.is_set()]
        for job in queued:
            threading.Thread(target=_run, args=(job,), daemon=True, name="cockpit-notify-end").start()
        deadline = time.monotonic() + max(0.0, timeout)
        for job in jobs:
            job.done.wait(max(0.0, deadline - time.monotonic()))
        late = [j for j in jobs if not j.done.is_set()]
        for job in late:
            if job.drop is not None:
                try:
                    job.drop(f"dropped: not answered {timeout:g}s after the run ended (the supervisor exits)")
                except Exception as exc:  # noqa: BLE001 - saying so must not keep the supervisor
                    say(f"cockpit: a dropped notification could not be said: {type(exc).__name__}")
        if late:
            kill_running_commands()
        return not late


def _run(job: _Job) -> None:
    try:
        _run_job(job.send)
    finally:
        job.done.set()


def _run_job(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception as exc:  # noqa: BLE001 - a failing job must not end the worker
        say(f"cockpit: a notification failed: {type(exc).__name__}")
