"""Turn how a run died into one line with the fix.

The runner classifies the exception it caught; the supervisor classifies the tail
of stdout.log when the runner could not say (a crash in native code, a signal).
"""

from __future__ import annotations

import os
import re
import shutil
import signal as _signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cockpit.errors import one_line


@dataclass(frozen=True)
class Diagnosis:
    code: str
    reason: str
    fix: str


_RULES: list[tuple[str, re.Pattern[str], str, str]] = [
    ("cuda_oom", re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED", re.I),
     "CUDA out of memory",
     "lower per_device_train_batch_size and raise gradient_accumulation_steps, turn on "
     "gradient_checkpointing, or train a LoRA adapter (use_peft: true)"),
    ("disk_full", re.compile(r"No space left on device|ENOSPC", re.I),
     "the disk is full",
     "free space or point output_dir at a bigger disk; lower save_total_limit"),
    ("bf16_unsupported", re.compile(r"doesn't support bf16|bf16.*requires|--bf16.*not supported", re.I),
     "this machine does not support bf16",
     "set bf16: false (cockpit turns it off on CPU-only machines)"),
    ("pad_token", re.compile(r"pad_token|padding token|Asking to pad but the tokenizer", re.I),
     "the tokenizer has no pad token",
     "set tokenizer.pad_token = tokenizer.eos_token (cockpit does this when it loads the tokenizer)"),
    ("value_model_missing", re.compile(r"'NoneType' object has no attribute '(modules|base_model_prefix)'"),
     "PPO value model missing",
     "give cockpit.models.value_model (it defaults to the reward model)"),
    ("missing_columns",
     re.compile(r"(has no column|Column .* not in the dataset|"
                r"KeyError: '(prompt|chosen|rejected|completion|messages|label)')", re.I),
     "the dataset lacks a column the trainer needs",
     "rename columns with cockpit.dataset.columns or pick the dataset format the trainer takes"),
    ("not_found", re.compile(r"(is not a local folder and is not a valid model identifier|"
                             r"Repository Not Found|We couldn't connect to|Couldn't reach|"
                             r"ConnectionError|LocalEntryNotFoundError|OfflineModeIsEnabled|"
                             r"DatasetNotFoundError|FileNotFoundError)", re.I),
     "model or dataset not found (or no network to fetch it)",
     "check the name/path; on a machine without network download it first and give the local path"),
    ("nan_loss", re.compile(r"loss (became|is) (nan|inf)", re.I),
     "the loss became NaN",
     "lower learning_rate, set max_grad_norm (e.g. 1.0), or use bf16 instead of fp16"),
]


ERROR_LINE = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?(?:Traceback \(most recent call last\)|"
                        r"[A-Za-z_][\w.]*(?:Error|Exception)\b:?|ERROR\b|FATAL\b)")
"""A line where an error starts in a trainer's output: a traceback, `ValueError: …`, a rank's
`[rank0]: RuntimeError: …`, a logger's ERROR (the output tab's "first error" key)."""


def classify_text(text: str) -> Diagnosis | None:
    """The first rule that matches the text (an exception or a log tail), or None."""
    for code, pattern, reason, fix in _RULES:
        if pattern.search(text):
            return Diagnosis(code, reason, fix)
    return None


def classify_signal(signum: int, *, requested: bool) -> Diagnosis:
    name = _signal.Signals(signum).name if signum in _signal.Signals._value2member_map_ else str(signum)
    if requested:
        return Diagnosis("stopped_by_user", f"stopped by request ({name})", "resume it with `cockpit resume RUN`")
    if signum == _signal.SIGKILL:
        return Diagnosis("oom_killed",
                         "killed by SIGKILL with no word from the trainer — most likely the kernel's "
                         "OOM killer (out of RAM)",
                         "lower batch size or dataloader workers, or use a machine with more RAM; "
                         "`dmesg | grep -i oom` confirms")
    return Diagnosis("signal", f"killed by {name}", "check who sent it; resume with `cockpit resume RUN`")


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*")
_RANK = re.compile(r"^\[rank(\d+)\]: ?")
_RULE = re.compile(r"^[-=*_~#]{3,}$")


def _said(lines: list[str], i: int, rank: str | None) -> str:
    """The error line at `i` with its message, in one line: a message that starts on the next line
    (`ImportError:` then numpy's text) is taken from the lines after it (the same rank's)."""
    def body(line: str) -> str | None:
        if rank is None:
            return line.strip()
        m = _RANK.match(line)
        return line[m.end():].strip() if m and m.group(1) == rank else None

    first = body(lines[i]) or ""
    if not first.endswith(":"):
        return first[:300]
    more = []
    for line in lines[i + 1:]:
        text = body(line)
        if text is None:
            break
        if text and not _RULE.match(text):
            more.append(text)
        if sum(len(t) for t in more) > 300:
            break
    return one_line(" ".join([first, *more]), 300)


