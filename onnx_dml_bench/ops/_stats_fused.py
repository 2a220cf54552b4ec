"""AveragePool's window statistics (``_sums._stats``: sum |x|, the sums of the positive terms and of
the negative ones' magnitudes, the largest and the smallest term) as one compiled loop (numba) over
finite data, for windows that ``_sums._reduce`` walks element by element along every axis (no
axis with fewer windows than window elements, no window that is one block of the input).

``_sums._stats`` reduces each statistic axis by axis: along the first spatial axis every window's
elements combined one after another (op(e0, e1), then op(that, e2), ...; an element on the padding
is the fill: 0.0 for a sum, -inf / +inf for the largest / smallest), then those results along the
next axis the same way, and so on. :func:`stats` makes the same operations in the same order, for
each output position at once, so the same bits, with no float64 array of the input's size per
statistic and per axis. A term is as there: float64 of the element, its magnitude, max(z, 0.0)
and max(-z, 0.0) as ``np.maximum`` gives them (its second operand where they compare equal, so
+0.0 for -0.0), the largest and smallest kept the same way (``np.maximum`` / ``np.minimum``); the
largest and smallest in float32 (float64 for float64 data).
``tests/ops/test_window_stats.py`` checks it against the NumPy code, bit for bit.
"""
from __future__ import annotations

import numpy as np

#: a slice of at least so many input elements takes the compiled loop
FUSED_FROM = 1 << 16

_KERNEL = None


def _compile():
    """The loop, compiled on first use (kept on disk by numba beside this file); None where numba
    does not import."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL or None
    try:
        import numba
    except ImportError:
        _KERNEL = False
        return None

    @numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")
    def stats(x, geo, signs, s_out, p_out, n_out, top_out, bottom_out):
        # geo: per axis (depth, height, width) its n, k, s, d, begin, out; x: (rows, D, H, W). Per
        # row of windows (r, a, b): each input column w folded over the depth and height windows
        # (what the NumPy code holds after its first two axes), then each window along the width
        rows = x.shape[0]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        neg_inf, pos_inf = -np.inf, np.inf
        cs, cp, cn = np.empty(nw), np.empty(nw), np.empty(nw)
        ct, cm = np.empty(nw), np.empty(nw)
        for r in range(rows):
            for a in range(od):
                for b in range(oh):
                    for w in range(nw):
                        s3 = p3 = n3 = 0.0
                        t3 = neg_inf
                        m3 = pos_inf
                        for jh in range(kh):
                            h = b * sh - bh + jh * dh
                            if h < 0 or h >= nh:
                                s2 = p2 = n2 = 0.0
                                t2 = neg_inf
                                m2 = pos_inf
                            else:
                                s2 = p2 = n2 = 0.0
                                t2 = neg_inf
                                m2 = pos_inf
                                for jd in range(kd):
                                    d = a * sd - bd + jd * dd
                                    if d < 0 or d >= nd:
                                        s1 = p1 = n1 = 0.0
                                        t1 = neg_inf
                                        m1 = pos_inf
                                    else:
                                        e = np.float64(x[r, d, h, w])
                                        s1 = abs(e)
                                        p1 = e if e > 0.0 else 0.0
                                        mz = -e
                                        n1 = mz if mz > 0.0 else 0.0
                                        t1 = e
                                        m1 = e
                                    if jd == 0:
                                        s2, p2, n2, t2, m2 = s1, p1, n1, t1, m1
                                    else:
                                        s2 = s2 + s1
                                        p2 = p2 + p1
                                        n2 = n2 + n1
                                        t2 = t2 if t2 > t1 else t1
                                        m2 = m2 if m2 < m1 else m1
                            if jh == 0:
                                s3, p3, n3, t3, m3 = s2, p2, n2, t2, m2
                            else:
                                s3 = s3 + s2
                                p3 = p3 + p2
                                n3 = n3 + n2
                                t3 = t3 if t3 > t2 else t2
                                m3 = m3 if m3 < m2 else m2
                        cs[w], cp[w], cn[w], ct[w], cm[w] = s3, p3, n3, t3, m3
                    for c in range(ow):
                        sw_ = pw = nw_ = 0.0
                        tw = neg_inf
                        mw = pos_inf
                        for jw in range(kw):
                            w = c * sw - bw + jw * dw
                            if w < 0 or w >= nw:
                                s3 = p3 = n3 = 0.0
                                t3 = neg_inf
                                m3 = pos_inf
                            else:
                                s3, p3, n3, t3, m3 = cs[w], cp[w], cn[w], ct[w], cm[w]
                            if jw == 0:
                                sw_, pw, nw_, tw, mw = s3, p3, n3, t3, m3
                            else:
                                sw_ = sw_ + s3
                                pw = pw + p3
                                nw_ = nw_ + n3
                                tw = tw if tw > t3 else t3
                                mw = mw if mw < m3 else m3
                        s_out[r, a, b, c] = sw_
                        if signs:
                            p_out[r, a, b, c] = pw
                            n_out[r, a, b, c] = nw_
                        top_out[r, a, b, c] = tw
                        bottom_out[r, a, b, c] = mw

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
