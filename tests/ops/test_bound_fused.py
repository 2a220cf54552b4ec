"""AveragePool's summed-wide bound as one compiled loop (``ops/_bound_fused.py``) against the NumPy
code (``_sums._bound``), bit for bit: windows of every kind (global, strided, padded, counting the
padding or not), float16 and float32 data of both signs, one sign, near the largest value and in
the subnormals, with infinities, answers off the reference, and the three ways ``bound_for`` asks
(the whole bound, the floor without the simulated sums, the row-major walks)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnx_dml_bench.registry  # noqa: F401 - the operators (the pooling family's ONNX ops)
from onnx_dml_bench.ops import _bound_fused as BF
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _sums as SUM

pytestmark = pytest.mark.skipif(BF.kernel() is None, reason="numba cannot compile here")


def _bits(a) -> bytes:
    a = np.asarray(a, np.float64)
    return a.shape, a.view(np.uint64).tobytes()


@settings(deadline=None, max_examples=150, derandomize=True, database=None)
@given(st.integers(1, 3), st.data())
def test_the_loop_gives_the_numpy_code_s_bits(nd, data):
    draw = data.draw
    spatial = tuple(draw(st.integers(1, {1: 700, 2: 40, 3: 9}[nd])) for _ in range(nd))
    whole = draw(st.booleans())
    if whole:
        kernel, strides, pads = spatial, (1,) * nd, (0,) * 2 * nd
    else:
        kernel = tuple(draw(st.integers(1, min(n, 20))) for n in spatial)
        strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
        pads = tuple(draw(st.integers(0, k - 1)) for k in kernel) * 2
    inc = draw(st.integers(0, 1))
    dtype = draw(st.sampled_from([np.float16, np.float32]))
    kind = draw(st.sampled_from(["grid", "positive", "negative", "large", "subnormal", "infinite", "normal"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 20)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 5)), *spatial)
    x = rng.integers(-512, 512, shape) / 8.0
    x = {"positive": np.abs(x), "negative": -np.abs(x),
         "large": x * (1e36 if dtype == np.float32 else 1000.0),
         "subnormal": x * (1e-40 if dtype == np.float32 else 1e-7),
         "normal": rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, shape))}.get(kind, x)
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    if kind == "infinite":
        x.flat[rng.integers(0, x.size, max(1, x.size // 30))] = rng.choice(np.array([np.inf, -np.inf], dtype))
    a = O.Attrs("AveragePool", 19, kernel, strides, pads, (1,) * nd, count_include_pad=inc)
    stats = SUM.stats(x, a)
    with np.errstate(all="ignore"):
        ref = ((stats.P - stats.N) / np.where(stats.c > 0, stats.c, 1)).astype(dtype)
        if draw(st.booleans()):          # off the reference: the interval's ends decide, not its centre
            ref = (ref * np.float32(1 + draw(st.sampled_from([1e-4, -3e-3, 0.5])))).astype(dtype)
        if draw(st.booleans()):          # references that are not finite (an overflowed or NaN answer's)
            ref = ref.copy()
            ref.flat[rng.integers(0, ref.size, max(1, ref.size // 5))] = rng.choice(np.array([np.inf, -np.inf, np.nan], dtype))
    asks = [stats]
    if stats.wide is not None:
        asks.append(SUM.with_fields(stats, wide=np.zeros(())))
    if SUM.raw(stats, "walk") is not None:
        asks.append(SUM.with_fields(stats, wide=stats.wide_lower, walk=stats.walk_lower))
    piece = draw(st.sampled_from([SUM._SLICE, 7, 64]))      # the loop over slices of the positions too
    for s in asks:
        with np.errstate(all="ignore"), pytest.MonkeyPatch.context() as mp:
            mp.setattr(SUM, "_SLICE", piece)
            got = SUM._bound_looped(s, ref, dtype)
            want = SUM._bound(s, ref, dtype, SUM.SUMMED_WIDE)
        assert got is not None
        for g, w in zip(got, want):
            assert _bits(g) == _bits(w)


def test_to_half_is_numpy_s_rounding():
    """``to_half`` against float64 -> float16 -> float64: every float16's neighbourhood (ties
    between two of them, a hair either side), the subnormals, the overflow edge, random values."""
    h = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    h = h[np.isfinite(h)].astype(np.float64)
    up = np.nextafter(h, np.inf)
    v = np.concatenate([h, (h[:-1] + np.sort(h)[1:]) / 2, up, np.nextafter(h, -np.inf), -h,
                        [65504.0, 65519.99, 65520.0, 65536.0, 1e300, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 2.0 ** -26],
                        np.random.default_rng(0).standard_normal(100_000) * np.exp2(np.random.default_rng(1).integers(-30, 18, 100_000))])
    want = v.astype(np.float16).astype(np.float64)
    loop = BF.kernel()
    assert loop is not None
    got = np.array([BF.to_half(float(t)) for t in v])
    assert _bits(got) == _bits(want)


def test_the_bound_takes_the_loop_where_it_can(monkeypatch):
    """The summed-wide bound of float16 and float32 data comes from the loop; float64 data and the
    reading summed-in-type from NumPy's code."""
    x = np.random.default_rng(2).standard_normal((1, 2, 9, 9))
    a = O.Attrs("AveragePool", 19, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), count_include_pad=0)
    looped = []
    inner = SUM._bound_looped

    def spy(*args):
        got = inner(*args)
        looped.append(got is not None)
        return got

    monkeypatch.setattr(SUM, "_bound_looped", spy)
    for dtype, reading, want in [(np.float32, SUM.SUMMED_WIDE, [True]), (np.float16, SUM.SUMMED_WIDE, [True]),
                                 (np.float64, SUM.SUMMED_WIDE, [False]), (np.float16, SUM.SUMMED_IN_TYPE, [])]:
        looped.clear()
        xs = x.astype(dtype)
        stats = SUM.stats(xs, a)
        ref = ((stats.P - stats.N) / stats.c).astype(dtype)
        b = SUM.bound(stats, ref, dtype, reading)
        assert looped == want, (dtype, reading)
        assert all(_bits(p) == _bits(q) for p, q in zip(b, SUM._bound(stats, ref, dtype, reading)))


