# Shipped by the hook (cockpit.hook.bundle): runs in the user's Python 3.9+, stdlib only (+ their transformers).
"""The run folder: the contract between the UI, the supervisor and the runner.

    runs/<name>-<yyyymmdd-hhmmss>/
      run.yaml       what was asked (trainer + TRL keys + `cockpit:` section)
      trl.yaml       the flat TRL config, resolved; `trl <cmd> --config trl.yaml` takes it
      command.txt    the exact command lines, copy-pasteable
      status.json    the supervisor's view, written atomically
      events.jsonl   the journal
      stdout.log     everything the trainer printed
      supervisor.log what the supervisor itself printed
      control/       requests to the run (stop-and-save), one file each
      hook/          a script run's hook folder (`cockpit.hook.bundle`), on its PYTHONPATH
      output/        the trainer's output_dir
      samples/       answers of checkpoints asked from `cockpit sample` or the Checkpoints tab
"""

from __future__ import annotations

import copy
import errno
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.files import (
    check_json_object,
    open_regular,
    read_regular,
    read_text_regular,
    reserve,
    safe_load,
    write_atomic,
)

if sys.version_info >= (3, 11):  # noqa: UP036 - the hook imports this module on Python 3.9+
    from enum import StrEnum
else:  # the hook imports this module in the user's process, which may run Python 3.9 or 3.10
    class StrEnum(str, Enum):  # noqa: UP042 - enum.StrEnum is 3.11+
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class Request(StrEnum):
    """What a UI or an alert asks of a running trainer: a file each under control/."""

    STOP_SAVE = "stop_save"
    """Save a checkpoint at the next step end, then stop (the callback reads it)."""
    STOP_FORCE = "stop_force"
    """Stop now: the supervisor signals the process group (or scancels the Slurm job)."""


STATES = ("starting", "queued", "running", "stopping", "stopped", "finished", "failed", "killed")
"""Every state a status.json may hold (a reader refuses any other)."""
LIVE_STATES = frozenset({"starting", "queued", "running", "stopping"})
STATUS_VERSION = 1
STATUS_MAX_BYTES = 1 << 20
"""status.json is a few hundred bytes; a longer one is damaged, and is not read whole."""
RUN_YAML_MAX_BYTES = 16 << 20
OUTPUT = "output"
"""The trainer's output_dir when the preset names none: the run folder's own output/."""
ACCELERATE_YAML = "accelerate.yaml"
"""The accelerate config an accelerate launch with a config starts from, resolved, in the run folder."""
LAUNCH_OWN = (OUTPUT, ACCELERATE_YAML)
"""What launch puts in every run folder it names in run.yaml (`RunFolder.own_path` finds them after a move)."""


def read_tail(path: Path, nbytes: int) -> tuple[bytes, int]:
    """The last `nbytes` of a file and the offset they start at; (b"", 0) when unreadable or not a
    regular file (a FIFO, /dev/zero: `files.open_regular`)."""
    try:
        with open_regular(path) as fh:
            fh.seek(0, os.SEEK_END)
            start = max(0, fh.tell() - nbytes)
            fh.seek(start)
            return fh.read(), start
    except OSError:
        return b"", 0




@dataclass
class Status:
    """status.json: what the supervisor knows about the run's processes."""

    state: str = "starting"
    name: str = ""
    trainer: str = ""
    supervisor_pid: int | None = None
    pid: int | None = None
    pgid: int | None = None
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    fix: str | None = None
    attempt: int = 1
    host: str = ""
    job_id: str | None = None
    """The Slurm job of the current attempt (launcher kind slurm)."""
    journal_error: str | None = None
    """Why the supervisor cannot write events.jsonl right now (e.g. 'ENOSPC: No space left on
    device'); None while it can. Training goes on; the journal catches up when it can."""
    supervisor_started: float | None = None
    """The supervisor's start time (psutil create_time): with supervisor_pid, proves it is the same process."""
    pid_started: float | None = None
    """The trainer's (the process group leader's) start time: a signal goes to the group only while
    its leader still has it (`run/owner.py`)."""
    marker: str | None = None
    """The run folder as the run's processes were told it (`COCKPIT_RUN_DIR`): a folder moved
    mid-run still knows its processes by it (`run/owner.py`)."""
    v: int = STATUS_VERSION

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Status:
        """The known keys of `obj`; ValueError naming every key whose value has the wrong type
        (`{"state": 5}`, `"pid": "x"`), so no reader meets a status it cannot compare or format."""
        known = {f.name: f for f in fields(cls)}
        bad = [f"{k} is {type(v).__name__}, not {_STATUS_TYPES[k][1]}" for k, v in obj.items()
               if k in known and not _status_value_ok(k, v)]
        if isinstance(obj.get("state"), str) and obj["state"] not in STATES:
            bad.append(f"state {obj['state'][:40]!r} is not one of {', '.join(STATES)}")
        if bad:
            raise ValueError("; ".join(bad))
        return cls(**{k: v for k, v in obj.items() if k in known})


