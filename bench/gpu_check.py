"""The checks that need a CUDA GPU, in one go (a lent GPU machine gives a few minutes):

    python bench/gpu_check.py OUT_DIR [--skip-bench]

1. what the machine has: the GPU (nvidia-smi), torch and CUDA, bf16, nvidia-ml-py;
2. the demo SFT preset on CUDA in bf16, through `cockpit run` (detached), with the live app's
   System tab drawn while it trains (SVG screenshots at 160x48 and 100x30, and the pane's text);
3. a user's own script (tests/fixtures/scripts/pipeline.py, SFT with eval) under
   `cockpit run -- python ...`, on CUDA in bf16;
4. `python bench/run.py --gpu-only`: the throughput ratio (plain TRL vs the cockpit's runner) and
   the first-step overhead, on CUDA in bf16.

Each step is on its own (one failing does not stop the next) and says what it saw in
OUT_DIR/gpu.json; OUT_DIR/gpu.log has every command's output. Nothing is judged against a
stored figure: the numbers are what this GPU gave.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

OUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path("gpu-out").resolve()
OUT.mkdir(parents=True, exist_ok=True)
WORK = Path(tempfile.mkdtemp(prefix="cockpit-gpu-"))
RUNS = WORK / "runs"
LOG = open(OUT / "gpu.log", "a", encoding="utf-8")  # noqa: SIM115 - open for the whole check
RESULT: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def say(msg: str) -> None:
    line = f"[gpu {time.strftime('%H:%M:%S')}] {msg}"
    print(line, flush=True)
    LOG.write(line + "\n")
    LOG.flush()


def save() -> None:
    (OUT / "gpu.json").write_text(json.dumps(RESULT, indent=1, default=str), encoding="utf-8")


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
              "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false", "COCKPIT_RUNS_DIR": str(RUNS)})
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [e.get("PYTHONPATH")])])
    return e


def sh(cmd: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    say("$ " + " ".join(cmd))
    proc = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout, **kw)
    LOG.write(proc.stdout[-20000:] + proc.stderr[-20000:] + f"\n(exit {proc.returncode})\n")
    LOG.flush()
    return proc


def step(name: str):  # type: ignore[no-untyped-def]
    def wrap(fn):  # type: ignore[no-untyped-def]
        def run() -> None:
            t0 = time.monotonic()
            say(f"== {name}")
            try:
                RESULT[name] = fn()
            except Exception as exc:  # noqa: BLE001 - one step failing must not stop the next
                RESULT[name] = {"error": f"{type(exc).__name__}: {exc}"}
                LOG.write(traceback.format_exc())
                say(f"   {name} failed: {type(exc).__name__}: {exc}")
            RESULT.setdefault("seconds", {})[name] = round(time.monotonic() - t0, 1)
            save()
        return run
    return wrap


COCKPIT = [sys.executable, "-m", "cockpit.cli"]
STEPS = int(os.environ.get("COCKPIT_GPU_CHECK_STEPS", "600"))
"""The demo's steps (the script trains half as many); a CPU try of this file sets fewer."""


