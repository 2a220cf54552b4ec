"""Descriptor validation: one test per rule. Every error must name the DML field it is about, both
in ``DescriptorError.field`` and in the text (which starts with the field's name)."""
from __future__ import annotations

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops.base import DescriptorError

from conftest import PROFILES, sweep

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
ROI = registry.OPERATORS["roi_pooling"]
S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]

POOL = dict(InputSizes=[1, 1, 4, 4], DataType="FLOAT32", DimensionCount=2, Strides=[1, 1], WindowSize=[2, 2],
            StartPadding=[0, 0], EndPadding=[0, 0], Dilations=[1, 1])
POOL3 = dict(POOL, InputSizes=[1, 1, 4, 4, 4], DimensionCount=3, Strides=[1, 1, 1], WindowSize=[2, 2, 2],
             StartPadding=[0, 0, 0], EndPadding=[0, 0, 0], Dilations=[1, 1, 1])
ROI_D = dict(InputSizes=[1, 2, 8, 8], RoiSizes=[3, 5], DataType="FLOAT32", SpatialScale=1.0, PooledSize=[2, 2])
SD = dict(InputSizes=[1, 2, 4, 6], DataType="FLOAT32", BlockSize=2, Order="DEPTH_COLUMN_ROW")
D2S_D = dict(InputSizes=[1, 8, 2, 3], DataType="FLOAT32", BlockSize=2, Order="DEPTH_COLUMN_ROW")


def desc(op, base, **changes):
    return op.Desc.from_dict({**base, **changes})


def rejects(op, base, field, *words, **changes) -> DescriptorError:
    """The descriptor base+changes is rejected, naming ``field``; ``words`` appear in the text."""
    d = desc(op, base, **changes)
    with pytest.raises(DescriptorError) as ei:
        op.validate(d)
    return named(ei.value, field, *words)


def named(e: DescriptorError, field: str, *words) -> DescriptorError:
    assert e.field == field, f"field {e.field!r} (rule: {e.rule}), expected {field!r}"
    text = str(e)
    assert text.startswith(field), text
    assert e.rule and e.rule in text
    for w in words:
        assert w.lower() in text.lower(), f"{w!r} not in {text!r}"
    return e


def variant_rejects(op, d, field, *words, **variant):
    case = Case(op, d, op.default_opset, make_variant(**variant))
    with pytest.raises(DescriptorError) as ei:
        op.check_variant(case)
    return named(ei.value, field, *words)


# ---- the base descriptors are valid ---------------------------------------------------------------

@pytest.mark.parametrize("op,base", [(MP, POOL), (MP, POOL3), (AP, POOL), (AP, POOL3), (ROI, ROI_D),
                                     (S2D, SD), (D2S, D2S_D)], ids=lambda v: getattr(v, "key", ""))
def test_base_descriptors_are_valid(op, base):
    op.validate(desc(op, base))


# ---- pooling geometry (MaxPool and AveragePool share the rules) -------------------------------------

POOL_OPS = pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)


@POOL_OPS
@pytest.mark.parametrize("sizes", [[1, 4, 4], [1, 1, 1, 4, 4, 4], [16]])
def test_tensor_rank_must_be_4_or_5(op, sizes):
    rejects(op, POOL, "InputTensor.DimensionCount", "4 or 5", str(len(sizes)), InputSizes=sizes)


@POOL_OPS
def test_dimension_count_3_with_4d_tensor(op):
    rejects(op, POOL, "DimensionCount", "got 3", "4-D", DimensionCount=3,
            Strides=[1, 1, 1], WindowSize=[1, 1, 1], StartPadding=[0, 0, 0], EndPadding=[0, 0, 0],
            Dilations=[1, 1, 1])


@POOL_OPS
def test_dimension_count_2_with_5d_tensor(op):
    rejects(op, POOL3, "DimensionCount", "got 2", "5-D", DimensionCount=2)


