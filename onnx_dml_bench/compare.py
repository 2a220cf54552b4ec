"""Comparison of one output against the reference, and the attribution of a case's failure.

Small composable pieces: ``compare_output`` (one output, one implementation vs the reference)
returns the :class:`record.OutputStats` of that output; ``attribute`` turns the EP's and the
CPU's agreement with the reference into a verdict and an attribution. ``verdict.judge`` is the
one place that puts them together.

NaN policy (stated in every result): in 'exact' and 'ulp' comparisons a NaN equals any NaN and
nothing else; +-inf must match exactly (a finite value is never "within ULP" of an infinity).
Exact comparisons are bit for bit otherwise, so -0.0 differs from +0.0 (labelled 'signed-zero').
"""
from __future__ import annotations

import numpy as np

from .dtypes import ulp_distance
from .record import OutputStats, jsonable

NAN_POLICY = ("NaN equals NaN (any payload) and nothing else; infinities must match exactly; "
              "exact comparisons are bit for bit, so -0.0 != +0.0 (labelled signed-zero)")
MAX_FIRST = 10
HEATMAP_MAX = 32


def _heatmap(mask: np.ndarray) -> list[list[int]] | None:
    """Mismatch counts over the last two axes (summed over the others), at most 32x32 cells."""
    if mask.ndim < 2:
        return None
    m = mask.reshape(-1, *mask.shape[-2:]).sum(axis=0)
    h, w = m.shape
    fh, fw = -(-h // HEATMAP_MAX), -(-w // HEATMAP_MAX)
    if fh > 1 or fw > 1:
        ph, pw = (-h) % fh, (-w) % fw
        m = np.pad(m, ((0, ph), (0, pw))).reshape(-(-h // fh), fh, -(-w // fw), fw).sum(axis=(1, 3))
    return m.astype(int).tolist()


def _same_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equality of floats, with NaN == NaN."""
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return (a.view(uint) == b.view(uint)) | (np.isnan(a) & np.isnan(b))


def compare_output(name: str, spec, got: np.ndarray | None, ref: np.ndarray, *,
                   others: dict[str, np.ndarray] | None = None, tie_valid: np.ndarray | None = None) -> OutputStats:
    """Compare ``got`` (an implementation's output) with ``ref`` under ``spec`` (ops.base.OutputSpec).

    ``others``: values to show beside each first mismatch (e.g. {"cpu": cpu_output}).
    ``tie_valid``: for 'indices', a boolean array telling, per output position, whether the index
    ``got`` points at an element of that position's window holding the maximum value (computed by
    the operator module), so a different-but-equal maximum is labelled 'tie-order'."""
    total = int(ref.size)
    res = OutputStats(output=name, kind=spec.kind, match=False, total=total, tolerance_ulp=spec.ulp)
    if got is None:
        res.note = "no output"
        res.labels.append("missing")
        return res
    got = np.asarray(got)
    if got.shape != ref.shape:
        res.note = f"shape {list(got.shape)} != expected {list(ref.shape)}"
        res.labels.append("shape")
        res.mismatches = total
        return res
    if spec.kind == "indices":
        got = got.astype(np.int64, copy=False)
        ok = got == ref.astype(np.int64)
    elif got.dtype != ref.dtype:
        res.note = f"dtype {got.dtype} != expected {ref.dtype}"
        res.labels.append("dtype")
        res.mismatches = total
        return res
    elif ref.dtype.kind == "f":
        same = _same_float(got, ref)
        finite = np.isfinite(got) & np.isfinite(ref)
        # distance on bit patterns wherever neither is NaN (an infinity is one ULP past the
        # largest finite value); only finite pairs can pass within a tolerance
        ulps = ulp_distance(got, ref)
        res.max_ulp = int(ulps.max()) if total else 0
        if spec.kind == "ulp":
            ok = same | (finite & (ulps <= spec.ulp))
            if not (~same & ~finite).any():
                res.min_passing_ulp = int(np.where(finite, ulps, 0).max()) if total else 0
        else:
            ok = same
            if not (~same & ~finite).any() and not ((~same) & (got == ref)).any():
                res.min_passing_ulp = res.max_ulp
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        both = np.isfinite(diff)
        res.max_abs = float(diff[both].max()) if both.any() else 0.0
        bad = ~ok
        if bad.any():
            if (np.isnan(got) ^ np.isnan(ref))[bad].any():
                res.labels.append("nan")
            if ((got == 0) & (ref == 0))[bad].all():
                res.labels.append("signed-zero")
            if (np.isinf(got) ^ np.isinf(ref))[bad].any() or (np.isinf(got) & np.isinf(ref))[bad].any():
                res.labels.append("inf")
    else:
        ok = got == ref
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        res.max_abs = float(diff.max()) if total else 0.0
    bad = ~ok
    res.mismatches = int(bad.sum())
    res.match = res.mismatches == 0
    if spec.kind == "indices" and not res.match:
        if tie_valid is not None and tie_valid[bad].all():
            res.labels.append("tie-order")
            res.note = "every differing index points at an equal maximum inside its window (tie order differs from the DML rule: first element met)"
        else:
            res.labels.append("wrong-index")
    if not res.match:
        where = np.argwhere(bad)[:MAX_FIRST]
        for idx in where:
            t = tuple(int(i) for i in idx)
            row = {"index": list(t), "got": jsonable(got[t]), "ref": jsonable(ref[t])}
            for k, arr in (others or {}).items():
                if arr is not None and getattr(arr, "shape", None) == ref.shape:
                    row[k] = jsonable(arr[t])
            res.first.append(row)
        res.heatmap = _heatmap(bad)
    return res


def outputs_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Do two implementations give the same outputs (bitwise, NaN == NaN)?"""
    if a is None or b is None or set(a) != set(b):
        return False
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "f":
            if not _same_float(x, y).all():
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def attribute(ep_ok: bool, cpu_ok: bool | None, ep_equals_cpu: bool, open_points: tuple[str, ...],
              ep_is_cpu: bool) -> tuple[str, str | None]:
    """(verdict, attribution) from the EP's and the CPU's agreement with the reference.

    cpu_ok None: the CPU EP gave no answer. With the CPU EP under test there is no second
    implementation: a failure is the EP's, or disputed when the case touches an open point."""
    if ep_ok:
        return "PASS", None
    if ep_is_cpu:
        return "FAIL", "REFERENCE_DISPUTED" if open_points else "EP_WRONG"
    if cpu_ok is None or cpu_ok:
        return "FAIL", "EP_WRONG"
    if ep_equals_cpu and open_points:
        return "FAIL", "REFERENCE_DISPUTED"
    return "FAIL", "BOTH_WRONG"
