"""The grids of a small failing case, side by side in the report: a 2-D slice of the input, of
the EP's output, of the CPU EP's output and of the reference.

A record keeps statistics and its first mismatches (``OutputStats.first``: index, the EP's value,
the reference's, the CPU EP's), not whole outputs. For a case small enough, the report rebuilds
what a record does not hold: the case's seeded inputs and the reference (``Operator.expected``
for an ONNX graph lane, ``Operator.reference`` for a descriptor lane; the one whose values equal
the recorded reference values at every recorded mismatch, else no grid). The EP's slice is the
reference's with the recorded mismatches put in, and is shown only when the record lists every
mismatch of that slice (mismatches are listed in index order, so the slice of the first mismatch
is complete when the list is not cut, or when its last entry lies in a later slice); the CPU EP's
likewise from its own side's list. Nothing here judges: the grids show values already judged.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..casefile import case_from_record
from ..compare import MAX_FIRST
from ..record import CaseRecord, Verdict, jsonable, number
from . import fourway as FW

#: largest input and output (elements) whose case the report rebuilds, and the cap per report
MAX_ELEMENTS = 1 << 16
MAX_CASES = 600
#: the largest slice shown (rows, columns): a larger one is cropped around the first mismatch
CROP = 16


def _same(a: Any, b: Any) -> bool:
    a, b = number(a), number(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, float) and isinstance(b, float) and a == 0 and b == 0:
        return math.copysign(1, a) == math.copysign(1, b)
    return a == b


def _lead(index: list[int], ndim: int) -> tuple[int, ...]:
    return tuple(index[:max(0, ndim - 2)])


def _complete(first: list[dict], lead: tuple[int, ...], ndim: int) -> bool:
    """Does ``first`` (a side's first mismatches, in index order) list every mismatch of the slice ``lead``?"""
    if len(first) < MAX_FIRST:
        return True
    return _lead(first[-1]["index"], ndim) > lead


def _as2d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1, -1) if a.ndim == 1 else a


