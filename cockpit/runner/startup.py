"""The start of a training-side process: the training stack's imports, collected less.

Importing torch, transformers and TRL creates ~480,000 objects that live as long as the process
(modules, classes, functions). Python's cyclic collector walks each of them again at every full
collection while they pile up: ~1.1 s of the 5–6 s of CPU an import of the stack takes on a 2-core
EPYC (1,215 collections, 7 of them full; ~0.3 s in this window). While `heavy_start()` is open the
young generations are still collected, every 50,000 allocations instead of 700 (young cyclic
garbage — a dataset's rows, a model's construction — is freed as before), and full collections
wait; when it ends, `gc.freeze()` moves what exists into the permanent generation, which no later
collection walks (training's own full collections get cheaper too), and the thresholds are put
back. Garbage that outlived two young collections inside the window is frozen with the rest: a few
thousand objects after an import.
Standard library only: the runner, the loss-mask check, the merger and the sampler use it, the
last two from their bundle on the user's Python (3.9+). A user's own script is left as it is.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_YOUNG = 50_000
"""Allocations between young collections inside the window (Python's default is 700)."""


@contextlib.contextmanager
def heavy_start() -> Iterator[None]:
    """Around a process's imports and set-up; nests and repeats (a process that trains twice)."""
    before = gc.get_threshold()
    if gc.get_freeze_count():
        gc.collect()  # a second start in one process: the first one's garbage is freed, not frozen
    gc.set_threshold(_YOUNG, 20, 1_000_000)
    try:
        yield
    finally:
        gc.freeze()
        gc.set_threshold(*before)
