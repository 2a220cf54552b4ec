"""What RoiAlign's tolerance and the non-finite answers of an overflow need of the input around each
sample (``reference.roi_align``): per cell of the input, its steps and the differences that overflow
in the data type; per sample, the roundings of an interpolation written a + t (b - a), and the
infinities and NaN an evaluation in the data type gives."""
from __future__ import annotations

import numpy as np

from .. import _sums as SUM

#: the bound's absolute term, in smallest subnormals of the data type: the underflow of a sample's
#: products (3), the average's division (1/2) and the reference's own rounding (1/2) (``_bound_of``)
SUBNORMAL_STEPS = 4


class Cells:
    """What the bound and the overflow need of the input around each sample, per cell (r, c): the
    square of elements r..r+1, c..c+1 a sample between them reads (one row or column at the last
    one, where a sample is clamped), channels last (N, H, W, C), computed at the cells asked for
    from their four elements (no array of the input's size is made):

    - ``slope``: half the largest |difference| of two neighbouring elements of the cell along H or W
      (a bilinear sample moved by d along an axis inside the cell moves by at most twice that times
      d; halves stay within float64's range for float64 data); differences with a non-finite element
      count 0 (open point 'nonfinite' decides there);
    - ``step`` (nearest neighbour, made whole): at each element the largest |difference| to a
      neighbour;
    - ``ovf``: a difference of two neighbouring elements of the cell overflows in the data type
      (the first stage of an interpolation written a + t (b - a)).

    A bilinear sample's own cell is the square of the four corners it reads, so its slope comes
    from the values the sample gathered (:func:`slope_of`, or from their differences, which the
    interpolation's own tolerance reads too: :func:`corner_differences`). A sample within delta of
    a cell's side (``Axis.reach_lo``/``reach_hi``) may read the cells beyond it: :meth:`around`
    takes those with its own."""

    def __init__(self, xcl: np.ndarray, finite: bool, steps: bool):
        self.x, self.shape, self.finite = xcl, xcl.shape, finite
        self.step = _steepest(xcl) if steps else None

    def corners(self, b, r, c, c0: int, c1: int) -> list:
        """The elements (channels c0..c1) of cells (r, c) of batches ``b`` (broadcast together):
        (r, c), (r, c + 1), (r + 1, c), (r + 1, c + 1), a next row or column past the last one
        clamped to it."""
        _, h, w, _ = self.shape
        r2, c2 = np.minimum(r + 1, h - 1), np.minimum(c + 1, w - 1)
        return [self.x[b, y, x, c0:c1] for y, x in ((r, c), (r, c2), (r2, c), (r2, c2))]

    def at(self, kind: str, b, r, c, c0: int, c1: int) -> np.ndarray:
        """``kind`` ('slope' or 'ovf') of cells (r, c) of batches ``b``."""
        vals = self.corners(b, r, c, c0, c1)
        return slope_of(vals, self.finite) if kind == "slope" else overflows(vals)

    def own_slope(self, b, ay: "Axis", ax: "Axis", c0: int, c1: int, vals=None) -> np.ndarray:
        """(R, Ny, Nx, C): the slope of each sample's own cell, from the corners it read (``vals``,
        bilinear samples) or gathered."""
        if vals is None:
            return self.at("slope", b[:, None, None], ay.lo[:, :, None], ax.lo[:, None, :], c0, c1)
        return slope_of(vals, self.finite)

    def around(self, kind: str, b, ay: "Axis", ax: "Axis", c0: int, c1: int, op, own: np.ndarray | None) -> np.ndarray:
        """(R, Ny, Nx, C) per sample: ``own`` (``kind`` of its own cell, e.g. :meth:`own_slope`,
        written over; None: zero), and where the sample lies within delta of a side, ``op`` with
        ``kind`` of the cells beyond that side (the one before where ``reach_lo`` is below ``lo``,
        the one after where ``reach_hi`` is above ``hi``; both axes: the diagonal one too)."""
        _, h, w, _ = self.shape
        dtype = np.float64 if kind == "slope" else bool
        got = own if own is not None else np.zeros((len(b), ay.lo.shape[1], ax.lo.shape[1], c1 - c0), dtype)
        sides = []
        for a in (ay, ax):
            sides.append(((a.reach_lo < a.lo), (a.reach_hi > a.hi)))
        near = ((sides[0][0] | sides[0][1])[:, :, None] | (sides[1][0] | sides[1][1])[:, None, :])
        if near.any():
            ri, yi, xi = np.nonzero(near)
            bb, y0, x0 = b[ri], ay.lo[ri, yi], ax.lo[ri, xi]
            ok_y = {-1: sides[0][0][ri, yi], 0: np.ones(len(ri), bool), 1: sides[0][1][ri, yi]}
            ok_x = {-1: sides[1][0][ri, xi], 0: np.ones(len(ri), bool), 1: sides[1][1][ri, xi]}
            best = got[ri, yi, xi]
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    if dy == dx == 0:
                        continue
                    k = ok_y[dy] & ok_x[dx]
                    if k.any():
                        other = self.at(kind, bb[k], np.clip(y0[k] + dy, 0, h - 1), np.clip(x0[k] + dx, 0, w - 1),
                                        c0, c1)
                        best[k] = op(best[k], other)
            got[ri, yi, xi] = best
        return got


