"""RoiAlign's per-sample arithmetic as compiled loops (numba): the same operations as the NumPy
code of ``reference._samples`` and ``bounds``, one sample and channel at a time, in the same order,
each rounded as NumPy rounds it (float64, no operation fused, no order changed: numba keeps IEEE
arithmetic unless told otherwise; a maximum as ``np.maximum`` takes it, its second operand where
the two compare equal), so the same bits, without a float64 array per operation.

Used where numba imports, for a case of any size (``FUSED_FROM``: the census's small layers gain
as much as the detection layers, the NumPy code's fixed cost per call being most of theirs);
elsewhere, and for every reading these loops do not cover, the NumPy code runs. The loops cover:

- :func:`samples`: each sample's value, its four weighted corners added one after another;
- :func:`slopes`: each sample's own cell's ``slope`` (``bounds.slope_of`` of the corners'
  differences), for ``Cells.around``;
- :func:`tolerances`: each sample's value and its tolerance before the move of its coordinates
  (``err`` of ``reference._samples``: gamma(d + 7) S, or gamma(d + 1) S and the interpolation's own
  roundings, ``bounds.lerp_error``), for finite float16 and float32 corners of the reference's
  readings of AVERAGE;
- :func:`bound_of`: the bound of an answer from its samples' part (``readings._bound_of``).

``tests/ops/test_roi_align_fused.py`` checks every one against the NumPy code, bit for bit.
"""
from __future__ import annotations

import numpy as np

from ...jit import njit

#: a case of at least so many sample values (regions x samples x channels) takes the compiled loops
FUSED_FROM = 1

_KERNELS = None


def _corner_weights(wyl, wyh, wxl, wxh, r, i, j):
    # the four corners' weights of sample (i, j) of region r, each the product of its axes'
    return wyl[r, i] * wxl[r, j], wyl[r, i] * wxh[r, j], wyh[r, i] * wxl[r, j], wyh[r, i] * wxh[r, j]


_CORNER_WEIGHTS = _corner_weights


def _corner(g, r, i, j, c):
    # a gathered corner's value as a float64, exactly: a float16 corner comes as its bits (int16),
    # read as a half and widened (the processor's own conversion: F16C on x86)
    if g.itemsize == 2:
        return _half(g[r, i, j, c])
    return np.float64(g[r, i, j, c])


def _half(bits):
    # (compiled: :func:`_half_intrinsic`)
    raise NotImplementedError


