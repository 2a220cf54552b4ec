"""Window geometry shared by MAX_POOLING2 and AVERAGE_POOLING1: validation of the common fields,
the dilation-correct output size, the ONNX attributes, and a vectorised walk over window offsets."""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
from onnx import helper

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


def check_variant(case) -> None:
    """ONNX-side options must describe the same geometry as the DML descriptor: auto_pad SAME's
    pads are the descriptor's pads, VALID has none. ceil_mode goes with every auto_pad (under
    SAME and VALID it changes nothing, by the ONNX text)."""
    desc, v = case.desc, case.v
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


def onnx_attrs(case, op_type: str) -> tuple[dict, str | None]:
    """Attributes of the ONNX pooling node for this case (kernel, strides, dilations, pads,
    auto_pad, ceil_mode), and None when the graph is the direct image of the descriptor or why
    it is not. With ceil_mode=1 the ONNX end pads are the smallest that give the DML output size
    at the case's opset; where none do, the graph keeps the descriptor's own pads with
    ceil_mode=1 (the ONNX-side view of the descriptor) and is not an image."""
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

def chunked(fn, x: np.ndarray, *, target_bytes: int = 1 << 18):
    """Apply ``fn`` to cache-sized slices of x along batch*channel and concatenate the results
    (each result a tuple of arrays whose first axis is that slice's). Slices run on a thread
    pool: NumPy releases the GIL inside its loops."""
    n, c = x.shape[:2]
    flat = x.reshape(n * c, 1, *x.shape[2:])
    per = max(1, target_bytes // max(1, flat[0].nbytes))
    bounds = [(i, min(i + per, n * c)) for i in range(0, n * c, per)]
    if len(bounds) == 1:
        parts = [fn(flat)]
    else:
        parts = list(_pool().map(lambda b: fn(flat[b[0]:b[1]]), bounds))
    return tuple(np.concatenate([p[k] for p in parts]).reshape(n, c, *parts[0][k].shape[2:])
                 for k in range(len(parts[0])))


_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        import os
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1))
    return _POOL


def offsets(desc):
    return list(itertools.product(*[range(w) for w in desc.WindowSize]))


def pad(x: np.ndarray, desc, value) -> np.ndarray:
    widths = [(0, 0), (0, 0)] + list(zip(desc.StartPadding, desc.EndPadding))
    if not any(desc.StartPadding) and not any(desc.EndPadding):
        return x
    return np.pad(x, widths, mode="constant", constant_values=value)


def window_views(xp: np.ndarray, desc):
    """Yield (k, offset tuple, view): view[..., o] is the window element at ``offset`` for output o."""
    outs = out_sizes(desc)
    for k, off in enumerate(offsets(desc)):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                   for o, d, n, s in zip(off, desc.Dilations, outs, desc.Strides))
        yield k, off, xp[(Ellipsis, *sl)]


def axis_valid(desc, axis: int, offset: int) -> np.ndarray:
    """For each output position on spatial ``axis``: is the window element at ``offset`` inside
    the unpadded input?"""
    n_out = out_sizes(desc)[axis]
    coord = np.arange(n_out) * desc.Strides[axis] + offset * desc.Dilations[axis] - desc.StartPadding[axis]
    return (coord >= 0) & (coord < desc.InputSizes[axis + 2])


def valid_mask(desc, off) -> np.ndarray:
    """Boolean mask over the spatial output: window element ``off`` lies inside the input."""
    masks = [axis_valid(desc, i, o) for i, o in enumerate(off)]
    out = masks[0]
    for m in masks[1:]:
        out = out[..., None] & m
    return out


def valid_counts(desc) -> np.ndarray:
    """For each spatial output position, how many window elements lie inside the input."""
    per_axis = []
    for i, w in enumerate(desc.WindowSize):
        per_axis.append(sum(axis_valid(desc, i, k).astype(np.int64) for k in range(w)))
    out = per_axis[0]
    for c in per_axis[1:]:
        out = out[..., None] * c
    return out


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


