"""The NumPy reference (written from the DirectML documentation) against two other implementations:
ONNX Runtime's CPU EP and ``onnx.reference.ReferenceEvaluator``, over the smoke and default sweeps.

Neither is ground truth. Where one of them departs from the DirectML semantics, that departure is
a deviation: it is listed in ``DEVIATIONS`` with a predicate over cases, and it has its own test
below that shows, on a small explicit configuration, who departs and how. The agreement tests
skip exactly the cases the predicates match, so any new disagreement still fails them; another
test checks that every exclusion still matches a real disagreement in the sweep.

Kinds of deviation:
- ``bug``: the implementation departs from the DirectML semantics (and, for these, from ONNX's);
- ``open point``: the DirectML page says nothing (NaN, the sign of a zero maximum); the reference
  follows its documented policy, the implementation another one. Not a bug of either;
- ``tolerance``: both are defensible, but the bench's tolerance does not cover the difference;
- ``limitation``: the implementation cannot run the configuration at all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import onnx
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.roi_pooling import RoiPoolingDesc
from onnx_dml_bench.ops.space_depth import SpaceDepthDesc

from conftest import (FLT_MAX, PROFILES, Failure, bits_equal, expressible, inputs_of, mismatches,
                      onnx_reference_run, ort_cpu_run, ort_sweep_results, reference_of, sweep,
                      ORT_LOADS_OPSET_28, ORT_MAX_OPSET)

pytest.importorskip("onnxruntime")

OPS = list(registry.OPERATORS)
MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
ROI = registry.OPERATORS["roi_pooling"]
S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]

ORT = "onnxruntime CPU EP"
OREF = "onnx.reference"
ORT_MISSING_INT_KERNELS = ("INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64")


# ------------------------------------------------------------------------------------------------
# Predicates over cases
# ------------------------------------------------------------------------------------------------

def _x(case: Case) -> np.ndarray:
    return inputs_of(case)["X"]


def stride_1_path(case: Case) -> bool:
    """onnx.reference runs MaxPool through a separate generic path when every stride and every
    dilation is 1."""
    return all(s == 1 for s in case.desc.Strides) and all(d == 1 for d in case.desc.Dilations)


def x_has_nan(case: Case) -> bool:
    x = _x(case)
    return x.dtype.kind == "f" and bool(np.isnan(x).any())


def same_with_dilation(case: Case) -> bool:
    return case.v.get("auto_pad", "NOTSET").startswith("SAME") and any(d > 1 for d in case.desc.Dilations)


def window_abs_sum_exceeds_type_max(case: Case) -> bool:
    """Some averaging window holds values whose magnitudes add up past the type's largest finite
    value (the input holds values near +-max): sums in the input's precision can overflow, and
    any summation order other than the reference's can lose the small terms."""
    x = _x(case)
    xp = P.pad(np.abs(x.astype(np.float64)), case.desc, 0.0)
    total = None
    for _, _, view in P.window_views(xp, case.desc):
        total = view.copy() if total is None else total + view
    return bool((total > np.finfo(x.dtype).max).any())


def valid_ceil_grows(case: Case) -> bool:
    """auto_pad VALID with ceil_mode=1 where the explicit-pad ceil formula would give one more
    window than the VALID formula on some axis ((In - window) not a multiple of the stride)."""
    if case.v.get("auto_pad") != "VALID" or not case.v.get("ceil_mode"):
        return False
    d = case.desc
    return any((d.InputSizes[i + 2] - eff) % d.Strides[i] for i, eff in enumerate(P.effective_window(d)))


def same_negative_pad(case: Case) -> bool:
    if not case.v.get("auto_pad", "NOTSET").startswith("SAME"):
        return False
    _, a, _ = O.case_node(case, case.operator.onnx_ops[0])
    return "same-negative-pad" in O.axes(a, case.desc.InputSizes[2:])[1]


def reference_has_neg_inf(case: Case) -> bool:
    y = reference_of(case)["Y"]
    return y.dtype.kind == "f" and bool(np.isneginf(y).any())


def expected_of(case: Case) -> dict:
    """The ONNX answer of the case's graph (``Operator.expected``): what ONNX Runtime and
    onnx.reference implement. Where the graph is the direct image of the descriptor it is the
    DirectML reference too (tests/test_onnx_pool_spec.py checks that on the sweeps)."""
    return case.operator.expected(case, inputs_of(case))


def onnx_mismatches(case: Case, got) -> list[str]:
    """``mismatches`` against the ONNX answer of the case's graph."""
    if isinstance(got, Failure):
        return [f"{case.id}: no result: {got.error[:300]}"]
    from onnx_dml_bench import verdict
    stats = verdict.compare_side(case, inputs_of(case), expected_of(case), got)
    return [f"{case.id}: {name}: {res.mismatches}/{res.total} differ {res.labels} {res.note} first={res.first[:3]}"
            for name, res in stats.items() if not res.match]


@dataclass(frozen=True)
class Deviation:
    key: str
    who: str
    kind: str           # bug | open point | tolerance | limitation
    summary: str
    applies: Callable[[Case], bool]


