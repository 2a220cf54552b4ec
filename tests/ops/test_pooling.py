"""The rules MaxPool and AveragePool share (``ops/_pooling.py``): the descriptor's geometry, the
ONNX-side auto_pad and ceil_mode against the descriptor, the deviations of ONNX Runtime and
onnx.reference both operators show, and what the default profile covers of both."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.base import DescriptorError

from conftest import DEV, Failure, applies, expected_of, mismatches, onnx_mismatches, onnx_reference_run, reference_of
from op_cases import POOLING, ort_one, pool_case, pooling_cases
from op_rules import POOL, POOL3, desc, named, rejects, variant_rejects

pytest.importorskip("onnxruntime")

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]


#: the operators' own tag in the keys of the deviations MaxPool and AveragePool share
TAG = {MP: "maxpool", AP: "avgpool"}


# ---- the descriptor's geometry ---------------------------------------------------------------


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


# ---- ONNX-side options must agree with the descriptor ----------------------------------------


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


# ---- windows ---------------------------------------------------------------------------------


@settings(deadline=None, max_examples=400, derandomize=True, database=None)
@given(n=st.integers(1, 12), s=st.integers(1, 9), d=st.integers(1, 15), w=st.integers(1, 6),
       p=st.integers(0, 30), e=st.integers(0, 30))
def test_window_reality_by_arithmetic_equals_the_walk(n, s, d, w, p, e):
    """``_axis_windows_real`` decides by arithmetic (gcd period when the dilation is wider than the
    input) whether every window holds an input element; a walk over every window and element agrees."""
    m = (n + p + e - ((w - 1) * d + 1)) // s + 1
    assume(m >= 1)
    o = np.arange(m)[:, None] * s + np.arange(w)[None, :] * d - p
    walk = bool(((o >= 0) & (o < n)).any(axis=1).all())
    assert P._axis_windows_real(n, s, d, p, w, m) == walk


# ---- deviations both operators show ----------------------------------------------------------


@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_ort_same_pads_ignore_dilation(op, mode):
    case = pool_case(op, (1, 1, 8, 8), (3, 3), (2, 2), dil=(2, 2), variant={"auto_pad": mode}, opset=19)
    assert applies(f"ort-{TAG[op]}-same-pads-ignore-dilation", case)
    # DML (and ONNX's SAME rule): output ceil(8/2) = 4 per axis, pads from the dilated window (5)
    assert op.output_shape(case.desc) == (1, 1, 4, 4)
    assert reference_of(case)["Y"].shape == (1, 1, 4, 4)
    inferred = onnx.shape_inference.infer_shapes(op.to_onnx(case), strict_mode=True)
    assert [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim] == [1, 1, 4, 4]
    got = ort_one(case)
    assert got["Y"].shape == (1, 1, 3, 3)       # pads from the undilated window: total 1, not 5
    # without dilation the same SAME configuration agrees
    plain = pool_case(op, (1, 1, 8, 8), (3, 3), (2, 2), variant={"auto_pad": mode}, opset=19)
    assert not mismatches(plain, ort_one(plain))


@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
def test_valid_with_ceil_mode_where_the_sizes_differ_is_refused_as_an_open_point(op):
    # In 7, window 3, stride 2 (W: In 7, window 2, stride 3): the VALID text gives 3 and 2 windows with
    # or without ceil_mode; ONNX's shape inference and ONNX Runtime the explicit-pad ceil formula (3 and
    # 3). The documents disagree: the bench refuses to build the graph and names the open point.
    from onnx_dml_bench.ops.base import DescriptorError
    with pytest.raises(DescriptorError, match="auto-pad-ceil-mode"):
        pool_case(op, (1, 1, 7, 7), (3, 2), (2, 3), variant={"auto_pad": "VALID", "ceil_mode": 1},
                  opset=19 if op is AP else 12)
    # without ceil_mode ONNX Runtime agrees
    plain = pool_case(op, (1, 1, 7, 7), (3, 2), (2, 3), variant={"auto_pad": "VALID"}, opset=19 if op is AP else 12)
    assert not applies(f"ort-{TAG[op]}-valid-ceil-mode", plain)
    assert not onnx_mismatches(plain, ort_one(plain))


@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
def test_ort_same_negative_pad(op):
    # In 6, window 2, stride 3: out = ceil(6/3) = 2, pad total (2-1)*3 + 2 - 6 = -1
    case = pool_case(op, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    assert applies(f"ort-{TAG[op]}-same-negative-pad", case) == (op is MP)
    assert "same-negative-pad" in op.open_points(case, case.inputs())
    assert case.desc.StartPadding == (0, 0) and case.desc.EndPadding == (0, 0)
    # the bench's answer: pads clamped to 0, windows at 0 and 3
    np.testing.assert_array_equal(expected_of(case)["Y"].ravel(),
                                  [7, 10, 25, 28] if op is MP else [3.5, 6.5, 21.5, 24.5])
    got = ort_one(case)
    if op is MP:
        assert isinstance(got, Failure) and "padding values must be non-negative" in got.error, got
        assert DEV["ort-maxpool-same-negative-pad"].explains_refusal(got.error)
    else:
        assert not onnx_mismatches(case, got)      # ONNX Runtime's AveragePool-19 clamps the pads to 0 too


@pytest.mark.parametrize("opset,variant,fields,fails", [
    (12, {}, dict(OutputIndicesDataType="UINT32"), False),               # MaxPool with Indices clamps
    (12, {}, dict(DataType="UINT8"), False),                              # so does int8/uint8
    (12, {}, dict(DataType="FLOAT16"), True),                             # float16 without Indices fails
    (22, {}, dict(DataType="FLOAT16"), True),
])
def test_ort_max_pool_same_negative_pad_fails_only_without_indices_in_float(opset, variant, fields, fails):
    """ONNX Runtime 1.32: only the float32/float16 MaxPool kernel without Indices fails the run on a
    negative SAME pad total; with Indices, and for int8/uint8, the total is clamped to 0."""
    dtype = fields.pop("DataType", "FLOAT32")
    case = pool_case(MP, (1, 1, 6, 6), (2, 2), (3, 3), dtype=dtype, variant={"auto_pad": "SAME_UPPER", **variant},
                     opset=opset, **fields)
    assert applies("ort-maxpool-same-negative-pad", case) == fails
    got = ort_one(case)
    if fails:
        assert isinstance(got, Failure) and "padding values must be non-negative" in got.error
    else:
        assert not onnx_mismatches(case, got)


@pytest.mark.parametrize("opset,fails", [(10, True), (11, True), (19, False), (22, False)])
def test_ort_average_pool_same_negative_pad_by_opset(opset, fails):
    case = pool_case(AP, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_LOWER"}, opset=opset,
                     IncludePadding=True)
    assert applies("ort-avgpool-same-negative-pad", case) == fails
    got = ort_one(case)
    if fails:
        assert isinstance(got, Failure) and DEV["ort-avgpool-same-negative-pad"].explains_refusal(got.error)
    else:
        assert not onnx_mismatches(case, got)


def test_onnx_reference_same_negative_pad():
    mp = pool_case(MP, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    ap = pool_case(AP, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    assert applies("oref-maxpool-same-negative-pad", mp) and applies("oref-avgpool-same-negative-pad", ap)
    got = onnx_reference_run(mp)
    assert isinstance(got, Failure) or onnx_mismatches(mp, got)
    got = onnx_reference_run(ap)
    assert isinstance(got, Failure) and "negative" in got.error


# ---- coverage of the default profile ---------------------------------------------------------


@pytest.mark.parametrize("key", POOLING)
def test_2d_and_3d_pooling(key):
    assert {c.desc.DimensionCount for c in pooling_cases(key)} == {2, 3}


@pytest.mark.parametrize("key", POOLING)
@pytest.mark.parametrize("dims", [2, 3])
def test_geometry_features(key, dims):
    cs = [c for c in pooling_cases(key) if c.desc.DimensionCount == dims]
    feats = {
        "asymmetric padding": any(c.desc.StartPadding != c.desc.EndPadding for c in cs),
        "dilations": any(any(d > 1 for d in c.desc.Dilations) for c in cs),
        "padding": any(any(c.desc.StartPadding) or any(c.desc.EndPadding) for c in cs),
        "ceil_mode": any(c.v.get("ceil_mode") for c in cs),
    }
    if dims == 2:
        feats["batch and channel > 1"] = any(c.desc.InputSizes[0] > 1 and c.desc.InputSizes[1] > 1 for c in cs)
        feats["window equal to input"] = any(tuple(c.desc.WindowSize) == tuple(c.desc.InputSizes[2:]) for c in cs)
        feats["non-square window"] = any(len(set(c.desc.WindowSize)) > 1 for c in cs)
        # (3-D AveragePool has no such geometry in the default profile: checked in 2-D only)
        feats["stride larger than window"] = any(any(s > w for s, w in zip(c.desc.Strides, c.desc.WindowSize))
                                                 for c in cs)
    missing = [k for k, v in feats.items() if not v]
    assert not missing, f"{key} {dims}-D lacks {missing}"


@pytest.mark.parametrize("key", POOLING)
def test_batch_and_channel_above_one_in_3d(key):
    cs = [c for c in pooling_cases(key) if c.desc.DimensionCount == 3]
    assert any(c.desc.InputSizes[0] > 1 for c in cs) and any(c.desc.InputSizes[1] > 1 for c in cs)


@pytest.mark.parametrize("key", POOLING)
def test_auto_pad_values(key):
    assert {c.v.get("auto_pad", "NOTSET") for c in pooling_cases(key)} == set(P.AUTO_PAD)


def test_same_auto_pad_with_dilations():
    assert any(c.v.get("auto_pad", "").startswith("SAME") and any(d > 1 for d in c.desc.Dilations)
               for c in pooling_cases())


# ---- ONNX pads as a graph writes them (the ONNX-side option ``pads``) --------------------------

#: ONNX Runtime's test PoolTest.AveragePool_19_ceil_count_include_pad_1d (pool_op_test.cc): 1-D,
#: kernel 7, stride 3, pads 3/3, ceil_mode=1, count_include_pad=1; its input and expected output
ORT_CEIL_1D_X = [2.0903, 4.6493, 1.6320, -3.2051, 4.6975, 4.7296, 3.3653, -1.5815, -2.3832,
                 0.9628, -1.5899, -2.6820, 5.7529, 7.7346, -0.8910, -2.0151, 0.1313, -0.5374]
ORT_CEIL_1D_Y = [0.73807144, 2.5655572, 0.8032287, -0.09990001, 0.34911433, 1.0389, 1.4536142, -0.40353334]


def _ort_ceil_1d_entry(**descriptor):
    """ORT's 1-D test as a case-file entry: a 2-D pooling over H=1 whose graph carries pads 3/3 on W."""
    d = {"InputSizes": [1, 2, 1, 9], "DataType": "FLOAT32", "DimensionCount": 2, "WindowSize": [1, 7],
         "Strides": [1, 3], "Dilations": [1, 1], "IncludePadding": True, **descriptor}
    return {"op": "average_pooling1", "opset": 19, "descriptor": d,
            "onnx": {"ceil_mode": 1, "pads": [0, 3, 0, 3]},
            "inputs": {"values": {"X": ORT_CEIL_1D_X}}}


