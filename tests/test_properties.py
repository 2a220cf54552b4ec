"""Properties of the NumPy reference, checked on random valid descriptors and data (hypothesis,
derandomized so that CI runs the same examples every time)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.dtypes import DML_TO_NUMPY, ulp_distance
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.average_pooling1 import AveragePooling1Desc, avg_pool
from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc, max_pool
from onnx_dml_bench.ops.roi_pooling import RoiPoolingDesc, roi_pool
from onnx_dml_bench.ops.space_depth import SpaceDepthDesc

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]
ROI = registry.OPERATORS["roi_pooling"]
S2D = registry.OPERATORS["space_to_depth1"]
D2S = registry.OPERATORS["depth_to_space1"]

PROPS = settings(deadline=None, max_examples=60, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

MP_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64")


# ------------------------------------------------------------------------------------------------
# Strategies
# ------------------------------------------------------------------------------------------------

@st.composite
def geometry(draw, pad: bool = True, max_size: int = 6):
    """(InputSizes, Strides, WindowSize, StartPadding, EndPadding, Dilations), valid, every window
    holding at least one element of the input, pads smaller than the dilated window."""
    nd = draw(st.sampled_from([2, 3]))
    top = max_size if nd == 2 else 4
    sizes = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *[draw(st.integers(1, top)) for _ in range(nd)])
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    eff = [(kk - 1) * dd + 1 for kk, dd in zip(k, dil)]
    sp = tuple(draw(st.integers(0, e - 1)) if pad else 0 for e in eff)
    ep = tuple(draw(st.integers(0, e - 1)) if pad else 0 for e in eff)
    assume(all(sizes[i + 2] + sp[i] + ep[i] >= eff[i] for i in range(nd)))
    return sizes, s, k, sp, ep, dil


def mp_desc(geo, dtype="FLOAT32", idx=None) -> MaxPooling2Desc:
    sizes, s, k, sp, ep, dil = geo
    d = MaxPooling2Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                        StartPadding=sp, EndPadding=ep, Dilations=dil, OutputIndicesDataType=idx)
    assume(P.window_has_real_element(d))
    MP.validate(d)
    return d


def ap_desc(geo, dtype="FLOAT32", include=False) -> AveragePooling1Desc:
    sizes, s, k, sp, ep, dil = geo
    d = AveragePooling1Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                            StartPadding=sp, EndPadding=ep, Dilations=dil, IncludePadding=include)
    assume(P.window_has_real_element(d))
    AP.validate(d)
    return d


def data(shape, dtype: str, seed: int, ties: bool) -> np.ndarray:
    dt = DML_TO_NUMPY[dtype]
    g = np.random.default_rng(seed)
    if ties:
        return g.integers(0, 3, size=shape).astype(dt)
    if dt.kind == "f":
        return (g.integers(-512, 512, size=shape) / 8.0).astype(dt)
    info = np.iinfo(dt)
    return g.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


SEEDS = st.integers(0, 2**31 - 1)


def out_positions(shape):
    return itertools.product(*[range(n) for n in shape])


def window_coords(desc, o):
    """Spatial input coordinates of the window at output position o (spatial part), in scan
    order, with a flag: inside the input or in padding."""
    per_axis = []
    for a in range(desc.DimensionCount):
        start = o[a] * desc.Strides[a] - desc.StartPadding[a]
        per_axis.append([start + j * desc.Dilations[a] for j in range(desc.WindowSize[a])])
    for coords in itertools.product(*per_axis):
        inside = all(0 <= c < n for c, n in zip(coords, desc.InputSizes[2:]))
        yield coords, inside


def flat_index(desc, n, c, coords) -> int:
    return int(np.ravel_multi_index((n, c, *coords), desc.InputSizes))


# ------------------------------------------------------------------------------------------------
# MaxPool indices
# ------------------------------------------------------------------------------------------------

@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT8", "INT32", "UINT64"]), SEEDS, st.booleans())
def test_value_at_returned_index_is_the_output(geo, dtype, seed, ties):
    d = mp_desc(geo, dtype, "UINT64")
    x = data(d.InputSizes, dtype, seed, ties)
    y, idx = max_pool(x, d, want_indices=True)
    assert idx.dtype == np.int64 and idx.shape == y.shape
    assert np.array_equal(x.ravel()[idx], y)


@PROPS
@given(geometry(), SEEDS, st.booleans())
def test_indices_point_inside_the_window(geo, seed, ties):
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, ties)
    y, idx = max_pool(x, d, want_indices=True)
    for pos in out_positions(y.shape):
        n, c, o = pos[0], pos[1], pos[2:]
        allowed = {flat_index(d, n, c, co) for co, inside in window_coords(d, o) if inside}
        assert int(idx[pos]) in allowed, (pos, int(idx[pos]))
        # and it is the window's maximum
        assert y[pos] == max(x.ravel()[i] for i in allowed)


@PROPS
@given(geometry(), SEEDS)
def test_column_major_indices_are_the_same_elements(geo, seed):
    """storage_order=1 (an ONNX-side option): the same element, its spatial offset column-major."""
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, True)
    _, row = max_pool(x, d, want_indices=True, storage_order=0)
    _, col = max_pool(x, d, want_indices=True, storage_order=1)
    spatial = d.InputSizes[2:]
    per = math.prod(spatial)
    nc, sp = np.divmod(row, per)
    coords = np.unravel_index(sp, spatial)                       # row-major spatial coordinates
    col_sp = np.ravel_multi_index(coords, spatial, order="F")
    assert np.array_equal(col, nc * per + col_sp)


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT16"]))
def test_ties_on_constant_input_give_the_first_element_in_the_window(geo, dtype):
    d = mp_desc(geo, dtype, "UINT32")
    x = np.full(d.InputSizes, 3, dtype=DML_TO_NUMPY[dtype])
    y, idx = max_pool(x, d, want_indices=True)
    assert (y == 3).all()
    for pos in out_positions(y.shape):
        first = next(co for co, inside in window_coords(d, pos[2:]) if inside)
        assert int(idx[pos]) == flat_index(d, pos[0], pos[1], first), pos


def test_tie_with_padding_sentinel_never_picks_padding():
    """Padding never wins, also when the input holds the padding's own value (-inf, iinfo.min)."""
    for dtype, low in (("FLOAT32", -np.inf), ("INT8", -128)):
        d = MaxPooling2Desc(InputSizes=(1, 1, 2, 2), DataType=dtype, DimensionCount=2, Strides=(1, 1),
                            WindowSize=(2, 2), StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1),
                            OutputIndicesDataType="UINT32")
        x = np.full((1, 1, 2, 2), low, dtype=DML_TO_NUMPY[dtype])
        y, idx = max_pool(x, d, want_indices=True)
        assert (y == low).all()
        # 3x3 windows over the padded 4x4; each index is the first in-window element inside the input
        assert idx.ravel().tolist() == [0, 0, 1, 0, 0, 1, 2, 2, 3]


