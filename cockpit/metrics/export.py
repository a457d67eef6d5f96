"""`cockpit export`: every metric as CSV, and the default panels as a PNG — no TUI needed.

The metrics come from the same `RunData` the TUI shows: the path is read by the replay
loader's own function (`replay_loader.from_source(open_source(path))`, the one the replay
screen runs), or a screen hands over the RunData it holds. So the CSV holds exactly the points
the plots hold — a resumed run's repeated steps once, as the store's resume rule keeps them —
and the PNG shows the panels the cockpit would have chosen. Completions are read from the
source (every logged step, not the UI's ring of recent ones).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cockpit.errors import CockpitError
from cockpit.metrics import plot_colors
from cockpit.metrics.panels import default_panels
from cockpit.metrics.plotmath import downsample
from cockpit.metrics.replay_loader import from_source
from cockpit.metrics.rundata import RunData
from cockpit.metrics.sources import Source, open_source
from cockpit.metrics.store import MetricStore

PNG_POINTS = 2000

_KIND_ORDER = {"train": 0, "eval": 1, "summary": 2}
_EVAL_PREFIX = "eval_"
"""The store keeps eval metrics as series under the names they were logged with (`eval_loss`)."""


def metric_rows(store: MetricStore) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows): one row per (train|eval, step) the store holds a point at, and the
    end-of-training summary as one last row at the store's last step."""
    table: dict[tuple[str, int], dict[str, Any]] = {}
    keys = store.keys()
    for key in keys:
        kind = "eval" if key.startswith(_EVAL_PREFIX) else "train"
        steps, values = store.series(key, copy=False)
        for step, value in zip(steps.tolist(), values.tolist(), strict=True):
            row = table.get((kind, step))
            if row is None:
                row = table[kind, step] = {"step": step, "kind": kind}
            row[key] = value
    if store.summary:
        last = max((step for _, step in table), default=store.last_step or 0)
        table["summary", last] = {"step": last, "kind": "summary", **store.summary}
    rows = [table[k] for k in sorted(table, key=lambda k: (k[1], _KIND_ORDER[k[0]]))]
    return ["step", "kind", *sorted({*keys, *store.summary})], rows


def journal_segments(records: list[Any]) -> dict[int, list[Any]]:
    """A script run's journal split by Trainer: each `run_started` names its segment (the n-th
    Trainer the script built; 0 when it does not say) and the records after it are that segment's.
    What comes before the first `run_started` (phases, warnings) belongs to every segment. A
    finding that names its segment (the live judge's, written after the next Trainer began) goes
    to that one."""
    from cockpit.run import journal

    parts: dict[int, list[Any]] = {}
    head: list[Any] = []
    current: int | None = None
    for rec in records:
        if rec.kind == journal.RUN_STARTED:
            seg = rec.data.get("segment", 0)
            current = seg if isinstance(seg, int) and not isinstance(seg, bool) else 0
            parts.setdefault(current, list(head))
        said = rec.data.get("segment") if rec.kind == journal.FINDING else None
        if isinstance(said, int) and said in parts:
            parts[said].append(rec)
        elif current is None:
            head.append(rec)
        else:
            parts[current].append(rec)
    return parts or {0: head}


def write_segments_csv(parts: dict[int, RunData], out: Path) -> int:
    """One table for a script with several Trainers: each Trainer's points under its own
    `segment`, so the second Trainer's step 1 never hides the first one's."""
    tables = {seg: metric_rows(d.store) for seg, d in sorted(parts.items())}
    keys = sorted({c for cols, _ in tables.values() for c in cols[2:]})
    n = 0
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["segment", "step", "kind", *keys], restval="")
        w.writeheader()
        for seg, (_, rows) in tables.items():
            for row in rows:
                w.writerow({"segment": seg, **{k: (_fmt(v) if isinstance(v, float) else v) for k, v in row.items()}})
                n += 1
    return n


