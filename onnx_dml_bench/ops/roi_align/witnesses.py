"""RoiAlign's witnesses (``Operator.witnesses``, for ``onnx-dml-bench mutants``): concrete
evaluations its reference's reading allows, in the data type and wider."""
from __future__ import annotations

import numpy as np

from ..base import Alternative
from .reference import Reading, axis_points, counts, reading, region

#: how a witness interpolates a sample in its type: the weighted corners (the weights multiplied
#: first) added in Detectron's order, in the reverse order or pairwise, the weights multiplied in
#: one after the other (wy * (wx * v)), and a + t (b - a) along X then Y, or along Y then X
#: (DirectML's answer of an overflowing difference)
WITNESS_FORMS = ("weighted", "weighted-reversed", "weighted-pairwise", "nested", "lerp-xy", "lerp-yx")
#: how it sums the samples of an average (any order is allowed): one after another in scan order,
#: pairwise, and the positive and the negative samples each in turn, then together
WITNESS_SUMS = ("scan", "pairwise", "by-sign")


def _witness_axis(rois, col: int, scale: float, out: int, n: int, length: int, rd: Reading, coords: str,
                  float_type):
    """(lo, hi, frac, valid) of the samples of one axis: coordinates exact, rounded once to FLOAT
    (``float_type``: float32, or float64 for FLOAT64 data), computed in float32 by the page's
    formulas in their order, or in float64 (``coords``: "exact" | "float32" | "float64")."""
    if coords == "float32":
        f = np.float32
        start = rois[:, col].astype(f) * f(scale)
        size = rois[:, col + 2].astype(f) * f(scale) - start
        if rd.min_size is not None:
            size = np.maximum(size, f(rd.min_size))
        big_n = out * n
        step = size / f(max(big_n - 1, 1) if rd.align else big_n)
        k = np.arange(big_n, dtype=f)[None, :]
        t = ((k - f(rd.output_offset)) * step[:, None] + start[:, None] - f(rd.input_offset)).astype(np.float64)
    else:
        start, size = region(rois, col, scale, out, rd)
        t = axis_points(start, size, out, n, length, rd, 0.0).t
        t = t if coords == "float64" else t.astype(float_type).astype(np.float64)
    if rd.align and rd.extent == "corners":
        valid = (t >= 0) & (t <= length - 1)
    elif rd.edge == "inclusive":
        valid = (t >= -1) & (t <= length)
    else:
        valid = (t > -1) & (t < length)
    tc = np.clip(t, 0.0, length - 1.0)
    lo = np.floor(tc).astype(np.int64)
    top = lo >= length - 1
    lo = np.where(top, length - 1, lo)
    return lo, np.where(top, length - 1, lo + 1), np.where(top, 0.0, tc - lo), valid


def _pairwise(v: np.ndarray) -> np.ndarray:
    """Along the last axis: a pairwise tree of additions in v's type."""
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = np.concatenate([v, np.zeros((*v.shape[:-1], 1), v.dtype)], axis=-1)
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def _witness_samples(x, batch, geo, form: str, t_type, oob: float):
    """The samples of one group of regions (``geo``: their indices, counts and both axes'
    (lo, hi, frac, valid)), each interpolated in ``form`` with every operation rounded once to
    ``t_type``, the weights in FLOAT (double for FLOAT64 data): (R, C, OH, OW, samples)."""
    mine, cy, cx, (yl, yh, fy, vy), (xl, xh, fx, vx), oh, ow = geo
    t_ = np.dtype(t_type).type
    w_ = np.float64 if x.dtype == np.float64 else np.float32
    xcl = x.transpose(0, 2, 3, 1)
    bb = batch[mine][:, None, None]
    a, b, cc, dd = (xcl[bb, ya[:, :, None], xb[:, None, :]].astype(t_) for ya, xb in
                    ((yl, xl), (yl, xh), (yh, xl), (yh, xh)))           # (R, Ny, Nx, C)
    ty, tx = fy.astype(w_)[:, :, None, None], fx.astype(w_)[:, None, :, None]
    uy, ux = w_(1) - ty, w_(1) - tx

    def mul(p, q):                    # exact in float64 (float16 and float32 operands), rounded once
        return (np.asarray(p, np.float64) * q).astype(t_)

    def add(p, q):
        return (p.astype(np.float64) + q).astype(t_)

    def sub(p, q):
        return (p.astype(np.float64) - q).astype(t_)

    with np.errstate(all="ignore"):
        if form.startswith("weighted"):
            t1, t2, t3, t4 = mul(uy * ux, a), mul(uy * tx, b), mul(ty * ux, cc), mul(ty * tx, dd)
            v = (add(add(add(t1, t2), t3), t4) if form == "weighted" else
                 add(add(add(t4, t3), t2), t1) if form == "weighted-reversed" else add(add(t1, t2), add(t3, t4)))
        elif form == "nested":
            v = add(add(add(mul(uy, mul(ux, a)), mul(uy, mul(tx, b))), mul(ty, mul(ux, cc))), mul(ty, mul(tx, dd)))
        elif form == "lerp-xy":
            top, bot = add(a, mul(tx, sub(b, a))), add(cc, mul(tx, sub(dd, cc)))
            v = add(top, mul(ty, sub(bot, top)))
        else:
            left, right = add(a, mul(ty, sub(cc, a))), add(b, mul(ty, sub(dd, b)))
            v = add(left, mul(tx, sub(right, left)))
        v = np.where((vy[:, :, None] & vx[:, None, :])[..., None], v, t_(oob)).astype(t_)
    r, c = len(mine), x.shape[1]
    return v.reshape(r, oh, cy, ow, cx, c).transpose(0, 5, 1, 3, 2, 4).reshape(r, c, oh, ow, cy * cx)


