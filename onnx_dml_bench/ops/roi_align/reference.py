"""RoiAlign's NumPy reference, one reading at a time (``Reading``: the descriptor's values and a
choice at each open point), with its tolerance and the non-finite answers of an overflow.

The reference computes in float64 from the input values (every coordinate exact to float64) and
rounds once to the output type. Tolerance (kind 'bound'), per sample: the arithmetic of the sample
and of the reduction, gamma(d + 7) (unit roundoff of the data type; d the additions of a sound
reduction of the n samples, ``_sums.depth``: n - 1 up to a run, then runs combined pairwise) times the
sum of |weight * value| of the sample, or, for a sample interpolated as a + t (b - a) (along X then
Y, or along Y then X), whose roundings scale with the corners' differences and partial results,
gamma(d + 1) times that sum plus the interpolation's own roundings (``lerp_error``), where that is
more; the coordinates, computed in FLOAT (float32; double for FLOAT64 data) by any order of the
page's formulas, are off by at most delta = 8 u (|start| + |end| + |InputPixelOffset| + 1) per axis,
which moves a sample's value by at most the steepest step between neighbouring input elements of the
cell it lies in (with the cells beyond a side within delta of it) times delta (and, within delta of
the border, by the jump to OutOfBoundsInputValue; of a nearest-neighbour half, to the neighbour).
Per output element, AVERAGE: the mean of its samples' tolerances; MAX: the maximum of samples each
within its own tolerance lies between the largest of their lowest values and the largest of their
highest (a pair: below, above). Then the rounding of the output, and, for the subnormal range, 4
smallest subnormals of the data type (a product or a quotient there errs by half of one: a sample's
products, 3 where its weights are multiplied in one after the other, the average's division, the
reference's own rounding; a flush of float32 denormals is allowed on the lanes whose rules allow it,
never for float16 or float64: ``verdict.flush_allowed``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import _pooling as P
from .. import _sums as SUM
from ..base import UINT_MAX
from . import fused as F
from .bounds import Cells, corner_differences, finite_terms, lerp_error, overflow_flags, sample_reach, slope_of

#: the reference's work arrays stay within this many bytes each (chunks of regions and channels)
CHUNK_BYTES = 1 << 20
#: the most sample-channel values the reference computes for one case (a bench limit, not DirectML's)
MAX_SAMPLE_VALUES = 1 << 31


# ------------------------------------------------------------------------------------------------
# The semantics, one reading at a time
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reading:
    """One reading of the operator: the descriptor's values and a choice at each open point. The
    reference's choices are the defaults; ``onnx`` readings take the ONNX text's (``roi-min-size``,
    ``empty-grid`` and ``max-reading`` are ONNX's only)."""
    scale_x: float
    scale_y: float
    input_offset: float
    output_offset: float
    align: bool
    oob: float
    min_samples: int
    max_samples: int
    mode: str                      # "AVERAGE" | "MAX"
    interp: str                    # "LINEAR" | "NEAREST_NEIGHBOR"
    edge: str = "inclusive"        # edge-sample: "inclusive" | "exclusive"
    extent: str = "margins"        # align-extent: "margins" | "corners"
    half: str = "up"               # nearest-half: "up" | "even" | "down"
    count: str = "exact"           # sample-count: "exact" | "float32"
    #: nonfinite, overflow: "ieee" | "zero-weights-skipped" | "differences" (a + t (b - a) along X then Y) |
    #: "differences-yx" (along Y then X)
    nonfinite: str = "ieee"
    nan_max: bool = False          # nonfinite, MAX: NaN samples ignored (IEEE maxNum)
    drop_nonfinite: bool = False   # nonfinite, MAX: samples with a non-finite corner ignored
    drop_overflow: bool = False    # overflow, MAX: samples whose interpolation can overflow ignored
    max_of: str = "samples"        # max-reading: "samples" | "weighted-corners"
    min_size: float | None = None  # roi-min-size: None | 1.0
    empty: str = "point"           # empty-grid: "point" | "zero"

    @property
    def adaptive(self) -> bool:
        return self.min_samples == 1 and self.max_samples == UINT_MAX


def reading(desc) -> Reading:
    """The reference's reading of ``desc``."""
    return Reading(float(np.float32(desc.SpatialScaleX)), float(np.float32(desc.SpatialScaleY)),
                   float(np.float32(desc.InputPixelOffset)), float(np.float32(desc.OutputPixelOffset)),
                   bool(desc.AlignRegionsToCorners), float(np.float32(desc.OutOfBoundsInputValue)),
                   int(desc.MinimumSamplesPerOutput), int(desc.MaximumSamplesPerOutput), desc.ReductionFunction,
                   desc.InterpolationMode)


@dataclass
class Axis:
    """The sample points of one axis for a group of regions (R regions, N = out * n points each)."""
    t: np.ndarray           # (R, N) coordinates
    lo: np.ndarray          # (R, N) int: the element below (clamped)
    hi: np.ndarray          # (R, N) int: the element above (== lo where clamped)
    w_lo: np.ndarray        # (R, N) weight of lo
    w_hi: np.ndarray        # (R, N) weight of hi
    valid: np.ndarray       # (R, N) bool: inside the input (else OutOfBoundsInputValue)
    near_edge: np.ndarray   # (R, N) bool: within delta of the validity bounds
    near_half: np.ndarray   # (R, N) bool: nearest neighbour within delta of a half
    delta: np.ndarray       # (R,) coordinate tolerance
    reach_lo: np.ndarray    # (R, N) int: the lowest element a point within delta reads (lo - 1 near a boundary)
    reach_hi: np.ndarray    # (R, N) int: the highest (hi + 1 near a boundary)

    def part(self, rows: slice) -> "Axis":
        """The points of some of the regions."""
        return Axis(*(getattr(self, f.name)[rows] for f in dataclasses.fields(self)))


def region(rois: np.ndarray, col: int, scale: float, out: int, rd: Reading) -> tuple[np.ndarray, np.ndarray]:
    """(start, size) of every region on one axis (col 0: X, 1: Y), exact in float64; ``min_size``
    forces ONNX's legacy size of at least 1."""
    start = rois[:, col].astype(np.float64) * scale
    size = rois[:, col + 2].astype(np.float64) * scale - start
    if rd.min_size is not None:
        size = np.maximum(size, rd.min_size)
    return start, size


def counts(rois: np.ndarray, col: int, scale: float, out: int, rd: Reading) -> np.ndarray:
    """Samples per output element on one axis, per region: clamp(ceil(|size| / out), Min, Max); the
    ONNX reading ``empty`` "zero" gives 0 where ceil(size / out) <= 0 with adaptive sampling."""
    start, size = region(rois, col, scale, out, rd)
    if rd.count == "float32":
        f = np.float32
        s32 = (rois[:, col + 2].astype(f) * f(scale)) - (rois[:, col].astype(f) * f(scale))
        if rd.min_size is not None:
            s32 = np.maximum(s32, f(rd.min_size))
        ratio = np.abs(s32) / f(out)
        raw = np.ceil(ratio.astype(np.float64))
    else:
        raw = np.ceil(np.abs(size) / out)
    n = np.clip(raw, rd.min_samples, rd.max_samples).astype(np.int64)
    if rd.empty == "zero" and rd.adaptive:
        n = np.where(np.ceil(size / out) <= 0, 0, n)
    return n


def axis_points(start: np.ndarray, size: np.ndarray, out: int, n: int, length: int, rd: Reading,
                coord_u: float) -> Axis:
    """The N = out * n sample points of regions (start, size) on an axis of ``length`` elements."""
    N = out * n
    k = np.arange(N, dtype=np.float64)[None, :]
    step = size[:, None] / (max(N - 1, 1) if rd.align else N)
    t = (k - rd.output_offset) * step + start[:, None] - rd.input_offset
    delta = 8 * coord_u * (np.abs(start) + np.abs(start + size) + abs(rd.input_offset) + 1.0)
    d = delta[:, None]
    if rd.align and rd.extent == "corners":
        lo_b, hi_b = 0.0, length - 1.0
        valid = (t >= lo_b) & (t <= hi_b)
    else:
        lo_b, hi_b = -1.0, float(length)
        valid = (t >= lo_b) & (t <= hi_b) if rd.edge == "inclusive" else (t > lo_b) & (t < hi_b)
    # within delta of a bound, not on it (a sample exactly on it is open point edge-sample's)
    near_edge = ((np.abs(t - lo_b) <= d) & (t != lo_b)) | ((np.abs(t - hi_b) <= d) & (t != hi_b))
    tc = np.clip(t, 0.0, length - 1.0)
    if rd.interp == "NEAREST_NEIGHBOR":
        frac = tc - np.floor(tc)
        near_half = (np.abs(frac - 0.5) <= d) & (frac != 0.5)      # exactly 0.5: open point nearest-half
        if rd.half == "even":
            idx = np.rint(tc)
        elif rd.half == "down":
            idx = np.where(frac == 0.5, np.floor(tc), np.floor(tc + 0.5))
        else:
            idx = np.floor(tc + 0.5)
        lo = np.minimum(idx, length - 1).astype(np.int64)
        r_lo = np.where(near_half & (frac >= 0.5), lo - 1, lo).clip(0, length - 1)
        r_hi = np.where(near_half & (frac < 0.5), lo + 1, lo).clip(0, length - 1)
        return Axis(t, lo, lo, np.ones_like(t), np.zeros_like(t), valid, near_edge, near_half, delta, r_lo, r_hi)
    lo = np.floor(tc).astype(np.int64)
    top = lo >= length - 1
    lo = np.where(top, length - 1, lo)
    hi = np.where(top, length - 1, lo + 1)
    frac = np.where(top, 0.0, tc - lo)
    # a point within delta below the element it reads first (not a point clamped to the last
    # element from further up: it stays there)
    r_lo = np.where((t - lo <= d) & (t > 0), lo - 1, lo).clip(0, length - 1)
    r_hi = np.where((frac >= 1 - d) | ((tc - np.floor(tc) <= d) & top), hi + 1, hi).clip(0, length - 1)
    return Axis(t, lo, hi, 1.0 - frac, frac, valid, near_edge, np.zeros_like(valid), delta, r_lo, r_hi)


@dataclass
class Result:
    y: np.ndarray                                   # (R, C, OH, OW) in the input's type, rounded once
    bound: np.ndarray | None = None                 # same shape: the tolerance before output rounding
    touched: np.ndarray | None = None               # same shape: samples with a non-finite corner
    reach: np.ndarray | None = None                 # same shape: the largest |partial sum| on the way
    #: with ``reach``: the largest positive partial sum and the largest negative one (a magnitude) on
    #: the way
    reach_pos: np.ndarray | None = None
    reach_neg: np.ndarray | None = None
    #: with ``bound``, MAX only: how far below the reference an answer may lie (``bound``: above); None
    #: where the tolerance is the same both ways
    below: np.ndarray | None = None
    #: with ``overflow``: per element, whether an evaluation in the data type can answer +inf, -inf,
    #: NaN there (module text: a sum of weighted corners, or an interpolation a + t (b - a) along one
    #: axis then the other, that passes the type's largest value)
    ovf_pos: np.ndarray | None = None
    ovf_neg: np.ndarray | None = None
    ovf_nan: np.ndarray | None = None


def roi_align(x: np.ndarray, rois: np.ndarray, batch: np.ndarray, out_hw: tuple[int, int], rd: Reading, *,
              bound: bool = False, touched: bool = False, overflow: bool = False, coord_u: float = 2.0 ** -24,
              value_u: float = 2.0 ** -24) -> Result:
    """RoI Align of ``x`` (N, C, H, W) over ``rois`` (R, 4) of batches ``batch`` (R,) into
    (R, C, OH, OW), computed in float64 and rounded once to x's type, by reading ``rd``; with
    ``bound``, the tolerance of each element (the module text), with ``touched``, the elements whose
    samples meet a non-finite corner and the largest magnitude a sum of |weight * value| (or a
    difference of two corners, as in an interpolation written a + t (b - a)) reaches on the way to
    each (AVERAGE: over all its samples; MAX: within one sample); with ``overflow``, the non-finite
    answers an evaluation in the data type can give at each element (``Result.ovf_*``).

    Regions with the same sample counts are done together, a chunk of regions and channels at a
    time (work arrays within CHUNK_BYTES), gathering the samples' corner values from a
    channels-last copy of the input (each gather moves whole channel vectors)."""
    n_b, c, h, w = x.shape
    oh, ow = out_hw
    r = len(rois)
    ny = counts(rois, 1, rd.scale_y, oh, rd)
    nx = counts(rois, 0, rd.scale_x, ow, rd)
    work = int(np.sum(ny * nx)) * oh * ow * c
    if work > MAX_SAMPLE_VALUES:
        raise ValueError(f"{work:,} sample values (regions x channels x samples), more than the reference computes "
                         f"({MAX_SAMPLE_VALUES:,}; a limit of the bench)")
    shape = (r, c, oh, ow)
    touched = touched or overflow
    res = Result(np.zeros(shape, x.dtype), np.zeros(shape) if bound else None,
                 np.zeros(shape, bool) if touched else None,
                 *((np.zeros(shape) if touched else None) for _ in range(3)),
                 np.zeros(shape) if bound and rd.mode == "MAX" else None,
                 *((np.zeros(shape, bool) if overflow else None) for _ in range(3)))
    if r == 0:
        return res
    xcl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))            # (N, H, W, C)
    finite = np.isfinite(x).all()
    bad = None if (finite or not touched) else np.ascontiguousarray((~np.isfinite(x)).transpose(0, 2, 3, 1))
    ys, sy = region(rois, 1, rd.scale_y, oh, rd)
    xs, sx = region(rois, 0, rd.scale_x, ow, rd)
    jobs = []
    for cy, cx in sorted(set(zip(ny.tolist(), nx.tolist()))):
        mine = np.flatnonzero((ny == cy) & (nx == cx))
        if cy == 0 or cx == 0:
            continue                                  # no samples: 0 (ONNX's empty grid)
        ay = axis_points(ys[mine], sy[mine], oh, cy, h, rd, coord_u)
        ax = axis_points(xs[mine], sx[mine], ow, cx, w, rd, coord_u)
        per_region = cy * cx * oh * ow
        step_c = max(1, min(c, CHUNK_BYTES // (8 * per_region)))
        step_r = max(1, CHUNK_BYTES // (8 * per_region * step_c))
        for r0 in range(0, len(mine), step_r):
            part = slice(r0, r0 + step_r)
            for c0 in range(0, c, step_c):
                jobs.append((mine[part], ay.part(part), ax.part(part), c0, min(c, c0 + step_c), cy, cx))
    with np.errstate(all="ignore"):
        cells = Cells(xcl, bool(finite), steps=bound and rd.interp == "NEAREST_NEIGHBOR")
    kernels = F.kernels(work)                 # the compiled loops, for many samples (the same values)

    def job(item):
        idx, ay, ax, c0, c1, cy, cx = item
        with np.errstate(all="ignore"):       # inf and NaN in the data are the data's (open point 'nonfinite')
            _samples(res, idx, xcl, cells, bad, batch[idx].astype(np.int64), ay, ax, c0, c1, cy, cx, oh, ow, rd,
                     value_u, finite, kernels)

    P._run(job, jobs)
    return res


def _samples(res: Result, idx, xcl, cells: Cells, bad, b, ay: Axis, ax: Axis, c0, c1, cy, cx, oh, ow, rd: Reading,
             value_u: float, finite: bool = False, kernels=None) -> None:
    """Fill ``res`` for regions ``idx``, channels [c0, c1): every sample, then the reduction
    (``finite``: every element of the input is; ``kernels``: the compiled loops of ``fused``, where
    a case's samples are many: the same values)."""
    B = b[:, None, None]
    yl, yh = ay.lo[:, :, None], ay.hi[:, :, None]
    xl, xh = ax.lo[:, None, :], ax.hi[:, None, :]
    wyl, wyh = ay.w_lo[:, :, None, None], ay.w_hi[:, :, None, None]
    wxl, wxh = ax.w_lo[:, None, :, None], ax.w_hi[:, None, :, None]
    corners = [(yl, xl, wyl * wxl), (yl, xh, wyl * wxh), (yh, xl, wyh * wxl), (yh, xh, wyh * wxh)]
    n_, h_, w_, c_ = xcl.shape
    if c0 == 0 and c1 == c_:                  # whole channel vectors of a flat (N*H*W, C) view
        flat = xcl.reshape(-1, c_)
        vals = [flat.take((B * h_ + ya) * w_ + xb, axis=0) for ya, xb, _ in corners]
    else:
        vals = [xcl[B, ya, xb, c0:c1] for ya, xb, _ in corners]
    plain = (res.bound is None and res.reach is None and rd.nonfinite == "ieee" and rd.max_of == "samples"
             and not rd.drop_nonfinite and not rd.drop_overflow)
    if kernels is not None and res.bound is not None and res.reach is None and finite and \
            xcl.dtype != np.float64 and rd.mode == "AVERAGE" and rd.interp == "LINEAR" and rd.max_of == "samples" \
            and rd.nonfinite == "ieee" and not rd.drop_nonfinite and not rd.drop_overflow:
        _fused_average(res, idx, cells, b, ay, ax, vals, c0, c1, cy, cx, oh, ow, rd, value_u, kernels)
        return
    with np.errstate(invalid="ignore", over="ignore"):
        if plain and kernels is not None:      # the reference itself, compiled: the same sums
            v = np.empty(vals[0].shape)
            kernels["samples"](*_corners(vals), *F.weights(ay, ax), v)
            terms = None
        elif plain:                            # the reference itself: fewest passes
            v = vals[0] * corners[0][2]
            tmp = np.empty_like(v)
            for (_, _, wt), g in zip(corners[1:], vals[1:]):
                v += np.multiply(g, wt, out=tmp)
            terms = None
        else:
            terms = [wt * g for (_, _, wt), g in zip(corners, vals)]
        if terms is not None and rd.nonfinite == "zero-weights-skipped":
            terms = [np.where(wt == 0, 0.0, t) for (_, _, wt), t in zip(corners, terms)]
        if plain:
            pass
        elif rd.mode == "MAX" and rd.max_of == "weighted-corners":
            v = np.maximum(np.maximum(terms[0], terms[1]), np.maximum(terms[2], terms[3]))
        elif rd.nonfinite in ("differences", "differences-yx"):
            # a + t (b - a) along X then along Y (or along Y then X), in the data type (its overflow
            # and 0 * inf included)
            dt = xcl.dtype.type
            a, bb, cc, dd = vals
            fx, fy = dt(1) * ax.w_hi[:, None, :, None].astype(dt), ay.w_hi[:, :, None, None].astype(dt)
            if rd.nonfinite == "differences":
                top, bot = a + fx * (bb - a), cc + fx * (dd - cc)
                v = (top + fy * (bot - top)).astype(np.float64)
            else:
                left, right = a + fy * (cc - a), bb + fy * (dd - bb)
                v = (left + fx * (right - left)).astype(np.float64)
        else:
            v = terms[0] + terms[1]                 # ((t0 + t1) + t2) + t3, in place
            v += terms[2]
            v += terms[3]
    valid = (ay.valid[:, :, None] & ax.valid[:, None, :])[..., None]           # (R, Ny, Nx, 1)
    vin = v
    inside = bool(valid.all())               # every sample inside the input
    if not inside:
        v = np.where(valid, v, rd.oob)
    if rd.mode == "MAX" and (rd.drop_nonfinite or rd.drop_overflow):
        drop = np.zeros(v.shape, bool)
        if rd.drop_nonfinite:
            drop |= valid & ~(np.isfinite(vals[0]) & np.isfinite(vals[1]) & np.isfinite(vals[2]) & np.isfinite(vals[3]))
        if rd.drop_overflow:
            drop |= valid & (sample_reach(terms, vals) > float(np.finfo(xcl.dtype).max))
        v = np.where(drop, np.nan, v)
    rc = len(b)
    shape6 = (rc, oh, cy, ow, cx, c1 - c0)
    blocks = v.reshape(shape6)
    if rd.mode == "MAX":
        nan_ignored = rd.nan_max or rd.drop_nonfinite or rd.drop_overflow
        with np.errstate(invalid="ignore"):
            y = np.fmax.reduce(np.fmax.reduce(blocks, axis=4), axis=2) if nan_ignored else blocks.max(axis=(2, 4))
    else:
        y = blocks.sum(axis=(2, 4)) / (cy * cx)
    res.y[idx, c0:c1] = y.transpose(0, 3, 1, 2)      # rounded once, to the input's type
    if res.bound is not None or res.reach is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            # half the sum of |weight * value| (within float64's range for float64 data)
            s = None
            for t in finite_terms(terms, vals, finite):       # 0 + |t0| / 2 + |t1| / 2 + ...: in place
                h = np.abs(t)
                h *= 0.5
                s = h if s is None else np.add(s, h, out=s)
            if not inside:
                s = np.where(valid, s, abs(rd.oob) / 2)
        if res.reach is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                fin_terms = finite_terms(terms, vals, finite)  # +inf where float64's range is passed
                pos = sum(np.maximum(t, 0.0) for t in fin_terms)
                neg = sum(np.maximum(-t, 0.0) for t in fin_terms)
            for arr, part, out_value in ((res.reach, sample_reach(terms, vals), abs(rd.oob)),
                                         (res.reach_pos, pos, max(rd.oob, 0.0)),
                                         (res.reach_neg, neg, max(-rd.oob, 0.0))):
                sb = np.where(valid, part, out_value).reshape(shape6)
                reach = sb.max(axis=(2, 4)) if rd.mode == "MAX" else sb.sum(axis=(2, 4))
                arr[idx, c0:c1] = reach.transpose(0, 3, 1, 2)
            if res.ovf_nan is not None:
                overflow_flags(res, idx, c0, c1, cells, b, ay, ax, vals, valid, pos, neg, shape6, rd, value_u)
    if res.bound is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            moved = ay.delta[:, None, None, None] + ax.delta[:, None, None, None]
            if rd.interp == "LINEAR":
                # the slopes of the cell the sample lies in (of the cells around it, within delta of a
                # side); the differences of its corners serve the interpolation's tolerance too
                diffs = corner_differences(vals) if finite and xcl.dtype != np.float64 else None
                move = cells.around("slope", b, ay, ax, c0, c1, np.maximum, slope_of(vals, cells.finite, diffs))
                move *= 2 * moved
                if rd.mode == "MAX" and rd.max_of == "weighted-corners":
                    # each weight itself moves by up to the coordinates' deltas
                    big = np.maximum.reduce([np.abs(np.nan_to_num(g, nan=0.0, posinf=0.0, neginf=0.0)) for g in vals])
                    move = np.maximum(move, big * moved)
            else:
                g = np.maximum(np.maximum(cells.step[B, yl, xl, c0:c1], cells.step[B, yl, xh, c0:c1]),
                               np.maximum(cells.step[B, yh, xl, c0:c1], cells.step[B, yh, xh, c0:c1]))
                half = (ay.near_half[:, :, None] | ax.near_half[:, None, :])[..., None]
                move = g * moved + np.where(half, g, 0.0)
            edge = (ay.near_edge[:, :, None] | ax.near_edge[:, None, :])[..., None]
            if edge.any():
                move = move + np.where(edge, np.abs(np.nan_to_num(vin, nan=0.0, posinf=0.0, neginf=0.0) - rd.oob), 0.0)
            n = cy * cx
            # the samples' sum by a sound reduction (``_sums.depth``: runs combined pairwise, never a
            # running sum over thousands of samples, whose gamma would pass 1), the interpolation's
            # products and sums, the division
            acc = {2.0 ** -11: np.float16, 2.0 ** -24: np.float32}.get(value_u, np.float64)
            depth = float(SUM.depth(n, acc))
            err = 2 * float(SUM.gamma(depth + 7, value_u)) * s
            if rd.interp == "LINEAR" and rd.max_of == "samples":
                # or interpolated as a + t (b - a), whose roundings scale with the corners' differences
                # and the partial results, not with the weighted corners alone (``lerp_error``)
                lerp = lerp_error(vals, ay, ax, s, value_u, finite, diffs)
                err = np.maximum(err, 2 * float(SUM.gamma(depth + 1, value_u)) * s
                                 + (lerp if inside else np.where(valid, lerp, 0.0)))
            per = (err + move).reshape(shape6)
            if rd.mode == "MAX":
                # the maximum of samples each within its own tolerance lies between the largest of their
                # lowest values and the largest of their highest: y - max(v - t) = min(y - v + t) below,
                # max(v + t) - y = max(t - (y - v)) above (y - v >= 0: within float64's range)
                gap = y[:, :, None, :, None, :] - v.reshape(shape6)
                below = np.fmin.reduce(np.fmin.reduce(gap + per, axis=4), axis=2)
                bnd = np.fmax.reduce(np.fmax.reduce(per - gap, axis=4), axis=2)
                below, bnd = (np.nan_to_num(q, nan=0.0, posinf=0.0, neginf=0.0).clip(min=0.0) for q in (below, bnd))
                res.below[idx, c0:c1] = below.transpose(0, 3, 1, 2)
            else:
                bnd = per.sum(axis=(2, 4)) / n
        res.bound[idx, c0:c1] = bnd.transpose(0, 3, 1, 2)
    if res.touched is not None and bad is not None:
        # every element a point within delta of the sample can read (a tiny weight on an inf is inf)
        t = np.zeros(v.shape, bool)
        for ya in {id(a): a for a in (ay.reach_lo, ay.lo, ay.hi, ay.reach_hi)}.values():
            for xb in {id(a): a for a in (ax.reach_lo, ax.lo, ax.hi, ax.reach_hi)}.values():
                t |= bad[B, ya[:, :, None], xb[:, None, :], c0:c1]
        # an outside sample of an implementation that reads element 0 with weight 0 (Detectron's)
        t = t | (~valid & bad[b, 0, 0, c0:c1][:, None, None, :])
        res.touched[idx, c0:c1] = t.reshape(shape6).any(axis=(2, 4)).transpose(0, 3, 1, 2)


def _corners(vals) -> list:
    """The gathered corners as the compiled loops read them: contiguous; float16 (numba has no such
    type) as its bits (int16), which the loops widen exactly (``fused._corner``)."""
    return [np.ascontiguousarray(g).view(np.int16) if g.dtype == np.float16 else np.ascontiguousarray(g)
            for g in vals]


def _fused_average(res: Result, idx, cells: Cells, b, ay: Axis, ax: Axis, vals, c0, c1, cy, cx, oh, ow, rd: Reading,
                   value_u: float, kernels) -> None:
    """:func:`_samples` of an AVERAGE reading of the reference's kind (bilinear, IEEE, every sample
    reduced) with its bound, on finite float16 or float32 corners, the per-sample arithmetic by the
    compiled loops (``fused.tolerances``, ``fused.slopes``): the values of the NumPy code, operation
    for operation (``tests/ops/test_roi_align_fused.py``)."""
    corners = _corners(vals)
    wyl, wyh, wxl, wxh = F.weights(ay, ax)
    valid = np.ascontiguousarray(ay.valid[:, :, None] & ax.valid[:, None, :])       # (R, Ny, Nx)
    inside = bool(valid.all())
    n = cy * cx
    acc = {2.0 ** -11: np.float16, 2.0 ** -24: np.float32}.get(value_u, np.float64)
    depth = float(SUM.depth(n, acc))
    c_err = 2 * float(SUM.gamma(depth + 7, value_u))
    c_lerp = 2 * float(SUM.gamma(depth + 1, value_u))
    k_lerp = 0.25 * (8 * value_u / (1 - 8 * value_u))
    v, err = np.empty(corners[0].shape), np.empty(corners[0].shape)
    kernels["tolerances"](*corners, wyl, wyh, wxl, wxh, valid, abs(rd.oob) / 2, c_err, c_lerp, k_lerp, v, err)
    shape6 = (len(b), oh, cy, ow, cx, c1 - c0)
    y = _block_sum(kernels, v, valid, inside, rd.oob, shape6) / n
    res.y[idx, c0:c1] = y.transpose(0, 3, 1, 2)                  # rounded once, to the input's type
    with np.errstate(invalid="ignore", over="ignore"):
        slope = np.empty(corners[0].shape)
        kernels["slopes"](*corners, slope)
        move = cells.around("slope", b, ay, ax, c0, c1, np.maximum, slope)
        move *= 2 * (ay.delta[:, None, None, None] + ax.delta[:, None, None, None])
        edge = (ay.near_edge[:, :, None] | ax.near_edge[:, None, :])[..., None]
        if edge.any():
            move = move + np.where(edge, np.abs(np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0) - rd.oob), 0.0)
        err += move
    res.bound[idx, c0:c1] = (_block_sum(kernels, err, valid, True, 0.0, shape6) / n).transpose(0, 3, 1, 2)


def _block_sum(kernels, v, valid, inside: bool, fill: float, shape6) -> np.ndarray:
    """(R, OH, OW, C): each output element's sum over its samples of ``v`` (R, Ny, Nx, C), ``fill``
    at the samples outside the input unless ``inside``: NumPy's ``sum(axis=(2, 4))`` of the
    samples' blocks, by the compiled loop (``fused._block_sum``, the same additions) where the
    chunk has two channels or more."""
    rc, oh, cy, ow, cx, n_c = shape6
    if n_c >= 2:
        out = np.zeros((rc, oh, ow, n_c))
        kernels["block_sum"](v, valid, float(fill), not inside, cy, cx, out)
        return out
    return (v if inside else np.where(valid[..., None], v, fill)).reshape(shape6).sum(axis=(2, 4))