# ------------------------------------------------------------------------------------------------
# MaxPool / AveragePool identities
# ------------------------------------------------------------------------------------------------

@PROPS
@given(geometry(pad=False), st.sampled_from(MP_TYPES), SEEDS)
def test_max_pool_1x1_window_stride_1_is_the_identity(geo, dtype, seed):
    sizes, _, k, _, _, dil = geo
    nd = len(k)
    d = mp_desc((sizes, (1,) * nd, (1,) * nd, (0,) * nd, (0,) * nd, dil), dtype, "UINT64")
    x = data(sizes, dtype, seed, False)
    y, idx = max_pool(x, d, want_indices=True)
    assert y.dtype == x.dtype and np.array_equal(y, x)
    assert np.array_equal(idx.ravel(), np.arange(x.size))
    y2, none = max_pool(x, d, want_indices=False)
    assert none is None and np.array_equal(y2, x)


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


# ------------------------------------------------------------------------------------------------
# Output shapes
# ------------------------------------------------------------------------------------------------

@PROPS
@given(geometry(), st.sampled_from([None, "UINT32", "UINT64"]), SEEDS)
def test_max_pool_output_shape_is_the_reference_shape(geo, idx, seed):
    d = mp_desc(geo, "FLOAT32", idx)
    case = Case(MP, d, 12, (), "random", seed)
    out = MP.reference(case, case.inputs())
    assert out["Y"].shape == MP.output_shape(d)
    assert {k: v[0] for k, v in MP.outputs(case).items()} == {k: v.shape for k, v in out.items()}
    assert MP.output_shape(d)[2:] == tuple(
        (n + a + b - ((k - 1) * dd + 1)) // s + 1
        for n, a, b, k, dd, s in zip(d.InputSizes[2:], d.StartPadding, d.EndPadding, d.WindowSize, d.Dilations, d.Strides))


@PROPS
@given(geometry(), st.booleans(), SEEDS)
def test_average_pool_output_shape_is_the_reference_shape(geo, include, seed):
    d = ap_desc(geo, "FLOAT16", include)
    case = Case(AP, d, 19, (), "random", seed)
    assert AP.reference(case, case.inputs())["Y"].shape == AP.output_shape(d)


