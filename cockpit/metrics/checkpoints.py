"""The checkpoints of a run, or of an output dir a training started elsewhere wrote: what each is
(step, loss and eval loss at that step, size, complete or still being written, a full model or
a LoRA adapter on which base), read from the files alone, without torch.

`cockpit checkpoints`, `cockpit sample`/`merge` (to pick and check one before a sampler starts)
and the Checkpoints tab all read this one listing.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.files import open_regular, read_regular
from cockpit.formats import fmt_size
from cockpit.metrics.panels import EVAL_NOT_PLOTTED
from cockpit.run import journal
from cockpit.run.folder import (
    LIVE_STATES,
    TRAINER_STATE_MAX_BYTES,
    WEIGHT_FILES,
    RunFolder,
    checkpoint_step,
    complete_checkpoint,
    list_checkpoints,
)
from cockpit.run.section import cockpit_section, output_dir
from cockpit.run.summaries import HEADLINE_KEYS, effective_state
from cockpit.text import one_line

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


@dataclass
class Checkpoint:
    """One checkpoint-N folder as the files say."""

    step: int
    path: Path
    complete: bool
    kind: str
    """`lora` (an adapter: adapter_config.json), `full` (a model: config.json) or `unknown`."""
    base: str | None = None
    """The adapter's base model (adapter_config.json's base_model_name_or_path)."""
    size: int = 0
    """Bytes of the whole folder (weights, optimizer, ...)."""
    weights: int = 0
    """Bytes of the model weights alone: what loading it costs."""
    loss: float | None = None
    eval_loss: float | None = None
    key_value: float | None = None
    """The run's key metric at this step (`CheckpointSet.key_metric`)."""
    eval_value: float | None = None
    """The run's eval metric at this step (`CheckpointSet.eval_metric`)."""
    has_tokenizer: bool = False
    has_chat_template: bool = False
    being_written: bool = False
    """Incomplete while its run is live: the trainer is still writing it."""

    @property
    def name(self) -> str:
        return self.path.name

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        for key in ("loss", "eval_loss", "key_value", "eval_value"):
            if isinstance(d[key], float) and not math.isfinite(d[key]):
                d[key] = str(d[key])
        return d


@dataclass
class CheckpointSet:
    """Where a run's checkpoints are and what they were trained from."""

    output_dir: Path
    run: RunFolder | None = None
    base_model: str | None = None
    """The model the run started from (run.yaml's model_name_or_path, or what a script's trainer
    reported); "base" in `cockpit sample` means this one."""
    live: bool = False
    checkpoints: list[Checkpoint] = field(default_factory=list)
    key_metric: str | None = None
    """The trainer's key metric as logged (`reward` for GRPO, `rewards/margins` for DPO, else
    `loss`: HEADLINE_KEYS), or None when the history holds none."""
    eval_metric: str | None = None
    """`eval_loss`, else the first other eval metric logged (`eval_accuracy`, `eval_wer`)."""

    def find(self, which: str | int) -> Checkpoint:
        """A checkpoint by step (`500`, `checkpoint-500`) or `latest` (the newest complete one);
        one line naming the fix when there is none."""
        where = self.run.name if self.run else str(self.output_dir)
        if not self.checkpoints:
            raise CockpitError(f"{where}: no checkpoints yet in {self.output_dir} — wait for the first save "
                               "(save_steps), or sample the base model with --checkpoint base")
        if str(which) == "latest":
            for ckpt in reversed(self.checkpoints):
                if ckpt.complete:
                    return ckpt
            raise CockpitError(f"{where}: no complete checkpoint yet — "
                               f"{self.checkpoints[-1].name} is still being written; try again in a moment")
        text = str(which).removeprefix("checkpoint-")
        try:
            step = int(text)
        except ValueError:
            raise CockpitError(f"{which!r}: not a checkpoint — give a step (e.g. "
                               f"{self.checkpoints[-1].step}), latest or base") from None
        for ckpt in self.checkpoints:
            if ckpt.step == step:
                return ckpt
        steps = ", ".join(str(c.step) for c in self.checkpoints[-8:])
        raise CockpitError(f"{where}: no checkpoint at step {step} — there are: {steps}")

    def usable(self, ckpt: Checkpoint) -> Checkpoint:
        """The checkpoint, or one line saying why it cannot be loaded yet."""
        if ckpt.complete:
            return ckpt
        if ckpt.being_written:
            raise CockpitError(f"{ckpt.name} is still being written (no trainer_state.json yet) — wait a "
                               "moment, or pick an earlier one (--checkpoint latest)")
        raise CockpitError(f"{ckpt.name} is incomplete (its trainer_state.json or weights are missing: "
                           "the save was cut off) — pick another one (--checkpoint latest)")

    def to_dict(self) -> dict[str, Any]:
        return {"output_dir": str(self.output_dir), "run": str(self.run.path) if self.run else None,
                "base_model": self.base_model, "live": self.live,
                "checkpoints": [c.to_dict() for c in self.checkpoints]}


