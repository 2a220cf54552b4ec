"""ONNX MaxPool / AveragePool (and any other member of the pooling family) as the ONNX operator
specification of each opset defines them, in NumPy. This is the contract an execution provider
implements for an ONNX graph; it is written from the schema texts (``onnx.defs.get_schema(op, opset).doc`` and the attribute descriptions), never by
calling onnx.reference or ONNX Runtime. The DirectML semantics of the descriptors live in
``_pooling.py`` and the operator modules; a case whose graph is the direct image of its descriptor
is judged against both.

Versions: MaxPool 1, 8 (Indices output, storage_order), 10 (ceil_mode, dilations), 11, 12 (int8 /
uint8), 22 (bfloat16, last-window sentence); AveragePool 1, 7 (count_include_pad), 10 (ceil_mode),
11 (new auto_pad formulas in the text), 19 (dilations), 22 (last-window sentence).

Rules, per spatial axis (n input size, k kernel, s stride, d dilation, eff = (k - 1) * d + 1):

1. Explicit pads (auto_pad NOTSET). "output_spatial_shape[i] = floor((input_spatial_shape[i] +
   pad_shape[i] - ((kernel_spatial_shape[i] - 1) * dilations[i] + 1)) / strides_spatial_shape[i]
   + 1)", "or ceil(...) if ceil_mode is enabled". A padded input shorter than eff has no output
   (refused).
2. ceil_mode, last window. Opset 22 adds: "Sliding windows that would start in the right padded
   region are ignored": a window whose first element lies at or after n (input coordinates) is
   dropped. Before 22 the text has only the ceil formula, and ONNX's own shape inference keeps such
   a window, while ONNX Runtime (and PyTorch, whose formula the text cites) drop it. Such a window
   holds no input element, so its value is not defined either way. The bench drops it at every
   opset (the reference); before opset 22 a graph with such a window touches open point
   ``ceil-last-window``, whose other reading keeps the window (the formula's size), its value
   free (:func:`kept_last_windows`).
3. auto_pad VALID: no padding; "VALID: output_spatial_shape[i] = floor((input_spatial_shape[i] -
   ((kernel_spatial_shape[i] - 1) * dilations[i] + 1)) / strides_spatial_shape[i]) + 1" (opset
   12+/19+ text with ceil_mode disabled); with ceil_mode enabled the text gives "ceil((input - eff
   + 1) / strides)", which is the same number: ceil_mode changes nothing under VALID.
4. auto_pad SAME_UPPER / SAME_LOWER: "output_spatial_shape[i] = ceil(input_spatial_shape[i] /
   strides_spatial_shape[i])" (with or without ceil_mode) and "pad_shape[i] = (output_spatial_shape[i]
   - 1) * strides_spatial_shape[i] + ((kernel_spatial_shape[i] - 1) * dilations[i] + 1) -
   input_spatial_shape[i]" (the dilated window: opset 10+). "In case the padding is an odd number,
   the extra padding is added at the end for SAME_UPPER and at the beginning for SAME_LOWER."
   With a stride larger than the window the formula can go negative; the text does not clamp it,
   but pads "can take any value greater than or equal to 0": the bench clamps the total to 0 and
   flags open point ``same-negative-pad`` (an implementation that splits a negative total shifts
   the windows).
5. AveragePool opset 11-18 text, ceil_mode disabled: "VALID: floor((input - eff + 1) / strides)",
   "SAME_UPPER or SAME_LOWER: floor(input / strides)". Those contradict the auto_pad attribute of
   the same version ("output_shape[i] = ceil(input_shape[i] / strides[i])"), opset 10 and 19, and
   ONNX's shape inference. The bench follows rules 3 and 4 (rule ``avgpool11-auto-pad-floor``,
   flagged on the cases where the opset-11 formulas give another size).
6. MaxPool: "The output of each pooling window is maximum number of elements exclude pad":
   padding never wins; a window with no input element has no maximum (refused). Ties: the text
   does not say which index; the answer is the first element in window scan order and the
   comparison accepts any index of an equal element (tie-aware). NaN: not said (the DirectML open
   point 'nan' covers it; the bench propagates NaN as it does for DirectML).
7. Indices: "computed as flatten 1-D tensor ... do not consider padding ... in [0, N x C x D1 x
   ... x Dn)"; storage_order "0 is row major, and 1 is column major ... used only to convert an
   n-tuple index value into a single integer". The text does not say whether batch and channel
   take part in the column-major order: the bench keeps them as the row-major outer part (batch,
   channel) and orders the spatial tuple column-major, as ONNX Runtime does: rule
   ``storage-order-batch-channel``, flagged where N x C > 1 (where the readings differ).
8. AveragePool divisor: "divided by the number of elements (exclude pad when attribute
   count_include_pad is zero)". count_include_pad 0: the input elements of the window (none:
   refused). count_include_pad 1: input elements and pad pixels, the pixels the ``pads`` (or the
   SAME pads) add. With ceil_mode a window can reach past the end pad: the text could be read as
   counting those positions too (the whole kernel, as DirectML's IncludePadding TRUE does). ONNX
   Runtime, PyTorch (whose formula the text cites) and ONNX's own node test
   averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True agree on the other
   reading: only input and pad pixels count. The bench holds every EP to that: rule
   ``ceil-overhang-divisor`` (a rule, not an open point: one allowed answer).
9. Arithmetic: the exact average rounded once to the output type (sums in float64), as the
   DirectML reference does.

No operator is named below: what tells the family's members apart (the reduction, whether a window's
count takes the pad pixels, the opsets of rule 5, the node's own attributes) is what each declares
on its ``PoolingOperator`` (``ops/_pool_family.py``), found by its ONNX op (:func:`member`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import _pooling as P
from .base import Alternative, DescriptorError

SAME = ("SAME_UPPER", "SAME_LOWER")

#: the pooling family: ONNX op -> the operator whose graphs it is (each ``PoolingOperator`` joins
#: when it is made)
FAMILY: dict[str, object] = {}


def join(op) -> None:
    """Make ``op`` the member of the family for its ONNX op (``op.onnx_op``); another operator's
    op is refused."""
    known = FAMILY.setdefault(op.onnx_op, op)
    if type(known) is not type(op):
        raise ValueError(f"ONNX op {op.onnx_op!r} is already the pooling operator {known.key!r}'s")


def member(op_type: str):
    """The pooling operator whose ONNX op is ``op_type``; any other op raises."""
    try:
        return FAMILY[op_type]
    except KeyError:
        raise ValueError(f"{op_type!r} is not the ONNX op of a pooling operator "
                         f"(the family: {', '.join(FAMILY) or 'none'})") from None

#: open points of the ONNX text the ONNX-side semantics can touch, and the rules the bench takes
#: where the text is terse or contradicts itself (key -> what and the bench's rule or allowed answers)
OPEN_POINT_TEXTS = {
    "ceil-last-window": "ONNX before opset 22 gives ceil_mode only a formula; opset 22 adds that windows "
                        "starting in the right padded region are ignored. ONNX shape inference keeps them before 22, "
                        "ONNX Runtime and PyTorch drop them. Allowed before opset 22: dropped (the reference, what "
                        "opset 22 states) or kept (the formula's output size; such a window holds no input "
                        "element, so any value there is allowed).",
    "auto-pad-ceil-mode": "auto_pad VALID (or SAME with a negative pad total) with ceil_mode=1: the ONNX text's "
                          "formula gives the floor size, ONNX shape inference and ONNX Runtime the explicit-pad ceil "
                          "formula. The bench refuses such graphs until the text and the implementations agree.",
    "same-negative-pad": "auto_pad SAME with a stride larger than the dilated window: the ONNX pad formula is "
                         "negative and the text does not clamp it, while pads must be >= 0. Allowed: the total "
                         "clamped to 0 (the reference), or split as the formula gives it, so that the windows shift "
                         "into the input (an odd total rounded toward zero or floored).",
    "avgpool11-auto-pad-floor": "AveragePool-11 text gives floor formulas for VALID/SAME without ceil_mode, which "
                                "contradict its auto_pad attribute, opsets 10 and 19 and ONNX shape inference; "
                                "the bench follows the auto_pad attribute (ceil(In/Stride)).",
    "storage-order-batch-channel": "storage_order=1: the ONNX text does not say whether batch and channel take part "
                                   "in the column-major index; the bench orders only the spatial tuple column-major, "
                                   "as ONNX Runtime does.",
    "ceil-overhang-divisor": "count_include_pad=1 with a ceil_mode window reaching past the end pad: only input and "
                             "pad pixels count in the divisor, not the positions past the end pad, as ONNX Runtime, "
                             "PyTorch and ONNX's own node test agree (the whole kernel, DirectML's IncludePadding "
                             "TRUE, is the other reading of the text, which none of them takes).",
}
#: the keys of ``OPEN_POINT_TEXTS`` that are rules (one allowed answer), not open points
RULES = ("avgpool11-auto-pad-floor", "storage-order-batch-channel", "ceil-overhang-divisor")


def split_points(keys) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(open points, rules) among the keys ``check`` returns (and ``onnx-vs-dml:<output>``, a rule:
    an ONNX graph is judged by the ONNX text)."""
    keys = tuple(keys)
    rules = tuple(k for k in keys if k in RULES or k.startswith("onnx-vs-dml:"))
    return tuple(k for k in keys if k not in rules), rules


