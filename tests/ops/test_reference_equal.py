"""The reference gives the answers of its earlier, slower form, bit for bit.

``reference_before.py`` is that form, frozen (the functions as they stood before the reference
was made fast and memory-bounded). Compared here, output by output (data type, shape and every
bit, NaN payloads and the sign of zero included):

- every case of the smoke, default and full profiles and the curated fixtures: ``reference`` (the
  DirectML answer), ``expected`` (the ONNX answer of the case's graph) and, for MaxRoiPool, every
  reading of its open points (half rounding, NaN ignored);
- ONNX's own node tests run on their own attributes (1-D, 2-D, 3-D pooling);
- random descriptors, ONNX attributes, data families and types (hypothesis), with the tile budget
  now and then cut to a few bytes so that every tile is one window;
- a few large shapes.

One difference is allowed, and only one: MaxRoiPool where a bin's maximum is a zero and the bin
holds both -0.0 and +0.0. The earlier form took np.max over whole rows of the feature map, whose
zero sign follows NumPy's SIMD reduction (on this AVX-512 machine, rows of 17 elements and more:
neither the first nor the last zero met; 32 of the 768 full-profile cases, all 'negzero'); the
reference now keeps the last zero met (``test_roi_zero_tie_is_the_last_met`` checks it on a plain
loop), which is what the earlier form gave for shorter rows, so on every smoke and default case.
Either sign is an allowed answer of the open point ``signed-zero``."""
from __future__ import annotations

import dataclasses

import contextlib
import itertools

import numpy as np
import pytest
import reference_before as B
from conftest import sweep
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.inputs import accepted_families, fill
from onnx_dml_bench.ops import _block
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _pool_fused
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.average_pooling1 import AveragePooling1Desc, avg_pool
from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc, max_pool
from onnx_dml_bench.ops.roi_pooling import ROUNDINGS, RoiPoolingDesc, make_rois, roi_pool
from onnx_dml_bench.ops.space_depth import SpaceDepthDesc

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
ROI = registry.OPERATORS["roi_pooling"]
S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]
OP_TYPE = {"max_pooling2": "MaxPool", "average_pooling1": "AveragePool"}

