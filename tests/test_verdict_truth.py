"""Verdicts a gate can trust: statistics against hand values, open points judged against their
allowed answers (one test per alternative), tolerances from the error bound of the summation, and
EP-vs-CPU findings counted in every output format."""
from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.compare import compare_output
from onnx_dml_bench.execute import base_record
from onnx_dml_bench.ops.base import Alternative, OutputSpec
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.record import Environment, Timings
from onnx_dml_bench.report import write_all
from onnx_dml_bench.report.diff import compare, text
from onnx_dml_bench.report.data import load
from onnx_dml_bench.results import ResultWriter
from onnx_dml_bench.verdict import judge, why

MP = registry.get("max_pooling2")
AP = registry.get("average_pooling1")
ROI = registry.get("roi_pooling")


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def run(case, got, cpu=None):
    ins = case.inputs()
    return judge(case, ins, Outcome(True, "done", None, got), None if cpu is None else Outcome(True, "done", None, cpu),
                 None, ep_name="TestEP", ep_is_cpu=False, cpu_build="test")


# ------------------------------------------------------------------------------------------------
# statistics against hand values
# ------------------------------------------------------------------------------------------------

def test_infinity_against_a_large_finite_value():
    ref = np.float32([1.276e38, 1.0])
    got = np.float32([np.inf, 1.0])
    c = compare_output("Y", OutputSpec("exact"), got, ref)
    assert c.mismatches == 1 and c.max_abs == float("inf")
    # +inf is the bit pattern right after FLT_MAX: the distance is counted on those patterns
    assert c.max_ulp == f32_bits(float("inf")) - f32_bits(float(np.float32(1.276e38)))
    assert c.min_passing_ulp is None and "inf" in c.labels


def test_nan_against_a_number_has_no_distance():
    c = compare_output("Y", OutputSpec("exact"), np.float32([np.nan, 2.0]), np.float32([3.0, 2.0]))
    assert c.mismatches == 1 and c.nan_mismatches == 1 and "nan" in c.labels
    assert c.max_ulp == 0 and c.min_passing_ulp is None
    line = why({"Y": c})
    assert "1 NaN against a number" in line and "ULP" not in line


def test_float16_nan_mismatches_are_not_reported_as_zero_ulp():
    ref = np.float16([1.0, 2.0, 3.0, 4.0])
    got = np.float16([np.nan, 2.0, np.nan, 4.5])
    c = compare_output("Y", OutputSpec("exact"), got, ref)
    assert (c.mismatches, c.nan_mismatches) == (3, 2)
    assert c.max_ulp == 128          # float16 spacing in [4, 8) is 4 * 2**-10 = 2**-8: 0.5 / 2**-8 = 128
    assert c.max_abs == 0.5
    assert "max 128 ULP" in why({"Y": c})


def test_signed_zero_is_a_mismatch_unless_the_open_point_allows_either_sign():
    c = compare_output("Y", OutputSpec("exact"), np.float32([-0.0]), np.float32([0.0]))
    assert c.mismatches == 1 and c.labels == ["signed-zero"] and c.max_abs == 0.0
    c = compare_output("Y", OutputSpec("exact"), np.float32([-0.0]), np.float32([0.0]), zero_sign_free=True)
    assert c.match


def test_mismatch_rows_show_the_cpu_value_of_the_same_output():
    d = MP.Desc(InputSizes=(1, 1, 2, 2), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(2, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType="UINT32")
    case = Case(MP, d, 12, make_variant(), "explicit", 0, (("X", (1.0, 4.0, 2.0, 3.0)),))
    got = {"Y": np.float32([[[[5.0]]]]), "Indices": np.int64([[[[2]]]])}
    cpu = {"Y": np.float32([[[[7.0]]]]), "Indices": np.int64([[[[3]]]])}
    j = run(case, got, cpu)
    assert j.outputs["Y"].first[0]["cpu"] == 7.0
    assert j.outputs["Indices"].first[0]["cpu"] == 3


# ------------------------------------------------------------------------------------------------
# open points: one test per allowed alternative, and an answer outside the set
# ------------------------------------------------------------------------------------------------

def _mp_case(values, sizes=(1, 1, 1, 4), k=(1, 2), s=(1, 2), idx=None):
    d = MP.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=2, Strides=s, WindowSize=k,
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType=idx)
    return Case(MP, d, 12, make_variant(), "explicit", 0, (("X", tuple(values)),))


