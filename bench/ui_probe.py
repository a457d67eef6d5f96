"""Child process of the benchmark: runs the real cockpit app and observes it from inside.

    python bench/ui_probe.py latency RUN_DIR OUT.json --rate 20 --seconds 10
    python bench/ui_probe.py replay  TRAINER_STATE.json OUT.json
    python bench/ui_probe.py frame   OUT.json --points 1000000 --repeats 7
    python bench/ui_probe.py attach  RUN_DIR OUT.json            (a live run: first plot, RSS)
    python bench/ui_probe.py follow  RUN_DIR OUT.json --feed FEED.jsonl --rate 2000

It is started with TEXTUAL_DRIVER=frame_driver:FrameDriver (see frame_driver.py), so every
frame is rendered to escape sequences as on a real terminal; the probe hooks
`MetricPlot.draw` (what data a plot was handed) and `MetricPlot.build_lines` (the plot built by
plotext), and the driver's `write` (the frame leaving the app). A step is *visible* when a
frame is written after a render of a plot that was drawn from a store holding that step.

Results go to OUT.json (the app owns stdout while it runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from frame_driver import FRAME_MIN_BYTES, FrameDriver  # noqa: E402


class PlotWatch:
    """Hooks MetricPlot to know which step each plot holds and when it was last built."""

    def __init__(self) -> None:
        from cockpit.ui.widgets.run.metric_plot import MetricPlot

        self.rendered_step: dict[int, int] = {}  # id(plot) -> step held by its last render
        self.rendered_at: dict[int, float] = {}
        self.drawn_step: dict[int, int] = {}
        self.drawn_whole: dict[int, bool] = {}  # id(plot) -> drawn from whole sources (no first look)
        self.rendered_whole: dict[int, bool] = {}
        self.draw_s: list[float] = []
        self.render_s: list[float] = []
        watch = self
        orig_draw, orig_render = MetricPlot.draw, MetricPlot.build_lines

        def draw(self, sources, **kw):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            orig_draw(self, sources, **kw)
            watch.draw_s.append(time.perf_counter() - t0)
            steps = [s.store.last_step for s in sources if s.store.last_step is not None]
            watch.drawn_step[id(self)] = max(steps) if steps and self.points_drawn else -1
            watch.drawn_whole[id(self)] = all(getattr(s, "tail_from", None) is None for s in sources)

        def render(self):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            out = orig_render(self)
            watch.render_s.append(time.perf_counter() - t0)
            if id(self) in watch.drawn_step:
                watch.rendered_step[id(self)] = watch.drawn_step[id(self)]
                watch.rendered_whole[id(self)] = watch.drawn_whole[id(self)]
                watch.rendered_at[id(self)] = time.perf_counter()
            return out

        MetricPlot.draw = draw  # type: ignore[method-assign]
        MetricPlot.build_lines = render  # type: ignore[method-assign]


def _plots(app):  # type: ignore[no-untyped-def]
    from cockpit.ui.widgets.run.metric_plot import MetricPlot

    try:
        return list(app.screen.query(MetricPlot))
    except Exception:  # noqa: BLE001 - screen switching
        return []


# -- latency ---------------------------------------------------------------------------------

WRITER = r"""
import sys, time, math
from cockpit.run import journal
path, first, n, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
jw = journal.JournalWriter(path)
start = time.time() + 0.05
for i in range(n):
    due = start + i / rate
    delay = due - time.time()
    if delay > 0:
        time.sleep(delay)
    step = first + i
    rec = journal.metrics(step, {"loss": 2.0 / (1 + step / 50) + 0.05 * math.sin(step),
                                 "learning_rate": 1e-4, "grad_norm": 1.0 + 0.1 * math.cos(step),
                                 "mean_token_accuracy": min(1.0, step / 400), "entropy": 1.5,
                                 "num_tokens": 1024.0 * step}, epoch=step / 1000)
    jw.write_all([rec, journal.progress(step, 100000, steps_per_s=rate, eta_s=1000.0)])
