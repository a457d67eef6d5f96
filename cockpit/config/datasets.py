"""Where a run's data lives, and what columns it has — without importing `datasets`.

The runner loads data with `datasets.load_dataset`; the same resolution happens
here first so a preset whose data lacks the trainer's columns is refused before
launch, with the missing columns named. A hub id's columns are the runner's to
check; whether it can load here at all (offline: only from the cache) is asked of
`cockpit.config.hub`.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
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


SPLIT_DIRS = {"train", "training", "test", "testing", "eval", "evaluation", "validation", "valid", "val",
              "dev", "data"}
"""Sub-folder names `load_dataset(folder)` reads as the folder's own splits (`train/`, `data/`)."""


def dataset_subfolders(root: Path) -> list[str]:
    """Sub-folders of `root` that each hold a dataset of their own (not split folders).
    `load_dataset` on a folder reads every sub-folder's files as one dataset, so a folder of
    several datasets (a half-typed `demo:data/`) cannot load: the user meant one of them."""
    found = []
    try:
        subs = sorted(p for p in root.iterdir() if p.is_dir() and p.name.lower() not in SPLIT_DIRS
                      and not p.name.startswith("."))
    except OSError:
        return []
    for sub in subs:
        if any(f.is_file() and f.suffix.lower() in FILE_FORMATS for f in sub.rglob("*")):
            found.append(sub.name)
    return found


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


def read_rows(path: Path, limit: int = 3) -> list[dict[str, Any]]:
    """The first `limit` rows of a local data file, reading no more of it than needed."""
    suffix = path.suffix.lower()
    rows: list[dict[str, Any]] = []
    try:
        if suffix == ".jsonl" or (suffix == ".json" and _starts_with_object_line(path)):
            with open(path, encoding="utf-8-sig") as fh:
                for line in fh:
                    if len(rows) >= limit:
                        break
                    if line.strip():
                        row = json.loads(line)
                        if isinstance(row, dict):
                            rows.append(row)
            return rows
        if suffix == ".json":
            obj = json.loads(path.read_text(encoding="utf-8-sig"))
            if isinstance(obj, dict):
                obj = next((v for v in obj.values() if isinstance(v, list)), [])
            return [r for r in obj[:limit] if isinstance(r, dict)]
        if suffix == ".csv":
            with open(path, newline="", encoding="utf-8-sig") as fh:
                for row in csv.DictReader(fh):
                    if len(rows) >= limit:
                        break
                    rows.append(dict(row))
            return rows
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            for batch in pf.iter_batches(batch_size=limit):
                return batch.to_pylist()[:limit]
    except (OSError, ValueError, UnicodeDecodeError):
        return rows
    return rows


def _starts_with_object_line(path: Path) -> bool:
    with open(path, encoding="utf-8-sig") as fh:
        first = fh.readline().strip()
    return first.startswith("{") and first.endswith("}")


@dataclass
class DataCheck:
    """What a dataset reference holds, as validation and the setup screen's preview both see it."""

    kind: str
    """"hub" (columns checked when the run loads it), "file" or "folder"."""
    path: Path | None = None
    """The local file of the split read."""
    columns: list[str] = field(default_factory=list)
    """Its columns, renamed as the preset asks."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Its first rows, renamed (only when asked for)."""
    fits: bool | None = None
    """Whether the columns fit the trainer; None when not checked."""
    problem: str | None = None
    """One line naming what is wrong and the fix."""


def inspect(name: str, *, config: str | None = None, split: str = "train", renames: dict[str, str] | None = None,
            formats: tuple[tuple[str, ...], ...] | None = None, trainer: str | None = None,
            rows: int = 0, needs: dict[str, list[str]] | None = None, shown_as: str | None = None) -> DataCheck:
    """Resolve a dataset, read its split's columns (and first `rows` rows), apply the renames and
    check the columns against the trainer's formats and `needs` (column → the reward functions
    that read it; `shown_as`: the name the user gave, for that line). Raises CockpitError only for
    a reference that cannot be resolved; anything wrong with the data is `problem`."""
    ref = resolve(name, config)
    if ref.kind == "hub":
        from cockpit.config.hub import dataset_problem

        not_here = dataset_problem(name)
        return DataCheck(kind="hub", fits=False if not_here else None, problem=not_here)
    base = split_base(split)
    nested = dataset_subfolders(ref.path) if ref.kind == "folder" else []
    if len(nested) > 1:
        shown, given = ", ".join(nested[:4]) + (", …" if len(nested) > 4 else ""), shown_as or name
        return DataCheck(kind=ref.kind, fits=False, problem=f"dataset {given}: a folder of {len(nested)} "
                         f"datasets ({shown}), not one — name one of them, e.g. {given.rstrip('/')}/{nested[0]}")
    path = split_file(ref, base)
    if path is None:
        return DataCheck(kind=ref.kind, fits=False, problem=f"dataset {name}: no '{base}' split found in the "
                         f"folder — name a file like {base}.jsonl, or set the split (dataset_train_split)")
    columns, _ = read_columns(path)
    renames = renames or {}
    missing = [old for old in renames if old not in columns]
    if missing:
        return DataCheck(kind=ref.kind, path=path, columns=columns, fits=False,
                         problem=f"cockpit.dataset.columns renames '{missing[0]}', which {path.name} does not "
                                 f"have (it has {', '.join(columns)})")
    found = DataCheck(kind=ref.kind, path=path, columns=[renames.get(c, c) for c in columns])
    if rows:
        found.rows = [{renames.get(k, k): v for k, v in r.items()} for r in read_rows(path, rows)]
    if formats is not None and trainer is not None:
        try:
            check_columns(found.columns, formats, trainer, os.fspath(path))
            found.fits = True if formats else None
        except CockpitError as exc:
            found.fits, found.problem = False, str(exc)
    lacking = [c for c in needs or {} if c not in found.columns]
    if lacking and not found.problem:
        found.fits, found.problem = False, reward_columns_problem(lacking, needs or {}, shown_as or name,
                                                                  found.columns)
    return found


def reward_columns_problem(lacking: list[str], needs: dict[str, list[str]], name: str, columns: list[str]) -> str:
    """One line: which reward function reads which column the data lacks, and the ways out."""
    funcs = sorted({f for c in lacking for f in needs[c]})
    cols = ", ".join(f"'{c}'" for c in lacking)
    return (f"reward function{'s' if len(funcs) > 1 else ''} {', '.join(funcs)} need{'' if len(funcs) > 1 else 's'} "
            f"column{'s' if len(lacking) > 1 else ''} {cols}, which {name} lacks (it has "
            f"{', '.join(columns) or 'no columns'}) — pick data that has {'them' if len(lacking) > 1 else 'it'}, "
            f"rename one with cockpit.dataset.columns: {{your_column: {lacking[0]}}}, or pick another reward function")