@POOL_OPS
def test_dimension_count_other_than_2_or_3(op):
    rejects(op, POOL, "DimensionCount", "2 or 3", DimensionCount=1)


@POOL_OPS
@pytest.mark.parametrize("field", ["Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"])
@pytest.mark.parametrize("length", [1, 3])
def test_array_lengths_must_equal_dimension_count(op, field, length):
    rejects(op, POOL, field, "DimensionCount=2", f"got {length}", **{field: [1] * length})


@POOL_OPS
@pytest.mark.parametrize("field", ["Strides", "WindowSize", "Dilations"])
def test_zero_stride_window_or_dilation(op, field):
    rejects(op, POOL, field, ">= 1", **{field: [1, 0]})


@POOL_OPS
@pytest.mark.parametrize("field", ["Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"])
def test_negative_uint_fields(op, field):
    rejects(op, POOL, field, "UINT", **{field: [-1, 1]})


@POOL_OPS
@pytest.mark.parametrize("field", ["Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations"])
def test_uint_fields_above_uint32(op, field):
    rejects(op, POOL, field, "UINT", "4294967295", **{field: [1, 2**32]})


@POOL_OPS
def test_huge_padding_is_judged_without_allocating(op):
    """A pad of 4.4e9 (found by the case-file fuzz: validation once built per-axis masks of the
    output's size and ran out of memory) is no UINT; one of 2**31 - 1 (a valid UINT, an output
    axis of 2**31 + 3) is judged by arithmetic: its last windows lie wholly in padding."""
    rejects(op, POOL, "EndPadding", "UINT", EndPadding=[0, 4447683078])
    extra = {} if op is MP else {"IncludePadding": False}
    big = desc(op, POOL, EndPadding=[0, 2**31 - 1], **extra)
    assert op.output_shape(big)[-1] == 2**31 + 2
    rejects(op, POOL, "StartPadding", "entirely in padding", EndPadding=[0, 2**31 - 1], **extra)


def test_a_valid_descriptor_beyond_the_bench_is_refused_at_load():
    """AveragePool counting the padding: 2**31 - 1 of end padding is DirectML-valid; the case file
    refuses it, naming the output tensor, the bench's limit, and that it is not DirectML's."""
    from onnx_dml_bench.casefile import CaseFileError, case_from_dict
    big = desc(AP, POOL, EndPadding=[0, 2**31 - 1], IncludePadding=True)
    AP.validate(big)
    with pytest.raises(CaseFileError, match=r"OutputTensor.Sizes: OutputTensor \[1, 1, 3, 2147483650\] would have "
                                            r"6,442,450,950 elements, more than this bench runs .*not a DirectML rule"):
        case_from_dict({"op": AP.key, "descriptor": big.to_dict(), "inputs": {"family": "random", "seed": 1}})


@pytest.mark.parametrize("op,base,changes,field", [
    (MP, POOL, dict(InputSizes=[1, 1, 10**5, 10**5]), "InputTensor.Sizes"),
    (ROI, ROI_D, dict(PooledSize=[10**4, 10**4]), "OutputTensor.Sizes"),
    (S2D, SD, dict(InputSizes=[1, 2, 2**14, 2**14]), "InputTensor.Sizes"),
], ids=["pool-input", "roi-output", "s2d-input"])
def test_tensors_beyond_the_bench_limit_are_refused_at_load(op, base, changes, field):
    """Every operator: a valid descriptor whose tensor would not fit the bench is refused when the
    case is loaded, not with a MemoryError in the middle of a run."""
    from onnx_dml_bench.casefile import CaseFileError, case_from_dict
    d = desc(op, base, **changes).to_dict()
    with pytest.raises(CaseFileError, match=f"descriptor.{field}: .* more than this bench runs"):
        case_from_dict({"op": op.key, "descriptor": d, "inputs": {"family": "random", "seed": 1}})


