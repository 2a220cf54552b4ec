"""The pooling family: :class:`PoolingOperator`, the base of the DirectML pooling operators whose
ONNX graph is one pooling node (MaxPool, AveragePool, ...) or another form of it (``_pool_forms``),
and the geometry table their sweeps share (:data:`GEOMETRIES`, :data:`GRID`, :data:`EXACT_ROWS`).

A member declares what sets it apart — its ONNX op and global op, its forms, its optional indices,
the Pad form's value and what that form decides of the descriptor, the attributes its node adds,
whether its ONNX window counts the pad pixels (the divisor hook) and how a window reduces (the
reduction hook) — and the family's modules read those declarations: ``_onnx_pool`` (the ONNX
text), ``_pool_forms`` (the other graphs) and ``_pooling`` (geometry, ONNX attributes, window
walks) name no operator. What every member does alike (the ONNX-side options, case files, the
graph and its answer by the ONNX text, the census's exports, the ONNX grids of the sweep, the
reducer's dropped axis, the direct lane's re-typed descriptors) is written here once.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from ..cases import Case
from . import _onnx_pool as O
from . import _pool_forms as F
from . import _pooling as P
from ._sweep import Params, params, table
from .base import DescriptorError, Fragment, Operator, tensor_info


class PoolingOperator(Operator):
    """A member of the pooling family (see the module text). Required beside :class:`Operator`'s
    own: ``onnx_op`` and :meth:`onnx_reduce`; the rest has defaults."""

    # -- what the family's modules read ----------------------------------------------------------
    #: the ONNX pooling op of its graphs, e.g. "MaxPool"
    onnx_op: ClassVar[str]
    #: the op of its ``global`` form (None: no global form)
    global_op: ClassVar[str | None] = None
    #: its ONNX forms (``_pool_forms.FORMS``); its ``variant_keys["form"]``
    forms: ClassVar[tuple[str, ...]] = ("pool",)
    #: what a window without an input element lacks, where its ONNX count takes no pad pixels
    #: (such a graph is refused: ``_onnx_pool.check``)
    empty_window: ClassVar[str] = "no element to reduce"
    #: the opsets whose ONNX text gives the floor formulas for auto_pad without ceil_mode (rule
    #: ``avgpool11-auto-pad-floor``); none by default
    floor_text_opsets: ClassVar[range] = range(0)
    #: the descriptor field of its optional indices output's data type (None: no indices)
    indices_field: ClassVar[str | None] = None
    #: form ``pad`` with padding: the descriptor fields the Pad node decides, and why
    pad_form_fields: ClassVar[dict[str, Any]] = {}
    pad_form_why: ClassVar[str] = ""

    def __init__(self):
        O.join(self)

    def onnx_reduce(self, x: np.ndarray, a, ax, want_indices: bool = False) -> dict[str, np.ndarray]:
        """The reduction hook: the outputs of the ONNX node ``a`` (``_onnx_pool.Attrs``) on ``x``,
        given its windows ``ax`` (``_onnx_pool.Axis`` per spatial axis; the graph is checked)."""
        raise NotImplementedError

    def counts_pads(self, a) -> bool:
        """The divisor hook: does node ``a``'s window count take its pad pixels (rule 8 of
        ``_onnx_pool``: AveragePool's count_include_pad)? The default: no, input elements only."""
        return False

    def pad_value(self, dml_type: str):
        """The value the Pad node of form ``pad`` pads with. The default: 0."""
        return 0

    def node_attrs(self, case) -> dict:
        """The attributes the operator adds to its pooling node beyond the geometry (kernel,
        strides, dilations, pads, auto_pad, ceil_mode). The default: none."""
        return {}

    def global_attrs(self, case) -> dict:
        """The attributes of its global node (form ``global``). The default: none."""
        return {}

    def pad_node_attrs(self, case, attrs: dict) -> dict:
        """The attributes of the pooling node after the Pad node of form ``pad`` (``attrs``: the
        case's node without its pads). The default: ``attrs``."""
        return attrs

    def export_fields(self, form: str, count_include_pad: int, padded: bool) -> tuple[dict, dict]:
        """The descriptor fields (other than the geometry) and ONNX-side options of a census graph
        of form ``form`` whose node has ``count_include_pad`` and whose Pad node pads (``padded``).
        The default: none."""
        return {}, {}

    def check_options(self, case) -> None:
        """The operator's own rules on its ONNX-side options (after the family's). The default: none."""

    def indices(self, desc) -> str | None:
        """The data type of the descriptor's indices output (None: none)."""
        return getattr(desc, self.indices_field) if self.indices_field else None

    # -- the descriptor and its ONNX-side options --------------------------------------------------
    def output_shape(self, desc) -> tuple[int, ...]:
        return P.output_shape(desc)

    def check_variant(self, case) -> None:
        super().check_variant(case)
        F.check(case)
        P.check_variant(case)
        self.check_options(case)
        O.check_case(case)

    def normalize(self, case):
        return P.normalize(F.normalize(case))

    def canonical(self, case):
        return P.canonical(case)

    def onnx_options(self, case) -> dict:
        return P.onnx_options(case)

    def fill_descriptor(self, desc: dict, onnx_opts: dict) -> dict:
        return P.fill_descriptor(desc, onnx_opts)

    def at_opset(self, case, opset: int):
        return P.canonical(dataclasses.replace(case, opset=opset))

    def memory_bytes(self, desc) -> int:
        """The base estimate, and the INT64 indices of the three sides where the descriptor has them."""
        extra = 24 * int(np.prod(self.output_shape(desc))) if self.indices(desc) else 0
        return super().memory_bytes(desc) + extra

    def retype(self, desc, level: str, dtype: str):
        """As :meth:`Operator.retype`; indices that the level does not allow fall back to UINT32,
        then to none."""
        d = desc.replace(DataType=dtype, FeatureLevel=level)
        tries = [d]
        if self.indices(d):
            tries += [d.replace(**{self.indices_field: "UINT32"}), d.replace(**{self.indices_field: None})]
        for cand in tries:
            try:
                self.validate(cand)
                return cand
            except DescriptorError:
                continue
        return None

    def shrink_candidates(self, case) -> list:
        """3-D pooling -> 2-D: a spatial axis of size 1 with a window of 1 and no padding takes no
        part in the result; each such axis dropped from the descriptor (every DimensionCount-long
        field)."""
        d = case.desc
        if d.DimensionCount != 3:
            return []
        out = []
        for i in range(3):
            if d.InputSizes[2 + i] != 1 or d.WindowSize[i] != 1 or d.StartPadding[i] or d.EndPadding[i]:
                continue
            changes = {f.name: tuple(x for j, x in enumerate(getattr(d, f.name)) if j != i)
                       for f in dataclasses.fields(d)
                       if isinstance(getattr(d, f.name), tuple) and len(getattr(d, f.name)) == 3}
            changes["InputSizes"] = tuple(d.InputSizes[:2 + i]) + tuple(d.InputSizes[3 + i:])
            changes["DimensionCount"] = 2
            try:
                out.append(dataclasses.replace(case, desc=d.replace(**changes)))
            except (TypeError, ValueError):
                continue
        return out

    # -- the ONNX graph and its answer ---------------------------------------------------------------
    def outputs(self, case):
        """The graph's outputs: shapes by the ONNX text (the DML shapes where the graph is an image;
        a size the text leaves open is None, ``_onnx_pool.declared_shape``); indices as INT64."""
        _, a, _ = O.case_node(case)
        shape = F.output_shape(case, O.declared_shape(a, case.desc.InputSizes))
        out = {"Y": (shape, case.desc.DataType)}
        if self.indices(case.desc):
            out["Indices"] = (shape, "INT64")
        return out

    def dml_image(self, case) -> str | None:
        """None: the graph is the direct image of the descriptor; else why not."""
        return O.image_reason(case)

    def build(self, case, prefix: str) -> Fragment:
        d = case.desc
        attrs, _, _ = O.case_node(case)
        if F.form(case) != "pool":
            nodes, inits, ins, outs = F.build(case, prefix, attrs, self.outputs(case)["Y"][0])
            return Fragment(ins, outs, nodes, inits, {"X": prefix + "X"}, {"Y": prefix + "Y"})
        x = prefix + "X"
        outs, names = [], {}
        for name, (shape, kind) in self.outputs(case).items():
            outs.append(tensor_info(prefix + name, kind, shape))
            names[name] = prefix + name
        node = P.make_node(self.onnx_op, [x], list(names.values()), prefix + self.onnx_op, attrs)
        return Fragment(inputs=[tensor_info(x, d.DataType, d.InputSizes)], outputs=outs, nodes=[node],
                        input_names={"X": x}, output_names=names)

    def expected(self, case, inputs) -> dict[str, np.ndarray]:
        """The answer of the case's ONNX graph by the ONNX text of its opset (``_onnx_pool``); a form
        other than one pooling node: the descriptor's reference (``_pool_forms``). That of the last
        inputs asked about is kept, its arrays read-only: a judgement asks for it twice (the answer
        judged against, and the ONNX-vs-DML difference of :meth:`_onnx_points`)."""
        x = inputs["X"]
        memo = getattr(self, "_expected_memo", None)
        if memo is not None and memo[0] is x and memo[1] == case.id:
            return dict(memo[2])
        self._expected_memo = None                     # the last case's arrays go before the new ones come
        if F.form(case) != "pool":
            out = F.expected(case, self.reference(case, inputs))
        else:
            _, a, _ = O.case_node(case)
            out = O.run(x, a, want_indices=bool(self.indices(case.desc)))
        out = {k: _read_only(v) for k, v in out.items()}
        self._expected_memo = (x, case.id, out)
        return dict(out)

    def rules(self, case, inputs) -> tuple[str, ...]:
        return O.split_points(self._onnx_points(case, inputs))[1]

    def _onnx_points(self, case, inputs) -> tuple[str, ...]:
        """Open points and rules of the ONNX text the graph touches, and ONNX-vs-DML differences of an
        image (none for a form other than one pooling node: its answer is the descriptor's reference).
        Those of the last inputs asked about are kept: a judgement asks for them three times, and the
        ONNX-vs-DML difference computes both answers."""
        x = inputs["X"]
        memo = getattr(self, "_points_memo", None)
        if memo is not None and memo[0] is x and memo[1] == case.id:
            return memo[2]
        diff = O.onnx_vs_dml(self, case, inputs) if F.form(case) == "pool" else []
        out = tuple(O.check_case(case)) + tuple(diff)
        self._points_memo = (x, case.id, out)
        return out

    # -- the sweep ----------------------------------------------------------------------------------
    def geometries(self, profile: str):
        """(descriptor without data type, ONNX-side variant) of each geometry row the operator sweeps
        in ``profile`` (:data:`GEOMETRIES`, and :data:`FULL` in profile full), in table order."""
        for r in rows_of(self.key, profile):
            yield geometry(self.Desc, r.sizes, r.kernel, r.strides, r.begin, r.end, r.dilations, r.variant), r.variant

    def exact_rows(self) -> list:
        """The geometry rows whose ceil_mode graphs carry their ONNX pads exactly
        (:meth:`exact_pads`): the operator's ceil_mode rows (auto_pad NOTSET) of the default
        sweep, then :data:`GRID` and :data:`EXACT_ROWS`."""
        ceil = [r for r in rows_of(self.key, "default")
                if r.variant.get("ceil_mode") and r.variant.get("auto_pad", "NOTSET") == "NOTSET"]
        return ceil + list(GRID) + list(EXACT_ROWS)

    def exact_pads(self, opsets, fields_list, families_of) -> list[Case]:
        """Cases whose graphs carry the ONNX pads of :meth:`exact_rows` exactly, with ceil_mode=1 (the
        option ``pads``; the descriptor is the one they map to), at each opset of ``opsets`` where the
        graph can carry them, with each descriptor field set of ``fields_list`` (a callable (row
        index, opset) -> list of field dicts). A row whose pads the descriptor gives anyway is
        already a case without the option (left out here)."""
        cases = []
        var = {"ceil_mode": 1}
        for opset in opsets:
            for gi, r in enumerate(self.exact_rows()):
                nd = len(r.kernel)
                pads = tuple(r.begin or (0,) * nd) + tuple(r.end or (0,) * nd)
                for fields in fields_list(gi, opset):
                    try:
                        d = geometry(self.Desc, r.sizes, r.kernel, r.strides, r.begin, r.end, r.dilations,
                                       var).replace(**fields)
                        self.validate(d)
                        case = self.make_case(d, {**var, "pads": pads}, families_of(d.DataType, len(cases)), opset)
                        self.check_variant(case)
                    except DescriptorError:
                        continue
                    if case.v.get("pads") is not None and self.expressible(case) is None:
                        cases.append(case)
        return cases

    def grid(self, opsets, fields_list, families_of) -> list[Case]:
        """Cases of the ONNX attribute grid: every :data:`GRID` row under every :data:`GRID_VARIANTS`
        at every opset, with each descriptor field set of ``fields_list`` (a callable (row index,
        variant, opset) -> list of (field dict, extra variant)); rows and variants the graph cannot
        carry at an opset (attribute missing), or whose derived graph has a ceil_mode window
        starting in the end padding before opset 22 (:meth:`exact_pads` carries those rows' own
        pads), are left out."""
        cases = []
        for opset in opsets:
            for gi, r in enumerate(GRID):
                for var in GRID_VARIANTS:
                    for fields, extra in fields_list(gi, var, opset):
                        v = {key: val for key, val in {**var, **extra}.items() if val not in (0, "NOTSET")}
                        try:
                            d = geometry(self.Desc, r.sizes, r.kernel, r.strides, r.begin, r.end, r.dilations,
                                           v).replace(**fields)
                            self.validate(d)
                            fam = families_of(d.DataType, len(cases))
                            case = self.make_case(d, v, fam, opset)
                            self.check_variant(case)
                        except DescriptorError:
                            continue
                        if "ceil-last-window" in self.open_points(case, {"X": np.zeros(d.InputSizes, np.float32)}):
                            continue       # a neighbouring graph (pads derived before opset 22): the row's own
                                           # pads are a case of exact_pads
                        if self.expressible(case) is None:
                            cases.append(case)
        return cases

    def curated_case(self, geo: tuple, variant: dict, family: str, opset: int | None = None, **fields):
        """A curated case: a geometry (sizes, kernel, strides, start pads, end pads, dilations) seen
        from the ONNX side, with descriptor fields set (DataType, ...)."""
        d = geometry(self.Desc, *geo, variant).replace(**fields)
        return self.make_case(d, variant, family, opset)

    # -- the census's exports (profile networks) ---------------------------------------------------
    def from_export(self, e) -> list:
        """The descriptor (float32, no indices) and ONNX-side options of an exported pooling graph —
        one pooling node, Pad + pooling node, the global node, or ReduceMean over the spatial axes
        (where the operator has that form). Graphs of another shape, 1-D pooling (DML pooling is
        4-D or 5-D), a ReduceMean over other axes (a mean over an NHWC tensor's spatial axes), and
        descriptors the operator refuses give []."""
        if not e.inputs or len(e.inputs[0]) not in (4, 5):
            return []
        sizes = tuple(e.inputs[0])
        nd = len(sizes) - 2
        zeros, ones = (0,) * nd, (1,) * nd
        node = e.node(-1)
        variant: dict = {}
        def global_window(form: str):
            extra, _ = self.export_fields(form, 0, False)
            return self.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=nd, Strides=ones,
                             WindowSize=sizes[2:], StartPadding=zeros, EndPadding=zeros, Dilations=ones, **extra)

        if self.global_op is not None and e.ops == self.global_op:
            desc = global_window("global")
            variant = {"form": "global"}
        elif "reduce_mean" in self.forms and e.ops == "ReduceMean":
            axes = e.const(node, 1, e.attr(node, "axes"))
            reading = F.spatial_axes(axes or [], len(sizes))
            if reading is None:
                return []
            desc = global_window("reduce_mean")
            variant = {"form": "reduce_mean", "axes": reading}
            if not e.attr(node, "keepdims", 1):
                variant["keepdims"] = 0
        elif e.ops in (self.onnx_op, f"Pad+{self.onnx_op}"):
            if e.attr(node, "auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET") or e.attr(node, "storage_order", 0):
                return []
            k = tuple(e.attr(node, "kernel_shape"))
            s = tuple(e.attr(node, "strides", ones))
            dil = tuple(e.attr(node, "dilations", ones))
            pads = tuple(e.attr(node, "pads", zeros + zeros))
            ceil = int(e.attr(node, "ceil_mode", 0))
            cip = int(e.attr(node, "count_include_pad", 0))
            if e.ops.startswith("Pad+"):
                p = e.const(e.node(0), 1)
                r = len(sizes)
                if any(pads) or ceil or p is None or len(p) != 2 * r or any(p[i] for i in (0, 1, r, r + 1)):
                    return []
                pads = tuple(p[2:r]) + tuple(p[r + 2:])
                extra, own = self.export_fields("pad", cip, any(pads))
                variant = {"form": "pad", **own}
            else:
                if ceil:
                    variant["ceil_mode"] = 1
                extra, _ = self.export_fields("pool", cip, False)
            desc = geometry(self.Desc, sizes, k, s, pads[:nd], pads[nd:], dil, variant, **extra)
        else:
            return []
        case = self.make_case(desc, variant, "random", e.opset)
        try:
            self.validate(desc)
            self.check_variant(case)
        except DescriptorError:
            return []
        return [(desc, variant)]


