"""The window statistics of AveragePool (``_sums.stats``) against a loop over every window: the
windows the ONNX text defines, each window's elements taken one by one (global windows, one-signed
data and non-finite values included, where fewer statistics are summed)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _sums as SUM


def loop_stats(x: np.ndarray, a: O.Attrs) -> dict:
    ax, _ = O.axes(a, x.shape[2:])
    shape = (*x.shape[:2], *(q.out for q in ax))
    out = {k: np.zeros(shape) for k in ("n", "c", "S", "P", "N", "pinf", "ninf", "nan")}
    out["top"], out["bottom"] = np.full(shape, -np.inf), np.full(shape, np.inf)
    for b, ch, *o in itertools.product(*(range(s) for s in shape)):
        at = (b, ch, *o)
        for t in itertools.product(*(range(q.k) for q in ax)):
            coords = [oo * q.s - q.begin + tt * q.d for oo, tt, q in zip(o, t, ax)]
            inside = all(0 <= cc < q.n for cc, q in zip(coords, ax))
            padded = all(-q.begin <= cc < q.n + q.end for cc, q in zip(coords, ax))
            out["c"][at] += inside if not a.count_include_pad else padded
            if not inside:
                continue
            v = float(x[(b, ch, *coords)])
            out["n"][at] += 1
            if np.isnan(v):
                out["nan"][at] += 1
            elif np.isinf(v):
                out["pinf" if v > 0 else "ninf"][at] += 1
            else:
                out["S"][at] += abs(v)
                out["P"][at] += max(v, 0.0)
                out["N"][at] += max(-v, 0.0)
                out["top"][at] = max(out["top"][at], v)
                out["bottom"][at] = min(out["bottom"][at], v)
    return out


CASES = [((1, 2, 5, 6), (5, 6), (0, 0, 0, 0), 0),          # global
         ((2, 3, 7), (7,), (0, 0), 1),                       # global, 1-D
         ((1, 2, 4, 4, 3), (4, 4, 3), (0, 0, 0, 0, 0, 0), 0),  # global, 3-D
         ((1, 2, 6, 5), (3, 2), (1, 0, 1, 1), 1),            # windows with padding
         ((2, 1, 9), (4,), (2, 1), 0),
         ((1, 2, 3), (5,), (4, 4), 1)]                       # padding wider than the input


@pytest.mark.parametrize("data", ["mixed", "positive", "negative", "zeros", "nonfinite", "huge"])
@pytest.mark.parametrize("shape,kernel,pads,inc", CASES)
def test_stats_are_the_windows_loop(shape, kernel, pads, inc, data):
    rng = np.random.default_rng(len(shape) * 7 + len(data))
    x = rng.standard_normal(shape).astype(np.float32) * 3
    x = {"positive": np.abs(x), "negative": -np.abs(x), "zeros": np.zeros_like(x),
         "huge": x * np.float32(1e38)}.get(data, x)
    if data == "nonfinite":
        x.flat[[0, 3, 5]] = [np.inf, np.nan, -np.inf]
    a = O.Attrs("AveragePool", 19, kernel, (1,) * len(kernel), pads, (1,) * len(kernel), count_include_pad=inc)
    st = SUM.stats(x, a)
    want = loop_stats(x, a)
    for name, arr in want.items():
        got = np.asarray(getattr(st, name))
        assert got.shape == arr.shape, name
        np.testing.assert_allclose(got, arr, rtol=1e-12, atol=0, err_msg=name)
