"""The hang doctor's judgement: when a run that is alive has stopped stepping, and where it waits.

The supervisor (`supervisor/doctor.py`) feeds it the times steps arrived; when no step came for
`factor` × the median step time (and at least `floor_s` seconds) it asks py-spy for every
process's Python stack, keeps them in the run folder (`hangs/`) and writes a `hang` finding
whose evidence points at that file and says where each process waits (the data loader, a
collective, generation, a callback, saving a checkpoint...). py-spy reads another process's
memory through ptrace; when it is missing or refused, the finding says so in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.files import write_atomic
from cockpit.findings.model import Finding

HANGS_DIR = "hangs"
"""The run folder's `hangs/`: one `step-N-<unix time>.txt` of every process's stack a hang."""

DEFAULT_FACTOR = 10.0
DEFAULT_FLOOR_S = 120.0
DEFAULT_FIRST_STEP_S = 900.0
"""Before two steps there is no step time: a run in its training phase with no step for this long
is stuck at step 0 (TRL users meet it with a collective that never completes)."""


@dataclass(frozen=True)
class HangLimits:
    factor: float = DEFAULT_FACTOR
    floor_s: float = DEFAULT_FLOOR_S
    first_step_s: float = DEFAULT_FIRST_STEP_S

    @classmethod
    def from_settings(cls, section: dict[str, Any] | None, env: Mapping[str, str] | None = None) -> HangLimits:
        """`cockpit.doctor.hang: {factor, floor_s, first_step_s}` in the preset; COCKPIT_HANG_FACTOR,
        COCKPIT_HANG_FLOOR_S and COCKPIT_HANG_FIRST_STEP_S in the environment (script runs have no
        preset) override it. A value that is not a positive number keeps the default."""
        section = section if isinstance(section, dict) else {}
        env = os.environ if env is None else env
        out = {}
        for key, default in (("factor", DEFAULT_FACTOR), ("floor_s", DEFAULT_FLOOR_S),
                             ("first_step_s", DEFAULT_FIRST_STEP_S)):
            out[key] = positive(env.get(f"COCKPIT_HANG_{key.upper()}", section.get(key, default)), default)
        return cls(**out)


def positive(raw: Any, default: float) -> float:
    """A setting of the doctor's that must be a positive number of seconds (or a factor): `raw` as a
    float, or `default` when it is not one."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return default
    return value if value > 0 else default


MAX_WALL_GAP_S = 86_400.0
"""A gap between two steps' own timestamps longer than this is a clock jump, not a step."""


class StepClock:
    """When steps arrived; says how long a silence means a hang. A silence is measured on one
    process's `time.monotonic()` from when it saw the last step, never on a wall clock: a clock set
    two days forward (NTP, a VM resumed) is no 172,800 s silence. A step's duration is the gap
    between the trainer's own timestamps of consecutive steps (`t`, when given and sane), since the
    supervisor often reads several steps in one poll and would see no gap between them; without
    them, the gaps between when steps were seen."""

    def __init__(self, limits: HangLimits) -> None:
        self.limits = limits
        self.last_seen: float | None = None
        """When the newest step was seen (monotonic)."""
        self.gaps: list[float] = []
        """Recent step durations in seconds."""
        self.last_step: int | None = None
        self.training_since: float | None = None
        self._last_wall: float | None = None

    def step(self, step: int, seen: float, wall: float | None = None) -> bool:
        """A step was seen at `seen` (monotonic), stamped `wall` by the trainer; True when it is a
        new one (a hang episode, if any, is over)."""
        if self.last_step is not None and step <= self.last_step:
            return False
        if wall is not None and self._last_wall is not None:
            gap = wall - self._last_wall
            if 0 < gap < MAX_WALL_GAP_S:  # a backwards or days-long jump of the trainer's clock is no step time
                self.gaps.append(gap / max(1, step - (self.last_step or 0)))
        elif wall is None and self.last_seen is not None and seen > self.last_seen:
            self.gaps.append(seen - self.last_seen)
        self._last_wall = wall
        self.last_step = step
        self.last_seen = seen
        del self.gaps[:-64]
        return True

    def median_step_s(self) -> float | None:
        return statistics.median(self.gaps) if self.gaps else None

    def limit_s(self) -> float | None:
        """Seconds of silence that make a hang now; None while there is nothing to measure."""
        median = self.median_step_s()
        if median is not None:
            return max(self.limits.factor * median, self.limits.floor_s)
        if self.training_since is not None:
            return self.limits.first_step_s
        return None

    def silent_for(self, now: float) -> float | None:
        since = self.last_seen if self.last_seen is not None else self.training_since
        return None if since is None else now - since


