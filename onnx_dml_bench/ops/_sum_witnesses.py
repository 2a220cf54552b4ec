"""Witnesses of an AveragePool window's readings (``Operator.witnesses``, for ``onnx-dml-bench
mutants`` only): concrete evaluations of the window's own values in orders a sound reduction may
take, in each accumulator a reading allows (the text of ``_sums`` lists them). None is derived from
the answer under test.
"""
from __future__ import annotations

import numpy as np

from ._sum_evaluations import SIM_RUNS, WIDE, gather_at, pairwise, runs, scan  # noqa: F401 - gather_at: the witnesses' windows
from ._sums import RUN, SUMMED_WIDE, accumulator, unit



def _sound(v: np.ndarray) -> np.ndarray:
    """Per row of ``v``: the sound reduction of its elements in that order, in v's type (one after
    another up to ``RUN`` terms; beyond, contiguous runs of ``RUN`` one after another, combined
    pairwise: :func:`depth`)."""
    run = RUN[np.finfo(v.dtype).bits]
    return scan(v) if v.shape[1] <= run else runs(v, run)


#: a second tier of fixed random orders (the ``WITNESS_RANDOM`` first of them included), tried only
#: at the positions of an answer that no witness of the first tier gives, at most
#: ``WITNESS_MORE_AT`` of them and ``WITNESS_MORE_ELEMENTS`` window elements in all (a float16 sum of
#: 16,384 terms lands one ULP from the reference in about one order of 500)
WITNESS_MORE = 1024
WITNESS_MORE_AT = 8
WITNESS_MORE_ELEMENTS = 1 << 17
#: orders of the second tier evaluated at once
_MORE_CHUNK = 32

#: windows of at most so many elements: also the orders by magnitude (each window sorted)
WITNESS_SORTED = 1 << 12
#: so many fixed random orders of the window (seeded by its size: none depends on the data or on
#: an answer): a reduction whose threads take their terms in an order of their own (atomics, work
#: stealing, a scheduler's) may add them in any order
WITNESS_RANDOM = 16


def _order(key: np.ndarray) -> np.ndarray:
    """Per row, the stable order of ``key`` (ties keep the window order)."""
    return np.argsort(key, axis=1, kind="stable")


def witness_orders(g: np.ndarray) -> dict[str, np.ndarray | None]:
    """The orders of each row of ``g`` (window elements in row-major window order) the witnesses
    sum in, as index arrays (None: the window's order): reversed; positive terms first, negative
    first; and, for windows of at most ``WITNESS_SORTED`` elements, largest and smallest magnitude
    first, and the positive and the negative terms, each by magnitude largest first, taken in turn
    (a partial sum that stays small), led by either sign, the zeros last; and ``WITNESS_RANDOM``
    fixed random orders."""
    m, k = g.shape
    out: dict[str, np.ndarray | None] = {
        "scan": None, "reversed": np.broadcast_to(np.arange(k)[::-1], g.shape),
        "positives-first": _order(-(g > 0).astype(np.int8)), "negatives-first": _order(-(g < 0).astype(np.int8))}
    rng = np.random.default_rng(k)
    for i in range(WITNESS_RANDOM if k > 2 else 0):
        out[f"random{i}"] = np.broadcast_to(rng.permutation(k), g.shape)
    if k > WITNESS_SORTED:
        return out
    largest = _order(-np.abs(g.astype(np.float64)))
    out["largest-first"], out["smallest-first"] = largest, largest[:, ::-1]
    # each term's rank among the terms of its sign, by magnitude: counted along the largest-first order
    rows = np.arange(m)[:, None]
    by = np.take_along_axis(g, largest, axis=1)
    rank = np.empty(g.shape, np.int64)
    rank[rows, largest] = np.where(by > 0, np.cumsum(by > 0, axis=1), np.cumsum(by < 0, axis=1)) - 1
    n_pos, n_neg = (g > 0).sum(axis=1, keepdims=True), (g < 0).sum(axis=1, keepdims=True)
    for lead, (first, second, n_second, n_first) in (("positive", (g > 0, g < 0, n_neg, n_pos)),
                                                    ("negative", (g < 0, g > 0, n_pos, n_neg))):
        # the place of each term in the interleaved order: a leading-sign term of rank r follows r of
        # its own and min(r, n_second) of the other; the other's follows min(r + 1, n_first) and r
        dest = np.where(first, rank + np.minimum(rank, n_second),
                        np.where(second, rank + np.minimum(rank + 1, n_first), 0))
        zero = ~(first | second)
        dest = np.where(zero, n_pos + n_neg + np.cumsum(zero, axis=1) - 1, dest)
        perm = np.empty(g.shape, np.int64)
        perm[rows, dest] = np.arange(k)[None, :]
        out[f"zigzag-{lead}-first"] = perm
    return out