def last_error_line(text: str) -> str | None:
    """The error a traceback-looking tail ends with, e.g. 'ValueError: ...'. A multi-process
    launch (torchrun, accelerate) prints each rank's lines as `[rankN]: ...` and then its own
    `ChildFailedError:`; there the cause is the lowest rank's first error line."""
    lines = text.splitlines()
    ranked = []
    for i, line in enumerate(lines):
        m = _RANK.match(line)
        if m and _ERROR_LINE.match(line[m.end():].strip()):
            ranked.append((int(m.group(1)), i, m.group(1)))
    if ranked:
        _, i, rank = min(ranked)
        return _said(lines, i, rank)
    for i in range(len(lines) - 1, -1, -1):
        if _ERROR_LINE.match(lines[i].strip()):
            return _said(lines, i, None)
    return None


def explain(text: str, *, fallback: str, fix: str) -> Diagnosis:
    """How a process died, from its traceback or log tail: the classified reason with the error
    line itself ('model or dataset not found: FileNotFoundError: data.jsonl'), else that line (or
    `fallback`) with `fix`. The runner and the supervisor both say it this way."""
    line = last_error_line(text) or fallback
    diag = classify_text(text)
    if diag is None:
        return Diagnosis("error", line[:500], fix)
    return Diagnosis(diag.code, f"{diag.reason}: {line}"[:500], diag.fix)


_DISK_FULL = re.compile(r"No space left on device|ENOSPC|Errno 28\b|StorageFull|Disk quota exceeded|EDQUOT", re.I)
_SAVE_IO = re.compile(r"basic_ios::clear|iostream error|PytorchStreamWriter failed|file write failed|"
                      r"unexpected pos \d+ vs \d+|Error while serializing", re.I)
LOW_FREE_BYTES = 64 * 2**20
"""Below this much free space, a trainer that died without a clear word, or on a save-time I/O
error, is taken to have died of a full disk."""


def free_space(paths: Iterable[os.PathLike[str] | str]) -> tuple[int, str] | None:
    """The least free space (bytes) among the disks holding `paths`, and that disk's mount point."""
    best: tuple[int, str] | None = None
    for raw in paths:
        path = Path(raw)
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            free = shutil.disk_usage(path).free
        except OSError:
            continue
        mount = os.path.realpath(path)
        while not os.path.ismount(mount):
            mount = os.path.dirname(mount)
        if best is None or free < best[0]:
            best = (free, mount)
    return best


LOW_FREE_INODES = 64
"""Fewer free inodes than this on the disk holding the run: new files (a checkpoint's) cannot be made."""


def free_inodes(paths: Iterable[os.PathLike[str] | str]) -> tuple[int, int, str] | None:
    """The fewest free inodes (for this user) among the disks holding `paths`, with that disk's
    inode total and mount point; None where the filesystem has no fixed inode table (btrfs, ...)."""
    best: tuple[int, int, str] | None = None
    for raw in paths:
        path = Path(raw)
        while not path.exists() and path != path.parent:
            path = path.parent
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        if st.f_files <= 0:
            continue
        mount = os.path.realpath(path)
        while not os.path.ismount(mount):
            mount = os.path.dirname(mount)
        if best is None or st.f_favail < best[0]:
            best = (st.f_favail, st.f_files, mount)
    return best


