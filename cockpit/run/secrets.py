"""What a run needs but its folder must not hold: tokens, and the environment it was launched with.

A run folder is copied, shared, attached to an issue; what is in it is read by whoever gets it.
So the values of `--env HF_TOKEN=…` (a name that says token, key, secret, password, …), of any
`--env` whose value gives it away (a URL with a password, a Slack or Discord webhook URL, a known
token prefix, a long random string: `why_secret`), and literal notify targets (URLs with tokens in
them) are kept in a user-only file in the config dir
(`~/.config/cockpit/run-secrets/<id>.json`, mode 0600 in a 0700 folder), and run.yaml and
command.txt keep the name and a reference, `secret:<id>/<name>`. The supervisor resolves the
references when it starts the command; a copy of the folder on another account resolves none.

A script run's launch environment is kept there too (`<id>.env.json`): `cockpit resume` from
another shell starts the command with the environment it was launched with, not that shell's.
Where the config folder cannot be written (a read-only HOME), a run that keeps no secret goes on
with one warning line, and one that must keep some is refused: both name the folder and
`COCKPIT_CONFIG_DIR`, which moves it.

The standard library only (the ground floor: `cockpit.errors`, `cockpit.paths`)."""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError, say
from cockpit.paths import CONFIG_DIR_ENV, config_dir
from cockpit.run import RUN_DIR_ENV

REF_PREFIX = "secret:"
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|WEBHOOK|DSN",
                         re.I)
"""An environment variable whose name says it holds a secret (HF_TOKEN, WANDB_API_KEY, ...)."""
SECRET_VALUE = re.compile(r"^(hf_|sk-|sk_live_|rk_live_|ghp_|gho_|ghu_|ghs_|github_pat_|xox[a-z]-|glpat-|npm_|"
                          r"pypi-|AIza)[A-Za-z0-9_\-]{8,}|^(AKIA|ASIA)[0-9A-Z]{16}$")
"""A value that looks like a token whatever its name (Hugging Face, OpenAI, Stripe, GitHub, Slack, GitLab,
npm, PyPI, Google, AWS access keys)."""
URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.\-]*://[^/\s@:]*:[^/\s@]+@", re.I)
"""A URL with a password in it: `postgres://user:password@host/db`."""
WEBHOOK_URL = re.compile(r"^https?://(hooks\.slack\.com/(services|workflows|triggers)/|"
                         r"(ptb\.|canary\.)?discord(app)?\.com/api/webhooks/|[a-z0-9.\-]*\.webhook\.office\.com/|"
                         r"outlook\.office\.com/webhook/|api\.telegram\.org/bot|chat\.googleapis\.com/v1/spaces/)",
                         re.I)
"""A webhook URL of a known service: the URL itself is the credential (Slack, Discord, Teams,
Telegram, Google Chat)."""
TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/=.~]{24,}")
MIN_ENTROPY = 4.2
"""Bits a character above which a long value without spaces is taken for a random token: random
base64 has about 5 to 6, a hex digest at most 4, words and paths 3 to 4."""


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def why_secret(name: str, value: str) -> str | None:
    """Why `name=value` is a secret, in a few words, or None: by its name, or by its value (a URL
    with a password, a known service's webhook URL, a known token prefix, a long random string)."""
    if SECRET_NAME.search(name):
        return "its name"
    if URL_PASSWORD.match(value):
        return "a URL with a password"
    if WEBHOOK_URL.match(value):
        return "a webhook URL"
    if SECRET_VALUE.match(value):
        return "a token"
    if TOKEN_CHARS.fullmatch(value) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value) \
            and "/" not in value.strip("/=") and _entropy(value) >= MIN_ENTROPY:
        return "a random-looking value"
    return None


NOT_KEPT = ("COCKPIT_OWNER_FD", RUN_DIR_ENV, "COCKPIT_RESUME_FROM")
"""Launch-environment variables that belong to one process, never carried to a resume."""


def new_id() -> str:
    return uuid.uuid4().hex


def store() -> Path:
    return config_dir() / "run-secrets"


