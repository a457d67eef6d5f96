"""Replay and compare: any number of sources overlaid in the same widgets.

Each path is parsed in its own worker; a path that cannot be read becomes one
notification naming it, and the other sources stay.

A run folder (or its events.jsonl) whose run is still live is followed: its
journal is tailed like the live screen does, so a compare of a training run
keeps moving, and the header shows the run's state rather than "replay". Any
other path inside a live run (its output dir, a checkpoint) is a snapshot of
something still changing: a notification says so once.

An output dir that belongs to no cockpit run (a training started elsewhere) is
followed as files: each new checkpoint's trainer_state.json, and each new
completions/*.parquet, is read as it lands, and the header says so with the time
of the last update.

What a path is, and its following, are `metrics.follow`'s (`open_path`): the screen runs it in
a worker per path and gets messages.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.worker import get_current_worker

from cockpit.errors import CockpitError, failure
from cockpit.metrics.follow import Follower, Opened, Update, open_path
from cockpit.metrics.rundata import RunData, relabel
from cockpit.ui.screens.path_prompt import PathPrompt
from cockpit.ui.screens.run_view import RunView


def _open_early(path: str) -> Future[tuple[Opened, Follower | None]]:
    """`open_path(path)` started now, on a daemon thread (quitting never waits for it)."""
    fut: Future[tuple[Opened, Follower | None]] = Future()

    def read() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(open_path(path))
        except BaseException as exc:  # noqa: BLE001 - handed to the load worker, which says it
            fut.set_exception(exc)

    threading.Thread(target=read, name="replay-open", daemon=True).start()
    return fut


class ReplayScreen(RunView):
    HELP_TITLE = "Replay"
    judges_findings = True
    BINDINGS = [
        Binding("a", "add_source", "Add run", id="replay.add"),
        Binding("f", "cycle_detail", "Next source's details", id="replay.cycle_detail"),
        Binding("w", "export", "Export CSV+PNG", show=False,
                tooltip="each source's metrics.csv and panels.png into the current folder",
                id="replay.export"),
    ]

    @dataclass
    class Loaded(Message):
        """A path read: the source for slot `slot`."""

        slot: int
        """Which of the screen's paths it is."""
        opened: Opened
        """The source as read, and whether it is followed live or a snapshot of a live run."""

    @dataclass
    class Polled(Message):
        """What following a source found: new journal lines and the run's state when it changed
        (a live run), or the source read again (an output dir written elsewhere)."""

        slot: int
        """Which source."""
        update: Update
        """What changed."""

    @dataclass
    class Failed(Message):
        """A path could not be read; the other sources stay."""

        path: str
        """The path as the user gave it."""
        message: str
        """Why, with the fix."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths: list[str] = []
        self._slots: list[RunData | None] = []
        self._detail_index = 0
        self._live: dict[int, str] = {}
        """Slots followed live, with the run's state (its last one once it ended)."""
        self._files: dict[int, float] = {}
        """Slots followed as files (an output dir written elsewhere), with the last update's time."""
        self._early: dict[int, Future[tuple[Opened, Follower | None]]] = {}
        """The files named at the start, already being read while the screen composes (the read
        runs in its own process: composing and reading overlap on two cores)."""
        for p in paths:
            self._early[self._queue(p)] = _open_early(p)

    def checkpoints_source(self) -> tuple[str | None, bool]:
        return (self.paths[0] if self.paths else None), False

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
        detail = self.detail
        for slot, state in self._live.items():
            if self._slots[slot] is detail:
                return state
        for slot, at in self._files.items():
            if self._slots[slot] is detail:
                return "following files · updated " + time.strftime("%H:%M:%S", time.localtime(at))
        return "replay"

    @work(thread=True, group="load", exit_on_error=False)
    def load(self, slot: int, path: str) -> None:
        worker = get_current_worker()
        early = self._early.pop(slot, None)
        try:
            opened, follower = early.result() if early is not None else open_path(path)
        except CockpitError as exc:
            self.post_message(self.Failed(path, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - an unexpected file must not take the app down
            self.post_message(self.Failed(path, f"{path}: cannot read it ({failure(exc)})"))
            return
        self.post_message(self.Loaded(slot, opened))
        if follower is not None:
            for update in follower.updates(lambda: worker.is_cancelled):
                self.post_message(self.Polled(slot, update))

    def on_replay_screen_loaded(self, message: Loaded) -> None:
        opened = message.opened
        self._slots[message.slot] = opened.data
        self.sources = [s for s in self._slots if s is not None]
        relabel(self.sources)
        if opened.following:
            self._live[message.slot] = opened.state or opened.data.state or "running"
            self.notify(f"{opened.data.label} is still training: following it live")
        elif opened.snapshot_of:
            # Named by its path: alone, a checkpoint's label is just its run's name.
            self.notify(f"{self.paths[message.slot]} is a snapshot: run {opened.snapshot_of} "
                        "is still training and this will not change. Add the run folder to "
                        "follow it.", timeout=8)
        for note in opened.data.notes:
            self.notify(f"{opened.data.label}: {note}", severity="warning")
        self.request_redraw()

    def on_replay_screen_polled(self, message: Polled) -> None:
        update = message.update
        if update.data is not None:
            # Labelled afresh: the newest checkpoint read (`out/checkpoint-20`), not the first.
            self._slots[message.slot] = update.data
            self.sources = [s for s in self._slots if s is not None]
            relabel(self.sources)
        data = self._slots[message.slot]
        if data is None:
            return
        if update.records:
            data.apply(update.records)
        if update.state is not None:
            self._live[message.slot] = update.state  # an ended one keeps its final state
        if update.at is not None:
            self._files[message.slot] = update.at
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

    def action_export(self) -> None:
        """Every source on screen (an overlay writes one CSV and PNG per source, each named after
        its label), into the folder cockpit was started in."""
        shown = [(self.paths[i], s) for i, s in enumerate(self._slots) if s is not None]
        if not shown:
            self.notify("nothing loaded to export yet", severity="warning")
            return
        self.notify(f"exporting {', '.join(s.label for _, s in shown)}…", timeout=2)
        self._export(shown)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, shown: list[tuple[str, RunData]]) -> None:
        from cockpit.ui.exporting import export_and_notify, file_stem

        export_and_notify(self, [(path, Path.cwd(), file_stem(data.label), data) for path, data in shown])

    def action_cycle_detail(self) -> None:
        if len(self.sources) < 2:
            self.notify("only one source")
            return
        self._detail_index = (self._detail_index + 1) % len(self.sources)
        self.notify(f"details of {self.sources[self._detail_index].label}")
