"""Setup: a new run, or a preset opened for editing — trainer, model, data, training arguments,
launch target — or any training command; the preset YAML (or the command's run.yaml) and the
command lines previewed live, validated as you type, saved as a preset or launched.

The form is generated from the registry (TRL's own config dataclasses, read by the discovery
subprocess and cached), so a field TRL adds shows up without a code change. What the form adds up
to is a `cockpit.config.draft.Draft` (no Textual: values, dirty tracking, which field each
validation problem is about); this screen composes the widgets that show it and act on it —
the trainer picker, the form (`widgets/setup/form.SetupForm`, which posts each field's change),
the data preview (which checks the data it is asked about), the preview and verdict, the buttons
(`widgets/setup/actions.SetupActions`: saving and launching) — and runs validation. Everything
that touches the disk — the registry, the data preview, validation, launching — runs in a worker;
the screen is dismissed with the launched `RunFolder` (or None when the user goes back). Its
styles: setup.tcss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from cockpit.config.draft import COMMAND, Draft
from cockpit.config.presets import Preset
from cockpit.config.validate import Problem
from cockpit.errors import CockpitError
from cockpit.trainers.registry import Registry, TrainerSpec, known_config_keys
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.textual_fixes import Header
from cockpit.ui.widgets.footer import CockpitFooter
from cockpit.ui.widgets.setup.actions import SetupActions
from cockpit.ui.widgets.setup.catalogue import DATA_KEYS, script_extra_keys
from cockpit.ui.widgets.setup.data_preview import DataPreview
from cockpit.ui.widgets.setup.field_editor import FieldEditor, editor_id
from cockpit.ui.widgets.setup.field_search import FieldSearch
from cockpit.ui.widgets.setup.form import SetupForm
from cockpit.ui.widgets.setup.preset_preview import CommandPreview, PresetPreview, script_lines
from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt
from cockpit.ui.widgets.setup.suggest import CandidateSuggester, find_datasets, find_models
from cockpit.ui.widgets.setup.trainer_picker import TrainerPicker, unavailable_reason
from cockpit.ui.widgets.setup.values import for_the_form
from cockpit.ui.widgets.setup.verdict import Verdict

if TYPE_CHECKING:
    from cockpit.run.folder import RunFolder  # noqa: F401 - the screen's result type

STACK_BELOW = 110
"""Screen width under which the preview goes under the form instead of beside it."""
SHORT_BELOW = 26
"""Fewer rows (60x20), stacked: the preview pane keeps the verdict only (ctrl+l and ctrl+s are
in the footer), so the form has the rows to be filled in."""
VALIDATE_DELAY_S = 0.35
"""Validation (and the data check) waits this long after the last keystroke."""


class SetupScreen(Screen["RunFolder | None"]):
    HELP_TITLE = "New run form"
    CSS_PATH = "setup.tcss"

    BINDINGS = [
        Binding("ctrl+l", "launch", "Launch", id="setup.launch"),
        Binding("ctrl+s", "save", "Save preset", id="setup.save"),
        # ctrl+f is the key shown: it works from a text field too. `/` also searches, but only
        # where it would type nothing (an input takes it as a character).
        Binding("ctrl+f", "search_fields", "Search fields", id="setup.search"),
        Binding("slash", "search_fields", "Search fields", show=False, id="setup.search_slash"),
        Binding("ctrl+t", "focus_trainers", "Trainers", id="setup.trainers"),
        # Not ctrl+k: a text field's ctrl+k deletes to the end of the line, as everywhere else.
        # No text field binds ctrl+o, so it works from one without a priority binding.
        Binding("ctrl+o", "loss_mask", "Loss mask", id="setup.loss_mask"),
        Binding("escape", "back", "Back", id="setup.back"),
    ]

    @dataclass
    class RegistryLoaded(Message):
        """The trainers of the installed TRL (from the schema cache or a discovery run), and
        the accelerate configs it ships."""

        registry: Registry | None
        """The trainers, or None when they could not be read (then `error` says why)."""
        gpu: bool
        """Whether this machine has a GPU (some trainers need one)."""
        error: str | None
        """Why the trainers could not be read, with the fix."""
        configs: list[str] = field(default_factory=list)
        """The accelerate configs the installed TRL ships (zero3, fsdp2, ...)."""

    @dataclass
    class CandidatesFound(Message):
        """Local model folders and data files to complete the inputs with."""

        models: list[str]
        """Model folders found nearby."""
        datasets: list[str]
        """Data files found nearby."""

    @dataclass
    class Validated(Message):
        """The verdict of validation on one version of the draft."""

        key: str
        """The draft's content the verdict is about (a newer draft makes it stale)."""
        problems: list[Problem]
        """What stops a launch, each with the field it is about."""
        warnings: list[str]
        """What would run anyway, but is worth a look."""

    def __init__(self, runs_dir: Path, preset: Preset | None = None) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.preset_in = preset.copy() if preset is not None else None
        self.draft = Draft(preset)
        self.registry: Registry | None = None
        self.spec: TrainerSpec | None = None
        self.gpu = False
        self.accelerate_configs: list[str] = []
        self.model_suggester = CandidateSuggester()
        self.data_suggester = CandidateSuggester()
        self._timer: Timer | None = None

    # -- what tests read -----------------------------------------------------------------------

    @property
    def source(self) -> Path | None:
        return self.draft.source

    @property
    def dirty(self) -> bool:
        return self.draft.dirty

    @property
    def can_launch(self) -> bool:
        return self.query_one(SetupActions).can_launch

    def current_preset(self) -> Preset | None:
        """The preset the form adds up to (None until a trainer is picked, or for a command)."""
        return self.draft.preset()

    @property
    def form(self) -> SetupForm:
        return self.query_one(SetupForm)

    # -- layout --------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(icon="")  # Textual's ⭘ is double-width in many fonts
        with Horizontal(id="setup-body"):
            with Vertical(id="setup-trainers"):
                yield Static("[b]Trainer[/b]  [dim]Enter picks[/]", classes="pane-title")
                yield TrainerPicker(id="trainer-picker")
            with Horizontal(id="setup-main"):
                yield SetupForm(self.draft, model_suggester=self.model_suggester,
                                data_suggester=self.data_suggester, id="setup-form")
                with Vertical(id="setup-side"):
                    yield Static("[b]Preview[/b]  [dim]what will run[/]", classes="pane-title")
                    yield Verdict("", id="validation")
                    with VerticalScroll(id="preview-scroll", can_focus=False):
                        yield PresetPreview(id="preset-preview")
                    yield CommandPreview(id="command-preview")
                    yield SetupActions(self.draft, self.runs_dir, id="setup-buttons")
        yield CockpitFooter()

    def on_resize(self) -> None:
        self._fit_layout()

    def on_descendant_focus(self) -> None:
        self._fit_layout()

    def _fit_layout(self) -> None:
        """Once a trainer is picked the trainer list gives its room to the form (ctrl+t brings
        it back); below STACK_BELOW columns the preview goes under the form, so inputs are wide
        enough to type in."""
        picked = self.spec is not None or self.draft.mode == COMMAND
        compact = picked and self.focused is not self.query_one(TrainerPicker)
        stacked = 0 < self.size.width < STACK_BELOW
        short = stacked and 0 < self.size.height < SHORT_BELOW
        for name, wanted in (("-compact", compact), ("-stacked", stacked), ("-short", short)):
            if wanted != self.has_class(name):
                self.set_class(wanted, name)
        self.call_after_refresh(self._fit_labels)

    def _fit_labels(self) -> None:
        """Narrower field names when the form is narrow (120 columns), so inputs stay usable."""
        form = self.query_one("#setup-form")
        form.set_class(0 < form.size.width < 72, "-narrow")

    def on_mount(self) -> None:
        self.sub_title = f"new run · {self.runs_dir}" if self.preset_in is None else \
            f"preset {self.preset_in.name} · {self.runs_dir}"
        self.query_one(TrainerPicker).focus()
        self._refresh_preview()
        self.form.wait("loading the trainers of the installed TRL", "the first time imports TRL")
        self._load_registry()
        self._find_candidates()

    # -- workers: registry, completion candidates ---------------------------------------------

    @work(thread=True, exclusive=True, group="setup-registry", exit_on_error=False)
    def _load_registry(self) -> None:
        from cockpit.config.launcher import trl_accelerate_configs
        from cockpit.config.validate import has_gpu
        from cockpit.trainers.registry import load_registry

        try:
            registry = load_registry()
        except CockpitError as exc:
            self.post_message(self.RegistryLoaded(None, False, str(exc)))
            return
        self.post_message(self.RegistryLoaded(registry, has_gpu(), None, list(trl_accelerate_configs())))

    @work(thread=True, exclusive=True, group="setup-candidates", exit_on_error=False)
    def _find_candidates(self) -> None:
        from cockpit import demo

        cwd = Path.cwd()
        models = find_models(cwd, demo.demo_dir() / "models", demo.MODEL_NAMES)
        datasets = find_datasets(cwd, demo.DATA_FORMATS)
        self.post_message(self.CandidatesFound(models, datasets))

    def on_setup_screen_candidates_found(self, message: CandidatesFound) -> None:
        self.model_suggester.set_candidates(message.models)
        self.data_suggester.set_candidates(message.datasets)

    async def on_setup_screen_registry_loaded(self, message: RegistryLoaded) -> None:
        info = self.form.show_info
        if message.registry is None:
            info(Content.from_markup("[b $text-error]✗ cannot read the TRL trainers:[/] $err",
                                     err=message.error or "?"))
            self.notify(message.error or "cannot read the TRL trainers", severity="error",
                        title="setup")
            return
        self.registry, self.gpu = message.registry, message.gpu
        self.accelerate_configs = message.configs
        wanted = self.preset_in.trainer if self.preset_in is not None else None
        picker = self.query_one(TrainerPicker)
        picker.show(self.registry.all_known(), gpu=self.gpu, current=wanted)
        if wanted is None:
            info(Content.from_markup(
                "[b]← Pick a trainer[/b] (arrows, Enter), or [b]command[/b] for your own "
                "training script. [dim]$n trainers of TRL $v; greyed ones cannot run here, "
                "with the reason.[/]", n=str(len(self.registry.trainers)), v=self.registry.trl_version))
            return
        try:
            spec = self.registry.get(wanted)
        except CockpitError as exc:
            info(Content.from_markup(
                "[b $text-error]✗ $err[/]\n[dim]Pick another trainer on the left; the preset's "
                "values are kept.[/]", err=str(exc)))
            return
        reason = unavailable_reason(spec, self.gpu)
        if reason:
            info(Content.from_markup("[b $text-error]✗ $t: $r[/]", t=spec.name, r=reason))
            return
        await self.pick_trainer(spec, keep_unknown=True)

    # -- choosing the trainer, or a command ----------------------------------------------------

    @on(TrainerPicker.OptionHighlighted, "#trainer-picker")
    def _trainer_highlighted(self, message: TrainerPicker.OptionHighlighted) -> None:
        """Before a trainer is picked, the highlighted one's summary (the list has one line each)."""
        picker = self.query_one(TrainerPicker)
        spec = picker.specs.get(message.option.id or "")
        if spec is None or self.spec is not None or self.draft.mode == COMMAND:
            return
        reason = picker.reasons.get(spec.name)
        registry = self.registry
        self.form.show_info(Content.from_markup(
            "[b]$name[/b]  [i]$title[/]\n$summary\n" + ("[b $text-error]✗ $reason[/]\n" if reason else "")
            + "[dim]← arrows choose, Enter picks, [b]command[/b] runs your own script. $n trainers of "
              "TRL $v; greyed ones cannot run here, with the reason.[/]",
            name=spec.name, title=spec.title, summary=spec.summary, reason=reason or "",
            n=str(len(registry.trainers)) if registry else "?", v=registry.trl_version if registry else "?"))

    @on(TrainerPicker.Picked)
    async def _picked(self, message: TrainerPicker.Picked) -> None:
        await self.pick_trainer(message.spec)
        self.call_after_refresh(self._focus_field, "model_name_or_path")

    @on(TrainerPicker.CommandPicked)
    async def _command_picked(self) -> None:
        await self.pick_command()
        self.call_after_refresh(self._focus_field, "command")

    async def pick_trainer(self, spec: TrainerSpec, *, keep_unknown: bool = False) -> None:
        """Build the form for `spec`. Values carry over; keys the new trainer does not know are
        dropped (unless the form is being filled from a preset: validation names them)."""
        assert self.registry is not None
        known = None if keep_unknown else known_config_keys(spec) | script_extra_keys()
        dropped = self.draft.pick_trainer(spec.name, known)
        if dropped:
            self.notify(f"{spec.name} does not take {', '.join(dropped)} — left out", severity="warning")
        self.spec = spec
        self.remove_class("-command")
        self.query_one(SetupActions).refresh_buttons(saveable=True)
        picker = self.query_one(TrainerPicker)
        picker.highlighted = picker.get_option_index(spec.name)
        self.form.show_trainer_info(spec)
        await self.form.build_trainer(spec, self.registry, self.accelerate_configs)
        self._changed(data=True)

    async def pick_command(self) -> None:
        """Any training command, run unchanged (script mode)."""
        self.draft.use_command()
        self.spec = None
        self.add_class("-command")
        self.query_one(SetupActions).refresh_buttons(saveable=False)  # a preset holds a trainer's settings
        self.form.show_command_info()
        await self.form.build_command(self.accelerate_configs)
        self._changed()

    def _focus_field(self, name: str) -> None:
        try:
            editor = self.query_one(f"#{editor_id(name)}", FieldEditor)
        except Exception:  # noqa: BLE001 - the form may not hold that field
            return
        editor.focus_control()
        editor.scroll_visible()

    # -- changes -------------------------------------------------------------------------------

    @on(FieldEditor.Changed)
    def _field_changed(self, message: FieldEditor.Changed) -> None:
        message.stop()
        self.draft.edit(message.name, message.value, message.error)
        if message.name in ("use_peft", "trust_remote_code"):
            self.form.sync_visibility()
        self._changed(data=message.name in DATA_KEYS)

    def _changed(self, *, data: bool = False) -> None:
        """Something in the form changed: preview now, validate (and check data) shortly."""
        self._refresh_preview()
        self.draft.valid_key = None
        self._show_verdict(pending=True)
        if data:
            self.query_one(DataPreview).forget()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(VALIDATE_DELAY_S, self._check_now)

    def _refresh_preview(self) -> None:
        draft = self.draft
        if draft.mode == COMMAND:
            self.query_one(PresetPreview).show_yaml(draft.script_yaml())
            try:
                words = draft.command_words()
            except ValueError:
                words = draft.command.split()
            self.query_one(CommandPreview).show_lines(
                script_lines(words, draft.cwd, draft.name, draft.script_launcher()))
            return
        preset = draft.preset()
        cli = self.spec.cli_command if self.spec else None
        saved_as = None if draft.dirty else draft.saved_as
        self.query_one(PresetPreview).show(preset)
        self.query_one(CommandPreview).show(preset, cli, saved_as)

    # -- validation ----------------------------------------------------------------------------

    def _check_now(self) -> None:
        self._timer = None
        key = self.draft.key()
        if key is None or (self.registry is None and self.draft.mode != COMMAND):
            return
        preview = self.query_one(DataPreview)
        if self.draft.mode != COMMAND and preview.key is None:
            preview.check(self.draft, self.spec, self.registry)
        if self.draft.input_errors:
            self._show_verdict()
            return
        self._validate(key)

    @work(thread=True, exclusive=True, group="setup-validate", exit_on_error=False)
    def _validate(self, key: str) -> None:
        from cockpit.config.validate import ValidationError, validate

        draft = self.draft
        if draft.mode == COMMAND:
            self.post_message(self.Validated(key, draft.command_problems(), []))
            return
        preset = draft.preset()
        if preset is None:
            return
        try:
            plan = validate(preset, self.registry)
        except ValidationError as exc:
            self.post_message(self.Validated(key, exc.problems, []))
            return
        except CockpitError as exc:
            self.post_message(self.Validated(key, [Problem(None, str(exc))], []))
            return
        except Exception as exc:  # noqa: BLE001 - a bug in a check must not look like "valid"
            self.post_message(self.Validated(key, [Problem(None, f"cannot check the preset: {exc}")], []))
            return
        self.post_message(self.Validated(key, [], list(plan.warnings)))

    def on_setup_screen_validated(self, message: Validated) -> None:
        problems = [Problem(p.field, for_the_form(p.message)) for p in message.problems]
        if self.draft.accept_verdict(message.key, problems, [for_the_form(w) for w in message.warnings]):
            self._show_verdict()

    def _show_verdict(self, pending: bool = False) -> None:
        draft = self.draft
        editors = {e.field.name: e for e in self.query(FieldEditor)}
        marked = {} if pending or not draft.checked else draft.field_problems(editors)
        for name, editor in editors.items():
            editor.set_problem(marked.get(name))
        self.query_one(Verdict).show(draft, pending=pending)
        self.query_one(SetupActions).refresh_buttons()

    # -- the field search ----------------------------------------------------------------------

    @on(FieldSearch.Picked)
    async def _field_picked(self, message: FieldSearch.Picked) -> None:
        editor = await self.form.add_field(message.field)
        if editor.has_class("lora"):
            self.draft.set("use_peft", True)
            self.form.sync_visibility()
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

    def action_loss_mask(self) -> None:
        """SFT: a few rows with the tokens the loss trains on marked, and what max_length cuts."""
        from cockpit.findings.sft_data import is_sft
        from cockpit.ui.screens.loss_mask import LossMaskScreen

        preset = self.draft.preset() if self.draft.mode != COMMAND else None
        if preset is None or not is_sft(preset.trainer):
            self.notify("the loss mask is for an SFT preset: pick the sft trainer, a model and data",
                        severity="warning")
            return
        self.app.push_screen(LossMaskScreen(preset, self.registry))

    def action_focus_trainers(self) -> None:
        self.remove_class("-compact")
        self.query_one(TrainerPicker).focus()

    # -- save, launch, back ----------------------------------------------------------------------

    def action_save(self) -> None:
        """Ask for the preset's name (and before an overwrite); the buttons write it."""
        from cockpit.paths import user_presets_dir

        if self.draft.mode == COMMAND:
            self.notify("a command is launched as it is — presets hold a trainer's settings",
                        severity="warning")
            return
        preset = self.current_preset()
        if preset is None:
            self.notify("pick a trainer first", severity="warning")
            return
        name = self.source.stem if self.source is not None else f"my-{preset.trainer}"
        self.app.push_screen(SavePresetPrompt(str(user_presets_dir()), name), self._save_named)

    def _save_named(self, file_name: str | None) -> None:
        from cockpit.paths import user_presets_dir

        if not file_name:
            return
        path = user_presets_dir() / file_name
        actions = self.query_one(SetupActions)
        if path.exists():
            def answered(yes: bool | None) -> None:
                if yes:
                    actions.write_preset(path)

            self.app.push_screen(ConfirmScreen(f"{path} exists — overwrite it?", yes="Overwrite",
                                               danger=True), answered)
            return
        actions.write_preset(path)

    def on_setup_actions_save_asked(self) -> None:
        self.action_save()

    def on_setup_actions_saved(self) -> None:
        self._refresh_preview()

    def action_launch(self) -> None:
        self.query_one(SetupActions).launch()

    def on_setup_actions_launched(self, message: SetupActions.Launched) -> None:
        self.dismiss(message.run)

    def action_back(self) -> None:
        """Leave; a form with changes not saved to a preset asks first."""
        if not self.dirty or self.draft.key() is None:
            self.dismiss(None)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(None)

        if self.draft.mode == COMMAND:
            question = "Discard this command? It has not been launched."
        else:
            what = "this new run" if self.source is None else self.source.name
            question = (f"Discard the changes to {what}? They are not saved "
                        "(ctrl+s saves them as a preset).")
        self.app.push_screen(ConfirmScreen(question, yes="Discard", danger=True), answered)