def witness_sums(v: np.ndarray, orders: dict[str, np.ndarray | None]) -> dict[str, np.ndarray]:
    """Per row of ``v`` (window elements in row-major window order, in the accumulator's type, the
    padding as +0.0): the sums of the orders a sound reduction may take (module text), by name.
    Every one passes each term through at most :func:`depth` roundings: each of ``orders``
    (:func:`witness_orders`) by the sound reduction; pairwise; the interleaved orders with the terms
    the leading one absorbs (below u of it) right after it; and, where the window fits one run, the
    positive and the negative terms summed apart (each one after another), then added."""
    run = RUN[np.finfo(v.dtype).bits]
    out = {"pairwise": pairwise(v)}
    for name, order in orders.items():
        w = v if order is None else np.take_along_axis(v, order, axis=1)
        out[name] = _sound(w)
        if name.startswith("random"):
            # also the trees of the simulated in-type evaluations: shorter runs, and pairwise
            out[f"{name}/pairwise"] = pairwise(w)
            for r in (r for r in SIM_RUNS if r < min(run, w.shape[1])):
                out[f"{name}/runs{r}"] = runs(w, r)
    if "zigzag-positive-first" in orders:
        mag = np.abs(v)
        small = (mag < unit(v.dtype)[0] * mag.max(axis=1, keepdims=True)) & (v != 0)
        for lead in ("positive", "negative"):
            zig = np.take_along_axis(v, orders[f"zigzag-{lead}-first"], axis=1)
            moved = np.take_along_axis(small, orders[f"zigzag-{lead}-first"], axis=1)
            # stable: the first term, then the absorbed ones, then the rest in turn
            key = np.where(moved, 1, 2)
            key[:, 0] = np.where(moved[:, 0], 1, 0)
            out[f"zigzag-{lead}-first-absorbing"] = _sound(np.take_along_axis(zig, _order(key), axis=1))
    if v.shape[1] <= run:
        zero = v.dtype.type(0)
        out["signs-apart"] = scan(np.where(v > 0, v, zero)) + scan(np.where(v < 0, v, zero))
    return out


def _accumulators(dtype, in_type: bool) -> list:
    """The accumulators of the readings: float32 for summed-wide; the data type too where ``in_type``."""
    wide = accumulator(dtype, SUMMED_WIDE)
    return [wide] + ([dtype] if in_type and dtype != wide else [])


