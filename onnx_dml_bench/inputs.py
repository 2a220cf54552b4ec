"""Seeded input families. Each family is a function (shape, DML type, rng) -> array.

random      distinct-ish values spread over a useful range
ties        values drawn from a set of three, so windows hold repeated maxima
constant    one value everywhere (every window is a tie)
negative    all values below zero (signed and float types)
inf         random values with +inf and -inf sprinkled in (float types)
nan         random values with NaN sprinkled in (float types)
denormal    subnormal values of both signs (float types)
negzero     a mix of -0.0 and +0.0 with small values (float types)
extremes    the type's extreme values: min/max for integers, +-max finite and +-tiny for floats
real        real-valued floats (uniform in [-64, 64), not multiples of a power of two): sums and
            averages of them round, so tolerances are exercised (float types; not in the
            sweeps' rotation of families, operators add such cases themselves)
small       non-negative real-valued floats below 1/16 (uniform in [0, 1/16)), as activations
            after a ReLU feeding a squeeze layer: a sum of up to 2^20 of them stays within
            float16's range, so a long float16 average has no overflow to hide behind (float
            types; not in the rotation; the ``limits`` profile's float16 long sums)
"""
from __future__ import annotations

import math
import zlib

import numpy as np

from .dtypes import DML_TO_NUMPY, is_float

FAMILIES = ("random", "ties", "constant", "negative", "inf", "nan", "denormal", "negzero", "extremes")
FLOAT_ONLY = {"inf", "nan", "denormal", "negzero"}


EXTRA_FLOAT = ("real", "small")


def accepted_families(dml_type: str) -> tuple[str, ...]:
    """Every family ``fill`` accepts for ``dml_type``: the rotation's and the extra ones."""
    return families_for(dml_type) + (EXTRA_FLOAT if is_float(dml_type) else ())


def families_for(dml_type: str) -> tuple[str, ...]:
    out = []
    for f in FAMILIES:
        if f in FLOAT_ONLY and not is_float(dml_type):
            continue
        if f == "negative" and dml_type.startswith("UINT"):
            continue
        out.append(f)
    return tuple(out)