def _folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _weights_size(path: Path) -> int:
    total = 0
    for name in WEIGHT_FILES:
        if name.endswith(".index.json"):
            weight_map = (_read_json(path / name) or {}).get("weight_map")
            shards = {s for s in weight_map.values() if isinstance(s, str)} if isinstance(weight_map, dict) else set()
            total += sum((path / s).stat().st_size for s in shards if (path / s).is_file())
        elif (path / name).is_file():
            total += (path / name).stat().st_size
    return total


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from a regular file (bounded: `files.read_regular`), or None."""
    try:
        obj = json.loads(read_regular(path, TRAINER_STATE_MAX_BYTES))
    except (OSError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


class _History:
    """The values a listing shows at each checkpoint, read from the trainer_state.json files as a
    stream (`trainer_state.stream_log_history`): for every key it could show (`_shown`) and every
    checkpoint, the value last logged at or before that checkpoint's step. What is kept is a few
    values a checkpoint, never the log: a 200 MB state lists in tens of MB, not 1.5 GB.

    A later entry of the same step wins, and so does a later file (a resumed run's newer history
    replaces the older); a file that cannot be read whole (cut off mid-save) is left out."""

    def __init__(self, steps: list[int]) -> None:
        self.steps = steps
        self.logged: set[str] = set()
        self._best: dict[tuple[str, int], tuple[int, float]] = {}
        """(key, bucket) -> (step, value): the latest entry with the key in the bucket, bucket i
        holding the steps after checkpoint i-1's and up to checkpoint i's."""

    @staticmethod
    def _shown(key: str) -> bool:
        return key in HEADLINE_KEYS or key.startswith("eval_")

    def read(self, path: Path) -> None:
        from cockpit.metrics.trainer_state import stream_log_history

        best: dict[tuple[str, int], tuple[int, float]] = {}
        logged: set[str] = set()
        last = len(self.steps)
        try:
            with open_regular(path) as fh:
                if os.fstat(fh.fileno()).st_size > TRAINER_STATE_MAX_BYTES:
                    return
                for entry in stream_log_history(fh):
                    step = entry.get("step")
                    if not isinstance(step, int):
                        continue
                    bucket = bisect.bisect_left(self.steps, step)
                    for key, value in entry.items():
                        if isinstance(value, (int, float)) and self._shown(key):
                            logged.add(key)
                            was = best.get((key, bucket))
                            if bucket < last and (was is None or step >= was[0]):
                                best[(key, bucket)] = (step, float(value))
        except (OSError, ValueError, RecursionError):
            return
        self.logged |= logged
        for slot, (step, value) in best.items():
            was = self._best.get(slot)
            if was is None or step >= was[0]:
                self._best[slot] = (step, value)

    def at(self, index: int, key: str) -> float | None:
        """The value of `key` last logged at or before the step of checkpoint `index`."""
        for bucket in range(index, -1, -1):
            found = self._best.get((key, bucket))
            if found is not None:
                return found[1]
        return None


def describe(path: Path, step: int, *, live: bool = False, newest: bool = False) -> Checkpoint:
    complete = complete_checkpoint(path)
    adapter = _read_json(path / "adapter_config.json")
    if adapter is not None:
        kind, base = "lora", adapter.get("base_model_name_or_path")
    elif (path / "config.json").is_file():
        kind, base = "full", None
    else:
        kind, base = "unknown", None
    tok_cfg = _read_json(path / "tokenizer_config.json") or {}
    has_template = bool(tok_cfg.get("chat_template")) or (path / "chat_template.jinja").is_file() \
        or (path / "chat_template.json").is_file()
    return Checkpoint(step=step, path=path, complete=complete, kind=kind, base=base,
                      size=_folder_size(path), weights=_weights_size(path),
                      has_tokenizer=any((path / f).is_file() for f in TOKENIZER_FILES),
                      has_chat_template=has_template, being_written=not complete and live and newest)


def run_started_data(run: RunFolder) -> dict[str, Any]:
    """What the newest `run_started` said: output_dir, model, and for a script run the Python
    it ran with (`python`), so a sampler loads the model classes the script used. Found with a
    byte search from the journal's end (`summaries.newest_record`), not by decoding every line."""
    from cockpit.run.summaries import newest_record

    rec = newest_record(run.events, journal.RUN_STARTED)
    return dict(rec.data) if rec is not None else {}


