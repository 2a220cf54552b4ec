"""The allowed sets of the open points, proved on generated inputs (hypothesis, derandomized): for
each open point, an implementation of each reading, and of every combination of readings, passes;
a perturbed answer fails.

The implementations here are written from the readings' words, window by window in plain Python,
independently of the bench's reference and of its alternatives:

- MaxPool: NaN propagated or ignored; a -0.0/+0.0 tie answered with the first or the last zero met
  (the indices follow the tie rule either way); a negative SAME pad total clamped, or split (rounded
  toward zero or floored) so the windows shift;
- AveragePool: summed in float32 and rounded once, or summed in the data type, each in three
  orders (in turn, reversed, pairwise), overflowing where it does; the same SAME pad readings;
- MaxRoiPool: round() of the corners with halves away from zero, to even, up, down or toward
  zero; NaN propagated or ignored; either zero.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _pool_family as PF
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.base import DescriptorError
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.verdict import judge

MP = registry.get("max_pooling2")
AP = registry.get("average_pooling1")
ROI = registry.get("roi_pooling")

PROPS = settings(deadline=None, max_examples=25, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def verdict_of(case, outputs: dict) -> tuple[str, str, list[str]]:
    j = judge(case, case.inputs(), Outcome(True, "done", None, outputs), None, None, ep_name="TestEP",
              ep_is_cpu=False)
    return j.verdict, j.reason, j.labels


# ------------------------------------------------------------------------------------------------
# Geometry, from the ONNX side: explicit pads or auto_pad SAME (a negative total where the stride
# passes the window), written out per axis for each reading of open point same-negative-pad
# ------------------------------------------------------------------------------------------------

@st.composite
def pool_geometry(draw, max_size: int = 5):
    """(InputSizes, kernel, strides, begin pads, end pads, auto_pad): 2-D, no dilation."""
    sizes = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, max_size)),
             draw(st.integers(1, max_size)))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER"]))
    pb = tuple(draw(st.integers(0, kk - 1)) for kk in k) if auto_pad == "NOTSET" else (0, 0)
    pe = tuple(draw(st.integers(0, kk - 1)) for kk in k) if auto_pad == "NOTSET" else (0, 0)
    return sizes, k, s, pb, pe, auto_pad


def make_case(op, geo, dtype: str, values: np.ndarray, **fields) -> Case:
    sizes, k, s, pb, pe, auto_pad = geo
    variant = {"auto_pad": auto_pad} if auto_pad != "NOTSET" else {}
    try:
        d = PF.geometry(op.Desc, sizes, k, s, pb, pe, (1, 1), variant, **fields).replace(DataType=dtype)
        op.validate(d)
        case = Case(op, d, op.default_opset, make_variant(**variant), "explicit", 0,
                    (("X", tuple(float(v) for v in values.ravel())),))
        op.check_variant(case)
    except DescriptorError:
        assume(False)
    assume(op.expressible(case) is None)
    return case


def axis_pads(n: int, k: int, s: int, pb: int, pe: int, auto_pad: str, split: str) -> tuple[int, int, int]:
    """(output size, begin pad, end pad) of one axis; ``split``: how a negative SAME total is read
    ('clamp', 'trunc' or 'floor')."""
    if auto_pad == "NOTSET":
        return (n + pb + pe - k) // s + 1, pb, pe
    out = -(-n // s)
    total = (out - 1) * s + k - n
    if total >= 0 or split == "clamp":
        total = max(total, 0)
        small = total // 2
    else:
        small = int(total / 2) if split == "trunc" else total // 2
    big = total - small
    return (out, small, big) if auto_pad == "SAME_UPPER" else (out, big, small)


def windows(case, geo, split: str):
    """Per output position (n, c, oh, ow): the window's elements as (kind, flat index or None)
    in scan order, kind 'x' (an input element), 'pad' (a pad pixel) or None (past the pads)."""
    sizes, k, s, pb, pe, auto_pad = geo
    n_, c_, h, w = sizes
    (oh, bh, eh), (ow, bw, ew) = (axis_pads(h, k[0], s[0], pb[0], pe[0], auto_pad, split),
                                  axis_pads(w, k[1], s[1], pb[1], pe[1], auto_pad, split))
    out = {}
    for b, c, i, j in itertools.product(range(n_), range(c_), range(oh), range(ow)):
        elems = []
        for di, dj in itertools.product(range(k[0]), range(k[1])):
            y, x = i * s[0] - bh + di, j * s[1] - bw + dj
            if 0 <= y < h and 0 <= x < w:
                elems.append(("x", ((b * c_ + c) * h + y) * w + x))
            elif -max(bh, 0) <= y < h + eh and -max(bw, 0) <= x < w + ew:
                elems.append(("pad", None))
            else:
                elems.append((None, None))
        out[(b, c, i, j)] = elems
    return out, (n_, c_, oh, ow)


def has_negative_total(geo) -> bool:
    sizes, k, s, _, _, auto_pad = geo
    return auto_pad != "NOTSET" and any(axis_pads(n, kk, ss, 0, 0, auto_pad, "trunc")[1] < 0 or
                                        axis_pads(n, kk, ss, 0, 0, auto_pad, "trunc")[2] < 0
                                        for n, kk, ss in zip(sizes[2:], k, s))


# ------------------------------------------------------------------------------------------------
# MaxPool: nan x signed-zero x same-negative-pad
# ------------------------------------------------------------------------------------------------

MAX_VALUES = [float("nan"), -0.0, 0.0, 1.0, -1.0, 2.0, -np.inf, np.inf, 0.5]


def max_pool_impl(case, geo, x: np.ndarray, nan: str, zero: str, split: str):
    """One implementation of MaxPool: NaN 'propagate' or 'ignore'; a zero tie answered with the
    'first' or the 'last' zero met (the index stays the first element met); windows of ``split``."""
    flat = x.ravel()
    wins, shape = windows(case, geo, split)
    y = np.zeros(shape, x.dtype)
    idx = np.zeros(shape, np.int64)
    for pos, elems in wins.items():
        real = [e for kind, e in elems if kind == "x"]
        assume(real)                                        # a window without input: no maximum
        vals = [(flat[e], e) for e in real]
        nans = [(v, e) for v, e in vals if np.isnan(v)]
        nums = [(v, e) for v, e in vals if not np.isnan(v)]
        if nans and (nan == "propagate" or not nums):
            y[pos], idx[pos] = nans[0]
            continue
        best = max(v for v, _ in nums)
        first = next((v, e) for v, e in nums if v == best)
        y[pos], idx[pos] = first
        if best == 0 and zero == "last":
            y[pos] = [v for v, _ in nums if v == 0][-1]
    return y, idx


@pytest.mark.parametrize("nan", ["propagate", "ignore"])
@pytest.mark.parametrize("zero", ["first", "last"])
@pytest.mark.parametrize("split", ["clamp", "trunc", "floor"])
@PROPS
@given(geo=pool_geometry(), data=st.data(), with_indices=st.booleans(), dtype=st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_max_pool_every_reading_passes_and_a_perturbed_answer_fails(nan, zero, split, geo, data, with_indices, dtype):
    if split != "clamp":
        assume(has_negative_total(geo))
    sizes = geo[0]
    values = np.array(data.draw(st.lists(st.sampled_from(MAX_VALUES), min_size=math.prod(sizes),
                                         max_size=math.prod(sizes))), dtype=np.float32)
    case = make_case(MP, geo, dtype, values, OutputIndicesDataType="UINT32" if with_indices else None)
    x = case.inputs()["X"]
    y, idx = max_pool_impl(case, geo, x, nan, zero, split)
    got = {"Y": y, "Indices": idx} if with_indices else {"Y": y}
    v, reason, labels = verdict_of(case, got)
    assert v == "PASS", (nan, zero, split, reason)
    # perturbed: one value larger than every element of the input
    bad = {k: a.copy() for k, a in got.items()}
    pos = tuple(data.draw(st.integers(0, d - 1)) for d in y.shape)
    finite = x[np.isfinite(x)]
    bigger = (np.abs(finite).max() if finite.size else 0.0) + 1.0
    assume(bigger < np.finfo(x.dtype).max)
    bad["Y"][pos] = bigger
    assert verdict_of(case, bad)[0] == "FAIL"
    if with_indices:
        wrong = {k: a.copy() for k, a in got.items()}
        wrong["Indices"][pos] = x.size + 7                   # no element of the input
        assert verdict_of(case, wrong)[0] == "FAIL"


# ------------------------------------------------------------------------------------------------
# AveragePool: sum-precision x overflow x same-negative-pad
# ------------------------------------------------------------------------------------------------

def _fold(terms: list, acc, order: str):
    """The sum of ``terms`` in type ``acc``, in ``order`` ('in-turn', 'reversed', 'pairwise')."""
    with np.errstate(over="ignore", invalid="ignore"):
        if order == "pairwise":
            level = [acc(t) for t in terms] or [acc(0)]
            while len(level) > 1:
                level = [acc(level[i] + level[i + 1]) if i + 1 < len(level) else level[i]
                         for i in range(0, len(level), 2)]
            return level[0]
        total = acc(0)
        for t in (terms if order == "in-turn" else terms[::-1]):
            total = acc(total + acc(t))
        return total


def avg_pool_impl(case, geo, x: np.ndarray, include_pad: bool, width: str, order: str, split: str,
                  terms_of: dict | None = None) -> np.ndarray:
    """One implementation of AveragePool: the window's input elements summed in float32 and divided
    there ('wide'), or summed in the data type ('in-type'), in ``order``; pad pixels count in the
    divisor with ``include_pad``. ``terms_of``: filled with each output position's terms."""
    flat = x.ravel()
    wins, shape = windows(case, geo, split)
    acc = np.float32 if width == "wide" else x.dtype.type
    y = np.zeros(shape, x.dtype)
    for pos, elems in wins.items():
        terms = [flat[e] for kind, e in elems if kind == "x"]
        count = sum(1 for kind, _ in elems if kind == "x" or (kind == "pad" and include_pad))
        assume(count > 0)
        if terms_of is not None:
            terms_of[pos] = terms
        total = _fold(terms, acc, order)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            y[pos] = x.dtype.type(acc(total / acc(count)))
    return y