@POOL_OPS
def test_zero_input_size(op):
    rejects(op, POOL, "InputTensor.Sizes", ">= 1", InputSizes=[1, 0, 4, 4])


@POOL_OPS
@pytest.mark.parametrize("changes", [
    dict(WindowSize=[5, 2]),                          # window larger than the input
    dict(WindowSize=[2, 2], Dilations=[1, 4]),        # dilated window (2-1)*4+1 = 5 > 4
    dict(InputSizes=[1, 1, 4, 4, 2], DimensionCount=3, Strides=[1, 1, 1], WindowSize=[1, 1, 3],
         StartPadding=[0, 0, 0], EndPadding=[0, 0, 0], Dilations=[1, 1, 1]),
])
def test_output_size_below_one(op, changes):
    e = rejects(op, POOL, "WindowSize", "< 1", **changes)
    assert "padded input" in str(e)


@POOL_OPS
def test_padding_makes_output_size_valid(op):
    """Same window as above, padded enough: valid (padding counts in the output size)."""
    op.validate(desc(op, POOL, WindowSize=[5, 2], StartPadding=[1, 0], EndPadding=[0, 0]))


def test_output_size_uses_dilation():
    """The page's output-size formula omits dilation: the corrected formula is the one applied."""
    d = desc(MP, POOL, InputSizes=[1, 1, 9, 9], WindowSize=[3, 3], Dilations=[2, 3], Strides=[2, 1])
    # floor((9 - ((3-1)*2+1)) / 2) + 1 = 3 ; floor((9 - ((3-1)*3+1)) / 1) + 1 = 3
    assert MP.output_shape(d) == (1, 1, 3, 3)


def test_average_pool_window_entirely_in_padding_without_include_padding():
    rejects(AP, POOL, "StartPadding", "entirely in padding", "divisor", StartPadding=[2, 0])
    # with IncludePadding the divisor is the window size: allowed
    AP.validate(desc(AP, POOL, StartPadding=[2, 0], IncludePadding=True))


# ---- data types per feature level ----------------------------------------------------------------------

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


@pytest.mark.parametrize("level", ["1.0", "2.1", "3.0", "4.0"])
def test_unknown_or_low_feature_level_for_average_pool(level):
    e = rejects(AP, POOL, "FeatureLevel", level, FeatureLevel=level)
    assert "6.2" in str(e) or "one of" in str(e)


@pytest.mark.parametrize("dtype", ["INT8", "UINT8", "INT32", "FLOAT64", "UINT64"])
def test_average_pool_float_only(dtype):
    rejects(AP, POOL, "DataType", dtype, "any feature level", DataType=dtype)


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_average_pool_floats_at_6_2(dtype):
    AP.validate(desc(AP, POOL, DataType=dtype, FeatureLevel="6.2"))


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("dtype", ["FLOAT64", "INT64", "UINT64"])
def test_space_depth_64_bit_types_need_5_0(op, base, dtype):
    op.validate(desc(op, base, DataType=dtype, FeatureLevel="5.0"))
    rejects(op, base, "DataType", dtype, "DML_FEATURE_LEVEL_5_0", DataType=dtype, FeatureLevel="2.1")


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"])
def test_space_depth_types_at_2_1(op, base, dtype):
    op.validate(desc(op, base, DataType=dtype, FeatureLevel="2.1"))


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_space_depth_needs_feature_level_2_1(op, base):
    rejects(op, base, "FeatureLevel", "2.1", FeatureLevel="1.0")


@pytest.mark.parametrize("dtype", ["INT8", "UINT8", "INT32", "FLOAT64"])
def test_roi_pooling_float_only(dtype):
    rejects(ROI, ROI_D, "DataType", dtype, "any feature level", DataType=dtype)


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_roi_pooling_floats_at_1_0(dtype):
    ROI.validate(desc(ROI, ROI_D, DataType=dtype, FeatureLevel="1.0"))


