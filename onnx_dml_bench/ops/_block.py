"""Windows that are one block of the input: one window per spatial axis, every element of it inside
the input (a global pool, or any geometry of a single window without padding). Their sums need no
walk window by window, element by element over tiles: one reduction over the window's elements,
every channel at once.

``means`` gives what ``_pooling.window_mean`` gives, bit for bit: each channel's elements added one
after the other in scan order (row-major over the window) in the accumulator type, divided by the
divisor, rounded once to the data's type.

- ``scan_sums`` adds them in that order: a block of channels at a time laid out with the window's
  elements as rows (a copy in the accumulator type, within ``TILE_BYTES``), and np.add.reduce over
  the rows adds row after row, each addition over every channel of the block;
- float64 sums of narrower data need not be in that order where the rounding to the data's type
  cannot tell: any order of k additions is within k u S of the exact sum (u = 2^-53, S the sum of
  the magnitudes; Rump, BIT 2012), so two orders are within 2 k u S of each other. Each channel is
  summed in whatever order NumPy's reduction takes, with S; where both ends of the interval
  (sum -+ e) / divisor, e = (2 k + 2) u S (1 + 4 k u) (the two orders' gamma_k S each, the
  rounding of the computed S and of sum -+ e), round to the same value of the data's type, the scan-order answer,
  which lies inside it (division and rounding are monotone), is that value. The other channels (a
  rounding boundary inside the interval, a zero sum whose sign is the scan's, a non-finite term)
  are summed in scan order.
"""
from __future__ import annotations

import math

import numpy as np

#: the most bytes of one block's copy
TILE_BYTES = 1 << 21
#: channels of one block at most (more channels than this: several blocks)
_LANES = 256
#: fewer channels than this: the reduction would run along the rows (not in scan order)
MIN_LANES = 2
#: fewer rows than this, each longer than _LONG, are summed one by one (``_scan``)
_FEW = 16
_LONG = 1024
#: fewer rows than this are summed one by one whatever their length (a block's few channels left
#: to the scan: a row's own accumulate costs less than the block walk's fixed cost)
_ONE_BY_ONE = 8


def is_block(wins) -> bool:
    """One window on every spatial axis, all its elements inside the input."""
    return all(w.out == 1 and w.begin <= 0 and -w.begin + (w.k - 1) * w.d < w.n for w in wins)


def elements(flat: np.ndarray, wins) -> np.ndarray:
    """(channels, window elements in scan order) of ``flat`` (channels, *spatial): a view where the
    window is contiguous, else a copy in flat's type."""
    sel = tuple(slice(-w.begin, -w.begin + (w.k - 1) * w.d + 1, w.d) for w in wins)
    return flat[(slice(None), *sel)].reshape(flat.shape[0], math.prod(w.k for w in wins))


def scan_sums(g: np.ndarray, acc) -> np.ndarray:
    """Per row of ``g`` (channels, elements, at least MIN_LANES channels): its elements added one
    after the other in ``acc``, each addition rounded to it; the same value, bit for bit, as a loop
    ``total = g[:, 0]; total += g[:, j]`` for j = 1, 2, ...."""
    lanes, k = g.shape
    out = np.empty(lanes, acc)
    width = min(lanes, _LANES)
    rows = max(2, min(k, TILE_BYTES // (np.dtype(acc).itemsize * width)))
    buf = np.empty((rows + 1, width), acc)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, lanes, width):
            b = min(a + width, lanes)
            if b - a < MIN_LANES:         # a last block of one channel: with the one before it
                a = b - MIN_LANES
            total = out[a:b]
            for lo in range(0, k, rows):
                hi = min(lo + rows, k)
                # row 0: the sum so far (none yet: the first element); reduced row after row
                first = 0 if lo else 1
                part = buf[first:1 + hi - lo, :b - a]
                if lo:
                    part[0] = total
                buf[1:1 + hi - lo, :b - a] = g[a:b, lo:hi].T
                np.add.reduce(part, axis=0, out=total)
    # np.add.reduce starts from +0.0: a sum of -0.0 terms alone is -0.0 in scan order
    zero = np.flatnonzero(out == 0)
    if zero.size:
        neg = np.signbit(g[zero]).all(axis=1) & (g[zero] == 0).all(axis=1)
        out[zero[neg]] = -0.0
    return out


def means(g: np.ndarray, div, acc, dtype) -> np.ndarray:
    """Per row of ``g`` (channels, elements in scan order): the elements summed in scan order in
    ``acc``, divided by ``div`` (of type ``acc``) and rounded once to ``dtype``, as
    ``_pooling.window_mean`` does."""
    dtype = np.dtype(dtype)
    y = np.empty(g.shape[0], dtype)
    if np.dtype(acc) != np.float64 or dtype.itemsize >= 8 or g.dtype.itemsize >= 8:
        with np.errstate(invalid="ignore", over="ignore"):
            y[...] = _scan(g, acc) / div
        return y
    lanes, k = g.shape
    per = max(1, 3 * TILE_BYTES // (12 * k))     # the copy of |x| (float32 at most) within TILE_BYTES
    u = 2.0 ** -53
    slack = (2 * k + 2) * u * (1 + 4 * k * u)      # two orders, the rounding of S and of s -+ e
    bits = f"u{dtype.itemsize}"
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(0, lanes, per):
            part = g[a:a + per]
            # each term made float64 as it is read (exactly: float64 holds every narrower value), the
            # sum in float64; no float64 copy of the block
            s = np.einsum("ij->i", part, dtype=np.float64)
            if part.dtype == np.float32 and k <= 1 << 20:
                # S summed in float32, any order: within gamma_k (float32) of S, k u32 <= 1/16
                e = np.einsum("ij->i", np.abs(part)).astype(np.float64) * (slack * (1 + 4 * k * 2.0 ** -24))
            else:
                e = np.einsum("ij->i", np.abs(part), dtype=np.float64) * slack
            lo, hi = ((s - e) / div).astype(dtype), ((s + e) / div).astype(dtype)
            y[a:a + per] = (s / div).astype(dtype)
            rest = np.flatnonzero((lo.view(bits) != hi.view(bits)) | (s == 0) | ~np.isfinite(e))
            if rest.size:
                y[a + rest] = _scan(g[a + rest], acc) / div
    return y


def _scan(g: np.ndarray, acc) -> np.ndarray:
    """scan_sums of any number of rows; a few long rows, or fewer than ``_ONE_BY_ONE`` rows:
    np.add.accumulate along each (one addition after the other from its first element, a step
    over all of a row's elements at once)."""
    if g.shape[0] >= _FEW or (g.shape[1] <= _LONG and g.shape[0] >= _ONE_BY_ONE):
        return scan_sums(g, acc)
    out = np.empty(g.shape[0], acc)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, row in enumerate(g):
            out[i] = np.add.accumulate(row.astype(acc))[-1]
    return out
