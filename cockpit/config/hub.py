"""Whether a Hugging Face Hub id can be loaded on this machine, without importing huggingface_hub.

Online, any hub id can be tried (a typo is the runner's clear "not found"). Offline
(`HF_HUB_OFFLINE=1`, as air-gapped boxes and this project's CI run), only what is already in the
local cache loads: a model not there makes the run fail after its imports, ~40 s later. This
module is the one rule for that; validation (the setup form's verdict, `cockpit run --dry-run`,
Home's presets) asks here, and the data check (`cockpit.config.datasets`) asks for hub datasets.

The cache layout is huggingface_hub's documented one (`models--org--name/snapshots/<rev>/...`
under HF_HUB_CACHE) and, for datasets, also the `datasets` library's prepared cache
(`org___name` under HF_DATASETS_CACHE), which `load_dataset` reads offline.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_TRUE = {"1", "ON", "YES", "TRUE"}


def _flag(*names: str) -> bool:
    return any(os.environ.get(n, "").strip().upper() in _TRUE for n in names)


def offline(*, datasets: bool = False) -> bool:
    """The hub must not be reached: what is not cached cannot load."""
    return _flag("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE" if datasets else "TRANSFORMERS_OFFLINE")


def _hf_home() -> Path:
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface"


def hub_cache_dir() -> Path:
    """Where huggingface_hub keeps downloads (HF_HUB_CACHE, else HF_HOME/hub)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    return _hf_home() / "hub"


def _datasets_cache_dir() -> Path:
    if os.environ.get("HF_DATASETS_CACHE"):
        return Path(os.environ["HF_DATASETS_CACHE"]).expanduser()
    return _hf_home() / "datasets"


_HUB_ID = re.compile(r"^[A-Za-z0-9_][\w.-]*(/[\w.-]+)?$")
"""A repo id as the Hub spells them: `gpt2`, `Qwen/Qwen2.5-0.5B` (not `demo:models/x`, not a path)."""


def looks_like_hub_id(ref: str) -> bool:
    """`gpt2`, `Qwen/Qwen2.5-0.5B`, and no local file or folder of that name."""
    return bool(_HUB_ID.match(ref)) and not Path(ref).expanduser().exists()


def _snapshots(kind: str, repo_id: str) -> list[Path]:
    folder = hub_cache_dir() / f"{kind}--{repo_id.replace('/', '--')}" / "snapshots"
    try:
        return [p for p in folder.iterdir() if p.is_dir()]
    except OSError:
        return []


def model_cached(repo_id: str) -> bool:
    """A snapshot of the model (or adapter) with its config is in the hub cache."""
    return any((s / "config.json").is_file() or (s / "adapter_config.json").is_file()
               for s in _snapshots("models", repo_id))


def dataset_cached(repo_id: str) -> bool:
    """The dataset's files are in the hub cache, or `datasets` prepared it before."""
    if any(any(s.iterdir()) for s in _snapshots("datasets", repo_id)):
        return True
    prepared = repo_id.replace("/", "___").lower()
    try:
        return any(p.name.lower() == prepared and p.is_dir() for p in _datasets_cache_dir().iterdir())
    except OSError:
        return False


def model_problem(what: str, ref: str) -> str | None:
    """One line when `ref` is a hub id that cannot load here (offline and not cached), else None."""
    if not looks_like_hub_id(ref) or not offline() or model_cached(ref):
        return None
    return (f"{what} {ref}: not in the local Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE) — "
            f"download it where the hub is reachable (`hf download {ref}`, into {hub_cache_dir()}), "
            "or give a local model folder")


def dataset_problem(ref: str) -> str | None:
    """One line when the hub dataset `ref` cannot load here (offline and not cached), else None."""
    if not looks_like_hub_id(ref) or not offline(datasets=True) or dataset_cached(ref):
        return None
    return (f"dataset {ref}: not in the local Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE) — "
            f"download it where the hub is reachable (`hf download --repo-type dataset {ref}`, into "
            f"{hub_cache_dir()}), or give a local file or folder")