def test_counts_that_vary_over_the_batch_are_read_per_position():
    """Counts that do not repeat over batch x channel alone (here one per batch) are read at every
    position, not at ``position % period``: the NumPy code's bits."""
    x = (np.random.default_rng(3).integers(-512, 512, (2, 3, 6, 6)) / 8).astype(np.float32)
    a = O.Attrs("AveragePool", 19, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), count_include_pad=0)
    stats = SUM.stats(x, a)
    n = np.broadcast_to(np.array([9.0, 4.0]).reshape(2, 1, 1, 1), stats.S.shape)
    stats = SUM.with_fields(stats, n=n, c=n)
    ref = ((stats.P - stats.N) / stats.c).astype(np.float32)
    got = SUM._bound_looped(stats, ref, np.float32)
    assert got is not None
    assert all(_bits(g) == _bits(w) for g, w in zip(got, SUM._bound(stats, ref, np.float32, SUM.SUMMED_WIDE)))


def test_counts_that_never_repeat_are_read_a_slice_at_a_time(monkeypatch):
    """A layer of one row whose windows' counts differ along it (the padding not counted): every
    position its own count, so the loop gets the count terms of each slice of positions in turn
    (not eight arrays of the output's size), with the NumPy code's bits."""
    x = (np.random.default_rng(5).integers(-512, 512, (1, 1, 1, 97)) / 8).astype(np.float32)
    a = O.Attrs("AveragePool", 19, (1, 9), (1, 2), (0, 4, 0, 4), (1, 1), count_include_pad=0)
    stats = SUM.stats(x, a)
    ref = ((stats.P - stats.N) / stats.c).astype(np.float32)
    want = SUM._bound(stats, ref, np.float32, SUM.SUMMED_WIDE)
    calls = []
    gamma = SUM.gamma
    monkeypatch.setattr(SUM, "gamma", lambda d, u: calls.append(np.size(d)) or gamma(d, u))
    monkeypatch.setattr(SUM, "_SLICE", 5)
    got = SUM._bound_looped(stats, ref, np.float32)
    assert got is not None and len(calls) == -(-ref.size // 5) and max(calls) <= 5
    assert all(_bits(g) == _bits(w) for g, w in zip(got, want))
