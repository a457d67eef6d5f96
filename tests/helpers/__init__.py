"""The suite's shared machinery: the persistent test cache and the run farm.

- The test cache (demo assets, the TRL schema) is kept between sessions, keyed by the Python and
  training-stack versions, so a session does not rediscover TRL or rebuild the demo. It lives in
  the user cache folder (`cockpit-tests/`), or where `COCKPIT_TEST_CACHE` says
  (`COCKPIT_TEST_CACHE=tmp`: a fresh one per session, as a clean machine has).
- One sampler process a module (`SharedSampler`): `cockpit sample` and the Checkpoints tab start a
  sampler (the training stack's import) for each request; a module's tests share one instead.
- The run farm trains each canonical run shape once, through the real supervisor, and keeps it
  next to the test cache, keyed by the cockpit's code and the stack versions: a change to
  `cockpit/` or `presets/` trains it again. Tests that only read a run take a copy
  (`farm_run`); a file lock lets several pytest workers (xdist) wait for one build.

docs/testing.md says how to add a shape and when a test should train its own run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cockpit.run import journal
from cockpit.run.folder import RunFolder, Status

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "trainer_states"  # real public run logs: see PROVENANCE.md there
STACK = ("torch", "transformers", "trl", "peft", "datasets", "accelerate", "tokenizers")


def stack_key() -> str:
    """The Python and training-stack versions, short-hashed: what the cached assets depend on."""
    parts = [sys.version.split()[0]]
    for name in STACK:
        try:
            parts.append(f"{name}={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name}=-")
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:12]


@functools.cache
def code_key() -> str:
    """The cockpit's code and shipped presets, plus the stack: what a farmed run depends on."""
    h = hashlib.sha256(stack_key().encode())
    for top in ("cockpit", "presets"):
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    for path in (*sorted(Path(__file__).parent.glob("*.py")), REPO / "tests" / "conftest.py"):  # the shapes themselves
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def test_cache_dir(session_tmp: Callable[[str], Path]) -> Path:
    """The cockpit cache the session's tests and their child processes share."""
    given = os.environ.get("COCKPIT_TEST_CACHE", "")
    if given == "tmp":
        return session_tmp("cockpit-cache")
    if given:
        return Path(given)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cockpit-tests")) / f"cache-{stack_key()}"


def farm_dir(cache: Path) -> Path:
    return Path(f"{cache}-farm") / code_key()


NO_SFT_CHECK = "cockpit.doctor.sft_data=false"
"""The override for a real SFT run through the supervisor whose test is not about the SFT data
check: that check is a subprocess importing TRL beside the training (at nice 19), and the
supervisor waits for it (up to 8 s) before it writes the run's end — ~4 s and a TRL import's CPU
a test. The farm's SFT shapes pass it too (no test of theirs reads the data check's findings, and
the farm is trained while other tests wait for it); the check runs for real beside a run in
test_findings_beyond_metrics, which asserts its finding, and test_migrate's chat-template launch.
`cockpit run --dry-run` honours it too (its `# data:` line says so)."""


# -- the run farm --------------------------------------------------------------------------------

TINY_SFT = ["max_steps=4", "save_steps=2", "eval_steps=2", "cockpit.completions.every_steps=2",
            "cockpit.completions.num_prompts=2", NO_SFT_CHECK]


@dataclass(frozen=True)
class Shape:
    """One canonical run: a demo preset with overrides, trained to its end through the supervisor."""

    preset: str
    overrides: tuple[str, ...]
    about: str
    stop_after: int | None = None  # stop with a save (`cockpit stop`) once this many steps are logged
    cli: bool = False  # trained by `cockpit run PRESET --wait --set ...` in an empty folder (`farm_cli`)


STOPPED_STEPS = 40
"""The `stopped` shape's max_steps. Its trainer runs ~35 steps a second on one thread: the stop asked
for once 5 are logged must land before the last (24 once did not, under load)."""

# Each shape is trained at most once per code_key; docs/testing.md lists them.
SHAPES: dict[str, Shape] = {
    "sft": Shape("demo-sft", tuple(TINY_SFT),
                 "demo-sft, 4 steps, eval every 2, checkpoints 2 and 4, completions at steps 2 and 4"),
    "sft-lora": Shape("demo-sft", (*TINY_SFT, "use_peft=true", "lora_r=4", "lora_target_modules=all-linear",
                                   "cockpit.name=lora"),
                      "its LoRA twin (adapter checkpoints)"),
    "stopped": Shape("demo-sft", (f"max_steps={STOPPED_STEPS}", "save_steps=1000", "eval_strategy=no",
                                  "cockpit.completions={}", NO_SFT_CHECK),
                     f"demo-sft of {STOPPED_STEPS} steps stopped with a save after 5 or more", stop_after=5),
    "grpo": Shape("demo-grpo", ("max_steps=18",),
                  "demo-grpo of 18 steps (its two rewards, completions every step), by `cockpit run demo-grpo "
                  "--wait` in an empty folder", cli=True),
}