_NUM = (int, float)
_STATUS_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "state": ((str,), "a string"), "name": ((str,), "a string"), "trainer": ((str,), "a string"),
    "host": ((str,), "a string"), "attempt": ((int,), "a whole number"), "v": ((int,), "a whole number"),
    **{k: ((int, type(None)), "a whole number or null") for k in ("supervisor_pid", "pid", "pgid", "exit_code",
                                                                  "signal")},
    **{k: ((*_NUM, type(None)), "a number or null") for k in ("started", "ended", "supervisor_started",
                                                              "pid_started")},
    **{k: ((str, type(None)), "a string or null") for k in ("reason", "fix", "job_id", "journal_error")},
}


def _status_value_ok(key: str, value: Any) -> bool:
    types = _STATUS_TYPES.get(key)
    if types is None:
        return True
    if isinstance(value, bool):  # a bool is an int to isinstance; never a pid, a time or a count
        return False
    return isinstance(value, types[0])
SCRIPT_TRAINER = "script"
"""run.yaml's (and status.json's) trainer for a script run: the user's own command, whatever
Trainer it builds (`cockpit.script` holds the command)."""
_CONFIGS: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
"""run.yaml path -> (its stat stamp, its parsed content): `RunFolder.config`'s cache."""
_CONFIGS_KEPT = 256


