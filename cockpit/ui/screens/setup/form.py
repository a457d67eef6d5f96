"""Builds the setup form's editors from the field catalogue and the draft's values: a trainer's
model / data / training sections (curated fields first, then every key the preset holds), a
command's line and folder, and the launch target for either; and checks the data the form names
(`DataCheck`, a mixin of the screen)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual import work
from textual.content import Content
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Static

from cockpit.config.draft import COMMAND
from cockpit.trainers.registry import ConfigField, TrainerSpec
from cockpit.ui.screens.setup.base import SetupBase
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
from cockpit.ui.widgets.setup.data_preview import DataPreview, DataReport, inspect_data
from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id
from cockpit.ui.widgets.setup.field_search import FieldSearch
from cockpit.ui.widgets.setup.launch_target import LaunchTarget
from cockpit.ui.widgets.setup.suggest import ListItemSuggester
from cockpit.ui.widgets.setup.values import UNSET

if TYPE_CHECKING:
    from cockpit.ui.screens.setup.screen import SetupScreen


class FormBuilder:
    def __init__(self, screen: SetupScreen) -> None:
        self.screen = screen
        self.extra_names: list[str] = []
        """Fields added from the search (or set by the preset) beyond the fixed ones."""

    def editor(self, field: ConfigField, **kw: Any) -> FieldEditor:
        return FieldEditor(field, self.screen.draft.get(field.name), **kw)

    async def _fill(self, groups: Sequence[tuple[str, Sequence[Widget]]]) -> None:
        screen = self.screen
        with screen.app.batch_update():
            for selector, widgets in groups:
                container = screen.query_one(selector)
                await container.remove_children()
                await container.mount_all(widgets)

    def _launch_target(self) -> LaunchTarget:
        draft = self.screen.draft
        return LaunchTarget(draft.get, draft.launcher_kind, self.screen.accelerate_configs,
                            command=draft.mode == COMMAND, id="launch-target")

    async def build_trainer(self, spec: TrainerSpec) -> None:
        screen, draft = self.screen, self.screen.draft
        model: list[FieldEditor] = []
        for name in MODEL_FIELDS:
            f = field_of(spec, name)
            if f is None:
                continue
            kw: dict[str, Any] = {}
            if name == "model_name_or_path":
                kw["suggester"] = screen.model_suggester
                kw["placeholder"] = "a folder, hub id or demo:models/tiny-lm"
            elif name == "attn_implementation":
                kw["suggester"] = SuggestFromList(ATTENTION)
            model.append(self.editor(f, classes="lora" if name in LORA_FIELDS else None, **kw))

        extras: list[FieldEditor] = []
        for role in spec.extra_models:
            if role == "reward_funcs":
                extras.extend(self.editor(f, label="reward functions", suggester=self._reward_names(),
                                          placeholder="a registered name, a dotted path or file.py:function")
                              for f in self.reward_fields(spec))
            elif role in MODEL_ROLE_HELP:
                f = cockpit_field(f"cockpit.models.{role}", "str", MODEL_ROLE_HELP[role])
                extras.append(self.editor(f, label=role.replace("_", " "), suggester=screen.model_suggester,
                                          placeholder="a folder or hub id"))

        data: list[FieldEditor] = []
        f = field_of(spec, "dataset_name")
        if f is not None:
            data.append(self.editor(f, suggester=screen.data_suggester,
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
                          ("#command-fields", []), ("#launch-fields", [self._launch_target()])])
        search = screen.query_one(FieldSearch)
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
        if self.screen.draft.get(REWARDS_FIELD.name) not in (None, UNSET, [], ""):
            shown.append(REWARDS_FIELD)
        return shown

    def _reward_names(self) -> ListItemSuggester:
        """The registered reward functions: TRL's (those that take completions) and cockpit's."""
        from cockpit.config.rewards import cockpit_reward_names

        registry = self.screen.registry
        trl = [n for n, e in (registry.rewards if registry else {}).items() if not e.get("factory")]
        return ListItemSuggester([*sorted(trl), *(f"cockpit.runner.rewards.{n}" for n in cockpit_reward_names())])

    async def build_command(self) -> None:
        fields = [self.editor(COMMAND_FIELD, placeholder="python train.py --lr 1e-5"),
                  self.editor(CWD_FIELD, label="working folder"),
                  self.editor(NAME_FIELD, label="run name")]
        await self._fill([("#command-fields", fields), ("#launch-fields", [self._launch_target()])])

    async def add_field(self, field: ConfigField) -> FieldEditor:
        """The editor of a field picked in the search; added under the common fields first."""
        screen = self.screen
        try:
            return screen.query_one(f"#{editor_id(field.name)}", FieldEditor)
        except Exception:  # noqa: BLE001 - not in the form yet
            pass
        editor = self.editor(field)
        self.extra_names.append(field.name)
        screen.draft.order.setdefault(field.name, len(screen.draft.order))
        await screen.query_one("#more-fields").mount(editor)
        screen.query_one(FieldSearch).mark_shown(field.name)
        return editor

    def sync_visibility(self) -> None:
        screen = self.screen
        peft = bool(screen.draft.trl.get("use_peft"))
        for editor in screen.query("#model-fields .lora"):
            editor.display = peft
        screen.query_one("#trust-warning").set_class(bool(screen.draft.trl.get("trust_remote_code")), "-shown")

    def show_trainer_info(self, spec: TrainerSpec) -> None:
        formats = " | ".join("/".join(f) for f in spec.data_formats) or "not known to cockpit"
        extras = ", ".join(spec.extra_models) or "none"
        cli = f"trl {spec.cli_command}" if spec.cli_command else "none (cockpit runs it)"
        self.screen.query_one("#trainer-info", Static).update(Content.from_markup(
            "[b $accent]$name[/] [b]$title[/]  [dim]$total fields: $n of $config_class, the rest model "
            "and script arguments[/]\n$summary\n"
            "[dim]data:[/] $formats   [dim]extra:[/] $extras   [dim]TRL CLI:[/] $cli",
            name=spec.name, title=spec.title, config_class=spec.config_class or "?",
            # The same count as the field search's "All N fields" below.
            total=str(len(searchable(spec))), n=str(len(spec.fields)), summary=spec.summary,
            formats=formats, extras=extras, cli=cli))

    def show_command_info(self) -> None:
        self.screen.query_one("#trainer-info", Static).update(Content.from_markup(
            "[b $accent]command[/] [b]your own training script[/]\nRun unchanged under the "
            "supervisor: every transformers Trainer it builds reports here — plots, completions, "
            "stop/resume, alerts.\n[dim]e.g.[/] python train.py --lr 1e-5   [dim]·[/] trl sft "
            "--config sft.yaml   [dim]·[/] accelerate launch --num_processes 2 train.py"))


class DataCheck(SetupBase):
    """The data section's preview of the dataset named in the form: read in a worker (it may
    write the demo datasets on first use), shown only if the form still names it."""

    class DataInspected(Message, namespace="setup_screen"):
        """Columns, first rows and the column check of the dataset named in the form."""

        def __init__(self, key: tuple, report: DataReport) -> None:
            super().__init__()
            self.key = key
            self.report = report

    def _inspect_data_now(self) -> None:
        name = self.draft.get("dataset_name")
        split = self.draft.get(SPLIT_FIELD.name)
        if split is UNSET:
            split = self.draft.trl.get("dataset_train_split", "train")
        renames = self.draft.get(COLUMNS_FIELD.name)
        renames = renames if isinstance(renames, dict) else {}
        config = self.draft.trl.get("dataset_config")
        rewards: list[str] = []  # their columns are part of the data check, as validation sees it
        if self.spec is not None and "reward_funcs" in self.spec.extra_models:
            for source in (self.draft.get("reward_funcs"), self.draft.get(REWARDS_FIELD.name)):
                if isinstance(source, (list, str)):
                    rewards += [str(r) for r in ([source] if isinstance(source, str) else source)]
        key = (name, split, tuple(renames.items()), config, self.spec.name if self.spec else None, tuple(rewards))
        self._data_key = key
        self._inspect_data(key, "" if name is UNSET else str(name), str(split), renames, self.spec,
                           config, rewards)

    @work(thread=True, exclusive=True, group="setup-data", exit_on_error=False)
    def _inspect_data(self, key: tuple, name: str, split: str, renames: dict[str, str],
                      spec: TrainerSpec | None, config: str | None, rewards: list[str] | None = None) -> None:
        try:
            from cockpit.config.rewards import needed_columns

            needs = needed_columns(rewards or [], self.registry.rewards if self.registry else {})
            report = inspect_data(name, split, renames, spec, config, needs=needs)
        except Exception as exc:  # noqa: BLE001 - a preview problem is shown, never a crash
            report = DataReport(where=name, fits=None, message=f"cannot preview {name}: {exc}")
        self.post_message(self.DataInspected(key, report))

    def on_setup_screen_data_inspected(self, message: DataCheck.DataInspected) -> None:
        if message.key == self._data_key:
            self.query_one(DataPreview).show(message.report)