#: the pairs of a cell's corners a, b (top row), c, d (bottom row) that are neighbours: along W, then along H
PAIRS = ((0, 1), (2, 3), (0, 2), (1, 3))


def corner_differences(vals) -> list:
    """|b - a|, |d - c|, |c - a|, |d - b| in float64 of finite corners of a float16 or float32
    type (each exact): what :func:`slope_of` and :func:`lerp_error` both read."""
    out = []
    for i, j in PAIRS:
        d = np.subtract(vals[j], vals[i], dtype=np.float64)
        out.append(np.abs(d, out=d))
    return out


def slope_of(vals, finite: bool, diffs=None) -> np.ndarray:
    """Per cell of corners ``vals`` (a, b, c, d), the ``slope``: half the largest |difference| of
    two neighbours, in float64: of the halves for float64 data (within its range), else the
    difference halved (the same value: no float64 subnormal is near); a difference with a
    non-finite element counts 0 (``finite``: every element is known to be finite). ``diffs``:
    :func:`corner_differences` of the corners, where made already (the halving is exact)."""
    if diffs is not None:
        out = np.maximum(np.maximum(diffs[0], diffs[1]), np.maximum(diffs[2], diffs[3]))
        out *= 0.5
        return out
    out = None
    for i, j in PAIRS:
        p, q = vals[i], vals[j]
        if q.dtype == np.float64:
            d = q * 0.5 - p * 0.5
        else:
            d = np.subtract(q, p, dtype=np.float64)
            d *= 0.5
        d = np.abs(d, out=d) if finite else np.where(np.isfinite(d), np.abs(d), 0.0)
        out = d if out is None else np.maximum(out, d, out=out)
    return out


def overflows(vals) -> np.ndarray:
    """Per cell of corners ``vals``, the ``ovf`` flag: does a difference of two finite neighbours
    overflow in their type?"""
    fin = [np.isfinite(g) for g in vals]
    out = None
    for i, j in PAIRS:
        f = np.isinf(vals[j] - vals[i]) & fin[i] & fin[j]
        out = f if out is None else (out | f)
    return out


def finite_terms(terms, vals, finite: bool = False) -> list:
    """The weighted corners whose corner is finite (the others: 0; open point 'nonfinite');
    ``finite``: every corner is known to be."""
    if finite:
        return list(terms)
    return [t if np.isfinite(g).all() else np.where(np.isfinite(g), t, 0.0) for t, g in zip(terms, vals)]


