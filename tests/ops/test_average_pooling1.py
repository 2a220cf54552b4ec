"""DML_AVERAGE_POOLING1_OPERATOR_DESC (``ops/average_pooling1.py``): its validation rules (float types
at feature level 6.2, windows in padding), properties of its reference (averages, the exact average
rounded once), the deviations of ONNX Runtime's CPU EP and onnx.reference it declares, each shown on
an explicit configuration, and what the default profile covers of it. The geometry rules it shares
with MaxPool: tests/ops/test_pooling.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops import average_pooling1
from onnx_dml_bench.ops.average_pooling1 import avg_pool
from onnx_dml_bench.ops.base import ONNX_REFERENCE, ORT_CPU

from conftest import DEV, FLT_MAX, Failure, applies, bits_equal, expected_of, mismatches, onnx_reference_run, reference_of
from op_cases import ort_one, pool_case, pooling_cases
from op_rules import POOL, desc, rejects
from op_strategies import PROPS, SEEDS, ap_desc, data, geometry, out_positions, window_coords

pytest.importorskip("onnxruntime")

AP = registry.OPERATORS["average_pooling1"]
# DML types the operator supports at its highest feature level (the page's table)
ORT = ORT_CPU
OREF = ONNX_REFERENCE


# ---- validation ------------------------------------------------------------------------------


def test_a_valid_descriptor_beyond_the_bench_is_refused_at_load():
    """AveragePool counting the padding: 2**31 - 1 of end padding is DirectML-valid; the case file
    refuses it, naming the output tensor, the bench's limit, and that it is not DirectML's."""
    from onnx_dml_bench.casefile import CaseFileError, case_from_dict
    big = desc(AP, POOL, EndPadding=[0, 2**31 - 1], IncludePadding=True)
    AP.validate(big)
    with pytest.raises(CaseFileError, match=r"OutputTensor.Sizes: OutputTensor \[1, 1, 3, 2147483650\] would have "
                                            r"6,442,450,950 elements, more than this bench runs .*not a DirectML rule"):
        case_from_dict({"op": AP.key, "descriptor": big.to_dict(), "inputs": {"family": "random", "seed": 1}})


def test_average_pool_window_entirely_in_padding_without_include_padding():
    rejects(AP, POOL, "StartPadding", "entirely in padding", "divisor", StartPadding=[2, 0])
    # with IncludePadding the divisor is the window size: allowed
    AP.validate(desc(AP, POOL, StartPadding=[2, 0], IncludePadding=True))


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


# ---- properties of the reference -------------------------------------------------------------


@PROPS
@given(geometry(pad=False), st.sampled_from(["FLOAT32", "FLOAT16"]),
       st.sampled_from([0.0, 1.0, -2.5, 0.125, 3.0, -1024.0, 6.103515625e-05]), st.booleans())
def test_average_of_a_constant_without_padding_is_the_constant(geo, dtype, value, include):
    d = ap_desc(geo, dtype, include)
    x = np.full(d.InputSizes, value, dtype=DML_TO_NUMPY[dtype])
    y = avg_pool(x, d)
    assert y.dtype == x.dtype and y.shape == AP.output_shape(d)
    assert (y == x.dtype.type(value)).all()


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16"]), st.sampled_from([1.0, -2.5, 0.125, 3.0]))
def test_average_of_a_constant_excluding_padding_is_the_constant(geo, dtype, value):
    d = ap_desc(geo, dtype, False)
    y = avg_pool(np.full(d.InputSizes, value, dtype=DML_TO_NUMPY[dtype]), d)
    assert (y == value).all()


@PROPS
@given(geometry(pad=False), st.sampled_from(["FLOAT32", "FLOAT16"]), SEEDS)
def test_include_padding_makes_no_difference_without_padding(geo, dtype, seed):
    d = ap_desc(geo, dtype, False)
    x = data(d.InputSizes, dtype, seed, False)
    a, b = avg_pool(x, d), avg_pool(x, d.replace(IncludePadding=True))
    assert a.tobytes() == b.tobytes()


@PROPS
@given(geometry(), SEEDS)
def test_average_matches_a_direct_loop(geo, seed):
    """An independent (slow) average over explicit window coordinates, float64."""
    for include in (False, True):
        d = ap_desc(geo, "FLOAT32", include)
        x = data(d.InputSizes, "FLOAT32", seed, False)
        y = avg_pool(x, d)
        for pos in out_positions(y.shape):
            vals = [float(x[(pos[0], pos[1], *co)]) for co, inside in window_coords(d, pos[2:]) if inside]
            div = math.prod(d.WindowSize) if include else len(vals)
            assert y[pos] == np.float32(sum(vals) / div), pos


@PROPS
@given(geometry(), st.booleans(), SEEDS)
def test_average_pool_output_shape_is_the_reference_shape(geo, include, seed):
    d = ap_desc(geo, "FLOAT16", include)
    case = Case(AP, d, 19, (), "random", seed)
    assert AP.reference(case, case.inputs())["Y"].shape == AP.output_shape(d)


def test_float16_average_is_the_exact_average_rounded_once():
    """AVERAGE_POOLING1 FLOAT16: the reference's answer must be the average rounded once to float16.
    Summing float16 in float32 in window order loses -tiny next to +65504 (the exact float16 sum is
    exact in float64, so the reference need not lose anything)."""
    case = cancelling_f16_case()
    want = exact_f16_average([-TINY16, 65504.0, -65504.0])
    assert bits_equal(reference_of(case)["Y"].ravel(), np.array([want]))
    # from the default sweep (window of a 3x3 average with padding counted): exact average 0
    vals = [TINY16, 65504.0, 0.0, -65504.0, -65504.0, 0.0, 65504.0, -TINY16, 0.0]
    c9 = pool_case(AP, (1, 1, 1, 9), (1, 9), (1, 1), x=np.array(vals), dtype="FLOAT16")
    assert exact_f16_average(vals) == 0
    assert reference_of(c9)["Y"].ravel().tolist() == [0.0]


# ---- deviations: ONNX Runtime's CPU EP -------------------------------------------------------


@pytest.mark.parametrize("include_padding", [False, True])
def test_ort_average_pool_float32_overflows(include_padding):
    x = np.array([FLT_MAX, FLT_MAX], dtype=np.float32).reshape(1, 1, 1, 2)
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), (0, 0), (0, 1), x=x, IncludePadding=include_padding)
    assert applies("ort-avgpool-f32-accumulates-in-f32", case)
    ref = reference_of(case)["Y"].ravel()
    # first window: the average of two FLT_MAX is FLT_MAX; second: FLT_MAX / 2 (with padding) or FLT_MAX
    assert ref.tolist() == [FLT_MAX, FLT_MAX / 2 if include_padding else FLT_MAX]
    got = ort_one(case)["Y"].ravel()
    assert got[0] == np.inf and got[1] == ref[1]
    # the same data in float16 is summed in float32 by ORT: no overflow, agreement
    x16 = np.array([65504, 65504], dtype=np.float16).reshape(1, 1, 1, 2)
    c16 = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), (0, 0), (0, 1), x=x16, dtype="FLOAT16",
                    IncludePadding=include_padding)
    assert not mismatches(c16, ort_one(c16))


def test_ort_count_include_pad_ceil_overhang_not_counted():
    """AveragePool count_include_pad=1, ceil_mode=1, a window reaching past the end pad: ONNX Runtime
    counts input and pad pixels, not the overhang (rule ceil-overhang-divisor); DML's IncludePadding
    TRUE divides by the whole window."""
    # In 1x4, window 1x3, stride 2, pads 0: ceil((4-3)/2)+1 = 2 windows: [0,1,2] and [2,3,(4)]
    case = pool_case(AP, (1, 1, 1, 4), (1, 3), (1, 2), variant={"ceil_mode": 1}, IncludePadding=True, x=[1, 2, 3, 4])
    assert AP.dml_image(case) is not None
    # a rule, not an open point: ONNX Runtime, PyTorch and ONNX's node test agree on one reading
    assert "ceil-overhang-divisor" in AP.rules(case, case.inputs())
    assert "ceil-overhang-divisor" not in AP.open_points(case, case.inputs())
    assert expected_of(case)["Y"].ravel().tolist() == [2.0, 3.5]              # (3+4)/2
    assert reference_of(case)["Y"].ravel().tolist() == [2.0, float(np.float32(7 / 3))]   # DML: (3+4+0)/3
    assert ort_one(case)["Y"].ravel().tolist() == [2.0, 3.5]


# ---- deviations: onnx.reference --------------------------------------------------------------


def test_onnx_reference_average_pool_skips_nan_without_include_padding():
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([np.nan, 1.0]))
    assert applies("oref-avgpool-nan-exclude-pad", case)
    assert np.isnan(reference_of(case)["Y"]).all()
    assert onnx_reference_run(case)["Y"].ravel().tolist() == [1.0]
    assert not mismatches(case, ort_one(case))
    # count_include_pad=1: NaN propagates there too
    inc = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([np.nan, 1.0]), IncludePadding=True)
    assert not applies("oref-avgpool-nan-exclude-pad", inc)
    assert not mismatches(inc, onnx_reference_run(inc))


def test_onnx_reference_average_pool_float32_overflows():
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([FLT_MAX, FLT_MAX]))
    assert applies("oref-avgpool-f32-overflow", case)
    assert reference_of(case)["Y"].ravel().tolist() == [FLT_MAX]
    assert onnx_reference_run(case)["Y"].ravel().tolist() == [np.inf]


def test_onnx_reference_average_pool_same_with_dilation():
    # 8x8, window 3x3 dilated by 2, stride 2, SAME_UPPER: DML pads 1 (start) and 2 (end)
    case = pool_case(AP, (1, 1, 8, 8), (3, 3), (2, 2), dil=(2, 2), variant={"auto_pad": "SAME_UPPER"})
    assert applies("oref-avgpool-same-dilation", case)
    assert case.desc.StartPadding == (1, 1) and case.desc.EndPadding == (2, 2)
    ref = reference_of(case)["Y"]
    assert ref[0, 0, 0, 0] == (9 + 11 + 25 + 27) / 4 and ref[0, 0, 0, 3] == (13 + 15 + 29 + 31) / 4
    got = onnx_reference_run(case)["Y"]
    assert got.shape == ref.shape and got[0, 0, 0, 3] == 0 and (got[0, 0, 3, :] == 0).all()
    # the sweep's geometry (8x9, window 3x2, stride 2x3, dilations 2) fails outright
    c2 = pool_case(AP, (2, 1, 8, 9), (3, 2), (2, 3), dil=(2, 2), variant={"auto_pad": "SAME_UPPER"})
    got2 = onnx_reference_run(c2)
    assert isinstance(got2, Failure) and "negative" in got2.error


def test_onnx_reference_average_pool_valid_with_dilation():
    case = pool_case(AP, (1, 1, 7, 7), (2, 3), (2, 2), dil=(2, 2), variant={"auto_pad": "VALID"}, opset=19)
    assert applies("oref-avgpool-valid-dilation", case)
    got = onnx_reference_run(case)
    assert not isinstance(got, Failure) and got["Y"].shape != expected_of(case)["Y"].shape


def test_onnx_reference_average_pool_ceil_with_auto_pad_fails():
    case = pool_case(AP, (1, 1, 7, 6), (3, 2), (2, 2), variant={"auto_pad": "SAME_UPPER", "ceil_mode": 1}, opset=19)
    assert applies("oref-avgpool-ceil-with-auto-pad", case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "ceil_mode is not supported with auto_pad" in got.error


# ---- deviations of both: float16 cancellation ------------------------------------------------


TINY16 = float(np.finfo(np.float16).tiny)          # 2^-14


def cancelling_f16_case() -> Case:
    """Window (-tiny, +65504, -65504): exact average -tiny/3, a normal-range float16 subnormal."""
    return pool_case(AP, (1, 1, 1, 3), (1, 3), (1, 1), x=np.array([-TINY16, 65504.0, -65504.0]), dtype="FLOAT16")


def exact_f16_average(values) -> np.float16:
    from fractions import Fraction
    total = sum(Fraction(float(v)) for v in values) / len(values)
    return np.float16(float(total))                 # float64 -> float16: this exact quotient rounds once


@pytest.mark.parametrize("who", [ORT, OREF])
def test_float16_average_cancellation_loses_small_terms(who):
    """Summed in float32 (reading summed-wide), -tiny is absorbed by +65504: the answer is 0, many ULP
    from the exact average rounded once (a subnormal), and inside the reading's error bound: a PASS."""
    from onnx_dml_bench.outcome import Outcome
    from onnx_dml_bench.verdict import judge
    case = cancelling_f16_case()
    key = "ort-avgpool-f16-cancellation" if who == ORT else "oref-avgpool-f16-cancellation"
    assert applies(key, case) and DEV[key].kind == "tolerance"
    assert "ULP" not in DEV[key].summary.split("far more than an ULP")[0]       # no (window+2)-ULP rule
    want = exact_f16_average([-TINY16, 65504.0, -65504.0])
    assert want != 0 and np.signbit(want)
    got = (ort_one(case) if who == ORT else onnx_reference_run(case))["Y"].ravel()
    assert got.tolist() == [0.0]                     # -tiny was absorbed by +65504 in float32
    ulps = abs(int(np.float16(want).view(np.int16)) - int(np.float16(0).view(np.int16)))
    assert ulps > math.prod(case.desc.WindowSize) + 2  # far beyond a ULP rule
    j = judge(case, case.inputs(), Outcome(True, "done", None, {"Y": got.reshape(1, 1, 1, 1)}), None, None,
              ep_name="CPUExecutionProvider", ep_is_cpu=True)
    assert j.verdict == "PASS", j.reason
    assert not any(lab.startswith("ep-took:") for lab in j.labels)            # the reference's own reading


