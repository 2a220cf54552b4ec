"""RoiAlign's compiled loops (``roi_align.fused``) give the NumPy code's values bit for bit: the
reference, its bound and every other result of ``reference.roi_align``, with and without the
loops, on every RoiAlign case of the default profile (each reading of its open points too), on
data of every magnitude (where another order of the same operations would show), and on real
layers of ``networks``."""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.plan import sweep_cases
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.roi_align import fused as F
from onnx_dml_bench.ops.roi_align import reference as R
from onnx_dml_bench.ops.roi_align.readings import OpenPoints

from conftest import sweep
from op_cases import ra_case

RA0 = registry.OPERATORS["roi_align"]
RA1 = registry.OPERATORS["roi_align1"]
FIELDS = [f.name for f in dataclasses.fields(R.Result)]


@contextlib.contextmanager
def loops(on: bool, calls: list | None = None):
    """The compiled loops for every case (``on``), or for none; ``calls`` counts the jobs of the
    bound's compiled path."""
    old, fa = F.FUSED_FROM, R._fused_average
    F.FUSED_FROM = 0 if on else 1 << 62
    if calls is not None:
        def counted(*a, **k):
            calls.append(1)
            return fa(*a, **k)
        R._fused_average = counted
    try:
        yield
    finally:
        F.FUSED_FROM, R._fused_average = old, fa


def same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    return np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


def both(case, inputs, rd=None, **kw):
    """(NumPy's Result, the compiled loops' Result) of one computation."""
    out = []
    for on in (False, True):
        with loops(on):
            out.append(case.operator.compute(case, inputs, rd, **kw))
    return out


def assert_same(case, inputs, rd=None, **kw):
    a, b = both(case, inputs, rd, **kw)
    bad = [f for f in FIELDS if not same(getattr(a, f), getattr(b, f))]
    assert not bad, (case.id, rd, kw, bad)


def test_the_loops_compile_where_numba_is_installed():
    """numba is a dependency: the loops are there (else every case would quietly take NumPy's code,
    slower), for a case of one sample value too; a case of none keeps NumPy's code."""
    assert F.FUSED_FROM <= 1
    assert F.kernels(F.FUSED_FROM) is not None
    assert F.kernels(F.FUSED_FROM - 1) is None


@pytest.mark.parametrize("op_key", ["roi_align", "roi_align1"])
def test_every_default_case_and_reading(op_key):
    """Every case of the default profile, its reference, its bound (the compiled bound's path taken
    on hundreds of jobs) and the results of the other passes, and the readings of the open points
    it touches (each through NumPy's code or the compiled samples)."""
    calls: list = []
    for case in sweep("default", op_key):
        inputs = case.inputs()
        if case.operator.input_problem(case, inputs):
            continue
        for kw in ({}, {"bound": True}, {"touched": True}, {"overflow": True}):
            assert_same(case, inputs, **kw)
        base = R.reading(case.desc)
        for point in case.operator.open_points(case, inputs) + case.operator.onnx_open_points(case, inputs):
            for _, change in OpenPoints.READINGS.get(point, [])[1:]:
                assert_same(case, inputs, dataclasses.replace(base, **change), bound=True)
    # the bound's compiled path itself ran (counted over a second pass of the finite AVERAGE cases)
    for case in sweep("default", op_key):
        with loops(True, calls):
            inputs = case.inputs()
            if not case.operator.input_problem(case, inputs):
                case.operator.compute(case, inputs, bound=True)
    assert len(calls) > 50


@settings(deadline=None, max_examples=60, derandomize=True, database=None)
@given(st.sampled_from(["FLOAT32", "FLOAT16", "FLOAT64"]), st.sampled_from(["AVERAGE", "MAX"]),
       st.integers(1, 3), st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 3), st.booleans(), st.integers(0, 2 ** 20))