PROPS = settings(deadline=None, max_examples=150, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def same_but_zero_signs(a, b) -> bool:
    """Equal bit for bit but for the sign of zeros."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    differ = a.view(f"u{a.itemsize}") != b.view(f"u{b.itemsize}")
    return bool(((a == 0) & (b == 0) | ~differ).all())


def assert_same(new: dict, old: dict, what: str, zero_signs_free: bool = False):
    assert set(new) == set(old), what
    for k in old:
        if zero_signs_free:
            assert same_but_zero_signs(new[k], old[k]), f"{what}: {k}"
        else:
            assert same_bits(new[k], old[k]), f"{what}: {k}"


def before_reference(case, inputs) -> dict:
    op, d = case.operator, case.desc
    if op is MP:
        y, idx = B.max_pool(inputs["X"], d, bool(d.OutputIndicesDataType), case.v.get("storage_order", 0))
        return {"Y": y} if idx is None else {"Y": y, "Indices": idx}
    if op is AP:
        return {"Y": B.avg_pool(inputs["X"], d)}
    if op is ROI:
        return {"Y": B.roi_pool(inputs["X"], inputs["rois"], d)}
    return {"Y": B.space_depth(inputs["X"], d, op is S2D)}


def zero_tie_in_roi(case, inputs) -> bool:
    x = inputs["X"]
    return case.operator is ROI and bool((x == 0).any()) and bool(np.signbit(x[x == 0]).any()) \
        and not bool(np.signbit(x[x == 0]).all())


def check_case(case, inputs=None):
    inputs = case.inputs() if inputs is None else inputs
    op = case.operator
    free = zero_tie_in_roi(case, inputs)
    assert_same(op.reference(case, inputs), before_reference(case, inputs), case.id, free)
    if op.key in OP_TYPE:
        _, a, _ = O.case_node(case)
        if a.opset < 22 and "ceil-last-window" in O.check(a, case.desc.InputSizes):
            # the first form refused such a window before opset 22; the reference now drops it at
            # every opset, as the first form did from 22 (the open point's other reading is kept)
            a = dataclasses.replace(a, opset=22)
        old = B.onnx_run(inputs["X"], a, want_indices=bool(getattr(case.desc, "OutputIndicesDataType", None)))
        assert_same(op.expected(case, inputs), old, case.id + " (ONNX)")
    if op is ROI:
        for name, rounder in ROUNDINGS.items():
            for ignored in (False, True):
                new = roi_pool(inputs["X"], inputs["rois"], case.desc, rounder=rounder, nan_ignored=ignored)
                old = B.roi_pool(inputs["X"], inputs["rois"], case.desc, rounder=rounder, nan_ignored=ignored)
                assert_same({"Y": new}, {"Y": old}, f"{case.id} {name} nan_ignored={ignored}", free)


# ------------------------------------------------------------------------------------------------
# Every case of every profile
# ------------------------------------------------------------------------------------------------

#: the operators whose earlier form ``reference_before.py`` froze (an operator added since has none)
FROZEN = ("max_pooling2", "average_pooling1", "roi_pooling", "space_to_depth1", "depth_to_space1")


def test_the_frozen_operators_are_registered():
    assert set(FROZEN) <= set(registry.OPERATORS)


@pytest.mark.parametrize("op_key", FROZEN)
@pytest.mark.parametrize("profile", ["smoke", "default", "full"])
def test_every_profile_case(profile, op_key):
    cases = sweep(profile, op_key)
    assert cases
    for case in cases:
        check_case(case)


def test_curated_cases():
    from onnx_dml_bench.fixtures import curated_cases
    for case in curated_cases():
        if case.op in FROZEN:
            check_case(case)


def test_onnx_node_tests_on_their_own_attributes():
    import warnings

    import onnx
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tests = [t for t in collect_testcases(None) if t.model.graph.node[0].op_type in OP_TYPE.values()]
    assert len(tests) >= 30
    for t in tests:
        node = t.model.graph.node[0]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        a = O.Attrs.from_node(node.op_type, t.model.opset_import[0].version, attrs)
        x, want = t.data_sets[0][0][0], len(node.output) > 1
        assert_same(O.run(x, a, want), B.onnx_run(x, a, want), t.name)


# ------------------------------------------------------------------------------------------------
# Random cases
# ------------------------------------------------------------------------------------------------

@st.composite
def pool_geometry(draw, dims=(1, 2, 3)):
    nd = draw(st.sampled_from(dims))
    top = {1: 20, 2: 9, 3: 5}[nd]
    sizes = (draw(st.integers(1, 3)), draw(st.integers(1, 4)), *[draw(st.integers(1, top)) for _ in range(nd)])
    k = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    eff = [(kk - 1) * dd + 1 for kk, dd in zip(k, dil)]
    sp = tuple(draw(st.integers(0, e + 1)) for e in eff)
    ep = tuple(draw(st.integers(0, e + 1)) for e in eff)
    assume(all(sizes[i + 2] + sp[i] + ep[i] >= eff[i] for i in range(nd)))
    return sizes, s, k, sp, ep, dil


#: an example's tile budget (None: the package's; else a few bytes, so that every tile is one
#: window) and whether every average is summed along the scan (``_pooling._scan_sums``)
BUDGETS = st.sampled_from([(None, False), (None, False), (64, False), (4096, False), (None, True), (64, True)])


@contextlib.contextmanager
def tile_budget(budget):
    nbytes, scan = budget
    old = P.TILE_BYTES, P.along_scan
    P.TILE_BYTES = old[0] if nbytes is None else nbytes
    if scan:
        P.along_scan = lambda channels, wins: True
    try:
        yield
    finally:
        P.TILE_BYTES, P.along_scan = old


def family_data(shape, dml_type: str, draw) -> np.ndarray:
    """Data of one of the bench's input families (``real`` included), at a drawn seed."""
    return fill(shape, dml_type, draw(st.sampled_from(accepted_families(dml_type))), draw(st.integers(0, 2**20)))


MAXPOOL_TYPES = ["FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64"]


@PROPS
@given(pool_geometry(dims=(2, 3)), st.sampled_from(MAXPOOL_TYPES), st.booleans(), st.integers(0, 1), BUDGETS, st.data())
def test_random_max_pool(geo, dtype, want_idx, storage_order, budget, data):
    check_max_pool(geo, dtype, want_idx, storage_order, budget, data)


def check_max_pool(geo, dtype, want_idx, storage_order, budget, data):
    """max_pool against the first reference on ``geo``: the same values and indices, bit for bit."""
    sizes, s, k, sp, ep, dil = geo
    d = MaxPooling2Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                        StartPadding=sp, EndPadding=ep, Dilations=dil, OutputIndicesDataType="UINT64" if want_idx else None)
    assume(P.window_has_real_element(d))
    x = family_data(sizes, dtype, data.draw)
    with tile_budget(budget):
        y, idx = max_pool(x, d, want_idx, storage_order)
    y0, idx0 = B.max_pool(x, d, want_idx, storage_order)
    assert same_bits(y, y0)
    assert (idx is None and idx0 is None) or same_bits(idx, idx0)