# ---------------------------------------------------------------------------------------------
# The geometry table of the sweeps
# ---------------------------------------------------------------------------------------------

#: a geometry row: InputSizes, WindowSize, Strides, StartPadding, EndPadding, Dilations seen from
#: the ONNX side (None pads: filled in by auto_pad; with ceil_mode the end pads are ONNX's), the
#: ONNX-side variant, and ``of``: the operators whose sweep takes the row (:data:`EVERY`: every
#: member of the family, else their keys)
ROW = "sizes kernel strides begin end dilations variant of"
EVERY = "*"
_MP, _AP = ("max_pooling2",), ("average_pooling1",)

#: the rows of the sweeps, in sweep order: each operator takes its own (:func:`rows_of`), so the
#: order of each operator's rows (and the ids and family rotation of its cases) is the table's
GEOMETRIES = table(
    ROW,
    ((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), {}, EVERY),
    ((1, 1, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), {}, EVERY),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 0), (0, 1), (1, 1), {}, EVERY),        # asymmetric padding
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (2, 2), {}, EVERY),        # dilations
    ((1, 2, 9, 7), (2, 3), (1, 2), (0, 1), (1, 2), (3, 1), {}, EVERY),        # dilations, mixed
    ((2, 2, 6, 6), (2, 2), (3, 3), (0, 0), (0, 0), (1, 1), {}, EVERY),        # stride larger than window
    ((1, 3, 5, 6), (5, 6), (1, 1), (0, 0), (0, 0), (1, 1), {}, EVERY),        # window equal to input
    ((1, 2, 6, 6), (3, 3), (1, 1), (2, 2), (2, 2), (1, 1), {}, _AP),          # pads as large as the window less 1
    ((1, 1, 10, 10), (4, 4), (3, 3), (1, 2), (2, 1), (2, 2), {}, _AP),
    ((3, 2, 5, 9), (1, 3), (1, 1), (0, 1), (0, 1), (1, 1), {}, EVERY),
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1), {}, _MP),
    ((2, 4, 10, 3), (4, 2), (3, 1), (2, 1), (1, 0), (1, 2), {}, _MP),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (2, 2), (1, 1), {"ceil_mode": 1}, _MP),
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (0, 0), (1, 1), {"ceil_mode": 1}, _AP),
    ((1, 1, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), (1, 1), {"ceil_mode": 1}, EVERY),
    ((2, 2, 8, 5), (3, 2), (2, 2), (0, 0), (1, 1), (2, 1), {"ceil_mode": 1}, _MP),
    ((1, 2, 7, 6), (3, 3), (2, 2), None, None, (1, 1), {"auto_pad": "SAME_UPPER"}, EVERY),
    ((1, 2, 7, 6), (2, 2), (1, 1), None, None, (1, 1), {"auto_pad": "SAME_LOWER"}, EVERY),
    ((2, 1, 8, 9), (3, 2), (2, 3), None, None, (2, 2), {"auto_pad": "SAME_UPPER"}, EVERY),
    ((1, 2, 6, 7), (3, 3), (2, 1), (0, 0), (0, 0), (1, 1), {"auto_pad": "VALID"}, EVERY),
    ((2, 3, 5, 4), (2, 2), (1, 1), (0, 1), (1, 0), (1, 1), {"storage_order": 1}, _MP),
    ((1, 2, 6, 8), (3, 2), (2, 2), (1, 0), (1, 1), (1, 2), {"storage_order": 1}, _MP),
    ((1, 1, 4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1), {}, EVERY),
    ((2, 2, 5, 4, 6), (3, 2, 3), (1, 2, 2), (1, 0, 1), (1, 1, 0), (1, 1, 1), {}, EVERY),
    ((1, 2, 6, 6, 5), (2, 2, 2), (2, 1, 2), (0, 1, 0), (1, 0, 1), (2, 2, 1), {}, EVERY),
    ((1, 1, 4, 5, 6), (2, 3, 2), (3, 3, 3), (0, 0, 0), (0, 0, 0), (1, 1, 1), {}, _MP),
    ((1, 2, 5, 5, 5), (3, 3, 3), (2, 2, 2), (1, 1, 1), (2, 2, 2), (1, 1, 1), {"ceil_mode": 1}, _MP),
    ((1, 2, 5, 5, 5), (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), {"ceil_mode": 1}, _AP),
    ((1, 1, 5, 4, 6), (2, 2, 3), (2, 2, 2), None, None, (1, 1, 1), {"auto_pad": "SAME_LOWER"}, EVERY),
    ((1, 2, 3, 4, 5), (2, 2, 2), (1, 1, 1), (0, 0, 1), (1, 0, 0), (1, 1, 1), {"storage_order": 1}, _MP),
)