@dataclass
class RunFolder:
    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    # -- layout ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def run_yaml(self) -> Path:
        return self.path / "run.yaml"

    @property
    def trl_yaml(self) -> Path:
        return self.path / "trl.yaml"

    @property
    def command_txt(self) -> Path:
        return self.path / "command.txt"

    @property
    def status_json(self) -> Path:
        return self.path / "status.json"

    @property
    def events(self) -> Path:
        return self.path / "events.jsonl"

    @property
    def stdout_log(self) -> Path:
        return self.path / "stdout.log"

    @property
    def supervisor_log(self) -> Path:
        return self.path / "supervisor.log"

    @property
    def control(self) -> Path:
        return self.path / "control"

    @property
    def trainer_json(self) -> Path:
        """The trainer's TrainerSpec (`to_json(with_fields=False)`), written at launch."""
        return self.path / "trainer.json"

    @property
    def outcome_json(self) -> Path:
        """The training process's own verdict (state, code, reason, fix), rank 0 only."""
        return self.control / "outcome.json"

    @property
    def resume_json(self) -> Path:
        """A resumed script run's {segment: checkpoint}: each Trainer of the script resumes from its
        own (the hook reads it: `cockpit.hook.RESUME_SEGMENTS` is this file's name)."""
        return self.control / "resume.json"

    @property
    def output(self) -> Path:
        return self.path / OUTPUT

    @property
    def samples(self) -> Path:
        """Answers sampled from the run's checkpoints after the fact (one JSON-lines file a
        session), so a replay shows them and `export --completions` includes them."""
        return self.path / "samples"

    def own_path(self, stored: str | os.PathLike[str]) -> Path:
        """A path run.yaml keeps, where it is now. One inside the run folder is kept relative to it
        (`relative`), so a folder renamed, archived or moved by hand reads its own files where it
        is, and nothing is rewritten. An absolute one that no longer exists but lay in the folder's
        old place is read in the folder as it is now: an older run.yaml, written with absolute
        paths, needs no migration. The old place is the run's marker (status.json: where its
        processes were told it was), else the parent of a file launch puts in every run folder."""
        path = Path(stored).expanduser()
        if not path.is_absolute():
            return self.path / path
        if path.exists():
            return path
        olds: list[Path] = []
        try:
            marker = self.read_status().marker
        except CockpitError:
            marker = None
        if marker:
            olds.append(Path(marker))
        if path.name in LAUNCH_OWN:
            olds.append(path.parent)
        for old in olds:
            if old != self.path and path.is_relative_to(old):
                moved = self.path / path.relative_to(old)
                if moved.exists():
                    return moved
        return path

    def relative(self, path: str | os.PathLike[str]) -> str:
        """How run.yaml keeps a path: relative to the run folder when it lies inside it, else as given
        (a relative one already is the run folder's: the runner runs there)."""
        given = Path(path).expanduser()
        if not given.is_absolute():
            return str(path)
        try:
            return given.absolute().relative_to(self.path.absolute()).as_posix() or "."
        except ValueError:
            return str(path)

    def exists(self) -> bool:
        return self.run_yaml.is_file() or self.status_json.is_file() or self.events.is_file()

    def config(self, *, strict: bool = False) -> dict[str, Any]:
        """run.yaml as a mapping: the one door every reader of a run's config goes through, in the
        one YAML dialect (`files.safe_load`, YAML 1.2 scalars). Parsed once per version of the file
        (its mtime, size and inode), each caller getting its own copy. A missing, broken or
        non-mapping run.yaml is {} (the runner is the one that reports it), or with `strict` one
        CockpitError naming the file."""
        try:
            st = self.run_yaml.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            hit = _CONFIGS.get(str(self.run_yaml))
            if hit is None or hit[0] != stamp:
                # Bounded, regular files only: a FIFO or /dev/zero in its place is never read.
                cfg = safe_load(read_regular(self.run_yaml, RUN_YAML_MAX_BYTES).decode("utf-8")) or {}
                if not isinstance(cfg, dict):
                    raise ValueError(f"a mapping was expected, not {type(cfg).__name__}")
                if len(_CONFIGS) >= _CONFIGS_KEPT:
                    _CONFIGS.clear()
                hit = _CONFIGS[str(self.run_yaml)] = (stamp, cfg)
        except Exception as exc:  # noqa: BLE001 - OSError, yaml.YAMLError, ValueError, RecursionError: not a config
            if strict:
                raise CockpitError(f"{self.run_yaml}: cannot read it ({exc}) — not a cockpit run folder?") from None
            return {}
        return copy.deepcopy(hit[1])

    # -- status ----------------------------------------------------------------------------
    def read_status(self) -> Status:
        """The status; a run folder from a newer cockpit is refused with a clear line, and so is a
        damaged one (not UTF-8 JSON, a value of the wrong type, a folder or a FIFO in its place):
        CockpitError, one line, naming the file and the fix."""
        damaged = "— the file is damaged; delete it and the run shows as its journal says"
        try:
            raw = read_regular(self.status_json, STATUS_MAX_BYTES)
        except FileNotFoundError:
            return Status(state="starting", name=self.name)
        except OSError as exc:
            raise CockpitError(f"{self.status_json}: cannot read it ({exc.strerror or exc}) {damaged}") from None
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            raise CockpitError(f"{self.status_json}: not valid JSON {damaged}") from None
        if not isinstance(obj, dict):
            raise CockpitError(f"{self.status_json}: not a status object {damaged}")
        if isinstance(obj.get("v"), int) and obj["v"] > STATUS_VERSION:
            raise CockpitError(f"{self.path}: written by a newer cockpit (status v{obj['v']}) — "
                               "upgrade cockpit to read it")
        try:
            return Status.from_dict(obj)
        except ValueError as exc:
            raise CockpitError(f"{self.status_json}: {exc} {damaged}") from None

    def write_status(self, status: Status) -> None:
        """status.json, whole: on a full disk through the room `reserve_status` kept."""
        write_atomic(self.status_json, json.dumps(asdict(status), indent=2) + "\n", reserved=True)

    def reserve_status(self) -> None:
        """Keep room for status.json beside it while the disk has some, so the run's end can be
        written on a full disk; never raises (without room there is nothing to keep)."""
        try:
            reserve(self.status_json)
        except OSError:
            pass

    def update_status(self, **changes: Any) -> Status:
        status = self.read_status()
        for key, value in changes.items():
            setattr(status, key, value)
        self.write_status(status)
        return status

    def follow(self, writer: Any) -> bool:
        """The run folder was moved (`mv RUN RUN-moved`) while this process writes to it: take the
        path its journal moved to (`writer`: the `JournalWriter` with events.jsonl open), so the
        outcome and the status go where the run now is. True when the path changed."""
        if self.path.is_dir():
            return False
        moved = Path(writer.where())
        if moved.name != self.events.name or moved.parent == self.path or not moved.parent.is_dir():
            return False
        self.path = moved.parent
        writer.path = str(self.events)  # a journal it must reopen is made here, not where the folder was
        return True

    # -- control requests ------------------------------------------------------------------
    def control_dir(self) -> Path:
        """control/, made sure to be a real folder of the run's: a file, a link (to a folder
        elsewhere) or anything else in its place is removed first, so a request can always be left
        and nothing written there leaves the run folder."""
        import stat

        for _ in range(3):
            try:
                if stat.S_ISDIR(os.lstat(self.control).st_mode):
                    return self.control
                os.unlink(self.control)
            except FileNotFoundError:
                pass
            try:
                self.control.mkdir()
                return self.control
            except FileExistsError:
                continue
        return self.control

    def request(self, what: str, **data: Any) -> Path:
        """Leave a request for the trainer and the supervisor (a `Request`)."""
        path = self.control_dir() / what
        try:
            write_atomic(path, json.dumps({"t": time.time(), **data}))
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            # A full disk: the file's being there is the request (`pending_request`); an empty one
            # needs no data block, so a stop still gets through.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        return path

    def read_outcome(self) -> dict[str, Any]:
        """control/outcome.json, the training process's own verdict (`diagnose.verdict` reads it);
        {} when there is none, or it is not a regular file holding a JSON object."""
        try:
            found = json.loads(read_text_regular(self.outcome_json))
        except (OSError, ValueError, RecursionError):
            return {}
        return found if isinstance(found, dict) else {}

    def pending_request(self, what: str) -> bool:
        return (self.control / what).exists()

    def clear_request(self, what: str) -> None:
        try:
            (self.control / what).unlink()
        except FileNotFoundError:
            pass

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        return list_checkpoints(self.output)