@PROPS
@given(pool_geometry(dims=(2, 3)), st.sampled_from(["FLOAT32", "FLOAT16", "INT8"]), st.booleans(), st.integers(0, 1),
       st.integers(1, 2), BUDGETS, st.data())
def test_random_max_pool_leading_one_element_windows(geo, dtype, want_idx, storage_order, lead, budget, data):
    """Leading axes whose windows are one element each (folded into the channels by
    ``window_max``): the first reference's bits, indices in both storage orders included."""
    sizes, s, k, sp, ep, dil = geo
    lead = min(lead, len(k) - 1)
    one = lambda t, v: tuple(v if i < lead else t[i] for i in range(len(t)))  # noqa: E731
    geo = (sizes, one(s, 1), one(k, 1), one(sp, 0), one(ep, 0), dil)
    check_max_pool(geo, dtype, want_idx, storage_order, budget, data)


@PROPS
@given(pool_geometry(dims=(2, 3)), st.sampled_from(["FLOAT32", "FLOAT16", "FLOAT64"]), st.booleans(),
       st.sampled_from([np.float64, np.float32]), BUDGETS, st.data())
def test_random_avg_pool(geo, dtype, include, acc, budget, data):
    sizes, s, k, sp, ep, dil = geo
    d = AveragePooling1Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                            StartPadding=sp, EndPadding=ep, Dilations=dil, IncludePadding=include)
    assume(include or P.window_has_real_element(d))
    x = family_data(sizes, dtype, data.draw)
    with tile_budget(budget):
        y = avg_pool(x, d, acc)
    with np.errstate(over="ignore"):                       # float64 data summed in float32
        assert same_bits(y, B.avg_pool(x, d, acc))