#: the rows profile ``full`` adds (after :data:`GEOMETRIES`): kernels x strides x dilations over a
#: few inputs, begin pads up to the window less 1 (at most 1, no end pads: MaxPool; at most 2 on
#: both ends: AveragePool)
_KERNELS = ((1, 1), (2, 2), (3, 3), (2, 5))
FULL = (
    params().combine("sizes", ((1, 3, 11, 13), (2, 1, 16, 16))).combine("kernel", _KERNELS)
    .combine("strides", ((1, 1), (2, 2), (3, 2))).combine("dilations", ((1, 1), (2, 3)))
    .expand("begin", lambda r: [tuple(min(k - 1, 1) for k in r.kernel)]).combine("end", [(0, 0)])
    .combine("variant", [{}]).combine("of", [_MP])
    + params().combine("sizes", [(1, 3, 16, 15)]).combine("kernel", _KERNELS + ((7, 7),))
    .combine("strides", ((1, 1), (2, 2), (3, 2))).combine("dilations", ((1, 1), (2, 3)))
    .expand("begin", lambda r: [tuple(min(k - 1, 2) for k in r.kernel)]).expand("end", lambda r: [r.begin])
    .combine("variant", [{}]).combine("of", [_AP])
)


def rows_of(key: str, profile: str) -> list:
    """The geometry rows operator ``key`` sweeps in ``profile``, in table order."""
    rows = GEOMETRIES + FULL if profile == "full" else GEOMETRIES
    return [r for r in rows if r.of == EVERY or key in r.of]


