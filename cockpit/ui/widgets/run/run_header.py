"""The live/replay header: what run this is and where it stands."""

from __future__ import annotations

import time

from textual.markup import escape
from textual.widgets import Static

from cockpit.core.watch import fmt_duration
from cockpit.ui.rundata import RunData

_STATE_STYLE = {
    "running": "$success", "starting": "$accent", "stopping": "$warning", "finished": "$primary",
    "stopped": "$warning", "failed": "$error", "killed": "$error", "replay": "$secondary",
}


class RunHeader(Static):
    """Two lines: name, trainer, state, phase; then step/max, epoch, speed, ETA and view settings."""

    def show(self, data: RunData, *, state: str | None, extra: str = "", title: str | None = None,
             trainer: str | None = None) -> None:
        state = state or data.state or "?"
        style = _STATE_STYLE.get(state, "$foreground")
        phase = data.phase or "-"
        if data.phase_detail and phase not in ("training", "done"):
            phase += f" ({data.phase_detail})"
        line1 = (f"[b]{escape(title or data.label)}[/b]  [dim]trainer[/] {escape(trainer or data.trainer or '?')}"
                 f"  [dim]state[/] [{style}]{escape(state)}[/]  [dim]phase[/] {escape(phase)}")
        step = data.step if data.step is not None else "-"
        total = data.max_steps or "?"
        bar = ""
        if isinstance(data.step, int) and data.max_steps:
            frac = max(0.0, min(1.0, data.step / data.max_steps))
            filled = int(frac * 20)
            bar = f" [$primary]{'█' * filled}[/][dim]{'░' * (20 - filled)}[/] {frac:4.0%}"
        epoch = f"{data.epoch:.2f}" if isinstance(data.epoch, (int, float)) else "-"
        speed = f"{data.steps_per_s:.2f}" if isinstance(data.steps_per_s, (int, float)) else "-"
        eta = fmt_duration(data.eta_now(time.time())) if data.eta_s is not None else "-"
        line2 = (f"[dim]step[/] {step}/{total}{bar}  [dim]epoch[/] {epoch}  [dim]steps/s[/] {speed}"
                 f"  [dim]ETA[/] {eta}")
        if extra:
            line2 += f"  [dim]│[/] {extra}"
        text = f"{line1}\n{line2}"
        if text != getattr(self, "_last_text", None):
            self._last_text = text
            self.update(text)