jw.close()
"""


async def run_latency(run_dir: Path, out: Path, rate: float, seconds: float, first: int) -> None:
    from cockpit.run import journal
    from cockpit.ui.app import make_app

    watch = PlotWatch()
    visible: dict[int, float] = {}
    shown = {"step": -1, "plot": None}

    def on_write(data: str) -> None:
        if len(data) < FRAME_MIN_BYTES or shown["plot"] is None:
            return
        step = watch.rendered_step.get(shown["plot"], -1)
        if step > shown["step"]:
            now = time.time()
            for s in range(shown["step"] + 1, step + 1):
                visible.setdefault(s, now)
            shown["step"] = step

    FrameDriver.on_write = on_write
    app = make_app("live", [str(run_dir)], str(run_dir.parent))
    n = int(rate * seconds)

    async def conduct() -> None:
        deadline = time.monotonic() + 30
        while shown["plot"] is None and time.monotonic() < deadline:  # the loss panel mounted
            for p in _plots(app):
                if p.panel.title == "loss":
                    shown["plot"] = id(p)
            await asyncio.sleep(0.02)
        while shown["step"] < first - 1 and time.monotonic() < deadline:  # the history is shown
            await asyncio.sleep(0.02)
        profiler = _profiler()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(run_dir / "events.jsonl"),
                                   str(first), str(n), str(rate)])
        while writer.poll() is None:
            await asyncio.sleep(0.05)
        _write_profile(profiler)
        end = time.monotonic() + 2.0
        while shown["step"] < first + n - 1 and time.monotonic() < end:
            await asyncio.sleep(0.05)
        app.exit()

    task = asyncio.create_task(conduct())
    await app.run_async()
    await task
    records, _ = journal.read_all(run_dir / "events.jsonl")
    written = {r.step: r.t for r in records if r.kind == journal.METRICS and r.step is not None
               and r.step >= first}
    lat = {s: (visible[s] - t) * 1000 for s, t in written.items() if s in visible}
    out.write_text(json.dumps({
        "latencies_ms": [lat[s] for s in sorted(lat)],
        "written": len(written), "seen": len(lat),
        "draw_ms_median": statistics.median(watch.draw_s) * 1000 if watch.draw_s else None,
        "render_ms_median": statistics.median(watch.render_s) * 1000 if watch.render_s else None,
        "frames": FrameDriver.frames,
    }))


def _profiler():  # type: ignore[no-untyped-def]
    """A started pyinstrument profiler when COCKPIT_BENCH_PROFILE names a report file."""
    if not os.environ.get("COCKPIT_BENCH_PROFILE"):
        return None
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001, async_mode="disabled")
    profiler.start()
    return profiler


def _write_profile(profiler) -> None:  # type: ignore[no-untyped-def]
    if profiler is None:
        return
    profiler.stop()
    Path(os.environ["COCKPIT_BENCH_PROFILE"]).write_text(
        profiler.output_text(unicode=False, color=False,
                             flat=os.environ.get("COCKPIT_BENCH_PROFILE_FLAT") == "1"))


def _empty_runs_dir() -> str:
    """An empty runs folder for the app, removed when the probe process ends."""
    import atexit
    import shutil

    d = tempfile.mkdtemp(prefix="cockpit-bench-runs-")
    atexit.register(shutil.rmtree, d, True)
    return d


# -- replay ----------------------------------------------------------------------------------


async def run_replay(path: Path, out: Path) -> None:
    import cockpit.metrics.replay_loader as loader
    from cockpit.ui.app import CockpitApp, make_app

    watch = PlotWatch()
    marks: dict[str, float] = {}
    orig_open = CockpitApp.open_replay

    profiler = None
    if os.environ.get("COCKPIT_BENCH_PROFILE"):  # pyinstrument text report of open → drawn
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001, async_mode="disabled")

    def open_replay(self, paths):  # type: ignore[no-untyped-def]
        marks["open"] = time.perf_counter()
        if profiler is not None:
            profiler.start()
        return orig_open(self, paths)

    CockpitApp.open_replay = open_replay  # type: ignore[method-assign]
    orig_load = loader.load_replay

    def load_replay(p):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        marks.setdefault("load_called", t0)
        data = orig_load(p)
        marks["load_s"] = time.perf_counter() - t0
        marks["loaded"] = time.perf_counter()
        return data

    loader.load_replay = load_replay
    done = asyncio.Event()
    app = make_app("replay", [str(path)], _empty_runs_dir())

    def on_write(data: str) -> None:
        if len(data) < FRAME_MIN_BYTES or "open" not in marks or "drawn" in marks:
            return
        plots = _plots(app)
        if plots and all(watch.rendered_step.get(id(p), -1) >= 0 for p in plots):
            marks["drawn"] = time.perf_counter()
            marks["panels"] = len(plots)
            if profiler is not None:
                profiler.stop()
                Path(os.environ["COCKPIT_BENCH_PROFILE"]).write_text(
                    profiler.output_text(unicode=False, color=False,
                                         flat=os.environ.get("COCKPIT_BENCH_PROFILE_FLAT") == "1"))
            done.set()

    FrameDriver.on_write = on_write

    async def conduct() -> None:
        try:
            await asyncio.wait_for(done.wait(), 60)
        finally:
            app.exit()

    task = asyncio.create_task(conduct())
    await app.run_async()
    await task
    out.write_text(json.dumps({
        "open_to_drawn_s": marks["drawn"] - marks["open"],
        "load_s": marks.get("load_s"),
        "open_to_loaded_s": marks["loaded"] - marks["open"] if "loaded" in marks else None,
        "open_to_load_called_s": marks["load_called"] - marks["open"] if "load_called" in marks else None,
        "loaded_to_drawn_s": marks["drawn"] - marks["loaded"] if "loaded" in marks else None,
        "panels": marks.get("panels"),
        "draw_ms": [d * 1000 for d in watch.draw_s],
        "render_ms": [r * 1000 for r in watch.render_s],
    }))


# -- four plots of 1M points ---------------------------------------------------------------


def big_rundata(points: int):  # type: ignore[no-untyped-def]
    """A RunData whose store holds four SFT series of `points` points each, handed to the
    store as columns (`MetricStore.add_columns`: parsing 4M values is what the replay figures
    measure)."""
    import numpy as np

    from cockpit.metrics.rundata import RunData

    data = RunData("bench-4x1M")
    data.trainer = "sft"
    store = data.store
    steps = np.arange(1, points + 1, dtype=np.int64)
    times = 1.7e9 + steps * 0.5
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(points)
    series = {
        "loss": 2.0 / (1 + steps / 5e4) + 0.05 * noise,
        "learning_rate": 1e-4 * (1 - steps / (points + 1)),
        "grad_norm": np.abs(1.0 + 0.3 * noise) + (steps % 50_000 == 0) * 25.0,
        "mean_token_accuracy": np.clip(0.3 + steps / (2 * points) + 0.02 * noise, 0, 1),
    }
    store.add_columns(steps, series, times=times)
    del noise, series
    data.step = points
    data.max_steps = points
    data.state = "replay"
    data.version += 1
    return data


async def run_frame(out: Path, points: int, repeats: int) -> None:
    import gc

    import psutil

    from cockpit.ui.app import make_app
    from cockpit.ui.colors import series_colors
    from cockpit.ui.screens.replay import ReplayScreen
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    PlotWatch()
    app = make_app("home", [], _empty_runs_dir())
    result: dict[str, object] = {}

    async def conduct() -> None:
        from textual._context import active_app

        active_app.set(app)  # this task drives the app from outside its message loop
        try:
            while FrameDriver.frames < 1:
                await asyncio.sleep(0.02)
            data = big_rundata(points)
            screen = ReplayScreen([])
            await app.push_screen(screen)
            screen.sources = [data]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                plots = _plots(app)
                if len(plots) >= 4 and all(p.points_drawn for p in plots):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            grid = screen.query_one(PlotGrid)
            plots = grid.plots()
            times, draws = [], []
            for _ in range(repeats):
                data.store.version += 1  # new data: every panel must redraw
                t0 = time.perf_counter()
                grid.redraw(screen.sources, x_mode=screen.x_mode, smoothing=screen.smoothing,
                            colors=series_colors(app), theme=app.theme)
                t1 = time.perf_counter()
                for p in plots:
                    p.build_lines()
                times.append((time.perf_counter() - t0) * 1000)
                draws.append((t1 - t0) * 1000)
                await asyncio.sleep(0.05)
            gc.collect()
            await asyncio.sleep(0.3)
            result.update({
                "frame_ms": statistics.median(times), "frame_ms_all": times,
                "draw_ms": statistics.median(draws),
                "rss_mb": psutil.Process().memory_info().rss / 2**20,
                "panels": len(plots), "points_per_series": points,
                "plot_sizes": [tuple(p.size) for p in plots],
                "points_drawn": [p.points_drawn for p in plots],
            })
        finally:
            app.exit()

    task = asyncio.create_task(conduct())
    await app.run_async()
    await task
    out.write_text(json.dumps(result))


# -- attach to a long live run: first plot, memory, the completions tab ----------------------


def _all_drawn(app, watch, whole: bool = False) -> bool:  # type: ignore[no-untyped-def]
    """Every panel on screen drawn with data (with `whole`, from the whole journal: not from a
    long journal's first look)."""
    plots = _plots(app)
    return bool(plots) and all(watch.rendered_step.get(id(p), -1) >= 0 for p in plots) and \
        (not whole or all(watch.rendered_whole.get(id(p), False) for p in plots))


async def run_attach(run_dir: Path, out: Path) -> None:
    """`cockpit attach RUN` (make_app("live", [run])): the wall time of the first frame with
    every default panel drawn (the parent subtracts its spawn time; a long journal's first look
    at its newest steps counts), the first with every panel drawn from the whole journal
    (`open_to_whole_s`), the UI's RSS then, and stepping the completions tab back one kept step
    at a time."""
    import gc

    import psutil

    from cockpit.ui.app import CockpitApp, make_app
    from cockpit.ui.widgets.run.completions import CompletionsPane

    watch = PlotWatch()
    marks: dict[str, float] = {}
    orig_open = CockpitApp.open_live

    def open_live(self, path):  # type: ignore[no-untyped-def]
        marks.setdefault("open", time.perf_counter())
        marks.setdefault("open_cpu", time.process_time())
        return orig_open(self, path)

    CockpitApp.open_live = open_live  # type: ignore[method-assign]
    app = make_app("live", [str(run_dir)], str(run_dir.parent))
    drawn, whole = asyncio.Event(), asyncio.Event()
    frame_after: dict[str, float] = {}

    def on_write(data: str) -> None:
        if len(data) < FRAME_MIN_BYTES:
            return
        if "drawn_wall" not in marks and _all_drawn(app, watch):
            marks["drawn_wall"] = time.time()
            marks["drawn"] = time.perf_counter()
            marks["drawn_cpu"] = time.process_time()
            drawn.set()
        if "whole" not in marks and _all_drawn(app, watch, whole=True):
            marks["whole"] = time.perf_counter()
            marks["whole_cpu"] = time.process_time()
            whole.set()
        if "pending" in frame_after:
            frame_after["at"] = time.perf_counter()
            frame_after.pop("pending")

    FrameDriver.on_write = on_write
    result: dict[str, object] = {}

    async def conduct() -> None:
        from textual._context import active_app

        active_app.set(app)
        try:
            await asyncio.wait_for(drawn.wait(), 60)
            await asyncio.wait_for(whole.wait(), 120)
            await asyncio.sleep(0.5)
            gc.collect()
            result["rss_mb"] = psutil.Process().memory_info().rss / 2**20
            screen = app.screen
            await screen.action_tab("completions")  # async: its pane may still be deferred
            await asyncio.sleep(0.3)
            pane = screen.query_one(CompletionsPane)
            data = screen.sources[0]
            result["kept_steps"] = len(data.completions.steps())
            result["library_steps"] = len(data.library) if data.library is not None else 0
            scrubs = []
            for _ in range(min(20, max(0, len(data.completions.steps()) - 1))):
                frame_after.pop("at", None)
                frame_after["pending"] = 1.0
                t0 = time.perf_counter()
                pane.action_scrub(-1)
                deadline = time.monotonic() + 2
                while "at" not in frame_after and time.monotonic() < deadline:
                    await asyncio.sleep(0.002)
                if "at" in frame_after:
                    scrubs.append((frame_after["at"] - t0) * 1000)
            result["scrub_ms"] = scrubs
        finally:
            app.exit()

    task = asyncio.create_task(conduct())
    await app.run_async()
    await task
    result.update({"drawn_wall": marks["drawn_wall"], "open_to_drawn_s": marks["drawn"] - marks["open"],
                   "open_to_whole_s": marks["whole"] - marks["open"],
                   # The process's CPU seconds (every thread), what the other tenants move least.
                   "cpu_to_drawn_s": marks["drawn_cpu"] - marks["open_cpu"],
                   "cpu_to_whole_s": marks["whole_cpu"] - marks["open_cpu"],
                   "panels": len(watch.rendered_step)})
    out.write_text(json.dumps(result))


# -- follow a long run's tail ------------------------------------------------------------------

FEEDER = r"""
import sys, time
feed, events, rate, per_step = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
chunk_steps = max(1, int(rate * 0.02))
with open(feed, "rb") as src, open(events, "ab", buffering=0) as dst:
    lines = src.read().split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    start = time.monotonic()
    n = chunk_steps * per_step
    for i in range(0, len(lines), n):
        due = start + (i // per_step) / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        dst.write(b"\n".join(lines[i:i + n]) + b"\n")
"""


async def run_follow(run_dir: Path, out: Path, feed: Path, rate: float, last_step: int) -> None:
    """The live view on a run at its start; a feeder process appends the rest of a generated
    journal (`feed`) at `rate` steps a second while the view follows; RSS and the full-refresh
    frame time before and after, RSS sampled each second on the way."""
    import gc

    import psutil

    from cockpit.ui.app import make_app
    from cockpit.ui.colors import series_colors
    from cockpit.ui.widgets.run.plot_grid import PlotGrid

    watch = PlotWatch()
    app = make_app("live", [str(run_dir)], str(run_dir.parent))
    result: dict[str, object] = {}
    proc = psutil.Process()

    async def frame_ms(screen, repeats: int = 9) -> list[float]:  # type: ignore[no-untyped-def]
        grid = screen.query_one(PlotGrid)
        plots = grid.plots()
        times = []
        for _ in range(repeats):
            screen.sources[0].store.version += 1
            t0 = time.perf_counter()
            grid.redraw(screen.sources, x_mode=screen.x_mode, smoothing=screen.smoothing,
                        colors=series_colors(app), theme=app.theme)
            for p in plots:
                p.build_lines()
            times.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.05)
        return times

    async def settled_rss() -> float:
        gc.collect()
        await asyncio.sleep(0.5)
        return proc.memory_info().rss / 2**20

    async def conduct() -> None:
        from textual._context import active_app

        active_app.set(app)
        try:
            deadline = time.monotonic() + 60
            while not _all_drawn(app, watch) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            screen = app.screen
            await asyncio.sleep(1.0)
            result["frame_ms_start_all"] = await frame_ms(screen)
            result["rss_mb_start"] = await settled_rss()
            result["step_start"] = screen.sources[0].store.last_step
            feeder = subprocess.Popen([sys.executable, "-c", FEEDER, str(feed), str(run_dir / "events.jsonl"),
                                       str(rate), "2"])
            samples = []
            t0 = time.monotonic()
            while True:
                await asyncio.sleep(1.0)
                store = screen.sources[0].store
                samples.append((round(time.monotonic() - t0, 1), store.last_step,
                                round(proc.memory_info().rss / 2**20, 1)))
                if feeder.poll() is not None and store.last_step == last_step:
                    break
                if time.monotonic() - t0 > 900:
                    raise RuntimeError(f"the view did not reach step {last_step}: {samples[-3:]}")
            result["follow_s"] = time.monotonic() - t0
            await asyncio.sleep(1.0)
            result["rss_mb_end"] = await settled_rss()
            result["frame_ms_end_all"] = await frame_ms(screen)
            # The same view, now, with the first hour's points only and with all of them, in
            # turn: what the length costs, apart from what else the cores ran meanwhile.
            # (A copy of the store up to the first hour's last step, each with its own plot
            # caches, warmed by the first of the three refreshes of each turn.)
            store = screen.sources[0].store
            stores = {"first_hour": _store_up_to(store, result["step_start"] or 0), "all": store}
            turns: dict[str, list[float]] = {"first_hour": [], "all": []}
            for _ in range(3):
                for label, which in stores.items():
                    screen.sources[0].store = which
                    turns[label] += await frame_ms(screen, 3)
            screen.sources[0].store = store
            result["frame_ms_back_to_back"] = {k: min(v) for k, v in turns.items()}
            result["step_end"] = store.last_step
            result["samples"] = samples
            result["store_mb"] = store.nbytes / 2**20
            result["series"] = len(store.keys())
            result["store_groups"] = [[keys, rows] for keys, rows in store.groups]
        finally:
            app.exit()

    task = asyncio.create_task(conduct())
    await app.run_async()
    await task
    out.write_text(json.dumps(result))


