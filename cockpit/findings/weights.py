"""Did the model change? Each layer's relative weight change between the start and a checkpoint,
read straight from the safetensors files, or the norms of a LoRA adapter's updates.

The safetensors format is an 8-byte little-endian header length, a JSON header (dtype, shape,
byte offsets of each tensor) and the raw bytes; numpy reads it through a memory map, a chunk at a
time, so the supervisor needs no torch and never holds a whole model. bf16 is uint16 widened to
float32 (the top half of a float32's bits).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cockpit.findings.model import Finding

ADAPTER_FILE = "adapter_model.safetensors"
CHUNK = 1 << 22
"""Elements compared at a time: 16 MiB of float32 per side."""
UNCHANGED = 1e-9
"""A relative change below this is no change (lr 0 leaves the bytes identical)."""
ONE_LAYER_RATIO = 0.01
"""With three layers or more, one layer is named as taking all the change when every other layer
moved less than this fraction of it (relative changes). Not a share of the total: a freshly
initialised embedding has a small norm, so its relative change dwarfs the others' in an honest run."""

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16}
_LAYER = re.compile(r"^(.*?\.(?:layers|layer|h|blocks|block)\.\d+)\.")


@dataclass(frozen=True)
class Tensor:
    file: Path
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def size(self) -> int:
        return math.prod(self.shape) if self.shape else 1


def read_index(path: Path) -> dict[str, Tensor]:
    """The tensors of one .safetensors file (floating point ones only)."""
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            raise ValueError(f"{path.name}: not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", raw)
        if n > 100 * 2**20:
            raise ValueError(f"{path.name}: not a safetensors file (a {n}-byte header)")
        header = json.loads(fh.read(n))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict) or info.get("dtype") not in _DTYPES:
            continue
        a, b = info["data_offsets"]
        out[name] = Tensor(path, info["dtype"], tuple(int(x) for x in info["shape"]), base + int(a), base + int(b))
    return out


def model_tensors(folder: Path) -> dict[str, Tensor]:
    """Every weight of a saved model (all shards), the adapter file left out."""
    out: dict[str, Tensor] = {}
    for f in sorted(folder.glob("*.safetensors")):
        if f.name != ADAPTER_FILE:
            out.update(read_index(f))
    return out


def _chunks(t: Tensor) -> Iterator[np.ndarray]:
    """float32 pieces of a tensor, in order."""
    dt = _DTYPES[t.dtype]
    count = t.size
    if count == 0:
        return
    mm = np.memmap(t.file, dtype=np.dtype(dt).newbyteorder("<"), mode="r", offset=t.start, shape=(count,))
    for i in range(0, count, CHUNK):
        part = np.asarray(mm[i:i + CHUNK])
        if t.dtype == "BF16":
            yield (part.astype(np.uint32) << 16).view(np.float32)
        else:
            yield part.astype(np.float32)


def layer_of(name: str) -> str:
    """`model.layers.3.self_attn.q_proj.weight` → `model.layers.3`; other weights by their module."""
    m = _LAYER.match(name)
    if m:
        return m.group(1)
    return name.rsplit(".", 1)[0] if "." in name else name


@dataclass
class LayerChange:
    layer: str
    diff_sq: float
    base_sq: float

    @property
    def relative(self) -> float:
        if self.base_sq > 0:
            return math.sqrt(self.diff_sq / self.base_sq)
        return math.inf if self.diff_sq > 0 else 0.0


def compare(start: Path, now: Path) -> list[LayerChange]:
    """Each layer's ‖W − W₀‖² and ‖W₀‖², over the weights both folders hold with the same shape."""
    a, b = model_tensors(start), model_tensors(now)
    layers: dict[str, LayerChange] = {}
    for name, t0 in a.items():
        t1 = b.get(name)
        if t1 is None or t1.shape != t0.shape:
            continue
        lc = layers.setdefault(layer_of(name), LayerChange(layer_of(name), 0.0, 0.0))
        for x0, x1 in zip(_chunks(t0), _chunks(t1), strict=True):
            d = x1.astype(np.float64) - x0
            lc.diff_sq += float(np.dot(d, d))
            lc.base_sq += float(np.dot(x0.astype(np.float64), x0))
    return list(layers.values())


def adapter_norms(folder: Path) -> list[tuple[str, float]]:
    """‖B·A‖ of each LoRA module (its update to the frozen weight, before the scale): B starts at
    zero, so an adapter that never trained has every norm 0."""
    path = folder / ADAPTER_FILE
    tensors = read_index(path)
    out = []
    for name, tb in sorted(tensors.items()):
        if ".lora_B." not in name:
            continue
        ta = tensors.get(name.replace(".lora_B.", ".lora_A."))
        if ta is None or len(tb.shape) != 2 or len(ta.shape) != 2:
            continue
        b = np.concatenate(list(_chunks(tb))).reshape(tb.shape).astype(np.float64)
        a = np.concatenate(list(_chunks(ta))).reshape(ta.shape).astype(np.float64)
        out.append((name.split(".lora_B.")[0], float(np.linalg.norm(b @ a))))
    return out


# -- the findings --------------------------------------------------------------------------


