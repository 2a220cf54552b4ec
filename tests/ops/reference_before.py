"""Today's NumPy reference, frozen (onnx_dml_bench/ops as of commit 1ae5bb9): the functions that
compute the answers of MaxPool, AveragePool, MaxRoiPool, SpaceToDepth and DepthToSpace, with the
helpers they use, copied verbatim (module prefixes dropped; the ONNX-side functions of
``_onnx_pool`` renamed ``onnx_*``). tests/ops/test_reference_equal.py checks, bit for bit, that the
package's reference gives the same answers. Nothing here is imported by the package."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

SAME = ("SAME_UPPER", "SAME_LOWER")


class SpecError(ValueError):
    pass


# ---- _pooling.effective_window
def effective_window(desc) -> tuple[int, ...]:
    return tuple((w - 1) * d + 1 for w, d in zip(desc.WindowSize, desc.Dilations))


# ---- _pooling.out_sizes
def out_sizes(desc) -> tuple[int, ...]:
    """floor((In + Start + End - ((Window-1)*Dilation + 1)) / Stride) + 1 per spatial axis.
    (The DML pages leave dilation out of this formula; that is an error in the pages.)"""
    sizes = []
    for i, eff in enumerate(effective_window(desc)):
        padded = desc.InputSizes[i + 2] + desc.StartPadding[i] + desc.EndPadding[i]
        sizes.append((padded - eff) // desc.Strides[i] + 1)
    return tuple(sizes)


# ---- _pooling.chunked
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


# ---- _pooling._pool
_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        import os
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1))
    return _POOL


# ---- _pooling.offsets
def offsets(desc):
    return list(itertools.product(*[range(w) for w in desc.WindowSize]))


# ---- _pooling.pad
def pad(x: np.ndarray, desc, value) -> np.ndarray:
    widths = [(0, 0), (0, 0)] + list(zip(desc.StartPadding, desc.EndPadding))
    if not any(desc.StartPadding) and not any(desc.EndPadding):
        return x
    return np.pad(x, widths, mode="constant", constant_values=value)


# ---- _pooling.window_views
def window_views(xp: np.ndarray, desc):
    """Yield (k, offset tuple, view): view[..., o] is the window element at ``offset`` for output o."""
    outs = out_sizes(desc)
    for k, off in enumerate(offsets(desc)):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                   for o, d, n, s in zip(off, desc.Dilations, outs, desc.Strides))
        yield k, off, xp[(Ellipsis, *sl)]


# ---- _pooling.axis_valid
def axis_valid(desc, axis: int, offset: int) -> np.ndarray:
    """For each output position on spatial ``axis``: is the window element at ``offset`` inside
    the unpadded input?"""
    n_out = out_sizes(desc)[axis]
    coord = np.arange(n_out) * desc.Strides[axis] + offset * desc.Dilations[axis] - desc.StartPadding[axis]
    return (coord >= 0) & (coord < desc.InputSizes[axis + 2])


# ---- _pooling.valid_mask
def valid_mask(desc, off) -> np.ndarray:
    """Boolean mask over the spatial output: window element ``off`` lies inside the input."""
    masks = [axis_valid(desc, i, o) for i, o in enumerate(off)]
    out = masks[0]
    for m in masks[1:]:
        out = out[..., None] & m
    return out


# ---- _pooling.valid_counts
def valid_counts(desc) -> np.ndarray:
    """For each spatial output position, how many window elements lie inside the input."""
    per_axis = []
    for i, w in enumerate(desc.WindowSize):
        per_axis.append(sum(axis_valid(desc, i, k).astype(np.int64) for k in range(w)))
    out = per_axis[0]
    for c in per_axis[1:]:
        out = out[..., None] * c
    return out


# ---- _pooling.flat_indices
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


# ---- max_pooling2.max_pool
def max_pool(x: np.ndarray, desc, want_indices: bool, storage_order: int = 0):
    """Values (and DML indices as INT64) of DML max pooling. Vectorised over batch, channel and
    output positions (in cache-sized slices); loops only over the window offsets."""
    floating = x.dtype.kind == "f"
    sentinel = -np.inf if floating else np.iinfo(x.dtype).min
    has_nan = floating and bool(np.isnan(x).any())
    # padding can only tie with a real element equal to the sentinel: then track padding explicitly
    exact_padding = bool((x == sentinel).any()) and (any(desc.StartPadding) or any(desc.EndPadding))
    masks = [valid_mask(desc, off) for off in offsets(desc)] if exact_padding else None
    # np.maximum is the fast path for values alone; it may pick -0.0 over an earlier +0.0 (or the
    # reverse), where the DML rule keeps the first element met: then take the comparison path
    zeros = x[x == 0] if floating else x[:0]
    signed_zero_ties = bool(zeros.size) and bool(np.signbit(zeros).any()) and bool((~np.signbit(zeros)).any())
    values_fast = not want_indices and not signed_zero_ties

    def core(xc):
        xp = pad(xc, desc, sentinel)
        best = best_k = best_pad = None
        for k, off, view in window_views(xp, desc):
            if best is None:
                best = view.copy()
                if want_indices:
                    best_k = np.zeros(best.shape, dtype=np.int32)
                if exact_padding:
                    best_pad = np.broadcast_to(~masks[0], best.shape).copy()
                continue
            if values_fast:
                np.maximum(best, view, out=best)          # NaN propagates
                continue
            take = view > best
            if has_nan:
                take |= np.isnan(view) & ~np.isnan(best)
            if exact_padding:
                valid = masks[k]
                take &= valid
                take |= best_pad & valid
                best_pad &= ~valid
            np.copyto(best, view, where=take)
            if want_indices:
                np.copyto(best_k, k, where=take)
        return (best, best_k) if want_indices else (best,)

    res = chunked(core, x)
    if not want_indices:
        return res[0], None
    return res[0], flat_indices(desc, res[1], storage_order).astype(np.int64)


# ---- average_pooling1.avg_pool
def avg_pool(x: np.ndarray, desc, acc=np.float64) -> np.ndarray:
    """DML average pooling: sum in float64 (exact for float16 windows), divide, round once.
    ``acc`` other than float64 models an implementation's accumulation (open point)."""
    if desc.IncludePadding:
        div = acc(math.prod(desc.WindowSize))
    else:
        div = valid_counts(desc).astype(acc)

    def core(xc):
        xp = pad(xc.astype(acc), desc, 0)
        total = None
        with np.errstate(invalid="ignore", over="ignore"):
            for _, _, view in window_views(xp, desc):
                total = view.copy() if total is None else np.add(total, view, out=total)
            return ((total / div).astype(x.dtype),)

    return chunked(core, x)[0]


