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

The operator is a package (each file within 800 lines), in layers (``pyproject.toml``: "ops/roi_align
in layers"):

- ``operator.py``: the two operators (``RoiAlign``, ``RoiAlign1``): validation, the ONNX graph, the
  data, the answers, identity, real sizes; over
- ``readings.py`` (the open points and their readings, ``alternatives``, the bound of each reading),
  ``deviations.py`` (ONNX Runtime's CPU EP and onnx.reference), ``mutants.py`` (its bug classes),
  ``witnesses.py`` (concrete evaluations of its reading), ``sweep.py`` (the profiles' cases, the
  census's layers); over
- ``reference.py``: the NumPy reference, one reading at a time, with its tolerance and the non-finite
  answers of an overflow; over
- ``bounds.py``: what the tolerance and the overflow need of the input around each sample; over
- ``descriptors.py``: the descriptors, their types and enums, and the regions of the RoI families.
"""
from __future__ import annotations

from .descriptors import (EXTRA_ROI_FAMILIES, INTERPOLATIONS, REDUCTIONS, ROI_FAMILIES, RoiAlign1Desc, RoiAlignDesc,
                          make_rois)
from .operator import OP, OP1, OPERATORS, RoiAlign, RoiAlign1, network_cases
from .reference import Axis, Reading, Result, axis_points, counts, reading, region, roi_align
from .sweep import census_layers
from .witnesses import witness_answers

__all__ = ["Axis", "EXTRA_ROI_FAMILIES", "INTERPOLATIONS", "OP", "OP1", "OPERATORS", "REDUCTIONS", "ROI_FAMILIES",
           "Reading", "Result", "RoiAlign", "RoiAlign1", "RoiAlign1Desc", "RoiAlignDesc", "axis_points",
           "census_layers", "counts", "make_rois", "network_cases", "reading", "region", "roi_align",
           "witness_answers"]