@st.composite
def block_geometry(draw):
    """One window per axis, all of it inside the input (a global pool, or a dilated or offset one)."""
    nd = draw(st.sampled_from((1, 2, 3)))
    top = {1: 300, 2: 40, 3: 9}[nd]
    sizes = (draw(st.integers(1, 3)), draw(st.integers(1, 40)), *[draw(st.integers(1, top)) for _ in range(nd)])
    dil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    k = tuple(draw(st.integers(1, (n - 1) // d + 1)) for n, d in zip(sizes[2:], dil))
    span = [(kk - 1) * d + 1 for kk, d in zip(k, dil)]
    sp = tuple(-draw(st.integers(0, n - e)) for n, e in zip(sizes[2:], span))
    # one window: the end pad stops the next one
    ep = tuple(-(n + p - e) for n, p, e in zip(sizes[2:], sp, span))
    return sizes, k, sp, ep, dil


@PROPS
@given(block_geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "FLOAT64"]), st.sampled_from([np.float64, np.float32]),
       st.sampled_from(["family", "wide"]), st.data())
def test_random_block_windows(geo, dtype, acc, data_kind, data):
    """One window per axis (``_block``): the same bits as the window walk of the earlier form, on
    the bench's families and on data of a wide range of magnitudes (where float64 sums in another
    order than the scan's differ)."""
    sizes, k, sp, ep, dil = geo
    d = AveragePooling1Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=(1,) * len(k),
                            WindowSize=k, StartPadding=(0,) * len(k), EndPadding=(0,) * len(k), Dilations=dil, IncludePadding=False)
    wins = [P.Window(n, kk, 1, dd, p, 1) for n, kk, dd, p in zip(sizes[2:], k, dil, sp)]
    assert _block.is_block(wins)
    if data_kind == "family":
        x = family_data(sizes, dtype, data.draw)
    else:
        rng = np.random.default_rng(data.draw(st.integers(0, 2**20)))
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(sizes) * np.exp(rng.uniform(-25, 25, sizes))).astype(dtype.lower())
    divisors = [np.full(1, kk) for kk in k]
    with np.errstate(over="ignore"):
        y = P.window_mean(x, wins, divisors, acc)
        with tile_budget((None, False)):
            old = _block.is_block
            _block.is_block = lambda wins: False
            try:
                walked = P.window_mean(x, wins, divisors, acc)
            finally:
                _block.is_block = old
    assert same_bits(y, walked)
    if all((kk - 1) * dd + 1 == n for kk, dd, n in zip(k, dil, sizes[2:])):       # a global window
        with np.errstate(over="ignore"):
            assert same_bits(avg_pool(x, d, acc), B.avg_pool(x, d, acc))


