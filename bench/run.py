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
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

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
    Figure("latency_p95_ms", "ms", "<= 250",
           "W&B LEET 1.5 s median, 2.4 s p90", lambda v: v <= 250),
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
)}


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
    for pkg in ("textual", "textual-plotext", "plotext", "trl", "transformers", "torch", "numpy",
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

    from cockpit.core import journal
    from cockpit.core.runfolder import Status, create_run_folder

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
    runs = [_probe(["replay", str(path)], timeout=120) for _ in range(1 if quick else 3)]
    opens = [r["open_to_drawn_s"] for r in runs]
    best = runs[opens.index(statistics.median(opens))] if len(runs) % 2 else runs[0]
    return {f"replay_100k_{kind}_s": statistics.median(opens),
            "_detail": {"runs_s": [round(o, 3) for o in opens],
                        "file_mb": round(path.stat().st_size / 2**20, 1),
                        "load_s": round(best["load_s"], 3),
                        "loaded_to_drawn_s": round(best["loaded_to_drawn_s"], 3),
                        "panels": best["panels"]}}


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


def measure_frame(quick: bool, work: Path) -> dict[str, Any]:
    """Four panels of 1M points: one full refresh (draw: copy, downsample, plotext calls;
    then the plotext build each panel's render does), median of 9."""
    res = _frame(quick)
    return {"frame_4x1M_ms": res["frame_ms"],
            "_detail": {"all_ms": [round(x, 1) for x in res["frame_ms_all"]],
                        "draw_part_ms": round(res["draw_ms"], 1),
                        "panels": res["panels"], "plot_sizes": res["plot_sizes"],
                        "points_drawn": res["points_drawn"]}}


def measure_rss(quick: bool, work: Path) -> dict[str, Any]:
    """RSS of that same UI process (the app, four 1M-point series, drawn)."""
    res = _frame(quick)
    return {"ui_rss_mb_4x1M": res["rss_mb"], "_detail": {"points_per_series": res["points_per_series"]}}


# -- training figures ------------------------------------------------------------------------


class Training:
    """The same tiny SFT config, run plainly (A) and through cockpit (B)."""

    OVERRIDES = ["eval_strategy=no", "save_strategy=no", "cockpit.completions.every_steps=0"]

    def __init__(self, work: Path) -> None:
        self.work = work
        self.runs = work / "train-runs"
        self._ready = False

    def ready(self) -> None:
        if self._ready:
            return
        log("building the demo assets (first time only)")
        subprocess.run([sys.executable, "-c", "from cockpit.runner.assets import ensure_all; "
                        "ensure_all()"], env=_env(), check=True, stdout=subprocess.DEVNULL)
        from cockpit.core.demo import demo_dir

        self.demo = demo_dir()
        self._ready = True

    def preset(self, steps: int):  # type: ignore[no-untyped-def]
        from cockpit.core.presets import apply_overrides, load_preset

        return apply_overrides(load_preset(REPO / "presets" / "demo-sft.yaml"),
                               [f"max_steps={steps}", *self.OVERRIDES])

    def plain(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: on_log time}) of the plain TRL script."""
        self.ready()
        from cockpit.core.validate import validate

        plan = validate(self.preset(steps))
        trl = dict(plan.preset.trl)
        d = Path(tempfile.mkdtemp(prefix="plain-", dir=self.work))
        trl.update(output_dir=str(d / "out"), use_cpu=True, bf16=False, report_to="none")
        spec = {"model": trl.pop("model_name_or_path"), "data": trl.pop("dataset_name"),
                "config": trl}
        (d / "spec.json").write_text(json.dumps(spec))
        with open(d / "stdout.log", "wb") as out:
            t0 = time.time()
            subprocess.run([sys.executable, str(BENCH / "plain_sft.py"), str(d / "spec.json"),
                            str(d / "stamps.json")], env=_env(), stdout=out,
                           stderr=subprocess.STDOUT, check=True, timeout=900)
        stamps = json.loads((d / "stamps.json").read_text())["stamps"]
        shutil.rmtree(d, ignore_errors=True)
        return t0, {int(k): v for k, v in stamps.items()}

    def runner(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: journal t}) of `python -m cockpit.runner RUN_DIR`."""
        self.ready()
        from cockpit.core.launch import prepare
        from cockpit.core.validate import validate

        run = prepare(validate(self.preset(steps)), self.runs, "bench-runner")
        with open(run.stdout_log, "wb") as out:
            t0 = time.time()
            subprocess.run([sys.executable, "-m", "cockpit.runner", str(run.path)], env=_env(),
                           stdout=out, stderr=subprocess.STDOUT, check=True, timeout=900,
                           cwd=str(run.path))
        stamps = _journal_steps(run.events)
        shutil.rmtree(run.path, ignore_errors=True)
        return t0, stamps

    def cli(self, steps: int) -> tuple[float, dict[int, float]]:
        """(spawn time, {step: journal t}) of `cockpit run` (detached), waiting for the end."""
        self.ready()
        from cockpit.core.runfolder import RunFolder

        cmd = [*_cockpit_cmd(), "run", str(REPO / "presets" / "demo-sft.yaml"),
               "--runs-dir", str(self.runs), "--name", "bench-cli",
               "--set", f"max_steps={steps}", *[a for o in self.OVERRIDES for a in ("--set", o)]]
        t0 = time.time()
        proc = subprocess.run(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              check=True, timeout=120)
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


def _journal_steps(path: Path) -> dict[int, float]:
    from cockpit.core import journal

    records, _ = journal.read_all(path)
    return {r.step: r.t for r in records
            if r.kind == journal.METRICS and r.step is not None and not r.data.get("summary")}


