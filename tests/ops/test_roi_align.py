"""DML_ROI_ALIGN_OPERATOR_DESC and DML_ROI_ALIGN1_OPERATOR_DESC (``ops/roi_align/``): the
validation rules of their pages (each error names its DML field), the page's pseudo-code with its
corrections as examples worked out by hand, properties of the reference, every open point judged on
an explicit configuration (each allowed reading passes, an answer outside them fails, and the
readings of the ONNX text alone hold on graphs only), the deviations of ONNX Runtime's CPU EP (1.32)
and onnx.reference shown on explicit configurations, the peer checks (ONNX's node tests and ONNX
Runtime's roialign_test.cc literals, torchvision's roi_align, each disagreement explained), what the
default profile covers and the detection sizes of the ``networks`` cases."""
from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper
from onnx.backend.test.case.node import collect_testcases

from onnx_dml_bench import casefile, cli, registry
from onnx_dml_bench.cases import Case
from onnx_dml_bench.ops import roi_align as RA
from onnx_dml_bench.ops.roi_align import reference as RA_REFERENCE
from onnx_dml_bench.ops.base import DML_PAGES, ONNX_TEXT, UINT_MAX, DescriptorError
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.verdict import compare_side, judge

from conftest import Failure, applies, onnx_reference_run, ort_cpu_run, sweep
from op_cases import ra_case
from op_rules import desc, rejects
from op_strategies import PROPS

pytest.importorskip("onnxruntime")

RA0 = registry.OPERATORS["roi_align"]
RA1 = registry.OPERATORS["roi_align1"]
BASE = dict(InputSizes=[1, 2, 8, 8], RoiSizes=[3, 4], DataType="FLOAT32", OutputSize=[2, 2],
            MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
RAMP = np.arange(16, dtype=np.float64).reshape(1, 1, 4, 4)        # X[y, x] = 4y + x: bilinear is exact on it


def ref(case) -> np.ndarray:
    return case.operator.reference(case, case.inputs())["Y"]


def verdict_of(case, y, semantics="onnx"):
    """The verdict of an implementation that answered ``y`` (array of the case's output type)."""
    out = Outcome(True, "done", None, {"Y": np.asarray(y, dtype=ref(case).dtype)})
    return judge(case, case.inputs(), out, None, None, ep_name="TestEP", ep_is_cpu=False, semantics=semantics)


# ---- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [[2, 8, 8], [1, 1, 2, 8, 8]])
def test_input_must_be_4d(sizes):
    rejects(RA1, BASE, "InputTensor.DimensionCount", "4-D", InputSizes=sizes)


@pytest.mark.parametrize("rois", [[3, 5], [4], [2, 3, 4], [1, 1, 1, 3, 4], [3, 4, 1]])
def test_roi_tensor_layouts(rois):
    rejects(RA1, BASE, "ROITensor.Sizes", "{NumROIs, 4}", RoiSizes=rois)


@pytest.mark.parametrize("rois", [[3, 4], [1, 3, 4], [1, 1, 3, 4]])
def test_every_roi_layout_of_the_page_is_accepted(rois):
    d = desc(RA1, BASE, RoiSizes=rois)
    RA1.validate(d)
    assert RA1.output_shape(d) == (3, 2, 2, 2)


def test_at_least_one_roi():
    rejects(RA1, BASE, "ROITensor.Sizes", "NumROIs must be >= 1", RoiSizes=[0, 4])


@pytest.mark.parametrize("sizes", [[3], [1, 3], [1, 1, 3], [1, 1, 1, 3]])
def test_batch_indices_layouts_of_the_page(sizes):
    RA1.validate(desc(RA1, BASE, BatchIndicesSizes=sizes))


@pytest.mark.parametrize("sizes", [[2], [3, 1], [1, 3, 1], [1, 1, 1, 1, 3], [2, 3]])
def test_batch_indices_must_hold_one_index_per_roi(sizes):
    rejects(RA1, BASE, "BatchIndicesTensor.Sizes", "NumROIs 3", BatchIndicesSizes=sizes)


@pytest.mark.parametrize("out", [[0, 2], [2, 0], [2], [1, 2, 3]])
def test_output_sizes(out):
    rejects(RA1, BASE, "OutputTensor.Sizes", ">= 1", OutputSize=out)


@pytest.mark.parametrize("field,value", [("ReductionFunction", "SUM"), ("ReductionFunction", "ARGMAX"),
                                         ("InterpolationMode", "CUBIC")])
def test_enums(field, value):
    rejects(RA1, BASE, field, value, **{field: value})


@pytest.mark.parametrize("field", ["SpatialScaleX", "SpatialScaleY", "OutOfBoundsInputValue", "InputPixelOffset",
                                   "OutputPixelOffset"])
@pytest.mark.parametrize("value", [math.inf, math.nan, 1e39])
def test_float_members_are_finite_floats(field, value):
    rejects(RA1, BASE, field, "finite FLOAT", **{field: value})


def test_at_least_one_sample_per_output():
    rejects(RA1, BASE, "MinimumSamplesPerOutput", ">= 1", MinimumSamplesPerOutput=0)


def test_maximum_samples_not_below_minimum():
    rejects(RA1, BASE, "MaximumSamplesPerOutput", ">= MinimumSamplesPerOutput (3)", MinimumSamplesPerOutput=3,
            MaximumSamplesPerOutput=2)


def test_sample_bounds_are_uints():
    rejects(RA1, BASE, "MaximumSamplesPerOutput", "UINT", MaximumSamplesPerOutput=2**32)


@pytest.mark.parametrize("dtype", ["INT32", "UINT8", "INT8", "UINT64"])
def test_data_type_float32_or_float16(dtype):
    rejects(RA1, BASE, "DataType", dtype, "any feature level", DataType=dtype)


def test_roi_align1_needs_feature_level_4_0():
    rejects(RA1, BASE, "FeatureLevel", "4.0", FeatureLevel="3.0")
    RA0.validate(desc(RA0, BASE, FeatureLevel="3.0"))


@pytest.mark.parametrize("op", [RA0, RA1], ids=lambda o: o.key)
def test_uint64_batch_indices_from_feature_level_5_0(op):
    rejects(op, BASE, "BatchIndicesDataType", "DML_FEATURE_LEVEL_5_0", BatchIndicesDataType="UINT64")
    op.validate(desc(op, BASE, BatchIndicesDataType="UINT64", FeatureLevel="5.0"))


@pytest.mark.parametrize("dtype", ["INT32", "INT64", "UINT16", "FLOAT32"])
def test_batch_indices_are_unsigned_32_or_64_bit(dtype):
    """The pages list UINT32 (and UINT64 from 5.0); DirectML 1.15 refuses INT32 and INT64 too (the
    direct lane's CreateOperator: E_INVALIDARG)."""
    rejects(RA1, BASE, "BatchIndicesDataType", "any feature level", BatchIndicesDataType=dtype, FeatureLevel="5.0")


def test_roi_align_has_no_pixel_offsets_or_corner_alignment():
    for name in ("InputPixelOffset", "OutputPixelOffset", "AlignRegionsToCorners"):
        with pytest.raises(DescriptorError, match=f"{name}: is not a field of RoiAlignDesc"):
            RA0.Desc.from_dict({**BASE, name: 0})


def test_float64_is_onnx_s_double_only():
    """ONNX RoiAlign takes double; no DirectML level lists it: the descriptor is kept for the ONNX
    lanes (DirectML itself answers on the direct lane), at any feature level."""
    d = desc(RA1, BASE, DataType="FLOAT64")
    RA1.validate(d)
    assert RA1.expressible(RA1.make_case(d)) is None
    rejects(RA1, BASE, "FeatureLevel", "must be one of", DataType="FLOAT64", FeatureLevel="9.9")


def test_batch_index_outside_the_input_is_refused_as_data():
    """The page: undefined behaviour outside [0, BatchCount). Such data is never judged."""
    case = ra_case(np.zeros((2, 1, 4, 4)), [[0, 0, 2, 2], [0, 0, 2, 2]], [1, 2])
    assert RA1.input_problem(case, case.inputs()) == ("region 1: batch index 2 is not in [0, 2) (BatchCount 2): "
                                                     "undefined behaviour")
    admitted = RA1.admit(case, size=False, expressible=False)
    assert admitted.verdict == "ERROR" and admitted.step == "data"
    neg = ra_case(np.zeros((2, 1, 4, 4)), [[0, 0, 2, 2]], [-1])
    assert "batch index -1" in RA1.input_problem(neg, neg.inputs())
    inf = ra_case(np.zeros((1, 1, 4, 4)), [[0, 0, np.inf, 2]])
    assert RA1.input_problem(inf, inf.inputs()) == "region 0: a corner is not finite"


def test_explicit_batch_indices_are_int64_like_onnx_s():
    case = ra_case(RAMP, [[0, 0, 2, 2]])
    assert case.inputs()["batch_indices"].dtype == np.int64
    assert {i.name: i.type.tensor_type.elem_type for i in RA1.to_onnx(case).graph.input}["batch_indices"] == 7


def test_a_tools_case_gets_the_sizes_its_region_count_decides():
    """A fuzz sample or shrink candidate with a ROI tensor of another last size, or batch indices of
    another count, is mended (normalize) to the layouts the page allows, each at its own rank."""
    case = ra_case(RAMP, [[0, 0, 2, 2]] * 3)
    bad = dataclasses.replace(case, desc=case.desc.replace(RoiSizes=(2, 3, 5), BatchIndicesSizes=(2, 1, 7)))
    with pytest.raises(DescriptorError):
        RA1.validate(bad.desc)
    good = RA1.normalize(bad)
    assert (good.desc.RoiSizes, good.desc.BatchIndicesSizes) == ((1, 3, 4), (1, 1, 3))
    RA1.validate(good.desc)
    assert RA1.normalize(case) is case


# ---- the page's pseudo-code, corrected, on examples worked out by hand -----------------------------
# X[y, x] = 4y + x (4x4): bilinear interpolation is exact on it, so a sample at (y, x) reads 4y + x


def test_one_sample_per_output_at_pixel_centres():
    """Region [0, 0, 4, 4], 2x2 outputs, one sample each, InputPixelOffset 0.5: samples at
    (k + 0.5) * 2 - 0.5 = 0.5 and 2.5 on each axis. The page's loops (``to <=``) would take two
    samples per axis, 0.5 and 2.5 for the first output (mean 1.5: 7.5)."""
    case = ra_case(RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), InputPixelOffset=0.5)
    assert ref(case).ravel().tolist() == [2.5, 4.5, 10.5, 12.5]