_GEO = "sizes kernel strides begin end dilations"

#: the ONNX attribute grid every pooling operator sweeps (appended after every older row, so the
#: ids and family rotation of the older cases do not move): ONNX-side geometry rows, each under
#: every auto_pad x ceil_mode at every opset where the graph can carry it. Row 1: ceil_mode
#: overhang and odd SAME totals; row 2: stride larger than the kernel (SAME's pad formula negative
#: on H); rows 3 and 4: dilations (ONNX needs opset 10 for MaxPool, 19 for AveragePool), 3-D.
GRID: Params = table(
    _GEO,
    ((1, 2, 5, 7), (3, 2), (2, 3), (1, 0), (1, 1), (1, 1)),
    ((2, 1, 6, 5), (2, 2), (3, 3), (0, 0), (1, 1), (1, 1)),
    ((1, 2, 7, 8), (2, 3), (2, 2), (1, 1), (1, 0), (2, 2)),
    ((1, 1, 5, 4, 6), (2, 3, 2), (2, 2, 3), (0, 1, 0), (1, 1, 1), (1, 1, 2)),
)
GRID_VARIANTS = [dict(auto_pad=ap, ceil_mode=cm) for ap in P.AUTO_PAD for cm in (0, 1)]

#: ONNX-side geometry rows (as GRID's) whose graphs only carry their pads exactly with ceil_mode=1:
#: ONNX Runtime's test AveragePool_19_ceil_count_include_pad_1d as a 2-D pooling (pads 3, its last
#: window past the end pad: count_include_pad's divisor), a last window that starts in the end
#: padding on H (dropped from opset 22, an open point before), and one on both axes
EXACT_ROWS: Params = table(
    _GEO,
    ((1, 2, 1, 9), (1, 7), (1, 3), (0, 3), (0, 3), (1, 1)),
    ((1, 2, 4, 5), (2, 2), (2, 2), (0, 0), (1, 1), (1, 1)),
    ((1, 1, 5, 7), (3, 3), (2, 2), (1, 1), (3, 2), (1, 1)),
)


