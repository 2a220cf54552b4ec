"""The Direct3D flush: on the DirectML lanes (and WebGPU, as WGSL allows) float32 arithmetic may flush
denormals to a zero of their sign, on its inputs and outputs; an answer so flushed is allowed there
(``ep-took:denorm-flush``), a FAIL on every other lane, and float16 (or float64) flushed is a FAIL
everywhere."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.verdict import DENORM_FLUSH, judge

AP = registry.get("average_pooling1")
MP = registry.get("max_pooling2")
ROI = registry.get("roi_pooling")
FLUSHING = ("DmlExecutionProvider", "DirectML", "WebGpuExecutionProvider")
KEEPING = ("CPUExecutionProvider", "CUDAExecutionProvider", "TestEP")


def flushed(a):
    a = np.asarray(a)
    tiny = np.finfo(a.dtype).tiny
    return np.where((a != 0) & (np.abs(a) < tiny), np.copysign(a.dtype.type(0), a), a).astype(a.dtype)


def verdict(case, got, ep):
    ins = case.inputs()
    return judge(case, ins, Outcome(True, "done", None, got), None, None, ep_name=ep, ep_is_cpu=ep == "CPUExecutionProvider",
                 semantics="dml" if ep == "DirectML" else "onnx")


def ap_denormal(dt):
    d = AP.Desc(InputSizes=(1, 2, 6, 6), DataType=dt, DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    return AP.make_case(d, {}, "denormal", 19)


def roi_denormal(dt):
    d = ROI.Desc(InputSizes=(2, 1, 4, 4), RoiSizes=(2, 5), DataType=dt, SpatialScale=1.0, PooledSize=(2, 2))
    return ROI.make_case(d, {}, "denormal", 1)


@pytest.mark.parametrize("make", [ap_denormal, roi_denormal], ids=["average", "roi"])
def test_a_float32_answer_with_denormals_flushed_passes_where_the_lane_allows_it(make):
    case = make("FLOAT32")
    ins = case.inputs()
    ref = case.operator.expected(case, ins)
    assert any(((v != 0) & (np.abs(v) < np.finfo(np.float32).tiny)).any() for v in ins.values() if v.dtype == np.float32)
    out_flushed = {k: flushed(v) for k, v in ref.items()}
    in_flushed = case.operator.expected(case, {k: flushed(v) if v.dtype == np.float32 else v for k, v in ins.items()})
    for got in (out_flushed, in_flushed):
        assert any(not np.array_equal(got[k], ref[k]) for k in ref)
        for ep in FLUSHING:
            j = verdict(case, got, ep)
            assert j.verdict == "PASS" and f"ep-took:{DENORM_FLUSH}" in j.labels, (ep, j.reason)
        for ep in KEEPING:
            j = verdict(case, got, ep)
            assert j.verdict == "FAIL" and "wrong-zeros" in j.labels, (ep, j.reason)
    # the reference's own answer passes everywhere, with no flush named
    for ep in FLUSHING + KEEPING:
        j = verdict(case, ref, ep)
        assert j.verdict == "PASS" and f"ep-took:{DENORM_FLUSH}" not in j.labels
    # a denormal rounded up to the smallest normal, or halved, is no flush (exact outputs: no arithmetic); an
    # average (whose partial sums may flush one by one) no further than a few smallest normals
    tiny = float(np.finfo(np.float32).tiny)
    for k, v in ref.items():
        sub = (v != 0) & (np.abs(v) < tiny)
        if case.operator.compare_specs(case)[k].kind == "bound":
            far = dict(ref)
            far[k] = (v.astype(np.float64) + 16 * tiny).astype(np.float32)
            assert verdict(case, far, "DmlExecutionProvider").verdict == "FAIL"
        elif sub.any():
            wrong = dict(out_flushed)
            wrong[k] = np.where(sub, np.copysign(np.float32(tiny), v), out_flushed[k]).astype(np.float32)
            assert verdict(case, wrong, "DmlExecutionProvider").verdict == "FAIL"
            halved = dict(ref)
            halved[k] = np.where(sub, v / 2, v).astype(np.float32)
            assert verdict(case, halved, "DmlExecutionProvider").verdict == "FAIL"


@pytest.mark.parametrize("make", [ap_denormal, roi_denormal], ids=["average", "roi"])
def test_float16_flushed_stays_a_fail_on_every_lane(make):
    case = make("FLOAT16")
    ref = case.operator.expected(case, case.inputs())
    got = {k: flushed(v) if v.dtype == np.float16 else v for k, v in ref.items()}
    assert any(not np.array_equal(got[k], ref[k]) for k in ref)
    for ep in FLUSHING + KEEPING:
        assert verdict(case, got, ep).verdict == "FAIL", ep


def test_a_data_movement_operator_never_takes_the_flush():
    """SpaceToDepth and DepthToSpace only move data: Direct3D's loads, stores and moves keep the bits,
    so a float32 answer with denormals flushed is a FAIL on the DirectML lanes too (the flush rule is
    for arithmetic; `Operator.arithmetic`), while the pooling operators on the same lane may flush."""
    s2d = registry.get("space_to_depth1")
    case = next(c for c in s2d.sweep("default") if c.desc.DataType == "FLOAT32" and c.family == "denormal")
    ref = case.operator.expected(case, case.inputs())
    got = {k: flushed(v) for k, v in ref.items()}
    assert any(not np.array_equal(got[k], ref[k]) for k in ref)
    for ep in FLUSHING + KEEPING:
        j = verdict(case, got, ep)
        assert j.verdict == "FAIL", (ep, j.verdict, j.labels)
    assert all(registry.get(k).arithmetic for k in ("max_pooling2", "average_pooling1", "roi_pooling", "roi_align"))