def test_maxpool_nan_propagated_is_the_reference():
    case = _mp_case((float("nan"), 1.0, 2.0, 3.0))
    j = run(case, {"Y": np.float32([[[[np.nan, 3.0]]]])})
    assert j.verdict == "PASS" and "open-point:nan" in j.labels and not any("took" in x for x in j.labels)


def test_maxpool_nan_ignored_is_allowed_and_named():
    case = _mp_case((float("nan"), 1.0, 2.0, 3.0))
    j = run(case, {"Y": np.float32([[[[1.0, 3.0]]]])})
    assert j.verdict == "PASS" and "ep-took:nan-ignored" in j.labels
    assert j.outputs["Y"].alternative == "nan-ignored"


def test_maxpool_nan_answer_outside_every_allowed_behaviour_fails():
    case = _mp_case((float("nan"), 1.0, 2.0, 3.0))
    j = run(case, {"Y": np.float32([[[[0.0, 3.0]]]])})
    assert j.verdict == "FAIL" and j.attribution == "EP_WRONG"
    assert "outside every allowed behaviour" in j.reason


def test_maxpool_all_nan_window_is_nan_under_both_behaviours():
    case = _mp_case((float("nan"), float("nan"), 2.0, 3.0))
    assert run(case, {"Y": np.float32([[[[np.nan, 3.0]]]])}).verdict == "PASS"
    assert run(case, {"Y": np.float32([[[[-np.inf, 3.0]]]])}).verdict == "FAIL"


def test_maxpool_signed_zero_either_sign_is_allowed():
    case = _mp_case((-0.0, 0.0, 1.0, 2.0))
    j = run(case, {"Y": np.float32([[[[0.0, 2.0]]]])})
    assert j.verdict == "PASS" and "ep-took:zero-sign-either" in j.labels
    assert run(case, {"Y": np.float32([[[[-0.0, 2.0]]]])}).labels == ["open-point:signed-zero"]


# ------------------------------------------------------------------------------------------------
# known deviations of ONNX Runtime's CPU EP: labels on failures only, never another verdict
# ------------------------------------------------------------------------------------------------

FLT_MAX = float(np.finfo(np.float32).max)
LOWEST = "known-deviation:ort-maxpool-f32-starts-at-lowest"


