"""`cockpit export`: every metric as CSV, and the default panels as a PNG — no TUI needed.

The same source resolution as replay (run folder, output dir, checkpoint,
trainer_state.json, events.jsonl) and the same panel choice as the TUI, so the
image shows what the cockpit would have shown.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.metrics.panels import default_panels, guess_trainer
from cockpit.metrics.plotmath import downsample
from cockpit.metrics.sources import Source, open_source
from cockpit.run import journal

PNG_POINTS = 2000


def _trainer(source: Source, keys: list[str]) -> str | None:
    if source.journal_records:
        for rec in source.journal_records:
            if rec.kind == journal.RUN_STARTED:
                return rec.data.get("trainer")
    return guess_trainer(keys)


def metric_rows(source: Source) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): one row per (train|eval, step), the last value winning on repeats."""
    table: dict[tuple[str, int], dict[str, Any]] = {}
    keys: dict[str, None] = {}
    for rec in source.records:
        if rec.kind not in (journal.METRICS, journal.EVAL) or rec.step is None:
            continue
        kind = "eval" if rec.kind == journal.EVAL else ("summary" if rec.data.get("summary") else "train")
        row = table.setdefault((kind, rec.step), {"step": rec.step, "kind": kind})
        for k, v in rec.data.items():
            if k == "summary" or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            row[k] = v
            keys.setdefault(k)
    order = {"train": 0, "eval": 1, "summary": 2}
    rows = [table[k] for k in sorted(table, key=lambda k: (k[1], order[k[0]]))]
    return ["step", "kind", *sorted(keys)], rows


def write_csv(source: Source, out: Path) -> int:
    columns, rows = metric_rows(source)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, restval="")
        w.writeheader()
        for row in rows:
            w.writerow({k: (_fmt(v) if isinstance(v, float) else v) for k, v in row.items()})
    return len(rows)


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def write_png(source: Source, out: Path) -> int:
    """The default panels, one subplot each; NaN points are skipped, lines are not broken."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    store = source.load_store()
    keys = store.keys()
    panels = default_panels(_trainer(source, keys), keys)
    if not panels:
        raise CockpitError(f"{source.path}: no metrics to plot — nothing was logged yet")
    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for key in panel.resolve(keys):
            x, y = store.series(key)
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            ok = np.isfinite(y)
            x, y = downsample(x[ok], y[ok], PNG_POINTS)
            ax.plot(x, y, label=key, linewidth=1.2, marker="o" if len(x) < 30 else None, markersize=3)
        ax.set_title(panel.title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(source.label)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return len(panels)


def parse_steps(text: str | None) -> tuple[int | None, int | None]:
    """`A:B`, `A:`, `:B` or `N` (inclusive)."""
    if not text:
        return None, None
    first, sep, last = text.partition(":")
    try:
        a = int(first) if first.strip() else None
        b = (int(last) if last.strip() else None) if sep else a
    except ValueError:
        raise CockpitError(f"--steps {text}: expected A:B, A:, :B or N (whole numbers)") from None
    return a, b


def write_completions(source: Source, out: Path, steps: str | None = None) -> int:
    """Every logged step's completions in [A, B] (one step in memory at a time): JSON lines, CSV
    (one column per reward and extra field) or parquet, by the file's extension."""
    first, last = parse_steps(steps)
    lib = source.completions_library()
    suffix = out.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv", ".parquet"):
        raise CockpitError(f"{out}: write completions as .jsonl, .csv or .parquet")
    n = 0
    if suffix in (".jsonl", ".json"):
        from cockpit.metrics.completions import dumps_row

        with open(out, "wb") as fh:
            for row in lib.iter_rows(first, last):
                fh.write(dumps_row(row))
                n += 1
        return n
    rewards: dict[str, None] = {}
    extras: dict[str, None] = {}
    for row in lib.iter_rows(first, last):  # columns first: reward functions may differ by step
        rewards.update(dict.fromkeys(row["rewards"]))
        extras.update(dict.fromkeys(row["extra"]))
    columns = ["step", "source", "prompt", "completion", "advantage", *rewards, *(f"extra/{k}" for k in extras)]

    def flat(row: dict[str, Any]) -> dict[str, Any]:
        d = {k: row.get(k) for k in ("step", "source", "prompt", "completion", "advantage")}
        d.update({k: row["rewards"].get(k) for k in rewards})
        d.update({f"extra/{k}": row["extra"].get(k) for k in extras})
        return d

    if suffix == ".csv":
        with open(out, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=columns)
            w.writeheader()
            for row in lib.iter_rows(first, last):
                w.writerow(flat(row))
                n += 1
        return n
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for step in lib.steps():
            if (first is not None and step < first) or (last is not None and step > last):
                continue
            rows = [flat(r) for r in lib.rows(step)]
            if not rows:
                continue
            table = pa.Table.from_pylist(rows, schema=writer.schema if writer else None)
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema)
            writer.write_table(table)
            n += len(rows)
    finally:
        if writer is not None:
            writer.close()
    return n


def export(path: str | os.PathLike[str], *, csv_out: str | None = None,
           png_out: str | None = None, completions_out: str | None = None,
           steps: str | None = None) -> dict[str, int]:
    if not csv_out and not png_out and not completions_out:
        raise CockpitError("nothing to write — give --csv OUT.csv, --png OUT.png and/or --completions OUT.jsonl")
    source = open_source(path)
    done: dict[str, int] = {}

    def completions(src: Source, out: Path) -> int:
        return write_completions(src, out, steps)

    for target, writer, name in ((csv_out, write_csv, "csv"), (png_out, write_png, "png"),
                                 (completions_out, completions, "completions")):
        if not target:
            continue
        out = Path(target).expanduser()
        if not out.parent.is_dir():
            raise CockpitError(f"{out}: folder {out.parent} does not exist — create it or pick "
                               "another path")
        try:
            done[name] = writer(source, out)
        except OSError as exc:
            raise CockpitError(f"{out}: cannot write ({exc.strerror})") from None
    return done
