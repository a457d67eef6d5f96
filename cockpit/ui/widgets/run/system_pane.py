"""The System tab: CPU and memory of the run's processes and a row per GPU, each with its newest
value (in GiB, CPU as a share of all the machine's cores) and a sparkline over the run."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from textual.content import Content
from textual.widgets import Static

from cockpit.formats import fmt_duration
from cockpit.metrics.rundata import RunData
from cockpit.ui.text import markup, num

BARS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40
"""Columns of a sparkline (the run's samples are bucketed into them)."""
SHOWN = frozenset({"cpu_percent", "cpus", "rss_mb", "ram_used_percent", "ram_total_mb", "processes", "gpus"})
"""The keys given their own rows; any other is listed by its name."""
LABEL_W = 13
VALUE_W = 26


def sparkline(values: Sequence[float | None], width: int = SPARK_WIDTH, *, top: float | None = None) -> str:
    """The values as block characters, bucketed to `width` (each bucket its highest value, so a
    peak is not averaged away), scaled from 0 to `top` for a share (per cent), else from the
    lowest value to the highest, so memory that creeps from 3.0 to 3.7 GiB shows it."""
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if not finite or width <= 0:
        return ""
    if len(values) > width:
        per = len(values) / width
        buckets = [values[int(i * per):max(int((i + 1) * per), int(i * per) + 1)] for i in range(width)]
        values = [max((v for v in b if v is not None), default=None) for b in buckets]
    low, high = (0.0, top) if top else (min(finite), max(finite))
    span = high - low
    out = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(" ")
        elif span <= 0:
            out.append(BARS[len(BARS) // 2])  # flat: a level line, not an empty or a full one
        else:
            out.append(BARS[min(len(BARS) - 1, max(0, int((v - low) / span * (len(BARS) - 1) + 0.5)))])
    return "".join(out)


def gib(mb: Any) -> str:
    return f"{mb / 1024:.1f} GiB" if isinstance(mb, (int, float)) else "?"


def no_samples(data: RunData) -> str:
    """Why the tab is empty, in the run's own terms: a trainer_state.json never holds samples, an
    ended run will not get one, a live one soon will."""
    if data.run_dir is None:
        return ("a trainer_state.json holds no system samples: the supervisor samples CPU, memory and "
                "GPUs only for runs the cockpit watches")
    if data.ended is not None:
        return "no system samples: the run ended before its supervisor wrote one"
    return "no system samples yet — the supervisor writes one every few seconds while the run is alive"


class SystemPane(Static):
    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        key = (id(data), data.system_t, len(data.system_history), self.size.width)
        if key == getattr(self, "_key", None):
            return
        self._key = key
        sys = data.system
        if not sys:
            self.update(no_samples(data))
            return
        history = list(data.system_history)
        width = max(8, min(SPARK_WIDTH, (self.size.width or 100) - LABEL_W - VALUE_W - 6))

        def series(key: str) -> list[float | None]:
            return [v.get(key) if isinstance(v.get(key), (int, float)) else None for _, v in history]

        age = fmt_duration(time.time() - data.system_t) if data.system_t else "?"
        span = fmt_duration(history[-1][0] - history[0][0]) if len(history) > 1 else "one sample"
        lines = [markup("[b]run processes[/b]  [dim]newest sampled $age ago · sparklines over $span "
                        "($n samples)[/]", age=age, span=span, n=len(history))]

        def row(label: str, value: str, spark: str = "") -> None:
            lines.append(markup("  [b]$label[/b]$value  [$accent]$spark[/]", label=f"{label:<{LABEL_W}}",
                                value=f"{value:<{VALUE_W}}", spark=spark))

        cpus = sys.get("cpus")
        cpu = sys.get("cpu_percent")
        if isinstance(cpu, (int, float)):
            if isinstance(cpus, int) and cpus > 0:
                share = [c / cpus if c is not None else None for c in series("cpu_percent")]
                row("CPU", f"{cpu / cpus:.0f}% of {cpus} cores ({cpu / 100:.1f} busy)", sparkline(share, width,
                                                                                               top=100))
            else:  # an older supervisor did not say how many cores: per cent of one core
                row("CPU", f"{num(cpu)}% of one core", sparkline(series("cpu_percent"), width))
        if isinstance(sys.get("rss_mb"), (int, float)):
            row("memory", f"{gib(sys['rss_mb'])} resident", sparkline(series("rss_mb"), width))
        if isinstance(sys.get("ram_used_percent"), (int, float)):
            row("machine RAM", f"{num(sys['ram_used_percent'])}% of {gib(sys.get('ram_total_mb'))}",
                sparkline(series("ram_used_percent"), width, top=100))
        if sys.get("processes") is not None:
            row("processes", str(sys["processes"]))
        for k, v in sys.items():  # what a newer supervisor adds shows up, as it is
            if k not in SHOWN:
                row(str(k), num(v) if isinstance(v, (int, float)) else str(v),
                    sparkline(series(k), width) if isinstance(v, (int, float)) else "")
        gpus = sys.get("gpus")
        if isinstance(gpus, list) and gpus:
            lines.append(markup("[b]GPUs[/b]"))
            for g in gpus:
                if not isinstance(g, dict):
                    continue
                i = g.get("index", "?")
                util = [next((x.get("util_percent") for x in (v.get("gpus") or []) if isinstance(x, dict)
                              and x.get("index") == i), None) for _, v in history]
                mem = f"{gib(g.get('mem_used_mb'))} of {gib(g.get('mem_total_mb'))}"
                row(f"GPU {i}", f"{num(g.get('util_percent'))}% · {mem}", sparkline(util, width, top=100))
                extra = [f"{lab} {num(g.get(k))}{unit}" for k, lab, unit in
                         (("temp_c", "temp", "°C"), ("power_w", "power", " W")) if k in g]
                if extra:
                    lines.append(markup("  $pad[dim]$extra[/]", pad=" " * LABEL_W, extra="  ".join(extra)))
        else:
            lines.append(markup("[dim]no GPU figures (no GPU, or nvidia-ml-py not installed)[/]"))
        self.update(Content("\n").join(lines))
