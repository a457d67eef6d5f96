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
"""

from __future__ import annotations

import time
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.worker import get_current_worker

from cockpit.errors import CockpitError, failure
from cockpit.metrics.rundata import RunData, relabel
from cockpit.run.folder import LIVE_STATES, RunFolder
from cockpit.run.journal import Record
from cockpit.ui.screens.path_prompt import PathPrompt
from cockpit.ui.screens.run_view import RunView

FOLLOW_POLL_S = 0.5
STATUS_EVERY_S = 2.0
FILES_POLL_S = 1.0


def written_elsewhere(path: str) -> Path | None:
    """The output dir to follow as files, when `path` is one that no cockpit run folder holds."""
    p = Path(path).absolute()
    if not p.is_dir() or p.name.startswith("checkpoint-") \
            or any((c / "status.json").is_file() for c in (p, *list(p.parents)[:3])):
        return None  # a checkpoint never changes; a cockpit run's journal is followed instead
    if (p / "trainer_state.json").is_file() or any(p.glob("checkpoint-*")) or (p / "completions").is_dir():
        return p
    return None


def files_signature(folder: Path) -> tuple:
    """What changes when a trainer writes a checkpoint or a completions file."""
    sig = []
    for f in (folder / "trainer_state.json", *folder.glob("checkpoint-*/trainer_state.json")):
        try:
            st = f.stat()
        except OSError:
            continue
        sig.append((str(f), st.st_mtime_ns, st.st_size))
    comp = folder / "completions"
    count = sum(1 for _ in comp.glob("completions_*.parquet")) if comp.is_dir() else 0
    return (tuple(sorted(sig)), count)


def _live_run(path: str) -> tuple[RunFolder | None, bool]:
    """(the live run a path belongs to, whether the path is that run's journal); (None, False)
    when it belongs to no run, or to one that has ended."""
    from cockpit.run.summaries import effective_state

    p = Path(path).absolute()
    whole = (p.is_dir() and (p / "events.jsonl").is_file()) or p.name == "events.jsonl"
    folder = p if p.is_dir() else p.parent
    for candidate in (folder, *list(folder.parents)[:3]):
        if (candidate / "status.json").is_file() and (candidate / "events.jsonl").is_file():
            run = RunFolder(candidate)
            try:
                live = effective_state(run)[0] in LIVE_STATES
            except (CockpitError, OSError):
                return None, False
            if not live:
                return None, False
            return run, whole and (p == candidate or p == candidate / "events.jsonl")
    return None, False


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
        data: RunData
        """The source, as read."""
        _: KW_ONLY
        following: bool = False
        """The source is a live run's journal, tailed from now on."""
        snapshot_of: str | None = None
        """The live run this path is a fixed part of (a checkpoint, its output dir)."""

    @dataclass
    class Polled(Message):
        """New journal lines of a followed source, and its state when that changed."""

        slot: int
        """Which source."""
        records: list[Record]
        """Journal records appended since the last poll."""
        state: str | None
        """The run's new state, or None when it did not change."""

    @dataclass
    class Replaced(Message):
        """A followed output dir changed: the source read again."""

        slot: int
        """Which source."""
        data: RunData | None
        """The source read again; None on the first message, which only starts the clock."""
        at: float
        """When (time.time()) the change was seen."""

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
        for p in paths:
            self._queue(p)

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
        from cockpit.metrics.replay_loader import load_replay
        from cockpit.metrics.rundata import load_journal

        try:
            data = load_replay(path)
            run, whole = _live_run(path)
            if run is not None and whole:
                # Read it again here, keeping the tailer where this read ended: lines written
                # after the loader's pass must be neither lost nor counted twice.
                fresh, tailer = load_journal(run.events, data.label)
                fresh.name, fresh.notes = data.name, data.notes
                self.post_message(self.Loaded(slot, fresh, following=True))
                self._follow(slot, run, tailer)
                return
        except CockpitError as exc:
            self.post_message(self.Failed(path, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - an unexpected file must not take the app down
            self.post_message(self.Failed(path, f"{path}: cannot read it ({failure(exc)})"))
            return
        self.post_message(self.Loaded(slot, data, snapshot_of=run.name if run else None))
        folder = written_elsewhere(path)
        if folder is not None:
            self._follow_files(slot, path, folder)

    def _follow_files(self, slot: int, path: str, folder: Path) -> None:
        """Read the output dir again whenever a checkpoint or a completions file lands in it."""
        from cockpit.metrics.replay_loader import load_replay

        worker = get_current_worker()
        seen = files_signature(folder)
        self.post_message(self.Replaced(slot, None, time.time()))
        while not worker.is_cancelled:
            time.sleep(FILES_POLL_S)
            now = files_signature(folder)
            if now == seen:
                continue
            time.sleep(0.2)  # transformers writes trainer_state.json without a rename: let it finish
            try:
                data = load_replay(path)
            except Exception:  # noqa: BLE001 - a half-written file: try again at the next change
                continue
            seen = now
            self.post_message(self.Replaced(slot, data, time.time()))

    def _follow(self, slot: int, run: RunFolder, tailer) -> None:
        """Tail a live run's journal (in the load worker's thread) until it ends or the screen
        goes; one message per poll that found something."""
        from cockpit.run.summaries import effective_state

        worker = get_current_worker()
        last_status = time.monotonic()
        while not worker.is_cancelled:
            time.sleep(FOLLOW_POLL_S)
            records = tailer.poll()
            state = None
            if time.monotonic() - last_status >= STATUS_EVERY_S:
                last_status = time.monotonic()
                try:
                    state = effective_state(run)[0]
                except (CockpitError, OSError):
                    state = None
            if records or state is not None:
                self.post_message(self.Polled(slot, records, state))
            if state is not None and state not in LIVE_STATES:
                return

    def on_replay_screen_loaded(self, message: Loaded) -> None:
        self._slots[message.slot] = message.data
        self.sources = [s for s in self._slots if s is not None]
        relabel(self.sources)
        if message.following:
            self._live[message.slot] = message.data.state or "running"
            self.notify(f"{message.data.label} is still training: following it live")
        elif message.snapshot_of:
            # Named by its path: alone, a checkpoint's label is just its run's name.
            self.notify(f"{self.paths[message.slot]} is a snapshot: run {message.snapshot_of} "
                        "is still training and this will not change. Add the run folder to "
                        "follow it.", timeout=8)
        for note in message.data.notes:
            self.notify(f"{message.data.label}: {note}", severity="warning")
        self.request_redraw()

    def on_replay_screen_polled(self, message: Polled) -> None:
        data = self._slots[message.slot]
        if data is None:
            return
        data.apply(message.records)
        if message.state is not None:
            self._live[message.slot] = message.state  # an ended one keeps its final state
        self.request_redraw()

    def on_replay_screen_replaced(self, message: Replaced) -> None:
        if message.data is not None:
            # Labelled afresh: the newest checkpoint read (`out/checkpoint-20`), not the first.
            self._slots[message.slot] = message.data
            self.sources = [s for s in self._slots if s is not None]
            relabel(self.sources)
        self._files[message.slot] = message.at
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