def test_y_is_scaled_by_the_y_sizes():
    """Region 4 wide, 2 high, 2x2 outputs, one sample, InputPixelOffset 0: X samples at 1 and 3, Y
    samples at 0.5 and 1.5. The page's outputSampleToInputScaleY = scaledRegionSizeX /
    outputSampleSizeX would put Y at 1 and 3 (5, 7, 13, 15)."""
    case = ra_case(RAMP, [[0, 0, 4, 2]], OutputSize=(2, 2))
    assert ref(case).ravel().tolist() == [3.0, 5.0, 7.0, 9.0]


def test_samples_per_output_are_ceil_of_the_ratio():
    """Region 5 wide, 2 outputs, at most 100 samples: ceil(5 / 2) = 3 samples per output, at
    (k + 0.5) * 5/6. On X[x] = x^2 (bilinear between squares) the first output is the mean of
    0.41667, 1.75, 4.41667 = 2.19444; the second of 8.58333, 14.25, 21.25 = 14.69444."""
    sq = (np.arange(8.0) ** 2)[None, None, None, :].repeat(8, axis=2)
    case = ra_case(sq, [[0, 0, 5, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=100)
    np.testing.assert_allclose(ref(case).ravel(), [79 / 36, 529 / 36], rtol=1e-6)
    capped = ra_case(sq, [[0, 0, 5, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=2)
    np.testing.assert_allclose(ref(capped).ravel(), [2.125, 14.625], rtol=1e-6)


def test_an_inverted_region_is_mirrored_with_as_many_samples():
    """x2 < x1: the samples run backwards (mirrored), ceil(|size| / out) of them: 3 per output for a
    region 6 wide on 2 outputs."""
    sq = (np.arange(8.0) ** 2)[None, None, None, :].repeat(8, axis=2)
    fwd = ra_case(sq, [[0, 0, 6, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=100)
    back = ra_case(sq, [[6, 0, 0, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=100)
    np.testing.assert_allclose(ref(fwd).ravel(), [19 / 6, 127 / 6], rtol=1e-6)
    np.testing.assert_allclose(ref(back).ravel(), ref(fwd).ravel()[::-1], rtol=1e-6)


def test_an_empty_region_samples_its_point():
    """'Regions can be empty, meaning that all output pixels come from the single input coordinate':
    (x, y) = (1.25, 2.5) reads 4 * 2.5 + 1.25 = 11.25 everywhere."""
    case = ra_case(RAMP, [[1.25, 2.5, 1.25, 2.5]], OutputSize=(2, 2), MaximumSamplesPerOutput=100)
    assert ref(case).ravel().tolist() == [11.25] * 4


def test_a_maximum_does_not_start_at_zero():
    """The page's outputValue = 0 before the samples would make a maximum of negative samples 0."""
    case = ra_case(-1 - RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), InputPixelOffset=0.5, ReductionFunction="MAX")
    assert ref(case).ravel().tolist() == [-3.5, -5.5, -11.5, -13.5]


def test_border_clamp_zones_and_outside():
    """A sample in [-1, 0] reads the first column, one in (L-1, L] the last, one outside [-1, L] the
    OutOfBoundsInputValue (row y = 1.5: 6 + x)."""
    got = []
    for cx in (-1.5, -0.75, 0.25, 3.5, 4.5):
        case = ra_case(RAMP, [[cx - 0.5, 1.0, cx + 0.5, 2.0]], OutOfBoundsInputValue=100.0)
        got.append(float(ref(case).ravel()[0]))
    assert got == [100.0, 6.0, 6.25, 9.0, 100.0]


def test_corner_alignment_stretches_the_samples_to_the_corners():
    """AlignRegionsToCorners: step size / (N - 1); with OutputPixelOffset 0 the samples are the
    region's corners x = 0 and 2 (row 1: 4 + x)."""
    case = ra_case(RAMP, [[0, 1, 2, 1]], OutputSize=(1, 2), AlignRegionsToCorners=True, OutputPixelOffset=0.0)
    assert ref(case).ravel().tolist() == [4.0, 6.0]


def test_nearest_neighbour_takes_the_nearest_element():
    case = ra_case(RAMP, [[0.2, 0.2, 2.2, 1.2]], OutputSize=(1, 2), InterpolationMode="NEAREST_NEIGHBOR")
    assert ref(case).ravel().tolist() == [5.0, 6.0]          # (0.7, 0.7) -> (1, 1); (0.7, 1.7) -> (1, 2)


def test_two_scales():
    case = ra_case(RAMP, [[0, 0, 8, 2]], OutputSize=(1, 1), SpatialScaleX=0.5, SpatialScaleY=2.0)
    assert ref(case).ravel().tolist() == [4 * 2.0 + 2.0]    # centre (x 2, y 2)


def test_roi_align_is_roi_align1_at_half_and_minus_half():
    rng = np.random.default_rng(3)
    x, rois = rng.integers(-64, 64, (2, 3, 6, 7)) / 8, rng.integers(0, 24, (5, 4)) / 4
    batch = rng.integers(0, 2, 5)
    a = ra_case(x, rois, batch, op=RA0, OutputSize=(3, 2), MaximumSamplesPerOutput=UINT_MAX)
    b = ra_case(x, rois, batch, OutputSize=(3, 2), MaximumSamplesPerOutput=UINT_MAX, InputPixelOffset=0.5)
    assert np.array_equal(ref(a), ref(b))


# ---- properties of the reference ---------------------------------------------------------------------


@PROPS
@given(st.integers(1, 3), st.integers(2, 9), st.integers(2, 9), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from([0.0, 0.5]), st.integers(1, 3), st.integers(0, 2**16))
def test_a_linear_input_gives_the_mean_sample_position(c, h, w, oh, ow, ipo, n, seed):
    """On X = 3y - 2x + 1 (exact under bilinear interpolation inside the input) an average is the
    plane at the mean sample position: ((o n + (n - 1) / 2) + 0.5) * size / N + start - offset."""
    g = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    x = np.broadcast_to(3.0 * yy - 2.0 * xx + 1, (1, c, h, w))
    lo = np.array([g.integers(0, 4 * (w - 1)), g.integers(0, 4 * (h - 1))]) / 4 + ipo
    hi = lo + np.array([g.integers(0, 4 * (w - 1) + 1 - 4 * (lo[0] - ipo)), g.integers(0, 4 * (h - 1) + 1 - 4 * (lo[1] - ipo))]) / 4
    case = ra_case(x, [[*lo, *hi]], OutputSize=(oh, ow), MinimumSamplesPerOutput=n, MaximumSamplesPerOutput=n,
                   InputPixelOffset=ipo)
    mean_k = lambda o, out: (o * n + (n - 1) / 2 + 0.5) / (out * n)      # noqa: E731
    ty = np.array([mean_k(o, oh) * (hi[1] - lo[1]) + lo[1] - ipo for o in range(oh)])
    tx = np.array([mean_k(o, ow) * (hi[0] - lo[0]) + lo[0] - ipo for o in range(ow)])
    want = 3 * ty[:, None] - 2 * tx[None, :] + 1
    np.testing.assert_allclose(ref(case)[0], np.broadcast_to(want, (c, oh, ow)), rtol=1e-5, atol=1e-5)


@PROPS
@given(st.integers(0, 2**16), st.sampled_from(RA.ROI_FAMILIES + ("random", "roi-detection")))
def test_max_is_at_least_the_average_and_a_constant_stays_constant(seed, family):
    d = RA.RoiAlign1Desc(InputSizes=(2, 3, 7, 9), RoiSizes=(6, 4), DataType="FLOAT32", OutputSize=(3, 2),
                         MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=3)
    avg = RA1.make_case(d, {}, family, seed_offset=seed)
    mx = dataclasses.replace(avg, desc=d.replace(ReductionFunction="MAX"))
    assert (ref(mx) >= ref(avg) - 1e-4).all()
    x = avg.inputs()
    const = RA1.compute(avg, {**x, "X": np.full_like(x["X"], 2.5)}).y
    inside = np.isclose(const, 2.5) | np.isclose(const, 0.0) | ((const > 0) & (const < 2.5))
    assert inside.all()        # samples read 2.5, or 0 outside the input: averages in [0, 2.5]


def test_chunks_and_threads_do_not_change_a_bit(monkeypatch):
    d = RA.RoiAlign1Desc(InputSizes=(2, 5, 11, 13), RoiSizes=(9, 4), DataType="FLOAT32", OutputSize=(3, 4),
                         MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=UINT_MAX)
    case = RA1.make_case(d, {}, "roi-border")
    x = case.inputs()
    whole = RA1.compute(case, x, bound=True, touched=True)
    monkeypatch.setattr(RA_REFERENCE, "CHUNK_BYTES", 64)
    tiny = RA1.compute(case, x, bound=True, touched=True)
    assert np.array_equal(whole.y, tiny.y) and np.array_equal(whole.touched, tiny.touched)
    for f in ("bound", "reach"):                      # sums of another memory layout: the last bits may move
        np.testing.assert_allclose(getattr(whole, f), getattr(tiny, f), rtol=1e-12)


def test_a_judged_reference_comes_from_the_bounds_pass_with_the_same_bits(monkeypatch):
    """``verdict.judge`` announces a comparison (``will_compare``): the reference then comes from the
    bound's pass, bit for bit the plain reference's answer (AVERAGE and MAX, float16 and float32,
    non-finite data), and the bound of both sides of the judgement reuses that pass; other inputs
    make their own."""
    cases = [c for c in sweep("default", "roi_align1") if c.family in ("random", "nan", "inf", "roi-border")][::7][:12]
    cases += [c for c in sweep("default", "roi_align") if c.desc.ReductionFunction == "MAX"][:3]
    assert {c.desc.DataType for c in cases} >= {"FLOAT16", "FLOAT32"}
    calls = []
    real = RA.operator._RoiAlign.compute

    def counted(self, case, inputs, rd=None, **kw):
        calls.append(bool(kw.get("bound")))
        return real(self, case, inputs, rd, **kw)
    monkeypatch.setattr(RA.operator._RoiAlign, "compute", counted)
    for case in cases:
        op, x = case.operator, case.inputs()
        plain = op.reference(case, x)["Y"]
        whole = op.error_bound(case, x, {"Y": plain})["Y"]
        op.forget()
        calls.clear()
        op.will_compare(case, x)
        y = op.reference(case, x)["Y"]
        assert y.dtype == plain.dtype and np.array_equal(y.view(f"u{y.itemsize}"), plain.view(f"u{y.itemsize}"))
        for _ in range(2):                                    # the EP side, then the CPU side
            b = op.error_bound(case, x, {"Y": y})["Y"]
            for got, want in zip(b if isinstance(b, tuple) else (b,), whole if isinstance(whole, tuple) else (whole,)):
                assert np.array_equal(got, want)
        assert calls == [True], (case.id, calls)              # one pass for the reference and both bounds
        other = {**x, "X": x["X"].copy()}
        op.error_bound(case, other, {"Y": y})
        assert calls == [True, True]                          # other inputs: their own pass
        moved = {**x, "rois": x["rois"] + 1}                  # the same X, regions moved
        op.will_compare(case, x)
        op.reference(case, moved)
        op.error_bound(case, moved, {"Y": y})
        assert calls == [True, True, False, True]             # neither the reference nor the bound of x's
        op.forget()
        assert not [k for k in vars(op) if k.endswith("_memo")]


def test_the_roi_tensor_s_shape_does_not_change_the_answer():
    d = RA.RoiAlign1Desc(InputSizes=(1, 2, 6, 6), RoiSizes=(4, 4), DataType="FLOAT32", OutputSize=(2, 2))
    a = RA1.make_case(d, {}, "random")
    b = dataclasses.replace(a, desc=d.replace(RoiSizes=(1, 1, 4, 4), BatchIndicesSizes=(1, 1, 1, 4)))
    assert np.array_equal(ref(a), ref(b))
    fields = {f.name: f for f in RA1.layout(b.desc)}
    assert fields["ROITensor"].sizes == (1, 1, 4, 4) and fields["BatchIndicesTensor"].sizes == (1, 1, 1, 4)


def test_the_reference_refuses_more_work_than_it_computes(monkeypatch):
    monkeypatch.setattr(RA_REFERENCE, "MAX_SAMPLE_VALUES", 1000)
    case = ra_case(np.zeros((1, 4, 64, 64)), [[0, 0, 64, 64]], MaximumSamplesPerOutput=UINT_MAX)
    with pytest.raises(ValueError, match="more than the reference computes"):
        ref(case)


def test_the_error_bound_covers_a_float32_evaluation_of_the_formulas():
    """The page's formulas evaluated in float32 (ROI coordinates, scales, sample positions, weights,
    sums) stay within the bound of the float64 reference on the default profile's float32 cases."""
    for case in [c for c in sweep("default", "roi_align1") if c.dtype == "FLOAT32" and c.family in ("random", "ties",
                 "roi-border") and c.desc.InterpolationMode == "LINEAR" and not c.desc.AlignRegionsToCorners]:
        x = case.inputs()
        if RA1.input_problem(case, x):
            continue
        r = RA1.reference(case, x)
        got = _float32_formulas(case, x)
        stats = compare_side(case, x, r, {"Y": got})["Y"]
        assert stats.match, (case.id, stats.first[:2])


def _float32_formulas(case, x) -> np.ndarray:
    """The pseudo-code, literally, in float32 (one sample at a time; small cases only)."""
    d, f = case.desc, np.float32
    X, rois, b = x["X"].astype(f), x["rois"].astype(f), x["batch_indices"]
    n_, c_, h_, w_ = X.shape
    oh, ow = d.OutputSize
    out = np.zeros((len(rois), c_, oh, ow), f)
    for r, (x1, y1, x2, y2) in enumerate(rois):
        sx1, sy1 = x1 * f(d.SpatialScaleX), y1 * f(d.SpatialScaleY)
        szx, szy = x2 * f(d.SpatialScaleX) - sx1, y2 * f(d.SpatialScaleY) - sy1
        nx = int(np.clip(np.ceil(abs(szx) / f(ow)), d.MinimumSamplesPerOutput, d.MaximumSamplesPerOutput))
        ny = int(np.clip(np.ceil(abs(szy) / f(oh)), d.MinimumSamplesPerOutput, d.MaximumSamplesPerOutput))
        stx, sty = szx / f(ow * nx), szy / f(oh * ny)
        for oy in range(oh):
            for ox in range(ow):
                vals = []
                for ky in range(oy * ny, oy * ny + ny):
                    for kx in range(ox * nx, ox * nx + nx):
                        ty = (f(ky) - f(d.OutputPixelOffset)) * sty + sy1 - f(d.InputPixelOffset)
                        tx = (f(kx) - f(d.OutputPixelOffset)) * stx + sx1 - f(d.InputPixelOffset)
                        vals.append(_bilinear32(X[b[r]], ty, tx, f(d.OutOfBoundsInputValue)))
                vals = np.array(vals, f)
                out[r, :, oy, ox] = vals.max(axis=0) if d.ReductionFunction == "MAX" else vals.sum(axis=0) / f(len(vals))
    return out


def _bilinear32(plane, ty, tx, oob):
    """Detectron's bilinear interpolation of one point, in float32."""
    f = np.float32
    _, h, w = plane.shape
    if ty < -1 or ty > h or tx < -1 or tx > w:
        return np.full(plane.shape[0], oob, f)
    ty, tx = max(ty, f(0)), max(tx, f(0))
    ya, xa = int(ty), int(tx)
    if ya >= h - 1:
        ya = yb = h - 1
        ly = f(0)
    else:
        yb, ly = ya + 1, ty - f(ya)
    if xa >= w - 1:
        xa = xb = w - 1
        lx = f(0)
    else:
        xb, lx = xa + 1, tx - f(xa)
    return ((f(1) - ly) * (f(1) - lx) * plane[:, ya, xa] + (f(1) - ly) * lx * plane[:, ya, xb]
            + ly * (f(1) - lx) * plane[:, yb, xa] + ly * lx * plane[:, yb, xb])


# ---- open points: every reading passes, another answer fails -------------------------------------------


def _passes(case, y, semantics="onnx"):
    j = verdict_of(case, y, semantics)
    return j.verdict == "PASS", j


def test_edge_sample_either_the_border_element_or_outside():
    case = ra_case(RAMP, [[-1.5, 1.0, -0.5, 2.0]])        # one sample at exactly (1.5, -1)
    x = case.inputs()
    assert RA1.open_points(case, x) == ("edge-sample",)
    assert ref(case).ravel().tolist() == [6.0]            # the border element (Detectron's test)
    ok, j = _passes(case, [[[[0.0]]]])                    # outside: OutOfBoundsInputValue 0
    assert ok and "ep-took:edge-exclusive" in j.labels
    assert not _passes(case, [[[[3.0]]]])[0]


def test_align_extent_either_margins_or_corner_aligned():
    case = ra_case(RAMP, [[-0.5, 1.0, 2.0, 1.0]], OutputSize=(1, 2), AlignRegionsToCorners=True, OutputPixelOffset=0.0)
    assert "align-extent" in RA1.open_points(case, case.inputs())
    assert ref(case).ravel().tolist() == [4.0, 6.0]      # x = -0.5 clamped to 0
    ok, j = _passes(case, [[[[0.0, 6.0]]]], "dml")
    assert ok and "ep-took:corner-aligned" in j.labels
    assert not _passes(case, [[[[5.0, 6.0]]]], "dml")[0]


@pytest.mark.parametrize("answer,reading", [(6.0, None), (5.0, "half-down")])
def test_nearest_half_the_upper_even_or_lower_element(answer, reading):
    case = ra_case(RAMP, [[0.0, 0.0, 3.0, 3.0]], InterpolationMode="NEAREST_NEIGHBOR")   # (1.5, 1.5)
    assert RA1.open_points(case, case.inputs()) == ("nearest-half",)
    assert ref(case).ravel().tolist() == [10.0]           # (2, 2): upper on both axes
    ok, j = _passes(case, [[[[10.0]]]] if reading is None else [[[[5.0]]]], "dml")
    assert ok and (reading is None or f"ep-took:{reading}" in j.labels)
    assert _passes(case, [[[[10.0 if reading else 5.0]]]], "dml")[0]
    assert not _passes(case, [[[[7.0]]]], "dml")[0]


def test_sample_count_from_the_exact_or_the_float32_ratio():
    """30 * FLOAT(0.1) is 3.0000000447 exactly (4 samples per output) and 3.0 in float32 (3)."""
    sq = (np.arange(8.0) ** 2)[None, None, None, :].repeat(8, axis=2)
    case = ra_case(sq, [[0, 0, 30, 10]], SpatialScaleX=0.1, SpatialScaleY=0.1, MaximumSamplesPerOutput=UINT_MAX)
    x = case.inputs()
    assert RA1.open_points(case, x) == ("sample-count",)
    f32 = RA1.compute(case, x, dataclasses.replace(RA.reading(case.desc), count="float32")).y
    assert not np.allclose(f32, ref(case))
    ok, j = _passes(case, f32)
    assert ok and "ep-took:float32-count" in j.labels


def test_nonfinite_corners():
    x = RAMP.copy()
    x[0, 0, 1, 2] = np.inf
    case = ra_case(x, [[0.5, 0.5, 1.5, 1.5]])             # sample (1, 1): (1, 2) with weight 0
    assert RA1.open_points(case, case.inputs()) == ("nonfinite",)
    assert np.isnan(ref(case)).all()                      # 0 * inf
    ok, j = _passes(case, [[[[5.0]]]])                    # the weight-0 corner skipped
    assert ok and "ep-took:zero-weights-skipped" in j.labels
    assert _passes(case, [[[[np.inf]]]])[0]               # any non-finite value
    assert not _passes(case, [[[[4.0]]]])[0]


def test_overflow_of_a_difference_or_a_sum():
    big = np.float32(3e38)
    x = np.array([[[[big, -big], [big, -big]]]])
    case = ra_case(x, [[0.0, 0.0, 1.0, 1.0]])             # sample (0.5, 0.5): exactly 0
    assert RA1.open_points(case, case.inputs()) == ("overflow",)
    assert ref(case).ravel().tolist() == [0.0]
    ok, j = _passes(case, [[[[-np.inf]]]])                # a + t (b - a): b - a overflows (DirectML's answer)
    assert ok and "ep-took:overflow-to-non-finite" in j.labels
    assert not _passes(case, [[[[1e38]]]])[0]


def test_max_reading_of_the_onnx_text_on_graphs_only():
    """mode 'max' on one sample at (0.5, 0.5) of [[1, 10], [3, 40]]: the bilinear sample is 13.5;
    the largest weighted corner 0.25 * 40 = 10 (ONNX Runtime's CPU EP, onnx.reference)."""
    case = ra_case([[[[1.0, 10.0], [3.0, 40.0]]]], [[0, 0, 1, 1]], ReductionFunction="MAX")
    assert RA1.onnx_open_points(case, case.inputs()) == ("max-reading",)
    assert ref(case).ravel().tolist() == [13.5]
    ok, j = _passes(case, [[[[10.0]]]])
    assert ok and "ep-took:max-of-weighted-corners" in j.labels
    assert not _passes(case, [[[[10.0]]]], "dml")[0]      # the DirectML page: the maximum of the samples


def test_roi_min_size_of_output_half_pixel_on_graphs_only():
    case = ra_case(RAMP, [[1.0, 1.0, 1.5, 1.5]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    x = case.inputs()
    assert RA1.onnx_open_points(case, x) == ("roi-min-size",)
    clamped = RA1.compute(case, x, dataclasses.replace(RA.reading(case.desc), min_size=1.0)).y
    assert ref(case).ravel().tolist() == [6.25] and clamped.ravel().tolist() == [7.5]
    ok, j = _passes(case, clamped)
    assert ok and "ep-took:clamped-to-1" in j.labels
    assert not _passes(case, clamped, "dml")[0]
    half = ra_case(RAMP, [[1.0, 1.0, 1.5, 1.5]], InputPixelOffset=0.5)
    assert "roi-min-size" not in RA1.onnx_open_points(half, half.inputs())


def test_empty_grid_of_adaptive_sampling_on_graphs_only():
    case = ra_case(RAMP, [[1.5, 1.5, 1.5, 1.5]], InputPixelOffset=0.5, MaximumSamplesPerOutput=UINT_MAX)
    assert RA1.onnx_open_points(case, case.inputs()) == ("empty-grid",)
    assert ref(case).ravel().tolist() == [5.0]            # the point (1, 1)
    ok, j = _passes(case, [[[[0.0]]]])
    assert ok and "ep-took:no-samples-zero" in j.labels
    assert not _passes(case, [[[[0.0]]]], "dml")[0]


def test_each_open_point_names_the_documents_that_leave_it_open():
    """The record and the docs say which document leaves a point open: the DirectML pages alone
    (their own capabilities), the ONNX text alone (what the page decides), or both."""
    both = (DML_PAGES, ONNX_TEXT)
    want = {"edge-sample": both, "align-extent": (DML_PAGES,), "nearest-half": (DML_PAGES,), "sample-count": both,
            "nonfinite": both, "overflow": both, "max-reading": (ONNX_TEXT,), "roi-min-size": (ONNX_TEXT,),
            "empty-grid": (ONNX_TEXT,)}
    assert set(RA1.open_point_texts) == set(want)
    for op in (RA0, RA1):
        assert {k: tuple(op.point_documents(k)) for k in want} == want


# ---- the deviations of ONNX Runtime's CPU EP (1.32) and onnx.reference ---------------------------------------


def _ort(case):
    return ort_cpu_run([case])[case.id]


def _matches(case, got, **changes) -> bool:
    y = RA1.compute(case, case.inputs(), dataclasses.replace(RA.reading(case.desc), **changes)).y
    return compare_side(case, case.inputs(), {"Y": y}, got)["Y"].match


MAX_CASE = dict(x=[[[[1.0, 10.0], [3.0, 40.0]]]], rois=[[0, 0, 1, 1]])


@pytest.mark.parametrize("who", ["ort", "oref"])
def test_max_of_weighted_corners(who):
    case = ra_case(MAX_CASE["x"], MAX_CASE["rois"], ReductionFunction="MAX")
    got = _ort(case) if who == "ort" else onnx_reference_run(case)
    assert got["Y"].ravel().tolist() == [10.0] and _matches(case, got, max_of="weighted-corners")
    assert applies(f"{who}-ra1-max-weighted-corners", case)


@pytest.mark.parametrize("who", ["ort", "oref"])
def test_legacy_min_size(who):
    case = ra_case(RAMP, [[1.0, 1.0, 1.5, 1.5]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    got = _ort(case) if who == "ort" else onnx_reference_run(case)
    assert got["Y"].ravel().tolist() == [7.5] and _matches(case, got, min_size=1.0)
    assert applies(f"{who}-ra1-legacy-min-size", case)


@pytest.mark.parametrize("who", ["ort", "oref"])
def test_empty_grid_zero(who):
    case = ra_case(RAMP, [[1.5, 1.5, 1.5, 1.5]], InputPixelOffset=0.5, MaximumSamplesPerOutput=UINT_MAX)
    got = _ort(case) if who == "ort" else onnx_reference_run(case)
    assert got["Y"].ravel().tolist() == [0.0]
    assert applies(f"{who}-ra1-empty-grid-zero", case)


def test_ort_max_keeps_a_nan_only_in_first_place():
    """One sample at (0.5, 0.5) of a 2x2 input, every corner weighted 0.25: ONNX Runtime's
    max(max(max(w1*x1, w2*x2), w3*x3), w4*x4) with std::max skips a NaN in corners 2-4 (10 = 0.25 *
    40) and keeps one in corner 1; with two samples, a NaN sample after the first is skipped too.
    Every reading of the open points answers NaN for both inputs: the CPU EP's FAIL is labelled
    with the declared bug."""
    nan = math.nan
    second = ra_case([[[[1.0, nan], [3.0, 40.0]]]], [[0, 0, 1, 1]], ReductionFunction="MAX")
    first = ra_case([[[[nan, 10.0], [3.0, 40.0]]]], [[0, 0, 1, 1]], ReductionFunction="MAX")
    assert _ort(second)["Y"].ravel().tolist() == [10.0]
    assert np.isnan(_ort(first)["Y"]).all()
    assert np.isnan(ref(second)).all() and np.isnan(ref(first)).all()
    j = judge(second, second.inputs(), Outcome(True, "done", None, _ort(second)), None, None, ep_name="CPUExecutionProvider",
              ep_is_cpu=True)
    assert j.verdict == "FAIL" and "known-deviation:ort-ra1-max-nan-order" in j.labels
    assert applies("ort-ra1-max-nan-order", second) and not applies("ort-ra1-max-nan-order", ra_case(RAMP, [[0, 0, 3, 3]], ReductionFunction="MAX"))


def test_onnx_reference_max_keeps_a_nan_only_in_first_place():
    """onnx.reference takes the maximum with Python's max, which keeps a NaN only as its first
    argument: the same order-dependence as ONNX Runtime's, declared."""
    nan = math.nan
    second = ra_case([[[[1.0, nan], [3.0, 40.0]]]], [[0, 0, 1, 1]], ReductionFunction="MAX")
    first = ra_case([[[[nan, 10.0], [3.0, 40.0]]]], [[0, 0, 1, 1]], ReductionFunction="MAX")
    assert onnx_reference_run(second)["Y"].ravel().tolist() == [10.0]
    assert np.isnan(onnx_reference_run(first)["Y"]).all()
    assert not _passes(second, onnx_reference_run(second)["Y"])[0]
    assert applies("oref-ra1-max-nan-order", second)


def test_ort_inverted_region_with_adaptive_sampling_fails():
    case = ra_case(RAMP, [[3.0, 0.0, 1.0, 4.0]], OutputSize=(1, 2), InputPixelOffset=0.5,
                   MaximumSamplesPerOutput=UINT_MAX)
    got = _ort(case)
    assert isinstance(got, Failure) and "Integer overflow" in got.error
    assert applies("ort-ra1-inverted-adaptive", case)
    dev = next(d for d in RA1.deviations() if d.key == "ort-ra1-inverted-adaptive")
    assert dev.refuses and dev.explains_refusal(got.error)
    # an opset-22 refusal (no kernel) is not this deviation's
    assert not dev.explains_refusal("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for RoiAlign(22)")


def test_ort_inverted_on_both_axes_gives_zero():
    """Inverted on both axes the two negative counts multiply to a positive grid size: no failure,
    no sample, 0 (an answer of open point empty-grid); not the inverted-adaptive limitation."""
    case = ra_case(RAMP, [[3.0, 3.0, 0.0, 0.0]], OutputSize=(1, 1), InputPixelOffset=0.5,
                   MaximumSamplesPerOutput=UINT_MAX)
    got = _ort(case)
    assert not isinstance(got, Failure) and got["Y"].ravel().tolist() == [0.0]
    assert not applies("ort-ra1-inverted-adaptive", case)
    assert _passes(case, got["Y"])[0]


@pytest.mark.parametrize("who", ["ort", "oref"])
def test_an_outside_sample_reads_element_0_with_weight_0(who):
    x = RAMP.copy()
    x[0, 0, 0, 0] = np.inf
    case = ra_case(x, [[-5.0, 1.0, -4.0, 2.0]])           # wholly outside: 0 by the page, 0 * inf there
    got = _ort(case) if who == "ort" else onnx_reference_run(case)
    assert ref(case).ravel().tolist() == [0.0] and np.isnan(got["Y"]).all()
    assert RA1.open_points(case, case.inputs()) == ("nonfinite",) and _passes(case, got["Y"])[0]
    assert applies(f"{who}-ra1-nonfinite", case)


def test_ort_has_no_roi_align_22():
    case = dataclasses.replace(ra_case(RAMP, [[0, 0, 2, 2]]), opset=22)
    got = _ort(case)
    assert isinstance(got, Failure) and "RoiAlign(22)" in got.error
    assert applies("ort-ra1-opset-22", case)


def test_onnx_reference_shifts_roi_align_10_by_half_a_pixel():
    case = dataclasses.replace(ra_case(RAMP, [[1, 1, 2, 2]]), opset=10)
    assert ref(case).ravel().tolist() == [7.5]            # (1.5, 1.5): RoiAlign-10 has no shift
    assert onnx_reference_run(case)["Y"].ravel().tolist() == [5.0]      # (1, 1)
    assert _ort(case)["Y"].ravel().tolist() == [7.5]
    assert applies("oref-ra1-opset-10-half-pixel", case)


def test_onnx_reference_float16_overflows():
    """Samples clamped to the last row and column get Python-float weights there, and numpy keeps
    float16: four samples of 65504 summed in float16 are inf (the average is 65504)."""
    x = np.full((1, 1, 4, 4), 65504.0)
    case = ra_case(x, [[3.7, 3.7, 4.3, 4.3]], dtype="FLOAT16", InputPixelOffset=0.5, MinimumSamplesPerOutput=2,
                   MaximumSamplesPerOutput=2)           # samples at 3.35 and 3.65 on both axes: clamped to 3
    assert ref(case).ravel().tolist() == [65504.0]
    assert np.isinf(onnx_reference_run(case)["Y"]).all()
    assert applies("oref-ra1-float16-overflow", case)


# ---- graphs on ONNX Runtime's CPU EP, and DirectML itself (Wine): the direct lane and the DML EP ----------------


def _hand_cases() -> list[tuple[Case, list[float]]]:
    """The examples worked out by hand above (each expected value in its test's docstring)."""
    sq = (np.arange(8.0) ** 2)[None, None, None, :].repeat(8, axis=2)
    return [
        (ra_case(RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), InputPixelOffset=0.5), [2.5, 4.5, 10.5, 12.5]),
        (ra_case(RAMP, [[0, 0, 4, 2]], OutputSize=(2, 2)), [3.0, 5.0, 7.0, 9.0]),
        (ra_case(sq, [[0, 0, 5, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=100), [79 / 36, 529 / 36]),
        (ra_case(sq, [[6, 0, 0, 1]], OutputSize=(1, 2), MaximumSamplesPerOutput=100), [127 / 6, 19 / 6]),
        (ra_case(RAMP, [[1.25, 2.5, 1.25, 2.5]], OutputSize=(2, 2), MaximumSamplesPerOutput=100), [11.25] * 4),
        (ra_case(-1 - RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), InputPixelOffset=0.5, ReductionFunction="MAX"),
         [-3.5, -5.5, -11.5, -13.5]),
        (ra_case(RAMP, [[-2.0, 1.0, -1.0, 2.0]], OutOfBoundsInputValue=100.0), [100.0]),
        (ra_case(RAMP, [[-1.25, 1.0, -0.25, 2.0]], OutOfBoundsInputValue=100.0), [6.0]),
        (ra_case(RAMP, [[3.0, 1.0, 4.0, 2.0]], OutOfBoundsInputValue=100.0), [9.0]),
        (ra_case(RAMP, [[0, 1, 2, 1]], OutputSize=(1, 2), AlignRegionsToCorners=True, OutputPixelOffset=0.0), [4.0, 6.0]),
        (ra_case(RAMP, [[0.2, 0.2, 2.2, 1.2]], OutputSize=(1, 2), InterpolationMode="NEAREST_NEIGHBOR"), [5.0, 6.0]),
        (ra_case(RAMP, [[0, 0, 8, 2]], SpatialScaleX=0.5, SpatialScaleY=2.0), [10.0]),
    ]


def test_the_hand_examples_are_the_reference():
    for case, want in _hand_cases():
        np.testing.assert_allclose(ref(case).ravel(), want, rtol=1e-6, err_msg=case.id)


def test_graphs_on_ort_cpu_are_judged_pass_or_named():
    """The smoke profile's graphs on ONNX Runtime's CPU EP: each passes, or fails where a declared
    deviation of ONNX Runtime applies (so no finding of the CPU EP goes unnamed)."""
    cases = [c for c in sweep("smoke", "roi_align") + sweep("smoke", "roi_align1") if c.operator.expressible(c) is None]
    assert len(cases) >= 10
    got = ort_cpu_run(cases)
    unexplained = []
    for c in cases:
        g = got[c.id]
        if isinstance(g, Failure):
            if not any(d.explains_refusal(g.error) and applies(d.key, c) for d in c.operator.deviations()):
                unexplained.append((c.id, str(g)[:200]))
            continue
        j = judge(c, c.inputs(), Outcome(True, "done", None, g), None, None, ep_name="CPUExecutionProvider",
                  ep_is_cpu=True)
        if j.verdict != "PASS" and not any(lab.startswith("known-deviation:") for lab in j.labels):
            unexplained.append((c.id, j.verdict, j.reason[:200]))
    assert unexplained == []


def _run_lane(ep: str, cases: list[Case], tmp_path) -> dict[str, dict]:
    """Run ``cases`` through the bench on ``ep``; case id -> its result record (JSON)."""
    path, out = tmp_path / f"{ep}.json", tmp_path / ep
    casefile.dump(cases, path)
    cli.main(["run", "--ep", ep, "--cases", str(path), "--out", str(out), "--no-report", "--fail-on", "CRASH,TIMEOUT"])
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    return {r["case_id"]: r for r in recs if r.get("record") == "case"}


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
def test_directml_runs_the_hand_examples_and_answers_lowest_for_a_max_of_nan(dml_stack, tmp_path):
    """On the direct lane (DML_ROI_ALIGN1 through DirectML.dll): every example worked out by hand
    passes (the page's corrections hold on DirectML: Y scaled by the Y sizes, n samples not n + 1,
    ceil(|size| / out), a maximum started by its first sample, both interpolation modes, corner
    alignment, the clamp zones and OutOfBoundsInputValue). And a finding: a MAX whose every sample is
    NaN answers -FLT_MAX (the reduction starts at the type's lowest value and skips NaN), which no
    reading allows."""
    hand = _hand_cases()
    nan = math.nan
    all_nan = ra_case([[[[nan, nan], [nan, nan]]]], [[0, 0, 1, 1]], ReductionFunction="MAX", InputPixelOffset=0.5)
    recs = _run_lane("dml-direct", [c for c, _ in hand] + [all_nan], tmp_path)
    assert {c.id: recs[c.id]["verdict"] for c, _ in hand} == {c.id: "PASS" for c, _ in hand}
    r = recs[all_nan.id]
    assert r["verdict"] == "FAIL" and r["attribution"] == "EP_WRONG"
    assert [f["got"] for f in r["outputs"]["Y"]["first"]] == [float(np.finfo(np.float32).min)]


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
def test_the_dml_ep_runs_roi_align_10_as_half_pixel(dml_stack, tmp_path):
    """ONNX Runtime's DirectML EP: RoiAlign-16 half_pixel passes; RoiAlign-10 (output_half_pixel, its
    only mode: samples at 1 and 3, [5, 7, 13, 15]) answers half_pixel's [2.5, 4.5, 10.5, 12.5] (the
    samples shifted by half a pixel), while the CPU EP answers the ONNX text's: a finding of the EP."""
    half = ra_case(RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), InputPixelOffset=0.5)
    ten = ra_case(RAMP, [[0, 0, 4, 4]], OutputSize=(2, 2), opset=10)
    assert ref(ten).ravel().tolist() == [5.0, 7.0, 13.0, 15.0]
    recs = _run_lane("dml", [half, ten], tmp_path)
    assert recs[half.id]["verdict"] == "PASS", recs[half.id]["reason"]
    r = recs[ten.id]
    assert r["verdict"] == "FAIL" and r["attribution"] == "EP_WRONG", r["reason"]
    assert [f["got"] for f in r["outputs"]["Y"]["first"]] == [2.5, 4.5, 10.5, 12.5]


# ---- peer checks ----------------------------------------------------------------------------------------------
# Literals compared at the precision they were written with (4-6 significant digits)


def _literal_close(y, lit) -> bool:
    lit = np.asarray(lit, np.float64).reshape(y.shape)
    return bool((np.abs(y.astype(np.float64) - lit) <= 1e-4 + 1e-5 * np.abs(lit)).all())


def _readings_matching(case, lit) -> list[str]:
    x = case.inputs()
    r = RA1.expected(case, x)
    names = [""] if _literal_close(r["Y"], lit) else []
    pts = list(RA1.open_points(case, x)) + list(RA1.onnx_open_points(case, x))
    return names + [a.name for a in RA1.alternatives(case, x, r, pts) if _literal_close(a.outputs["Y"], lit)]


def _node_test(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (c,) = [c for c in collect_testcases(None) if c.name == name]
    a = {x.name: helper.get_attribute_value(x) for x in c.model.graph.node[0].attribute}
    (x, rois, batch), (y,) = c.data_sets[0]
    s = a["sampling_ratio"]
    case = ra_case(x, rois, batch, opset=c.model.opset_import[0].version,
                   OutputSize=(a["output_height"], a["output_width"]), SpatialScaleX=a["spatial_scale"],
                   SpatialScaleY=a["spatial_scale"], MinimumSamplesPerOutput=s, MaximumSamplesPerOutput=s,
                   ReductionFunction="MAX" if a.get("mode") == b"max" else "AVERAGE",
                   InputPixelOffset=0.5 if a["coordinate_transformation_mode"] == b"half_pixel" else 0.0)
    return case, y


@pytest.mark.parametrize("name,readings", [
    ("test_roialign_aligned_false", [""]),     # output_half_pixel, no region under a pixel: the reference
    ("test_roialign_aligned_true", [""]),      # half_pixel: the reference
    # the maximum of the weighted corners (ONNX's own reference implementation), not of the samples
    ("test_roialign_mode_max", ["max-of-weighted-corners"]),
])
def test_onnx_node_tests(name, readings):
    """ONNX's backend node tests (opset 22): aligned_false and aligned_true are the reference (onnx
    issue 3428's misalignment was RoiAlign-10 having no half-pixel mode: aligned_true is the
    half_pixel reading opset 16 added); mode_max is the ONNX-only reading max-reading."""
    case, y = _node_test(name)
    assert _readings_matching(case, y) == readings


#: ONNX Runtime's roialign_test.cc (microsoft/onnxruntime, onnxruntime/test/providers/cpu/object_detection,
#: revision 03b32b864c6b978501d0087f516931bebc117f54): the inputs shared by its *ModePositive tests
#: (5 zero-size regions, scale 1/16, 3x4 outputs, sampling_ratio 2) and their expected outputs
ORT_X = np.arange(75.0).reshape(1, 3, 5, 5)
ORT_ROIS = [[7., 5., 7., 5.], [-15., -15., -15., -15.], [-10., 21., -10., 21.], [13., 8., 13., 8.], [-14., 19., -14., 19.]]
ORT_AVG = [2.95833, 3.20833, 3.45833, 3.70833, 4.625, 4.875, 5.125, 5.375, 6.29167, 6.54167, 6.79167, 7.04167, 27.9583,
           28.2083, 28.4583, 28.7083, 29.625, 29.875, 30.125, 30.375, 31.2917, 31.5417, 31.7917, 32.0417, 52.9583, 53.2083,
           53.4583, 53.7083, 54.625, 54.875, 55.125, 55.375, 56.2917, 56.5417, 56.7917, 57.0417, *[0.0] * 12, *[25.0] * 12,
           *[50.0] * 12, 7.39583, 7.39583, 7.42708, 7.64583, 9.0625, 9.0625, 9.09375, 9.3125, 10.7292, 10.7292, 10.7604,
           10.9792, 32.3958, 32.3958, 32.4271, 32.6458, 34.0625, 34.0625, 34.0938, 34.3125, 35.7292, 35.7292, 35.7604,
           35.9792, 57.3958, 57.3958, 57.4271, 57.6458, 59.0625, 59.0625, 59.0938, 59.3125, 60.7292, 60.7292, 60.7604,
           60.9792, 4.27083, 4.52083, 4.77083, 5.02083, 5.9375, 6.1875, 6.4375, 6.6875, 7.60417, 7.85417, 8.10417, 8.35417,
           29.2708, 29.5208, 29.7708, 30.0208, 30.9375, 31.1875, 31.4375, 31.6875, 32.6042, 32.8542, 33.1042, 33.3542,
           54.2708, 54.5208, 54.7708, 55.0208, 55.9375, 56.1875, 56.4375, 56.6875, 57.6042, 57.8542, 58.1042, 58.3542,
           6.77083, 6.77083, 6.77083, 6.80208, 8.4375, 8.4375, 8.4375, 8.46875, 10.1042, 10.1042, 10.1042, 10.1354, 31.7708,
           31.7708, 31.7708, 31.8021, 33.4375, 33.4375, 33.4375, 33.4688, 35.1042, 35.1042, 35.1042, 35.1354, 56.7708,
           56.7708, 56.7708, 56.8021, 58.4375, 58.4375, 58.4375, 58.4688, 60.1042, 60.1042, 60.1042, 60.1354]
ORT_MAX = [2.10938, 2.95313, 3.375, 2.53125, 3.35938, 4.70313, 5.375, 4.03125, 3.51563, 4.92188, 5.625, 4.21875, 10.8984,
           15.2578, 17.4375, 13.0781, 17.3568, 24.2995, 27.7708, 20.8281, 18.1641, 25.4297, 29.0625, 21.7969, 19.6875,
           27.5625, 31.5, 23.625, 31.3542, 43.8958, 50.1667, 37.625, 32.8125, 45.9375, 52.5, 39.375, *[0.0] * 12,
           *[25.0] * 12, *[50.0] * 12, 5.625, 5.625, 5.625, 4.57031, 8.95833, 8.95833, 8.95833, 7.27865, 9.375, 9.375,
           9.375, 7.61719, 19.6875, 19.6875, 19.6875, 15.9961, 31.3542, 31.3542, 31.3542, 25.4753, 32.8125, 32.8125,
           32.8125, 26.6602, 33.75, 33.75, 33.75, 27.4219, 53.75, 53.75, 53.75, 43.6719, 56.25, 56.25, 56.25, 45.7031, 4.5,
           3.9375, 2.8125, 3.9375, 5.5, 4.8125, 3.4375, 4.8125, 4.58333, 4.01042, 2.86458, 3.9375, 23.25, 20.3438, 14.5313,
           18.0, 28.4167, 24.86458, 17.76042, 22.0, 23.25, 20.3437, 14.5312, 18.0, 42.0, 36.75, 26.25, 32.0625, 51.3333,
           44.9167, 32.08333, 39.1875, 42.0, 36.75, 26.25, 32.0625, 4.375, 4.375, 4.375, 4.375, 7.70833, 7.70833, 7.70833,
           7.70833, 9.375, 9.375, 9.375, 9.375, 21.875, 21.875, 21.875, 21.875, 26.9792, 26.9792, 26.9792, 26.9792,
           32.8125, 32.8125, 32.8125, 32.8125, 40.1042, 40.1042, 40.1042, 40.1042, 46.25, 46.25, 46.25, 46.25, 56.25, 56.25,
           56.25, 56.25]
#: the file's commented-out "DML has the correct outputs" of AvgModePositive/MaxModePositive (one value per
#: region and channel: every output of a zero-size region is its point)
ORT_DML_COMMENT = [2.0, 27.0, 52.0, 0.0, 25.0, 50.0, 6.5625, 31.5625, 56.5625, 3.3125, 28.3125, 53.3125, 5.9375, 30.9375,
                   55.9375]


def _ort_case(opset, ipo, mode="AVERAGE"):
    return ra_case(ORT_X, ORT_ROIS, opset=opset, OutputSize=(3, 4), SpatialScaleX=1 / 16, SpatialScaleY=1 / 16,
                   MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2, InputPixelOffset=ipo, ReductionFunction=mode)


def test_ort_avg_mode_positive_is_the_legacy_min_size_reading():
    """AvgModePositive (RoiAlign-10) and AvgModePositive_output_half_pixel: zero-size regions forced
    to size 1 (roi-min-size's clamped-to-1), which ONNX Runtime 1.32 still gives; the reference
    samples each region's point, as the file's commented-out "DML has the correct outputs" do."""
    for opset in (10, 16):
        case = _ort_case(opset, 0.0)
        assert _readings_matching(case, ORT_AVG) == ["clamped-to-1"]
        assert _literal_close(_ort(case)["Y"], ORT_AVG)
        assert _literal_close(ref(case), np.repeat(ORT_DML_COMMENT, 12))


def test_ort_avg_mode_positive_half_pixel_expects_an_older_clamp():
    """AvgModePositive_half_pixel expects the same legacy values under half_pixel: no reading gives
    them, and ONNX Runtime 1.32 no longer does (it forces the size only for output_half_pixel, as
    onnx.reference); with half_pixel the regions' points are sampled half a pixel up and left."""
    case = _ort_case(16, 0.5)
    assert _readings_matching(case, ORT_AVG) == []
    assert not _literal_close(_ort(case)["Y"], ORT_AVG)
    assert _literal_close(_ort(case)["Y"], ref(case))


def test_ort_max_mode_positive_is_weighted_corners_of_legacy_regions():
    case = _ort_case(10, 0.0, "MAX")
    assert _readings_matching(case, ORT_MAX) == ["max-of-weighted-corners+clamped-to-1"]


def test_ort_onnx_test_literals():
    """OnnxTest (BasicTest, float and double): the literals of ONNX's node test aligned_false at
    RoiAlign-10, four decimals: the reference."""
    case, y = _node_test("test_roialign_aligned_false")
    for dtype in ("FLOAT32", "FLOAT64"):
        c = ra_case(case.inputs()["X"], case.inputs()["rois"], opset=10, dtype=dtype, OutputSize=(5, 5),
                    MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
        assert _readings_matching(c, np.round(y, 4)) == [""]


def test_a_fixture_states_roi_align_s_own_error_bound(tmp_path):
    """A RoiAlign fixture describes the bound of its samples, not the bound of a window's average."""
    from onnx_dml_bench import fixtures as F
    case = RA1.curated()[0].case
    summary = F.export([case], tmp_path)
    (entry,) = summary.exported
    meta = json.loads((tmp_path / entry["id"] / "case.json").read_text())
    (out,) = meta["outputs"]
    assert out["compare"]["kind"] == "bound" and out["compare"]["description"] == RA1.bound_text
    assert "sum|x|/count" not in RA1.bound_text and "gamma(d + 7)" in RA1.bound_text


# ---- what the profiles cover ----------------------------------------------------------------------------------


def test_default_profile_covers_the_operator():
    cases = sweep("default", "roi_align1") + sweep("default", "roi_align")
    d = [c.desc for c in cases]
    assert {c.op for c in cases} == {"roi_align", "roi_align1"}
    assert {x.ReductionFunction for x in d} == set(RA.REDUCTIONS)
    assert {x.InterpolationMode for x in d} == set(RA.INTERPOLATIONS)
    assert {x.DataType for x in d} == {"FLOAT32", "FLOAT16", "FLOAT64"}
    assert {x.BatchIndicesDataType for x in d} == {"UINT32", "UINT64"}
    assert {c.opset for c in cases} == {10, 16, 22}
    assert {(x.InputPixelOffset, x.OutputPixelOffset) for x in d} >= {(0.5, -0.5), (0.0, -0.5), (0.0, 0.0),
                                                                        (0.25, -0.25)}
    assert any(x.AlignRegionsToCorners for x in d) and any(x.OutOfBoundsInputValue for x in d)
    assert any(x.SpatialScaleX != x.SpatialScaleY for x in d)
    assert {RA1.sampling_ratio(x) for x in d} >= {0, 1, 2, 3, None}
    assert set(RA.ROI_FAMILIES) | {"ties"} <= {c.family for c in cases}
    assert {len(x.RoiSizes) for x in d} == {2, 3, 4}
    points = set()
    for c in cases:
        x = c.inputs()
        if c.operator.input_problem(c, x) is None:
            points |= set(c.operator.open_points(c, x)) | set(c.operator.onnx_open_points(c, x))
    assert points >= {"edge-sample", "align-extent", "nearest-half", "nonfinite", "overflow", "max-reading",
                      "roi-min-size", "empty-grid"}
    assert sum(c.operator.expressible(c) is not None for c in cases) >= 20     # the direct lane's own


@pytest.mark.parametrize("profile", ["smoke", "default", "full"])
def test_sweeps_are_valid(profile):
    for c in sweep(profile, "roi_align1") + sweep(profile, "roi_align"):
        c.operator.validate(c.desc)
        c.operator.check_size(c.desc)


def test_network_cases_are_the_census_layers_at_detection_sizes():
    cases = RA.network_cases()
    layers = [x for x in RA.census_layers() if x["rois"] > 0]
    assert layers and all(x["sampling_ratio"] == 2 and not x["aligned"] for x in layers)
    shapes = {(c.desc.InputSizes, c.desc.num_rois, c.desc.OutputSize, c.desc.InputPixelOffset, c.dtype) for c in cases}
    for x in layers:
        for ipo in (0.0, 0.5):
            assert (x["input"], x["rois"], x["output"], ipo, "FLOAT16") in shapes
    for out in ((7, 7), (14, 14)):
        assert ((1, 256, 200, 272), 1000, out, 0.0, "FLOAT32") in shapes
    for c in cases:
        RA1.check_size(c.desc)
        assert RA1.expressible(c) is None and c.family == "roi-detection"


def test_a_census_export_gives_its_descriptor():
    """The ``networks`` profile's hook: torchvision's exported MultiScaleRoIAlign level (Slice,
    Squeeze, Cast, Slice, RoiAlign) at its feature map and RoI count."""
    class Export:
        nodes = ({"op": "Slice"}, {"op": "Squeeze"}, {"op": "Cast"}, {"op": "Slice"},
                 {"op": "RoiAlign", "attrs": {"coordinate_transformation_mode": "output_half_pixel", "mode": "avg",
                                               "output_height": 7, "output_width": 7, "sampling_ratio": 2,
                                               "spatial_scale": 0.25}})
        inputs = ((1, 256, 200, 272), (523, 5))
        opset = 20
    (d, variant), = RA1.from_export(Export)
    assert variant == {} and d.num_rois == 523 and d.OutputSize == (7, 7) and d.InputPixelOffset == 0.0
    assert d.MinimumSamplesPerOutput == d.MaximumSamplesPerOutput == 2 and d.SpatialScaleX == 0.25
    assert RA0.from_export(Export) == []                 # ROI_ALIGN has no output_half_pixel
    Export.inputs = ((1, 256, 200, 272), (0, 5))
    assert RA1.from_export(Export) == []                 # a level with no RoIs: DirectML has no empty tensor
    assert RA1.batched(d, 4).RoiSizes == (2092, 4)


#: the first allowed reading torchvision's answer matches, by kind of region, aligned and sampling_ratio
#: ("" the reference): aligned=False forces regions under a pixel to size 1 (roi-min-size), adaptive
#: sampling of an empty region has no sample and gives 0 (empty-grid)
TORCHVISION_READINGS = {
    ("inside", False): "", ("inside", True): "", ("border", False): "", ("border", True): "",
    ("empty", False): "clamped-to-1", ("subpixel", False): "clamped-to-1", ("subpixel", True): "",
    ("empty", True): {2: "", -1: "no-samples-zero"},
}


def test_torchvision_roi_align_is_the_reference_or_a_named_reading():
    """torchvision.ops.roi_align (aligned=False: output_half_pixel; aligned=True: half_pixel; adaptive
    for sampling_ratio -1), literals written by scripts/peer/torchvision_roi_align.py (their versions in
    the file's provenance). Each configuration matches the reference or the allowed reading above,
    within the bench's tolerance, and none other first."""
    data = json.loads((Path(__file__).parent / "data" / "roi_align_torchvision.json").read_text())
    assert data["provenance"]["torchvision"] and len(data["configs"]) == 64
    x = np.array(data["x"], np.float32).reshape(data["x_shape"])
    for c in data["configs"]:
        r, s = np.array(c["rois"]), c["sampling_ratio"]
        case = ra_case(x, r[:, 1:], r[:, 0].astype(int), OutputSize=tuple(c["output_size"]),
                       SpatialScaleX=c["spatial_scale"], SpatialScaleY=c["spatial_scale"],
                       MinimumSamplesPerOutput=max(s, 1), MaximumSamplesPerOutput=s if s > 0 else UINT_MAX,
                       InputPixelOffset=0.5 if c["aligned"] else 0.0)
        y = np.array(c["y"], np.float32).reshape(RA1.output_shape(case.desc))
        want = TORCHVISION_READINGS[(c["kind"], c["aligned"])]
        want = want[s] if isinstance(want, dict) else want
        xin = case.inputs()
        e = RA1.expected(case, xin)
        pts = list(RA1.open_points(case, xin)) + list(RA1.onnx_open_points(case, xin))
        got = [""] if compare_side(case, xin, e, {"Y": y})["Y"].match else []
        got += [a.name for a in RA1.alternatives(case, xin, e, pts)
                if compare_side(case, xin, a.outputs, {"Y": y}, nonfinite_ok=a.nonfinite_ok)["Y"].match]
        assert got[:1] == [want], (c["kind"], c["aligned"], s, c["output_size"], c["spatial_scale"], got)


@pytest.mark.parametrize("dtype,scale", [("FLOAT16", 2.0 ** -20), ("FLOAT64", 1e-310), ("FLOAT32", 1e-42)])
def test_subnormal_answers_are_judged_in_their_own_type(dtype, scale):
    """A region over subnormal values: the answer is subnormal. The absolute term of the bound is
    the data type's (a few of its smallest subnormals), so zeros, half the answer or its negation
    fail in every type; a float32 flush only where the lane allows one (tests/test_denorm_flush.py)."""
    x = (RAMP + 1.0) * scale
    case = ra_case(x, [[0.25, 0.5, 2.5, 2.75]], dtype=dtype, OutputSize=(2, 2), MinimumSamplesPerOutput=2,
                   MaximumSamplesPerOutput=2)
    y = ref(case)
    tiny = np.finfo(y.dtype).tiny
    assert (np.abs(y) < tiny).all() and (y != 0).all()
    assert _passes(case, y)[0]
    for wrong in (np.zeros_like(y), y / 2, -y):
        assert not _passes(case, wrong)[0], wrong


def test_a_positive_infinity_never_answers_the_other_infinity():
    """+inf in reach of the samples: +inf or NaN (0 * inf, inf - inf) may come out, -inf cannot."""
    x = RAMP.copy()
    x[0, 0, 1, 1] = np.inf
    case = ra_case(x, [[0.25, 0.25, 2.75, 2.75]], OutputSize=(1, 1), MinimumSamplesPerOutput=2,
                   MaximumSamplesPerOutput=2)
    assert "nonfinite" in RA1.open_points(case, case.inputs())
    assert _passes(case, np.array([[[[np.inf]]]]))[0] and _passes(case, np.array([[[[np.nan]]]]))[0]
    assert not _passes(case, np.array([[[[-np.inf]]]]))[0]


def test_an_overflow_of_positive_sums_is_never_nan():
    """float16 values near 65504, all positive, averaged over samples: a sum on the way can pass
    65504 (+inf), but nothing subtracts: NaN is no answer; a difference of corners, in a ramp of
    them, can overflow in the form a + t (b - a) only where two corners differ by more than 65504."""
    x = np.full((1, 1, 4, 4), 60000.0)
    case = ra_case(x, [[0.25, 0.25, 2.75, 2.75]], dtype="FLOAT16", OutputSize=(1, 1), MinimumSamplesPerOutput=2,
                   MaximumSamplesPerOutput=2)
    assert "overflow" in RA1.open_points(case, case.inputs())
    assert _passes(case, np.array([[[[np.inf]]]], np.float16))[0]
    assert not _passes(case, np.array([[[[np.nan]]]], np.float16))[0]
    assert not _passes(case, np.array([[[[-np.inf]]]], np.float16))[0]


def test_a_reading_that_moves_the_samples_is_judged_with_its_own_bound():
    """output_half_pixel, a region of 0.3 pixels on a flat input (0.1) beside one steep element
    (12345.678): the reference's samples stay on the flat part, the legacy size-1 clamp's reach the
    steep one. An answer of the clamp a few float32 roundings off its exact value (what ONNX Runtime's
    float32 arithmetic gives) is that reading's, within the clamp's own bound: a PASS
    (ep-took:clamped-to-1), though far outside the reference geometry's bound."""
    x = np.full(RAMP.shape, 0.1)
    x[0, 0, 3, 3] = 12345.678
    case = ra_case(x, [[1.3, 1.3, 1.6, 1.6]], MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    ins = case.inputs()
    clamped = RA.roi_align(ins["X"], np.asarray(ins["rois"]), np.asarray(ins["batch_indices"]), (1, 1),
                           dataclasses.replace(RA.reading(case.desc), min_size=1.0), bound=True)
    own = float(clamped.bound.ravel()[0])
    ref_bound = float(RA1.error_bound(case, ins, {"Y": ref(case)})["Y"].ravel()[0])
    assert own > 100 * ref_bound
    y = clamped.y.astype(np.float64) + own / 2
    ok, j = _passes(case, y.astype(np.float32))
    assert ok and "ep-took:clamped-to-1" in j.labels, j.reason
    assert not _passes(case, (clamped.y.astype(np.float64) + 2 * own + 1e-3).astype(np.float32))[0]


def test_the_points_a_moved_reading_touches_are_its_own():
    """A region of size 0 at x = 3.5 of a 4-wide input, output_half_pixel, one sample: the reference
    samples 3.5; the legacy size-1 clamp samples exactly 4.0, the input's width, where open point
    edge-sample opens (border element or outside). Both readings of that point, combined with the
    clamp, pass; the reference's own points do not have it."""
    case = ra_case(RAMP, [[3.5, 1.0, 3.5, 2.0]], MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=1)
    ins = case.inputs()
    assert "edge-sample" not in RA1.open_points(case, ins)
    base = dataclasses.replace(RA.reading(case.desc), min_size=1.0)
    for edge, name in (("inclusive", None), ("exclusive", "clamped-to-1+edge-exclusive")):
        y = RA.roi_align(ins["X"], np.asarray(ins["rois"]), np.asarray(ins["batch_indices"]), (1, 1),
                         dataclasses.replace(base, edge=edge)).y
        ok, j = _passes(case, y.astype(np.float32))      # inclusive: the last column, as the reference reads
        assert ok and (name is None or f"ep-took:{name}" in j.labels), (edge, j.reason)
    assert y.ravel().tolist() == [0.0]                  # outside: OutOfBoundsInputValue
