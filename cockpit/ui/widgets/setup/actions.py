"""Save preset and Launch: the setup screen's two buttons and the work behind them.

Saving writes the draft as a preset (the screen asks for its name, and before an overwrite);
launching starts it (a preset through `launch`, a command through `prepare_script` +
`launch_prepared`) in a worker. The widget is given the draft and the runs folder; it tells the
screen what happened (`SaveAsked`, `Saved`, `Launched`) and says itself what went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button

from cockpit.config.draft import COMMAND, Draft
from cockpit.errors import CockpitError
from cockpit.run.folder import RunFolder

LAUNCH_LABEL = "Launch ^l"


class SetupActions(Horizontal):
    """The buttons; `launch()` is the screen's ctrl+l too."""

    class SaveAsked(Message):
        """Save preset pressed: the screen asks for a name (`write_preset` then writes it)."""

    @dataclass
    class Saved(Message):
        """The draft was written as a preset (and marked saved)."""

        path: Path
        """The preset file."""

    @dataclass
    class Launched(Message):
        """The run started."""

        run: RunFolder
        """Its folder."""

    @dataclass
    class LaunchFailed(Message):
        """The launch was refused or failed (the worker's word, shown by the widget)."""

        message: str
        """Why, with the fix."""

    def __init__(self, draft: Draft, runs_dir: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.draft = draft
        self.runs_dir = runs_dir
        self.launching = False
        """A launch is under way: the button says so, and a second one is not started."""

    def compose(self) -> ComposeResult:
        yield Button("Save preset ^s", id="save-button", compact=True)
        yield Button(LAUNCH_LABEL, id="launch-button", variant="success", disabled=True, compact=True)

    @property
    def can_launch(self) -> bool:
        return not self.launching and self.draft.can_launch()

    def refresh_buttons(self, *, saveable: bool | None = None) -> None:
        """Launch enabled when the draft can be launched; Save when `saveable` says so."""
        self.query_one("#launch-button", Button).disabled = not self.can_launch
        if saveable is not None:
            self.query_one("#save-button", Button).disabled = not saveable

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "launch-button":
            self.launch()
        elif event.button.id == "save-button":
            self.post_message(self.SaveAsked())

    # -- save ----------------------------------------------------------------------------------

    def write_preset(self, path: Path) -> None:
        """The draft written as the preset `path` (the screen asked for its name)."""
        preset = self.draft.preset()
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
        self.post_message(self.Saved(path))
        problem = self.draft.lines()[0][1] if self.draft.checked and self.draft.problems else None
        note = "" if self.can_launch or problem is None else f" (not valid yet: {problem})"
        self.notify(f"saved {path}{note}", title="preset saved")

    # -- launch --------------------------------------------------------------------------------

    def launch(self) -> None:
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

    def on_setup_actions_launched(self) -> None:
        self.launching = False  # the message goes on to the screen, which leaves with the run

    def on_setup_actions_launch_failed(self, message: LaunchFailed) -> None:
        message.stop()
        self.launching = False
        button = self.query_one("#launch-button", Button)
        button.label = LAUNCH_LABEL
        button.disabled = not self.can_launch
        self.notify(message.message, title="cannot launch", severity="error", timeout=10)
