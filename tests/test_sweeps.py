"""Case sweeps: sizes per profile, determinism, and what the default profile must cover."""
from __future__ import annotations

import math

import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.dtypes import DML_TYPES
from onnx_dml_bench.inputs import FAMILIES
from onnx_dml_bench.ops import average_pooling1, max_pooling2, roi_pooling, space_depth
from onnx_dml_bench.ops import _pooling as P

from conftest import sweep

OPS = list(registry.OPERATORS)
POOLING = ("max_pooling2", "average_pooling1")

# DML types each operator supports at its highest feature level (the pages' tables)
DML_SUPPORTED = {
    "max_pooling2": set(max_pooling2.TYPES_BY_LEVEL["5.0"]),
    "average_pooling1": set(average_pooling1.TYPES_BY_LEVEL["6.2"]),
    "roi_pooling": set(roi_pooling.TYPES_BY_LEVEL["1.0"]),
    "space_to_depth1": set(space_depth.TYPES_BY_LEVEL["5.0"]),
    "depth_to_space1": set(space_depth.TYPES_BY_LEVEL["5.0"]),
}


# ---- sizes and determinism -----------------------------------------------------------------------

def test_smoke_is_about_100_cases():
    n = len(sweep("smoke"))
    assert 80 <= n <= 130, n


def test_default_has_at_least_3000_cases():
    assert len(sweep("default")) >= 3000


@pytest.mark.parametrize("op_key", OPS)
def test_every_operator_in_every_profile(op_key):
    assert 0 < len(sweep("smoke", op_key)) < len(sweep("default", op_key))


@pytest.mark.parametrize("op_key", OPS)
def test_full_profile_is_a_superset_in_size(op_key):
    op = registry.OPERATORS[op_key]
    assert len(op.sweep("full")) >= len(sweep("default", op_key))


@pytest.mark.parametrize("profile", ["smoke", "default"])
@pytest.mark.parametrize("op_key", OPS)
def test_deterministic(profile, op_key):
    op = registry.OPERATORS[op_key]
    a, b = op.sweep(profile), op.sweep(profile)
    assert [c.id for c in a] == [c.id for c in b]
    assert [c.seed for c in a] == [c.seed for c in b]


def test_inputs_deterministic():
    for c in sweep("smoke")[::7]:
        x1, x2 = c.inputs(), c.inputs()
        for k in x1:
            assert x1[k].tobytes() == x2[k].tobytes(), c.id


def test_unknown_profile():
    with pytest.raises(ValueError, match="profile"):
        registry.OPERATORS["max_pooling2"].sweep("huge")


def test_smoke_keeps_every_data_type_of_default():
    for key in OPS:
        assert {c.dtype for c in sweep("smoke", key)} == {c.dtype for c in sweep("default", key)}, key


# ---- coverage of the default profile ----------------------------------------------------------------

def pooling_cases(key=None):
    keys = [key] if key else POOLING
    return [c for k in keys for c in sweep("default", k)]


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


def test_max_pool_indices_and_storage_order():
    cs = pooling_cases("max_pooling2")
    assert {c.desc.OutputIndicesDataType for c in cs} == {None, "UINT32", "UINT64"}
    col = [c for c in cs if c.v.get("storage_order")]
    assert {c.desc.DimensionCount for c in col} == {2, 3}
    assert all(c.desc.OutputIndicesDataType for c in col)


def test_average_pool_include_padding_both_ways_with_padding():
    cs = [c for c in pooling_cases("average_pooling1") if any(c.desc.StartPadding) or any(c.desc.EndPadding)]
    assert {c.desc.IncludePadding for c in cs} == {False, True}


def test_roi_coverage():
    cs = sweep("default", "roi_pooling")
    assert {c.family for c in cs} >= set(roi_pooling.ROI_FAMILIES)
    assert len({c.desc.SpatialScale for c in cs}) >= 3
    assert any(c.desc.num_rois > 1 and c.desc.InputSizes[0] > 1 for c in cs)
    assert any(c.desc.PooledSize[0] > c.desc.InputSizes[2] for c in cs)     # bins smaller than a pixel
    assert any(c.desc.PooledSize == (1, 1) for c in cs)


@pytest.mark.parametrize("key", ["space_to_depth1", "depth_to_space1"])
def test_space_depth_coverage(key):
    cs = sweep("default", key)
    combos = {(c.dtype, c.desc.Order, c.v.get("form")) for c in cs}
    for dt in DML_SUPPORTED[key]:
        for order in ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"):
            for form in ("native", "decomposed"):
                assert (dt, order, form) in combos, (dt, order, form)
    assert {c.desc.BlockSize for c in cs} >= {1, 2, 3, 4}
    assert any(c.desc.InputSizes[0] > 1 for c in cs)
    if key == "space_to_depth1":
        crd_native = [c for c in cs if c.desc.Order == "COLUMN_ROW_DEPTH" and c.v["form"] == "native"]
        assert crd_native and all(c.opset == 28 for c in crd_native)


@pytest.mark.parametrize("op_key", OPS)
def test_every_expressible_data_type_appears(op_key):
    """Each DML type of the operator either appears in the default sweep or is listed as not
    expressible in ONNX (counted in coverage, never silently dropped)."""
    op = registry.OPERATORS[op_key]
    seen = {c.dtype for c in sweep("default", op_key)}
    not_expr = {n.data_type for n in op.not_expressible() if n.data_type and n.capability.startswith("InputTensor")}
    assert seen | not_expr == DML_SUPPORTED[op_key]
    assert not seen & not_expr
    assert seen <= set(DML_TYPES)


@pytest.mark.parametrize("op_key", OPS)
def test_every_family_per_data_type(op_key):
    op = registry.OPERATORS[op_key]
    by_type: dict[str, set] = {}
    for c in sweep("default", op_key):
        by_type.setdefault(c.dtype, set()).add(c.family)
    missing = {dt: sorted(set(op.families(dt)) - fams) for dt, fams in by_type.items() if set(op.families(dt)) - fams}
    assert not missing, missing
    extra = {dt: sorted(fams - set(op.accepted_families(dt))) for dt, fams in by_type.items()
             if fams - set(op.accepted_families(dt))}
    assert not extra, extra


def test_families_per_type():
    from onnx_dml_bench.inputs import families_for
    assert set(families_for("FLOAT32")) == set(FAMILIES)
    assert set(families_for("INT8")) == {"random", "ties", "constant", "negative", "extremes"}
    assert set(families_for("UINT8")) == {"random", "ties", "constant", "extremes"}


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


def test_average_pool_dilations_below_19_listed():
    ne = registry.OPERATORS["average_pooling1"].not_expressible()
    assert any("19" in n.capability or "19" in n.reason for n in ne)


def test_default_sizes_stay_small():
    """Default cases stay small enough for a fast CI (largest input and output per case)."""
    for c in sweep("default"):
        n_in = math.prod(c.desc.InputSizes)
        assert n_in <= 4096, c.id