def test_data_of_every_magnitude(dtype, mode, c, h, w, oh, ow, samples, aligned, seed):
    """Values spread over tens of binades (where adding the same terms in another order, or fusing
    a product into a sum, changes the bits), regions inside and across the border: the same
    reference and bound."""
    rng = np.random.default_rng(seed)
    np_type = {"FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64}[dtype]
    span = {np.float16: 4, np.float32: 30, np.float64: 60}[np_type]
    x = (rng.standard_normal((1, c, h, w)) * np.exp2(rng.integers(-span, span, (1, c, h, w)))).astype(np_type)
    r = int(rng.integers(1, 6))
    lo = rng.uniform(-2, max(h, w), (r, 2))
    rois = np.concatenate([lo, lo + rng.uniform(0.1, 6, (r, 2))], axis=1)
    case = ra_case(x, rois, op=RA1, dtype=dtype, OutputSize=(oh, ow), ReductionFunction=mode,
                   MinimumSamplesPerOutput=samples, MaximumSamplesPerOutput=samples,
                   InputPixelOffset=0.5 if aligned else 0.0)
    inputs = case.inputs()
    for kw in ({}, {"bound": True}):
        assert_same(case, inputs, **kw)


def test_real_layers_of_networks():
    """Two census layers of ``networks`` (a float32 and a float16 one), whole: the chunks of regions
    and channels of real sizes, worker threads included."""
    cases = [c for c in sweep_cases("networks") if c.operator.key.startswith("roi_align")]
    picked = {}
    for case in sorted(cases, key=lambda c: np.prod(c.desc.InputSizes)):
        picked.setdefault(case.desc.DataType, case)
    assert set(picked) >= {"FLOAT32", "FLOAT16"}
    old = P.WORKERS
    P.WORKERS = 2
    try:
        for case in picked.values():
            inputs = case.inputs()
            assert_same(case, inputs)
            assert_same(case, inputs, bound=True)
    finally:
        P.WORKERS = old


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "FLOAT64"])
def test_the_bound_of_an_answer(dtype):
    """``readings._bound_of`` (an answer's bound from its samples' part) of answers with NaN,
    infinities, zeros of both signs and subnormals: the same bits through the compiled pass."""
    rng = np.random.default_rng(3)
    np_type = {"FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64}[dtype]
    fi = np.finfo(np_type)
    x = rng.standard_normal((1, 3, 6, 7))
    case = ra_case(x, [[0.0, 0.0, 5.0, 4.0], [1.5, 0.5, 6.0, 5.5]], op=RA1, dtype=dtype, OutputSize=(3, 2),
                   MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2)
    inputs = case.inputs()
    res = case.operator.compute(case, inputs, bound=True)
    y = res.y.copy()
    y.flat[:6] = np.array([np.nan, np.inf, -np.inf, -0.0, fi.smallest_subnormal, -fi.max], np_type)
    out = []
    for on in (False, True):
        with loops(on):
            out.append(case.operator._bound_of(case, res, y))
    assert same(out[0], out[1])


@pytest.mark.parametrize("np_type", [np.float16, np.float32])
def test_the_bound_of_every_float16_answer_and_of_float32_s_edges(np_type):
    """``fused.bound_of`` (read without a branch) against the NumPy code it replaces, on every
    float16 bit pattern as an answer (NaN and infinities of both signs, zeros, subnormals, normals
    up to 65504), and on float32's infinities, NaN, zeros, subnormals and largest values."""
    if np_type == np.float16:
        y = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(1 << 8, 1 << 8)
    else:
        fi = np.finfo(np.float32)
        y = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, fi.smallest_subnormal, -fi.smallest_subnormal,
                      fi.tiny, fi.max, -fi.max, 1.0, -3.5] * 20, np.float32).reshape(13, 20)
    bound = np.random.default_rng(5).random(y.shape)
    scale, floor = 2.0 ** -11, 3 * 2.0 ** -24
    a = np.abs(y.astype(np.float64))
    a[~np.isfinite(a)] = 0.0
    want = (a * scale + floor) + bound
    got = F.bound_of(y, bound, scale, floor)
    if got is None:
        pytest.skip("numba cannot compile here")
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))