def _attrs(model) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in model.graph.node[-1].attribute}


def test_a_case_file_carries_the_onnx_pads_exactly():
    """ORT's own ceil_mode test (pads 3) is a case with pads 3, not the neighbouring graph with the
    smallest end pads that give the descriptor's output size (pads 2: another divisor on the last
    window); the descriptor's paddings follow from the pads; the expected output is ORT's literal."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict(_ort_ceil_1d_entry())
    assert tuple(case.desc.StartPadding) == (0, 3) and tuple(case.desc.EndPadding) == (0, 4)
    attrs = _attrs(AP.to_onnx(case))
    assert attrs["pads"] == [0, 3, 0, 3] and attrs["ceil_mode"] == 1 and attrs["count_include_pad"] == 1
    x = case.inputs()
    want = np.array(ORT_CEIL_1D_Y, np.float32).reshape(1, 2, 1, 4)
    np.testing.assert_allclose(AP.expected(case, x)["Y"], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ort_one(case)["Y"], want, rtol=1e-5, atol=1e-6)
    # the same case written back and read again: same pads, same id
    again = case_from_dict(case.to_dict())
    assert again.id == case.id and _attrs(AP.to_onnx(again))["pads"] == [0, 3, 0, 3]


def test_pads_that_contradict_the_descriptor_or_are_malformed_are_named():
    from onnx_dml_bench.casefile import CaseFileError, case_from_dict
    with pytest.raises(CaseFileError, match="EndPadding.*must be \\[0, 4\\]"):
        case_from_dict(_ort_ceil_1d_entry(StartPadding=[0, 3], EndPadding=[0, 3]))
    bad = _ort_ceil_1d_entry()
    bad["onnx"]["pads"] = [0, 3, 3]
    with pytest.raises(CaseFileError, match="onnx.pads.*4 non-negative integers"):
        case_from_dict(bad)
    bad["onnx"] = {"auto_pad": "SAME_UPPER", "pads": [0, 3, 0, 3]}
    with pytest.raises(CaseFileError, match="onnx.pads.*auto_pad NOTSET"):
        case_from_dict(bad)


def test_pads_the_descriptor_gives_anyway_are_one_case_with_the_earlier_id():
    """A ceil_mode graph written with the pads its descriptor gives it is the case of earlier case
    files (one id); records and case files now carry those pads."""
    from onnx_dml_bench.casefile import case_from_dict
    d = desc(AP, POOL, InputSizes=[1, 1, 6, 6], WindowSize=[2, 2], Strides=[2, 2], EndPadding=[1, 1])
    plain = AP.make_case(d, {"ceil_mode": 1}, "random", 19)
    pads = list(P.graph_pads(plain))
    written = AP.make_case(d, {"ceil_mode": 1, "pads": tuple(pads)}, "random", 19)
    assert written.id == plain.id and written.v == plain.v
    assert plain.to_dict()["onnx"] == {"ceil_mode": 1, "pads": pads}
    assert case_from_dict(plain.to_dict()).id == plain.id


@pytest.mark.parametrize("opset", [19, 22])
def test_a_window_starting_in_the_end_padding_is_a_case(opset, tmp_path):
    """pads 0/1 on H=4 with kernel 2 stride 2 and ceil_mode: the formula gives 3 rows, the third
    window starts at 4, in the end padding. The DML EP (no drop rule) answers 3 rows, ONNX
    Runtime's CPU EP 2. From opset 22 the text drops it: 3 rows fail. Before 22 (open point
    ceil-last-window) 3 rows pass, whatever the third holds, while a wrong value in the first two
    fails; so does a wrong value under the reading that drops it."""
    from onnx_dml_bench.casefile import case_from_dict, dump
    from onnx_dml_bench.judge import judge_outputs, load_sources, output_names
    from onnx import numpy_helper
    case = case_from_dict({"op": "average_pooling1", "opset": opset,
                           "descriptor": {"InputSizes": [1, 2, 4, 5], "DataType": "FLOAT32", "DimensionCount": 2,
                                          "WindowSize": [2, 2], "Strides": [2, 2], "Dilations": [1, 1],
                                          "IncludePadding": False},
                           "onnx": {"ceil_mode": 1, "pads": [0, 0, 1, 1]}})
    assert _attrs(AP.to_onnx(case))["pads"] == [0, 0, 1, 1]
    x = case.inputs()
    ref = AP.expected(case, x)["Y"]
    assert ref.shape == (1, 2, 2, 3)
    np.testing.assert_allclose(ort_one(case)["Y"], ref, rtol=1e-6)
    kept = np.concatenate([ref, np.full((1, 2, 1, 3), 123.0, np.float32)], axis=2)   # the DML EP's shape
    wrong = kept.copy()
    wrong[0, 0, 0, 0] += 5
    dump([case], tmp_path / "c.json")
    verdicts = {}
    for name, y in [("dropped", ref), ("kept", kept), ("kept-wrong", wrong)]:
        d = tmp_path / name / case.id
        d.mkdir(parents=True)
        (d / "output_0.pb").write_bytes(numpy_helper.from_array(y, output_names(case, "onnx")[0]).SerializeToString())
        (r,) = judge_outputs(load_sources(tmp_path / "c.json"), tmp_path / name, "EP", cpu=False)
        verdicts[name] = r.verdict
    assert verdicts == {"dropped": "PASS", "kept": "PASS" if opset < 22 else "FAIL", "kept-wrong": "FAIL"}
    (r,) = judge_outputs(load_sources(tmp_path / "c.json"), tmp_path / "kept-wrong", "EP", cpu=False)
    if opset < 22:      # the value that differs, not the shape of an allowed reading
        assert r.outputs["Y"].mismatches == 1 and "shape" not in r.labels, r.reason
    else:
        assert "shape" in r.labels


def test_the_default_profile_carries_exact_pads():
    """The sweep holds graphs whose pads no descriptor gives: ORT's ceil test at every AveragePool
    opset with ceil_mode, and windows starting in the end padding for both operators."""
    for op in (MP, AP):
        cases = [c for c in op.sweep("default") if c.v.get("pads") is not None]
        assert {c.opset for c in cases} == {o for o in op.opsets if o >= 10}
        assert any(P.onnx_out(c.desc.InputSizes[2], c.desc.WindowSize[0], c.desc.Strides[0],
                              c.v["pads"][0], c.v["pads"][2], True)[1] for c in cases)
    ort = [c for c in AP.sweep("default") if c.v.get("pads") == (0, 3, 0, 3) and c.desc.IncludePadding]
    assert {c.opset for c in ort} == {10, 11, 19, 22}


@pytest.mark.parametrize("op", [MP, AP], ids=lambda o: o.key)
def test_every_sweep_case_reads_back_from_its_case_file_entry(op):
    """Case files carry the graph's ONNX attributes (with ceil_mode its pads): every default-profile
    case written out and read back is the same case, with the same graph."""
    from onnx_dml_bench.casefile import case_from_dict
    for c in op.sweep("default"):
        back = case_from_dict(c.to_dict())
        assert back.id == c.id and back.desc == c.desc, c.id
        if c.v.get("ceil_mode"):
            assert _attrs(op.to_onnx(back)) == _attrs(op.to_onnx(c)), c.id


@POOL_OPS
def test_a_pad_as_large_as_the_kernel(op):
    """ONNX puts no limit on pads; ONNX Runtime refuses a pad as large as the kernel, and
    onnx.reference's AveragePool fails on such a graph (its window loop outruns its output)."""
    from onnx_dml_bench.casefile import case_from_dict
    d = {"InputSizes": [1, 1, 5, 7], "DataType": "FLOAT32", "DimensionCount": 2, "WindowSize": [3, 3],
         "Strides": [2, 2], "Dilations": [1, 1], **({"IncludePadding": False} if op is AP else {})}
    case = case_from_dict({"op": op.key, "opset": 19 if op is AP else 12, "descriptor": d,
                           "onnx": {"ceil_mode": 1, "pads": [1, 1, 3, 0]}})
    assert _attrs(op.to_onnx(case))["pads"] == [1, 1, 3, 0]
    assert applies(f"ort-{TAG[op]}-pad-not-below-kernel", case)
    got = ort_one(case)
    assert isinstance(got, Failure) and "Pad should be smaller than kernel" in got.error
    assert expected_of(case)["Y"].shape == (1, 1, 3, 4)
    oref = onnx_reference_run(case)
    if op is AP:
        assert applies("oref-avgpool-pad-not-below-kernel", case)
        assert isinstance(oref, Failure) and "IndexError" in oref.error
    else:
        assert not onnx_mismatches(case, oref)
    plain = case_from_dict({"op": op.key, "opset": 19 if op is AP else 12, "descriptor": d,
                            "onnx": {"ceil_mode": 1, "pads": [1, 1, 2, 0]}})
    assert not applies(f"ort-{TAG[op]}-pad-not-below-kernel", plain)
    assert not onnx_mismatches(plain, ort_one(plain))


