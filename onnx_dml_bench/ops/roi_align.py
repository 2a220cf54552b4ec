"""DML_ROI_ALIGN_OPERATOR_DESC (feature level 3.0) and DML_ROI_ALIGN1_OPERATOR_DESC (4.0): RoI Align
as in the Mask R-CNN paper (ONNX RoiAlign, opsets 10, 16 and 22).

DirectML semantics (the ROI_ALIGN1 page's pseudo-code, with the corrections below), per region r of
ROITensor [x1, y1, x2, y2] and each axis (X with SpatialScaleX and OutputTensor's width, Y with
SpatialScaleY and its height):

    start = x1 * SpatialScaleX, size = x2 * SpatialScaleX - start     (size may be 0 or negative)
    n     = clamp(ceil(|size| / OutputSize), MinimumSamplesPerOutput, MaximumSamplesPerOutput)
    N     = OutputSize * n                     (sample points on the axis; n per output element)
    step  = size / N         (AlignRegionsToCorners: size / max(N - 1, 1))
    x(k)  = (k - OutputPixelOffset) * step + start - InputPixelOffset,     k = 0 .. N-1

Output element o reduces (AVERAGE: the mean; MAX: the maximum) the n_y x n_x samples k = o*n ..
o*n + n - 1 of each axis. A sample is read from the input by ``interpolate2D``: LINEAR is the
bilinear interpolation of the Mask R-CNN implementation (Detectron's, which ONNX Runtime, torchvision
and onnx.reference share): a coordinate in [-1, 0] reads the first row/column, one at or past the last
(L - 1, L] reads the last, and a coordinate outside [-1, L] reads OutOfBoundsInputValue;
NEAREST_NEIGHBOR takes the element nearest to the clamped coordinate. An empty region (size 0) samples
its one point n times; an inverted one (x2 < x1) samples mirrored. ROI_ALIGN is ROI_ALIGN1 with
InputPixelOffset 0.5, OutputPixelOffset -0.5 and AlignRegionsToCorners FALSE (its page says so).

What the pages get wrong (English and its translations), each checked on the direct lane:
- ``outputSampleToInputScaleY = scaledRegionSizeX / outputSampleSizeX``: a Y scale computed from X
  sizes; DirectML scales Y by the Y sizes (every language's page carries it);
- the sample loops run ``from outputTensorSampleX to <= outputTensorSampleX + inputSamplesPerOutputSampleX``:
  one sample too many per axis; DirectML takes n, not n + 1;
- ``inputSamplesPerOutputSample = clamp(scaledRegionSize / outputSize, Min, Max)`` has no rounding
  and no absolute value: DirectML takes ceil(|size| / OutputSize) (an inverted region samples as
  many points as its mirror image);
- ``outputValue = 0`` before the samples: a maximum would start at 0; DirectML's MAX of negative
  samples is negative (the first sample starts it);
- "nearest nighbor" (English page);
- the Japanese pages give BatchIndicesTensor's valid range as [0, BatchCount] (closed); the English,
  Chinese and others say [0, BatchCount);
- the ROI_ALIGN page has no pseudo-code at all: ROI_ALIGN1's says ROI_ALIGN is its 0.5 / -0.5 case.

Tensors: InputTensor {N, C, H, W}, ROITensor {R, 4}, {1, R, 4} or {1, 1, R, 4} and OutputTensor
{R, C, OutputHeight, OutputWidth} in FLOAT32 or FLOAT16; BatchIndicesTensor {R}, {1, R}, {1, 1, R} or
{1, 1, 1, R} in UINT32, and UINT64 from feature level 5.0 (DirectML refuses INT32/INT64). A batch
index outside [0, BatchCount) is undefined behaviour: such data is refused (``input_problem``),
never judged. FLOAT64 is ONNX RoiAlign's double, which no DirectML level lists: the bench builds its
graphs for the ONNX lanes, and DirectML itself answers on the direct lane.

ONNX: RoiAlign-10 (output_half_pixel only), -16 and -22 (coordinate_transformation_mode half_pixel,
the default, or output_half_pixel), mode avg/max, output_height/width, sampling_ratio (> 0: exactly
that many points per axis; 0: adaptive, ceil(roi_size / output_size)), spatial_scale; X and rois in
T (float16, float, double), batch_indices int64. A descriptor is the image of a graph when
SpatialScaleX = SpatialScaleY, InterpolationMode LINEAR, OutOfBoundsInputValue 0, OutputPixelOffset
-0.5, AlignRegionsToCorners FALSE, InputPixelOffset 0.5 (half_pixel) or 0 (output_half_pixel), and
MinimumSamplesPerOutput = MaximumSamplesPerOutput = s (sampling_ratio s) or 1 and UINT_MAX (0,
adaptive; what ONNX Runtime's DML EP writes). Everything else (NEAREST_NEIGHBOR, other pixel offsets,
AlignRegionsToCorners, two scales, an out-of-bounds value, other sample bounds) is a DirectML
capability no graph can request: NOT_EXPRESSIBLE on the ONNX lanes, a real verdict on the direct lane.

The reference computes in float64 from the input values (every coordinate exact to float64) and
rounds once to the output type. Tolerance (kind 'bound'), per sample: the arithmetic of the sample
and of the reduction, gamma(d + 7) (unit roundoff of the data type; d the additions of a sound
reduction of the n samples, ``_sums.depth``: n - 1 up to a run, then runs combined pairwise) times the
sum of |weight * value| of the sample, or, for a sample interpolated as a + t (b - a) (along X then
Y, or along Y then X), whose roundings scale with the corners' differences and partial results,
gamma(d + 1) times that sum plus the interpolation's own roundings (``_lerp_error``), where that is
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

Open points (both the page and the ONNX text leave them open; every combination is allowed):
- ``edge-sample``: a sample exactly at -1 or at L (the input's height or width): read as the border
  element (reference: Detectron's test, y < -1 or y > L is outside) or as outside;
- ``align-extent``: with AlignRegionsToCorners, whether the clamp zones [-1, 0) and (L - 1, L] remain
  (reference) or the input spans [0, L - 1] only (corner-aligned, as align_corners in resampling);
- ``nearest-half``: NEAREST_NEIGHBOR at a coordinate exactly between two elements: the upper one
  (reference, C round()), the even one or the lower one;
- ``sample-count``: ceil(|size| / OutputSize) of a region whose ratio is an integer in one precision
  and not in the other: the count from the exact ratio (reference) or from float32 arithmetic;
- ``nonfinite``: a sample whose corners (any weight, 0 included) hold +-inf or NaN: the reference's
  IEEE arithmetic (0 * inf = NaN), any non-finite value, the value with zero-weight corners skipped,
  the value interpolated as a + t (b - a) in the data type (along X then Y, or along Y then X), or
  (MAX) with NaN samples ignored;
- ``overflow``: finite data whose sums of weighted corners, or whose differences of neighbouring
  corners in an interpolation a + t (b - a), can pass the type's largest value: the exact answer, the
  infinities and NaN an evaluation in the data type gives there (``_overflow_flags``), the
  interpolation a + t (b - a) in the data type (along X then Y, or along Y then X), or (MAX) the
  maximum of the other samples.
Open points of the ONNX text alone (``onnx_open_points``; the DirectML page decides them, so the
direct lane is held to the page):
- ``max-reading``: mode "max": the maximum of the bilinear samples (reference; the DirectML page, and
  the ONNX text's "the value of the sampled locations are computed ... through bilinear
  interpolation") or the maximum of the individually weighted corners max(w1*x1, ..., w4*x4) (ONNX
  Runtime's CPU EP and onnx.reference; ORT_ROIALIGN_MAX_USE_BILINEAR_INTERPOLATION of later ONNX
  Runtime releases switches to the former);
- ``roi-min-size``: output_half_pixel with a region smaller than one pixel (empty and inverted ones
  included): as it is (reference, the text) or forced to size 1 ("malformed ROIs" of Detectron's
  aligned=False: ONNX Runtime, onnx.reference, torchvision);
- ``empty-grid``: sampling_ratio 0 with a region of size 0 or below: one sample per output
  (reference; DirectML's "all output pixels come from the single input coordinate", its EP's
  MinimumSamplesPerOutput 1) or ceil(size / output) = 0 points, an output of 0 (onnx.reference,
  ONNX Runtime with half_pixel).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from ..cases import Case
from ..compare import NF_NAN, NF_NEG_INF, NF_POS_INF
from ..dtypes import DML_TO_NUMPY, FEATURE_LEVELS
from ..inputs import families_for, fill, rng_for
from . import _pooling as P
from . import _mutants as M
from . import _sums as SUM
from ._struct import Bool, DirectmlH, Enum, Float, Input, Output, Uint
from ._sweep import check_profile, rotate, thin
from .base import (DML_PAGES, ONNX_REFERENCE, ONNX_TEXT, ORT_CPU, UINT_MAX, Alternative, Curated, Descriptor,
                   DescriptorError, Deviation, Fragment, NotExpressible, Operator, OutputSpec, check_input_sizes,
                   check_type_at_level, check_uint, compact, describe_case, schema_allows, tensor_info)

TYPES_BY_LEVEL = {"3.0": ("FLOAT32", "FLOAT16")}
#: BatchIndicesTensor's data types (both pages): UINT32, and UINT64 from feature level 5.0
INDEX_TYPES_BY_LEVEL = {"3.0": ("UINT32",), "5.0": ("UINT32", "UINT64")}
#: ONNX RoiAlign's double: no DirectML feature level lists it (see the module text)
ONNX_ONLY_TYPES = ("FLOAT64",)
REDUCTIONS = ("AVERAGE", "MAX")
INTERPOLATIONS = ("NEAREST_NEIGHBOR", "LINEAR")
#: RoI families (the input X is 'random' under them): boxes on and past the borders (samples exactly
#: at -1 and at the input's size among them), empty (zero-size) boxes, boxes under a pixel, boxes
#: far larger than the input, inverted boxes (x2 < x1, y2 < y1)
ROI_FAMILIES = ("roi-border", "roi-empty", "roi-subpixel", "roi-huge", "roi-inverted")
#: RoI families outside the rotation: 'roi-detection', boxes of 1 to 32 pixels (after scaling) inside
#: the input, as a detector's proposals of one FPN level (the ``networks`` cases and the benchmark)
EXTRA_ROI_FAMILIES = ("roi-detection",)
#: the input's values for the RoI families
ROI_X_FAMILY = "random"
#: the reference's work arrays stay within this many bytes each (chunks of regions and channels)
CHUNK_BYTES = 1 << 20
#: the most sample-channel values the reference computes for one case (a bench limit, not DirectML's)
MAX_SAMPLE_VALUES = 1 << 31
#: the bound's absolute term, in smallest subnormals of the data type: the underflow of a sample's
#: products (3), the average's division (1/2) and the reference's own rounding (1/2) (``_bound_of``)
SUBNORMAL_STEPS = 4

NUMBERS = {
    "DML_REDUCE_FUNCTION": {"DML_REDUCE_FUNCTION_AVERAGE": 2, "DML_REDUCE_FUNCTION_MAX": 7},
    "DML_INTERPOLATION_MODE": {"DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR": 0, "DML_INTERPOLATION_MODE_LINEAR": 1},
}


# ------------------------------------------------------------------------------------------------
# Descriptors
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RoiAlignDesc(Descriptor):
    InputSizes: tuple[int, ...]        # {BatchCount, ChannelCount, InputHeight, InputWidth}
    RoiSizes: tuple[int, ...]          # ROITensor: {NumROIs, 4}, {1, NumROIs, 4} or {1, 1, NumROIs, 4}
    DataType: str                      # InputTensor, ROITensor and OutputTensor
    OutputSize: tuple[int, ...]        # (OutputHeight, OutputWidth): OutputTensor's last two sizes
    BatchIndicesDataType: str = "UINT32"
    BatchIndicesSizes: tuple[int, ...] | None = None   # None: {NumROIs}; or {1, NumROIs}, ... {1, 1, 1, NumROIs}
    ReductionFunction: str = "AVERAGE"                 # DML_REDUCE_FUNCTION_AVERAGE / _MAX
    InterpolationMode: str = "LINEAR"                  # DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR / _LINEAR
    SpatialScaleX: float = 1.0
    SpatialScaleY: float = 1.0
    OutOfBoundsInputValue: float = 0.0
    MinimumSamplesPerOutput: int = 1
    MaximumSamplesPerOutput: int = UINT_MAX
    FeatureLevel: str = "3.0"

    @property
    def num_rois(self) -> int:
        return int(self.RoiSizes[-2]) if len(self.RoiSizes) >= 2 else 0

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return (self.num_rois,) if self.BatchIndicesSizes is None else tuple(self.BatchIndicesSizes)

    # the fields ROI_ALIGN1 adds, at the values ROI_ALIGN has
    InputPixelOffset = 0.5
    OutputPixelOffset = -0.5
    AlignRegionsToCorners = False


@dataclass(frozen=True)
class RoiAlign1Desc(RoiAlignDesc):
    InputPixelOffset: float = 0.5
    OutputPixelOffset: float = -0.5
    AlignRegionsToCorners: bool = False
    FeatureLevel: str = "4.0"


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
        cells = _Cells(xcl, slopes=bound or overflow, steps=bound and rd.interp == "NEAREST_NEIGHBOR",
                       overflow=overflow)

    def job(item):
        idx, ay, ax, c0, c1, cy, cx = item
        with np.errstate(all="ignore"):       # inf and NaN in the data are the data's (open point 'nonfinite')
            _samples(res, idx, xcl, cells, bad, batch[idx].astype(np.int64), ay, ax, c0, c1, cy, cx, oh, ow, rd,
                     value_u)

    P._run(job, jobs)
    return res


class _Cells:
    """What the bound and the overflow need of the input around each sample, per cell (r, c): the
    square of elements r..r+1, c..c+1 a sample between them reads (one row or column at the last
    one, where a sample is clamped), channels last (N, H, W, C):

    - ``slope``: half the largest |difference| of two neighbouring elements of the cell along H or W
      (a bilinear sample moved by d along an axis inside the cell moves by at most twice that times
      d; halves stay within float64's range for float64 data); differences with a non-finite element
      count 0 (open point 'nonfinite' decides there);
    - ``step`` (nearest neighbour): at each element the largest |difference| to a neighbour;
    - ``ovf``: a difference of two neighbouring elements of the cell overflows in the data type
      (the first stage of an interpolation written a + t (b - a)).

    A sample within delta of a cell's side (``Axis.reach_lo``/``reach_hi``) may read the cells
    beyond it: :meth:`around` takes those with its own."""

    def __init__(self, xcl: np.ndarray, slopes: bool, steps: bool, overflow: bool):
        self.shape = xcl.shape
        self.slope = self.step = self.ovf = None
        if slopes:
            fn = np.abs if np.isfinite(xcl).all() else (lambda d: np.where(np.isfinite(d), np.abs(d), 0.0))
            self.slope = self._cellwise(xcl, fn, np.float64, np.maximum)
        if steps:
            self.step = _steepest(xcl)
        if overflow:
            fin = np.isfinite(xcl)
            self.ovf = self._cellwise(xcl, None, bool, np.logical_or, fin)

    @staticmethod
    def _cellwise(xcl, fn, dtype, op, fin=None) -> np.ndarray:
        """Per cell, ``op`` over its neighbour differences: |differences| (``fn``) in float64, or
        (``fin`` given) whether the difference of two finite elements overflows in x's type."""
        n, h, w, c = xcl.shape
        out = np.zeros(xcl.shape, dtype)
        for axis in (1, 2):
            if xcl.shape[axis] < 2:
                continue
            lo, hi = [slice(None)] * 4, [slice(None)] * 4
            lo[axis], hi[axis] = slice(0, -1), slice(1, None)
            lo, hi = tuple(lo), tuple(hi)
            if fin is None:
                d = fn(xcl[hi].astype(np.float64) * 0.5 - xcl[lo].astype(np.float64) * 0.5)   # float64
            else:
                d = np.isinf(xcl[hi] - xcl[lo]) & fin[hi] & fin[lo]             # in x's type
            # a difference along H at (r, c) belongs to cells (r, c) and (r, c - 1); along W at (r, c) to
            # cells (r, c) and (r - 1, c)
            other = 2 if axis == 1 else 1
            op(out[lo], d, out=out[lo])
            if xcl.shape[other] > 1:
                src, dst = [slice(None)] * 4, [slice(None)] * 4
                src[other], dst[axis], dst[other] = slice(1, None), slice(0, -1), slice(0, -1)
                src, dst = tuple(src), tuple(dst)
                op(out[dst], d[src], out=out[dst])
        return out

    def around(self, arr: np.ndarray, b, ay: "Axis", ax: "Axis", c0: int, c1: int, op, own: bool = True) -> np.ndarray:
        """(R, Ny, Nx, C) per sample: ``arr`` of its own cell (``own``; else zero), and where it lies
        within delta of a side, ``op`` with the cells beyond that side (the one before where
        ``reach_lo`` is below ``lo``, the one after where ``reach_hi`` is above ``hi``; both axes:
        the diagonal one too)."""
        _, h, w, _ = self.shape
        yl, xl = ay.lo[:, :, None], ax.lo[:, None, :]
        got = arr[b[:, None, None], yl, xl, c0:c1]
        if not own:
            got = np.zeros_like(got)
        sides = []
        for a in (ay, ax):
            sides.append(((a.reach_lo < a.lo), (a.reach_hi > a.hi)))
        near = ((sides[0][0] | sides[0][1])[:, :, None] | (sides[1][0] | sides[1][1])[:, None, :])
        if near.any():
            ri, yi, xi = np.nonzero(near)
            bb, y0, x0 = b[ri], ay.lo[ri, yi], ax.lo[ri, xi]
            ok_y = {-1: sides[0][0][ri, yi], 0: np.ones(len(ri), bool), 1: sides[0][1][ri, yi]}
            ok_x = {-1: sides[1][0][ri, xi], 0: np.ones(len(ri), bool), 1: sides[1][1][ri, xi]}
            best = got[ri, yi, xi]
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    if dy == dx == 0:
                        continue
                    k = ok_y[dy] & ok_x[dx]
                    if k.any():
                        other = arr[bb[k], np.clip(y0[k] + dy, 0, h - 1), np.clip(x0[k] + dx, 0, w - 1), c0:c1]
                        best[k] = op(best[k], other)
            got[ri, yi, xi] = best
        return got


def _finite_terms(terms, vals) -> list:
    """The weighted corners whose corner is finite (the others: 0; open point 'nonfinite')."""
    return [t if np.isfinite(g).all() else np.where(np.isfinite(g), t, 0.0) for t, g in zip(terms, vals)]


def _reach(terms, vals) -> np.ndarray:
    """Per sample, the largest magnitude its interpolation can reach on the way: the sum of
    |weight * value|, or a difference of two corners (an interpolation written a + t (b - a));
    non-finite corners aside (open point 'nonfinite'). +inf where that passes even float64's range
    (float64 data)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = sum(np.abs(t) for t in _finite_terms(terms, vals))
        fin = [np.where(np.isfinite(v), v.astype(np.float64), np.nan) for v in vals]
        span = np.nan_to_num(np.fmax.reduce(fin) - np.fmin.reduce(fin), nan=0.0, posinf=np.inf)
    return np.maximum(s, span)


def _steepest(xcl: np.ndarray) -> np.ndarray:
    """(N, H, W, C) float64 of ``xcl`` (N, H, W, C): at each element, the largest |difference| to a
    neighbour along H or W (the step a nearest-neighbour sample near a half can take); differences
    with a non-finite element count 0 (where a sample meets one, the open point 'nonfinite'
    decides)."""
    g = np.zeros(xcl.shape)
    for ax in (1, 2):
        lo = [slice(None)] * 4
        hi = [slice(None)] * 4
        lo[ax], hi[ax] = slice(0, -1), slice(1, None)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.subtract(xcl[tuple(hi)], xcl[tuple(lo)], dtype=np.float64)     # exact in float64
            np.abs(d, out=d)
        d[~np.isfinite(d)] = 0.0
        np.maximum(g[tuple(lo)], d, out=g[tuple(lo)])
        np.maximum(g[tuple(hi)], d, out=g[tuple(hi)])
    return g


def _samples(res: Result, idx, xcl, cells: _Cells, bad, b, ay: Axis, ax: Axis, c0, c1, cy, cx, oh, ow, rd: Reading,
             value_u: float) -> None:
    """Fill ``res`` for regions ``idx``, channels [c0, c1): every sample, then the reduction."""
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
    with np.errstate(invalid="ignore", over="ignore"):
        if plain:                              # the reference itself: fewest passes
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
            v = terms[0] + terms[1] + terms[2] + terms[3]
    valid = (ay.valid[:, :, None] & ax.valid[:, None, :])[..., None]           # (R, Ny, Nx, 1)
    vin = v
    if not valid.all():
        v = np.where(valid, v, rd.oob)
    if rd.mode == "MAX" and (rd.drop_nonfinite or rd.drop_overflow):
        drop = np.zeros(v.shape, bool)
        if rd.drop_nonfinite:
            drop |= valid & ~(np.isfinite(vals[0]) & np.isfinite(vals[1]) & np.isfinite(vals[2]) & np.isfinite(vals[3]))
        if rd.drop_overflow:
            drop |= valid & (_reach(terms, vals) > float(np.finfo(xcl.dtype).max))
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
            s = sum(np.abs(t) * 0.5 for t in _finite_terms(terms, vals))
            s = np.where(valid, s, abs(rd.oob) / 2)
        if res.reach is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                fin_terms = _finite_terms(terms, vals)          # +inf where float64's range is passed
                pos = sum(np.maximum(t, 0.0) for t in fin_terms)
                neg = sum(np.maximum(-t, 0.0) for t in fin_terms)
            for arr, part, out_value in ((res.reach, _reach(terms, vals), abs(rd.oob)),
                                         (res.reach_pos, pos, max(rd.oob, 0.0)),
                                         (res.reach_neg, neg, max(-rd.oob, 0.0))):
                sb = np.where(valid, part, out_value).reshape(shape6)
                reach = sb.max(axis=(2, 4)) if rd.mode == "MAX" else sb.sum(axis=(2, 4))
                arr[idx, c0:c1] = reach.transpose(0, 3, 1, 2)
            if res.ovf_nan is not None:
                _overflow_flags(res, idx, c0, c1, cells, b, ay, ax, vals, valid, pos, neg, shape6, rd, value_u)
    if res.bound is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            moved = ay.delta[:, None, None, None] + ax.delta[:, None, None, None]
            if rd.interp == "LINEAR":
                # the slopes of the cell the sample lies in (of the cells around it, within delta of a side)
                move = cells.around(cells.slope, b, ay, ax, c0, c1, np.maximum) * (2 * moved)
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
                # and the partial results, not with the weighted corners alone (``_lerp_error``)
                err = np.maximum(err, 2 * float(SUM.gamma(depth + 1, value_u)) * s
                                 + np.where(valid, _lerp_error(vals, ay, ax, s, value_u), 0.0))
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


def _lerp_error(vals, ay: Axis, ax: Axis, s_half: np.ndarray, u: float) -> np.ndarray:
    """Per sample, how far an interpolation written a + t (b - a), along X then Y or along Y then X,
    in a type of unit roundoff ``u``, can lie from the exact one: each of its six operations errs by
    u times its result, the first two of each row scaled by the weight that follows. Along X first,
    top = a + tx (b - a) within u (2 tx |b - a| + |top|), bot likewise, and the answer
    top + ty (bot - top) within (1 - ty) and ty of those and u (2 ty |bot - top| + |v|); as
    (1 - ty) |top| + ty |bot| and |v| are at most S (the sum of |weight * value|), and |bot - top| at
    most Dy = (1 - tx) |c - a| + tx |d - b|, that is within u (2 S + 2 tx Dx + 2 ty Dy), Dx =
    (1 - ty) |b - a| + ty |d - c|: the same along Y first. A few u^2 more; non-finite corners aside
    (open point 'nonfinite'); ``s_half`` is S / 2, and the differences are taken of quarters (within
    float64's range for float64 data)."""
    with np.errstate(invalid="ignore", over="ignore"):
        a, b, c, d = ((g if np.isfinite(g).all() else np.where(np.isfinite(g), g, 0)).astype(np.float64) * 0.25
                      for g in vals)
        tx, ty = ax.w_hi[:, None, :, None], ay.w_hi[:, :, None, None]
        dx = ay.w_lo[:, :, None, None] * np.abs(b - a) + ty * np.abs(d - c)
        dy = ax.w_lo[:, None, :, None] * np.abs(c - a) + tx * np.abs(d - b)
        quarter = s_half / 2 + tx * dx + ty * dy                # a quarter of S + tx Dx + ty Dy
    return quarter * (8 * u / (1 - 8 * u))


def _overflow_flags(res: Result, idx, c0, c1, cells: _Cells, b, ay: Axis, ax: Axis, vals, valid, pos, neg, shape6,
                    rd: Reading, value_u: float) -> None:
    """Fill ``res.ovf_*`` for regions ``idx``, channels [c0, c1): the non-finite answers an evaluation
    of each sample in the data type can give, and those of their reduction (the module text,
    open point 'overflow'), from the finite corners a, b (top row), c, d (bottom row):

    - a sum of the weighted corners (any order) passes the largest value where its positive (negative)
      terms can, with the roundings of the bound (gamma of its depth) and the coordinates' delta times
      the slopes around the sample: +inf (-inf), NaN where both can;
    - a + t (b - a) along X, then along Y: top = a + tx (b - a), bot = c + tx (d - c), top + ty (bot - top).
      b - a overflowing makes top infinite and the last step inf - inf: NaN; d - c overflowing makes
      bot an infinity of its sign, and so the answer (NaN where tx or ty can be 0: 0 * inf); bot - top,
      (c - a)(1 - tx) + (d - b) tx within the coordinates' delta and a few roundings of the corners,
      past the largest value: an infinity of its sign (NaN where ty can be 0). Along Y, then X, the
      same with the axes swapped. A sample within delta of its cell's side can read the cells beyond
      it: any of the three where one of their differences can pass the largest value;
    - AVERAGE: the samples' infinities, and the sums of the positive (negative) terms of all samples
      (with the same margins), in any order: +inf, -inf, NaN where both signs can; MAX: the samples'."""
    dt = vals[0].dtype
    fmax = float(np.finfo(dt).max)
    n = shape6[2] * shape6[4]
    acc = {2.0 ** -11: np.float16, 2.0 ** -24: np.float32}.get(value_u, np.float64)
    gamma = float(SUM.gamma(float(SUM.depth(n, acc)) + 7, value_u))
    with np.errstate(invalid="ignore", over="ignore"):
        margin = (gamma * pos + gamma * neg + cells.around(cells.slope, b, ay, ax, c0, c1, np.maximum)
                  * (2 * (ay.delta[:, None, None, None] + ax.delta[:, None, None, None])))
        pos, neg = pos + margin, neg + margin
        fin = [np.isfinite(g) for g in vals]
        # float64 data: the second differences in quarters, within float64's range
        sc = 0.25 if dt == np.float64 else 1.0
        a, bb, cc, dd = (np.where(f, g, 0).astype(np.float64) * sc for f, g in zip(fin, vals))
        tx, ty = ax.w_hi[:, None, :, None], ay.w_hi[:, :, None, None]
        dx, dy = ax.delta[:, None, None, None], ay.delta[:, None, None, None]
        zx, zy = tx <= dx, ty <= dy                                  # the weight can be 0
        # the first differences, in the data type, of finite neighbours
        first = {k: np.isinf(vals[j] - vals[i]) & fin[i] & fin[j]
                 for k, (i, j) in {"top": (0, 1), "bot": (2, 3), "left": (0, 2), "right": (1, 3)}.items()}
        slack = 8 * value_u * np.maximum.reduce([np.abs(a), np.abs(bb), np.abs(cc), np.abs(dd)])
        ex = (cc - a) * (1 - tx) + (dd - bb) * tx                  # bot - top, X first
        rx = dx * np.abs((dd - bb) - (cc - a)) + slack
        ey = (bb - a) * (1 - ty) + (dd - cc) * ty                  # right - left, Y first
        ry = dy * np.abs((dd - cc) - (bb - a)) + slack
        top = fmax * sc
        px, nx_, py, ny_ = ex + rx > top, rx - ex > top, ey + ry > top, ry - ey > top
        p_s = (px | py | (first["bot"] & (dd > cc)) | (first["right"] & (dd > bb)) | (pos > fmax))
        n_s = (nx_ | ny_ | (first["bot"] & (dd < cc)) | (first["right"] & (dd < bb)) | (neg > fmax))
        nan_s = (first["top"] | first["left"] | (first["bot"] & (zx | zy)) | (first["right"] & (zx | zy))
                 | ((px | nx_) & zy) | ((py | ny_) & zx) | ((pos > fmax) & (neg > fmax)))
        near = ((((ay.reach_lo != ay.lo) | (ay.reach_hi != ay.hi))[:, :, None]
                 | ((ax.reach_lo != ax.lo) | (ax.reach_hi != ax.hi))[:, None, :])[..., None])
        if near.any():
            # within delta of a side, the cells beyond it: a difference there that overflows, or a
            # second one that can (their largest difference, a few roundings more)
            wide = near & (cells.around(cells.ovf, b, ay, ax, c0, c1, np.logical_or, own=False)
                           | (cells.around(cells.slope, b, ay, ax, c0, c1, np.maximum, own=False)
                              + 4 * value_u * fmax > fmax / 2))
            p_s, n_s, nan_s = p_s | wide, n_s | wide, nan_s | wide
        p_s, n_s, nan_s = (valid & f for f in (p_s, n_s, nan_s))
    p_o, n_o, nan_o = (f.reshape(shape6).any(axis=(2, 4)) for f in (p_s, n_s, nan_s))
    if rd.mode != "MAX":
        sums = [np.where(valid, part, max(sign * rd.oob, 0.0)).reshape(shape6).sum(axis=(2, 4)) > fmax
                for part, sign in ((pos, 1.0), (neg, -1.0))]
        p_o, n_o = p_o | sums[0], n_o | sums[1]
        nan_o = nan_o | (p_o & n_o)
    for arr, f in ((res.ovf_pos, p_o), (res.ovf_neg, n_o), (res.ovf_nan, nan_o)):
        arr[idx, c0:c1] = f.transpose(0, 3, 1, 2)


# ------------------------------------------------------------------------------------------------
# Input data
# ------------------------------------------------------------------------------------------------

def make_rois(desc, family: str, seed: int, dtype: str) -> np.ndarray:
    """Regions [x1, y1, x2, y2] in the input image's scale (divided by the spatial scales), exact in
    ``dtype``. Default: boxes inside the input on a grid of quarter pixels (after scaling);
    'roi-border': corners on and past the borders, at -1, -0.5, 0, L - 1, L - 0.5, L and beyond (so
    that samples fall exactly at -1 and at L); 'roi-empty': zero width, height or both;
    'roi-subpixel': sizes below one pixel; 'roi-huge': up to ten times the input, mostly outside;
    'roi-inverted': x2 < x1 or y2 < y1 (mirrored samples); 'roi-detection': boxes of 1 to 32
    pixels inside the input."""
    n, _, h, w = desc.InputSizes
    r = desc.num_rois
    g = rng_for(seed, "rois")

    def axis(length):
        if family == "roi-border":
            edges = np.array([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, length - 1.0, length - 0.5, length, length + 0.5,
                              length + 1.0])
            a = g.choice(edges, size=r)
            b = g.choice(edges, size=r)
            return np.minimum(a, b), np.maximum(a, b) + g.choice(np.array([0.0, 1.0, 2.0]), size=r)
        if family == "roi-huge":
            a = g.integers(-4 * length, length, size=r) + g.choice(np.array([0.0, 0.25, 0.5]), size=r)
            return a, a + g.integers(2 * length, 10 * length + 1, size=r)
        if family == "roi-detection":
            size = g.integers(4, 4 * min(length, 32) + 1, size=r) / 4.0
            a = np.floor(g.random(r) * (length - size) * 4) / 4.0
            return a, a + size
        a = g.integers(0, max(length - 1, 1) * 4, size=r) / 4.0
        if family == "roi-empty":
            return a, a.copy()
        if family == "roi-subpixel":
            return a, a + g.integers(1, 4, size=r) / 4.0
        size = g.integers(1, max(length, 2) * 4, size=r) / 4.0
        b = np.minimum(a + size, length)
        if family == "roi-inverted":
            return b, a
        return a, b

    x1, x2 = axis(w)
    y1, y2 = axis(h)
    if family == "roi-empty":                       # zero width, zero height or both, in turn
        which = np.arange(r) % 3
        x2 = np.where(which == 1, x2 + np.maximum(1.0, w / 4), x2)
        y2 = np.where(which == 2, y2 + np.maximum(1.0, h / 4), y2)
    if family == "roi-inverted":                    # one axis or both inverted
        which = np.arange(r) % 3
        x1, x2 = np.where(which == 1, x2, x1), np.where(which == 1, x1, x2)
        y1, y2 = np.where(which == 2, y2, y1), np.where(which == 2, y1, y2)
    boxes = np.stack([x1 / desc.SpatialScaleX, y1 / desc.SpatialScaleY, x2 / desc.SpatialScaleX,
                      y2 / desc.SpatialScaleY], axis=1)
    return boxes.astype(DML_TO_NUMPY[dtype])


# ------------------------------------------------------------------------------------------------
# The operators
# ------------------------------------------------------------------------------------------------

class _RoiAlign(Operator):
    onnx_ops = ("RoiAlign",)
    opsets = (10, 16, 22)
    default_opset = 16
    input_names = ("X", "rois", "batch_indices")
    exactness = ("within the error bound of its bilinear samples (per element, from the samples' weights and values "
                 "and the data type: no ULP count)")
    open_point_documents = {"align-extent": (DML_PAGES,), "nearest-half": (DML_PAGES,), "max-reading": (ONNX_TEXT,),
                            "roi-min-size": (ONNX_TEXT,), "empty-grid": (ONNX_TEXT,)}
    bound_text = ("Within the error bound of the computation, per element: |got - expected| <= gamma(d + 7) * S "
                  "+ D + the rounding of the output, gamma(m) = m*u / (1 - m*u), u = eps/2 of the data type, d the "
                  "additions of a sound reduction of the samples of the output element (n - 1 up to 64 float16 "
                  "terms, then runs combined pairwise), S the mean sum of |weight * value| of a sample (or, "
                  "for a sample interpolated as a + t (b - a), gamma(d + 1) * S plus the roundings of that "
                  "interpolation); D: the sample coordinates, computed in float32 (double for float64 data) in "
                  "any order of the formulas, are off by at most 8u(|start| + |end| + |pixel offset| + 1) per "
                  "axis, which moves a sample by the steepest step between the input elements of its cell times "
                  "that (near the border also the jump to the value outside the input); MAX: between the largest "
                  "of the samples' lowest values and the largest of their highest; NaN exactly where the expected "
                  "output has NaN; infinities equal. The largest bound over this case's elements is max_abs_error.")
    open_point_texts = {
        "edge-sample": "A sample exactly at -1 or at the input's height/width: neither text says whether it reads "
                       "the border element or OutOfBoundsInputValue. Allowed: the border element (reference: "
                       "Detectron's test) or outside.",
        "align-extent": "AlignRegionsToCorners: the page does not say whether the input still has its clamp zones "
                        "[-1, 0) and (L-1, L] (reference) or spans [0, L-1] only (corner-aligned). Both allowed.",
        "nearest-half": "NEAREST_NEIGHBOR at a coordinate exactly between two elements: the page says 'nearest'. "
                        "Allowed: the upper (reference), the even or the lower one.",
        "sample-count": "ceil(|size| / OutputSize) where the ratio is an integer in one precision and not in "
                        "another: the count from the exact ratio (reference) or from float32 arithmetic.",
        "nonfinite": "A sample whose corners hold +-inf or NaN (with any weight, 0 included): IEEE arithmetic "
                     "(reference: 0 * inf = NaN), any non-finite value, zero-weight corners skipped, a + t (b - a) "
                     "in the data type along X then Y or along Y then X, or (MAX) NaN samples, or every sample "
                     "with a non-finite corner, ignored (NaN where none remains).",
        "overflow": "The pages do not say in which precision, nor in which form, samples are interpolated and "
                    "summed: where a sum of |weight * value| or a difference of two neighbouring corners "
                    "(a + t (b - a), along X then Y or along Y then X) can exceed the type's largest value, the "
                    "data type may overflow on the way. Allowed: the exact answer (reference), the infinities and "
                    "NaN such an evaluation gives at those positions, a + t (b - a) in the data type, and (MAX) "
                    "the maximum of the other samples.",
        "max-reading": "ONNX mode 'max': the maximum of the bilinear samples (reference, the DirectML page) or of "
                       "the individually weighted corners max(w1*x1, ..., w4*x4) (ONNX Runtime's CPU EP, "
                       "onnx.reference). Both allowed on ONNX graphs.",
        "roi-min-size": "output_half_pixel with a region under one pixel: as it is (reference, the ONNX text) or "
                        "forced to size 1 (Detectron's aligned=False: ONNX Runtime, onnx.reference, torchvision).",
        "empty-grid": "sampling_ratio 0 with a region of size 0 or below: one sample per output (reference, the "
                      "DirectML EP) or ceil(size / output) = 0 points and an output of 0 (onnx.reference, ONNX "
                      "Runtime with half_pixel).",
    }

    # -- descriptor -------------------------------------------------------------------------
    def normalize(self, case) -> Case:
        """A tool's case (a fuzz sample, a shrink candidate) with the sizes its region count decides
        brought in line: ROITensor {1, ..., NumROIs, 4} and BatchIndicesTensor {1, ..., NumROIs}, each
        at its own rank."""
        d = case.desc
        rs = tuple(d.RoiSizes)
        if not 2 <= len(rs) <= 4:
            return case
        n = int(rs[-2])
        fixed = {"RoiSizes": (1,) * (len(rs) - 2) + (n, 4)}
        if d.BatchIndicesSizes is not None and 1 <= len(d.BatchIndicesSizes) <= 4:
            fixed["BatchIndicesSizes"] = (1,) * (len(d.BatchIndicesSizes) - 1) + (n,)
        if all(tuple(getattr(d, k)) == v for k, v in fixed.items()):
            return case
        return dataclasses.replace(case, desc=d.replace(**fixed))

    def validate(self, desc) -> None:
        check_input_sizes(desc.InputSizes, (4,), " {BatchCount, ChannelCount, InputHeight, InputWidth}")
        rs = tuple(desc.RoiSizes)
        if not (2 <= len(rs) <= 4 and rs[-1] == 4 and all(v == 1 for v in rs[:-2])):
            raise DescriptorError("ROITensor.Sizes", f"must be {{NumROIs, 4}}, {{1, NumROIs, 4}} or {{1, 1, NumROIs, 4}}, "
                                                     f"got {list(rs)}")
        if desc.num_rois < 1:
            raise DescriptorError("ROITensor.Sizes", "NumROIs must be >= 1 (DirectML has no empty tensors)")
        check_uint("ROITensor.Sizes", rs)
        bs = desc.batch_sizes
        if not (1 <= len(bs) <= 4 and all(v == 1 for v in bs[:-1]) and bs[-1] == desc.num_rois):
            raise DescriptorError("BatchIndicesTensor.Sizes", f"must be {{NumROIs}}, {{1, NumROIs}}, {{1, 1, NumROIs}} "
                                                              f"or {{1, 1, 1, NumROIs}} with NumROIs {desc.num_rois}, "
                                                              f"got {list(bs)}")
        if len(desc.OutputSize) != 2 or any(v < 1 for v in desc.OutputSize):
            raise DescriptorError("OutputTensor.Sizes", f"OutputHeight and OutputWidth must be >= 1, got "
                                                        f"{list(desc.OutputSize)}")
        check_uint("OutputTensor.Sizes", desc.OutputSize)
        if desc.ReductionFunction not in REDUCTIONS:
            raise DescriptorError("ReductionFunction", f"must be AVERAGE or MAX, got {desc.ReductionFunction!r}")
        if desc.InterpolationMode not in INTERPOLATIONS:
            raise DescriptorError("InterpolationMode", f"must be NEAREST_NEIGHBOR or LINEAR, got "
                                                       f"{desc.InterpolationMode!r}")
        for name in ("SpatialScaleX", "SpatialScaleY", "OutOfBoundsInputValue", "InputPixelOffset",
                     "OutputPixelOffset"):
            v = getattr(desc, name)
            if not math.isfinite(v) or abs(v) > float(np.finfo(np.float32).max):
                raise DescriptorError(name, f"must be a finite FLOAT, got {v}")
        lo, hi = desc.MinimumSamplesPerOutput, desc.MaximumSamplesPerOutput
        check_uint("MinimumSamplesPerOutput", [lo])
        check_uint("MaximumSamplesPerOutput", [hi])
        if lo < 1:
            raise DescriptorError("MinimumSamplesPerOutput", f"must be >= 1 (an output of no samples has no value), "
                                                             f"got {lo}")
        if hi < lo:
            raise DescriptorError("MaximumSamplesPerOutput", f"must be >= MinimumSamplesPerOutput ({lo}), got {hi}")
        if desc.DataType in ONNX_ONLY_TYPES:
            if desc.FeatureLevel not in FEATURE_LEVELS:
                raise DescriptorError("FeatureLevel", f"must be one of {', '.join(FEATURE_LEVELS)}, got "
                                                      f"{desc.FeatureLevel!r}")
        else:
            check_type_at_level(desc, "DataType", desc.DataType, self.types_by_level)
        check_type_at_level(desc, "BatchIndicesDataType", desc.BatchIndicesDataType, self.index_types_by_level)

    def output_shape(self, desc):
        return (desc.num_rois, desc.InputSizes[1], *desc.OutputSize)

    def input_shapes(self, desc):
        return {"X": tuple(desc.InputSizes), "rois": (desc.num_rois, 4), "batch_indices": (desc.num_rois,)}

    def input_types(self, desc):
        return {"X": desc.DataType, "rois": desc.DataType, "batch_indices": "INT64"}

    def layout(self, desc):
        raise NotImplementedError

    def _tensors(self, desc):
        return [Input("InputTensor", "X", desc.InputSizes, desc.DataType),
                Input("ROITensor", "rois", desc.RoiSizes, desc.DataType),
                Input("BatchIndicesTensor", "batch_indices", desc.batch_sizes, desc.BatchIndicesDataType),
                Output("OutputTensor", "Y", self.output_shape(desc), desc.DataType),
                Enum("ReductionFunction", "DML_REDUCE_FUNCTION", desc.ReductionFunction, self.directml_h),
                Enum("InterpolationMode", "DML_INTERPOLATION_MODE", desc.InterpolationMode, self.directml_h),
                Float("SpatialScaleX", desc.SpatialScaleX),
                Float("SpatialScaleY", desc.SpatialScaleY)]

    # -- ONNX --------------------------------------------------------------------------------
    def sampling_ratio(self, desc) -> int | None:
        """ONNX's sampling_ratio of ``desc``: s for MinimumSamplesPerOutput = MaximumSamplesPerOutput
        = s, 0 for 1 and UINT_MAX (adaptive), None otherwise."""
        lo, hi = desc.MinimumSamplesPerOutput, desc.MaximumSamplesPerOutput
        if lo == hi:
            return lo
        if lo == 1 and hi == UINT_MAX:
            return 0
        return None

    def expressible(self, case) -> str | None:
        d, o = case.desc, case.opset
        why = schema_allows("RoiAlign", o, d.DataType, "T1")
        if why:
            return why
        if d.InterpolationMode != "LINEAR":
            return "ONNX RoiAlign interpolates bilinearly: InterpolationMode NEAREST_NEIGHBOR has no graph"
        if float(np.float32(d.SpatialScaleX)) != float(np.float32(d.SpatialScaleY)):
            return "ONNX RoiAlign has one spatial_scale: SpatialScaleX != SpatialScaleY has no graph"
        if d.OutOfBoundsInputValue != 0:
            return "ONNX RoiAlign reads 0 outside the input: OutOfBoundsInputValue other than 0 has no graph"
        if self.sampling_ratio(d) is None:
            return ("ONNX's sampling_ratio is exactly s samples (Minimum = Maximum = s) or adaptive (1 and UINT_MAX): "
                    f"MinimumSamplesPerOutput {d.MinimumSamplesPerOutput}, MaximumSamplesPerOutput "
                    f"{d.MaximumSamplesPerOutput} has no graph")
        if d.OutputPixelOffset != -0.5:
            return "ONNX RoiAlign's output grid is pixel-centred: OutputPixelOffset other than -0.5 has no graph"
        if d.AlignRegionsToCorners:
            return "ONNX RoiAlign has no AlignRegionsToCorners"
        if d.InputPixelOffset == 0.5:
            if o < 16:
                return f"RoiAlign-10 has no half_pixel coordinate_transformation_mode (opset {o}): InputPixelOffset 0.5 needs opset 16"
        elif d.InputPixelOffset != 0.0:
            return "ONNX's coordinate_transformation_mode shifts by 0.5 (half_pixel) or 0 (output_half_pixel): " \
                   f"InputPixelOffset {d.InputPixelOffset:g} has no graph"
        return None

    def attributes(self, case) -> dict:
        d = case.desc
        attrs = dict(mode="avg" if d.ReductionFunction == "AVERAGE" else "max", output_height=int(d.OutputSize[0]),
                     output_width=int(d.OutputSize[1]), sampling_ratio=int(self.sampling_ratio(d) or 0),
                     spatial_scale=float(d.SpatialScaleX))
        if case.opset >= 16:
            attrs["coordinate_transformation_mode"] = "half_pixel" if d.InputPixelOffset == 0.5 else "output_half_pixel"
        return attrs

    def build(self, case, prefix: str) -> Fragment:
        d = case.desc
        x, r, b, y = prefix + "X", prefix + "rois", prefix + "batch_indices", prefix + "Y"
        node = helper.make_node("RoiAlign", [x, r, b], [y], name=prefix + "RoiAlign", **self.attributes(case))
        return Fragment(inputs=[tensor_info(x, d.DataType, d.InputSizes), tensor_info(r, d.DataType, (d.num_rois, 4)),
                                tensor_info(b, TensorProto.INT64, (d.num_rois,))],
                        outputs=[tensor_info(y, d.DataType, self.output_shape(d))], nodes=[node],
                        input_names={"X": x, "rois": r, "batch_indices": b}, output_names={"Y": y})

    # -- data --------------------------------------------------------------------------------
    def families(self, dml_type):
        return families_for(dml_type) + ROI_FAMILIES

    def accepted_families(self, dml_type):
        return super().accepted_families(dml_type) + EXTRA_ROI_FAMILIES

    def make_inputs(self, case):
        d = case.desc
        roi_family = case.family in ROI_FAMILIES + EXTRA_ROI_FAMILIES
        x = fill(d.InputSizes, d.DataType, ROI_X_FAMILY if roi_family else case.family, case.seed, "X")
        rois = make_rois(d, case.family, case.seed, d.DataType)
        batch = rng_for(case.seed, "batch_indices").integers(0, d.InputSizes[0], size=d.num_rois).astype(np.int64)
        return {"X": x, "rois": rois, "batch_indices": batch}

    def input_problem(self, case, inputs):
        """The pages' preconditions on the data: every batch index in [0, BatchCount) (otherwise the
        behaviour is undefined) and finite region corners."""
        n = case.desc.InputSizes[0]
        b = np.asarray(inputs["batch_indices"])
        out = np.flatnonzero((b < 0) | (b >= n))
        if out.size:
            i = int(out[0])
            return f"region {i}: batch index {int(b[i])} is not in [0, {n}) (BatchCount {n}): undefined behaviour"
        rois = np.asarray(inputs["rois"], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(rois).all(axis=1))
        if bad.size:
            return f"region {int(bad[0])}: a corner is not finite"
        return None

    # -- the answers ---------------------------------------------------------------------------
    def _units(self, desc) -> tuple[float, float]:
        """(coordinate, value) unit roundoffs: coordinates in FLOAT (double for FLOAT64 data),
        values in the data type."""
        u = float(np.finfo(DML_TO_NUMPY[desc.DataType]).eps) / 2
        return (2.0 ** -53 if desc.DataType == "FLOAT64" else 2.0 ** -24), u

    def compute(self, case, inputs, rd: Reading | None = None, **kw) -> Result:
        d = case.desc
        cu, vu = self._units(d)
        return roi_align(inputs["X"], np.asarray(inputs["rois"]), np.asarray(inputs["batch_indices"]),
                         tuple(d.OutputSize), rd or reading(d), coord_u=cu, value_u=vu, **kw)

    def reference(self, case, inputs):
        problem = self.input_problem(case, inputs)
        if problem:
            raise ValueError(f"invalid input data: {problem}")
        return {"Y": self.compute(case, inputs).y.astype(DML_TO_NUMPY[case.desc.DataType])}

    def compare_specs(self, case):
        return {"Y": OutputSpec("bound")}

    def error_bound(self, case, inputs, ref):
        return {"Y": self._bound_of(case, self.compute(case, inputs, bound=True), ref["Y"])}

    # -- open points -----------------------------------------------------------------------------
    def _points(self, case, inputs, rd: Reading | None = None) -> dict[str, bool]:
        """The open points the case touches under reading ``rd`` (default: the reference's): where
        its samples lie decides edge-sample, align-extent, nearest-half and sample-count."""
        d = case.desc
        rd = rd or reading(d)
        rois = np.asarray(inputs["rois"])
        cu, _ = self._units(d)
        pts = {}
        edge = half = extent = False
        for col, scale, out, length in ((0, rd.scale_x, d.OutputSize[1], d.InputSizes[3]),
                                        (1, rd.scale_y, d.OutputSize[0], d.InputSizes[2])):
            n = counts(rois, col, scale, out, rd)
            start, size = region(rois, col, scale, out, rd)
            for cnt in np.unique(n):
                if cnt == 0:
                    continue                  # no samples (empty-grid's zero reading)
                sel = n == cnt
                a = axis_points(start[sel], size[sel], out, int(cnt), length, rd, cu)
                t = a.t
                if rd.align:
                    extent |= bool((((t >= -1) & (t < 0)) | ((t > length - 1) & (t <= length))).any())
                else:
                    edge |= bool(((t == -1.0) | (t == float(length))).any())
                if rd.interp == "NEAREST_NEIGHBOR":
                    tc = np.clip(t, 0, length - 1)
                    half |= bool((tc - np.floor(tc) == 0.5).any())
            if rd.min_samples < rd.max_samples:
                if not np.array_equal(n, counts(rois, col, scale, out, replace(rd, count="float32"))):
                    pts["sample-count"] = True
        pts["edge-sample"] = edge
        pts["align-extent"] = extent
        pts["nearest-half"] = half
        pts["nonfinite"] = not np.isfinite(inputs["X"]).all()
        pts["overflow"] = bool(self._overflow(case, inputs, rd).any())
        return pts

    def _overflow(self, case, inputs, rd: Reading | None = None) -> np.ndarray:
        """Output positions where a sum of |weight * value| on the way (the samples' average; within
        a sample for MAX) exceeds the data type's largest finite value."""
        x = inputs["X"]
        fmax = float(np.finfo(x.dtype).max)
        finite = x[np.isfinite(x)]
        if not finite.size or float(np.abs(finite.astype(np.float64)).max()) * 4 <= fmax / 2 ** 20:
            return np.zeros(self.output_shape(case.desc), bool)     # no sum of a sane count gets there
        with np.errstate(over="ignore", invalid="ignore"):
            return self.compute(case, inputs, rd, touched=True).reach > fmax

    def _overflow_bits(self, case, inputs, rd: Reading | None = None) -> np.ndarray:
        """Per output position, the non-finite answers an evaluation in the data type that overflows
        on the way can give (``compare`` NF_* bits; ``_overflow_flags``): +inf where the positive
        partial sums or an interpolation's second difference can pass the type's largest value,
        -inf where the negative ones can, NaN where both can, or a first difference of two
        neighbouring elements overflows (inf - inf, 0 * inf on the way); 0 elsewhere."""
        with np.errstate(over="ignore", invalid="ignore"):
            res = self.compute(case, inputs, rd, overflow=True)
        return (np.where(res.ovf_pos, NF_POS_INF, 0) | np.where(res.ovf_neg, NF_NEG_INF, 0)
                | np.where(res.ovf_nan, NF_NAN, 0)).astype(np.uint8)

    def _nonfinite_bits(self, case, inputs, rd: Reading | None = None) -> np.ndarray:
        """Per output position, the non-finite answers the input's non-finite values within reach of
        its samples can give (``compare`` NF_* bits): an infinity of their sign (a positive weight
        keeps it; a difference a + t (b - a) turns it into NaN, never the other infinity), NaN from
        any of them (0 * inf, inf - inf, a NaN)."""
        x = inputs["X"]
        bits = np.zeros(self.output_shape(case.desc), np.uint8)
        for kind, bit in ((np.isposinf, NF_POS_INF | NF_NAN), (np.isneginf, NF_NEG_INF | NF_NAN), (np.isnan, NF_NAN)):
            there = kind(x)
            if not there.any():
                continue
            only = np.where(there, x, np.where(np.isfinite(x), x, 0)).astype(x.dtype)
            t = self.compute(case, {**inputs, "X": only}, rd, touched=True).touched
            bits |= np.where(t, bit, 0).astype(np.uint8)
        return bits

    def open_points(self, case, inputs):
        return tuple(k for k, v in self._points(case, inputs).items() if v)

    def onnx_open_points(self, case, inputs):
        d = case.desc
        rd = reading(d)
        rois = np.asarray(inputs["rois"])
        out = []
        if d.ReductionFunction == "MAX":
            out.append("max-reading")
        sizes = [region(rois, col, s, o, rd)[1] for col, s, o in ((0, rd.scale_x, d.OutputSize[1]),
                                                                   (1, rd.scale_y, d.OutputSize[0]))]
        if d.InputPixelOffset == 0.0 and any((s < 1).any() for s in sizes):
            out.append("roi-min-size")
        if rd.adaptive and any((np.ceil(s / o) <= 0).any() for s, o in zip(sizes, (d.OutputSize[1], d.OutputSize[0]))):
            out.append("empty-grid")
        return tuple(out)

    #: each open point's readings, the reference's first, as changes of a Reading
    READINGS = {
        "edge-sample": [("", {}), ("edge-exclusive", {"edge": "exclusive"})],
        "align-extent": [("", {}), ("corner-aligned", {"extent": "corners"})],
        "nearest-half": [("", {}), ("half-even", {"half": "even"}), ("half-down", {"half": "down"})],
        "sample-count": [("", {}), ("float32-count", {"count": "float32"})],
        "nonfinite": [("nonfinite-any", {}), ("zero-weights-skipped", {"nonfinite": "zero-weights-skipped"}),
                      ("differences-in-type", {"nonfinite": "differences"}),
                      ("differences-yx-in-type", {"nonfinite": "differences-yx"}),
                      ("nan-ignored", {"nan_max": True}),
                      ("zero-weights-skipped+nan-ignored", {"nonfinite": "zero-weights-skipped", "nan_max": True}),
                      ("differences-in-type+nan-ignored", {"nonfinite": "differences", "nan_max": True}),
                      ("differences-yx-in-type+nan-ignored", {"nonfinite": "differences-yx", "nan_max": True}),
                      ("nonfinite-samples-ignored", {"drop_nonfinite": True})],
        "overflow": [("", {}), ("overflow-to-non-finite", {}), ("differences-in-type", {"nonfinite": "differences"}),
                     ("differences-yx-in-type", {"nonfinite": "differences-yx"}),
                     ("differences-in-type+nan-ignored", {"nonfinite": "differences", "nan_max": True}),
                     ("differences-yx-in-type+nan-ignored", {"nonfinite": "differences-yx", "nan_max": True}),
                     ("overflowing-samples-ignored", {"drop_overflow": True})],
        "max-reading": [("", {}), ("max-of-weighted-corners", {"max_of": "weighted-corners"})],
        "roi-min-size": [("", {}), ("clamped-to-1", {"min_size": 1.0})],
        "empty-grid": [("", {}), ("no-samples-zero", {"empty": "zero"})],
    }

    #: the points whose readings move the samples or change what is reduced (each such reading has
    #: its own samples, so its own bound, non-finite reach and value points); the rest read values
    GEOMETRY_POINTS = ("sample-count", "max-reading", "roi-min-size", "empty-grid")

    def _bound_of(self, case, res: Result, y: np.ndarray):
        """The bound of a reading's answer ``y`` from its own samples (``res.bound``, module text): an
        array, or for MAX a pair (below, above)."""
        fi = np.finfo(DML_TO_NUMPY[case.desc.DataType])
        a = np.abs(np.nan_to_num(np.asarray(y, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0))
        # in the subnormal range a product or a quotient errs by up to half the smallest subnormal
        # of the type (a sum there is exact): a sample's products, two per corner where its weights
        # are multiplied in one after the other (wy * (wx * v): 3 in all, the first ones scaled by
        # a weight), the average's division, and the rounding of the reference itself (a flush of
        # denormals is no reading of the data type's arithmetic: ``verdict.flush_allowed``)
        extra = float(fi.eps) / 2 * a + SUBNORMAL_STEPS * float(fi.smallest_subnormal)
        if res.below is not None:
            return (res.below + extra, res.bound + extra)
        return res.bound + extra

    def alternatives(self, case, inputs, ref, points):
        """Every combination of the readings of the open points ``points`` but the reference's own,
        computed when asked (a generator: the verdict stops at the first that matches). A reading
        that moves the samples (``GEOMETRY_POINTS``) is judged on its own geometry: its own bound,
        the non-finite values its own samples can reach, and the value points (edge-sample, ...)
        its own samples touch, whose readings combine with it (the legacy size-1 clamp can put a
        sample on the border, or make the count's ratio an integer in one precision only)."""
        geo = [p for p in self.GEOMETRY_POINTS if p in points]
        values = [p for p in self.READINGS if p in points and p not in self.GEOMETRY_POINTS]
        if not geo and not values:
            return []
        dtype = DML_TO_NUMPY[case.desc.DataType]
        base = reading(case.desc)
        is_max = case.desc.ReductionFunction == "MAX"

        def combos(pts):
            for combo in itertools.product(*(self.READINGS[p] for p in pts)):
                names = [n for n, _ in combo if n]
                if len(names) != len(set(names)) or sum("nonfinite" in ch for _, ch in combo) > 1:
                    continue                  # one interpolation form at a time
                changes = {k: v for _, ch in combo for k, v in ch.items()}
                if not is_max and {"nan_max", "drop_nonfinite", "drop_overflow"} & set(changes):
                    continue
                yield names, changes

        cache: dict = {}

        def nonfinite_bits(rd):
            key = ("nf", rd.min_size, rd.count, rd.empty, rd.edge, rd.extent, rd.half)
            if key not in cache:
                cache[key] = self._nonfinite_bits(case, inputs, rd)
            return cache[key]

        def overflow_bits(rd):
            key = ("ov", rd.min_size, rd.count, rd.empty, rd.edge, rd.extent, rd.half, rd.max_of)
            if key not in cache:
                cache[key] = self._overflow_bits(case, inputs, rd)
            return cache[key]

        def gen():
            seen = set()
            for gnames, gchanges in combos(geo):
                rd_g = replace(base, **gchanges)
                own = self._points(case, inputs, rd_g) if gchanges else {p: p in points for p in self.READINGS}
                vpts = [p for p in self.READINGS if own.get(p) and p not in self.GEOMETRY_POINTS]
                extra = []
                if own.get("sample-count") and "sample-count" not in geo and rd_g.count == "exact":
                    extra = [(["float32-count"], {"count": "float32"})]
                for enames, echanges in [([], {})] + extra:
                    for vnames, vchanges in combos(vpts):
                        names = gnames + enames + vnames
                        changes = {**gchanges, **echanges, **vchanges}
                        key = tuple(sorted(changes.items())) + tuple(n for n in names if "non-finite" in n)
                        if key in seen:
                            continue
                        seen.add(key)
                        rd = replace(base, **changes)
                        active = []
                        if "nonfinite" in vpts:
                            active.append(nonfinite_bits(rd))
                        # the non-finite answers of an evaluation in the data type: those its own samples
                        # give where they overflow (an interpolation a + t (b - a) whose t is rounded
                        # otherwise overflows at other samples)
                        if "overflow" in vpts and ("overflow-to-non-finite" in names or "drop_overflow" in changes
                                                   or changes.get("nonfinite") in ("differences", "differences-yx")):
                            active.append(overflow_bits(rd))
                        if not changes and not active:
                            continue
                        ok = {"Y": np.bitwise_or.reduce(active)} if active else {}
                        if not changes:
                            yield Alternative("+".join(names), {"Y": ref["Y"]}, nonfinite_ok=ok)
                            continue
                        with np.errstate(all="ignore"):
                            res = self.compute(case, inputs, rd, bound=True)
                        y = res.y.astype(dtype)
                        yield Alternative("+".join(names), {"Y": y}, nonfinite_ok=ok,
                                          bounds={"Y": self._bound_of(case, res, y)})
        return gen()

    def not_expressible(self):
        return [NotExpressible(self.key, "ROITensor {1, NumROIs, 4} / {1, 1, NumROIs, 4}, BatchIndicesTensor of 2-4 "
                               "dimensions", "ONNX RoiAlign takes rois as [num_rois, 4] and batch_indices as "
                               "[num_rois]: same data, other shape; the bench builds that form (counted here, not a gap)",
                               None, self.first_level),
                NotExpressible(self.key, "BatchIndicesTensor UINT32/UINT64", "ONNX's batch_indices are int64 (the "
                               "graph is the same for both DML types; DirectML refuses INT32/INT64)", None,
                               self.first_level),
                NotExpressible(self.key, "InterpolationMode NEAREST_NEIGHBOR", "ONNX RoiAlign interpolates "
                               "bilinearly", None, self.first_level),
                NotExpressible(self.key, "SpatialScaleX != SpatialScaleY", "ONNX RoiAlign has one spatial_scale",
                               None, self.first_level),
                NotExpressible(self.key, "OutOfBoundsInputValue other than 0", "ONNX RoiAlign reads 0 outside the "
                               "input", None, self.first_level),
                NotExpressible(self.key, "MinimumSamplesPerOutput != MaximumSamplesPerOutput (but 1 / UINT_MAX)",
                               "ONNX's sampling_ratio is exact (s x s) or adaptive", None, self.first_level)]

    # -- identity -----------------------------------------------------------------------------
    def label(self, desc, variant) -> str:
        mode = "max" if desc.ReductionFunction == "MAX" else "avg"
        interp = "nn" if desc.InterpolationMode == "NEAREST_NEIGHBOR" else ""
        s = self.sampling_ratio(desc)
        samples = f"s{s}" if s is not None else f"s{desc.MinimumSamplesPerOutput}-{desc.MaximumSamplesPerOutput}"
        sc = f"{desc.SpatialScaleX:g}" + (f"x{desc.SpatialScaleY:g}" if desc.SpatialScaleY != desc.SpatialScaleX else "")
        offs = "" if (desc.InputPixelOffset, desc.OutputPixelOffset) == (0.5, -0.5) else \
            f"p{desc.InputPixelOffset:g}_{desc.OutputPixelOffset:g}"
        parts = [f"n{desc.num_rois}", "o" + "x".join(map(str, desc.OutputSize)), mode, interp, samples, f"sc{sc}", offs,
                 "corners" if desc.AlignRegionsToCorners else "",
                 f"oob{desc.OutOfBoundsInputValue:g}" if desc.OutOfBoundsInputValue else "",
                 "u64" if desc.BatchIndicesDataType == "UINT64" else "",
                 "in" + "x".join(map(str, desc.InputSizes))]
        return "-".join(p for p in parts if p)

    def describe(self, case) -> str:
        d = case.desc
        parts = [f"r{d.num_rois}", f"out{compact(tuple(d.OutputSize))}", d.ReductionFunction, d.InterpolationMode,
                 f"samples={d.MinimumSamplesPerOutput}..{d.MaximumSamplesPerOutput}",
                 f"scale={d.SpatialScaleX:g},{d.SpatialScaleY:g}",
                 f"offsets={d.InputPixelOffset:g},{d.OutputPixelOffset:g}"]
        if d.AlignRegionsToCorners:
            parts.append("AlignRegionsToCorners")
        if d.OutOfBoundsInputValue:
            parts.append(f"OutOfBoundsInputValue={d.OutOfBoundsInputValue:g}")
        return describe_case(case, parts)

    # -- real sizes ---------------------------------------------------------------------------------
    def from_export(self, export) -> list:
        """Profile ``networks``: the descriptor of a census layer whose exported graph ends in a
        RoiAlign node (torchvision's MultiScaleRoIAlign: Slice/Gather + Cast nodes split its [R, 5]
        RoI tensor into rois and batch_indices first), float32 at the census's batch: [] for
        anything else and for a level with no RoIs. ``export``: an object with ``nodes`` (dicts of
        "op" and "attrs"), ``inputs`` (feature map and RoI shapes) and ``opset``."""
        nodes = list(getattr(export, "nodes", ()))
        inputs = list(getattr(export, "inputs", ()))
        if not nodes or nodes[-1].get("op") != "RoiAlign" or len(inputs) != 2 or not inputs[1] or inputs[1][0] < 1:
            return []
        a = nodes[-1].get("attrs") or {}
        opset = int(getattr(export, "opset", 16))
        ctm = a.get("coordinate_transformation_mode", "half_pixel" if opset >= 16 else "output_half_pixel")
        s = int(a.get("sampling_ratio", 0))
        scale = float(a.get("spatial_scale", 1.0))
        d = self.Desc(InputSizes=tuple(inputs[0]), RoiSizes=(int(inputs[1][0]), 4), DataType="FLOAT32",
                      OutputSize=(int(a.get("output_height", 1)), int(a.get("output_width", 1))),
                      ReductionFunction="MAX" if a.get("mode", "avg") == "max" else "AVERAGE",
                      SpatialScaleX=scale, SpatialScaleY=scale, MinimumSamplesPerOutput=s or 1,
                      MaximumSamplesPerOutput=s or UINT_MAX,
                      **({"InputPixelOffset": 0.5 if ctm == "half_pixel" else 0.0} if self.Desc is RoiAlign1Desc else {}))
        if self.Desc is not RoiAlign1Desc and ctm != "half_pixel":
            return []
        try:
            self.validate(d)
        except DescriptorError:
            return []
        return [(d, {})]

    def batched(self, desc, factor: int):
        """A serving batch: ``factor`` images, each with the census's RoIs."""
        return desc.replace(InputSizes=(desc.InputSizes[0] * factor, *desc.InputSizes[1:]),
                            RoiSizes=(desc.num_rois * factor, 4))

    def network_family(self, dml_type: str) -> str:
        return "roi-detection"

    # -- deviations ------------------------------------------------------------------------------
    def reading_differs(self, case, inputs, **changes) -> bool:
        """Does the reading ``changes`` (fields of :class:`Reading`) answer outside the tolerance of
        the reference anywhere on this case's data?"""
        base = self.compute(case, inputs)
        other = self.compute(case, inputs, replace(reading(case.desc), **changes)).y
        bound = self.error_bound(case, inputs, {"Y": base.y})["Y"]
        below, above = bound if isinstance(bound, tuple) else (bound, bound)
        a, b = base.y.astype(np.float64), other.astype(np.float64)
        with np.errstate(invalid="ignore"):
            same = (a == b) | (np.isnan(a) & np.isnan(b)) | ((b - a <= above) & (a - b <= below))
        return not bool(same.all())

    def deviations(self) -> list[Deviation]:
        def max_mode(c, x):
            return c.desc.ReductionFunction == "MAX" and self.reading_differs(c, x, max_of="weighted-corners")

        def min_size(c, x):
            return "roi-min-size" in self.onnx_open_points(c, x) and self.reading_differs(c, x, min_size=1.0)

        def empty_grid(c, x):
            return "empty-grid" in self.onnx_open_points(c, x) and self.reading_differs(c, x, empty="zero")

        def nonfinite(c, x):
            return not np.isfinite(x["X"]).all()

        def max_nan_order(c, x):
            """MAX with a non-finite value within reach of a sample (a NaN, or 0 * inf, among its
            weighted corners)."""
            if c.desc.ReductionFunction != "MAX" or np.isfinite(x["X"]).all():
                return False
            return bool(self.compute(c, x, touched=True).touched.any())

        def float32_count(c, x):
            return "sample-count" in self.open_points(c, x) and self.reading_differs(c, x, count="float32")

        def inverted_adaptive(c, x):
            """A region whose adaptive grid counts ceil(size / output) have opposite signs: one
            negative, the other positive (their product, the grid's size, is negative)."""
            d = c.desc
            rd = reading(d)
            if not (rd.adaptive and d.InputPixelOffset == 0.5):
                return False
            r = np.asarray(x["rois"], dtype=np.float64)
            ny = np.ceil(region(r, 1, rd.scale_y, d.OutputSize[0], rd)[1] / d.OutputSize[0])
            nx = np.ceil(region(r, 0, rd.scale_x, d.OutputSize[1], rd)[1] / d.OutputSize[1])
            return bool((ny * nx < 0).any())

        k = self.short
        return [
            # ---- ONNX Runtime CPU EP (1.32)
            self.deviation(f"ort-{k}-max-weighted-corners", ORT_CPU, "open point", max_mode,
                           "RoiAlign mode 'max' takes the maximum of the individually weighted corners "
                           "max(w1*x1, ..., w4*x4) of each sample (zero-weight corners included, so a maximum of "
                           "negative values is 0), not of the bilinear samples; the "
                           "ORT_ROIALIGN_MAX_USE_BILINEAR_INTERPOLATION switch of later releases is not in 1.32"),
            self.deviation(f"ort-{k}-legacy-min-size", ORT_CPU, "open point", min_size,
                           "RoiAlign output_half_pixel forces a region under one pixel (empty and inverted ones "
                           "included) to size 1 (Detectron's 'malformed ROIs' of aligned=False)"),
            self.deviation(f"ort-{k}-empty-grid-zero", ORT_CPU, "open point", empty_grid,
                           "RoiAlign sampling_ratio 0, half_pixel, a region of size 0: ceil(0 / output) = 0 grid "
                           "points and an output of 0 (DirectML samples the region's one point)"),
            self.deviation(f"ort-{k}-inverted-adaptive", ORT_CPU, "limitation", inverted_adaptive,
                           "RoiAlign sampling_ratio 0, half_pixel, a region inverted on one axis only (x2 < x1 by at "
                           "least the output width, or y2 < y1 by the height, the other axis upright): the grid's "
                           "size, the product of the two counts ceil(size / output), is negative and the run fails "
                           "('SafeIntOnOverflow() Integer overflow'); inverted on both axes the counts' product is "
                           "positive, no sample is taken and the output is 0 (open point empty-grid)", refuses=True,
                           refusal=r"SafeIntOnOverflow|Integer overflow"),
            self.deviation(f"ort-{k}-nonfinite", ORT_CPU, "open point", nonfinite,
                           "RoiAlign with +-inf or NaN in the input: zero-weight corners are multiplied in (0 * inf = "
                           "NaN), and a sample outside the input reads element 0 of its channel with weight 0"),
            self.deviation(f"ort-{k}-max-nan-order", ORT_CPU, "bug", max_nan_order,
                           "RoiAlign mode 'max' with NaN among the weighted corners (a NaN input, or 0 * inf): "
                           "std::max keeps a NaN only as its first argument, so a NaN in a sample's first corner "
                           "(top left), or in the first sample, makes the output NaN while a NaN anywhere else is "
                           "skipped: neither IEEE propagation nor NaN-ignoring, the answer depends on where the NaN "
                           "lies"),
            self.deviation(f"ort-{k}-float32-count", ORT_CPU, "open point", float32_count,
                           "RoiAlign sampling_ratio 0: ceil(roi_size / output_size) from float32 arithmetic, where the "
                           "exact ratio of the FLOAT scale and coordinates is just above an integer (one sample fewer)"),
            self.deviation(f"ort-{k}-opset-22", ORT_CPU, "limitation", lambda c, x: c.opset >= 22,
                           "RoiAlign-22: no CPU kernel (NOT_IMPLEMENTED: 'Could not find an implementation for "
                           "RoiAlign(22)')"),
            # ---- onnx.reference
            self.deviation(f"oref-{k}-max-weighted-corners", ONNX_REFERENCE, "open point", max_mode,
                           "RoiAlign mode 'max' takes the maximum of the individually weighted corners of each sample"),
            self.deviation(f"oref-{k}-legacy-min-size", ONNX_REFERENCE, "open point", min_size,
                           "RoiAlign output_half_pixel forces a region under one pixel to size 1"),
            self.deviation(f"oref-{k}-empty-grid-zero", ONNX_REFERENCE, "open point", empty_grid,
                           "RoiAlign sampling_ratio 0 and a region of size 0 or below: no grid points, an output of 0"),
            self.deviation(f"oref-{k}-float32-count", ONNX_REFERENCE, "open point", float32_count,
                           "RoiAlign sampling_ratio 0: ceil(roi_size / output_size) from float32 arithmetic (numpy "
                           "float32 times the Python float scale)"),
            self.deviation(f"oref-{k}-opset-10-half-pixel", ONNX_REFERENCE, "bug", lambda c, x: c.opset < 16,
                           "RoiAlign-10 (which has no coordinate_transformation_mode: output_half_pixel) is run with "
                           "the half_pixel shift of RoiAlign-16's default"),
            self.deviation(f"oref-{k}-float16-overflow", ONNX_REFERENCE, "bug",
                           lambda c, x: c.dtype == "FLOAT16" and bool(self._overflow(c, x).any()),
                           "RoiAlign float16: where a sample is clamped to the last row and column its weights are "
                           "Python floats and numpy sums in float16: samples near 65504 overflow to inf where the "
                           "average is finite"),
            self.deviation(f"oref-{k}-max-nan-order", ONNX_REFERENCE, "bug", max_nan_order,
                           "RoiAlign mode 'max' with NaN among the weighted corners (a NaN input, or 0 * inf): "
                           "Python's max keeps a NaN only as its first argument, as ONNX Runtime's std::max does, so "
                           "a NaN in a sample's first corner (top left), or in the first sample, makes the output "
                           "NaN while a NaN anywhere else is skipped: neither IEEE propagation nor NaN-ignoring"),
            self.deviation(f"oref-{k}-nonfinite", ONNX_REFERENCE, "open point", nonfinite,
                           "RoiAlign with +-inf or NaN in the input: zero-weight corners are multiplied in (0 * inf = "
                           "NaN), and a sample outside the input reads element 0 of its channel with weight 0"),
        ]

    # -- mutants: the judge's power (onnx-dml-bench mutants) ----------------------------------------
    def mutants(self) -> tuple:
        """The half-pixel offset shifted, the sampling grid one step off, one sample more per bin,
        the regions read in the next batch; legitimate: the Direct3D float32 flush, every allowed reading."""
        return MUTANTS

    def witnesses(self, case, inputs, ref):
        """Concrete evaluations of the reference's reading (``witness_answers``): in the data type
        and wider, each interpolation form, coordinate rounding, order of the samples' sum and
        division."""
        return witness_answers(case, inputs)


STRUCT_HEAD = """
        const DML_TENSOR_DESC* InputTensor;
        const DML_TENSOR_DESC* ROITensor;
        const DML_TENSOR_DESC* BatchIndicesTensor;
        const DML_TENSOR_DESC* OutputTensor;
        DML_REDUCE_FUNCTION ReductionFunction;
        DML_INTERPOLATION_MODE InterpolationMode;
        FLOAT SpatialScaleX;
        FLOAT SpatialScaleY;"""

# ------------------------------------------------------------------------------------------------
# Mutants (onnx-dml-bench mutants): the reference under a modified reading or other batch indices
# ------------------------------------------------------------------------------------------------

SRC_HALF_PIXEL = ("RoiAlign's half-pixel offset: ONNX RoiAlign-16 added coordinate_transformation_mode because "
                  "opset 10's implementations shifted every sample by half a pixel (output_half_pixel vs half_pixel); "
                  "torchvision's roi_align aligned=False/True")
SRC_GRID = ("RoiAlign's sampling grid: samples at (i + 0.5) * bin / n from the bin's start (the DirectML page, "
            "Mask R-CNN's RoIAlign); a grid one step off, or one sample more per bin, reads other points")
SRC_RA_BATCH = "BatchIndicesTensor read with an offset (the next batch)"


def _reading(name: str, change):
    def make(s):
        d = s.case.desc
        rd = reading(d)
        ch = change(rd)
        if ch is None:
            return
        y = s.op.compute(s.case, s.inputs, replace(rd, **ch)).y.astype(DML_TO_NUMPY[d.DataType])
        yield name, {"Y": y}
    return make


def _more_samples(rd):
    if rd.adaptive:
        return {"min_samples": 2}
    if rd.min_samples == rd.max_samples and rd.max_samples < UINT_MAX:
        return {"min_samples": rd.min_samples + 1, "max_samples": rd.max_samples + 1}
    return None


def _next_batch(s):
    n = s.case.desc.InputSizes[0]
    if n < 2:
        return
    b = np.asarray(s.inputs["batch_indices"])
    moved = {**s.inputs, "batch_indices": ((b.astype(np.int64) + 1) % n).astype(b.dtype)}
    yield "", {"Y": s.op.compute(s.case, moved).y.astype(DML_TO_NUMPY[s.case.desc.DataType])}


MUTANTS = (
    M.MutantClass("half-pixel-shift", SRC_HALF_PIXEL,
                  _reading("offset", lambda rd: {"input_offset": rd.input_offset - 0.5 if rd.input_offset else 0.5}),
                  text="the input pixel offset half a pixel off"),
    M.MutantClass("sampling-grid-shift", SRC_GRID, _reading("one-step", lambda rd: {"output_offset": rd.output_offset - 1.0}),
                  text="every sample one step later along both axes"),
    M.MutantClass("samples-per-bin+1", SRC_GRID, _reading("count", _more_samples),
                  text="one sample more per bin and axis (at least two where adaptive)"),
    M.MutantClass("roi-next-batch", SRC_RA_BATCH, _next_batch, text="every region read in the next batch"),
    M.D3D_FLUSH,
    M.alternatives_class(),
)


# ------------------------------------------------------------------------------------------------
# Witnesses (onnx-dml-bench mutants): concrete evaluations the reference's reading allows
# ------------------------------------------------------------------------------------------------

#: how a witness interpolates a sample in its type: the weighted corners (the weights multiplied
#: first) added in Detectron's order, in the reverse order or pairwise, the weights multiplied in
#: one after the other (wy * (wx * v)), and a + t (b - a) along X then Y, or along Y then X
#: (DirectML's answer of an overflowing difference)
WITNESS_FORMS = ("weighted", "weighted-reversed", "weighted-pairwise", "nested", "lerp-xy", "lerp-yx")
#: how it sums the samples of an average (any order is allowed): one after another in scan order,
#: pairwise, and the positive and the negative samples each in turn, then together
WITNESS_SUMS = ("scan", "pairwise", "by-sign")


def _witness_axis(rois, col: int, scale: float, out: int, n: int, length: int, rd: Reading, coords: str,
                  float_type):
    """(lo, hi, frac, valid) of the samples of one axis: coordinates exact, rounded once to FLOAT
    (``float_type``: float32, or float64 for FLOAT64 data), computed in float32 by the page's
    formulas in their order, or in float64 (``coords``: "exact" | "float32" | "float64")."""
    if coords == "float32":
        f = np.float32
        start = rois[:, col].astype(f) * f(scale)
        size = rois[:, col + 2].astype(f) * f(scale) - start
        if rd.min_size is not None:
            size = np.maximum(size, f(rd.min_size))
        big_n = out * n
        step = size / f(max(big_n - 1, 1) if rd.align else big_n)
        k = np.arange(big_n, dtype=f)[None, :]
        t = ((k - f(rd.output_offset)) * step[:, None] + start[:, None] - f(rd.input_offset)).astype(np.float64)
    else:
        start, size = region(rois, col, scale, out, rd)
        t = axis_points(start, size, out, n, length, rd, 0.0).t
        t = t if coords == "float64" else t.astype(float_type).astype(np.float64)
    if rd.align and rd.extent == "corners":
        valid = (t >= 0) & (t <= length - 1)
    elif rd.edge == "inclusive":
        valid = (t >= -1) & (t <= length)
    else:
        valid = (t > -1) & (t < length)
    tc = np.clip(t, 0.0, length - 1.0)
    lo = np.floor(tc).astype(np.int64)
    top = lo >= length - 1
    lo = np.where(top, length - 1, lo)
    return lo, np.where(top, length - 1, lo + 1), np.where(top, 0.0, tc - lo), valid


def _pairwise(v: np.ndarray) -> np.ndarray:
    """Along the last axis: a pairwise tree of additions in v's type."""
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = np.concatenate([v, np.zeros((*v.shape[:-1], 1), v.dtype)], axis=-1)
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def _witness_samples(x, batch, geo, form: str, t_type, oob: float):
    """The samples of one group of regions (``geo``: their indices, counts and both axes'
    (lo, hi, frac, valid)), each interpolated in ``form`` with every operation rounded once to
    ``t_type``, the weights in FLOAT (double for FLOAT64 data): (R, C, OH, OW, samples)."""
    mine, cy, cx, (yl, yh, fy, vy), (xl, xh, fx, vx), oh, ow = geo
    t_ = np.dtype(t_type).type
    w_ = np.float64 if x.dtype == np.float64 else np.float32
    xcl = x.transpose(0, 2, 3, 1)
    bb = batch[mine][:, None, None]
    a, b, cc, dd = (xcl[bb, ya[:, :, None], xb[:, None, :]].astype(t_) for ya, xb in
                    ((yl, xl), (yl, xh), (yh, xl), (yh, xh)))           # (R, Ny, Nx, C)
    ty, tx = fy.astype(w_)[:, :, None, None], fx.astype(w_)[:, None, :, None]
    uy, ux = w_(1) - ty, w_(1) - tx

    def mul(p, q):                    # exact in float64 (float16 and float32 operands), rounded once
        return (np.asarray(p, np.float64) * q).astype(t_)

    def add(p, q):
        return (p.astype(np.float64) + q).astype(t_)

    def sub(p, q):
        return (p.astype(np.float64) - q).astype(t_)

    with np.errstate(all="ignore"):
        if form.startswith("weighted"):
            t1, t2, t3, t4 = mul(uy * ux, a), mul(uy * tx, b), mul(ty * ux, cc), mul(ty * tx, dd)
            v = (add(add(add(t1, t2), t3), t4) if form == "weighted" else
                 add(add(add(t4, t3), t2), t1) if form == "weighted-reversed" else add(add(t1, t2), add(t3, t4)))
        elif form == "nested":
            v = add(add(add(mul(uy, mul(ux, a)), mul(uy, mul(tx, b))), mul(ty, mul(ux, cc))), mul(ty, mul(tx, dd)))
        elif form == "lerp-xy":
            top, bot = add(a, mul(tx, sub(b, a))), add(cc, mul(tx, sub(dd, cc)))
            v = add(top, mul(ty, sub(bot, top)))
        else:
            left, right = add(a, mul(ty, sub(cc, a))), add(b, mul(ty, sub(dd, b)))
            v = add(left, mul(tx, sub(right, left)))
        v = np.where((vy[:, :, None] & vx[:, None, :])[..., None], v, t_(oob)).astype(t_)
    r, c = len(mine), x.shape[1]
    return v.reshape(r, oh, cy, ow, cx, c).transpose(0, 5, 1, 3, 2, 4).reshape(r, c, oh, ow, cy * cx)


def _witness_reduce(blocks: np.ndarray, mode: str, reduce: str) -> np.ndarray:
    """The samples (last axis) reduced in their type: for AVERAGE a sum of ``WITNESS_SUMS`` divided
    by the count ("/") or multiplied by its reciprocal ("*"), as "<sum><op>"; for MAX "max" (NaN
    propagated) or "fmax" (NaN ignored)."""
    t_ = blocks.dtype.type
    n = blocks.shape[-1]
    with np.errstate(all="ignore"):
        if mode == "MAX":
            return (np.maximum if reduce == "max" else np.fmax).reduce(blocks, axis=-1)
        how, op = reduce[:-1], reduce[-1]
        if how == "scan":
            s = np.add.accumulate(blocks, axis=-1)[..., -1]          # one after another, in the type
        elif how == "pairwise":
            s = _pairwise(blocks)
        else:
            neg = blocks < 0
            s = _pairwise(np.where(neg, t_(0), blocks)) + _pairwise(np.where(neg, blocks, t_(0)))
        return s / t_(n) if op == "/" else s * t_(1.0 / n)


def witness_answers(case, inputs):
    """The witnesses of a case (``Operator.witnesses``), computed when asked, each answer once (the
    first evaluation that gives it names it): the reference's reading evaluated with every
    operation rounded to the data type (and, for float16 and float32, to each wider type, the
    answer rounded once), the samples in every form of ``WITNESS_FORMS``, their coordinates exact
    and rounded to FLOAT, computed in float32 by the page's formulas, or exact (``_witness_axis``),
    reduced by every sum of ``WITNESS_SUMS`` and both divisions (MAX: NaN propagated or ignored).
    Linear interpolation only."""
    d = case.desc
    if d.InterpolationMode != "LINEAR":
        return
    rd = reading(d)
    x, rois = inputs["X"], np.asarray(inputs["rois"])
    batch = np.asarray(inputs["batch_indices"]).astype(np.int64)
    _, c, h, w = x.shape
    oh, ow = d.OutputSize
    dt = x.dtype.type
    types = {np.float16: (dt, np.float32, np.float64), np.float32: (dt, np.float64)}.get(dt, (dt,))
    reduces = ("max", "fmax") if d.ReductionFunction == "MAX" else tuple(f"{s}{o}" for o in "/*" for s in WITNESS_SUMS)
    ny, nx = counts(rois, 1, rd.scale_y, oh, rd), counts(rois, 0, rd.scale_x, ow, rd)
    groups = [(cy, cx, np.flatnonzero((ny == cy) & (nx == cx))) for cy, cx in sorted(set(zip(ny.tolist(), nx.tolist())))
              if cy and cx]
    float_type = np.float64 if dt is np.float64 else np.float32
    seen = set()
    for co in ("exact",) if dt is np.float64 else ("exact", "float32", "float64"):
        geos = [(mine, cy, cx, _witness_axis(rois[mine], 1, rd.scale_y, oh, cy, h, rd, co, float_type),
                 _witness_axis(rois[mine], 0, rd.scale_x, ow, cx, w, rd, co, float_type), oh, ow)
                for cy, cx, mine in groups]
        for t_type in types:
            for form in WITNESS_FORMS:
                samples = [_witness_samples(x, batch, g, form, t_type, rd.oob) for g in geos]
                for red in reduces:
                    y = np.zeros((len(rois), c, oh, ow), x.dtype)
                    for g, blocks in zip(geos, samples):
                        with np.errstate(over="ignore", invalid="ignore"):      # rounded once: it may overflow
                            y[g[0]] = _witness_reduce(blocks, d.ReductionFunction, red).astype(x.dtype)
                    key = y.tobytes()
                    if key in seen:
                        continue
                    seen.add(key)
                    how = red.replace("/", "-div").replace("*", "-rcp")
                    yield Alternative(f"{form}-{how}-{np.dtype(t_type).name}-{co}-coordinates", {"Y": y})



class RoiAlign(_RoiAlign):
    key = "roi_align"
    dml_name = "DML_ROI_ALIGN_OPERATOR_DESC"
    dml_type = "DML_OPERATOR_ROI_ALIGN"
    directml_h = DirectmlH(STRUCT_HEAD + """
        FLOAT OutOfBoundsInputValue;
        UINT MinimumSamplesPerOutput;
        UINT MaximumSamplesPerOutput;""", {"DML_OPERATOR_TYPE": {"DML_OPERATOR_ROI_ALIGN": 139}, **NUMBERS})
    short = "ra"
    order = 60
    Desc = RoiAlignDesc
    types_by_level = TYPES_BY_LEVEL
    index_types_by_level = INDEX_TYPES_BY_LEVEL
    first_level = "3.0"

    def layout(self, desc):
        return self._tensors(desc) + [Float("OutOfBoundsInputValue", desc.OutOfBoundsInputValue),
                                      Uint("MinimumSamplesPerOutput", desc.MinimumSamplesPerOutput),
                                      Uint("MaximumSamplesPerOutput", desc.MaximumSamplesPerOutput)]

    def sweep(self, profile: str) -> list[Case]:
        return _sweep(self, profile)

    def curated(self) -> list[Curated]:
        d = RoiAlignDesc(InputSizes=(2, 3, 10, 12), RoiSizes=(4, 4), DataType="FLOAT32", OutputSize=(3, 3),
                         MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2, SpatialScaleX=0.5, SpatialScaleY=0.5)
        return [Curated(self.make_case(d, {}, "random"), "DML_ROI_ALIGN (feature level 3.0) as RoiAlign-16 half_pixel, "
                                                         "sampling_ratio 2, batch 2.")]


class RoiAlign1(_RoiAlign):
    key = "roi_align1"
    dml_name = "DML_ROI_ALIGN1_OPERATOR_DESC"
    dml_type = "DML_OPERATOR_ROI_ALIGN1"
    directml_h = DirectmlH(STRUCT_HEAD + """
        FLOAT InputPixelOffset;
        FLOAT OutputPixelOffset;
        FLOAT OutOfBoundsInputValue;
        UINT MinimumSamplesPerOutput;
        UINT MaximumSamplesPerOutput;
        BOOL AlignRegionsToCorners;""", {"DML_OPERATOR_TYPE": {"DML_OPERATOR_ROI_ALIGN1": 149}, **NUMBERS})
    short = "ra1"
    order = 61
    Desc = RoiAlign1Desc
    types_by_level = {"4.0": TYPES_BY_LEVEL["3.0"]}
    index_types_by_level = {"4.0": ("UINT32",), "5.0": ("UINT32", "UINT64")}
    first_level = "4.0"

    def layout(self, desc):
        return self._tensors(desc) + [Float("InputPixelOffset", desc.InputPixelOffset),
                                      Float("OutputPixelOffset", desc.OutputPixelOffset),
                                      Float("OutOfBoundsInputValue", desc.OutOfBoundsInputValue),
                                      Uint("MinimumSamplesPerOutput", desc.MinimumSamplesPerOutput),
                                      Uint("MaximumSamplesPerOutput", desc.MaximumSamplesPerOutput),
                                      Bool("AlignRegionsToCorners", desc.AlignRegionsToCorners)]

    def not_expressible(self):
        return super().not_expressible() + [
            NotExpressible(self.key, "InputPixelOffset other than 0 / 0.5, OutputPixelOffset other than -0.5",
                           "ONNX's coordinate_transformation_mode shifts the input by 0.5 or not at all, the output "
                           "grid is pixel-centred", None, "4.0"),
            NotExpressible(self.key, "AlignRegionsToCorners TRUE", "ONNX RoiAlign has no such attribute", None, "4.0"),
            NotExpressible(self.key, "InputPixelOffset 0.5 before opset 16", "RoiAlign-10 has no half_pixel mode",
                           None, "4.0")]

    def sweep(self, profile: str) -> list[Case]:
        return _sweep(self, profile)

    def curated(self) -> list[Curated]:
        def ra(fam, note, opset=None, **fields):
            base = dict(InputSizes=(2, 3, 10, 12), RoiSizes=(4, 4), DataType="FLOAT32", OutputSize=(3, 3),
                        MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2, SpatialScaleX=0.5, SpatialScaleY=0.5)
            return Curated(self.make_case(RoiAlign1Desc(**{**base, **fields}), {}, fam, opset), note)

        adaptive = dict(MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=UINT_MAX)
        return [
            ra("random", "RoiAlign-16 half_pixel (torchvision aligned=True), avg, sampling_ratio 2, batch 2."),
            ra("random", "RoiAlign-16 output_half_pixel (aligned=False, torchvision's R-CNNs), avg.", InputPixelOffset=0.0),
            ra("random", "RoiAlign-10 (output_half_pixel only).", 10, InputPixelOffset=0.0),
            ra("random", "Adaptive sampling (sampling_ratio 0): ceil(roi_size / output_size) points.", **adaptive),
            ra("roi-border", "Regions on and past the borders: clamp zones and samples outside (0).", **adaptive),
            ra("random", "float16.", DataType="FLOAT16"),
            ra("random", "double (ONNX only: no DirectML feature level lists FLOAT64).", DataType="FLOAT64"),
            ra("random", "mode 'max': its reading is an open point (max of samples vs of weighted corners): left out "
                         "of the committed set unless exported with include_open.", ReductionFunction="MAX"),
        ]


# ------------------------------------------------------------------------------------------------
# Sweeps
# ------------------------------------------------------------------------------------------------

ADAPTIVE = (1, UINT_MAX)
#: expressible geometries: (InputSizes, NumROIs, OutputSize, ReductionFunction, (Min, Max) samples,
#: spatial scale, InputPixelOffset)
GRAPH_GEOMETRIES = [
    ((1, 1, 8, 8), 3, (2, 2), "AVERAGE", (2, 2), 1.0, 0.5),
    ((2, 3, 10, 12), 4, (3, 3), "AVERAGE", ADAPTIVE, 0.5, 0.5),
    ((1, 2, 16, 16), 3, (2, 4), "MAX", (2, 2), 0.25, 0.5),
    ((2, 2, 7, 9), 5, (1, 1), "AVERAGE", ADAPTIVE, 1.0, 0.0),
    ((1, 4, 12, 10), 3, (4, 3), "MAX", ADAPTIVE, 0.0625, 0.0),
    ((3, 1, 6, 6), 6, (7, 7), "AVERAGE", (1, 1), 1.0, 0.5),
    ((1, 2, 9, 9), 2, (3, 2), "MAX", (3, 3), 2.0, 0.0),
    ((1, 3, 13, 17), 4, (7, 7), "AVERAGE", (2, 2), 0.25, 0.0),
    ((1, 3, 13, 17), 4, (7, 7), "AVERAGE", (2, 2), 0.25, 0.5),
    ((2, 2, 11, 7), 4, (2, 3), "MAX", ADAPTIVE, 0.5, 0.5),
    ((1, 2, 12, 15), 5, (2, 3), "AVERAGE", ADAPTIVE, 0.3, 0.0),     # a scale FLOAT does not hold exactly
]
#: what only the direct lane runs (ROI_ALIGN1's fields no graph can request), on geometry 0 and 1:
#: descriptor field changes
DML_ONLY = [
    dict(InterpolationMode="NEAREST_NEIGHBOR"),
    dict(InterpolationMode="NEAREST_NEIGHBOR", ReductionFunction="MAX"),
    dict(InputPixelOffset=0.0, OutputPixelOffset=0.0),
    dict(InputPixelOffset=0.25, OutputPixelOffset=-0.25),
    dict(AlignRegionsToCorners=True),
    dict(AlignRegionsToCorners=True, OutputPixelOffset=0.0, InputPixelOffset=0.0),
    dict(SpatialScaleX=0.5, SpatialScaleY=0.25),
    dict(OutOfBoundsInputValue=7.5),
    dict(MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=4),
    dict(MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=3),
]


def _desc(op, geo, dtype, **fields):
    sizes, n, out, mode, (lo, hi), scale, ipo = geo
    base = dict(InputSizes=sizes, RoiSizes=(n, 4), DataType=dtype, OutputSize=out, ReductionFunction=mode,
                MinimumSamplesPerOutput=lo, MaximumSamplesPerOutput=hi, SpatialScaleX=scale, SpatialScaleY=scale)
    if op.Desc is RoiAlign1Desc:
        base["InputPixelOffset"] = ipo
    elif ipo != 0.5:
        return None
    d = op.Desc(**{**base, **fields})
    try:
        op.validate(d)
    except DescriptorError:
        return None
    return d


def _sweep(op, profile: str) -> list[Case]:
    """Per geometry, float32 and float16, a rotation of the input and RoI families (the whole
    rotation in 'full'; real-valued inputs beside it); RoiAlign1 adds what only DirectML can run,
    the other opsets of the expressible geometries, float64 graphs (every family), UINT64 batch
    indices at feature level 5.0 and the tensor shapes ONNX does not write; 'full' adds a grid of
    sizes. 'smoke': one case per geometry and a few of the rest."""
    check_profile(profile)
    one = op.Desc is RoiAlign1Desc
    smoke = profile == "smoke"
    n_fam = {"smoke": 1, "default": 5, "full": 99}[profile]
    geos = list(GRAPH_GEOMETRIES)
    if profile == "full":
        geos += [((2, 4, 20, 24), 6, out, mode, smp, sc, ipo) for out in ((2, 2), (5, 5), (7, 7))
                 for mode in ("AVERAGE", "MAX") for smp in ((2, 2), ADAPTIVE) for sc in (1.0, 0.125) for ipo in (0.0, 0.5)]
    cases = []
    for gi, geo in enumerate(geos):
        for dt in (("FLOAT32", "FLOAT16")[gi % 2],) if smoke else ("FLOAT32", "FLOAT16"):
            d = _desc(op, geo, dt)
            if d is None:
                continue
            fams = ["random"] if smoke and gi % 3 == 0 else rotate(op.families(dt), gi * 3 + (dt == "FLOAT16"), n_fam)
            if not smoke:
                fams += [f for f in ("ties",) if d.ReductionFunction == "MAX" and f not in fams]
                fams += ["real"] if d.ReductionFunction == "AVERAGE" else []
            for fam in fams:
                cases.append(op.make_case(d, {}, fam))
    if one:
        for gi, change in enumerate(DML_ONLY):
            if smoke and gi % 3:
                continue
            for geo in GRAPH_GEOMETRIES[:1] if smoke else GRAPH_GEOMETRIES[:2]:
                for dt in ("FLOAT32",) if smoke else ("FLOAT32", "FLOAT16"):
                    d = _desc(op, geo, dt, **change)
                    if d is None:
                        continue
                    for fam in rotate(op.families(dt), gi * 5 + (dt == "FLOAT16"), 1 if smoke else 2):
                        cases.append(op.make_case(d, {}, fam))
        for gi, geo in enumerate(GRAPH_GEOMETRIES):
            d = _desc(op, geo, "FLOAT32")
            fam = "random" if smoke else rotate(op.families("FLOAT32"), gi, 1)[0]
            if smoke and gi not in (3, 6):
                continue
            if d.InputPixelOffset == 0.0:
                cases.append(op.make_case(d, {}, fam, opset=10))
            if gi % 3 == 0:
                cases.append(op.make_case(d, {}, fam, opset=22))
            if gi % 3 == 1:
                cases.append(op.make_case(d.replace(BatchIndicesDataType="UINT64", FeatureLevel="5.0"), {}, fam))
        # float64 (ONNX's double): every family, over the expressible geometries
        fams = op.families("FLOAT64")[:1] if smoke else op.families("FLOAT64")
        for fi, fam in enumerate(fams):
            d = _desc(op, GRAPH_GEOMETRIES[(fi * 3) % len(GRAPH_GEOMETRIES)], "FLOAT64")
            cases.append(op.make_case(d, {}, fam))
        if not smoke:
            d = _desc(op, GRAPH_GEOMETRIES[1], "FLOAT32")
            cases.append(op.make_case(d.replace(RoiSizes=(1, 1, d.num_rois, 4), BatchIndicesSizes=(1, 1, 1, d.num_rois)),
                                      {}, "random"))
            cases.append(op.make_case(d.replace(RoiSizes=(1, d.num_rois, 4), BatchIndicesSizes=(1, d.num_rois)), {},
                                      "roi-border"))
    return cases


# ------------------------------------------------------------------------------------------------
# Real sizes: the census's RoiAlign layers (torchvision's MultiScaleRoIAlign) and detection sizes
# ------------------------------------------------------------------------------------------------

def census_layers() -> list[dict]:
    """The census's RoiAlign layers (data/census/distinct.json): input shape, RoI count, output
    size, spatial scale, sampling ratio, aligned, and the models that use them."""
    data = json.loads((Path(__file__).resolve().parents[1] / "data" / "census" / "distinct.json").read_text())
    configs = {c["id"]: c for c in data["configs"] if c["kind"] == "roi_align"}
    out = []
    for layer in data["layers"]:
        cfg = configs.get(layer["config"])
        if cfg is None:
            continue
        a = cfg["attrs"]
        out.append({"layer": layer["id"], "input": tuple(layer["input"][0]), "rois": int(layer["input"][1][0]),
                    "output": tuple(a["output_size"]), "spatial_scale": float(a["spatial_scale"]),
                    "sampling_ratio": int(a["sampling_ratio"]), "aligned": bool(a["aligned"]),
                    "models": sorted(layer.get("models", []))})
    return out


def network_cases(op=None) -> list[Case]:
    """Detection sizes for the ``networks`` profile: every census RoiAlign layer with RoIs (as
    torchvision exports it, output_half_pixel, and as aligned=True would, half_pixel), float32 and
    float16, and the largest FPN level at 1000 RoIs (the detections cap) at 7x7 and 14x14."""
    op = op or OP1
    seen, out = set(), []
    rows = [(x["input"], x["rois"], x["output"], x["spatial_scale"], x["sampling_ratio"]) for x in census_layers()
            if x["rois"] > 0]
    rows += [((1, 256, 200, 272), 1000, (7, 7), 0.25, 2), ((1, 256, 200, 272), 1000, (14, 14), 0.25, 2)]
    for sizes, n, outs, scale, s in rows:
        for ipo in (0.0, 0.5):
            for dt in ("FLOAT32", "FLOAT16"):
                d = RoiAlign1Desc(InputSizes=sizes, RoiSizes=(n, 4), DataType=dt, OutputSize=outs, SpatialScaleX=scale,
                                  SpatialScaleY=scale, MinimumSamplesPerOutput=s, MaximumSamplesPerOutput=s,
                                  InputPixelOffset=ipo)
                if d in seen:
                    continue
                seen.add(d)
                out.append(op.make_case(d, {}, "roi-detection"))
    return out


OP = RoiAlign()
OP1 = RoiAlign1()
OPERATORS = (OP, OP1)