# ---- ROI pooling --------------------------------------------------------------------------------------

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


# ---- SpaceToDepth / DepthToSpace ------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [[1, 2, 5, 6], [1, 2, 4, 5], [1, 2, 3, 3]])
def test_block_size_must_divide_height_and_width(sizes):
    rejects(S2D, SD, "BlockSize", "divide", "height and width", InputSizes=sizes)


def test_space_to_depth_channels_need_not_divide():
    S2D.validate(desc(S2D, SD, InputSizes=[1, 3, 4, 6]))


@pytest.mark.parametrize("channels", [2, 6, 7, 12 + 1])
def test_block_size_squared_must_divide_channels(channels):
    rejects(D2S, D2S_D, "BlockSize", "divide", "channels", InputSizes=[1, channels, 2, 3])


def test_depth_to_space_spatial_sizes_need_not_divide():
    D2S.validate(desc(D2S, D2S_D, InputSizes=[1, 4, 3, 5]))


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_block_size_zero(op, base):
    rejects(op, base, "BlockSize", ">= 1", BlockSize=0)


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
@pytest.mark.parametrize("sizes", [[2, 4, 6], [1, 2, 4, 6, 1]])
def test_space_depth_rank_4(op, base, sizes):
    rejects(op, base, "InputTensor.DimensionCount", "4-D", InputSizes=sizes)


@pytest.mark.parametrize("op,base", [(S2D, SD), (D2S, D2S_D)], ids=["s2d", "d2s"])
def test_order_must_be_known(op, base):
    rejects(op, base, "Order", "DEPTH_COLUMN_ROW", Order="ROW_COLUMN_DEPTH")


@pytest.mark.parametrize("spelling", ["DCR", "dcr", "DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW", "DEPTH_COLUMN_ROW"])
def test_order_spellings(spelling):
    assert desc(S2D, SD, Order=spelling).Order == "DEPTH_COLUMN_ROW"


# ---- ONNX-side options must agree with the descriptor ------------------------------------------------------

@pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)
@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_auto_pad_same_with_other_pads(op, mode):
    d = desc(op, POOL, InputSizes=[1, 1, 7, 6], WindowSize=[3, 3], Strides=[2, 2],
             StartPadding=[0, 0], EndPadding=[0, 0])
    variant_rejects(op, d, "onnx.auto_pad", mode, "StartPadding", "EndPadding", auto_pad=mode)


@pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)
@pytest.mark.parametrize("mode,start,end", [("SAME_UPPER", [1, 0], [1, 1]), ("SAME_LOWER", [1, 1], [1, 0])])
def test_auto_pad_same_with_its_own_pads(op, mode, start, end):
    # 7x6 input, 3x3 window, stride 2: outputs 4x3, total pads 2 (height) and 1 (width); the odd
    # one goes to the end (SAME_UPPER) or the start (SAME_LOWER)
    d = desc(op, POOL, InputSizes=[1, 1, 7, 6], WindowSize=[3, 3], Strides=[2, 2], StartPadding=start,
             EndPadding=end)
    op.check_variant(Case(op, d, op.default_opset, make_variant(auto_pad=mode)))


@pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)
def test_auto_pad_valid_with_pads(op):
    d = desc(op, POOL, StartPadding=[1, 0])
    variant_rejects(op, d, "onnx.auto_pad", "VALID", auto_pad="VALID")


@pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)
def test_ceil_mode_with_auto_pad(op):
    """ceil_mode goes with every auto_pad (the ONNX attribute grid): under VALID it changes nothing
    by the ONNX text, so the descriptor is the VALID one."""
    d = op.Desc.from_dict({**POOL, "Strides": [2, 2]})
    op.check_variant(Case(op, d, op.default_opset, make_variant(ceil_mode=1, auto_pad="VALID")))