def _witness_reduce(blocks: np.ndarray, mode: str, reduce: str) -> np.ndarray:
    """The samples (last axis) reduced in their type: for AVERAGE a sum of ``WITNESS_SUMS`` divided
    by the count ("/") or multiplied by its reciprocal ("*"), as "<sum><op>"; for MAX "max" (NaN
    propagated) or "fmax" (NaN ignored)."""
    t_ = blocks.dtype.type
    n = blocks.shape[-1]
    with np.errstate(all="ignore"):
        if mode == "MAX":
            return (np.maximum if reduce == "max" else np.fmax).reduce(blocks, axis=-1)
        how, op = reduce[:-1], reduce[-1]
        if how == "scan":
            s = np.add.accumulate(blocks, axis=-1)[..., -1]          # one after another, in the type
        elif how == "pairwise":
            s = _pairwise(blocks)
        else:
            neg = blocks < 0
            s = _pairwise(np.where(neg, t_(0), blocks)) + _pairwise(np.where(neg, blocks, t_(0)))
        return s / t_(n) if op == "/" else s * t_(1.0 / n)


def witness_answers(case, inputs):
    """The witnesses of a case (``Operator.witnesses``), computed when asked, each answer once (the
    first evaluation that gives it names it): the reference's reading evaluated with every
    operation rounded to the data type (and, for float16 and float32, to each wider type, the
    answer rounded once), the samples in every form of ``WITNESS_FORMS``, their coordinates exact
    and rounded to FLOAT, computed in float32 by the page's formulas, or exact (``_witness_axis``),
    reduced by every sum of ``WITNESS_SUMS`` and both divisions (MAX: NaN propagated or ignored).
    Linear interpolation only."""
    d = case.desc
    if d.InterpolationMode != "LINEAR":
        return
    rd = reading(d)
    x, rois = inputs["X"], np.asarray(inputs["rois"])
    batch = np.asarray(inputs["batch_indices"]).astype(np.int64)
    _, c, h, w = x.shape
    oh, ow = d.OutputSize
    dt = x.dtype.type
    types = {np.float16: (dt, np.float32, np.float64), np.float32: (dt, np.float64)}.get(dt, (dt,))
    reduces = ("max", "fmax") if d.ReductionFunction == "MAX" else tuple(f"{s}{o}" for o in "/*" for s in WITNESS_SUMS)
    ny, nx = counts(rois, 1, rd.scale_y, oh, rd), counts(rois, 0, rd.scale_x, ow, rd)
    groups = [(cy, cx, np.flatnonzero((ny == cy) & (nx == cx))) for cy, cx in sorted(set(zip(ny.tolist(), nx.tolist())))
              if cy and cx]
    float_type = np.float64 if dt is np.float64 else np.float32
    seen = set()
    for co in ("exact",) if dt is np.float64 else ("exact", "float32", "float64"):
        geos = [(mine, cy, cx, _witness_axis(rois[mine], 1, rd.scale_y, oh, cy, h, rd, co, float_type),
                 _witness_axis(rois[mine], 0, rd.scale_x, ow, cx, w, rd, co, float_type), oh, ow)
                for cy, cx, mine in groups]
        for t_type in types:
            for form in WITNESS_FORMS:
                samples = [_witness_samples(x, batch, g, form, t_type, rd.oob) for g in geos]
                for red in reduces:
                    y = np.zeros((len(rois), c, oh, ow), x.dtype)
                    for g, blocks in zip(geos, samples):
                        with np.errstate(over="ignore", invalid="ignore"):      # rounded once: it may overflow
                            y[g[0]] = _witness_reduce(blocks, d.ReductionFunction, red).astype(x.dtype)
                    key = y.tobytes()
                    if key in seen:
                        continue
                    seen.add(key)
                    how = red.replace("/", "-div").replace("*", "-rcp")
                    yield Alternative(f"{form}-{how}-{np.dtype(t_type).name}-{co}-coordinates", {"Y": y})
