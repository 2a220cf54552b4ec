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

Windows that are one block of the input (a global average: ``_block``) take ``block_loop``, over
float32 and float64 rows (float16 data made float32 first, exactly), a window per row, in one pass
over its elements and one pairwise pass per sum:

- S, P and N as the NumPy code's ``np.add.reduce`` of a row of float64 terms gives them: +0.0 plus
  NumPy's pairwise sum (:func:`pairwise4`: blocks of at most 128 terms, each over eight
  accumulators; longer runs halved at a multiple of eight), a non-finite element's term 0.0; the
  +inf, -inf and NaN counts; the largest and smallest finite element (where both are zeros of
  either sign, either one: NumPy's vectorised maximum does not fix which, and every reader of them
  compares them or adds them to sums, where the sign of a zero does not show);
- for the walked windows (``_sums``: float32 and float16 data, at least ``WIDE_SIM_FROM``
  elements) the row-major walk's sum of squares (``_sum_evaluations.row_major_squares``: the
  float64 running sum, its squares added one after another) and the scan's distance
  (``_sum_evaluations.scan_error``: the float32 sum one after another from the float64 pairwise sum
  of the float32 terms).
"""
from __future__ import annotations

import numpy as np

from ..jit import njit

#: a slice of at least so many input elements takes the compiled loop
FUSED_FROM = 1 << 16

_KERNEL = None
_BLOCK = None
_LARGEST = None


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


# ---- windows that are one block of the input ------------------------------------------------------

#: NumPy's block of its pairwise sum (PW_BLOCKSIZE): longer runs are halved
_PW_BLOCK = 128


def _leaf4(a, lo, n, acc, out):
    # NumPy's pairwise sum of a run of at most 128 finite terms (fewer than 8 one after another from
    # -0.0; else eight accumulators over the whole groups of eight, combined as a tree, then the
    # rest), for four sums at once (out: S, P, N and the signed sum; ``acc``: 4 x 8, one row per
    # sum; ``np.maximum`` gives its second operand, +0.0, for max(-0.0, 0.0))
    if n < 8:
        s = p = q = z = -0.0
        for i in range(n):
            e = np.float64(a[lo + i])
            me = -e
            s += abs(e)
            p += e if e > 0.0 else 0.0
            q += me if me > 0.0 else 0.0
            z += e
        out[0], out[1], out[2], out[3] = s, p, q, z
        return
    for t in range(8):
        e = np.float64(a[lo + t])
        me = -e
        acc[0, t], acc[1, t] = abs(e), (e if e > 0.0 else 0.0)
        acc[2, t], acc[3, t] = (me if me > 0.0 else 0.0), e
    i = 8
    whole = n - n % 8
    while i < whole:
        for t in range(8):
            e = np.float64(a[lo + i + t])
            me = -e
            acc[0, t] += abs(e)
            acc[1, t] += e if e > 0.0 else 0.0
            acc[2, t] += me if me > 0.0 else 0.0
            acc[3, t] += e
        i += 8
    for u in range(4):
        out[u] = ((acc[u, 0] + acc[u, 1]) + (acc[u, 2] + acc[u, 3])) + ((acc[u, 4] + acc[u, 5]) + (acc[u, 6] + acc[u, 7]))
    while i < n:
        e = np.float64(a[lo + i])
        me = -e
        out[0] += abs(e)
        out[1] += e if e > 0.0 else 0.0
        out[2] += me if me > 0.0 else 0.0
        out[3] += e
        i += 1


def pairwise4(a, n, acc, out, f_lo, f_n, f_left, f_state):
    # NumPy's pairwise sum (its loops' ``pairwise_sum``) of the four sums of :func:`_leaf4` over a
    # row of n finite terms, into ``out``: a run of more than 128 terms is the sum of its halves,
    # split at a multiple of 8 (the first half n // 2 less its remainder by 8), left then right.
    # Without recursion (numba's cache saves a recursive function, and a process that loads it
    # crashes): f_*, a stack of the runs being halved, 64 deep, each with its left half's sums
    if n <= _PW_BLOCK:
        _leaf4(a, 0, n, acc, out)
        return
    top = 0
    f_lo[0], f_n[0] = 0, n
    while True:
        while f_n[top] > _PW_BLOCK:
            h = f_n[top] // 2
            h -= h % 8
            f_state[top] = 0
            top += 1
            f_lo[top], f_n[top] = f_lo[top - 1], h
        _leaf4(a, f_lo[top], f_n[top], acc, out)
        top -= 1
        while top >= 0 and f_state[top] == 1:
            for u in range(4):
                out[u] = f_left[top, u] + out[u]
            top -= 1
        if top < 0:
            return
        for u in range(4):
            f_left[top, u] = out[u]
        f_state[top] = 1
        h = f_n[top] // 2
        h -= h % 8
        top += 1
        f_lo[top], f_n[top] = f_lo[top - 1] + h, f_n[top - 1] - h


_LEAF4 = _leaf4
_PAIRWISE4 = pairwise4


def block_loop(g, walks, s_out, p_out, n_out, top_out, bottom_out, counts, squares, scans):
    # g: (rows, k), a window per row. Per row: S, P, N (+0.0 plus the pairwise sum, as np.add.reduce
    # of the row gives it), the finite elements' largest and smallest, the +inf / -inf / NaN counts;
    # with ``walks``, the row-major walk's squares and the scan's distance (finite rows; the caller
    # puts +inf at the others). A row of finite terms: one pass for the largest, the smallest and
    # the walks' running sums, one for the four pairwise sums at once; else the same sums of the row
    # with its non-finite terms made 0.0
    rows, k = g.shape
    acc, out = np.empty((4, 8)), np.empty(4)
    zeroed = np.empty(k, g.dtype)
    f_lo, f_n = np.empty(64, np.int64), np.empty(64, np.int64)
    f_left, f_state = np.empty((64, 4)), np.zeros(64, np.int64)
    for r in range(rows):
        row = g[r]
        top, bottom = row[0], row[0]
        s32 = row[0]
        run = np.float64(row[0])
        sq = run * run
        clean = run - run == 0.0
        if walks:                         # the walks' running sums in the same pass
            for i in range(1, k):
                v = row[i]
                e = np.float64(v)
                clean &= e - e == 0.0
                if v > top:
                    top = v
                if v < bottom:
                    bottom = v
                s32 = s32 + v
                run += e
                sq += run * run
            squares[r] = sq
        else:
            for i in range(1, k):
                v = row[i]
                clean &= np.float64(v) - np.float64(v) == 0.0
                if v > top:
                    top = v
                if v < bottom:
                    bottom = v
        src = row
        if clean:
            counts[0, r] = counts[1, r] = counts[2, r] = 0.0
        else:                             # the finite terms' largest and smallest, the others counted
            top, bottom = -np.inf, np.inf
            pinf = ninf = nan = 0
            for i in range(k):
                v = row[i]
                if v != v:
                    nan += 1
                elif v == np.inf:
                    pinf += 1
                elif v == -np.inf:
                    ninf += 1
                else:
                    if v > top:
                        top = v
                    if v < bottom:
                        bottom = v
                zeroed[i] = v if np.float64(v) - np.float64(v) == 0.0 else 0.0
            counts[0, r], counts[1, r], counts[2, r] = pinf, ninf, nan
            src = zeroed
        pairwise4(src, k, acc, out, f_lo, f_n, f_left, f_state)
        top_out[r], bottom_out[r] = top, bottom
        s_out[r], p_out[r], n_out[r] = 0.0 + out[0], 0.0 + out[1], 0.0 + out[2]
        if walks:
            scans[r] = abs(np.float64(s32) - (0.0 + out[3]))


def block_kernel():
    """``block_loop`` compiled on first use (cached on disk as ``_compile``'s loop), or None where
    numba does not import or cannot compile."""
    global _BLOCK, _leaf4, pairwise4
    if _BLOCK is not None:
        return _BLOCK or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:
        _BLOCK = False
        return None
    try:
        _leaf4 = njit(_LEAF4)
        pairwise4 = njit(_PAIRWISE4)
        loop = njit(block_loop)
        one = np.empty(1)
        for dt in (np.float32, np.float64):
            loop(np.zeros((1, 1), dt), True, one, one, one, np.empty(1, dt), np.empty(1, dt),
                 np.empty((3, 1)), one, one)
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _BLOCK = False
        return None
    _BLOCK = loop
    return loop


# ---- the largest finite magnitude of an input (``_sums.largest_finite``) --------------------------

def largest_loop(bits, inf):
    # the largest of the magnitudes' bit patterns (the sign bit cleared) below ``inf``'s (an
    # infinity's or a NaN's are not), 0 where there is none: one pass
    mask = ~(bits.dtype.type(1) << (bits.dtype.type(8 * bits.itemsize - 1)))
    most = bits.dtype.type(0)
    zero = bits.dtype.type(0)
    for i in range(bits.size):            # (no branch: a vectorised maximum)
        m = bits[i] & mask
        m = m if m < inf else zero
        most = max(most, m)
    return most


def largest_kernel():
    """``largest_loop`` compiled on first use (cached on disk as the other loops), or None."""
    global _LARGEST
    if _LARGEST is not None:
        return _LARGEST or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:
        _LARGEST = False
        return None
    try:
        loop = njit(largest_loop)
        for t in (np.uint32, np.uint64):
            loop(np.zeros(1, t), t(1))
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _LARGEST = False
        return None
    _LARGEST = loop
    return loop