def test_storage_order_without_indices():
    variant_rejects(MP, desc(MP, POOL), "onnx.storage_order", "OutputIndicesTensor", storage_order=1)
    MP.check_variant(Case(MP, desc(MP, POOL, OutputIndicesDataType="UINT32"), 12, make_variant(storage_order=1)))


@pytest.mark.parametrize("op,base", [(MP, POOL), (AP, POOL), (S2D, SD), (ROI, ROI_D)], ids=lambda v: getattr(v, "key", ""))
def test_unknown_onnx_option(op, base):
    variant_rejects(op, desc(op, base), "onnx.bogus", "not an ONNX-side option", bogus=1)


@pytest.mark.parametrize("op,base,key,value", [(MP, POOL, "auto_pad", "SAME"), (MP, POOL, "ceil_mode", 2),
                                               (S2D, SD, "form", "fused")], ids=["auto_pad", "ceil_mode", "form"])
def test_bad_onnx_option_value(op, base, key, value):
    variant_rejects(op, desc(op, base), f"onnx.{key}", "must be one of", **{key: value})


# ---- Desc.from_dict --------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,base", [(MP, POOL), (AP, POOL), (ROI, ROI_D), (S2D, SD), (D2S, D2S_D)],
                         ids=lambda v: getattr(v, "key", ""))
def test_unknown_field(op, base):
    with pytest.raises(DescriptorError) as ei:
        op.Desc.from_dict({**base, "PaddingMode": 1})
    named(ei.value, "PaddingMode", "not a field", op.Desc.__name__)


@pytest.mark.parametrize("op,base", [(MP, POOL), (ROI, ROI_D), (S2D, SD)], ids=lambda v: getattr(v, "key", ""))
def test_missing_field(op, base):
    data = dict(base)
    del data["InputSizes"]
    with pytest.raises(DescriptorError) as ei:
        op.Desc.from_dict(data)
    named(ei.value, "InputSizes", "required")


def test_field_types():
    with pytest.raises(DescriptorError) as ei:
        MP.Desc.from_dict({**POOL, "Strides": 2})
    named(ei.value, "Strides", "list")
    with pytest.raises(DescriptorError) as ei:
        MP.Desc.from_dict({**POOL, "WindowSize": [2, "x"]})
    named(ei.value, "WindowSize[1]", "integer")
    with pytest.raises(DescriptorError) as ei:
        MP.Desc.from_dict({**POOL, "DataType": "FLOAT8"})
    named(ei.value, "DataType", "FLOAT8")
    with pytest.raises(DescriptorError) as ei:
        AP.Desc.from_dict({**POOL, "IncludePadding": "maybe"})
    named(ei.value, "IncludePadding", "boolean")
    with pytest.raises(DescriptorError) as ei:
        MP.Desc.from_dict([1, 2])
    named(ei.value, "descriptor", "mapping")


@pytest.mark.parametrize("op,base", [(MP, POOL3), (AP, POOL), (ROI, ROI_D), (S2D, SD), (D2S, D2S_D)],
                         ids=lambda v: getattr(v, "key", ""))
def test_to_dict_round_trip(op, base):
    d = desc(op, base)
    assert op.Desc.from_dict(d.to_dict()) == d


@pytest.mark.parametrize("spelling", ["FLOAT16", "float16", "f16", "DML_TENSOR_DATA_TYPE_FLOAT16"])
def test_data_type_spellings(spelling):
    assert desc(MP, POOL, DataType=spelling).DataType == "FLOAT16"


# ---- every case of every sweep validates -------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", list(registry.OPERATORS))
def test_every_sweep_case_validates(profile, op_key):
    op = registry.OPERATORS[op_key]
    cases = sweep(profile, op_key)
    assert cases
    bad = []
    for c in cases:
        try:
            op.validate(c.desc)
            op.check_variant(c)
        except DescriptorError as e:
            bad.append(f"{c.id}: {e}")
    assert not bad, "\n".join(bad[:20])
