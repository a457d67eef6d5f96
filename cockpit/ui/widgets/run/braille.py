"""A line chart in braille cells, drawn with numpy: the metric panel's canvas.

plotext drew the panels until its build (a Python loop over every cell and dot, ~3 ms for a
78x20 panel) became most of a live frame; this draws the same picture, a y axis of labelled
ticks, a braille canvas (2x4 dots a cell), an x axis with its tick marks and labels under it,
in well under a millisecond. It knows nothing of Textual: it returns each row as runs of text
with a slot saying how to colour them, and the widget turns the slots into styles.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

AXIS = -1
"""Slot of the axes, tick marks and labels (the theme's foreground)."""
BLANK = -2
"""Slot of empty cells (the canvas background alone)."""

# The bit of each dot of a braille cell, by (dot row, dot column): U+2800 + the bits.
_DOT = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]], dtype=np.uint16)
POINT = "•"
"""A series of one point is drawn as this, not one dot among eight."""
ABOVE, BELOW = "▲", "▼"
"""Drawn on the canvas's top (bottom) row over a point the y range left out (`Chart.clipped`)."""
DASH = 4
"""A dotted series (an eval twin) lights this many dots of its line, then skips as many."""

Row = list[tuple[str, int]]


@dataclass
class Series:
    """Points to join with lines (or one point, drawn as POINT); in data units."""

    x: np.ndarray
    y: np.ndarray
    dotted: bool = False
    """Drawn dotted (an eval series beside its train twin, in the same colour)."""


@dataclass
class Chart:
    """What to draw: the series in order (a later one wins a shared cell's colour), the data
    ranges the canvas spans, and the ticks as (value, label)."""

    series: Sequence[Series]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xticks: Sequence[tuple[float, str]] = ()
    yticks: Sequence[tuple[float, str]] = ()
    marks: Sequence[tuple[float, str]] = ()
    """(x, one letter) written on the x axis: a checkpoint, a resume, a stop."""
    clipped: Sequence[tuple[float, int, int]] = ()
    """(x, +1 above / -1 below the y range, slot) of points the range leaves out: each is
    marked on the canvas's edge row at its column."""