# -- the stacks ----------------------------------------------------------------------------


def py_spy() -> str | None:
    """py-spy beside this interpreter (a venv) or on PATH."""
    here = Path(sys.executable).parent / "py-spy"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("py-spy")


@dataclass
class Dump:
    pid: int
    text: str
    """py-spy's readable dump, or the one line saying why there is none"""
    threads: list[dict[str, Any]]
    """py-spy's --json: threads with frames, innermost first"""
    error: str | None = None


DUMP_TIMEOUT_S = 10.0
"""How long one py-spy dump may take: a py-spy that never answers is killed then, and named."""
YAMA = Path("/proc/sys/kernel/yama/ptrace_scope")


def dump_stack(pid: int, *, timeout_s: float = DUMP_TIMEOUT_S,
               on_start: Callable[[subprocess.Popen[str]], None] | None = None) -> Dump:
    """One process's Python stacks through py-spy; never raises, and never waits past `timeout_s`
    (the py-spy is killed then). `on_start` hears the py-spy process, so an owner that is leaving
    can kill it sooner."""
    exe = py_spy()
    if exe is None:
        return Dump(pid, "", [], "py-spy is not installed — pip install py-spy to record stacks of a hung run")
    try:
        proc = subprocess.Popen([exe, "dump", "--json", "--pid", str(pid)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return Dump(pid, "", [], f"py-spy could not start: {exc.strerror or exc}")
    if on_start is not None:
        on_start(proc)
    try:
        out, err_text = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Dump(pid, "", [], f"py-spy did not answer within {timeout_s:.0f}s for pid {pid} (it was stopped)")
    if proc.returncode != 0:
        why = py_spy_error(err_text or out) or (f"exit code {proc.returncode}" if proc.returncode > 0
                                                else f"py-spy was stopped (signal {-proc.returncode})")
        low = (err_text or "").lower()
        if "permission" in low or "not permitted" in low or "ptrace" in low:
            why = ptrace_refusal(pid, why)
        return Dump(pid, "", [], why)
    try:
        threads = json.loads(out)
    except ValueError:
        return Dump(pid, out, [], None)
    return Dump(pid, format_threads(pid, threads), threads if isinstance(threads, list) else [])


CAP_SYS_PTRACE = 19
"""The capability's bit in /proc/PID/status's CapEff."""


def _has_cap_sys_ptrace() -> bool | None:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            caps = next((line.split()[1] for line in fh if line.startswith("CapEff:")), None)
    except OSError:
        return None
    return None if caps is None else bool(int(caps, 16) >> CAP_SYS_PTRACE & 1)


def _yama_scope() -> int | None:
    try:
        return int(YAMA.read_text().strip())
    except (OSError, ValueError):
        return None


def ptrace_refusal(pid: int, detail: str) -> str:
    """Why py-spy may not read `pid`, as it is here, with the fix that applies: another user's
    process; Yama's ptrace_scope (3: none at all until a reboot; 2: only with CAP_SYS_PTRACE; 1:
    only a parent, and py-spy is not the trainer's); a container that runs as root without
    CAP_SYS_PTRACE; or refused with the capability (a seccomp profile, another user namespace)."""
    root = os.geteuid() == 0
    cap = _has_cap_sys_ptrace()
    scope = _yama_scope()
    try:
        other = os.stat(f"/proc/{pid}").st_uid != os.geteuid() and not root
    except OSError:
        other = False
    docker = "docker run --cap-add SYS_PTRACE; Kubernetes: securityContext.capabilities.add [SYS_PTRACE]"
    if other:
        reason, fix = f"pid {pid} belongs to another user", "run cockpit as that user"
    elif scope == 3:
        reason, fix = ("Yama's kernel.yama.ptrace_scope is 3 (no process may be traced)",
                       "only a reboot lowers it: set kernel.yama.ptrace_scope=1 in /etc/sysctl.d and reboot")
    elif cap is False and root:
        reason = ("running as root without CAP_SYS_PTRACE (a container drops it)"
                  + (f"; Yama's ptrace_scope is {scope}" if scope else ""))
        fix = f"give the container the capability ({docker})"
    elif cap is False and scope == 2:
        reason, fix = ("Yama's kernel.yama.ptrace_scope is 2 (only with CAP_SYS_PTRACE)",
                       f"`sudo sysctl kernel.yama.ptrace_scope=1`, or run with CAP_SYS_PTRACE ({docker})")
    elif cap is False and scope == 1:
        reason = "Yama's kernel.yama.ptrace_scope is 1 (only a process's parent may trace it, and py-spy is not)"
        fix = "`sudo sysctl kernel.yama.ptrace_scope=0` (until reboot), or run cockpit as root or with CAP_SYS_PTRACE"
    elif cap:
        reason = "refused although this process has CAP_SYS_PTRACE (a seccomp profile, or another user namespace)"
        fix = "docker: --security-opt seccomp=unconfined, or run cockpit in the trainer's own namespace"
    else:
        reason, fix = "the system refused it", f"run cockpit as root or with CAP_SYS_PTRACE ({docker})"
    return f"py-spy may not read pid {pid}: {reason} ({detail}) — {fix}"


def py_spy_error(text: str) -> str | None:
    """py-spy's own error line ("Error: ...", with its "Reason: ..." when there is one), not the
    Rust backtrace that may follow it ("9: main")."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    error = next((line for line in lines if line.lower().startswith("error")), None)
    if error is None:
        return lines[0][:300] if lines and not lines[0][:1].isdigit() else None
    reason = None
    for i, line in enumerate(lines):
        if line.lower().startswith(("reason", "caused by")):
            said = line.split(":", 1)[1].strip() if ":" in line else ""
            if not said and i + 1 < len(lines) and not lines[i + 1].lower().startswith("stack backtrace"):
                said = re.sub(r"^\d+:\s*", "", lines[i + 1])  # "Caused by:" then "0: its cause", a line down
            if said:
                reason = f"{line.split(':', 1)[0].strip()}: {said}"
                break
    return (f"{error} ({reason})" if reason else error)[:300]


def format_threads(pid: int, threads: Any) -> str:
    """py-spy's JSON as the text `py-spy dump` prints: a thread a block, innermost frame first."""
    lines = [f"Process {pid}"]
    for th in threads if isinstance(threads, list) else []:
        state = "active" if th.get("active") else "idle"
        lines.append(f"\nThread {th.get('os_thread_id') or th.get('thread_id')} ({state}): "
                     f"\"{th.get('thread_name') or ''}\"")
        for fr in th.get("frames") or []:
            lines.append(f"    {fr.get('name')} ({fr.get('short_filename') or fr.get('filename')}:{fr.get('line')})")
    return "\n".join(lines) + "\n"


# Where a stack waits: the first rule (innermost frame outwards) whose needle is in a frame's file
# or function decides. Order matters: a callback that saves waits in saving, not in the callback.
_WAITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a collective (NCCL/gloo: another rank is not there)",
     ("torch/distributed/distributed_c10d", "all_reduce", "all_gather", "broadcast", "barrier",
      "reduce_scatter")),
    ("the data loader", ("torch/utils/data", "dataloader", "_next_data", "datasets/arrow_dataset")),
    ("generation", ("generate", "vllm", "_generate_and_score")),
    ("saving a checkpoint", ("_save_checkpoint", "save_pretrained", "safetensors", "save_model")),
    ("the evaluation loop", ("evaluation_loop", "evaluate")),
    ("a callback", ("trainer_callback.py",)),
    ("the optimizer step", ("optimizer", "optim/")),
    ("the forward/backward pass", ("torch/nn/modules", "autograd", "backward")),
)


