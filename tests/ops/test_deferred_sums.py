"""AveragePool's simulated evaluations computed where they are read: the float16 in-type ones
(``sim``) only when a bound of reading summed-in-type is asked for, the float32 ones of long windows
(``wide``) at the positions where they can change the comparison of an answer; the same values
and the same statistics of every comparison as when everything is computed up front."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_dml_bench import compare as C
from onnx_dml_bench import registry  # noqa: F401  (the pooling family)
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _sum_evaluations as E
from onnx_dml_bench.ops import _sums as SUM
from onnx_dml_bench.ops.base import OutputSpec

GEOMETRIES = [
    # kernel, strides, pads (begins, ends), dilations, spatial
    ((16, 16), (1, 1), (0, 0, 0, 0), (1, 1), (20, 18)),
    ((17, 16), (3, 2), (5, 1, 2, 6), (1, 1), (30, 29)),
    ((9, 30), (2, 1), (0, 4, 3, 0), (2, 1), (25, 40)),
    ((300,), (7,), (10, 3), (1,), (320,)),
    ((7, 7, 6), (1, 1, 2), (1, 0, 2, 3, 1, 0), (1, 1, 1), (9, 10, 8)),
    ((24, 24), (1, 1), (0, 0, 0, 0), (1, 1), (24, 24)),            # one block window (a global average)
]


def _attrs(kernel, strides, pads, dil, count_include_pad=0):
    return O.Attrs(op="AveragePool", opset=19, kernel=kernel, strides=strides, pads=pads, dilations=dil,
                   count_include_pad=count_include_pad)


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("geo", GEOMETRIES)
def test_wide_error_at_positions_is_the_whole_ones(geo, dtype):
    """``simulated_wide_error_at`` gives the bits of ``simulated_wide_error`` at every position
    asked, in any order and with repeats, padding and dilation included."""
    kernel, strides, pads, dil, spatial = geo
    x = _data((2, 3, *spatial), dtype, len(kernel))
    a = _attrs(kernel, strides, pads, dil)
    ax, _ = O.axes(a, x.shape[2:])
    st_ = SUM.stats(x, a)
    c = np.asarray(SUM.raw(st_, "c"), np.float64)
    c1 = c.reshape(-1)[: int(np.prod([q.out for q in ax]))] if c.ndim else c
    whole = E.simulated_wide_error(x, ax, c1)
    rng = np.random.default_rng(1)
    at = rng.integers(0, whole.size, 40)
    got = E.simulated_wide_error_at(x, ax, c1, at)
    assert np.array_equal(got, whole[at]) and np.isfinite(got).all()
    # the statistic's own deferred value, position by position then whole
    wide = SUM.raw(st_, "wide")
    assert isinstance(wide, SUM.Deferred) and not wide.ready
    assert np.array_equal(wide.at(at), whole[at])
    assert not wide.ready                         # still not computed whole
    assert np.array_equal(st_.wide.reshape(-1), whole)


def test_too_large_to_simulate_stays_the_worst_case(monkeypatch):
    """Where a slice is too large to simulate, every position is +inf, at some positions or whole."""
    monkeypatch.setattr(E, "_SIM_MAX", 1000)
    x = _data((1, 2, 40, 40), np.float32, 3)
    a = _attrs((20, 20), (5, 5), (0, 0, 0, 0), (1, 1))
    ax, _ = O.axes(a, x.shape[2:])
    assert np.isinf(E.simulated_wide_error_at(x, ax, np.float64(400), np.arange(5))).all()
    assert np.isinf(E.simulated_wide_error(x, ax, np.float64(400))).all()


def test_float16_simulations_wait_until_read():
    """A float16 layer's statistics hold both simulations uncomputed; the reference's bound reads
    neither where it gets an answer to judge, the summed-in-type bound computes ``sim``."""
    x = _data((1, 4, 20, 20), np.float16, 5)
    a = _attrs((16, 16), (2, 2), (0, 0, 0, 0), (1, 1))
    st_ = SUM.stats(x, a)
    assert SUM.pending(st_, "sim") and SUM.pending(st_, "wide")
    ref = np.zeros(np.shape(SUM.raw(st_, "S")), np.float16)
    ref[...] = ((st_.P - st_.N) / st_.c).astype(np.float16)
    got = ref.copy()
    got.reshape(-1)[::3] = np.nextafter(got.reshape(-1)[::3], np.float16(np.inf))
    SUM.bound_for(st_, ref, got, np.float16, C.refined_bound)
    assert SUM.pending(st_, "sim")
    SUM.bound(st_, ref, np.float16, SUM.SUMMED_IN_TYPE)
    assert not SUM.pending(st_, "sim")


def _stats_fields(o) -> dict:
    return dataclasses.asdict(o)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("geo", GEOMETRIES)
@pytest.mark.parametrize("noise", [0.0, 0.3, 1.0, 3.0, 40.0])
def test_bound_for_an_answer_compares_as_the_whole_bound(geo, dtype, noise):
    """The bound ``bound_for`` gives an answer (simulated sums at a few positions) and the whole
    bound give the same statistics of that answer: agreements, the largest ratio, the first
    mismatches. Answers: the reference moved by ``noise`` times each position's floor-only bound
    (mostly passing, at 3 and 40 times some failing), some positions left equal, one NaN."""
    kernel, strides, pads, dil, spatial = geo
    x = _data((2, 3, *spatial), dtype, 11)
    a = _attrs(kernel, strides, pads, dil, count_include_pad=1)
    fresh = SUM.stats(x, a)
    ref = ((fresh.P - fresh.N) / fresh.c).astype(dtype)
    whole = SUM.bound(SUM.stats(x, a), ref, dtype, SUM.SUMMED_WIDE)
    floor_lo, floor_hi = SUM.bound(SUM.with_fields(fresh, wide=np.zeros(())), ref, dtype, SUM.SUMMED_WIDE)
    # what the refinement rests on: the floor's bound is below the whole one everywhere
    assert (floor_lo <= whole[0]).all() and (floor_hi <= whole[1]).all()
    if dtype == np.float32:      # (float16: the rounding to the type's values often hides the difference)
        assert (floor_lo < whole[0]).any() or (floor_hi < whole[1]).any()
    rng = np.random.default_rng(int(noise * 10) + len(kernel))
    sign = rng.choice([-1.0, 1.0], ref.shape)
    step = np.where(sign < 0, floor_lo, floor_hi) * noise * rng.random(ref.shape)
    got = (ref.astype(np.float64) + sign * step).astype(dtype)
    keep = rng.random(ref.shape) < 0.3
    got[keep] = ref[keep]
    got.reshape(-1)[0] = np.nan
    calls = []
    st_ = SUM.stats(x, a)
    orig = C.refined_bound

    def spy(lower, exact_at, g, r):
        out = orig(lower, lambda idx: (calls.append(idx.size), exact_at(idx))[1], g, r)
        calls.append("whole" if out is None else "refined")
        return out

    mine = SUM.bound_for(st_, ref, got, dtype, spy)
    spec = OutputSpec("bound")
    want = C.compare_output("Y", spec, got, ref, bound=whole)
    have = C.compare_output("Y", spec, got, ref, bound=mine)
    assert _stats_fields(want) == _stats_fields(have)
    if noise <= 1.0 and ref.size >= 200:       # a passing answer: a few positions simulated
        assert calls[-1] == "refined", calls


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_refined_bound_keeps_every_statistic(data):
    """Over arbitrary bounds lower <= exact (zeros, infinities in the exact one) and answers
    with NaN, infinities, equal elements and errors on every scale: the statistics of
    ``compare_output`` with the refined bound are those with the exact one, each position is asked
    of the exact bound once at most, and the lower bound stands where it was not asked."""
    n = data.draw(st.integers(1, 200))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(n).astype(np.float32)
    scale = data.draw(st.sampled_from([0.0, 1e-8, 1e-6, 1e-4, 1.0]))
    got = (ref + rng.standard_normal(n) * scale).astype(np.float32)
    m = rng.random(n) < data.draw(st.sampled_from([0.0, 0.5, 0.9]))
    got[m] = ref[m]
    for v in data.draw(st.lists(st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]), max_size=3)):
        got[rng.integers(0, n)] = v
    if data.draw(st.booleans()):
        ref[rng.integers(0, n)] = np.nan
    lower = np.abs(rng.standard_normal((2, n))) * 1e-6 * (rng.random((2, n)) > 0.05)
    exact = lower * (1 + rng.random((2, n)) * data.draw(st.sampled_from([0.0, 1.0, 10.0, 50.0])))
    if data.draw(st.booleans()):
        exact[:, rng.random(n) < 0.1] = np.inf
    if data.draw(st.booleans()):                # answers right at a bound
        k = rng.random(n) < 0.3
        got[k] = (ref.astype(np.float64) + exact[1])[k].astype(np.float32)
    asked = np.zeros(n, bool)

    def exact_at(idx):
        assert not asked[idx].any()            # each position asked once
        asked[idx] = True
        return exact[0][idx], exact[1][idx]

    b = C.refined_bound((lower[0].copy(), lower[1].copy()), exact_at, got, ref)
    if b is None:
        return
    spec = OutputSpec("bound")
    want = C.compare_output("Y", spec, got, ref, bound=(exact[0], exact[1]))
    have = C.compare_output("Y", spec, got, ref, bound=b)
    assert _stats_fields(want) == _stats_fields(have)
    # elsewhere the lower bound is handed over as it is
    assert np.array_equal(np.where(asked, exact[0], lower[0]), b[0], equal_nan=True)


def test_the_refinement_computes_few_positions_of_a_passing_answer():
    """A float32 answer well inside the bound (a CPU EP's) needs the simulation at a few of its
    thousands of positions, not all: the point of it."""
    x = _data((4, 8, 40, 40), np.float32, 2)
    a = _attrs((16, 16), (1, 1), (0, 0, 0, 0), (1, 1))
    fresh = SUM.stats(x, a)
    ref = ((fresh.P - fresh.N) / fresh.c).astype(np.float32)
    lo, hi = SUM.bound(SUM.with_fields(fresh, wide=np.zeros(())), ref, np.float32, SUM.SUMMED_WIDE)
    rng = np.random.default_rng(0)
    got = (ref + rng.uniform(-0.5, 0.5, ref.shape) * np.minimum(lo, hi)).astype(np.float32)
    st_ = SUM.stats(x, a)
    SUM.bound_for(st_, ref, got, np.float32, C.refined_bound)
    wide = SUM.raw(st_, "wide")
    assert not wide.ready and 0 < int(wide._done.sum()) < ref.size // 10


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("scale", [1.0, 100.0, 2000.0, 30000.0, 1e30, 3e38])
def test_may_overflow_is_the_per_position_answer(dtype, scale):
    """``may_overflow`` answers what ``overflow``'s pass over every position answers, for each
    reading, on data from far below to past the type's largest value, one-signed and mixed."""
    rng = np.random.default_rng(int(np.log2(scale)))
    fmax = float(np.finfo(dtype).max)
    for kernel, spatial in (((3, 3), (9, 9)), ((16, 16), (16, 16)), ((2, 40), (4, 80))):
        x = np.clip(rng.standard_normal((1, 3, *spatial)) * scale, -fmax, fmax)
        for data in (x, np.abs(x), -np.abs(x)):
            a = _attrs(kernel, kernel, (0,) * 4, (1, 1))
            st_ = SUM.stats(data.astype(dtype), a)
            for r in SUM.readings(dtype):
                assert SUM.may_overflow(st_, dtype, r) == bool(SUM.overflow(st_, dtype, r)[1].any()), (kernel, r)


def test_the_largest_ratio_may_sit_far_down_the_lower_order():
    """Many positions lead the order of ratios over the lower bound while their exact ratios are
    tiny; the largest exact ratio sits behind them: the refinement goes on, block after block, until
    it has passed every position that could still hold it."""
    n = 400
    ref = np.zeros(n, np.float32)
    got = np.zeros(n, np.float32)
    lower = np.full(n, 1.0)
    exact = np.full(n, 1.0)
    got[:50], exact[:50] = 1.0, 100.0                 # ratio 1 over lower, 0.01 exact
    got[399], lower[399], exact[399] = 0.5, 0.55, 0.6  # ratio 0.91 over lower, 0.83 exact: the largest
    b = C.refined_bound(lower, lambda idx: (exact[idx], exact[idx]), got, ref)
    spec = OutputSpec("bound")
    want = C.compare_output("Y", spec, got, ref, bound=exact)
    have = C.compare_output("Y", spec, got, ref, bound=b)
    assert want.bound_ratio == have.bound_ratio == pytest.approx(0.5 / 0.6)
