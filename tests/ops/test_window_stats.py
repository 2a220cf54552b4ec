"""The window statistics of AveragePool (``_sums.stats``) against a loop over every window: the
windows the ONNX text defines, each window's elements taken one by one (global windows, one-signed
data and non-finite values included, where fewer statistics are summed); and the compiled loop
of finite slices (``_stats_fused``) against the NumPy code, bit for bit."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _sums as SUM


def loop_stats(x: np.ndarray, a: O.Attrs) -> dict:
    ax, _ = O.axes(a, x.shape[2:])
    shape = (*x.shape[:2], *(q.out for q in ax))
    out = {k: np.zeros(shape) for k in ("n", "c", "S", "P", "N", "pinf", "ninf", "nan")}
    out["top"], out["bottom"] = np.full(shape, -np.inf), np.full(shape, np.inf)
    for b, ch, *o in itertools.product(*(range(s) for s in shape)):
        at = (b, ch, *o)
        for t in itertools.product(*(range(q.k) for q in ax)):
            coords = [oo * q.s - q.begin + tt * q.d for oo, tt, q in zip(o, t, ax)]
            inside = all(0 <= cc < q.n for cc, q in zip(coords, ax))
            padded = all(-q.begin <= cc < q.n + q.end for cc, q in zip(coords, ax))
            out["c"][at] += inside if not a.count_include_pad else padded
            if not inside:
                continue
            v = float(x[(b, ch, *coords)])
            out["n"][at] += 1
            if np.isnan(v):
                out["nan"][at] += 1
            elif np.isinf(v):
                out["pinf" if v > 0 else "ninf"][at] += 1
            else:
                out["S"][at] += abs(v)
                out["P"][at] += max(v, 0.0)
                out["N"][at] += max(-v, 0.0)
                out["top"][at] = max(out["top"][at], v)
                out["bottom"][at] = min(out["bottom"][at], v)
    return out


CASES = [((1, 2, 5, 6), (5, 6), (0, 0, 0, 0), 0),          # global
         ((2, 3, 7), (7,), (0, 0), 1),                       # global, 1-D
         ((1, 2, 4, 4, 3), (4, 4, 3), (0, 0, 0, 0, 0, 0), 0),  # global, 3-D
         ((1, 2, 6, 5), (3, 2), (1, 0, 1, 1), 1),            # windows with padding
         ((2, 1, 9), (4,), (2, 1), 0),
         ((1, 2, 3), (5,), (4, 4), 1)]                       # padding wider than the input


@pytest.mark.parametrize("data", ["mixed", "positive", "negative", "zeros", "nonfinite", "huge"])
@pytest.mark.parametrize("shape,kernel,pads,inc", CASES)
def test_stats_are_the_windows_loop(shape, kernel, pads, inc, data):
    rng = np.random.default_rng(len(shape) * 7 + len(data))
    x = rng.standard_normal(shape).astype(np.float32) * 3
    x = {"positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros_like(x),
         "huge": x * np.float32(1e38)}.get(data, x)
    if data == "nonfinite":
        x.flat[[0, 3, 5]] = [np.inf, np.nan, -np.inf]
    a = O.Attrs("AveragePool", 19, kernel, (1,) * len(kernel), pads, (1,) * len(kernel), count_include_pad=inc)
    st = SUM.stats(x, a)
    want = loop_stats(x, a)
    for name, arr in want.items():
        got = np.asarray(getattr(st, name))
        assert got.shape == arr.shape, name
        np.testing.assert_allclose(got, arr, rtol=1e-12, atol=0, err_msg=name)


# ---- the compiled loop (``_stats_fused``) against the NumPy code, bit for bit ----------------------

STAT_FIELDS = ("n", "c", "S", "P", "N", "top", "bottom", "pinf", "ninf", "nan")


def _both_stats(x, a, monkeypatch, chunk):
    """(NumPy's Stats, the compiled loop's Stats) of ``x``, slices of ``chunk`` elements."""
    from onnx_dml_bench.ops import _stats_fused as SF
    monkeypatch.setattr(SUM, "_CHUNK", chunk)
    out = []
    for fused in (False, True):
        monkeypatch.setattr(SF, "FUSED_FROM", 0 if fused else 1 << 62)
        out.append(SUM.stats(x, a))
    return out


def _bits(v):
    v = np.asarray(v)
    return v.dtype, v.shape, v.view(f"u{v.itemsize}").tobytes() if v.dtype.kind == "f" else v.tobytes()


@settings(deadline=None, max_examples=150, derandomize=True, database=None)
@given(st.integers(1, 3), st.data())
def test_the_compiled_loop_gives_the_numpy_code_s_bits(nd, data):
    """Windows of every geometry the loop takes (strides, dilations, padding, wider than the input
    too, count_include_pad), float16, float32 and float64 data spread over many binades, of one sign
    or both, with zeros of both signs, in one slice or several: every statistic the same bits, and
    P and N the same arrays (S itself, a zero) where the NumPy code makes them so."""
    from onnx_dml_bench.ops import _stats_fused as SF
    draw = data.draw
    spatial = tuple(draw(st.integers(1, {1: 40, 2: 9, 3: 5}[nd])) for _ in range(nd))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple(draw(st.integers(0, 3)) for _ in range(2 * nd))
    inc = draw(st.integers(0, 1))
    a = O.Attrs("AveragePool", 19, kernel, strides, pads, dil, count_include_pad=inc)
    try:
        ax, _ = O.axes(a, spatial)
    except O.SpecError:
        assume(False)
    assume(all(q.out >= 1 for q in ax) and all(q.out >= q.k for q in ax))
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    sign = draw(st.sampled_from(["both", "positive", "negative", "zeros", "signed-zeros"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 20)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 5)), *spatial)
    span = {np.float16: 6, np.float32: 40, np.float64: 200}[dtype]
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-span, span, shape))
    x = {"positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros(shape),
         # ties of -0.0 and +0.0 in every window: which one a maximum keeps shows
         "signed-zeros": rng.choice([0.0, -0.0, 0.0, -0.0, 1.0, -1.0], shape)}.get(sign, x)
    x.flat[rng.integers(0, x.size, max(1, x.size // 7))] = rng.choice([0.0, -0.0], max(1, x.size // 7))
    x = x.astype(dtype)
    chunk = draw(st.sampled_from([1 << 21, int(np.prod(spatial)) * draw(st.integers(1, 3))]))
    mp = pytest.MonkeyPatch()
    try:
        ref, got = _both_stats(x, a, mp, chunk)
    finally:
        mp.undo()
    assert SF.usable(ax, 1 << 30) is not None            # the loop exists: it was the path taken
    for name in STAT_FIELDS:
        assert _bits(getattr(got, name)) == _bits(getattr(ref, name)), name
    for name in ("P", "N"):
        assert (getattr(got, name) is got.S) == (getattr(ref, name) is ref.S), name


# ---- windows that are one block of the input: ``_stats_fused.block_loop`` --------------------------

def _block_both(x, a, monkeypatch, chunk):
    """(NumPy's Stats, the block loop's Stats) of ``x``, slices of ``chunk`` elements."""
    from onnx_dml_bench.ops import _stats_fused as SF
    monkeypatch.setattr(SUM, "_CHUNK", chunk)
    out = []
    for looped in (False, True):
        monkeypatch.setattr(SF, "block_kernel", SF.block_kernel if looped else (lambda: None))
        out.append(SUM.stats(x, a))
    return out


BLOCK_FIELDS = ("n", "c", "S", "P", "N", "pinf", "ninf", "nan", "walk_lower", "wide_lower")


@settings(deadline=None, max_examples=120, derandomize=True, database=None)
@given(st.integers(1, 3), st.data())
def test_the_block_loop_gives_the_numpy_code_s_bits(nd, data):
    """Block windows (a global window, or one window inside the input, dilated or not) of float16,
    float32 and float64 data over many binades, of one sign or both, zeros of both signs,
    infinities and NaN in some rows, long enough for the walks or not, in one slice or several:
    every statistic and both walks the same bits as the NumPy code, P and N the same arrays (S
    itself, a zero) where it makes them so, and the largest and smallest element the same values
    (a zero's sign free: module text of ``_stats_fused``)."""
    from onnx_dml_bench.ops import _block
    from onnx_dml_bench.ops import _stats_fused as SF
    draw = data.draw
    spatial = tuple(draw(st.integers(1, {1: 3000, 2: 70, 3: 14}[nd])) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    whole = draw(st.booleans())
    kernel = spatial if whole else tuple(draw(st.integers(1, max(1, (n - 1) // d + 1))) for n, d in zip(spatial, dil))
    dil = (1,) * nd if whole else dil
    a = O.Attrs("AveragePool", 19, kernel, spatial, (0,) * 2 * nd, dil, count_include_pad=0)   # one window
    ax, _ = O.axes(a, spatial)
    assert _block.is_block(ax)
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    kind = draw(st.sampled_from(["both", "positive", "negative", "zeros", "signed-zeros", "nonfinite", "grid"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 20)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 6)), *spatial)
    span = {np.float16: 6, np.float32: 40, np.float64: 200}[dtype]
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-span, span, shape))
    x = {"positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros(shape),
         "signed-zeros": rng.choice([0.0, -0.0, 0.0, -0.0, 1.0, -1.0], shape),
         "grid": rng.integers(-512, 512, shape) / 8.0}.get(kind, x)
    x = x.astype(dtype)
    if kind == "nonfinite":
        hits = max(1, x.size // 40)
        x.flat[rng.integers(0, x.size, hits)] = rng.choice(np.array([np.inf, -np.inf, np.nan], dtype), hits)
    chunk = draw(st.sampled_from([1 << 21, int(np.prod(kernel)) * draw(st.integers(1, 3))]))
    mp = pytest.MonkeyPatch()
    try:
        ref, got = _block_both(x, a, mp, chunk)
    finally:
        mp.undo()
    assert SF.block_kernel() is not None                   # the loop exists: it was the path taken
    for name in BLOCK_FIELDS:
        r, g = getattr(ref, name), getattr(got, name)
        assert (r is None) == (g is None), name
        if r is not None:
            assert _bits(g) == _bits(r), name
    for name in ("top", "bottom"):
        r, g = getattr(ref, name), getattr(got, name)
        assert g.dtype == r.dtype and np.array_equal(g, r), name
    for name in ("P", "N"):
        assert (getattr(got, name) is got.S) == (getattr(ref, name) is ref.S), name


@pytest.mark.parametrize("rows,k", [(1, 1), (3, 7), (5, 8), (4, 127), (4, 128), (4, 129), (3, 1000), (5000, 49),
                                    (2, 8191), (2, 8193), (2, 12544), (1, 1 << 20), (1, (1 << 20) + 13)])
def test_pairwise_sum_is_numpy_s(rows, k):
    """``_stats_fused.pairwise4`` (four sums at once) of a row, plus +0.0, is ``np.add.reduce`` of the
    row's float64 terms bit for bit (a row with a non-finite term: of the row with 0.0 there):
    short rows, the block edges (8, 128), rows past NumPy's buffer (8192), many short rows, a
    million terms."""
    from onnx_dml_bench.ops import _stats_fused as SF
    loop = SF.block_kernel()
    if loop is None:
        pytest.skip("numba cannot compile here")
    rng = np.random.default_rng(rows * 31 + k)
    g = (rng.standard_normal((rows, k)) * np.exp2(rng.integers(-30, 30, (rows, k)))).astype(np.float32)
    S, P, N, sq, sc = (np.empty(rows) for _ in range(5))
    top, bottom, counts = np.empty(rows, np.float32), np.empty(rows, np.float32), np.empty((3, rows))
    loop(g, True, S, P, N, top, bottom, counts, sq, sc)
    f = g.astype(np.float64)
    assert _bits(S) == _bits(np.add.reduce(np.abs(f), axis=1))
    assert _bits(P) == _bits(np.add.reduce(np.maximum(f, 0.0), axis=1))
    assert _bits(N) == _bits(np.add.reduce(np.maximum(-f, 0.0), axis=1))
    from onnx_dml_bench.ops import _sum_evaluations as E
    assert _bits(sc) == _bits(E.scan_error(g))
    assert _bits(np.sqrt(sq / 3)) == _bits(E.row_major_walk(g))
    g[:, k // 2] = np.inf                      # a row with a non-finite term: term by term, the same sums
    loop(g, False, S, P, N, top, bottom, counts, sq, sc)
    z = np.where(np.isfinite(g), g, 0).astype(np.float64)
    assert _bits(S) == _bits(np.add.reduce(np.abs(z), axis=1))
    assert (counts[0] == 1).all() and not counts[1:].any()


def test_the_walk_is_at_least_its_row_major_chain_bit_for_bit():
    """``Stats.walk_lower`` (the row-major chain alone) is at most ``Stats.walk`` bit for bit, also
    on windows whose walk is estimated from blocks (``_blocked_walk``), where the chain is added to
    it: data whose blocks' estimate meets the chain exactly (constant) and cancelling data."""
    from onnx_dml_bench.ops import _sum_evaluations as E
    rng = np.random.default_rng(5)
    for window in ((128, 128), (64, 256), (20, 30)):
        k = int(np.prod(window))
        for v in (np.full((2, k), 3.0, np.float32), (rng.integers(-512, 512, (2, k)) / 8).astype(np.float32),
                  np.abs(rng.standard_normal((2, k))).astype(np.float32)):
            assert (E.realistic_walk(v, window) >= E.row_major_walk(v)).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("kind", ["spread", "infinities", "nan", "negative-zeros", "empty", "subnormal"])
def test_largest_finite_is_the_numpy_code_s(dtype, kind, monkeypatch):
    """``_sums.largest_finite`` by the compiled pass (``_stats_fused.largest_loop``) and by NumPy's
    code: the same value, infinities and NaN left out, 0 where no element is finite."""
    from onnx_dml_bench.ops import _stats_fused as SF
    rng = np.random.default_rng(len(kind))
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(70001) * np.exp2(rng.integers(-30, 30, 70001))).astype(dtype)
    if kind == "infinities":
        x[::5] = np.inf
        x[1::5] = -np.inf
    x = {"nan": np.full(9, np.nan, dtype), "negative-zeros": np.full(9, -0.0, dtype), "empty": x[:0],
         "subnormal": (x * np.finfo(dtype).smallest_subnormal).astype(dtype)}.get(kind, x)
    got = SUM.largest_finite(x)
    monkeypatch.setattr(SF, "largest_kernel", lambda: None)
    want = SUM.largest_finite(x)
    assert got == want and (got != 0 or kind in ("nan", "negative-zeros", "empty"))
