"""The simulated evaluations of window sums add in the order they name: ``scan`` (one after
another) gives the bits of np.add.accumulate's last element, whichever NumPy reduction it uses, and
the float32 reductions of long windows are the same with a scan written as accumulate."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_dml_bench.ops import _sum_evaluations as E


def accumulated(v: np.ndarray, axis: int = -1) -> np.ndarray:
    """One after another, by definition."""
    return np.take(np.add.accumulate(v, axis=axis), -1, axis=axis)


def hostile(shape, dtype, seed: int) -> np.ndarray:
    """Signs mixed over many binary orders of magnitude: any other order of the additions gives
    other bits on most rows."""
    rng = np.random.default_rng(seed)
    top = {np.float16: 10, np.float32: 60, np.float64: 200}[dtype]
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-top, top, shape))
    return v.astype(dtype)


SHAPES = [((1, 5000), 0), ((1, 5000), 1), ((2, 5000), 1), ((3, 7), 1), ((5, 4096), 0), ((8, 300, 4), 1),
          ((8, 300, 16), 2), ((8, 300, 16), 1), ((1, 9, 1024), 1), ((1, 1, 7000), 2), ((17, 33, 65), 0),
          ((1000, 256), 0), ((1000, 256), 1), ((2, 700, 2), 1), ((4, 3, 5, 6), 2), ((6, 1, 3), 1), ((9, 2), 0)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", SHAPES)
def test_scan_adds_one_after_another(shape, axis, dtype):
    v = hostile(shape, dtype, seed=hash((shape, axis)) % 1000)
    got, want = E.scan(v, axis), accumulated(v, axis)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(f"u{v.itemsize}"), want.view(f"u{v.itemsize}"))


def test_the_shapes_take_both_paths():
    """The check above is worth something only if some shapes take the reduction's path and
    others accumulate's, and if the reduction's pairwise order along a contiguous axis would
    have given other bits."""
    v = hostile((1000, 256), np.float32, 0)
    assert not np.array_equal(np.add.reduce(v, axis=1), accumulated(v, 1))
    paths = {v.flags.c_contiguous and v.shape[a] > 1 and int(np.prod(v.shape[a + 1:])) >= 2
             for v, a in ((np.zeros(s), a) for s, a in SHAPES)}
    assert paths == {True, False}


@pytest.mark.parametrize("rows,window", [(7, (60, 70)), (64, (16, 16)), (3, (1, 300)), (5, (20, 13, 2)), (9, (2048,))])
def test_wide_sums_are_the_accumulated_ones(rows, window, monkeypatch):
    v = hostile((rows, int(np.prod(window))), np.float32, rows)
    got = E.wide_sums(v, window)
    monkeypatch.setattr(E, "scan", accumulated)
    want = E.wide_sums(v, window)
    assert got.keys() == want.keys() and len(got) > 5
    for name in want:
        assert np.array_equal(got[name].view(np.uint32), want[name].view(np.uint32)), name