def _op(*keys):
    return lambda c: c.op in keys


DEVIATIONS = [
    # ---- ONNX Runtime CPU EP --------------------------------------------------------------------
    Deviation("ort-same-pads-ignore-dilation", ORT, "bug",
              "MaxPool/AveragePool auto_pad SAME_UPPER/SAME_LOWER with dilations > 1: the SAME pads are "
              "computed from the undilated kernel, so the output is smaller than ceil(In/Stride)",
              lambda c: c.op in ("max_pooling2", "average_pooling1") and same_with_dilation(c)),
    Deviation("ort-valid-ceil-mode", ORT, "bug",
              "MaxPool/AveragePool auto_pad VALID with ceil_mode=1: the output size is the explicit-pad ceil formula "
              "(one more window where (In - window) is not a multiple of the stride); the ONNX text gives "
              "ceil((In - window + 1) / stride), which is the floor size: ceil_mode changes nothing under VALID",
              lambda c: c.op in ("max_pooling2", "average_pooling1") and valid_ceil_grows(c)),
    Deviation("ort-same-negative-pad", ORT, "limitation",
              "MaxPool auto_pad SAME with a stride larger than the dilated window: the ONNX pad formula "
              "is negative and ONNX Runtime's MaxPool and AveragePool before opset 19 fail the run (AveragePool-19 clamps to 0, as the bench) ('padding values must be non-negative'); the text does "
              "not clamp it, pads must be >= 0 (open point same-negative-pad: the bench uses 0)",
              lambda c: (c.op == "max_pooling2" or (c.op == "average_pooling1" and c.opset < 19)) and same_negative_pad(c)),
    Deviation("ort-avgpool-f32-accumulates-in-f32", ORT, "bug",
              "AveragePool float32 sums in float32: with values near FLT_MAX the sum overflows to +-inf "
              "(or NaN) where the true average is finite (count_include_pad 0 and 1)",
              lambda c: c.op == "average_pooling1" and c.dtype == "FLOAT32" and window_abs_sum_exceeds_type_max(c)),
    Deviation("ort-avgpool-f16-cancellation", ORT, "tolerance",
              "AveragePool float16 with values near +-65504 that cancel: summed in float32, small terms are "
              "lost; beyond the (window+2)-ULP tolerance of the exact average",
              lambda c: c.op == "average_pooling1" and c.dtype == "FLOAT16" and window_abs_sum_exceeds_type_max(c)),
    Deviation("ort-maxpool-f32-starts-at-lowest", ORT, "bug",
              "MaxPool float32 without Indices (MLAS kernels) starts its maximum at -FLT_MAX: a window of "
              "-inf only (or NaN only) gives -3.4028235e38, a value not in the window",
              lambda c: c.op == "max_pooling2" and c.dtype == "FLOAT32" and not c.desc.OutputIndicesDataType
              and reference_has_neg_inf(c)),
    Deviation("ort-maxpool-nan", ORT, "open point",
              "MaxPool NaN: without Indices NaN is skipped; with Indices the scan starts at the first "
              "element and compares with '>', so a leading NaN sticks and later ones are skipped. The "
              "reference propagates NaN (documented policy choice)",
              lambda c: c.op == "max_pooling2" and x_has_nan(c)),
    Deviation("ort-maxpool-signed-zero", ORT, "open point",
              "MaxPool without Indices: when -0.0 and +0.0 tie for the maximum the vectorised kernel does "
              "not return the first element met (the reference's documented policy); with Indices it does",
              lambda c: c.op == "max_pooling2" and not c.desc.OutputIndicesDataType
              and "signed-zero" in MP.open_points(c, inputs_of(c))),
    Deviation("ort-roi-starts-at-lowest", ORT, "bug",
              "MaxRoiPool starts each bin's maximum at -FLT_MAX: a bin of -inf only gives -3.4028235e38",
              lambda c: c.op == "roi_pooling" and c.dtype == "FLOAT32" and reference_has_neg_inf(c)),
    Deviation("ort-roi-nan", ORT, "open point",
              "MaxRoiPool NaN: a NaN is kept only until a later element replaces it (std::max order); the "
              "reference propagates NaN",
              lambda c: c.op == "roi_pooling" and x_has_nan(c)),
    Deviation("ort-roi-float16", ORT, "limitation",
              "MaxRoiPool float16: session creation fails (INVALID_GRAPH in an inserted Cast)",
              lambda c: c.op == "roi_pooling" and c.dtype == "FLOAT16"),
    Deviation("ort-space-depth-int-kernels", ORT, "limitation",
              "SpaceToDepth-13 / DepthToSpace-13 have no CPU kernel for int16/32/64 and uint16/32/64 "
              "(NOT_IMPLEMENTED); the Reshape-Transpose-Reshape form runs",
              lambda c: c.op in ("space_to_depth1", "depth_to_space1") and c.v.get("form") == "native"
              and c.dtype in ORT_MISSING_INT_KERNELS),
    Deviation("ort-opset-28", ORT, "limitation",
              "opset-28 models (SpaceToDepth with mode=CRD) need IR version 14: ONNX Runtime 1.31 refuses "
              "to load them (1.32 loads them)",
              lambda c: c.opset > ORT_MAX_OPSET),
    # ---- onnx.reference -------------------------------------------------------------------------------
    Deviation("oref-same-negative-pad", OREF, "bug",
              "MaxPool/AveragePool auto_pad SAME with a stride larger than the window (negative pad total): "
              "MaxPool takes its windows from negative pads (wrong values and indices), AveragePool fails "
              "('index can't contain negative values')",
              lambda c: c.op in ("max_pooling2", "average_pooling1") and same_negative_pad(c)),
    Deviation("oref-avgpool-valid-dilation", OREF, "bug",
              "AveragePool auto_pad VALID with dilations > 1: the output size is computed from the undilated "
              "kernel (one window too many)",
              lambda c: c.op == "average_pooling1" and c.v.get("auto_pad") == "VALID" and any(d > 1 for d in c.desc.Dilations)),
    Deviation("oref-avgpool-ceil-with-auto-pad", OREF, "limitation",
              "AveragePool with ceil_mode=1 and auto_pad other than NOTSET: 'ceil_mode is not supported with "
              "auto_pad' (the ONNX text allows the combination)",
              lambda c: c.op == "average_pooling1" and c.v.get("ceil_mode") and c.v.get("auto_pad", "NOTSET") != "NOTSET"),
    Deviation("oref-no-maxroipool", OREF, "limitation",
              "onnx.reference has no MaxRoiPool", _op("roi_pooling")),
    Deviation("oref-maxpool-int8-stride1", OREF, "bug",
              "MaxPool int8 with all strides and dilations 1: pads with NaN and fails "
              "('cannot convert float NaN to integer')",
              lambda c: c.op == "max_pooling2" and c.dtype == "INT8" and stride_1_path(c)),
    Deviation("oref-maxpool-indices-stride1", OREF, "bug",
              "MaxPool Indices with all strides and dilations 1: the window argmax is unravelled with the "
              "output's shape and batch/channel are left out, so Indices are wrong",
              lambda c: c.op == "max_pooling2" and bool(c.desc.OutputIndicesDataType) and stride_1_path(c)),
    Deviation("oref-maxpool-pads-order", OREF, "bug",
              "MaxPool 2-D with all strides and dilations 1 reads pads as [top, bottom, left, right] "
              "instead of ONNX's [h_begin, w_begin, h_end, w_end]: wrong output shape or a failure",
              lambda c: c.op == "max_pooling2" and c.desc.DimensionCount == 2 and stride_1_path(c)
              and c.v.get("auto_pad", "NOTSET") == "NOTSET" and c.desc.StartPadding[1] != c.desc.EndPadding[0]),
    Deviation("oref-maxpool-3d-pads-ignored", OREF, "bug",
              "MaxPool 3-D with all strides and dilations 1 ignores pads (IndexError)",
              lambda c: c.op == "max_pooling2" and c.desc.DimensionCount == 3 and stride_1_path(c)
              and (any(c.desc.StartPadding) or any(c.desc.EndPadding))),
    Deviation("oref-maxpool-same-lower", OREF, "bug",
              "MaxPool auto_pad SAME_LOWER (strides or dilations not all 1): output size floor(In/Stride) "
              "instead of ceil(In/Stride), pads placed as for SAME_UPPER",
              lambda c: c.op == "max_pooling2" and c.v.get("auto_pad") == "SAME_LOWER" and not stride_1_path(c)),
    Deviation("oref-maxpool-nan", OREF, "open point",
              "MaxPool NaN: skipped (stride-1 path, padding is marked with NaN) or kept only when first in "
              "the window; the reference propagates NaN",
              lambda c: c.op == "max_pooling2" and x_has_nan(c)),
    Deviation("oref-maxpool-signed-zero", OREF, "open point",
              "MaxPool with all strides and dilations 1 uses np.max, which returns the last of tying "
              "zeros, not the first element met",
              lambda c: c.op == "max_pooling2" and stride_1_path(c) and "signed-zero" in MP.open_points(c, inputs_of(c))),
    Deviation("oref-avgpool-nan-exclude-pad", OREF, "bug",
              "AveragePool count_include_pad=0 marks padding with NaN and drops every NaN, so a NaN input "
              "is skipped instead of making the average NaN",
              lambda c: c.op == "average_pooling1" and not c.desc.IncludePadding and x_has_nan(c)),
    Deviation("oref-avgpool-f32-overflow", OREF, "bug",
              "AveragePool float32 sums in float32 (numpy): with values near FLT_MAX the sum overflows to "
              "+-inf or NaN where the true average is finite",
              lambda c: c.op == "average_pooling1" and c.dtype == "FLOAT32" and window_abs_sum_exceeds_type_max(c)),
    Deviation("oref-avgpool-f16-cancellation", OREF, "tolerance",
              "AveragePool float16 with values near +-65504 that cancel: summed in float32 in numpy's order, "
              "small terms are lost; any float32 summation order (the reference's included) can miss the "
              "exact average by far more than the (window+2)-ULP tolerance",
              lambda c: c.op == "average_pooling1" and c.dtype == "FLOAT16" and window_abs_sum_exceeds_type_max(c)),
    Deviation("oref-avgpool-same-dilation", OREF, "bug",
              "AveragePool auto_pad SAME_* with dilations > 1: SAME pads from the undilated kernel, "
              "then a failure (negative index)",
              lambda c: c.op == "average_pooling1" and same_with_dilation(c)),
]
DEV = {d.key: d for d in DEVIATIONS}


