"""Readers bounded by the file, not by a fixed buffer: `findings` and `export` inside a 4 GB
address-space limit (`ulimit -v`), and `checkpoints` listing a checkpoint whose trainer_state.json
is tens of MB in memory that does not grow with it. Real CLI processes, real limits, real files."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cockpit_cmd, no_traceback, safetensors_file

pytestmark = pytest.mark.proc

STATE_3KB = {"global_step": 20, "max_steps": 20, "epoch": 1.0,
             "log_history": [{"step": s, "epoch": s / 20, "loss": 2.0 - s / 20, "grad_norm": 1.0 + (s % 3) / 10,
                              "learning_rate": 1e-4} for s in range(1, 21)]}


def _limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run(*args: str, limit: int | None = None) -> subprocess.CompletedProcess:
    """The CLI, under an address-space limit when given."""
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200"},
                          preexec_fn=(lambda: _limited(limit)) if limit else None)


_PEAK = """import atexit, runpy, sys
def peak(path):
    with open(path, "w") as out:
        out.write(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")))
atexit.register(peak, sys.argv[1])
sys.argv = ["cockpit", *sys.argv[2:]]
runpy.run_module("cockpit.cli", run_name="__main__")
"""
"""The CLI, writing its own peak RSS at exit: VmHWM is the process's since its exec, where
ru_maxrss (wait4's, getrusage's) keeps the peak of the pytest process it was forked from."""


def test_findings_and_export_of_a_3kb_state_work_inside_a_4gb_address_space(tmp_path):
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps(STATE_3KB, indent=2))
    assert state.stat().st_size < 4096
    four_gb = 4_000_000 * 1024  # `ulimit -v 4000000`
    for args in (("findings", str(state)), ("export", str(state), "--csv", str(tmp_path / "out.csv"))):
        done = _run(*args, limit=four_gb)
        no_traceback(done)
        assert "MemoryError" not in done.stderr, (args, done.stderr)
        assert done.returncode == 0, (args, done.stderr)
    assert len((tmp_path / "out.csv").read_text().splitlines()) > 20


def _big_state(path: Path, steps: int) -> None:
    """A trainer_state.json of `steps` log entries as transformers writes it (indent 2, sorted keys)."""
    entries = ",\n".join(
        f'    {{\n      "epoch": {s / steps:.6f},\n      "grad_norm": {1 + (s % 7) / 10},\n'
        f'      "learning_rate": 1e-05,\n      "loss": {2 - s / steps:.6f},\n      "step": {s}\n    }}'
        for s in range(1, steps + 1))
    path.write_text(f'{{\n  "global_step": {steps},\n  "log_history": [\n{entries}\n  ],\n'
                    f'  "max_steps": {steps}\n}}\n')


def _checkpoint(output: Path, steps: int) -> Path:
    ckpt = output / f"checkpoint-{steps}"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    safetensors_file(ckpt / "model.safetensors")
    _big_state(ckpt / "trainer_state.json", steps)
    return ckpt / "trainer_state.json"


def _rss_of_listing(output: Path) -> tuple[dict, int]:
    """`cockpit checkpoints OUTPUT --json` and its peak RSS in bytes."""
    peak = output / "peak.txt"
    done = subprocess.run([sys.executable, "-c", _PEAK, str(peak), "checkpoints", str(output), "--json"],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), int(peak.read_text().split()[1]) * 1024


def test_checkpoints_lists_a_60mb_state_in_memory_that_does_not_grow_with_the_file(tmp_path):
    _checkpoint(tmp_path / "small", 20)
    small, rss_small = _rss_of_listing(tmp_path / "small")
    assert small["checkpoints"][0]["loss"] == pytest.approx(1.0)

    state = _checkpoint(tmp_path / "big", 400_000)
    size = state.stat().st_size
    assert size > 50 << 20
    big, rss_big = _rss_of_listing(tmp_path / "big")
    ckpt = big["checkpoints"][0]
    assert ckpt["step"] == 400_000 and ckpt["loss"] == pytest.approx(1.0) and ckpt["complete"]
    # The whole tree of it parsed took 8 times its size (1.5 GB for a 200 MB state): the
    # listing keeps a few values a checkpoint, so what the big file costs over the small one
    # is a fraction of the file, let alone twice it.
    assert rss_big - rss_small < size // 4, (rss_small, rss_big, size)
