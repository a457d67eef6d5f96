"""Add an alert rule to a running run: "when this metric goes above / below a threshold (for N
logged steps), do this". Dismissed with the rule as a mapping written like `cockpit.alerts`
(`{metric: loss, above: 5.0, for: 3, do: [notify]}`), or None."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from cockpit.ui.text import literal, num

ACTIONS = (("notify (cockpit.notify targets)", "notify"), ("journal only (a line and the bell)", "journal"),
           ("stop and save a checkpoint", "stop_save"))
NO_TARGETS = "notify (none set: add cockpit.notify first)"
"""What `then` offers: alert actions, named as the rule syntax names them
(`cockpit.alerts.rules.ACTIONS`); the supervisor turns `stop_save` into the run folder's
`Request.STOP_SAVE`, which is a different name space."""


def when_checked(live: bool) -> str:
    """When the new rule starts to count, said alike by the dialog and by the note after it."""
    if live:
        return "the supervisor checks it from its next poll, with nobody attached"
    return "the run is not running: the rule is checked once it is resumed"


def rule_from(metric: str, condition: str, threshold: str, steps: str, action: str) -> dict[str, Any]:
    """The rule the answers add up to; ValueError naming the answer to fix."""
    try:
        value = float(threshold)
    except ValueError:
        raise ValueError(f"threshold {threshold!r}: give a number, e.g. 2.5 or 1e-3") from None
    try:
        count = int(steps or "1")
    except ValueError:
        raise ValueError(f"for {steps!r}: give a whole number of logged steps, e.g. 3") from None
    if count < 1:
        raise ValueError("for: at least 1 logged step")
    item: dict[str, Any] = {"metric": metric, condition: value, "do": [action]}
    if count > 1:
        item["for"] = count
    return item


class AddRuleScreen(ModalScreen["dict[str, Any] | None"]):
    CSS_PATH = "alerts.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="add_rule.cancel")]

    def __init__(self, metrics: list[str], latest: dict[str, float | None], *,
                 notify_targets: list[str] | None = None, live: bool = True) -> None:
        super().__init__()
        self.metrics = metrics
        self.latest = latest
        self.notify_targets = list(notify_targets or [])
        """Where `notify` would send (none: it is offered last and not chosen by default)."""
        self.live = live

    def compose(self) -> ComposeResult:
        first = self.metrics[0]
        with Vertical(classes="dialog", id="add-rule"):
            yield Static("Alert when a metric crosses a threshold", classes="dialog-question")
            with Horizontal(classes="add-rule-row"):
                yield Label("metric")
                yield Select([(m, m) for m in self.metrics], value=first, allow_blank=False,
                             compact=True, id="rule-metric")
            with Horizontal(classes="add-rule-row"):
                yield Label("goes")
                yield Select([("above", "above"), ("below", "below")], value="above",
                             allow_blank=False, compact=True, id="rule-condition")
            with Horizontal(classes="add-rule-row"):
                yield Label("threshold")
                yield Input(self._default_threshold(first), compact=True, id="rule-threshold")
            with Horizontal(classes="add-rule-row"):
                yield Label("for (logged steps)")
                yield Input("1", compact=True, id="rule-for")
            with Horizontal(classes="add-rule-row"):
                yield Label("then")
                if self.notify_targets:
                    actions, default = ACTIONS, "notify"
                else:  # a rule that notifies nobody fails when it fires ("no notify targets")
                    actions, default = (*ACTIONS[1:], (NO_TARGETS, "notify")), "journal"
                yield Select(actions, value=default, allow_blank=False, compact=True, id="rule-action")
            yield Static(self._now(first), classes="dialog-detail", id="rule-hint")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Add rule", variant="primary", id="add")
                yield Button("Cancel", id="cancel")

    def _default_threshold(self, metric: str) -> str:
        value = self.latest.get(metric)
        return num(value) if value is not None else ""

    def _now(self, metric: str) -> Content:
        value = self.latest.get(metric)
        return literal(f"{metric} is {num(value)} now · {when_checked(self.live)} · Enter adds · "
                       "Escape cancels")

    def on_mount(self) -> None:
        self.query_one("#rule-threshold", Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "rule-metric" and isinstance(event.value, str):
            self.query_one("#rule-threshold", Input).value = self._default_threshold(event.value)
            self.query_one("#rule-hint", Static).update(self._now(event.value))

    def on_input_submitted(self) -> None:
        self._add()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "add":
            self._add()
        else:
            self.dismiss(None)

    def _add(self) -> None:
        def value(selector: str) -> str:
            return str(self.query_one(selector, Select).value)

        try:
            item = rule_from(value("#rule-metric"), value("#rule-condition"),
                             self.query_one("#rule-threshold", Input).value.strip(),
                             self.query_one("#rule-for", Input).value.strip(), value("#rule-action"))
        except ValueError as exc:
            self.query_one("#rule-hint", Static).update(literal(f"✗ {exc}"))
            return
        self.dismiss(item)

    def action_cancel(self) -> None:
        self.dismiss(None)
