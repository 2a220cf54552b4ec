"""Comparison of one output against the reference, and the attribution of a case's failure.

Small composable pieces: ``compare_output`` (one output, one implementation vs the reference)
returns the :class:`record.OutputStats` of that output; ``attribute`` turns the EP's and the
CPU's agreement with the reference into a verdict and an attribution. ``verdict.judge`` is the
one place that puts them together.

NaN policy (stated in every result): in 'exact' and 'ulp' comparisons a NaN equals any NaN and
nothing else; +-inf must match exactly (a finite value is never "within ULP" of an infinity).
Exact comparisons are bit for bit otherwise, so -0.0 differs from +0.0 (labelled 'signed-zero').
"""
from __future__ import annotations

import hashlib

import numpy as np

from .dtypes import INT_OF, finite_ulp_distance, ulp_distance
from .jit import njit
from .record import OutputStats, jsonable

NAN_POLICY = ("NaN equals NaN (any payload) and nothing else; infinities must match exactly; "
              "exact comparisons are bit for bit, so -0.0 != +0.0 (labelled signed-zero)")
#: ``nonfinite_ok`` bits: which non-finite answers an open point also allows at a position
NF_POS_INF, NF_NEG_INF, NF_NAN = 1, 2, 4
NF_ANY = NF_POS_INF | NF_NEG_INF | NF_NAN
MAX_FIRST = 10
HEATMAP_MAX = 32