# ---- coverage of the default profile ---------------------------------------------------------


def test_average_pool_include_padding_both_ways_with_padding():
    cs = [c for c in pooling_cases("average_pooling1") if any(c.desc.StartPadding) or any(c.desc.EndPadding)]
    assert {c.desc.IncludePadding for c in cs} == {False, True}


def test_average_pool_dilations_below_19_listed():
    ne = registry.OPERATORS["average_pooling1"].not_expressible()
    assert any("19" in n.capability or "19" in n.reason for n in ne)



def test_alternatives_compute_each_reading_s_bound_when_reached(monkeypatch):
    """The alternatives of a float16 window whose sum can overflow in float16 (the summed-in-type
    reading, and its non-finite answers) come in the order of their readings' count, and each
    reading's bound is computed when its first alternative is reached, once: a judge that stops at
    the first computes one bound, not all of them."""
    from onnx_dml_bench.ops import _sums as SUM
    case = pool_case(AP, (1, 1, 2, 4), (2, 2), (1, 1), x=np.array([6e4, 6e4, 1, 2, 6e4, 6e4, 3, -4]), dtype="FLOAT16")
    inputs = case.inputs()
    ref = reference_of(case)
    pts = [*AP.open_points(case, inputs), *AP.precision_points(case, inputs)]
    assert "sum-precision" in pts and "overflow" in pts
    asked = []
    bound = SUM.bound
    monkeypatch.setattr(SUM, "bound", lambda st, y, dt, reading, *a, **k: asked.append(reading) or bound(st, y, dt, reading, *a, **k))
    alts = AP.alternatives(case, inputs, ref, pts)
    first = next(iter(alts))
    assert len(asked) == 1 and first.bounds["Y"] is not None
    rest = list(alts)
    names = [first.name] + [a.name for a in rest]
    assert names == sorted(names, key=lambda n: n.count("+"))
    # the summed-wide sum (the reference's reading) cannot overflow here: no alternative of it, and
    # its bound is never computed; the in-type one's, once for both of its alternatives
    assert names == [SUM.SUMMED_IN_TYPE, SUM.SUMMED_IN_TYPE + "+overflow-to-non-finite"]
    assert asked == [SUM.SUMMED_IN_TYPE]
    for a in [first] + rest:                          # the bound of its own reading
        reading = SUM.SUMMED_IN_TYPE if SUM.SUMMED_IN_TYPE in a.name else SUM.SUMMED_WIDE
        want = bound(AP._stats(case, inputs), ref["Y"], np.float16, reading)
        assert all(np.array_equal(g, w, equal_nan=True) for g, w in zip(a.bounds["Y"], want))
