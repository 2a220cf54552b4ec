"""RoiAlign's tolerance and its allowed non-finite answers, each tightening shown on an explicit
configuration: a wrong answer that the wider set let through now fails, and a right answer (a
concrete evaluation a reading allows: ``roi_align.witness_answers``, or the reference of the
coordinates one ULP off) still passes. Then the soundness fixes those evaluations found: an
interpolation a + t (b - a) in float16 (its roundings scale with the corners' differences), along Y
then X (a reading of its own), and float64 data whose sums pass float64's range. Last, every
witness of a part of the default profile passes the judge: the set of right answers they sample."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.ops import roi_align as RA
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.verdict import judge

from conftest import sweep
from op_cases import ra_case

RA0 = registry.OPERATORS["roi_align"]
RA1 = registry.OPERATORS["roi_align1"]
F32 = float(np.finfo(np.float32).max)
F64 = float(np.finfo(np.float64).max)


def ref(case) -> np.ndarray:
    return case.operator.reference(case, case.inputs())["Y"]


def verdict_of(case, y):
    """The judgement of an implementation that answered ``y`` (a value for every element, or an array)."""
    r = ref(case)
    out = Outcome(True, "done", None, {"Y": np.broadcast_to(np.asarray(y, dtype=r.dtype), r.shape).copy()})
    return judge(case, case.inputs(), out, None, None, ep_name="TestEP", ep_is_cpu=False)


def passes(case, y) -> bool:
    return verdict_of(case, y).verdict == "PASS"


def witnesses(case) -> dict[str, np.ndarray]:
    return {w.name: w.outputs["Y"] for w in RA.witness_answers(case, case.inputs())}


def took(case, y) -> list[str]:
    return [lab.split(":", 1)[1] for lab in verdict_of(case, y).labels if lab.startswith("ep-took:")]


# ---- the coordinates' error moves a sample by the slopes of its own cell ------------------------


def test_a_sample_moves_by_the_slopes_of_its_own_cell_not_of_its_neighbours():
    """A sample at (0.5, 0.5) of a cell of thousandths, the elements around the cell 1e30: a
    coordinate off by its delta moves the sample along its cell only (the neighbours' steps of 1e30
    times delta would allow ~1e24)."""
    x = np.full((1, 1, 4, 4), 1e30)
    x[0, 0, :2, :2] = [[1e-3, -2e-3], [3e-3, 0.0]]
    case = ra_case(x, [[0.0, 0.0, 1.0, 1.0]])
    r = ref(case)
    assert abs(float(r.ravel()[0]) - 5e-4) < 1e-9
    assert RA1.error_bound(case, case.inputs(), {"Y": r})["Y"].max() < 1e-7
    assert not passes(case, r + np.float32(1e-2))                   # a small error, far outside
    moved = ra_case(x, [[2.0 ** -23, 0.0, 1.0, 1.0]])               # the region's corner one ULP off
    assert passes(case, ref(moved))
    assert all(passes(case, y) for y in witnesses(case).values())


def test_a_sample_within_delta_of_its_cells_side_moves_by_the_cells_beyond_it():
    """At x = 1 exactly, a point just before reads the cell [0, 1]: its step counts."""
    x = np.array([[[[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]]])
    case = ra_case(x, [[0.5, 0.0, 1.5, 1.0]])                       # the sample at (0.5, 1)
    r = ref(case)
    bound = RA1.error_bound(case, case.inputs(), {"Y": r})["Y"]
    assert r.ravel().tolist() == [1.0] and bound.max() > 1e-7      # the step of 1 times delta
    assert passes(case, np.nextafter(np.float32(1), np.float32(0)))


# ---- MAX: the largest sample within its own tolerance -------------------------------------------


def test_a_maximum_lies_between_its_samples_lowest_and_highest_values():
    """Two samples: one in a cell from -1e30 to -3e29 (its tolerance ~1e24, its value ~-6e29), one
    on flat 5.0: the maximum, 5, moves by the flat sample's tolerance only (the largest tolerance of
    any sample, ~1e24, let anything near 5 through)."""
    x = np.zeros((1, 1, 2, 4))
    x[0, 0] = [[-1e30, -3e29, 5.0, 5.0], [-1e30, -3e29, 5.0, 5.0]]
    case = ra_case(x, [[0.0, 0.0, 3.0, 1.0]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2,
                   ReductionFunction="MAX")
    r = ref(case)
    below, above = RA1.error_bound(case, case.inputs(), {"Y": r})["Y"]
    assert r.ravel().tolist() == [5.0] and below.max() < 1e-5 and above.max() < 1e-5
    assert not passes(case, np.float32(5.001)) and not passes(case, np.float32(4.999))
    moved = ra_case(x, [[2.0 ** -22, 0.0, 3.0, 1.0]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2,
                    ReductionFunction="MAX")
    assert passes(case, ref(moved))
    assert all(passes(case, y) for y in witnesses(case).values())


# ---- the subnormal range: 4 smallest subnormals ----------------------------------------------------


def test_subnormal_answers_are_within_four_smallest_subnormals():
    """float64 data of subnormals: an evaluation in float64 (products rounded in the subnormal range)
    lands 2 smallest subnormals off the reference; 6 off (what the bound allowed before) fails."""
    eta = float(np.finfo(np.float64).smallest_subnormal)
    x = np.array([[[[16, 17, 39], [-18, -6, -30], [-39, -37, -5]]]]) * eta
    case = ra_case(x, [[0.1, 0.2, 1.9, 1.7]], dtype="FLOAT64", MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    r = ref(case)
    assert r.ravel().tolist() == [-10 * eta]
    found = witnesses(case)
    assert max(abs(float(y.ravel()[0]) - float(r.ravel()[0])) for y in found.values()) == 2 * eta
    assert all(passes(case, y) for y in found.values())
    assert not passes(case, r + 6 * eta) and not passes(case, r - 6 * eta)


# ---- overflow: the non-finite answers an evaluation in the data type gives -------------------------


def test_no_difference_of_neighbours_overflows_so_nothing_is_non_finite():
    """[[-max, 1], [-1, max/2]]: only the diagonal pair differs by more than float32's largest value,
    and no interpolation subtracts a diagonal pair: every evaluation is finite."""
    case = ra_case(np.array([[[[-F32, 1.0], [-1.0, F32 / 2]]]]), [[0.0, 0.0, 1.0, 1.0]])
    assert RA1.open_points(case, case.inputs()) == ("overflow",)
    for y in (np.nan, np.inf, -np.inf):
        assert not passes(case, y), y
    found = witnesses(case)
    assert all(np.isfinite(y).all() and passes(case, y) for y in found.values())


def test_an_overflow_of_the_bottom_row_is_an_infinity_of_its_sign():
    """[[0, 0], [-max, max]] at (0.5, 0.5): along X then Y, bot = -max + 0.5 (max - (-max)) is +inf and
    so the answer; nothing gives NaN or -inf there."""
    case = ra_case(np.array([[[[0.0, 0.0], [-F32, F32]]]]), [[0.0, 0.0, 1.0, 1.0]])
    assert ref(case).ravel().tolist() == [0.0]
    assert witnesses(case)["lerp-xy-scan-div-float32-exact-coordinates"].ravel().tolist() == [np.inf]
    assert passes(case, np.inf) and took(case, np.inf) == ["overflow-to-non-finite"]
    assert not passes(case, np.nan) and not passes(case, -np.inf)


def test_an_average_is_non_finite_only_as_its_sums_overflow():
    """Four samples of 0.3 * max each (neighbours 0.6 * max apart): their sum in float32 passes the
    largest value (+inf), no difference overflows: NaN is no evaluation's answer."""
    x = np.array([[[[0.6 * F32, 0.0, 0.6 * F32], [0.6 * F32, 0.0, 0.6 * F32]]]])
    case = ra_case(x, [[0.0, 0.0, 2.0, 1.0]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    found = witnesses(case)
    assert np.isposinf(found["weighted-scan-div-float32-exact-coordinates"]).all()
    assert passes(case, np.inf)
    assert not passes(case, np.nan) and not passes(case, -np.inf)


def test_a_sample_clamped_to_the_last_row_reads_no_other_row():
    """A sample at y = 3.5 of a 4-row input is clamped to row 3 and stays there within delta: an
    infinity in row 2 is out of its reach (at y = 3 exactly, a point just above reads row 2)."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 2, 1] = np.inf
    clamped = ra_case(x, [[1.0, 3.5, 1.0, 3.5]])
    assert ref(clamped).ravel().tolist() == [13.0]
    assert not passes(clamped, np.nan) and not passes(clamped, np.inf)
    on_row = ra_case(x, [[1.0, 3.0, 1.0, 3.0]])
    assert ref(on_row).ravel().tolist() == [13.0] and passes(on_row, np.inf)


# ---- right answers the evaluations found: the judge widened where they failed -----------------------


def test_an_interpolation_in_float16_is_judged_with_its_own_roundings():
    """1000 and 1 at x = 0.999: a + t (b - a) in float16 rounds t (b - a) = -998 to its ULP of 0.5 and
    lands at 2.0, 0.024 from the exact 1.976: far more than the weighted corners' roundings allow
    (their sum is 2), within the interpolation's own; the value of the mirrored position still fails."""
    x = np.array([[[[1000.0, 1.0], [1000.0, 1.0]]]])
    case = ra_case(x, [[0.0, 0.0, 1.998, 0.0]], dtype="FLOAT16")
    found = witnesses(case)
    lerp = found["lerp-xy-scan-div-float16-exact-coordinates"]
    assert lerp.ravel().tolist() == [2.0] and ref(case).ravel().tolist() == [np.float16(1.976)]
    assert all(passes(case, y) for y in found.values())
    mirrored = ra_case(x, [[0.0, 0.0, 0.002, 0.0]], dtype="FLOAT16")
    assert not passes(case, ref(mirrored))


def test_an_overflowing_difference_along_y_then_x_is_a_reading():
    """[[max, -max], [max, -max]]: along X first b - a overflows (NaN); along Y first the columns are
    constant and right - left overflows: -inf, DirectML's answer; +inf is no evaluation's."""
    case = ra_case(np.array([[[[F32, -F32], [F32, -F32]]]]), [[0.0, 0.0, 1.0, 1.0]])
    found = witnesses(case)
    assert np.isnan(found["lerp-xy-scan-div-float32-exact-coordinates"]).all()
    assert np.isneginf(found["lerp-yx-scan-div-float32-exact-coordinates"]).all()
    assert passes(case, -np.inf) and passes(case, np.nan)
    assert not passes(case, np.inf)
    assert "differences-yx-in-type" in dict(RA1.READINGS["overflow"])


def test_float64_sums_past_float64s_range_overflow():
    """The same in float64: its sums and differences pass float64's own range, which the open point
    overflow now sees (it did not: the sums were taken in float64 and lost)."""
    case = ra_case(np.array([[[[F64, -F64], [F64, -F64]]]]), [[0.0, 0.0, 1.0, 1.0]], dtype="FLOAT64")
    assert RA1.open_points(case, case.inputs()) == ("overflow",)
    assert passes(case, -np.inf) and passes(case, np.nan) and not passes(case, np.inf)


# ---- every witness is a right answer ---------------------------------------------------------------


@pytest.mark.parametrize("op", [RA0, RA1], ids=lambda o: o.key)
def test_every_witness_of_the_default_profile_passes(op):
    """Every second (RoiAlign1: fourth) case of the default profile's families that make evaluations
    differ (non-finite data, overflowing extremes, subnormals, cancelling signed zeros, real
    numbers): each witness, a concrete evaluation of the reference's reading, is judged PASS."""
    cases = [c for c in sweep("default", op.key)
             if c.family in ("extremes", "inf", "nan", "denormal", "negzero", "real")][::4 if op is RA1 else 2]
    assert len(cases) >= 10
    for case in cases:
        x = case.inputs()
        if op.input_problem(case, x):
            continue
        r = op.reference(case, x)
        for w in RA.witness_answers(case, x):
            out = Outcome(True, "done", None, dict(w.outputs))
            j = judge(case, x, out, None, None, ep_name="TestEP", ep_is_cpu=False, ref=r,
                      semantics="onnx" if op.expressible(case) is None else "dml")
            assert j.verdict == "PASS", (case.id, w.name, j.reason)


def test_the_overflow_check_skips_only_what_no_sum_reaches():
    """``_overflow`` skips the full computation where twice the most a sum can reach stays finite;
    on data scaled to straddle that (the largest magnitude at fmax / k, k from 1 to 64 times the
    samples of an element), it gives every position the full computation gives, overflows
    included."""
    from onnx_dml_bench.ops.roi_align.reference import reading
    checked = overflowed = 0
    for key in ("roi_align", "roi_align1"):
        op = registry.get(key)
        for case in sweep("default", key)[::7]:
            ins = case.inputs()
            x = ins["X"]
            if x.dtype != np.float16 or not np.isfinite(x).all() or not np.abs(x).max():
                continue
            fmax = float(np.finfo(x.dtype).max)
            for k in (1.5, 4, 16, 64, 400):
                with np.errstate(all="ignore"):
                    xs = (x.astype(np.float64) * (fmax / k / float(np.abs(x).max()))).astype(x.dtype)
                    data = {**ins, "X": xs}
                    full = op.compute(case, data, reading(case.desc), touched=True).reach > fmax
                got = op._overflow(case, data)
                assert np.array_equal(got, full), (case.id, k)
                checked += 1
                overflowed += bool(full.any())
    assert checked > 50 and overflowed > 5


# ---- the bound's arithmetic, rewritten in place, gives the same bits ----------------------------


def _lerp_error_as_written(vals, ay, ax, s_half, u):
    """``bounds.lerp_error``'s expression as its text writes it, one temporary per operation."""
    a, b, c, d = ((g if np.isfinite(g).all() else np.where(np.isfinite(g), g, 0)).astype(np.float64) * 0.25
                  for g in vals)
    tx, ty = ax.w_hi[:, None, :, None], ay.w_hi[:, :, None, None]
    dx = ay.w_lo[:, :, None, None] * np.abs(b - a) + ty * np.abs(d - c)
    dy = ax.w_lo[:, None, :, None] * np.abs(c - a) + tx * np.abs(d - b)
    return (s_half / 2 + tx * dx + ty * dy) * (8 * u / (1 - 8 * u))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("nonfinite", [False, True])
def test_lerp_error_in_place_is_the_expression_as_written(dtype, nonfinite):
    from types import SimpleNamespace

    from onnx_dml_bench.ops.roi_align.bounds import corner_differences, lerp_error
    rng = np.random.default_rng(7)
    r, ny, nx, c = 3, 4, 5, 6
    big = float(np.finfo(dtype).max)
    e = 5 if dtype == np.float16 else 20
    vals = [(rng.standard_normal((r, ny, nx, c)) * np.exp2(rng.integers(-e, e, (r, ny, nx, c)))).astype(dtype)
            for _ in range(4)]
    vals[1][0, 0, 0] = dtype(big)
    vals[2][0, 0, 1] = dtype(-big)
    tiny = np.finfo(dtype).smallest_subnormal
    vals[3][1, 2, 3] = np.arange(1, c + 1) * tiny              # subnormal neighbours of 0
    vals[0][1, 2, 3] = -tiny
    assert all(np.isfinite(v).all() for v in vals)
    if nonfinite:
        vals[0][1, 1, 1, :2] = [np.inf, np.nan]
        vals[3][2, 0, 0, 0] = -np.inf
    axis = lambda n: SimpleNamespace(w_hi=rng.uniform(0, 1, (r, n)), w_lo=None)  # noqa: E731
    ay, ax = axis(ny), axis(nx)
    # weights near 0 and 1: the smallest fraction of a coordinate made of float32 values is far above
    # 2^-200, and so every product of two weights and a difference far from float64's subnormals
    ay.w_hi[1, 2], ax.w_hi[1, 3] = 2.0 ** -160, 2.0 ** -150
    ay.w_hi[0, :2] = [2.0 ** -60, 0.0]
    ax.w_hi[1, :2] = [1.0 - 2.0 ** -52, 0.0]
    ay.w_lo, ax.w_lo = 1.0 - ay.w_hi, 1.0 - ax.w_hi
    s_half = np.abs(rng.standard_normal((r, ny, nx, c))) * 1e3
    u = float(np.finfo(dtype).eps) / 2
    want = _lerp_error_as_written(vals, ay, ax, s_half, u)
    with np.errstate(all="ignore"):
        for finite_hint in ([False, True] if not nonfinite else [False]):
            got = lerp_error(vals, ay, ax, s_half, u, finite_hint)
            assert np.array_equal(got, want, equal_nan=True)
            if finite_hint and dtype != np.float64:       # the differences made once, for the slopes too
                got = lerp_error(vals, ay, ax, s_half, u, finite_hint, corner_differences(vals))
                assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 5, 6, 3), (1, 1, 4, 2), (1, 4, 1, 2), (3, 7, 2, 1)])
