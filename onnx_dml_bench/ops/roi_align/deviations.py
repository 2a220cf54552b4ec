"""RoiAlign's known deviations of ONNX Runtime's CPU EP (1.32) and of onnx.reference from the
ONNX specification, each a predicate over a case and its data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..base import ONNX_REFERENCE, ORT_CPU, Deviation
from .reference import reading, region


class Deviations:
    """The deviations of the operators (a part of them: ``operator._RoiAlign``)."""

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