def _crop(shape: tuple[int, int], at: tuple[int, int]) -> tuple[int, int, int, int]:
    """(row0, col0, rows, cols) of a window of at most CROP x CROP around ``at``."""
    h, w = shape
    rows, cols = min(h, CROP), min(w, CROP)
    r0 = min(max(0, at[0] - rows // 2), h - rows)
    c0 = min(max(0, at[1] - cols // 2), w - cols)
    return r0, c0, rows, cols


def _values(a: np.ndarray) -> list[list]:
    return jsonable(np.asarray(a, dtype=np.float64 if a.dtype.kind == "f" else a.dtype).tolist())


def _failing(rec: CaseRecord) -> tuple[str, str] | None:
    """(output name, side) of the output to show: the EP's first failing output, else the CPU side's."""
    if rec.verdict == Verdict.FAIL:
        for side, outs in (("ep", rec.outputs), ("cpu", rec.cpu.outputs if rec.cpu else {})):
            for name, o in sorted(outs.items(), key=lambda kv: kv[1].kind == "indices"):
                if not o.match and o.first:
                    return name, side
    elif rec.cpu is not None and rec.cpu.verdict == Verdict.FAIL:
        for name, o in sorted(rec.cpu.outputs.items(), key=lambda kv: kv[1].kind == "indices"):
            if not o.match and o.first:
                return name, "cpu"
    return None


def _reference(rec: CaseRecord, case, inputs: dict, name: str, checks: list[dict]):
    """The reference output ``name`` whose values match the recorded ones at ``checks`` (semantics, array)."""
    op = case.operator
    order = ("dml", "onnx") if rec.ep == FW.DIRECT_EP else ("onnx", "dml")
    for sem in order:
        try:
            ref = (op.expected if sem == "onnx" else op.reference)(case, inputs)[name]
        except Exception:  # noqa: BLE001 - no grid rather than no report
            continue
        ref = np.asarray(ref)
        try:
            if all(_same(jsonable(ref[tuple(f["index"])]), f["ref"]) for f in checks):
                return sem, ref
        except (IndexError, KeyError, TypeError):
            continue
    return None, None


def _small(rec: CaseRecord) -> bool:
    sizes = rec.descriptor.get("InputSizes") or []
    n = math.prod(int(x) for x in sizes) if sizes else 0
    outs = [o.total for o in rec.outputs.values()] + ([o.total for o in rec.cpu.outputs.values()] if rec.cpu else [])
    return 0 < n <= MAX_ELEMENTS and all(t <= MAX_ELEMENTS for t in outs)


def grid(rec: CaseRecord) -> dict | None:
    """The grids of one record (see the module's text), or None where they cannot be shown exactly."""
    pick = _failing(rec)
    if pick is None or not _small(rec):
        return None
    name, side = pick
    try:
        case = case_from_record(rec)
        inputs = case.inputs()
    except Exception:  # noqa: BLE001 - an operator this bench no longer has, a case it cannot rebuild
        return None
    ep_out = rec.outputs.get(name)
    cpu_out = rec.cpu.outputs.get(name) if rec.cpu else None
    main = ep_out if side == "ep" else cpu_out
    checks = list(main.first) + (list(cpu_out.first) if side == "ep" and cpu_out is not None else [])
    sem, ref = _reference(rec, case, inputs, name, checks)
    if ref is None or ref.size == 0:
        return None
    ndim = ref.ndim
    lead = _lead(main.first[0]["index"], ndim)
    sl = _as2d(ref[lead] if lead else ref)

    def side_grid(stats) -> tuple[np.ndarray | None, list]:
        """The slice of a side: the reference's with its recorded mismatches put in; None if not complete."""
        if stats is None:
            return None, []
        if stats.match:
            return sl.copy(), []
        if stats.first and _lead(stats.first[0]["index"], ndim) > lead:
            return sl.copy(), []             # its first mismatch lies in a later slice: none in this one
        if not stats.first or not _complete(stats.first, lead, ndim):
            return None, []
        g = sl.astype(np.float64 if sl.dtype.kind == "f" else np.int64, copy=True)
        bad = []
        for f in stats.first:
            idx = f["index"]
            if _lead(idx, ndim) != lead:
                continue
            rc = (0, idx[-1]) if ndim == 1 else (idx[-2], idx[-1])
            g[rc] = number(f["got"])
            bad.append(list(rc))
        return g, bad

    ep_g, ep_bad = side_grid(ep_out) if ep_out is not None else (None, [])
    cpu_g, cpu_bad = side_grid(cpu_out)
    if (ep_g if side == "ep" else cpu_g) is None:
        return None
    if ep_g is not None and cpu_g is not None and ep_out is not None:
        for f in ep_out.first:          # the EP's mismatches name the CPU EP's value too: they must agree
            if "cpu" in f and _lead(f["index"], ndim) == lead:
                rc = (0, f["index"][-1]) if ndim == 1 else (f["index"][-2], f["index"][-1])
                if not _same(jsonable(cpu_g[rc]), f["cpu"]):
                    cpu_g, cpu_bad = None, []
                    break
    at = tuple((ep_bad if side == "ep" else cpu_bad)[0])
    r0, c0, rows, cols = _crop(sl.shape, at)

    def crop(g):
        return None if g is None else _values(g[r0:r0 + rows, c0:c0 + cols])

    def inside(bad):
        return [[r - r0, c - c0] for r, c in bad if r0 <= r < r0 + rows and c0 <= c < c0 + cols]

    out = {"output": name, "side": side, "semantics": sem, "lead": list(lead), "shape": list(ref.shape),
           "r0": r0, "c0": c0, "ref": crop(sl), "ep": crop(ep_g), "cpu": crop(cpu_g),
           "bad": inside(ep_bad), "cpu_bad": inside(cpu_bad)}
    out["input"] = _input_slice(inputs, lead, ref.shape, (r0, c0, rows, cols))
    return out


def _input_slice(inputs: dict, lead: tuple[int, ...], out_shape: tuple, window: tuple) -> dict | None:
    """The input X's slice beside an output slice: the same leading indices (for RoiPool, the
    batch of the output's ROI), cropped to the window scaled to the input's size."""
    x = inputs.get("X")
    if x is None or x.ndim < 2:
        return None
    x_lead = list(lead[:max(0, x.ndim - 2)])
    extra = {}
    rois = inputs.get("rois")
    if rois is not None and rois.ndim == 2 and lead and x_lead and lead[0] < rois.shape[0]:
        # the ROI's batch: RoiAlign's own input batch_indices, else RoiPool's first column
        batches = inputs.get("batch_indices")
        if batches is not None:
            b = np.asarray(batches).reshape(-1)
            b = b[lead[0]] if lead[0] < b.size else None
        else:
            b = rois[lead[0], 0] if rois.shape[1] == 5 else None
        b = float(b) if b is not None else math.nan
        if not (math.isfinite(b) and 0 <= b < x.shape[0] and b == int(b)):
            return None              # no batch the input has (a crafted or out-of-range index): no input grid
        x_lead[0] = int(b)
        extra["roi"] = jsonable(rois[lead[0]].tolist())
    x_lead = [min(max(0, i), s - 1) for i, s in zip(x_lead, x.shape)]
    sl = x[tuple(x_lead)] if x_lead else x
    h, w = sl.shape[-2:]
    oh, ow = (out_shape[-2], out_shape[-1]) if len(out_shape) >= 2 else (1, out_shape[-1])
    r0, c0, rows, cols = window
    # the same region of the input, scaled by the sizes (exact for space/depth; a view for pooling)
    at = (min(h - 1, (r0 + rows // 2) * h // max(1, oh)), min(w - 1, (c0 + cols // 2) * w // max(1, ow)))
    ir0, ic0, irows, icols = _crop((h, w), at)
    return {"name": "X", "lead": x_lead, "shape": list(x.shape), "r0": ir0, "c0": ic0,
            "values": _values(sl[ir0:ir0 + irows, ic0:ic0 + icols]), **extra}


def grids(records: list[CaseRecord]) -> dict[tuple[str, str, str], dict]:
    """(case id, EP, environment) -> grids, for the smallest failing records (at most MAX_CASES)."""
    cand = [r for r in records if _failing(r) is not None and _small(r)]
    cand.sort(key=lambda r: (max([o.total for o in r.outputs.values()] or [0]), r.case_id))
    out = {}
    for r in cand[:MAX_CASES]:
        try:
            g = grid(r)
        except (IndexError, KeyError, TypeError, ValueError, OverflowError):
            g = None                # a record from elsewhere the grid cannot follow: no grid rather than no report
        if g is not None:
            out[(r.case_id, r.ep, r.env_id or "")] = g
    return out