def test_cell_slopes_are_half_the_differences_as_written(dtype, shape):
    """``Cells``' slopes, half the |difference| of neighbours rounded once to float64, and its
    overflow flags (a difference of two finite neighbours past the type's range), made at the cells
    asked for (every cell, a channel range, from the corners a sample read, from their shared
    differences), against both as first written over the whole input at once, on data from the
    smallest subnormal to the largest value, with infinities and NaN: the same bits."""
    from onnx_dml_bench.ops.roi_align.bounds import Cells, corner_differences, slope_of
    rng = np.random.default_rng(3)
    fi = np.finfo(dtype)
    e = rng.integers(int(np.log2(float(fi.smallest_subnormal))), fi.maxexp, shape)
    x = (rng.choice([-1.0, 1.0], shape) * np.exp2(e.astype(np.float64))).astype(dtype)
    x[0, 0, 0, 0] = fi.max
    x[0, 1 if shape[1] > 1 else 0, 0 if shape[1] > 1 else 1, 0] = -fi.max     # a spatial neighbour
    n, h, w, c = shape
    bb, rr, cc = (a.reshape(-1) for a in np.meshgrid(np.arange(n), np.arange(h), np.arange(w), indexing="ij"))
    for finite in (True, False):
        if not finite:
            x.reshape(-1)[rng.integers(0, x.size, 3)] = [np.inf, -np.inf, np.nan]
        want, ovf = np.zeros(shape), np.zeros(shape, bool)
        fin = np.isfinite(x)
        for axis in (1, 2):
            if shape[axis] < 2:
                continue
            lo, hi = [slice(None)] * 4, [slice(None)] * 4
            lo[axis], hi[axis] = slice(0, -1), slice(1, None)
            lo, hi = tuple(lo), tuple(hi)
            with np.errstate(all="ignore"):
                d = np.abs(x[hi].astype(np.float64) * 0.5 - x[lo].astype(np.float64) * 0.5)
                d[~np.isfinite(d)] = 0.0
                f = np.isinf(x[hi] - x[lo]) & fin[hi] & fin[lo]
            other = 2 if axis == 1 else 1
            np.maximum(want[lo], d, out=want[lo])
            ovf[lo] |= f
            if shape[other] > 1:
                src, dst = [slice(None)] * 4, [slice(None)] * 4
                src[other], dst[axis], dst[other] = slice(1, None), slice(0, -1), slice(0, -1)
                src, dst = tuple(src), tuple(dst)
                np.maximum(want[dst], d[src], out=want[dst])
                ovf[dst] |= f[src]
        cells = Cells(x, finite, steps=False)
        with np.errstate(all="ignore"):
            assert np.array_equal(cells.at("slope", bb, rr, cc, 0, c).reshape(shape), want)
            assert np.array_equal(cells.at("ovf", bb, rr, cc, 0, c).reshape(shape), ovf)
            assert np.array_equal(cells.at("slope", bb, rr, cc, c - 1, c).reshape(*shape[:3], 1), want[..., -1:])
            corners = cells.corners(bb, rr, cc, 0, c)
            assert np.array_equal(slope_of(corners, finite).reshape(shape), want)
            if finite and dtype != np.float64:
                assert np.array_equal(slope_of(corners, finite, corner_differences(corners)).reshape(shape), want)
        if dtype != np.float64 and finite:
            assert ovf.any()