class ConfigDirUnwritable(CockpitError):
    """The config folder, where a run's secrets and launch environment are kept, cannot be written
    (a read-only HOME, a full disk there): one line naming it and how to move it."""


def _unwritable(folder: Path, exc: OSError) -> ConfigDirUnwritable:
    why = exc.strerror or type(exc).__name__
    return ConfigDirUnwritable(
        f"{folder}: the cockpit's config folder cannot be written ({why}) — it holds a run's secrets and "
        f"launch environment, not the run: point {CONFIG_DIR_ENV} at a writable folder "
        f"(export {CONFIG_DIR_ENV}=/some/writable/cockpit-config)")


def _write(path: Path, obj: Any) -> None:
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh)
        os.replace(tmp, path)
    except OSError as exc:
        raise _unwritable(config_dir(), exc) from None


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def keep(run_id: str, values: dict[str, str]) -> dict[str, str]:
    """Keep `values` outside the run folder; returns a reference for each (`secret:<id>/<name>`)."""
    if not values:
        return {}
    path = store() / f"{run_id}.json"
    _write(path, {**_read(path), **values})
    return {name: f"{REF_PREFIX}{run_id}/{name}" for name in values}


def split_env(env: dict[str, str], run_id: str) -> dict[str, str]:
    """An `env:` mapping as run.yaml keeps it: secret values kept outside, referenced."""
    why = {k: why_secret(k, v) for k, v in env.items() if not v.startswith(REF_PREFIX)}
    secret = {k: env[k] for k, said in why.items() if said}
    refs = keep(run_id, secret)
    if secret:
        say("cockpit: kept outside the run folder (run.yaml and command.txt name them only): "
            + ", ".join(f"{k} ({why[k]})" for k in secret))
    return {k: refs.get(k, v) for k, v in env.items()}


def resolve(value: str, legacy: Path | None = None) -> str | None:
    """The value a reference stands for; a plain value as it is. `secret:<id>/<name>` reads the
    store; an old `secret:<name>` reads `legacy` (a run folder's control/notify.secret.json, as an
    older cockpit kept it). None when the value cannot be found (another account, deleted)."""
    if not value.startswith(REF_PREFIX):
        return value
    ref = value[len(REF_PREFIX):]
    run_id, sep, name = ref.partition("/")
    if sep and re.fullmatch(r"[0-9a-f]{32}", run_id):
        found = _read(store() / f"{run_id}.json").get(name)
    elif legacy is not None:
        found = _read(legacy).get(ref)
    else:
        found = None
    return str(found) if found is not None else None


def resolve_env(env: Any) -> dict[str, str]:
    """run.yaml's `env:` with its references resolved; one that cannot be is left out (the command
    then sees the variable as the supervisor's environment has it, or not at all)."""
    out: dict[str, str] = {}
    if not isinstance(env, dict):
        return out
    for k, v in env.items():
        value = resolve(str(v))
        if value is not None:
            out[str(k)] = value
    return out


def shown(value: str) -> str:
    """A value as command.txt shows it: a reference as the variable it stands for."""
    return "<kept outside the run folder>" if str(value).startswith(REF_PREFIX) else str(value)


def keep_launch_env(run_id: str, env: dict[str, str] | None = None) -> None:
    """The environment a script run was launched with (this process's), for its resumes. Where the
    config folder cannot be written (a read-only HOME), one line says so and how to move it, and
    the run goes on: it needs the kept environment only for a resume from another shell."""
    env = dict(os.environ if env is None else env)
    for name in NOT_KEPT:
        env.pop(name, None)
    try:
        _write(store() / f"{run_id}.env.json", env)
    except ConfigDirUnwritable as exc:
        say(f"cockpit: warning: {exc} (the run goes on; a resume runs with the environment it is given)")


def launch_env(run_id: str | None) -> dict[str, str] | None:
    """The kept launch environment, or None (an older run, another account, deleted)."""
    if not run_id or not re.fullmatch(r"[0-9a-f]{32}", str(run_id)):
        return None
    env = _read(store() / f"{run_id}.env.json")
    return {str(k): str(v) for k, v in env.items()} or None