@pytest.mark.parametrize("key,opset,idx", [("max_pooling2", 12, "UINT64"), ("average_pooling1", 19, None),
                                           ("average_pooling1", 22, None)])
def test_ort_shifts_the_windows_of_a_negative_same_upper_pad(key, opset, idx):
    """SAME_UPPER with a pad total of -2 (window 2, stride 5, 9 elements): ONNX Runtime 1.32 splits the
    total as the formula gives it (begin -1), so its windows shift one element into the input, the
    reading same-pads-shifted; it does not clamp the total to 0 (what the declared texts say)."""
    from onnx_dml_bench import registry
    from onnx_dml_bench.outcome import Outcome
    from onnx_dml_bench.verdict import judge
    from conftest import ort_cpu_run
    op = registry.get(key)
    kw = dict(OutputIndicesDataType=idx, FeatureLevel="5.0") if key == "max_pooling2" else dict(IncludePadding=False)
    d = op.Desc(InputSizes=(1, 1, 2, 9), DataType="FLOAT32", DimensionCount=2, Strides=(1, 5), WindowSize=(1, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), **kw)
    c = op.make_case(d, {"auto_pad": "SAME_UPPER"}, "random", opset)
    got = ort_cpu_run([c])[c.id]
    j = judge(c, c.inputs(), Outcome(True, "done", None, got), None, None, ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "PASS" and "ep-took:same-pads-shifted" in j.labels, j.reason
    dev = next(x for x in op.deviations() if x.key.endswith("-same-negative-pad") and x.key.startswith("ort-"))
    assert "shift" in dev.summary and "clamps the total" not in dev.summary


@settings(max_examples=400, deadline=None)
@given(n=st.integers(1, 30), k=st.integers(1, 8), s=st.integers(1, 4), d=st.integers(1, 4),
       begin=st.integers(-3, 5), out=st.integers(0, 12), a=st.integers(-4, 4), width=st.integers(0, 30))
def test_count_within_counts_each_windows_elements_inside(n, k, s, d, begin, out, a, width):
    """``count_within`` (its shortcut where every window lies inside included) against the window's
    coordinates listed one by one."""
    w = P.Window(n, k, s, d, begin, out)
    co = (np.arange(out)[:, None] * s - begin) + np.arange(k)[None, :] * d
    got = P.count_within(w, a, a + width)
    assert got.dtype == np.int64
    assert np.array_equal(got, ((co >= a) & (co < a + width)).sum(axis=1))


def test_windows_of_one_element_give_the_walks_bits(monkeypatch):
    """``window_mean``'s shortcut for windows of one element inside the input (strides, every data
    type and accumulator, NaN, infinities, -0.0, divisors other than 1) against the tile walk."""
    rng = np.random.default_rng(3)
    for t in range(300):
        dt, acc = (np.float16, np.float32, np.float64)[t % 3], (np.float16, np.float32, np.float64)[t // 3 % 3]
        nd = int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *(int(rng.integers(1, 9)) for _ in range(nd)))
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30, shape))).astype(dt)
        m = rng.random(shape)
        x[m < 0.05], x[(m > 0.05) & (m < 0.1)], x[(m > 0.1) & (m < 0.13)] = np.nan, -0.0, np.inf
        wins = []
        for n in shape[2:]:
            s, begin = int(rng.integers(1, 4)), -int(rng.integers(0, n))
            wins.append(P.Window(n, 1, s, 1, begin, (n - 1 + begin) // s + 1))
        divs = [rng.choice([1.0, 1.0, 2.0, 3.0], w.out) for w in wins]
        with np.errstate(invalid="ignore", over="ignore"):
            short = P.window_mean(x, wins, divs, acc)
            with monkeypatch.context() as mp:
                mp.setattr(P, "inside", lambda w, a, b: False)
                walked = P.window_mean(x, wins, divs, acc)
        assert short.dtype == walked.dtype == dt
        assert np.array_equal(short.view(f"u{short.itemsize}"), walked.view(f"u{walked.itemsize}")), (shape, wins)
