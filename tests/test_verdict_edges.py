"""Verdicts at the edges: a node no EP has a kernel for, a CPU-side deviation that labels the CPU
side only where it matches what happened, allowed sets that are exactly right, reasons that name
the points of the failing output and their documents, and the error bounds of long float16 sums
(the readings of open point sum-precision)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.casefile import case_from_dict
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.execute import base_record
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.signature import signature
from onnx_dml_bench.verdict import judge

MP = registry.get("max_pooling2")
AP = registry.get("average_pooling1")
ROI = registry.get("roi_pooling")

FALLBACK = ("[ONNXRuntimeError] : 1 : FAIL : This session contains graph nodes that are assigned to the default CPU "
            "EP, but fallback to CPU EP has been explicitly disabled by the user.")
NO_KERNEL_22 = ("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Failed to find kernel for MaxRoiPool(22) (node:'MaxRoiPool' "
                "ep:'CPUExecutionProvider'). Op with name (MaxRoiPool) domain () and type (MaxRoiPool) kernel is not "
                "supported in CPUExecutionProvider. Encountered following errors: ( Version mismatch. node_version: 22 "
                "kernel start version: 1 kernel_end_version: 21)")
CAST_F16 = ("This is an invalid model. In Node, (\"InsertedPrecisionFreeCast_c0_X\", Cast, \"\", -1) : (\"X\": "
            "tensor(float16),) -> (\"InsertedPrecisionFreeCast_c0_X\": tensor(float),) , Error Mismatched attribute "
            "type in 'InsertedPrecisionFreeCast_c0_X : to'. Expected: 'STRING', actual: 'INT'")
DML_POOLED = ("Exception during initialization: ...\\AbiCustomRegistry.cpp(519)\\onnxruntime.dll!00000000054DDB4C: "
              "(caller: 000000000550E962) Exception(12) tid(24) 80070057 Invalid parameter.")


def roi(dtype="FLOAT32", opset=1, pooled=(2, 2)) -> Case:
    d = ROI.Desc(InputSizes=(1, 1, 2, 2), RoiSizes=(1, 5), DataType=dtype, SpatialScale=1.0, PooledSize=pooled)
    return Case(ROI, d, opset, make_variant(), "explicit", 0, (("X", (1.0, 2.0, 3.0, 4.0)), ("rois", (0, 0, 0, 1, 1))))


def refused(text: str, stage: str = "session") -> Outcome:
    return Outcome(False, stage, text)


def three_way(case, ep: Outcome, cpu: Outcome | None, ep_name="DmlExecutionProvider"):
    return judge(case, case.inputs(), ep, cpu, None, ep_name=ep_name, ep_is_cpu=False, cpu_build="test")


def record_of(case, j):
    rec = base_record(case, "DmlExecutionProvider", j.verdict, j.reason)
    rec.attribution, rec.labels, rec.outputs, rec.cpu = j.attribution, j.labels, j.outputs, j.cpu
    return rec


# ------------------------------------------------------------------------------------------------
# a node no EP has a kernel for
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16"])
def test_a_node_no_ep_has_a_kernel_for_is_a_refusal_not_an_offload(dtype):
    """MaxRoiPool-22: the EP leaves the node unclaimed, ONNX Runtime assigns it to the CPU EP and
    refuses the session with its fallback words; the CPU EP's own session says it has no kernel
    either. Nobody can run the node: EP_REJECTED 'no kernel on any EP', not NOT_OFFLOADED."""
    case = roi(dtype, opset=22)
    j = three_way(case, refused(FALLBACK), refused(NO_KERNEL_22))
    assert j.verdict == "EP_REJECTED", j.reason
    assert j.reason.startswith("no kernel on any EP") and "MaxRoiPool(22)" in j.reason
    assert j.labels == ["no-kernel"]
    # the CPU side's refusal is a known limitation of ONNX Runtime; it labels the CPU side only
    assert j.cpu.labels == ["known-deviation:ort-roi-opset-22"]


def test_a_node_left_to_the_cpu_ep_that_has_a_kernel_is_not_offloaded():
    case = roi("FLOAT32", opset=1)
    ok = Outcome(True, "done", None, ROI.reference(case, case.inputs()))
    j = three_way(case, refused(FALLBACK), ok)
    assert j.verdict == "NOT_OFFLOADED" and "no-kernel" not in j.labels
    # without a CPU side there is no evidence either way: the runtime's words stand
    assert three_way(case, refused(FALLBACK), None).verdict == "NOT_OFFLOADED"


def test_the_eps_own_words_for_an_unclaimed_node_are_evidence_too():
    """onnxruntime-node's DML EP on float32 MaxRoiPool-22: 'Provider type for MaxRoiPool node ...
    is not set' (no EP claimed the node)."""
    case = roi("FLOAT32", opset=22)
    text = ("Exception during initialization: ...transformer_memcpy.cc:254 onnxruntime::TransformerMemcpyImpl::"
            "IsNodeCompatibleWithProvider !node_provider_type.empty() was false. Provider type for MaxRoiPool node with "
            "name 'MaxRoiPool' is not set.")
    cpu = refused("Could not find an implementation for MaxRoiPool(22) node with name 'MaxRoiPool'")
    j = three_way(case, refused(text), cpu)
    assert (j.verdict, j.labels) == ("EP_REJECTED", ["no-kernel"]) and j.reason.startswith("no kernel on any EP")
    assert j.cpu.labels == ["known-deviation:ort-roi-opset-22"]


