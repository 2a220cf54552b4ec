"""Window geometry shared by the pooling operators (MAX_POOLING2, AVERAGE_POOLING1, ...): validation
of the common fields, the dilation-correct output size, the ONNX geometry attributes, and the
reference's window walk (the maximum and the mean of every window, in tiles of bounded size; where
numba imports, the same walk as compiled loops, ``ops/_pool_fused.py``, for channels of up to
``_pool_fused.ROW_ELEMENTS`` elements). It names no operator: the operators and what tells them
apart are ``ops/_pool_family.py``'s."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from onnx import helper

from ..machine import reference_threads
from . import _block
from . import _pool_fused
from . import _pool_forms as F
from ._struct import Uint, Uints
from .base import DescriptorError, check_input_sizes, check_type_at_level, check_uint, compact, describe_case

ARRAY_FIELDS = ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations")
AUTO_PAD = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def effective_window(desc) -> tuple[int, ...]:
    return tuple((w - 1) * d + 1 for w, d in zip(desc.WindowSize, desc.Dilations))


def out_sizes(desc) -> tuple[int, ...]:
    """floor((In + Start + End - ((Window-1)*Dilation + 1)) / Stride) + 1 per spatial axis.
    (The DML pages leave dilation out of this formula; that is an error in the pages.)"""
    sizes = []
    for i, eff in enumerate(effective_window(desc)):
        padded = desc.InputSizes[i + 2] + desc.StartPadding[i] + desc.EndPadding[i]
        sizes.append((padded - eff) // desc.Strides[i] + 1)
    return tuple(sizes)


def output_shape(desc) -> tuple[int, ...]:
    return (desc.InputSizes[0], desc.InputSizes[1], *out_sizes(desc))


def window_fields(desc) -> list:
    """The window members of the DirectML struct that MAX_POOLING2 and AVERAGE_POOLING1 share, in
    directml.h order (after their tensors)."""
    return [Uint("DimensionCount", desc.DimensionCount)] + [Uints(name, getattr(desc, name)) for name in ARRAY_FIELDS]


def validate(desc, type_table: dict[str, tuple[str, ...]]) -> None:
    check_input_sizes(desc.InputSizes, (4, 5))
    rank = len(desc.InputSizes)
    if desc.DimensionCount not in (2, 3):
        raise DescriptorError("DimensionCount", f"must be 2 or 3, got {desc.DimensionCount}")
    if desc.DimensionCount != rank - 2:
        raise DescriptorError("DimensionCount", f"must be {rank - 2} for a {rank}-D InputTensor (2 for 4-D, 3 for 5-D), got {desc.DimensionCount}")
    for name in ARRAY_FIELDS:
        arr = getattr(desc, name)
        if len(arr) != desc.DimensionCount:
            raise DescriptorError(name, f"must have DimensionCount={desc.DimensionCount} elements, got {len(arr)}")
        check_uint(name, arr)
    for name in ("Strides", "WindowSize", "Dilations"):
        if any(v == 0 for v in getattr(desc, name)):
            raise DescriptorError(name, f"must be >= 1 on every axis, got {list(getattr(desc, name))}")
    for i, (n, eff) in enumerate(zip(out_sizes(desc), effective_window(desc))):
        if n < 1:
            padded = desc.InputSizes[i + 2] + desc.StartPadding[i] + desc.EndPadding[i]
            raise DescriptorError("WindowSize", f"output size on spatial axis {i} would be {n} < 1: dilated window {eff} is larger than the padded input {padded}")
    check_type_at_level(desc, "DataType", desc.DataType, type_table)


# ---------------------------------------------------------------------------------------------
# ONNX side
# ---------------------------------------------------------------------------------------------

def same_pads(desc, mode: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (begin, end) pads ONNX's auto_pad SAME_UPPER / SAME_LOWER implies for this input."""
    begins, ends = [], []
    for i, eff in enumerate(effective_window(desc)):
        n = desc.InputSizes[i + 2]
        s = desc.Strides[i]
        out = -(-n // s)
        total = max(0, (out - 1) * s + eff - n)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return tuple(begins), tuple(ends)


def ceil_out(n: int, eff: int, s: int, pb: int, pe: int, drop: bool = True) -> int | None:
    """ONNX ceil_mode output size. Windows that would start in the end padding are dropped (the
    rule ONNX states from opset 22); ``drop=False`` (ONNX before 22, whose text has only the ceil
    formula): None where the formula has such a window (the text does not define it)."""
    out = -(-(n + pb + pe - eff) // s) + 1
    while (out - 1) * s >= n + pb:
        if not drop:
            return None
        out -= 1
    return out


def ceil_end_pads(desc, opset: int = 22) -> tuple[int, ...] | None:
    """ONNX end pads that, with ceil_mode=1 at ``opset``, give the DML output sizes; None if there
    are none."""
    want = out_sizes(desc)
    ends = []
    for i, eff in enumerate(effective_window(desc)):
        n, s, pb = desc.InputSizes[i + 2], desc.Strides[i], desc.StartPadding[i]
        for e in range(0, desc.EndPadding[i] + 1):
            if n + pb + e >= eff and ceil_out(n, eff, s, pb, e, drop=opset >= 22) == want[i]:
                ends.append(e)
                break
        else:
            return None
    return tuple(ends)


# ---------------------------------------------------------------------------------------------
# ONNX pads as a graph writes them (the ONNX-side option ``pads``), and the descriptor they map to
# ---------------------------------------------------------------------------------------------
#
# A case is a descriptor and ONNX-side options. Without ``pads``, the graph's pads come from the
# descriptor (``onnx_attrs``: with ceil_mode the smallest end pads that give the DML output size):
# the cases of earlier releases, ids unchanged. With ``pads`` (begins then ends, as ONNX writes
# them), the graph carries exactly those pads and the descriptor is the one the graph maps to
# (``pads_descriptor``): StartPadding the begin pads, EndPadding the end padding the last window
# reaches. ``canonical`` drops ``pads`` where they are the pads the descriptor gives anyway, so
# that one graph of one descriptor has one id.

def onnx_out(n: int, eff: int, s: int, pb: int, pe: int, ceil: bool) -> tuple[int, bool]:
    """(output size, whether windows were dropped) of ONNX pooling with explicit pads: the floor
    formula, or with ``ceil`` the ceil formula less the windows that would start in the end
    padding (the rule ONNX states from opset 22, ``_onnx_pool`` rule 2)."""
    if not ceil:
        return (n + pb + pe - eff) // s + 1, False
    out = -(-(n + pb + pe - eff) // s) + 1
    dropped = False
    while out > 1 and (out - 1) * s >= n + pb:
        out -= 1
        dropped = True
    return out, dropped


def pads_descriptor(desc, pads, ceil: bool):
    """The descriptor an ONNX graph with explicit ``pads`` (begins then ends) maps to: StartPadding
    the begin pads; EndPadding the end pads (floor formula, the same in DML), or with ceil_mode the
    end padding the last kept window reaches (DML has no ceil_mode: its floor formula then gives
    the same windows). ``desc`` gives the rest (sizes, window, strides, dilations)."""
    nd = desc.DimensionCount
    pads = tuple(int(p) for p in pads)
    begins, ends = pads[:nd], pads[nd:]
    if not ceil:
        return desc.replace(StartPadding=begins, EndPadding=ends)
    dml = []
    for i, eff in enumerate(effective_window(desc)):
        n, s = desc.InputSizes[i + 2], desc.Strides[i]
        out, _ = onnx_out(n, eff, s, begins[i], ends[i], True)
        dml.append(max(0, (out - 1) * s + eff - n - begins[i]))
    return desc.replace(StartPadding=begins, EndPadding=tuple(dml))


def derived_pads(desc, variant: dict, opset: int) -> tuple[int, ...]:
    """The pads a case without the option ``pads`` gives its graph (auto_pad NOTSET): the
    descriptor's, with ceil_mode the smallest end pads that give the DML output size at ``opset``
    (the descriptor's own where there are none)."""
    ends = tuple(desc.EndPadding)
    if variant.get("ceil_mode", 0):
        ends = ceil_end_pads(desc, opset) or ends
    return tuple(desc.StartPadding) + tuple(ends)


def graph_pads(case) -> tuple[int, ...] | None:
    """The pads the case's graph carries (None under auto_pad SAME or VALID)."""
    v = case.v
    if v.get("auto_pad", "NOTSET") != "NOTSET":
        return None
    if v.get("pads") is not None:
        return tuple(v["pads"])
    return derived_pads(case.desc, v, case.opset)


def canonical(case):
    """The case in its one form: ``pads`` given as a list become a tuple, and are dropped where the
    descriptor gives them anyway (:func:`derived_pads`), so that a graph written with its pads and
    the same graph of an earlier case file are one case with one id."""
    v = case.v
    pads = v.get("pads")
    if pads is None or v.get("auto_pad", "NOTSET") != "NOTSET":
        return case
    if not isinstance(pads, tuple):
        try:
            pads = tuple(int(p) for p in pads)
        except (TypeError, ValueError):
            return case                       # check_variant names what is wrong
        case = dataclasses.replace(case, variant=tuple((k, pads if k == "pads" else x) for k, x in case.variant))
    try:
        same = pads == derived_pads(case.desc, v, case.opset)
    except (ValueError, ZeroDivisionError, IndexError, TypeError):
        return case
    if same:
        return dataclasses.replace(case, variant=tuple((k, x) for k, x in case.variant if k != "pads"))
    return case


def onnx_options(case) -> dict:
    """``Operator.onnx_options`` of the pooling operators: with ceil_mode and auto_pad NOTSET, the
    pads the graph carries (``pads``), also where the descriptor gives them."""
    v = case.v
    if v.get("ceil_mode", 0) and v.get("auto_pad", "NOTSET") == "NOTSET" and v.get("pads") is None:
        try:
            return {**v, "pads": list(derived_pads(case.desc, v, case.opset))}
        except (ValueError, ZeroDivisionError, IndexError, TypeError):
            return v
    return {**v, "pads": list(v["pads"])} if v.get("pads") is not None else v


def check_pads(case) -> None:
    """The option ``pads``: 2 x DimensionCount non-negative integers, with auto_pad NOTSET, and the
    descriptor the graph maps to (:func:`pads_descriptor`)."""
    desc, v = case.desc, case.v
    pads = v.get("pads")
    if pads is None:
        return
    nd = desc.DimensionCount
    if v.get("auto_pad", "NOTSET") != "NOTSET":
        raise DescriptorError("onnx.pads", f"ONNX takes pads only with auto_pad NOTSET, not {v['auto_pad']}")
    if (not isinstance(pads, (tuple, list)) or len(pads) != 2 * nd
            or any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in pads)):
        raise DescriptorError("onnx.pads", f"must be {2 * nd} non-negative integers (begins, then ends), got {pads!r}")
    try:
        if tuple(pads) == derived_pads(desc, v, case.opset):
            return                             # the pads the descriptor gives its graph anyway
    except (ValueError, ZeroDivisionError, IndexError, TypeError):
        pass
    want = pads_descriptor(desc, pads, bool(v.get("ceil_mode", 0)))
    for name in ("StartPadding", "EndPadding"):
        if tuple(getattr(desc, name)) != tuple(getattr(want, name)):
            raise DescriptorError(name, f"must be {list(getattr(want, name))}: the descriptor ONNX pads {list(pads)}"
                                        f"{' with ceil_mode=1' if v.get('ceil_mode') else ''} map to (or leave it out)")


def fill_descriptor(desc: dict, onnx_opts: dict) -> dict:
    """A case file's descriptor with StartPadding and EndPadding filled in from the ONNX option
    ``pads`` where they are left out (:func:`pads_descriptor`); as given otherwise."""
    pads = onnx_opts.get("pads")
    if pads is None or ("StartPadding" in desc and "EndPadding" in desc):
        return desc
    try:
        nd = int(desc["DimensionCount"])
    except (KeyError, TypeError, ValueError):
        return desc                            # the descriptor's own checks name what is missing
    if onnx_opts.get("auto_pad", "NOTSET") != "NOTSET":
        raise DescriptorError("onnx.pads", f"ONNX takes pads only with auto_pad NOTSET, not {onnx_opts['auto_pad']}")
    if (not isinstance(pads, (tuple, list)) or len(pads) != 2 * nd
            or any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in pads)):
        raise DescriptorError("onnx.pads", f"must be {2 * nd} non-negative integers (begins, then ends), got {pads!r}")
    try:
        begins, ends = list(pads[:nd]), list(pads[nd:])
        geo = dict(desc, StartPadding=begins, EndPadding=ends)
        eff = [(int(w) - 1) * int(d) + 1 for w, d in zip(geo["WindowSize"], geo["Dilations"])]
        if onnx_opts.get("ceil_mode"):
            dml = []
            for i in range(nd):
                n, s = int(geo["InputSizes"][i + 2]), int(geo["Strides"][i])
                out, _ = onnx_out(n, eff[i], s, int(begins[i]), int(ends[i]), True)
                dml.append(max(0, (out - 1) * s + eff[i] - n - int(begins[i])))
            geo["EndPadding"] = dml
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
        return desc                            # the descriptor's own checks name what is missing
    return {**desc, **{k: geo[k] for k in ("StartPadding", "EndPadding") if k not in desc}}


def check_variant(case) -> None:
    """ONNX-side options must describe the same geometry as the DML descriptor: auto_pad SAME's
    pads are the descriptor's pads, VALID has none, explicit ``pads`` map to the descriptor's
    (:func:`check_pads`). ceil_mode goes with every auto_pad (under SAME and VALID it changes
    nothing, by the ONNX text)."""
    desc, v = case.desc, case.v
    check_pads(case)
    auto_pad = v.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        b, e = same_pads(desc, auto_pad)
        if (b, e) != (tuple(desc.StartPadding), tuple(desc.EndPadding)):
            raise DescriptorError("onnx.auto_pad", f"{auto_pad} implies StartPadding {list(b)} and EndPadding {list(e)}, "
                                                   f"descriptor has {list(desc.StartPadding)} and {list(desc.EndPadding)}")
    if auto_pad == "VALID" and any(desc.StartPadding) | any(desc.EndPadding):
        raise DescriptorError("onnx.auto_pad", "VALID implies zero StartPadding and EndPadding")


def normalize(case):
    """``Operator.normalize`` of the pooling operators: the pads auto_pad decides (SAME: those
    ONNX computes for the input, :func:`same_pads`; VALID: none), what :func:`check_variant` wants.
    The case as it is under NOTSET, or where the SAME pads cannot be computed (a zero stride)."""
    desc, auto_pad = case.desc, case.v.get("auto_pad", "NOTSET")
    pads = case.v.get("pads")
    if pads is not None and auto_pad == "NOTSET":
        try:
            case = dataclasses.replace(case, desc=pads_descriptor(desc, pads, bool(case.v.get("ceil_mode", 0))))
        except (ValueError, TypeError, IndexError, ZeroDivisionError):
            return case
        return canonical(case)
    if auto_pad == "VALID":
        zeros = (0,) * len(desc.StartPadding)
        return dataclasses.replace(case, desc=desc.replace(StartPadding=zeros, EndPadding=zeros))
    if str(auto_pad).startswith("SAME"):
        try:
            b, e = same_pads(desc, auto_pad)
        except (ZeroDivisionError, ValueError, IndexError):
            return case
        return dataclasses.replace(case, desc=desc.replace(StartPadding=b, EndPadding=e))
    return case


def describe(case, flags=()) -> str:
    """``Operator.describe`` of the pooling operators: input sizes, window (k), strides (s),
    dilations (d), the pads when any is set (p: start pads then end pads), ``flags`` (the
    operator's own fields as NAME=value) and the ONNX-side options that are set."""
    d = case.desc
    parts = [f"k{compact(d.WindowSize)}", f"s{compact(d.Strides)}", f"d{compact(d.Dilations)}"]
    pads = tuple(d.StartPadding) + tuple(d.EndPadding)
    if any(pads):
        parts.append("p" + "".join(map(str, pads)))
    return describe_case(case, parts + list(flags))


def onnx_attrs(case) -> tuple[dict, str | None]:
    """Attributes of the ONNX pooling node for this case (kernel, strides, dilations, pads,
    auto_pad, ceil_mode), and None when the graph is the direct image of the descriptor or why
    it is not. The option ``pads`` are the graph's pads exactly. Without it, with ceil_mode=1 the
    ONNX end pads are the smallest that give the DML output size at the case's opset; where none
    do, the graph keeps the descriptor's own pads with ceil_mode=1 (the ONNX-side view of the
    descriptor) and is not an image."""
    desc, v = case.desc, case.v
    attrs: dict = {"kernel_shape": list(desc.WindowSize), "strides": list(desc.Strides)}
    auto_pad = v.get("auto_pad", "NOTSET")
    if any(d != 1 for d in desc.Dilations):
        attrs["dilations"] = list(desc.Dilations)
    why = None
    if auto_pad != "NOTSET":
        attrs["auto_pad"] = auto_pad
        if v.get("ceil_mode", 0):
            attrs["ceil_mode"] = 1
        return attrs, None
    if v.get("pads") is not None:
        if v.get("ceil_mode", 0):
            attrs["ceil_mode"] = 1
        if any(v["pads"]):
            attrs["pads"] = [int(p) for p in v["pads"]]
        return attrs, None
    ends = tuple(desc.EndPadding)
    if v.get("ceil_mode", 0):
        ends = ceil_end_pads(desc, case.opset)
        if ends is None:
            ends = tuple(desc.EndPadding)
            why = ("no ONNX end pads with ceil_mode=1 give the DML output size at this opset: the graph keeps the "
                   "descriptor's pads with ceil_mode=1")
        attrs["ceil_mode"] = 1
    if any(desc.StartPadding) or any(ends):
        attrs["pads"] = list(desc.StartPadding) + list(ends)
    return attrs, why


def make_node(op_type: str, inputs, outputs, name: str, attrs: dict):
    return helper.make_node(op_type, inputs, outputs, name=name, **attrs)


# ---------------------------------------------------------------------------------------------
# Reference machinery
# ---------------------------------------------------------------------------------------------
#
# A window is walked element by element, each step one array operation over every window of a
# tile at once. The output is cut into tiles (channels x output boxes) whose work arrays stay
# within TILE_BYTES whatever the tensor size; tiles run on a thread pool (NumPy releases the GIL
# inside its loops). A tile's input is copied once, padded, and laid out so that each step is one
# long strided run of memory (``_Tile``).

#: the most bytes of work arrays one tile takes (one tile per worker thread at a time)
TILE_BYTES = 1 << 21
#: windows from this many elements on may be summed along their scan (``along_scan``)
LONG_WINDOW = 1024
#: worker threads of the reference where set (a benchmark or a test); None: ``workers()``
WORKERS: int | None = None


def workers() -> int:
    """The reference's worker threads: ``WORKERS`` where set, else this process's share of the
    cores (``machine.reference_threads``: a bench worker's, or every core)."""
    return WORKERS or reference_threads()


@dataclass(frozen=True)
class Window:
    """The sliding window on one spatial axis: input size n, window size k, stride s, dilation d,
    ``begin`` pad elements before the input, ``out`` windows. Element t of window o lies at input
    coordinate o*s - begin + t*d; outside [0, n) it is padding."""
    n: int
    k: int
    s: int
    d: int
    begin: int
    out: int


def windows(desc) -> list[Window]:
    """The descriptor's window on each spatial axis."""
    return [Window(desc.InputSizes[i + 2], desc.WindowSize[i], desc.Strides[i], desc.Dilations[i],
                   desc.StartPadding[i], out) for i, out in enumerate(out_sizes(desc))]


def inside(w, a: int, b: int) -> bool:
    """Every element of every window of ``w`` at a coordinate in [a, b)."""
    return -w.begin >= a and (w.out - 1) * w.s - w.begin + (w.k - 1) * w.d <= b - 1


def count_within(w, a: int, b: int) -> np.ndarray:
    """For each window of ``w`` (anything with n, k, s, d, begin, out): how many of its k elements
    lie at coordinates in [a, b) (the input: [0, n)). Arithmetic per window, nothing of size
    windows x k."""
    if inside(w, a, b):
        return np.full(max(w.out, 0), w.k, np.int64)       # every window wholly inside [a, b)
    start = np.arange(w.out, dtype=np.int64) * w.s - w.begin
    t_lo = np.minimum(np.maximum(-((start - a) // w.d), 0), w.k)      # first t with start + t*d >= a
    t_hi = np.minimum(np.maximum((b - 1 - start) // w.d + 1, 0), w.k)  # past the last t with start + t*d <= b - 1
    return np.maximum(t_hi - t_lo, 0)


def window_max(x: np.ndarray, wins, want_index: bool = False, storage_order: int = 0):
    """(maximum, index) of every window of ``wins`` (one Window per spatial axis) over x, by the
    rule of both pages: padding never counts (every window holds an input element); a window
    holding NaN gives its first NaN, else its maximum, ties going to the first element met in scan
    order (row-major over the window). The index (INT64; None without ``want_index``) is that
    element's offset in x seen as one flat array: batch and channel, then the spatial coordinates,
    row-major (storage_order 0) or column-major (1).

    Computed axis by axis, the last first: a window's maximum is the maximum over its rows of each
    row's maximum, and the first element met in scan order lies in the first row that holds the
    maximum (or a NaN), first in that row. So each axis keeps, per window, the first NaN or the
    first maximum (``_keep``) and where it came from. Pads hold the type's lowest value, below
    every input element but an equal one: where a window's maximum is that value and the window
    touches padding, its index is looked up again among its input elements (``_first_lowest``).

    Leading axes whose windows are one element each, every element its own (k 1, stride 1, no
    pad) are channels: folded into them (the same flat offsets, row-major)."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    fused = _pool_fused.usable(wins, spatial, n * c)
    if fused is not None:
        return _fused_max(fused, x, wins, want_index, storage_order)
    lead = 0
    while (lead < len(wins) - 1 and not (want_index and storage_order == 1)
           and (wins[lead].k, wins[lead].s, wins[lead].begin, wins[lead].out) == (1, 1, 0, wins[lead].n)):
        lead += 1
    if lead:
        y, idx = window_max(x.reshape(n * c * math.prod(spatial[:lead]), 1, *spatial[lead:]), wins[lead:],
                            want_index, storage_order)
        shape = (n, c, *spatial[:lead], *y.shape[2:])
        return y.reshape(shape), (None if idx is None else idx.reshape(shape))
    flat = x.reshape(n * c, *spatial)
    y = np.empty((n * c, *(w.out for w in wins)), x.dtype)
    idx = np.empty(y.shape, np.int64) if want_index else None
    work_type = np.float32 if x.dtype == np.float16 else x.dtype      # exact: a maximum only moves values
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    steps = [math.prod(spatial[i + 1:]) if storage_order == 0 else math.prod(spatial[:i]) for i in range(len(wins))]
    reach = sum((w.n + 2 * (w.k * w.d + w.s)) * step for w, step in zip(wins, steps))
    at_type = np.int32 if reach < 2**31 else np.int64
    in_bytes = 2 * np.dtype(work_type).itemsize + 2                     # the padded input, a pass's result, flags

    def unit(box_channels):
        box, channels = box_channels
        for a, b in channels:
            tile(a, b, box)

    def tile(a, b, box):
        t = _Tile(flat, a, b, wins, box, lowest, work_type)
        ties = zero_signs_tie(t.tile)
        has_nan = (want_index or ties) and t.tile.dtype.kind == "f" and bool(np.isnan(t.tile).any())
        last = wins[-1]
        best = best_at = None
        for k in range(last.k):                    # the last axis, every row and channel at once
            v = t.last_axis(k)
            if best is None:
                best, best_at = v.copy(), (np.zeros(v.shape, at_type) if want_index else None)
            else:
                _keep(best, best_at, v, k, has_nan, ties)
        if want_index:                             # element k of a window -> its spatial offset
            best_at *= last.d * steps[-1]
            for i, coords in enumerate(t.coordinates()):
                best_at += (coords * steps[i]).astype(at_type)
        for axis in reversed(range(len(wins) - 1)):   # then the other axes, the last first
            w, (lo, hi) = wins[axis], box[axis]
            kept = kept_at = None
            for k in range(w.k):
                sel = (slice(None),) * t.dim(axis) + (slice(k * w.d, k * w.d + (hi - lo - 1) * w.s + 1, w.s),)
                if kept is None:
                    kept = best[sel].copy()
                    kept_at = None if best_at is None else best_at[sel].copy()
                else:
                    _keep(kept, kept_at, best[sel], None if best_at is None else best_at[sel], has_nan, ties)
            best, best_at = kept, kept_at
        y[t.out] = t.channels_first(best)
        if want_index:
            idx[t.out] = t.channels_first(best_at)
            idx[t.out] += (np.arange(a, b, dtype=np.int64) * math.prod(spatial)).reshape(-1, *[1] * len(wins))
            _first_lowest(flat, idx, y, t.out, wins, box, lowest, steps)

    _run(unit, _tiles(n * c, wins, in_bytes, 3 * np.dtype(work_type).itemsize + 2 * np.dtype(at_type).itemsize))
    shape = (n, c, *y.shape[1:])
    return y.reshape(shape), (idx.reshape(shape) if want_index else None)


def _keep(best, best_at, v, v_at, has_nan: bool, ties: bool) -> None:
    """The rule of window_max, one element further: ``v`` (at ``v_at``) comes after ``best`` (at
    ``best_at``) in scan order; keep, in place, the first NaN, else the first maximum."""
    if best_at is None and not ties:
        # np.maximum gives the same element but for the sign of a zero (no tie of -0.0 and +0.0
        # here), and its first operand of two NaNs
        np.maximum(best, v, out=best)
        return
    take = v > best                                # ties: the first element met stays
    if has_nan:
        take |= np.isnan(v) & ~np.isnan(best)      # a NaN replaces a number, never an earlier NaN
    if ties:
        np.copyto(best, v, where=take)
    else:
        np.maximum(best, v, out=best)              # the element ``take`` picks (see above)
    if best_at is not None:
        best_at += take * (v_at - best_at)         # where v is taken, its index


def _first_lowest(flat, idx, y, out, wins, box, lowest, steps) -> None:
    """Where a window's maximum is ``lowest`` and the window touches padding (whose elements hold
    ``lowest`` too), set its index to its first input element (scan order) of that value."""
    hit = y[out] == lowest
    if not hit.any():
        return
    hit &= ~functools.reduce(np.multiply.outer, [count_within(w, 0, w.n)[lo:hi] == w.k
                                                 for w, (lo, hi) in zip(wins, box)])
    where = np.nonzero(hit)
    nc = where[0] + out[0].start
    window = [o + lo for o, (lo, _) in zip(where[1:], box)]
    found = np.zeros(nc.size, bool)
    at = np.zeros(nc.size, np.int64)
    for t in itertools.product(*(range(w.k) for w in wins)):              # scan order
        coords = [o * w.s - w.begin + ti * w.d for o, w, ti in zip(window, wins, t)]
        inside = np.all([(q >= 0) & (q < w.n) for q, w in zip(coords, wins)], axis=0)
        value = flat[(nc, *(np.clip(q, 0, w.n - 1) for q, w in zip(coords, wins)))]
        new = inside & (value == lowest) & ~found
        at[new] = sum(q[new] * step for q, step in zip(coords, steps))
        found |= new
    idx[(nc, *window)] = nc * math.prod(flat.shape[1:]) + at


def window_mean(x: np.ndarray, wins, divisors, acc=np.float64) -> np.ndarray:
    """Every window's elements, pads as +0.0, summed one by one in scan order (row-major over the
    window) in ``acc``, divided by the window's divisor and rounded once to x's type. ``divisors``:
    per axis, a count per window; a window's divisor is their product."""
    n, c = x.shape[:2]
    flat = x.reshape(n * c, *x.shape[2:])
    y = np.empty((n * c, *(w.out for w in wins)), x.dtype)
    one = all(w.k == 1 and inside(w, 0, w.n) for w in wins)     # windows of one element: below, at once
    fused = _pool_fused.usable(wins, x.shape[2:], n * c) if np.dtype(acc) == np.float64 and not one else None
    if fused is not None:
        return _fused_mean(fused, flat, wins, divisors, y).reshape(n, c, *y.shape[1:])
    if _block.is_block(wins):          # one window: the same answers, every channel at once
        div = np.asarray(math.prod(np.asarray(d, acc)[0] for d in divisors), acc)
        return _block.means(_block.elements(flat, wins), div, acc, x.dtype).reshape(n, c, *y.shape[1:])
    if one:
        # windows of one element, none on the padding: that element in acc over its divisor, rounded
        # once (what the walk below gives, without its tiles)
        sel = flat[(slice(None), *(slice(-w.begin, -w.begin + (w.out - 1) * w.s + 1, w.s) for w in wins))]
        div = functools.reduce(np.multiply.outer, [np.asarray(d, acc) for d in divisors])
        with np.errstate(invalid="ignore", over="ignore"):
            y[...] = sel.astype(acc) / div
        return y.reshape(n, c, *y.shape[1:])
    long = along_scan(n * c, wins)

    def unit(box_channels):
        box, channels = box_channels
        div = functools.reduce(np.multiply.outer, [np.asarray(d, acc)[lo:hi] for d, (lo, hi) in zip(divisors, box)])
        # element k of the windows on a leading axis: these positions of the tile
        lead = [[slice(k * w.d, k * w.d + (hi - lo - 1) * w.s + 1, w.s) for k in range(w.k)]
                for w, (lo, hi) in zip(wins[:-1], box[:-1])]
        spread = None
        for a, b in channels:
            if long:
                with np.errstate(invalid="ignore", over="ignore"):
                    y[(slice(a, b), *(slice(lo, hi) for lo, hi in box))] = _scan_sums(flat, a, b, wins, box, acc) / div
                continue
            t = _Tile(flat, a, b, wins, box, 0, acc)
            spread = t.spread(div, 1) if spread is None else spread      # the same layout for the whole box
            runs = [t.last_axis(k) for k in range(wins[-1].k)]
            first = () if t.rows else (slice(None),)
            elements = itertools.product(*lead, range(wins[-1].k))      # scan order
            with np.errstate(invalid="ignore", over="ignore"):
                *sel, k = next(elements)
                total = np.array(runs[k][(*first, *sel)], dtype=acc)
                for *sel, k in elements:
                    np.add(total, runs[k][(*first, *sel)], out=total, dtype=acc)
                np.divide(total, spread, out=total)
            y[t.out] = t.channels_first(total)     # rounded once, to x's type

    _run(unit, _tiles(n * c, wins, np.dtype(acc).itemsize, 2 * np.dtype(acc).itemsize))
    return y.reshape(n, c, *y.shape[1:])


def _fused_mean(kernels, flat, wins, divisors, y):
    """window_mean in float64 by the compiled loops (``_pool_fused``): the same bits. A chunk of
    rows at a time: its float16 input made float32 (exactly: each term is made float64 as it is
    read), its sums in float64, then rounded once into ``y``; the work arrays of a chunk within
    TILE_BYTES."""
    rows = flat.shape[0]
    work = np.float32 if flat.dtype == np.float16 else flat.dtype
    if _block.is_block(wins):
        div = math.prod(float(d[0]) for d in divisors)     # counts: exact in float64, any order
        flat_y = y.reshape(rows)

        def block(a, b):
            g = _pool_fused.writable(_block.elements(flat[a:b], wins), work)
            sums = np.empty(b - a)
            kernels.block_sums(g, sums)
            np.divide(sums, div, out=sums)
            flat_y[a:b] = sums
        k = math.prod(w.k for w in wins)
        _chunked(block, rows, k * (np.dtype(work).itemsize + (flat.dtype != work) * 2) + 8, rows * k)
        return y
    geo = _pool_fused.geometry(wins)
    div = functools.reduce(np.multiply.outer, [np.asarray(d, np.float64) for d in divisors])
    div = np.array(np.broadcast_to(div, tuple(w.out for w in wins)).reshape(geo[:, 5]))   # writable: one signature
    kind = _pool_fused.walk(wins, rows)
    per_in, per_out = math.prod(flat.shape[1:]), math.prod(w.out for w in wins)

    def part(a, b):
        x3 = _pool_fused.as_3d(_pool_fused.writable(flat[a:b], work))
        out = np.empty((b - a, *geo[:, 5]))
        if kind == "lanes":
            xt = np.ascontiguousarray(x3.reshape(b - a, -1).T)
            kernels.mean_lanes(x3, xt, geo, div, out, np.empty(b - a))
        else:
            kernels.mean_rows(x3, geo, div, out)
        y[a:b] = out.reshape(y[a:b].shape)             # rounded once, to x's type

    _chunked(part, rows, per_in * np.dtype(work).itemsize * 2 + per_out * 8, rows * per_out * math.prod(w.k for w in wins))
    return y


def _fused_max(kernels, x, wins, want_index, storage_order):
    """window_max by the compiled loops (``_pool_fused``): the same values and indices. A chunk of
    rows at a time (float16 made float32, exactly: a maximum only moves values), the work arrays of
    a chunk within TILE_BYTES."""
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    flat = x.reshape(n * c, *spatial)
    rows = flat.shape[0]
    work = np.dtype(np.float32 if flat.dtype == np.float16 else flat.dtype)
    geo = _pool_fused.geometry(wins)
    steps = [math.prod(spatial[i + 1:]) if storage_order == 0 else math.prod(spatial[:i]) for i in range(len(wins))]
    steps = np.array([0] * (3 - len(wins)) + steps, np.int64)
    lowest = work.type(-np.inf if work.kind == "f" else np.iinfo(work).min)
    y = np.empty((rows, *geo[:, 5]), x.dtype)
    at = np.empty(y.shape if want_index else (1, 1, 1, 1), np.int64)
    kind = _pool_fused.walk(wins, rows)
    per_in, per_out = math.prod(spatial), math.prod(w.out for w in wins)

    def part(a, b):
        x3 = _pool_fused.as_3d(_pool_fused.writable(flat[a:b], work))
        best = y[a:b] if work == x.dtype else np.empty((b - a, *geo[:, 5]), work)
        ats = at[a:b] if want_index else at
        if kind == "lanes":
            xt = np.ascontiguousarray(x3.reshape(b - a, -1).T)
            kernels.max_lanes(xt, geo, steps, a, lowest, want_index, best, ats,
                              np.empty(b - a, work), np.empty(b - a, np.int64))
        else:
            kernels.max_rows(x3, geo, steps, a, lowest, want_index, best, ats)
        if best.dtype != y.dtype:
            y[a:b] = best

    _chunked(part, rows, per_in * work.itemsize * 2 + per_out * work.itemsize, rows * per_out * math.prod(w.k for w in wins))
    shape = (n, c, *(w.out for w in wins))
    return y.reshape(shape), (at.reshape(shape) if want_index else None)


#: fewer element visits than this: one call on this thread
_SPLIT_FROM = 1 << 18


def _chunked(call, rows: int, row_bytes: int, visits: int) -> None:
    """call(a, b) over chunks of the rows 0..rows-1 whose work arrays (``row_bytes`` a row) take
    at most TILE_BYTES (one row at least), dealt to the reference's workers where the work is
    large."""
    per = max(1, TILE_BYTES // max(row_bytes, 1))
    if visits < _SPLIT_FROM or workers() == 1:
        for a in range(0, rows, per):
            call(a, min(a + per, rows))
        return
    per = min(per, -(-rows // workers()))             # a chunk for each worker at least
    list(_pool().map(lambda a: call(a, min(a + per, rows)), range(0, rows, per)))


def along_scan(channels: int, wins) -> bool:
    """Few wide windows: at least LONG_WINDOW elements each, more than the output has values.
    One step per element would be a step over few values: sum along the scan (``_scan_sums``)."""
    k = math.prod(w.k for w in wins)
    return k >= LONG_WINDOW and k > channels * math.prod(w.out for w in wins)


def _scan_sums(flat, a: int, b: int, wins, box, acc) -> np.ndarray:
    """(channels a..b-1, windows of ``box``): each window's elements, pads as +0.0, added one after
    the other in scan order, for few wide windows (one step per element would be a step over few
    values): the elements laid out in scan order along a row per window and channel, and
    np.add.accumulate along it, which adds each element to the sum of those before it. A chunk of
    the first axis's elements at a time (work arrays within TILE_BYTES, or one such element's
    share of the window where that alone is larger), each chunk accumulated from the sum so far."""
    nd = len(wins)
    m = [hi - lo for lo, hi in box]
    rows = (b - a) * math.prod(m)
    rest = math.prod(w.k for w in wins[1:])                 # elements per element of the first axis
    chunk = max(1, TILE_BYTES // (3 * np.dtype(acc).itemsize * rows * rest))
    w0, total = wins[0], None
    for k0 in range(0, w0.k, chunk):
        kc = min(chunk, w0.k - k0)
        # the input the chunk's elements lie in, padded with 0, channels first
        spans = [(box[0][0] * w0.s - w0.begin + k0 * w0.d, (box[0][1] - 1) * w0.s - w0.begin + (k0 + kc - 1) * w0.d + 1)]
        spans += [(lo * w.s - w.begin, (hi - 1) * w.s - w.begin + (w.k - 1) * w.d + 1) for w, (lo, hi) in zip(wins[1:], box[1:])]
        src = [slice(max(0, s), max(0, s, min(w.n, e))) for (s, e), w in zip(spans, wins)]
        if all(q.stop - q.start == e - s for q, (s, e) in zip(src, spans)):
            region = flat[(slice(a, b), *src)]                        # no padding: the input itself
        else:
            region = np.zeros((b - a, *(e - s for s, e in spans)), acc)
            region[(slice(None), *(slice(q.start - s, q.stop - s) for q, (s, _) in zip(src, spans)))] = flat[(slice(a, b), *src)]
        # element (t_0, ..., t_L) of window (o_0, ..., o_L) at region[o_i * s_i + t_i * d_i] (t_0 from k0)
        st = region.strides
        view = np.lib.stride_tricks.as_strided(
            region, (b - a, *m, kc, *(w.k for w in wins[1:])),
            (st[0], *(w.s * st[i + 1] for i, w in enumerate(wins)), *(w.d * st[i + 1] for i, w in enumerate(wins))),
            writeable=False)
        row = np.empty((rows, 1 + kc * rest), acc)
        row[:, 1:].reshape(view.shape)[...] = view            # a view of row: splitting axes never copies
        if total is None:
            np.add.accumulate(row[:, 1:], axis=1, out=row[:, 1:])
        else:
            row[:, 0] = total
            np.add.accumulate(row, axis=1, out=row)
        total = row[:, -1].copy()
    return total.reshape(b - a, *m)


class _Tile:
    """The input of a tile (channels a..b-1; windows lo..hi-1 of each spatial axis, ``box``), with
    ``fill`` wherever the windows reach outside the input, in one of two layouts:

    - rows (``rows`` true): a copy as ``dtype``, laid out (axis 0, ..., axis L-1, channel, axis L)
      in one flat buffer, each row (one channel's stretch of the last axis) wf * s long, wf >= the
      tile's windows on that axis. Element k of the last axis's windows, for every row and channel
      at once, is then one run of the buffer, every s-th element from k*d, which NumPy walks in one
      loop; the wf - (hi - lo) windows past the end of each row are junk (they read into the next
      row) and are dropped.
    - plain, where junk would be most of the work (a few wide windows, wf > 2 (hi - lo)):
      (channel, axis 0, ..., axis L), a view of the input where the windows need no padding, else a
      padded copy as ``dtype``; element k is a strided view."""

    def __init__(self, flat, a: int, b: int, wins, box, fill, dtype):
        self.spans = [(lo * w.s - w.begin, (hi - 1) * w.s - w.begin + (w.k - 1) * w.d + 1)
                      for w, (lo, hi) in zip(wins, box)]
        sizes = [e - s for s, e in self.spans]
        self.wins, self.box, self.ch = wins, box, b - a
        self.out = (slice(a, b), *(slice(lo, hi) for lo, hi in box))
        last, self.m = wins[-1], box[-1][1] - box[-1][0]
        self.wf = -(-sizes[-1] // last.s)
        self.rows = self.wf <= 2 * self.m
        nd = len(wins)
        src = [slice(max(0, s), max(0, s, min(w.n, e))) for (s, e), w in zip(self.spans, wins)]   # empty: padding
        dst = [slice(q.start - s, q.stop - s) for q, (s, _) in zip(src, self.spans)]
        if self.rows:
            row = self.wf * last.s
            body = math.prod(sizes[:-1]) * self.ch * row
            self.buf = np.empty(body + (last.k - 1) * last.d, dtype)    # the last row's junk reads past its end
            self.buf[body:] = fill
            self.tile = self.buf[:body].reshape(*sizes[:-1], self.ch, row)
            with np.errstate(over="ignore", invalid="ignore"):         # a float64 input to float32: as astype
                self.tile[(*dst[:-1], slice(None), dst[-1])] = flat[(slice(a, b), *src)].transpose(*range(1, nd), 0, nd)
            for axis, (q, size) in enumerate(zip(dst, sizes[:-1] + [row])):     # the rest: ``fill``
                pos = (slice(None),) * (axis if axis < nd - 1 else nd)
                self.tile[(*pos, slice(None, q.start))] = fill
                self.tile[(*pos, slice(q.stop, None))] = fill
        elif all(q.stop - q.start == size for q, size in zip(src, sizes)):
            self.tile = flat[(slice(a, b), *src)]                       # no padding: the input itself
        else:
            self.tile = np.full((self.ch, *sizes), fill, dtype)
            with np.errstate(over="ignore", invalid="ignore"):
                self.tile[(slice(None), *dst)] = flat[(slice(a, b), *src)]

    def dim(self, axis: int) -> int:
        """Where spatial axis ``axis`` (not the last) is in the tile and in the results of the
        last axis's pass."""
        return axis if self.rows else axis + 1

    def last_axis(self, k: int):
        """Element k of the tile's windows on the last axis: (axes 0..L-1, channel, wf) or
        (channel, axes 0..L-1, windows)."""
        w = self.wins[-1]
        if self.rows:
            n = self.tile.size
            return self.buf[k * w.d:k * w.d + n].reshape(self.tile.shape)[..., ::w.s]
        return self.tile[..., k * w.d:k * w.d + (self.m - 1) * w.s + 1:w.s]

    def spread(self, a, fill):
        """``a`` (one value per window of the box) shaped for the results (junk: ``fill``)."""
        if not self.rows:
            return a
        out = np.full((*a.shape[:-1], 1, self.wf), fill, a.dtype)
        out[..., :self.m] = np.expand_dims(a, -2)
        return out

    def coordinates(self):
        """Per spatial axis, the input coordinate of each window's first element along it, shaped
        for the results of the last axis's pass (the last axis: of every window, junk included)."""
        nd = len(self.wins)
        out = []
        for i, ((start, end), w) in enumerate(zip(self.spans, self.wins)):
            if i < nd - 1:
                out.append(np.arange(start, end).reshape([-1] + [1] * (nd - i - (0 if self.rows else 1))))
            else:
                out.append(np.arange(self.wf if self.rows else self.m) * w.s + start)
        return out

    def channels_first(self, a):
        """A result in (channel, windows of axis 0, ..., axis L)."""
        nd = len(self.wins)
        return a[..., :self.m].transpose(nd - 1, *range(nd - 1), nd) if self.rows else a


def _tiles(lead: int, wins, in_bytes: int, out_bytes: int):
    """Work units covering the output (lead, *outs): (box, channel ranges), box = [(lo, hi) per
    spatial axis]. A tile is a box and a channel range: the first axis of more than one position
    is halved until the tile's work arrays (its padded input at ``in_bytes`` an element, its
    windows at ``out_bytes`` each) take at most TILE_BYTES, or the box is one window. A box's
    channel ranges are dealt to at most ``workers()`` units, which share what depends on the box alone."""
    full = [lead, *(w.out for w in wins)]
    sizes = list(full)

    padded = any(w.begin > 0 or (w.out - 1) * w.s - w.begin + (w.k - 1) * w.d >= w.n for w in wins)

    def cost(sz):
        last, m = wins[-1], sz[-1]
        copied = padded or -(-((m - 1) * last.s + (last.k - 1) * last.d + 1) // last.s) <= 2 * m   # see _Tile
        spans = math.prod((m - 1) * w.s + (w.k - 1) * w.d + w.s for w, m in zip(wins, sz[1:]))
        return sz[0] * (spans * in_bytes * copied + math.prod(sz[1:]) * out_bytes)

    axis = 0
    while axis < len(sizes) and cost(sizes) > TILE_BYTES:
        if sizes[axis] == 1:
            axis += 1
        else:
            sizes[axis] = -(-sizes[axis] // 2)
    ranges = [[(a, min(a + z, m)) for a in range(0, m, z)] for z, m in zip(sizes, full)]
    n = workers()
    groups = [ranges[0][i::n] for i in range(min(n, len(ranges[0])))]
    return [(list(box), group) for box in itertools.product(*ranges[1:]) for group in groups]


def _run(work, items) -> None:
    """work(item) for every item, on the thread pool when there are several."""
    if len(items) == 1 or workers() == 1:
        for item in items:
            work(item)
    else:
        list(_pool().map(work, items))


_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=workers())
    return _POOL


def zero_signs_tie(x: np.ndarray) -> bool:
    """x holds both -0.0 and +0.0, which compare equal: which of them is a maximum depends on a
    tie rule (np.maximum keeps either one). On the bit patterns: -0.0 is the sign bit alone."""
    if x.dtype.kind != "f":
        return False
    bits = x.view(f"u{x.itemsize}")
    return bool((bits == 1 << (8 * x.itemsize - 1)).any()) and bool((bits == 0).any())


def _axis_windows_real(n: int, s: int, d: int, p: int, w: int, m: int) -> bool:
    """Does every one of the ``m`` windows on an axis (input ``n``, stride ``s``, dilation ``d``,
    start pad ``p``, window ``w``) hold an input element? Window o covers o*s - p + k*d, k < w.
    Arithmetic only: nothing of the output's size is allocated (a pad of 2**32 - 1 is a valid UINT)."""
    lo, hi = -p, (m - 1) * s - p                 # the first and the last window's first coordinate
    if lo + (w - 1) * d < 0 or hi >= n:          # the first window ends before the input / the last starts after it
        return False
    if d <= n or w == 1:                         # no gap between window elements wider than the input
        return True
    # d > n: at most one element of a window can be real, the one at (o*s - p) mod d: it must be < n
    # for every o (the bounds above keep its k within the window)
    g = math.gcd(s, d)
    if m >= d // g:                              # a whole period: every residue of -p modulo g occurs
        return (d - g) + (-p) % g < n
    for start in range(0, m, 1 << 20):           # fewer windows than a period (m < d <= 2**32): in chunks
        o = np.arange(start, min(m, start + (1 << 20)), dtype=np.int64)
        if ((o * s - p) % d >= n).any():
            return False
    return True


def window_has_real_element(desc) -> bool:
    """Every output position's window holds an input element: per axis (a window's count is the
    product of its per-axis counts, so checking each axis is enough)."""
    return all(_axis_windows_real(desc.InputSizes[i + 2], desc.Strides[i], desc.Dilations[i], desc.StartPadding[i],
                                  w, m)
               for i, (w, m) in enumerate(zip(desc.WindowSize, out_sizes(desc))))
