"""Hypothesis strategies for the pooling operators' properties: random valid geometries and data
(derandomized, so that CI runs the same examples every time)."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

from onnx_dml_bench import registry
from onnx_dml_bench.dtypes import DML_TO_NUMPY
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.ops.average_pooling1 import AveragePooling1Desc
from onnx_dml_bench.ops.max_pooling2 import MaxPooling2Desc

MP = registry.OPERATORS["max_pooling2"]
AP = registry.OPERATORS["average_pooling1"]


PROPS = settings(deadline=None, max_examples=60, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

MP_TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64", "UINT16", "UINT32", "UINT64")


@st.composite
def geometry(draw, pad: bool = True, max_size: int = 6):
    """(InputSizes, Strides, WindowSize, StartPadding, EndPadding, Dilations), valid, every window
    holding at least one element of the input, pads smaller than the dilated window."""
    nd = draw(st.sampled_from([2, 3]))
    top = max_size if nd == 2 else 4
    sizes = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), *[draw(st.integers(1, top)) for _ in range(nd)])
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dil = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    eff = [(kk - 1) * dd + 1 for kk, dd in zip(k, dil)]
    sp = tuple(draw(st.integers(0, e - 1)) if pad else 0 for e in eff)
    ep = tuple(draw(st.integers(0, e - 1)) if pad else 0 for e in eff)
    assume(all(sizes[i + 2] + sp[i] + ep[i] >= eff[i] for i in range(nd)))
    return sizes, s, k, sp, ep, dil


def mp_desc(geo, dtype="FLOAT32", idx=None) -> MaxPooling2Desc:
    sizes, s, k, sp, ep, dil = geo
    d = MaxPooling2Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                        StartPadding=sp, EndPadding=ep, Dilations=dil, OutputIndicesDataType=idx)
    assume(P.window_has_real_element(d))
    MP.validate(d)
    return d


def ap_desc(geo, dtype="FLOAT32", include=False) -> AveragePooling1Desc:
    sizes, s, k, sp, ep, dil = geo
    d = AveragePooling1Desc(InputSizes=sizes, DataType=dtype, DimensionCount=len(k), Strides=s, WindowSize=k,
                            StartPadding=sp, EndPadding=ep, Dilations=dil, IncludePadding=include)
    assume(P.window_has_real_element(d))
    AP.validate(d)
    return d


def data(shape, dtype: str, seed: int, ties: bool) -> np.ndarray:
    dt = DML_TO_NUMPY[dtype]
    g = np.random.default_rng(seed)
    if ties:
        return g.integers(0, 3, size=shape).astype(dt)
    if dt.kind == "f":
        return (g.integers(-512, 512, size=shape) / 8.0).astype(dt)
    info = np.iinfo(dt)
    return g.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


SEEDS = st.integers(0, 2**31 - 1)


def out_positions(shape):
    return itertools.product(*[range(n) for n in shape])


def window_coords(desc, o):
    """Spatial input coordinates of the window at output position o (spatial part), in scan
    order, with a flag: inside the input or in padding."""
    per_axis = []
    for a in range(desc.DimensionCount):
        start = o[a] * desc.Strides[a] - desc.StartPadding[a]
        per_axis.append([start + j * desc.Dilations[a] for j in range(desc.WindowSize[a])])
    for coords in itertools.product(*per_axis):
        inside = all(0 <= c < n for c, n in zip(coords, desc.InputSizes[2:]))
        yield coords, inside


def flat_index(desc, n, c, coords) -> int:
    return int(np.ravel_multi_index((n, c, *coords), desc.InputSizes))
