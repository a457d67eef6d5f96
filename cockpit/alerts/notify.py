"""Where `notify` goes: webhook (a JSON POST), ntfy (a text POST) and a shell command; targets
may be `env:NAME` (read when an alert goes out) or kept out of run.yaml in a user-only file."""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
    """Every target at once, each in its own thread, for at most `timeout` (+ a little) in all: one
    that hangs or fails costs only its own line. Results in the targets' order, named by kind."""
    pool = ThreadPoolExecutor(max_workers=max(1, len(targets)), thread_name_prefix="notify")
    futures = [pool.submit(send, kind, target, payload, timeout) for kind, target in targets]
    pool.shutdown(wait=False)  # each send ends by its own timeout; nobody waits past the deadline
    done, _ = wait(futures, timeout=timeout + 2.0)
    out = []
    for (kind, _), fut in zip(targets, futures, strict=True):
        ok, detail = fut.result() if fut in done else (False, f"timed out after {timeout:g}s")
        out.append({"action": f"notify:{kind}", "ok": ok, "detail": detail})
    return out


class Notifier:
    """Notifications off the supervisor's loop: one worker thread sends the jobs in turn, at most
    `max_queued` waiting behind the one being sent, so a webhook that never answers holds up neither
    sampling, nor stop requests, nor `run_ended`. A job is a callable that sends and writes its own
    journal line; it must not raise (a raise is swallowed and said on stderr)."""

    def __init__(self, max_queued: int = 32) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cockpit-notify")
        self._max = max_queued + 1  # the one being sent and those waiting
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue a job; False when the queue is full (the caller says so in the journal)."""
        with self._lock:
            if len(self._pending) >= self._max:
                return False
            fut = self._pool.submit(_run_job, job)
            self._pending.add(fut)
        fut.add_done_callback(self._finished)
        return True

    def _finished(self, fut: Future[None]) -> None:
        with self._lock:
            self._pending.discard(fut)

    @property
    def pending(self) -> int:
        """Jobs queued or being sent."""
        with self._lock:
            return len(self._pending)

    def drain(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every queued job; True when all are done. Called when the
        run has ended (after `run_ended` is written); what is still going then is given up, and a
        notify command still running has its process group killed."""
        with self._lock:
            pending = set(self._pending)
        done = not wait(pending, timeout=max(0.0, timeout)).not_done
        if not done:
            kill_running_commands()
        return done


def _run_job(job: Callable[[], None]) -> None:
    try:
        job()
    except Exception as exc:  # noqa: BLE001 - a failing job must not end the worker
        say(f"cockpit: a notification failed: {type(exc).__name__}")
