"""Bounded resources, each with the real process: `cockpit serve` runs at most --max-sessions TUI
processes and ends each one's whole process group when its socket closes; `cockpit sample` killed by
SIGHUP or SIGTERM takes its sampler with it; a 1 MB prompt, `--max-new-tokens 10^12` and a
temperature of nan or -1 are refused in one line each before anything starts."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time

import aiohttp
import psutil
import pytest

from helpers import cli, cockpit_cmd, no_traceback, serve, wait_for

# -- F2: sample's numbers and prompts ----------------------------------------------------------------


def test_sample_refuses_unusable_numbers_and_a_one_megabyte_prompt_each_in_one_line(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("a short one\n" + "x" * 2**20 + "\n", encoding="utf-8")  # argv holds at most 128 KB an arg
    proc = cli("sample", str(tmp_path / "no-such-run"), "--max-new-tokens", str(10**12), "--temperature", "nan",
               "--prompts", str(prompts))
    no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "cockpit: --max-new-tokens 1000000000000: give a whole number from 1 to 32,768",
        "cockpit: --temperature nan: give a number from 0 (greedy) to 100",
        "cockpit: prompt 2: 1,048,576 characters — at most 100,000; shorten it"]
    for temperature in ("-1", "inf"):
        proc = cli("sample", str(tmp_path / "no-such-run"), "--temperature", temperature)
        no_traceback(proc)
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"cockpit: --temperature {float(temperature)}: give a number from 0 (greedy) to 100"]


def _end(proc: subprocess.Popen, children: list[psutil.Process]) -> None:
    """A test's end: its children killed if still there, then the CLI it started."""
    for p in children:
        try:
            p.kill()
        except psutil.Error:
            pass
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _sampler_children(pid: int, what: str = "sample") -> list[psutil.Process]:
    from cockpit.launch.sampler import PRIVATE

    module = f"{PRIVATE}.runner.{what}"  # the sampler (merger) runs from its private bundle: `python -m <module>`
    try:
        return [c for c in psutil.Process(pid).children(recursive=True) if module in c.cmdline()]
    except psutil.Error:
        return []


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sample_killed_by_a_signal_takes_its_sampler_down(tmp_path, sig):
    """A real `cockpit sample` on a checkpoint of the demo's tiny model: once its sampler runs, the
    CLI gets the signal; the sampler (its own session, so no terminal signal reaches it) must go
    too."""
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    model = ensure_all(demo_dir()) / "models" / "tiny-lm"
    ckpt = tmp_path / "out" / "checkpoint-1"
    shutil.copytree(model, ckpt)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 1, "max_steps": 1, "log_history": []}))
    proc = subprocess.Popen(cockpit_cmd("sample", str(tmp_path / "out"), "--prompt", "hello",
                                        "--max-new-tokens", "32000", "--no-keep"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    sampler: list[psutil.Process] = []
    try:
        sampler = wait_for(lambda: _sampler_children(proc.pid), timeout=120)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, (proc.returncode, err)
        assert "Traceback" not in err.decode(errors="replace")
        _gone, alive = psutil.wait_procs(sampler, timeout=15)
        assert not alive, f"the sampler outlived `cockpit sample`: {alive}"
    finally:
        _end(proc, sampler)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()



def test_a_sampler_whose_parent_is_sigkilled_ends_even_while_it_is_blocked_loading(tmp_path):
    """A real `cockpit sample` SIGKILLed (no handler of its runs) while its sampler is blocked loading
    the model, and so writes no line that would find the pipe closed: the sampler sees that its
    parent is gone and ends within seconds (it lived on before, holding the model's memory). The
    load that never ends is a stand-in `transformers` on the sampler's PYTHONPATH (after the
    sampler's own folder, as a user's PYTHONPATH is) whose import blocks: the training stack is not
    what this is about."""
    ckpt = tmp_path / "out" / "checkpoint-1"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    (ckpt / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 1, "max_steps": 1, "log_history": []}))
    blocked = tmp_path / "loading"
    stand_in = tmp_path / "site" / "transformers"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text(f"import pathlib, time\npathlib.Path({str(blocked)!r}).touch()\n"
                                          "time.sleep(600)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(tmp_path / "site")])}
    proc = subprocess.Popen(cockpit_cmd("sample", str(tmp_path / "out"), "--prompt", "hello", "--no-keep"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    sampler: list[psutil.Process] = []
    try:
        sampler = wait_for(lambda: _sampler_children(proc.pid), timeout=120)
        wait_for(blocked.exists, timeout=120)  # the sampler is in its load, and stays there
        time.sleep(1)
        assert all(p.is_running() for p in sampler)
        proc.kill()
        proc.wait(timeout=30)
        started = time.monotonic()
        _gone, alive = psutil.wait_procs(sampler, timeout=15)
        assert not alive, f"the sampler outlived its SIGKILLed parent: {alive}"
        assert time.monotonic() - started < 5
    finally:
        _end(proc, sampler)



# What the merger imports, standing in for peft and transformers: the model loads at once, and its
# save writes part of a weights file into the folder beside OUT, then never ends.
_STAND_IN_TRANSFORMERS = """
class _Embeddings:
    num_embeddings = 10**6


class _Model:
    def get_input_embeddings(self):
        return _Embeddings()


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(path):
        return _Model()


class _Tokenizer:
    pad_token = "<pad>"

    def __len__(self):
        return 8

    def save_pretrained(self, path):
        pass


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path):
        return _Tokenizer()
"""
_STAND_IN_PEFT = """
import pathlib, time


class _Merged:
    def save_pretrained(self, path, safe_serialization=True):
        (pathlib.Path(path) / "model.safetensors").write_bytes(b"half a model")
        pathlib.Path({flag!r}).touch()
        time.sleep(600)


class _Adapter:
    def merge_and_unload(self):
        return _Merged()


class PeftModel:
    @staticmethod
    def from_pretrained(base, adapter):
        return _Adapter()
"""


def test_a_merger_whose_parent_is_sigkilled_ends_and_leaves_no_half_written_folder(tmp_path):
    """A real `cockpit merge` SIGKILLed while its merger writes the merged model: the merger sees that
    its parent is gone (the sampler's watch, `runner/parent.py`), removes the folder it was writing
    beside OUT, says so in its log and ends within seconds (it merged on, holding the model's memory,
    before). peft and transformers are stand-ins on the merger's PYTHONPATH whose save never ends:
    the training stack is not what this is about."""
    from cockpit.launch.sampler import sampler_log
    from cockpit.metrics.checkpoints import list_run_checkpoints

    out = tmp_path / "out"
    ckpt = out / "checkpoint-1"
    ckpt.mkdir(parents=True)
    (ckpt / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "org/base-model"}))
    (ckpt / "adapter_model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 1, "max_steps": 1, "log_history": []}))
    saving = tmp_path / "saving"
    site = tmp_path / "site"
    for name, text in (("transformers", _STAND_IN_TRANSFORMERS), ("peft", _STAND_IN_PEFT.format(flag=str(saving)))):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(site)])}
    merged = tmp_path / "merged"
    log = sampler_log(list_run_checkpoints(out), "merge.log")
    start = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen(cockpit_cmd("merge", str(out), "-o", str(merged)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    merger: list[psutil.Process] = []
    try:
        merger = wait_for(lambda: _sampler_children(proc.pid, "merge"), timeout=120)
        wait_for(saving.exists, timeout=120)  # the merger is in its save, and stays there
        assert [p.name for p in tmp_path.glob(".merged.partial-*")], "the save writes beside OUT"
        time.sleep(1)
        assert all(p.is_running() for p in merger)
        proc.kill()
        proc.wait(timeout=30)
        started = time.monotonic()
        _gone, alive = psutil.wait_procs(merger, timeout=15)
        assert not alive, f"the merger outlived its SIGKILLed parent: {alive}"
        assert time.monotonic() - started < 5
        assert not list(tmp_path.glob(".merged.partial-*")) and not merged.exists()
        with open(log, "rb") as f:
            f.seek(start)
            said = f.read().decode("utf-8", "replace")
        assert "cockpit merger: the process that started it is gone — ending" in said, said
    finally:
        _end(proc, merger)

# -- F1: serve's TUI processes ---------------------------------------------------------------------


@pytest.fixture
def served_small(tmp_path):
    """A real `cockpit serve --max-sessions 2` in a session of its own; its group goes at the end."""
    with serve(tmp_path, "--max-sessions", "2") as served:
        yield served.proc, served.base, served.token


def _tui_children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def test_serve_runs_at_most_max_sessions_tuis_and_ends_each_when_its_socket_closes(served_small):
    proc, base, token = served_small
    ws_url = base.replace("http://", "ws://") + f"/ws?token={token}&width=80&height=24"

    async def scenario() -> tuple[list[int], int, int]:
        async with aiohttp.ClientSession() as session:
            opened, statuses = [], []
            for _ in range(4):
                try:
                    ws = await session.ws_connect(ws_url, headers={"Origin": base})
                    opened.append(ws)
                    statuses.append(101)
                except aiohttp.WSServerHandshakeError as exc:
                    statuses.append(exc.status)
            deadline = time.monotonic() + 120
            while len(_tui_children(proc.pid)) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            while_open = len(_tui_children(proc.pid))
            for ws in opened:
                await ws.close()
            deadline = time.monotonic() + 60
            while _tui_children(proc.pid) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            return statuses, while_open, len(_tui_children(proc.pid))

    statuses, while_open, after = asyncio.run(scenario())
    assert statuses == [101, 101, 503, 503]
    assert while_open == 2  # one process a tab (no shell in between)
    assert after == 0, "TUI processes outlived their sockets"
