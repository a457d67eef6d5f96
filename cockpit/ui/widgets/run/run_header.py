"""The live/replay header: what run this is and where it stands."""

from __future__ import annotations

import time

from textual.content import Content
from textual.widgets import Static

from cockpit.formats import fmt_duration
from cockpit.metrics.rundata import RunData
from cockpit.run.folder import LIVE_STATES
from cockpit.text import one_line
from cockpit.ui.colors import STATE_STYLES
from cockpit.ui.text import fold, markup

SEP = markup(" [dim]·[/] ")
"""Between facts: `trainer grpo · step 291/1500 · epoch 4.55` reads as three facts, not one.
Values are bold and labels dim, so the space between them is a run of its own: a space that
starts a run is lost by some renderers (SVG screenshots showed `trainergrpo`)."""
BAR_MAX = 20
BAR_MIN = 6


ROUGH_FOR_S = 120.0
"""The ETA is said to be rough for this long after training starts: the first minutes' rate
leaves out what comes later (the first eval, the first save, warm-up's end)."""
ROUGH_BEFORE = 0.05
"""...and before this part of the steps is trained."""


def eta_is_rough(data: RunData, now: float) -> bool:
    """Whether the ETA rests on too little of the run to be taken at its word (seen: 3x short)."""
    if data.started is not None and now - data.started < ROUGH_FOR_S:
        return True
    return bool(isinstance(data.step, int) and data.max_steps and data.step < ROUGH_BEFORE * data.max_steps)


class RunHeader(Static):
    """Two lines: name, trainer, state, phase; then step/max, epoch, speed, ETA and view settings.

    ETA shows only while the run is live: a replay, or a run that has ended, is not going to
    finish at any time, and a countdown there would be a made-up number.
    """

    def show(self, data: RunData, *, state: str | None, extra: str = "", title: str | None = None,
             trainer: str | None = None) -> None:
        """`extra` is plain text (the view settings), shown dim after the facts. Every value
        (run names, trainer, phase...) is filled into the markup literally (`ui.text.markup`)."""
        state = state or data.state or "?"
        style = STATE_STYLES.get(state, "$foreground")
        phase = data.phase or ""  # none known (a replay of a trainer_state.json): not shown
        detail = ""
        training_over = data.phase == "done" or state == "stopping"
        if state in LIVE_STATES and data.phase == "done":
            phase = "ending"  # the trainer is done and its process is closing: not "running · done"
        elif data.phase_detail and phase not in ("training", "done"):
            detail = f" ({data.phase_detail})"
        trainer = trainer or data.trainer
        width = (self.size.width or 100) - 2  # 2: the header's padding
        name = one_line(title or data.label)  # the header's first line is one line, whatever a name holds

        def first_line(name: str, detail: str) -> Content:
            return SEP.join([
                markup("[b]$v[/b]", v=name),
                markup("[dim]trainer[/] [b]$v[/b]", v=trainer) if trainer
                else markup("[dim]unknown trainer[/]"),
                markup(f"[dim]state[/] [b {style}]$v[/]", v=state),
                *([markup("[dim]phase[/] [b]$v[/b]", v=phase + detail)] if phase else []),
            ])

        # The phase is read whole: the run's name gives way first (to 20 cells), then the
        # phase's detail (`importing (torch, transformers, …)`), then the name again.
        line1 = first_line(name, detail)
        over = line1.cell_length - width
        if over > 0:
            line1 = first_line(fold(name, max(20, len(name) - over)), detail)
        if line1.cell_length > width and detail:
            line1 = first_line(name, "")
            over = line1.cell_length - width
            if over > 0:
                line1 = first_line(fold(name, max(8, len(name) - over)), "")

        facts: list[Content] = []

        def fact(label: str, value: str) -> None:
            facts.append(markup("[dim]$label[/] [b]$v[/b]", label=label, v=value))

        step = str(data.step) if data.step is not None else "-"
        fact("step", f"{step}/{data.max_steps or '?'}")
        if isinstance(data.epoch, (int, float)):
            fact("epoch", f"{data.epoch:.2f}")
        if isinstance(data.steps_per_s, (int, float)):
            fact("steps/s", f"{data.steps_per_s:.2f}")
        if state in LIVE_STATES and not training_over:  # no countdown for a run that is ending
            now = time.time()
            eta = data.eta_now(now)
            # Past its countdown before the last step: say so until the next progress line.
            shown = fmt_duration(eta) if eta is not None else "…" if data.eta_s is not None else "-"
            if eta is not None and eta_is_rough(data, now):
                shown = f"~{shown} (rough)"
            fact("ETA", shown)
        tail = markup("  [dim]│ $v[/]", v=extra) if extra else Content("")
        # The progress bar gets the room the facts leave.
        used = sum(f.cell_length for f in facts) + SEP.cell_length * (len(facts) - 1) + tail.cell_length
        room = width - used
        if isinstance(data.step, int) and data.max_steps and room >= BAR_MIN + 6:
            frac = max(0.0, min(1.0, data.step / data.max_steps))
            width = min(BAR_MAX, room - 6)
            filled = int(frac * width)
            facts[0] = facts[0] + markup(" [$primary]$a[/][dim]$b[/] [b]$c[/b]", a="█" * filled,
                                         b="░" * (width - filled), c=f"{frac:.0%}")
        line2 = SEP.join(facts) + tail
        text = Content("\n").join([line1, line2])
        if text.markup != getattr(self, "_last_markup", None):
            self._last_markup = text.markup
            # Two rows, the screen's width (app.tcss): new text cannot change the header's size,
            # and a layout would re-render every plot on the screen at each new step.
            self.update(text, layout=False)
