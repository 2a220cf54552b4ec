"""The bound of AveragePool's reading summed-wide (``_sums.bound`` with ``SUMMED_WIDE``, float32 and
float16 data) as one compiled loop (numba) over the output positions.

``_sums.bound`` is some sixty NumPy operations over the output, each making an array of it (a layer
of 52 million outputs, in slices); ``wide_loop`` makes the same operations on each position in the
same order, so the same bits: the sum's error (``_sums.sum_error``), the bound's terms, the
interval of the answers (``_sums._answers``: its ends rounded to the data type, float16 by
:func:`to_half`, float32 by numba's conversion, both to nearest, ties to even), the one-signed
windows' floor. What depends on the counts alone (the depth's gamma, the reciprocals' errors, the
statistical floor's square root) is computed by ``_sums`` with NumPy on the counts' own array,
once per window, and read here at ``position % period`` (the counts repeat over batch x
channel). A minimum or maximum is NumPy's: NaN where either operand is, else the smaller
(larger), the second operand where they are equal. ``tests/ops/test_bound_fused.py`` checks it
against the NumPy code, bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

from ..jit import njit

_KERNEL = None


def _mn(a, b):
    # np.minimum of two float64: NaN where either is, else the smaller, ``b`` where they are equal
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


def _mx(a, b):
    # np.maximum likewise
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


def to_half(v):
    # float64 ``v`` rounded to float16 (to nearest, ties to even; +-inf past its range), as float64:
    # what ``v.astype(np.float16).astype(np.float64)`` gives
    if v != v or v == 0.0 or abs(v) == np.inf:
        return v
    a = abs(v)
    if a < 2.0 ** -14:                               # subnormal: a multiple of 2^-24
        r = np.rint(a * 2.0 ** 24) * 2.0 ** -24
    else:
        _, e = math.frexp(a)                         # a = m 2^e, m in [0.5, 1): 11 bits of it kept
        step = math.ldexp(1.0, e - 11)
        r = np.rint(a / step) * step
        if r > 65504.0:
            r = np.inf
    return r if v > 0 else -r


def wide_loop(S, P, N, top, bottom, pinf, ninf, nan, r, wide, walk, counts, period, start, has_wide, has_walk,
              half, wider, consts, below_out, above_out):
    # per output position i (flat, of a slice of the output from position ``start``): ``_sums.bound``
    # of reading summed-wide. counts: rows of per-window values at (start + i) % period: n, c (1 where 0), gamma(depth(n)) of the accumulator, sqrt(max(n, 1) / 3),
    # the subnormal reciprocals' terms of the accumulator and of the data type, the reciprocal errors
    # of the accumulator and of the data type. wide: one value (has_wide 1) or per position (2), or
    # none (0); walk: per position where has_walk
    (u_t, eta_t, u_a, eta_a, fmax_a, one_u_t, coef_a, coef_t, half_eta_t, shrink, slack, wide_floor,
     walk_floor, sim_factor) = (consts[0], consts[1], consts[2], consts[3], consts[4], consts[5], consts[6],
                                consts[7], consts[8], consts[9], consts[10], consts[11], consts[12], consts[13])
    for i in range(S.size):
        j = (start + i) % period
        n, c, gam, root = counts[0, j], counts[1, j], counts[2, j], counts[3, j]
        srec_a, srec_t, rerr_a, rerr_t = counts[4, j], counts[5, j], counts[6, j], counts[7, j]
        s, p, q_n = S[i], P[i], N[i]
        # sum_error
        g = gam * s
        k = _mx(n - 1, 0.0)
        mpn = _mx(p, q_n)
        worst = _mn(g, k * u_a * _mn(mpn + g, fmax_a)) / c
        s_err = worst
        if has_wide != 0:
            floor = wide_floor * mpn * root
            if has_walk:
                floor = _mn(floor, walk_floor * walk[i])
            w = wide[0] if has_wide == 1 else wide[i]
            sim = sim_factor * w + u_a * (floor / c)
            s_err = _mn(worst, sim if sim - sim == 0.0 else np.inf)
        # the bound's terms
        rr = np.float64(r[i])
        fin_r = rr - rr == 0.0
        y = abs(rr if fin_r else 0.0)
        q_hi = y * one_u_t + eta_t
        e = s_err + (coef_a + srec_a) * (q_hi + s_err) + eta_a
        if wider:
            e = e + (coef_t + srec_t) * (q_hi + e) + eta_t
        e = e + u_t * q_hi + half_eta_t
        below, above = e, e
        clean = n > 0 and pinf[i] == 0 and ninf[i] == 0 and nan[i] == 0
        # _answers
        q = (p - q_n) / c
        aq = abs(q) + s_err
        eps_q = (_mx(n, 1.0) * 2.0 ** -52 / c) * s + 2.0 ** -51 * abs(q)
        if not wider:
            e2 = s_err + rerr_a * aq
        else:
            e_a = s_err + (coef_a + srec_a) * aq + eta_a
            e_b = s_err + (rerr_t + 2 * u_a) * (1 + rerr_t) * aq + eta_a
            e_c = (s_err if rerr_t == 0 else s_err + (u_t + rerr_t + u_t * rerr_t) * aq) + half_eta_t
            e2 = _mx(_mx(e_a, e_b), e_c)
        e2 = (e2 + eps_q) * (1 + 2.0 ** -40) + 2.0 ** -50 * abs(q)
        if half:
            lo, hi = to_half(q - e2), to_half(q + e2)
        else:
            lo, hi = np.float64(np.float32(q - e2)), np.float64(np.float32(q + e2))
        if clean and fin_r and lo - lo == 0.0 and hi - hi == 0.0:
            below = _mn(below, _mx(rr - lo, 0.0))
            above = _mn(above, _mx(hi - rr, 0.0))
        # one-signed windows
        rf = rr if fin_r else 0.0
        t, b = np.float64(top[i]), np.float64(bottom[i])
        pos, neg = clean and b >= 0, clean and t <= 0
        lo_pos = _mx((t if pos else 0.0) / c * shrink - slack, 0.0)
        lo_neg = _mx((-b if neg else 0.0) / c * shrink - slack, 0.0)
        if pos:
            below = _mn(below, _mx(rf - lo_pos, 0.0))
        if neg:
            above = _mn(above, _mx(-lo_neg - rf, 0.0))
        below_out[i], above_out[i] = below, above


_MN, _MX, _TO_HALF = _mn, _mx, to_half


def kernel():
    """``wide_loop`` compiled on first use (kept on disk, ``jit.njit``), or None where numba does not
    import or cannot compile (NumPy's code then)."""
    global _KERNEL, _mn, _mx, to_half
    if _KERNEL is not None:
        return _KERNEL or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:
        _KERNEL = False
        return None
    try:
        _mn, _mx, to_half = njit(_MN), njit(_MX), njit(_TO_HALF)
        loop = njit(wide_loop)
        one = np.zeros(1)
        for t in (np.float32, np.float16):
            tb = np.zeros(1, np.float32)
            loop(one, one, one, tb, tb, one, one, one, np.zeros(1, np.float32 if t == np.float32 else np.float64),
                 one, one, np.ones((8, 1)), 1, 0, 2, True, t == np.float16, t == np.float16, np.zeros(14),
                 np.empty(1), np.empty(1))
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _KERNEL = False
        return None
    _KERNEL = loop
    return loop