def test_cpu_side_failing_on_a_known_deviation_is_labelled():
    # a window of -inf only: ONNX Runtime's float32 MaxPool without Indices gives -FLT_MAX
    case = _mp_case((-np.inf, -np.inf, 2.0, 3.0))
    right, lowest = {"Y": np.float32([[[[-np.inf, 3.0]]]])}, {"Y": np.float32([[[[-FLT_MAX, 3.0]]]])}
    j = run(case, right, lowest)
    assert (j.verdict, j.attribution, j.finding) == ("PASS", "CPU_WRONG", "CPU_WRONG")
    assert LOWEST in j.labels
    # the CPU EP under test: the same FAIL as before, named
    cpu = judge(case, case.inputs(), Outcome(True, "done", None, lowest), None, None,
                ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert (cpu.verdict, cpu.attribution) == ("FAIL", "EP_WRONG") and LOWEST in cpu.labels
    # the EP's own failure with a right CPU side is not the CPU EP's deviation
    assert not any(x.startswith("known-deviation:") for x in run(case, lowest, right).labels)


def test_known_deviations_are_not_looked_at_on_passing_cases(monkeypatch):
    case = _mp_case((-np.inf, -np.inf, 2.0, 3.0))
    right = {"Y": np.float32([[[[-np.inf, 3.0]]]])}
    j = run(case, right, right)
    assert j.verdict == "PASS" and not any(x.startswith("known-deviation:") for x in j.labels)
    monkeypatch.setattr(MP, "deviations", lambda: pytest.fail("deviations evaluated on a pass"))
    assert run(case, right, right).verdict == "PASS"


def test_a_deviation_predicate_that_raises_does_not_break_judging(monkeypatch):
    from onnx_dml_bench.ops.base import ORT_CPU, Deviation

    def broken(case, inputs):
        raise RuntimeError("predicate failed")

    real = MP.deviations()
    monkeypatch.setattr(MP, "deviations", lambda: [Deviation("broken", ORT_CPU, "bug", "a broken predicate", broken)]
                        + real)
    case = _mp_case((-np.inf, -np.inf, 2.0, 3.0))
    j = run(case, {"Y": np.float32([[[[-np.inf, 3.0]]]])}, {"Y": np.float32([[[[-FLT_MAX, 3.0]]]])})
    assert j.verdict == "PASS" and LOWEST in j.labels and "known-deviation:broken" not in j.labels


def test_cpu_ep_refusing_a_known_limitation_is_labelled():
    d = ROI.Desc(InputSizes=(1, 1, 4, 4), RoiSizes=(1, 5), DataType="FLOAT16", SpatialScale=1.0, PooledSize=(2, 2))
    case = Case(ROI, d, 1, (), "explicit", 0, (("X", tuple(range(16))), ("rois", (0, 0, 0, 3, 3))))
    refused = Outcome(False, "session", "[ONNXRuntimeError] : 10 : INVALID_GRAPH : Cast")
    j = judge(case, case.inputs(), refused, None, None, ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "EP_REJECTED" and j.labels == ["known-deviation:ort-roi-float16"]
    # a crash is not what a limitation explains
    crash = judge(case, case.inputs(), Outcome(False, "crash", "worker died"), None, None,
                  ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert crash.verdict == "CRASH" and crash.labels == []


def _roi_case(x1: float):
    d = ROI.Desc(InputSizes=(1, 1, 1, 8), RoiSizes=(1, 5), DataType="FLOAT32", SpatialScale=1.0,
                 PooledSize=(1, 1))
    x = tuple(float(v) for v in range(8))
    return Case(ROI, d, 1, make_variant(), "explicit", 0, (("X", x), ("rois", (0.0, x1, 0.0, 6.0, 0.0))))


@pytest.mark.parametrize("x1,first,name", [
    (2.5, 3, None),                          # half away from zero: 3 (the reference)
    (2.5, 2, "half-even"),                   # to even: 2
    (1.5, 1, "half-down"),                   # toward -inf: 1 (away, even and up give 2)
    (3.5, 3, "half-down"),
])
def test_roi_half_rounding_each_mode_is_allowed(x1, first, name):
    case = _roi_case(x1)
    # a 1x1 bin over columns [first, 6]: the maximum is 6 whatever the start; make the start matter
    x = np.arange(8, dtype=np.float32)[::-1].copy().reshape(1, 1, 1, 8)   # 7 6 5 ... 0: max at the start
    case = Case(ROI, case.desc, 1, make_variant(), "explicit", 0,
                (("X", tuple(float(v) for v in x.ravel())), ("rois", (0.0, x1, 0.0, 6.0, 0.0))))
    got = {"Y": np.float32([[[[x[0, 0, 0, max(first, 0)]]]]])}
    j = run(case, got)
    assert j.verdict == "PASS", j.reason
    if name:
        assert f"ep-took:{name}" in j.labels, j.labels
    else:
        assert not any(lab.startswith("ep-took:") for lab in j.labels)


def test_roi_rounding_outside_every_mode_fails():
    x = np.arange(8, dtype=np.float32)[::-1].copy()
    case = Case(ROI, _roi_case(2.5).desc, 1, make_variant(), "explicit", 0,
                (("X", tuple(float(v) for v in x)), ("rois", (0.0, 2.5, 0.0, 6.0, 0.0))))
    # start at 1 (floor(2.5) - 1): no rounding of 2.5 gives 1
    assert run(case, {"Y": np.float32([[[[x[1]]]]])}).verdict == "FAIL"


def _ap_case(values, sizes, k, s, sp, ep, dtype="FLOAT32", inc=False):
    d = AP.Desc(InputSizes=sizes, DataType=dtype, DimensionCount=2, Strides=s, WindowSize=k, StartPadding=sp,
                EndPadding=ep, Dilations=(1, 1), IncludePadding=inc)
    return Case(AP, d, 19, make_variant(), "explicit", 0, (("X", tuple(values)),))


def test_average_overflow_to_infinity_is_allowed_where_the_sum_can_overflow():
    big = float(np.finfo(np.float32).max)
    case = _ap_case((big, big, 1.0, 1.0), (1, 1, 1, 4), (1, 2), (1, 2), (0, 0), (0, 0))
    assert case.operator.open_points(case, case.inputs()) == ("overflow",)
    j = run(case, {"Y": np.float32([[[[np.inf, 1.0]]]])})
    assert j.verdict == "PASS" and "ep-took:overflow-to-non-finite" in j.labels
    assert run(case, {"Y": np.float32([[[[big, 1.0]]]])}).verdict == "PASS"       # the exact average
    # where the sum cannot overflow, an infinity is wrong
    assert run(case, {"Y": np.float32([[[[big, np.inf]]]])}).verdict == "FAIL"


# ------------------------------------------------------------------------------------------------
# tolerance from the error bound of the summation
# ------------------------------------------------------------------------------------------------

def test_average_tolerance_follows_the_summation_bound_not_the_result_ulp():
    """1x2x1x8, kernel 1x3, stride 1x2, pads [0,2,0,1], real-valued data: a float32 sum in window
    order can be many ULP of the (small, cancelling) mean away from the exact mean and still be
    right; the bound gamma(n-1)*sum|x|/count admits it, and a result far outside is refused."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-64, 64, size=(1, 2, 1, 8)).astype(np.float32)
    # cancellation: a window whose terms nearly sum to zero
    x[0, 0, 0, :3] = np.float32([0.0000123, 40.123456, -40.1234])
    case = _ap_case(tuple(float(v) for v in x.ravel()), (1, 2, 1, 8), (1, 3), (1, 2), (0, 2), (0, 1))
    ins = case.inputs()
    exact = AP.expected(case, ins)["Y"]
    # the float32 recursive sum in window order, then the division in float32
    xp = np.pad(ins["X"], [(0, 0), (0, 0), (0, 0), (2, 1)])
    order = np.zeros_like(exact)
    for o in range(exact.shape[-1]):
        acc = np.zeros(exact.shape[:2], np.float32)
        cnt = 0
        for t in range(3):
            pos = o * 2 + t - 2
            if 0 <= pos < 8:
                acc = (acc + xp[..., 0, o * 2 + t]).astype(np.float32)
                cnt += 1
        order[..., 0, o] = acc / np.float32(cnt)
    j = run(case, {"Y": order})
    assert j.verdict == "PASS", j.reason
    c = j.outputs["Y"]
    assert c.kind == "bound" and c.bound_ratio is not None and c.bound_ratio <= 1.0
    ulp_rule = compare_output("Y", OutputSpec("ulp", ulp=5), order, exact)
    assert not ulp_rule.match, "the case must show the (window+2)-ULP rule failing on cancellation"
    # 3x the bound away is refused
    bound = AP.error_bound(case, ins, {"Y": exact})["Y"]
    bad = (exact.astype(np.float64) + 3 * bound).astype(np.float32)
    assert run(case, {"Y": bad}).verdict == "FAIL"


# ------------------------------------------------------------------------------------------------
# an EP-vs-CPU finding is counted in every output format
# ------------------------------------------------------------------------------------------------

def test_cpu_wrong_is_counted_everywhere(tmp_path):
    case = _mp_case((1.0, 2.0, 3.0, 4.0))
    right = {"Y": np.float32([[[[2.0, 4.0]]]])}
    j = run(case, right, {"Y": np.float32([[[[2.0, 5.0]]]])})
    assert (j.verdict, j.attribution, j.finding) == ("PASS", "CPU_WRONG", "CPU_WRONG")
    j2 = run(case, right, {"Y": right["Y"]})
    assert j2.finding is None
    rec = base_record(case, "TestEP", j.verdict, j.reason)
    rec.attribution, rec.finding, rec.outputs, rec.cpu, rec.timings = j.attribution, j.finding, j.outputs, j.cpu, Timings()
    path = tmp_path / "results.jsonl"
    w = ResultWriter(path, Environment(ep="TestEP"))
    w.write([rec])
    w.close()
    write_all([path], tmp_path, fail_on=("FAIL", "CPU_WRONG"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["findings"] == {"CPU_WRONG": 1} and summary["attribution"] == {"CPU_WRONG": 1}
    assert summary["failing"] == [case.id]
    assert summary["matrix"][0]["findings"] == {"CPU_WRONG": 1}
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite.find("testcase/failure").get("type") == "CPU_WRONG"
    assert any(p.get("name") == "finding.CPU_WRONG" and p.get("value") == "1" for p in suite.iter("property"))
    html = (tmp_path / "report.html").read_text()
    assert "CPU_WRONG" in html
    # compare: a finding that appears is a change
    base = tmp_path / "base.jsonl"
    rec2 = base_record(case, "TestEP", "PASS", "")
    w = ResultWriter(base, Environment(ep="TestEP"))
    w.write([rec2])
    w.close()
    cmp = compare(load([base]), load([path]))
    assert len(cmp.other) == 1 and cmp.other[0].finding_after == "CPU_WRONG"
    assert cmp.findings_after == {"CPU_WRONG": 1} and "EP-VS-CPU FINDINGS" in text(cmp)


def test_roi_signed_zero_tie_either_sign_is_allowed():
    """A ROI bin holding -0.0 and +0.0 (and nothing larger): the page does not say which zero is
    the maximum, as for MaxPool; either answer passes, any other value does not."""
    d = ROI.Desc(InputSizes=(1, 1, 1, 4), RoiSizes=(1, 5), DataType="FLOAT32", SpatialScale=1.0, PooledSize=(1, 1))
    case = Case(ROI, d, 1, make_variant(), "explicit", 0, (("X", (-1.0, -0.0, 0.0, -2.0)), ("rois", (0.0, 0.0, 0.0, 3.0, 0.0))))
    assert ROI.input_problem(case, case.inputs()) is None
    assert ROI.open_points(case, case.inputs()) == ("signed-zero",)
    ref = ROI.reference(case, case.inputs())["Y"]
    assert ref.tolist() == [[[[0.0]]]]
    other = np.float32([[[[-0.0 if not np.signbit(ref).all() else 0.0]]]])     # the zero the reference did not pick
    took = run(case, {"Y": other})
    assert took.verdict == "PASS" and "ep-took:zero-sign-either" in took.labels
    assert run(case, {"Y": ref}).verdict == "PASS"
    assert run(case, {"Y": np.float32([[[[-1.0]]]])}).verdict == "FAIL"
    # no tie: a bin of -0.0 alone has no open point
    one = Case(ROI, d, 1, make_variant(), "explicit", 0, (("X", (-1.0, -0.0, -3.0, -2.0)), ("rois", (0.0, 0.0, 0.0, 3.0, 0.0))))
    assert ROI.open_points(one, one.inputs()) == ()
    assert np.signbit(ROI.reference(one, one.inputs())["Y"]).all()
    assert run(one, {"Y": np.float32([[[[0.0]]]])}).verdict == "FAIL"


def test_an_open_point_of_the_onnx_text_alone_holds_on_graphs_only(monkeypatch):
    """An answer that only the ONNX text leaves open (``Operator.onnx_open_points``) passes where a
    graph is judged, with its reading named, and fails where the descriptor itself is (the direct
    lane's semantics "dml"): the DirectML page decides it there."""
    d = ROI.Desc(InputSizes=(1, 1, 2, 2), RoiSizes=(1, 5), DataType="FLOAT32", SpatialScale=1.0, PooledSize=(1, 1))
    case = Case(ROI, d, 1, make_variant(), "explicit", 0, (("X", (1.0, 2.0, 3.0, 4.0)), ("rois", (0.0, 0.0, 0.0, 1.0, 1.0))))
    other = {"Y": np.float32([[[[2.5]]]])}           # what an ONNX-only reading would give
    monkeypatch.setattr(type(ROI), "onnx_open_points", lambda self, c, x: ("onnx-only",))
    monkeypatch.setattr(type(ROI), "alternatives",
                        lambda self, c, x, ref, pts: [Alternative("onnx-reading", other)] if "onnx-only" in pts else [])
    ins = case.inputs()
    on_graph = judge(case, ins, Outcome(True, "done", None, other), None, None, ep_name="TestEP", ep_is_cpu=False)
    assert on_graph.verdict == "PASS" and "ep-took:onnx-reading" in on_graph.labels
    assert "open-point:onnx-only" in on_graph.labels
    direct = judge(case, ins, Outcome(True, "done", None, other), None, None, ep_name="TestEP", ep_is_cpu=False,
                   semantics="dml")
    assert direct.verdict == "FAIL" and "onnx-only" not in direct.open_points


def test_a_runtime_refusal_caused_by_a_known_bug_names_it():
    """ONNX Runtime's SAME pads from the undilated window give this 1x1 input a negative output
    size, and the CPU EP refuses the run: the EP_ERROR carries the bug that causes it."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict({
        "op": "max_pooling2", "opset": 22, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 1], "DataType": "UINT8", "DimensionCount": 2, "Strides": [1, 1],
                       "WindowSize": [3, 1], "StartPadding": [2, 0], "EndPadding": [2, 0], "Dilations": [2, 1],
                       "OutputIndicesDataType": None, "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [0]}}})
    err = Outcome(False, "run", "Calculated output dimension is negative. Check kernel_shape, pads, strides and dilations.")
    j = judge(case, case.inputs(), err, None, None, ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "EP_ERROR" and j.labels == ["known-deviation:ort-maxpool-same-pads-ignore-dilation"]
    # the same refusal of another EP says nothing about ONNX Runtime's CPU EP
    other = judge(case, case.inputs(), err, None, None, ep_name="SomeEP", ep_is_cpu=False)
    assert other.verdict == "EP_ERROR" and other.labels == []


def test_negative_same_pads_clamped_or_shifted_are_both_allowed():
    """auto_pad SAME_UPPER, window 1, stride 3 over 3 elements: the ONNX pad formula gives a total
    of -2. Clamped to 0 the window takes element 0 (the reference); split as the formula gives it
    (-1, -1) the window shifts to element 1. Both readings pass, nothing else does."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict({
        "op": "max_pooling2", "opset": 12, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 3], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 3],
                       "WindowSize": [1, 1], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": "UINT32", "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [-1.0, -2.0, -3.0]}}})
    assert "same-negative-pad" in MP.open_points(case, case.inputs())
    ref = MP.expected(case, case.inputs())
    assert ref["Y"].ravel().tolist() == [-1.0] and ref["Indices"].ravel().tolist() == [0]
    shifted = run(case, {"Y": np.float32([[[[-2.0]]]]), "Indices": np.int64([[[[1]]]])})
    assert shifted.verdict == "PASS" and "ep-took:same-pads-shifted" in shifted.labels
    assert run(case, {"Y": np.float32([[[[-3.0]]]]), "Indices": np.int64([[[[2]]]])}).verdict == "FAIL"
    # a shifted value with the clamped reading's index is no reading at all
    assert run(case, {"Y": np.float32([[[[-2.0]]]]), "Indices": np.int64([[[[0]]]])}).verdict == "FAIL"


