"""The cockpit benchmark (issue 5): every figure measured for real, on this machine.

    python bench/run.py                  the table (figure, value, goal, anchor)
    python bench/run.py --json           one JSON object: the figures and `machine`
    python bench/run.py --only ui_first_frame_s,latency_p95_ms
    python bench/run.py --quick          smaller sizes and fewer repeats (a smoke test)

How each figure is measured is in docs/performance.md; every measurement is one function
below. UI figures run the real app in child processes with a real (not headless) Textual
driver that renders every frame to escape sequences (bench/frame_driver.py); training
figures run TRL for real. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# -- the figures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    key: str
    unit: str
    goal: str
    anchor: str
    ok: Callable[[float], bool]


FIGURES: dict[str, Figure] = {f.key: f for f in (
    Figure("ui_first_frame_s", "s", "<= 0.6",
           "W&B LEET first chart 1.3 s; `import textual`+widgets alone 0.47 s",
           lambda v: v <= 0.6),
    Figure("latency_p95_ms", "ms", "<= 100",
           "W&B LEET 1.5 s median, 2.4 s p90", lambda v: v <= 100),
    Figure("replay_100k_sft_s", "s", "<= 0.5",
           "W&B LEET 30 s; TensorBoard ingestion 30 s; json.loads alone 0.53 s",
           lambda v: v <= 0.5),
    Figure("replay_100k_grpo_s", "s", "<= 1.5",
           "json.loads alone 2.3 s (orjson 0.72 s)", lambda v: v <= 1.5),
    Figure("frame_4x1M_ms", "ms", "<= 50",
           "raw plotext: 14.6 s a plot of 1M points", lambda v: v <= 50),
    Figure("ui_rss_mb_4x1M", "MB", "<= 200",
           "W&B LEET 187 MB for 100k x 8", lambda v: v <= 200),
    Figure("throughput_ratio", "x", ">= 0.99",
           "plain TRL script = 1.0", lambda v: v >= 0.99),
    Figure("first_step_overhead_s", "s", "<= 1.0",
           "TRL CLI ~9 s later than a plain script", lambda v: v <= 1.0),
    # issue 46: the callback's own cost, measured alone
    Figure("callback_step_cpu_us", "us", "<= 100",
           "1 % of the demo SFT's CPU step (~11 ms on 2 cores)", lambda v: v <= 100),
    # issue 15: the peers, measured in the same run (--peers)
    Figure("replay_vs_leet_x", "x", ">= 30", "LEET's time to a complete chart / the cockpit's",
           lambda v: v >= 30),
    Figure("replay_vs_tensorboard_x", "x", ">= 30", "EventAccumulator ingest / the cockpit's replay",
           lambda v: v >= 30),
    Figure("replay_vs_orjson_floor_x", "x", "<= 3", "the cockpit's replay / orjson parse alone",
           lambda v: v <= 3),
    Figure("latency_vs_leet_x", "x", ">= 10", "LEET's live p95 / the cockpit's", lambda v: v >= 10),
    Figure("rss_vs_leet_x", "x", "<= 1", "the cockpit's RSS / LEET's, 100k steps shown",
           lambda v: v <= 1),
    # issue 15: at scale
    Figure("home_1000_runs_s", "s", "<= 1", "home screen, 1,000 runs listed", lambda v: v <= 1),
    Figure("runs_cli_1000_s", "s", "<= 1", "`cockpit runs`, 1,000 runs", lambda v: v <= 1),
    # issue 46: ten times the sizes
    Figure("home_10k_runs_s", "s", "<= 1", "home screen, 10,000 runs listed", lambda v: v <= 1),
    Figure("runs_cli_10k_s", "s", "<= 1", "`cockpit runs`, 10,000 runs", lambda v: v <= 1),
    Figure("follow_72h_rss_growth_mb", "MB", "<= 20", "live view following 72 h at 1 step/s",
           lambda v: v <= 20),
    Figure("follow_72h_frame_ms_growth", "ms", "<= 10", "full refresh, end minus start",
           lambda v: v <= 10),
    # issue 12: a 10,000-step GRPO run, completions in their own store
    Figure("attach_10k_grpo_s", "s", "<= 1.5", "attach: open to every panel drawn",
           lambda v: v <= 1.5),
    Figure("attach_10k_grpo_rss_mb", "MB", "<= 300", "the attached UI's RSS", lambda v: v <= 300),
    Figure("attach_100k_grpo_s", "s", "<= 2", "attach to a 100,000-step GRPO run: open to drawn",
           lambda v: v <= 2),
    Figure("attach_100k_grpo_rss_mb", "MB", "<= 300", "its RSS", lambda v: v <= 300),
    Figure("completions_step_p95_ms", "ms", "<= 100", "a random step's rows from the store",
           lambda v: v <= 100),
    Figure("journal_10k_grpo_mb", "MB", "<= 10", "events.jsonl of the run (completions apart)",
           lambda v: v <= 10),
    # issue 44: an agent's seat
    Figure("mcp_answer_100k_ms", "ms", "<= 200", "`cockpit mcp`: a tool's answer on a 100k-step run, p95",
           lambda v: v <= 200),
)}
PEER_FIGURES = ("replay_vs_leet_x", "replay_vs_tensorboard_x", "replay_vs_orjson_floor_x",
                "latency_vs_leet_x", "rss_vs_leet_x")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- machine ----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for pkg in ("textual", "trl", "transformers", "torch", "numpy",
                "orjson", "tsdownsample"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cores": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_at_start": load, "versions": versions}


# -- helpers ----------------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"})
    env.pop("TEXTUAL_DRIVER", None)
    # A user's Python caches compiled modules; this sandbox sets PYTHONDONTWRITEBYTECODE,
    # which would make every measured start compile cockpit from source. (__pycache__ is
    # in .gitignore.)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def _ui_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(BENCH), str(REPO), os.environ.get("PYTHONPATH")) if p)
    return _env(TEXTUAL_DRIVER="frame_driver:FrameDriver", PYTHONPATH=path, **extra)


def _cockpit_cmd() -> list[str]:
    exe = shutil.which("cockpit")
    return [exe] if exe else [sys.executable, "-m", "cockpit.cli"]


def _probe(args: list[str], timeout: float = 300) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cockpit-bench-") as d:
        out = Path(d) / "out.json"
        if args[0] == "frame":  # frame OUT [options]
            cmd = [sys.executable, str(BENCH / "ui_probe.py"), "frame", str(out), *args[1:]]
        else:  # MODE PATH OUT [options]
            cmd = [sys.executable, str(BENCH / "ui_probe.py"), args[0], args[1], str(out), *args[2:]]
        proc = subprocess.run(cmd, env=_ui_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=timeout)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"ui probe {args[0]} failed ({proc.returncode}): "
                               f"{proc.stderr.decode(errors='replace')[-2000:]}")
        return json.loads(out.read_text())


def _p(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank), as the issue's p95 means it."""
    s = sorted(values)
    if not s:
        raise ValueError("no values")
    k = max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))
    return s[k]