class SpecError(ValueError):
    """A graph whose answer the ONNX specification does not define (the rule is in the text)."""


@dataclass(frozen=True)
class Attrs:
    """The attributes of one ONNX pooling node, at an opset."""
    op: str                            # the ONNX op: a member of the family (:func:`member`)
    opset: int
    kernel: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    pads: tuple[int, ...] | None = None          # begins then ends
    dilations: tuple[int, ...] | None = None
    auto_pad: str = "NOTSET"
    ceil_mode: int = 0
    count_include_pad: int = 0
    storage_order: int = 0
    #: the node's other attributes, (name, value) pairs in name order (e.g. LpPool's p): its
    #: member's own, read by its reduction (:meth:`attr`)
    others: tuple = ()

    @classmethod
    def from_node(cls, op: str, opset: int, attrs: dict) -> "Attrs":
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        t = lambda k: tuple(a[k]) if k in a else None  # noqa: E731
        named = ("kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode", "count_include_pad",
                 "storage_order")
        return cls(op, opset, tuple(a["kernel_shape"]), t("strides"), t("pads"), t("dilations"),
                   a.get("auto_pad", "NOTSET"), int(a.get("ceil_mode", 0)), int(a.get("count_include_pad", 0)),
                   int(a.get("storage_order", 0)), tuple(sorted((k, v) for k, v in a.items() if k not in named)))

    def attr(self, name: str, default=None):
        """One of the node's other attributes (:attr:`others`), or ``default``."""
        return dict(self.others).get(name, default)