def sample_reach(terms, vals) -> np.ndarray:
    """Per sample, the largest magnitude its interpolation can reach on the way: the sum of
    |weight * value|, or a difference of two corners (an interpolation written a + t (b - a));
    non-finite corners aside (open point 'nonfinite'). +inf where that passes even float64's range
    (float64 data)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = sum(np.abs(t) for t in finite_terms(terms, vals))
        fin = [np.where(np.isfinite(v), v.astype(np.float64), np.nan) for v in vals]
        span = np.nan_to_num(np.fmax.reduce(fin) - np.fmin.reduce(fin), nan=0.0, posinf=np.inf)
    return np.maximum(s, span)


def _steepest(xcl: np.ndarray) -> np.ndarray:
    """(N, H, W, C) float64 of ``xcl`` (N, H, W, C): at each element, the largest |difference| to a
    neighbour along H or W (the step a nearest-neighbour sample near a half can take); differences
    with a non-finite element count 0 (where a sample meets one, the open point 'nonfinite'
    decides)."""
    g = np.zeros(xcl.shape)
    for ax in (1, 2):
        lo = [slice(None)] * 4
        hi = [slice(None)] * 4
        lo[ax], hi[ax] = slice(0, -1), slice(1, None)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.subtract(xcl[tuple(hi)], xcl[tuple(lo)], dtype=np.float64)     # exact in float64
            np.abs(d, out=d)
        d[~np.isfinite(d)] = 0.0
        np.maximum(g[tuple(lo)], d, out=g[tuple(lo)])
        np.maximum(g[tuple(hi)], d, out=g[tuple(hi)])
    return g


def lerp_error(vals, ay: Axis, ax: Axis, s_half: np.ndarray, u: float, finite: bool = False,
               diffs=None) -> np.ndarray:
    """Per sample, how far an interpolation written a + t (b - a), along X then Y or along Y then X,
    in a type of unit roundoff ``u``, can lie from the exact one: each of its six operations errs by
    u times its result, the first two of each row scaled by the weight that follows. Along X first,
    top = a + tx (b - a) within u (2 tx |b - a| + |top|), bot likewise, and the answer
    top + ty (bot - top) within (1 - ty) and ty of those and u (2 ty |bot - top| + |v|); as
    (1 - ty) |top| + ty |bot| and |v| are at most S (the sum of |weight * value|), and |bot - top| at
    most Dy = (1 - tx) |c - a| + tx |d - b|, that is within u (2 S + 2 tx Dx + 2 ty Dy), Dx =
    (1 - ty) |b - a| + ty |d - c|: the same along Y first. A few u^2 more; non-finite corners aside
    (open point 'nonfinite'); ``s_half`` is S / 2, and the differences are taken of quarters (within
    float64's range for float64 data); ``finite``: every corner is known to be. Evaluated in place,
    operation for operation as written; for float16 and float32 data, four times all of it (the
    differences of the corners themselves, one rounding each in float64, and 2 S) and a quarter of
    that: the same bits, as scaling by a power of two commutes with every rounding far from
    float64's subnormals and its largest value. ``diffs``: :func:`corner_differences` of finite
    float16 or float32 corners, where made already."""
    with np.errstate(invalid="ignore", over="ignore"):
        vals = [g if finite or np.isfinite(g).all() else np.where(np.isfinite(g), g, 0).astype(g.dtype) for g in vals]
        whole = vals[0].dtype != np.float64             # the corners' differences within float64's range
        if whole:
            a, b, c, d = vals
        else:
            a, b, c, d = (np.multiply(g, 0.25, dtype=np.float64) for g in vals)
        tx, ty = ax.w_hi[:, None, :, None], ay.w_hi[:, :, None, None]

        if diffs is None or not (whole and finite):
            diffs = corner_differences([a, b, c, d])
        d_ab, d_cd, d_ac, d_bd = diffs
        dx = d_ab * ay.w_lo[:, :, None, None]                     # (1 - ty) |b - a| + ty |d - c|
        dx += d_cd * ty
        dy = d_ac * ax.w_lo[:, None, :, None]                     # (1 - tx) |c - a| + tx |d - b|
        dy += d_bd * tx
        quarter = s_half * 2 if whole else s_half / 2            # (four times) a quarter of S + tx Dx + ty Dy
        dx *= tx
        quarter += dx
        dy *= ty
        quarter += dy
        # (four times) a quarter of it times 8 u / (1 - 8 u): one product, as multiplying by 0.25 is
        # exact here and the factor times 0.25 too (the same bits as the two products)
        quarter *= (0.25 if whole else 1.0) * (8 * u / (1 - 8 * u))
    return quarter


def overflow_flags(res: Result, idx, c0, c1, cells: Cells, b, ay: Axis, ax: Axis, vals, valid, pos, neg, shape6,
                    rd: Reading, value_u: float) -> None:
    """Fill ``res.ovf_*`` for regions ``idx``, channels [c0, c1): the non-finite answers an evaluation
    of each sample in the data type can give, and those of their reduction (the module text,
    open point 'overflow'), from the finite corners a, b (top row), c, d (bottom row):

    - a sum of the weighted corners (any order) passes the largest value where its positive (negative)
      terms can, with the roundings of the bound (gamma of its depth) and the coordinates' delta times
      the slopes around the sample: +inf (-inf), NaN where both can;
    - a + t (b - a) along X, then along Y: top = a + tx (b - a), bot = c + tx (d - c), top + ty (bot - top).
      b - a overflowing makes top infinite and the last step inf - inf: NaN; d - c overflowing makes
      bot an infinity of its sign, and so the answer (NaN where tx or ty can be 0: 0 * inf); bot - top,
      (c - a)(1 - tx) + (d - b) tx within the coordinates' delta and a few roundings of the corners,
      past the largest value: an infinity of its sign (NaN where ty can be 0). Along Y, then X, the
      same with the axes swapped. A sample within delta of its cell's side can read the cells beyond
      it: any of the three where one of their differences can pass the largest value;
    - AVERAGE: the samples' infinities, and the sums of the positive (negative) terms of all samples
      (with the same margins), in any order: +inf, -inf, NaN where both signs can; MAX: the samples'."""
    dt = vals[0].dtype
    fmax = float(np.finfo(dt).max)
    n = shape6[2] * shape6[4]
    acc = {2.0 ** -11: np.float16, 2.0 ** -24: np.float32}.get(value_u, np.float64)
    gamma = float(SUM.gamma(float(SUM.depth(n, acc)) + 7, value_u))
    with np.errstate(invalid="ignore", over="ignore"):
        own = cells.own_slope(b, ay, ax, c0, c1, vals if rd.interp == "LINEAR" else None)
        margin = (gamma * pos + gamma * neg + cells.around("slope", b, ay, ax, c0, c1, np.maximum, own)
                  * (2 * (ay.delta[:, None, None, None] + ax.delta[:, None, None, None])))
        pos, neg = pos + margin, neg + margin
        fin = [np.isfinite(g) for g in vals]
        # float64 data: the second differences in quarters, within float64's range
        sc = 0.25 if dt == np.float64 else 1.0
        a, bb, cc, dd = (np.where(f, g, 0).astype(np.float64) * sc for f, g in zip(fin, vals))
        tx, ty = ax.w_hi[:, None, :, None], ay.w_hi[:, :, None, None]
        dx, dy = ax.delta[:, None, None, None], ay.delta[:, None, None, None]
        zx, zy = tx <= dx, ty <= dy                                  # the weight can be 0
        # the first differences, in the data type, of finite neighbours
        first = {k: np.isinf(vals[j] - vals[i]) & fin[i] & fin[j]
                 for k, (i, j) in {"top": (0, 1), "bot": (2, 3), "left": (0, 2), "right": (1, 3)}.items()}
        slack = 8 * value_u * np.maximum.reduce([np.abs(a), np.abs(bb), np.abs(cc), np.abs(dd)])
        ex = (cc - a) * (1 - tx) + (dd - bb) * tx                  # bot - top, X first
        rx = dx * np.abs((dd - bb) - (cc - a)) + slack
        ey = (bb - a) * (1 - ty) + (dd - cc) * ty                  # right - left, Y first
        ry = dy * np.abs((dd - cc) - (bb - a)) + slack
        top = fmax * sc
        px, nx_, py, ny_ = ex + rx > top, rx - ex > top, ey + ry > top, ry - ey > top
        p_s = (px | py | (first["bot"] & (dd > cc)) | (first["right"] & (dd > bb)) | (pos > fmax))
        n_s = (nx_ | ny_ | (first["bot"] & (dd < cc)) | (first["right"] & (dd < bb)) | (neg > fmax))
        nan_s = (first["top"] | first["left"] | (first["bot"] & (zx | zy)) | (first["right"] & (zx | zy))
                 | ((px | nx_) & zy) | ((py | ny_) & zx) | ((pos > fmax) & (neg > fmax)))
        near = ((((ay.reach_lo != ay.lo) | (ay.reach_hi != ay.hi))[:, :, None]
                 | ((ax.reach_lo != ax.lo) | (ax.reach_hi != ax.hi))[:, None, :])[..., None])
        if near.any():
            # within delta of a side, the cells beyond it: a difference there that overflows, or a
            # second one that can (their largest difference, a few roundings more)
            wide = near & (cells.around("ovf", b, ay, ax, c0, c1, np.logical_or, None)
                           | (cells.around("slope", b, ay, ax, c0, c1, np.maximum, None)
                              + 4 * value_u * fmax > fmax / 2))
            p_s, n_s, nan_s = p_s | wide, n_s | wide, nan_s | wide
        p_s, n_s, nan_s = (valid & f for f in (p_s, n_s, nan_s))
    p_o, n_o, nan_o = (f.reshape(shape6).any(axis=(2, 4)) for f in (p_s, n_s, nan_s))
    if rd.mode != "MAX":
        sums = [np.where(valid, part, max(sign * rd.oob, 0.0)).reshape(shape6).sum(axis=(2, 4)) > fmax
                for part, sign in ((pos, 1.0), (neg, -1.0))]
        p_o, n_o = p_o | sums[0], n_o | sums[1]
        nan_o = nan_o | (p_o & n_o)
    for arr, f in ((res.ovf_pos, p_o), (res.ovf_neg, n_o), (res.ovf_nan, nan_o)):
        arr[idx, c0:c1] = f.transpose(0, 3, 1, 2)
