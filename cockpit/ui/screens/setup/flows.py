"""What the setup screen does with its draft: save it as a preset (asking before an overwrite),
launch it (a preset through `launch`, a command through `prepare_script` + `launch_prepared`,
both in a worker), and leave (asking before changes that were not saved are dropped).

A mixin of `SetupScreen`, kept apart so the screen module holds the form and its checks."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.message import Message
from textual.widgets import Button

from cockpit.config.draft import COMMAND
from cockpit.errors import CockpitError
from cockpit.run.folder import RunFolder
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.screens.setup.base import SetupBase
from cockpit.ui.widgets.setup.save_prompt import SavePresetPrompt

LAUNCH_LABEL = "Launch ^l"


class SaveAndLaunch(SetupBase):
    class Launched(Message, namespace="setup_screen"):
        def __init__(self, run: RunFolder) -> None:
            super().__init__()
            self.run = run

    class LaunchFailed(Message, namespace="setup_screen"):
        def __init__(self, message: str) -> None:
            super().__init__()
            self.message = message

    # -- save ----------------------------------------------------------------------------------

    def action_save(self) -> None:
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
        self.draft.mark_saved(path)
        self._refresh_preview()
        problem = self.draft.lines()[0][1] if self.draft.checked and self.draft.problems else None
        note = "" if self.can_launch or problem is None else f" (not valid yet: {problem})"
        self.notify(f"saved {path}{note}", title="preset saved")

    # -- launch --------------------------------------------------------------------------------

    def action_launch(self) -> None:
        if self.launching:
            return
        if not self.can_launch:
            self.notify(self.draft.blocker(), title="cannot launch yet", severity="warning")
            return
        self.launching = True
        button = self.query_one("#launch-button", Button)
        button.disabled = True
        button.label = "Launching…"
        self._launch()

    @work(thread=True, exclusive=True, group="setup-launch", exit_on_error=False)
    def _launch(self) -> None:
        from cockpit.launch.plan import launch, launch_prepared

        draft = self.draft
        try:
            if draft.mode == COMMAND:
                from cockpit.launch.script import prepare_script

                run = prepare_script(draft.command_words(), cwd=Path(draft.cwd).expanduser(),
                                     runs_dir=self.runs_dir, name=draft.name or None,
                                     launcher=draft.script_launcher())
                run = launch_prepared(run)
            else:
                preset = draft.preset()
                assert preset is not None
                run = launch(preset, self.runs_dir)
        except (CockpitError, ValueError) as exc:
            self.post_message(self.LaunchFailed(str(exc)))
            return
        except OSError as exc:
            self.post_message(self.LaunchFailed(f"cannot start the run: {exc}"))
            return
        self.post_message(self.Launched(run))

    def on_setup_screen_launched(self, message: SaveAndLaunch.Launched) -> None:
        self.launching = False
        self.dismiss(message.run)

    def on_setup_screen_launch_failed(self, message: SaveAndLaunch.LaunchFailed) -> None:
        self.launching = False
        button = self.query_one("#launch-button", Button)
        button.label = LAUNCH_LABEL
        button.disabled = not self.can_launch
        self.notify(message.message, title="cannot launch", severity="error", timeout=10)

    # -- buttons and back ----------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "launch-button":
            event.stop()
            self.action_launch()
        elif event.button.id == "save-button":
            event.stop()
            self.action_save()

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
