"""The cockpit side by side with the tools a user would pick instead, in one run, on the same data.

Peers: W&B's terminal viewer LEET (`wandb leet`, shipped inside the wandb wheel as part of its
wandb-core binary) and TensorBoard's `EventAccumulator`. They are installed from PyPI into a
bench-only venv, bench/.venv-peers (gitignored), from the `bench` extra of pyproject.toml; W&B
runs offline. Both terminal programs, the cockpit and LEET, are driven the same way: in a real
terminal (tmux, 160x48), started as a user starts them, the screen read with capture-pane every
~25 ms. How each figure is measured: docs/performance.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
VENV = Path(os.environ.get("COCKPIT_BENCH_PEERS_VENV") or BENCH / ".venv-peers")
"""Where the peers live (gitignored); the variable points elsewhere (the smoke test: nowhere)."""
POLL_S = 0.025
CATCH_UP_S = 10.0
"""How long the viewers are watched after the last write for the steps still on their way."""


class Skipped(Exception):
    """A figure that cannot be measured here; the message says why (printed as 'skipped')."""


# -- the peers' venv --------------------------------------------------------------------------


def _bench_requirements() -> list[str]:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return list(extras.get("bench") or ["wandb", "tensorboard"])


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv(log: Callable[[str], None]) -> Path:
    """bench/.venv-peers with the `bench` extra installed; its python. Raises Skipped."""
    py = _venv_python()
    probe = [str(py), "-c", "import wandb, tensorboard; print(wandb.__version__, tensorboard.__version__)"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    reqs = _bench_requirements()
    log(f"installing the peers into {VENV}: {' '.join(reqs)}")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
        proc = subprocess.run([str(py), "-m", "pip", "install", "-q", *reqs], capture_output=True,
                              text=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as exc:
        raise Skipped(f"could not make {VENV.name}: {exc}") from None
    if proc.returncode != 0:
        raise Skipped(f"pip install {' '.join(reqs)} failed: {proc.stderr.strip()[-300:]}")
    if subprocess.run(probe, capture_output=True).returncode != 0:
        raise Skipped("wandb/tensorboard installed but do not import")
    return py


def peer_versions(py: Path) -> dict[str, str]:
    out = subprocess.run([str(py), "-c", "import json, wandb, tensorboard; print(json.dumps("
                          "{'wandb': wandb.__version__, 'tensorboard': tensorboard.__version__}))"],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def leet_command(py: Path) -> list[str]:
    """`wandb leet run` of the installed wandb, after checking that LEET really ships in it
    (the wheel's wandb-core binary serves it; older wheels have no `leet`)."""
    wandb_cli = py.parent / "wandb"
    proc = subprocess.run([str(wandb_cli), "leet", "run", "--help"], capture_output=True, text=True,
                          env=_peer_env())
    if proc.returncode != 0 or "LEET" not in proc.stdout:
        proc = subprocess.run([str(wandb_cli), "beta", "leet", "--help"], capture_output=True, text=True,
                              env=_peer_env())
        if proc.returncode != 0 or "LEET" not in proc.stdout:
            raise Skipped(f"this wandb has no LEET (`wandb leet --help`: {proc.stderr.strip()[-200:]})")
        return [str(wandb_cli), "beta", "leet"]
    core = list((py.parent.parent / "lib").glob("python*/site-packages/wandb/bin/wandb-core"))
    if not core:
        raise Skipped("the wandb wheel has no wandb-core binary, which LEET runs in")
    return [str(wandb_cli), "leet", "run"]


def _peer_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "TEXTUAL_")):
            env.pop(k)
    env.update({"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true",
                "WANDB_ERROR_REPORTING": "false", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def run_task(py: Path, *args: str, timeout: float = 900, **env: str) -> dict[str, Any]:
    proc = subprocess.run([str(py), str(BENCH / "peer_tasks.py"), *args], capture_output=True, text=True,
                          timeout=timeout, env=_peer_env(**env))
    if proc.returncode != 0:
        raise RuntimeError(f"peer task {args[0]} failed: {proc.stderr[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- a real terminal ----------------------------------------------------------------------------


class Pane:
    """A program in a tmux terminal of its own (a private tmux server), read as a user sees it."""

    SOCKET = f"cockpit-bench-{os.getpid()}"
    _n = 0

    def __init__(self, argv: list[str], env: dict[str, str], *, cols: int = 160, rows: int = 48,
                 cwd: str | None = None) -> None:
        if shutil.which("tmux") is None:
            raise Skipped("tmux is not installed (apt-get install tmux)")
        Pane._n += 1
        self.name = f"p{Pane._n}"
        assigns = [f"{k}={v}" for k, v in env.items() if k in _PASS or k.startswith(("WANDB_", "COCKPIT_"))]
        # A clean environment (the variables named here, and the TERM tmux gives the pane).
        cmd = 'exec env -i TERM="$TERM" ' + " ".join(shlex.quote(a) for a in (*assigns, *argv))
        self._tmux("new-session", "-d", "-s", self.name, "-x", str(cols), "-y", str(rows),
                   *(["-c", cwd] if cwd else []), cmd)
        self._tmux("set-option", "-t", self.name, "remain-on-exit", "on")
        self.t0 = time.time()
        self.pid = int(self._tmux("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.SOCKET, *args], capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def rss_mb(self) -> tuple[float, dict[str, float]]:
        """RSS of the program and every process it started, in MB, and per process name."""
        import psutil

        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0.0, {}
        per: dict[str, float] = {}
        for p in procs:
            try:
                per[p.name()] = per.get(p.name(), 0.0) + p.memory_info().rss / 2**20
            except psutil.Error:
                pass
        return sum(per.values()), per

    def close(self) -> None:
        self._tmux("kill-session", "-t", self.name)

    @classmethod
    def shutdown(cls) -> None:
        if shutil.which("tmux") is None:
            return
        subprocess.run(["tmux", "-L", cls.SOCKET, "kill-server"], capture_output=True)
        # tmux leaves the socket file of a server it was told to kill
        tmpdir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (tmpdir / cls.SOCKET).unlink(missing_ok=True)


_PASS = ("PATH", "HOME", "LANG", "LC_ALL", "USER", "HF_HUB_OFFLINE", "TMPDIR", "XDG_CACHE_HOME",
         "XDG_CONFIG_HOME", "PYTHONPATH")


def until_settled(pane: Pane, done: Callable[[str], bool], *, settle_s: float = 2.0,
                  timeout: float = 180) -> dict[str, Any]:
    """Poll the screen until `done(screen)` and then no change for `settle_s`: the time of the
    last change (the screen reaching its final state) counted from the program's start."""
    last, last_change, seen_done = None, None, None
    while time.time() - pane.t0 < timeout:
        s = pane.screen()
        now = time.time()
        if s != last:
            last, last_change = s, now
        if seen_done is None and done(s):
            seen_done = now
        if seen_done is not None and now - last_change >= settle_s:
            return {"complete_s": last_change - pane.t0, "done_s": seen_done - pane.t0, "screen": s}
        time.sleep(POLL_S)
    raise RuntimeError(f"the screen did not settle in {timeout} s; last screen:\n{last}")


# -- the shared data ----------------------------------------------------------------------------


class Peers:
    """One bench run's peers: the venv, and the 100k-step run written for each tool once."""

    def __init__(self, work: Path, quick: bool, log: Callable[[str], None]) -> None:
        self.work, self.quick, self.log = work, quick, log
        self.entries = 10_000 if quick else 100_000
        self.py = ensure_venv(log)
        self.versions = peer_versions(self.py)
        self._leet: list[str] | None = None
        self._leet_error: str | None = None
        try:
            self._leet = leet_command(self.py)
        except Skipped as exc:
            self._leet_error = str(exc)
        self.dir = work / f"peers-{self.entries}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._replays: dict[str, dict[str, Any]] = {}

    def leet(self) -> list[str]:
        if self._leet is None:
            raise Skipped(self._leet_error or "no LEET")
        return self._leet

    @property
    def state(self) -> Path:
        from gen_state import write_trainer_state  # type: ignore[import-not-found]

        path = self.work / f"state-sft-{self.entries}" / "trainer_state.json"
        if not path.exists():
            self.log(f"writing a {self.entries}-entry sft trainer_state.json")
            write_trainer_state(path, "sft", self.entries)
        return path

    def wandb_run(self) -> dict[str, Any]:
        meta = self.dir / "wandb.json"
        if not meta.exists():
            self.log(f"writing the same {self.entries} steps as an offline W&B run")
            shutil.rmtree(self.dir / "wandb", ignore_errors=True)
            meta.write_text(json.dumps(run_task(self.py, "write-wandb", str(self.state), str(self.dir / "wandb"))))
        return json.loads(meta.read_text())

    def tb_events(self) -> dict[str, Any]:
        meta = self.dir / "tb.json"
        if not meta.exists():
            self.log(f"writing the same {self.entries} steps as a TensorBoard event file")
            shutil.rmtree(self.dir / "tb", ignore_errors=True)
            meta.write_text(json.dumps(run_task(self.py, "write-tb", str(self.state), str(self.dir / "tb"))))
        return {**json.loads(meta.read_text()), "dir": str(self.dir / "tb")}

    # -- replay in a terminal: cockpit and LEET --------------------------------------------------

    def replay(self, tool: str) -> dict[str, Any]:
        """Median of fresh starts: time from spawn to the final screen, and the RSS then."""
        if tool in self._replays:
            return self._replays[tool]
        n = 1 if self.quick else 3
        runs = [self._replay_once(tool) for _ in range(n)]
        times = [r["complete_s"] for r in runs]
        mid = sorted(runs, key=lambda r: r["complete_s"])[len(runs) // 2]
        out = {"complete_s": statistics.median(times), "runs_s": [round(t, 3) for t in times],
               "rss_mb": mid["rss_mb"], "rss_by_process": mid["rss_by_process"]}
        self._replays[tool] = out
        return out

    def _replay_once(self, tool: str) -> dict[str, Any]:
        last = str(self.entries)
        if tool == "leet":
            argv = [*self.leet(), self.wandb_run()["run_dir"]]
            env = _peer_env()
            pattern = re.compile(rf"_step\s+{last}\b")

            def done(s: str) -> bool:
                return "State: Finished" in s and bool(pattern.search(s))
        else:
            from run import _cockpit_cmd, _env  # type: ignore[import-not-found]

            argv = [*_cockpit_cmd(), "replay", str(self.state)]
            env = _env()

            def done(s: str) -> bool:
                return f"step {last}/{last}" in s and "Traceback" not in s
        pane = Pane(argv, env, cwd=str(self.dir))
        try:
            res = until_settled(pane, done)
            if not done(res["screen"]):
                raise RuntimeError(f"{tool} settled on a screen that does not show step {last}:\n{res['screen']}")
            rss, per = pane.rss_mb()
        finally:
            pane.close()
        return {"complete_s": res["complete_s"], "rss_mb": rss,
                "rss_by_process": {k: round(v, 1) for k, v in per.items()}}

    # -- live: one writer, both viewers --------------------------------------------------------

    def live(self) -> dict[str, Any]:
        if "live" in self._replays:
            return self._replays["live"]
        from run import _cockpit_cmd, _env, _make_run, _p  # type: ignore[import-not-found]

        rate, seconds, first = 20.0, (3.0 if self.quick else 10.0), 21
        base = self.dir / f"live-{time.time_ns()}"
        run = _make_run(base / "runs", "live", 0)
        ctl = base / "control"
        ctl.mkdir(parents=True)
        n = int(rate * seconds)
        writer = subprocess.Popen(
            [str(self.py), str(BENCH / "peer_tasks.py"), "live-writer", str(run.path), str(base / "wandb"),
             str(first), str(n), str(rate), str(ctl)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_peer_env(PYTHONPATH=str(REPO)))
        deadline = time.monotonic() + 120
        while not (ctl / "ready").exists():
            if writer.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the live writer did not start: {writer.communicate()[1][-1500:]}")
            time.sleep(0.05)
        wandb_run_dir = json.loads((ctl / "ready").read_text())["wandb_run_dir"]
        panes = {"cockpit": Pane([*_cockpit_cmd(), "attach", str(run.path)], _env(), cwd=str(base)),
                 "leet": Pane([*self.leet(), wandb_run_dir], _peer_env(), cwd=str(base))}
        step_of = {"cockpit": re.compile(r"\bstep (\d+)/"), "leet": re.compile(r"_step\s+(\d+)\b")}
        seen: dict[str, dict[int, float]] = {"cockpit": {}, "leet": {}}
        shown = {"cockpit": -1, "leet": -1}
        rss: dict[str, float] = {}
        try:
            start = time.monotonic()
            while min(shown.values()) < first - 1:  # both show the history
                if time.monotonic() - start > 60:
                    raise RuntimeError(f"viewers did not show step {first - 1}: {shown}\n"
                                       + "\n".join(p.screen() for p in panes.values()))
                for tool, pane in panes.items():
                    m = step_of[tool].search(pane.screen())
                    shown[tool] = int(m.group(1)) if m else -1
                time.sleep(POLL_S)
            (ctl / "go").write_text("")
            end_by = None
            while True:
                for tool, pane in panes.items():
                    m = step_of[tool].search(pane.screen())
                    now = time.time()
                    step = int(m.group(1)) if m else -1
                    if step > shown[tool]:
                        for s in range(shown[tool] + 1, step + 1):
                            seen[tool].setdefault(s, now)
                        shown[tool] = step
                if end_by is None and (ctl / "done").exists():
                    end_by = time.monotonic() + CATCH_UP_S
                    for tool, pane in panes.items():
                        rss[tool] = pane.rss_mb()[0]
                if end_by is not None and (time.monotonic() > end_by
                                           or min(shown.values()) >= first + n - 1):
                    break
                time.sleep(POLL_S / 2)
            observed_until = time.time()
        finally:
            (ctl / "close").write_text("")
            for pane in panes.values():
                pane.close()
        out, err = writer.communicate(timeout=60)
        if writer.returncode != 0:
            raise RuntimeError(f"live writer failed: {err[-1500:]}")
        stamps = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1])["stamps"].items()}
        res: dict[str, Any] = {"written": len(stamps)}
        for tool in panes:
            # A step never shown by the end counts with the time it had waited then: a lower
            # bound of its latency (leaving it out would flatter the slower viewer).
            lat = [(seen[tool].get(s, observed_until) - t) * 1000 for s, t in stamps.items()]
            res[tool] = {"p95_ms": _p(lat, 95) if lat else None,
                         "median_ms": statistics.median(lat) if lat else None,
                         "seen": sum(s in seen[tool] for s in stamps), "rss_mb": round(rss.get(tool, 0.0), 1)}
        shutil.rmtree(base, ignore_errors=True)
        self._replays["live"] = res
        return res

    # -- TensorBoard -----------------------------------------------------------------------------

    def tensorboard(self) -> dict[str, Any]:
        if "tb" in self._replays:
            return self._replays["tb"]
        events = self.tb_events()
        runs = [run_task(self.py, "tb-ingest", events["dir"]) for _ in range(1 if self.quick else 3)]
        times = [r["ingest_s"] for r in runs]
        pts = runs[0]["points"]
        if not pts or min(pts.values()) != self.entries:
            raise RuntimeError(f"EventAccumulator read {pts}, not {self.entries} points a tag")
        out = {"ingest_s": statistics.median(times), "runs_s": [round(t, 2) for t in times],
               "import_s": round(runs[0]["import_s"], 3), "tags": len(pts),
               "max_rss_mb": round(runs[0]["max_rss_mb"], 1), "file_mb": round(events["bytes"] / 2**20, 1)}
        self._replays["tb"] = out
        return out


def orjson_floor(path: Path, repeats: int = 5) -> float:
    """Reading and parsing the file with orjson alone, nothing built from it (median)."""
    import orjson

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        orjson.loads(path.read_bytes())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
