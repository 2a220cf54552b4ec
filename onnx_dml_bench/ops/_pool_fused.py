"""The pooling reference's window walk (``_pooling.window_mean`` in float64, ``_pooling.window_max``)
as compiled loops (numba): one output position after another, its window's elements in scan order
(row-major over the window), no tile, no work array of the input's size, and a fixed cost per call
of a few microseconds where the NumPy walk makes tens of NumPy calls.

The same bits as the NumPy walk, by the same arithmetic:

- :func:`means`: a window's elements, each made float64 as it is read (exactly), padding as +0.0,
  added one after the other from the first element (``total = e0``, then ``total = total + e``, as
  ``np.add(total, e, out=total)``), then divided by the window's divisor (the float64 product the
  NumPy code makes) in float64, and rounded once to the data's type by NumPy's cast. numba keeps
  IEEE arithmetic (no ``fastmath``): ``total + 0.0`` is not folded away, so -0.0 + 0.0 stays +0.0.
- :func:`block_means`: a window that is one block of the input (every global pool): each channel's
  elements added in scan order the same way, eight channels at once (eight independent chains of
  additions, each the scan of its own channel), the same value as ``_block.means`` gives.
- :func:`maxima`: the first NaN of a window, else its first maximum in scan order (a later element
  is taken where it is greater, or a NaN after numbers), padding never; the index is that element's
  flat offset (row-major or column-major spatial offsets). A window with no input element (which
  the descriptors' validation refuses) gives what the NumPy walk gives: the type's lowest value at
  its channel's first offset.

``tests/ops/test_pool_fused.py`` checks each against the NumPy walk, bit for bit, on random
geometries (padding, dilations, strides, 1 to 3 spatial axes), NaN, infinities, signed zeros and
subnormals. Where numba does not import, or for what these loops do not cover (more than three
spatial axes, an accumulator narrower than float64, a channel of more than ``ROW_ELEMENTS``
elements), the NumPy walk runs.

Three ways through the windows, the same operations in the same order for each window
(``walk``): window by window ("each": few windows along the last axis, few rows); a window element
over a whole row of windows at once ("rows"); a window element over every row (channel) at once,
from a channels-last copy of a chunk of rows ("lanes": many channels of small maps, the census's
late layers). Additions where a NaN can arise go through ``add`` (the NaN NumPy's np.add gives on
long arrays): "each" and "rows" for a row holding a non-finite element, "lanes" for a sum that
came out NaN, made again; the loops over finite data carry no test per addition.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import _block

#: channels (rows) of at most so many elements, in and out, take the loops; larger ones the NumPy
#: walk, whose tiles split a channel too
ROW_ELEMENTS = 1 << 17
#: at most so many window-element visits in a call (outputs x window elements) take the loops: the
#: small layers, where the NumPy walk's fixed cost (tens of NumPy calls) is most of a call. Past it
#: the walk's passes over contiguous runs (SIMD) are as fast or faster than these scalar loops
#: (``networks`` on the CPU EP, the reference's time per case against the walk's: 0.5-0.7x for
#: global windows up to 2^21 visits, 5x for those of 2^24; about 1x, 0.8-1.25x, for the others
#: from 2^18 visits)
VISITS_UP_TO = 1 << 21

#: so many windows or more along the last axis: a window element at a time over the whole row
ROW_FROM = 4

_KERNELS = None


class Kernels(NamedTuple):
    means: object          # window by window
    block_sums: object     # one block per row (global pools)
    maxima: object         # window by window
    mean_rows: object      # a window element over a row of windows at once
    max_rows: object
    mean_lanes: object     # a window element over every row at once, channels last
    max_lanes: object


def _compile():
    """(means, block_sums, maxima) compiled on first use (kept on disk by numba beside this file);
    None where numba does not import or cannot compile here."""
    global _KERNELS
    if _KERNELS is not None:
        return _KERNELS or None
    try:
        import numba
    except ImportError:
        _KERNELS = False
        return None
    jit = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")

    @numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy", inline="always")
    def add(t, e):
        # t + e with the NaN x86 gives for NumPy's np.add(t, e): t's where t is a NaN, else e's,
        # else (inf - inf) the default NaN; LLVM takes addition as commutative and may swap the
        # operands, so a NaN result is made again here from the operands in that order
        r = t + e
        if r != r:
            if t != t:
                return t + 0.0
            if e != e:
                return e + 0.0
        return r

    @jit
    def span(off, s, n, m, inside):
        # the windows c in [lo, hi) of m whose element at c * s + off lies in [0, n) (none where
        # the element's row is outside the input)
        if not inside:
            return 0, 0
        lo = max(0, -(off // s))
        hi = min(m, (n - 1 - off) // s + 1)
        return lo, max(lo, hi)

    @jit
    def finite_row(x, r):
        # every element of x[r] finite (x C-contiguous)
        per = x.size // x.shape[0]
        xf = x.ravel()
        for i in range(np.uint64(r * per), np.uint64((r + 1) * per)):
            if not np.isfinite(xf[i]):
                return False
        return True

    @jit
    def means(x, geo, div, out):
        # x (rows, D, H, W); geo per axis (n, k, s, d, begin, out); div (od, oh, ow) float64;
        # out (rows, od, oh, ow) float64: each window's scan-order sum over its divisor
        rows = x.shape[0]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        for r in range(rows):
            finite = finite_row(x, r)
            for a in range(od):
                for b in range(oh):
                    for c in range(ow):
                        total = 0.0
                        first = True
                        for jd in range(kd):
                            d = a * sd - bd + jd * dd
                            for jh in range(kh):
                                h = b * sh - bh + jh * dh
                                for jw in range(kw):
                                    w = c * sw - bw + jw * dw
                                    if 0 <= d < nd and 0 <= h < nh and 0 <= w < nw:
                                        e = np.float64(x[r, d, h, w])
                                    else:
                                        e = 0.0
                                    if first:
                                        total = e
                                        first = False
                                    elif finite:
                                        total = total + e
                                    else:
                                        total = add(total, e)
                        out[r, a, b, c] = total / div[a, b, c]

    @jit
    def mean_rows(x, geo, div, out):
        # as ``means``, each window element added over a whole row of windows at once (the windows
        # along the last axis): the same additions, in the same order for every window. Flat
        # unsigned offsets: no negative-index wraparound in the inner loops
        rows = x.shape[0]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        xf = x.ravel()
        of = out.ravel()
        dv = div.ravel()
        u = np.uint64
        usw = u(sw)
        for r in range(rows):
            finite = finite_row(x, r)
            for a in range(od):
                for b in range(oh):
                    o0 = u(((r * od + a) * oh + b) * ow)
                    q0 = u((a * oh + b) * ow)
                    first = True
                    for jd in range(kd):
                        d = a * sd - bd + jd * dd
                        for jh in range(kh):
                            h = b * sh - bh + jh * dh
                            row_in = 0 <= d < nd and 0 <= h < nh
                            for jw in range(kw):
                                off = jw * dw - bw
                                lo, hi = span(off, sw, nw, ow, row_in)
                                s0 = u(((r * nd + d) * nh + h) * nw + lo * sw + off) if hi > lo else u(0)
                                ulo, uhi, uow = u(lo), u(hi), u(ow)
                                if first:
                                    for c in range(u(0), ulo):
                                        of[o0 + c] = 0.0
                                    for c in range(ulo, uhi):
                                        of[o0 + c] = np.float64(xf[s0 + (c - ulo) * usw])
                                    for c in range(uhi, uow):
                                        of[o0 + c] = 0.0
                                    first = False
                                    continue
                                for c in range(u(0), ulo):
                                    of[o0 + c] = of[o0 + c] + 0.0
                                if finite:
                                    for c in range(ulo, uhi):
                                        of[o0 + c] = of[o0 + c] + np.float64(xf[s0 + (c - ulo) * usw])
                                else:
                                    for c in range(ulo, uhi):
                                        of[o0 + c] = add(of[o0 + c], np.float64(xf[s0 + (c - ulo) * usw]))
                                for c in range(uhi, uow):
                                    of[o0 + c] = of[o0 + c] + 0.0
                    for c in range(u(0), u(ow)):
                        of[o0 + c] = of[o0 + c] / dv[q0 + c]

    @jit
    def max_rows(x, geo, steps, first_row, lowest, want_index, best, at):
        # as ``maxima``, each window element taken over a whole row of windows at once; a window's
        # value starts at the type's lowest (its first element taken where it is greater or a NaN,
        # and the value is the same where it equals the lowest), its index at -1 (the first
        # element taken whatever it is). Flat unsigned offsets, as ``mean_rows``
        rows = x.shape[0]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        per_row = nd * nh * nw
        xf = x.ravel()
        bf = best.ravel()
        af = at.ravel()
        u = np.uint64
        usw = u(sw)
        uow = u(ow)
        for r in range(rows):
            base = (first_row + r) * per_row
            for a in range(od):
                for b in range(oh):
                    o0 = u(((r * od + a) * oh + b) * ow)
                    for c in range(u(0), uow):
                        bf[o0 + c] = lowest
                    if want_index:
                        for c in range(u(0), uow):
                            af[o0 + c] = -1
                    for jd in range(kd):
                        d = a * sd - bd + jd * dd
                        if d < 0 or d >= nd:
                            continue
                        for jh in range(kh):
                            h = b * sh - bh + jh * dh
                            if h < 0 or h >= nh:
                                continue
                            at_row = base + d * steps[0] + h * steps[1]
                            for jw in range(kw):
                                off = jw * dw - bw
                                lo, hi = span(off, sw, nw, ow, True)
                                if hi <= lo:
                                    continue
                                s0 = u(((r * nd + d) * nh + h) * nw + lo * sw + off)
                                ulo, uhi = u(lo), u(hi)
                                if want_index:
                                    first_at = at_row + (lo * sw + off) * steps[2]
                                    step = sw * steps[2]
                                    for c in range(ulo, uhi):
                                        i = c - ulo
                                        e = xf[s0 + i * usw]
                                        p = bf[o0 + c]
                                        k = af[o0 + c]
                                        take = (k < 0) | ((p == p) & ((e > p) | (e != e)))
                                        bf[o0 + c] = e if take else p
                                        af[o0 + c] = first_at + np.int64(i) * step if take else k
                                else:
                                    for c in range(ulo, uhi):
                                        e = xf[s0 + (c - ulo) * usw]
                                        p = bf[o0 + c]
                                        take = (p == p) & ((e > p) | (e != e))
                                        bf[o0 + c] = e if take else p
                    if want_index:
                        for c in range(u(0), uow):
                            if af[o0 + c] < 0:
                                af[o0 + c] = base

    @jit
    def window_total(xf, geo, per, r, a, b, c):
        # window (a, b, c) of row r: its scan-order sum, NaN as x86 gives it (``add``)
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        total = 0.0
        first = True
        for jd in range(kd):
            d = a * sd - bd + jd * dd
            for jh in range(kh):
                h = b * sh - bh + jh * dh
                for jw in range(kw):
                    w = c * sw - bw + jw * dw
                    e = 0.0
                    if 0 <= d < nd and 0 <= h < nh and 0 <= w < nw:
                        e = np.float64(xf[np.uint64(r * per + (d * nh + h) * nw + w)])
                    total = e if first else add(total, e)
                    first = False
        return total

    @jit
    def mean_lanes(x, xt, geo, div, out, acc):
        # as ``means``, each window element added over every row at once (many rows, few windows
        # along the last axis), from xt: x channels last (spatial positions, rows), contiguous;
        # acc: a float64 work row of x.shape[0]. A NaN sum is made again by ``window_total``,
        # whose additions give the NaN x86 gives
        rows = x.shape[0]
        per = x.size // rows
        tf = xt.ravel()
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        xf = x.ravel()
        of = out.ravel()
        u = np.uint64
        uper = u(per)
        urows = u(rows)
        outs = u(od * oh * ow)
        for a in range(od):
            for b in range(oh):
                for c in range(ow):
                    first = True
                    for jd in range(kd):
                        d = a * sd - bd + jd * dd
                        for jh in range(kh):
                            h = b * sh - bh + jh * dh
                            for jw in range(kw):
                                w = c * sw - bw + jw * dw
                                inside = 0 <= d < nd and 0 <= h < nh and 0 <= w < nw
                                src = u((d * nh + h) * nw + w) * urows if inside else u(0)
                                if first:
                                    if inside:
                                        for r in range(u(0), urows):
                                            acc[r] = np.float64(tf[src + r])
                                    else:
                                        acc[:] = 0.0
                                    first = False
                                elif inside:
                                    for r in range(u(0), urows):
                                        acc[r] = acc[r] + np.float64(tf[src + r])
                                else:
                                    for r in range(u(0), urows):
                                        acc[r] = acc[r] + 0.0
                    o = u((a * oh + b) * ow + c)
                    q = div[a, b, c]
                    for r in range(u(0), urows):
                        t = acc[r]
                        if t != t:
                            t = window_total(xf, geo, per, r, a, b, c)
                        of[r * outs + o] = t / q

    @jit
    def max_lanes(xt, geo, steps, first_row, lowest, want_index, best, at, v, ix):
        # as ``maxima``, each window element taken over every row at once (many rows, few windows
        # along the last axis), from xt: the rows channels last (spatial positions, rows),
        # contiguous; v, ix: work rows of the rows' count (the value so far, its index or -1)
        rows = xt.shape[1]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        per_row = nd * nh * nw
        tf = xt.ravel()
        bf = best.ravel()
        af = at.ravel()
        u = np.uint64
        urows = u(rows)
        outs = u(od * oh * ow)
        for a in range(od):
            for b in range(oh):
                for c in range(ow):
                    v[:] = lowest
                    ix[:] = -1
                    for jd in range(kd):
                        d = a * sd - bd + jd * dd
                        if d < 0 or d >= nd:
                            continue
                        for jh in range(kh):
                            h = b * sh - bh + jh * dh
                            if h < 0 or h >= nh:
                                continue
                            for jw in range(kw):
                                w = c * sw - bw + jw * dw
                                if w < 0 or w >= nw:
                                    continue
                                src = u((d * nh + h) * nw + w) * urows
                                off = d * steps[0] + h * steps[1] + w * steps[2]
                                if want_index:
                                    for r in range(u(0), urows):
                                        e = tf[src + r]
                                        p = v[r]
                                        k = ix[r]
                                        take = (k < 0) | ((p == p) & ((e > p) | (e != e)))
                                        v[r] = e if take else p
                                        ix[r] = off if take else k
                                else:
                                    for r in range(u(0), urows):
                                        e = tf[src + r]
                                        p = v[r]
                                        take = (p == p) & ((e > p) | (e != e))
                                        v[r] = e if take else p
                    o = u((a * oh + b) * ow + c)
                    for r in range(u(0), urows):
                        bf[r * outs + o] = v[r]
                    if want_index:
                        for r in range(u(0), urows):
                            base = (first_row + np.int64(r)) * per_row
                            af[r * outs + o] = base + (ix[r] if ix[r] >= 0 else 0)

    @jit
    def block_sums(g, out):
        # g (rows, k): each row's elements added in scan order in float64, eight rows at a time
        # (eight independent chains of additions); a NaN sum made again one addition at a time
        # by ``add``, for the NaN x86 gives
        rows, k = g.shape
        r = 0
        while r + 8 <= rows:
            t0 = np.float64(g[r, 0])
            t1 = np.float64(g[r + 1, 0])
            t2 = np.float64(g[r + 2, 0])
            t3 = np.float64(g[r + 3, 0])
            t4 = np.float64(g[r + 4, 0])
            t5 = np.float64(g[r + 5, 0])
            t6 = np.float64(g[r + 6, 0])
            t7 = np.float64(g[r + 7, 0])
            for j in range(1, k):
                t0 = t0 + np.float64(g[r, j])
                t1 = t1 + np.float64(g[r + 1, j])
                t2 = t2 + np.float64(g[r + 2, j])
                t3 = t3 + np.float64(g[r + 3, j])
                t4 = t4 + np.float64(g[r + 4, j])
                t5 = t5 + np.float64(g[r + 5, j])
                t6 = t6 + np.float64(g[r + 6, j])
                t7 = t7 + np.float64(g[r + 7, j])
            out[r] = t0
            out[r + 1] = t1
            out[r + 2] = t2
            out[r + 3] = t3
            out[r + 4] = t4
            out[r + 5] = t5
            out[r + 6] = t6
            out[r + 7] = t7
            r += 8
        while r < rows:
            t = np.float64(g[r, 0])
            for j in range(1, k):
                t = t + np.float64(g[r, j])
            out[r] = t
            r += 1
        for r in range(rows):
            if out[r] != out[r]:
                t = np.float64(g[r, 0])
                for j in range(1, k):
                    t = add(t, np.float64(g[r, j]))
                out[r] = t

    @jit
    def maxima(x, geo, steps, first_row, lowest, want_index, best, at):
        # x (rows, D, H, W); best like x's type; at int64 (rows, od, oh, ow): the flat offset of the
        # element kept (row first_row + r, the spatial offset by ``steps``)
        rows = x.shape[0]
        nd, kd, sd, dd, bd, od = geo[0]
        nh, kh, sh, dh, bh, oh = geo[1]
        nw, kw, sw, dw, bw, ow = geo[2]
        per_row = nd * nh * nw
        for r in range(rows):
            base = (first_row + r) * per_row
            for a in range(od):
                for b in range(oh):
                    for c in range(ow):
                        v = lowest
                        off = 0
                        found = False
                        for jd in range(kd):
                            d = a * sd - bd + jd * dd
                            if d < 0 or d >= nd:
                                continue
                            for jh in range(kh):
                                h = b * sh - bh + jh * dh
                                if h < 0 or h >= nh:
                                    continue
                                for jw in range(kw):
                                    w = c * sw - bw + jw * dw
                                    if w < 0 or w >= nw:
                                        continue
                                    e = x[r, d, h, w]
                                    take = (not found) | ((v == v) & ((e > v) | (e != e)))
                                    v = e if take else v
                                    off = d * steps[0] + h * steps[1] + w * steps[2] if take else off
                                    found = True
                        best[r, a, b, c] = v
                        if want_index:
                            at[r, a, b, c] = base + off

    try:                                     # compiled (or loaded from numba's cache) here, once
        g = np.zeros((1, 1, 1, 1), np.float32)
        means(g, geometry([]), np.ones((1, 1, 1)), np.empty((1, 1, 1, 1)))
        block_sums(np.zeros((1, 1), np.float32), np.empty(1))
        for one in (maxima, max_rows):
            one(g, geometry([]), np.zeros(3, np.int64), 0, np.float32(-np.inf), True, g.copy(),
                np.empty((1, 1, 1, 1), np.int64))
        mean_rows(g, geometry([]), np.ones((1, 1, 1)), np.empty((1, 1, 1, 1)))
        mean_lanes(g, g.reshape(1, 1), geometry([]), np.ones((1, 1, 1)), np.empty((1, 1, 1, 1)), np.empty(1))
        max_lanes(g.reshape(1, 1), geometry([]), np.zeros(3, np.int64), 0, np.float32(-np.inf), True, g.copy(),
                  np.empty((1, 1, 1, 1), np.int64), np.empty(1, np.float32), np.empty(1, np.int64))
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _KERNELS = False
        return None
    _KERNELS = Kernels(means, block_sums, maxima, mean_rows, max_rows, mean_lanes, max_lanes)
    return _KERNELS


def usable(wins, spatial, rows: int) -> "Kernels | None":
    """The loops for windows ``wins`` over ``rows`` channels of ``spatial`` elements, or None: at
    most three spatial axes; a channel of at most ROW_ELEMENTS elements, in and out (a chunk of
    whole rows keeps the work arrays small); at most VISITS_UP_TO window-element visits."""
    if len(wins) > 3 or math.prod(spatial) > ROW_ELEMENTS or math.prod(w.out for w in wins) > ROW_ELEMENTS:
        return None
    if rows * math.prod(w.out * w.k for w in wins) > VISITS_UP_TO:
        return None
    return _compile()


def writable(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a C-contiguous, writable array of ``dtype`` (a copy where it is not one): the loops
    are compiled for that kind of array, and a read-only one would be a second compilation."""
    if a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, dtype, order="C")


#: at least so many rows (batch x channels), and fewer windows than LANES_BELOW along the last
#: axis: each window element over every row at once, channels last
LANES_FROM = 16
LANES_BELOW = 32


def walk(wins, rows: int) -> str:
    """Which loop walks ``rows`` rows over ``wins``: "lanes" (many rows, few windows along the last
    axis), "rows" (a row of windows at a time) or "each" (window by window)."""
    last = wins[-1].out if wins else 1
    if rows >= LANES_FROM and last < LANES_BELOW:
        return "lanes"
    return "rows" if last >= ROW_FROM else "each"


def geometry(wins) -> np.ndarray:
    """(3, 6) int64: per axis (depth, height, width; a missing one of size 1, window 1) n, k, s, d,
    begin, out."""
    rows = [(1, 1, 1, 1, 0, 1)] * (3 - len(wins)) + [(w.n, w.k, w.s, w.d, w.begin, w.out) for w in wins]
    return np.array(rows, dtype=np.int64)


def as_3d(flat: np.ndarray) -> np.ndarray:
    """(channels, *spatial) as (channels, D, H, W), leading axes of size 1 added."""
    return flat.reshape(flat.shape[0], *[1] * (4 - flat.ndim), *flat.shape[1:])