def _store_up_to(store, step: int):  # type: ignore[no-untyped-def]
    """A new store holding `store`'s points up to `step`, laid out in the same row groups."""
    from cockpit.metrics.store import MetricStore

    part = MetricStore()
    t0 = store.t0 or 0.0
    for keys, _rows in store.groups:
        steps, _ = store.series(keys[0])
        seconds, _ = store.series(keys[0], x="time")
        keep = steps <= step
        part.add_columns(steps[keep], {k: store.series(k)[1][keep] for k in keys},
                         times=seconds[keep] + t0)
    part.max_steps = store.max_steps
    return part


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    la = sub.add_parser("latency")
    la.add_argument("run_dir", type=Path)
    la.add_argument("out", type=Path)
    la.add_argument("--rate", type=float, default=20.0)
    la.add_argument("--seconds", type=float, default=10.0)
    la.add_argument("--first", type=int, default=21)
    rp = sub.add_parser("replay")
    rp.add_argument("path", type=Path)
    rp.add_argument("out", type=Path)
    fr = sub.add_parser("frame")
    fr.add_argument("out", type=Path)
    fr.add_argument("--points", type=int, default=1_000_000)
    fr.add_argument("--repeats", type=int, default=7)
    at = sub.add_parser("attach")
    at.add_argument("run_dir", type=Path)
    at.add_argument("out", type=Path)
    fo = sub.add_parser("follow")
    fo.add_argument("run_dir", type=Path)
    fo.add_argument("out", type=Path)
    fo.add_argument("--feed", type=Path, required=True)
    fo.add_argument("--rate", type=float, default=2000.0)
    fo.add_argument("--last-step", type=int, required=True)
    args = ap.parse_args()
    assert os.environ.get("TEXTUAL_DRIVER", "").endswith("FrameDriver"), "run me from bench/run.py"
    if os.environ.get("COCKPIT_BENCH_PROTOTYPE") == "1":
        import prototype

        prototype.apply()
    if args.mode == "latency":
        asyncio.run(run_latency(args.run_dir, args.out, args.rate, args.seconds, args.first))
    elif args.mode == "replay":
        asyncio.run(run_replay(args.path, args.out))
    elif args.mode == "attach":
        asyncio.run(run_attach(args.run_dir, args.out))
    elif args.mode == "follow":
        asyncio.run(run_follow(args.run_dir, args.out, args.feed, args.rate, args.last_step))
    else:
        asyncio.run(run_frame(args.out, args.points, args.repeats))


if __name__ == "__main__":
    main()