def test_block_sums_other_order_differs_yet_same_answers():
    """Float64 sums in NumPy's order differ from the scan's on such data; the answers do not."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 512, 7, 7)) * np.exp(rng.uniform(-20, 20, (4, 512, 7, 7)))).astype(np.float32)
    g = _block.elements(x.reshape(-1, 7, 7), [P.Window(7, 7, 1, 1, 0, 1)] * 2)
    other = np.einsum("ij->i", g.astype(np.float64))
    scan = _block.scan_sums(g, np.float64)
    assert (other != scan).sum() > 100
    d = AveragePooling1Desc(InputSizes=x.shape, DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(7, 7),
                            StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), IncludePadding=False)
    assert same_bits(avg_pool(x, d), B.avg_pool(x, d))


@PROPS
@given(pool_geometry(), st.sampled_from(["MaxPool", "AveragePool"]), st.sampled_from(O.SAME + ("NOTSET", "VALID")),
       st.integers(0, 1), st.integers(0, 1), st.booleans(), st.sampled_from([10, 11, 12, 19, 22]),
       st.sampled_from(["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT8"]), BUDGETS, st.data())
def test_random_onnx_pool(geo, op_type, auto_pad, ceil, flag, want_idx, opset, dtype, budget, data):
    """ONNX MaxPool / AveragePool (``expected``) on random attributes; ``flag`` is storage_order
    or count_include_pad."""
    sizes, s, k, sp, ep, dil = geo
    if op_type == "AveragePool":
        assume(dtype.startswith("FLOAT"))
    node = {"kernel_shape": list(k), "strides": list(s), "dilations": list(dil), "auto_pad": auto_pad, "ceil_mode": ceil}
    if auto_pad == "NOTSET":
        node["pads"] = list(sp) + list(ep)
    node["count_include_pad" if op_type == "AveragePool" else "storage_order"] = flag
    a = O.Attrs.from_node(op_type, opset, node)
    try:
        O.check(a, sizes)
    except O.SpecError:
        assume(False)
    x = family_data(sizes, dtype, data.draw)
    want = op_type == "MaxPool" and want_idx
    with tile_budget(budget):
        new = O.run(x, a, want)
    assert_same(new, B.onnx_run(x, a, want), str(a))


@PROPS
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 12), st.integers(1, 12), st.integers(1, 9),
       st.integers(1, 5), st.integers(1, 5), st.sampled_from([1.0, 0.5, 0.25, 0.0625, 2.0]),
       st.sampled_from(["FLOAT32", "FLOAT16"]), st.sampled_from(("random", "roi-clamped", "roi-halves", "roi-degenerate")),
       BUDGETS, st.data())
def test_random_roi_pool(n, c, h, w, r, ph, pw, scale, dtype, roi_family, budget, data):
    d = RoiPoolingDesc(InputSizes=(n, c, h, w), RoiSizes=(r, 5), DataType=dtype, SpatialScale=scale, PooledSize=(ph, pw))
    x = family_data(d.InputSizes, dtype, data.draw)
    rois = make_rois(d, roi_family, data.draw(st.integers(0, 2**20)))
    free = bool((x == 0).any()) and bool(np.signbit(x[x == 0]).any()) and not bool(np.signbit(x[x == 0]).all())
    for rounder in (ROUNDINGS["half-away"], ROUNDINGS["half-even"]):
        with tile_budget(budget):
            new = roi_pool(x, rois, d, rounder=rounder)
        assert_same({"Y": new}, {"Y": B.roi_pool(x, rois, d, rounder=rounder)}, str(d), free)


@PROPS
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"]),
       st.sampled_from(["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "UINT16", "INT32", "UINT64"]), st.booleans(), st.data())
def test_random_space_depth(n, c, h, w, b, order, dtype, to_depth, data):
    op = S2D if to_depth else D2S
    sizes = (n, c, h * b, w * b) if to_depth else (n, c * b * b, h, w)
    d = SpaceDepthDesc(InputSizes=sizes, DataType=dtype, BlockSize=b, Order=order)
    x = family_data(sizes, dtype, data.draw)
    case = op.make_case(d, {"form": "native"}, "random")
    assert_same(op.reference(case, {"X": x}), {"Y": B.space_depth(x, d, to_depth)}, str(d))


# ------------------------------------------------------------------------------------------------
# Large shapes
# ------------------------------------------------------------------------------------------------

LARGE = [
    MP.make_case(MaxPooling2Desc(InputSizes=(2, 16, 112, 112), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2),
                                 WindowSize=(3, 3), StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1),
                                 OutputIndicesDataType="UINT64"), {"storage_order": 1}, "ties"),
    MP.make_case(MaxPooling2Desc(InputSizes=(1, 8, 96, 80), DataType="FLOAT16", DimensionCount=2, Strides=(1, 1),
                                 WindowSize=(5, 5), StartPadding=(2, 2), EndPadding=(2, 2), Dilations=(1, 1),
                                 OutputIndicesDataType="UINT32"), {}, "inf"),
    MP.make_case(MaxPooling2Desc(InputSizes=(1, 4, 40, 40, 40), DataType="INT8", DimensionCount=3, Strides=(2, 2, 2),
                                 WindowSize=(3, 3, 3), StartPadding=(1, 1, 1), EndPadding=(1, 1, 1), Dilations=(1, 2, 1),
                                 OutputIndicesDataType="UINT64"), {}, "extremes"),
    AP.make_case(AveragePooling1Desc(InputSizes=(1, 16, 128, 128), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1),
                                     WindowSize=(3, 3), StartPadding=(2, 2), EndPadding=(2, 2), Dilations=(2, 2),
                                     IncludePadding=False), {}, "real"),
    AP.make_case(AveragePooling1Desc(InputSizes=(4, 64, 14, 14), DataType="FLOAT16", DimensionCount=2, Strides=(1, 1),
                                     WindowSize=(14, 14), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1),
                                     IncludePadding=True), {}, "real"),
    AP.make_case(AveragePooling1Desc(InputSizes=(1, 24, 112, 112), DataType="FLOAT32", DimensionCount=2, Strides=(1, 1),
                                     WindowSize=(112, 112), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1),
                                     IncludePadding=False), {}, "real"),
    AP.make_case(AveragePooling1Desc(InputSizes=(2, 3, 70, 64), DataType="FLOAT32", DimensionCount=2, Strides=(2, 3),
                                     WindowSize=(40, 33), StartPadding=(3, 1), EndPadding=(2, 2), Dilations=(1, 2),
                                     IncludePadding=True), {}, "negzero"),
    ROI.make_case(RoiPoolingDesc(InputSizes=(1, 64, 38, 50), RoiSizes=(12, 5), DataType="FLOAT32", SpatialScale=1 / 16,
                                 PooledSize=(7, 7)), {}, "random"),
    ROI.make_case(RoiPoolingDesc(InputSizes=(2, 32, 40, 52), RoiSizes=(8, 5), DataType="FLOAT16", SpatialScale=0.5,
                                 PooledSize=(6, 4)), {}, "nan"),
    D2S.make_case(SpaceDepthDesc(InputSizes=(2, 144, 40, 40), DataType="FLOAT32", BlockSize=3, Order="COLUMN_ROW_DEPTH"),
                  {"form": "native"}, "random"),
    S2D.make_case(SpaceDepthDesc(InputSizes=(2, 16, 96, 96), DataType="UINT8", BlockSize=4, Order="DEPTH_COLUMN_ROW"),
                  {"form": "native"}, "random"),
]


@pytest.mark.parametrize("case", LARGE, ids=lambda c: c.id)
def test_large_shapes(case, monkeypatch):
    check_case(case)
    monkeypatch.setattr(P, "TILE_BYTES", 1 << 14)          # many tiles, boxes cut along every axis
    check_case(case)
    monkeypatch.setattr(P, "along_scan", lambda channels, wins: True)     # sums along the scan
    check_case(case)


# ------------------------------------------------------------------------------------------------
# The one rule that changed its form: MaxRoiPool's -0.0/+0.0 ties
# ------------------------------------------------------------------------------------------------

def roi_loop(x, rois, d) -> np.ndarray:
    """MaxRoiPool by the page's formulas, one element at a time: NaN propagates (the first met),
    a -0.0/+0.0 tie goes to the last element met in row-major order, an empty bin gives 0."""
    from onnx_dml_bench.ops.roi_pooling import round_half_away, scaled
    n, c, h, w = x.shape
    ph, pw = d.PooledSize
    out = np.zeros((len(rois), c, ph, pw), x.dtype)
    x1, y1, x2, y2 = round_half_away(scaled(rois, d.SpatialScale)).T
    for r in range(len(rois)):
        b = int(np.float32(rois[r, 0]))
        rh, rw = y2[r] - y1[r] + 1, x2[r] - x1[r] + 1
        for i, j in itertools.product(range(ph), range(pw)):
            ys = min(max(i * rh // ph + y1[r], 0), h)
            ye = min(max(((i + 1) * rh + ph - 1) // ph + y1[r], 0), h)
            xs = min(max(j * rw // pw + x1[r], 0), w)
            xe = min(max(((j + 1) * rw + pw - 1) // pw + x1[r], 0), w)
            for ch in range(c):
                best = None
                for v in x[b, ch, ys:ye, xs:xe].ravel():
                    if best is None or (not np.isnan(best) and (np.isnan(v) or v >= best)):
                        best = v
                out[r, ch, i, j] = 0 if best is None else best
    return out


@pytest.mark.parametrize("family", ["negzero", "nan", "random"])
@pytest.mark.parametrize("geo", [((1, 2, 6, 30), 3, 1.0, (2, 2)), ((2, 3, 9, 20), 4, 0.5, (3, 2))])
def test_roi_zero_tie_is_the_last_met(geo, family):
    sizes, r, scale, pooled = geo
    d = RoiPoolingDesc(InputSizes=sizes, RoiSizes=(r, 5), DataType="FLOAT32", SpatialScale=scale, PooledSize=pooled)
    case = ROI.make_case(d, {}, family)
    x, rois = case.inputs()["X"], case.inputs()["rois"]
    assert same_bits(roi_pool(x, rois, d), roi_loop(x, rois, d))


# ------------------------------------------------------------------------------------------------
# Memory: temporaries bounded by the tile budget, whatever the tensor size
# ------------------------------------------------------------------------------------------------

def peak_beyond_output(fn) -> tuple[int, int]:
    import tracemalloc
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = sum(np.asarray(o).nbytes for o in (out if isinstance(out, tuple) else (out,)) if o is not None)
    return peak, size


@pytest.mark.parametrize("what", ["max", "max-indices", "mean", "mean-global", "roi"])
def test_memory_is_bounded_by_the_tiles(what, monkeypatch):
    """Beyond its output, the reference allocates a few tiles' work arrays per worker thread: far
    less than a copy of the input (the earlier form padded whole channel slices and materialised
    the rois' rows, 9.3 GB for one Fast R-CNN layer)."""
    monkeypatch.setattr(P, "TILE_BYTES", 1 << 20)
    monkeypatch.setattr(P, "WORKERS", 2)
    budget = 4 * P.WORKERS * P.TILE_BYTES + (1 << 20)
    _pool_fused._compile()      # the compiled loops loaded once per process (numba's own objects)
    g = np.random.default_rng(0)
    if what.startswith("max"):
        x = g.standard_normal((1, 64, 256, 256)).astype(np.float32)
        d = MaxPooling2Desc(InputSizes=x.shape, DataType="FLOAT32", DimensionCount=2, Strides=(1, 1),
                            WindowSize=(7, 7), StartPadding=(3, 3), EndPadding=(3, 3), Dilations=(1, 1))
        peak, out = peak_beyond_output(lambda: max_pool(x, d, what == "max-indices"))
    elif what.startswith("mean"):
        k = (256, 256) if what == "mean-global" else (5, 5)
        x = g.standard_normal((1, 64, 256, 256)).astype(np.float32)
        d = AveragePooling1Desc(InputSizes=x.shape, DataType="FLOAT32", DimensionCount=2, Strides=(1, 1),
                                WindowSize=k, StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
        peak, out = peak_beyond_output(lambda: avg_pool(x, d))
    else:
        d = RoiPoolingDesc(InputSizes=(1, 1024, 64, 64), RoiSizes=(64, 5), DataType="FLOAT32", SpatialScale=1.0,
                           PooledSize=(7, 7))
        x = g.standard_normal(d.InputSizes).astype(np.float32)
        peak, out = peak_beyond_output(lambda: roi_pool(x, make_rois(d, "random", 1), d))
    assert peak - out <= budget < x.nbytes, (peak, out, budget)


def test_fast_rcnn_layer_within_a_gigabyte():
    """VGG16 conv5 (1x512x38x50), 300 rois, 7x7 bins, spatial scale 1/16: the earlier form took
    9.3 GB; the output alone is 29 MiB."""
    d = RoiPoolingDesc(InputSizes=(1, 512, 38, 50), RoiSizes=(300, 5), DataType="FLOAT32", SpatialScale=1 / 16,
                       PooledSize=(7, 7))
    case = ROI.make_case(d, {}, "random")
    inputs = case.inputs()
    peak, out = peak_beyond_output(lambda: ROI.reference(case, inputs)["Y"])
    assert out == 300 * 512 * 49 * 4 and peak < 64 << 20


@pytest.mark.parametrize("rows", [1, 2, 7, 8, 15, 16, 40])
@pytest.mark.parametrize("k", [1, 2, 98, 1025])
@pytest.mark.parametrize("acc", [np.float64, np.float32, np.float16])
def test_scan_is_one_addition_after_another(rows, k, acc):
    """``_block._scan`` whichever way it takes (one row at a time, or the block walk): each row's
    elements added in order in ``acc``, each addition rounded, a row of -0.0 alone summing to -0.0."""
    rng = np.random.default_rng(rows * 10_000 + k)
    g = (rng.standard_normal((rows, k)) * np.exp(rng.uniform(-8, 8, (rows, k)))).astype(np.float32)
    g[0] = -0.0
    if rows > 1:
        g[1, ::2] = -0.0
    want = np.empty(rows, acc)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(rows):
            total = acc(g[i, 0])
            for v in g[i, 1:]:
                total = acc(total + acc(v))
            want[i] = total
        got = _block._scan(g, acc)
    assert got.dtype == np.dtype(acc) and same_bits(got, want)
