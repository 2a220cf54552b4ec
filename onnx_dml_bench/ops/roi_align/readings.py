"""RoiAlign's open points: which a case touches, their readings, the other answers they allow
(``alternatives``), each with its own bound.

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
  infinities and NaN an evaluation in the data type gives there (``overflow_flags``), the
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

import itertools
from dataclasses import replace

import numpy as np

from ...compare import NF_NAN, NF_NEG_INF, NF_POS_INF
from ...dtypes import DML_TO_NUMPY
from ..base import Alternative
from . import fused as F
from .bounds import SUBNORMAL_STEPS
from .reference import Reading, Result, axis_points, counts, reading, region


class OpenPoints:
    """The open points of the operators (a part of them: ``operator._RoiAlign``), their readings
    and the alternatives they allow."""

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
        x = np.asarray(inputs["X"])
        fmax = float(np.finfo(x.dtype).max)
        fin = np.isfinite(x)
        finite = x if fin.all() else x[fin]
        if not finite.size:
            return np.zeros(self.output_shape(case.desc), bool)
        # what a sum can reach at most: a sample's sum of |weight * value| (weights of at most 1 in
        # all) or a difference of two corners, at most twice the largest magnitude M (or the value
        # read outside the input), over at most the largest count of samples of an output element
        d = case.desc
        rd = rd or reading(d)
        rois = np.asarray(inputs["rois"])
        samples = 1
        if len(rois) and rd.mode != "MAX":
            ny = counts(rois, 1, rd.scale_y, d.OutputSize[0], rd)
            nx = counts(rois, 0, rd.scale_x, d.OutputSize[1], rd)
            samples = max(1, int((ny * nx).max()))
        per_sample = max(2 * max(abs(float(finite.max())), abs(float(finite.min()))), abs(float(rd.oob)))
        if 2 * per_sample * samples <= fmax:
            return np.zeros(self.output_shape(d), bool)     # no sum gets there (twice over)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.compute(case, inputs, rd, touched=True).reach > fmax

    def _overflow_bits(self, case, inputs, rd: Reading | None = None) -> np.ndarray:
        """Per output position, the non-finite answers an evaluation in the data type that overflows
        on the way can give (``compare`` NF_* bits; ``overflow_flags``): +inf where the positive
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
        if res.below is None:          # many outputs: one compiled pass, the same values
            fused = F.bound_of(np.asarray(y), res.bound, float(fi.eps) / 2, SUBNORMAL_STEPS * float(fi.smallest_subnormal))
            if fused is not None:
                return fused
        a = np.asarray(y).astype(np.float64)
        np.abs(a, out=a)
        if not np.isfinite(a).all():
            a[~np.isfinite(a)] = 0.0
        # in the subnormal range a product or a quotient errs by up to half the smallest subnormal
        # of the type (a sum there is exact): a sample's products, two per corner where its weights
        # are multiplied in one after the other (wy * (wx * v): 3 in all, the first ones scaled by
        # a weight), the average's division, and the rounding of the reference itself (a flush of
        # denormals is no reading of the data type's arithmetic: ``verdict.flush_allowed``)
        extra = np.multiply(a, float(fi.eps) / 2, out=a)
        extra += SUBNORMAL_STEPS * float(fi.smallest_subnormal)
        if res.below is not None:
            return (res.below + extra, np.add(extra, res.bound, out=extra))
        return np.add(extra, res.bound, out=extra)

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