# ---- roi_pooling.scaled
def scaled(rois: np.ndarray, spatial_scale: float) -> np.ndarray:
    """coord * SpatialScale, computed in FLOAT (float32) as the DML struct's FLOAT implies."""
    return rois[:, 1:5].astype(np.float32) * np.float32(spatial_scale)


# ---- roi_pooling.round_half_away
def round_half_away(v: np.ndarray) -> np.ndarray:
    """C round(): halves away from zero. In float64, where v + 0.5 is exact for every float32."""
    v = np.asarray(v, dtype=np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


# ---- roi_pooling._round_half
def _round_half(tie):
    """round() with halves going where ``tie(v)`` sends them (v a float64 array of halves)."""
    def rounder(v):
        v = np.asarray(v, dtype=np.float64)
        half = np.abs(v - np.trunc(v)) == 0.5
        return np.where(half, tie(v), np.floor(v + 0.5)).astype(np.int64)
    return rounder


# ---- roi_pooling.roi_pool
def roi_pool(x: np.ndarray, rois: np.ndarray, desc, rounder=round_half_away, nan_ignored: bool = False) -> np.ndarray:
    """DML ROI max pooling, vectorised over rois, channels and bins (separable row/column max).
    ``rounder`` and ``nan_ignored`` give the other answers the open points allow."""
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
    rh, rw = y2 - y1 + 1, x2 - x1 + 1

    def bins(p, size, start, limit):
        i = np.arange(p)[None, :]
        lo = (i * size[:, None]) // p + start[:, None]
        hi = ((i + 1) * size[:, None] + p - 1) // p + start[:, None]
        return np.clip(lo, 0, limit), np.clip(hi, 0, limit)

    ys, ye = bins(ph, rh, y1, h)          # (R, PH)
    xs, xe = bins(pw, rw, x1, w)          # (R, PW)
    hh, ww = np.arange(h), np.arange(w)
    my = (hh[None, None, :] >= ys[..., None]) & (hh[None, None, :] < ye[..., None])   # (R, PH, H)
    mx = (ww[None, None, :] >= xs[..., None]) & (ww[None, None, :] < xe[..., None])   # (R, PW, W)
    xb = x[batch].astype(np.float32)                                                 # (R, C, H, W)
    neg = np.float32(-np.inf)
    # max over each bin's columns: (R, C, H, PW)
    cols = np.where(mx[:, None, None, :, :], xb[:, :, :, None, :], neg).max(axis=-1)
    # then over its rows: (R, C, PH, PW)
    out = np.where(my[:, None, :, None, :], np.moveaxis(cols, 2, 3)[:, :, None, :, :], neg).max(axis=-1)
    empty = ((ye <= ys)[:, :, None] | (xe <= xs)[:, None, :])[:, None, :, :]
    out = np.where(empty, np.float32(0), out)
    return out.astype(x.dtype)


# ---- _onnx_pool.Axis
@dataclass(frozen=True)
class Axis:
    n: int
    k: int
    s: int
    d: int
    out: int
    begin: int          # pad pixels before the input
    end: int            # pad pixels after the input (explicit or SAME)

    def coords(self) -> np.ndarray:
        """out x k: input coordinate of each window element."""
        return (np.arange(self.out)[:, None] * self.s - self.begin + np.arange(self.k)[None, :] * self.d)


# ---- _onnx_pool.axes
def axes(a, spatial) -> tuple[list[Axis], list[str]]:
    """Per spatial axis the output size and pads the text defines, and the open points touched."""
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
            if a.op == "AveragePool" and 11 <= a.opset < 19 and not a.ceil_mode and (n - eff + 1) // s != out:
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
            if a.op == "AveragePool" and 11 <= a.opset < 19 and not a.ceil_mode and n // s != out:
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
                        raise SpecError(f"ceil_mode: the last window on axis {i} starts in the right padded region; "
                                        f"before opset 22 ONNX does not define it (open point ceil-last-window)")
                    out -= 1
            else:
                out = (padded - eff) // s + 1
        else:
            raise SpecError(f"auto_pad {a.auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        res.append(Axis(n, k, s, d, out, pb, pe))
    return res, pts


# ---- _onnx_pool._outer
def _outer(masks):
    out = masks[0]
    for m in masks[1:]:
        out = out[..., None] & m
    return out


# ---- _onnx_pool._counts
def _counts(per_axis):
    out = per_axis[0]
    for c in per_axis[1:]:
        out = out[..., None] * c
    return out


# ---- _onnx_pool.check
def check(a, shape) -> list[str]:
    """Refuse what the text does not define; return the open points the graph touches."""
    ax, pts = axes(a, tuple(shape[2:]))
    real = [((c >= 0) & (c < x.n)).sum(axis=1) for x, c in ((x, x.coords()) for x in ax)]
    if a.op == "MaxPool" or not a.count_include_pad:
        if (_counts(real) == 0).any():
            what = "no maximum" if a.op == "MaxPool" else "a divisor of 0 (count_include_pad=0)"
            raise SpecError("a window holds no element of the input: " + what +
                            " (rule: every output position's window must hold at least one input element)")
    else:
        pix = [((c >= -x.begin) & (c < x.n + x.end)).sum(axis=1) for x, c in ((x, x.coords()) for x in ax)]
        if (_counts(pix) == 0).any():
            raise SpecError("a window holds neither input elements nor pad pixels: divisor 0")
        if any(((c >= x.n + x.end).any()) for x, c in ((x, x.coords()) for x in ax)):
            pts.append("ceil-overhang-divisor")
    if a.op == "MaxPool" and a.storage_order and shape[0] * shape[1] > 1:
        pts.append("storage-order-batch-channel")
    return sorted(set(pts))


# ---- _onnx_pool._padded
def _padded(x: np.ndarray, ax: list[Axis], value) -> np.ndarray:
    """x padded so that every window element of every output lies inside (begin pads, then as much
    as the last window needs at the end, all filled with ``value``)."""
    widths = [(0, 0), (0, 0)]
    for a in ax:
        need = (a.out - 1) * a.s + (a.k - 1) * a.d + 1 - a.begin - a.n
        widths.append((a.begin, max(0, need)))
    if all(w == (0, 0) for w in widths):
        return x
    return np.pad(x, widths, mode="constant", constant_values=value)


# ---- _onnx_pool._views
def _views(xp: np.ndarray, ax: list[Axis]):
    for k, off in enumerate(itertools.product(*[range(a.k) for a in ax])):
        sl = tuple(slice(o * a.d, o * a.d + (a.out - 1) * a.s + 1, a.s) for o, a in zip(off, ax))
        yield k, off, xp[(Ellipsis, *sl)]


# ---- _onnx_pool._element_masks
def _element_masks(ax: list[Axis], off, lo_pad: bool = False):
    masks = []
    for a, o in zip(ax, off):
        c = np.arange(a.out) * a.s - a.begin + o * a.d
        masks.append((c >= -a.begin) & (c < a.n + a.end) if lo_pad else (c >= 0) & (c < a.n))
    return _outer(masks)


# ---- _onnx_pool.max_pool
def onnx_max_pool(x: np.ndarray, a, want_indices: bool = False):
    """(Y, Indices or None) of ONNX MaxPool. Rules 1-4, 6, 7 of the module text."""
    check(a, x.shape)
    ax, _ = axes(a, x.shape[2:])
    offs = list(itertools.product(*[range(q.k) for q in ax]))
    masks = [_element_masks(ax, off) for off in offs]
    floating = x.dtype.kind == "f"

    def core(xc):
        xp = _padded(xc, ax, 0)
        best = best_k = empty = None
        for k, _, view in _views(xp, ax):
            valid = masks[k]
            if best is None:
                best = view.copy()
                best_k = np.zeros(best.shape, dtype=np.int64)
                empty = np.broadcast_to(~valid, best.shape).copy()
                continue
            if floating:
                better = (view > best) | (np.isnan(view) & ~np.isnan(best))
                better &= ~np.isnan(best) | empty
            else:
                better = view > best
            take = valid & (empty | better)
            np.copyto(best, view, where=take)
            np.copyto(best_k, k, where=take)
            empty &= ~valid
        return best, best_k

    y, bk = chunked(core, x)
    if not want_indices:
        return y, None
    return y, _indices(x.shape, ax, np.array(offs, dtype=np.int64), bk, a.storage_order)


# ---- _onnx_pool._indices
def _indices(shape, ax: list[Axis], offs: np.ndarray, best_k: np.ndarray, storage_order: int) -> np.ndarray:
    spatial = shape[2:]
    nsp = len(spatial)
    coords = []
    for i, q in enumerate(ax):
        o = np.arange(q.out).reshape([-1 if j == i else 1 for j in range(nsp)])
        coords.append(o * q.s - q.begin + offs[best_k, i] * q.d)
    order = range(nsp) if storage_order == 0 else range(nsp - 1, -1, -1)
    sp = None
    for i in order:
        sp = coords[i] if sp is None else sp * spatial[i] + coords[i]
    nc = (np.arange(shape[0])[:, None] * shape[1] + np.arange(shape[1])[None, :]) * math.prod(spatial)
    return (nc.reshape(shape[0], shape[1], *([1] * nsp)) + sp).astype(np.int64)


# ---- _onnx_pool.average_pool
def onnx_average_pool(x: np.ndarray, a) -> np.ndarray:
    """ONNX AveragePool. Rules 1-5, 8, 9 of the module text."""
    check(a, x.shape)
    ax, _ = axes(a, x.shape[2:])
    per_axis = []
    for q in ax:
        c = q.coords()
        m = (c >= -q.begin) & (c < q.n + q.end) if a.count_include_pad else (c >= 0) & (c < q.n)
        per_axis.append(m.sum(axis=1))
    div = _counts(per_axis).astype(np.float64)

    def core(xc):
        xp = _padded(xc.astype(np.float64), ax, 0.0)
        total = None
        with np.errstate(invalid="ignore", over="ignore"):
            for _, _, view in _views(xp, ax):
                total = view.copy() if total is None else np.add(total, view, out=total)
            return ((total / div).astype(x.dtype),)

    return chunked(core, x)[0]


def onnx_run(x: np.ndarray, a, want_indices: bool = False) -> dict[str, np.ndarray]:
    """The outputs of the ONNX node with attributes ``a`` on input ``x`` (``_onnx_pool.run``)."""
    if a.op == "MaxPool":
        y, idx = onnx_max_pool(x, a, want_indices)
        return {"Y": y} if idx is None else {"Y": y, "Indices": idx}
    return {"Y": onnx_average_pool(x, a)}


# ---- space_depth: SpaceToDepth1.decomposition, DepthToSpace1.decomposition, _SpaceDepth.reference
def s2d_decomposition(d):
    n, c, h, w = d.InputSizes
    b = d.BlockSize
    s1 = (n, c, h // b, b, w // b, b)
    perm = (0, 3, 5, 1, 2, 4) if d.mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return s1, perm, (n, c * b * b, h // b, w // b)


def d2s_decomposition(d):
    n, c, h, w = d.InputSizes
    b = d.BlockSize
    oc = c // (b * b)
    if d.mode == "DCR":
        return (n, b, b, oc, h, w), (0, 3, 4, 1, 5, 2), (n, oc, h * b, w * b)
    return (n, oc, b, b, h, w), (0, 1, 4, 2, 5, 3), (n, oc, h * b, w * b)


def space_depth(x: np.ndarray, desc, to_depth: bool) -> np.ndarray:
    s1, perm, s2 = (s2d_decomposition if to_depth else d2s_decomposition)(desc)
    return np.ascontiguousarray(x.reshape(s1).transpose(perm).reshape(s2))