_CKPT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_step(name: str) -> int | None:
    """N of a `checkpoint-N` folder name, None for any other name: the one rule for what a
    checkpoint folder is called (the lister, replay sources, resumes, script segments)."""
    m = _CKPT.match(name)
    return int(m.group(1)) if m else None


def list_checkpoints(output_dir: Path) -> list[Path]:
    """checkpoint-N folders sorted by N (not by name: checkpoint-10 comes after checkpoint-9).
    The one checkpoint lister: resume, replay sources and the output-dir follower use it."""
    try:
        children = list(output_dir.iterdir())
    except OSError:  # missing, not a folder, unreadable
        return []
    found = []
    for child in children:
        step = checkpoint_step(child.name)
        if step is not None and child.is_dir():
            found.append((step, child))
    return [p for _, p in sorted(found)]


WEIGHT_FILES = ("model.safetensors", "adapter_model.safetensors", "pytorch_model.bin",
                "model.safetensors.index.json", "pytorch_model.bin.index.json", "adapter_model.bin")
"""A checkpoint holds its weights in one of these (a full model, sharded or not, or an adapter)."""


def complete_checkpoint(path: Path) -> bool:
    """A checkpoint is complete when its trainer_state.json parses and its model weights are there
    whole (`checkpoint_problem`): the Trainer writes trainer_state.json after the weights, so a
    checkpoint being written lacks it."""
    return checkpoint_problem(path) is None


TRAINER_STATE_MAX_BYTES = 512 << 20


def checkpoint_problem(path: Path) -> str | None:
    """Why a checkpoint cannot be resumed from or loaded (a few words), or None when it is complete:
    trainer_state.json missing or not a JSON object; no weights; weights cut short (a safetensors
    file shorter than its own header says, a shard its index names missing, a .bin zip without
    its end record). Reads headers only, never the tensors."""
    try:
        check_json_object(path / "trainer_state.json", TRAINER_STATE_MAX_BYTES)
    except (OSError, RecursionError):
        return "no readable trainer_state.json (it was being written)"
    except ValueError as exc:
        return "trainer_state.json is not a JSON object" if str(exc) == "not a JSON object" else \
            "no readable trainer_state.json (it was being written)"
    present = [w for w in WEIGHT_FILES if (path / w).exists()]
    if not present:
        return "no model weights"
    for name in present:
        problem = _weights_problem(path / name)
        if problem:
            return f"{name}: {problem}"
    return None