def deviations_for(case: Case, who: str) -> list[Deviation]:
    return [d for d in DEVIATIONS if d.who == who and d.applies(case)]


# ------------------------------------------------------------------------------------------------
# Agreement over the sweeps
# ------------------------------------------------------------------------------------------------

# the share of each operator's cases an implementation must still be checked on (ROI pooling on
# ORT: half its cases are float16, which ORT cannot run)
MIN_CHECKED = {ORT: 0.35, OREF: 0.4}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", OPS)
def test_reference_agrees_with_ort_cpu(profile, op_key):
    results = ort_sweep_results(profile)
    cases = expressible(sweep(profile, op_key))
    checked = [c for c in cases if not deviations_for(c, ORT)]
    assert len(checked) >= MIN_CHECKED[ORT] * len(cases), f"only {len(checked)}/{len(cases)} checked"
    problems = [p for c in checked for p in onnx_mismatches(c, results[c.id])]
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op_key", OPS)
def test_reference_agrees_with_onnx_reference(profile, op_key):
    cases = expressible(sweep(profile, op_key))
    checked = [c for c in cases if not deviations_for(c, OREF)]
    if op_key == "roi_pooling":
        assert not checked          # no MaxRoiPool in onnx.reference: see its deviation test
        return
    assert len(checked) >= MIN_CHECKED[OREF] * len(cases), f"only {len(checked)}/{len(cases)} checked"
    problems = [p for c in checked for p in onnx_mismatches(c, onnx_reference_run(c))]
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:15])


