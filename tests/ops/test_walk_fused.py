"""The realistic walk as one compiled loop (``ops/_walk_fused.py``) against the NumPy code of
``_sum_evaluations.realistic_walk``: the same chains (every order, lane count and run length, the
padding of the last lane and run, the pairwise and chain combinations of their totals) on windows
of one, two and three axes, float16 and float32 terms, one row or many; the same value within the
roundings of a sum of its squares (added in another order than ``np.einsum``'s), and the
row-major chain bit for bit, so the walk is never below ``row_major_walk``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_dml_bench.ops import _sum_evaluations as E
from onnx_dml_bench.ops import _walk_fused as W

pytestmark = pytest.mark.skipif(W._compile() is None, reason="numba cannot compile here")


def _rtol(k: int) -> float:
    """Two sums of the same n non-negative squares (n <= 2k: a lane's or run's padding, the totals'
    combinations) in two orders each lie within (n - 1) u of the exact sum, relatively; their
    square roots half that."""
    return 2 * k * 2.0 ** -53


def _numpy_walk(v, window, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(W, "_KERNEL", False)              # the NumPy code
        return E.realistic_walk(v, window)


def _values(kind: str, shape, dtype, rng) -> np.ndarray:
    if kind == "cancelling":
        x = rng.random(shape) * 128 - 64
    elif kind == "positive":
        x = rng.random(shape)
    elif kind == "halves":                           # signs by half of each row: long partial sums
        x = (1 + rng.random(shape)) * np.where(np.arange(shape[1]) < shape[1] // 2, 1, -1)
    elif kind == "pairs":                            # signs + + - - by runs of 256: the totals' tree sets it
        x = (1 + rng.random(shape)) * np.where((np.arange(shape[1]) // 512) % 2, -1, 1)
    else:                                            # one sign, then the other, by blocks of 17 terms
        x = (1 + rng.random(shape)) * np.where((np.arange(shape[1]) // 17) % 2, -1, 1)
    return x.astype(dtype)


@settings(deadline=None, max_examples=60, derandomize=True, database=None)
@given(st.data())
def test_the_loop_gives_the_numpy_code_s_walk(data):
    draw = data.draw
    nd = draw(st.integers(1, 3))
    window = tuple(draw(st.integers(1, {1: 5000, 2: 90, 3: 14}[nd])) for _ in range(nd))
    m = draw(st.sampled_from([1, 2, 3, 9]))
    dtype = draw(st.sampled_from([np.float16, np.float32]))
    kind = draw(st.sampled_from(["cancelling", "positive", "halves", "blocks", "pairs"]))
    k = int(np.prod(window))
    if k >= E.WALK_BLOCKED_FROM:
        return
    v = _values(kind, (m, k), dtype, np.random.default_rng(k + m))
    got = E.realistic_walk(v, window)
    with pytest.MonkeyPatch.context() as mp:
        want = _numpy_walk(v, window, mp)
    np.testing.assert_allclose(got, want, rtol=_rtol(k), atol=0)
    assert (got >= E.row_major_walk(v)).all()


@pytest.mark.parametrize("kind", ["blocks", "pairs"])
@pytest.mark.parametrize("window", [(49,), (7, 7), (40, 70), (112, 112), (3, 33, 20), (1000,), (4097,), (5, 1100)])
def test_each_chain_is_the_numpy_code_s(window, kind, monkeypatch):
    """Each chain alone (an order, a lane count, a run length: the others made empty) against the
    NumPy code with the same one chain, on data where each can be the largest (``pairs``: runs'
    totals whose pairwise tree passes their chain, an odd count of them)."""
    k = int(np.prod(window))
    rng = np.random.default_rng(k)
    v = _values(kind, (3, k), np.float32, rng)
    chains = ([("tiles", t) for t in E.WALK_TILES] + [("lanes", (q,)) for q in E.WALK_LANES if q < k]
              + [("runs", (q,)) for q in E.WALK_RUNS if q < k])
    for what, value in chains:
        with monkeypatch.context() as m:
            m.setattr(E, "WALK_TILES", (value,) if what == "tiles" else ())
            m.setattr(E, "WALK_LANES", value if what == "lanes" else ())
            m.setattr(E, "WALK_RUNS", value if what == "runs" else ())
            got = E.realistic_walk(v, window)
            want = _numpy_walk(v, window, m)
        np.testing.assert_allclose(got, want, rtol=_rtol(k), atol=0, err_msg=f"{what} {value}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_the_row_major_chain_is_row_major_walk_s_bits(dtype):
    """With no other chain, the loop's walk is ``row_major_walk``, bit for bit: the refined bound of
    ``_sums.bound_for`` takes that walk as the floor below every realistic walk."""
    rng = np.random.default_rng(7)
    for k in (1, 2, 49, 3136, 12544):
        v = _values("cancelling", (4, k), dtype, rng)
        none = np.zeros(0, np.int64)
        best = np.empty(4)
        W._compile()(np.ascontiguousarray(v.T, dtype=np.float64), np.zeros((0, k), np.int64), none, none, best)
        got = np.sqrt(best / 3)
        assert got.view(np.uint64).tolist() == E.row_major_walk(v).view(np.uint64).tolist(), k


def test_a_row_s_walk_is_its_own_whatever_rows_are_beside_it():
    """The rows side by side do not mix: each row's walk alone is its walk among others."""
    rng = np.random.default_rng(11)
    v = _values("halves", (6, 56 * 56), np.float32, rng)
    together = E.realistic_walk(v, (56, 56))
    alone = np.concatenate([E.realistic_walk(v[i:i + 1], (56, 56)) for i in range(6)])
    assert together.view(np.uint64).tolist() == alone.view(np.uint64).tolist()


def test_the_totals_combinations_are_the_numpy_code_s():
    """The lanes' and runs' totals combined (pairwise, an odd level padded with +0.0, or one after
    another: the larger), for every count up to 70, against ``_tree``; signs + + - - make the
    pairwise tree the larger."""
    rng = np.random.default_rng(5)
    for n in range(1, 71):
        t = (1 + rng.random((n, 3))) * np.where((np.arange(n) // 2) % 2, -1.0, 1.0)[:, None]
        t[:, 2] = rng.random(n) - 0.5
        got = W._tree(np.ascontiguousarray(t), n, 3)
        np.testing.assert_allclose(got, E._tree(t.T), rtol=4 * n * 2.0 ** -53, atol=0, err_msg=str(n))
