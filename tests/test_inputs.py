"""The input families' generators write the values of their plain NumPy expressions, bit for bit:
a case's inputs (and every fixture made from them) must not move when a generator is made faster."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_dml_bench import inputs as I

PLAIN = {
    "random": lambda shape, dt, rng: (rng.integers(-512, 512, size=shape) / 8.0).astype(dt),
    "negative": lambda shape, dt, rng: (-rng.integers(1, 1024, size=shape) / 8.0).astype(dt),
    "real": lambda shape, dt, rng: rng.uniform(-64.0, 64.0, size=shape).astype(dt),
    "small": lambda shape, dt, rng: rng.uniform(0.0, 1.0 / 16, size=shape).astype(dt),
}
FLOATS = (np.float16, np.float32, np.float64)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(np.uint8).tobytes()


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(PLAIN)), dt=st.sampled_from(FLOATS), seed=st.integers(0, 2**32 - 1),
       shape=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_a_generator_writes_its_plain_expression(family, dt, seed, shape):
    dt = np.dtype(dt)
    got = I._GEN[family](tuple(shape), dt, np.random.default_rng(seed))
    want = PLAIN[family](tuple(shape), dt, np.random.default_rng(seed))
    assert got.dtype == dt and got.shape == tuple(shape)
    assert _bits(got) == _bits(want)


@pytest.mark.parametrize("family", sorted(PLAIN))
@pytest.mark.parametrize("dml_type", ["FLOAT16", "FLOAT32"])
def test_a_large_fill_is_each_slice_of_its_own_seed(family, dml_type, monkeypatch):
    """Above FILL_CHUNK elements a tensor is filled slice by slice, each slice the plain expression
    of its own generator (a million draws per slice: every rounding case of the cast is met)."""
    monkeypatch.setattr(I, "FILL_CHUNK", 1 << 20)
    shape = (3, 1 << 19)
    got = I.fill(shape, dml_type, family, 1234).reshape(-1)
    dt = np.dtype(np.float16 if dml_type == "FLOAT16" else np.float32)
    for k, start in enumerate(range(0, got.size, 1 << 20)):
        part = got[start:start + (1 << 20)]
        want = PLAIN[family]((part.size,), dt, I.rng_for(1234, f"X#{k}"))
        assert _bits(part) == _bits(want), (family, k)


def test_the_uniform_width_must_be_exact():
    with pytest.raises(ValueError, match="power of two"):
        I._uniform(0.0, 3.0, (4,), np.dtype(np.float32), np.random.default_rng(0))


@pytest.mark.parametrize("family", ["real", "small"])
@pytest.mark.parametrize("size", [1, I.UNIFORM_BLOCK - 1, I.UNIFORM_BLOCK, I.UNIFORM_BLOCK + 1, 3 * I.UNIFORM_BLOCK + 5])
@pytest.mark.parametrize("dt", FLOATS)
def test_the_uniform_draws_a_block_at_a_time_are_one_stream(family, size, dt):
    """``_uniform`` draws a block at a time into a small buffer: at and around the block's edges the
    values are the plain expression's, one draw after another; so into a given ``out`` too, and
    into a strided one."""
    dt = np.dtype(dt)
    want = PLAIN[family]((size,), dt, np.random.default_rng(size))
    assert _bits(I._GEN[family]((size,), dt, np.random.default_rng(size))) == _bits(want)
    out = np.empty(size, dt)
    assert I._GEN[family]((size,), dt, np.random.default_rng(size), out=out) is out and _bits(out) == _bits(want)
    wide = np.zeros((size, 2), dt)
    got = I._GEN[family]((size,), dt, np.random.default_rng(size), out=wide[:, 0])
    assert _bits(got) == _bits(want) and _bits(wide[:, 0]) == _bits(want) and not wide[:, 1].any()