def test_every_finite_float16_corner_is_read_exactly():
    """The loops read float16 corners as their bits (``fused._corner``): every finite float16 bit
    pattern (zeros of both signs, subnormals, normals up to +-65504) in each corner gives the bits
    of the same loop on the corners made float32, in every loop."""
    k = F.kernels(1)
    if k is None:
        pytest.skip("numba cannot compile here")
    bits = np.arange(1 << 16, dtype=np.uint16)
    h = bits.view(np.float16)
    h = h[np.isfinite(h)]
    rng = np.random.default_rng(9)
    corners16 = [np.ascontiguousarray(rng.permutation(h).reshape(1, 1, -1, 1)) for _ in range(4)]
    corners16[0] = np.ascontiguousarray(h.reshape(1, 1, -1, 1))          # each pattern in order too
    n = corners16[0].shape[2]
    w = [np.ascontiguousarray(rng.random((1, 1 if i < 2 else n))) for i in range(4)]
    valid = np.ones((1, 1, n), bool)
    valid[0, 0, ::7] = False
    outs = []
    for corners in ([g.view(np.int16) for g in corners16], [g.astype(np.float32) for g in corners16]):
        v, e, sl, sm = (np.empty((1, 1, n, 1)) for _ in range(4))
        k["tolerances"](*corners, *w, valid, 0.25, 3e-7, 2e-7, 1e-7, v, e)
        k["slopes"](*corners, sl)
        k["samples"](*corners, *w, sm)
        outs.append([a.view(np.uint64).copy() for a in (v, e, sl, sm)])
    for name, a, b in zip(("values", "tolerances", "slopes", "samples"), *outs):
        assert np.array_equal(a, b), name


def test_a_numba_that_cannot_compile_leaves_numpy_s_code(monkeypatch):
    """Where numba imports but cannot compile or cache the loops (no writable cache, an LLVM it
    cannot use), the first use finds it out and every case takes NumPy's code, with its answers."""
    import numba

    def broken(*args, **kwargs):
        def decorate(fn):
            def call(*a, **k):
                raise RuntimeError("cannot cache function: no locator available")
            return call
        return decorate

    case = sweep("default", "roi_align1")[0]
    inputs = case.inputs()
    with loops(False):
        want = case.operator.compute(case, inputs, bound=True)
    monkeypatch.setattr(numba, "njit", broken)
    monkeypatch.setattr(F, "_KERNELS", None)
    assert F.kernels(F.FUSED_FROM) is None
    with loops(True):
        got = case.operator.compute(case, inputs, bound=True)
    assert all(same(getattr(got, f), getattr(want, f)) for f in FIELDS)


@settings(deadline=None, max_examples=120, derandomize=True, database=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from([2, 3, 7, 64, 256]), st.sampled_from(["normal", "magnitudes", "negative-zeros"]),
       st.booleans(), st.integers(0, 2 ** 16))
def test_the_samples_block_sums_are_numpy_s(r, oh, ow, cy, cx, c, kind, outside, seed):
    """``fused._block_sum`` against NumPy's ``sum(axis=(2, 4))`` of the samples' blocks, bit for
    bit: values of every magnitude (another order of the same additions would show), all -0.0 (NumPy
    starts from +0.0), samples outside the input filled; two channels or more (with one NumPy adds
    in another order, and its own code serves)."""
    k = F.kernels(1)
    if k is None:
        pytest.skip("numba cannot compile here")
    rng = np.random.default_rng(seed)
    shape = (r, oh * cy, ow * cx, c)
    if kind == "negative-zeros":
        v = np.full(shape, -0.0)
    else:
        v = rng.standard_normal(shape)
        if kind == "magnitudes":
            v *= 10.0 ** rng.integers(-12, 12, size=shape)
    valid = rng.random(shape[:3]) < (0.7 if outside else 1.1)
    fill = -0.5
    want = np.where(valid[..., None], v, fill).reshape(r, oh, cy, ow, cx, c).sum(axis=(2, 4))
    got = np.zeros((r, oh, ow, c))
    k["block_sum"](v, valid, fill, True, cy, cx, got)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    got = np.zeros((r, oh, ow, c))                 # not filled: every sample's own value (the bound's sum)
    k["block_sum"](v, valid, fill, False, cy, cx, got)
    assert np.array_equal(got.view(np.uint64), v.reshape(r, oh, cy, ow, cx, c).sum(axis=(2, 4)).view(np.uint64))
