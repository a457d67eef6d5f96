"""The setup form: the editors of a trainer's model / data / training sections (curated fields
first, then every key the preset holds) or of a command's line and folder, and the launch target
for either, generated from the field catalogue and the draft's values.

It is given what it needs — the draft (the form's state, `config.draft.Draft`), the completion
sources, and at each build the trainer, the registry and the accelerate configs — and reaches
nothing outside itself: its editors post `FieldEditor.Changed`, its field search
`FieldSearch.Picked`, and the screen that composes it acts on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Static

from cockpit.config.draft import COMMAND, Draft
from cockpit.trainers.registry import ConfigField, Registry, TrainerSpec
from cockpit.ui.widgets.setup.catalogue import (
    ATTENTION,
    COLUMNS_FIELD,
    COMMAND_FIELD,
    COMMON_FIELDS,
    CWD_FIELD,
    LORA_FIELDS,
    MODEL_FIELDS,
    MODEL_ROLE_HELP,
    NAME_FIELD,
    REWARDS_FIELD,
    SPLIT_FIELD,
    TRAINER_FIELDS,
    cockpit_field,
    field_of,
    searchable,
    unknown_field,
)
from cockpit.ui.widgets.setup.data_preview import DataPreview
from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id
from cockpit.ui.widgets.setup.field_search import FieldSearch
from cockpit.ui.widgets.setup.launch_target import LaunchTarget
from cockpit.ui.widgets.setup.suggest import ListItemSuggester
from cockpit.ui.widgets.setup.values import UNSET
from cockpit.ui.widgets.waiting import Waiting

TRUST_WARNING = ("⚠ trust_remote_code is on: the model's own Python code will run on this machine "
                 "— only for models you trust.")


class SetupForm(VerticalScroll):
    """The form's sections; `build_trainer` / `build_command` fill them for the draft."""

    def __init__(self, draft: Draft, *, model_suggester: Any, data_suggester: Any,
                 id: str | None = None) -> None:
        super().__init__(id=id, can_focus=False)
        self.draft = draft
        self.model_suggester = model_suggester
        self.data_suggester = data_suggester
        self.extra_names: list[str] = []
        """Fields added from the search (or set by the preset) beyond the fixed ones."""

    def compose(self) -> ComposeResult:
        yield Waiting("", id="trainer-info")
        with Vertical(id="trainer-form"):
            yield Static("Model", classes="setup-section")
            yield Vertical(id="model-fields", classes="setup-group")
            yield Static(TRUST_WARNING, id="trust-warning")
            yield Vertical(id="extra-models", classes="setup-group")
            yield Static("Data", classes="setup-section")
            yield Vertical(id="data-fields", classes="setup-group")
            yield DataPreview(id="data-preview")
            yield Static("Training arguments", classes="setup-section")
            yield Vertical(id="common-fields", classes="setup-group")
            yield Vertical(id="more-fields", classes="setup-group")
            yield FieldSearch(id="field-search")
        with Vertical(id="command-form"):
            yield Static("Command", classes="setup-section")
            yield Vertical(id="command-fields", classes="setup-group")
        yield Static("Launch", classes="setup-section")
        yield Vertical(id="launch-fields", classes="setup-group")

    def on_mount(self) -> None:
        self.query_one(FieldSearch).display = False

    def on_resize(self) -> None:
        """The form changed size (the trainer list made room, the preview went under it): the
        field being typed in stays in sight, wherever the new layout puts it."""
        focused = self.screen.focused
        if focused is not None and self in focused.ancestors:
            self.call_after_refresh(self.scroll_to_widget, focused, animate=False)

    def editor(self, field: ConfigField, **kw: Any) -> FieldEditor:
        return FieldEditor(field, self.draft.get(field.name), **kw)

    async def _fill(self, groups: Sequence[tuple[str, Sequence[Widget]]]) -> None:
        with self.app.batch_update():
            for selector, widgets in groups:
                container = self.query_one(selector)
                await container.remove_children()
                await container.mount_all(widgets)

    def _launch_target(self, accelerate_configs: list[str]) -> LaunchTarget:
        draft = self.draft
        return LaunchTarget(draft.get, draft.launcher_kind, accelerate_configs,
                            command=draft.mode == COMMAND, id="launch-target")

    async def build_trainer(self, spec: TrainerSpec, registry: Registry | None,
                            accelerate_configs: list[str]) -> None:
        draft = self.draft
        model: list[FieldEditor] = []
        for name in MODEL_FIELDS:
            f = field_of(spec, name)
            if f is None:
                continue
            kw: dict[str, Any] = {}
            if name == "model_name_or_path":
                kw["suggester"] = self.model_suggester
                kw["placeholder"] = "a folder, hub id or demo:models/tiny-lm"
            elif name == "attn_implementation":
                kw["suggester"] = SuggestFromList(ATTENTION)
            model.append(self.editor(f, classes="lora" if name in LORA_FIELDS else None, **kw))

        extras: list[FieldEditor] = []
        for role in spec.extra_models:
            if role == "reward_funcs":
                extras.extend(self.editor(f, label="reward functions", suggester=_reward_names(registry),
                                          placeholder="a registered name, a dotted path or file.py:function")
                              for f in self.reward_fields(spec))
            elif role in MODEL_ROLE_HELP:
                f = cockpit_field(f"cockpit.models.{role}", "str", MODEL_ROLE_HELP[role])
                extras.append(self.editor(f, label=role.replace("_", " "), suggester=self.model_suggester,
                                          placeholder="a folder or hub id"))

        data: list[FieldEditor] = []
        f = field_of(spec, "dataset_name")
        if f is not None:
            data.append(self.editor(f, suggester=self.data_suggester,
                                    placeholder="hub id, folder, file or demo:data/<format>"))
        data.append(self.editor(SPLIT_FIELD, label="split"))
        data.append(self.editor(COLUMNS_FIELD, label="rename columns"))

        common = [self.editor(f) for n in (*COMMON_FIELDS, *TRAINER_FIELDS)
                  if (f := spec.field(n)) is not None]

        fixed = {e.field.name for e in (*model, *extras, *data, *common)}
        self.extra_names = [n for n in dict.fromkeys([*self.extra_names, *draft.trl])
                            if n not in fixed and (n in draft.trl or field_of(spec, n) is not None)]
        more = [self.editor(field_of(spec, n) or unknown_field(n, spec)) for n in self.extra_names]
        draft.set_order([*(e.field.name for e in (*model, *data, *common, *more)), *(f.name for f in spec.fields)])

        await self._fill([("#model-fields", model), ("#extra-models", extras), ("#data-fields", data),
                          ("#common-fields", common), ("#more-fields", more),
                          ("#command-fields", []), ("#launch-fields", [self._launch_target(accelerate_configs)])])
        search = self.query_one(FieldSearch)
        search.display = True
        search.set_fields(searchable(spec), fixed | set(self.extra_names))
        self.sync_visibility()

    def reward_fields(self, spec: TrainerSpec) -> list[ConfigField]:
        """One reward field: TRL's own `reward_funcs` (what `trl grpo --config` takes too) where
        the trainer has it, else `cockpit.reward_funcs`. A preset that set the cockpit's key
        shows that one as well, so nothing it holds is hidden."""
        trl_field = field_of(spec, "reward_funcs")
        if trl_field is None:
            return [REWARDS_FIELD]
        shown = [replace(trl_field, help=REWARDS_FIELD.help)]
        if self.draft.get(REWARDS_FIELD.name) not in (None, UNSET, [], ""):
            shown.append(REWARDS_FIELD)
        return shown

    async def build_command(self, accelerate_configs: list[str]) -> None:
        fields = [self.editor(COMMAND_FIELD, placeholder="python train.py --lr 1e-5"),
                  self.editor(CWD_FIELD, label="working folder"),
                  self.editor(NAME_FIELD, label="run name")]
        await self._fill([("#command-fields", fields),
                          ("#launch-fields", [self._launch_target(accelerate_configs)])])

    async def add_field(self, field: ConfigField) -> FieldEditor:
        """The editor of a field picked in the search; added under the common fields first."""
        try:
            return self.query_one(f"#{editor_id(field.name)}", FieldEditor)
        except Exception:  # noqa: BLE001 - not in the form yet
            pass
        editor = self.editor(field)
        self.extra_names.append(field.name)
        self.draft.order.setdefault(field.name, len(self.draft.order))
        await self.query_one("#more-fields").mount(editor)
        self.query_one(FieldSearch).mark_shown(field.name)
        return editor

    def sync_visibility(self) -> None:
        peft = bool(self.draft.trl.get("use_peft"))
        for editor in self.query("#model-fields .lora"):
            editor.display = peft
        self.query_one("#trust-warning").set_class(bool(self.draft.trl.get("trust_remote_code")), "-shown")

    def wait(self, what: str, hint: str) -> None:
        """The line above the form ticks while `what` is awaited (until `show_info`)."""
        self.query_one("#trainer-info", Waiting).wait(what, hint)

    def show_info(self, content: Content) -> None:
        """The line above the form (what is picked, or why nothing can be)."""
        self.query_one("#trainer-info", Static).update(content)

    def show_trainer_info(self, spec: TrainerSpec) -> None:
        formats = " | ".join("/".join(f) for f in spec.data_formats) or "not known to cockpit"
        extras = ", ".join(spec.extra_models) or "none"
        cli = f"trl {spec.cli_command}" if spec.cli_command else "none (cockpit runs it)"
        self.show_info(Content.from_markup(
            "[b $accent]$name[/] [b]$title[/]  [dim]$total fields: $n of $config_class, the rest model "
            "and script arguments[/]\n$summary\n"
            "[dim]data:[/] $formats   [dim]extra:[/] $extras   [dim]TRL CLI:[/] $cli",
            name=spec.name, title=spec.title, config_class=spec.config_class or "?",
            # The same count as the field search's "All N fields" below.
            total=str(len(searchable(spec))), n=str(len(spec.fields)), summary=spec.summary,
            formats=formats, extras=extras, cli=cli))

    def show_command_info(self) -> None:
        self.show_info(Content.from_markup(
            "[b $accent]command[/] [b]your own training script[/]\nRun unchanged under the "
            "supervisor: every transformers Trainer it builds reports here — plots, completions, "
            "stop/resume, alerts.\n[dim]e.g.[/] python train.py --lr 1e-5   [dim]·[/] trl sft "
            "--config sft.yaml   [dim]·[/] accelerate launch --num_processes 2 train.py"))


def _reward_names(registry: Registry | None) -> ListItemSuggester:
    """The registered reward functions: TRL's (those that take completions) and cockpit's."""
    from cockpit.config.rewards import cockpit_reward_names

    trl = [n for n, e in (registry.rewards if registry else {}).items() if not e.get("factory")]
    return ListItemSuggester([*sorted(trl), *(f"cockpit.runner.rewards.{n}" for n in cockpit_reward_names())])