def _averages(sums: dict[str, np.ndarray], acc, dtype, cc: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(name, answers in ``dtype``) of the window sums ``sums`` (in accumulator ``acc``; a name
    ``reciprocal-first/...`` already an average) over the counts ``cc``: divided by the count or
    multiplied by its rounded reciprocal, the ways :func:`bound` covers (module text of
    :func:`witness_answers`)."""
    a = np.dtype(acc).name
    r_acc = (1.0 / cc).astype(acc)
    out = []
    for name, s in sums.items():
        if name.startswith("reciprocal-first/"):
            out.append((f"{a}:{name}", s.astype(dtype)))
            continue
        quot = (s.astype(np.float64) / cc).astype(acc)         # divided: one rounding
        prod = s * r_acc                                       # times the rounded reciprocal
        if acc == dtype:
            answers = {"divided": quot, "reciprocal": prod}
        else:
            r_t = (1.0 / cc).astype(dtype)
            answers = {"divided": quot.astype(dtype), "reciprocal": prod.astype(dtype),
                       "type-reciprocal": (s * r_t.astype(acc)).astype(dtype),
                       "sum-in-type-then-reciprocal": s.astype(dtype) * r_t}
        out += [(f"{a}:{name}/{how}", ans.astype(dtype)) for how, ans in answers.items()]
    return out


def more_random_answers(g: np.ndarray, c: np.ndarray, in_type: bool) -> tuple[list[str], np.ndarray]:
    """The second tier (``WITNESS_MORE``): per row of ``g`` (as :func:`witness_answers` takes it),
    the answers of the fixed random orders ``WITNESS_RANDOM`` to ``WITNESS_MORE`` - 1 (the same
    sequence as the first tier's, seeded by the window's size), each summed as the first tier sums
    its random orders, in each accumulator, divided or multiplied the same ways: (names, answers of
    shape (rows, names))."""
    m, k = g.shape
    dtype = g.dtype.type
    cc = np.where(np.asarray(c, np.float64) > 0, np.asarray(c, np.float64), 1.0)
    rng = np.random.default_rng(k)
    perms = [rng.permutation(k) for _ in range(WITNESS_MORE)][WITNESS_RANDOM:]
    names: list[str] = []
    cols: list[np.ndarray] = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for lo in range(0, len(perms), _MORE_CHUNK):
            chunk = perms[lo:lo + _MORE_CHUNK]
            idx = np.stack(chunk)                                   # (orders, k)
            rows = g[:, idx].reshape(m * len(chunk), k)             # row r, order o at r * orders + o
            cr = np.repeat(cc, len(chunk))
            for acc in _accumulators(dtype, in_type):
                sums = witness_sums(rows.astype(acc), {"random": None})
                sums.pop("pairwise")                    # the order's own pairwise: random/pairwise
                sums.pop("signs-apart", None)           # not an order of its own
                for name, ans in _averages(sums, acc, dtype, cr):
                    per = ans.reshape(m, len(chunk))
                    for j in range(len(chunk)):
                        names.append(name.replace("random", f"random{WITNESS_RANDOM + lo + j}", 1))
                        cols.append(per[:, j])
    return names, np.stack(cols, axis=1) if cols else np.zeros((m, 0), g.dtype)


def witness_answers(g: np.ndarray, c: np.ndarray, in_type: bool) -> list[tuple[str, np.ndarray]]:
    """(name, answers) of the witnesses of AveragePool windows ``g`` (rows of window elements in
    row-major window order, in the data type, the padding +0.0) with divisors ``c``: per row, the
    average of each order of :func:`witness_sums` in each accumulator a reading allows (float32 for
    summed-wide; the data type too where ``in_type``), divided by the count or multiplied by its
    rounded reciprocal the ways :func:`bound` covers; in the data type also the terms multiplied by
    the reciprocal first, then summed (a simulated evaluation of summed-in-type)."""
    dtype = g.dtype.type
    cc = np.where(np.asarray(c, np.float64) > 0, np.asarray(c, np.float64), 1.0)
    out = []
    orders = witness_orders(g)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for acc in _accumulators(dtype, in_type):
            v = g.astype(acc)
            sums = witness_sums(v, orders)
            if acc == dtype and np.finfo(acc).bits < np.finfo(WIDE).bits:
                # the terms times the reciprocal, then pairwise: the simulated evaluation of that kind
                sums["reciprocal-first/pairwise"] = pairwise(v * (1.0 / cc).astype(acc)[:, None])
            out += _averages(sums, acc, dtype, cc)
    return out
