"""Setup: a new run, or a preset opened for editing — trainer, model, data, training arguments,
launch target — with the preset YAML and the command line previewed live, validated as you type,
saved as a preset or launched.

The form is generated from the registry (TRL's own config dataclasses, read by the discovery
subprocess and cached), so a field TRL adds shows up without a code change. Only what the user
set differs from TRL's defaults goes into the preset. Everything that touches the disk — the
registry, the data preview, validation, launching — runs in a worker; the screen is dismissed
with the launched `RunFolder` (or None when the user goes back).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.timer import Timer
from textual.widgets import Button, Footer, Header, Label, Select, Static

from cockpit.config.presets import Preset
from cockpit.errors import CockpitError
from cockpit.run.folder import RunFolder
from cockpit.trainers.registry import ConfigField, Registry, TrainerSpec, known_config_keys
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.widgets.setup.data_preview import DataPreview, DataReport, inspect_data
from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id
from cockpit.ui.widgets.setup.field_search import FieldSearch
from cockpit.ui.widgets.setup.preset_preview import CommandPreview, PresetPreview
from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt
from cockpit.ui.widgets.setup.suggest import CandidateSuggester, find_datasets, find_models
from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker, unavailable_reason
from cockpit.ui.widgets.setup.values import UNSET, for_the_form

COMPACT_BELOW = 140
"""Screen width under which the picked trainer's list is hidden while the form is used."""
VALIDATE_DELAY_S = 0.35
"""Validation (and the data check) waits this long after the last keystroke."""

MODEL_FIELDS = ("model_name_or_path", "dtype", "attn_implementation", "trust_remote_code",
                "use_peft", "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules",
                "load_in_4bit", "load_in_8bit")
LORA_FIELDS = frozenset({"lora_r", "lora_alpha", "lora_dropout", "lora_target_modules"})
COMMON_FIELDS = ("learning_rate", "max_steps", "num_train_epochs", "per_device_train_batch_size",
                 "gradient_accumulation_steps", "max_length", "logging_steps", "save_steps",
                 "eval_strategy", "bf16", "gradient_checkpointing")
TRAINER_FIELDS = ("beta", "num_generations", "max_completion_length", "max_prompt_length", "lmbda",
                  "temperature", "packing")
"""Shown after the common fields when the trainer's config has them."""
ATTENTION = ("eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention")


def _cockpit_field(name: str, type_: str, help_: str, default: Any = None) -> ConfigField:
    """A key of the preset's `cockpit:` section, edited like a TRL field."""
    return ConfigField(name=name, type=type_, default=default, help=help_, choices=None,
                       group="cockpit")


SPLIT_FIELD = _cockpit_field(
    "cockpit.dataset.split", "str",
    "The split to train on, with an optional slice: train, train[:500] or train[:10%].", "train")
COLUMNS_FIELD = _cockpit_field(
    "cockpit.dataset.columns", "map",
    "Rename columns to what the trainer needs, as old:new pairs, e.g. question:prompt, "
    "answer:completion.")
MODEL_ROLE_HELP = {
    "ref_model": "The frozen reference model (a local folder or hub id); empty: a copy of the model.",
    "reward_model": "A sequence-classification model that scores completions (folder or hub id).",
    "value_model": "The value head's model (folder or hub id); empty: the reward model.",
    "teacher_model": "The teacher the student learns from (a local folder or hub id).",
}
REWARDS_FIELD = _cockpit_field(
    "cockpit.reward_funcs", "list[str]",
    "Reward functions, comma-separated: TRL reward names, dotted import paths "
    "(e.g. cockpit.runner.rewards.arith_reward) or path/file.py:function.")
DATA_KEYS = frozenset({"dataset_name", "dataset_config", "dataset_train_split",
                       SPLIT_FIELD.name, COLUMNS_FIELD.name})
PROBLEM_PHRASES = (
    ("no model", "model_name_or_path"),
    ("no data", "dataset_name"),
    ("dataset ", "dataset_name"),
    ("cockpit.dataset.columns renames", COLUMNS_FIELD.name),
    ("split ", SPLIT_FIELD.name),
    ("teacher model", "cockpit.models.teacher_model"),
    ("needs a reward model", "cockpit.models.reward_model"),
    ("needs rewards", REWARDS_FIELD.name),
    ("reward function", REWARDS_FIELD.name),
)
"""Validation messages that name a field in words rather than by its key."""
TODO_PROBLEMS = ("no model:", "no data:")
"""Validation messages that only mean "not filled in yet"."""