def flat_indices(desc, best_k: np.ndarray, storage_order: int = 0) -> np.ndarray:
    """Turn the winning window offset per output into an index into the input seen as one flat
    array (batch and channel included). storage_order=1: spatial part column-major (ONNX)."""
    shape = desc.InputSizes
    spatial = shape[2:]
    n_sp = len(spatial)
    offs = np.array(offsets(desc), dtype=np.int64)          # K x n_sp
    outs = out_sizes(desc)
    coords = []
    for a in range(n_sp):
        o = np.arange(outs[a]).reshape([-1 if i == a else 1 for i in range(n_sp)])
        coords.append(o * desc.Strides[a] + offs[best_k, a] * desc.Dilations[a] - desc.StartPadding[a])
    if storage_order == 0:
        sp = coords[0]
        for a in range(1, n_sp):
            sp = sp * spatial[a] + coords[a]
    else:
        sp = coords[n_sp - 1]
        for a in range(n_sp - 2, -1, -1):
            sp = sp * spatial[a] + coords[a]
    nc = (np.arange(shape[0])[:, None] * shape[1] + np.arange(shape[1])[None, :]) * math.prod(spatial)
    return nc.reshape(shape[0], shape[1], *([1] * n_sp)) + sp


#: geometry rows both pooling operators sweep, in sweep order: (InputSizes, WindowSize, Strides,
#: StartPadding, EndPadding, Dilations, ONNX-side variant); None pads: filled in by auto_pad
BASIC_2D = [
    ((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), {}),
    ((1, 1, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), {}),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 0), (0, 1), (1, 1), {}),       # asymmetric padding
    ((1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (1, 1), (2, 2), {}),       # dilations
    ((1, 2, 9, 7), (2, 3), (1, 2), (0, 1), (1, 2), (3, 1), {}),       # dilations, mixed
    ((2, 2, 6, 6), (2, 2), (3, 3), (0, 0), (0, 0), (1, 1), {}),       # stride larger than window
    ((1, 3, 5, 6), (5, 6), (1, 1), (0, 0), (0, 0), (1, 1), {}),       # window equal to input
]
AUTO_PAD_2D = [
    ((1, 2, 7, 6), (3, 3), (2, 2), None, None, (1, 1), {"auto_pad": "SAME_UPPER"}),
    ((1, 2, 7, 6), (2, 2), (1, 1), None, None, (1, 1), {"auto_pad": "SAME_LOWER"}),
    ((2, 1, 8, 9), (3, 2), (2, 3), None, None, (2, 2), {"auto_pad": "SAME_UPPER"}),
    ((1, 2, 6, 7), (3, 3), (2, 1), (0, 0), (0, 0), (1, 1), {"auto_pad": "VALID"}),
]
BASIC_3D = [
    ((1, 1, 4, 4, 4), (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1), {}),
    ((2, 2, 5, 4, 6), (3, 2, 3), (1, 2, 2), (1, 0, 1), (1, 1, 0), (1, 1, 1), {}),
    ((1, 2, 6, 6, 5), (2, 2, 2), (2, 1, 2), (0, 1, 0), (1, 0, 1), (2, 2, 1), {}),
]
SAME_LOWER_3D = ((1, 1, 5, 4, 6), (2, 2, 3), (2, 2, 2), None, None, (1, 1, 1), {"auto_pad": "SAME_LOWER"})


def descriptors(D, rows):
    """(descriptor without data type, ONNX-side variant) for each geometry row."""
    for sizes, k, s, sp, ep, dil, var in rows:
        yield geometry(D, sizes, k, s, sp, ep, dil, var), var