def label(desc, variant: dict, extra: tuple[str, ...] = ()) -> str:
    """The geometry part of a pooling case id: dims, kernel, strides, pads, dilations, then the
    operator's ``extra`` parts, then the ONNX-side options that change the graph."""
    j = lambda a: "x".join(map(str, a))  # noqa: E731
    parts = [f"{desc.DimensionCount}d", f"k{j(desc.WindowSize)}", f"s{j(desc.Strides)}",
             f"p{''.join(map(str, desc.StartPadding + desc.EndPadding))}", f"d{j(desc.Dilations)}", *extra]
    for k, val in sorted(variant.items()):
        if k == "ceil_mode" and val:
            parts.append("ceil")
        elif k == "pads" and val is not None:
            parts.append("onnxp" + "".join(map(str, val)))
        elif k == "auto_pad" and val != "NOTSET":
            parts.append(val.lower().replace("_", ""))
        elif k == "storage_order" and val:
            parts.append("colmajor")
    return "-".join(parts + F.label_parts(variant))


def geometry(D, sizes, k, s, sp, ep, dil, variant: dict, **fields):
    """A pooling descriptor of class D from the ONNX-side view of a geometry: auto_pad SAME fills
    in the pads, VALID clears them; ceil_mode with explicit pads turns ONNX end pads into the DML
    EndPadding that gives the same output (DML has no ceil_mode; under SAME and VALID ceil_mode
    changes nothing, by the ONNX text)."""
    nd = len(k)
    d = D(InputSizes=tuple(sizes), DataType="FLOAT32", DimensionCount=nd, Strides=tuple(s), WindowSize=tuple(k),
          StartPadding=tuple(sp or (0,) * nd), EndPadding=tuple(ep or (0,) * nd), Dilations=tuple(dil), **fields)
    if variant.get("auto_pad", "").startswith("SAME"):
        b, e = P.same_pads(d, variant["auto_pad"])
        d = d.replace(StartPadding=b, EndPadding=e)
    elif variant.get("auto_pad") == "VALID":
        d = d.replace(StartPadding=(0,) * nd, EndPadding=(0,) * nd)
    if variant.get("ceil_mode") and variant.get("auto_pad", "NOTSET") == "NOTSET":
        eff = P.effective_window(d)
        ends = []
        for i in range(nd):
            n_in = sizes[i + 2]
            want = P.ceil_out(n_in, eff[i], s[i], d.StartPadding[i], d.EndPadding[i])
            ends.append(max(0, (want - 1) * s[i] + eff[i] - n_in - d.StartPadding[i]))
        d = d.replace(EndPadding=tuple(ends))
    return d


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (``a`` itself, and any array it is a view of, untouched)."""
    v = a.view()
    v.flags.writeable = False
    return v
