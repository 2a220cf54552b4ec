"""The operators DML_ROI_ALIGN_OPERATOR_DESC and DML_ROI_ALIGN1_OPERATOR_DESC (the package text):
validation, the ONNX graph, the data, the answers, identity and real sizes; the open points
(``readings.py``) and the deviations (``deviations.py``) are parts of them."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from onnx import TensorProto, helper

from ...cases import Case
from ...dtypes import DML_TO_NUMPY, FEATURE_LEVELS
from ...inputs import families_for, fill, rng_for
from .._struct import Bool, DirectmlH, Enum, Float, Input, Output, Uint
from ..base import (DML_PAGES, ONNX_TEXT, UINT_MAX, Curated, DescriptorError, Fragment, NotExpressible, Operator,
                    OutputSpec, check_input_sizes, check_type_at_level, check_uint, compact, describe_case,
                    schema_allows, tensor_info)
from .descriptors import (EXTRA_ROI_FAMILIES, INDEX_TYPES_BY_LEVEL, INTERPOLATIONS, NUMBERS, ONNX_ONLY_TYPES, REDUCTIONS,
                          ROI_FAMILIES, ROI_X_FAMILY, TYPES_BY_LEVEL, RoiAlign1Desc, RoiAlignDesc, make_rois)
from .deviations import Deviations
from .mutants import MUTANTS
from .readings import OpenPoints
from .reference import Reading, Result, reading, roi_align
from .sweep import census_layers, sweep_of
from .witnesses import witness_answers


# ------------------------------------------------------------------------------------------------
# The operators
# ------------------------------------------------------------------------------------------------

def _held(inputs: dict) -> tuple:
    """The input arrays themselves, by name (a memo's key: the very arrays, not their values)."""
    return tuple((k, inputs[k]) for k in sorted(inputs))


def _same_arrays(held: tuple, inputs: dict) -> bool:
    return len(held) == len(inputs) and all(k in inputs and inputs[k] is v for k, v in held)


class _RoiAlign(OpenPoints, Deviations, Operator):
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

    def memory_bytes(self, desc) -> int:
        """The base estimate and the reference's per-element arrays (its float64 answer and bound, 24
        bytes per output element with the chunks of samples in flight; MAX keeps the bound below
        too, 8 more); for float16 data, 4 more bytes per input element (the reference's
        channels-last copy of the input and its finite mask, which the base's two copies of a
        float16 input do not cover). Measured (``benchmarks/memory_estimates.py``) on the sized
        profiles' largest layers, answers right or wrong: at most 22 bytes per output element
        beyond the outputs and inputs in float32, and in float16 from 27 (an input smaller than
        the output) to 39 (an input three times the output)."""
        extra = 24 + (8 if desc.ReductionFunction == "MAX" else 0)
        wide = 4 * math.prod(desc.InputSizes) if desc.DataType == "FLOAT16" else 0
        return super().memory_bytes(desc) + extra * math.prod(self.output_shape(desc)) + wide

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

    def will_compare(self, case, inputs):
        """The bound's pass gives the reference's answer too, bit for bit (the same samples, summed
        in the same order): the next :meth:`reference` of this case makes that pass, and
        :meth:`error_bound` takes it (one pass instead of two, and one for both sides of a judgement)."""
        self._compare_memo = (_held(inputs), case.id)

    def _bounded(self, case, inputs) -> Result:
        """The bound's pass of this case (its reading's) on these very input arrays, made once and
        kept for them (other inputs of the same case, a region or batch index moved, make their own)."""
        memo = getattr(self, "_bounded_memo", None)
        if memo is not None and memo[1] == case.id and _same_arrays(memo[0], inputs):
            return memo[2]
        self._bounded_memo = None                     # the last case's arrays go before the new ones come
        res = self.compute(case, inputs, bound=True)
        self._bounded_memo = (_held(inputs), case.id, res)
        return res

    def reference(self, case, inputs):
        problem = self.input_problem(case, inputs)
        if problem:
            raise ValueError(f"invalid input data: {problem}")
        memo = getattr(self, "_compare_memo", None)
        if memo is not None and memo[1] == case.id and _same_arrays(memo[0], inputs):
            res = self._bounded(case, inputs)
        else:
            res = self.compute(case, inputs)
        return {"Y": res.y.astype(DML_TO_NUMPY[case.desc.DataType])}

    def compare_specs(self, case):
        return {"Y": OutputSpec("bound")}

    def error_bound(self, case, inputs, ref):
        return {"Y": self._bound_of(case, self._bounded(case, inputs), ref["Y"])}

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
        return sweep_of(self, profile)

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
        return sweep_of(self, profile)

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
# Detection sizes: the census's RoiAlign layers (``sweep.census_layers``) and the detections cap
# ------------------------------------------------------------------------------------------------

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
