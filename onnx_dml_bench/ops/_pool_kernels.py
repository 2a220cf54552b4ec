"""The loops of ``_pool_fused``, as plain functions at module level: ``_pool_fused._compile``
compiles them with numba where it imports (``COMPILED``, in that order: a loop's helpers before it,
each name here then bound to its compiled form, which the later loops call). At module level,
numba's cache on disk serves every later process (loops defined inside a function that call one
another are compiled again in each process). What each loop does and why it gives the NumPy walk's
bits is said in ``_pool_fused``."""
from __future__ import annotations

import numpy as np

#: the names compiled, helpers first; ``add`` inlined where it is called
COMPILED = ("add", "span", "finite_row", "window_total", "mean_rows", "max_rows", "mean_lanes", "max_lanes",
            "block_sums")
INLINED = ("add",)


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


def span(off, s, n, m, inside):
    # the windows c in [lo, hi) of m whose element at c * s + off lies in [0, n) (none where
    # the element's row is outside the input); 0 <= lo <= hi <= m, so that the callers' loops
    # over [0, lo) and [hi, m) stay within the row of m windows (lo past m where every window's
    # element lies in the start padding)
    if not inside:
        return 0, 0
    lo = min(m, max(0, -(off // s)))
    hi = min(m, (n - 1 - off) // s + 1)
    return lo, max(lo, hi)


def finite_row(x, r):
    # every element of x[r] finite (x C-contiguous)
    per = x.size // x.shape[0]
    xf = x.ravel()
    for i in range(np.uint64(r * per), np.uint64((r + 1) * per)):
        if not np.isfinite(xf[i]):
            return False
    return True


def mean_rows(x, geo, div, out):
    # each window's elements in scan order, added over a whole row of windows at once (the windows
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


def max_rows(x, geo, steps, first_row, lowest, want_index, best, at):
    # each window's first NaN, else its first maximum, in scan order, a window element taken over
    # a whole row of windows at once. A window's value starts at the type's lowest (its first
    # element taken where it is greater or a NaN; the value is the same where it equals the
    # lowest), its index at -1 (the first element taken whatever it is). Flat unsigned offsets,
    # as ``mean_rows``
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


def mean_lanes(x, xt, geo, div, out, acc):
    # as ``mean_rows``, each window element added over every row at once (many rows, few windows
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


def max_lanes(xt, geo, steps, first_row, lowest, want_index, best, at, v, ix):
    # as ``max_rows``, each window element taken over every row at once (many rows, few windows
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


#: the plain functions, as defined here (each name above is bound to its compiled form later)
PLAIN = {name: globals()[name] for name in COMPILED}
