"""The first rows of a local dataset and whether its columns fit the chosen trainer.

`inspect_data` reads the disk (and may write the demo datasets on first use), so the setup
screen calls it in a worker and hands the `DataReport` to `DataPreview.show`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from cockpit.config import datasets as ds
from cockpit.errors import CockpitError
from cockpit.trainers.registry import TrainerSpec
from cockpit.ui.text import fold

PREVIEW_ROWS = 3
CELL_WIDTH = 60


@dataclass
class DataReport:
    """What the data section shows: rows, and the column check (`fits` None when unknown)."""

    where: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    fits: bool | None = None
    message: str = ""


def read_rows(path: Path, limit: int = PREVIEW_ROWS) -> list[dict[str, Any]]:
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


def resolve_name(name: str) -> str:
    """`demo:data/x` -> the demo folder (written on first use); anything else unchanged."""
    from cockpit.demo import datasets as demo

    if name.startswith(demo.DEMO_PREFIX):
        root = demo.demo_dir()
        demo.ensure_datasets(root)
        return str(demo.demo_path(name, root))
    return name


def inspect_data(name: str, split: str, renames: dict[str, str], spec: TrainerSpec | None,
                 config: str | None = None) -> DataReport:
    """Resolve the dataset like validation does, read its columns and first rows, check columns."""
    if not name:
        return DataReport(message="no dataset yet: a hub id, a local folder or a .jsonl/.json/"
                                  ".parquet/.csv file (demo:data/<format> for the offline demo)")
    try:
        ref = ds.resolve(resolve_name(name), config)
        if ref.kind == "hub":
            return DataReport(where=name, message=f"{name}: a hub dataset — its columns are "
                                                  "checked when the run loads it")
        base = ds.split_base(split or "train")
        path = ds.split_file(ref, base)
        if path is None:
            return DataReport(where=name, fits=False,
                              message=f"dataset {name}: no '{base}' split found in the folder — "
                                      f"name a file like {base}.jsonl, or change the split")
        columns, _ = ds.read_columns(path)
        rows = read_rows(path)
    except CockpitError as exc:
        return DataReport(where=name, fits=False, message=str(exc))
    report = DataReport(where=str(path), columns=list(columns), rows=rows)
    missing = [old for old in renames if old not in columns]
    if missing:
        report.fits = False
        report.message = (f"renames '{missing[0]}', which {path.name} does not have "
                          f"(it has {', '.join(columns)})")
        return report
    renamed = [renames.get(c, c) for c in columns]
    report.columns = renamed
    report.rows = [{renames.get(k, k): v for k, v in r.items()} for r in rows]
    if spec is None:
        report.message = f"columns: {', '.join(renamed)} — pick a trainer to check them"
        return report
    try:
        ds.check_columns(renamed, spec.data_formats, spec.name, path.name)
    except CockpitError as exc:
        report.fits, report.message = False, str(exc)
        return report
    if not spec.data_formats:
        report.message = f"columns {', '.join(renamed)} — cockpit does not know what {spec.name} needs"
        return report
    report.fits = True
    report.message = f"columns {', '.join(renamed)} fit {spec.name}"
    return report


class DataPreview(Static):
    """The column check on top, then the first rows as a table (long cells folded)."""

    DEFAULT_CSS = """
    DataPreview {
        height: auto;
        padding: 0 1 0 0;
    }
    DataPreview.-bad {
        color: $text-error;
    }
    """

    def show(self, report: DataReport) -> None:
        self.set_class(report.fits is False, "-bad")
        icon = {True: "✓ ", False: "✗ ", None: ""}[report.fits]
        head = Text(icon + report.message, style="bold" if report.fits is not None else "dim")
        if not report.rows:
            self.update(head)
            return
        table = Table(show_edge=False, expand=True, pad_edge=False, show_lines=False,
                      title=Text(f"first {len(report.rows)} rows of {Path(report.where).name}"),
                      title_justify="left", title_style="dim")
        for col in report.columns:
            table.add_column(Text(col), overflow="fold", ratio=1)  # a str header is markup
        for row in report.rows:
            table.add_row(*[Text(fold(_cell(row.get(c)), CELL_WIDTH)) for c in report.columns])
        from rich.console import Group

        self.update(Group(head, table))


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