@PROPS
@given(st.integers(1, 2), st.integers(1, 3), st.integers(1, 7), st.integers(1, 7), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 4), st.sampled_from([1.0, 0.5, 0.25, 2.0]), SEEDS)
def test_roi_output_shape_is_the_reference_shape(n, c, h, w, rois, ph, pw, scale, seed):
    d = RoiPoolingDesc(InputSizes=(n, c, h, w), RoiSizes=(rois, 5), DataType="FLOAT32", SpatialScale=scale,
                       PooledSize=(ph, pw))
    ROI.validate(d)
    case = Case(ROI, d, 1, (), "roi-clamped", seed)
    assert ROI.reference(case, case.inputs())["Y"].shape == ROI.output_shape(d) == (rois, c, ph, pw)


@st.composite
def space_depth(draw):
    b = draw(st.integers(1, 3))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    order = draw(st.sampled_from(["DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"]))
    dtype = draw(st.sampled_from(["FLOAT32", "UINT8", "INT64", "FLOAT16"]))
    return (n, c, h, w), b, order, dtype


@PROPS
@given(space_depth())
def test_depth_to_space_after_space_to_depth_is_the_identity(params):
    (n, c, h, w), b, order, dtype = params
    dt = DML_TO_NUMPY[dtype]
    x = (np.arange(n * c * h * b * w * b) % 250).astype(dt).reshape(n, c, h * b, w * b)
    sd = SpaceDepthDesc(InputSizes=x.shape, DataType=dtype, BlockSize=b, Order=order)
    S2D.validate(sd)
    y = S2D.reference(Case(S2D, sd, 13), {"X": x})["Y"]
    assert y.shape == S2D.output_shape(sd) == (n, c * b * b, h, w)
    ds = SpaceDepthDesc(InputSizes=y.shape, DataType=dtype, BlockSize=b, Order=order)
    D2S.validate(ds)
    back = D2S.reference(Case(D2S, ds, 13), {"X": y})["Y"]
    assert back.shape == D2S.output_shape(ds) == x.shape
    assert back.dtype == x.dtype and np.array_equal(back, x)
    # and the other way round
    again = S2D.reference(Case(S2D, sd, 13), {"X": back})["Y"]
    assert np.array_equal(again, y)


@PROPS
@given(space_depth())
def test_space_to_depth_channel_formula(params):
    """Output channel (by*B + bx)*C + c (DCR) or c*B*B + by*B + bx (CRD) holds input (c, h*B+by, w*B+bx)."""
    (n, c, h, w), b, order, _ = params
    x = np.arange(n * c * h * b * w * b, dtype=np.int64).reshape(n, c, h * b, w * b)
    sd = SpaceDepthDesc(InputSizes=x.shape, DataType="INT64", BlockSize=b, Order=order)
    y = S2D.reference(Case(S2D, sd, 13), {"X": x})["Y"]
    for cc, by, bx in itertools.product(range(c), range(b), range(b)):
        oc = (by * b + bx) * c + cc if order == "DEPTH_COLUMN_ROW" else cc * b * b + by * b + bx
        assert np.array_equal(y[:, oc], x[:, cc, by::b, bx::b])


# ------------------------------------------------------------------------------------------------
# ROI pooling
# ------------------------------------------------------------------------------------------------

@PROPS
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 8), st.integers(1, 8), SEEDS,
       st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_roi_whole_input_1x1_is_the_per_channel_max(n, c, h, w, seed, dtype):
    x = data((n, c, h, w), dtype, seed, False)
    rois = np.array([[b, 0, 0, w - 1, h - 1] for b in range(n)], dtype=DML_TO_NUMPY[dtype])
    d = RoiPoolingDesc(InputSizes=(n, c, h, w), RoiSizes=(n, 5), DataType=dtype, SpatialScale=1.0, PooledSize=(1, 1))
    y = roi_pool(x, rois, d)
    assert y.shape == (n, c, 1, 1) and y.dtype == x.dtype
    assert np.array_equal(y[:, :, 0, 0], x.max(axis=(2, 3)))


@PROPS
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(1, 4), SEEDS)
def test_roi_bins_cover_the_region(h, w, ph, pw, seed):
    """The max over all bins of a box equals the max over the (clamped) box."""
    g = np.random.default_rng(seed)
    x = data((1, 1, h, w), "FLOAT32", seed, False)
    x1, x2 = sorted(g.integers(0, w, size=2))
    y1, y2 = sorted(g.integers(0, h, size=2))
    d = RoiPoolingDesc(InputSizes=(1, 1, h, w), RoiSizes=(1, 5), DataType="FLOAT32", SpatialScale=1.0, PooledSize=(ph, pw))
    y = roi_pool(x, np.array([[0, x1, y1, x2, y2]], np.float32), d)
    region = x[0, 0, y1:y2 + 1, x1:x2 + 1]
    assert y.max() == region.max()
    assert set(np.unique(y)) <= set(np.unique(region)) | {0.0}


# ------------------------------------------------------------------------------------------------
# ULP distance
# ------------------------------------------------------------------------------------------------

