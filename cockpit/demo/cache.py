"""Where the offline demo lives in the cache, and the lock and markers that let several
processes build it at once without clashing.

No machine that runs cockpit's tests (or a first-time demo) can be assumed to reach a model
hub, so cockpit builds its own tiny assets under the cache: the datasets (`demo.datasets`,
standard library only) and the tokenizer and models (`cockpit.runner.assets`, which may import
torch). Both write through `write_file_atomic` under `demo_lock` and mark a folder complete
last, so a reader never sees half a build.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from cockpit.errors import CockpitError
from cockpit.files import write_atomic
from cockpit.paths import cache_dir

DEMO_VERSION = 1
"""Bump when the assets change shape; a new version builds into a fresh folder."""

DEMO_PREFIX = "demo:"
"""Preset values may name demo assets as `demo:models/tiny-lm`."""

COMPLETE_MARKER = ".complete"
"""Written last into a built folder; a folder without it is half-built and gets rebuilt."""

LOCK_NAME = ".lock"

MODEL_NAMES: tuple[str, ...] = ("tiny-lm", "tiny-rm", "tiny-lm-nopad")
"""Model folders under `models/`: a causal LM, a reward model, and the LM whose tokenizer has no pad."""


SHAPED_BY = ("transformers", "tokenizers")
"""The packages whose release line shapes the built files: a tokenizer saved by transformers 5
names a class (`TokenizersBackend`) that 4.x does not have, so each line builds its own copy."""


# --------------------------------------------------------------------------- where things live


def _line(package: str) -> str:
    """`5.23` for transformers 5.23.0 (the major.minor line); `none` when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return ".".join(version(package).split(".")[:2])
    except PackageNotFoundError:
        return "none"


def shaped_by() -> str:
    """The demo folder's key: `transformers-5.23-tokenizers-0.22`."""
    return "-".join(f"{pkg}-{_line(pkg)}" for pkg in SHAPED_BY)


def demo_dir() -> Path:
    """The demo folder in the cache, versioned (an old cockpit's assets never mix with a new one's)
    and keyed by the transformers and tokenizers lines that build and read it, so envs that share
    a home directory never load each other's files."""
    return cache_dir() / "demo" / f"v{DEMO_VERSION}" / shaped_by()


def demo_path(rel: str, root: Path | None = None) -> Path:
    """Resolve a demo asset such as `models/tiny-lm` (a leading `demo:` is accepted) under the demo folder.

    Refuses paths that would leave the demo folder, since preset values reach here.
    """
    base = Path(root) if root is not None else demo_dir()
    if rel.startswith(DEMO_PREFIX):
        rel = rel[len(DEMO_PREFIX) :]
    rel = rel.strip().lstrip("/")
    parts = Path(rel).parts
    if not rel or ".." in parts:
        raise CockpitError(
            f"demo asset {rel!r} is not a path inside the demo folder — use e.g. 'demo:models/tiny-lm'"
        )
    return base / rel


def model_dir(name: str, root: Path | None = None) -> Path:
    if name not in MODEL_NAMES:
        raise CockpitError(f"no demo model {name!r} — choose one of: {', '.join(MODEL_NAMES)}")
    return (Path(root) if root is not None else demo_dir()) / "models" / name


def tokenizer_dir(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else demo_dir()) / "tokenizer"


# --------------------------------------------------------------------------- lock and markers

@contextmanager
def demo_lock(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on `root/.lock` while building, so two processes don't clash.

    Re-entrant within one thread (a build that holds it can call helpers that take it again);
    other threads and processes wait (filelock: one lock object per folder, its count per thread).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with FileLock((root / LOCK_NAME).resolve(), is_singleton=True):
        yield


def write_file_atomic(path: Path, data: bytes) -> bool:
    """Write `data` to `path` through a temporary file and a rename; skip if already identical.

    Returns True when the file was (re)written. Readers never see a half-written file.
    """
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return True


def mark_complete(folder: Path) -> None:
    """Write the completion marker; call it after everything else in the folder is written."""
    payload = json.dumps({"demo_version": DEMO_VERSION}, sort_keys=True) + "\n"
    write_file_atomic(Path(folder) / COMPLETE_MARKER, payload.encode())


def is_complete(folder: Path) -> bool:
    return (Path(folder) / COMPLETE_MARKER).is_file()