def _half_intrinsic():
    """A numba intrinsic: an int16's bits as a float16, widened to float64 (exactly, infinities and
    NaNs as NumPy's float16 -> float32 -> float64 gives them)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def half(typingctx, bits):
        def gen(context, builder, sig, args):
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.DoubleType())
        return types.float64(types.int16), gen

    return half


_CORNER = _corner


def _samples(g0, g1, g2, g3, wyl, wyh, wxl, wxh, out):
    n_r, n_y, n_x, n_c = g0.shape
    for r in range(n_r):
        for i in range(n_y):
            for j in range(n_x):
                w0, w1, w2, w3 = _corner_weights(wyl, wyh, wxl, wxh, r, i, j)
                for c in range(n_c):
                    v = _corner(g0, r, i, j, c) * w0 + _corner(g1, r, i, j, c) * w1
                    v = v + _corner(g2, r, i, j, c) * w2
                    out[r, i, j, c] = v + _corner(g3, r, i, j, c) * w3


def _slopes(g0, g1, g2, g3, out):
    n_r, n_y, n_x, n_c = g0.shape
    for r in range(n_r):
        for i in range(n_y):
            for j in range(n_x):
                for c in range(n_c):
                    a = _corner(g0, r, i, j, c)
                    b = _corner(g1, r, i, j, c)
                    cc = _corner(g2, r, i, j, c)
                    d = _corner(g3, r, i, j, c)
                    d0, d1, d2, d3 = abs(b - a), abs(d - cc), abs(cc - a), abs(d - b)
                    m0 = d0 if d0 > d1 else d1
                    m1 = d2 if d2 > d3 else d3
                    out[r, i, j, c] = (m0 if m0 > m1 else m1) * 0.5


def _tolerances(g0, g1, g2, g3, wyl, wyh, wxl, wxh, valid, half_oob, c_err, c_lerp, k_lerp, v_out, err_out):
    n_r, n_y, n_x, n_c = g0.shape
    for r in range(n_r):
        for i in range(n_y):
            for j in range(n_x):
                w0, w1, w2, w3 = _corner_weights(wyl, wyh, wxl, wxh, r, i, j)
                ok = valid[r, i, j]
                for c in range(n_c):
                    a = _corner(g0, r, i, j, c)
                    b = _corner(g1, r, i, j, c)
                    cc = _corner(g2, r, i, j, c)
                    d = _corner(g3, r, i, j, c)
                    t0, t1, t2, t3 = w0 * a, w1 * b, w2 * cc, w3 * d
                    v_out[r, i, j, c] = ((t0 + t1) + t2) + t3
                    s = abs(t0) * 0.5 + abs(t1) * 0.5
                    s = s + abs(t2) * 0.5
                    s = s + abs(t3) * 0.5
                    if not ok:
                        s = half_oob
                    err = c_err * s
                    # the interpolation a + t (b - a): bounds.lerp_error, operation for operation
                    dx = abs(b - a) * wyl[r, i] + abs(d - cc) * wyh[r, i]
                    dy = abs(cc - a) * wxl[r, j] + abs(d - b) * wxh[r, j]
                    q = s * 2.0
                    q = q + dx * wxh[r, j]
                    q = q + dy * wyh[r, i]
                    q = q * k_lerp
                    other = c_lerp * s + (q if ok else 0.0)
                    err_out[r, i, j, c] = err if err > other else other

def _block_sum(v, valid, fill, filled, cy, cx, out):
    # out (R, OH, OW, C), zeros: the sum over each output element's cy x cx samples of v (R, OH cy,
    # OW cx, C), each sample ``fill`` where ``filled`` and it is not ``valid``: what
    # ``v.reshape(R, OH, cy, OW, cx, C).sum(axis=(2, 4))`` gives for C >= 2 (NumPy adds the
    # samples one after another in row-major order onto its identity, +0.0, a channel vector at a
    # time; with one channel it takes another order, so NumPy's code serves that)
    n_r, n_y, n_x, n_c = v.shape
    for r in range(n_r):
        for p in range(n_y // cy):
            for a in range(cy):
                i = p * cy + a
                for q in range(n_x // cx):
                    for b in range(cx):
                        j = q * cx + b
                        if filled and not valid[r, i, j]:
                            for c in range(n_c):
                                out[r, p, q, c] += fill
                        else:
                            for c in range(n_c):
                                out[r, p, q, c] += v[r, i, j, c]


#: 2^(e - 25) for each exponent field e of a float16 (a normal one's value is (1024 + m) times it):
#: read from this table, not raised to a power per element
_HALF_SCALE = np.array([2.0 ** (e - 25) for e in range(32)])


def _magnitude(y, i):
    # |y[i]| as a float64, 0 where it is not finite; a float16 answer comes as its bits (int16): its
    # value, exactly (m 2^(e - 25), a subnormal's with e = 1), without a branch
    if y.itemsize == 2:
        u = np.int64(y[i]) & 0x7FFF
        e = u >> 10
        m = (u & 0x3FF) + (1024 if e != 0 else 0)
        a = m * _HALF_SCALE[max(e, 1)]
        return a if e != 31 else 0.0
    a = abs(np.float64(y[i]))
    return a if a < np.inf else 0.0              # a non-finite answer: no term of its own


_MAGNITUDE = _magnitude


def _bound_loop(y, bound, scale, floor, out):
    for i in range(y.size):
        out[i] = (_magnitude(y, i) * scale + floor) + bound[i]


def _compile():
    """The loops, compiled on first use (and kept on disk by numba beside this file); None where
    numba does not import."""
    global _KERNELS
    if _KERNELS is not None:
        return _KERNELS or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:                      # the NumPy code alone
        _KERNELS = False
        return None
    global _corner_weights, _corner, _half, _magnitude
    try:                                     # compiled (or loaded from numba's cache) here, once
        # the helpers the loops call, bound to their compiled forms before the loops compile: at
        # module level, numba's cache on disk serves later processes (loops defined inside this
        # function that call one another were compiled again in each process)
        _corner_weights = njit(_CORNER_WEIGHTS)
        _half = _half_intrinsic()
        _corner = njit(_CORNER)
        _magnitude = njit(_MAGNITUDE)
        samples, slopes, tolerances, bound_of, block_sum = (njit(f) for f in (_samples, _slopes, _tolerances, _bound_loop,
                                                                                 _block_sum))
        g, w, o = [np.zeros((1, 1, 1, 1), np.float32)] * 4, [np.zeros((1, 1))] * 4, np.empty((1, 1, 1, 1))
        samples(*g, *w, o)
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _KERNELS = False
        return None
    _KERNELS = {"samples": samples, "slopes": slopes, "tolerances": tolerances, "bound_of": bound_of,
                "block_sum": block_sum}
    return _KERNELS


def kernels(work: int):
    """The compiled loops for a case of ``work`` sample values, or None (NumPy's code then)."""
    return _compile() if work >= FUSED_FROM else None


def bound_of(y: np.ndarray, bound: np.ndarray, scale: float, floor: float) -> np.ndarray | None:
    """``readings._bound_of``'s bound of an answer ``y`` (AVERAGE: ``bound`` the samples' part):
    (|y| scale + floor) + bound per element (|y| 0 where y is not finite), in one compiled pass;
    None where the output is small or numba does not import (NumPy's code then)."""
    k = kernels(y.size)
    if k is None or bound.dtype != np.float64 or bound.shape != y.shape:
        return None
    yv = np.ascontiguousarray(y).reshape(-1)
    yv = yv.view(np.int16) if yv.dtype == np.float16 else yv          # no float32 copy of the output
    out = np.empty(y.shape)
    k["bound_of"](yv, np.ascontiguousarray(bound).reshape(-1), scale, floor, out.reshape(-1))
    return out


def weights(ay, ax) -> tuple:
    """(wyl, wyh, wxl, wxh): the axes' weights as contiguous float64 arrays (regions, samples)."""
    return tuple(np.ascontiguousarray(w, dtype=np.float64) for w in (ay.w_lo, ay.w_hi, ax.w_lo, ax.w_hi))
