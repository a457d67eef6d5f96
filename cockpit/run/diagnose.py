"""Turn how a run died into one line with the fix.

The runner classifies the exception it caught; the supervisor classifies the tail
of stdout.log when the runner could not say (a crash in native code, a signal).
"""

from __future__ import annotations

import re
import signal as _signal
from dataclasses import dataclass


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


def last_error_line(text: str) -> str | None:
    """The last line of a traceback-looking tail, e.g. 'ValueError: ...'."""
    for line in reversed(text.splitlines()):
        s = line.strip()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt)\b.*", s):
            return s[:300]
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