def _unchanged_fix(script: bool, adapter: bool) -> str:
    """What to check when nothing moved, said for where the settings live: a script's own
    arguments, or the run's config (run.yaml, `--set`)."""
    where = "the learning_rate your script gives its TrainingArguments" if script else \
        "learning_rate (the preset's, or --set learning_rate=...)"
    grads = "" if adapter else ", that the parameters require grad"
    return f"check {where} (0?){grads}, and that the loss is not masked out entirely (every label -100)"


def judge_full(changes: list[LayerChange], *, step: int, checkpoint: Path, start: Path,
               start_note: str, script: bool = False) -> list[Finding]:
    """The findings of one checkpoint against the start: unchanged, one layer taking it all, or
    an info line with each layer's change."""
    if not changes:
        return []
    ranked = sorted(changes, key=lambda c: -c.relative)
    rows = [[c.layer, c.relative] for c in ranked]
    evidence: list[dict[str, Any]] = [
        {"type": "layers", "what": "relative weight change ‖W−W₀‖/‖W₀‖ per layer", "rows": rows},
        {"type": "file", "path": str(checkpoint), "what": "the checkpoint"},
        {"type": "file", "path": str(start), "what": f"the start ({start_note})"},
    ]
    steps = (step, step)
    name = _name(checkpoint)
    if all(c.relative < UNCHANGED for c in changes):
        return [Finding("model_unchanged", steps, "warning",
                        f"the model did not change: no weight of {len(changes)} layers moved between "
                        f"{start_note} and {name}",
                        fix=_unchanged_fix(script, adapter=False), evidence=evidence)]
    out = []
    top = ranked[0]
    if len(changes) >= 3 and ranked[1].relative < ONE_LAYER_RATIO * top.relative:
        out.append(Finding("one_layer_change", steps, "warning",
                           f"one layer takes all the change at {name}: {top.layer} moved {top.relative:.2e}, "
                           f"the next, {ranked[1].layer}, {ranked[1].relative:.2e}",
                           fix="check which parameters train (frozen layers, modules_to_save) and the learning "
                               "rate of each group", evidence=evidence))
    rel = [c.relative for c in changes]
    out.append(Finding("weight_change", steps, "info",
                       f"the weights moved at {name} against {start_note}: median layer {_median(rel):.2e}, "
                       f"largest {top.layer} {top.relative:.2e}", evidence=evidence))
    return out


def judge_adapter(norms: list[tuple[str, float]], *, step: int, checkpoint: Path,
                  script: bool = False) -> list[Finding]:
    if not norms:
        return []
    ranked = sorted(norms, key=lambda x: -x[1])
    evidence: list[dict[str, Any]] = [
        {"type": "layers", "what": "LoRA update norm ‖B·A‖ per module", "rows": [[n, v] for n, v in ranked]},
        {"type": "file", "path": str(checkpoint / ADAPTER_FILE), "what": "the adapter"},
    ]
    steps = (step, step)
    if all(v < UNCHANGED for _, v in norms):
        return [Finding("model_unchanged", steps, "warning",
                        f"the model did not change: every LoRA update (‖B·A‖ of {len(norms)} modules) is still zero "
                        f"at {_name(checkpoint)}",
                        fix=_unchanged_fix(script, adapter=True), evidence=evidence)]
    out = []
    if len(norms) >= 3 and ranked[1][1] < ONE_LAYER_RATIO * ranked[0][1]:
        out.append(Finding("one_layer_change", steps, "warning",
                           f"one adapter module takes all the change at {_name(checkpoint)}: {ranked[0][0]} "
                           f"(‖B·A‖ {ranked[0][1]:.2e}, the next {ranked[1][1]:.2e})",
                           fix="check target_modules and the learning rate", evidence=evidence))
    out.append(Finding("weight_change", steps, "info",
                       f"the adapter moved at {_name(checkpoint)}: median ‖B·A‖ {_median([v for _, v in norms]):.2e}, "
                       f"largest {ranked[0][0]} {ranked[0][1]:.2e}", evidence=evidence))
    return out


def _name(folder: Path) -> str:
    """`checkpoint-60`, or `the final model` for the output folder."""
    from cockpit.run.folder import checkpoint_step

    return folder.name if checkpoint_step(folder.name) is not None else "the final model"


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if s else 0.0


def check_checkpoint(checkpoint: Path, *, step: int, base: Path | None, first: Path | None,
                     script: bool = False) -> list[Finding]:
    """The findings for one checkpoint (or the final output folder). `base`: the model the run
    started from, when it is a local folder with safetensors; else `first`, the run's first
    checkpoint, is the start (and the summary says so); with neither, nothing to compare."""
    if (checkpoint / ADAPTER_FILE).is_file():
        return judge_adapter(adapter_norms(checkpoint), step=step, checkpoint=checkpoint, script=script)
    if base is not None and any(base.glob("*.safetensors")):
        return judge_full(compare(base, checkpoint), step=step, checkpoint=checkpoint, start=base,
                          start_note="the base model", script=script)
    if first is not None and first != checkpoint:
        return judge_full(compare(first, checkpoint), step=step, checkpoint=checkpoint, start=first,
                          start_note=f"{first.name} (the base model is not a local folder)", script=script)
    return []