@PROPS
@given(st.sampled_from([(np.float32, 32), (np.float16, 16), (np.float64, 64)]), st.data())
def test_ulp_distance_symmetric_and_zero_iff_equal(kind, draw_data):
    dt, width = kind
    floats = st.floats(allow_nan=False, width=width)
    a = np.array(draw_data.draw(st.lists(floats, min_size=1, max_size=8)), dtype=dt)
    b = np.array(draw_data.draw(st.lists(floats, min_size=len(a), max_size=len(a))), dtype=dt)
    d_ab, d_ba = ulp_distance(a, b), ulp_distance(b, a)
    assert d_ab.dtype == np.uint64
    assert np.array_equal(d_ab, d_ba)
    assert np.array_equal(d_ab == 0, a == b)               # numeric equality: -0.0 == +0.0
    bitwise = a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")
    nonzero = (a != 0) | (b != 0)
    assert np.array_equal((d_ab == 0)[nonzero], bitwise[nonzero])   # zero iff bitwise equal, zeros aside
    assert (ulp_distance(a, a) == 0).all()


@PROPS
@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_ulp_distance_of_neighbours_is_one(v):
    a = np.array([v], np.float32)
    with np.errstate(over="ignore"):
        up = np.nextafter(a, np.float32(np.inf))
    assume(np.isfinite(up).all())
    assert ulp_distance(a, up)[0] == 1 == ulp_distance(up, a)[0]
    # across zero: -tiny to +tiny is 2 ULP (-0.0 and +0.0 count as one point)
    t = np.array([np.finfo(np.float32).smallest_subnormal], np.float32)
    assert ulp_distance(-t, t)[0] == 2


def test_signed_zeros_are_zero_ulp_apart_but_not_bitwise_equal():
    """Documented in ordered_bits: -0.0 and +0.0 both map to 0. The 'exact' comparison (bitwise)
    still tells them apart."""
    from onnx_dml_bench import compare as C
    from onnx_dml_bench.ops.base import OutputSpec
    z = np.array([0.0], np.float32)
    assert ulp_distance(-z, z)[0] == 0
    assert not C.compare_output("Y", OutputSpec("exact"), -z, z).match
    assert C.compare_output("Y", OutputSpec("ulp", ulp=0), -z, z).match


# ------------------------------------------------------------------------------------------------
# Reference consistency
# ------------------------------------------------------------------------------------------------

def test_max_pool_values_do_not_depend_on_indices_being_requested():
    """MAX_POOLING2's values are the same with or without an OutputIndicesTensor; with -0.0 and
    +0.0 tying, the reference's documented policy is the first element met (here -0.0)."""
    d = MaxPooling2Desc(InputSizes=(1, 1, 1, 8), DataType="FLOAT32", DimensionCount=2, Strides=(1, 2),
                        WindowSize=(1, 2), StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    x = np.array([-0.0, 0.0] * 4, np.float32).reshape(1, 1, 1, 8)
    with_idx, idx = max_pool(x, d, want_indices=True)
    without, _ = max_pool(x, d, want_indices=False)
    assert np.signbit(with_idx).all() and (idx.ravel() == [0, 2, 4, 6]).all()
    assert without.tobytes() == with_idx.tobytes(), np.signbit(without).ravel()


@PROPS
@given(geometry(), st.sampled_from(["FLOAT32", "FLOAT16", "INT8"]), SEEDS)
def test_max_pool_values_same_with_and_without_indices(geo, dtype, seed):
    d = mp_desc(geo, dtype)
    x = data(d.InputSizes, dtype, seed, True)
    a, _ = max_pool(x, d, want_indices=False)
    b, _ = max_pool(x, d, want_indices=True)
    assert np.array_equal(a, b)


@PROPS
@given(geometry(), SEEDS)
def test_max_pool_nan_propagates_with_the_index_of_the_first_nan(geo, seed):
    """The reference's documented NaN policy (an open point of the page)."""
    d = mp_desc(geo, "FLOAT32", "UINT32")
    x = data(d.InputSizes, "FLOAT32", seed, False)
    g = np.random.default_rng(seed)
    x[g.random(x.shape) < 0.2] = np.nan
    y, idx = max_pool(x, d, want_indices=True)
    y2, _ = max_pool(x, d, want_indices=False)
    for pos in out_positions(y.shape):
        inside = [flat_index(d, pos[0], pos[1], co) for co, ok in window_coords(d, pos[2:]) if ok]
        nans = [i for i in inside if np.isnan(x.ravel()[i])]
        if nans:
            assert np.isnan(y[pos]) and np.isnan(y2[pos]) and int(idx[pos]) == nans[0]
        else:
            assert not np.isnan(y[pos]) and not np.isnan(y2[pos])


# ------------------------------------------------------------------------------------------------
# Validation arithmetic against a brute-force walk
# ------------------------------------------------------------------------------------------------

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