def render(chart: Chart, width: int, height: int) -> list[Row]:
    """`height` rows of exactly `width` cells: the canvas with the y axis on its left, then the
    x axis row and the x labels row."""
    yticks = chart.yticks
    label_w = max((len(label) for _, label in yticks), default=0)
    if width - label_w - 1 < max(2, width // 2):  # labels that would crowd out the canvas: none
        yticks, label_w = (), 0
    cols = max(1, width - label_w - 1)
    rows = max(1, height - 2)
    dots_w, dots_h = cols * 2, rows * 4
    bits = np.zeros((rows, cols), dtype=np.uint16)
    owner = np.full((rows, cols), BLANK, dtype=np.int16)
    points: list[tuple[int, int, int]] = []  # (row, col, slot) of one-point series
    for slot, s in enumerate(chart.series):
        px = _scale(np.asarray(s.x, dtype=np.float64), chart.xlim, dots_w - 1)
        py = (dots_h - 1) - _scale(np.asarray(s.y, dtype=np.float64), chart.ylim, dots_h - 1)
        if np.count_nonzero(np.isfinite(px) & np.isfinite(py)) == 1:
            j = int(np.flatnonzero(np.isfinite(px) & np.isfinite(py))[0])
            if -0.5 <= px[j] < dots_w - 0.5 and -0.5 <= py[j] < dots_h - 0.5:
                x0, y0 = round(float(px[j])), round(float(py[j]))
                points.append((y0 // 4, x0 // 2, slot))
            continue
        ix, iy = _line_dots(px, py, dots_w, dots_h)
        keep = (ix >= 0) & (ix < dots_w) & (iy >= 0) & (iy < dots_h)
        if s.dotted:
            keep &= (np.arange(len(ix)) // DASH) % 2 == 0
        ix, iy = ix[keep], iy[keep]
        mine = np.zeros_like(bits)
        np.bitwise_or.at(mine, (iy // 4, ix // 2), _DOT[iy % 4, ix % 2])
        bits |= mine
        owner[mine > 0] = slot
    codes = np.where(bits > 0, 0x2800 + bits, 0x20).astype(np.uint32)
    for r, c, slot in points:
        codes[r, c] = ord(POINT)
        owner[r, c] = slot
    for x, side, slot in chart.clipped:
        c = _dot(x, chart.xlim, dots_w - 1) // 2
        if 0 <= c < cols:
            r = 0 if side > 0 else rows - 1
            codes[r, c] = ord(ABOVE if side > 0 else BELOW)
            owner[r, c] = slot

    y_marks: dict[int, str] = {}
    for value, label in yticks:
        # Rounded as a point's dot is (`round(py)`, not `span - round(...)`): a lone point at a
        # tick's value sits on that tick's row, never the one beside it.
        d = float(_scale(np.array([value], dtype=np.float64), chart.ylim, dots_h - 1)[0])
        dot = round((dots_h - 1) - d) if math.isfinite(d) and abs(d) < 4 * dots_h else -1
        if 0 <= dot < dots_h:
            y_marks[dot // 4] = label
    out: list[Row] = []
    for r in range(rows):
        mark = y_marks.get(r)
        if mark is None:
            head: Row = [(" " * label_w, BLANK), ("│", AXIS)] if label_w else [("│", AXIS)]
        else:
            pad = label_w - len(mark)
            head = ([(" " * pad, BLANK)] if pad else []) + [(mark + "┤", AXIS)]
        out.append(head + _runs(codes[r], owner[r]))

    x_marks: list[tuple[int, str]] = []
    for value, label in chart.xticks:
        col = _dot(value, chart.xlim, dots_w - 1) // 2
        if 0 <= col < cols:
            x_marks.append((col, label))
    axis = ["─"] * cols
    for col, _ in x_marks:
        axis[col] = "┬"
    taken: set[int] = set()
    for value, letter in chart.marks:
        col = _dot(value, chart.xlim, dots_w - 1) // 2
        # Marks at one column (a stop at step 60, the resume from checkpoint-60) stand side by
        # side: the later one in the nearest free column.
        col = next((c for d in (0, 1, -1, 2, -2) if 0 <= (c := col + d) < cols and c not in taken), -1) \
            if 0 <= col < cols else -1
        if col >= 0:
            axis[col] = letter
            taken.add(col)
    out.append(([(" " * label_w, BLANK)] if label_w else []) + [("└" + "".join(axis), AXIS)])
    out.append(_x_labels(x_marks, label_w + 1, width))
    return [_fit(row, width) for row in out[:height]] + [[(" " * width, BLANK)]] * (height - len(out))


def _scale(v: np.ndarray, lim: tuple[float, float], span: int) -> np.ndarray:
    """Data values as dots from the range's low end (0 .. span); halved first, so a range as
    wide as the floats (-1e308 .. 1e308) does not overflow."""
    lo, hi = lim
    half = hi / 2 - lo / 2
    if not (half > 0 and math.isfinite(half)):  # a flat (or unusable) range: the middle
        return np.where(np.isfinite(v), span / 2, np.nan)
    with np.errstate(over="ignore", invalid="ignore"):
        return (v / 2 - lo / 2) * (span / half)


def _dot(value: float, lim: tuple[float, float], span: int) -> int:
    """The dot a tick value falls on (as `_scale`, for one value); far outside: -1."""
    d = float(_scale(np.array([value], dtype=np.float64), lim, span)[0])
    return round(d) if math.isfinite(d) and -span <= d <= 2 * span else -1


def _clip_segments(px: np.ndarray, py: np.ndarray, w: int, h: int) -> tuple[np.ndarray, ...]:
    """Each segment between two neighbouring finite points, cut to the box -1..w, -1..h
    (Liang-Barsky, every segment at once): (x0, y0, x1, y1) of the segments that cross it.
    A segment with a non-finite end is a gap (a NaN the line skips, a stop in time mode)."""
    x0, y0, x1, y1 = px[:-1], py[:-1], px[1:], py[1:]
    ok = np.isfinite(x0) & np.isfinite(y0) & np.isfinite(x1) & np.isfinite(y1)
    x0, y0, x1, y1 = x0[ok], y0[ok], x1[ok], y1[ok]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        dx, dy = x1 - x0, y1 - y0
        t0, t1 = np.zeros(len(x0)), np.ones(len(x0))
        keep = np.isfinite(dx) & np.isfinite(dy)
        for p, q in ((-dx, x0 + 1), (dx, w - x0), (-dy, y0 + 1), (dy, h - y0)):
            par = p == 0
            keep &= ~(par & (q < 0))
            r = q / np.where(par, 1.0, p)
            t0 = np.where(~par & (p < 0), np.maximum(t0, r), t0)
            t1 = np.where(~par & (p > 0), np.minimum(t1, r), t1)
        keep &= t0 <= t1
        t0, t1, x0, y0, dx, dy = t0[keep], t1[keep], x0[keep], y0[keep], dx[keep], dy[keep]
        return x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy


def _line_dots(px: np.ndarray, py: np.ndarray, w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The dots of the polyline through the points, broken where a point is not finite: each
    segment (cut to the canvas first, so a value of 1e300 costs no more than one on it)
    sampled once a dot along its longer side (a DDA, every segment at once)."""
    ax, ay, bx, by = _clip_segments(px, py, w, h)
    dx, dy = bx - ax, by - ay
    steps = np.maximum(np.ceil(np.maximum(np.abs(dx), np.abs(dy))), 1).astype(np.int64)
    seg = np.repeat(np.arange(len(steps)), steps)
    start = np.cumsum(steps) - steps
    frac = (np.arange(int(steps.sum())) - start[seg]) / steps[seg]
    lone = np.isfinite(px) & np.isfinite(py) & (px >= -1) & (px <= w) & (py >= -1) & (py <= h)
    xs = np.concatenate([ax[seg] + dx[seg] * frac, bx, px[lone]])
    ys = np.concatenate([ay[seg] + dy[seg] * frac, by, py[lone]])
    return np.rint(xs).astype(np.int64), np.rint(ys).astype(np.int64)


def _runs(codes: np.ndarray, owner: np.ndarray) -> Row:
    """One canvas row as runs of one slot each."""
    text = codes.tobytes().decode("utf-32-le") if codes.dtype == np.uint32 else "".join(map(chr, codes))
    cuts = np.flatnonzero(np.diff(owner)) + 1
    bounds = [0, *cuts.tolist(), len(text)]
    return [(text[a:b], int(owner[a])) for a, b in itertools.pairwise(bounds)]


def _x_labels(marks: Sequence[tuple[int, str]], left: int, width: int) -> Row:
    """Each label centred under its tick mark, kept inside the row; one that would touch the
    label before it is left out."""
    row: Row = []
    used = 0
    for col, label in marks:
        start = min(max(0, left + col - len(label) // 2), width - len(label))
        if start < 0 or (row and start <= used):
            continue
        if start > used:
            row.append((" " * (start - used), BLANK))
        row.append((label, AXIS))
        used = start + len(label)
    return row


def _fit(row: Row, width: int) -> Row:
    """Exactly `width` cells: cut at the right, or padded with blanks."""
    out: Row = []
    used = 0
    for text, slot in row:
        if used >= width:
            break
        text = text[: width - used]
        if text:
            out.append((text, slot))
            used += len(text)
    if used < width:
        out.append((" " * (width - used), BLANK))
    return out
