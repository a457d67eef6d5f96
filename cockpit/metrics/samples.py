"""Answers sampled from a run's checkpoints after the fact, kept in the run folder's `samples/`.

One JSON-lines file a session (`samples/<yyyymmdd-hhmmss>-<pid>.jsonl`), one line an answer:
{t, session, mode (compare | chat), checkpoint (checkpoint-N or base), step, turn, prompt,
completion, seed, temperature, max_new_tokens, device}. A session appends a line as each
answer ends, so a cut-off session keeps what it had; a torn last line is skipped on reading.
A replay shows them in the Checkpoints tab, and `cockpit export --completions` adds them with
source `sampled`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from cockpit.files import open_own, read_text_regular
from cockpit.run.folder import RunFolder


def new_session(run: RunFolder) -> Path:
    """The file a new sampling session appends to (created on its first answer)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return run.samples / f"{stamp}-{os.getpid()}.jsonl"


def append(path: Path, row: dict[str, Any]) -> None:
    """One answer, one write of one line (O_APPEND): readers never see half a line but the last."""
    path.parent.mkdir(exist_ok=True)
    line = json.dumps({"t": time.time(), "session": path.stem, **row}, ensure_ascii=False) + "\n"
    with os.fdopen(open_own(path, os.O_WRONLY | os.O_APPEND), "a", encoding="utf-8") as fh:  # never through a link
        fh.write(line)


def read(run: RunFolder) -> list[dict[str, Any]]:
    """Every kept answer of the run, oldest session first; unreadable lines are skipped."""
    try:
        files = sorted(p for p in run.samples.iterdir() if p.suffix == ".jsonl")
    except OSError:
        return []
    rows: list[dict[str, Any]] = []
    for path in files:
        try:
            text = read_text_regular(path)
        except OSError:
            continue
        for line in text.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                rows.append(obj)
    return rows


def as_completion_row(row: dict[str, Any]) -> dict[str, Any]:
    """A kept answer in the shape `export --completions` writes (metrics.completions.normalize)."""
    step = row.get("step")
    extra = {k: row.get(k) for k in ("checkpoint", "mode", "turn", "seed", "temperature", "max_new_tokens",
                                      "session") if row.get(k) is not None}
    return {"step": step if isinstance(step, int) else 0, "prompt": str(row.get("prompt", "")),
            "completion": str(row.get("completion", "")), "rewards": {}, "advantage": None,
            "source": "sampled", "extra": extra}
