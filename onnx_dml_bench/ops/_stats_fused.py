"""AveragePool's window statistics (``_sums._stats``: sum |x|, the sums of the positive terms and of
the negative ones' magnitudes, the largest and the smallest term) as one compiled loop (numba) over
finite data, for windows that ``_sums._reduce`` walks element by element along every axis (no
axis with fewer windows than window elements, no window that is one block of the input).

``_sums._stats`` reduces each statistic axis by axis: along the first spatial axis every window's
elements combined one after another (op(e0, e1), then op(that, e2), ...; an element on the padding
is the fill: 0.0 for a sum, -inf / +inf for the largest / smallest), then those results along the
next axis the same way, and so on. ``stats_loop`` makes the same operations in the same order, for
each output position at once, so the same bits, with no float64 array of the input's size per
statistic and per axis. A term is as there: float64 of the element, its magnitude, max(z, 0.0)
and max(-z, 0.0) as ``np.maximum`` gives them (its second operand where they compare equal, so
+0.0 for -0.0), the largest and smallest kept the same way (``np.maximum`` / ``np.minimum``); the
largest and smallest in float32 (float64 for float64 data).
``tests/ops/test_window_stats.py`` checks it against the NumPy code, bit for bit.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit

#: a slice of at least so many input elements takes the compiled loop
FUSED_FROM = 1 << 16

_KERNEL = None


def fold(j, acc, new):
    # window element j (its five statistics, ``new``) into the window's so far, ``acc``: the
    # first as it is, then op(acc, new) as the NumPy code's op(res, element) gives it
    if j == 0:
        return new
    s, p, n, t, m = acc
    s1, p1, n1, t1, m1 = new
    return s + s1, p + p1, n + n1, (t if t > t1 else t1), (m if m < m1 else m1)


_FOLD = fold


def stats_loop(x, geo, signs, s_out, p_out, n_out, top_out, bottom_out):
    # geo: per axis (depth, height, width) its n, k, s, d, begin, out; x: (rows, D, H, W). Per
    # row of windows (r, a, b): each input column w folded over the depth and height windows
    # (what the NumPy code holds after its first two axes), then each window along the width
    rows = x.shape[0]
    nd, kd, sd, dd, bd, od = geo[0]
    nh, kh, sh, dh, bh, oh = geo[1]
    nw, kw, sw, dw, bw, ow = geo[2]
    pad = (0.0, 0.0, 0.0, -np.inf, np.inf)          # an element on the padding: the fills
    cs, cp, cn = np.empty(nw), np.empty(nw), np.empty(nw)
    ct, cm = np.empty(nw), np.empty(nw)
    for r in range(rows):
        for a in range(od):
            for b in range(oh):
                for w in range(nw):
                    col = pad
                    for jh in range(kh):
                        h = b * sh - bh + jh * dh
                        cell = pad
                        if 0 <= h < nh:
                            for jd in range(kd):
                                d = a * sd - bd + jd * dd
                                term = pad
                                if 0 <= d < nd:
                                    e = np.float64(x[r, d, h, w])
                                    mz = -e
                                    term = (abs(e), e if e > 0.0 else 0.0, mz if mz > 0.0 else 0.0, e, e)
                                cell = fold(jd, cell, term)
                        col = fold(jh, col, cell)
                    cs[w], cp[w], cn[w], ct[w], cm[w] = col
                for c in range(ow):
                    acc = pad
                    for jw in range(kw):
                        w = c * sw - bw + jw * dw
                        acc = fold(jw, acc, (cs[w], cp[w], cn[w], ct[w], cm[w]) if 0 <= w < nw else pad)
                    s_out[r, a, b, c] = acc[0]
                    if signs:
                        p_out[r, a, b, c] = acc[1]
                        n_out[r, a, b, c] = acc[2]
                    top_out[r, a, b, c] = acc[3]
                    bottom_out[r, a, b, c] = acc[4]


def _compile():
    """The loop, compiled on first use (kept on disk by numba beside this file: the loops are
    module-level functions, ``fold`` bound to its compiled form before ``stats`` compiles, so the
    cache serves later processes); None where numba does not import."""
    global _KERNEL, fold
    if _KERNEL is not None:
        return _KERNEL or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:
        _KERNEL = False
        return None

    try:                                     # compiled (or loaded from numba's cache) here, once
        fold = njit(_FOLD)
        stats = njit(stats_loop)
        out = np.empty((1, 1, 1, 1))
        stats(np.zeros((1, 1, 1, 1), np.float32), geometry([]), True, out, out, out,
              *(np.empty((1, 1, 1, 1), np.float32) for _ in range(2)))
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _KERNEL = False
        return None
    _KERNEL = stats
    return stats


def usable(ax: list, size: int):
    """The compiled loop for a slice of ``size`` elements over the windows ``ax`` (at most three
    spatial axes, each walked element by element by ``_sums._reduce``), or None."""
    if size < FUSED_FROM or len(ax) > 3 or any(q.out < q.k for q in ax):
        return None
    return _compile()


def geometry(ax: list) -> np.ndarray:
    """(3, 6) int64: per axis (depth, height, width; a missing one of size 1, window 1) n, k, s, d,
    begin, out."""
    rows = [(1, 1, 1, 1, 0, 1)] * (3 - len(ax)) + [(q.n, q.k, q.s, q.d, q.begin, q.out) for q in ax]
    return np.array(rows, dtype=np.int64)