def _make_run(runs_dir: Path, name: str, steps: int, *, state: str = "running"):
    """A run folder written with the core APIs, as the runner and supervisor would leave it."""
    import math

    from cockpit.run import journal
    from cockpit.run.folder import Status, create_run_folder

    run = create_run_folder(runs_dir, name)
    run.run_yaml.write_text("trainer: sft\n", encoding="utf-8")
    run.write_status(Status(state=state, name=run.name, trainer="sft", started=time.time(),
                            supervisor_pid=os.getpid(), host=os.uname().nodename))
    recs = [journal.run_started("sft", max_steps=100000), journal.phase("training")]
    for s in range(1, steps + 1):
        recs.append(journal.metrics(s, {"loss": 2.0 / (1 + s / 50) + 0.05 * math.sin(s),
                                        "learning_rate": 1e-4, "grad_norm": 1.0,
                                        "mean_token_accuracy": min(1.0, s / 400), "entropy": 1.5,
                                        "num_tokens": 1024.0 * s}, epoch=s / 1000))
        recs.append(journal.progress(s, 100000, steps_per_s=20.0, eta_s=1000.0))
    if state != "running":
        recs.append(journal.run_ended(state))
    with journal.JournalWriter(run.events) as jw:
        jw.write_all(recs)
    return run


# -- UI figures -------------------------------------------------------------------------------


def measure_ui_first_frame(quick: bool, work: Path) -> dict[str, Any]:
    """`cockpit` (the home screen, a runs folder of 5 runs) from process start to the first
    frame written to the terminal; median of 5 fresh processes after one warm-up."""
    runs = work / "first-frame-runs"
    if not runs.exists():
        for i, st in enumerate(("finished", "finished", "failed", "stopped", "finished")):
            _make_run(runs, f"run{i}", 200, state=st)
    n = 3 if quick else 5
    times = []
    for i in range(n + 1):
        mark = work / "first-frame.t"
        mark.unlink(missing_ok=True)
        env = _ui_env(COCKPIT_BENCH_FIRST_FRAME=str(mark))
        t0 = time.time()
        proc = subprocess.run([*_cockpit_cmd(), "--runs-dir", str(runs)], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=60)
        if not mark.exists():
            raise RuntimeError(f"cockpit drew no frame (exit {proc.returncode}): "
                               f"{proc.stderr.decode(errors='replace')[-1500:]}")
        if i:  # the first run warms the file cache and the .pyc files
            times.append(float(mark.read_text()) - t0)
    return {"ui_first_frame_s": statistics.median(times),
            "_detail": {"runs_s": [round(t, 3) for t in times]}}


def measure_latency(quick: bool, work: Path) -> dict[str, Any]:
    """A writer process appends metrics lines at 20/s while `cockpit` shows the run live;
    time from each line's `t` to the first frame written after the loss plot was built
    from a store holding that step."""
    rate, seconds = 20.0, (3.0 if quick else 10.0)
    run = _make_run(work / "latency-runs", "latency", 20)
    res = _probe(["latency", str(run.path), "--rate", str(rate), "--seconds", str(seconds),
                  "--first", "21"], timeout=120)
    lat = res["latencies_ms"]
    if not lat:
        raise RuntimeError(f"no step became visible: {res}")
    return {"latency_p95_ms": _p(lat, 95),
            "_detail": {"median_ms": round(statistics.median(lat), 1),
                        "max_ms": round(max(lat), 1), "seen": res["seen"],
                        "written": res["written"], "draw_ms_median": res["draw_ms_median"],
                        "render_ms_median": res["render_ms_median"]}}


def _replay(kind: str, quick: bool, work: Path) -> dict[str, Any]:
    from gen_state import write_trainer_state  # type: ignore[import-not-found]

    entries = 10_000 if quick else 100_000
    path = work / f"state-{kind}-{entries}" / "trainer_state.json"
    if not path.exists():
        log(f"writing a {entries}-entry {kind} trainer_state.json")
        write_trainer_state(path, kind, entries)
    # The first probe warms the file cache and the modules' pages, as ui_first_frame's first run
    # does: this machine's kernel pages out pages left untouched for about a minute (DAMON's
    # proactive reclaim), so a first probe after a pause reads the libraries' pages from disk again.
    # It is kept as `cold_s`.
    cold = None if quick else _probe(["replay", str(path)], timeout=120)["open_to_drawn_s"]
    runs = [_probe(["replay", str(path)], timeout=120) for _ in range(1 if quick else 3)]
    opens = [r["open_to_drawn_s"] for r in runs]
    best = runs[opens.index(statistics.median(opens))] if len(runs) % 2 else runs[0]
    from peers import orjson_floor  # type: ignore[import-not-found]

    return {f"replay_100k_{kind}_s": statistics.median(opens),
            "_detail": {"runs_s": [round(o, 3) for o in opens],
                        "cold_s": round(cold, 3) if cold is not None else None,
                        "orjson_floor_s": round(orjson_floor(path), 4),
                        "file_mb": round(path.stat().st_size / 2**20, 1),
                        "load_s": round(_loader_alone(path, 1 if quick else 5), 3),
                        "open_to_loaded_s": round(best["open_to_loaded_s"], 3),
                        "loaded_to_drawn_s": round(best["loaded_to_drawn_s"], 3),
                        "panels": best["panels"]}}


LOADER = r"""
import statistics, sys, time
from cockpit.metrics.replay_loader import load_replay
path, repeats = sys.argv[1], int(sys.argv[2])
load_replay(path)
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    load_replay(path)
    times.append(time.perf_counter() - t0)
print(statistics.median(times))
"""


def _loader_alone(path: Path, repeats: int) -> float:
    """The loader by itself, as the replay screen calls it (`load_replay`: the forked child's
    parse, its pickle back, the unpickling), in a process of its own after one warm-up call;
    the median. The in-app figure overlaps it with composing the screen."""
    out = subprocess.run([sys.executable, "-c", LOADER, str(path), str(repeats)], env=_ui_env(),
                         capture_output=True, text=True, check=True, timeout=300)
    return float(out.stdout.strip().splitlines()[-1])


def measure_replay_sft(quick: bool, work: Path) -> dict[str, Any]:
    return _replay("sft", quick, work)


def measure_replay_grpo(quick: bool, work: Path) -> dict[str, Any]:
    return _replay("grpo", quick, work)


_frame_cache: dict[bool, dict[str, Any]] = {}


def _frame(quick: bool) -> dict[str, Any]:
    if quick not in _frame_cache:
        points = 100_000 if quick else 1_000_000
        _frame_cache[quick] = _probe(["frame", "--points", str(points),
                                      "--repeats", "3" if quick else "9"], timeout=180)
    return _frame_cache[quick]


