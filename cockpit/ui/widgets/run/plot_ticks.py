"""Axis ticks of a metric panel: round values, and one label format per axis."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence


def nice_ticks(lo: float, hi: float, max_ticks: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values inside [lo, hi] (steps of 1, 2, 2.5 or 5 x 10^k), at most `max_ticks`;
    whole numbers only when `integer` (steps are counted, 10.8 is not a step). A flat range is
    one tick at its value."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    if hi == lo:
        return [lo]
    max_ticks = max(2, max_ticks)
    mults = (1, 2, 2.5, 5)
    raw = (hi - lo) / (max_ticks - 1)
    if not (1e-290 < raw < 1e290) or raw < abs(hi) * 1e-12 or raw < abs(lo) * 1e-12:
        # A range as wide as the floats, or too narrow for its values to tell ticks apart: its ends.
        return [lo, hi]
    exp = math.floor(math.log10(raw))
    steps = sorted({m * 10.0 ** e for e in (exp - 1, exp, exp + 1, exp + 2) for m in mults})
    if integer:
        steps = [s for s in steps if s >= 1 and s == int(s)] or [1.0]

    def ticks_for(step: float) -> list[float]:
        first = math.ceil(lo / step - 1e-9)
        last = math.floor(hi / step + 1e-9)
        return [k * step for k in range(first, last + 1)]

    # The finest step that gives no more than max_ticks ticks (and at least two when any does;
    # else one, the finest step's lone tick inside the range; else the range's ends).
    choice: tuple[float, list[float]] | None = None
    for candidate in steps:
        found = ticks_for(candidate)
        if 2 <= len(found) <= max_ticks:
            choice = candidate, found
            break
        if choice is None and len(found) == 1:
            choice = candidate, found
    if choice is None:
        return [lo, hi]
    step, ticks = choice
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return [(float(round(t)) if integer else round(t, digits)) + 0.0 for t in ticks] or [lo]


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """One format for the whole axis, with just the digits that tell the ticks apart:
    `0 · 50 · 100`, `0.0 · 0.5 · 1.0`, `6.6302 · 6.6304`; learning rates and other tiny or
    huge values in one e-notation (`0 · 5.0e-6 · 1.0e-5 · 1.5e-5`), never a mix."""
    if not ticks:
        return []
    vals = [float(t) for t in ticks]
    if len(vals) == 1:  # a lone tick (a flat series): `0.693`, not `6.93147e-1`
        return [short_value(vals[0])]
    big = max(abs(v) for v in vals)
    if len(vals) > 1:
        step = min(abs(b - a) for a, b in itertools.pairwise(vals) if b != a) if len(set(vals)) > 1 \
            else max(big, 1.0)
        tol = step * 1e-6
    else:
        tol = abs(vals[0]) * 5e-7 if vals[0] else 1e-12
    if big == 0:
        return ["0" for _ in vals]
    if 1e5 <= big < 1e12:  # steps and token counts: 250k, 1.5M
        unit, suffix = next((u, x) for u, x in ((1e9, "G"), (1e6, "M"), (1e3, "k")) if big >= u)
        scaled = _fixed([v / unit for v in vals], tol / unit)
        if scaled is not None:
            return ["0" if v == 0 else f + suffix for v, f in zip(vals, scaled, strict=False)]
    fixed = _fixed(vals, tol)
    if fixed is not None and big >= 1e-3 and max(len(f) for f in fixed) <= 7:
        return fixed
    for m in range(0, 7):
        if all(abs(float(f"{v:.{m}e}") - v) <= tol for v in vals):
            break
    return ["0" if v == 0 else _short_exp(f"{v:.{m}e}") for v in vals]


def _fixed(vals: Sequence[float], tol: float) -> list[str] | None:
    """The values with the fewest decimals that still read as themselves, all alike."""
    for d in range(0, 9):
        if all(abs(float(f"{v:.{d}f}") - v) <= tol for v in vals):
            return [f"{v:.{d}f}" for v in vals]
    return None


def _short_exp(text: str) -> str:
    """1.5e-05 -> 1.5e-5, 2.0e+06 -> 2.0e6: the plot's width is better spent on data."""
    mantissa, exp = text.split("e")
    return f"{mantissa}e{int(exp)}"


def short_value(v: float) -> str:
    """A value in a panel's title: 3 significant digits in plain notation (`0.318`, `1.25`,
    `1234`, `25.3k`), e-notation only for the tiny (`2.5e-5`, a learning rate)."""
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    big = abs(v)
    if 1e4 <= big < 1e12:
        unit, suffix = next((u, x) for u, x in ((1e9, "G"), (1e6, "M"), (1e3, "k")) if big >= u)
        return f"{v / unit:.3g}{suffix}"
    if 1e-3 <= big < 1e4:
        digits = max(0, 2 - math.floor(math.log10(big)))
        text = f"{round(v, digits):.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return _short_exp(f"{v:.2e}".replace("0e", "e").replace(".0e", "e"))