def test_every_case_of_ort_results_ran_or_is_a_limitation():
    """A session failure is only acceptable where a 'limitation' deviation says so."""
    results = ort_sweep_results("default")
    for c in expressible(sweep("default")):
        if isinstance(results[c.id], Failure):
            kinds = {d.kind for d in deviations_for(c, ORT)}
            assert "limitation" in kinds, f"{c.id}: {results[c.id]}"


@pytest.mark.parametrize("who", [ORT, OREF])
def test_exclusions_still_deviate(who):
    """Every deviation whose predicate matches default-sweep cases still shows a disagreement on at
    least one of them (an exclusion that no longer excludes anything real must go). 'tolerance'
    exclusions are exempt: whether they show depends on both sides' summation order."""
    results = ort_sweep_results("default") if who == ORT else None
    matched: dict[str, list[Case]] = {}
    for c in expressible(sweep("default")):
        for d in deviations_for(c, who):
            if d.kind == "tolerance":
                continue
            matched.setdefault(d.key, []).append(c)
    assert matched
    stale = []
    for key, cases in matched.items():
        got = (lambda c: results[c.id]) if who == ORT else onnx_reference_run
        if not any(onnx_mismatches(c, got(c)) for c in cases):
            stale.append(f"{key} ({len(cases)} cases)")
    assert not stale, stale


def test_deviation_keys_unique_and_described():
    assert len(DEV) == len(DEVIATIONS)
    for d in DEVIATIONS:
        assert d.who in (ORT, OREF) and d.kind in ("bug", "open point", "tolerance", "limitation")
        assert len(d.summary) > 30


# ------------------------------------------------------------------------------------------------
# Explicit configurations
# ------------------------------------------------------------------------------------------------

def pool_case(op, sizes, k, s, sp=None, ep=None, dil=None, *, dtype="FLOAT32", variant=None, x=None,
              opset=None, **fields) -> Case:
    variant = dict(variant or {})
    d = P.geometry(op.Desc, sizes, k, s, sp, ep, dil or (1,) * len(k), variant, **fields).replace(DataType=dtype)
    op.validate(d)
    if x is None:
        x = np.arange(math.prod(sizes))
    values = (("X", tuple(np.asarray(x, dtype=np.float64).ravel().tolist())),)
    case = Case(op, d, opset or op.default_opset, make_variant(**variant), "explicit", 0, values)
    op.check_variant(case)
    assert op.expressible(case) is None, op.expressible(case)
    return case


def roi_case(x, rois, pooled, scale=1.0, dtype="FLOAT32") -> Case:
    x, rois = np.asarray(x, dtype=np.float64), np.asarray(rois, dtype=np.float64)
    d = RoiPoolingDesc(InputSizes=x.shape, RoiSizes=rois.shape, DataType=dtype, SpatialScale=scale, PooledSize=pooled)
    ROI.validate(d)
    return Case(ROI, d, 1, (), "explicit", 0, (("X", tuple(x.ravel().tolist())), ("rois", tuple(rois.ravel().tolist()))))