def measure_frame(quick: bool, work: Path) -> dict[str, Any]:  # noqa: ARG001 - every measure takes (quick, work)
    """Four panels of 1M points: one full refresh (draw: read, downsample, ticks; then each
    panel's rows built, as its render does), median of 9."""
    res = _frame(quick)
    return {"frame_4x1M_ms": res["frame_ms"],
            "_detail": {"all_ms": [round(x, 1) for x in res["frame_ms_all"]],
                        "draw_part_ms": round(res["draw_ms"], 1),
                        "panels": res["panels"], "plot_sizes": res["plot_sizes"],
                        "points_drawn": res["points_drawn"]}}


def measure_rss(quick: bool, work: Path) -> dict[str, Any]:  # noqa: ARG001 - every measure takes (quick, work)
    """RSS of that same UI process (the app, four 1M-point series, drawn)."""
    res = _frame(quick)
    return {"ui_rss_mb_4x1M": res["rss_mb"], "_detail": {"points_per_series": res["points_per_series"]}}


# -- training figures ------------------------------------------------------------------------


class Training:
    """The same tiny SFT config, run plainly (A) and through cockpit (B)."""

    OVERRIDES = ["eval_strategy=no", "save_strategy=no", "cockpit.completions.every_steps=0"]

    def __init__(self, work: Path, gpu: bool = False) -> None:
        self.work = work
        self.gpu = gpu
        """On the GPU both sides train there in bf16 (the runner takes a GPU by itself when there
        is one; the plain script is told to)."""
        self.runs = work / ("train-runs-gpu" if gpu else "train-runs")
        self.cpu: list[tuple[float, float]] = []
        """The CPU time samples of the last `plain` or `runner` run (`_run_cpu_sampled`)."""
        self.overrides = [*self.OVERRIDES, *(["bf16=true"] if gpu else [])]
        self._ready = False

    def ready(self) -> None:
        if self._ready:
            return
        log("building the demo assets (first time only)")
        subprocess.run([sys.executable, "-c", "from cockpit.runner.assets import ensure_all; "
                        "ensure_all()"], env=_env(), check=True, stdout=subprocess.DEVNULL)
        from cockpit.demo import demo_dir

        self.demo = demo_dir()
        self._ready = True

    def preset(self, steps: int):  # type: ignore[no-untyped-def]
        from cockpit.config.presets import apply_overrides, load_preset

        return apply_overrides(load_preset(REPO / "presets" / "demo-sft.yaml"),
                               [f"max_steps={steps}", *self.overrides])

    def plain(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: on_log time}) of the plain TRL script."""
        self.ready()
        from cockpit.config.validate import validate

        plan = validate(self.preset(steps))
        trl = dict(plan.preset.trl)
        d = Path(tempfile.mkdtemp(prefix="plain-", dir=self.work))
        trl.update(output_dir=str(d / "out"), use_cpu=not self.gpu, bf16=self.gpu,
                   report_to="none")
        spec = {"model": trl.pop("model_name_or_path"), "data": trl.pop("dataset_name"),
                "config": trl}
        (d / "spec.json").write_text(json.dumps(spec))
        with open(d / "stdout.log", "wb") as out:
            t0 = time.time()
            self.cpu = _run_cpu_sampled([sys.executable, str(BENCH / "plain_sft.py"), str(d / "spec.json"),
                                         str(d / "stamps.json")], env=_env(), stdout=out, stderr=subprocess.STDOUT)
        stamps = json.loads((d / "stamps.json").read_text())["stamps"]
        shutil.rmtree(d, ignore_errors=True)
        return t0, {int(k): v for k, v in stamps.items()}

    def runner(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: journal t}) of `python -m cockpit.runner RUN_DIR`."""
        self.ready()
        from cockpit.config.validate import validate
        from cockpit.launch.plan import prepare

        run = prepare(validate(self.preset(steps)), self.runs, "bench-runner")
        with open(run.stdout_log, "wb") as out:
            t0 = time.time()
            self.cpu = _run_cpu_sampled([sys.executable, "-m", "cockpit.runner", str(run.path)], env=_env(),
                                        stdout=out, stderr=subprocess.STDOUT, cwd=str(run.path))
        stamps = _journal_steps(run.events)
        shutil.rmtree(run.path, ignore_errors=True)
        return t0, stamps

    def cli(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: journal t}) of `cockpit run` (detached), waiting for the end."""
        self.ready()
        from cockpit.run.folder import RunFolder

        cmd = [*_cockpit_cmd(), "run", str(REPO / "presets" / "demo-sft.yaml"),
               "--runs-dir", str(self.runs), "--name", "bench-cli",
               "--set", f"max_steps={steps}", *[a for o in self.overrides for a in ("--set", o)]]
        t0 = time.time()
        proc = subprocess.run(cmd, env=_env(), capture_output=True, check=True, timeout=120)
        run = RunFolder(Path(proc.stdout.decode().strip().splitlines()[-1]))
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            st = run.read_status()
            if not st.live:
                break
            time.sleep(0.2)
        if run.read_status().state != "finished":
            raise RuntimeError(f"cockpit run ended {run.read_status().state}: see {run.path}")
        stamps = _journal_steps(run.events)
        shutil.rmtree(run.path, ignore_errors=True)
        return t0, stamps


def _run_cpu_sampled(cmd: list[str], timeout: float = 900, **popen: Any) -> list[tuple[float, float]]:
    """Run `cmd` to its end (an error if it fails), sampling its CPU time (user + system, every
    thread; /proc/PID/stat) every 20 ms: [(time.time(), CPU seconds)]. Empty where /proc is not."""
    clk = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    samples: list[tuple[float, float]] = []
    proc = subprocess.Popen(cmd, **popen)
    deadline = time.monotonic() + timeout
    stat = Path(f"/proc/{proc.pid}/stat")
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{cmd[:3]} ran past {timeout} s")
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            samples.append((time.time(), (int(fields[11]) + int(fields[12])) / clk))
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.02)
    if proc.returncode:
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}")
    return samples


def _cpu_per_step(samples: list[tuple[float, float]], stamps: dict[int, float], warmup: int) -> float | None:
    """CPU seconds a step, from the process's CPU time at the first step after `warmup` to the last
    one (each read from the samples around that step's time). CPU time counts what the process
    did, not what the other tenants of the cores did meanwhile: on a shared machine it tells a
    per-step cost apart where wall time cannot."""
    steps = sorted(s for s in stamps if s >= warmup)
    if len(steps) < 2 or len(samples) < 2:
        return None
    ts = [t for t, _ in samples]

    def at(t: float) -> float:
        import bisect

        i = min(max(bisect.bisect_left(ts, t), 1), len(ts) - 1)
        (t0, c0), (t1, c1) = samples[i - 1], samples[i]
        return c0 if t1 <= t0 else c0 + (c1 - c0) * min(max((t - t0) / (t1 - t0), 0.0), 1.0)

    first, last = steps[0], steps[-1]
    if stamps[last] > ts[-1] or stamps[first] < ts[0]:
        return None
    return (at(stamps[last]) - at(stamps[first])) / (last - first)


def _journal_steps(path: Path) -> dict[int, float]:
    from cockpit.run import journal

    records, _ = journal.read_all(path)
    return {r.step: r.t for r in records
            if r.kind == journal.METRICS and r.step is not None and not r.data.get("summary")}


def _rate(stamps: dict[int, float], warmup: int) -> float:
    """Steps per second from the median time between consecutive steps after `warmup`.

    The median, not (last - first) / n: on a shared machine another process's burst
    stalls a few steps by tens of ms, which moves a mean by more than the 1% this figure
    is about, while a per-step cost of the cockpit moves every interval (and so the median)."""
    steps = sorted(s for s in stamps if s >= warmup)
    gaps = [(stamps[b] - stamps[a]) / (b - a) for a, b in itertools.pairwise(steps)]
    return 1.0 / statistics.median(gaps)


def _gaps(stamps: dict[int, float], warmup: int) -> dict[str, Any]:
    """The time between logged steps after the warm-up: median, p99 and the longest, in ms, and the
    steps that ended the three longest (where a run's mean rate falls behind its median one)."""
    steps = sorted(s for s in stamps if s >= warmup)
    gaps = sorted(((stamps[b] - stamps[a]) / (b - a), b) for a, b in itertools.pairwise(steps))
    if not gaps:
        return {}
    ms = [g * 1000 for g, _ in gaps]
    return {"median_ms": round(statistics.median(ms), 1), "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 1),
            "max_ms": round(ms[-1], 1), "longest_at_steps": [b for _, b in gaps[-3:]]}


def _mean_rate(stamps: dict[int, float], warmup: int) -> float:
    steps = sorted(s for s in stamps if s >= warmup)
    return (steps[-1] - steps[0]) / (stamps[steps[-1]] - stamps[steps[0]])


_training: dict[str, Training] = {}


def _train(work: Path, gpu: bool = False) -> Training:
    key = f"{work}:{gpu}"
    if key not in _training:
        _training[key] = Training(work, gpu)
    return _training[key]


def measure_throughput(quick: bool, work: Path, gpu: bool = False) -> dict[str, Any]:
    """Plain script (A) and cockpit's runner (B), interleaved A/B/A/B; steps/s from per-step
    on_log times after the warm-up steps; the median of the per-pair ratios B/A."""
    tr = _train(work, gpu)
    # On a GPU a step of the tiny model takes milliseconds: 300 steps a run, three pairs, fit a lent
    # machine's few minutes.
    steps, pairs, warmup = (40, 1, 5) if quick else (300, 3, 20) if gpu else (600, 5, 20)
    pairs = int(os.environ.get("COCKPIT_BENCH_PAIRS") or pairs)
    log("warm-up: one short run of each")
    tr.plain(3)
    tr.runner(3)
    ratios, rates_a, rates_b, mean_ratios = [], [], [], []
    cpu_a: list[float] = []
    cpu_b: list[float] = []
    gaps_a: list[dict[str, Any]] = []
    gaps_b: list[dict[str, Any]] = []
    for i in range(pairs):
        log(f"throughput pair {i + 1}/{pairs}: plain TRL")
        _, a = tr.plain(steps)
        ca = _cpu_per_step(tr.cpu, a, warmup)
        log(f"throughput pair {i + 1}/{pairs}: cockpit runner")
        _, b = tr.runner(steps)
        cb = _cpu_per_step(tr.cpu, b, warmup)
        if ca and cb:
            cpu_a.append(ca)
            cpu_b.append(cb)
        ra, rb = _rate(a, warmup), _rate(b, warmup)
        rates_a.append(ra)
        rates_b.append(rb)
        ratios.append(rb / ra)
        mean_ratios.append(_mean_rate(b, warmup) / _mean_rate(a, warmup))
        gaps_a.append(_gaps(a, warmup))
        gaps_b.append(_gaps(b, warmup))
        log(f"  plain {ra:.2f} steps/s, cockpit {rb:.2f} steps/s, ratio {rb / ra:.3f}")
    cpu_ratios = [a / b for a, b in zip(cpu_a, cpu_b, strict=True)]
    return {"throughput_ratio": statistics.median(ratios),
            "_detail": {"ratios": [round(r, 3) for r in ratios],
                        # CPU time a step, plain ÷ cockpit (≥ 0.99 is the goal's 1 %): what each
                        # process spent, whatever the other tenants of the cores ran meanwhile.
                        "cpu_ratio": round(statistics.median(cpu_ratios), 4) if cpu_ratios else None,
                        "cpu_ratios": [round(r, 4) for r in cpu_ratios],
                        "plain_cpu_ms_per_step": [round(c * 1000, 2) for c in cpu_a],
                        "cockpit_cpu_ms_per_step": [round(c * 1000, 2) for c in cpu_b],
                        "ratios_of_mean_rates": [round(r, 3) for r in mean_ratios],
                        "plain_steps_per_s": [round(r, 2) for r in rates_a],
                        "cockpit_steps_per_s": [round(r, 2) for r in rates_b],
                        "steps": steps, "warmup_steps": warmup,
                        "plain_gaps": gaps_a, "cockpit_gaps": gaps_b}}


def measure_callback_step(quick: bool, work: Path) -> dict[str, Any]:  # noqa: ARG001 - every measure takes (quick, work)
    """The cockpit callback alone, in a process of its own (`bench/callback_cost.py`): on_step_end
    and on_log with SFT's keys, a step at a time into a real journal; CPU time a step, the median
    of five batches (wall time, which the other tenants of the cores move, in the detail)."""
    with tempfile.TemporaryDirectory(prefix="cockpit-bench-") as d:
        out = Path(d) / "cb.json"
        subprocess.run([sys.executable, str(BENCH / "callback_cost.py"), str(out), "300" if quick else "2000"],
                       env=_env(), check=True, timeout=900, stdout=subprocess.DEVNULL)
        r = json.loads(out.read_text())
    return {"callback_step_cpu_us": r["cpu_us"],
            "_detail": {"wall_us": round(r["wall_us"], 1), "wall_us_batches": r["wall_us_all"], "steps": r["steps"],
                        "journal_lines": r["journal_lines"]}}


def measure_first_step(quick: bool, work: Path, gpu: bool = False) -> dict[str, Any]:
    """`cockpit run` (detached) to the journal's step-1 line, minus plain-script start to its
    first step; interleaved, the median of the per-pair differences."""
    tr = _train(work, gpu)
    pairs = 1 if quick else 2 if gpu else 3
    if "throughput_ratio" not in _done:
        log("warm-up: one short run of each")
        tr.plain(2)
        tr.cli(2)
    diffs, plain, cockpit = [], [], []
    for i in range(pairs):
        log(f"first-step pair {i + 1}/{pairs}")
        ta, a = tr.plain(3)
        tb, b = tr.cli(3)
        fa, fb = a[min(a)] - ta, b[min(b)] - tb
        plain.append(fa)
        cockpit.append(fb)
        diffs.append(fb - fa)
        log(f"  plain {fa:.2f} s, cockpit run {fb:.2f} s")
    return {"first_step_overhead_s": statistics.median(diffs),
            "_detail": {"plain_s": [round(x, 2) for x in plain],
                        "cockpit_s": [round(x, 2) for x in cockpit]}}


# -- the peers (issue 15) ----------------------------------------------------------------------

_peers: dict[str, Any] = {}


def _the_peers(quick: bool, work: Path):  # type: ignore[no-untyped-def]
    from peers import Peers, Skipped  # type: ignore[import-not-found]

    key = f"{work}:{quick}"
    if key not in _peers:
        try:
            _peers[key] = Peers(work, quick, log)
        except Skipped as exc:
            _peers[key] = exc
    if isinstance(_peers[key], Exception):
        raise _peers[key]
    return _peers[key]


def _replay_figure(quick: bool, work: Path) -> tuple[float, dict[str, Any]]:
    """The cockpit's replay of the same trainer_state.json (the replay_100k_sft_s figure, from
    this run when it was measured, else measured now)."""
    if "replay_100k_sft_s" not in _results:
        out = measure_replay_sft(quick, work)
        _results["replay_100k_sft_s"] = out["replay_100k_sft_s"]
        _details["replay_100k_sft_s"] = out["_detail"]
    return _results["replay_100k_sft_s"], _details["replay_100k_sft_s"]


def measure_replay_vs_leet(quick: bool, work: Path) -> dict[str, Any]:
    """Both in a real terminal (tmux), from starting the program to its final screen."""
    p = _the_peers(quick, work)
    leet, cockpit = p.replay("leet"), p.replay("cockpit")
    in_app, _ = _replay_figure(quick, work)
    return {"replay_vs_leet_x": leet["complete_s"] / cockpit["complete_s"],
            "_anchor": f"LEET {leet['complete_s']:.2f} s, cockpit {cockpit['complete_s']:.2f} s (tmux, from start)",
            "_detail": {"leet_s": leet["runs_s"], "cockpit_s": cockpit["runs_s"], "steps": p.entries,
                        "leet_vs_in_app_replay_x": round(leet["complete_s"] / in_app, 1),
                        "wandb_file_mb": round(p.wandb_run()["bytes"] / 2**20, 1), **p.versions}}


def measure_replay_vs_tensorboard(quick: bool, work: Path) -> dict[str, Any]:
    p = _the_peers(quick, work)
    tb = p.tensorboard()
    replay, _ = _replay_figure(quick, work)
    return {"replay_vs_tensorboard_x": tb["ingest_s"] / replay,
            "_anchor": f"EventAccumulator {tb['ingest_s']:.2f} s, cockpit replay {replay:.3f} s",
            "_detail": tb}


def measure_replay_vs_floor(quick: bool, work: Path) -> dict[str, Any]:
    from peers import orjson_floor  # type: ignore[import-not-found]

    replay, detail = _replay_figure(quick, work)
    entries = 10_000 if quick else 100_000
    floor = orjson_floor(work / f"state-sft-{entries}" / "trainer_state.json")
    return {"replay_vs_orjson_floor_x": replay / floor,
            "_anchor": f"replay {replay:.3f} s, orjson alone {floor:.3f} s, the loader {detail['load_s']:.3f} s",
            "_detail": {"orjson_s": round(floor, 4), "loader_vs_orjson_x": round(detail["load_s"] / floor, 2)}}


def measure_latency_vs_leet(quick: bool, work: Path) -> dict[str, Any]:
    """One writer appends each step to a cockpit journal and an offline W&B run at 20 steps/s;
    `cockpit attach` and LEET follow them side by side, each in its own tmux terminal."""
    p = _the_peers(quick, work)
    live = p.live()
    c, w = live["cockpit"], live["leet"]
    if not c["p95_ms"] or not w["p95_ms"]:
        raise RuntimeError(f"a viewer showed no step: {live}")
    return {"latency_vs_leet_x": w["p95_ms"] / c["p95_ms"],
            "_anchor": f"LEET p95 {w['p95_ms']:.0f} ms, cockpit p95 {c['p95_ms']:.0f} ms (tmux)",
            "_detail": {"cockpit": {k: round(v, 1) if isinstance(v, float) else v for k, v in c.items()},
                        "leet": {k: round(v, 1) if isinstance(v, float) else v for k, v in w.items()},
                        "written": live["written"]}}


def measure_rss_vs_leet(quick: bool, work: Path) -> dict[str, Any]:
    p = _the_peers(quick, work)
    leet, cockpit = p.replay("leet"), p.replay("cockpit")
    return {"rss_vs_leet_x": cockpit["rss_mb"] / leet["rss_mb"],
            "_anchor": f"cockpit {cockpit['rss_mb']:.0f} MB, LEET {leet['rss_mb']:.0f} MB",
            "_detail": {"cockpit": cockpit["rss_by_process"], "leet": leet["rss_by_process"]}}


# -- at scale (issue 15) -----------------------------------------------------------------------


def _runs_1000(quick: bool, work: Path, scale: int = 1) -> tuple[Path, int]:
    from scale import make_runs_folder, mark_live  # type: ignore[import-not-found]

    n = (100 if quick else 1000) * scale
    runs = work / f"runs-{n}"
    if not (runs / ".complete").exists():
        log(f"writing a runs folder of {n} runs")
    make_runs_folder(runs, n)
    mark_live(runs, os.getpid())
    return runs, n


def measure_home_1000(quick: bool, work: Path, scale: int = 1) -> dict[str, Any]:
    """`cockpit` (home) on a runs folder of 1,000 runs: process start to the first frame that
    shows the list (every run read, sorted and counted; the table's first screen of rows in it);
    median of 5 after a warm-up (which also writes the runs folder's index, `.cockpit-index`:
    the cold read is in the detail). The detail also gives the first frame with every row in
    the table (the rows below the first screen go in a chunk at a time after it)."""
    runs, n = _runs_1000(quick, work, scale)
    (runs / ".cockpit-index").unlink(missing_ok=True)
    times: list[float] = []
    cpus: list[float] = []
    for i in range(4 if quick else 6):
        mark = work / "home.t"
        mark.unlink(missing_ok=True)
        env = _ui_env(COCKPIT_BENCH_FIRST_FRAME=str(mark), COCKPIT_BENCH_FIRST_FRAME_ROWS=str(n))
        t0 = time.time()
        proc = subprocess.run([*_cockpit_cmd(), "--runs-dir", str(runs)], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60 * scale)
        if not mark.exists():
            raise RuntimeError(f"home never listed {n} runs (exit {proc.returncode}): "
                               f"{proc.stderr.decode(errors='replace')[-1500:]}")
        if i:
            times.append(float(mark.read_text()) - t0)
            cpus.append(float(Path(f"{mark}.cpu").read_text()))
        else:
            cold = float(mark.read_text()) - t0
    # The table takes the rows below its first screen a chunk at a time after the first frame:
    # once more, to the first frame with all of them in it.
    mark, every = work / "home.t", work / "home-all.t"
    every.unlink(missing_ok=True)
    t0 = time.time()
    subprocess.run([*_cockpit_cmd(), "--runs-dir", str(runs)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120 * scale,
                   env=_ui_env(COCKPIT_BENCH_FIRST_FRAME=str(mark), COCKPIT_BENCH_FIRST_FRAME_ROWS=str(n),
                               COCKPIT_BENCH_ALL_ROWS=str(every)))
    all_rows = round(float(every.read_text()) - t0, 3) if every.exists() else None
    key = "home_1000_runs_s" if scale == 1 else "home_10k_runs_s"
    return {key: statistics.median(times),
            "_detail": {"runs": n, "runs_s": [round(t, 3) for t in times], "cold_no_index_s": round(cold, 3),
                        # the UI process's own CPU seconds to that frame (interpreter start on):
                        # what the other tenants of the cores do not move
                        "cpu_s": round(statistics.median(cpus), 3), "every_row_in_the_table_s": all_rows}}


def measure_home_10k(quick: bool, work: Path) -> dict[str, Any]:
    """The same on 10,000 runs (the same generator, ten times the runs)."""
    return measure_home_1000(quick, work, scale=10)


def measure_runs_cli_1000(quick: bool, work: Path, scale: int = 1) -> dict[str, Any]:
    """`cockpit runs` on the same folder, wall time of the whole command; median of 5 after a
    first (cold, index-writing) one, which is in the detail."""
    runs, n = _runs_1000(quick, work, scale)
    (runs / ".cockpit-index").unlink(missing_ok=True)
    times: list[float] = []
    cpus: list[float] = []
    for i in range(4 if quick else 6):
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([*_cockpit_cmd(), "runs", "--runs-dir", str(runs)], env=_env(),
                              capture_output=True, timeout=60 * scale)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if proc.returncode != 0 or proc.stdout.count(b"\n") < n + 1:
            raise RuntimeError(f"cockpit runs failed: {proc.stderr.decode(errors='replace')[-1500:]}")
        if i:
            times.append(time.perf_counter() - t0)
            cpus.append(cpu)
        else:
            cold = time.perf_counter() - t0
    key = "runs_cli_1000_s" if scale == 1 else "runs_cli_10k_s"
    return {key: statistics.median(times),
            "_detail": {"runs": n, "runs_s": [round(t, 3) for t in times], "cold_no_index_s": round(cold, 3),
                        "cpu_s": round(statistics.median(cpus), 3)}}


def measure_runs_cli_10k(quick: bool, work: Path) -> dict[str, Any]:
    """The same on 10,000 runs."""
    return measure_runs_cli_1000(quick, work, scale=10)


_follow_cache: dict[str, dict[str, Any]] = {}


def _follow(quick: bool, work: Path) -> dict[str, Any]:
    from scale import follow_run, make_follow_feed  # type: ignore[import-not-found]

    key = f"{work}:{quick}"
    if key not in _follow_cache:
        hours = 2 if quick else 72
        steps = hours * 3600
        feed = make_follow_feed(work / f"follow-{hours}h" / "feed.jsonl", steps)
        run, rest = follow_run(work / f"follow-{hours}h" / "runs" / "follow", feed, steps)
        res = _probe(["follow", str(run.path), "--feed", str(rest), "--rate", "2000",
                      "--last-step", str(steps)], timeout=1200)
        res["hours"] = hours
        # The fastest of 9 refreshes: the cost itself, whatever else the shared cores ran at
        # the start and at the end (the medians are in the detail).
        for when in ("start", "end"):
            res[f"frame_ms_{when}"] = min(res[f"frame_ms_{when}_all"])
            res[f"frame_ms_{when}_median"] = statistics.median(res[f"frame_ms_{when}_all"])
        _follow_cache[key] = res
    return _follow_cache[key]


def _follow_detail(r: dict[str, Any]) -> dict[str, Any]:
    keep = ("hours", "step_start", "step_end", "follow_s", "rss_mb_start", "rss_mb_end", "frame_ms_start",
            "frame_ms_end", "store_mb", "series")
    d = {k: round(r[k], 1) if isinstance(r[k], float) else r[k] for k in keep}
    d["rss_samples"] = r["samples"][:: max(1, len(r["samples"]) // 8)]
    return d


def measure_follow_rss(quick: bool, work: Path) -> dict[str, Any]:
    """The live view opens a run at its start; the rest of a generated 72 h journal (1 step/s)
    is appended at 2,000 steps/s while it follows; RSS after minus RSS before."""
    r = _follow(quick, work)
    return {"follow_72h_rss_growth_mb": r["rss_mb_end"] - r["rss_mb_start"], "_detail": _follow_detail(r)}


def measure_follow_frame(quick: bool, work: Path) -> dict[str, Any]:
    r = _follow(quick, work)
    return {"follow_72h_frame_ms_growth": r["frame_ms_end"] - r["frame_ms_start"],
            "_detail": {**{k: round(r[k], 1) for k in ("frame_ms_start", "frame_ms_end", "frame_ms_start_median",
                                                        "frame_ms_end_median")},
                        "at_the_end_first_hour_vs_all_ms": {k: round(v, 1)
                                                            for k, v in r["frame_ms_back_to_back"].items()}}}


# -- a 10,000-step GRPO run (issue 12) -----------------------------------------------------------


def _grpo(quick: bool, work: Path, scale: int = 1):  # type: ignore[no-untyped-def]
    from scale import make_grpo_run  # type: ignore[import-not-found]

    steps = (1000 if quick else 10_000) * scale
    path = work / f"grpo-{steps}" / "run"
    if not (path / ".complete").exists():
        log(f"writing a {steps}-step GRPO run with 16 completions a step")
    return make_grpo_run(path, steps), steps


_attach_cache: dict[str, dict[str, Any]] = {}


def _attach(quick: bool, work: Path, scale: int = 1) -> dict[str, Any]:
    key = f"{work}:{quick}:{scale}"
    if key not in _attach_cache:
        run, steps = _grpo(quick, work, scale)
        runs = []
        for i in range(2 if quick else 4):
            t0 = time.time()
            res = _probe(["attach", str(run.path)], timeout=180 * scale)
            res["spawn_to_drawn_s"] = res["drawn_wall"] - t0
            if i or quick:  # the first start warms the file cache and the .pyc files
                runs.append(res)
        runs.sort(key=lambda r: r["open_to_drawn_s"])
        mid = runs[len(runs) // 2]
        mid["all_s"] = [round(r["spawn_to_drawn_s"], 3) for r in runs]
        mid["steps"] = steps
        _attach_cache[key] = mid
    return _attach_cache[key]


def measure_attach_grpo(quick: bool, work: Path) -> dict[str, Any]:
    """`cockpit attach` on the live 10,000-step GRPO run: from the app's `open_live` (the user's
    "open", as for the replay figures) to the first frame with every default panel drawn; the
    median of 3 fresh processes after a warm-up. From process start is in the detail."""
    r = _attach(quick, work)
    return {"attach_10k_grpo_s": r["open_to_drawn_s"],
            "_detail": {"spawn_to_drawn_s": r["all_s"], "open_to_whole_s": r["open_to_whole_s"],
                        "cpu_to_drawn_s": r["cpu_to_drawn_s"], "cpu_to_whole_s": r["cpu_to_whole_s"],
                        "panels": r["panels"], "steps": r["steps"]}}


def measure_attach_grpo_rss(quick: bool, work: Path) -> dict[str, Any]:
    r = _attach(quick, work)
    return {"attach_10k_grpo_rss_mb": r["rss_mb"],
            "_detail": {"completion_steps_kept": r["kept_steps"], "library_steps": r["library_steps"]}}


def measure_attach_grpo_100k(quick: bool, work: Path) -> dict[str, Any]:
    """The same on a 100,000-step GRPO run (the same generator, ten times the steps): its first
    frame is the journal's first look (its start and newest steps, `RunFollower.first_look`),
    drawn while the whole is read; the frame drawn from the whole journal is `open_to_whole_s`."""
    r = _attach(quick, work, 10)
    return {"attach_100k_grpo_s": r["open_to_drawn_s"],
            "_detail": {"spawn_to_drawn_s": r["all_s"], "open_to_whole_s": r["open_to_whole_s"],
                        "cpu_to_drawn_s": r["cpu_to_drawn_s"], "cpu_to_whole_s": r["cpu_to_whole_s"],
                        "panels": r["panels"], "steps": r["steps"]}}


def measure_attach_grpo_100k_rss(quick: bool, work: Path) -> dict[str, Any]:
    r = _attach(quick, work, 10)
    return {"attach_100k_grpo_rss_mb": r["rss_mb"],
            "_detail": {"completion_steps_kept": r["kept_steps"], "library_steps": r["library_steps"]}}


def measure_completions_step(quick: bool, work: Path) -> dict[str, Any]:
    """A fresh CompletionsLibrary on the run (its index read once), then the rows of 200 random
    steps, each a cache miss; p95. The UI cannot open an arbitrary step (its pane scrubs the
    steps it keeps); stepping it back one kept step to the frame drawn is in the detail."""
    import random as _random

    from cockpit.metrics.completions import CompletionsLibrary

    run, steps = _grpo(quick, work)
    t0 = time.perf_counter()
    lib = CompletionsLibrary(run.path)
    lib.refresh()
    open_ms = (time.perf_counter() - t0) * 1000
    rnd = _random.Random(1)
    times, rows = [], 0
    for _ in range(200):
        step = rnd.randint(1, steps)
        t = time.perf_counter()
        got = lib.rows(step)
        times.append((time.perf_counter() - t) * 1000)
        rows += len(got)
    if rows != 200 * 16:
        raise RuntimeError(f"read {rows} rows, not {200 * 16}")
    ui = _attach(quick, work)["scrub_ms"]
    return {"completions_step_p95_ms": _p(times, 95),
            "_detail": {"median_ms": round(statistics.median(times), 2), "index_open_ms": round(open_ms, 1),
                        "store_mb": round((run.path / "completions.jsonl").stat().st_size / 2**20),
                        "ui_scrub_p95_ms": round(_p(ui, 95), 1) if ui else None, "ui_scrubs": len(ui)}}


def measure_journal_grpo(quick: bool, work: Path) -> dict[str, Any]:
    run, steps = _grpo(quick, work)
    mb = run.events.stat().st_size / 2**20
    return {"journal_10k_grpo_mb": mb * (10_000 / steps),
            "_detail": {"steps": steps, "bytes_per_step": round(run.events.stat().st_size / steps),
                        "completions_store_mb": round((run.path / "completions.jsonl").stat().st_size / 2**20)}}


MCP_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("runs", {}),
    ("summary", {"run": "mcp"}),
    ("metrics", {"run": "mcp"}),
    ("metrics", {"run": "mcp", "keys": ["loss", "grad_norm"], "points": 200}),
    ("metrics", {"run": "mcp", "keys": ["loss"], "first": 40_000, "last": 60_000, "points": 500}),
    ("findings", {"run": "mcp"}),
    ("completions", {"run": "mcp"}),
    ("checkpoints", {"run": "mcp"}),
)
"""What an agent asks of a run, one round: every read-only tool, a series two ways."""


def measure_mcp_answer(quick: bool, work: Path) -> dict[str, Any]:
    """`cockpit mcp` started by the SDK's own stdio client, as an agent's host starts it, on a
    100,000-step SFT run: the first answer (the journal parsed) is kept as `cold_ms`; then rounds
    in which the run's journal grows by 10 steps and every read-only tool is called (MCP_CALLS);
    the p95 of those answers, each timed at the client, JSON-RPC and all."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from cockpit.run import journal

    steps = 10_000 if quick else 100_000
    runs = work / f"mcp-runs-{steps}"
    made = next(runs.glob("mcp-*"), None) if runs.is_dir() else None
    if made is None:
        log(f"writing a {steps}-step run")
        made = _make_run(runs, "mcp", steps, state="finished").path
    events = made / "events.jsonl"
    rounds = 3 if quick else 10
    times: dict[str, list[float]] = {}
    sizes: list[int] = []
    cold: list[float] = []
    cmd = _cockpit_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--runs-dir", str(runs)],
                                   env={k: v for k, v in _env().items() if k in ("PYTHONPATH", "PATH", "HOME")})

    async def drive() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            t0 = time.perf_counter()
            await session.call_tool("summary", {"run": "mcp"})
            cold.append((time.perf_counter() - t0) * 1000)
            step = steps
            for _ in range(rounds):
                with journal.JournalWriter(events) as jw:
                    for _ in range(10):
                        step += 1
                        jw.write(journal.metrics(step, {"loss": 0.1, "learning_rate": 1e-4, "grad_norm": 1.0}))
                for name, args in MCP_CALLS:
                    t = time.perf_counter()
                    res = await session.call_tool(name, args)
                    times.setdefault(f"{name}{'+keys' if args.get('keys') else ''}", []).append(
                        (time.perf_counter() - t) * 1000)
                    if res.is_error:
                        raise RuntimeError(f"{name}: {res.content[0].text}")
                    sizes.append(len(res.content[0].text.encode()))

    anyio.run(drive)
    every = [v for vs in times.values() for v in vs]
    return {"mcp_answer_100k_ms": _p(every, 95),
            "_detail": {"steps": steps, "rounds": rounds, "cold_first_answer_ms": round(cold[0], 1),
                        "median_ms": {k: round(statistics.median(v), 1) for k, v in times.items()},
                        "max_ms": round(max(every), 1), "largest_answer_bytes": max(sizes)}}


MEASURES: dict[str, Callable[[bool, Path], dict[str, Any]]] = {
    "ui_first_frame_s": measure_ui_first_frame,
    "latency_p95_ms": measure_latency,
    "replay_100k_sft_s": measure_replay_sft,
    "replay_100k_grpo_s": measure_replay_grpo,
    "frame_4x1M_ms": measure_frame,
    "ui_rss_mb_4x1M": measure_rss,
    "throughput_ratio": measure_throughput,
    "first_step_overhead_s": measure_first_step,
    "callback_step_cpu_us": measure_callback_step,
    "home_1000_runs_s": measure_home_1000,
    "runs_cli_1000_s": measure_runs_cli_1000,
    "home_10k_runs_s": measure_home_10k,
    "runs_cli_10k_s": measure_runs_cli_10k,
    "follow_72h_rss_growth_mb": measure_follow_rss,
    "follow_72h_frame_ms_growth": measure_follow_frame,
    "attach_10k_grpo_s": measure_attach_grpo,
    "attach_10k_grpo_rss_mb": measure_attach_grpo_rss,
    "attach_100k_grpo_s": measure_attach_grpo_100k,
    "attach_100k_grpo_rss_mb": measure_attach_grpo_100k_rss,
    "completions_step_p95_ms": measure_completions_step,
    "journal_10k_grpo_mb": measure_journal_grpo,
    "mcp_answer_100k_ms": measure_mcp_answer,
    "replay_vs_leet_x": measure_replay_vs_leet,
    "replay_vs_tensorboard_x": measure_replay_vs_tensorboard,
    "replay_vs_orjson_floor_x": measure_replay_vs_floor,
    "latency_vs_leet_x": measure_latency_vs_leet,
    "rss_vs_leet_x": measure_rss_vs_leet,
}
_done: set[str] = set()
_results: dict[str, float] = {}
_details: dict[str, Any] = {}


# -- output -----------------------------------------------------------------------------------


def table(results: dict[str, float], details: dict[str, Any], mach: dict[str, Any],
          skipped: dict[str, str] | None = None, anchors: dict[str, str] | None = None) -> str:
    rows = [("figure", "value", "goal", "met", "anchor (other tools, same machine)")]
    for key, value in results.items():
        f = FIGURES[key]
        shown = f"{value:.3f} {f.unit}" if f.unit in ("s", "x") else f"{value:.1f} {f.unit}"
        rows.append((key, shown, f"{f.goal} {f.unit}".replace(" x", ""),
                     "yes" if f.ok(value) else "NO", (anchors or {}).get(key, f.anchor)))
    for key, why in (skipped or {}).items():
        goal = f"{FIGURES[key].goal} {FIGURES[key].unit}".replace(" x", "") if key in FIGURES else "-"
        rows.append((key, "skipped", goal, "-", why))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 36)
    v = mach["versions"]
    lines += ["", f"machine: {mach['cores']} cores, {mach['cpu']}, Python {mach['python']}, "
              f"load at start {mach['load_avg_at_start']}",
              "versions: " + ", ".join(f"{k} {v[k]}" for k in v)]
    for key, d in details.items():
        lines.append(f"{key}: {json.dumps(d)}")
    return "\n".join(lines)


def gpu_check() -> str | None:
    """None when a CUDA GPU can train here, else why not."""
    if shutil.which("nvidia-smi") is None:
        why = "nvidia-smi not found"
    else:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        why = None if proc.returncode == 0 and "GPU" in proc.stdout else "nvidia-smi lists no GPU"
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available(), torch.__version__)"],
                           capture_output=True, text=True, env=_env())
    torch_says = probe.stdout.strip() or probe.stderr.strip()[-200:]
    if why is None and torch_says.startswith("True"):
        return None
    return f"no CUDA GPU on this machine ({why or 'a GPU is listed'}; torch.cuda.is_available() -> {torch_says})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--only", help="comma-separated figures: " + ", ".join(MEASURES))
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke test)")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    ap.add_argument("--prototype", action="store_true",
                    help="UI figures with the proposed UI changes patched in (bench/prototype.py)")
    ap.add_argument("--peers", action="store_true",
                    help="also measure W&B LEET and TensorBoard on the same data (installs them into "
                         "bench/.venv-peers from the `bench` extra)")
    ap.add_argument("--gpu", action="store_true",
                    help="also the training figures on a CUDA GPU (skipped, with the reason, without one)")
    ap.add_argument("--gpu-only", nargs="?", const="throughput_ratio,first_step_overhead_s", default=None,
                    metavar="FIGURES", help="only the training figures on a CUDA GPU (default: both)")
    ap.add_argument("--pairs", type=int, help="plain/cockpit pairs of the throughput figure")
    args = ap.parse_args(argv)
    args.gpu = args.gpu or bool(args.gpu_only)
    gpu_figures = (args.gpu_only or "throughput_ratio,first_step_overhead_s").split(",")
    if args.pairs:
        os.environ["COCKPIT_BENCH_PAIRS"] = str(args.pairs)
    wanted = [k for k in MEASURES if args.peers or k not in PEER_FIGURES]
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in MEASURES]
        if unknown:
            ap.error(f"unknown figure(s): {', '.join(unknown)} — pick from {', '.join(MEASURES)}")
    if args.gpu_only:
        wanted = []
    sys.path.insert(0, str(BENCH))
    if args.prototype:
        os.environ["COCKPIT_BENCH_PROTOTYPE"] = "1"
    mach = machine()
    work = args.work or Path(tempfile.mkdtemp(prefix="cockpit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results, details = _results, _details
    skipped: dict[str, str] = {}
    anchors: dict[str, str] = {}
    from peers import Pane, Skipped  # type: ignore[import-not-found]

    try:
        for key in wanted:
            if key in results:  # measured already, for a ratio
                continue
            log(f"measuring {key}")
            t0 = time.monotonic()
            try:
                out = MEASURES[key](args.quick, work)
            except Skipped as exc:
                skipped[key] = f"skipped: {exc}"
                log(f"  {key} skipped: {exc}")
                continue
            details[key] = out.pop("_detail", {})
            if "_anchor" in out:
                anchors[key] = out.pop("_anchor")
            results[key] = float(out[key])
            _done.add(key)
            log(f"  {key} = {results[key]:.4g} ({time.monotonic() - t0:.0f} s)")
        if args.gpu:
            why = gpu_check()
            if why is None:
                for key, fn in (("throughput_ratio", measure_throughput),
                                ("first_step_overhead_s", measure_first_step)):
                    if key not in gpu_figures:
                        continue
                    out = fn(args.quick, work, gpu=True)  # type: ignore[call-arg]
                    details[f"gpu_{key}"] = {**out.pop("_detail", {}), "value": out[key]}
            else:
                skipped["gpu"] = f"skipped: {why}"
                log(f"--gpu skipped: {why}")
    finally:
        Pane.shutdown()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    try:
        mach["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    if args.peers or any(k in PEER_FIGURES for k in wanted):
        mach["peers"] = next((p.versions for p in _peers.values() if not isinstance(p, Exception)), None)
    if args.json:
        print(json.dumps({**results, **({"skipped": skipped} if skipped else {}), "machine": mach}))
    else:
        print(table(results, details, mach, skipped, anchors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
