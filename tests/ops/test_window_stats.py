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
