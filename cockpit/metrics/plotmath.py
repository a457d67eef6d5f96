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


def quantiles(values: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """`np.quantile(values, qs)` (its default, linear method: the same floats) for finite
    values. np.quantile's first call imports numpy.ma (np.unique asks `np.ma.is_masked`):
    ~10-20 ms on the UI thread at a replay's first drawn frame, for a few hundred points."""
    a = np.sort(np.asarray(values, dtype=np.float64))
    at = (len(a) - 1) * np.asarray(qs, dtype=np.float64)
    below = np.floor(at).astype(np.intp)
    above = np.minimum(below + 1, len(a) - 1)
    t = at - below
    lo, hi = a[below], a[above]
    diff = hi - lo
    out = lo + diff * t
    np.subtract(hi, diff * (1 - t), out=out, where=t >= 0.5)  # numpy's _lerp, for the same floats
    return out


def ema(values: np.ndarray | Sequence[float], weight: float,
        clip: tuple[float, float] | None = None) -> np.ndarray:
    """TensorBoard's smoothing: debiased exponential moving average.

    last = last*w + (1-w)*v, shown as last / (1 - w^k) for the k-th finite
    value (so the first points are not dragged towards 0). Non-finite values
    are passed through as they are and do not enter the average; a constant
    series comes back exactly (TensorBoard does the same). `weight` is clipped
    to [0, 0.999999]; 0 means no smoothing.

    `clip` (low, high): values outside enter the average as that bound (a winsorized EMA).
    A panel passes the band of its y range when it cut outliers from it (`smoothing_clip`):
    one spike of 197 in a KL of ~0.4 then lifts the line by a step, not for a hundred.
    """
    v = np.array(values, dtype=np.float64)  # a copy: the result
    w = _weight(weight)
    finite = np.isfinite(v)
    f = v[finite]
    if w == 0.0 or len(f) == 0 or np.all(f == f[0]):
        return v
    if clip is not None:
        f = np.clip(f, clip[0], clip[1])
    # Near the float's end the running sum over its debias overflows: the values are scaled by a
    # power of two (exact) while averaged, and an average never leaves the values it averages.
    scale = 2.0 ** 1000 if float(np.max(np.abs(f))) > 1e300 else 1.0
    f = f / scale
    with np.errstate(over="ignore", invalid="ignore"):
        out = _ema_run(f, w, 0.0) / _debias(w, 0, len(f))
    v[finite] = np.clip(out, f.min(), f.max()) * scale
    return v


def smoothing_clip(lo: float, hi: float, cut_lo: bool, cut_hi: bool) -> tuple[float, float] | None:
    """The band a smoothed line's values are held to (`ema`'s clip): the y range's side that cut
    outliers, widened to a round grid (a tenth of the range's order of magnitude) so that a live
    run's range moving a little keeps the same band, and the summary kept for it."""
    if not (cut_lo or cut_hi) or not (math.isfinite(hi - lo) and hi - lo > 1e-290):
        return None
    q = 10.0 ** math.floor(math.log10(hi - lo)) / 2
    band_lo = math.floor(lo / q) * q if cut_lo else -math.inf
    band_hi = math.ceil(hi / q) * q if cut_hi else math.inf
    return band_lo, band_hi


def _weight(weight: float) -> float:
    w = float(weight) if math.isfinite(float(weight)) else 0.0
    return min(max(w, 0.0), 0.999999)


def _ema_block(w: float) -> int:
    """Finite values per block of `_ema_run`: short enough that w**-len stays finite (<= e**100)."""
    return int(max(1, min(4096, 100.0 / -math.log(w))))


def _debias(w: float, done: int, n: int) -> np.ndarray:
    """1 - w^k for the finite values done+1 .. done+n.

    Once w^k < 2^-60, 1 - w^k is 1.0 exactly in float64: only the k before that are raised to
    a power (w = 0.6: the first 83), the rest are ones — the same floats, without a power of
    each of 100,000 points at a replay's first smoothed draw (~8 ms a series)."""
    out = np.ones(n, dtype=np.float64)
    if w <= 0.0:
        return out  # 0^k = 0 for every k >= 1
    last = math.ceil(60 * math.log(2) / -math.log(w)) + 1  # w^k < 2^-60 for every k > last
    m = max(0, min(n, last - done))
    if m:
        out[:m] = 1.0 - w ** np.arange(done + 1, done + m + 1, dtype=np.float64)
    return out


def _ema_run(f: np.ndarray, w: float, last: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is noticed, and redone plainly
        return _ema_run_scaled(f, w, last)


def _ema_run_scaled(f: np.ndarray, w: float, last: float) -> np.ndarray:
    """The EMA's running value (not debiased) over finite values `f`, from `last`.

    Inside one block the recurrence is a scaled cumulative sum, so no Python loop per
    point. Blocks start at f[0]: continuing from the value at the end of a block (a count
    of finite values that is a multiple of `_ema_block(w)`) gives the same floats as one
    run over everything — what lets `PlotSummary` smooth only the new points.

    The whole blocks go through numpy at once (one cumulative sum along the rows, and only
    each block's carry in Python: 513 blocks for 100,000 points at w = 0.6, ~5 ms one by
    one); the floats are `_ema_blocks`' (the same operations in the same order). Huge values
    that overflow the scaling take `_ema_blocks`, which does those blocks plainly."""
    n = len(f)
    block = _ema_block(w)
    whole = n // block * block
    if whole < 2 * block:
        return _ema_blocks(f, w, last)
    pw = w ** np.arange(block, dtype=np.float64)
    a, b = w * pw, (1.0 - w) * pw  # a block's value j: a[j]·(carry in) + b[j]·(scaled sum to j)
    acc = np.cumsum(f[:whole].reshape(-1, block) * (1.0 / pw), axis=1)
    ends = (b[-1] * acc[:, -1]).tolist()
    a_end = float(a[-1])
    carries = np.empty(len(ends), dtype=np.float64)
    cur = last
    for i, end in enumerate(ends):
        carries[i] = cur
        cur = a_end * cur + end
    seg = a * carries[:, None] + b * acc
    if not np.all(np.isfinite(seg)):
        return _ema_blocks(f, w, last)
    if whole == n:
        return seg.ravel()
    out = np.empty(n, dtype=np.float64)
    out[:whole] = seg.ravel()
    out[whole:] = _ema_blocks(f[whole:], w, cur)
    return out


def _ema_blocks(f: np.ndarray, w: float, last: float) -> np.ndarray:
    """`_ema_run` one block at a time (a short series, or one whose values overflow the
    scaling: such a block is done plainly, point by point)."""
    n = len(f)
    out = np.empty(n, dtype=np.float64)
    block = _ema_block(w)
    pw_full = w ** np.arange(block, dtype=np.float64)
    inv_full = 1.0 / pw_full
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
    return out


def lttb(x: np.ndarray, y: np.ndarray, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """At most `n_out` of already preselected points (x sorted, y finite), by LTTB alone: the
    second half of MinMaxLTTB, for `PlotSummary.candidates`. Points whose x is not finite
    (a row without a wall time) are dropped, as `downsample` drops them."""
    if x.dtype.kind == "f":
        ok = np.isfinite(x)
        if not ok.all():
            x, y = x[ok], y[ok]
    if len(x) <= n_out:
        return x, y
    if n_out < 3:
        return downsample(x, y, n_out, sorted_x=True)
    from tsdownsample import LTTBDownsampler

    xc = np.ascontiguousarray(x, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    idx = LTTBDownsampler().downsample(xc, np.ascontiguousarray(y, dtype=np.float64), n_out=n_out)
    return x[idx], y[idx]


class PlotSummary:
    """A growing series, summarized for plotting as it grows: the picture `downsample` gives of
    the whole series (after `ema` when smoothing), at a cost that does not grow with it.

    The points are cut into blocks of `block` points; each block keeps its lowest and its
    highest finite point (index and value). A plot of n_out points asks `candidates`: the
    blocks are joined into about 2·n_out bins, and each bin's lowest and highest point, the
    points after the last whole block, and the first and last finite points are what LTTB
    then chooses from — MinMaxLTTB's own two steps (min/max preselection of 4·n_out points,
    then LTTB), with bins made of whole blocks, so spikes are kept the same way. Only points
    that arrived since the last call are read; the last point, which a record at the same step
    may still replace, is never in a block. Past `MAX_BLOCKS` blocks, neighbours are merged
    and blocks double in size, so the summary stays under 64 KB.

    With smoothing, the EMA runs on the new points only, from its value at the end of the
    last of its own blocks (`_ema_run`): the smoothed values are the floats `ema` gives for
    the whole series. A series whose finite values are all equal is drawn unsmoothed, as
    `ema` returns it; when a different value arrives the summary starts over, once.

    The caller owns the series and must start a new summary when points other than the last
    change (the store's row groups count such changes in `generation`).
    """

    MIN_POINTS = 1 << 12
    """Shorter series are downsampled whole (a tenth of a millisecond)."""
    BLOCK = 16
    MAX_BLOCKS = 2048
    """Enough for 2 bins a point up to n_out = 1024 (a panel 512 columns wide)."""

    def __init__(self, weight: float = 0.0, clip: tuple[float, float] | None = None) -> None:
        self.weight = _weight(weight)
        self.clip = clip
        """`ema`'s clip of the values before they are smoothed."""
        self._start()

    def _start(self) -> None:
        self.block = self.BLOCK
        self.done = 0
        """Points [0, done) are in blocks."""
        self.count = 0
        # Each block's lowest (row 0) and highest (row 1) point: index and value. One
        # allocation for the summary's life (32 KB a row pair): no churn in the heap.
        self._idx = np.empty((2, self.MAX_BLOCKS + 1), dtype=np.int64)
        self._val = np.empty((2, self.MAX_BLOCKS + 1), dtype=np.float64)
        self.first: tuple[int, float] = (-1, math.nan)
        self.last: tuple[int, float] = (-1, math.nan)
        # The EMA's running value after `ema_k` finite values, the last of which is just
        # before `ema_pos`; ema_k is a multiple of the EMA's block.
        self.ema_pos = 0
        self.ema_k = 0
        self.ema_last = 0.0
        self.flat = True
        self.flat_value: float | None = None
        self.flat_checked = 0

    @classmethod
    def worth_it(cls, n: int, n_out: int) -> bool:
        """Whether a series of n points drawn as n_out is better served by a summary."""
        return n >= max(cls.MIN_POINTS, 2 * n_out * cls.BLOCK) and n_out >= 3

    def candidates(self, y: np.ndarray, n_out: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Sorted indices into `y` (the whole series, the one seen before plus what came since)
        and the (smoothed) values there of the points a plot of `n_out` may keep; None when
        there are too few blocks for that many points (then downsample the series whole)."""
        base, values = self._advance(y)
        nb = self.count
        if nb < n_out:
            return None
        k = max(1, nb // (2 * n_out))
        idx_parts, val_parts = [], []
        for ids, vals, pick in ((self._idx[0, :nb], self._val[0, :nb], np.argmin),
                                (self._idx[1, :nb], self._val[1, :nb], np.argmax)):
            m = nb // k * k
            v = vals[:m].reshape(-1, k)
            j = pick(v, axis=1)
            rows = np.arange(len(j))
            idx_parts.append(ids[:m].reshape(-1, k)[rows, j])
            val_parts.append(v[rows, j])
            if m < nb:
                jr = m + int(pick(vals[m:]))
                idx_parts.append(ids[jr:jr + 1])
                val_parts.append(vals[jr:jr + 1])
        tail = values[self.done - base:]
        fin = np.isfinite(tail)
        ends = [p for p in (self.first, self.last) if p[0] >= 0]
        if fin.any():
            where = np.flatnonzero(fin)
            lo = int(np.argmin(np.where(fin, tail, np.inf)))
            hi = int(np.argmax(np.where(fin, tail, -np.inf)))
            for j in {lo, hi, int(where[0]), int(where[-1])}:
                ends.append((self.done + j, float(tail[j])))
        idx = np.concatenate([*idx_parts, np.array([p[0] for p in ends], dtype=np.int64)])
        vals = np.concatenate([*val_parts, np.array([p[1] for p in ends], dtype=np.float64)])
        finite = np.isfinite(vals)  # a bin of blocks with no finite point holds ±inf
        idx, at = np.unique(idx[finite], return_index=True)
        return idx, vals[finite][at]

    def _advance(self, y: np.ndarray) -> tuple[int, np.ndarray]:
        """Put the whole blocks that arrived into the summary; returns where `values` starts
        and the (smoothed) values from there to the end."""
        n = len(y)
        w = self.weight
        if w > 0 and self.flat:
            new = y[self.flat_checked:n]
            f = new[np.isfinite(new)]
            if len(f):
                if self.flat_value is None:
                    self.flat_value = float(f[0])
                if not np.all(f == self.flat_value):
                    self._start()
                    self.flat = False
            if self.flat:
                self.flat_checked = max(n - 1, 0)  # the last point may still be replaced
        smooth = w > 0 and not self.flat
        if smooth:
            base = self.ema_pos
            raw = y[base:n]
            fin = np.isfinite(raw)
            f = raw[fin] if self.clip is None else np.clip(raw[fin], self.clip[0], self.clip[1])
            acc = _ema_run(f, w, self.ema_last)
            values = raw.copy()
            values[fin] = acc / _debias(w, self.ema_k, len(acc))
        else:
            base = self.done
            values = y[base:n]
        while True:  # whole blocks, as many as there is room for, merging neighbours to make room
            size = self.block
            full = min((n - 1 - self.done) // size, self.MAX_BLOCKS + 1 - self.count)
            if full <= 0:  # the last point is never in a block
                break
            self._blocks(values[self.done - base:self.done - base + full * size].reshape(full, size))
            if self.count > self.MAX_BLOCKS:
                self._coarsen()
        if smooth:  # keep the EMA's value at the end of its last block that is in blocks here
            every = _ema_block(w)
            upto = self.ema_k + int(np.count_nonzero(fin[:self.done - base]))
            c = upto // every * every
            if c > self.ema_k:
                j = c - self.ema_k - 1
                self.ema_last = float(acc[j])
                self.ema_pos = base + int(np.flatnonzero(fin)[j]) + 1
                self.ema_k = c
        return base, values

    def _blocks(self, seg: np.ndarray) -> None:
        """Add blocks (rows of `seg`) starting at `done`."""
        full, size = seg.shape
        fin = np.isfinite(seg)
        lo = np.where(fin, seg, np.inf)
        hi = np.where(fin, seg, -np.inf)
        rows = np.arange(full)
        jl, jh = lo.argmin(axis=1), hi.argmax(axis=1)
        starts = self.done + rows * size
        c, end = self.count, self.count + full
        self._idx[0, c:end], self._val[0, c:end] = starts + jl, lo[rows, jl]
        self._idx[1, c:end], self._val[1, c:end] = starts + jh, hi[rows, jh]
        self.count = end
        any_fin = fin.any(axis=1)
        if any_fin.any():
            if self.first[0] < 0:
                b = int(np.argmax(any_fin))
                j = int(np.argmax(fin[b]))
                self.first = (int(starts[b]) + j, float(seg[b, j]))
            b = full - 1 - int(np.argmax(any_fin[::-1]))
            j = size - 1 - int(np.argmax(fin[b, ::-1]))
            self.last = (int(starts[b]) + j, float(seg[b, j]))
        self.done += full * size

    def _coarsen(self) -> None:
        """Merge neighbouring blocks (an odd last one stays as it is); blocks double in size."""
        nb = self.count
        m = nb // 2 * 2
        half = m // 2
        for row, better in ((0, np.less), (1, np.greater)):
            ids, vals = self._idx[row], self._val[row]
            a, b = vals[0:m:2], vals[1:m:2]
            take_b = better(b, a)
            merged_v = np.where(take_b, b, a)
            merged_i = np.where(take_b, ids[1:m:2], ids[0:m:2])
            vals[:half], ids[:half] = merged_v, merged_i
            if m < nb:
                vals[half], ids[half] = vals[m], ids[m]
        self.count = half + (nb - m)
        self.block *= 2
