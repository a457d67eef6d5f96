"""Home: the runs of the runs folder and the presets, one key from everything else."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from cockpit.errors import CockpitError
from cockpit.ui.screens.confirm import ConfirmScreen
from cockpit.ui.screens.name_prompt import NamePrompt
from cockpit.ui.screens.path_prompt import PathPrompt
from cockpit.ui.text import markup
from cockpit.ui.textual_fixes import Header
from cockpit.ui.widgets.footer import CockpitFooter
from cockpit.ui.widgets.home.preset_list import PresetList
from cockpit.ui.widgets.home.runs_table import RunsTable
from cockpit.ui.widgets.waiting import Waiting

if TYPE_CHECKING:
    from textual import getters

    from cockpit.config.presets import PresetInfo
    from cockpit.config.validate import Plan
    from cockpit.run.summaries import RunsIndex, RunSummary
    from cockpit.ui.app import CockpitApp

REFRESH_S = 2.0
KEPT_DRAWN_WAIT_S = 2.0
"""The longest the runs' files wait to be checked for the frame with the index's rows (a
screen on top of home draws no frame of it)."""
KEPT_NOW_BYTES = 8 << 20
"""A runs index up to this size (~30,000 runs, a few tenths of a second) is read before home's
first frame, which then has the runs in it; a larger one is read on a worker behind a spinner.
(Read on the worker, 10,000 runs waited for the frames drawn meanwhile: bench home_10k_runs_s.)"""


STACK_BELOW = 90
"""Home's width under which the presets go under the runs instead of beside them."""