def _frame_text(fr: dict[str, Any]) -> str:
    return f"{fr.get('filename') or ''} {fr.get('name') or ''}".lower()


def where_it_waits(threads: list[dict[str, Any]]) -> str:
    """One phrase for a process: where its main thread waits, and the innermost frame of its own."""
    main = next((t for t in threads if t.get("thread_name") == "MainThread"), threads[0] if threads else None)
    if not main or not main.get("frames"):
        return "no Python frames"
    frames = main["frames"]
    place = None
    for label, needles in _WAITS:
        if any(any(n in _frame_text(fr) for n in needles) for fr in frames):
            place = label
            break
    inner = frames[0]
    if place == "a callback":  # name the callback: the frame CallbackHandler.call_event called
        for i, fr in enumerate(frames):
            if str(fr.get("name") or "").endswith("call_event") and i > 0:
                inner = frames[i - 1]
                place = f"a callback ({_at(inner)})"
                break
    top = frames[0]
    if place is None:
        return _at(top)
    return place if top is inner and place.startswith("a callback") else f"{place}, in {_at(top)}"


def _at(fr: dict[str, Any]) -> str:
    """`Class.method at file.py:12`: a qualified name's last two parts (no `main.<locals>.`)."""
    name = ".".join(str(fr.get("name") or "?").split(".")[-2:])
    return f"{name} at {fr.get('short_filename') or fr.get('filename')}:{fr.get('line')}"