@step("machine")
def machine() -> dict[str, Any]:
    out: dict[str, Any] = {}
    if shutil.which("nvidia-smi"):
        smi = sh(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"], 30)
        out["nvidia_smi"] = smi.stdout.strip()
    else:
        out["nvidia_smi"] = "not found"
    probe = sh([sys.executable, "-c", "import json, torch, transformers, trl, datasets, textual, sys; "
                "print(json.dumps({'python': sys.version.split()[0], 'torch': torch.__version__, "
                "'cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available(), "
                "'bf16_supported': torch.cuda.is_available() and torch.cuda.is_bf16_supported(), "
                "'device': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None, "
                "'transformers': transformers.__version__, 'trl': trl.__version__, "
                "'datasets': datasets.__version__, 'textual': textual.__version__}))"], 120)
    out.update(json.loads(probe.stdout.strip().splitlines()[-1]))
    nv = sh([sys.executable, "-c", "import pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); "
             "print(pynvml.nvmlDeviceGetCount(), pynvml.nvmlDeviceGetName(h))"], 30)
    out["nvml"] = nv.stdout.strip() or nv.stderr.strip()[-300:]
    return out


def _journal(run_path: Path) -> list[Any]:
    from cockpit.run import journal

    records, _ = journal.read_all(run_path / "events.jsonl")
    return records


def _run_facts(run_path: Path) -> dict[str, Any]:
    """What the run's own files say: its end, its device, its speed and its GPU samples."""
    from cockpit.run import journal
    from cockpit.run.folder import RunFolder

    run = RunFolder(run_path)
    records = _journal(run_path)
    started = [r.data for r in records if r.kind == journal.RUN_STARTED]
    steps = {r.step: r.t for r in records if r.kind == journal.METRICS and r.step is not None
             and "loss" in r.data}
    gpus = [g for r in records if r.kind == journal.SYSTEM for g in (r.data.get("gpus") or [])]
    ordered = sorted(steps)
    rate = ((ordered[-1] - ordered[0]) / (steps[ordered[-1]] - steps[ordered[0]])
            if len(ordered) > 2 and steps[ordered[-1]] > steps[ordered[0]] else None)
    return {"state": run.read_status().state, "device": [s.get("device") for s in started],
            "world_size": [s.get("world_size") for s in started],
            "steps_logged": len(steps), "steps_per_s": round(rate, 2) if rate else None,
            "system_samples": sum(1 for r in records if r.kind == journal.SYSTEM),
            "gpu_samples": len(gpus),
            "gpu_util_max_percent": max((g.get("util_percent") or 0 for g in gpus), default=None),
            "gpu_mem_used_max_mb": max((g.get("mem_used_mb") or 0 for g in gpus), default=None),
            "gpu_power_max_w": max((g.get("power_w") or 0 for g in gpus), default=None),
            "findings": [r.data.get("kind") or r.data.get("code") for r in records
                         if r.kind in (getattr(journal, "FINDING", "finding"),)],
            "last_loss": next((r.data.get("loss") for r in reversed(records)
                               if r.kind == journal.METRICS and "loss" in r.data), None)}


def _wait_end(run_path: Path, limit: float) -> str:
    from cockpit.run.folder import RunFolder

    run = RunFolder(run_path)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        st = run.read_status()
        if not st.live:
            return st.state
        time.sleep(0.5)
    return "still running at the deadline"


async def _system_tab(run_path: Path, sizes: list[tuple[int, int]]) -> dict[str, Any]:
    """The live app on the training run, System tab, drawn once GPU samples are in."""
    from cockpit.ui.app import make_app

    out: dict[str, Any] = {}
    for cols, rows in sizes:
        app = make_app("live", [str(run_path)], str(RUNS))
        async with app.run_test(size=(cols, rows)) as pilot:
            deadline = time.monotonic() + 30
            while not getattr(app.screen, "sources", None) and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.press("5")
            pane = app.screen.query_one("#system-pane")
            while time.monotonic() < deadline and "GPU 0" not in str(pane.render()):
                await pilot.pause(0.25)
            await pilot.pause(1.0)
            text = str(pane.render())
            app.save_screenshot(filename=f"system-{cols}x{rows}.svg", path=str(OUT))
            out[f"{cols}x{rows}"] = text
    (OUT / "system-pane.txt").write_text("\n\n".join(f"--- {k}\n{v}" for k, v in out.items()), encoding="utf-8")
    return {"gpu_row": all("GPU 0" in v for v in out.values()), "sizes": list(out)}


@step("demo_sft_cuda_bf16")
def demo() -> dict[str, Any]:
    proc = sh([*COCKPIT, "run", "demo-sft", "--runs-dir", str(RUNS), "--name", "gpu-demo",
               "--set", "bf16=true", "--set", f"max_steps={STEPS}"], 300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-500:])
    run_path = Path(proc.stdout.strip().splitlines()[-1])
    from cockpit.run import journal
    from cockpit.run.folder import RunFolder

    deadline = time.monotonic() + 240  # the app is opened once the trainer logs and a GPU sample is in
    while time.monotonic() < deadline and RunFolder(run_path).read_status().live:
        if (run_path / "events.jsonl").is_file():
            recs = _journal(run_path)
            if any(r.kind == journal.SYSTEM and r.data.get("gpus") for r in recs) and any(
                    r.kind == journal.METRICS for r in recs):
                break
        time.sleep(0.5)
    shown = asyncio.run(_system_tab(run_path, [(160, 48), (100, 30)]))
    end = _wait_end(run_path, 300)
    facts = _run_facts(run_path)
    findings = sh([*COCKPIT, "findings", str(run_path), "--json"], 120)
    try:
        facts["judge"] = [f.get("kind") for f in json.loads(findings.stdout)["findings"]]
    except (ValueError, KeyError):
        facts["judge"] = findings.stderr.strip()[-300:]
    return {"end": end, "system_tab": shown, **facts}


@step("script_sft_cuda_bf16")
def script() -> dict[str, Any]:
    from cockpit.demo import demo_dir

    sh([sys.executable, "-c", "from cockpit.runner.assets import ensure_all; ensure_all()"], 300)
    demo = demo_dir()
    out_dir = WORK / "script-out"
    proc = sh([*COCKPIT, "run", "--runs-dir", str(RUNS), "--name", "gpu-script", "--wait", "--quiet", "--",
               sys.executable, str(REPO / "tests" / "fixtures" / "scripts" / "pipeline.py"),
               str(demo / "models" / "tiny-lm"), str(demo / "data"), str(out_dir), "--stage", "sft",
               "--cuda-bf16", "--max-steps", str(STEPS // 2), "--save-steps", str(STEPS // 4),
               "--eval-steps", str(STEPS // 6)], 420)
    run_path = next((p for p in RUNS.iterdir() if p.name.startswith("gpu-script")), None)
    if run_path is None:
        raise RuntimeError(f"no run folder (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return {"exit": proc.returncode, **_run_facts(run_path),
            "checkpoints": sorted(p.name for p in out_dir.glob("checkpoint-*"))}


@step("bench_gpu")
def bench() -> dict[str, Any]:
    proc = sh([sys.executable, str(BENCH / "run.py"), "--gpu-only", "--work", str(WORK / "bench")], 420)
    (OUT / "bench.txt").write_text(proc.stdout + "\n" + proc.stderr[-6000:], encoding="utf-8")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("gpu_")]
    return {"exit": proc.returncode, "lines": lines}


def main() -> int:
    say(f"work folder {WORK}, out {OUT}")
    machine()
    demo()
    script()
    if "--skip-bench" not in sys.argv:
        bench()
    save()
    shutil.rmtree(WORK, ignore_errors=True)
    say(json.dumps({k: v for k, v in RESULT.items() if k != "machine"}, default=str)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
