"""DML_ROI_POOLING_OPERATOR_DESC: max pooling over regions of interest (ONNX MaxRoiPool).

DirectML semantics (page in shared/seeds, machine-translated from Russian):
    x1 = round(RoiX1 * SpatialScale), likewise x2, y1, y2     (corners are inclusive)
    RegionHeight = y2 - y1 + 1, RegionWidth = x2 - x1 + 1
    StartY = (OutputIndices.Y * RegionHeight) / PooledSize.Height + y1        (integer division)
    EndY   = ((OutputIndices.Y + 1) * RegionHeight + PooledSize.Height - 1) / PooledSize.Height + y1
    (likewise X); coordinates are clamped to the input; EndY/EndX are exclusive; an empty bin gives 0.
- ROITensor is {1, 1, NumROIs, 5}, rows (BatchID, x1, y1, x2, y2) with x2 >= x1, y2 >= y1; ONNX's
  rois are [NumROIs, 5]: the bench builds the [NumROIs, 5] form;
- FLOAT32 and FLOAT16 (feature level 1.0); ROITensor has the input's data type.
Open points: how round() treats halves (the reference rounds half away from zero, as C's round();
numpy.round would round half to even), NaN (the reference propagates NaN) and which zero is the
maximum of a bin where -0.0 and +0.0 tie (the reference keeps the last element met, row-major).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import helper

from ..dtypes import DML_TO_NUMPY
from ..inputs import families_for, fill, rng_for
from . import _limits
from . import _mutants as M
from . import _pool_deviations as PD
from . import _pooling as P
from ._sweep import check_profile, rotate, thin
from ._struct import DirectmlH, Float, Input, Output, Size2D
from .base import (ONNX_REFERENCE, ORT_CPU, Alternative, Curated, check_input_sizes, check_uint, Descriptor, DescriptorError, Deviation,
                   Fragment, NotExpressible, Operator, check_type_at_level, compact, describe_case, schema_allows,
                   signed_zeros, tensor_info)

TYPES_BY_LEVEL = {"1.0": ("FLOAT32", "FLOAT16")}
ROI_FAMILIES = ("roi-clamped", "roi-halves", "roi-degenerate")
#: RoI families outside the sweeps' rotation: 'roi-whole', every RoI the whole input (one bin of
#: H x W elements with PooledSize 1x1: the ``limits`` profile's long windows)
EXTRA_ROI_FAMILIES = ("roi-whole",)


@dataclass(frozen=True)
class RoiPoolingDesc(Descriptor):
    InputSizes: tuple[int, ...]       # {BatchCount, ChannelCount, InputHeight, InputWidth}
    RoiSizes: tuple[int, ...]         # ROITensor sizes: {1, 1, NumROIs, 5} (or [NumROIs, 5])
    DataType: str
    SpatialScale: float
    PooledSize: tuple[int, ...]       # DML_SIZE_2D as (Height, Width); case files may write {Width, Height}
    FeatureLevel: str = "1.0"

    @property
    def num_rois(self) -> int:
        return self.RoiSizes[-2] if len(self.RoiSizes) >= 2 else 0

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["PooledSize"] = {"Height": self.PooledSize[0], "Width": self.PooledSize[1]} if len(self.PooledSize) == 2 else list(self.PooledSize)
        return d

    @classmethod
    def from_dict(cls, data):
        if isinstance(data, dict) and isinstance(data.get("PooledSize"), dict):
            ps = data["PooledSize"]
            if set(ps) != {"Height", "Width"}:
                raise DescriptorError("PooledSize", f"must have exactly Height and Width, got {sorted(ps)}")
            data = {**data, "PooledSize": [ps["Height"], ps["Width"]]}
        return super().from_dict(data)


class RoiPooling(Operator):
    key = "roi_pooling"
    dml_name = "DML_ROI_POOLING_OPERATOR_DESC"
    dml_type = "DML_OPERATOR_ROI_POOLING"
    directml_h = DirectmlH("""
        const DML_TENSOR_DESC* InputTensor;
        const DML_TENSOR_DESC* ROITensor;
        const DML_TENSOR_DESC* OutputTensor;
        FLOAT SpatialScale;
        DML_SIZE_2D PooledSize;""", {"DML_OPERATOR_TYPE": {"DML_OPERATOR_ROI_POOLING": 59}})
    short = "roi"
    order = 30
    onnx_ops = ("MaxRoiPool",)
    Desc = RoiPoolingDesc
    types_by_level = TYPES_BY_LEVEL
    default_opset = 1
    opsets = (1, 22)
    input_names = ("X", "rois")
    open_point_texts = {
        "roi-half-rounding": "The page says round(coord * SpatialScale) without saying how halves round. "
                             "Allowed: half away from zero (C round(): the reference), half to even, half up, "
                             "half down, half toward zero.",
        "nan": "The page does not say how NaN takes part in the maximum. Allowed: NaN propagates (the "
               "reference) or NaN is ignored (the maximum of the bin's numbers, as IEEE maxNum).",
        "signed-zero": "The page does not say which zero is the maximum when -0.0 and +0.0 tie in a bin. "
                       "Allowed: either sign (the reference keeps the last element met, row-major).",
    }

    def validate(self, desc) -> None:
        check_input_sizes(desc.InputSizes, (4,), " {N, C, H, W}")
        rs = tuple(desc.RoiSizes)
        if not ((len(rs) == 4 and rs[:2] == (1, 1) and rs[3] == 5) or (len(rs) == 2 and rs[1] == 5)):
            raise DescriptorError("ROITensor.Sizes", f"must be {{1, 1, NumROIs, 5}} (or [NumROIs, 5]), got {list(rs)}")
        if desc.num_rois < 1:
            raise DescriptorError("ROITensor.Sizes", "NumROIs must be >= 1")
        if len(desc.PooledSize) != 2:
            raise DescriptorError("PooledSize", f"must be (Height, Width), got {list(desc.PooledSize)}")
        if any(p < 1 for p in desc.PooledSize):
            raise DescriptorError("PooledSize", f"Height and Width must be >= 1, got {list(desc.PooledSize)}")
        check_uint("PooledSize", desc.PooledSize)
        check_uint("ROITensor.Sizes", rs)
        if not math.isfinite(desc.SpatialScale):
            raise DescriptorError("SpatialScale", f"must be a finite FLOAT, got {desc.SpatialScale}")
        check_type_at_level(desc, "DataType", desc.DataType, self.types_by_level)

    def output_shape(self, desc):
        return (desc.num_rois, desc.InputSizes[1], desc.PooledSize[0], desc.PooledSize[1])

    def input_shapes(self, desc):
        return {"X": tuple(desc.InputSizes), "rois": (desc.num_rois, 5)}

    def layout(self, desc):
        rois = tuple(desc.RoiSizes)
        return [Input("InputTensor", "X", desc.InputSizes, desc.DataType),
                Input("ROITensor", "rois", (1, 1, *rois) if len(rois) == 2 else rois, desc.DataType, as_written=rois),
                Output("OutputTensor", "Y", self.output_shape(desc), desc.DataType),
                Float("SpatialScale", desc.SpatialScale),
                Size2D("PooledSize", width=desc.PooledSize[1], height=desc.PooledSize[0])]

    def expressible(self, case):
        return schema_allows("MaxRoiPool", case.opset, case.desc.DataType)

    def build(self, case, prefix):
        d = case.desc
        x, r, y = prefix + "X", prefix + "rois", prefix + "Y"
        node = helper.make_node("MaxRoiPool", [x, r], [y], name=prefix + "MaxRoiPool",
                                pooled_shape=list(d.PooledSize), spatial_scale=float(d.SpatialScale))
        return Fragment(inputs=[tensor_info(x, d.DataType, d.InputSizes), tensor_info(r, d.DataType, (d.num_rois, 5))],
                        outputs=[tensor_info(y, d.DataType, self.output_shape(d))], nodes=[node],
                        input_names={"X": x, "rois": r}, output_names={"Y": y})

    def families(self, dml_type):
        return families_for(dml_type) + ROI_FAMILIES

    def accepted_families(self, dml_type):
        return super().accepted_families(dml_type) + EXTRA_ROI_FAMILIES

    def make_inputs(self, case):
        d = case.desc
        x_family = "random" if case.family in ROI_FAMILIES + EXTRA_ROI_FAMILIES else case.family
        x = fill(d.InputSizes, d.DataType, x_family, case.seed, "X")
        return {"X": x, "rois": make_rois(d, case.family, case.seed)}

    def reference(self, case, inputs):
        problem = self.input_problem(case, inputs)
        if problem:
            raise ValueError(f"invalid rois: {problem}")
        return {"Y": roi_pool(inputs["X"], inputs["rois"], case.desc)}

    def input_problem(self, case, inputs):
        """The page's preconditions on ROITensor rows [BatchID, x1, y1, x2, y2]: a batch index of
        the input, finite corners, x2 >= x1 and y2 >= y1."""
        rois = np.asarray(inputs["rois"], dtype=np.float64)
        n = case.desc.InputSizes[0]
        for i, (b, x1, y1, x2, y2) in enumerate(rois):
            if not (np.isfinite(b) and b == np.trunc(b) and 0 <= b < n):
                return f"roi {i}: batch index {b:g} is not one of the input's {n} batches"
            if not np.isfinite([x1, y1, x2, y2]).all():
                return f"roi {i}: a corner is not finite"
            if x2 < x1 or y2 < y1:
                return f"roi {i}: corners ({x1:g}, {y1:g}) - ({x2:g}, {y2:g}) break x2 >= x1, y2 >= y1"
        return None

    def alternatives(self, case, inputs, ref, points):
        roundings = ROUNDINGS if "roi-half-rounding" in points else {"half-away": round_half_away}
        nans = (False, True) if "nan" in points else (False,)
        zero_signs = (False, True) if "signed-zero" in points else (False,)
        out = []
        for rname, rounder in roundings.items():
            for ignore in nans:
                y = ref["Y"] if rname == "half-away" and not ignore else \
                    roi_pool(inputs["X"], inputs["rois"], case.desc, rounder=rounder, nan_ignored=ignore)
                for free in zero_signs:
                    if rname == "half-away" and not ignore and not free:
                        continue              # the reference itself
                    name = "+".join(n for n in ((rname if rname != "half-away" else ""), "nan-ignored" if ignore else "",
                                                "zero-sign-either" if free else "") if n)
                    out.append(Alternative(name, {"Y": y}, zero_sign_free=free))
        return out

    def open_points(self, case, inputs):
        pts = []
        prod = scaled(inputs["rois"], case.desc.SpatialScale)
        if (np.abs(prod - np.trunc(prod)) == 0.5).any():
            pts.append("roi-half-rounding")
        if np.isnan(inputs["X"]).any():
            pts.append("nan")
        if signed_zeros(inputs["X"]):
            pts.append("signed-zero")
        return tuple(pts)

    def not_expressible(self):
        return [NotExpressible(self.key, "ROITensor {1,1,NumROIs,5} layout",
                               "ONNX MaxRoiPool takes rois as [NumROIs, 5]; same data, other shape: the bench "
                               "builds that form (counted here, not a gap in coverage)", None, "1.0")]

    def curated(self) -> list[Curated]:
        def roi(sizes, n, scale, pooled, dt, fam, note, seed_shift=0):
            d = RoiPoolingDesc(InputSizes=sizes, RoiSizes=(n, 5), DataType=dt, SpatialScale=scale, PooledSize=pooled)
            return Curated(self.make_case(d, {}, fam, seed_offset=seed_shift), note)

        g = ((2, 3, 10, 12), 4, 0.5, (3, 3))
        return [
            roi(*g, "FLOAT32", "random", "MaxRoiPool, batch 2, channel 3, 4 rois (ONNX's node tests have no MaxRoiPool)."),
            roi(*g, "FLOAT32", "roi-clamped", "Rois reaching outside the input: clamped."),
            roi(*g, "FLOAT32", "roi-degenerate", "One-row and one-column rois."),
            roi(*g, "FLOAT32", "inf", "+-inf in the input: a bin of -inf values has maximum -inf.", 1),
            roi(*g, "FLOAT32", "roi-halves", "Scaled corners at k+0.5: how round() treats halves is an open point."),
            roi((1, 2, 9, 9), 2, 2.0, (3, 2), "FLOAT32", "random", "SpatialScale 2."),
            roi(*g, "FLOAT16", "random", "float16 MaxRoiPool."),
        ]

    def deviations(self) -> list[Deviation]:
        return [
            self.deviation("ort-roi-starts-at-lowest", ORT_CPU, "bug",
                           lambda c, x: c.dtype == "FLOAT32" and PD.answer_has_neg_inf(c, x),
                           "MaxRoiPool starts each bin's maximum at -FLT_MAX: a bin of -inf only gives -3.4028235e38"),
            self.deviation("ort-roi-nan", ORT_CPU, "bug", PD.x_has_nan,
                           "MaxRoiPool NaN, neither reading of open point nan: scanning a bin row by row, a NaN "
                           "replaces the running maximum and the next element replaces the NaN, so a bin gives NaN "
                           "when its last element is NaN and otherwise the maximum of the elements after its last "
                           "NaN, losing those before it (bin [1, NaN, 0, 0] gives 0)"),
            self.deviation("ort-roi-float16", ORT_CPU, "limitation", lambda c, x: c.dtype == "FLOAT16" and c.opset < 22,
                           "MaxRoiPool float16: session creation fails (INVALID_GRAPH in an inserted Cast)",
                           refusal=r"Cast"),
            self.deviation("ort-roi-opset-22", ORT_CPU, "limitation", lambda c, x: c.opset >= 22,
                           "MaxRoiPool-22: ONNX Runtime registers MaxRoiPool kernels for opsets 1 to 21 only, on "
                           "the CPU EP and on every other EP: a MaxRoiPool-22 node has no kernel ('Failed to find "
                           "kernel for MaxRoiPool(22)')",
                           refusal=r"(Failed to find kernel|Could not find an implementation) for MaxRoiPool\(22\)"),
            self.deviation("ort-roi-float-bins", ORT_CPU, "bug", ort_bins_differ,
                           "MaxRoiPool bin bounds in float: floor(i * (size / p)) and ceil((i + 1) * (size / p)) "
                           "with size / p rounded to float, not the page's integer divisions, so where the product "
                           "rounds past an integer a bin takes one row or column more (7 bins: regions 57, 114, "
                           "121, 228 ... long; the last bin of a 57-row region ends at 58)"),
            self.deviation("oref-no-maxroipool", ONNX_REFERENCE, "limitation", lambda c, x: True,
                           "onnx.reference has no MaxRoiPool"),
        ]

    def label(self, desc, variant):
        ph, pw = desc.PooledSize
        return f"n{desc.num_rois}-p{ph}x{pw}-sc{desc.SpatialScale:g}-in{'x'.join(map(str, desc.InputSizes))}"

    def describe(self, case) -> str:
        d = case.desc
        parts = [f"ps{compact(d.PooledSize)}", f"r{compact(d.RoiSizes)}"]
        if d.SpatialScale not in (0.0, 1.0):
            parts.append(f"SpatialScale={d.SpatialScale}")
        return describe_case(case, parts)

    def sweep(self, profile):
        check_profile(profile)
        geos = [
            ((1, 1, 8, 8), 2, 1.0, (2, 2)),
            ((2, 3, 10, 12), 4, 0.5, (3, 3)),
            ((1, 2, 16, 16), 3, 0.25, (2, 4)),
            ((2, 2, 7, 9), 5, 1.0, (1, 1)),
            ((1, 4, 12, 10), 3, 0.0625, (4, 3)),
            ((3, 1, 6, 6), 6, 1.0, (7, 7)),     # pooled size larger than the regions
            ((1, 2, 9, 9), 2, 2.0, (3, 2)),
        ]
        if profile == "full":
            geos += [((2, 4, 20, 24), 8, s, p) for s in (1.0, 0.5, 0.125) for p in ((2, 2), (5, 5), (3, 6))]
        n_fam = {"smoke": 2, "default": 99, "full": 99}[profile]
        cases = []
        for gi, (sizes, nr, scale, pooled) in enumerate(geos):
            for dt in ("FLOAT32", "FLOAT16"):
                d = RoiPoolingDesc(InputSizes=sizes, RoiSizes=(nr, 5), DataType=dt, SpatialScale=scale, PooledSize=pooled)
                for fam in rotate(self.families(dt), gi, n_fam):
                    cases.append(self.make_case(d, {}, fam))
                    if profile != "smoke":   # a second seed: other rois over the same geometry
                        cases.append(self.make_case(d, {}, fam, seed_offset=1))
        if profile == "smoke":
            cases = thin(cases, 14, "roi-smoke")
        return cases

    # -- the sized profiles ---------------------------------------------------------------------
    def from_export(self, export):
        """MaxRoiPool graphs of the census (TorchScript's export of torchvision's RoIPool; the dynamo
        exporter fails on it): the feature map and RoI count of the layer as the model ran."""
        e = export
        if e.ops != "MaxRoiPool" or len(e.inputs) != 2 or not e.inputs[1] or e.inputs[1][0] < 1:
            return []
        node = e.node(0)
        d = RoiPoolingDesc(InputSizes=tuple(e.inputs[0]), RoiSizes=(e.inputs[1][0], 5), DataType="FLOAT32",
                           SpatialScale=float(e.attr(node, "spatial_scale", 1.0)),
                           PooledSize=tuple(e.attr(node, "pooled_shape")))
        try:
            self.validate(d)
        except DescriptorError:
            return []
        return [(d, {})]

    def batched(self, desc, factor: int):
        """A serving batch: ``factor`` images, each with the census's RoIs."""
        return desc.replace(InputSizes=(desc.InputSizes[0] * factor, *desc.InputSizes[1:]),
                            RoiSizes=(desc.num_rois * factor, 5))

    def limits(self) -> list:
        """MaxRoiPool at the boundaries of ``_limits``: RoI and channel counts around 2^16, outputs
        past 65,535 thread groups, and bins of 2^8 to 2^20 elements (every RoI the whole input,
        PooledSize 1x1)."""
        L = _limits

        def d(sizes, rois, pooled, dt="FLOAT32", scale=1.0):
            return RoiPoolingDesc(InputSizes=tuple(sizes), RoiSizes=(rois, 5), DataType=dt, SpatialScale=scale,
                                  PooledSize=tuple(pooled))

        out = []
        for n in L.COUNTS:
            out += [L.case(self, d((1, 1, 8, 8), n, (1, 1)), {}, "random", "count", f"{n} RoIs, PooledSize 1x1"),
                    L.case(self, d((1, 1, 8, 8), n, (7, 7)), {}, "random", "count", f"{n} RoIs, PooledSize 7x7"),
                    L.case(self, d((1, 1, 8, 8), n, (7, 7), "FLOAT16"), {}, "random", "count",
                           f"{n} RoIs, PooledSize 7x7, float16"),
                    L.case(self, d((1, n, 4, 4), 2, (2, 2)), {}, "random", "count", f"channels {n}, 2 RoIs")]
        for t in L.THREADS:
            n = L.groups_elements(t)
            rois = -(-n // (64 * 49))
            out.append(L.case(self, d((2, 64, 38, 50), rois, (7, 7), scale=1 / 16), {}, "random", "groups",
                              f"{rois:,} RoIs x 64 channels x 7x7 = {rois * 64 * 49:,} outputs: more than 65,535 "
                              f"groups of {t}"))
        for lg in L.WINDOW_LOG2:
            side = L.square_side(lg)
            for dt in ("FLOAT32", "FLOAT16"):
                out.append(L.case(self, d((1, 2, side, side), 4, (1, 1), dt), {}, "roi-whole", "window",
                                  f"one bin of {side}x{side} = 2^{lg} elements (RoIs of the whole input, PooledSize 1x1)"))
        return out

    # -- mutants: the judge's power (onnx-dml-bench mutants) ----------------------------------------
    def mutants(self) -> tuple:
        """Corners rounded down or up instead of to nearest, the regions read in the next batch;
        legitimate: the Direct3D float32 flush, every allowed reading."""
        return MUTANTS


def scaled(rois: np.ndarray, spatial_scale: float) -> np.ndarray:
    """coord * SpatialScale, computed in FLOAT (float32) as the DML struct's FLOAT implies."""
    return rois[:, 1:5].astype(np.float32) * np.float32(spatial_scale)


def round_half_away(v: np.ndarray) -> np.ndarray:
    """C round(): halves away from zero. In float64, where v + 0.5 is exact for every float32."""
    v = np.asarray(v, dtype=np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def make_rois(desc, family: str, seed: int) -> np.ndarray:
    """Rois for a case, in the input's coordinate scale. Default: boxes whose scaled corners are
    inside the input and never at a half; 'roi-clamped': boxes reaching outside the input;
    'roi-halves': scaled corners exactly at k + 0.5; 'roi-degenerate': one-row / one-column boxes;
    'roi-whole': every box the whole input."""
    n, _, h, w = desc.InputSizes
    r = desc.num_rois
    g = rng_for(seed, "rois")
    s = desc.SpatialScale
    if family == "roi-whole":
        whole = np.array([0.0, 0.0, w - 1, h - 1]) / s
        batch = g.integers(0, n, size=r).astype(np.float64)
        rois = np.concatenate([batch[:, None], np.broadcast_to(whole, (r, 4))], axis=1)
        return rois.astype(DML_TO_NUMPY[desc.DataType])
    if family == "roi-clamped":
        lo_x, hi_x, lo_y, hi_y = -3, w + 2, -3, h + 2
    else:
        lo_x, hi_x, lo_y, hi_y = 0, w - 1, 0, h - 1
    x1 = g.integers(lo_x, hi_x + 1, size=r)
    y1 = g.integers(lo_y, hi_y + 1, size=r)
    x2 = np.minimum(x1 + g.integers(0, w, size=r), hi_x)
    y2 = np.minimum(y1 + g.integers(0, h, size=r), hi_y)
    if family == "roi-degenerate":
        x2 = np.where(np.arange(r) % 2 == 0, x1, x2)
        y2 = np.where(np.arange(r) % 2 == 1, y1, y2)
    corners = np.stack([x1, y1, x2, y2], axis=1).astype(np.float64)
    if family == "roi-halves":
        corners = corners + 0.5 * np.where(g.random(corners.shape) < 0.5, 1, -1)
        corners[:, 2] = np.maximum(corners[:, 2], corners[:, 0])
        corners[:, 3] = np.maximum(corners[:, 3], corners[:, 1])
    else:
        # a quarter off the integer keeps round() unambiguous and stays exact in float16
        corners = corners + g.choice(np.array([-0.25, 0.0, 0.25]), size=corners.shape)
        corners[:, 2] = np.maximum(corners[:, 2], corners[:, 0])
        corners[:, 3] = np.maximum(corners[:, 3], corners[:, 1])
    batch = g.integers(0, n, size=r).astype(np.float64)
    rois = np.concatenate([batch[:, None], corners / s], axis=1)
    return rois.astype(DML_TO_NUMPY[desc.DataType])


def _round_half(tie):
    """round() with halves going where ``tie(v)`` sends them (v a float64 array of halves)."""
    def rounder(v):
        v = np.asarray(v, dtype=np.float64)
        half = np.abs(v - np.trunc(v)) == 0.5
        return np.where(half, tie(v), np.floor(v + 0.5)).astype(np.int64)
    return rounder


#: the ways round() can treat halves; the reference is C's (away from zero)
ROUNDINGS = {
    "half-away": round_half_away,
    "half-even": lambda v: np.rint(np.asarray(v, dtype=np.float64)).astype(np.int64),
    "half-up": _round_half(lambda v: np.floor(v + 0.5)),
    "half-down": _round_half(lambda v: np.ceil(v - 0.5)),
    "half-toward-zero": _round_half(np.trunc),
}


def roi_pool(x: np.ndarray, rois: np.ndarray, desc, rounder=round_half_away, nan_ignored: bool = False) -> np.ndarray:
    """DML ROI max pooling. ``rounder`` and ``nan_ignored`` give the other answers the open points
    allow. Per roi: corners round(coord * SpatialScale), bins by the page's integer formulas
    (``bins``); per bin and channel, the maximum of its elements: NaN propagates (the first met),
    a -0.0/+0.0 tie goes to the last element met (row-major), an empty bin gives 0.

    Computed in float32 (exact for float16), per batch on a channels-last copy of a few channels
    at a time (at most P.TILE_BYTES; one channel, not copied, where a channel alone is larger), so
    that each step moves whole channel vectors: per roi, first each bin column's maximum on every
    row of the roi, then each bin's maximum over its rows (``_bin_max``)."""
    if nan_ignored and np.isnan(x).any():
        nan = np.isnan(x)
        y = roi_pool(np.where(nan, -np.inf, x).astype(x.dtype), rois, desc, rounder)
        only_nan = roi_pool((~nan).astype(x.dtype), rois, desc, rounder) == 0
        empty = roi_pool(np.ones_like(x), rois, desc, rounder) == 0
        return np.where(only_nan & ~empty, np.asarray(np.nan, dtype=x.dtype), y)
    n, c, h, w = x.shape
    ph, pw = desc.PooledSize
    batch = rois[:, 0].astype(np.float32).astype(np.int64)
    x1, y1, x2, y2 = rounder(scaled(rois, desc.SpatialScale)).T
    ys, ye = bins(ph, y2 - y1 + 1, y1, h)          # (R, PH): rows [ys, ye) of each bin
    xs, xe = bins(pw, x2 - x1 + 1, x1, w)          # (R, PW): columns [xs, xe)
    out = np.zeros((len(rois), c, ph, pw), x.dtype)
    step = max(1, min(c, P.TILE_BYTES // (4 * h * max(w, pw))))   # channels at a time
    for b in np.unique(batch):
        mine = np.flatnonzero(batch == b)
        for c0 in range(0, c, step):
            plane = x[b, c0:c0 + step].transpose(1, 2, 0)              # (H, W, channels)
            if step > 1:
                plane = np.ascontiguousarray(plane, dtype=np.float32)
            rule = "last" if P.zero_signs_tie(plane) else "max"

            def work(rs, plane=plane, c0=c0, rule=rule):
                for r in rs:
                    out[r, c0:c0 + step] = _bin_max(plane, ys[r], ye[r], xs[r], xe[r], rule).transpose(2, 0, 1)

            P._run(work, np.array_split(mine, min(len(mine), 4 * P.workers())))
    return out


def float_bins(p: int, size: np.ndarray, start: np.ndarray, limit: int):
    """ONNX Runtime's CPU bin bounds: ``bins`` with size / p rounded to float32 and each bound
    floor(i * that) / ceil((i + 1) * that) in float32."""
    step = (size.astype(np.float32) / np.float32(p))[:, None]
    i = np.arange(p, dtype=np.float32)[None, :]
    lo = np.floor(i * step).astype(np.int64) + start[:, None]
    hi = np.ceil((i + 1) * step).astype(np.int64) + start[:, None]
    return np.clip(lo, 0, limit), np.clip(hi, 0, limit)


def ort_bins_differ(case, inputs) -> bool:
    """Some roi of the case has a bin whose bounds ONNX Runtime's float arithmetic (``float_bins``)
    puts elsewhere than the page's integer formulas (``bins``)."""
    d, rois = case.desc, np.asarray(inputs["rois"])
    _, _, h, w = d.InputSizes
    x1, y1, x2, y2 = round_half_away(scaled(rois, d.SpatialScale)).T
    for p, lo, hi, limit in ((d.PooledSize[0], y1, y2, h), (d.PooledSize[1], x1, x2, w)):
        size = np.maximum(hi - lo + 1, 1)
        if any((a != b).any() for a, b in zip(bins(p, size, lo, limit), float_bins(p, size, lo, limit))):
            return True
    return False


def bins(p: int, size: np.ndarray, start: np.ndarray, limit: int):
    """The page's bin bounds for p bins of regions ``size`` long from ``start``: [Start, End) with
    Start = (i * size) / p + start, End = ((i + 1) * size + p - 1) / p + start (integer division),
    clamped to [0, limit]. Shape (rois, p)."""
    i = np.arange(p)[None, :]
    lo = (i * size[:, None]) // p + start[:, None]
    hi = ((i + 1) * size[:, None] + p - 1) // p + start[:, None]
    return np.clip(lo, 0, limit), np.clip(hi, 0, limit)


def _bin_max(plane, ys, ye, xs, xe, rule) -> np.ndarray:
    """(PH, PW, channels): each bin's maximum over ``plane`` (H, W, channels); 0 for an empty bin.
    ``rule`` "max": np.maximum (NaN propagates; no -0.0/+0.0 tie in the plane, so any tie rule
    gives these bits); "last": ties to the later element, NaN kept once met."""
    ph, pw = len(ys), len(xs)
    rows, cols = ye > ys, xe > xs                     # non-empty bin rows / columns
    res = np.zeros((ph, pw, plane.shape[2]), np.float32)
    if not rows.any() or not cols.any():
        return res
    top = ys[rows].min()
    band = plane[top:ye[rows].max()]                  # the roi's rows
    # element t of a bin: its column xs + t, or its last column again once past its end (the same
    # element twice changes no maximum, under either rule); empty bins read column 0 and are zeroed
    lo, hi = np.where(cols, xs, 0), np.where(cols, xe, 1)
    across = _running_max(lambda t: band[:, np.minimum(lo + t, hi - 1)], int((hi - lo).max()), rule)
    lo, hi = np.where(rows, ys, top) - top, np.where(rows, ye, top + 1) - top
    down = _running_max(lambda t: across[np.minimum(lo + t, hi - 1)], int((hi - lo).max()), rule)
    res[np.ix_(rows, cols)] = down[np.ix_(rows, cols)]
    return res


def _running_max(element, count: int, rule: str) -> np.ndarray:
    """The maximum of element(0), ..., element(count - 1), elementwise, by ``rule``."""
    best = np.array(element(0), dtype=np.float32)
    for t in range(1, count):
        v = element(t)
        if rule == "max":
            np.maximum(best, v, out=best)
        else:
            take = (v >= best) | np.isnan(v)          # a later equal element (-0.0/+0.0) replaces the earlier
            take &= ~np.isnan(best)                    # the first NaN stays
            np.copyto(best, v, where=take)
    return best

# ------------------------------------------------------------------------------------------------
# Mutants (onnx-dml-bench mutants): answers of ``roi_pool`` with another rounding or other rois
# ------------------------------------------------------------------------------------------------

SRC_ROI_ROUNDING = ("MaxRoiPool bin rounding: the DirectML page and Caffe's ROIPooling round(coord * scale) to "
                    "nearest; a floor or ceil of the scaled corners moves every bin of the region")
SRC_ROI_BATCH = "ROITensor's BatchID read as the next batch (an index with a batch offset)"


def _rounded(name: str, fn):
    def make(s):
        rounder = lambda v: fn(np.asarray(v, dtype=np.float64)).astype(np.int64)  # noqa: E731
        yield name, {"Y": roi_pool(s.inputs["X"], np.asarray(s.inputs["rois"]), s.case.desc, rounder=rounder)}
    return make


def _next_batch(s):
    n = s.case.desc.InputSizes[0]
    if n < 2:
        return
    rois = np.array(s.inputs["rois"], copy=True)
    rois[:, 0] = (rois[:, 0].astype(np.int64) + 1) % n
    yield "", {"Y": roi_pool(s.inputs["X"], rois, s.case.desc)}


MUTANTS = (
    M.MutantClass("roi-corners-floor", SRC_ROI_ROUNDING, _rounded("floor", np.floor),
                  text="the scaled corners rounded down"),
    M.MutantClass("roi-corners-ceil", SRC_ROI_ROUNDING, _rounded("ceil", np.ceil), text="the scaled corners rounded up"),
    M.MutantClass("roi-next-batch", SRC_ROI_BATCH, _next_batch, text="every region read in the next batch"),
    M.D3D_FLUSH,
    M.alternatives_class(),
)



OP = RoiPooling()
OPERATORS = (OP,)