def test_the_cpu_ep_under_test_without_a_kernel():
    case = roi("FLOAT16", opset=22)
    j = judge(case, case.inputs(), refused(NO_KERNEL_22), None, None, ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "EP_REJECTED" and j.reason.startswith("no kernel on any EP")
    # its own limitation, and not the float16 Cast failure of opset 1 it does not show here
    assert j.labels == ["known-deviation:ort-roi-opset-22", "no-kernel"]


# ------------------------------------------------------------------------------------------------
# a CPU-side deviation labels the CPU side, where it matches what happened
# ------------------------------------------------------------------------------------------------

def test_the_eps_own_refusal_carries_no_cpu_side_label_and_is_one_signature():
    """The DML EP refuses MaxRoiPool with pooled height != width (E_INVALIDARG). In float16 the CPU
    EP refuses too, for its own Cast bug: that labels the CPU side, not the EP's refusal, so float32
    and float16 are one failure signature."""
    f32, f16 = roi("FLOAT32", pooled=(1, 2)), roi("FLOAT16", pooled=(1, 2))
    ok32 = Outcome(True, "done", None, ROI.reference(f32, f32.inputs()))
    j32 = three_way(f32, refused(DML_POOLED), ok32)
    j16 = three_way(f16, refused(DML_POOLED), refused(CAST_F16))
    assert j32.verdict == j16.verdict == "EP_REJECTED"
    assert j16.labels == [] and j16.cpu.labels == ["known-deviation:ort-roi-float16"]
    assert signature(record_of(f32, j32)) == signature(record_of(f16, j16))


def test_a_cpu_deviation_labels_only_what_it_describes():
    """At opset 22 the CPU EP refuses float16 MaxRoiPool for a missing kernel, not for the Cast bug
    of opset 1: 'ort-roi-float16' does not match what happened."""
    f16 = roi("FLOAT16", opset=22, pooled=(1, 2))
    j = three_way(f16, refused(DML_POOLED), refused(NO_KERNEL_22))
    assert "known-deviation:ort-roi-float16" not in j.labels + j.cpu.labels
    assert j.cpu.labels == ["known-deviation:ort-roi-opset-22"]


def test_a_pass_with_the_cpu_ep_refused_keeps_the_label_on_the_cpu_side():
    case = roi("FLOAT16", pooled=(2, 2))
    ok = Outcome(True, "done", None, ROI.reference(case, case.inputs()))
    j = three_way(case, ok, refused(CAST_F16))
    assert j.verdict == "PASS" and not any(lab.startswith("known-deviation:") for lab in j.labels)
    assert j.cpu.labels == ["known-deviation:ort-roi-float16"]


def test_the_cpu_eps_wrong_answer_in_the_attribution_labels_the_record_too():
    """Where the CPU EP's wrong answer is part of the record (CPU_WRONG, BOTH_WRONG), its bug labels
    the record as well as the CPU side."""
    d = MP.Desc(InputSizes=(1, 1, 1, 4), DataType="FLOAT32", DimensionCount=2, Strides=(1, 2), WindowSize=(1, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType=None)
    case = Case(MP, d, 12, make_variant(), "explicit", 0, (("X", (-np.inf, -np.inf, 2.0, 3.0)),))
    lowest = {"Y": np.float32([[[[-np.finfo(np.float32).max, 3.0]]]])}
    j = three_way(case, Outcome(True, "done", None, {"Y": np.float32([[[[-np.inf, 3.0]]]])}),
                  Outcome(True, "done", None, lowest))
    assert j.finding == "CPU_WRONG"
    assert "known-deviation:ort-maxpool-f32-starts-at-lowest" in j.labels
    assert j.cpu.labels == ["known-deviation:ort-maxpool-f32-starts-at-lowest"]


# ------------------------------------------------------------------------------------------------
# allowed sets exactly right
# ------------------------------------------------------------------------------------------------

def ap_case(values, sizes, k, s, dtype="FLOAT32", inc=False, opset=19, variant=None):
    d = AP.Desc(InputSizes=sizes, DataType=dtype, DimensionCount=2, Strides=s, WindowSize=k, StartPadding=(0, 0),
                EndPadding=(0, 0), Dilations=(1, 1), IncludePadding=inc)
    return Case(AP, d, opset, make_variant(**(variant or {})), "explicit", 0, (("X", tuple(values)),))


def one(case, got):
    return three_way(case, Outcome(True, "done", None, got), None, ep_name="TestEP")


def test_an_input_infinity_does_not_open_the_overflow_reading():
    """X = [-inf, 1, 2, 3], window 1x2, stride 2: the exact answer [-inf, 2.5] is what every
    summation order gives; +inf or NaN in the first output is wrong."""
    case = ap_case((-np.inf, 1.0, 2.0, 3.0), (1, 1, 1, 4), (1, 2), (1, 2))
    assert "overflow" not in AP.open_points(case, case.inputs())
    assert one(case, {"Y": np.float32([[[[-np.inf, 2.5]]]])}).verdict == "PASS"
    for bad in (np.inf, np.nan):
        j = one(case, {"Y": np.float32([[[[bad, 2.5]]]])})
        assert j.verdict == "FAIL" and not any("overflow" in lab for lab in j.labels), (bad, j.labels)


def test_overflow_allows_only_the_infinities_the_terms_can_reach():
    big = 3.0e38
    pos = ap_case((big, big, 1.0, 1.0), (1, 1, 1, 4), (1, 2), (1, 2))
    assert one(pos, {"Y": np.float32([[[[np.inf, 1.0]]]])}).verdict == "PASS"
    for bad in (-np.inf, np.nan):
        assert one(pos, {"Y": np.float32([[[[bad, 1.0]]]])}).verdict == "FAIL"
    # both signs can pass FLT_MAX: +inf, -inf or NaN (an infinity of each sign met on the way)
    both = ap_case((big, big, -big, -big), (1, 1, 1, 4), (1, 4), (1, 1))
    for any_ in (np.inf, -np.inf, np.nan, 0.0):
        assert one(both, {"Y": np.float32([[[[any_]]]])}).verdict == "PASS", any_
    # an infinity in the input and an overflow the other way: NaN, or the input's infinity
    mixed = ap_case((np.inf, -big, -big, 1.0), (1, 1, 1, 4), (1, 4), (1, 1))
    assert one(mixed, {"Y": np.float32([[[[np.nan]]]])}).verdict == "PASS"
    assert one(mixed, {"Y": np.float32([[[[np.inf]]]])}).verdict == "PASS"
    assert one(mixed, {"Y": np.float32([[[[-np.inf]]]])}).verdict == "FAIL"


def test_nan_ignored_with_indices_on_a_window_of_nan_and_minus_infinity():
    """Window [NaN, -inf]: NaN ignored, the maximum of the window's numbers is -inf, at index 1."""
    d = MP.Desc(InputSizes=(1, 1, 1, 2), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(1, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType="UINT32")
    case = Case(MP, d, 12, make_variant(), "explicit", 0, (("X", (float("nan"), -np.inf)),))
    j = one(case, {"Y": np.float32([[[[-np.inf]]]]), "Indices": np.int64([[[[1]]]])})
    assert j.verdict == "PASS" and "ep-took:nan-ignored" in j.labels, j.reason
    assert one(case, {"Y": np.float32([[[[np.nan]]]]), "Indices": np.int64([[[[0]]]])}).verdict == "PASS"
    # -inf with the index of the NaN is neither reading
    assert one(case, {"Y": np.float32([[[[-np.inf]]]]), "Indices": np.int64([[[[0]]]])}).verdict == "FAIL"


# ------------------------------------------------------------------------------------------------
# reasons and names that say what happened
# ------------------------------------------------------------------------------------------------

def test_a_fail_reason_names_only_the_points_of_the_failing_output():
    """A case touching open point signed-zero (which concerns Y) that fails on Indices alone: the
    reason does not name signed-zero."""
    d = MP.Desc(InputSizes=(1, 1, 1, 4), DataType="FLOAT32", DimensionCount=2, Strides=(1, 2), WindowSize=(1, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType="UINT32")
    case = Case(MP, d, 12, make_variant(), "explicit", 0, (("X", (-0.0, 0.0, 1.0, 2.0)),))
    ref = MP.expected(case, case.inputs())
    j = one(case, {"Y": ref["Y"], "Indices": np.int64([[[[0, 2]]]])})
    assert j.verdict == "FAIL" and "wrong-index" in j.labels
    assert "open-point:signed-zero" in j.labels                       # the case does touch it
    assert "signed-zero" not in j.reason and "touches open point" not in j.reason


def test_a_tie_order_failure_under_storage_order_does_not_name_the_storage_rule():
    case = case_from_dict({
        "op": "max_pooling2", "opset": 12, "onnx": {"storage_order": 1},
        "descriptor": {"InputSizes": [1, 2, 2, 3], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                       "WindowSize": [2, 3], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": "UINT32", "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [0.0, 0.0, 9.0, 0.0, 9.0, 0.0] * 2}}})
    assert MP.rules(case, case.inputs()) == ("storage-order-batch-channel",)
    ref = MP.expected(case, case.inputs())
    tie = ref["Indices"].copy()
    tie[0, 0, 0, 0] = 3                              # (1,1) column-major: the other 9
    j = one(case, {"Y": ref["Y"], "Indices": tie})
    assert j.verdict == "FAIL" and "tie-order" in j.labels and "rule:storage-order-batch-channel" in j.labels
    assert "storage" not in j.reason
    wrong = ref["Indices"].copy()
    wrong[0, 0, 0, 0] = 0
    jw = one(case, {"Y": ref["Y"], "Indices": wrong})
    assert "storage-order-batch-channel (a rule of the ONNX text)" in jw.reason


def test_ceil_overhang_divisor_is_a_rule_of_the_onnx_text():
    """count_include_pad=1 with a ceil_mode window past the end pad: ONNX Runtime, PyTorch and the
    ONNX node tests count input and pad pixels only. A rule (one allowed answer), named as one:
    DirectML's whole-window divisor fails it, and the reason says so."""
    case = case_from_dict({
        "op": "average_pooling1", "opset": 19, "onnx": {"ceil_mode": 1},
        "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 2],
                       "WindowSize": [1, 3], "StartPadding": [0, 0], "EndPadding": [0, 1], "Dilations": [1, 1],
                       "IncludePadding": True, "FeatureLevel": "6.2"},
        "inputs": {"values": {"X": [1.0, 2.0, 3.0, 4.0]}}})
    ins = case.inputs()
    assert "ceil-overhang-divisor" in AP.rules(case, ins) and "ceil-overhang-divisor" not in AP.open_points(case, ins)
    assert AP.expected(case, ins)["Y"].ravel().tolist() == [2.0, 3.5]
    dml = {"Y": np.float32([[[[2.0, 7 / 3]]]])}           # DML: the whole window of 3
    j = one(case, dml)
    assert j.verdict == "FAIL" and "rule:ceil-overhang-divisor" in j.labels
    assert not any(lab.startswith("open-point:ceil") for lab in j.labels)
    assert "ceil-overhang-divisor (a rule of the ONNX text)" in j.reason and "touches open point" not in j.reason
    assert "outside every reading" not in AP.open_point_texts["ceil-overhang-divisor"]


def test_a_reason_says_which_document_leaves_the_point_open():
    onnx_only = case_from_dict({
        "op": "max_pooling2", "opset": 12, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 3], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 3],
                       "WindowSize": [1, 1], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": None, "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [-1.0, -2.0, -3.0]}}})
    j = one(onnx_only, {"Y": np.float32([[[[-3.0]]]])})
    assert j.verdict == "FAIL" and "same-negative-pad (left open by the ONNX text)" in j.reason
    assert "DirectML pages" not in j.reason
    d = MP.Desc(InputSizes=(1, 1, 1, 2), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(1, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType=None)
    nan = Case(MP, d, 12, make_variant(), "explicit", 0, (("X", (float("nan"), 1.0)),))
    j = one(nan, {"Y": np.float32([[[[7.0]]]])})
    assert "nan (left open by the DirectML pages and the ONNX text)" in j.reason


# ------------------------------------------------------------------------------------------------
# long sums: the readings of sum-precision and their bounds
# ------------------------------------------------------------------------------------------------

def gap_case(x: np.ndarray, dtype="FLOAT16") -> Case:
    """A global average (window = the whole 2-D input) of ``x`` (N, C, H, W)."""
    n, c, h, w = x.shape
    return ap_case(tuple(float(v) for v in x.ravel()), x.shape, (h, w), (1, 1), dtype=dtype)


def f16_sum_in_type(x16: np.ndarray) -> np.ndarray:
    """A recursive float16 sum of each (N, C) window, divided by the count and rounded to float16
    (the count itself need not be a float16: 65,536 is not one)."""
    n, c = x16.shape[:2]
    flat = x16.reshape(n, c, -1)
    acc = np.zeros((n, c), np.float16)
    for i in range(flat.shape[-1]):
        acc = (acc + flat[..., i]).astype(np.float16)
    return (acc.astype(np.float64) / flat.shape[-1]).astype(np.float16).reshape(n, c, 1, 1)


def test_a_correct_float16_global_average_over_12544_elements_passes():
    """The squeeze layer of a squeeze-and-excitation network: 112x112 = 12,544 elements per window.
    DirectML sums float16 in float32 and rounds once (1 ULP from the exact mean at most): a PASS,
    with no reading named (the reference's own); a wrong answer fails with a label that says what
    it is."""
    rng = np.random.default_rng(12544)
    x = rng.random((1, 4, 112, 112)).astype(np.float16)
    case = gap_case(x)
    ins = case.inputs()
    exact = AP.expected(case, ins)["Y"]
    wide = (x.astype(np.float32).sum(axis=(2, 3), keepdims=True, dtype=np.float32) / np.float32(12544)).astype(np.float16)
    assert np.abs(wide.astype(np.float64) - exact).max() <= 2 ** -11     # within an ULP
    j = one(case, {"Y": wide})
    assert j.verdict == "PASS", j.reason
    assert "open-point:sum-precision" in j.labels and not any(lab.startswith("ep-took:") for lab in j.labels)
    below, above = AP.reference_bound(case, ins, {"Y": exact})["Y"]
    assert (below > 0).all() and (above > 0).all() and np.isfinite(above).all()
    # a float16 running sum (the partial sum stagnates): no sound reduction's answer, labelled
    in_type = f16_sum_in_type(x)
    assert np.abs(in_type.astype(np.float64) - exact).max() > 0.1       # far from the mean
    j = one(case, {"Y": in_type})
    assert j.verdict == "FAIL" and "stalled-accumulator" in j.labels, j.reason
    # summed in float16 pairwise (a sound reduction in the data type): the other reading, named
    pairs = x.reshape(1, 4, -1)
    while pairs.shape[-1] > 1:
        if pairs.shape[-1] % 2:
            pairs = np.concatenate([pairs, np.zeros((1, 4, 1), np.float16)], axis=-1)
        pairs = (pairs[..., 0::2] + pairs[..., 1::2]).astype(np.float16)
    pairwise = (pairs.astype(np.float64) / 12544).astype(np.float16).reshape(exact.shape)
    j = one(case, {"Y": pairwise})
    assert j.verdict == "PASS" and (j.labels == ["open-point:sum-precision"] or "ep-took:summed-in-type" in j.labels), j.reason
    # all zeros (WebGPU's float16 average over a wide window): no reading's answer, and not "overflow"
    j = one(case, {"Y": np.zeros_like(exact)})
    assert j.verdict == "FAIL" and "wrong-zeros" in j.labels
    assert not any("overflow" in lab for lab in j.labels) and not re.search(r"(?<![\d.])0x the error bound", j.reason)
    # the wrong sign, or a hundred times the mean: outside both readings
    assert one(case, {"Y": -exact}).verdict == "FAIL"
    assert one(case, {"Y": (exact * 100).astype(np.float16)}).verdict == "FAIL"


def test_the_summed_in_type_reading_beyond_2048_elements_is_not_anything_goes():
    """(n-1)u >= 1 for float16 windows over 2,048 elements: gamma(n-1) is no bound there; the bench's
    bound of a sum in any order, k u sum|x|, still is, and so is the floor of a one-signed window."""
    rng = np.random.default_rng(256)
    x = rng.random((1, 2, 256, 256)).astype(np.float16)          # 65,536 elements per window
    from onnx_dml_bench.ops import _sums as SUM
    case = gap_case(x)
    ins = case.inputs()
    exact = AP.expected(case, ins)["Y"]
    st = SUM.stats(ins["X"], O.case_node(case)[1])
    for reading in SUM.readings(np.float16):
        below, above = SUM.bound(st, exact, np.float16, reading)
        assert np.isfinite(above).all() and (below >= 0).all() and (above >= 0).all()
        # summed in float16: more than the reference allowed (summed in float32, the few ULPs of the
        # float32 evaluations may all round to the reference: not checked)
        if reading == SUM.SUMMED_IN_TYPE:
            assert (below > 0).all() and (above > 0).all()
    zeros = one(case, {"Y": np.zeros_like(exact)})        # 65,536 rounds to infinity in float16
    assert zeros.verdict == "FAIL"
    assert zeros.labels == ["divisor-overflow", "open-point:sum-precision", "wrong-zeros"]
    assert one(case, {"Y": -exact}).verdict == "FAIL"
    assert one(case, {"Y": (exact * 64).astype(np.float16)}).verdict == "FAIL"
    stalled = one(case, {"Y": f16_sum_in_type(x)})
    assert stalled.verdict == "FAIL" and "stalled-accumulator" in stalled.labels


def test_overflow_applies_only_where_the_sum_can_really_pass_the_type():
    """A float16 window of 12,544 values in [0, 1): the sum stays below 65504 in every reading, so
    overflow is not an open point; summed in float16 over values near 30, it is (in that reading)."""
    rng = np.random.default_rng(1)
    small = gap_case(rng.random((1, 1, 112, 112)).astype(np.float16))
    assert AP.open_points(small, small.inputs()) == ()
    large = gap_case((rng.random((1, 1, 112, 112)) * 30 + 10).astype(np.float16))
    ins = large.inputs()
    assert AP.open_points(large, ins) == ("overflow",)
    exact = AP.expected(large, ins)["Y"]
    inf = one(large, {"Y": np.full_like(exact, np.inf)})
    assert inf.verdict == "PASS" and "ep-took:summed-in-type+overflow-to-non-finite" in inf.labels
    assert one(large, {"Y": np.full_like(exact, -np.inf)}).verdict == "FAIL"


def test_the_bound_never_collapses_for_long_windows():
    """Windows of 2 to 2^20 elements of mean 0.3 (not a value of either type): every reading keeps a
    finite bound, one that allows more than the reference alone wherever the sum is rounded in the
    data type (float16 summed in float32 may land on one value: its bound may be 0, as a window of
    one element divided by one)."""
    from onnx_dml_bench.ops import _sums as SUM
    for n in (2, 2047, 2048, 2049, 4096, 12544, 65536, 1 << 20):
        st = SUM.Stats(*(np.array([v], dtype=np.float64) for v in (n, n, n * 0.3, n * 0.3, 0.0, 0.6, 0.0, 0, 0, 0)))
        for dt in (np.float16, np.float32):
            for reading in SUM.readings(dt):
                below, above = SUM.bound(st, np.array([0.3], dt), dt, reading)
                assert np.isfinite(above).all() and (below >= 0).all(), (n, dt, reading)
                if SUM.accumulator(dt, reading) == dt:
                    assert (above + below > 0).all(), (n, dt, reading)


@pytest.mark.dml
@pytest.mark.xdist_group("wine")
@pytest.mark.parametrize("lane", ["dml", "dml-direct"])
def test_directml_float16_global_average_over_12544_elements_passes_on_both_lanes(lane, tmp_path):
    """The case file of a float16 global average over 112x112 = 12,544 elements (values in [0, 1),
    as after an activation), run on DirectML under Wine: a PASS on the DML EP and on DirectML
    itself, in the reference's own reading (no ep-took label)."""
    import json
    from onnx_dml_bench import cli
    from onnx_dml_bench.dml import select
    from onnx_dml_bench.results import read
    if select.find_stack() is None:
        pytest.skip("DirectML stack not installed; run `onnx-dml-bench setup dml`")
    x = np.random.default_rng(12544).random((1, 2, 112, 112)).astype(np.float16)
    case = {"op": "average_pooling1", "opset": 19,
            "descriptor": {"InputSizes": [1, 2, 112, 112], "DataType": "FLOAT16", "DimensionCount": 2,
                           "Strides": [1, 1], "WindowSize": [112, 112], "StartPadding": [0, 0],
                           "EndPadding": [0, 0], "Dilations": [1, 1], "IncludePadding": False, "FeatureLevel": "6.2"},
            "inputs": {"values": {"X": [float(v) for v in x.ravel()]}}}
    path = tmp_path / "gap.json"
    path.write_text(json.dumps({"schema": "onnx-dml-bench/cases/1", "cases": [case]}))
    out = tmp_path / lane
    assert cli.main(["run", "--ep", lane, "--cases", str(path), "--out", str(out), "--no-report"]) == 0
    (rec,) = read(out / "results.jsonl").records
    assert rec.verdict == "PASS", rec.reason
    assert "open-point:sum-precision" in rec.labels and not any(lab.startswith("ep-took:") for lab in rec.labels)
    assert rec.outputs["Y"].max_ulp <= 1


def test_one_wrong_shape_shared_by_the_ep_and_the_cpu_ep_is_both_wrong():
    """The CUDA EP and the CPU EP of ONNX Runtime 1.32 (reports/h100/cuda) give MaxPool SAME_UPPER
    with dilations 2 one output shape, from the undilated window: no open point of values (nan,
    signed-zero) concerns a wrong shape, so two implementations agreeing there dispute nothing:
    BOTH_WRONG, not REFERENCE_DISPUTED."""
    from conftest import ort_cpu_run
    desc = MP.Desc(InputSizes=(2, 1, 8, 9), DataType="FLOAT32", DimensionCount=2, Strides=(2, 3), WindowSize=(3, 2),
                   StartPadding=(1, 0), EndPadding=(2, 0), Dilations=(2, 2), FeatureLevel="5.0")
    for idx, fam, want in ((None, "negzero", "mp2-f32-2d-k3x2-s2x3-p1020-d2x2-sameupper-negzero-o10-f888fb59a1"),
                           ("UINT64", "nan", "mp2-f32-2d-k3x2-s2x3-p1020-d2x2-idx64-sameupper-nan-o10-89b2519555")):
        case = MP.make_case(desc.replace(OutputIndicesDataType=idx),
                            {"auto_pad": "SAME_UPPER"}, fam, 10)
        assert case.id == want
        got = ort_cpu_run([case])[case.id]
        assert np.shape(got["Y"]) != np.shape(MP.expected(case, case.inputs())["Y"])
        j = three_way(case, Outcome(True, "done", None, got), Outcome(True, "done", None, got),
                      ep_name="CUDAExecutionProvider")
        assert j.verdict == "FAIL" and j.attribution == "BOTH_WRONG", (j.attribution, j.reason)
        assert "touches open point" not in j.reason


def test_a_reason_leads_with_the_rule_that_decides_and_rounds_the_ratio():
    """A float16 window past the end pad touches a rule (ceil-overhang-divisor) and an open point
    (sum-precision): the rule decides the FAIL and comes first, the open point after it ("also"),
    each once; the multiple of the error bound is whole from 100 up (683x, never 682.79x or 6.83e+02x),
    and a bound of 0 (a sum of three small integers: every evaluation exact) is said as such."""
    from onnx_dml_bench.verdict import point_text, ratio_text
    case = case_from_dict({
        "op": "average_pooling1", "opset": 19, "onnx": {"ceil_mode": 1},
        "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT16", "DimensionCount": 2, "Strides": [1, 2],
                       "WindowSize": [1, 3], "StartPadding": [0, 0], "EndPadding": [0, 1], "Dilations": [1, 1],
                       "IncludePadding": True, "FeatureLevel": "6.2"},
        "inputs": {"values": {"X": [1.0, 2.0, 3.0, 4.0]}}})
    j = one(case, {"Y": np.float16([[[[2.0, 7 / 3]]]])})
    assert j.verdict == "FAIL" and "rule:ceil-overhang-divisor" in j.labels and "open-point:sum-precision" in j.labels
    rule, point = j.reason.find("outside the rule(s)"), j.reason.find("also touches open point(s)")
    assert 0 < rule < point, j.reason
    assert j.reason.count("ceil-overhang-divisor") == 1 and j.reason.count("sum-precision") == 1
    assert j.outputs["Y"].bound_ratio == np.inf and "infx" not in j.reason
    assert ", where the error bound is 0 (every allowed evaluation gives the reference's value)" in j.reason
    # float32 sums that round: a bound above 0, its multiple whole from 100 up
    d = case.to_dict()
    case = case_from_dict({**d, "descriptor": {**d["descriptor"], "DataType": "FLOAT32"},
                           "inputs": {"values": {"X": [1.1, 2.3, 3.7, 4.9]}}})
    j = one(case, {"Y": np.float32([[[[2.0, 7 / 3]]]])})
    ratio = j.outputs["Y"].bound_ratio
    assert j.verdict == "FAIL" and 100 <= ratio < np.inf and f", {round(ratio)}x the error bound" in j.reason, j.reason
    # the pieces, alone: open points without a rule are not "also"
    assert point_text(AP, ["sum-precision"], []).startswith(" | touches open point(s)")
    assert point_text(AP, [], ["ceil-overhang-divisor"]).startswith(" | outside the rule(s)")
    assert [ratio_text(x) for x in (682.7917556792263, 1234.5, 2.5, 0.012345)] == ["683", "1234", "2.5", "0.0123"]