def ort_one(case: Case):
    return ort_cpu_run([case])[case.id]


def signbits(a) -> list[bool]:
    return np.signbit(np.asarray(a)).ravel().tolist()


# ---- ONNX Runtime CPU EP -----------------------------------------------------------------------

@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
@pytest.mark.parametrize("mode", ["SAME_UPPER", "SAME_LOWER"])
def test_ort_same_pads_ignore_dilation(op, mode):
    case = pool_case(op, (1, 1, 8, 8), (3, 3), (2, 2), dil=(2, 2), variant={"auto_pad": mode}, opset=19)
    assert DEV["ort-same-pads-ignore-dilation"].applies(case)
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


@pytest.mark.parametrize("include_padding", [False, True])
def test_ort_average_pool_float32_overflows(include_padding):
    x = np.array([FLT_MAX, FLT_MAX], dtype=np.float32).reshape(1, 1, 1, 2)
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), (0, 0), (0, 1), x=x, IncludePadding=include_padding)
    assert DEV["ort-avgpool-f32-accumulates-in-f32"].applies(case)
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


@pytest.mark.parametrize("sizes,k", [((1, 1, 2, 2), (2, 2)), ((1, 1, 1, 1, 4), (1, 1, 2))], ids=["2d", "3d"])
def test_ort_max_pool_float32_all_neg_inf_window(sizes, k):
    x = np.full(sizes, -np.inf)
    case = pool_case(MP, sizes, k, (1,) * len(k), x=x)
    assert DEV["ort-maxpool-f32-starts-at-lowest"].applies(case)
    ref = reference_of(case)["Y"]
    assert np.isneginf(ref).all()
    got = ort_one(case)["Y"]
    assert (got == -FLT_MAX).all(), got          # a value that is not in the window
    # with Indices (another kernel) ORT gives -inf
    with_idx = pool_case(MP, sizes, k, (1,) * len(k), x=x, OutputIndicesDataType="UINT32")
    assert not DEV["ort-maxpool-f32-starts-at-lowest"].applies(with_idx)
    assert not mismatches(with_idx, ort_one(with_idx))
    # float16 starts at -inf: agreement
    f16 = pool_case(MP, sizes, k, (1,) * len(k), x=x, dtype="FLOAT16")
    assert not mismatches(f16, ort_one(f16))


def test_ort_max_pool_nan_is_an_open_point():
    """The DML page does not say how NaN takes part in the maximum; the reference propagates it
    (its documented policy choice), ORT does not. Assert both behaviours."""
    assert "NaN propagates" in MP.open_point_texts["nan"]
    rows = [
        # x, with indices, reference (Y, index), ORT (Y, index)
        ([np.nan, 1.0], False, (np.nan, None), (1.0, None)),
        ([1.0, np.nan], True, (np.nan, 1), (1.0, 0)),
        ([np.nan, 1.0], True, (np.nan, 0), (np.nan, 0)),        # a leading NaN sticks in ORT
        ([np.nan, np.nan], False, (np.nan, None), (-FLT_MAX, None)),
    ]
    for x, idx, (ref_y, ref_i), (ort_y, ort_i) in rows:
        case = pool_case(MP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array(x),
                         OutputIndicesDataType="UINT32" if idx else None)
        assert DEV["ort-maxpool-nan"].applies(case)
        assert "nan" in MP.open_points(case, case.inputs())
        ref, got = reference_of(case), ort_one(case)
        assert bits_equal(ref["Y"].ravel(), np.array([ref_y], np.float32)), (x, idx, ref["Y"])
        assert bits_equal(got["Y"].ravel(), np.array([ort_y], np.float32)), (x, idx, got["Y"])
        if idx:
            assert ref["Indices"].ravel().tolist() == [ref_i]
            assert got["Indices"].ravel().tolist() == [ort_i]


def test_ort_max_pool_signed_zero_is_an_open_point():
    x = np.array([0.0, -0.0, 0.0, -0.0])
    case = pool_case(MP, (1, 1, 1, 4), (1, 4), (1, 1), x=x)
    assert DEV["ort-maxpool-signed-zero"].applies(case)
    assert "signed-zero" in MP.open_points(case, case.inputs())
    assert "first element met" in MP.open_point_texts["signed-zero"]
    assert signbits(ort_one(case)["Y"]) == [True]         # -0.0, not the first element met (+0.0)
    # with Indices both keep the first element met
    idx = pool_case(MP, (1, 1, 1, 4), (1, 4), (1, 1), x=x, OutputIndicesDataType="UINT32")
    assert not DEV["ort-maxpool-signed-zero"].applies(idx)
    for out in (reference_of(idx), ort_one(idx)):
        assert signbits(out["Y"]) == [False] and out["Indices"].ravel().tolist() == [0]