class SetupScreen(Screen["RunFolder | None"]):
    HELP_TITLE = "New run form"
    DEFAULT_CSS = """
    SetupScreen #setup-body {
        height: 1fr;
    }
    SetupScreen #setup-trainers {
        width: 30;
        border-right: vkey $panel;
    }
    SetupScreen.-compact #setup-trainers {
        display: none;
    }
    SetupScreen #trainer-picker, SetupScreen #setup-form, SetupScreen #preview-scroll {
        scrollbar-size-vertical: 1;
    }
    SetupScreen #trainer-picker:focus {
        background-tint: $primary 5%;
    }
    SetupScreen #setup-form {
        width: 1fr;
        padding: 0 0 0 1;
        scrollbar-gutter: stable;
    }
    SetupScreen #trainer-info {
        height: auto;
        padding: 0 1 0 0;
    }
    SetupScreen .setup-section {
        height: auto;
        margin: 1 1 1 0;
        padding: 0 1;
        background: $panel;
        text-style: bold;
    }
    SetupScreen .setup-group {
        height: auto;
    }
    SetupScreen #trust-warning {
        height: auto;
        margin: 0 1 1 0;
        padding: 0 1;
        color: $text-warning;
        background: $warning 15%;
        display: none;
    }
    SetupScreen #trust-warning.-shown {
        display: block;
    }
    SetupScreen #data-preview {
        margin-bottom: 1;
    }
    SetupScreen #launch-row {
        height: auto;
        margin-bottom: 1;
    }
    SetupScreen #setup-form.-narrow FieldEditor .field-name,
    SetupScreen #setup-form.-narrow #launch-row Label {
        width: 22;
    }
    SetupScreen #launch-row Label {
        width: 29;
        color: $text-muted;
    }
    SetupScreen #launch-target {
        width: 1fr;
        margin-right: 1;
    }
    SetupScreen #setup-side {
        width: 34%;
        max-width: 60;
        min-width: 34;
        border-left: vkey $panel;
    }
    SetupScreen #validation {
        height: auto;
        padding: 0 1;
        margin-bottom: 1;
    }
    SetupScreen #validation.-ok {
        color: $text-success;
        background: $success 10%;
    }
    SetupScreen #validation.-bad {
        color: $text-error;
        background: $error 15%;
    }
    SetupScreen #validation.-pending {
        color: $text-muted;
    }
    SetupScreen #preview-scroll {
        height: 1fr;
        background: $surface;
    }
    SetupScreen #command-preview {
        margin-top: 1;
    }
    SetupScreen #setup-buttons {
        height: auto;
        align: right middle;
        padding: 1 1 0 1;
    }
    SetupScreen #setup-buttons Button {
        margin-left: 1;
    }
    """

    BINDINGS = [
        Binding("ctrl+l", "launch", "Launch", id="setup.launch"),
        Binding("ctrl+s", "save", "Save preset", id="setup.save"),
        # ctrl+f is the key shown: it works from a text field too. `/` also searches, but only
        # where it would type nothing (an input takes it as a character).
        Binding("ctrl+f", "search_fields", "Search fields", id="setup.search"),
        Binding("slash", "search_fields", "Search fields", show=False, id="setup.search_slash"),
        Binding("ctrl+t", "focus_trainers", "Trainers", id="setup.trainers"),
        Binding("escape", "back", "Back", id="setup.back"),
    ]

    class RegistryLoaded(Message):
        """The trainers of the installed TRL (from the schema cache or a discovery run)."""

        def __init__(self, registry: Registry | None, gpu: bool, error: str | None) -> None:
            super().__init__()
            self.registry = registry
            self.gpu = gpu
            self.error = error

    class CandidatesFound(Message):
        """Local model folders and data files to complete the inputs with."""

        def __init__(self, models: list[str], datasets: list[str]) -> None:
            super().__init__()
            self.models = models
            self.datasets = datasets

    class Validated(Message):
        """The verdict of `validate` on the preset whose YAML is `key`."""

        def __init__(self, key: str, problem: str | None, warnings: list[str]) -> None:
            super().__init__()
            self.key = key
            self.problem = problem
            self.warnings = warnings

    class DataInspected(Message):
        """Columns, first rows and the column check of the dataset named in the form."""

        def __init__(self, key: tuple, report: DataReport) -> None:
            super().__init__()
            self.key = key
            self.report = report

    class Launched(Message):
        def __init__(self, run: RunFolder) -> None:
            super().__init__()
            self.run = run

    class LaunchFailed(Message):
        def __init__(self, message: str) -> None:
            super().__init__()
            self.message = message

    def __init__(self, runs_dir: Path, preset: Preset | None = None) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.preset_in = preset.copy() if preset is not None else None
        self.source: Path | None = preset.source if preset is not None else None
        self.trl: dict[str, Any] = dict(preset.trl) if preset is not None else {}
        self.cockpit: dict[str, Any] = copy.deepcopy(preset.cockpit) if preset is not None else {}
        self.registry: Registry | None = None
        self.spec: TrainerSpec | None = None
        self.gpu = False
        self.input_errors: dict[str, str] = {}
        """Field name -> why what was typed is not a value of its type."""
        self.problem: str | None = None
        """What validation said about the current preset (None: valid or not checked yet)."""
        self.warnings: list[str] = []
        self.valid_key: str | None = None
        """The YAML of the last preset validation passed; Launch needs it to be the current one."""
        self.saved_as: str | None = str(self.source) if self.source else None
        self.extra_names: list[str] = []
        """Fields added from the search (or set by the preset) beyond the fixed ones."""
        self.launching = False
        self.dirty = False
        """The form differs from the preset file it was opened from or saved to."""
        self.model_suggester = CandidateSuggester()
        self.data_suggester = CandidateSuggester()
        self._timer: Timer | None = None
        self._data_key: tuple | None = None
        self._order: dict[str, int] = {}

    # -- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="setup-body"):
            with Vertical(id="setup-trainers"):
                yield Static("[b]Trainer[/b]  [dim]Enter picks[/]", classes="pane-title")
                yield TrainerPicker(id="trainer-picker")
            with VerticalScroll(id="setup-form", can_focus=False):
                yield Static("[dim]Loading the trainers of the installed TRL…[/]", id="trainer-info")
                yield Static("Model", classes="setup-section")
                yield Vertical(id="model-fields", classes="setup-group")
                yield Static("⚠ trust_remote_code is on: the model's own Python code will run "
                             "on this machine — only for models you trust.", id="trust-warning")
                yield Vertical(id="extra-models", classes="setup-group")
                yield Static("Data", classes="setup-section")
                yield Vertical(id="data-fields", classes="setup-group")
                yield DataPreview(id="data-preview")
                yield Static("Training arguments", classes="setup-section")
                yield Vertical(id="common-fields", classes="setup-group")
                yield Vertical(id="more-fields", classes="setup-group")
                yield FieldSearch(id="field-search")
                yield Static("Launch", classes="setup-section")
                with Horizontal(id="launch-row"):
                    yield Label("launch target")
                    yield Select([("single process (python -m cockpit.runner)", "python")],
                                 value="python", allow_blank=False, compact=True,
                                 id="launch-target")
            with Vertical(id="setup-side"):
                yield Static("[b]Preview[/b]  [dim]the preset and its command[/]",
                             classes="pane-title")
                yield Static("", id="validation")
                with VerticalScroll(id="preview-scroll", can_focus=False):
                    yield PresetPreview(id="preset-preview")
                yield CommandPreview(id="command-preview")
                with Horizontal(id="setup-buttons"):
                    yield Button("Save preset ^s", id="save-button", compact=True)
                    yield Button("Launch ^l", id="launch-button", variant="success",
                                 disabled=True, compact=True)
        yield Footer()

    def on_resize(self) -> None:
        self._fit_layout()

    def on_descendant_focus(self) -> None:
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Below COMPACT_BELOW columns the trainer list gives its room to the form once a
        trainer is picked (ctrl+t brings it back), so inputs are wide enough to type in."""
        compact = (self.spec is not None and 0 < self.size.width < COMPACT_BELOW
                   and self.focused is not self.query_one(TrainerPicker))
        if compact != self.has_class("-compact"):
            self.set_class(compact, "-compact")
        self.call_after_refresh(self._fit_labels)

    def _fit_labels(self) -> None:
        """Narrower field names when the form is narrow (120 columns), so inputs stay usable."""
        form = self.query_one("#setup-form")
        form.set_class(0 < form.size.width < 72, "-narrow")

    def on_mount(self) -> None:
        self.sub_title = f"new run · {self.runs_dir}" if self.preset_in is None else \
            f"preset {self.preset_in.name} · {self.runs_dir}"
        self.query_one("#field-search").display = False
        self.query_one(TrainerPicker).focus()
        self._refresh_preview()
        self._load_registry()
        self._find_candidates()

    # -- workers: registry, completion candidates ---------------------------------------------

    @work(thread=True, exclusive=True, group="setup-registry", exit_on_error=False)
    def _load_registry(self) -> None:
        from cockpit.config.validate import has_gpu
        from cockpit.trainers.registry import load_registry

        try:
            registry = load_registry()
        except CockpitError as exc:
            self.post_message(self.RegistryLoaded(None, False, str(exc)))
            return
        self.post_message(self.RegistryLoaded(registry, has_gpu(), None))

    @work(thread=True, exclusive=True, group="setup-candidates", exit_on_error=False)
    def _find_candidates(self) -> None:
        from cockpit.demo import datasets as demo

        cwd = Path.cwd()
        models = find_models(cwd, demo.demo_dir() / "models", demo.MODEL_NAMES)
        datasets = find_datasets(cwd, demo.DATA_FORMATS)
        self.post_message(self.CandidatesFound(models, datasets))

    def on_setup_screen_candidates_found(self, message: CandidatesFound) -> None:
        self.model_suggester.set_candidates(message.models)
        self.data_suggester.set_candidates(message.datasets)

    async def on_setup_screen_registry_loaded(self, message: RegistryLoaded) -> None:
        info = self.query_one("#trainer-info", Static)
        if message.registry is None:
            info.update(Content.from_markup("[b $text-error]✗ cannot read the TRL trainers:[/] $err",
                                            err=message.error or "?"))
            self.notify(message.error or "cannot read the TRL trainers", severity="error",
                        title="setup")
            return
        self.registry, self.gpu = message.registry, message.gpu
        wanted = self.preset_in.trainer if self.preset_in is not None else None
        picker = self.query_one(TrainerPicker)
        picker.show(self.registry.all_known(), gpu=self.gpu, current=wanted)
        if wanted is None:
            info.update(Content.from_markup(
                "[b]← Pick a trainer[/b] (arrows, Enter). [dim]$n trainers of TRL $v; "
                "greyed ones cannot run here, with the reason.[/]",
                n=str(len(self.registry.trainers)), v=self.registry.trl_version))
            return
        try:
            spec = self.registry.get(wanted)
        except CockpitError as exc:
            info.update(Content.from_markup(
                "[b $text-error]✗ $err[/]\n[dim]Pick another trainer on the left; the preset's "
                "values are kept.[/]", err=str(exc)))
            return
        reason = unavailable_reason(spec, self.gpu)
        if reason:
            info.update(Content.from_markup("[b $text-error]✗ $t: $r[/]", t=spec.name, r=reason))
            return
        await self.pick_trainer(spec, keep_unknown=True)

    # -- choosing the trainer ------------------------------------------------------------------

    @on(TrainerPicker.Picked)
    async def _picked(self, message: TrainerPicker.Picked) -> None:
        await self.pick_trainer(message.spec)
        self.call_after_refresh(self._focus_field, "model_name_or_path")

    async def pick_trainer(self, spec: TrainerSpec, *, keep_unknown: bool = False) -> None:
        """Build the form for `spec`. Values carry over; keys the new trainer does not know are
        dropped (unless the form is being filled from a preset: validation names them)."""
        assert self.registry is not None
        if not keep_unknown:
            known = known_config_keys(spec) | _script_extra_keys()
            dropped = [k for k in self.trl if k not in known]
            for key in dropped:
                del self.trl[key]
            if dropped:
                self.notify(f"{spec.name} does not take {', '.join(dropped)} — left out",
                            severity="warning")
            self.dirty = self.dirty or self.spec is None or spec.name != self.spec.name
        self.spec = spec
        self.query_one(TrainerPicker).highlighted = self.query_one(TrainerPicker).get_option_index(
            spec.name)
        self._show_trainer_info(spec)
        await self._build_form(spec)
        self._changed(data=True)

    def _show_trainer_info(self, spec: TrainerSpec) -> None:
        formats = " | ".join("/".join(f) for f in spec.data_formats) or "not known to cockpit"
        extras = ", ".join(spec.extra_models) or "none"
        cli = f"trl {spec.cli_command}" if spec.cli_command else "none (cockpit runs it)"
        self.query_one("#trainer-info", Static).update(Content.from_markup(
            "[b $accent]$name[/] [b]$title[/]  [dim]$config_class · $n fields[/]\n$summary\n"
            "[dim]data:[/] $formats   [dim]extra:[/] $extras   [dim]TRL CLI:[/] $cli",
            name=spec.name, title=spec.title, config_class=spec.config_class or "?",
            n=str(len(spec.fields)), summary=spec.summary, formats=formats, extras=extras, cli=cli))

    def _field(self, name: str) -> ConfigField | None:
        """A field by name: the trainer's config, the model config, the script arguments."""
        if self.spec is None:
            return None
        for group in (self.spec.fields, self.spec.model_config, self.spec.script_args,
                      self.spec.dataset_mixture):
            for f in group:
                if f.name == name:
                    return f
        return None

    def _editor(self, field: ConfigField, **kw: Any) -> FieldEditor:
        return FieldEditor(field, self.get_value(field.name), **kw)

    async def _build_form(self, spec: TrainerSpec) -> None:
        model: list[FieldEditor] = []
        for name in MODEL_FIELDS:
            f = self._field(name)
            if f is None:
                continue
            kw: dict[str, Any] = {}
            if name == "model_name_or_path":
                kw["suggester"] = self.model_suggester
                kw["placeholder"] = "a folder, hub id or demo:models/tiny-lm"
            elif name == "attn_implementation":
                kw["suggester"] = SuggestFromList(ATTENTION)
            model.append(self._editor(f, classes="lora" if name in LORA_FIELDS else None, **kw))

        extras: list[FieldEditor] = []
        for role in spec.extra_models:
            if role == "reward_funcs":
                extras.append(self._editor(REWARDS_FIELD, label="reward functions"))
            elif role in MODEL_ROLE_HELP:
                f = _cockpit_field(f"cockpit.models.{role}", "str", MODEL_ROLE_HELP[role])
                extras.append(self._editor(f, label=role.replace("_", " "),
                                           suggester=self.model_suggester,
                                           placeholder="a folder or hub id"))

        data: list[FieldEditor] = []
        f = self._field("dataset_name")
        if f is not None:
            data.append(self._editor(f, suggester=self.data_suggester,
                                     placeholder="hub id, folder, file or demo:data/<format>"))
        data.append(self._editor(SPLIT_FIELD, label="split"))
        data.append(self._editor(COLUMNS_FIELD, label="rename columns"))

        common_names = [n for n in (*COMMON_FIELDS, *TRAINER_FIELDS) if spec.field(n) is not None]
        common = [self._editor(spec.field(n)) for n in common_names]  # type: ignore[arg-type]

        fixed = {e.field.name for e in (*model, *extras, *data, *common)}
        self.extra_names = [n for n in dict.fromkeys([*self.extra_names, *self.trl])
                            if n not in fixed and (n in self.trl or self._field(n) is not None)]
        more = [self._editor(self._field(n) or _unknown_field(n, spec)) for n in self.extra_names]

        self._order = {}
        for i, name in enumerate([*(e.field.name for e in (*model, *data, *common, *more)),
                                  *(f.name for f in spec.fields)]):
            self._order.setdefault(name, i)

        with self.app.batch_update():
            for selector, editors in (("#model-fields", model), ("#extra-models", extras),
                                      ("#data-fields", data), ("#common-fields", common),
                                      ("#more-fields", more)):
                container = self.query_one(selector)
                await container.remove_children()
                await container.mount_all(editors)
            search = self.query_one(FieldSearch)
            search.display = True
            search.set_fields(self._searchable(spec), fixed | set(self.extra_names))
        self._sync_visibility()

    def _searchable(self, spec: TrainerSpec) -> list[ConfigField]:
        seen: set[str] = set()
        out: list[ConfigField] = []
        for f in (*spec.fields, *spec.model_config, *spec.script_args):
            if f.name not in seen:
                seen.add(f.name)
                out.append(f)
        return out

    def _sync_visibility(self) -> None:
        peft = bool(self.trl.get("use_peft"))
        for editor in self.query("#model-fields .lora"):
            editor.display = peft
        self.query_one("#trust-warning").set_class(bool(self.trl.get("trust_remote_code")), "-shown")

    def _focus_field(self, name: str) -> None:
        try:
            editor = self.query_one(f"#{editor_id(name)}", FieldEditor)
        except Exception:  # noqa: BLE001 - the form may not hold that field
            return
        editor.focus_control()
        editor.scroll_visible()

    # -- values --------------------------------------------------------------------------------

    def get_value(self, name: str) -> Any:
        """What the preset holds for a form field (UNSET when left to the default)."""
        if name.startswith("cockpit."):
            target: Any = self.cockpit
            for part in name.split(".")[1:]:
                if not isinstance(target, dict) or part not in target:
                    return UNSET
                target = target[part]
            return target
        return self.trl.get(name, UNSET)

    def set_value(self, name: str, value: Any) -> None:
        if not name.startswith("cockpit."):
            if value is UNSET:
                self.trl.pop(name, None)
            else:
                self.trl[name] = value
            return
        parts = name.split(".")[1:]
        chain = [self.cockpit]
        for part in parts[:-1]:
            nxt = chain[-1].get(part)
            if not isinstance(nxt, dict):
                if value is UNSET:
                    return
                nxt = chain[-1][part] = {}
            chain.append(nxt)
        if value is UNSET:
            chain[-1].pop(parts[-1], None)
            for parent, part, child in reversed(list(zip(chain, parts, chain[1:], strict=False))):
                if not child:
                    parent.pop(part, None)
        else:
            chain[-1][parts[-1]] = value

    def current_preset(self) -> Preset | None:
        """The preset the form adds up to (None until a trainer is picked)."""
        if self.spec is None:
            return None
        keys = sorted(self.trl, key=lambda k: (self._order.get(k, len(self._order)),
                                               list(self.trl).index(k)))
        return Preset(self.spec.name, {k: self.trl[k] for k in keys}, copy.deepcopy(self.cockpit),
                      self.source)

    @on(FieldEditor.Changed)
    def _field_changed(self, message: FieldEditor.Changed) -> None:
        message.stop()
        name = message.name
        if message.error:
            self.input_errors[name] = message.error
        else:
            self.input_errors.pop(name, None)
        self.set_value(name, message.value)
        self.dirty = True
        if name in ("use_peft", "trust_remote_code"):
            self._sync_visibility()
        self._changed(data=name in DATA_KEYS)

    def _changed(self, *, data: bool = False) -> None:
        """Something in the form changed: preview now, validate (and check data) shortly."""
        self._refresh_preview()
        self.valid_key = None
        self._show_verdict(pending=True)
        if data:
            self._data_key = None
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(VALIDATE_DELAY_S, self._check_now)

    def _refresh_preview(self) -> None:
        preset = self.current_preset()
        cli = self.spec.cli_command if self.spec else None
        saved_as = None if self.dirty else self.saved_as
        self.query_one(PresetPreview).show(preset, cli, saved_as)
        self.query_one(CommandPreview).show(preset, cli, saved_as)

    # -- validation ----------------------------------------------------------------------------

    def _check_now(self) -> None:
        self._timer = None
        preset = self.current_preset()
        if preset is None or self.registry is None:
            return
        if self._data_key is None:
            self._inspect_data_now()
        if self.input_errors:
            self._show_verdict()
            return
        self._validate(preset, preset.to_yaml())

    @work(thread=True, exclusive=True, group="setup-validate", exit_on_error=False)
    def _validate(self, preset: Preset, key: str) -> None:
        from cockpit.config.validate import validate

        try:
            plan = validate(preset, self.registry)
        except CockpitError as exc:
            self.post_message(self.Validated(key, str(exc), []))
            return
        except Exception as exc:  # noqa: BLE001 - a bug in a check must not look like "valid"
            self.post_message(self.Validated(key, f"cannot check the preset: {exc}", []))
            return
        self.post_message(self.Validated(key, None, list(plan.warnings)))

    def on_setup_screen_validated(self, message: Validated) -> None:
        preset = self.current_preset()
        if preset is None or preset.to_yaml() != message.key:
            return  # the form changed since; another check is on its way
        self.problem = for_the_form(message.problem) if message.problem else None
        self.warnings = [for_the_form(w) for w in message.warnings]
        self.valid_key = message.key if message.problem is None else None
        self._show_verdict()

    def _show_verdict(self, pending: bool = False) -> None:
        box = self.query_one("#validation", Static)
        button = self.query_one("#launch-button", Button)
        for editor in self.query(FieldEditor):
            editor.set_problem(None)
        if self.spec is None:
            box.update("")
            box.set_classes("")
            button.disabled = True
            return
        if self.input_errors:
            name, error = next(iter(self.input_errors.items()))
            box.update(Content(f"✗ {name}: {error}"))
            box.set_classes("-bad")
        elif pending:
            box.update(Content("… checking"))
            box.set_classes("-pending")
        elif self.problem and self.problem.startswith(TODO_PROBLEMS):
            # Not a mistake yet, just the next thing to fill in: say so without alarm.
            box.update(Content(f"→ next: {self.problem}"))
            box.set_classes("-pending")
        elif self.problem:
            box.update(Content(f"✗ {self.problem}"))
            box.set_classes("-bad")
            target = self._problem_field(self.problem)
            if target is not None:
                self.query_one(f"#{editor_id(target)}", FieldEditor).set_problem(self.problem)
        else:
            lines = ["✓ valid — ctrl+l launches"] + [f"⚠ {w}" for w in self.warnings]
            box.update(Content("\n".join(lines)))
            box.set_classes("-ok")
        button.disabled = not self.can_launch

    def _problem_field(self, message: str) -> str | None:
        """The form field a validation message is about: the key it names first."""
        names = {e.field.name for e in self.query(FieldEditor)}
        hits: list[tuple[int, int, str]] = []
        for name in names:
            m = re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)
            if m:
                hits.append((m.start(), -len(name), name))
        for phrase, name in PROBLEM_PHRASES:
            pos = message.find(phrase)
            if pos >= 0 and name in names:
                hits.append((pos, -len(phrase), name))
        return min(hits)[2] if hits else None

    @property
    def can_launch(self) -> bool:
        preset = self.current_preset()
        return (preset is not None and not self.launching and not self.input_errors
                and self.valid_key is not None and self.valid_key == preset.to_yaml())

    # -- data preview --------------------------------------------------------------------------

    def _inspect_data_now(self) -> None:
        name = self.get_value("dataset_name")
        split = self.get_value(SPLIT_FIELD.name)
        if split is UNSET:
            split = self.trl.get("dataset_train_split", "train")
        renames = self.get_value(COLUMNS_FIELD.name)
        renames = renames if isinstance(renames, dict) else {}
        config = self.trl.get("dataset_config")
        key = (name, split, tuple(renames.items()), config, self.spec.name if self.spec else None)
        self._data_key = key
        self._inspect_data(key, "" if name is UNSET else str(name), str(split), renames, self.spec,
                           config)

    @work(thread=True, exclusive=True, group="setup-data", exit_on_error=False)
    def _inspect_data(self, key: tuple, name: str, split: str, renames: dict[str, str],
                      spec: TrainerSpec | None, config: str | None) -> None:
        try:
            report = inspect_data(name, split, renames, spec, config)
        except Exception as exc:  # noqa: BLE001 - a preview problem is shown, never a crash
            report = DataReport(where=name, fits=None, message=f"cannot preview {name}: {exc}")
        self.post_message(self.DataInspected(key, report))

    def on_setup_screen_data_inspected(self, message: DataInspected) -> None:
        if message.key == self._data_key:
            self.query_one(DataPreview).show(message.report)

    # -- the field search ----------------------------------------------------------------------

    @on(FieldSearch.Picked)
    async def _field_picked(self, message: FieldSearch.Picked) -> None:
        name = message.field.name
        try:
            editor = self.query_one(f"#{editor_id(name)}", FieldEditor)
        except Exception:  # noqa: BLE001 - not in the form yet: add it under the common fields
            editor = self._editor(message.field)
            self.extra_names.append(name)
            self._order.setdefault(name, len(self._order))
            await self.query_one("#more-fields").mount(editor)
            self.query_one(FieldSearch).mark_shown(name)
        if editor.has_class("lora"):
            self.trl["use_peft"] = True
            self._sync_visibility()
            self._changed()
        editor.focus_control()
        editor.scroll_visible()

    def action_search_fields(self) -> None:
        if self.spec is None:
            self.notify("pick a trainer first", severity="warning")
            return
        search = self.query_one(FieldSearch)
        search.focus_input()
        search.scroll_visible()

    def action_focus_trainers(self) -> None:
        self.remove_class("-compact")
        self.query_one(TrainerPicker).focus()

    # -- save ----------------------------------------------------------------------------------

    def action_save(self) -> None:
        from cockpit.paths import user_presets_dir

        preset = self.current_preset()
        if preset is None:
            self.notify("pick a trainer first", severity="warning")
            return
        folder = user_presets_dir()
        name = self.source.stem if self.source is not None else f"my-{preset.trainer}"
        self.app.push_screen(SavePresetPrompt(str(folder), name), self._save_named)

    def _save_named(self, file_name: str | None) -> None:
        from cockpit.paths import user_presets_dir

        if not file_name:
            return
        path = user_presets_dir() / file_name
        if path.exists():
            def answered(yes: bool | None) -> None:
                if yes:
                    self._write_preset(path)

            self.app.push_screen(ConfirmScreen(f"{path} exists — overwrite it?", yes="Overwrite",
                                               danger=True), answered)
            return
        self._write_preset(path)

    def _write_preset(self, path: Path) -> None:
        preset = self.current_preset()
        if preset is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(preset.to_yaml(), encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot write {path}: {exc.strerror or exc}", title="save preset",
                        severity="error")
            return
        self.source = path
        self.saved_as = str(path)
        self.dirty = False
        self._refresh_preview()
        note = "" if self.can_launch or self.problem is None else f" (not valid yet: {self.problem})"
        self.notify(f"saved {path}{note}", title="preset saved")

    # -- launch --------------------------------------------------------------------------------

    def action_launch(self) -> None:
        if self.launching:
            return
        if not self.can_launch:
            if self.spec is None:
                reason = "pick a trainer first"
            elif self.input_errors:
                name, error = next(iter(self.input_errors.items()))
                reason = f"{name}: {error}"
            else:
                reason = self.problem or "still checking the preset — try again in a moment"
            self.notify(reason, title="cannot launch yet", severity="warning")
            return
        preset = self.current_preset()
        assert preset is not None
        self.launching = True
        button = self.query_one("#launch-button", Button)
        button.disabled = True
        button.label = "Launching…"
        self._launch(preset)

    @work(thread=True, exclusive=True, group="setup-launch", exit_on_error=False)
    def _launch(self, preset: Preset) -> None:
        from cockpit.run.launch import launch

        try:
            run = launch(preset, self.runs_dir)
        except CockpitError as exc:
            self.post_message(self.LaunchFailed(str(exc)))
            return
        except OSError as exc:
            self.post_message(self.LaunchFailed(f"cannot start the run: {exc}"))
            return
        self.post_message(self.Launched(run))

    def on_setup_screen_launched(self, message: Launched) -> None:
        self.launching = False
        self.dismiss(message.run)

    def on_setup_screen_launch_failed(self, message: LaunchFailed) -> None:
        self.launching = False
        button = self.query_one("#launch-button", Button)
        button.label = "Launch ^l"
        button.disabled = not self.can_launch
        self.notify(message.message, title="cannot launch", severity="error", timeout=10)

    # -- buttons and back ----------------------------------------------------------------------

    @on(Button.Pressed, "#launch-button")
    def _launch_pressed(self) -> None:
        self.action_launch()

    @on(Button.Pressed, "#save-button")
    def _save_pressed(self) -> None:
        self.action_save()

    def action_back(self) -> None:
        """Leave; a form with changes not saved to a preset asks first."""
        if not self.dirty or self.current_preset() is None:
            self.dismiss(None)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(None)

        what = "this new run" if self.source is None else self.source.name
        self.app.push_screen(ConfirmScreen(f"Discard the changes to {what}? They are not saved "
                                           "(ctrl+s saves them as a preset).", yes="Discard",
                                           danger=True), answered)


def _unknown_field(name: str, spec: TrainerSpec) -> ConfigField:
    """A key the preset holds that no config of the trainer has: shown so it can be fixed or
    cleared (validation names it, with the close match)."""
    return ConfigField(name=name, type="any", default=None, choices=None, group="unknown",
                       help=f"Not an option of {spec.config_class or spec.name}, the model config "
                            "or the script arguments — correct the value's key in the file, or "
                            "clear it to leave it out.")


def _script_extra_keys() -> set[str]:
    from cockpit.config.validate import SCRIPT_EXTRA_KEYS

    return set(SCRIPT_EXTRA_KEYS)
