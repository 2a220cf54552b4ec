"""DirectML data types, their NumPy and ONNX counterparts, and bit-level helpers."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

#: DML_TENSOR_DATA_TYPE names (without the prefix) -> NumPy dtype.
DML_TO_NUMPY: dict[str, np.dtype] = {
    "FLOAT64": np.dtype(np.float64),
    "FLOAT32": np.dtype(np.float32),
    "FLOAT16": np.dtype(np.float16),
    "INT64": np.dtype(np.int64),
    "INT32": np.dtype(np.int32),
    "INT16": np.dtype(np.int16),
    "INT8": np.dtype(np.int8),
    "UINT64": np.dtype(np.uint64),
    "UINT32": np.dtype(np.uint32),
    "UINT16": np.dtype(np.uint16),
    "UINT8": np.dtype(np.uint8),
}
DML_TYPES = tuple(DML_TO_NUMPY)

DML_TO_ONNX: dict[str, int] = {
    "FLOAT64": TensorProto.DOUBLE,
    "FLOAT32": TensorProto.FLOAT,
    "FLOAT16": TensorProto.FLOAT16,
    "INT64": TensorProto.INT64,
    "INT32": TensorProto.INT32,
    "INT16": TensorProto.INT16,
    "INT8": TensorProto.INT8,
    "UINT64": TensorProto.UINT64,
    "UINT32": TensorProto.UINT32,
    "UINT16": TensorProto.UINT16,
    "UINT8": TensorProto.UINT8,
}

#: Short names used in case ids and on the command line.
SHORT = {
    "FLOAT64": "f64", "FLOAT32": "f32", "FLOAT16": "f16", "INT64": "i64", "INT32": "i32",
    "INT16": "i16", "INT8": "i8", "UINT64": "u64", "UINT32": "u32", "UINT16": "u16", "UINT8": "u8",
}
FROM_SHORT = {v: k for k, v in SHORT.items()}

#: DML feature levels, ordered: every DML_FEATURE_LEVEL of directml.h (DML_TARGET_VERSION 0x6400), so
#: that an operator's page can name any of them.
FEATURE_LEVELS = ("1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2", "6.0", "6.1", "6.2", "6.3",
                  "6.4")


def parse_dtype(name: str) -> str:
    """Accept 'FLOAT32', 'float32', 'f32', 'DML_TENSOR_DATA_TYPE_FLOAT32'; return the DML name."""
    key = str(name).strip()
    if key.upper().startswith("DML_TENSOR_DATA_TYPE_"):
        key = key[len("DML_TENSOR_DATA_TYPE_"):]
    if key.lower() in FROM_SHORT:
        return FROM_SHORT[key.lower()]
    if key.upper() in DML_TO_NUMPY:
        return key.upper()
    raise ValueError(f"unknown data type {name!r}; expected one of {', '.join(DML_TYPES)}")


def fl_at_least(level: str, minimum: str) -> bool:
    return FEATURE_LEVELS.index(level) >= FEATURE_LEVELS.index(minimum)


def is_float(dml_type: str) -> bool:
    return dml_type.startswith("FLOAT")


#: the signed integer type of each float width (bytes): a float's bits
INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}


def _ordered(bits: np.ndarray) -> np.ndarray:
    """int64 values of a float's bits (``INT_OF``) whose order is the float order: -0.0 and +0.0 both 0."""
    o = bits.astype(np.int64)
    np.subtract(np.int64(np.iinfo(bits.dtype).min), o, out=o, where=o < 0)
    return o


def _distance(oa: np.ndarray, ob: np.ndarray) -> np.ndarray:
    """|oa - ob| of two :func:`_ordered` arrays as uint64 (modular: exact below 2^64)."""
    with np.errstate(over="ignore"):
        ua, ub = oa.view(np.uint64), ob.view(np.uint64)
        return np.where(oa >= ob, ua - ub, ub - ua)


def ordered_bits(a: np.ndarray) -> np.ndarray:
    """Map floats to int64 values whose order is the float order, so that the difference of two
    mapped values is their distance in units in the last place. -0.0 and +0.0 both map to 0."""
    a = np.ascontiguousarray(a)
    return _ordered(a.view(INT_OF[a.dtype.itemsize]))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULP distance (uint64) between two float arrays of the same dtype, measured on bit patterns.
    NaN positions give 0 here (the caller handles NaN). Computed only where the bit patterns
    differ (elsewhere the distance is 0): a large output that mostly agrees costs one comparison."""
    a = np.asarray(a)
    b = np.asarray(b)
    out = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=np.uint64)
    ia = np.ascontiguousarray(np.broadcast_to(a, out.shape)).view(INT_OF[a.dtype.itemsize])
    ib = np.ascontiguousarray(np.broadcast_to(b, out.shape)).view(INT_OF[b.dtype.itemsize])
    differ = (ia != ib).reshape(-1)
    where = np.flatnonzero(differ)
    if not where.size:
        return out
    whole = where.size * 4 >= differ.size          # most differ: the whole arrays, no gather
    fa, fb = ia.reshape(-1), ib.reshape(-1)
    if not whole:
        fa, fb = fa[where], fb[where]
    nan = np.isnan(fa.view(a.dtype)) | np.isnan(fb.view(b.dtype))
    oa, ob = _ordered(fa), _ordered(fb)
    oa[nan] = 0                                    # NaN positions 0
    ob[nan] = 0
    dist = _distance(oa, ob)
    if whole:
        out.reshape(-1)[...] = dist
        return out
    out.reshape(-1)[where] = dist
    return out


def finite_ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`ulp_distance` of two float arrays of one type and shape with no NaN (the distance of
    their bit patterns in float order), without its NaN handling: uint64."""
    oa, ob = (_ordered(np.ascontiguousarray(x).view(INT_OF[a.dtype.itemsize])) for x in (a, b))
    if a.dtype.itemsize < 8:                       # no int64 overflow: the plain difference
        d = np.subtract(oa, ob, out=oa)
        return np.abs(d, out=d).view(np.uint64)
    return _distance(oa, ob)