def write_csv(data: RunData, out: Path) -> int:
    columns, rows = metric_rows(data.store)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, restval="")
        w.writeheader()
        for row in rows:
            w.writerow({k: (_fmt(v) if isinstance(v, float) else v) for k, v in row.items()})
    return len(rows)


def _fmt(v: float) -> str:
    """NaN and infinities spelled out; whole numbers (counters the store holds as floats) without
    a trailing `.0`; anything else exactly, as `repr` writes it."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


def write_png(data: RunData, out: Path, colors: Sequence[tuple[int, int, int]] | None = None) -> int:
    """The default panels, one subplot each; NaN points are skipped, lines are not broken. Each
    series wears the colour the screen gives it (`plot_colors`, from the palette of the theme:
    `colors`), an eval series dotted as on the screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    store = data.store
    keys = store.keys()
    panels = default_panels(data.trainer, keys)  # the TUI's choice (run_view.refresh_view)
    if not panels:
        raise CockpitError(f"{data.label}: no metrics to plot — nothing was logged yet")
    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    palette = list(colors) if colors else list(plot_colors.FALLBACK)
    for ax, panel in zip(axes.flat, panels, strict=False):
        drawn = panel.resolve(keys)
        rgbs = plot_colors.panel_colors([(0, k) for k in drawn], palette, multi=False, keys=[keys])
        for key, rgb in zip(drawn, rgbs, strict=True):
            x, y = store.series(key)
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            ok = np.isfinite(y)
            x, y = downsample(x[ok], y[ok], PNG_POINTS)
            ax.plot(x, y, label=key, linewidth=1.2, marker="o" if len(x) < 30 else None, markersize=3,
                    color=tuple(c / 255 for c in rgb),
                    linestyle=":" if plot_colors.is_eval(key) and len(drawn) > 1 else "-")
        ax.set_title(panel.title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(data.label)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return len(panels)


def _replayed(source: Source, records: list[Any]) -> RunData:
    data = RunData(source.label, name=source.name, run_dir=source.path.parent)
    data.apply(records)
    return data


def parse_steps(text: str | None) -> tuple[int | None, int | None]:
    """`A:B`, `A:`, `:B` or `N` (inclusive; steps count from 0). A range that can hold no step
    (`10:5`) or a negative step (`-3:` reads like Python's "the last three", which it is not) is
    refused: either would export nothing, or everything, without a word."""
    if not text:
        return None, None
    first, sep, last = text.partition(":")
    try:
        a = int(first) if first.strip() else None
        b = (int(last) if last.strip() else None) if sep else a
    except ValueError:
        raise CockpitError(f"--steps {text}: expected A:B, A:, :B or N (whole numbers)") from None
    if (a is not None and a < 0) or (b is not None and b < 0):
        raise CockpitError(f"--steps {text}: steps are numbered from 0 — give A:B, A:, :B or N with "
                           "whole numbers ≥ 0 (a negative step does not count from the end)")
    if a is not None and b is not None and a > b:
        raise CockpitError(f"--steps {text}: the range is empty ({a} comes after {b}) — give the smaller step "
                           f"first: --steps {b}:{a}")
    return a, b


def kept_samples(source: Source, first: int | None, last: int | None) -> list[dict[str, Any]]:
    """The answers `cockpit sample` and the Checkpoints tab kept in the run folder's samples/,
    as completion rows (source `sampled`, the checkpoint's step), when the source is a run."""
    if not source.is_journal:
        return []
    from cockpit.metrics import samples
    from cockpit.run.folder import RunFolder

    rows = [samples.as_completion_row(r) for r in samples.read(RunFolder(source.path.parent))]
    return [r for r in rows if (first is None or r["step"] >= first) and (last is None or r["step"] <= last)]


def write_completions(source: Source, out: Path, steps: str | None = None,
                      warnings: list[str] | None = None) -> int:
    """Every logged step's completions in [A, B] (one step in memory at a time): JSON lines, CSV
    (one column per reward and extra field) or parquet, by the file's extension. Steps whose files
    could not be read are named in `warnings` (one line each), never dropped in silence."""
    first, last = parse_steps(steps)
    lib = source.completions_library()
    sampled = kept_samples(source, first, last)
    try:
        return _write_completions(lib, out, first, last, sampled)
    finally:
        if warnings is not None:
            warnings.extend(lib.warnings)


def _write_completions(lib: Any, out: Path, first: int | None, last: int | None,
                       sampled: list[dict[str, Any]]) -> int:
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
            for row in sampled:
                fh.write(dumps_row(row))
                n += 1
        return n
    rewards: dict[str, None] = {}
    extras: dict[str, None] = {}
    for row in lib.iter_rows(first, last):  # columns first: reward functions may differ by step
        rewards.update(dict.fromkeys(row["rewards"]))
        extras.update(dict.fromkeys(row["extra"]))
    for row in sampled:
        extras.update(dict.fromkeys(row["extra"]))
    columns = ["step", "source", "prompt", "completion", "advantage", *rewards, *(f"extra/{k}" for k in extras)]

    def flat(row: dict[str, Any]) -> dict[str, Any]:
        d = {k: row.get(k) for k in ("step", "source", "prompt", "completion", "advantage")}
        d.update({k: row["rewards"].get(k) for k in rewards})
        d.update({f"extra/{k}": row["extra"].get(k) for k in extras})
        return d

    if suffix == ".csv":
        with open(out, "w", newline="", encoding="utf-8") as text:
            w = csv.DictWriter(text, fieldnames=columns)
            w.writeheader()
            for row in lib.iter_rows(first, last):
                w.writerow(flat(row))
                n += 1
            for row in sampled:
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
        if sampled:
            table = pa.Table.from_pylist([flat(r) for r in sampled], schema=writer.schema if writer else None)
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema)
            writer.write_table(table)
            n += len(sampled)
    finally:
        if writer is not None:
            writer.close()
    return n