def test_open_points_combine_nan_ignored_with_shifted_windows():
    """Two open points at once: NaN in the input and a negative SAME pad total. An EP that both
    shifts the window and ignores NaN gives an answer neither reading alone allows; the combination
    passes, and a NaN-ignoring answer on the wrong element still fails."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict({
        "op": "max_pooling2", "opset": 12, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 4],
                       "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": None, "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [7.0, 1.0, float("nan"), 4.0]}}})
    # one output; total (1-1)*4 + 2 - 4 = -2: clamped the window is [0, 1], split (-1, -1) it is [1, 2]
    ins = case.inputs()
    pts = MP.open_points(case, ins)
    assert "nan" in pts and "same-negative-pad" in pts
    assert MP.expected(case, ins)["Y"].ravel().tolist() == [7.0]
    assert run(case, {"Y": np.float32([[[[7.0]]]])}).verdict == "PASS"                 # clamped
    shifted = run(case, {"Y": np.float32([[[[np.nan]]]])})                              # shifted, NaN kept
    assert shifted.verdict == "PASS" and "ep-took:same-pads-shifted" in shifted.labels
    both = run(case, {"Y": np.float32([[[[1.0]]]])})                                   # shifted, NaN ignored
    assert both.verdict == "PASS" and "ep-took:nan-ignored+same-pads-shifted" in both.labels
    assert run(case, {"Y": np.float32([[[[4.0]]]])}).verdict == "FAIL"                 # no reading gives 4


def test_open_points_combine_overflow_with_shifted_windows():
    """AveragePool with a negative SAME pad total whose shifted window overflows float32: +inf there
    is an allowed answer of the shifted reading too."""
    from onnx_dml_bench.casefile import case_from_dict
    big = 3.0e38
    case = case_from_dict({
        "op": "average_pooling1", "opset": 19, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 4],
                       "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "IncludePadding": False, "FeatureLevel": "6.2"},
        "inputs": {"values": {"X": [1.0, big, big, 1.0]}}})
    ins = case.inputs()
    assert "same-negative-pad" in AP.open_points(case, ins)
    assert AP.expected(case, ins)["Y"].ravel().tolist() == [np.float32((1.0 + big) / 2)]
    ok = run(case, {"Y": np.float32([[[[big]]]])})                                     # shifted, exact
    assert ok.verdict == "PASS" and "ep-took:same-pads-shifted" in ok.labels
    inf = run(case, {"Y": np.float32([[[[np.inf]]]])})                                 # shifted, sum overflowed
    assert inf.verdict == "PASS" and "ep-took:same-pads-shifted+overflow-to-non-finite" in inf.labels
    # two positive terms overflow to +inf in every order: -inf or NaN is no reading's answer
    assert run(case, {"Y": np.float32([[[[-np.inf]]]])}).verdict == "FAIL"
    assert run(case, {"Y": np.float32([[[[np.nan]]]])}).verdict == "FAIL"
    assert run(case, {"Y": np.float32([[[[1.0]]]])}).verdict == "FAIL"


def test_column_major_indices_at_a_tied_maximum_are_tie_order_not_wrong_index():
    """storage_order=1: the spatial part of an index is column-major. An index naming the other
    element of a tie (read column-major) is a tie-order difference; one naming a smaller element
    is a wrong index."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict({
        "op": "max_pooling2", "opset": 12, "onnx": {"storage_order": 1},
        "descriptor": {"InputSizes": [1, 1, 2, 3], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                       "WindowSize": [2, 3], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": "UINT32", "FeatureLevel": "5.0"},
        "inputs": {"values": {"X": [0.0, 0.0, 9.0, 0.0, 9.0, 0.0]}}})     # (0,2) and (1,1) tie at 9
    ref = MP.expected(case, case.inputs())
    # column-major: (0,2) is 0 + 2*2 = 4 (the first met in scan order), (1,1) is 1 + 1*2 = 3; read
    # row-major, 3 would name (1,0), a 0.0
    assert ref["Indices"].ravel().tolist() == [4]
    tie = run(case, {"Y": ref["Y"], "Indices": np.int64([[[[3]]]])})
    assert tie.verdict == "FAIL" and "tie-order" in tie.labels and "wrong-index" not in tie.labels
    wrong = run(case, {"Y": ref["Y"], "Indices": np.int64([[[[0]]]])})     # (0,0): a 0.0
    assert wrong.verdict == "FAIL" and "wrong-index" in wrong.labels


def test_a_refusal_names_only_deviations_that_can_cause_one():
    """AveragePool-10 SAME_UPPER with a negative pad total on values near FLT_MAX: ONNX Runtime
    refuses the run for the negative pad (a limitation); the float32 summation bug matches the data
    too, but it gives wrong answers, it does not refuse: the refusal names the limitation only."""
    from onnx_dml_bench.casefile import case_from_dict
    case = case_from_dict({
        "op": "average_pooling1", "opset": 10, "onnx": {"auto_pad": "SAME_UPPER"},
        "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 4],
                       "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "IncludePadding": False, "FeatureLevel": "6.2"},
        "inputs": {"values": {"X": [3e38, 3e38, 3e38, 3e38]}}})
    keys = {d.key for d in AP.deviations() if d.applies(case, case.inputs())}
    assert {"ort-avgpool-same-negative-pad", "ort-avgpool-f32-accumulates-in-f32"} <= keys
    err = Outcome(False, "run", "padding values must be non-negative")
    j = judge(case, case.inputs(), err, None, None, ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "EP_ERROR" and j.labels == ["known-deviation:ort-avgpool-same-negative-pad"]
