"""RoiAlign's descriptors (DML_ROI_ALIGN_OPERATOR_DESC, feature level 3.0, and
DML_ROI_ALIGN1_OPERATOR_DESC, 4.0), their data types and enums, and the regions of the RoI families
(the input data of a case)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dtypes import DML_TO_NUMPY
from ...inputs import rng_for
from ..base import UINT_MAX, Descriptor

TYPES_BY_LEVEL = {"3.0": ("FLOAT32", "FLOAT16")}
#: BatchIndicesTensor's data types (both pages): UINT32, and UINT64 from feature level 5.0
INDEX_TYPES_BY_LEVEL = {"3.0": ("UINT32",), "5.0": ("UINT32", "UINT64")}
#: ONNX RoiAlign's double: no DirectML feature level lists it (see the package text)
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