class HomeScreen(Screen):
    HELP_TITLE = "Home: runs and presets"
    BINDINGS = [
        Binding("n", "new_run", "New run", id="home.new_run"),
        Binding("e", "edit_preset", "Edit preset", id="home.edit_preset"),
        Binding("r", "replay", "Replay", id="home.replay"),
        Binding("c", "compare", "Compare", tooltip="Overlay the runs marked with space (or type paths)",
                id="home.compare"),
        Binding("space", "mark", "Mark", tooltip="Mark a run to compare (space again unmarks)", id="home.mark"),
        Binding("D", "delete_run", "Delete run", tooltip="Delete the highlighted run's folder (asks first)",
                id="home.delete"),
        # Tab moves between the two lists too: these are in help, not the footer.
        Binding("p", "focus_presets", "Presets", show=False, id="home.presets"),
        Binding("l", "focus_runs", "Runs", show=False, id="home.runs"),
        Binding("f5,ctrl+r", "refresh", "Refresh", show=False, id="home.refresh"),
        Binding("q", "app.quit", "Quit", id="home.quit"),
        # The app's help key, here so the footer shows it before the run-managing keys: at 100
        # columns those are cut at the edge, `? Help` never.
        Binding("question_mark,f1", "app.help", "Help", key_display="?", id="home.help"),
        # Managing runs: after the everyday keys, so a narrow footer keeps those (and Quit).
        Binding("R", "rename_run", "Rename run", tooltip="Give the highlighted run a new name (never a live run)",
                id="home.rename"),
        Binding("A", "archive_runs", "Archive", tooltip="Move the marked runs, or the highlighted one, out of the "
                "list into RUNS/.archive (asks first; `cockpit archive --undo` brings them back)", id="home.archive"),
        Binding("U", "unarchive_runs", "Unarchive", tooltip="Bring the marked archived runs, or the highlighted one, "
                "back into the runs list", id="home.unarchive"),
        Binding("v", "archived_view", "Archived", tooltip="Show the archived runs (v again: the runs)",
                id="home.archived_view"),
    ]

    if TYPE_CHECKING:  # `self.app` as a type checker sees it (runtime: Textual's own property)
        app = getters.app(CockpitApp)

    @dataclass
    class RunsLoaded(Message):
        """The runs folder read again (only the runs that changed were re-read)."""

        rows: list[RunSummary]
        """One summary per run, live ones first."""
        commands: dict[str, str] = field(default_factory=dict)
        """Run path -> the command a script run runs (`python train.py --lr 1e-5`)."""
        archived: bool = False
        """Read from the archived runs (a list read before `v` switched views is dropped)."""
        checked: bool = True
        """False: the rows the runs folder's index keeps, before their files are checked (the
        first list of a fresh home; the checked list follows once it is drawn)."""

    @dataclass
    class PresetsLoaded(Message):
        """The shipped and user presets, read."""

        infos: list[PresetInfo]
        """One per preset file, with the error of one that does not load."""
        blocked: dict[str, str] | None = None
        """Preset path -> why it cannot start on this machine (greyed out with that line);
        None until the trainers are read."""
        problem: str = ""
        """Why the trainers could not be read (the presets stay listed; Enter names it too)."""

    @dataclass
    class LaunchChecked(Message):
        """A preset validated and ready: what would run, waiting for the user's yes."""

        plan: Plan
        """The validated preset, as `launch_plan` takes it."""
        question: str
        """The yes/no question to ask."""
        detail: str
        """The command lines and settings shown under the question."""

    def __init__(self, runs_dir: Path) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self._place_focus = True
        """Put the focus where it helps once the runs are (re)loaded: the runs list when
        there are runs, else the presets (a fresh folder's hint says pick a preset)."""
        self._left_for_a_screen = False
        self._runs: dict[bool, RunsIndex] = {}
        """The runs and the archived runs: each refresh re-reads only the runs that changed."""
        self.archived = False
        """The list shows the archived runs (`v`)."""
        self._loading = False
        """A refresh is under way: another one asked for meanwhile would read the same files
        again at the same time (mounting home asks twice: mount and resume)."""
        self._commands: dict[str, tuple[object, str | None]] = {}
        """Run path -> (run.yaml and status.json stamps, its script command or None): read once."""
        self._kept_drawn = threading.Event()
        """Clear from when the index's rows (a `checked=False` list) are shown to when their
        frame is drawn: the worker checks the runs' files only then, not while that frame is
        being made."""
        self._kept_drawn.set()
        self._presets_after_runs = True
        """The first read of the presets waits for the first runs list: both are Python work on
        threads sharing the one interpreter lock, and the runs are what the first screen is for
        (a 10,000-run folder's list came later by the presets' imports; bench: home_10k_runs_s)."""

    def on_resize(self) -> None:
        self.query_one("#home-body").set_class(self.size.width < STACK_BELOW, "-stacked")

    def compose(self) -> ComposeResult:
        yield Header(icon="")  # Textual's ⭘ is double-width in many fonts
        with Horizontal(id="home-body"):
            with Vertical(id="home-runs"):
                yield Static(markup("[b]Runs[/b]  [dim]$dir[/]", dir=self.runs_dir),
                             classes="pane-title", id="runs-title")
                yield RunsTable(id="runs-table")
            with Vertical(id="home-presets"):
                yield Static("[b]Presets[/b]  [dim]Enter launches[/]", classes="pane-title")
                yield Waiting(id="presets-status")
                yield PresetList(id="preset-list")
        # Compact, without the palette's hint (help names ctrl+p): at 100 columns the everyday keys,
        # Quit and `? Help` fit on the one row.
        yield CockpitFooter(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = str(self.runs_dir)
        # Built on the way back from a run opened from the command line: the cursor on that run.
        self.query_one(RunsTable).wanted = getattr(self.app, "last_opened", None)
        self.query_one("#presets-status", Waiting).wait("reading the presets")
        self._kept_now()
        self.action_refresh()
        self.set_interval(REFRESH_S, self._tick)
        self.query_one(RunsTable).focus()  # until the runs are read (then _place_focus)

    def _tick(self) -> None:
        # Under a live or replay screen the list is not seen: no need to read every run.
        if self.is_current:
            self._refresh_runs()

    def on_screen_suspend(self) -> None:
        # A run, a replay or the setup form, not a question on top of home.
        self._left_for_a_screen = not isinstance(self.app.screen, ModalScreen)

    def on_screen_resume(self) -> None:
        if self._left_for_a_screen:
            self._left_for_a_screen = False
            self._place_focus = True
            self.query_one(RunsTable).wanted = getattr(self.app, "last_opened", None)
        self.action_refresh()  # a preset saved in the setup form shows at once

    # -- workers -------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        """The runs and the presets read again (F5; coming back from another screen)."""
        self._refresh_runs()
        if not self._presets_after_runs:
            self.load_presets()

    def _refresh_runs(self) -> None:
        if self._loading:
            return
        self._loading = True
        self.load_runs()

    def _kept_now(self) -> None:
        """A fresh home's runs as the runs folder's index keeps them, read here, before the first
        frame (when the index is small enough: KEPT_NOW_BYTES); the worker checks their files
        once they are drawn."""
        from cockpit.run.summaries import RunsIndex, index_bytes

        if not 0 < index_bytes(self.runs_dir) <= KEPT_NOW_BYTES:
            return
        index = self._runs[False] = RunsIndex(self.runs_dir)
        try:
            message = self._kept_list(index, False)
        except (OSError, CockpitError):
            return  # the worker reads the folder and says what is wrong
        if message is not None:
            self.on_home_screen_runs_loaded(message)

    def _kept_list(self, index: RunsIndex, archived: bool) -> RunsLoaded | None:
        """The rows `index` keeps, as a list not yet checked (`RunsIndex.kept`), or None when it
        keeps none; the worker's check of their files then waits for them to be drawn."""
        kept = index.kept()
        if kept is None:
            return None
        message = self.RunsLoaded(kept, self._script_commands(kept), archived, checked=False)
        self._kept_drawn.clear()
        return message

    @work(thread=True, exclusive=True, group="home-runs", exit_on_error=False)
    def load_runs(self) -> None:
        from cockpit.run.manage import archive_dir
        from cockpit.run.summaries import RunsIndex

        archived = self.archived
        index = self._runs.get(archived)
        if index is None:
            index = self._runs[archived] = RunsIndex(archive_dir(self.runs_dir) if archived else self.runs_dir)
        try:
            kept = self._kept_list(index, archived)  # a fresh home: the kept rows first, their files checked after
            if kept is not None:
                self.post_message(kept)
            self._kept_drawn.wait(KEPT_DRAWN_WAIT_S)  # these rows, or the ones read before the first frame
            rows = index.summaries()
        except (OSError, CockpitError) as exc:
            self.app.call_from_thread(self._load_failed, f"{self.runs_dir}: {exc}")
            return
        self.post_message(self.RunsLoaded(rows, self._script_commands(rows), archived))

    def _script_commands(self, rows: list) -> dict[str, str]:
        """The command of each script run (run.yaml's `cockpit.script`), read once per run."""
        out: dict[str, str] = {}
        known: dict[str, tuple[object, str | None]] = {}
        scripts = [row for row in rows if row.script]  # status.json, read for the summary, names a script
        if not scripts:
            self._commands = known
            return out
        # Imported only for a script run: run.section brings pydantic (a quarter of a second under
        # load, before home's first frame; bench: home_10k_runs_s).
        from cockpit.run.folder import RunFolder
        from cockpit.run.section import script_command
        from cockpit.ui.widgets.home.runs_table import command_line

        for row in scripts:
            run = RunFolder(Path(row.path))
            stamp: list[object] = []
            for path in (run.run_yaml, run.status_json):  # what script_command reads
                try:
                    st = path.stat()
                    stamp.append((st.st_mtime_ns, st.st_size))
                except OSError:
                    stamp.append(None)
            cached = self._commands.get(row.path)
            if cached is not None and cached[0] == stamp:
                command = cached[1]
            else:
                words = script_command(run)
                command = command_line(words) if words else None
            known[row.path] = (stamp, command)
            if command:
                out[row.path] = command
        self._commands = known
        return out

    def _load_failed(self, message: str) -> None:
        self._loading = False
        self._presets_now()
        self.notify(message, severity="error")

    def _presets_now(self) -> None:
        """The first read of the presets, once the first runs list is in (or failed)."""
        if self._presets_after_runs:
            self._presets_after_runs = False
            self.load_presets()

    @work(thread=True, exclusive=True, group="home-presets", exit_on_error=False)
    def load_presets(self) -> None:
        from cockpit.config.presets import list_presets, load_preset
        from cockpit.config.validate import cannot_run_here, has_gpu
        from cockpit.trainers.registry import load_registry

        infos = list_presets()
        self.post_message(self.PresetsLoaded(infos))
        try:  # the trainers of the installed TRL: slow only the first time (then cached)
            registry = load_registry()
        except CockpitError as exc:  # the presets stay listed; Enter names the problem
            self.post_message(self.PresetsLoaded(infos, {}, problem=str(exc).splitlines()[0]))
            return
        gpu, blocked = has_gpu(), {}
        for info in infos:
            if info.error:
                continue
            try:
                reason = cannot_run_here(load_preset(info.path), registry, gpu)
            except (CockpitError, OSError):
                continue
            if reason:
                blocked[str(info.path)] = reason
        self.post_message(self.PresetsLoaded(infos, blocked))

    def on_home_screen_runs_loaded(self, message: RunsLoaded) -> None:
        if not message.checked:  # the checked list follows from the same worker, once these rows are drawn
            self.query_one(RunsTable).after_rows_drawn(self._kept_drawn.set)
        else:
            self._loading = False
        self.call_after_refresh(self._presets_now)  # after the frame with the runs
        if message.archived != self.archived:  # read before v switched views
            if message.checked:
                self._refresh_runs()
            return
        table = self.query_one(RunsTable)
        table.show(message.rows, message.commands)
        if self._place_focus:
            self._place_focus = False
            (table if message.rows else self.query_one(PresetList)).focus()
        live = sum(1 for r in message.rows if r.live)
        if self.archived:
            self.query_one("#runs-title", Static).update(markup(
                f"[b]Archived runs[/b]  {len(message.rows)}  [dim]U brings one back · v: the runs[/]"
                if message.rows else "[b]Archived runs[/b]  [dim]none — A archives a run · v: the runs[/]"))
            return
        self.query_one("#runs-title", Static).update(markup(
            f"[b]Runs[/b]  {len(message.rows)} ({live} live)  [dim]$dir  · Enter opens[/]"
            if message.rows else
            "[b]Runs[/b]  [dim]none yet in $dir — pick a preset and press Enter, or n for a "
            "new run[/]", dir=self.runs_dir))

    def on_home_screen_presets_loaded(self, message: PresetsLoaded) -> None:
        self.query_one(PresetList).show(message.infos, message.blocked)
        status = self.query_one("#presets-status", Waiting)
        if message.problem:
            status.update(markup("[$text-warning]could not check which presets run here:[/] $why",
                                 why=message.problem))
            status.display = True
        elif message.blocked is None:  # listed; which of them can run here is not known yet
            if not status.display:  # a refresh (F5, back from a screen): quick, cached, unsaid
                return
            status.wait("checking which presets can run here", "the first time imports TRL")
        else:
            status.update("")
            status.display = False

    # -- choices -------------------------------------------------------------------------------

    @on(RunsTable.Chosen)
    def open_run(self, message: RunsTable.Chosen) -> None:
        self.app.open_live(message.path)

    @on(PresetList.Chosen)
    def launch_preset(self, message: PresetList.Chosen) -> None:
        """Enter on a preset: check it, then ask once, showing what will run."""
        blocked = self.query_one(PresetList).blocked.get(str(message.info.path))
        if blocked:
            self.notify(f"{blocked}\n(e opens it in the form to change it)", title="cannot run here",
                        severity="warning", timeout=10)
            return
        self._check_launch(str(message.info.path))

    @work(thread=True, exclusive=True, group="launch", exit_on_error=False)
    def _check_launch(self, preset_path: str) -> None:
        import shlex

        from cockpit.config.presets import load_preset
        from cockpit.config.validate import validate

        try:
            plan = validate(load_preset(preset_path))
        except (CockpitError, OSError) as exc:
            message = str(exc) if isinstance(exc, CockpitError) else f"{preset_path}: {exc}"
            self.app.call_from_thread(self.notify, message, title="cannot launch",
                                      severity="error", timeout=10)
            return
        preset = plan.preset
        settings = [f"{k}: {preset.trl[k]}" for k in ("model_name_or_path", "dataset_name",
                                                       "max_steps", "num_train_epochs")
                    if preset.trl.get(k) is not None]
        lines = ["$ " + shlex.join(["cockpit", "run", preset_path, "--runs-dir",
                                    str(self.runs_dir)])]
        if plan.spec.cli_command:
            lines.append(f"  (TRL's own: trl {plan.spec.cli_command} --config RUN/trl.yaml)")
        lines += settings + [f"note: {w}" for w in plan.warnings]
        question = f"Launch {preset.name} ({plan.spec.name}) in {self.runs_dir}?"
        self.post_message(self.LaunchChecked(plan, question, "\n".join(lines)))

    def on_home_screen_launch_checked(self, message: LaunchChecked) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"launching {message.plan.preset.name}…")
                self._launch(message.plan)

        self.app.push_screen(ConfirmScreen(message.question, yes="Launch", detail=message.detail),
                             answered)

    @work(thread=True, group="launch", exit_on_error=False)
    def _launch(self, plan) -> None:
        from cockpit.launch.plan import launch_plan

        try:
            run = launch_plan(plan, self.runs_dir)
        except (CockpitError, OSError) as exc:
            self.app.call_from_thread(self.notify, str(exc), title="cannot launch",
                                      severity="error", timeout=10)
            return
        self.app.call_from_thread(self.app.open_live, str(run.path))

    def action_new_run(self) -> None:
        self.app.open_setup()

    def action_edit_preset(self) -> None:
        """The highlighted preset in the setup form: change it, launch it or save it as yours."""
        presets = self.query_one(PresetList)
        index = presets.highlighted
        if index is None:
            self.notify("highlight a preset first (p moves to the list)", severity="warning")
            return
        option = presets.get_option_at_index(index)
        self.app.open_setup(option.id)

    def action_replay(self) -> None:
        def chosen(paths: list[str] | None) -> None:
            if paths:
                self.app.open_replay(paths)

        self.app.push_screen(PathPrompt("Replay: a trainer_state.json, checkpoint, output dir "
                                        "or run folder"), chosen)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:  # noqa: ARG002
        # Keys of the runs list (space on a preset launches it).
        if action == ("unarchive_runs" if not self.archived else "archive_runs"):
            return False  # A in the runs, U in the archived runs
        if action in ("mark", "delete_run", "rename_run", "archive_runs", "unarchive_runs"):
            return isinstance(self.focused, RunsTable)
        return True

    def action_mark(self) -> None:
        self.query_one(RunsTable).toggle_mark()

    def action_delete_run(self) -> None:
        """D: the highlighted run's folder deleted, after a yes; a live run is refused."""
        summary = self._highlighted("delete")
        if summary is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._delete(summary.path)

        self.app.push_screen(ConfirmScreen(
            f"Delete {summary.name}?", yes="Delete", danger=True,
            detail=f"{summary.path}\nThe folder goes with its metrics, logs and checkpoints; an output_dir "
                   "the preset put elsewhere is kept."), answered)

    @work(thread=True, group="home-delete", exit_on_error=False)
    def _delete(self, path: str) -> None:
        from cockpit.run.folder import RunFolder
        from cockpit.run.manage import delete_run

        try:
            delete_run(RunFolder(Path(path)))
        except CockpitError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="cannot delete", severity="error",
                                      timeout=10)
            return
        self.app.call_from_thread(self.notify, f"deleted {Path(path).name}")
        self.app.call_from_thread(self.action_refresh)

    def _highlighted(self, verb: str) -> RunSummary | None:
        """The highlighted run, or None with one line saying why it cannot be `verb`ed (live)."""
        table = self.query_one(RunsTable)
        path = table.highlighted_path()
        summary = next((r for r in table.summaries if r.path == path), None)
        if summary is not None and summary.live:
            self.notify(f"{summary.name} is {summary.state} — stop it first, then {verb} it",
                        title=f"cannot {verb}", severity="warning")
            return None
        return summary

    def action_rename_run(self) -> None:
        """R: the highlighted run under a new name, typed in a prompt; the cursor stays on it."""
        from cockpit.run.manage import name_problem

        summary = self._highlighted("rename")
        if summary is None:
            return

        def named(name: str | None) -> None:
            if name:
                self._rename(summary.path, name)

        self.app.push_screen(NamePrompt(f"Rename {summary.name} to", summary.name, name_problem), named)

    @work(thread=True, group="home-delete", exit_on_error=False)
    def _rename(self, path: str, name: str) -> None:
        from cockpit.run.folder import RunFolder
        from cockpit.run.manage import rename_run

        try:
            run = rename_run(RunFolder(Path(path)), name)
        except CockpitError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="cannot rename", severity="error",
                                      timeout=10)
            return

        def done() -> None:
            self.query_one(RunsTable).wanted = str(run.path)
            self.notify(f"renamed {Path(path).name} to {run.name}")
            self.action_refresh()

        self.app.call_from_thread(done)

    def action_archive_runs(self) -> None:
        """A: the marked runs (or the highlighted one) moved into RUNS/.archive, after a yes."""
        table = self.query_one(RunsTable)
        if table.marked:
            chosen = [r for r in table.summaries if r.path in table.marked]
            live = [r.name for r in chosen if r.live]
            if live:
                self.notify(f"{', '.join(live)}: live — stop {'them' if len(live) > 1 else 'it'} first, "
                            "then archive", title="cannot archive", severity="warning")
                return
        else:
            one = self._highlighted("archive")
            if one is None:
                return
            chosen = [one]
        if not chosen:
            return
        from cockpit.run.manage import archive_dir

        names = ", ".join(r.name for r in chosen[:5]) + (f" and {len(chosen) - 5} more" if len(chosen) > 5 else "")

        def answered(yes: bool | None) -> None:
            if yes:
                self._archive([r.path for r in chosen])

        self.app.push_screen(ConfirmScreen(
            f"Archive {names}?", yes="Archive",
            detail=f"Moved into {archive_dir(self.runs_dir)}, out of this list.\n"
                   "`cockpit runs --archived` lists them; `cockpit archive --undo NAME` brings one back."),
            answered)

    def _archive(self, paths: list[str]) -> None:
        from cockpit.run.manage import archive_run

        self._move_runs(paths, archive_run, "cannot archive",
                        lambda n: f"archived {n} run{'s' if n > 1 else ''}")

    @work(thread=True, group="home-delete", exit_on_error=False)
    def _move_runs(self, paths: list[str], move: Callable[[Any], object], refused: str,
                   said: Callable[[int], str]) -> None:
        """Archive or bring back each run (`move`), then one line for what was refused (all of it)
        and one for what was done."""
        from cockpit.run.folder import RunFolder

        problems, done = [], 0
        for path in paths:
            try:
                move(RunFolder(Path(path)))
                done += 1
            except CockpitError as exc:
                problems.append(str(exc))
        if problems:
            self.app.call_from_thread(self.notify, "\n".join(problems), title=refused, severity="error",
                                      timeout=10)
        if done:
            self.app.call_from_thread(self.notify, said(done))
        self.app.call_from_thread(self.action_refresh)

    def action_archived_view(self) -> None:
        """v: the archived runs in the list, or the runs again."""
        self.archived = not self.archived
        table = self.query_one(RunsTable)
        table.marked = []
        table.show([])
        table.focus()
        self.refresh_bindings()
        self._loading = False  # a read of the other view still under way is dropped when it lands
        self._refresh_runs()

    def action_unarchive_runs(self) -> None:
        """U: the marked archived runs (or the highlighted one) back in the runs list."""
        table = self.query_one(RunsTable)
        paths = list(table.marked) or [p for p in (table.highlighted_path(),) if p]
        if paths:
            self._unarchive(paths)

    def _unarchive(self, paths: list[str]) -> None:
        from cockpit.run.manage import unarchive_run

        self._move_runs(paths, unarchive_run, "cannot unarchive",
                        lambda n: f"{n} run{'s' if n > 1 else ''} back in the runs list")

    def action_compare(self) -> None:
        table = self.query_one(RunsTable)
        # The marks were for this compare: they go once it opens, so a later A or D acts on
        # the highlighted run, not on runs marked for something done.
        if len(table.marked) >= 2:  # marked with space: straight to the overlay
            marked = list(table.marked)
            table.clear_marks()
            self.app.open_replay(marked)
            return
        value = " ".join(table.marked or [r.path for r in table.summaries[:2]])

        def chosen(paths: list[str] | None) -> None:
            if paths:
                table.clear_marks()
                self.app.open_replay(paths)

        self.app.push_screen(PathPrompt("Compare: paths to overlay, separated by spaces",
                                        value=value), chosen)

    def action_focus_presets(self) -> None:
        self.query_one(PresetList).focus()

    def action_focus_runs(self) -> None:
        self.query_one(RunsTable).focus()
