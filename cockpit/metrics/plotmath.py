"""What a plot needs from a series: at most a few thousand points with the spikes kept
(MinMaxLTTB), and TensorBoard's smoothing."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def downsample(x: np.ndarray | Sequence[float], y: np.ndarray | Sequence[float],
               n_out: int, *, sorted_x: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """At most `n_out` points of (x, y) for a plot, spikes kept (MinMaxLTTB).

    NaN/inf points are dropped first (a plot cannot draw them; the line just
    skips them), so the result holds finite points only. x need not be sorted;
    sorted_x=True (steps from the store are) skips the check, a pass over x.
    """
    xa = np.asarray(x)
    ya = np.asarray(y, dtype=np.float64)
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length ({xa.shape} vs {ya.shape})")
    if xa.dtype.kind not in "iuf":
        xa = xa.astype(np.float64)
    finite = np.isfinite(ya)
    if xa.dtype.kind == "f":
        finite &= np.isfinite(xa)
    if not finite.all():
        xa, ya = xa[finite], ya[finite]
    n = len(ya)
    if n_out <= 0:
        return xa[:0], ya[:0]
    if n <= n_out:
        return xa, ya
    if n_out < 3:  # MinMaxLTTB needs 3 (and panics below that): keep the ends
        idx = np.array([0, n - 1][:n_out], dtype=np.int64) if n_out == 2 else np.array([n - 1])
        return xa[idx], ya[idx]
    if not sorted_x and len(xa) > 1 and np.any(xa[1:] < xa[:-1]):
        order = np.argsort(xa, kind="stable")
        xa, ya = xa[order], ya[order]
    from tsdownsample import MinMaxLTTBDownsampler

    xc = np.ascontiguousarray(xa, dtype=np.float64 if xa.dtype.kind == "f" else np.int64)
    yc = np.ascontiguousarray(ya)
    idx = MinMaxLTTBDownsampler().downsample(xc, yc, n_out=n_out)
    return xa[idx], ya[idx]


def ema(values: np.ndarray | Sequence[float], weight: float) -> np.ndarray:
    """TensorBoard's smoothing: debiased exponential moving average.

    last = last*w + (1-w)*v, shown as last / (1 - w^k) for the k-th finite
    value (so the first points are not dragged towards 0). Non-finite values
    are passed through as they are and do not enter the average; a constant
    series comes back exactly (TensorBoard does the same). `weight` is clipped
    to [0, 0.999999]; 0 means no smoothing.
    """
    v = np.array(values, dtype=np.float64)  # a copy: the result
    w = float(weight) if math.isfinite(float(weight)) else 0.0
    w = min(max(w, 0.0), 0.999999)
    finite = np.isfinite(v)
    f = v[finite]
    if w == 0.0 or len(f) == 0 or np.all(f == f[0]):
        return v
    n = len(f)
    out = np.empty(n, dtype=np.float64)
    # Blocks short enough that w**-len stays finite (<= e**100): inside one block the
    # recurrence is a scaled cumulative sum, so no Python loop per point.
    block = int(max(1, min(4096, 100.0 / -math.log(w))))
    pw_full = w ** np.arange(block, dtype=np.float64)
    inv_full = 1.0 / pw_full
    last = 0.0
    for start in range(0, n, block):
        chunk = f[start:start + block]
        m = len(chunk)
        pw = pw_full[:m]
        acc = np.cumsum(chunk * inv_full[:m])
        seg = w * pw * last + (1.0 - w) * pw * acc
        if not np.all(np.isfinite(seg)):  # huge values overflowed the scaling: do it plainly
            seg = np.empty(m, dtype=np.float64)
            cur = last
            for j, x in enumerate(chunk.tolist()):
                cur = cur * w + (1.0 - w) * x
                seg[j] = cur
        out[start:start + m] = seg
        last = float(seg[-1])
    debias = 1.0 - w ** np.arange(1, n + 1, dtype=np.float64)
    v[finite] = out / debias
    return v