def _rate(stamps: dict[int, float], warmup: int) -> float:
    """Steps per second from the median time between consecutive steps after `warmup`.

    The median, not (last - first) / n: on a shared machine another process's burst
    stalls a few steps by tens of ms, which moves a mean by more than the 1% this figure
    is about, while a per-step cost of the cockpit moves every interval (and so the median)."""
    steps = sorted(s for s in stamps if s >= warmup)
    gaps = [(stamps[b] - stamps[a]) / (b - a) for a, b in zip(steps, steps[1:])]
    return 1.0 / statistics.median(gaps)


def _mean_rate(stamps: dict[int, float], warmup: int) -> float:
    steps = sorted(s for s in stamps if s >= warmup)
    return (steps[-1] - steps[0]) / (stamps[steps[-1]] - stamps[steps[0]])


_training: dict[str, Training] = {}


def _train(work: Path) -> Training:
    key = str(work)
    if key not in _training:
        _training[key] = Training(work)
    return _training[key]


def measure_throughput(quick: bool, work: Path) -> dict[str, Any]:
    """Plain script (A) and cockpit's runner (B), interleaved A/B/A/B; steps/s from per-step
    on_log times after the warm-up steps; the median of the per-pair ratios B/A."""
    tr = _train(work)
    steps, pairs, warmup = (40, 1, 5) if quick else (600, 5, 20)
    log("warm-up: one short run of each")
    tr.plain(3)
    tr.runner(3)
    ratios, rates_a, rates_b, mean_ratios = [], [], [], []
    for i in range(pairs):
        log(f"throughput pair {i + 1}/{pairs}: plain TRL")
        _, a = tr.plain(steps)
        log(f"throughput pair {i + 1}/{pairs}: cockpit runner")
        _, b = tr.runner(steps)
        ra, rb = _rate(a, warmup), _rate(b, warmup)
        rates_a.append(ra)
        rates_b.append(rb)
        ratios.append(rb / ra)
        mean_ratios.append(_mean_rate(b, warmup) / _mean_rate(a, warmup))
        log(f"  plain {ra:.2f} steps/s, cockpit {rb:.2f} steps/s, ratio {rb / ra:.3f}")
    return {"throughput_ratio": statistics.median(ratios),
            "_detail": {"ratios": [round(r, 3) for r in ratios],
                        "ratios_of_mean_rates": [round(r, 3) for r in mean_ratios],
                        "plain_steps_per_s": [round(r, 2) for r in rates_a],
                        "cockpit_steps_per_s": [round(r, 2) for r in rates_b],
                        "steps": steps, "warmup_steps": warmup}}


def measure_first_step(quick: bool, work: Path) -> dict[str, Any]:
    """`cockpit run` (detached) to the journal's step-1 line, minus plain-script start to its
    first step; interleaved, the median of the per-pair differences."""
    tr = _train(work)
    pairs = 1 if quick else 3
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


MEASURES: dict[str, Callable[[bool, Path], dict[str, Any]]] = {
    "ui_first_frame_s": measure_ui_first_frame,
    "latency_p95_ms": measure_latency,
    "replay_100k_sft_s": measure_replay_sft,
    "replay_100k_grpo_s": measure_replay_grpo,
    "frame_4x1M_ms": measure_frame,
    "ui_rss_mb_4x1M": measure_rss,
    "throughput_ratio": measure_throughput,
    "first_step_overhead_s": measure_first_step,
}
_done: set[str] = set()


# -- output -----------------------------------------------------------------------------------


def table(results: dict[str, float], details: dict[str, Any], mach: dict[str, Any]) -> str:
    rows = [("figure", "value", "goal", "met", "anchor (other tools, same machine)")]
    for key, value in results.items():
        f = FIGURES[key]
        shown = f"{value:.3f} {f.unit}" if f.unit in ("s", "x") else f"{value:.1f} {f.unit}"
        rows.append((key, shown, f"{f.goal} {f.unit}".replace(" x", ""),
                     "yes" if f.ok(value) else "NO", f.anchor))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 36)
    v = mach["versions"]
    lines += ["", f"machine: {mach['cores']} cores, {mach['cpu']}, Python {mach['python']}, "
              f"load at start {mach['load_avg_at_start']}",
              "versions: " + ", ".join(f"{k} {v[k]}" for k in v)]
    for key, d in details.items():
        lines.append(f"{key}: {json.dumps(d)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--only", help="comma-separated figures: " + ", ".join(MEASURES))
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (smoke test)")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    ap.add_argument("--prototype", action="store_true",
                    help="UI figures with the proposed UI changes patched in (bench/prototype.py)")
    args = ap.parse_args(argv)
    wanted = list(MEASURES)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = [w for w in wanted if w not in MEASURES]
        if unknown:
            ap.error(f"unknown figure(s): {', '.join(unknown)} — pick from {', '.join(MEASURES)}")
    sys.path.insert(0, str(BENCH))
    if args.prototype:
        os.environ["COCKPIT_BENCH_PROTOTYPE"] = "1"
    mach = machine()
    work = args.work or Path(tempfile.mkdtemp(prefix="cockpit-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, float] = {}
    details: dict[str, Any] = {}
    try:
        for key in wanted:
            log(f"measuring {key}")
            t0 = time.monotonic()
            out = MEASURES[key](args.quick, work)
            details[key] = out.pop("_detail", {})
            results[key] = float(out[key])
            _done.add(key)
            log(f"  {key} = {results[key]:.4g} ({time.monotonic() - t0:.0f} s)")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    try:
        mach["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    if args.json:
        print(json.dumps({**results, "machine": mach}))
    else:
        print(table(results, details, mach))
    return 0


if __name__ == "__main__":
    sys.exit(main())