def avg_values(dtype: str):
    big = float(np.finfo(np.float16 if dtype == "FLOAT16" else np.float32).max)
    return st.one_of(st.floats(-8, 8, width=16), st.sampled_from([big, -big, big / 2, -big / 2, 0.0, -0.0]),
                     st.sampled_from([0.25, np.inf, -np.inf, np.nan, 1.0, 0.5]))


def unreachable_non_finite(terms, dtype) -> list[float]:
    """Non-finite answers that no summation of ``terms`` in any order and precision can give: +inf
    where no +inf is among them and their positive part is far from overflowing, likewise -inf, and
    NaN where none is among them and not both infinities can arise."""
    fmax = float(np.finfo(dtype).max)
    t = np.asarray(terms, dtype=np.float64)
    fin = t[np.isfinite(t)]
    up = np.isposinf(t).any() or fin[fin > 0].sum() > fmax / 2
    down = np.isneginf(t).any() or -fin[fin < 0].sum() > fmax / 2
    out = []
    if not up:
        out.append(np.inf)
    if not down:
        out.append(-np.inf)
    if not np.isnan(t).any() and not (up and down):
        out.append(np.nan)
    return out


@pytest.mark.parametrize("width", ["wide", "in-type"])
@pytest.mark.parametrize("order", ["in-turn", "reversed", "pairwise"])
@pytest.mark.parametrize("split", ["clamp", "trunc", "floor"])
@PROPS
@given(geo=pool_geometry(), data=st.data(), include_pad=st.booleans(), dtype=st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_average_pool_every_reading_passes_and_a_perturbed_answer_fails(width, order, split, geo, data, include_pad,
                                                                         dtype):
    if split != "clamp":
        assume(has_negative_total(geo))
    sizes = geo[0]
    values = np.array(data.draw(st.lists(avg_values(dtype), min_size=math.prod(sizes), max_size=math.prod(sizes))))
    case = make_case(AP, geo, dtype, values, IncludePadding=include_pad)
    x = case.inputs()["X"]
    terms_of: dict = {}
    y = avg_pool_impl(case, geo, x, include_pad, width, order, split, terms_of)
    v, reason, labels = verdict_of(case, {"Y": y})
    assert v == "PASS", (width, order, split, reason, y.ravel().tolist())
    # perturbed: a non-finite value where no summation of any geometry reading can give it (an input
    # infinity alone opens no other infinity, and no NaN)
    readings = [terms_of]
    for other in (("clamp", "trunc", "floor") if has_negative_total(geo) else ()):
        if other != split:
            more: dict = {}
            avg_pool_impl(case, geo, x, include_pad, width, order, other, more)
            readings.append(more)
    for pos in terms_of:
        values = [bv for bv in unreachable_non_finite(terms_of[pos], x.dtype)
                  if all(any(bv is u or (np.isnan(bv) and np.isnan(u)) or bv == u
                             for u in unreachable_non_finite(r[pos], x.dtype)) for r in readings)]
        for bad_value in values:
            bad = y.copy()
            bad[pos] = bad_value
            assert verdict_of(case, {"Y": bad})[0] == "FAIL", ([r[pos] for r in readings], bad_value)
    # perturbed: further from the exact average than any summation in the data type can be
    exact = AP.expected(case, case.inputs())["Y"]
    if split != "clamp":
        exact = avg_pool_impl(case, geo, x.astype(np.float64), include_pad, "in-type", "in-turn", split).astype(x.dtype)
    u = float(np.finfo(x.dtype).eps) / 2
    finite = np.isfinite(exact) & np.isfinite(y)
    assume(finite.any())
    pos = tuple(np.argwhere(finite)[data.draw(st.integers(0, int(finite.sum()) - 1))])
    window = math.prod(geo[1])
    mean_abs = np.abs(x[np.isfinite(x)]).max(initial=0.0) if np.isfinite(x).any() else 0.0
    delta = 4 * (window * u * mean_abs * window + 4 * u * abs(float(exact[pos]))) + 1.0
    bad = y.copy()
    with np.errstate(over="ignore"):
        bad[pos] = x.dtype.type(float(exact[pos]) + delta)
    assume(np.isfinite(bad[pos]))
    assert verdict_of(case, {"Y": bad})[0] == "FAIL", (float(exact[pos]), float(bad[pos]))


# ------------------------------------------------------------------------------------------------
# MaxRoiPool: roi-half-rounding x nan x signed-zero
# ------------------------------------------------------------------------------------------------

ROUND = {
    "away": lambda v: math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1),
    "even": lambda v: int(np.rint(v)),
    "up": lambda v: math.floor(v + 0.5),
    "down": lambda v: math.ceil(v - 0.5) if v - math.floor(v) == 0.5 else math.floor(v + 0.5),
    "toward-zero": lambda v: math.trunc(v) if abs(v - math.trunc(v)) == 0.5 else math.floor(v + 0.5),
}


