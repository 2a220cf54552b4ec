"""DML_ROI_POOLING_OPERATOR_DESC (``ops/roi_pooling.py``): its validation rules (the ROI tensor's
layouts, pooled sizes, the spatial scale), properties of its reference (bins, the whole-input
region), the deviations of ONNX Runtime's CPU EP and onnx.reference it declares, each shown on an
explicit configuration, and what the default profile covers of it."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops import roi_pooling
from onnx_dml_bench.ops.base import DescriptorError
from onnx_dml_bench.ops.roi_pooling import RoiPoolingDesc, roi_pool

from conftest import DEV, FLT_MAX, Failure, applies, bits_equal, mismatches, onnx_reference_run, reference_of, sweep
from op_cases import ort_one, roi_case
from op_rules import desc, named, rejects
from op_strategies import PROPS, SEEDS, data

pytest.importorskip("onnxruntime")

ROI = registry.OPERATORS["roi_pooling"]
# DML types the operator supports at its highest feature level (the page's table)


ROI_D = dict(InputSizes=[1, 2, 8, 8], RoiSizes=[3, 5], DataType="FLOAT32", SpatialScale=1.0, PooledSize=[2, 2])


# ---- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["INT8", "UINT8", "INT32", "FLOAT64"])
def test_roi_pooling_float_only(dtype):
    rejects(ROI, ROI_D, "DataType", dtype, "any feature level", DataType=dtype)


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_roi_pooling_floats_at_1_0(dtype):
    ROI.validate(desc(ROI, ROI_D, DataType=dtype, FeatureLevel="1.0"))


@pytest.mark.parametrize("sizes", [[2, 8, 8], [1, 1, 2, 8, 8]])
def test_roi_input_must_be_4d(sizes):
    rejects(ROI, ROI_D, "InputTensor.DimensionCount", "4-D", InputSizes=sizes)


@pytest.mark.parametrize("rois", [[3, 4], [3, 6], [5], [1, 2, 3, 5], [2, 1, 3, 5], [1, 1, 3, 4], [1, 3, 5]])
def test_roi_tensor_must_be_n_by_5(rois):
    rejects(ROI, ROI_D, "ROITensor.Sizes", "{1, 1, NumROIs, 5}", RoiSizes=rois)


@pytest.mark.parametrize("rois", [[3, 5], [1, 1, 3, 5]])
def test_roi_tensor_both_layouts_accepted(rois):
    d = desc(ROI, ROI_D, RoiSizes=rois)
    ROI.validate(d)
    assert ROI.output_shape(d) == (3, 2, 2, 2)


@pytest.mark.parametrize("rois", [[0, 5], [1, 1, 0, 5]])
def test_roi_count_at_least_one(rois):
    rejects(ROI, ROI_D, "ROITensor.Sizes", "NumROIs", RoiSizes=rois)


@pytest.mark.parametrize("pooled", [[0, 2], [2, 0], [0, 0]])
def test_zero_pooled_size(pooled):
    rejects(ROI, ROI_D, "PooledSize", ">= 1", PooledSize=pooled)


def test_pooled_size_must_be_2d():
    rejects(ROI, ROI_D, "PooledSize", "Height, Width", PooledSize=[2, 2, 2])


def test_pooled_size_as_mapping():
    d = desc(ROI, ROI_D, PooledSize={"Height": 3, "Width": 4})
    assert d.PooledSize == (3, 4)
    with pytest.raises(DescriptorError) as ei:
        desc(ROI, ROI_D, PooledSize={"Height": 3, "Depth": 4})
    named(ei.value, "PooledSize", "Height and Width")


@pytest.mark.parametrize("scale", [float("inf"), float("nan")])
def test_spatial_scale_finite(scale):
    rejects(ROI, ROI_D, "SpatialScale", "finite", SpatialScale=scale)


# ---- properties of the reference -------------------------------------------------------------


@PROPS
@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 7), st.integers(1, 7), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 4), st.sampled_from([1.0, 0.5, 0.25, 2.0]), SEEDS)
def test_roi_output_shape_is_the_reference_shape(n, c, h, w, rois, ph, pw, scale, seed):
    d = RoiPoolingDesc(InputSizes=(n, c, h, w), RoiSizes=(rois, 5), DataType="FLOAT32", SpatialScale=scale,
                       PooledSize=(ph, pw))
    ROI.validate(d)
    case = Case(ROI, d, 1, (), "roi-clamped", seed)
    assert ROI.reference(case, case.inputs())["Y"].shape == ROI.output_shape(d) == (rois, c, ph, pw)


@PROPS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 8), st.integers(1, 8), SEEDS,
       st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_roi_whole_input_1x1_is_the_per_channel_max(n, c, h, w, seed, dtype):
    x = data((n, c, h, w), dtype, seed, False)
    rois = np.array([[b, 0, 0, w - 1, h - 1] for b in range(n)], dtype=DML_TO_NUMPY[dtype])
    d = RoiPoolingDesc(InputSizes=(n, c, h, w), RoiSizes=(n, 5), DataType=dtype, SpatialScale=1.0, PooledSize=(1, 1))
    y = roi_pool(x, rois, d)
    assert y.shape == (n, c, 1, 1) and y.dtype == x.dtype
    assert np.array_equal(y[:, :, 0, 0], x.max(axis=(2, 3)))


@PROPS
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(1, 4), SEEDS)
def test_roi_bins_cover_the_region(h, w, ph, pw, seed):
    """The max over all bins of a box equals the max over the (clamped) box."""
    g = np.random.default_rng(seed)
    x = data((1, 1, h, w), "FLOAT32", seed, False)
    x1, x2 = sorted(g.integers(0, w, size=2))
    y1, y2 = sorted(g.integers(0, h, size=2))
    d = RoiPoolingDesc(InputSizes=(1, 1, h, w), RoiSizes=(1, 5), DataType="FLOAT32", SpatialScale=1.0, PooledSize=(ph, pw))
    y = roi_pool(x, np.array([[0, x1, y1, x2, y2]], np.float32), d)
    region = x[0, 0, y1:y2 + 1, x1:x2 + 1]
    assert y.max() == region.max()
    assert set(np.unique(y)) <= set(np.unique(region)) | {0.0}


@pytest.mark.parametrize("x1,included", [(0.49999997, True), (0.5, False), (1.4999999, False), (0.25, True)])
def test_roi_rounding_is_c_round(x1, included):
    """round() of the page, read as C's round() (half away from zero, as ORT does): 0.49999997
    (the largest float32 below 0.5) rounds to 0, so column 0 is inside the region."""
    x = np.zeros((1, 1, 1, 4))
    x[0, 0, 0, 0] = 7.0
    case = roi_case(x, [[0, x1, 0, 3, 0]], (1, 1))
    want = [7.0] if included else [0.0]
    assert ort_one(case)["Y"].ravel().tolist() == want
    assert reference_of(case)["Y"].ravel().tolist() == want


# ---- deviations: ONNX Runtime's CPU EP -------------------------------------------------------


def test_ort_roi_pool_all_neg_inf_bin():
    x = np.full((1, 1, 4, 4), -np.inf)
    x[0, 0, 3, 3] = 1.0
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))
    assert applies("ort-roi-starts-at-lowest", case)
    np.testing.assert_array_equal(reference_of(case)["Y"].ravel(), [-np.inf, -np.inf, -np.inf, 1.0])
    np.testing.assert_array_equal(ort_one(case)["Y"].ravel(), [-FLT_MAX, -FLT_MAX, -FLT_MAX, 1.0])


def test_ort_roi_pool_nan_is_a_bug():
    """ONNX Runtime 1.32 scans a bin row by row; a NaN replaces the running maximum and the next
    element replaces the NaN: a bin ending in NaN gives NaN, any other the maximum of what follows
    its last NaN. Bin [1, NaN, 0, 0] gives 0: neither NaN (propagated) nor 1 (ignored)."""
    assert DEV["ort-roi-nan"].kind == "bug"
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.nan               # first element of bin (0, 0), then zeros
    x[0, 0, :2, 2:] = np.nan             # bin (0, 1): NaN only
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))
    assert applies("ort-roi-nan", case)
    assert "nan" in ROI.open_points(case, case.inputs())
    assert bits_equal(reference_of(case)["Y"].ravel(), np.array([np.nan, np.nan, 0, 0], np.float32))
    assert bits_equal(ort_one(case)["Y"].ravel(), np.array([0, np.nan, 0, 0], np.float32))
    lost = roi_case(np.array([1.0, np.nan, 0.0, 0.0]).reshape(1, 1, 1, 4), [[0, 0, 0, 3, 0]], (1, 1))
    assert bits_equal(ort_one(lost)["Y"].ravel(), np.array([0.0], np.float32))
    for alt in ROI.alternatives(lost, lost.inputs(), reference_of(lost), ["nan"]):
        assert not bits_equal(alt.outputs["Y"].ravel(), np.array([0.0], np.float32))


def test_ort_roi_pool_bins_in_float_are_a_bug():
    """A 57-row region in 7 bins: the page's last bin is rows [49, 57); ONNX Runtime's float
    57/7 * 7 rounds to 57.000004 and its ceil takes row 57 too. A 56-row region is exact."""
    x = np.zeros((1, 1, 60, 4), np.float32)
    x[0, 0, 57, 0] = 5.0                       # just below the region
    case = roi_case(x, [[0, 0, 0, 3, 56]], (7, 1))
    assert applies("ort-roi-float-bins", case)
    assert reference_of(case)["Y"].ravel().tolist() == [0.0] * 7
    assert ort_one(case)["Y"].ravel().tolist() == [0.0] * 6 + [5.0]
    exact = roi_case(x, [[0, 0, 0, 3, 55]], (7, 1))
    assert not applies("ort-roi-float-bins", exact)
    assert not mismatches(exact, ort_one(exact))


def test_roi_float_bins_differ_at_the_sizes_float_rounding_moves():
    moved = [h for h in range(1, 130)
             if any((a != b).any() for a, b in zip(roi_pooling.bins(7, np.array([h]), np.array([0]), 999),
                                                   roi_pooling.float_bins(7, np.array([h]), np.array([0]), 999)))]
    assert moved == [57, 114, 121]


def test_ort_roi_pool_float16_session_fails():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2), dtype="FLOAT16")
    assert applies("ort-roi-float16", case)
    onnx.checker.check_model(ROI.to_onnx(case), full_check=True)     # a valid model
    got = ort_one(case)
    assert isinstance(got, Failure)
    assert "INVALID_GRAPH" in got.error and "Cast" in got.error
    assert DEV["ort-roi-float16"].explains_refusal(got.error)
    # the same data in float32 runs and agrees
    assert not mismatches(roi_case(x, [[0, 0, 0, 3, 3]], (2, 2)), ort_one(roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))))


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_ort_has_no_maxroipool_22_kernel(dtype):
    """MaxRoiPool-22 has no kernel in ONNX Runtime 1.32 (the CPU EP registers opsets 1 to 21): the
    refusal is 'ort-roi-opset-22' in both types, never the float16 Cast failure of opset 1."""
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2), dtype=dtype)
    case = Case(ROI, case.desc, 22, case.variant, case.family, case.seed, case.values)
    got = ort_one(case)
    assert isinstance(got, Failure) and "MaxRoiPool(22)" in got.error, got
    assert applies("ort-roi-opset-22", case) and not applies("ort-roi-float16", case)
    assert DEV["ort-roi-opset-22"].explains_refusal(got.error)
    assert not DEV["ort-roi-float16"].explains_refusal(got.error)


# ---- deviations: onnx.reference --------------------------------------------------------------


def test_onnx_reference_has_no_maxroipool():
    case = roi_case(np.arange(16.0).reshape(1, 1, 4, 4), [[0, 0, 0, 3, 3]], (2, 2))
    assert applies("oref-no-maxroipool", case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "MaxRoiPool" in got.error


# ---- coverage of the default profile ---------------------------------------------------------


def test_roi_coverage():
    cs = sweep("default", "roi_pooling")
    assert {c.family for c in cs} >= set(roi_pooling.ROI_FAMILIES)
    assert len({c.desc.SpatialScale for c in cs}) >= 3
    assert any(c.desc.num_rois > 1 and c.desc.InputSizes[0] > 1 for c in cs)
    assert any(c.desc.PooledSize[0] > c.desc.InputSizes[2] for c in cs)     # bins smaller than a pixel
    assert any(c.desc.PooledSize == (1, 1) for c in cs)

