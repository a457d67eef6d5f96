"""Completion for the model and dataset inputs: local model folders (a config.json inside),
local data files and folders, and the offline demo assets as `demo:` references.

Finding candidates walks the disk, so it runs in a worker (`find_models` / `find_datasets`);
the suggester only looks through the list it was given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from textual.suggester import Suggester

from cockpit.config.datasets import FILE_FORMATS

MAX_DEPTH = 3
MAX_ENTRIES = 4000
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             "wandb", ".cache"}


class CandidateSuggester(Suggester):
    """Suggests the first candidate that starts with what was typed (candidates can change)."""

    def __init__(self, candidates: Iterable[str] = ()) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.candidates: list[str] = list(candidates)

    def set_candidates(self, candidates: Iterable[str]) -> None:
        self.candidates = list(dict.fromkeys(candidates))  # first of each, in order

    async def get_suggestion(self, value: str) -> str | None:
        if not value:
            return None
        folded = value.casefold()
        for candidate in self.candidates:
            if candidate.casefold().startswith(folded) and len(candidate) > len(value):
                return candidate
        return None


class ListItemSuggester(CandidateSuggester):
    """Completes the item being typed in a comma-separated list (`accuracy_reward, thi` ->
    `accuracy_reward, think_format_reward`); names already in the list are not offered again."""

    async def get_suggestion(self, value: str) -> str | None:
        head, sep, last = value.rpartition(",")
        typed = last.lstrip()
        if not typed:
            return None
        taken = {p.strip() for p in head.split(",")}
        folded = typed.casefold()
        for candidate in self.candidates:
            if candidate not in taken and candidate.casefold().startswith(folded) and len(candidate) > len(typed):
                return f"{head}{sep}{last[:len(last) - len(typed)]}{candidate}"
        return None


def _walk(root: Path) -> Iterable[tuple[Path, list[str], list[str]]]:
    """os.walk to MAX_DEPTH, skipping hidden and tool folders, at most MAX_ENTRIES entries."""
    seen = 0
    root_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        depth = len(here.parts) - root_depth
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if depth >= MAX_DEPTH:
            dirnames[:] = []
        seen += len(dirnames) + len(filenames)
        yield here, dirnames, filenames
        if seen > MAX_ENTRIES:
            return


def _relative(path: Path, cwd: Path) -> str:
    try:
        rel = path.relative_to(cwd)
    except ValueError:
        return str(path)
    return f"./{rel.as_posix()}" if str(rel) != "." else "."


def find_models(cwd: Path, demo_models: Path, demo_names: Iterable[str]) -> list[str]:
    """`demo:models/<name>` first, then folders under `cwd` that hold a config.json."""
    out = [f"demo:models/{name}" for name in demo_names]
    if demo_models.is_dir():
        out += [f"demo:models/{p.name}" for p in sorted(demo_models.iterdir())
                if (p / "config.json").is_file()]
    try:
        for here, _dirs, files in _walk(cwd):
            if "config.json" in files and here != cwd:
                out.append(_relative(here, cwd))
    except OSError:
        pass
    return out


def find_datasets(cwd: Path, demo_formats: Iterable[str]) -> list[str]:
    """`demo:data/<format>` first, then data files (.jsonl/.json/.parquet/.csv) under `cwd`."""
    out = [f"demo:data/{fmt}" for fmt in demo_formats]
    try:
        for here, _dirs, files in _walk(cwd):
            data = [f for f in files if Path(f).suffix.lower() in FILE_FORMATS
                    and f not in ("config.json", "tokenizer.json", "trainer_state.json",
                                  "adapter_config.json", "generation_config.json",
                                  "tokenizer_config.json", "special_tokens_map.json", "status.json",
                                  "events.jsonl")]
            for f in sorted(data):
                out.append(_relative(here / f, cwd))
    except OSError:
        pass
    return out