def _run_config(run: RunFolder) -> dict[str, Any]:
    return run.config()  # a broken run.yaml is {}: the listing goes on with the journal


def locate(path: Path) -> CheckpointSet:
    """A run folder, an output dir or a checkpoint folder → its output dir, run and base model."""
    path = Path(path)
    if not path.is_dir():
        raise CockpitError(f"{path}: no such folder — give a run (name or folder) or a training's output_dir")
    if list_checkpoints(path) == [] and checkpoint_step(path.name) is not None and path.parent.is_dir():
        path = path.parent  # a checkpoint itself: its output dir
    run = RunFolder(path)
    if not run.exists():
        owner = RunFolder(path.parent)  # <run>/output
        return CheckpointSet(output_dir=path, run=owner if owner.exists() and path == owner.output else None)
    live = effective_state(run)[0] in LIVE_STATES
    cfg = _run_config(run)
    started = run_started_data(run)
    section = cockpit_section(run)
    out_path = output_dir(run, section)
    if out_path is None:
        raise CockpitError(f"{run.name}: its script has not started training yet, so there are no "
                           "checkpoints to list — wait for the first save")
    if section.script is not None:
        base = started.get("model")
    else:
        base = cfg.get("model_name_or_path") or started.get("model")
    return CheckpointSet(output_dir=out_path, run=run, base_model=str(base) if base else None, live=live)


def list_run_checkpoints(path: Path) -> CheckpointSet:
    """Every checkpoint of a run (or output dir), oldest first, each with its loss at its step."""
    found = locate(path)
    ckpts = list_checkpoints(found.output_dir)
    states = [c / "trainer_state.json" for c in ckpts] + [found.output_dir / "trainer_state.json"]
    history = _History([checkpoint_step(c.name) or 0 for c in ckpts])
    # No checkpoint, no loss to look up: a replay of a lone trainer_state.json reads nothing more.
    for state in states if ckpts else []:
        if state.is_file():
            history.read(state)
    logged = history.logged
    found.key_metric = next((k for k in HEADLINE_KEYS if k in logged), None)
    evals = sorted(k for k in logged if k.startswith("eval_") and not k.endswith(EVAL_NOT_PLOTTED))
    found.eval_metric = "eval_loss" if "eval_loss" in evals else next(iter(evals), None)
    out = []
    for i, ckpt in enumerate(ckpts):
        step = checkpoint_step(ckpt.name) or 0  # list_checkpoints lists only checkpoint-N
        info = describe(ckpt, step, live=found.live, newest=i == len(ckpts) - 1)
        info.loss = history.at(i, "loss")
        info.eval_loss = history.at(i, "eval_loss")
        info.key_value = history.at(i, found.key_metric) if found.key_metric else None
        info.eval_value = history.at(i, found.eval_metric) if found.eval_metric else None
        out.append(info)
    found.checkpoints = out
    if found.base_model is None:
        found.base_model = next((c.base for c in out if c.base), None)
    return found


def table(found: CheckpointSet) -> list[str]:
    """The listing as lines of text (`cockpit checkpoints`)."""
    def num(v: float | None) -> str:
        return "—" if v is None else f"{v:.4g}"

    lines = [f"{'step':>7}  {'loss':>8}  {'eval_loss':>9}  {'size':>9}  {'state':<13}  kind"]
    for c in found.checkpoints:
        state = "complete" if c.complete else ("being written" if c.being_written else "incomplete")
        kind = f"lora on {one_line(c.base)}" if c.kind == "lora" else c.kind
        lines.append(f"{c.step:>7}  {num(c.loss):>8}  {num(c.eval_loss):>9}  {fmt_size(c.size):>9}  "
                     f"{state:<13}  {kind}")
    if not found.checkpoints:
        lines.append(f"(no checkpoints yet in {one_line(found.output_dir)})")
    return lines