def rng_for(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _eighths(k: np.ndarray, dt: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """k / 8 in ``dt`` (k int64): k * 0.125 in float64 (exact, as k / 8.0 is), rounded to ``dt`` as
    it is written (no float64 array of k's size), into ``out`` where given."""
    out = np.empty(k.shape, dt) if out is None else out
    return np.multiply(k, 0.125, out=out, casting="unsafe")


# Each generator: (shape, numpy type, generator, out=None) -> the values, written into ``out`` (an
# array of that shape and type) where it is given and the generator can (else a new array).

def _random(shape, dt: np.dtype, rng, out=None):
    if dt.kind == "f":
        # multiples of 1/8 in [-64, 64): exact in float16, few accidental ties
        return _eighths(rng.integers(-512, 512, size=shape), dt, out)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


def _ties(shape, dt, rng, out=None):
    return rng.choice(np.array([0, 1, 2]), size=shape).astype(dt)


def _constant(shape, dt, rng, out=None):
    return np.full(shape, 3, dtype=dt)


def _negative(shape, dt, rng, out=None):
    if dt.kind == "f":
        k = rng.integers(1, 1024, size=shape)
        return _eighths(np.negative(k, out=k), dt, out)
    info = np.iinfo(dt)
    return rng.integers(info.min, -1, size=shape, endpoint=True, dtype=dt)


def _sprinkle(shape, dt, rng, specials):
    x = _random(shape, dt, rng)
    mask = rng.random(shape) < 0.15
    x[mask] = rng.choice(np.array(specials, dtype=dt), size=int(mask.sum()))
    return x


def _inf(shape, dt, rng, out=None):
    return _sprinkle(shape, dt, rng, [np.inf, -np.inf])


def _nan(shape, dt, rng, out=None):
    return _sprinkle(shape, dt, rng, [np.nan])


def _denormal(shape, dt, rng, out=None):
    tiny = np.finfo(dt).smallest_subnormal
    k = rng.integers(-64, 64, size=shape)
    return (k * tiny).astype(dt)


def _negzero(shape, dt, rng, out=None):
    x = rng.choice(np.array([-0.0, 0.0, -0.0, 0.0, 0.5, -0.5], dtype=dt), size=shape)
    return x.astype(dt)


def _uniform(lo: float, hi: float, shape, dt: np.dtype, rng, out=None) -> np.ndarray:
    """``rng.uniform(lo, hi, shape).astype(dt)``, the same bits: each draw u of ``rng.random`` (the
    same stream) is lo + (hi - lo) u rounded once, then rounded to ``dt``. With hi - lo a power of
    two the product is exact, so scaling in place and adding lo as the array is written in ``dt``
    makes those two roundings (no generic broadcasting loop, no float64 array of the result), into
    ``out`` where given."""
    width = hi - lo
    if float(np.frexp(width)[0]) != 0.5:
        raise ValueError(f"uniform inputs over a width of {width}: it must be a power of two (an exact product)")
    if out is not None and not out.flags.c_contiguous:
        out[...] = _uniform(lo, hi, shape, dt, rng)
        return out
    out = np.empty(shape, dt) if out is None else out
    flat = out.reshape(-1)
    # the draws a block at a time into one small buffer (the stream's next draws, so the same
    # values: ``random`` takes one 64-bit draw per value): no float64 array of the tensor's size,
    # whose first touch of every page cost as much as the draws
    buf = np.empty(min(flat.size, UNIFORM_BLOCK))
    for lo_i in range(0, flat.size, UNIFORM_BLOCK):
        u = buf[:min(UNIFORM_BLOCK, flat.size - lo_i)]
        rng.random(out=u)
        u *= width
        np.add(u, lo, out=flat[lo_i:lo_i + len(u)], casting="unsafe")
    return out


#: the draws of ``_uniform`` per block (a 256 KiB buffer)
UNIFORM_BLOCK = 1 << 15


def _real(shape, dt, rng, out=None):
    return _uniform(-64.0, 64.0, shape, dt, rng, out)


def _small(shape, dt, rng, out=None):
    return _uniform(0.0, 1.0 / 16, shape, dt, rng, out)


def _extremes(shape, dt, rng, out=None):
    if dt.kind == "f":
        fi = np.finfo(dt)
        vals = np.array([fi.max, -fi.max, fi.tiny, -fi.tiny, fi.max / 2, 1.0], dtype=dt)
    else:
        ii = np.iinfo(dt)
        vals = np.array([ii.min, ii.max, ii.min + 1, ii.max - 1, 0], dtype=dt)
    return rng.choice(vals, size=shape).astype(dt)


_GEN = {"random": _random, "ties": _ties, "constant": _constant, "negative": _negative, "inf": _inf,
        "nan": _nan, "denormal": _denormal, "negzero": _negzero, "extremes": _extremes, "real": _real,
        "small": _small}


#: tensors of more elements are filled slice by slice (each slice seeded on its own)
FILL_CHUNK = 1 << 22


def fill(shape, dml_type: str, family: str, seed: int, name: str = "X") -> np.ndarray:
    """The values of input ``name`` for a case: deterministic in (family, seed, name, shape, type).
    Above :data:`FILL_CHUNK` elements, in slices (memory-bounded)."""
    if family not in _GEN:
        raise ValueError(f"unknown input family {family!r}; known: {', '.join(FAMILIES + EXTRA_FLOAT)}")
    if family not in accepted_families(dml_type):
        raise ValueError(f"input family {family!r} does not apply to {dml_type}")
    dt = DML_TO_NUMPY[dml_type]
    shape = tuple(int(v) for v in shape)
    n = math.prod(shape)
    with np.errstate(over="ignore", invalid="ignore"):
        if n <= FILL_CHUNK:
            return np.ascontiguousarray(_GEN[family](shape, dt, rng_for(seed, name)))
        # a large tensor in slices of its own seeds: the generators' float64 and int64
        # intermediates never hold more than one slice
        out = np.empty(n, dtype=dt)
        for k, start in enumerate(range(0, n, FILL_CHUNK)):
            part = out[start:min(n, start + FILL_CHUNK)]
            got = _GEN[family](part.shape, dt, rng_for(seed, f"{name}#{k}"), out=part)
            if got is not part:
                part[...] = got
        return out.reshape(shape)
