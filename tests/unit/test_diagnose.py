"""How a run died, as one line with the fix; and which checkpoint a resume may trust."""

from __future__ import annotations

import json
import signal

import pytest

from cockpit.run.diagnose import classify_signal, classify_text, last_error_line
from cockpit.run.folder import complete_checkpoint, newest_complete_checkpoint  # the rule resume uses


@pytest.mark.parametrize("text, code", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
    ("OSError: [Errno 28] No space left on device", "disk_full"),
    ("ValueError: Your setup doesn't support bf16/gpu.", "bf16_unsupported"),
    ("ValueError: Asking to pad but the tokenizer does not have a padding token.", "pad_token"),
    ("AttributeError: 'NoneType' object has no attribute 'base_model_prefix'", "value_model_missing"),
    ("OSError: foo/bar is not a local folder and is not a valid model identifier", "not_found"),
    ("datasets.exceptions.DatasetNotFoundError: Dataset 'x/y' doesn't exist on the Hub", "not_found"),
])
def test_known_failures_get_a_reason_and_a_fix(text, code):
    d = classify_text("Traceback (most recent call last):\n  ...\n" + text)
    assert d is not None and d.code == code and d.reason and d.fix


def test_unknown_failures_fall_back_to_the_last_error_line():
    text = "Traceback...\n  File x\nRuntimeError: something odd happened\n"
    assert classify_text(text) is None
    assert last_error_line(text) == "RuntimeError: something odd happened"


def test_sigkill_without_a_request_points_at_the_oom_killer():
    assert classify_signal(signal.SIGKILL, requested=False).code == "oom_killed"
    assert classify_signal(signal.SIGTERM, requested=True).code == "stopped_by_user"


def _ckpt(root, step, *, state=True, weights=True, truncated=False):
    d = root / f"checkpoint-{step}"
    d.mkdir()
    if state:
        text = json.dumps({"global_step": step, "log_history": []})
        (d / "trainer_state.json").write_text(text[: len(text) // 2] if truncated else text)
    if weights:
        (d / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a real (empty) safetensors file
    return d


def test_resume_skips_half_written_checkpoints(tmp_path):
    good = _ckpt(tmp_path, 10)
    _ckpt(tmp_path, 20, truncated=True)   # killed while transformers wrote trainer_state.json
    _ckpt(tmp_path, 30, weights=False)    # killed before the weights landed
    assert complete_checkpoint(good)
    assert newest_complete_checkpoint(tmp_path) == good


def test_no_complete_checkpoint_means_nothing_to_resume(tmp_path):
    _ckpt(tmp_path, 5, state=False)
    assert newest_complete_checkpoint(tmp_path) is None


def test_an_error_whose_message_starts_on_the_next_line_keeps_its_message():
    """numpy's ImportError says nothing on its own line: the lines after it are the message."""
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
            "ImportError: \n\nIMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!\n\n"
            "Importing the numpy C-extensions failed.\n")
    line = last_error_line(text)
    assert line is not None and line.startswith("ImportError: IMPORTANT") and "numpy C-extensions failed" in line
    assert "\n" not in line and len(line) <= 300
