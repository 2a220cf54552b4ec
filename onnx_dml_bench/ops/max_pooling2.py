"""DML_MAX_POOLING2_OPERATOR_DESC: maximum over a (dilated) sliding window, optional indices.

DirectML semantics (pages in shared/seeds, with the corrections of the design notes):
- output size per spatial axis: floor((In + Start + End - ((Window-1)*Dilation + 1)) / Stride) + 1
  (the page leaves dilation out of the formula);
- indices are zero-based offsets into the whole input seen as one flat array, batch and channel
  included; on ties the first element met (in window scan order, i.e. the smallest flat index)
  wins; padding never wins;
- indices are UINT32 (feature level 2.1) or UINT64 (5.0); ONNX's are INT64;
- data types: FLOAT32/FLOAT16 (FL 2.1), + INT8/UINT8 (FL 3.0), + 16/32/64-bit integers (FL 5.0).
ONNX-side variants the DML EP must lower: ceil_mode, auto_pad, storage_order. Every case builds
a graph; ``expected()`` is its answer by the ONNX text of its opset (``_onnx_pool``), ``reference()``
the descriptor's DirectML answer; ``dml_image()`` says whether the graph is the descriptor's direct
image, and where it is and the two answers differ the case carries open point ``onnx-vs-dml:<output>``.
Validation: every output position's window must hold at least one element of the unpadded input
(a window entirely in padding, e.g. made so by dilation, has no maximum and no index).
Open points: NaN (the page says nothing; the reference propagates NaN: a window holding a NaN gives
NaN and the index of its first NaN) and the sign of a zero maximum when -0.0 and +0.0 tie (the
reference keeps the first element met, as for any tie).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..cases import Case
from . import _onnx_pool as O
from . import _limits
from . import _mutants as M
from . import _pool_mutants as PM
from . import _pool_deviations as PD
from . import _pool_forms as F
from . import _pooling as P
from . import _pool_family as PF
from ._pool_family import PoolingOperator
from ._sweep import check_profile, rotate, thin
from ._struct import DirectmlH, Input, Output
from .base import (PERF_SIZES, ONNX_REFERENCE, ONNX_TEXT, ORT_CPU, Alternative, Curated, DescriptorError, Descriptor, Deviation,
                   NotExpressible, OutputSpec, check_type_at_level, schema_allows, schema_has_attr, signed_zeros)

TYPES_BY_LEVEL = {
    "2.1": ("FLOAT32", "FLOAT16"),
    "3.0": ("FLOAT32", "FLOAT16", "INT8", "UINT8"),
    "5.0": ("FLOAT32", "FLOAT16", "INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8"),
}
INDEX_TYPES_BY_LEVEL = {"2.1": ("UINT32",), "3.0": ("UINT32",), "5.0": ("UINT32", "UINT64")}
ONNX_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8")   # DML types ONNX MaxPool can carry


@dataclass(frozen=True)
class MaxPooling2Desc(Descriptor):
    InputSizes: tuple[int, ...]
    DataType: str
    DimensionCount: int
    Strides: tuple[int, ...]
    WindowSize: tuple[int, ...]
    StartPadding: tuple[int, ...]
    EndPadding: tuple[int, ...]
    Dilations: tuple[int, ...]
    OutputIndicesDataType: str | None = None   # None: no OutputIndicesTensor; "UINT32" / "UINT64"
    FeatureLevel: str = "5.0"


class MaxPooling2(PoolingOperator):
    key = "max_pooling2"
    dml_name = "DML_MAX_POOLING2_OPERATOR_DESC"
    dml_type = "DML_OPERATOR_MAX_POOLING2"
    directml_h = DirectmlH("""
        const DML_TENSOR_DESC* InputTensor;
        const DML_TENSOR_DESC* OutputTensor;
        _Maybenull_ const DML_TENSOR_DESC* OutputIndicesTensor;
        UINT DimensionCount;
        const UINT* Strides;
        const UINT* WindowSize;
        const UINT* StartPadding;
        const UINT* EndPadding;
        const UINT* Dilations;""", {"DML_OPERATOR_TYPE": {"DML_OPERATOR_MAX_POOLING2": 110}})
    short = "mp2"
    order = 10
    onnx_ops = ("MaxPool",)
    onnx_op = "MaxPool"
    global_op = "GlobalMaxPool"
    forms = ("pool", "global", "pad")
    empty_window = "no maximum"
    indices_field = "OutputIndicesDataType"
    Desc = MaxPooling2Desc
    types_by_level = TYPES_BY_LEVEL
    index_types_by_level = INDEX_TYPES_BY_LEVEL
    default_opset = 12
    opsets = (8, 10, 11, 12, 22)
    variant_keys = {"ceil_mode": (0, 1), "auto_pad": P.AUTO_PAD, "storage_order": (0, 1), "pads": None, "form": forms}
    output_names = ("Y", "Indices")
    open_point_texts = {
        "nan": "The page does not say how NaN takes part in the maximum. Allowed: NaN propagates (a window "
               "holding NaN gives NaN, index of its first NaN: the reference) or NaN is ignored (the maximum of "
               "the window's numbers, as IEEE maxNum).",
        "signed-zero": "The page does not say which zero is the maximum when -0.0 and +0.0 tie. Allowed: either "
                       "sign (the reference keeps the first element met); the indices still follow the tie rule.",
        **O.OPEN_POINT_TEXTS,
        "onnx-vs-dml:Y": "The ONNX specification and the DirectML semantics give different Y for this graph, "
                         "which is the direct image of its descriptor: judged by the ONNX text.",
        "onnx-vs-dml:Indices": "The ONNX specification and the DirectML semantics give different Indices for "
                               "this graph, which is the direct image of its descriptor: judged by the ONNX text.",
    }
    open_point_documents = {"same-negative-pad": (ONNX_TEXT,), "ceil-last-window": (ONNX_TEXT,),
                            "storage-order-batch-channel": (ONNX_TEXT,),
                            "onnx-vs-dml:Y": (ONNX_TEXT,), "onnx-vs-dml:Indices": (ONNX_TEXT,)}
    #: the sign of a zero maximum is a value; the indices still follow the tie rule
    open_point_outputs = {"signed-zero": ("Y",), "storage-order-batch-channel": ("Indices",)}

    # -- the family's hooks (ops/_pool_family.py) ----------------------------------------------------
    def onnx_reduce(self, x, a, ax, want_indices=False):
        """ONNX MaxPool (rules 6 and 7 of ``_onnx_pool``): per window, its first NaN or else its
        maximum, ties to the first element met, padding never (``_pooling.window_max``)."""
        y, idx = P.window_max(x, ax, want_indices, a.storage_order)
        return {"Y": y} if idx is None else {"Y": y, "Indices": idx}

    def pad_value(self, dml_type: str):
        """The type's lowest value (-inf for floats): padding never wins."""
        return F.lowest(dml_type)

    def node_attrs(self, case) -> dict:
        return {"storage_order": 1} if case.v.get("storage_order") else {}

    def check_options(self, case) -> None:
        if case.v.get("storage_order", 0) and not case.desc.OutputIndicesDataType:
            raise DescriptorError("onnx.storage_order", "only matters with an OutputIndicesTensor")

    # -- descriptor ---------------------------------------------------------------------------
    def validate(self, desc: MaxPooling2Desc) -> None:
        P.validate(desc, self.types_by_level)
        if not P.window_has_real_element(desc):
            raise DescriptorError("StartPadding", "a window lies entirely in padding (rule: every output position's "
                                  "window must hold at least one element of the unpadded input; dilation counts): "
                                  "it has no maximum and no index")
        if desc.OutputIndicesDataType is not None:
            if desc.OutputIndicesDataType not in ("UINT32", "UINT64"):
                raise DescriptorError("OutputIndicesTensor.DataType", f"must be UINT32 or UINT64, got {desc.OutputIndicesDataType!r}")
            check_type_at_level(desc, "OutputIndicesTensor.DataType", desc.OutputIndicesDataType,
                                self.index_types_by_level)
            n_in = int(np.prod(desc.InputSizes))
            if desc.OutputIndicesDataType == "UINT32" and n_in > 2**32:
                raise DescriptorError("OutputIndicesTensor.DataType", "UINT32 cannot index an input of more than 2^32 elements")

    def layout(self, desc):
        out = self.output_shape(desc)
        return [Input("InputTensor", "X", desc.InputSizes, desc.DataType),
                Output("OutputTensor", "Y", out, desc.DataType),
                Output("OutputIndicesTensor", "Indices", out, desc.OutputIndicesDataType, optional=True),
                *P.window_fields(desc)]

    # -- ONNX ---------------------------------------------------------------------------------
    def expressible(self, case) -> str | None:
        d, v, o = case.desc, case.v, case.opset
        why = F.expressible(case) or schema_allows("MaxPool", o, d.DataType)
        if why:
            return why
        if d.OutputIndicesDataType and o < 8:
            return f"MaxPool has no Indices output before opset 8 (opset {o})"
        if any(x != 1 for x in d.Dilations) and not schema_has_attr("MaxPool", o, "dilations"):
            return f"MaxPool has no dilations before opset 10 (opset {o})"
        if v.get("ceil_mode") and not schema_has_attr("MaxPool", o, "ceil_mode"):
            return f"MaxPool has no ceil_mode before opset 10 (opset {o})"
        if v.get("storage_order") and not schema_has_attr("MaxPool", o, "storage_order"):
            return f"MaxPool has no storage_order before opset 8 (opset {o})"
        return None

    # -- data -----------------------------------------------------------------------------------
    def reference(self, case, inputs) -> dict[str, np.ndarray]:
        y, idx = max_pool(inputs["X"], case.desc, want_indices=bool(case.desc.OutputIndicesDataType),
                          storage_order=case.v.get("storage_order", 0))
        out = {"Y": y}
        if idx is not None:
            out["Indices"] = idx
        return out

    def compare_specs(self, case):
        specs = {"Y": OutputSpec("exact")}
        if case.desc.OutputIndicesDataType:
            specs["Indices"] = OutputSpec("indices", values_of="Y")
        return specs

    def tie_valid(self, case, inputs, ref: dict, got_indices: np.ndarray) -> np.ndarray:
        """Per output position: does the index point inside that position's window at an element
        equal to the reference maximum? (A different-but-equal maximum is a tie-order difference.)"""
        if O.image_reason(case) not in (None, O.STORAGE_ONLY):
            return onnx_indices_valid(inputs["X"], case, ref["Y"], got_indices)
        return indices_in_window_at_max(inputs["X"], case.desc, ref["Y"], got_indices, case.v.get("storage_order", 0))

    def alternatives(self, case, inputs, ref, points):
        """NaN: propagated (reference) or ignored (the maximum of the window's numbers; NaN only
        where the window holds nothing else, as IEEE maxNum). Signed zero: either zero. A negative
        SAME pad total: clamped (reference) or split as the formula gives it (windows shifted).
        Before opset 22, ceil_mode windows starting in the end padding: dropped (reference) or
        kept, their values free. Open points are independent: every combination of their readings
        is allowed."""
        x = inputs["X"]
        want_idx = bool(case.desc.OutputIndicesDataType)
        zero_free = "signed-zero" in points
        # each reading of the window geometry: (name, outputs, run(X) -> outputs)
        geometries = [("", ref, lambda xx: self.expected(case, {"X": xx}))]
        if "same-negative-pad" in points:
            geometries += O.shifted_readings(case, x, want_idx)
        out = []
        for gname, base, fn in geometries:
            if gname:
                out.append(Alternative(gname, base, zero_sign_free=zero_free))
            ignored = None
            if "nan" in points:
                ignored = nan_ignored(x, base, fn, want_idx)
                out.append(Alternative("+".join(n for n in ("nan-ignored", gname) if n), ignored))
            if zero_free:
                if not gname:
                    out.append(Alternative("zero-sign-either", ref, zero_sign_free=True))
                if ignored is not None:
                    name = "+".join(n for n in ("nan-ignored", gname, "zero-sign-either") if n)
                    out.append(Alternative(name, ignored, zero_sign_free=True))
        if "ceil-last-window" in points:
            out = O.with_kept_windows(case, ref, out)
        return out

    def open_points(self, case, inputs) -> tuple[str, ...]:
        x = inputs["X"]
        pts = []
        if x.dtype.kind == "f":
            if np.isnan(x).any():
                pts.append("nan")
            if signed_zeros(x):
                pts.append("signed-zero")
        return tuple(pts) + O.split_points(self._onnx_points(case, inputs))[0]

    def point_concerns(self, key: str, stats) -> bool:
        """As the default, except that indices which all point at an equal maximum of their window
        (a tie resolved in another order) are read right: the storage order is not what failed."""
        if key == "storage-order-batch-channel" and "tie-order" in stats.labels and "wrong-index" not in stats.labels:
            return False
        return super().point_concerns(key, stats)

    def not_expressible(self) -> list[NotExpressible]:
        out = []
        for t in self.types_by_level["5.0"]:
            if t not in ONNX_TYPES:
                out.append(NotExpressible(self.key, f"InputTensor DataType {t}", "ONNX MaxPool (every opset) accepts "
                                          "float16/float/double/int8/uint8 (bfloat16 from 22) only", t, "5.0"))
        for t, fl in (("UINT32", "2.1"), ("UINT64", "5.0")):
            out.append(NotExpressible(self.key, f"OutputIndicesTensor DataType {t}",
                                      "ONNX MaxPool's Indices output is always INT64; the bench compares index values",
                                      t, fl))
        return out

    def curated(self) -> list[Curated]:
        def mp(geo, variant, dt, idx, fam, note, opset=None):
            return Curated(self.curated_case(geo, variant, fam, opset, DataType=dt, OutputIndicesDataType=idx), note)

        g = ((2, 3, 7, 6), (3, 3), (2, 2), (1, 0), (0, 1), (1, 1))
        return [
            mp(g, {}, "FLOAT32", "UINT32", "random", "Batch 2, channel 3 with indices over the whole tensor; asymmetric padding."),
            mp(g, {}, "FLOAT32", "UINT32", "ties", "Repeated maxima: indices resolve ties to the first occurrence."),
            mp(g, {}, "FLOAT16", "UINT32", "random", "float16 with indices, batch and channel > 1."),
            mp(g, {}, "INT8", "UINT64", "extremes", "int8 extremes (-128 in windows next to padding: padding never wins)."),
            mp(g, {}, "UINT8", "UINT32", "ties", "uint8 ties with indices."),
            mp(g, {}, "FLOAT32", None, "inf", "+-inf inside windows, no indices."),
            mp(g, {}, "FLOAT32", "UINT32", "nan", "NaN in windows: an open point of the documentation (left out by default)."),
            mp(((2, 3, 5, 4), (2, 2), (1, 1), (0, 1), (1, 0), (1, 1)), {"storage_order": 1}, "FLOAT32", "UINT32", "random",
               "storage_order=1: column-major spatial part of the flat index."),
            mp(((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (2, 2)), {}, "FLOAT32", "UINT32", "random",
               "Dilations 2x2 with indices."),
            mp(((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (2, 2), (1, 1)), {"ceil_mode": 1}, "FLOAT16", "UINT32", "random",
               "ONNX ceil_mode=1 giving the DML output size."),
            mp(((2, 1, 8, 9), (3, 2), (2, 3), None, None, (2, 2)), {"auto_pad": "SAME_UPPER"}, "FLOAT32", "UINT32", "random",
               "auto_pad SAME_UPPER with dilations: the pads ONNX defines use the dilated window."),
            mp(((2, 2, 5, 4, 6), (3, 2, 3), (1, 2, 2), (1, 0, 1), (1, 1, 0), (1, 1, 1)), {}, "FLOAT32", "UINT64", "random",
               "3-D pooling with indices, batch and channel > 1."),
            mp(g, {}, "FLOAT16", "UINT32", "negative", "MaxPool-22 (opset 22) with indices.", 22),
        ]

    def label(self, desc, variant) -> str:
        return PF.label(desc, variant, ("idx" + desc.OutputIndicesDataType[4:],) if desc.OutputIndicesDataType else ())

    def describe(self, case) -> str:
        idx = case.desc.OutputIndicesDataType
        return P.describe(case, [f"OutputIndicesDataType={idx}"] if idx is not None else [])

    def deviations(self) -> list[Deviation]:
        def no_indices(c):
            return not c.desc.OutputIndicesDataType

        return PD.shared(self, "maxpool", None, "MaxPool takes its windows from negative pads (wrong values and "
                                                "indices)",
                         ort_fails_negative_pad=lambda c: c.dtype in ("FLOAT32", "FLOAT16") and no_indices(c),
                         ort_negative_pad_text="ONNX Runtime 1.32 fails the run of float32 and float16 MaxPool without "
                                               "Indices ('padding values must be non-negative'); with Indices, and for "
                                               "int8/uint8, it splits the total as the formula gives it (the begin pad "
                                               "rounded toward zero), so with SAME_UPPER the windows shift into the "
                                               "input: the reading same-pads-shifted, which the bench allows") + [
            # ---- ONNX Runtime CPU EP
            self.deviation("ort-maxpool-f32-starts-at-lowest", ORT_CPU, "bug",
                           lambda c, x: c.dtype == "FLOAT32" and no_indices(c) and PD.answer_has_neg_inf(c, x),
                           "MaxPool float32 without Indices (MLAS kernels) starts its maximum at -FLT_MAX: a window "
                           "of -inf only gives -3.4028235e38, a value not in the window (so does a window of NaN "
                           "only on the kernel paths that skip NaN: ort-maxpool-nan)"),
            self.deviation("ort-maxpool-nan", ORT_CPU, "bug", PD.x_has_nan,
                           "MaxPool NaN, window by window one reading of open point nan or neither, so no reading "
                           "for the whole tensor: with Indices the scan starts at the window's first element and "
                           "compares with '>', so a NaN that comes first is kept (NaN, its index) while a later one "
                           "is skipped; without Indices it depends on the kernel path: NaN skipped (a window of NaN "
                           "only then gives -FLT_MAX in float32, -inf in float16), or a NaN replaces the running "
                           "maximum and the next element replaces the NaN (a window ending in NaN gives NaN, any "
                           "other the maximum of what follows its last NaN)"),
            self.deviation("ort-maxpool-signed-zero", ORT_CPU, "open point",
                           lambda c, x: no_indices(c) and signed_zeros(x["X"]),
                           "MaxPool without Indices: when -0.0 and +0.0 tie for the maximum the vectorised kernel "
                           "does not return the first element met (the reference's documented policy); with Indices "
                           "it does"),
            # ---- onnx.reference
            self.deviation("oref-maxpool-int8-stride1", ONNX_REFERENCE, "bug",
                           lambda c, x: c.dtype == "INT8" and PD.stride_1_path(c),
                           "MaxPool int8 with all strides and dilations 1: pads with NaN and fails "
                           "('cannot convert float NaN to integer')"),
            self.deviation("oref-maxpool-indices-stride1", ONNX_REFERENCE, "bug",
                           lambda c, x: not no_indices(c) and PD.stride_1_path(c),
                           "MaxPool Indices with all strides and dilations 1: the window argmax is unravelled with "
                           "the output's shape and batch/channel are left out, so Indices are wrong"),
            self.deviation("oref-maxpool-pads-order", ONNX_REFERENCE, "bug",
                           _stride_1_pads_read_in_another_order,
                           "MaxPool 2-D with all strides and dilations 1 reads pads as [top, bottom, left, right] "
                           "instead of ONNX's [h_begin, w_begin, h_end, w_end]: wrong output shape or a failure"),
            self.deviation("oref-maxpool-3d-pads-ignored", ONNX_REFERENCE, "bug",
                           _stride_1_padded_3d,
                           "MaxPool 3-D with all strides and dilations 1 ignores pads (IndexError)"),
            self.deviation("oref-maxpool-same-lower", ONNX_REFERENCE, "bug",
                           lambda c, x: c.v.get("auto_pad") == "SAME_LOWER" and not PD.stride_1_path(c),
                           "MaxPool auto_pad SAME_LOWER (strides or dilations not all 1): output size "
                           "floor(In/Stride) instead of ceil(In/Stride), pads placed as for SAME_UPPER"),
            self.deviation("oref-maxpool-nan", ONNX_REFERENCE, "open point", PD.x_has_nan,
                           "MaxPool NaN: skipped (stride-1 path, padding is marked with NaN) or kept only when first "
                           "in the window; the reference propagates NaN"),
            self.deviation("oref-maxpool-signed-zero", ONNX_REFERENCE, "open point",
                           lambda c, x: PD.stride_1_path(c) and signed_zeros(x["X"]),
                           "MaxPool with all strides and dilations 1 uses np.max, which returns the last of tying "
                           "zeros, not the first element met"),
        ]

    # -- sweep ----------------------------------------------------------------------------------
    def sweep(self, profile: str) -> list[Case]:
        check_profile(profile)
        cases = []
        geos = list(self.geometries(profile))
        n_fam = {"smoke": 1, "default": 3, "full": 99}[profile]
        for gi, (d0, variant) in enumerate(geos):
            for dt in ONNX_TYPES:
                for idx in (None, "UINT32", "UINT64"):
                    if variant.get("storage_order") and not idx:
                        continue
                    d = d0.replace(DataType=dt, OutputIndicesDataType=idx)
                    for fam in rotate(self.families(dt), gi + len(cases), n_fam):
                        cases.append(self.make_case(d, variant, fam))
        if profile == "smoke":
            cases = thin(cases, 30, "mp2-smoke")
        return cases + self._grid(profile) + self._exact_pads(profile)

    def _exact_pads(self, profile: str) -> list[Case]:
        """The ceil_mode rows of the sweep and of the grid, and ``_pool_family.EXACT_ROWS``, as graphs
        that carry their ONNX pads exactly (``exact_pads``), at every MaxPool opset with ceil_mode:
        values alone, with Indices, with Indices storage_order=1 in turn; the data type turns through
        those the opset carries."""
        def fields(gi, opset):
            types = ONNX_TYPES if opset >= 12 else ONNX_TYPES[:2]
            t = types[gi % len(types)]
            return [dict(DataType=t, OutputIndicesDataType=(None, "UINT32", "UINT64")[(gi + opset) % 3])]
        cases = self.exact_pads([o for o in self.opsets if o >= 10], fields,
                                lambda dt, i: rotate(self.families(dt), i, 1)[0])
        return [] if profile == "smoke" else cases

    def _grid(self, profile: str) -> list[Case]:
        """The ONNX attribute grid (``_pool_family.GRID``) at every MaxPool opset: per row, variant and
        opset, values alone, with Indices row-major and with Indices storage_order=1; the data type
        turns through those the opset carries."""
        def fields(gi, var, opset):
            types = ONNX_TYPES if opset >= 12 else ONNX_TYPES[:2]
            t = types[(gi + len(P.AUTO_PAD) * var["ceil_mode"] + P.AUTO_PAD.index(var["auto_pad"])) % len(types)]
            return [(dict(DataType=t, OutputIndicesDataType=None), {}),
                    (dict(DataType=t, OutputIndicesDataType="UINT32"), {}),
                    (dict(DataType=t, OutputIndicesDataType="UINT64"), {"storage_order": 1})]
        cases = self.grid(self.opsets, fields, lambda dt, i: rotate(self.families(dt), i, 1)[0])
        return [] if profile == "smoke" else cases

    # -- the sized profiles (from_export: MaxPool, Pad + MaxPool as timm's MaxPool2dSame, GlobalMaxPool) --
    def perf_cases(self) -> list[tuple[str, Case]]:
        """3x3 stride 2 pad 1 (a ResNet stem's), with and without indices."""
        out = []
        for idx in (None, "UINT64"):
            d = self.Desc(InputSizes=PERF_SIZES, DataType="FLOAT32", DimensionCount=2, Strides=(2, 2),
                          WindowSize=(3, 3), StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1),
                          OutputIndicesDataType=idx)
            out.append(("MaxPool 3x3 s2 p1" + (" +indices" if idx else ""), self.make_case(d, {}, "random")))
        return out

    def limits(self) -> list[Case]:
        """MaxPool at the boundaries of ``_limits``: batch and channels around 2^16 (the CUDA EP's
        cuDNN refusal of [65536, 1, 1, 512], window 1x2, stride 1x2, with and without Indices), outputs
        past 65,535 thread groups, global windows of 2^8 to 2^20 elements (GlobalMaxPool and one
        MaxPool node, the latter also with Indices), and Indices past 2^24, 2^31 and 2^32."""
        L = _limits

        def d(sizes, k, s, dt="FLOAT32", idx=None):
            nd = len(k)
            return MaxPooling2Desc(InputSizes=tuple(sizes), DataType=dt, DimensionCount=nd, Strides=tuple(s),
                                   WindowSize=tuple(k), StartPadding=(0,) * nd, EndPadding=(0,) * nd, Dilations=(1,) * nd,
                                   OutputIndicesDataType=idx)

        out = []
        for n in L.COUNTS:
            for dt in ("FLOAT32", "FLOAT16"):
                out.append(L.case(self, d((n, 1, 1, 512), (1, 2), (1, 2), dt), {}, "random", "count",
                                  f"batch {n}: [{n}, 1, 1, 512], window 1x2, stride 1x2"))
            out.append(L.case(self, d((n, 1, 1, 512), (1, 2), (1, 2), "FLOAT32", "UINT32"), {}, "real", "count",
                              f"batch {n} with Indices: [{n}, 1, 1, 512], window 1x2, stride 1x2"))
            out.append(L.case(self, d((1, n, 1, 512), (1, 2), (1, 2)), {}, "random", "count",
                              f"channels {n}: [1, {n}, 1, 512], window 1x2, stride 1x2"))
        for t in L.THREADS:
            n = L.groups_elements(t)
            h, w = L.near_square(n)
            out += [L.case(self, d((1, 1, 1, n), (1, 1), (1, 1)), {}, "random", "groups",
                           f"{n:,} outputs in one row (window 1x1): more than 65,535 groups of {t}"),
                    L.case(self, d((1, 1, 1, 2 * n), (1, 2), (1, 2)), {}, "random", "groups",
                           f"{n:,} outputs in one row (window 1x2, stride 1x2): more than 65,535 groups of {t}"),
                    L.case(self, d((1, 1, 2 * h, 2 * w), (2, 2), (2, 2), "FLOAT16"), {}, "random", "groups",
                           f"{h * w:,} outputs, {h}x{w} (window 2x2, stride 2): more than 65,535 groups of {t}")]
        for lg in L.WINDOW_LOG2:
            side = L.square_side(lg)
            what = f"a global window of {side}x{side} = 2^{lg} elements"
            for dt in ("FLOAT32", "FLOAT16"):
                g = d((1, 2, side, side), (side, side), (1, 1), dt)
                out += [L.case(self, g, {"form": "global"}, "random", "window", what + " (GlobalMaxPool)"),
                        L.case(self, g, {}, "random", "window", what + " (MaxPool)")]
            out.append(L.case(self, d((1, 2, side, side), (side, side), (1, 1), "FLOAT32", "UINT32"), {}, "real",
                              "window", what + " (MaxPool with Indices)"))
        big = "input of {:,} elements: Indices up to {:,}"
        for sizes, dt, idx, boundary in (((1, 1, 4097, 4097), "FLOAT32", "UINT32", "index-2^24"),
                                         ((1, 1, 4097, 4097), "FLOAT32", "UINT64", "index-2^24"),
                                         ((4, 1, 2049, 2049), "FLOAT32", "UINT32", "index-2^24"),
                                         ((1, 1, 46341, 46341), "FLOAT32", "UINT32", "index-2^31"),
                                         ((1, 1, 65537, 65537), "FLOAT16", "UINT64", "index-2^32")):
            n = math.prod(sizes)
            out.append(L.case(self, d(sizes, (2, 2), (2, 2), dt, idx), {}, "real", boundary,
                              f"{'x'.join(map(str, sizes))}, window 2x2, stride 2, {idx} Indices: " + big.format(n, n - 1)))
        return out

    # -- mutants: the judge's power (onnx-dml-bench mutants) ----------------------------------------
    def mutants(self) -> tuple:
        """Windows shifted by one, the last ceil_mode window, the index bugs (no batch or channel
        offset, the other storage order, wrapped past 2^31, one off, the last of equal maxima);
        legitimate: the Direct3D float32 flush, every allowed reading."""
        return (PM.shifted(), PM.ceil_flipped(), *PM.INDEX_CLASSES, M.D3D_FLUSH,
                M.alternatives_class())


# ---------------------------------------------------------------------------------------------
# Reference
# ---------------------------------------------------------------------------------------------

def _stride_1_pads_read_in_another_order(case, inputs=None) -> bool:
    """2-D, explicit pads, every stride and dilation 1, and [top, bottom, left, right] differs from
    ONNX's [h_begin, w_begin, h_end, w_end] (w_begin is not h_end)."""
    d = case.desc
    return (d.DimensionCount == 2 and PD.stride_1_path(case) and case.v.get("auto_pad", "NOTSET") == "NOTSET"
            and d.StartPadding[1] != d.EndPadding[0])


def _stride_1_padded_3d(case, inputs=None) -> bool:
    d = case.desc
    return d.DimensionCount == 3 and PD.stride_1_path(case) and (any(d.StartPadding) or any(d.EndPadding))




def nan_ignored(x: np.ndarray, base: dict, fn, want_indices: bool) -> dict:
    """The nan-ignored reading of open point nan: per window the maximum of its numbers and the
    index of the first one that holds it; a window of NaN only keeps ``base``'s answer (NaN, the
    index of its first NaN). ``fn(x2)``: the graph's outputs on other data of ``x``'s shape (one
    geometry reading); ``base``: its outputs on ``x``."""
    nan = np.isnan(x)
    alt = fn(np.where(nan, -np.inf, x).astype(x.dtype))
    only_nan = fn((~nan).astype(x.dtype))["Y"] == 0
    out = {k: np.where(only_nan, base[k], v) for k, v in alt.items()}
    low = np.isneginf(out["Y"]) & ~only_nan
    if want_indices and low.any() and nan.any():
        # numbers all -inf: the first -inf number wins, not a NaN made -inf before it
        first = fn((np.isneginf(x) & ~nan).astype(x.dtype))["Indices"]
        out["Indices"] = np.where(low, first, out["Indices"])
    return out


def max_pool(x: np.ndarray, desc, want_indices: bool, storage_order: int = 0):
    """Values (and DML indices as INT64, else None) of DML max pooling: per window, its first NaN or
    else its maximum, ties to the first element met, padding never (``_pooling.window_max``)."""
    return P.window_max(x, P.windows(desc), want_indices, storage_order)


def _index_points_at_max(x, ref_y, idx, storage_order: int):
    """(ok, coords): per output position, whether flat index ``idx`` lies in the input, belongs
    to the position's own batch and channel and points at an element equal to the expected
    maximum; and the spatial coordinates it names. The spatial part of the index is row-major,
    or column-major with storage_order=1 (batch and channel before it either way)."""
    idx = np.asarray(idx, dtype=np.int64)
    spatial = x.shape[2:]
    ok = (idx >= 0) & (idx < x.size)
    safe = np.where(ok, idx, 0)
    nc, sp = np.divmod(safe, int(np.prod(spatial)))
    n_out, c_out = np.indices(idx.shape[:2])
    ok &= nc == (n_out * x.shape[1] + c_out).reshape(*idx.shape[:2], *([1] * len(spatial)))
    coords = list(np.unravel_index(sp, spatial, order="F" if storage_order else "C"))
    vals = x[(nc // x.shape[1], nc % x.shape[1], *coords)]
    ok &= ((vals == ref_y) | (np.isnan(vals) & np.isnan(ref_y))) if x.dtype.kind == "f" else vals == ref_y
    return ok, coords


def onnx_indices_valid(x, case, ref_y, idx) -> np.ndarray:
    """tie_valid for a graph that is not an image: the index points, inside its output position's
    ONNX window, at an element equal to the expected maximum."""
    _, a, _ = O.case_node(case)
    ax, _ = O.axes(a, x.shape[2:])
    if np.shape(idx) != ref_y.shape:
        return np.zeros(ref_y.shape, dtype=bool)
    ok, coords = _index_points_at_max(x, ref_y, idx, a.storage_order)
    for i, q in enumerate(ax):
        o = np.arange(q.out).reshape([-1 if j == i else 1 for j in range(len(coords))])
        delta = coords[i] - (o * q.s - q.begin)
        ok &= (delta >= 0) & (delta < (q.k - 1) * q.d + 1) & (delta % q.d == 0)
    return ok


def indices_in_window_at_max(x, desc, ref_y, idx, storage_order: int = 0) -> np.ndarray:
    """tie_valid of the descriptor's window: the index points, inside its output position's
    window, at an element equal to the expected maximum."""
    ok, coords = _index_points_at_max(x, ref_y, idx, storage_order)
    outs = P.out_sizes(desc)
    for a in range(len(coords)):
        o = np.arange(outs[a]).reshape([-1 if i == a else 1 for i in range(len(coords))])
        delta = coords[a] - (o * desc.Strides[a] - desc.StartPadding[a])
        eff = (desc.WindowSize[a] - 1) * desc.Dilations[a] + 1
        ok &= (delta >= 0) & (delta < eff) & (delta % desc.Dilations[a] == 0)
    return ok


OP = MaxPooling2()
OPERATORS = (OP,)