def test_ort_roi_pool_all_neg_inf_bin():
    x = np.full((1, 1, 4, 4), -np.inf)
    x[0, 0, 3, 3] = 1.0
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))
    assert DEV["ort-roi-starts-at-lowest"].applies(case)
    np.testing.assert_array_equal(reference_of(case)["Y"].ravel(), [-np.inf, -np.inf, -np.inf, 1.0])
    np.testing.assert_array_equal(ort_one(case)["Y"].ravel(), [-FLT_MAX, -FLT_MAX, -FLT_MAX, 1.0])


def test_ort_roi_pool_nan_is_an_open_point():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 0] = np.nan               # first element of bin (0, 0), then zeros
    x[0, 0, :2, 2:] = np.nan             # bin (0, 1): NaN only
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))
    assert DEV["ort-roi-nan"].applies(case)
    assert "nan" in ROI.open_points(case, case.inputs())
    assert bits_equal(reference_of(case)["Y"].ravel(), np.array([np.nan, np.nan, 0, 0], np.float32))
    assert bits_equal(ort_one(case)["Y"].ravel(), np.array([0, np.nan, 0, 0], np.float32))


def test_ort_roi_pool_float16_session_fails():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    case = roi_case(x, [[0, 0, 0, 3, 3]], (2, 2), dtype="FLOAT16")
    assert DEV["ort-roi-float16"].applies(case)
    onnx.checker.check_model(ROI.to_onnx(case), full_check=True)     # a valid model
    got = ort_one(case)
    assert isinstance(got, Failure)
    assert "INVALID_GRAPH" in got.error and "Cast" in got.error
    # the same data in float32 runs and agrees
    assert not mismatches(roi_case(x, [[0, 0, 0, 3, 3]], (2, 2)), ort_one(roi_case(x, [[0, 0, 0, 3, 3]], (2, 2))))


@pytest.mark.parametrize("op", [S2D, D2S], ids=["SpaceToDepth", "DepthToSpace"])
@pytest.mark.parametrize("dtype", ["FLOAT64", "FLOAT32", "FLOAT16", "INT8", "UINT8", *ORT_MISSING_INT_KERNELS])
def test_ort_space_depth_kernels_by_type(op, dtype):
    sizes = (1, 2, 4, 6) if op is S2D else (1, 8, 2, 3)
    x = np.arange(48) % 100
    cases = {}
    for form in ("native", "decomposed"):
        d = SpaceDepthDesc(InputSizes=sizes, DataType=dtype, BlockSize=2, Order="DEPTH_COLUMN_ROW")
        cases[form] = Case(op, d, 13, make_variant(form=form), "explicit", 0, (("X", tuple(int(v) for v in x)),))
    native = ort_one(cases["native"])
    if dtype in ORT_MISSING_INT_KERNELS:
        assert DEV["ort-space-depth-int-kernels"].applies(cases["native"])
        assert isinstance(native, Failure) and "NOT_IMPLEMENTED" in native.error, native
    else:
        assert not DEV["ort-space-depth-int-kernels"].applies(cases["native"])
        assert not mismatches(cases["native"], native)
    assert not DEV["ort-space-depth-int-kernels"].applies(cases["decomposed"])
    assert not mismatches(cases["decomposed"], ort_one(cases["decomposed"]))


def test_ort_loads_opset_28_from_1_32():
    d = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType="FLOAT32", BlockSize=2, Order="COLUMN_ROW_DEPTH")
    case = Case(S2D, d, 28, make_variant(form="native"), "explicit", 0, (("X", tuple(range(48))),))
    assert DEV["ort-opset-28"].applies(case) == (not ORT_LOADS_OPSET_28)
    m = S2D.to_onnx(case)
    onnx.checker.check_model(m, full_check=True)
    assert m.ir_version == 14
    got = ort_one(case)
    from conftest import ort_session
    if ORT_LOADS_OPSET_28:
        assert not isinstance(got, Failure), got
        assert not mismatches(case, got)
        # float16 has no SpaceToDepth-28 CPU kernel: the node runs as its ONNX function body, and agrees
        f16 = Case(S2D, d.replace(DataType="FLOAT16"), 28, make_variant(form="native"), "explicit", 0,
                   (("X", tuple(range(48))),))
        assert not mismatches(f16, ort_one(f16))
    else:
        assert isinstance(got, Failure) and "IR version: 14" in got.error and "max supported IR version: 13" in got.error
        m.ir_version = 13                        # even so, opset 28 itself is refused
        with pytest.raises(Exception, match="(?i)opset"):
            ort_session(m)
    # onnx.reference runs it, and agrees
    assert not mismatches(case, onnx_reference_run(case))


# ---- onnx.reference ---------------------------------------------------------------------------------

