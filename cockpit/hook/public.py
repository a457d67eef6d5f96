"""`from cockpit import CockpitCallback`: the cockpit's journal from a script's own code.

This is the installed cockpit's (the script's env has cockpit); the hook finds it by its
`cockpit_public` mark, not its class, since the hook runs from its own copy (`cockpit.hook.bundle`).
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path
from typing import Any

from cockpit.hook.callback import ScriptCallback
from cockpit.run import journal, owner
from cockpit.run.folder import Request, RunFolder


class PublicCockpitCallback(ScriptCallback):
    """`from cockpit import CockpitCallback`: the cockpit's journal from a script's own code.

    `Trainer(..., callbacks=[CockpitCallback()])`. Under `cockpit run -- ...` it writes to that
    run's folder (and the hook adds no second callback). Under a plain `python train.py` it makes
    a run folder of its own in `./runs` (or `$COCKPIT_RUNS_DIR`, or `runs_dir`), marks it running
    with this process as its owner, and writes how it ended; `cockpit runs`, `watch`, `attach` and
    `stop` (save) work on it. A process that dies without a word reads as failed, as a run whose
    supervisor is gone does.
    """

    cockpit_public = True
    """The hook's mark for a callback the script gave its trainer itself."""

    def __init__(self, run_dir: str | os.PathLike[str] | None = None, *, name: str | None = None,
                 runs_dir: str | os.PathLike[str] | None = None) -> None:
        from cockpit import hook

        self.owns_run = False
        run: RunFolder | None
        if run_dir is None and os.environ.get(hook.RUN_DIR_ENV):
            run = RunFolder(Path(os.environ[hook.RUN_DIR_ENV]))
        elif run_dir is not None:
            run = RunFolder(Path(run_dir))
            run.path.mkdir(parents=True, exist_ok=True)
        else:
            run = _own_run_folder(name, runs_dir) if hook.rank() == 0 else None
            self.owns_run = run is not None
        writer = journal.JournalWriter(run.events if run is not None and hook.rank() == 0 else os.devnull)
        super().__init__(run or RunFolder(Path(os.devnull)), writer, trainer_name="trainer", trainer_class="")
        hook.install_import_hook()  # so the trainer that takes this callback makes itself known to it
        if self.owns_run:
            atexit.register(self._ended_without_word)

    def bind(self, trainer: Any) -> None:
        """Called by the hook from the trainer's __init__: the trainer's own name and sampled batch."""
        from cockpit import hook

        self.trainer = trainer
        self.trainer_name = hook.trainer_name(type(trainer))
        self.trainer_class = f"{type(trainer).__module__}.{type(trainer).__qualname__}"
        if self.owns_run:
            self._status(trainer=self.trainer_name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.owns_run:
            self._status(state="running")
        return super().on_train_begin(args, state, control, **kwargs)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        out = super().on_train_end(args, state, control, **kwargs)
        if self.owns_run and state.is_world_process_zero:
            ended = "stopped" if self.stop_requested else "finished"
            reason = "stopped and saved on request" if ended == "stopped" else "training finished"
            self._end(ended, 0, reason)
        return out

    def _end(self, state: str, exit_code: int | None, reason: str) -> None:
        step = int(getattr(getattr(self.trainer, "state", None), "global_step", 0) or 0)
        self.writer.write(journal.run_ended(state, exit_code=exit_code, reason=reason, step=step))
        self.writer.flush()
        self._status(state=state, ended=time.time(), exit_code=exit_code, reason=reason)
        try:
            self.run.clear_request(Request.STOP_SAVE)
        except OSError:
            pass
        self.owns_run = False

    def _status(self, **changes: Any) -> None:
        """The run's status.json, which this callback keeps itself; a disk that refuses it is one
        line, never a traceback in the user's script (at its exit least of all)."""
        try:
            self.run.update_status(**changes)
        except Exception as exc:  # noqa: BLE001 - watching never fails the script
            print(f"cockpit: could not write {self.run.status_json}: {type(exc).__name__}: {exc}"[:300],
                  file=sys.stderr)

    def _ended_without_word(self) -> None:
        if self.owns_run:  # the process is exiting and training never reached its end
            self._end("failed", None, "the script exited before training ended")


def _own_run_folder(name: str | None, runs_dir: str | os.PathLike[str] | None) -> RunFolder:
    from cockpit.files import dump_yaml, write_atomic
    from cockpit.paths import runs_dir as default_runs_dir
    from cockpit.run.folder import Status, create_run_folder
    from cockpit.trainers.knowledge import SCRIPT_TRAINER

    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "script"
    run = create_run_folder(default_runs_dir(runs_dir).resolve(), name or script)
    cockpit = {"name": name or script,
               "script": {"command": [sys.executable, *sys.argv], "cwd": os.getcwd()}, "in_code": True}
    write_atomic(run.run_yaml, dump_yaml({"trainer": SCRIPT_TRAINER, "cockpit": cockpit}))
    # The script owns its folder for as long as it lives: the run's lock, held (and its proof for a
    # force stop, as its environment has no marker), and its start time beside its pid (`run/owner.py`).
    _held_locks.append(owner.acquire(run.path, run.name))
    os.set_inheritable(_held_locks[-1], False)
    me = os.getpid()
    run.write_status(Status(state="starting", name=run.name, trainer=SCRIPT_TRAINER, supervisor_pid=me,
                            supervisor_started=owner.start_time(me), pid=me, pgid=os.getpgid(0),
                            pid_started=owner.start_time(me), started=time.time(), host=os.uname().nodename))
    return run


_held_locks: list[int] = []
"""The locks of the run folders this process owns (one per `CockpitCallback()` that made its own)."""
