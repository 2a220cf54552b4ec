"""DML_MAX_POOLING2_OPERATOR_DESC (``ops/max_pooling2.py``): its validation rules (data types and
index types per feature level, ONNX-side options), properties of its reference (values, indices,
ties, NaN), the deviations of ONNX Runtime's CPU EP and onnx.reference it declares, each shown on an
explicit configuration, and what the default profile covers of it. The geometry rules it shares
with AveragePool: tests/ops/test_pooling.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops import max_pooling2
from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc, max_pool

from conftest import DEV, FLT_MAX, Failure, applies, bits_equal, mismatches, onnx_reference_run, reference_of, sweep
from op_cases import ort_one, pool_case, pooling_cases, signbits
from op_rules import POOL, desc, rejects, variant_rejects
from op_strategies import MP_TYPES, PROPS, SEEDS, data, flat_index, geometry, mp_desc, out_positions, window_coords

pytest.importorskip("onnxruntime")

MP = registry.OPERATORS["max_pooling2"]
# DML types the operator supports at its highest feature level (the page's table)


# ---- validation ------------------------------------------------------------------------------


def test_output_size_uses_dilation():
    """The page's output-size formula omits dilation: the corrected formula is the one applied."""
    d = desc(MP, POOL, InputSizes=[1, 1, 9, 9], WindowSize=[3, 3], Dilations=[2, 3], Strides=[2, 1])
    # floor((9 - ((3-1)*2+1)) / 2) + 1 = 3 ; floor((9 - ((3-1)*3+1)) / 1) + 1 = 3
    assert MP.output_shape(d) == (1, 1, 3, 3)


@pytest.mark.parametrize("dtype,ok_at,bad_at", [
    ("FLOAT32", "2.1", None), ("FLOAT16", "2.1", None),
    ("INT8", "3.0", "2.1"), ("UINT8", "3.0", "2.1"),
    ("INT16", "5.0", "3.0"), ("INT32", "5.0", "3.0"), ("INT64", "5.0", "3.0"),
    ("UINT16", "5.0", "3.0"), ("UINT32", "5.0", "3.0"), ("UINT64", "5.0", "3.0"),
])
def test_max_pool_data_types_by_feature_level(dtype, ok_at, bad_at):
    MP.validate(desc(MP, POOL, DataType=dtype, FeatureLevel=ok_at))
    if bad_at:
        need = "3_0" if ok_at == "3.0" else "5_0"
        rejects(MP, POOL, "DataType", dtype, f"DML_FEATURE_LEVEL_{need}", bad_at, DataType=dtype, FeatureLevel=bad_at)


def test_max_pool_float64_at_no_level():
    rejects(MP, POOL, "DataType", "FLOAT64", "any feature level", DataType="FLOAT64", FeatureLevel="6.2")


def test_max_pool_needs_feature_level_2_1():
    rejects(MP, POOL, "FeatureLevel", "2.1", FeatureLevel="1.0")


@pytest.mark.parametrize("level", ["2.1", "3.0", "5.0"])
def test_max_pool_uint32_indices_from_2_1(level):
    MP.validate(desc(MP, POOL, OutputIndicesDataType="UINT32", FeatureLevel=level))


def test_max_pool_uint64_indices_need_5_0():
    MP.validate(desc(MP, POOL, OutputIndicesDataType="UINT64", FeatureLevel="5.0"))
    rejects(MP, POOL, "OutputIndicesTensor.DataType", "UINT64", "DML_FEATURE_LEVEL_5_0",
            OutputIndicesDataType="UINT64", FeatureLevel="3.0")


@pytest.mark.parametrize("idx", ["INT64", "INT32", "FLOAT32"])
def test_max_pool_indices_must_be_unsigned_32_or_64(idx):
    rejects(MP, POOL, "OutputIndicesTensor.DataType", "UINT32 or UINT64", OutputIndicesDataType=idx)


def test_max_pool_uint32_indices_cannot_address_more_than_2_32_elements():
    big = [1, 1, 65537, 65537]          # 4 295 098 369 elements > 2^32 (validation allocates nothing)
    rejects(MP, POOL, "OutputIndicesTensor.DataType", "2^32", InputSizes=big, OutputIndicesDataType="UINT32")
    MP.validate(desc(MP, POOL, InputSizes=big, OutputIndicesDataType="UINT64"))