def test_onnx_reference_has_no_maxroipool():
    case = roi_case(np.arange(16.0).reshape(1, 1, 4, 4), [[0, 0, 0, 3, 3]], (2, 2))
    assert DEV["oref-no-maxroipool"].applies(case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "MaxRoiPool" in got.error


def test_onnx_reference_int8_max_pool_stride_1_fails():
    x = np.arange(9) - 4
    case = pool_case(MP, (1, 1, 3, 3), (2, 2), (1, 1), x=x, dtype="INT8")
    assert DEV["oref-maxpool-int8-stride1"].applies(case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "NaN" in got.error
    # stride 2 takes the other path: it runs and agrees; ORT agrees on both
    strided = pool_case(MP, (1, 1, 4, 4), (2, 2), (2, 2), x=np.arange(16) - 8, dtype="INT8")
    assert not DEV["oref-maxpool-int8-stride1"].applies(strided)
    assert not mismatches(strided, onnx_reference_run(strided))
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_indices_stride_1():
    case = pool_case(MP, (1, 2, 4, 4), (2, 2), (1, 1), x=np.arange(32), OutputIndicesDataType="UINT64")
    assert DEV["oref-maxpool-indices-stride1"].applies(case)
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
    assert DEV["oref-maxpool-pads-order"].applies(case)
    assert reference_of(case)["Y"].shape == (1, 1, 3, 3)
    assert onnx_reference_run(case)["Y"].shape == (1, 1, 4, 2)
    # StartPadding (0, 1), EndPadding (0, 1) on a 1x3 window: fails outright
    case2 = pool_case(MP, (1, 1, 3, 4), (1, 3), (1, 1), (0, 1), (0, 1))
    assert DEV["oref-maxpool-pads-order"].applies(case2)
    got = onnx_reference_run(case2)
    assert isinstance(got, Failure) and "zero-size" in got.error
    for c in (case, case2):
        assert not mismatches(c, ort_one(c))


def test_onnx_reference_max_pool_3d_pads_ignored_stride_1():
    case = pool_case(MP, (1, 1, 3, 4, 5), (2, 2, 2), (1, 1, 1), (0, 0, 1), (1, 0, 0))
    assert DEV["oref-maxpool-3d-pads-ignored"].applies(case)
    assert reference_of(case)["Y"].shape == (1, 1, 3, 3, 5)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "IndexError" in got.error
    assert not mismatches(case, ort_one(case))


def test_onnx_reference_max_pool_same_lower_strided():
    case = pool_case(MP, (1, 1, 7, 6), (3, 3), (2, 2), variant={"auto_pad": "SAME_LOWER"})
    assert DEV["oref-maxpool-same-lower"].applies(case)
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
        assert DEV["oref-maxpool-nan"].applies(c)
        assert np.isnan(reference_of(c)["Y"]).all()
        assert bits_equal(onnx_reference_run(c)["Y"].ravel(), np.array(want, np.float32))


def test_onnx_reference_max_pool_signed_zero_is_an_open_point():
    case = pool_case(MP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([0.0, -0.0]), OutputIndicesDataType="UINT32")
    assert DEV["oref-maxpool-signed-zero"].applies(case)
    assert signbits(reference_of(case)["Y"]) == [False]          # the first element met
    assert signbits(onnx_reference_run(case)["Y"]) == [True]     # np.max: the last


def test_onnx_reference_average_pool_skips_nan_without_include_padding():
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([np.nan, 1.0]))
    assert DEV["oref-avgpool-nan-exclude-pad"].applies(case)
    assert np.isnan(reference_of(case)["Y"]).all()
    assert onnx_reference_run(case)["Y"].ravel().tolist() == [1.0]
    assert not mismatches(case, ort_one(case))
    # count_include_pad=1: NaN propagates there too
    inc = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([np.nan, 1.0]), IncludePadding=True)
    assert not DEV["oref-avgpool-nan-exclude-pad"].applies(inc)
    assert not mismatches(inc, onnx_reference_run(inc))


def test_onnx_reference_average_pool_float32_overflows():
    case = pool_case(AP, (1, 1, 1, 2), (1, 2), (1, 1), x=np.array([FLT_MAX, FLT_MAX]))
    assert DEV["oref-avgpool-f32-overflow"].applies(case)
    assert reference_of(case)["Y"].ravel().tolist() == [FLT_MAX]
    assert onnx_reference_run(case)["Y"].ravel().tolist() == [np.inf]


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
    case = cancelling_f16_case()
    key = "ort-avgpool-f16-cancellation" if who == ORT else "oref-avgpool-f16-cancellation"
    assert DEV[key].applies(case)
    want = exact_f16_average([-TINY16, 65504.0, -65504.0])
    assert want != 0 and np.signbit(want)
    got = (ort_one(case) if who == ORT else onnx_reference_run(case))["Y"].ravel()
    assert got.tolist() == [0.0]                     # -tiny was absorbed by +65504 in float32
    ulps = abs(int(np.float16(want).view(np.int16)) - int(np.float16(0).view(np.int16)))
    assert ulps > math.prod(case.desc.WindowSize) + 2  # far beyond the tolerance


