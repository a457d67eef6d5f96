# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The callback a script-mode trainer gets: the runner's, plus the `run_started` line the runner
would have written itself (the script, not cockpit, knows the trainer, the output dir and the
step count, so it is read off the trainer when training begins).

It runs in the user's own Python, copied into the hook's folder (`cockpit.hook.bundle`): the
standard library and transformers only."""

from __future__ import annotations

import sys
from typing import Any

from cockpit.run import journal
from cockpit.run.folder import RunFolder
from cockpit.runner.callback import CockpitCallback
from cockpit.trainers import versions


class ScriptCallback(CockpitCallback):
    def __init__(self, run: RunFolder, writer: journal.JournalWriter, *, trainer_name: str,
                 trainer_class: str) -> None:
        super().__init__(run, writer)
        self.trainer_name = trainer_name
        self.trainer_class = trainer_class
        self.resumed_from: str | None = None
        self.segment = 0
        """Which Trainer of the script this is (0, 1, ...): each is a segment of its own in the journal."""
        self.training = ""
        """"" built, "started" once train() began, "ended" once it ended: control/outcome.json counts
        them, so a script that exits mid-training (os._exit, a kill) never reads as finished."""
        self.stop_request: dict[str, Any] | None = None
        """What the stop-and-save request asked (`cockpit stop --finish-script`: {"finish_script": true}),
        read once when it is seen; the hook ends the script at the checkpoint unless it asked that."""

    def _stop_asked(self) -> bool:
        asked = super()._stop_asked()
        if asked and self.stop_request is None:
            self.stop_request = self._read_stop_request()
        return asked

    def _read_stop_request(self) -> dict[str, Any]:
        """The request's JSON ({} when it cannot be read: an empty file on a full disk is a plain stop)."""
        import json
        import os

        try:
            if os.path.exists(self._stop_file):
                with open(self._stop_file, "rb") as fh:
                    raw = fh.read(4096)
            elif self._run_fd is not None:
                fd = os.open(self._stop_in_folder, os.O_RDONLY, dir_fd=self._run_fd)
                with os.fdopen(fd, "rb") as fh:
                    raw = fh.read(4096)
            else:
                return {}
            found = json.loads(raw.decode("utf-8"))
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _check_alone(self, args: Any) -> None:
        """The launcher started N processes, and this trainer trains alone (world size 1): every
        process thinks it is rank 0, and N separate trainings write into one output folder."""
        from cockpit.hook import launched_world_size

        launched = launched_world_size()
        world = int(getattr(args, "world_size", 1) or 1)
        if launched > 1 and world == 1:
            self.writer.write(journal.warning(
                f"the launcher started {launched} processes (WORLD_SIZE={launched}) but this trainer runs alone "
                f"(world size 1): each process thinks it is rank 0, and {launched} separate trainings write into "
                f"{args.output_dir} — run one process, or let them join (on a CPU, some transformers versions "
                "may not join processes under use_cpu)", code="two_rank_zeros"))

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if state.is_world_process_zero:
            device = getattr(getattr(args, "device", None), "type", None) or "cpu"
            model = getattr(getattr(self.trainer, "model", None), "name_or_path", None)
            self.writer.write(journal.run_started(
                self.trainer_name, world_size=int(getattr(args, "world_size", 1) or 1),
                max_steps=int(state.max_steps) if state.max_steps else None, versions=versions.installed(),
                device=device, resumed_from=str(self.resumed_from) if self.resumed_from else None,
                output_dir=str(args.output_dir), trainer_class=self.trainer_class, model=model,
                script=True, segment=self.segment, python=sys.executable,
                logging_steps=getattr(args, "logging_steps", None)))
            self._check_alone(args)
        self.training = "started"
        _outcome_now()
        return super().on_train_begin(args, state, control, **kwargs)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        out = super().on_train_end(args, state, control, **kwargs)
        self.training = "ended"
        _outcome_now()
        return out


def _outcome_now() -> None:
    """Under a cockpit run, control/outcome.json says now how far each Trainer got (`cockpit.hook`)."""
    import os

    from cockpit.hook import RUN_DIR_ENV, _state, _write_outcome

    if os.environ.get(RUN_DIR_ENV) and _state["callbacks"]:
        _write_outcome(_state["callbacks"][0].run)