def test_storage_order_without_indices():
    variant_rejects(MP, desc(MP, POOL), "onnx.storage_order", "OutputIndicesTensor", storage_order=1)
    MP.check_variant(Case(MP, desc(MP, POOL, OutputIndicesDataType="UINT32"), 12, make_variant(storage_order=1)))


# ---- properties of the reference: indices and ties -------------------------------------------


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT8", "INT32", "UINT64"]), SEEDS, st.booleans())
def test_value_at_returned_index_is_the_output(geo, dtype, seed, ties):
    d = mp_desc(geo, dtype, "UINT64")
    x = data(d.InputSizes, dtype, seed, ties)
    y, idx = max_pool(x, d, want_indices=True)
    assert idx.dtype == np.int64 and idx.shape == y.shape
    assert np.array_equal(x.ravel()[idx], y)


@PROPS
@given(geometry(), SEEDS, st.booleans())
def test_indices_point_inside_the_window(geo, seed, ties):
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, ties)
    y, idx = max_pool(x, d, want_indices=True)
    for pos in out_positions(y.shape):
        n, c, o = pos[0], pos[1], pos[2:]
        allowed = {flat_index(d, n, c, co) for co, inside in window_coords(d, o) if inside}
        assert int(idx[pos]) in allowed, (pos, int(idx[pos]))
        # and it is the window's maximum
        assert y[pos] == max(x.ravel()[i] for i in allowed)


@PROPS
@given(geometry(), SEEDS)
def test_column_major_indices_are_the_same_elements(geo, seed):
    """storage_order=1 (an ONNX-side option): the same element, its spatial offset column-major."""
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, True)
    _, row = max_pool(x, d, want_indices=True, storage_order=0)
    _, col = max_pool(x, d, want_indices=True, storage_order=1)
    spatial = d.InputSizes[2:]
    per = math.prod(spatial)
    nc, sp = np.divmod(row, per)
    coords = np.unravel_index(sp, spatial)                       # row-major spatial coordinates
    col_sp = np.ravel_multi_index(coords, spatial, order="F")
    assert np.array_equal(col, nc * per + col_sp)


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT16"]))
def test_ties_on_constant_input_give_the_first_element_in_the_window(geo, dtype):
    d = mp_desc(geo, dtype, "UINT32")
    x = np.full(d.InputSizes, 3, dtype=DML_TO_NUMPY[dtype])
    y, idx = max_pool(x, d, want_indices=True)
    assert (y == 3).all()
    for pos in out_positions(y.shape):
        first = next(co for co, inside in window_coords(d, pos[2:]) if inside)
        assert int(idx[pos]) == flat_index(d, pos[0], pos[1], first), pos


def test_tie_with_padding_sentinel_never_picks_padding():
    """Padding never wins, also when the input holds the padding's own value (-inf, iinfo.min)."""
    for dtype, low in (("FLOAT32", -np.inf), ("INT8", -128)):
        d = MaxPooling2Desc(InputSizes=(1, 1, 2, 2), DataType=dtype, DimensionCount=2, Strides=(1, 1),
                            WindowSize=(2, 2), StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1),
                            OutputIndicesDataType="UINT32")
        x = np.full((1, 1, 2, 2), low, dtype=DML_TO_NUMPY[dtype])
        y, idx = max_pool(x, d, want_indices=True)
        assert (y == low).all()
        # 3x3 windows over the padded 4x4; each index is the first in-window element inside the input
        assert idx.ravel().tolist() == [0, 0, 1, 0, 0, 1, 2, 2, 3]


# ---- properties of the reference: values -----------------------------------------------------


@PROPS
@given(geometry(pad=False), st.sampled_from(MP_TYPES), SEEDS)
def test_max_pool_1x1_window_stride_1_is_the_identity(geo, dtype, seed):
    sizes, _, k, _, _, dil = geo
    nd = len(k)
    d = mp_desc((sizes, (1,) * nd, (1,) * nd, (0,) * nd, (0,) * nd, dil), dtype, "UINT64")
    x = data(sizes, dtype, seed, False)
    y, idx = max_pool(x, d, want_indices=True)
    assert y.dtype == x.dtype and np.array_equal(y, x)
    assert np.array_equal(idx.ravel(), np.arange(x.size))
    y2, none = max_pool(x, d, want_indices=False)
    assert none is None and np.array_equal(y2, x)


