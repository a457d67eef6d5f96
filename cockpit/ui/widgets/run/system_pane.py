"""The newest `system` record: CPU/RAM of the run's processes, per-GPU figures."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from cockpit.formats import fmt_duration
from cockpit.metrics.rundata import RunData
from cockpit.ui.text import markup, num

_LABELS = {"cpu_percent": ("CPU", "%"), "rss_mb": ("RSS", " MB"), "processes": ("processes", ""),
           "ram_used_percent": ("RAM used", "%"), "ram_total_mb": ("RAM total", " MB")}
_GPU = (("util_percent", "util", "%"), ("mem_used_mb", "mem", " MB"), ("mem_total_mb", "of", " MB"),
        ("temp_c", "temp", "°C"), ("power_w", "power", " W"))


class SystemPane(Static):
    def show(self, data: RunData | None) -> None:
        if data is None:
            return
        key = (id(data), data.system_t)
        if key == getattr(self, "_key", None):
            return
        self._key = key
        sys = data.system
        if not sys:
            self.update("no system samples yet — the supervisor writes one every few seconds "
                        "while the run is alive (replays of trainer_state.json have none)")
            return
        age = fmt_duration(time.time() - data.system_t) if data.system_t else "?"
        lines = [markup(f"[b]run processes[/b]  [dim](sampled {age} ago)[/]")]
        for k, v in sys.items():
            if k == "gpus":
                continue
            label, unit = _LABELS.get(k, (k, ""))
            lines.append(markup("  $line", line=f"{label:<14} {num(v)}{unit}"))  # keys are data
        gpus = sys.get("gpus")
        if isinstance(gpus, list) and gpus:
            lines.append(markup("[b]GPUs[/b]"))
            for g in gpus:
                if not isinstance(g, dict):
                    continue
                parts = [f"{lab} {num(g.get(k))}{unit}" for k, lab, unit in _GPU if k in g]
                lines.append(markup("  $line", line=f"GPU {g.get('index', '?')}: " + "  ".join(parts)))
        else:
            lines.append(markup("[dim]no GPU figures (no GPU, or nvidia-ml-py not installed)[/]"))
        self.update(Content("\n").join(lines))
