"""Where `notify` goes: webhook (a JSON POST), ntfy (a text POST) and a shell command; targets
may be `env:NAME` (read when an alert goes out) or kept out of run.yaml in a user-only file."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError

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


def keep_secrets(notify: dict[str, str], secrets_file: Path) -> dict[str, str]:
    """Literal targets move to a user-only file beside run.yaml; run.yaml keeps `secret:KIND`."""
    literal = {k: v for k, v in notify.items() if not v.startswith(("env:", SECRET_PREFIX))}
    if not literal:
        return dict(notify)
    fd = os.open(secrets_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(literal, fh)
    return {k: (f"{SECRET_PREFIX}{k}" if k in literal else v) for k, v in notify.items()}


def resolve_target(value: str, secrets_file: Path | None) -> str | None:
    if value.startswith("env:"):
        return os.environ.get(value[4:]) or None
    if value.startswith(SECRET_PREFIX) and secrets_file is not None:
        try:
            return json.loads(secrets_file.read_text(encoding="utf-8")).get(value[len(SECRET_PREFIX):])
        except (OSError, ValueError):
            return None
    return value


def send(kind: str, target: str, payload: dict[str, Any], timeout: float = 10.0) -> tuple[bool, str]:
    """One notification; (ok, what happened) — never raises: a refusing URL is a journal line."""
    text = f"[cockpit] {payload['run']}: {payload['message']}"
    try:
        if kind == "command":
            env = {**os.environ, "COCKPIT_ALERT_RUN": payload["run"], "COCKPIT_ALERT_RULE": payload["rule"],
                   "COCKPIT_ALERT_MESSAGE": payload["message"], "COCKPIT_ALERT_VALUE": str(payload["value"])}
            proc = subprocess.run(f"{target} {shlex.quote(text)}", shell=True, env=env, capture_output=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL, check=False)
            return proc.returncode == 0, f"command exit {proc.returncode}"
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
    except (urllib.error.URLError, OSError, subprocess.SubprocessError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"{type(exc).__name__}: {reason}"[:200]
