"""The loss mask, before launch: a few training rows as the chat template renders them, with the
tokens the loss trains on marked, and what `max_length` cuts. It answers "is `assistant_only_loss`
doing what I think?". The measuring runs TRL's own preparation in a subprocess
(`cockpit.findings.sft_data.probe`), on a worker; the screen only shows the answer."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.config.presets import Preset
from cockpit.errors import CockpitError, failure
from cockpit.ui.text import literal, printable
from cockpit.ui.widgets.waiting import Waiting

ROWS = 3
TRAINED_STYLE = "bold reverse"
"""How a trained token looks: reverse video reads on every theme, in colour or not."""


def marked_row(row: dict[str, Any]) -> Content:
    """One row's text, the trained tokens in TRAINED_STYLE (the text itself is never markup)."""
    content = Content("")
    tokens = row.get("tokens") or []
    a, b = (row.get("kept") or [0, len(tokens)])[:2]
    for j, (text, trained) in enumerate(tokens):
        if j == b or (j == a and a > 0):
            content += Content(" ✂ max_length ").stylize("italic")
        # Line breaks stay line breaks; other control characters show as printable() writes them.
        piece = Content("\n".join(printable(part) for part in str(text).split("\n")))
        content += piece.stylize(TRAINED_STYLE) if trained else piece
    return content


class LossMaskScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="loss_mask.close")]

    def __init__(self, preset: Preset, registry: Any = None, *, rows: int = ROWS) -> None:
        super().__init__()
        self.preset = preset.copy()
        self.registry = registry
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog dialog-tall", id="loss-mask"):
            yield Static(literal("The loss mask: trained tokens in reverse video"), classes="dialog-question")
            yield Waiting("", id="loss-mask-summary")
            yield VerticalScroll(id="loss-mask-rows")

    def on_mount(self) -> None:
        self.query_one("#loss-mask-summary", Waiting).wait("measuring the rows with TRL's own preparation",
                                                            "escape closes")
        self._measure()

    @work(thread=True, exclusive=True, group="loss-mask", exit_on_error=False)
    def _measure(self) -> None:
        from cockpit.config.validate import validate
        from cockpit.findings import sft_data

        try:
            plan = validate(self.preset, self.registry)
            if not sft_data.is_sft(plan.spec.name):
                raise CockpitError(f"the loss mask is for SFT; {plan.spec.name} builds its own batches")
            request = sft_data.request_for(plan.preset.trl, plan.preset.cockpit,
                                           plan.spec.to_json(with_fields=False), rows=self.rows)
            probe = sft_data.probe(request)
        except CockpitError as exc:
            self.app.call_from_thread(self._show_error, str(exc).splitlines()[0] if str(exc) else "cannot measure")
            return
        except Exception as exc:  # noqa: BLE001 - the screen says it; it never dies on it
            self.app.call_from_thread(self._show_error, failure(exc, "cannot measure the rows"))
            return
        self.app.call_from_thread(self._show, probe)

    def _show_error(self, message: str) -> None:
        self.query_one("#loss-mask-summary", Static).update(literal(message))

    def _show(self, probe: Any) -> None:
        from cockpit.findings import sft_data

        lines = [sft_data.mask_summary(probe), sft_data.truncation_line(probe)]
        packing = sft_data.packing_line(probe)
        if packing:
            lines.append(packing)
        self.query_one("#loss-mask-summary", Static).update(literal("\n".join(lines)))
        box = self.query_one("#loss-mask-rows", VerticalScroll)
        for row in probe.rows:
            trained = sum(1 for _, t in row.get("tokens") or [] if t)
            box.mount(Static(literal(f"row {row['index']}: {trained} of {row['length']} tokens trained"),
                             classes="dialog-detail"))
            box.mount(Static(marked_row(row), classes="loss-mask-row"))

    def action_close(self) -> None:
        self.dismiss(None)
