"""What the config folder and `--env` values do to a run, each the real thing: a HOME on a
read-only mount, and secrets that only their values give away (a password in DATABASE_URL, a
Slack webhook URL, an AWS key, a random token) under the real `cockpit run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.run.folder import RunFolder
from helpers import cockpit_cmd, no_traceback, wait_for

pytestmark = pytest.mark.proc


def _run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=180, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=env)


def _home(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "COCKPIT_CONFIG_DIR", "COCKPIT_CACHE_DIR")}
    return {**env, "HOME": str(home), **more}


@pytest.fixture
def read_only_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(home)], capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {got.stderr.decode(errors='replace').strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def test_a_read_only_home_names_the_config_folder_and_runs_without_secrets_go_on(tmp_path, read_only_home):
    runs = tmp_path / "runs"
    env = _home(read_only_home)
    done = _run("run", "--runs-dir", str(runs), "--wait", "--", sys.executable, "-c", "print('trained')",
                cwd=tmp_path, env=env)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    run = RunFolder(Path(done.stdout.splitlines()[0].strip()))
    assert "trained" in run.stdout_log.read_text()
    said = [line for line in done.stderr.splitlines() if "config folder" in line]
    assert len(said) == 1 and str(read_only_home / ".config" / "cockpit") in said[0], done.stderr
    assert "COCKPIT_CONFIG_DIR" in said[0] and "--runs-dir" not in said[0]

    # a run whose --env holds a secret needs the folder: refused in one line with the same fix
    refused = _run("run", "--runs-dir", str(runs), "--env", "HF_TOKEN=hf_abcdefghijklmnopqrstu", "--wait", "--",
                   sys.executable, "-c", "print(1)", cwd=tmp_path, env=env)
    no_traceback(refused)
    assert refused.returncode == 2, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert "config folder cannot be written" in last and "COCKPIT_CONFIG_DIR" in last and "--runs-dir" not in last

    # moved where it says: the secret run goes
    moved = _run("run", "--runs-dir", str(runs), "--env", "HF_TOKEN=hf_abcdefghijklmnopqrstu", "--wait", "--",
                 sys.executable, "-c", "print(1)", cwd=tmp_path,
                 env={**env, "COCKPIT_CONFIG_DIR": str(tmp_path / "config")})
    assert moved.returncode == 0, moved.stderr
    assert "config folder" not in moved.stderr


SECRETS = {
    "DATABASE_URL": ("postgres://trainer:Pa55-word-91x@db.internal:5432/runs", "a URL with a password"),
    "DB_PASSPHRASE": ("correct horse battery staple", "its name"),
    "ALERTS_TO": ("https://hooks.slack.com/services/T0001/B0002/abcdefghijklmnopqrstuvwx", "a webhook URL"),
    "CHAT": ("https://discord.com/api/webhooks/123456789/abcdefghijklmnop", "a webhook URL"),
    "S3_ID": ("AKIAIOSFODNN7EXAMPLE", "a token"),
    "OPAQUE": ("Zk8x2Qm9Lp4Vt7Rb1Yc6Nd3Hs5Jw0Ga", "a random-looking value"),
}
PLAIN = {"MODEL": "meta-llama/Llama-3.1-8B-Instruct", "DATA": "/data/run-2024/train_v3.jsonl",
         "LR": "1e-5", "SITE": "https://example.com/docs"}


def test_secrets_found_by_value_are_kept_out_of_the_run_folder_and_said(tmp_path):
    runs = tmp_path / "runs"
    expected = tmp_path / "expected.json"  # outside the run folder: the script compares, never prints
    expected.write_text(json.dumps({k: v for k, (v, _) in SECRETS.items()}))
    script = (f"import json, os\nwant = json.load(open({str(expected)!r}))\n"
              "print('seen:', all(os.environ.get(k) == v for k, v in want.items()))\n")
    env_args = [a for k, (v, _) in SECRETS.items() for a in ("--env", f"{k}={v}")]
    env_args += [a for k, v in PLAIN.items() for a in ("--env", f"{k}={v}")]
    done = _run("run", "--runs-dir", str(runs), *env_args, "--wait", "--", sys.executable, "-c", script,
                cwd=tmp_path, env={**os.environ, "COCKPIT_CONFIG_DIR": str(tmp_path / "config")})
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    run = RunFolder(Path(done.stdout.splitlines()[0].strip()))
    wait_for(lambda: not run.read_status().live, timeout=60)
    assert "seen: True" in run.stdout_log.read_text()  # the command got every value
    for path in run.path.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            for name, (value, _) in SECRETS.items():
                assert value.encode() not in text, f"{name}'s value written in clear in {path}"
    said = [line for line in done.stderr.splitlines() if "kept outside the run folder" in line]
    assert len(said) == 1, done.stderr
    for name, (_, why) in SECRETS.items():
        assert f"{name} ({why})" in said[0]
    kept = run.config()["cockpit"]["env"]  # run.yaml as written
    assert all(kept[k].startswith("secret:") for k in SECRETS)
    assert all(kept[k] == v for k, v in PLAIN.items())  # the plain ones stay readable
    command = run.command_txt.read_text()
    assert "DATABASE_URL='<kept outside the run folder>'" in command and "LR=1e-5" in command
