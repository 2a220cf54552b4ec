"""The realistic walk of a window (``_sum_evaluations.realistic_walk``, its term-by-term form) as one
compiled loop (numba) over the window's terms, every row of windows at once.

``realistic_walk`` takes, per window, the largest sum of the squares of the partial sums over the
orders real kernels take: one after another row-major, reversed, column-major and reversed, tile
after tile; strided lanes and contiguous runs, each one after another, then combined pairwise or
one after another. The NumPy code makes a float64 array of the window's size per order (a gather,
a cumulative sum, then ``np.einsum`` of its squares); :func:`walk_loop` keeps one running sum and
one sum of squares per row instead, the rows side by side (``terms`` transposed: a position of the
window, then the rows), so each step is one vector operation over the rows.

The values are the same sums, each partial sum exact to float64 as NumPy's, its squares added one
after another in the order's own order where ``np.einsum`` takes its own (so a few units in the
last place of a sum of thousands of squares apart: a scale of the statistical floor, not a bound
that must hold bit for bit). The row-major chain is the exception, and it is exact: its squares
are added one after another as ``row_major_squares`` adds them, so the walk is at least
``row_major_walk``, bit for bit, as the refined bound of ``_sums.bound_for`` needs
(``tests/ops/test_walk_fused.py``).
"""
from __future__ import annotations

import functools

import numpy as np

from ..jit import njit

_KERNEL = None


def _tree(t, n, m):
    # rows' totals t (n, m): the larger of the sums of the squares of a pairwise tree's additions
    # (an odd level padded with +0.0) and of a chain's partial sums over them (``_tree``)
    a = t[:n].copy()
    tot = np.zeros(m)
    length = n
    while length > 1:
        half = (length + 1) // 2
        level = np.zeros(m)
        for q in range(half):
            if 2 * q + 1 < length:
                for r in range(m):
                    a[q, r] = a[2 * q, r] + a[2 * q + 1, r]
            else:
                for r in range(m):
                    a[q, r] = a[2 * q, r] + 0.0
            for r in range(m):
                level[r] += a[q, r] * a[q, r]
        for r in range(m):
            tot[r] += level[r]
        length = half
    s = np.zeros(m)
    chain = np.zeros(m)
    for q in range(n):
        for r in range(m):
            s[r] += t[q, r]
            chain[r] += s[r] * s[r]
    for r in range(m):
        if chain[r] > tot[r]:
            tot[r] = chain[r]
    return tot


_TREE = _tree


def walk_loop(terms, orders, lanes, runs, best):
    """``best`` (m,): the largest sum of squared partial sums over the chains of ``terms`` (k, m:
    float64, a window's terms down, its rows across): row-major, then each index order of
    ``orders`` (o, k), each lane count of ``lanes`` and each run length of ``runs`` (each below k)."""
    k, m = terms.shape
    s = np.zeros(m)
    sq = np.zeros(m)
    for t in range(k):                      # row-major: row_major_squares, the same additions
        for r in range(m):
            s[r] += terms[t, r]
            sq[r] += s[r] * s[r]
    for r in range(m):
        best[r] = sq[r]
    for o in range(orders.shape[0]):
        s[:] = 0.0
        sq[:] = 0.0
        for t in range(k):
            i = orders[o, t]
            for r in range(m):
                s[r] += terms[i, r]
                sq[r] += s[r] * s[r]
        for r in range(m):
            if sq[r] > best[r]:
                best[r] = sq[r]
    for li in range(lanes.shape[0]):
        n_l = lanes[li]
        part = np.zeros((n_l, m))
        sq[:] = 0.0
        for j in range(-(-k // n_l)):          # a lane past the last term adds +0.0: its sum repeats
            for lane in range(n_l):
                t = j * n_l + lane
                if t < k:
                    for r in range(m):
                        part[lane, r] += terms[t, r]
                        sq[r] += part[lane, r] * part[lane, r]
                else:
                    for r in range(m):
                        sq[r] += part[lane, r] * part[lane, r]
        tree = _tree(part, n_l, m)
        for r in range(m):
            v = sq[r] + tree[r]
            if v > best[r]:
                best[r] = v
    for ri in range(runs.shape[0]):
        run = runs[ri]
        n_runs = -(-k // run)
        totals = np.zeros((n_runs, m))
        sq[:] = 0.0
        for q in range(n_runs):
            s[:] = 0.0
            for i in range(run):
                t = q * run + i
                if t < k:
                    for r in range(m):
                        s[r] += terms[t, r]
                for r in range(m):
                    sq[r] += s[r] * s[r]
            for r in range(m):
                totals[q, r] = s[r]
        tree = _tree(totals, n_runs, m)
        for r in range(m):
            v = sq[r] + tree[r]
            if v > best[r]:
                best[r] = v


def _compile():
    """The loop, compiled on first use (kept on disk by numba beside this file); None where numba
    does not import."""
    global _KERNEL, _tree
    if _KERNEL is not None:
        return _KERNEL or None
    try:
        import numba  # noqa: F401 - where it does not import: NumPy's code
    except ImportError:
        _KERNEL = False
        return None
    try:                                     # compiled (or loaded from numba's cache) here, once
        _tree = njit(_TREE)
        loop = njit(walk_loop)
        none = np.zeros(0, np.int64)
        loop(np.zeros((2, 1)), np.zeros((0, 2), np.int64), none, none, np.empty(1))
    except Exception:  # noqa: BLE001 - a numba that cannot compile or cache here: NumPy's code
        _KERNEL = False
        return None
    _KERNEL = loop
    return loop


@functools.lru_cache(maxsize=16)
def orders(window: tuple[int, ...], tile_order, tiles: tuple) -> np.ndarray:
    """The index orders of a window's chains other than row-major, as ``realistic_walk`` takes them
    (reversed; column-major and reversed, every axis order reversed; tile after tile), one row each."""
    k = int(np.prod(window))
    idx = np.arange(k)
    out = [idx[::-1]]
    if len(window) > 1:
        col = idx.reshape(window).transpose(*range(len(window) - 1, -1, -1)).reshape(-1)
        out += [col, col[::-1]]
        out += [o for o in (tile_order(tuple(window), th, tw) for th, tw in tiles) if o is not None]
    res = np.ascontiguousarray(np.stack(out), dtype=np.int64)
    res.setflags(write=False)
    return res


def walk(v: np.ndarray, window: tuple[int, ...], tile_order, tiles, lanes, runs) -> np.ndarray | None:
    """sqrt(R / 3) per row of ``v`` (m, k: a window's terms, finite), R the largest of the chains'
    sums of squares (:func:`walk_loop`): row-major, reversed, column-major and reversed, tile after
    tile (``tile_order(window, th, tw)`` of each of ``tiles``, None for none), ``lanes`` and
    ``runs``; or None where numba does not import (NumPy's code then)."""
    loop = _compile()
    if loop is None:
        return None
    m, k = v.shape
    terms = np.ascontiguousarray(v.T, dtype=np.float64)            # each term exactly
    best = np.empty(m)
    loop(terms, orders(tuple(int(q) for q in window), tile_order, tuple(tiles)),
         np.array([q for q in lanes if q < k], np.int64), np.array([q for q in runs if q < k], np.int64), best)
    return np.sqrt(best / 3)
