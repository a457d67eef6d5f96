"""Replay and compare: any number of sources overlaid in the same widgets.

Each path is parsed in its own worker; a path that cannot be read becomes one
notification naming it, and the other sources stay.
"""

from __future__ import annotations

from textual import work
from textual.binding import Binding
from textual.message import Message

from cockpit.core.errors import CockpitError
from cockpit.ui.rundata import RunData, relabel
from cockpit.ui.screens.path_prompt import PathPrompt
from cockpit.ui.screens.run_view import RunView


class ReplayScreen(RunView):
    BINDINGS = [
        Binding("a", "add_source", "Add run", id="replay.add"),
        Binding("f", "cycle_detail", "Next source's details", id="replay.cycle_detail"),
    ]

    class Loaded(Message):
        def __init__(self, slot: int, data: RunData) -> None:
            super().__init__()
            self.slot = slot
            self.data = data

    class Failed(Message):
        def __init__(self, path: str, message: str) -> None:
            super().__init__()
            self.path = path
            self.message = message

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths: list[str] = []
        self._slots: list[RunData | None] = []
        self._detail_index = 0
        for p in paths:
            self._queue(p)

    def _queue(self, path: str) -> int:
        self.paths.append(path)
        self._slots.append(None)
        return len(self._slots) - 1

    def on_mount(self) -> None:
        super().on_mount()
        for slot, path in enumerate(self.paths):
            self.load(slot, path)

    @property
    def detail(self) -> RunData | None:
        if not self.sources:
            return None
        return self.sources[self._detail_index % len(self.sources)]

    def header_state(self) -> str | None:
        return "replay"

    @work(thread=True, group="load", exit_on_error=False)
    def load(self, slot: int, path: str) -> None:
        from cockpit.ui.replay_loader import load_replay

        try:
            data = load_replay(path)
        except CockpitError as exc:
            self.post_message(self.Failed(path, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - an unexpected file must not take the app down
            self.post_message(self.Failed(path, f"{path}: cannot read it ({type(exc).__name__}: {exc})"))
            return
        self.post_message(self.Loaded(slot, data))

    def on_replay_screen_loaded(self, message: Loaded) -> None:
        self._slots[message.slot] = message.data
        self.sources = [s for s in self._slots if s is not None]
        relabel(self.sources)
        for note in message.data.notes:
            self.notify(f"{message.data.label}: {note}", severity="warning")
        self.request_redraw()

    def on_replay_screen_failed(self, message: Failed) -> None:
        msg = message.message if message.path in message.message else f"{message.path}: {message.message}"
        self.notify(msg, title="cannot open", severity="error", timeout=10)
        self._failed = getattr(self, "_failed", 0) + 1
        if not self.sources and self._failed == len(self.paths):
            from cockpit.ui.widgets.run.run_header import RunHeader

            self.query_one(RunHeader).update("nothing to show — [b]a[/b] adds a path, "
                                             "[b]escape[/b] goes home")

    def action_add_source(self) -> None:
        def chosen(paths: list[str] | None) -> None:
            for p in paths or []:
                self.load(self._queue(p), p)

        self.app.push_screen(PathPrompt("Add a run to the overlay"), chosen)

    def action_cycle_detail(self) -> None:
        if len(self.sources) < 2:
            self.notify("only one source")
            return
        self._detail_index = (self._detail_index + 1) % len(self.sources)
        self.notify(f"details of {self.sources[self._detail_index].label}")