def _metric_steps(run) -> list[int]:
    records, _ = journal.read_all(run.events)
    return [r.step for r in records if r.kind == journal.METRICS and not r.data.get("summary") and r.step is not None]


def _wait_ended(run, timeout: float = 600.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = run.read_status().state
        if state in ("finished", "failed", "killed", "stopped"):
            return state
        time.sleep(0.2)
    raise AssertionError(f"farm: {run.path} did not end in {timeout:.0f}s")


def _train(shape: Shape, runs_dir: Path):
    from cockpit.config.presets import apply_overrides, load_preset
    from cockpit.launch.plan import launch
    from cockpit.run.folder import RunFolder

    if not shape.cli:
        return launch(apply_overrides(load_preset(shape.preset), list(shape.overrides)), runs_dir)
    work = runs_dir.parent / "work"  # the empty folder it is run in: the run lands in work/runs
    work.mkdir(parents=True)
    sets = [a for kv in shape.overrides for a in ("--set", kv)]
    argv = [sys.executable, "-m", "cockpit.cli", "run", shape.preset, "--wait", *sets]
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    (runs_dir.parent / "cli.json").write_text(json.dumps({"argv": argv[1:], "cwd": str(work), "returncode":
                                                          done.returncode, "stdout": done.stdout,
                                                          "stderr": done.stderr}))
    if done.returncode != 0 or not done.stdout.strip():
        raise AssertionError(f"farm: {' '.join(argv[3:])} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return RunFolder(Path(done.stdout.splitlines()[0]))


def farm_original(cache: Path, name: str) -> Path:
    """The farmed run folder of shape `name`, trained here first if no worker has yet (under a lock)."""
    from filelock import FileLock

    from cockpit.run import owner

    shape = SHAPES[name]
    root = farm_dir(cache)
    if not root.is_dir():  # a new code version: farms of old ones, untouched for a week, go
        for old in root.parent.glob("*"):
            if old.is_dir() and time.time() - old.stat().st_mtime > 7 * 86400:
                shutil.rmtree(old, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    home = root / name
    done = root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(home, ignore_errors=True)  # what a killed build left
            run = _train(shape, home / "runs")
            if shape.stop_after:
                deadline = time.monotonic() + 600
                while len(_metric_steps(run)) < shape.stop_after and run.read_status().live:
                    if time.monotonic() > deadline:
                        raise AssertionError(f"farm: {run.path} logged no {shape.stop_after} steps in 600 s")
                    time.sleep(0.02)
                # What `cockpit stop RUN` does, from here: a CLI process would start while the trainer
                # takes tens of steps (`cockpit stop` itself is tested with real runs elsewhere).
                from cockpit.launch.plan import stop

                stop(run, save=True)
            state = _wait_ended(run)
            # the supervisor may still write (an alert after run_ended, its log): the copy waits for its exit
            status, deadline = run.read_status(), time.monotonic() + 60
            while owner.same_process(status.supervisor_pid, status.supervisor_started) and time.monotonic() < deadline:
                time.sleep(0.1)
            if state != ("stopped" if shape.stop_after else "finished"):
                tail = run.stdout_log.read_text(errors="replace")[-3000:]
                raise AssertionError(f"farm: shape {name!r} ({shape.about}) ended {state}:\n{tail}")
            done.write_text(str(run.path))
        return RunFolder(Path(done.read_text())).path


_TEXT_FILES = ("run.yaml", "trl.yaml", "command.txt", "events.jsonl", "status.json", "trainer.json",
               "supervisor.log", "stdout.log")


def copy_run(src: Path, runs_dir: Path):
    """A copy of run folder `src` in `runs_dir`, its own paths rewritten to the copy's (as if it had
    been trained there). The copy is the test's to change."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    dest = runs_dir / src.name
    shutil.copytree(src, dest, symlinks=True)
    old, new = str(src).encode(), str(dest).encode()
    for rel in _TEXT_FILES:
        path = dest / rel
        if path.is_file():
            data = path.read_bytes()
            if old in data:
                path.write_bytes(data.replace(old, new))
    return RunFolder(dest)


def farm_copy(shape: str, runs_dir: Path):
    """A copy of the farm's run of `shape` in `runs_dir` (the session's cache decides the farm)."""
    return copy_run(farm_original(Path(os.environ["COCKPIT_CACHE_DIR"]), shape), runs_dir)


def farm_cli(shape: str) -> tuple[Path, subprocess.CompletedProcess]:
    """How the farm's run of a `cli` shape was trained: the folder `cockpit run` ran in, and what the
    command said (its exit code, stdout, stderr), for a test of that command to read."""
    cache = Path(os.environ["COCKPIT_CACHE_DIR"])
    farm_original(cache, shape)
    said = json.loads((farm_dir(cache) / shape / "cli.json").read_text())
    return Path(said["cwd"]), subprocess.CompletedProcess(said["argv"], said["returncode"], said["stdout"],
                                                          said["stderr"])


# -- the fake trainer ----------------------------------------------------------------------------

FAKE_TRAINER = REPO / "tests" / "fixtures" / "scripts" / "fake_trainer.py"
PIPELINE = REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"  # a user's own TRL script (SFT/DPO/GRPO stages)


def fake_argv(*args: str) -> list[str]:
    """The command line of the stand-in trainer (tests/fixtures/scripts/fake_trainer.py)."""
    return [sys.executable, str(FAKE_TRAINER), *args]


def fake_run(runs_dir: Path, *args: str, name: str = "fake"):
    """A script run of the fake trainer under the real supervisor (its own process group, signals,
    files): for tests whose subject is process control, not training. Returns the RunFolder."""
    from cockpit.launch.plan import launch_prepared
    from cockpit.launch.script import prepare_script

    runs_dir.mkdir(parents=True, exist_ok=True)
    return launch_prepared(prepare_script(fake_argv(*args), cwd=runs_dir.parent, runs_dir=runs_dir, name=name))


def hub_cache_env(root: Path, models: tuple[str, ...] = (), datasets: tuple[str, ...] = ()) -> dict[str, str]:
    """An environment whose offline Hugging Face cache (under `root`) holds these repos, as `hf download`
    leaves them (a snapshot folder): what a dry-run checks a hub id against (`cockpit/config/hub.py`).
    Called again with more repos, the same cache grows."""
    for kind, repos in (("models", models), ("datasets", datasets)):
        for repo in repos:
            snap = root / "hub" / f"{kind}--{repo.replace('/', '--')}" / "snapshots" / "0123abc"
            snap.mkdir(parents=True, exist_ok=True)
            (snap / ("config.json" if kind == "models" else "README.md")).write_text('{"model_type": "qwen2"}')
    return {**os.environ, "HF_HUB_CACHE": str(root / "hub"), "HF_DATASETS_CACHE": str(root / "ds")}


# -- the CLI, hand-made run folders and checkpoints (no training) ------------------------------


def cockpit_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cockpit.cli", *args]


def cli(*args: str, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real CLI; a reader that hangs fails the test at `timeout` instead of hanging the suite."""
    return subprocess.run(cockpit_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


def make_run_folder(runs: Path, name: str, *, state: str = "finished", records: list[journal.Record] | None = None,
                    trainer: str = "sft", stamped: bool = False, started: float | None = None,
                    here: bool = True) -> RunFolder:
    """The suite's one hand-made run folder (no training): run.yaml, status.json and a journal,
    written with the real run-folder and journal code. By default as a finished run leaves it,
    named `name`, its journal three SFT steps and the end. `stamped`: named as a launch names it
    (`name-YYYYMMDD-HHMMSS`, `create_run_folder`); `started`: the status's start time; `here`: the
    status names this machine as the run's host (a live run's supervisor is then looked for)."""
    from cockpit.run.folder import create_run_folder

    if stamped:
        run = create_run_folder(runs, name)
    else:
        run = RunFolder(runs / name)
        run.path.mkdir(parents=True)
    run.run_yaml.write_text(f"trainer: {trainer}\n", encoding="utf-8")
    run.write_status(Status(state=state, name=run.name, trainer=trainer, started=started,
                            host=os.uname().nodename if here else ""))
    if records is None:
        records = [journal.run_started(trainer, max_steps=3, versions={"trl": "1.16"}),
                   *(journal.metrics(s, {"loss": 2.0 / s, "learning_rate": 1e-4}) for s in (1, 2, 3)),
                   journal.progress(3, 3, steps_per_s=1.5, eta_s=0.0),
                   journal.run_ended(state, reason="training finished")]
    with journal.JournalWriter(run.events) as w:
        w.write_all(records)
    return run


def live(run: RunFolder) -> RunFolder:
    """Live as every reader sees it: running, its status naming a supervisor that is alive (the
    test's own process, with its start time: a pid alone proves nothing)."""
    from cockpit.run import owner

    run.update_status(state="running", supervisor_pid=os.getpid(), supervisor_started=owner.start_time(os.getpid()))
    return run


def safetensors_file(path: Path, n_floats: int = 64, *, cut: int = 0) -> None:
    """A real safetensors file (8-byte header length, JSON header, data), cut short by `cut` bytes."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [n_floats], "data_offsets": [0, 4 * n_floats]}}).encode()
    data = struct.pack("<Q", len(header)) + header + struct.pack(f"<{n_floats}f", *range(n_floats))
    path.write_bytes(data[:len(data) - cut] if cut else data)


def checkpoint_folder(output: Path, step: int, *, log_history=None, cut: int = 0, max_steps: int = 10) -> Path:
    """A checkpoint as a Trainer leaves it: config.json, real weights (cut short by `cut` bytes) and
    its trainer_state.json (`log_history`: one loss at its step unless given)."""
    ckpt = output / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text("{}")
    safetensors_file(ckpt / "model.safetensors", cut=cut)
    history = [{"step": step, "loss": 1.0 / step}] if log_history is None else log_history
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": max_steps,
                                                         "log_history": history}))
    return ckpt


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """A real `cockpit serve` (`serve`): its process, the base URL and token it printed, its port,
    and what it printed up to then (it goes on printing its access log to `proc.stdout`)."""

    proc: subprocess.Popen
    base: str
    token: str
    port: int
    out: bytes


@contextmanager
def serve(cwd: Path, *args: str, printed: bytes = rb"http://127\.0\.0\.1:\d+") -> Iterator[Served]:
    """A real `cockpit serve` on a free port (its runs in `cwd`/runs) in a session of its own, once
    it listens; at the end its whole process group goes, the server and every TUI it started
    (SIGTERM, then SIGKILL). `printed`: the pattern of the base URL it prints."""
    import re
    import select
    import signal

    port = free_port()
    proc = subprocess.Popen(cockpit_cmd("serve", "--port", str(port), "--runs-dir", str(cwd / "runs"), *args),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=cwd)
    assert proc.stdout is not None
    try:
        out = b""
        deadline = time.monotonic() + 120
        while b"?token=" not in out and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                out += os.read(proc.stdout.fileno(), 4096)
        found = re.search(rb"(" + printed + rb")/\?token=([A-Za-z0-9_-]+)", out)
        assert found, out.decode(errors="replace")
        wait_for(lambda: _listening(port), timeout=60)  # the URL is printed as the server starts
        yield Served(proc, found.group(1).decode(), found.group(2).decode(), port, out)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        proc.stdout.close()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


# -- the demo's assets and a disk that fills -----------------------------------------------------


def demo_assets() -> Path:
    """The offline demo folder (tiny model, datasets), built once into the session's cache."""
    from cockpit.demo import demo_dir
    from cockpit.runner.assets import ensure_all

    return ensure_all(demo_dir())


@contextmanager
def tmpfs_mount(mnt: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (`16m`) mounted at `mnt` (made here), unmounted at the end; the test is
    skipped where this machine mounts none."""
    import pytest

    mnt.mkdir()
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill_disk(path: Path) -> None:
    """Write zeros until the disk is full. Unbuffered: a short last write leaves nothing behind for
    close() to flush (and fail on), whatever the free space was."""
    with open(path, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 2**16)
        except OSError:
            pass
# -- one sampler a module ------------------------------------------------------------------------


class SharedSampler:
    """One real sampler process (`cockpit.launch.sampler.Sampler`, the training stack imported once)
    for a module's tests: `use()` hands it to whatever would start its own — `cockpit sample`
    (`cli(...)`, run in this process) or the Checkpoints tab — and their close() leaves it running
    for the next test. The sampler keeps each model it loaded (as a chat's turns do), and seeds
    every answer itself, so what a test gets is what a fresh sampler answers. A model's memory check
    runs when it is loaded: a test of that check starts its own sampler. `close()` ends it."""

    def __init__(self, log: Path) -> None:
        from cockpit.launch.sampler import Sampler

        self.log = log
        self._start = Sampler  # the real one: use() puts a stand-in in its place
        self._real = None
        self._in_flight = False

    def _sampler(self):
        if self._real is None or self._real.proc.poll() is not None:
            self._real = self._start(sys.executable, self.log)
        return self._real

    @contextlib.contextmanager
    def use(self) -> Iterator[None]:
        """While in this block, every sampler the cockpit starts (`Sampler(python, log)` or
        `Sampler.for_run(found)`) is this one."""
        import pytest

        from cockpit.launch import sampler as smp

        shared = self

        class Start:  # stands in for smp.Sampler
            def __new__(cls, python: str, *_log: object) -> _Handle:  # type: ignore[misc]
                assert python == sys.executable, f"a sampler for another Python ({python}) cannot be shared"
                return _Handle(shared)

            @classmethod
            def for_run(cls, found: object, python: str | None = None) -> _Handle:
                return cls(smp.sampler_python(found, python))  # type: ignore[arg-type]

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(smp, "Sampler", Start)
            yield

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        """`cockpit ARGS` run in this process (its exit code, stdout, stderr), its sampler this one."""
        from cockpit.cli import main

        out, err = io.StringIO(), io.StringIO()
        with self.use(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return subprocess.CompletedProcess(["cockpit", *args], code, out.getvalue(), err.getvalue())

    def close(self) -> None:
        """Ends the process the way the Checkpoints tab ends its own when it closes (`kill()`)."""
        if self._real is not None:
            self._real.kill()
            self._real = None


class _Handle:
    """What `Sampler(...)` returns under `SharedSampler.use()`: the shared process, which its
    close() leaves running. A kill() before a request's last event ends it (the next use starts
    another): a half-read answer never reaches the next test."""

    def __init__(self, shared: SharedSampler) -> None:
        self._shared = shared
        self._real = shared._sampler()
        self.proc = self._real.proc
        self.log_path = self._real.log_path

    def ask(self, request) -> Iterator:
        """The shared sampler's events for the request, until its `Done` or `Failed`."""
        from cockpit.launch import sampler as smp

        self._shared._in_flight = True
        for event in self._real.ask(request):
            if isinstance(event, (smp.Done, smp.Failed)):
                self._shared._in_flight = False
            yield event

    def close(self, timeout: float = 10.0) -> None:
        """Nothing: the module's fixture ends the process."""

    def kill(self) -> None:
        if self._shared._in_flight:
            self._real.kill()
            self._shared._real = None
            self._shared._in_flight = False


# -- ending what a test started ----------------------------------------------------------------


def gone(pid: int | None) -> bool:
    """Ended: no pid, no such process, or a zombie (the test is its parent; a user's shell reaps it)."""
    import psutil

    if not pid:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_and_reap(pid: int | None, started: float | None = None) -> None:
    """SIGKILL one pid the test started, directly or through a run (given `started`, only while it
    is still the process that started then), and reap it when it is the test's child."""
    import signal

    from cockpit.run import owner

    if not pid or (started is not None and not owner.same_process(pid, started)):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def wait_for(pred, timeout: float = 240.0, every: float = 0.2):
    """Poll `pred` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting")


def wait_journal_end(run, timeout: float = 60.0) -> list:
    """The run's journal once its end is in it. The supervisor writes the final status first and
    `run_ended` right after it (a reader that sees `run_ended` finds the status final), so a test
    that waited for the status reads the journal after this: one `run_ended` an attempt."""
    from cockpit.run import journal

    def ended():
        records = journal.read_all(run.events)[0]
        ends = sum(r.kind == journal.RUN_ENDED for r in records)
        return records if ends >= (run.read_status().attempt or 1) else None
    return wait_for(ended, timeout=timeout, every=0.1)


def stored_completions(run) -> list:
    """A run's completions as one `completions` record a step, read from its completions store;
    each journal pointer (`completions_ref`) must have its rows there."""
    from cockpit.metrics.completions import CompletionsLibrary
    from cockpit.run import journal

    lib = CompletionsLibrary(run.path)
    lib.refresh()
    records, _ = journal.read_all(run.events)
    refs = {r.step: r.data["count"] for r in records if r.kind == journal.COMPLETIONS_REF}
    out = []
    for step in lib.steps():
        rows = lib.rows(step)
        assert refs.get(step) == len(rows), (step, refs.get(step), len(rows))
        out.append(journal.Record(journal.COMPLETIONS, {"rows": rows, "source": rows[0]["source"] if rows else ""},
                                  step=step))
    return out