@PROPS
@given(geometry(), st.sampled_from([None, "UINT32", "UINT64"]), SEEDS)
def test_max_pool_output_shape_is_the_reference_shape(geo, idx, seed):
    d = mp_desc(geo, "FLOAT32", idx)
    case = Case(MP, d, 12, (), "random", seed)
    out = MP.reference(case, case.inputs())
    assert out["Y"].shape == MP.output_shape(d)
    assert {k: v[0] for k, v in MP.outputs(case).items()} == {k: v.shape for k, v in out.items()}
    assert MP.output_shape(d)[2:] == tuple(
        (n + a + b - ((k - 1) * dd + 1)) // s + 1
        for n, a, b, k, dd, s in zip(d.InputSizes[2:], d.StartPadding, d.EndPadding, d.WindowSize, d.Dilations, d.Strides))


def test_max_pool_values_do_not_depend_on_indices_being_requested():
    """MAX_POOLING2's values are the same with or without an OutputIndicesTensor; with -0.0 and
    +0.0 tying, the reference's documented policy is the first element met (here -0.0)."""
    d = MaxPooling2Desc(InputSizes=(1, 1, 1, 8), DataType="FLOAT32", DimensionCount=2, Strides=(1, 2),
                        WindowSize=(1, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    x = np.array([-0.0, 0.0] * 4, np.float32).reshape(1, 1, 1, 8)
    with_idx, idx = max_pool(x, d, want_indices=True)
    without, _ = max_pool(x, d, want_indices=False)
    assert np.signbit(with_idx).all() and (idx.ravel() == [0, 2, 4, 6]).all()
    assert without.tobytes() == with_idx.tobytes(), np.signbit(without).ravel()


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8"]), SEEDS)
def test_max_pool_values_same_with_and_without_indices(geo, dtype, seed):
    d = mp_desc(geo, dtype)
    x = data(d.InputSizes, dtype, seed, True)
    a, _ = max_pool(x, d, want_indices=False)
    b, _ = max_pool(x, d, want_indices=True)
    assert np.array_equal(a, b)


@PROPS
@given(geometry(), SEEDS)
def test_max_pool_nan_propagates_with_the_index_of_the_first_nan(geo, seed):
    """The reference's documented NaN policy (an open point of the page)."""
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, False)
    g = np.random.default_rng(seed)
    x[g.random(x.shape) < 0.2] = np.nan
    y, idx = max_pool(x, d, want_indices=True)
    y2, _ = max_pool(x, d, want_indices=False)
    for pos in out_positions(y.shape):
        inside = [flat_index(d, pos[0], pos[1], co) for co, ok in window_coords(d, pos[2:]) if ok]
        nans = [i for i in inside if np.isnan(x.ravel()[i])]
        if nans:
            assert np.isnan(y[pos]) and np.isnan(y2[pos]) and int(idx[pos]) == nans[0]
        else:
            assert not np.isnan(y[pos]) and not np.isnan(y2[pos])


# ---- deviations: ONNX Runtime's CPU EP -------------------------------------------------------


@pytest.mark.parametrize("sizes,k", [((1, 1, 2, 2), (2, 2)), ((1, 1, 1, 1, 4), (1, 1, 2))], ids=["2d", "3d"])
def test_ort_max_pool_float32_all_neg_inf_window(sizes, k):
    x = np.full(sizes, -np.inf)
    case = pool_case(MP, sizes, k, (1,) * len(k), x=x)
    assert applies("ort-maxpool-f32-starts-at-lowest", case)
    ref = reference_of(case)["Y"]
    assert np.isneginf(ref).all()
    got = ort_one(case)["Y"]
    assert (got == -FLT_MAX).all(), got          # a value that is not in the window
    # with Indices (another kernel) ORT gives -inf
    with_idx = pool_case(MP, sizes, k, (1,) * len(k), x=x, OutputIndicesDataType="UINT32")
    assert not applies("ort-maxpool-f32-starts-at-lowest", with_idx)
    assert not mismatches(with_idx, ort_one(with_idx))
    # float16 starts at -inf: agreement
    f16 = pool_case(MP, sizes, k, (1,) * len(k), x=x, dtype="FLOAT16")
    assert not mismatches(f16, ort_one(f16))


def test_ort_max_pool_nan_is_partly_a_bug():
    """The DML page does not say how NaN takes part in the maximum; the reference propagates it
    (its documented policy choice), and NaN ignored is the other allowed reading. ONNX Runtime 1.32
    takes one or the other window by window, or neither: with Indices a NaN that comes first in its
    window is kept and a later one skipped; without Indices some kernel paths skip NaN (a window of
    NaN only: -FLT_MAX) and others let the last NaN stand. A bug, not an open point: a tensor with
    both kinds of window is outside every reading, and the bench fails it."""
    from onnx_dml_bench.outcome import Outcome
    from onnx_dml_bench.verdict import judge
    assert "NaN propagates" in MP.open_point_texts["nan"]
    assert DEV["ort-maxpool-nan"].kind == "bug"
    rows = [
        # x, window, stride, with indices, ORT (Y, index), an allowed reading for the whole tensor?
        ([np.nan, 1.0], 2, 1, False, ([1.0], None), True),                   # NaN skipped
        ([1.0, np.nan], 2, 2, False, ([np.nan], None), True),                # the last NaN stands
        ([np.nan, 1.0, 1.0, np.nan], 2, 2, False, ([1.0, np.nan], None), False),   # both ways at once
        ([1.0, np.nan], 2, 1, True, ([1.0], [0]), True),
        ([np.nan, 1.0], 2, 1, True, ([np.nan], [0]), True),                  # a leading NaN sticks
        ([np.nan, 1.0, 1.0, np.nan], 2, 2, True, ([np.nan, 1.0], [0, 2]), False),
        ([np.nan, np.nan], 2, 1, False, ([-FLT_MAX], None), False),          # a window of NaN only
    ]
    for x, k, st, idx, (ort_y, ort_i), allowed in rows:
        case = pool_case(MP, (1, 1, 1, len(x)), (1, k), (1, st), x=np.array(x),
                         OutputIndicesDataType="UINT32" if idx else None)
        assert applies("ort-maxpool-nan", case)
        assert "nan" in MP.open_points(case, case.inputs())
        got = ort_one(case)
        assert bits_equal(got["Y"].ravel(), np.array(ort_y, np.float32)), (x, idx, got["Y"])
        if idx:
            assert got["Indices"].ravel().tolist() == ort_i
        j = judge(case, case.inputs(), Outcome(True, "done", None, got), None, None,
                  ep_name="CPUExecutionProvider", ep_is_cpu=True)
        assert (j.verdict == "PASS") == allowed, (x, k, st, idx, j.reason)
        if not allowed:
            assert "known-deviation:ort-maxpool-nan" in j.labels


def test_ort_max_pool_signed_zero_is_an_open_point():
    x = np.array([0.0, -0.0, 0.0, -0.0])
    case = pool_case(MP, (1, 1, 1, 4), (1, 4), (1, 1), x=x)
    assert applies("ort-maxpool-signed-zero", case)
    assert "signed-zero" in MP.open_points(case, case.inputs())
    assert "first element met" in MP.open_point_texts["signed-zero"]
    assert signbits(ort_one(case)["Y"]) == [True]         # -0.0, not the first element met (+0.0)
    # with Indices both keep the first element met
    idx = pool_case(MP, (1, 1, 1, 4), (1, 4), (1, 1), x=x, OutputIndicesDataType="UINT32")
    assert not applies("ort-maxpool-signed-zero", idx)
    for out in (reference_of(idx), ort_one(idx)):
        assert signbits(out["Y"]) == [False] and out["Indices"].ravel().tolist() == [0]


# ---- deviations: onnx.reference --------------------------------------------------------------


def test_onnx_reference_int8_max_pool_stride_1_fails():
    x = np.arange(9) - 4
    case = pool_case(MP, (1, 1, 3, 3), (2, 2), (1, 1), x=x, dtype="INT8")
    assert applies("oref-maxpool-int8-stride1", case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "NaN" in got.error
    # stride 2 takes the other path: it runs and agrees; ORT agrees on both
    strided = pool_case(MP, (1, 1, 4, 4), (2, 2), (2, 2), x=np.arange(16) - 8, dtype="INT8")
    assert not applies("oref-maxpool-int8-stride1", strided)
    assert not mismatches(strided, onnx_reference_run(strided))
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_indices_stride_1():
    case = pool_case(MP, (1, 2, 4, 4), (2, 2), (1, 1), x=np.arange(32), OutputIndicesDataType="UINT64")
    assert applies("oref-maxpool-indices-stride1", case)
    ref, got = reference_of(case), onnx_reference_run(case)
    assert bits_equal(got["Y"], ref["Y"])
    # DML: the bottom-right element of each window, flat over the whole input (channel 1 at +16)
    assert ref["Indices"][0, 0].ravel().tolist() == [5, 6, 7, 9, 10, 11, 13, 14, 15]
    assert ref["Indices"][0, 1].ravel().tolist() == [21, 22, 23, 25, 26, 27, 29, 30, 31]
    assert not np.array_equal(got["Indices"], ref["Indices"])
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_pads_order_stride_1():
    # StartPadding (1, 1), EndPadding (0, 0): ONNX pads [1, 1, 0, 0] read as top 1, bottom 1
    case = pool_case(MP, (1, 1, 3, 3), (2, 2), (1, 1), (1, 1), (0, 0))
    assert applies("oref-maxpool-pads-order", case)
    assert reference_of(case)["Y"].shape == (1, 1, 3, 3)
    assert onnx_reference_run(case)["Y"].shape == (1, 1, 4, 2)
    # StartPadding (0, 1), EndPadding (0, 1) on a 1x3 window: fails outright
    case2 = pool_case(MP, (1, 1, 3, 4), (1, 3), (1, 1), (0, 1), (0, 1))
    assert applies("oref-maxpool-pads-order", case2)
    got = onnx_reference_run(case2)
    assert isinstance(got, Failure) and "zero-size" in got.error
    for c in (case, case2):
        assert not mismatches(c, ort_one(c))


def test_onnx_reference_max_pool_3d_pads_ignored_stride_1():
    case = pool_case(MP, (1, 1, 3, 4, 5), (2, 2, 2), (1, 1, 1), (0, 0, 1), (1, 0, 0))
    assert applies("oref-maxpool-3d-pads-ignored", case)
    assert reference_of(case)["Y"].shape == (1, 1, 3, 3, 5)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "IndexError" in got.error
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_same_lower_strided():
    case = pool_case(MP, (1, 1, 7, 6), (3, 3), (2, 2), variant={"auto_pad": "SAME_LOWER"})
    assert applies("oref-maxpool-same-lower", case)
    assert case.desc.StartPadding == (1, 1) and case.desc.EndPadding == (1, 0)
    assert reference_of(case)["Y"].shape == (1, 1, 4, 3)      # ceil(7/2), ceil(6/2)
    assert onnx_reference_run(case)["Y"].shape == (1, 1, 3, 3)
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_nan_is_an_open_point():
    # stride-1 path: NaN skipped
    c1 = pool_case(MP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([np.nan, 1.0]))
    # strided path: a leading NaN sticks, a later one is skipped
    c2 = pool_case(MP, (1, 1, 1, 4), (1, 2), (1, 2), x=np.array([1.0, np.nan, np.nan, 1.0]))
    for c, want in ((c1, [1.0]), (c2, [1.0, np.nan])):
        assert applies("oref-maxpool-nan", c)
        assert np.isnan(reference_of(c)["Y"]).all()
        assert bits_equal(onnx_reference_run(c)["Y"].ravel(), np.array(want, np.float32))


def test_onnx_reference_max_pool_signed_zero_is_an_open_point():
    case = pool_case(MP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([0.0, -0.0]), OutputIndicesDataType="UINT32")
    assert applies("oref-maxpool-signed-zero", case)
    assert signbits(reference_of(case)["Y"]) == [False]          # the first element met
    assert signbits(onnx_reference_run(case)["Y"]) == [True]     # np.max: the last


# ---- coverage of the default profile ---------------------------------------------------------


def test_max_pool_indices_and_storage_order():
    cs = pooling_cases("max_pooling2")
    assert {c.desc.OutputIndicesDataType for c in cs} == {None, "UINT32", "UINT64"}
    col = [c for c in cs if c.v.get("storage_order")]
    assert {c.desc.DimensionCount for c in col} == {2, 3}
    assert all(c.desc.OutputIndicesDataType for c in col)


def test_max_pool_not_expressible_types():
    ne = registry.OPERATORS["max_pooling2"].not_expressible()
    types = {n.data_type for n in ne if n.capability.startswith("InputTensor")}
    assert types == {"INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64"}
    for n in ne:
        assert n.op == "max_pooling2" and n.reason
    # the index types: ONNX's Indices are always INT64
    assert {n.data_type for n in ne if n.capability.startswith("OutputIndices")} == {"UINT32", "UINT64"}


@pytest.mark.parametrize("dtype", ["INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64"])
def test_max_pool_wide_integers_not_expressible_at_any_opset(dtype):
    from onnx_dml_bench.cases import Case
    op = registry.OPERATORS["max_pooling2"]
    d = sweep("smoke", "max_pooling2")[0].desc.replace(DataType=dtype)
    for opset in op.opsets:
        assert op.expressible(Case(op, d, opset)) is not None