def label(desc, variant: dict, extra: tuple[str, ...] = ()) -> str:
    """The geometry part of a pooling case id: dims, kernel, strides, pads, dilations, then the
    operator's ``extra`` parts, then the ONNX-side options that change the graph."""
    j = lambda a: "x".join(map(str, a))  # noqa: E731
    parts = [f"{desc.DimensionCount}d", f"k{j(desc.WindowSize)}", f"s{j(desc.Strides)}",
             f"p{''.join(map(str, desc.StartPadding + desc.EndPadding))}", f"d{j(desc.Dilations)}", *extra]
    for k, val in sorted(variant.items()):
        if k == "ceil_mode" and val:
            parts.append("ceil")
        elif k == "auto_pad" and val != "NOTSET":
            parts.append(val.lower().replace("_", ""))
        elif k == "storage_order" and val:
            parts.append("colmajor")
    return "-".join(parts + F.label_parts(variant))


def curated_case(op, geo: tuple, variant: dict, family: str, opset: int | None = None, **fields):
    """A curated pooling case: a geometry row (sizes, kernel, strides, start pads, end pads,
    dilations) seen from the ONNX side, with descriptor fields set (DataType, ...)."""
    d = geometry(op.Desc, *geo, variant).replace(**fields)
    return op.make_case(d, variant, family, opset)


def geometry(D, sizes, k, s, sp, ep, dil, variant: dict, **fields):
    """A pooling descriptor of class D from the ONNX-side view of a geometry: auto_pad SAME fills
    in the pads, VALID clears them; ceil_mode with explicit pads turns ONNX end pads into the DML
    EndPadding that gives the same output (DML has no ceil_mode; under SAME and VALID ceil_mode
    changes nothing, by the ONNX text)."""
    nd = len(k)
    d = D(InputSizes=tuple(sizes), DataType="FLOAT32", DimensionCount=nd, Strides=tuple(s), WindowSize=tuple(k),
          StartPadding=tuple(sp or (0,) * nd), EndPadding=tuple(ep or (0,) * nd), Dilations=tuple(dil), **fields)
    if variant.get("auto_pad", "").startswith("SAME"):
        b, e = same_pads(d, variant["auto_pad"])
        d = d.replace(StartPadding=b, EndPadding=e)
    elif variant.get("auto_pad") == "VALID":
        d = d.replace(StartPadding=(0,) * nd, EndPadding=(0,) * nd)
    if variant.get("ceil_mode") and variant.get("auto_pad", "NOTSET") == "NOTSET":
        eff = effective_window(d)
        ends = []
        for i in range(nd):
            n_in = sizes[i + 2]
            want = ceil_out(n_in, eff[i], s[i], d.StartPadding[i], d.EndPadding[i])
            ends.append(max(0, (want - 1) * s[i] + eff[i] - n_in - d.StartPadding[i]))
        d = d.replace(EndPadding=tuple(ends))
    return d


#: the ONNX attribute grid both pooling operators sweep (appended after every older row, so the
#: ids and family rotation of the older cases do not move): ONNX-side geometry rows (InputSizes,
#: kernel, strides, ONNX begin pads, ONNX end pads, dilations), each under every auto_pad x
#: ceil_mode at every opset of ``opsets`` where the graph can carry it. Row 1: ceil_mode overhang
#: and odd SAME totals; row 2: stride larger than the kernel (SAME's pad formula negative on H);
#: rows 3 and 4: dilations (ONNX needs opset 10 for MaxPool, 19 for AveragePool), 3-D.
GRID = [
    ((1, 2, 5, 7), (3, 2), (2, 3), (1, 0), (1, 1), (1, 1)),
    ((2, 1, 6, 5), (2, 2), (3, 3), (0, 0), (1, 1), (1, 1)),
    ((1, 2, 7, 8), (2, 3), (2, 2), (1, 1), (1, 0), (2, 2)),
    ((1, 1, 5, 4, 6), (2, 3, 2), (2, 2, 3), (0, 1, 0), (1, 1, 1), (1, 1, 2)),
]
GRID_VARIANTS = [dict(auto_pad=ap, ceil_mode=cm) for ap in AUTO_PAD for cm in (0, 1)]


