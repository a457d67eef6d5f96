"""The live/replay header: what run this is and where it stands."""

from __future__ import annotations

import time

from textual.markup import escape
from textual.widgets import Static

from cockpit.core.runfolder import LIVE_STATES
from cockpit.core.watch import fmt_duration
from cockpit.ui.rundata import RunData

_STATE_STYLE = {
    "running": "$success", "starting": "$accent", "stopping": "$warning", "finished": "$primary",
    "stopped": "$warning", "failed": "$error", "killed": "$error", "replay": "$secondary",
}
SEP = " [dim]·[/] "
"""Between facts: `trainer grpo · step 291/1500 · epoch 4.55` reads as three facts, not one.
Values are bold and labels dim, so the space between them is a run of its own: a space that
starts a run is lost by some renderers (SVG screenshots showed `trainergrpo`)."""
BAR_MAX = 20
BAR_MIN = 6


class RunHeader(Static):
    """Two lines: name, trainer, state, phase; then step/max, epoch, speed, ETA and view settings.

    ETA shows only while the run is live: a replay, or a run that has ended, is not going to
    finish at any time, and a countdown there would be a made-up number.
    """

    def show(self, data: RunData, *, state: str | None, extra: str = "", title: str | None = None,
             trainer: str | None = None) -> None:
        """`extra` is plain text (the view settings), shown dim after the facts."""
        state = state or data.state or "?"
        style = _STATE_STYLE.get(state, "$foreground")
        phase = data.phase or "-"
        if data.phase_detail and phase not in ("training", "done"):
            phase += f" ({data.phase_detail})"
        trainer = trainer or data.trainer
        line1 = SEP.join([
            f"[b]{escape(title or data.label)}[/b]",
            f"[dim]trainer[/] [b]{escape(trainer)}[/b]" if trainer else "[dim]unknown trainer[/]",
            f"[dim]state[/] [b {style}]{escape(state)}[/]",
            f"[dim]phase[/] [b]{escape(phase)}[/b]",
        ])

        facts: list[tuple[str, int]] = []  # (markup, plain width): the bar gets what is left

        def fact(label: str, value: str) -> None:
            facts.append((f"[dim]{label}[/] [b]{escape(value)}[/b]", len(label) + 1 + len(value)))

        step = str(data.step) if data.step is not None else "-"
        fact("step", f"{step}/{data.max_steps or '?'}")
        if isinstance(data.epoch, (int, float)):
            fact("epoch", f"{data.epoch:.2f}")
        if isinstance(data.steps_per_s, (int, float)):
            fact("steps/s", f"{data.steps_per_s:.2f}")
        if state in LIVE_STATES:
            fact("ETA", fmt_duration(data.eta_now(time.time())) if data.eta_s is not None else "-")
        tail = f"  [dim]│ {escape(extra)}[/]" if extra else ""
        used = sum(w for _, w in facts) + 3 * (len(facts) - 1) + (len(extra) + 4 if extra else 0)
        room = (self.size.width or 100) - 2 - used  # 2: the header's padding
        parts = [m for m, _ in facts]
        if isinstance(data.step, int) and data.max_steps and room >= BAR_MIN + 6:
            frac = max(0.0, min(1.0, data.step / data.max_steps))
            width = min(BAR_MAX, room - 6)
            filled = int(frac * width)
            parts[0] += (f" [$primary]{'█' * filled}[/][dim]{'░' * (width - filled)}[/]"
                         f" [b]{frac:.0%}[/b]")
        line2 = SEP.join(parts) + tail
        text = f"{line1}\n{line2}"
        if text != getattr(self, "_last_text", None):
            self._last_text = text
            self.update(text)