def _weights_problem(file: Path) -> str | None:
    if file.name.endswith(".index.json"):
        try:
            index = json.loads(read_regular(file, 64 << 20))
            shards = set((index.get("weight_map") or {}).values())
        except (OSError, ValueError, AttributeError, TypeError, RecursionError):
            return "the shard index is not readable"
        for shard in sorted(str(s) for s in shards):
            if "/" in shard or not (file.parent / shard).is_file():
                return f"shard {shard} is missing"
            problem = _weights_problem(file.parent / shard)
            if problem:
                return f"shard {shard}: {problem}"
        return None
    if file.suffix == ".safetensors":
        return _safetensors_problem(file)
    if file.suffix == ".bin":
        import zipfile

        try:
            with open_regular(file) as fh:
                magic = fh.read(2)
        except OSError as exc:
            return exc.strerror or "not readable"
        if magic == b"PK" and not zipfile.is_zipfile(file):  # torch.save's zip, cut before its end record
            return "cut short (its zip has no end record)"
    return None


def _safetensors_problem(file: Path) -> str | None:
    """A safetensors file: 8 bytes of header length, the JSON header, then the tensors, whose byte
    ranges the header gives; a file shorter than the last range ends was cut short."""
    try:
        with open_regular(file) as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                return "cut short (no header)"
            n = int.from_bytes(head, "little")
            if n > min(size - 8, 100 << 20):
                return "cut short (its header runs past the end)"
            header = json.loads(fh.read(n))
    except OSError as exc:
        return exc.strerror or "not readable"
    except (ValueError, RecursionError):
        return "its header is not JSON"
    if not isinstance(header, dict):
        return "its header is not JSON"
    end = 0
    for key, info in header.items():
        offsets = info.get("data_offsets") if isinstance(info, dict) and key != "__metadata__" else None
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            end = max(end, offsets[1])
    if 8 + n + end > size:
        return f"cut short ({size:,} of {8 + n + end:,} bytes)"
    return None


def newest_complete_checkpoint(output_dir: Path, skipped: list[tuple[Path, str]] | None = None) -> Path | None:
    """The newest complete checkpoint; each newer one passed over goes to `skipped` with why."""
    for ckpt in reversed(list_checkpoints(output_dir)):
        problem = checkpoint_problem(ckpt)
        if problem is None:
            return ckpt
        if skipped is not None:
            skipped.append((ckpt, problem))
    return None


def parse_run_argv(argv: list[str], prog: str) -> tuple[RunFolder, Path | None]:
    """`RUN_DIR [--resume CHECKPOINT]`, the argv of the supervisor and of the runner (the
    supervisor passes its own on); CockpitError with the usage line otherwise."""
    args = list(argv)
    resume_from = None
    if "--resume" in args:
        i = args.index("--resume")
        if i + 1 >= len(args):
            raise CockpitError(f"usage: python -m {prog} RUN_DIR [--resume CHECKPOINT]")
        resume_from = Path(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        raise CockpitError(f"usage: python -m {prog} RUN_DIR [--resume CHECKPOINT]")
    return RunFolder(Path(args[0])), resume_from


def new_run_name(base: str, when: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.")[:MAX_NAME_BASE].rstrip("-.") or "run"
    return f"{safe}-{stamp}"


MAX_NAME_BASE = 96
"""A run name's part before its timestamp is cut here: a file name may hold 255 bytes, and the
folder's own files (`.status.json.XXXX.tmp`) need room beside it."""


def create_run_folder(runs_dir: Path, base_name: str) -> RunFolder:
    """A new, user-only folder; a second run in the same second gets a suffix, never a clash."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    name = new_run_name(base_name)
    for i in range(1000):
        candidate = runs_dir / (name if i == 0 else f"{name}-{i}")
        try:
            candidate.mkdir(mode=0o700)
        except FileExistsError:
            continue
        run = RunFolder(candidate)
        run.reserve_status()
        return run
    raise CockpitError(f"could not create a run folder in {runs_dir} — clean it up or pick --runs-dir")


def list_runs(runs_dir: Path) -> list[RunFolder]:
    """Run folders in a runs dir, newest first. Hidden names are not runs (`.archive` holds the
    archived ones: `run/manage.py`)."""
    try:
        children = list(runs_dir.iterdir())
    except OSError:  # missing, not a folder, unreadable
        return []
    found = []
    for p in children:
        if p.name.startswith("."):
            continue
        try:
            if p.is_dir():
                found.append((p.joinpath("run.yaml").stat().st_mtime, RunFolder(p)))
        except OSError:  # no run.yaml, or a folder that cannot be read: not a run
            continue
    found.sort(key=lambda r: r[0], reverse=True)
    return [r for _, r in found]