def grid(op, opsets, fields_list, families_of):
    """Cases of the ONNX attribute grid for ``op``: every GRID row under every GRID variant at
    every opset, with each descriptor field set of ``fields_list`` (a callable (row index,
    variant, opset) -> list of (field dict, extra variant)); rows and variants the graph cannot
    carry at an opset (attribute missing), or whose graph the ONNX text leaves undefined, are
    left out."""
    from .base import DescriptorError
    cases = []
    for opset in opsets:
        for gi, (sizes, k, s, sp, ep, dil) in enumerate(GRID):
            for var in GRID_VARIANTS:
                for fields, extra in fields_list(gi, var, opset):
                    v = {key: val for key, val in {**var, **extra}.items() if val not in (0, "NOTSET")}
                    try:
                        d = geometry(op.Desc, sizes, k, s, sp, ep, dil, v).replace(**fields)
                        op.validate(d)
                        fam = families_of(d.DataType, len(cases))
                        case = op.make_case(d, v, fam, opset)
                        op.check_variant(case)
                    except DescriptorError:
                        continue
                    if op.expressible(case) is None:
                        cases.append(case)
    return cases


# ---------------------------------------------------------------------------------------------
# The census's exports (profile networks)
# ---------------------------------------------------------------------------------------------

def from_export(op, e, op_type: str) -> list:
    """``Operator.from_export`` of the pooling operators: the descriptor (float32, no Indices) and
    ONNX-side options of an exported pooling graph — one pooling node, Pad + pooling node,
    GlobalMaxPool / GlobalAveragePool, or (average) ReduceMean over the spatial axes. Graphs of
    another shape, 1-D pooling (DML pooling is 4-D or 5-D), a ReduceMean over other axes (a mean
    over an NHWC tensor's spatial axes), and descriptors the operator refuses give []."""
    if not e.inputs or len(e.inputs[0]) not in (4, 5):
        return []
    sizes = tuple(e.inputs[0])
    nd = len(sizes) - 2
    zeros, ones = (0,) * nd, (1,) * nd
    extra = {"IncludePadding": False} if op_type == "AveragePool" else {}
    node = e.node(-1)
    variant: dict = {}
    if e.ops == F.global_node(op_type):
        desc = op.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=nd, Strides=ones, WindowSize=sizes[2:],
                       StartPadding=zeros, EndPadding=zeros, Dilations=ones, **extra)
        variant = {"form": "global"}
    elif op_type == "AveragePool" and e.ops == "ReduceMean":
        axes = e.const(node, 1, e.attr(node, "axes"))
        reading = F.spatial_axes(axes or [], len(sizes))
        if reading is None:
            return []
        desc = op.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=nd, Strides=ones, WindowSize=sizes[2:],
                       StartPadding=zeros, EndPadding=zeros, Dilations=ones, **extra)
        variant = {"form": "reduce_mean", "axes": reading}
        if not e.attr(node, "keepdims", 1):
            variant["keepdims"] = 0
    elif e.ops in (op_type, f"Pad+{op_type}"):
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
            variant = {"form": "pad"}
            if op_type == "AveragePool":
                padded = any(pads)
                extra = {"IncludePadding": bool(cip) or padded}
                if padded and not cip:
                    variant["count_include_pad"] = 0
        else:
            if ceil:
                variant["ceil_mode"] = 1
            if op_type == "AveragePool":
                extra = {"IncludePadding": bool(cip)}
        desc = geometry(op.Desc, sizes, k, s, pads[:nd], pads[nd:], dil, variant, **extra)
    else:
        return []
    case = op.make_case(desc, variant, "random", e.opset)
    try:
        op.validate(desc)
        op.check_variant(case)
    except DescriptorError:
        return []
    return [(desc, variant)]