def _heatmap(mask: np.ndarray) -> list[list[int]] | None:
    """Mismatch counts over the last two axes (summed over the others), at most 32x32 cells."""
    if mask.ndim < 2:
        return None
    m = mask.reshape(-1, *mask.shape[-2:]).sum(axis=0)
    h, w = m.shape
    fh, fw = -(-h // HEATMAP_MAX), -(-w // HEATMAP_MAX)
    if fh > 1 or fw > 1:
        ph, pw = (-h) % fh, (-w) % fw
        m = np.pad(m, ((0, ph), (0, pw))).reshape(-(-h // fh), fh, -(-w // fw), fw).sum(axis=(1, 3))
    return m.astype(int).tolist()


def first_positions(mask: np.ndarray, k: int = MAX_FIRST) -> list[tuple[int, ...]]:
    """The multi-indices of the first ``k`` True elements of ``mask`` in C order, found a slice of
    ``_SLICE`` elements at a time (no index array of every True element: an answer wrong
    everywhere would make one of ndim int64 per element)."""
    flat = np.asarray(mask).reshape(-1)
    found: list[int] = []
    for lo in range(0, flat.size, _SLICE):
        hit = np.flatnonzero(flat[lo:lo + _SLICE])
        found.extend(int(i) + lo for i in hit[:k - len(found)])
        if len(found) >= k:
            break
    return [tuple(int(i) for i in np.unravel_index(f, mask.shape)) for f in found]


def _same_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equality of floats, with NaN == NaN."""
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return (a.view(uint) == b.view(uint)) | (np.isnan(a) & np.isnan(b))


def same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Is float array ``a`` the same as ``b`` bit for bit (NaN where it has NaN), as
    :func:`compare_output` reads it; a slice of ``_SLICE`` elements at a time, stopping at the first
    slice that differs."""
    fa, fb = a.reshape(-1), b.reshape(-1)
    for lo in range(0, fa.size, _SLICE):
        if not _same_float(fa[lo:lo + _SLICE], fb[lo:lo + _SLICE]).all():
            return False
    return True


def digest(a: np.ndarray) -> str:
    """A hash of an output: its data type, shape and bytes (outputs of two devices compared bit for bit
    without keeping the tensors)."""
    a = np.ascontiguousarray(a)
    h = hashlib.blake2b(digest_size=10)
    h.update(f"{a.dtype.str}{list(a.shape)}".encode())
    h.update(a.reshape(-1).view(np.uint8).data)
    return h.hexdigest()


def compare_output(name: str, spec, got: np.ndarray | None, ref: np.ndarray, *,
                   others: dict[str, np.ndarray] | None = None, tie_valid: np.ndarray | None = None,
                   bound: np.ndarray | None = None, zero_sign_free: bool = False,
                   nonfinite_ok: np.ndarray | None = None, free: np.ndarray | None = None) -> OutputStats:
    """Compare ``got`` (an implementation's output) with ``ref`` under ``spec`` (ops.base.OutputSpec).

    ``others``: values to show beside each first mismatch (e.g. {"cpu": cpu_output}).
    ``tie_valid``: for 'indices', a boolean array telling, per output position, whether the index
    ``got`` points at an element of that position's window holding the maximum value (computed by
    the operator module), so a different-but-equal maximum is labelled 'tie-order'.
    ``bound``: for kind 'bound', the largest admissible |got - ref| per element, derived by the
    operator from how the result is computed (e.g. the error bound of a summation); or a pair
    (below, above): got - ref must lie in [-below, above] (a bound that one side of the reference
    narrows, e.g. a sum of terms of one sign that cannot shrink below its largest term).
    ``zero_sign_free``: -0.0 and +0.0 count as equal (an open point allows either sign).
    ``nonfinite_ok``: per position, the non-finite answers also allowed there (e.g. an average whose
    sum can overflow the type on the way): a bit mask of :data:`NF_POS_INF`, :data:`NF_NEG_INF`,
    :data:`NF_NAN`, or a boolean (True: any of them).
    ``free``: positions where any answer is allowed (an output position the documents give no value).

    Statistics (over the pairs where neither side is NaN; NaN-vs-number pairs are counted in
    ``nan_mismatches`` and have no distance): ``max_abs`` (inf when an infinity meets a finite
    value or the other infinity), ``max_ulp`` (an infinity is one ULP past the largest finite
    value), ``min_passing_ulp``, and for 'bound' ``bound_ratio`` (largest |got - ref| / bound)."""
    total = int(ref.size)
    res = OutputStats(output=name, kind=spec.kind, match=False, total=total, tolerance_ulp=spec.ulp)
    if got is None:
        res.note = "no output"
        res.labels.append("missing")
        return res
    got = np.asarray(got)
    res.digest = digest(got)
    if got.shape != ref.shape:
        res.note = f"shape {list(got.shape)} != expected {list(ref.shape)}"
        res.labels.append("shape")
        res.mismatches = total
        return res
    if spec.kind == "indices":
        got = got.astype(np.int64, copy=False)
        ok = got == ref.astype(np.int64)
    elif got.dtype != ref.dtype:
        res.note = f"dtype {got.dtype} != expected {ref.dtype}"
        res.labels.append("dtype")
        res.mismatches = total
        return res
    elif ref.dtype.kind == "f":
        ok = _float_stats(res, spec, got, ref, bound, zero_sign_free)
        if nonfinite_ok is not None:
            ok = ok | nonfinite_allowed(nonfinite_ok, got)
        if not ok.all():
            res.labels.extend(_float_labels(got, ref, ~ok))
    else:
        ok = got == ref
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        res.max_abs = float(diff.max()) if total else 0.0
    if free is not None:
        ok = ok | np.asarray(free, dtype=bool)
    bad = ~ok
    res.mismatches = int(bad.sum())
    res.match = res.mismatches == 0
    if spec.kind == "indices" and not res.match:
        if tie_valid is not None and tie_valid[bad].all():
            res.labels.append("tie-order")
            res.note = "every differing index points at an equal maximum inside its window (tie order differs from the DML rule: first element met)"
        else:
            res.labels.append("wrong-index")
    if not res.match:
        for t in first_positions(bad):
            row = {"index": list(t), "got": jsonable(got[t]), "ref": jsonable(ref[t])}
            for k, arr in (others or {}).items():
                if arr is not None and getattr(arr, "shape", None) == ref.shape:
                    row[k] = jsonable(arr[t])
            res.first.append(row)
        res.heatmap = _heatmap(bad)
    return res


def _float_labels(got: np.ndarray, ref: np.ndarray, bad: np.ndarray) -> list[str]:
    """What the wrong elements (``bad``) of a float answer have in common: 'nan' (a NaN where the
    reference has none, or none where it has one), 'signed-zero' (every one a zero against a zero
    of the other sign) or 'wrong-zeros' (every one a zero against a nonzero number), 'inf' (an
    infinity on either side); read a slice of ``_SLICE`` elements at a time."""
    nan = inf = False
    signed = wzero = True
    g, r, m = got.reshape(-1), ref.reshape(-1), bad.reshape(-1)
    seen = False
    for lo in range(0, m.size, _SLICE):
        b = m[lo:lo + _SLICE]
        if not b.any():
            continue
        seen = True
        gs, rs = g[lo:lo + _SLICE][b], r[lo:lo + _SLICE][b]
        nan = nan or bool((np.isnan(gs) ^ np.isnan(rs)).any())
        zero = gs == 0
        signed = signed and bool((zero & (rs == 0)).all())
        wzero = wzero and bool((zero & (rs != 0) & ~np.isnan(rs)).all())
        inf = inf or bool((np.isinf(gs) | np.isinf(rs)).any())
    labels: list[str] = []
    if not seen:
        return labels
    if nan:
        labels.append("nan")
    if signed:
        labels.append("signed-zero")
    elif wzero:
        labels.append("wrong-zeros")
    if inf:
        labels.append("inf")
    return labels


def nonfinite_allowed(mask, got: np.ndarray) -> np.ndarray:
    """Per position: is ``got`` a non-finite answer that ``mask`` (``compare_output``'s
    ``nonfinite_ok``) allows there?"""
    m = np.asarray(mask)
    if m.dtype == bool:
        m = np.where(m, NF_ANY, 0)
    m = np.broadcast_to(m.astype(np.int64), got.shape)
    return (((m & NF_POS_INF) != 0) & np.isposinf(got)) | (((m & NF_NEG_INF) != 0) & np.isneginf(got)) \
        | (((m & NF_NAN) != 0) & np.isnan(got))


#: elements per slice of the per-element work of a float comparison (its temporaries stay in cache)
_SLICE = 1 << 15


def _flat_bound(b, shape) -> np.ndarray | float:
    """A bound operand as a scalar or a flat float64 array of ``shape``'s size."""
    a = np.asarray(b if b is not None else 0.0, dtype=np.float64)
    if a.size == 1:
        return float(a.reshape(-1)[0])
    return np.broadcast_to(a, shape).reshape(-1)


def _float_stats(res: OutputStats, spec, got: np.ndarray, ref: np.ndarray, bound, zero_sign_free: bool) -> np.ndarray:
    """Fill the statistics of a float output; the per-element agreement. The work is done a slice
    of ``_SLICE`` elements at a time (the same values as over the whole arrays at once: every
    statistic is a count, a maximum or an "any")."""
    g, r = got.reshape(-1), ref.reshape(-1)
    ok = np.empty(g.shape, bool)
    below = above = None
    if spec.kind == "bound":
        below, above = bound if isinstance(bound, tuple) else (bound, bound)
        below, above = _flat_bound(below, ref.shape), _flat_bound(above, ref.shape)
    nan_mismatches, max_ulp, max_abs, ratio_max, passing = 0, None, None, None, 0
    unmeasured = equal_not_same = False
    stats = _finite_pass(spec, g, r, below, above, zero_sign_free, ok)
    if stats is not None:
        # every element finite on both sides, many: one compiled pass (``_finite_pass``)
        m_ulp, m_abs, m_ratio, eq_not_same = stats
        res.nan_mismatches = 0
        res.max_ulp, res.max_abs = m_ulp, m_abs
        if spec.kind == "bound":
            res.bound_ratio = float(m_ratio)
        if not eq_not_same:
            res.min_passing_ulp = int(m_ulp)
        return ok.reshape(ref.shape)
    for lo in range(0, max(g.size, 1), _SLICE):
        hi = min(lo + _SLICE, g.size)
        gc, rc = g[lo:hi], r[lo:hi]
        same = _same_float(gc, rc)
        if zero_sign_free:
            same |= (gc == 0) & (rc == 0)
        if same.all():
            # every element the reference's (NaN where it has NaN): distances 0, the ratio 0
            ok[lo:hi] = True
            if not np.isnan(rc).all():
                max_ulp, max_abs = max(max_ulp or 0, 0), max(max_abs or 0.0, 0.0)
            if spec.kind == "bound" and hi > lo:
                ratio_max = 0.0 if ratio_max is None else ratio_max
            continue
        if np.isfinite(gc).all() and np.isfinite(rc).all():
            # every element finite on both sides (most slices): the same statistics in fewer passes
            ok[lo:hi], m_ulp, m_abs, m_ratio, eq_not_same = _finite_slice(spec, gc, rc, same, below, above, lo, hi)
            max_ulp = m_ulp if max_ulp is None else max(max_ulp, m_ulp)
            max_abs = m_abs if max_abs is None else max(max_abs, m_abs)
            if m_ratio is not None:
                ratio_max = m_ratio if ratio_max is None or m_ratio > ratio_max or m_ratio != m_ratio else ratio_max
            equal_not_same |= eq_not_same
            passing = max(passing, m_ulp)
            continue
        nan_g, nan_r = np.isnan(gc), np.isnan(rc)
        measurable = ~(nan_g | nan_r)
        finite = np.isfinite(gc) & np.isfinite(rc)
        nan_mismatches += int(np.count_nonzero(nan_g ^ nan_r))
        ulps = ulp_distance(gc, rc)
        with np.errstate(invalid="ignore", over="ignore"):
            delta = gc.astype(np.float64)
            delta -= rc                                   # got - ref in float64, computed once
            diff = np.where(same, 0.0, np.abs(delta))
        if measurable.any():
            m_ulp, m_abs = int(ulps[measurable].max()), float(diff[measurable].max())
            max_ulp = m_ulp if max_ulp is None else max(max_ulp, m_ulp)
            max_abs = m_abs if max_abs is None else max(max_abs, m_abs)
        unmeasured |= bool((~same & ~finite).any())      # NaN or an infinity where the other differs
        if spec.kind == "ulp":
            ok[lo:hi] = same | (finite & (ulps <= spec.ulp))
        elif spec.kind == "bound":
            b_lo = below[lo:hi] if isinstance(below, np.ndarray) else below
            b_hi = above[lo:hi] if isinstance(above, np.ndarray) else above
            signed = np.where(same | ~finite, 0.0, delta)
            tol = np.where(signed < 0, b_lo, b_hi)
            ok[lo:hi] = same | (finite & (-b_lo <= signed) & (signed <= b_hi))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                # a bound of 0 that an answer misses is missed infinitely many times over, not "0x"
                ratio = np.where(finite & ~same, np.where(tol > 0, diff / np.where(tol > 0, tol, 1.0),
                                                          np.where(diff > 0, np.inf, 0.0)), 0.0)
            if ratio.size:
                m = float(ratio.max())
                ratio_max = m if ratio_max is None or m > ratio_max or m != m else ratio_max
        else:
            ok[lo:hi] = same
        equal_not_same |= bool(((~same) & (gc == rc)).any())
        if ulps.size:
            passing = max(passing, int(np.where(finite & ~same, ulps, 0).max()))
    res.nan_mismatches = nan_mismatches
    res.max_ulp = max_ulp
    res.max_abs = max_abs
    if spec.kind == "bound":
        res.bound_ratio = None if unmeasured else (0.0 if ratio_max is None else ratio_max)
    if not unmeasured and not equal_not_same:
        res.min_passing_ulp = passing
    return ok.reshape(ref.shape)


def _finite_slice(spec, gc: np.ndarray, rc: np.ndarray, same: np.ndarray, below, above, lo: int, hi: int):
    """:func:`_float_stats` of a slice whose elements are all finite on both sides: (agreement,
    largest ULP distance, largest |got - ref|, largest ratio over the bound (None: no bound), an
    element equal to the reference without its bits). The same values as the general path: where
    ``same``, got - ref is a zero (+0.0, or -0.0 for the two zeros an open point lets be equal), so
    its distances and its ratio are 0 and its side of the bound is the upper one, as there; and
    ``same`` holds only equal elements, so one equal without its bits shows as more equal than
    same (``tests/test_compare_slices.py`` checks both paths against one oracle)."""
    ulps = finite_ulp_distance(gc, rc)
    delta = gc.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        delta -= rc                                       # got - ref in float64 (inf past float64's range)
    diff = np.abs(delta)
    m_ulp = int(ulps.max())
    m_abs = float(diff.max())
    ratio = None
    if spec.kind == "ulp":
        ok = same | (ulps <= spec.ulp)
    elif spec.kind == "bound":
        b_lo = below[lo:hi] if isinstance(below, np.ndarray) else below
        b_hi = above[lo:hi] if isinstance(above, np.ndarray) else above
        ok = (-b_lo <= delta) & (delta <= b_hi)
        ok |= same
        tol = np.where(delta < 0, b_lo, b_hi)
        pos = tol > 0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q = diff / np.where(pos, tol, 1.0)
            if not pos.all():
                # a bound of 0 (or NaN) that an answer misses is missed infinitely many times over
                q = np.where(pos, q, np.where(diff > 0, np.inf, 0.0))
        ratio = float(q.max())
    else:
        ok = same.copy()
    eq_not_same = int(np.count_nonzero(gc == rc)) > int(np.count_nonzero(same))
    return ok, m_ulp, m_abs, ratio, eq_not_same


#: outputs of at least so many elements take the compiled pass (where every element is finite on
#: both sides)
LOOP_FROM = 1 << 16
_LOOPS = None


def _finite_pass(spec, g: np.ndarray, r: np.ndarray, below, above, zero_sign_free: bool, ok: np.ndarray):
    """:func:`_float_stats`' compiled pass (numba) for ``g`` against ``r`` where they are long:
    (largest ULP distance, largest |got - ref|, largest ratio over the bound, an element equal to
    the reference without its bits), ``ok`` filled; None where an element is not finite on either
    side (the pass notices it on the way: the slices' path then), or where numba is missing. Per
    element the values of :func:`_finite_slice`: the ULP distance of the bit patterns in float
    order (as ``dtypes.ulp_distance``), got - ref in float64, the side of the bound it falls on and
    its ratio over it (an answer missing a bound of 0 or NaN: inf; a NaN ratio, inf over inf, kept
    as ``max`` keeps it); the statistics their maxima, the same values
    (``tests/test_compare_slices.py`` checks the two against one oracle). The loops carry no branch
    per element (the maxima of non-negative floats taken on their bits), so the compiler makes
    them vector code."""
    global _LOOPS
    if g.size < LOOP_FROM or g.dtype != r.dtype or g.dtype.kind != "f":
        return None
    if _LOOPS is None:
        try:
            import numba  # noqa: F401 - where it does not import: NumPy's path
            _LOOPS = _compile_loops()
        except Exception:  # noqa: BLE001 - no numba, or one that cannot compile or cache here: NumPy's path
            _LOOPS = False
    if _LOOPS is False:
        return None
    it = INT_OF[g.dtype.itemsize]
    gb, rb = g.view(it), r.view(it)
    # float16 values are read from their bits (numba has no float16; no float32 copy of the output)
    gv, rv = (gb, rb) if g.dtype == np.float16 else (g, r)
    head = (gv, rv, gb, rb, int(np.iinfo(it).min), _EXPONENT[g.dtype.itemsize], bool(zero_sign_free),
            ok.view(np.uint8))
    if spec.kind != "bound":
        out = _LOOPS[0](*head, spec.kind == "ulp", int(spec.ulp or 0))
    else:
        # each side a flat float64 array of the output's size (``_flat_bound``'s) or one number
        out = _LOOPS[1](*head, *(b if isinstance(b, np.ndarray) else float(b) for b in (below, above)))
    m_ulp, m_abs, m_ratio, eq_not_same, nonfinite = out
    if nonfinite:
        return None
    return int(m_ulp), float(m_abs), float(m_ratio), bool(eq_not_same)


#: a float's exponent field, by its size in bytes (all ones: an infinity or NaN)
_EXPONENT = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}

#: the compiled loops' helpers, bound to their compiled forms by ``_compile_loops`` before the loops
#: compile (at module level, numba's cache on disk serves later processes; loops defined inside a
#: function that call one another were compiled again in each process)
_as_bits = _as_float = None


def _finite_half(u) -> float:
    """The value of the finite float16 whose bits are ``u`` (an int16), exactly, without a branch
    (an infinity's or NaN's bits give a finite number: the loops notice those elements apart)."""
    u = np.int64(u) & 0xFFFF
    e = (u >> 10) & 0x1F
    m = (u & 0x3FF) + (1024 if e != 0 else 0)
    v = m * _as_float((max(e, 1) + (1023 - 25)) << 52)          # m 2^(e - 25): exact
    return -v if u & 0x8000 else v


def _pair_value(v, i) -> float:
    if v.itemsize == 2:
        return _finite_half(v[i])
    return np.float64(v[i])


def _pair(gv, rv, gb, rb, lowest, exponent, zero_free, i):
    """Per element: its bits the reference's (or both zeros, where their sign is free), equal
    without that, its ULP distance (uint64), got - ref in float64, not finite on either side."""
    a = np.int64(gb[i])
    b = np.int64(rb[i])
    x = _pair_value(gv, i)
    y = _pair_value(rv, i)
    same = (a == b) | (zero_free & (x == 0.0) & (y == 0.0))
    oa = a if a >= 0 else lowest - a
    ob = b if b >= 0 else lowest - b
    ua, ub = np.uint64(oa), np.uint64(ob)
    dist = ua - ub if oa >= ob else ub - ua                # exact below 2^64 (float64's whole range)
    nonfinite = ((a & exponent) == exponent) | ((b & exponent) == exponent)
    return same, (not same) & (x == y), dist, x - y, nonfinite


def _ratio_bits(diff, tol):
    """|got - ref| over the bound on its side (a bound of 0 or NaN missed: inf), as the bits of a
    non-negative float (a NaN's the largest), so that their maximum is an integer one."""
    q = diff / tol if tol > 0 else (np.inf if diff > 0 else 0.0)
    return _as_bits(q) & np.int64(0x7FFFFFFFFFFFFFFF)


def _loop_ulp(gv, rv, gb, rb, lowest, exponent, zero_free, ok, use_tol, ulp_tol):
    m_ulp, m_abs, eq, bad = np.uint64(0), np.int64(0), np.uint8(0), np.uint8(0)
    tol_u = np.uint64(ulp_tol)
    for i in range(gv.size):
        same, equal, dist, delta, nonfinite = _pair(gv, rv, gb, rb, lowest, exponent, zero_free, i)
        eq |= np.uint8(equal)
        bad |= np.uint8(nonfinite)
        m_ulp = max(m_ulp, dist)
        m_abs = max(m_abs, _as_bits(abs(delta)))
        ok[i] = np.uint8(same | (use_tol & (dist <= tol_u)))
    return m_ulp, _as_float(m_abs), 0.0, eq != 0, bad != 0


def _bound_at(b, i) -> float:
    # a bound's value at position i: an array's element, or the one number for every position (the
    # loop is compiled for each kind apart, each reading its bounds as contiguous memory or none)
    if isinstance(b, float):
        return b
    return b[i]


def _loop_bound(gv, rv, gb, rb, lowest, exponent, zero_free, ok, below, above):
    m_ulp, m_abs, m_ratio, eq, bad = np.uint64(0), np.int64(0), np.int64(0), np.uint8(0), np.uint8(0)
    for i in range(gv.size):
        same, equal, dist, delta, nonfinite = _pair(gv, rv, gb, rb, lowest, exponent, zero_free, i)
        eq |= np.uint8(equal)
        bad |= np.uint8(nonfinite)
        m_ulp = max(m_ulp, dist)
        diff = abs(delta)
        m_abs = max(m_abs, _as_bits(diff))
        bl, bh = _bound_at(below, i), _bound_at(above, i)
        ok[i] = np.uint8(same | ((-bl <= delta) & (delta <= bh)))
        m_ratio = max(m_ratio, _ratio_bits(diff, bl if delta < 0 else bh))
    return m_ulp, _as_float(m_abs), _as_float(m_ratio), eq != 0, bad != 0


_HELPERS = {"_finite_half": _finite_half, "_pair_value": _pair_value, "_pair": _pair, "_ratio_bits": _ratio_bits,
            "_bound_at": _bound_at}


def _bitcasts():
    """numba intrinsics: a float64's bits as an int64, and back."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def as_bits(typingctx, x):
        return types.int64(types.float64), lambda context, builder, sig, args: builder.bitcast(args[0], ir.IntType(64))

    @intrinsic
    def as_float(typingctx, x):
        return types.float64(types.int64), lambda context, builder, sig, args: builder.bitcast(args[0], ir.DoubleType())

    return as_bits, as_float


def _compile_loops():
    """(ulp or exact, bound): the compiled loops (the first run once here: compiled, or loaded from
    numba's cache)."""
    global _as_bits, _as_float
    _as_bits, _as_float = _bitcasts()
    for name, f in _HELPERS.items():
        globals()[name] = njit(f)
    loops = (njit(_loop_ulp), njit(_loop_bound))
    z = np.zeros(1)
    loops[0](z, z, z.view(np.int64), z.view(np.int64), -2 ** 63, _EXPONENT[8], False, np.empty(1, np.uint8), True, 0)
    return loops


#: a refined bound computes its exact values at most at this share of the positions (beyond: all of them)
REFINE_SHARE = 0.25


def _ratios(diff: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """|got - ref| / bound as :func:`_float_stats` writes it (a bound of 0 missed: inf)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(tol > 0, diff / np.where(tol > 0, tol, 1.0), np.where(diff > 0, np.inf, 0.0))


def _owned(b, shape) -> np.ndarray:
    """A bound operand as a flat float64 array of ``shape``'s size that may be written: ``b`` itself
    where it is one (a bound just computed), else a copy."""
    a = np.asarray(b)
    if a.dtype == np.float64 and a.shape == tuple(shape) and a.flags.writeable and a.flags.c_contiguous:
        return a.reshape(-1)
    return np.array(np.broadcast_to(np.asarray(b, np.float64), shape)).reshape(-1)


def refined_bound(lower, exact_at, got: np.ndarray, ref: np.ndarray):
    """A bound (a pair (below, above)) that gives :func:`compare_output` the same statistics for
    ``got`` as the exact bound, from a bound ``lower`` below it everywhere (a pair too; its arrays
    are written over), computing the exact one (``exact_at(flat positions)`` -> its pair there)
    only where it can change a statistic; None where that would be more than ``REFINE_SHARE`` of
    the positions (then compute the exact bound whole).

    Elsewhere it is ``lower``. The exact bound is computed where ``got`` lies outside ``lower``
    (whether it agrees there is the exact bound's to say), then at the other positions in decreasing
    order of their ratio over ``lower`` (|got - ref| over the bound on its side), in blocks, until the
    next such ratio is below the largest ratio over the exact bound found so far, R. A ratio over the
    exact bound is at most the ratio over ``lower`` (a division is monotone), so every position left
    is a finite pair within ``lower`` (so within the exact bound) whose ratio over the exact bound
    is below R, or 0; or a pair with a non-finite side, where no bound is read. So every agreement
    and the largest ratio are the exact bound's. Of use where the exact bound costs much per
    position beyond ``lower`` (a simulated term) and answers lie well within it. The positions are
    read a slice of ``_SLICE`` at a time (no temporaries of the output's size)."""
    g = np.asarray(got).reshape(-1)
    r = np.asarray(ref).reshape(-1)
    if g.size != r.size or g.dtype != r.dtype or g.dtype.kind != "f":
        return None
    lo_b, hi_b = lower if isinstance(lower, tuple) else (lower, lower)
    below = _owned(lo_b, np.shape(ref))
    above = below.copy() if hi_b is lo_b else _owned(hi_b, np.shape(ref))

    def measured(sl):
        """(|got - ref| in float64 as _float_stats has it, got < ref, both finite) of positions ``sl``."""
        delta = g[sl].astype(np.float64)
        delta -= r[sl]
        finite = np.isfinite(g[sl]) & np.isfinite(r[sl])
        return np.abs(delta), delta < 0, finite

    firsts, rests, ratios = [], [], []
    limit = REFINE_SHARE * max(1, g.size)
    count = 0
    with np.errstate(invalid="ignore", over="ignore"):
        for lo in range(0, g.size, _SLICE):
            sl = slice(lo, min(lo + _SLICE, g.size))
            diff, neg, finite = measured(sl)
            tol = np.where(neg, below[sl], above[sl])
            rl = _ratios(diff, tol)
            outside = finite & ~(diff <= tol)                # outside ``lower`` (NaN bounds too)
            count += int(np.count_nonzero(outside))
            if count > limit:
                return None
            firsts.append(np.flatnonzero(outside) + lo)
            idx = np.flatnonzero(finite & ~outside & (rl > 0))
            rests.append(idx + lo)
            ratios.append(rl[idx])
    first = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    rest = np.concatenate(rests) if rests else np.zeros(0, np.int64)
    r_rest = np.concatenate(ratios) if ratios else np.zeros(0)
    order = np.argsort(-r_rest, kind="stable")
    rest, r_rest = rest[order], r_rest[order]
    found = -np.inf

    def exact(idx):
        nonlocal found
        if idx.size:
            below[idx], above[idx] = exact_at(idx)
            diff, neg, _ = measured(idx)
            with np.errstate(invalid="ignore", over="ignore"):
                m = float(_ratios(diff, np.where(neg, below[idx], above[idx])).max())
            found = max(found, m) if m == m else np.inf

    exact(first)
    done, step = 0, 8
    while done < rest.size and not (r_rest[done] < found):
        take = rest[done:done + step]
        count += take.size
        if count > limit:
            return None
        exact(take)
        done += take.size
        step *= 2
    return below.reshape(np.shape(ref)), above.reshape(np.shape(ref))


def outputs_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Do two implementations give the same outputs (bitwise, NaN == NaN)?"""
    if a is None or b is None or set(a) != set(b):
        return False
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "f":
            if not _same_float(x, y).all():
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def outputs_differ(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, int]:
    """Output name -> the number of elements that differ between two runs' outputs (bitwise, NaN ==
    NaN; every element where shapes or types differ, or the output is on one side only); outputs
    that are equal are left out."""
    out = {}
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            out[k] = int(np.asarray(a.get(k, b.get(k))).size)
            continue
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.shape != y.shape or x.dtype != y.dtype:
            out[k] = int(max(x.size, y.size))
            continue
        same = _same_float(x, y) if x.dtype.kind == "f" else (x == y)
        n = int(same.size - np.count_nonzero(same))
        if n:
            out[k] = n
    return out


def attribute(ep_ok: bool, cpu_ok: bool | None, ep_equals_cpu: bool, open_points: tuple[str, ...],
              ep_is_cpu: bool) -> tuple[str, str | None]:
    """(verdict, attribution) from the EP's and the CPU's agreement with the reference (or with
    an allowed behaviour of an open point the case touches).

    A PASS of the EP whose CPU side is wrong is attributed CPU_WRONG (the CPU EP's divergence is a
    finding, whatever the EP's verdict). cpu_ok None: the CPU EP gave no answer. With the CPU EP
    under test there is no second implementation: a failure is the EP's. REFERENCE_DISPUTED: two
    implementations agree bit for bit on an answer outside every allowed behaviour of an open
    point, or outside the answer of a rule, that concerns a failing output (``open_points``: those
    points and rules; the allowed set may be incomplete); still a FAIL."""
    if ep_ok:
        return "PASS", "CPU_WRONG" if cpu_ok is False else None
    if ep_is_cpu:
        return "FAIL", "EP_WRONG"
    if cpu_ok is None or cpu_ok:
        return "FAIL", "EP_WRONG"
    if ep_equals_cpu and open_points:
        return "FAIL", "REFERENCE_DISPUTED"
    return "FAIL", "BOTH_WRONG"


#: what each label of :func:`compare_output` says of an output (the report's legend)
LABEL_TEXT = {
    "nan": "NaN on one side only: a NaN against a number (no ULP distance is defined there).",
    "inf": "An infinity against a finite value, or against the other infinity.",
    "signed-zero": "Every differing element is a zero of the other sign (-0.0 against +0.0).",
    "wrong-zeros": "Every differing element is a zero where the reference is a non-zero number.",
    "tie-order": "Every differing index points at an equal maximum inside its window: ties resolved in another "
                 "order than the DirectML rule (the first element met).",
    "wrong-index": "An index that points at no maximum of its window.",
    "shape": "The output has another shape than expected.",
    "dtype": "The output has another data type than expected.",
    "missing": "The side gave no such output.",
    "divisor-overflow": "Every element outside the allowed answers is a zero (or NaN) of a window whose element "
                        "count rounds to infinity in the data type (float16: 65,520 elements or more; its largest "
                        "finite value is 65,504): the sum divided by the count taken in the output's type is zero "
                        "(NaN where the sum overflowed too), where the window's average is a number. The count "
                        "must be taken in a wider type (float32, or an integer) before the division.",
    "in-type-running-sum": "Every element outside the allowed answers lies where a running sum in the data type "
                           "(float16: each addition rounded to float16, one after another over the whole window) can "
                           "land at worst, and no sound reduction does; the window's terms do not stall such a sum "
                           "(they cancel, or the answer did not lose magnitude), so this says only that an "
                           "accumulator in the data type is not ruled out: on a long window that worst case holds "
                           "almost any answer near the average, a row missing or a window shifted too. The field "
                           "fixed float16 accumulators as a correctness bug (MIOpen #2109 and #2160, candle PR "
                           "#3719, cubek PR #639, ONNX Runtime PR #19868: WebGPU Reduce* accumulate in float32).",
    "stalled-accumulator": "Every element outside the allowed answers lies where a running sum in the data type "
                           "(float16: each addition rounded to float16, one after another over the whole window) "
                           "lands once it has stalled, and no sound reduction does: once the sum's step exceeds the "
                           "terms it adds, it stops moving (a float16 mean of 3.0 over 64x64 comes out 2.0), so "
                           "the answer lies nearer zero than the average, on a window whose sum passes that point "
                           "(its terms do not cancel). The DirectML pages and "
                           "the ONNX text leave the precision of the sum open (open point sum-precision), not that "
                           "the answer is the window's average, and Direct3D leaves float16 arithmetic its own "
                           "rounding, not a sum that stops: the field fixed this as a correctness bug (MIOpen #2109 "
                           "and #2160, candle PR #3719, cubek PR #639, ONNX Runtime PR #19868: WebGPU Reduce* "
                           "accumulate in float32).",
}
