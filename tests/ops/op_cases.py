"""Explicit cases for the operators' test files: a pooling, RoI pooling or RoI Align case with given
data, and one case run alone on ONNX Runtime's CPU EP; the default profile's pooling cases."""
from __future__ import annotations

import math

import numpy as np

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _pool_family as PF
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.roi_pooling import RoiPoolingDesc

from conftest import ort_cpu_run, sweep

ROI = registry.OPERATORS["roi_pooling"]
RA1 = registry.OPERATORS["roi_align1"]


POOLING = ("max_pooling2", "average_pooling1")


def pool_case(op, sizes, k, s, sp=None, ep=None, dil=None, *, dtype="FLOAT32", variant=None, x=None,
              opset=None, **fields) -> Case:
    variant = dict(variant or {})
    d = PF.geometry(op.Desc, sizes, k, s, sp, ep, dil or (1,) * len(k), variant, **fields).replace(DataType=dtype)
    op.validate(d)
    if x is None:
        x = np.arange(math.prod(sizes))
    values = (("X", tuple(np.asarray(x, dtype=np.float64).ravel().tolist())),)
    case = Case(op, d, opset or op.default_opset, make_variant(**variant), "explicit", 0, values)
    op.check_variant(case)
    assert op.expressible(case) is None, op.expressible(case)
    return case


def roi_case(x, rois, pooled, scale=1.0, dtype="FLOAT32") -> Case:
    x, rois = np.asarray(x, dtype=np.float64), np.asarray(rois, dtype=np.float64)
    d = RoiPoolingDesc(InputSizes=x.shape, RoiSizes=rois.shape, DataType=dtype, SpatialScale=scale, PooledSize=pooled)
    ROI.validate(d)
    return Case(ROI, d, 1, (), "explicit", 0, (("X", tuple(x.ravel().tolist())), ("rois", tuple(rois.ravel().tolist()))))


def ra_case(x, rois, batch=None, *, op=None, opset=16, dtype="FLOAT32", **fields) -> Case:
    """A case with explicit inputs: ``x`` (N, C, H, W), ``rois`` (R, 4), ``batch`` (R,)."""
    op = op or RA1
    x, rois = np.asarray(x, dtype=np.float64), np.asarray(rois, dtype=np.float64).reshape(-1, 4)
    batch = np.zeros(len(rois), np.int64) if batch is None else np.asarray(batch)
    base = dict(InputSizes=x.shape, RoiSizes=rois.shape, DataType=dtype, OutputSize=(1, 1),
                MinimumSamplesPerOutput=1, MaximumSamplesPerOutput=1)
    if op is RA1:
        base["InputPixelOffset"] = 0.0
    d = op.Desc(**{**base, **fields})
    op.validate(d)
    return Case(op, d, opset, (), "explicit", 0, (("X", tuple(x.ravel().tolist())), ("rois", tuple(rois.ravel().tolist())),
                                                  ("batch_indices", tuple(int(b) for b in batch))))


def ort_one(case: Case):
    return ort_cpu_run([case])[case.id]


def signbits(a) -> list[bool]:
    return np.signbit(np.asarray(a)).ravel().tolist()


def pooling_cases(key=None):
    keys = [key] if key else POOLING
    return [c for k in keys for c in sweep("default", k)]