@dataclass(frozen=True)
class Axis:
    n: int
    k: int
    s: int
    d: int
    out: int
    begin: int          # pad pixels before the input
    end: int            # pad pixels after the input (explicit or SAME)

    def reach(self) -> int:
        """The input coordinate of the last window's last element."""
        return (self.out - 1) * self.s - self.begin + (self.k - 1) * self.d


def axes(a: Attrs, spatial) -> tuple[list[Axis], list[str]]:
    """Per spatial axis the output size and pads the text defines, and the open points touched."""
    floor_text = member(a.op).floor_text_opsets
    nd = len(spatial)
    strides = a.strides or (1,) * nd
    dil = a.dilations or (1,) * nd
    pads = a.pads or (0,) * (2 * nd)
    pts: list[str] = []
    res = []
    for i, n in enumerate(spatial):
        k, s, d = a.kernel[i], strides[i], dil[i]
        eff = (k - 1) * d + 1
        if a.auto_pad == "VALID":
            pb = pe = 0
            if n < eff:
                raise SpecError(f"auto_pad VALID: dilated window {eff} larger than the input {n} on axis {i}")
            out = (n - eff) // s + 1
            if a.ceil_mode and (n - eff) % s:
                raise SpecError(f"auto_pad VALID with ceil_mode=1 on axis {i}: the text gives {out}, ONNX shape inference "
                                f"and ONNX Runtime the explicit-pad ceil formula ({out + 1}) (open point auto-pad-ceil-mode)")
            if a.opset in floor_text and not a.ceil_mode and (n - eff + 1) // s != out:
                pts.append("avgpool11-auto-pad-floor")
        elif a.auto_pad in SAME:
            out = -(-n // s)
            total = (out - 1) * s + eff - n
            if total < 0:
                if a.ceil_mode:
                    raise SpecError(f"auto_pad {a.auto_pad} with ceil_mode=1 and a negative pad total on axis {i}: the "
                                    f"text gives {out}, ONNX shape inference the ceil formula (open point auto-pad-ceil-mode)")
                pts.append("same-negative-pad")
                total = 0
            small, big = total // 2, total - total // 2
            pb, pe = (small, big) if a.auto_pad == "SAME_UPPER" else (big, small)
            if a.opset in floor_text and not a.ceil_mode and n // s != out:
                pts.append("avgpool11-auto-pad-floor")
        elif a.auto_pad == "NOTSET":
            pb, pe = pads[i], pads[i + nd]
            padded = n + pb + pe
            if padded < eff:
                raise SpecError(f"dilated window {eff} larger than the padded input {padded} on axis {i}")
            if a.ceil_mode:
                out = -(-(padded - eff) // s) + 1
                while (out - 1) * s - pb >= n:     # the last window starts in the right padded region
                    if a.opset < 22:
                        pts.append("ceil-last-window")
                    out -= 1
            else:
                out = (padded - eff) // s + 1
        else:
            raise SpecError(f"auto_pad {a.auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        res.append(Axis(n, k, s, d, out, pb, pe))
    return res, pts


def output_shape(a: Attrs, shape) -> tuple[int, ...]:
    ax, _ = axes(a, tuple(shape[2:]))
    return (shape[0], shape[1], *(x.out for x in ax))


def declared_shape(a: Attrs, shape) -> tuple[int | None, ...]:
    """The output shape a graph declares: :func:`output_shape`, with the size left open (None) on
    an axis where, before opset 22, a ceil_mode window starts in the right padded region (open
    point ``ceil-last-window``: ONNX shape inference counts it, the reference drops it)."""
    out = list(output_shape(a, shape))
    if a.ceil_mode and a.auto_pad == "NOTSET" and a.opset < 22:
        nd = len(shape) - 2
        pads = a.pads or (0,) * (2 * nd)
        strides = a.strides or (1,) * nd
        for i in range(nd):
            n, s, pb = shape[i + 2], strides[i], pads[i]
            eff = (a.kernel[i] - 1) * (a.dilations or (1,) * nd)[i] + 1
            full = -(-(n + pb + pads[i + nd] - eff) // s) + 1
            if full != out[i + 2]:
                out[i + 2] = None
    return tuple(out)


def window_counts(a: Attrs, ax) -> list[np.ndarray]:
    """Per axis, the elements each window counts by the text: its input elements, and its pad
    pixels too where the member's count takes them (``counts_pads``: AveragePool with
    count_include_pad 1, rule 8). A window's count is the product of its per-axis counts."""
    if member(a.op).counts_pads(a):
        return [P.count_within(q, -q.begin, q.n + q.end) for q in ax]
    return [P.count_within(q, 0, q.n) for q in ax]


def check(a: Attrs, shape) -> list[str]:
    """Refuse what the text does not define; return the open points the graph touches."""
    ax, pts = axes(a, tuple(shape[2:]))
    # a window's count is the product of its per-axis counts: one window without any is enough
    empty = any((c == 0).any() for c in window_counts(a, ax))
    if not member(a.op).counts_pads(a):
        if empty:
            raise SpecError("a window holds no element of the input: " + member(a.op).empty_window +
                            " (rule: every output position's window must hold at least one input element)")
    else:
        if empty:
            raise SpecError("a window holds neither input elements nor pad pixels: divisor 0")
        if any(x.reach() >= x.n + x.end for x in ax):
            pts.append("ceil-overhang-divisor")
    if a.storage_order and shape[0] * shape[1] > 1:
        pts.append("storage-order-batch-channel")
    return sorted(set(pts))


def run(x: np.ndarray, a: Attrs, want_indices: bool = False) -> dict[str, np.ndarray]:
    """The outputs of the ONNX node with attributes ``a`` on input ``x``: rules 1-5 and 7 here,
    the reduction of each window the member's own (``onnx_reduce``: rules 6, 8 and 9 for MaxPool
    and AveragePool)."""
    check(a, x.shape)
    ax, _ = axes(a, x.shape[2:])
    return member(a.op).onnx_reduce(x, a, ax, want_indices)


def kept_last_windows(case, ref: dict[str, np.ndarray]) -> tuple[dict, dict] | None:
    """The other reading of open point ``ceil-last-window`` (before opset 22): the windows that
    start in the right padded region kept, as the ceil formula counts them. (outputs, free): the
    reference's outputs grown to the formula's size, and per output the positions of the kept
    windows, where any value is allowed (they hold no input element). None when the graph drops
    no window."""
    _, a, _ = case_node(case)
    if a.auto_pad != "NOTSET" or not a.ceil_mode:
        return None
    shape = case.desc.InputSizes
    ax, _ = axes(a, tuple(shape[2:]))
    nd = len(ax)
    pads = a.pads or (0,) * (2 * nd)
    full = []
    for i, q in enumerate(ax):
        full.append(-(-(q.n + pads[i] + pads[i + nd] - ((q.k - 1) * q.d + 1)) // q.s) + 1)
    if all(f == q.out for f, q in zip(full, ax)):
        return None
    outs, free = {}, {}
    for k, arr in ref.items():
        arr = np.asarray(arr)
        grown = np.zeros(arr.shape[:2] + tuple(full), dtype=arr.dtype)
        grown[(slice(None), slice(None), *(slice(0, q.out) for q in ax))] = arr
        mask = np.ones(grown.shape, dtype=bool)
        mask[(slice(None), slice(None), *(slice(0, q.out) for q in ax))] = False
        outs[k], free[k] = grown, mask
    return outs, free


def with_kept_windows(case, ref: dict, alts: list) -> list:
    """``alts`` and, for open point ``ceil-last-window``, the reading that keeps the windows
    starting in the right padded region combined with the reference and with each of ``alts``
    (:func:`kept_last_windows`): their non-finite allowances and bounds grown with the outputs
    (nothing allowed, a zero bound, where the kept windows are: those positions are free)."""
    out = list(alts)
    for alt in [Alternative("", ref)] + list(alts):
        kept = kept_last_windows(case, alt.outputs)
        if kept is None:
            return out
        grown, free = kept
        out.append(Alternative("+".join(x for x in (alt.name, "ceil-last-window-kept") if x), grown,
                               zero_sign_free=alt.zero_sign_free,
                               nonfinite_ok={k: _grow(m, grown[k].shape) for k, m in (alt.nonfinite_ok or {}).items()},
                               bounds={k: _grow(b, grown[k].shape) for k, b in (alt.bounds or {}).items()},
                               free=free))
    return out


def _grow(a, shape):
    """``a`` (an array of an output's positions, a pair of them, or a scalar) over the grown output
    ``shape``: its values at the same positions, zero (False) elsewhere."""
    if isinstance(a, tuple):
        return tuple(_grow(x, shape) for x in a)
    a = np.asarray(a)
    if a.ndim == 0:
        return a
    g = np.zeros(shape, dtype=a.dtype)
    g[tuple(slice(0, n) for n in a.shape)] = a
    return g


def shifted_splits(a: Attrs, spatial) -> list[tuple[tuple[int, int], ...]]:
    """The other reading of open point ``same-negative-pad``: the negative SAME pad total split as
    the formula gives it (the windows shift into the input) instead of clamped to 0. Two splits of
    an odd negative total: rounded toward zero (C division, as implementations write it) and
    floored. Per split, per axis (begin, end)."""
    nd = len(spatial)
    strides = a.strides or (1,) * nd
    dil = a.dilations or (1,) * nd
    splits = []
    for rnd in (lambda t: int(t / 2), lambda t: t // 2):
        per_axis = []
        for i, n in enumerate(spatial):
            eff = (a.kernel[i] - 1) * dil[i] + 1
            out = -(-n // strides[i])
            total = (out - 1) * strides[i] + eff - n
            if total >= 0:
                small = total // 2
                big = total - small
            else:
                small = rnd(total)
                big = total - small
            per_axis.append((small, big) if a.auto_pad == "SAME_UPPER" else (big, small))
        if tuple(per_axis) not in splits:
            splits.append(tuple(per_axis))
    return splits


def run_shifted(x: np.ndarray, a: Attrs, split, want_indices: bool = False) -> dict[str, np.ndarray]:
    """The node's outputs with the pads of ``split`` (from :func:`shifted_splits`): a negative pad
    drops that many input elements at its end of the axis, then the node runs with explicit pads;
    Indices are given back in the coordinates of ``x``."""
    spatial = x.shape[2:]
    crop = [slice(-b if b < 0 else 0, n + e if e < 0 else n) for (b, e), n in zip(split, spatial)]
    xc = x[(slice(None), slice(None), *crop)]
    pads = tuple(max(b, 0) for b, _ in split) + tuple(max(e, 0) for _, e in split)
    out = run(xc, dataclasses.replace(a, auto_pad="NOTSET", pads=pads, ceil_mode=0), want_indices)
    if "Indices" in out:
        order = "F" if a.storage_order else "C"
        idx = out["Indices"]
        sp_c, sp = int(np.prod(xc.shape[2:])), int(np.prod(spatial))
        nc, rem = idx // sp_c, idx % sp_c
        coords = np.unravel_index(rem, xc.shape[2:], order=order)
        coords = tuple(c + sl.start for c, sl in zip(coords, crop))
        out["Indices"] = (nc * sp + np.ravel_multi_index(coords, spatial, order=order)).astype(np.int64)
    return out


# ---------------------------------------------------------------------------------------------
# Cases: the graph a case builds, its answer, and whether it is the image of its descriptor
# ---------------------------------------------------------------------------------------------

def shifted_readings(case, x: np.ndarray, want_indices: bool = False) -> list[tuple[str, dict, object]]:
    """(name, outputs, run) of each shifted reading of open point ``same-negative-pad`` of the
    case's graph on ``x``; ``run(x2)`` gives that reading on other data of the same shape (for the
    combinations with other open points). A reading the text does not define on this input (a
    window with no element) is left out."""
    _, a, _ = case_node(case)
    out = []
    for k, split in enumerate(shifted_splits(a, x.shape[2:])):
        def fn(xx, split=split):
            return run_shifted(xx, a, split, want_indices)
        try:
            out.append(("same-pads-shifted" + ("-floor" if k else ""), fn(x), fn))
        except SpecError:
            continue
    return out


def case_node(case) -> tuple[dict, Attrs, str | None]:
    """The ONNX node attributes of a pooling case (its operator's node, ``onnx_op``: the geometry,
    and the attributes the operator adds, ``node_attrs``), as :class:`Attrs` too, and None when the
    graph is built as the direct image of the descriptor's geometry (else why not)."""
    op = case.operator
    node, why = P.onnx_attrs(case)
    node.update(op.node_attrs(case))
    return node, Attrs.from_node(op.onnx_op, case.opset, node), why


def check_case(case) -> list[str]:
    """``check`` of the case's graph, as a DescriptorError naming the ONNX side."""
    _, a, _ = case_node(case)
    try:
        return check(a, case.desc.InputSizes)
    except SpecError as e:
        raise DescriptorError("onnx.graph", f"{a.op}-{case.opset} graph of this case: {e}") from None


def image_reason(case) -> str | None:
    """None: the case's graph asks, by the ONNX text, for what the descriptor asks DirectML (same
    windows, same padding, same divisor, same index order). Else why not."""
    d = case.desc
    _, a, why = case_node(case)
    if why:
        return why
    if output_shape(a, d.InputSizes) != P.output_shape(d):
        return "the ONNX output size differs from the DML output size"
    if a.storage_order:
        return STORAGE_ONLY
    if member(a.op).counts_pads(a):
        ax, _ = axes(a, tuple(d.InputSizes[2:]))
        for i, q in enumerate(ax):
            # DML counts the whole window (StartPadding/EndPadding included); ONNX the input and pad pixels
            if q.begin != d.StartPadding[i] or q.reach() >= q.n + q.end or q.end > d.EndPadding[i]:
                return ("IncludePadding TRUE divides by the whole window (all of EndPadding counts); ONNX "
                        "count_include_pad=1 with ceil_mode counts only the pad pixels of the graph's pads")
    return None


STORAGE_ONLY = "storage_order=1: ONNX Indices order the spatial axes column-major; DML's are row-major"


def onnx_vs_dml(op, case, inputs) -> list[str]:
    """'onnx-vs-dml:<output>' for each output where the graph is the direct image of the
    descriptor and the ONNX answer and the DirectML answer differ (bit for bit: both are exact
    answers, rounded once)."""
    if op.dml_image(case) is not None:
        return []
    exp, ref = op.expected(case, inputs), op.reference(case, inputs)
    out = []
    for k in ref:
        a, b = np.asarray(exp[k]), np.asarray(ref[k])
        same = a.shape == b.shape and a.dtype == b.dtype and bool(
            (a.view(np.uint8) == b.view(np.uint8)).all() if a.dtype.kind == "f" else np.array_equal(a, b))
        if not same:
            out.append(f"onnx-vs-dml:{k}")
    return out
