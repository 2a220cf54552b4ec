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


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 16, 25, 49, 64])
def test_a_whole_window_in_an_order_is_that_order_one_after_another(n):
    """``_in_order``: the float16 terms of each row added one after another in the order given: the
    bits of accumulate over the reordered terms, and of a run of the next simulated length (the sum
    + 0.0), but for the sign of a zero sum."""
    v = hostile((400, n), np.float16, n)
    rng = np.random.default_rng(n)
    for order in (tuple(range(n)), tuple(range(n - 1, -1, -1)), tuple(int(i) for i in rng.permutation(n))):
        got = E._in_order(v, order)
        want = accumulated(v[:, list(order)])
        assert np.array_equal(got, want, equal_nan=True)
        padded_run = E._runs(v[:, list(order)], min(r for r in (*E.SIM_RUNS, 1 << 30) if r >= n))
        assert np.array_equal(np.abs(got), np.abs(padded_run), equal_nan=True)


@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "nonfinite", "zeros", "signs by slice"])
def test_window_statistics_of_many_slices_are_those_of_one(kind, monkeypatch):
    """AveragePool's window statistics computed slice by slice of batch x channel and joined are,
    bit for bit, those of one slice; every one read-only; a statistic zero everywhere is one shared
    zero array, and P or N is S itself where the data has one sign."""
    from onnx_dml_bench import registry  # noqa: F401  (the pooling family)
    from onnx_dml_bench.ops import _onnx_pool as O
    from onnx_dml_bench.ops import _sums
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 9, 11))
    if kind == "positive":
        x = np.abs(x)
    elif kind == "negative":
        x = -np.abs(x)
    elif kind == "nonfinite":
        x[1, 2, 3, 4], x[2, 0, 0, 0], x[0, 4, 8, 10] = np.inf, -np.inf, np.nan
    elif kind == "zeros":
        x[:] = 0.0
    elif kind == "signs by slice":
        x[0], x[1], x[2] = np.abs(x[0]), -np.abs(x[1]), 0.0
    x = x.astype(np.float16)
    a = O.Attrs(op="AveragePool", opset=19, kernel=(3, 2), strides=(1, 2), pads=(1, 0, 1, 1), dilations=(1, 1))
    whole = _sums.stats(x, a)
    monkeypatch.setattr(_sums, "_CHUNK", 60)                   # one row of batch x channel per slice
    sliced = _sums.stats(x, a)
    for f in ("S", "P", "N", "top", "bottom", "pinf", "ninf", "nan", "sim"):
        u, v = getattr(whole, f), getattr(sliced, f)
        want = np.float32 if f in ("top", "bottom") else np.float64     # terms of float16 data: in float32
        assert u.dtype == v.dtype == want and np.array_equal(u, v, equal_nan=True), f
        assert not v.flags.writeable or f == "sim", f
    if kind != "nonfinite":
        assert sliced.pinf is sliced.ninf is sliced.nan and not sliced.nan.any()
    if kind == "positive":
        assert sliced.P is sliced.S and not sliced.N.any()
    if kind == "negative":
        assert sliced.N is sliced.S and not sliced.P.any()
