"""DML_AVERAGE_POOLING1_OPERATOR_DESC: average over a (dilated) sliding window.

DirectML semantics:
- output size per spatial axis: floor((In + Start + End - ((Window-1)*Dilation + 1)) / Stride) + 1
  (the page leaves dilation out of the formula);
- divisor: with IncludePadding FALSE, the window elements inside the unpadded input; with TRUE, the
  whole window (product of WindowSize);
- FLOAT32 and FLOAT16 only, feature level 6.2. The reference is the exact average rounded once
  (sums in float64, exact for float16 windows). The pages do not say in which precision or order
  an implementation accumulates: a float16 case where float32 accumulation in window order is
  not within tolerance of the exact average (cancellation of large terms) touches the open point
  'accumulation'.
ONNX: AveragePool; dilations exist from opset 19; IncludePadding is count_include_pad (opset 7+).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..cases import Case
from . import _pooling as P
from ._sweep import check_profile, rotate, thin
from ..compare import compare_output
from .base import (Curated, Descriptor, DescriptorError, Fragment, NotExpressible, Operator, OutputSpec,
                   schema_allows, schema_has_attr, tensor_info)

TYPES_BY_LEVEL = {"6.2": ("FLOAT32", "FLOAT16")}


@dataclass(frozen=True)
class AveragePooling1Desc(Descriptor):
    InputSizes: tuple[int, ...]
    DataType: str
    DimensionCount: int
    Strides: tuple[int, ...]
    WindowSize: tuple[int, ...]
    StartPadding: tuple[int, ...]
    EndPadding: tuple[int, ...]
    Dilations: tuple[int, ...]
    IncludePadding: bool = False
    FeatureLevel: str = "6.2"


class AveragePooling1(Operator):
    key = "average_pooling1"
    dml_name = "DML_AVERAGE_POOLING1_OPERATOR_DESC"
    short = "ap1"
    order = 20
    onnx_ops = ("AveragePool",)
    Desc = AveragePooling1Desc
    default_opset = 19
    opsets = (11, 19, 22)
    variant_keys = {"ceil_mode": (0, 1), "auto_pad": P.AUTO_PAD}
    open_point_texts = {
        "accumulation": "The page does not say in which precision or order the window is summed. Reference: the "
                        "exact average rounded once; float32 accumulation in window order differs beyond the "
                        "tolerance on this float16 case (cancellation of large terms).",
    }

    def validate(self, desc) -> None:
        P.validate(desc, TYPES_BY_LEVEL)
        if desc.IncludePadding is False and not P.window_has_real_element(desc):
            raise DescriptorError("StartPadding", "a window lies entirely in padding: with IncludePadding FALSE its divisor would be 0")

    def output_shape(self, desc):
        return P.output_shape(desc)

    def check_variant(self, case) -> None:
        super().check_variant(case)
        P.check_variant(case)

    def expressible(self, case) -> str | None:
        d, v, o = case.desc, case.v, case.opset
        why = schema_allows("AveragePool", o, d.DataType)
        if why:
            return why
        if any(x != 1 for x in d.Dilations) and not schema_has_attr("AveragePool", o, "dilations"):
            return f"AveragePool has no dilations before opset 19 (opset {o})"
        if d.IncludePadding and not schema_has_attr("AveragePool", o, "count_include_pad"):
            return f"AveragePool has no count_include_pad before opset 7 (opset {o})"
        if v.get("ceil_mode") and not schema_has_attr("AveragePool", o, "ceil_mode"):
            return f"AveragePool has no ceil_mode before opset 10 (opset {o})"
        attrs, why = P.onnx_attrs(case, "AveragePool")
        if why:
            return why
        if d.IncludePadding and v.get("ceil_mode"):
            onnx_end = attrs.get("pads", [0] * (2 * d.DimensionCount))[d.DimensionCount:]
            if tuple(onnx_end) != tuple(d.EndPadding):
                return ("IncludePadding TRUE counts all EndPadding in the divisor; ONNX ceil_mode's overhang past "
                        "the pads is not padding to count_include_pad")
        return None

    def build(self, case, prefix: str) -> Fragment:
        d = case.desc
        attrs, why = P.onnx_attrs(case, "AveragePool")
        if why:
            raise ValueError(f"{case.id}: {why}")
        if d.IncludePadding:
            attrs["count_include_pad"] = 1
        x, y = prefix + "X", prefix + "Y"
        node = P.make_node("AveragePool", [x], [y], prefix + "AveragePool", attrs)
        return Fragment(inputs=[tensor_info(x, d.DataType, d.InputSizes)],
                        outputs=[tensor_info(y, d.DataType, self.output_shape(d))], nodes=[node],
                        input_names={"X": x}, output_names={"Y": y})

    def reference(self, case, inputs):
        return {"Y": avg_pool(inputs["X"], case.desc)}

    def open_points(self, case, inputs):
        x = inputs["X"]
        if x.dtype != np.float16:
            return ()
        spec = self.compare_specs(case)["Y"]
        exact = avg_pool(x, case.desc)
        ordered = avg_pool(x, case.desc, acc=np.float32)
        return () if compare_output("Y", spec, ordered, exact).match else ("accumulation",)

    def compare_specs(self, case):
        return {"Y": OutputSpec("ulp", ulp=math.prod(case.desc.WindowSize) + 2)}

    def not_expressible(self):
        return [NotExpressible(self.key, "Dilations other than 1 below opset 19",
                               "AveragePool has a dilations attribute only from opset 19", None, "6.2")]

    def curated(self) -> list[Curated]:
        def ap(geo, dt, inc, fam, note, opset=None):
            return Curated(P.curated_case(self, geo, {}, fam, opset, DataType=dt, IncludePadding=inc), note)

        g = ((2, 3, 7, 6), (3, 3), (2, 2), (1, 0), (0, 1), (1, 1))
        dil = ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (2, 2))
        out = [ap(g, dt, inc, "random", f"{dt.lower()} average, IncludePadding {str(inc).upper()} (count_include_pad).")
               for dt in ("FLOAT32", "FLOAT16") for inc in (False, True)]
        return out + [
            ap(dil, "FLOAT32", False, "random", "Dilations (AveragePool-19)."),
            ap(dil, "FLOAT32", False, "random", "Dilations at opset 11: not expressible (left out).", 11),
            ap(g, "FLOAT32", True, "extremes", "float32 extremes: the sum of a window exceeds FLT_MAX; the average does not."),
            ap(g, "FLOAT16", False, "extremes", "float16 extremes: accumulated in float32, rounded once."),
        ]

    def label(self, desc, variant) -> str:
        return P.label(desc, variant, ("incpad" if desc.IncludePadding else "excpad",))

    def sweep(self, profile: str) -> list[Case]:
        check_profile(profile)
        cases = []
        n_fam = {"smoke": 1, "default": 5, "full": 99}[profile]
        for gi, (d0, variant) in enumerate(_geometries(profile)):
            for inc in (False, True):
                if inc and variant.get("ceil_mode"):
                    continue
                for dt in ("FLOAT32", "FLOAT16"):
                    d = d0.replace(DataType=dt, IncludePadding=inc)
                    if not inc and not P.window_has_real_element(d):
                        continue
                    for fam in rotate(self.families(dt), gi * 2 + inc, n_fam):
                        cases.append(self.make_case(d, variant, fam))
        if profile == "smoke":
            cases = thin(cases, 20, "ap1-smoke")
        return cases


def _geometries(profile: str):
    g = P.BASIC_2D + [
        ((1, 2, 6, 6), (3, 3), (1, 1), (2, 2), (2, 2), (1, 1), {}),
        ((1, 1, 10, 10), (4, 4), (3, 3), (1, 2), (2, 1), (2, 2), {}),
        ((3, 2, 5, 9), (1, 3), (1, 1), (0, 1), (0, 1), (1, 1), {}),
        ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (0, 0), (1, 1), {"ceil_mode": 1}),
        ((1, 1, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), (1, 1), {"ceil_mode": 1}),
    ] + P.AUTO_PAD_2D + P.BASIC_3D + [
        ((1, 2, 5, 5, 5), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), {"ceil_mode": 1}),
        P.SAME_LOWER_3D,
    ]
    if profile == "full":
        for k in ((1, 1), (2, 2), (3, 3), (2, 5), (7, 7)):
            for s in ((1, 1), (2, 2), (3, 2)):
                for dil in ((1, 1), (2, 3)):
                    pads = tuple(min(kk - 1, 2) for kk in k)
                    g.append(((1, 3, 16, 15), k, s, pads, pads, dil, {}))
    yield from P.descriptors(AveragePooling1Desc, g)


def avg_pool(x: np.ndarray, desc, acc=np.float64) -> np.ndarray:
    """DML average pooling: sum in float64 (exact for float16 windows), divide, round once.
    ``acc`` other than float64 models an implementation's accumulation (open point)."""
    if desc.IncludePadding:
        div = acc(math.prod(desc.WindowSize))
    else:
        div = P.valid_counts(desc).astype(acc)

    def core(xc):
        xp = P.pad(xc.astype(acc), desc, 0)
        total = None
        with np.errstate(invalid="ignore", over="ignore"):
            for _, _, view in P.window_views(xp, desc):
                total = view.copy() if total is None else np.add(total, view, out=total)
            return ((total / div).astype(x.dtype),)

    return P.chunked(core, x)[0]


OP = AveragePooling1()
OPERATORS = (OP,)
