"""What a run needs but its folder must not hold: tokens, and the environment it was launched with.

A run folder is copied, shared, attached to an issue; what is in it is read by whoever gets it.
So the values of `--env HF_TOKEN=…` (a name that says token, key, secret, password, …) and
literal notify targets (URLs with tokens in them) are kept in a user-only file in the config dir
(`~/.config/cockpit/run-secrets/<id>.json`, mode 0600 in a 0700 folder), and run.yaml and
command.txt keep the name and a reference, `secret:<id>/<name>`. The supervisor resolves the
references when it starts the command; a copy of the folder on another account resolves none.

A script run's launch environment is kept there too (`<id>.env.json`): `cockpit resume` from
another shell starts the command with the environment it was launched with, not that shell's.

The standard library only (the ground floor: `cockpit.paths`)."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

from cockpit.paths import config_dir
from cockpit.run import RUN_DIR_ENV

REF_PREFIX = "secret:"
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
"""An environment variable whose name says it holds a secret (HF_TOKEN, WANDB_API_KEY, ...)."""
SECRET_VALUE = re.compile(r"^(hf_|sk-|ghp_|gho_|github_pat_|xox[abp]-|glpat-)[A-Za-z0-9_\-]{8,}")
"""A value that looks like a token whatever its name (Hugging Face, OpenAI, GitHub, Slack, GitLab)."""
NOT_KEPT = ("COCKPIT_OWNER_FD", RUN_DIR_ENV, "COCKPIT_RESUME_FROM")
"""Launch-environment variables that belong to one process, never carried to a resume."""


def new_id() -> str:
    return uuid.uuid4().hex


def store() -> Path:
    return config_dir() / "run-secrets"


def _write(path: Path, obj: Any) -> None:
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def is_secret(name: str, value: str) -> bool:
    return bool(SECRET_NAME.search(name) or SECRET_VALUE.match(value))


def keep(run_id: str, values: dict[str, str]) -> dict[str, str]:
    """Keep `values` outside the run folder; returns a reference for each (`secret:<id>/<name>`)."""
    if not values:
        return {}
    path = store() / f"{run_id}.json"
    _write(path, {**_read(path), **values})
    return {name: f"{REF_PREFIX}{run_id}/{name}" for name in values}


def split_env(env: dict[str, str], run_id: str) -> dict[str, str]:
    """An `env:` mapping as run.yaml keeps it: secret values kept outside, referenced."""
    secret = {k: v for k, v in env.items() if is_secret(k, v) and not v.startswith(REF_PREFIX)}
    refs = keep(run_id, secret)
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
    """The environment a script run was launched with (this process's), for its resumes."""
    env = dict(os.environ if env is None else env)
    for name in NOT_KEPT:
        env.pop(name, None)
    _write(store() / f"{run_id}.env.json", env)


def launch_env(run_id: str | None) -> dict[str, str] | None:
    """The kept launch environment, or None (an older run, another account, deleted)."""
    if not run_id or not re.fullmatch(r"[0-9a-f]{32}", str(run_id)):
        return None
    env = _read(store() / f"{run_id}.env.json")
    return {str(k): str(v) for k, v in env.items()} or None
