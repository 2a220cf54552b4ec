"""The NumPy reference (written from the DirectML documentation) against two other implementations:
ONNX Runtime's CPU EP and ``onnx.reference.ReferenceEvaluator``, over the smoke and default sweeps.

Neither is ground truth. Where one of them departs from the DirectML semantics, that departure is
a deviation: each operator declares its own in its file (``Operator.deviations``, an
``ops.base.Deviation`` with a predicate over a case and its inputs); ``DEVIATIONS`` collects them,
and each has its own test below that shows, on a small explicit configuration, who departs and
how. The agreement tests skip exactly the cases the predicates match, so any new disagreement
still fails them; another test checks that every exclusion still matches a real disagreement in
the sweep.

Kinds of deviation (``ops.base.DEVIATION_KINDS``):
- ``bug``: the implementation departs from the DirectML semantics (and, for these, from ONNX's);
- ``open point``: the DirectML page says nothing (NaN, the sign of a zero maximum); the reference
  follows its documented policy, the implementation another one. Not a bug of either;
- ``tolerance``: both are defensible, but the bench's tolerance does not cover the difference;
- ``limitation``: the implementation cannot run the configuration at all.
"""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.base import DEVIATION_KINDS, ONNX_REFERENCE, ORT_CPU, Deviation
from onnx_dml_bench.ops.roi_pooling import RoiPoolingDesc
from onnx_dml_bench.ops.space_depth import ORT_MISSING_INT_KERNELS, SpaceDepthDesc

from conftest import (FLT_MAX, PROFILES, Failure, bits_equal, expressible, inputs_of, mismatches,
                      onnx_reference_run, ort_cpu_run, ort_sweep_results, reference_of, sweep,
                      ORT_LOADS_OPSET_28)

pytest.importorskip("onnxruntime")

OPS = list(registry.OPERATORS)
MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
ROI = registry.OPERATORS["roi_pooling"]
S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]

ORT = ORT_CPU
OREF = ONNX_REFERENCE
#: the operators' own tag in the keys of the deviations MaxPool and AveragePool share
TAG = {MP: "maxpool", AP: "avgpool"}


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


# ------------------------------------------------------------------------------------------------
# The deviations: each operator declares its own (``Operator.deviations``)
# ------------------------------------------------------------------------------------------------

DEVIATIONS = [d for op in registry.OPERATORS.values() for d in op.deviations()]
DEV = {d.key: d for d in DEVIATIONS}


def applies(key: str, case: Case) -> bool:
    return DEV[key].applies(case, inputs_of(case))


def deviations_for(case: Case, who: str) -> list[Deviation]:
    return [d for d in DEVIATIONS if d.who == who and d.applies(case, inputs_of(case))]


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
    owners: dict[str, list[str]] = {}
    for op in registry.OPERATORS.values():
        for d in op.deviations():
            owners.setdefault(d.key, []).append(op.key)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}
    assert len(DEV) == len(DEVIATIONS)
    for d in DEVIATIONS:
        assert d.who in (ORT, OREF) and d.kind in DEVIATION_KINDS
        assert len(d.summary) > 30


def test_deviation_rejects_an_unknown_kind_or_implementation():
    with pytest.raises(ValueError, match="kind"):
        Deviation("x", ORT, "quirk", "a deviation of no known kind", lambda c, x: True)
    with pytest.raises(ValueError, match="who"):
        Deviation("x", "some runtime", "bug", "a deviation of no known implementation", lambda c, x: True)


@pytest.mark.parametrize("op_key", OPS)
def test_each_operators_deviations_match_only_its_cases(op_key):
    own = registry.OPERATORS[op_key].deviations()
    assert own or op_key not in ("max_pooling2", "average_pooling1", "roi_pooling")
    hits: dict[str, int] = {}
    for profile in PROFILES:
        for c in sweep(profile):
            for d in own:
                if d.applies(c, inputs_of(c)):
                    assert c.op == op_key, f"{d.key} of {op_key} matches {c.id}"
                    hits[d.key] = hits.get(d.key, 0) + 1
    assert hits or not own


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
    key = f"ort-{op.onnx_ops[0].lower()}-int-kernels"
    if dtype in ORT_MISSING_INT_KERNELS:
        assert applies(key, cases["native"])
        assert isinstance(native, Failure) and "NOT_IMPLEMENTED" in native.error, native
    else:
        assert not applies(key, cases["native"])
        assert not mismatches(cases["native"], native)
    assert not applies(key, cases["decomposed"])
    assert not mismatches(cases["decomposed"], ort_one(cases["decomposed"]))


def test_ort_loads_opset_28_from_1_32():
    d = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType="FLOAT32", BlockSize=2, Order="COLUMN_ROW_DEPTH")
    case = Case(S2D, d, 28, make_variant(form="native"), "explicit", 0, (("X", tuple(range(48))),))
    assert applies("ort-opset-28", case) == (not ORT_LOADS_OPSET_28)
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


def test_ort_opset_28_deviation_follows_the_installed_release(monkeypatch):
    import onnxruntime
    d = SpaceDepthDesc(InputSizes=(1, 2, 4, 6), DataType="FLOAT32", BlockSize=2, Order="COLUMN_ROW_DEPTH")
    case = Case(S2D, d, 28, make_variant(form="native"), "explicit", 0, (("X", tuple(range(48))),))
    at_13 = Case(S2D, d.replace(Order="DEPTH_COLUMN_ROW"), 13, make_variant(form="native"), "explicit", 0,
                 (("X", tuple(range(48))),))
    for version, refused in (("1.31.1", True), ("1.32.0", False), ("1.33.0.dev20260101", False)):
        monkeypatch.setattr(onnxruntime, "__version__", version)
        assert applies("ort-opset-28", case) == refused, version
        assert not applies("ort-opset-28", at_13)


# ---- onnx.reference ---------------------------------------------------------------------------------

def test_onnx_reference_has_no_maxroipool():
    case = roi_case(np.arange(16.0).reshape(1, 1, 4, 4), [[0, 0, 0, 3, 3]], (2, 2))
    assert applies("oref-no-maxroipool", case)
    got = onnx_reference_run(case)
    assert isinstance(got, Failure) and "MaxRoiPool" in got.error


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