def export(path: str | os.PathLike[str], *, csv_out: str | None = None,
           png_out: str | None = None, completions_out: str | None = None,
           steps: str | None = None, data: RunData | None = None,
           warnings: list[str] | None = None,
           colors: Sequence[tuple[int, int, int]] | None = None) -> dict[str, int]:
    """Write what was asked; `data` is the RunData a screen shows for `path` (read from `path`
    when not given). Returns how many rows, panels or completions each file got; what could not
    be read (and so is missing from a file) goes to `warnings`, one line each. `colors`: the
    palette of the screen's theme, for the PNG."""
    if not csv_out and not png_out and not completions_out:
        raise CockpitError("nothing to write — give --csv OUT.csv, --png OUT.png and/or --completions OUT.jsonl")
    parse_steps(steps)  # a bad range is refused before anything is read or written
    source = open_source(path) if data is None or completions_out else None
    if source is not None and warnings is not None:
        warnings.extend(source.warnings)  # lines of the journal skipped (too long, wrong types, garbage)
    if data is None and (csv_out or png_out):
        assert source is not None
        data = from_source(source)
    done: dict[str, int] = {}

    def metrics_csv(out: Path) -> int:
        assert data is not None
        if source is not None and source.is_journal and source.records:
            parts = journal_segments(list(source.records))
            if len(parts) > 1:  # a script that built several Trainers: each one's points kept
                return write_segments_csv({seg: _replayed(source, recs) for seg, recs in parts.items()}, out)
        return write_csv(data, out)

    def panels_png(out: Path) -> int:
        assert data is not None
        return write_png(data, out, colors)

    def completions(out: Path) -> int:
        assert source is not None
        return write_completions(source, out, steps, warnings)

    for target, writer, name in ((csv_out, metrics_csv, "csv"), (png_out, panels_png, "png"),
                                 (completions_out, completions, "completions")):
        if not target:
            continue
        out = Path(target).expanduser()
        if not out.parent.is_dir():
            raise CockpitError(f"{out}: folder {out.parent} does not exist — create it or pick "
                               "another path")
        try:
            done[name] = writer(out)
        except OSError as exc:
            raise CockpitError(f"{out}: cannot write ({exc.strerror})") from None
    return done