def record_stacks(run_dir: Path, pids: list[int], step: int | None, *,
                  on_start: Callable[[subprocess.Popen[str]], None] | None = None
                  ) -> tuple[Path | None, list[str], list[str]]:
    """Dump every pid; write the stacks to hangs/step-N-T.txt. (file or None, where each process
    waits, errors)."""
    dumps = [dump_stack(pid, on_start=on_start) for pid in pids]
    errors = [d.error for d in dumps if d.error]
    waits = [f"pid {d.pid}: {where_it_waits(d.threads)}" for d in dumps if d.threads]
    texts = [d.text for d in dumps if d.text]
    if not texts:
        return None, waits, errors
    folder = run_dir / HANGS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"step-{step if step is not None else 0}-{int(time.time())}.txt"
    body = "\n".join(texts)
    if errors:
        body += "\n" + "\n".join(f"# {e}" for e in errors) + "\n"
    write_atomic(path, body)  # never through a link put in its place
    return path, waits, errors


def hang_finding(*, step: int | None, silent_s: float, limit_s: float, median_s: float | None,
                 stacks: Path | None, waits: list[str], errors: list[str]) -> Finding:
    """The `hang` finding: how long it has been quiet, against what, and where it waits."""
    at = f"step {step}" if step is not None else "step 0"
    why = (f"{silent_s:.0f}s without a step (the median step takes {median_s:.1f}s; the limit is {limit_s:.0f}s)"
           if median_s is not None else f"{silent_s:.0f}s without a first step")
    where = "; ".join(waits) if waits else (errors[0] if errors else "no stacks")
    evidence: list[dict[str, Any]] = []
    if stacks is not None:
        evidence.append({"type": "file", "path": str(stacks), "what": "every process's Python stack (py-spy dump)",
                         "waits": waits})
    for e in errors:
        evidence.append({"type": "note", "text": e})
    return Finding(
        kind="hang", steps=(step or 0, step or 0), severity="warning",
        summary=f"the run is alive but stuck at {at}: {why}; it waits in {where}",
        fix="look at the stacks: a callback or reward that blocks, a rank that died (a collective waits for "
            "it), a data loader worker stuck on I/O; stop it with `cockpit stop --force RUN`",
        evidence=evidence)