def roi_impl(x: np.ndarray, rois: np.ndarray, pooled, scale: float, rounding: str, nan: str, zero: str):
    n, c, h, w = x.shape
    ph, pw = pooled
    out = np.zeros((len(rois), c, ph, pw), x.dtype)
    rnd = ROUND[rounding]
    for r, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        cx1, cy1, cx2, cy2 = (rnd(float(np.float32(v) * np.float32(scale))) for v in (x1, y1, x2, y2))
        rh, rw = cy2 - cy1 + 1, cx2 - cx1 + 1
        for ch, i, j in itertools.product(range(c), range(ph), range(pw)):
            ys = min(max(i * rh // ph + cy1, 0), h)
            ye = min(max(((i + 1) * rh + ph - 1) // ph + cy1, 0), h)
            xs = min(max(j * rw // pw + cx1, 0), w)
            xe = min(max(((j + 1) * rw + pw - 1) // pw + cx1, 0), w)
            vals = [x[int(b), ch, yy, xx] for yy in range(ys, ye) for xx in range(xs, xe)]
            if not vals:
                out[r, ch, i, j] = 0
                continue
            nums = [v for v in vals if not np.isnan(v)]
            if len(nums) < len(vals) and (nan == "propagate" or not nums):
                out[r, ch, i, j] = np.nan
                continue
            best = max(nums)
            zeros = [v for v in nums if v == 0]
            out[r, ch, i, j] = zeros[-1] if best == 0 and zero == "last" else next(v for v in nums if v == best)
    return out


@pytest.mark.parametrize("rounding", list(ROUND))
@pytest.mark.parametrize("nan", ["propagate", "ignore"])
@pytest.mark.parametrize("zero", ["first", "last"])
@PROPS
@given(data=st.data(), h=st.integers(1, 5), w=st.integers(1, 5), nrois=st.integers(1, 3),
       pooled=st.tuples(st.integers(1, 3), st.integers(1, 3)), scale=st.sampled_from([1.0, 0.5, 2.0]),
       dtype=st.sampled_from(["FLOAT32", "FLOAT16"]))
def test_roi_pool_every_reading_passes_and_a_perturbed_answer_fails(rounding, nan, zero, data, h, w, nrois, pooled,
                                                                     scale, dtype):
    x = np.array(data.draw(st.lists(st.sampled_from(MAX_VALUES), min_size=h * w, max_size=h * w)),
                 dtype=np.float32).reshape(1, 1, h, w)
    rows = []
    for _ in range(nrois):
        # corners on halves of the scaled grid, so that every rounding mode can differ
        x1 = data.draw(st.integers(-2, 2 * w)) / 2 / scale
        y1 = data.draw(st.integers(-2, 2 * h)) / 2 / scale
        x2 = x1 + data.draw(st.integers(0, 2 * w)) / 2 / scale
        y2 = y1 + data.draw(st.integers(0, 2 * h)) / 2 / scale
        rows.append((0.0, x1, y1, x2, y2))
    d = ROI.Desc(InputSizes=(1, 1, h, w), RoiSizes=(nrois, 5), DataType=dtype, SpatialScale=scale, PooledSize=pooled)
    case = Case(ROI, d, 1, make_variant(), "explicit", 0,
                (("X", tuple(float(v) for v in x.ravel())), ("rois", tuple(v for r in rows for v in r))))
    ins = case.inputs()
    assume(ROI.input_problem(case, ins) is None)
    y = roi_impl(ins["X"], ins["rois"], pooled, scale, rounding, nan, zero)
    v, reason, labels = verdict_of(case, {"Y": y})
    assert v == "PASS", (rounding, nan, zero, reason)
    bad = y.copy()
    pos = tuple(data.draw(st.integers(0, dd - 1)) for dd in y.shape)
    finite = ins["X"][np.isfinite(ins["X"])]
    bad[pos] = (np.abs(finite).max() if finite.size else 0.0) + 1.0
    assert verdict_of(case, {"Y": bad})[0] == "FAIL"
