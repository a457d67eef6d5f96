"""Where a run's data lives, and what columns it has — without importing `datasets`.

The runner loads data with `datasets.load_dataset`; the same resolution happens
here first so a preset whose data lacks the trainer's columns is refused before
launch, with the missing columns named. Hub ids cannot be checked offline; they
are left to the runner (which reports "not found / no network" clearly).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError

FILE_FORMATS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv",
                ".txt": "text", ".arrow": "arrow"}

_SPLIT = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(\[.*\])?\s*$")


@dataclass(frozen=True)
class DatasetRef:
    """kind: "file" (one local file), "folder" (a local dataset folder) or "hub"."""

    kind: str
    name: str
    builder: str | None = None   # "json", "parquet", "csv" for files
    config: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.name)


def resolve(name: str, config: str | None = None) -> DatasetRef:
    p = Path(name).expanduser()
    if p.is_file():
        builder = FILE_FORMATS.get(p.suffix.lower())
        if builder is None:
            raise CockpitError(f"dataset {name}: unknown file type '{p.suffix}' — use .jsonl, .json, "
                               ".parquet or .csv")
        return DatasetRef("file", str(p.resolve()), builder, config)
    if p.is_dir():
        return DatasetRef("folder", str(p.resolve()), None, config)
    looks_local = name.startswith((".", "/", "~")) or p.suffix.lower() in FILE_FORMATS
    if looks_local:
        raise CockpitError(f"dataset {name}: no such file or folder — check dataset_name")
    return DatasetRef("hub", name, None, config)


def split_base(expr: str) -> str:
    """'train[:500]' → 'train'."""
    m = _SPLIT.match(expr or "train")
    if not m:
        raise CockpitError(f"split {expr!r}: expected a split name with an optional slice, "
                           "e.g. train or train[:500] or train[:10%]")
    return m.group(1)


def split_file(ref: DatasetRef, split: str) -> Path | None:
    """The file holding a split of a local folder, as `load_dataset(folder)` would find it."""
    if ref.kind != "folder":
        return ref.path if ref.kind == "file" else None
    root = ref.path
    for pattern in (f"{split}.*", f"{split}-*", f"data/{split}.*", f"data/{split}-*",
                    f"{split}/*", f"data/{split}/*"):
        for f in sorted(root.glob(pattern)):
            if f.is_file() and f.suffix.lower() in FILE_FORMATS:
                return f
    if split == "train":
        files = [f for f in sorted(root.iterdir()) if f.is_file() and f.suffix.lower() in FILE_FORMATS]
        if len(files) == 1:
            return files[0]
    return None


def read_columns(path: Path) -> tuple[list[str], dict[str, Any] | None]:
    """Column names and the first row of a local data file (None for parquet's row)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl" or (suffix == ".json" and _first_char(path) == "{"):
            with open(path, encoding="utf-8-sig") as fh:
                for line in fh:
                    if line.strip():
                        try:
                            row = json.loads(line)
                        except ValueError:
                            # A .json file holding one object over several lines.
                            break
                        if isinstance(row, dict):
                            return list(row), row
                        break
            obj = json.loads(path.read_text(encoding="utf-8-sig"))
            if isinstance(obj, dict):
                # {"data": [...]} or a column-oriented dict
                for v in obj.values():
                    if isinstance(v, list) and v and isinstance(v[0], dict):
                        return list(v[0]), v[0]
                return list(obj), None
            raise CockpitError(f"dataset {path}: not a JSON object per line — expected rows like "
                               '{"prompt": ..., "completion": ...}')
        if suffix == ".json":
            obj = json.loads(path.read_text(encoding="utf-8-sig"))
            if isinstance(obj, list) and obj and isinstance(obj[0], dict):
                return list(obj[0]), obj[0]
            raise CockpitError(f"dataset {path}: expected a JSON list of rows")
        if suffix == ".csv":
            with open(path, newline="", encoding="utf-8-sig") as fh:
                reader = csv.DictReader(fh)
                row = next(reader, None)
                return list(reader.fieldnames or []), dict(row) if row else None
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names), None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CockpitError(f"dataset {path}: cannot read it ({exc}) — is it a valid {suffix} file?") \
            from None
    return [], None


def _first_char(path: Path) -> str:
    with open(path, encoding="utf-8-sig") as fh:
        while True:
            c = fh.read(1)
            if not c or not c.isspace():
                return c


def check_columns(columns: list[str], formats: tuple[tuple[str, ...], ...], trainer: str,
                  where: str) -> None:
    """Refuse data that fits none of the trainer's accepted column sets."""
    if not formats:
        return
    have = set(columns)
    if any(set(f) <= have for f in formats):
        return
    best = min(formats, key=lambda f: len(set(f) - have))
    missing = [c for c in best if c not in have]
    needs = " or ".join("/".join(f) for f in formats)
    raise CockpitError(
        f"dataset {where} has no column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(repr(m) for m in missing)} — {trainer} needs {needs} "
        f"(it has {', '.join(columns) or 'no columns'}; rename with cockpit.dataset.columns)")