def test_onnx_reference_average_pool_same_with_dilation():
    # 8x8, window 3x3 dilated by 2, stride 2, SAME_UPPER: DML pads 1 (start) and 2 (end)
    case = pool_case(AP, (1, 1, 8, 8), (3, 3), (2, 2), dil=(2, 2), variant={"auto_pad": "SAME_UPPER"})
    assert DEV["oref-avgpool-same-dilation"].applies(case)
    assert case.desc.StartPadding == (1, 1) and case.desc.EndPadding == (2, 2)
    ref = reference_of(case)["Y"]
    assert ref[0, 0, 0, 0] == (9 + 11 + 25 + 27) / 4 and ref[0, 0, 0, 3] == (13 + 15 + 29 + 31) / 4
    got = onnx_reference_run(case)["Y"]
    assert got.shape == ref.shape and got[0, 0, 0, 3] == 0 and (got[0, 0, 3, :] == 0).all()
    # the sweep's geometry (8x9, window 3x2, stride 2x3, dilations 2) fails outright
    c2 = pool_case(AP, (2, 1, 8, 9), (3, 2), (2, 3), dil=(2, 2), variant={"auto_pad": "SAME_UPPER"})
    got2 = onnx_reference_run(c2)
    assert isinstance(got2, Failure) and "negative" in got2.error


# ------------------------------------------------------------------------------------------------
# The reference itself on a point ORT's CPU EP pins down
# ------------------------------------------------------------------------------------------------

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


# ---- the ONNX attribute grid ----------------------------------------------------------------------

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
    assert not DEV["ort-valid-ceil-mode"].applies(plain)
    assert not onnx_mismatches(plain, ort_one(plain))


@pytest.mark.parametrize("op", [MP, AP], ids=["MaxPool", "AveragePool"])
def test_ort_same_negative_pad(op):
    # In 6, window 2, stride 3: out = ceil(6/3) = 2, pad total (2-1)*3 + 2 - 6 = -1
    case = pool_case(op, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    assert DEV["ort-same-negative-pad"].applies(case) == (op is MP)
    assert "same-negative-pad" in op.open_points(case, case.inputs())
    assert case.desc.StartPadding == (0, 0) and case.desc.EndPadding == (0, 0)
    # the bench's answer: pads clamped to 0, windows at 0 and 3
    np.testing.assert_array_equal(expected_of(case)["Y"].ravel(),
                                  [7, 10, 25, 28] if op is MP else [3.5, 6.5, 21.5, 24.5])
    got = ort_one(case)
    if op is MP:
        assert isinstance(got, Failure) and "padding values must be non-negative" in got.error, got
    else:
        assert not onnx_mismatches(case, got)      # ONNX Runtime's AveragePool clamps the pads to 0 too


def test_onnx_reference_same_negative_pad():
    mp = pool_case(MP, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    ap = pool_case(AP, (1, 1, 6, 6), (2, 2), (3, 3), variant={"auto_pad": "SAME_UPPER"})
    assert DEV["oref-same-negative-pad"].applies(mp) and DEV["oref-same-negative-pad"].applies(ap)
    got = onnx_reference_run(mp)
    assert isinstance(got, Failure) or onnx_mismatches(mp, got)
    got = onnx_reference_run(ap)
    assert isinstance(got, Failure) and "negative" in got.error


def test_onnx_reference_average_pool_valid_with_dilation():
    case = pool_case(AP, (1, 1, 7, 7), (2, 3), (2, 2), dil=(2, 2), variant={"auto_pad": "VALID"}, opset=19)
    assert DEV["oref-avgpool-valid-dilation"].applies(case)
    got = onnx_reference_run(case)
    assert not isinstance(got, Failure) and got["Y"].shape != expected_of(case)["Y"].shape


def test_onnx_reference_average_pool_ceil_with_auto_pad_fails():
    case = pool_case(AP, (1, 1, 7, 6), (3, 2), (2, 2), variant={"auto_pad": "SAME_UPPER", "ceil_mode": 1}, opset=19)
    assert DEV["oref-avgpool-ceil-with-auto-pad"].applies(case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "ceil_mode is not supported with auto_pad" in got.error


def test_ort_count_include_pad_ceil_overhang_not_counted():
    """AveragePool count_include_pad=1, ceil_mode=1, a window reaching past the end pad: ONNX Runtime
    counts input and pad pixels, not the overhang (the bench's reading of open point
    ceil-overhang-divisor); DML's IncludePadding TRUE divides by the whole window."""
    # In 1x4, window 1x3, stride 2, pads 0: ceil((4-3)/2)+1 = 2 windows: [0,1,2] and [2,3,(4)]
    case = pool_case(AP, (1, 1, 1, 4), (1, 3), (1, 2), variant={"ceil_mode": 1}, IncludePadding=True, x=[1, 2, 3, 4])
    assert AP.dml_image(case) is not None
    assert "ceil-overhang-divisor" in AP.open_points(case, case.inputs())
    assert expected_of(case)["Y"].ravel().tolist() == [2.0, 3.5]              # (3+4)/2
    assert reference_of(case)["Y"].ravel().tolist() == [2.0, float(np.float32(7 / 3))]   # DML: (3+4+0)/3
    assert ort_one(case)["Y"].ravel().tolist() == [2.0, 3.5]
