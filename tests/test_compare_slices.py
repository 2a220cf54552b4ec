"""The float comparison done a slice at a time gives what one pass over the whole arrays gives:
an oracle written out here (the straightforward whole-array statistics) against
``compare._float_stats`` with slices of a few elements, on arrays with NaN, infinities, signed
zeros, subnormals and bounds of every form; slices all finite take a shorter path
(``compare._finite_slice``), or, long ones, a compiled pass (``compare._finite_pass``), each
checked on finite data with zeros of both signs, subnormals and the largest values (whose
difference passes float64's range for float64 data)."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_dml_bench import compare
from onnx_dml_bench.dtypes import ulp_distance
from onnx_dml_bench.ops.base import OutputSpec
from onnx_dml_bench.record import OutputStats


def _oracle(spec, got, ref, bound, zero_sign_free):
    same = compare._same_float(got, ref)
    if zero_sign_free:
        same |= (got == 0) & (ref == 0)
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    measurable = ~(nan_g | nan_r)
    finite = np.isfinite(got) & np.isfinite(ref)
    out = {"nan_mismatches": int((nan_g ^ nan_r).sum())}
    ulps = ulp_distance(got, ref)
    out["max_ulp"] = int(ulps[measurable].max()) if measurable.any() else None
    with np.errstate(invalid="ignore", over="ignore"):
        delta = got.astype(np.float64) - ref
        diff = np.where(same, 0.0, np.abs(delta))
    out["max_abs"] = float(diff[measurable].max()) if measurable.any() else None
    unmeasured = (~same & ~finite).any()
    out["bound_ratio"] = None
    if spec.kind == "ulp":
        ok = same | (finite & (ulps <= spec.ulp))
    elif spec.kind == "bound":
        below, above = bound if isinstance(bound, tuple) else (bound, bound)
        below, above = (np.broadcast_to(np.asarray(b, dtype=np.float64), ref.shape) for b in (below, above))
        signed = np.where(same | ~finite, 0.0, delta)
        tol = np.where(signed < 0, below, above)
        ok = same | (finite & (-below <= signed) & (signed <= above))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(finite & ~same, np.where(tol > 0, diff / np.where(tol > 0, tol, 1.0),
                                                      np.where(diff > 0, np.inf, 0.0)), 0.0)
        out["bound_ratio"] = None if unmeasured else (float(ratio.max()) if ratio.size else 0.0)
    else:
        ok = same
    out["min_passing_ulp"] = None
    if not unmeasured and not ((~same) & (got == ref)).any():
        out["min_passing_ulp"] = int(np.where(finite & ~same, ulps, 0).max()) if ulps.size else 0
    return ok, out


def _data(rng, dtype, shape, specials):
    ref = rng.standard_normal(shape).astype(dtype)
    got = (ref.astype(np.float64) * (1 + rng.choice([0, 0, 1e-3, -1e-3, 1e-7], size=shape))).astype(dtype)
    if specials and ref.size:
        flat_g, flat_r = got.reshape(-1), ref.reshape(-1)
        fi = np.finfo(dtype)
        pool = np.array([0.0, -0.0, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max]
                        + ([] if specials == "finite" else [np.nan, np.inf, -np.inf]), dtype)
        for arr in (flat_g, flat_r):
            idx = rng.choice(arr.size, size=max(1, arr.size // 10), replace=False)
            arr[idx] = rng.choice(pool, size=idx.size)
    return got, ref


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("kind", ["exact", "ulp", "bound", "bound-pair", "bound-scalar", "bound-mixed"])
@pytest.mark.parametrize("specials", [False, True, "finite"])
@pytest.mark.parametrize("zero_sign_free", [False, True])
@pytest.mark.parametrize("loop", [False, True])
def test_sliced_float_stats_equal_the_whole_array_oracle(monkeypatch, dtype, kind, specials, zero_sign_free, loop):
    monkeypatch.setattr(compare, "_SLICE", 7)
    # the compiled pass (``compare._finite_pass``) for outputs finite on both sides, or never
    monkeypatch.setattr(compare, "LOOP_FROM", 1 if loop else 1 << 62)
    rng = np.random.default_rng(hash((np.dtype(dtype).str, kind, specials, zero_sign_free)) % 2**32)
    for shape in [(0,), (1,), (3, 5), (2, 3, 4, 5)]:
        got, ref = _data(rng, dtype, shape, specials)
        spec = OutputSpec(kind="bound" if kind.startswith("bound") else kind, ulp=2)
        if kind == "bound":
            bound = np.abs(rng.standard_normal(shape)) * 1e-3
            bound.reshape(-1)[:1] = 0.0
            bound.reshape(-1)[1:2] = np.nan            # an element no answer but its own bits meets
        elif kind == "bound-pair":
            bound = (np.abs(rng.standard_normal(shape)) * 1e-3, np.full(shape, 2e-3))
        elif kind == "bound-scalar":
            bound = 1e-3
        elif kind == "bound-mixed":                    # a number on one side, an array on the other
            bound = (2e-3, np.abs(rng.standard_normal(shape)) * 1e-3)
        else:
            bound = None
        res = OutputStats(output="Y", kind=spec.kind, match=False, total=int(ref.size), tolerance_ulp=spec.ulp)
        ok = compare._float_stats(res, spec, got, ref, bound, zero_sign_free)
        want_ok, want = _oracle(spec, got, ref, bound, zero_sign_free)
        assert ok.shape == ref.shape and np.array_equal(ok, want_ok), (shape, kind)
        for k, v in want.items():
            assert getattr(res, k) == v or (v != v and getattr(res, k) != getattr(res, k)), (k, shape, kind)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("loop", [False, True])
def test_ulp_distance_across_the_whole_range(monkeypatch, dtype, loop):
    """The largest value against the lowest, and the smallest subnormals of both signs: ULP
    distances up to about 2^64 for float64 (past int64's range), the same both ways."""
    monkeypatch.setattr(compare, "LOOP_FROM", 1 if loop else 1 << 62)
    fi = np.finfo(dtype)
    got = np.array([fi.max, -fi.max, fi.smallest_subnormal, 0.0, -fi.smallest_subnormal], dtype)
    ref = np.array([-fi.max, fi.max, -fi.smallest_subnormal, -0.0, fi.smallest_subnormal], dtype)
    spec = OutputSpec(kind="ulp", ulp=2)
    res = OutputStats(output="Y", kind="ulp", match=False, total=got.size, tolerance_ulp=2)
    ok = compare._float_stats(res, spec, got, ref, None, False)
    assert res.max_ulp == int(ulp_distance(got, ref).max()) == 2 * (int(fi.max.view(f"u{fi.dtype.itemsize}")))
    assert ok.tolist() == [False, False, True, True, True]


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("whole", [False, True])
def test_a_difference_past_float64_s_range_over_an_infinite_bound_is_a_nan_ratio(monkeypatch, loop, whole):
    """got - ref past float64's range (inf) over an infinite bound: inf / inf, a NaN ratio (the
    processor's NaN has its sign bit set), which the largest ratio keeps, on both paths; the
    answer is within that bound."""
    monkeypatch.setattr(compare, "LOOP_FROM", 1 if loop else 1 << 62)
    fi = np.finfo(np.float64)
    got = np.array([fi.max, 1.0, 2.0, fi.max])
    ref = np.array([-fi.max, 1.0, 1.5, -fi.max])
    bound = np.full(4, np.inf) if whole else np.inf
    res = OutputStats(output="Y", kind="bound", match=False, total=4)
    ok = compare._float_stats(res, OutputSpec(kind="bound"), got, ref, bound, False)
    assert ok.all() and res.bound_ratio != res.bound_ratio and res.max_abs == np.inf


def test_the_passes_float16_reader_is_every_finite_float16_s_value():
    """``compare._finite_half`` (the compiled pass's float16 reader, without a branch) gives every
    finite float16 bit pattern's value exactly: zeros of both signs, subnormals, normals up to
    65504; and the pass takes an output with an infinity or NaN to the slices' path."""
    pytest.importorskip("numba")
    assert compare._compile_loops() is not None
    bits = np.arange(1 << 16, dtype=np.uint16)
    want = bits.view(np.float16).astype(np.float64)
    fin = np.isfinite(want)
    got = np.array([compare._finite_half(np.int16(b)) for b in bits.view(np.int16)[fin]])
    assert np.array_equal(got.view(np.uint64), want[fin].view(np.uint64))
    spec, n = OutputSpec(kind="ulp", ulp=0), compare.LOOP_FROM
    for dtype in (np.float16, np.float32, np.float64):
        for special in (np.inf, -np.inf, np.nan):
            g = np.zeros(n, dtype)
            g[n // 2] = special
            ok = np.empty(n, bool)
            assert compare._finite_pass(spec, g, np.zeros(n, dtype), None, None, False, ok) is None
            assert compare._finite_pass(spec, np.zeros(n, dtype), g, None, None, False, ok) is None
            assert compare._finite_pass(spec, g, g, None, None, False, ok) is None
        assert compare._finite_pass(spec, np.zeros(n, dtype), np.zeros(n, dtype), None, None, False, ok) == (0, 0.0, 0.0, False)


def _labels_oracle(got, ref, bad):
    """The labels of the wrong elements as first written: whole-array masks, selected by ``bad``."""
    out = []
    if not bad.any():
        return out
    if (np.isnan(got) ^ np.isnan(ref))[bad].any():
        out.append("nan")
    if ((got == 0) & (ref == 0))[bad].all():
        out.append("signed-zero")
    elif ((got == 0) & (ref != 0) & ~np.isnan(ref))[bad].all():
        out.append("wrong-zeros")
    if (np.isinf(got) ^ np.isinf(ref))[bad].any() or (np.isinf(got) & np.isinf(ref))[bad].any():
        out.append("inf")
    return out


@pytest.mark.parametrize("seed", range(40))
def test_float_labels_and_first_positions_in_slices_equal_the_whole_arrays(monkeypatch, seed):
    """The labels and the first wrong positions of a float answer, read a few elements at a time,
    are those of the whole arrays: zeros of both signs, NaN, infinities, wrong elements dense,
    sparse, or only past a slice's end."""
    monkeypatch.setattr(compare, "_SLICE", [1, 3, 7, 64][seed % 4])
    rng = np.random.default_rng(seed)
    shape = [(5, 7), (3, 4, 6), (97,), (2, 1, 3, 5)][seed // 4 % 4]
    pool = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.0], np.float32)
    kinds = [pool, pool[:2], pool[[0, 2, 3]], pool[[4, 5, 2]]][seed // 16 % 4]
    ref = rng.choice(kinds, size=shape).astype(np.float32)
    got = rng.choice(kinds, size=shape).astype(np.float32)
    bad = ~compare._same_float(got, ref)
    if seed % 5 == 0:                        # sparse: a few wrong ones, late in the array
        keep = np.zeros(bad.size, bool)
        keep[rng.choice(bad.size, size=min(3, bad.size), replace=False)] = True
        bad &= keep.reshape(shape)
    assert compare._float_labels(got, ref, bad) == _labels_oracle(got, ref, bad)
    want = [tuple(int(i) for i in idx) for idx in np.argwhere(bad)[:compare.MAX_FIRST]]
    assert compare.first_positions(bad) == want
    assert compare.first_positions(bad, 2) == want[:2]
    assert compare.first_positions(np.zeros(shape, bool)) == []


@pytest.mark.parametrize("got, ref, want", [
    ([np.inf, 1.0], [-np.inf, 1.0], ["inf"]),                    # infinities of both sides, of other signs
    ([0.0, 2.0], [np.nan, 2.0], ["nan"]),                        # a zero against a NaN: no 'wrong-zeros'
    ([0.0, -0.0, 5.0], [-0.0, 0.0, 5.0], ["signed-zero"]),
    ([0.0, 0.0], [1.0, -3.0], ["wrong-zeros"]),
    ([0.0, 7.0], [1.0, 6.0], []),
])
def test_float_labels_of_single_kinds(monkeypatch, got, ref, want):
    monkeypatch.setattr(compare, "_SLICE", 1)
    got, ref = np.array(got, np.float32), np.array(ref, np.float32)
    bad = ~compare._same_float(got, ref)
    assert compare._float_labels(got, ref, bad) == want == _labels_oracle(got, ref, bad)