def write_failure(exc: OSError, path: os.PathLike[str] | str) -> str:
    """Why a file could not be written, in words: ENOSPC with bytes still free is a disk out of
    inodes (statvfs's f_favail), said as such, not as a full disk."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        inodes = free_inodes([path])
        where = free_space([path])
        free_mb = f", {where[0] // 2**20} MB free" if where is not None else ""
        if inodes is not None and inodes[0] < LOW_FREE_INODES:
            return f"the disk is out of inodes ({inodes[0]} of {inodes[1]} free on {inodes[2]}{free_mb})"
        if exc.errno == errno.EDQUOT:
            return "the disk quota is used up"
        return f"the disk is full ({where[0] // 2**20} MB free on {where[1]})" if where else "the disk is full"
    return f"{exc.strerror or type(exc).__name__} ({errno.errorcode.get(exc.errno or 0, '')})".replace(" ()", "")


def disk_full(diag: Diagnosis, text: str, places: Iterable[os.PathLike[str] | str]) -> Diagnosis:
    """Name a full disk: ENOSPC said anywhere, or a save-time I/O error (torch.save's
    "basic_ios::clear: iostream error", a bare "exited with code 1") while the disk holding the
    run or its output has less than LOW_FREE_BYTES left, becomes "the disk is full (N MB free on
    MOUNT)" with the fix. Anything else is returned as it was."""
    said = diag.code == "disk_full" or bool(_DISK_FULL.search(text)) or bool(_DISK_FULL.search(diag.reason))
    places = list(places)
    where = free_space(places)
    inodes = free_inodes(places)
    no_inodes = inodes is not None and inodes[0] < LOW_FREE_INODES
    low = (where is not None and where[0] < LOW_FREE_BYTES) or no_inodes
    if not (said or (low and (diag.code == "error" or _SAVE_IO.search(text) or _SAVE_IO.search(diag.reason)))):
        return diag
    if no_inodes and inodes is not None:  # no file can be made, whatever the bytes free: say inodes
        free_mb = f", {where[0] // 2**20} MB free" if where is not None else ""
        reason = f"the disk is out of inodes ({inodes[0]} of {inodes[1]} free on {inodes[2]}{free_mb})"
        fix = f"delete files on {inodes[2]} (many small files use the inodes up)"
    elif where is None:
        reason = "the disk is full"
        fix = "free space on the disk that holds the run"
    else:
        reason = f"the disk is full ({where[0] // 2**20} MB free on {where[1]})"
        fix = f"free space on {where[1]}"
    detail = last_error_line(text)
    return Diagnosis("disk_full", f"{reason}: {detail}"[:500] if detail else reason,
                     f"{fix} (or point output_dir at a bigger disk, lower save_total_limit), "
                     "then `cockpit resume RUN`")


# -- the training process's own word (control/outcome.json) -------------------------------------

ENDED_STATES = ("finished", "stopped", "failed", "killed")
NO_END = ("training started and was never seen to end — the process exited mid-training (os._exit, a "
          "kill, or an exit from a callback)")


def verdict(outcome: object, *, script: bool, trained: bool, exit_code: int | None) -> tuple[str, Diagnosis] | None:
    """How an attempt ended, by the training process's own word: the state and why. `outcome` is
    control/outcome.json (the runner's verdict; a script's hook says how many Trainers it built, and
    how many started and ended training), `trained` whether the attempt's journal holds a
    `run_started`, `exit_code` the exit code when someone saw it (None after the supervisor was
    killed). A Trainer that started training and was never seen to end did not finish, whatever
    the exit code. None when there is no word to go by (the caller reads the log's tail)."""
    out = outcome if isinstance(outcome, dict) else {}
    state = out.get("state")
    if state in ENDED_STATES and out.get("reason"):
        return str(state), Diagnosis(str(out.get("code") or state), str(out["reason"]), str(out.get("fix") or ""))
    if not script:
        if exit_code == 0:  # the runner always writes its verdict before it returns: it was cut short
            return "failed", Diagnosis("no_end", f"the runner exited (code 0) without its last word: {NO_END}",
                                       "see stdout.log")
        return None
    if out.get("uncaught") and exit_code is None:
        return "failed", Diagnosis("error", str(out["uncaught"]), "see stdout.log")
    started, ended = out.get("trainings_started"), out.get("trainings_ended")
    counted = isinstance(started, int) and isinstance(ended, int)
    if counted and started > ended:  # type: ignore[operator]
        return "failed", Diagnosis("no_end", NO_END, "resume it with `cockpit resume RUN`")
    if counted and started and started == ended:
        return "finished", Diagnosis("finished", "training finished", "")
    if not out and trained:  # the hook's last word is missing altogether, yet training started
        return "failed", Diagnosis("no_end", NO_END, "resume it with `cockpit resume RUN`")
    if (counted and not started) or (not counted and not trained):
        if exit_code != 0:
            return None  # it failed before training, or nobody saw how it exited: its log says why
        built = out.get("trainers_built")
        if isinstance(built, int) and built > 0:
            return "finished", Diagnosis("no_training", f"the script built {built} Trainer{'s' if built > 1 else ''} "
                                         "but never started training (Trainer.train was not called)",
                                         "call trainer.train() in the script")
        return "finished", Diagnosis("no_trainer", "no Trainer was built — the script ended without building a "
                                     "transformers Trainer, so nothing was trained or watched",
                                     "check that the script builds a transformers or TRL Trainer and calls train()")
    if exit_code == 0:
        return "finished", Diagnosis("finished", "training finished", "")
    return None
