"""How the window sum of an average may be computed, and what each way allows: per output position
of an AveragePool graph, the window statistics (summed in float64 over the finite values), the
error bounds of the readings of open point ``sum-precision``, and where a sum can overflow.

Neither the DirectML pages nor the ONNX text say in which precision or order a window is summed.
The readings (each allows every summation order):

- ``summed-wide``: summed in float32 (or wider), then divided by the count and rounded to the data
  type: what DirectML does for float16 (and ONNX Runtime's CPU EP). The reference's reading: the
  exact average rounded once is its central answer. For float32 data it is the next reading;
- ``summed-in-type``: every addition rounded to the data type.

Bounds, per output position (u: unit roundoff, eta: smallest subnormal of a type; n: the input
elements of the window; S = sum |x|, P / N the sums of the positive terms and of the magnitudes of
the negative ones; q the exact average, (P - N) / count):

- a sum evaluated as any tree of additions whose deepest path passes through d additions is
  within gamma(d) S of the exact sum, gamma(d) = d u / (1 - d u) (Higham, Accuracy and Stability,
  (4.6)); and, every partial sum being a sum of some of the terms, within (n - 1) u (max(P, N) +
  gamma(d) S) (each of the n - 1 roundings is at most u of its partial sum; a finite answer's
  partial sums never passed the largest value of the accumulator, so max(P, N) no more than that).
  Additions never round in the subnormal range (a sum of floats that is subnormal is exact);
- which trees: what a sound reduction evaluates (:func:`depth`). It adds at most ``RUN`` terms one
  after another in its accumulator (a thread's own run: a pooling kernel's loop over a short
  window, a vector lane's share) and combines the runs pairwise (a tree across threads or
  lanes): d = n - 1 up to ``RUN`` terms, ``RUN`` - 1 + ceil(log2 ceil(n / RUN)) beyond. A float16
  running sum over a long window is no such reduction: once its step exceeds the terms it adds it
  stops moving (MIOpen #2109 and #2160, candle PR #3719, cubek PR #639 and ONNX Runtime PR #19868
  fixed exactly that as a bug), so its answer fails, labelled ``stalled-accumulator``
  (:func:`stalled`);
- float32 sums of windows of ``WIDE_SIM_FROM`` (2^8) elements or more (the accumulator of
  summed-wide, for float32 and float16 data): the worst case of 2^18 additions one after another is
  about 1.6 % of S / count, far wider than any real evaluation, so per output position the window's
  actual values are summed in float32 the ways real kernels do (:func:`simulated_wide_error`,
  :func:`wide_sums`: one after another in the window's order and reversed (np.add.accumulate is
  sequential; np.add.reduce is pairwise, and numpy's own sum is one more evaluation); 4 and 8 vector
  lanes, each one after another over a strided share, then combined pairwise and one after
  another (ONNX Runtime's CPU EP, SIMD); a grid-stride loop of 256 and 1024 threads, each over a
  strided share, then a tree; contiguous runs of 2^8 to 2^18 combined pairwise; pairwise; along the
  window's axes in the other order (column-major, each column first, each row first)), and the
  sum's error is at most ``SIM_FACTOR`` times the largest distance of those sums from the exact
  sum, plus a statistical floor, ``WIDE_FLOOR`` u max(P, N) sqrt(n / 3) (over the count). That
  floor does not depend on luck: a sum one after another rounds each of its n partial sums s_k,
  which never exceed max(P, N), by an error within u |s_k|; taken as independent and uniform, the
  errors add up to a random walk of standard deviation u sqrt(sum s_k^2 / 3) <= u max(P, N)
  sqrt(n / 3), whatever the order, so ``WIDE_FLOOR`` = 4 is four standard deviations of the order
  whose partial sums all sit at max(P, N) (real orders' partial sums stay far lower: the floor is
  tens of their standard deviations), and covers the orders the simulation happens to miss while
  their errors are random; systematic errors (every rounding one way: constant data, terms on a
  coarse grid) show in the simulated sums themselves, which every order of such data shares.
  ``tests/test_sum_bounds.py`` sums windows of 2^8 to 2^18 elements of cancelling, one-signed
  (growing partial sums), constant, coarse-grid and half-positive half-negative data in random
  orders, lane and thread counts and run lengths the simulation does not use, and checks every
  answer inside the bound. Shorter windows keep the worst case: there it is at most 2^8 u of S /
  count;
- float16 summed in float16 (``summed-in-type``): that worst case is far wider than any real
  evaluation on real data, so per output position the window's actual values are evaluated the ways
  real kernels do (:func:`simulated_error`: pairwise; runs of 8, 16, 32, 64 one after another,
  contiguous chunks in row-major window order, combined pairwise; windows of at most 64 elements
  one after another in scan, reversed and ``SIM_ORDERS`` fixed orders; float32 accumulation rounded
  once; each sum divided by the count or multiplied by its float16 reciprocal; the terms multiplied
  by that reciprocal first, then summed pairwise), and the bound is at most ``SIM_FACTOR`` times the
  largest distance of those answers from the exact average, plus one rounding of the largest
  partial sum any order reaches (u min(max(P, N), the largest float16) / count), two ULPs of the
  reference and eta;
- the division, or a multiplication by a rounded reciprocal: (2u + u^2) of the quotient, plus eta
  (and, where the reciprocal is subnormal, count * eta / 2 of the quotient more);
- summed wide: that in float32, then the rounding to the data type, where the count's reciprocal
  may be one of the data type too: (2u + u^2) of the data type and its eta more (DirectML on float16
  lands within an ULP of the exact average, not always within half of one);
- the answer is compared with the reference, the exact average rounded once: u of the data type
  times the average, plus eta / 2, more;
- summed wide, sharper (:func:`_answers`): rounding to nearest is monotone, so the last rounding of
  an evaluation (to the data type) maps the interval its value lies in before that rounding onto
  the values of the type between the roundings of its ends. That interval is q, known from the
  statistics (its float64 sums within n u S of the exact ones), widened by everything before the last
  rounding: the sum's error; the count's reciprocal (none where the count is a power of two whose
  reciprocal the type holds); the quotient in float32 and the type's reciprocal times the float32
  sum (float16 data); the sum rounded to float16 first, then times the float16 reciprocal (by a power
  of two that is the sum's own rounding). The answers lie between those two values of the type, and
  the bound is the smaller of that and the terms above: a window of one element divided by one has
  one answer, and a subnormal average one or two;
- a window whose terms all have one sign sums, in any order, to at least its largest term in
  magnitude (rounding to nearest is monotone): the average cannot come nearer to zero than that
  term over the count, rounded. All zeros for a window of positive values is no reading's answer.

The rule every reading's bound keeps (``tests/test_sum_bounds.py`` checks it on every case of the
profiles): at most ``SCALE_FRACTION`` of the output's scale, S / count (the window's mean
magnitude), plus the absolute terms of the types (a few of their smallest subnormals).

Overflow (open point ``overflow``): a partial sum of a sound reduction in a reading's accumulator
overflows to +inf (-inf) only where it can reach the least sum that rounds to infinity (the largest
value and half its ULP); NaN only where both can. How far it can reach (:func:`partial_reach`):
negative terms only lower a partial sum, so the positive terms bound it, at most P (1 + gamma(d));
where one term H dominates, every addition on its path rounds by at most the sum of the other
terms it joins, H + R' + min(R', d ULP / 2) with R' = (1 + gamma(d)) (P - H) (65504 with a few
small terms never overflows float16, whatever the order); and at most ``REACH_FLOOR`` (6) times
the random walk of the roundings of the sound reduction's partial sums (runs of ``RUN`` terms, each
partial sum no larger than its run's terms, then the pairwise levels), an overflow of a sum whose
terms stay below the largest value needing its roundings to add up far beyond their random walk.
Where a window's positive terms sum well past the largest value, a sound reduction does overflow:
the positive terms in one subtree, the negative ones in another (an order the reading allows;
``tests/test_sum_bounds.py`` checks every overflow of random sound float16 evaluations allowed).
Decided on the finite values alone: an input infinity gives that infinity in every order, and NaN
only with the opposite infinity or an overflow the other way.

Witnesses (``Operator.witnesses``, for ``onnx-dml-bench mutants`` only): :func:`witness_answers`
evaluates a window's own values in orders a sound reduction may take (the window's order and
reversed; positive terms first, negative first; largest and smallest magnitude first; the positive
and negative terms in turn by magnitude, with the terms the first absorbs right after it; pairwise;
the positive and the negative terms summed apart, then added, where the window is one run), each
by the sound reduction of its accumulator (one after another up to ``RUN`` terms, then runs of
``RUN`` combined pairwise: never a float16 sum one by one over more than 64 terms), in float32
(summed-wide) and, where summed-in-type is allowed, in the data type (also the terms multiplied by
the reciprocal first), each divided or multiplied by the rounded reciprocal. Each is a concrete
evaluation whose answer a passing mutant may have bit for bit; none is derived from the mutant.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..compare import NF_NAN, NF_NEG_INF, NF_POS_INF
from . import _block
from . import _onnx_pool as O

SUMMED_WIDE = "summed-wide"
SUMMED_IN_TYPE = "summed-in-type"
#: the accumulator of the summed-wide reading
WIDE = np.float32
#: elements per slice of batch x channel when the statistics are computed
_CHUNK = 1 << 21


@dataclass
class Stats:
    """Per output position (arrays of the output's shape, float64): ``n`` input elements in the
    window, ``c`` the divisor, ``S`` sum |x|, ``P`` / ``N`` the sums of the positive terms and of
    the magnitudes of the negative ones, ``top`` / ``bottom`` the largest and smallest term (-inf /
    +inf where none), ``pinf`` / ``ninf`` / ``nan`` how many +inf, -inf, NaN the window holds. Sums
    are over the finite terms only."""
    n: np.ndarray
    c: np.ndarray
    S: np.ndarray
    P: np.ndarray
    N: np.ndarray
    top: np.ndarray
    bottom: np.ndarray
    pinf: np.ndarray
    ninf: np.ndarray
    nan: np.ndarray
    #: float16 data: the largest distance of a simulated in-type evaluation from the exact average
    #: (:func:`simulated_error`; +inf where not simulated); None for other types
    sim: np.ndarray | None = None
    #: windows of at least ``WIDE_SIM_FROM`` elements: the largest distance of a simulated float32
    #: sum from the exact sum, divided by the count (:func:`simulated_wide_error`; +inf where not
    #: simulated); None where no window is that long
    wide: np.ndarray | None = None


def _coords(q: O.Axis) -> np.ndarray:
    """out x k: the input coordinate of each window element of axis ``q``."""
    return np.arange(q.out)[:, None] * q.s - q.begin + np.arange(q.k)[None, :] * q.d


def _reduce(arr: np.ndarray, axis: int, q: O.Axis, op, fill: float) -> np.ndarray:
    """Reduce ``arr`` over the windows of ``q`` along ``axis`` with ``op`` (window elements outside
    the input count as ``fill``). Loops over the window's elements, or over the windows where they
    are fewer (a long window: a global one, or 1 x 2^20)."""
    coords = _coords(q)
    valid = (coords >= 0) & (coords < q.n)
    clipped = np.clip(coords, 0, q.n - 1)
    if q.out < q.k:
        parts = []
        for i in range(q.out):
            t = np.take(arr, clipped[i], axis=axis)
            if not valid[i].all():
                shape = [1] * arr.ndim
                shape[axis] = q.k
                t = np.where(valid[i].reshape(shape), t, fill)
            parts.append(op.reduce(t, axis=axis, keepdims=True))
        return np.concatenate(parts, axis=axis)
    # arr with ``fill`` where windows reach outside it (padding no wider than the input): element
    # j of every window is then a strided view
    before, after = max(0, -int(coords.min())), max(0, int(coords.max()) - (q.n - 1))
    if before + after > q.n:
        shape = [1] * arr.ndim
        shape[axis] = q.out
        res = None
        for j in range(q.k):
            t = np.where(valid[:, j].reshape(shape), np.take(arr, clipped[:, j], axis=axis), fill)
            res = t if res is None else op(res, t, out=res)
        return res
    if before or after:
        widths = [(0, 0)] * arr.ndim
        widths[axis] = (before, after)
        arr = np.pad(arr, widths, constant_values=fill)
    res = None
    for j in range(q.k):
        first = int(coords[0, j]) + before
        sel = [slice(None)] * arr.ndim
        sel[axis] = slice(first, first + (q.out - 1) * q.s + 1, q.s)
        t = arr[tuple(sel)]
        res = t.copy() if res is None else op(res, t, out=res)
    return res


def _per_axis_product(counts: list[np.ndarray]) -> np.ndarray:
    out = counts[0].astype(np.float64)
    for cnt in counts[1:]:
        out = out[..., None] * cnt
    return out


def _stats(x: np.ndarray, ax: list, count_include_pad: int) -> Stats:
    n = _per_axis_product([((_coords(q) >= 0) & (_coords(q) < q.n)).sum(axis=1) for q in ax])
    c = n if not count_include_pad else _per_axis_product(
        [((_coords(q) >= -q.begin) & (_coords(q) < q.n + q.end)).sum(axis=1) for q in ax])
    lead = x.shape[:2]
    flat = x.reshape(-1, *x.shape[2:])
    block = _block.is_block(ax)
    if block:            # one window per axis, inside the input: its elements, reduced along a row
        flat = _block.elements(flat, ax)
    per = max(1, _CHUNK // max(1, int(np.prod(flat.shape[1:]))))
    parts = []
    for lo in range(0, flat.shape[0], per):
        xf = flat[lo:lo + per].astype(np.float64)
        fin = np.isfinite(xf)
        finite = bool(fin.all())
        z = xf if finite else np.where(fin, xf, 0.0)
        # only the sums the data can make other than zero (or other than S: one-signed data)
        has_pos, has_neg = bool((z > 0).any()), bool((z < 0).any())
        terms = [np.abs(z)]
        if has_pos and has_neg:
            terms += [np.maximum(z, 0.0), np.maximum(-z, 0.0)]
        if not finite:
            terms += [np.isposinf(xf), np.isneginf(xf), np.isnan(xf)]
        top, bottom = (xf, xf) if finite else (np.where(fin, xf, -np.inf), np.where(fin, xf, np.inf))
        sums = []
        for t in terms:                   # each on its own (no stacked copy of all of them)
            t = t.astype(np.float64, copy=False)
            if block:
                t = np.add.reduce(t, axis=1)
            else:
                for i, q in enumerate(ax):
                    t = _reduce(t, 1 + i, q, np.add, 0.0)
            sums.append(t)
        if block:
            top, bottom = np.maximum.reduce(top, axis=1), np.minimum.reduce(bottom, axis=1)
        else:
            for i, q in enumerate(ax):
                top = _reduce(top, 1 + i, q, np.maximum, -np.inf)
                bottom = _reduce(bottom, 1 + i, q, np.minimum, np.inf)
        zero = np.zeros_like(sums[0])
        S = sums[0]
        P, N = (sums[1], sums[2]) if has_pos and has_neg else (S, zero) if has_pos else (zero, S) if has_neg \
            else (zero, zero)
        counts = sums[-3:] if not finite else (zero, zero, zero)
        parts.append(((S, P, N, *counts), top, bottom))
    shape = (*lead, *(q.out for q in ax))
    sim = simulated_error(x, ax, c).reshape(shape) if x.dtype == np.float16 else None
    wide = None
    if int(np.prod([q.k for q in ax])) >= WIDE_SIM_FROM and np.finfo(x.dtype).bits <= np.finfo(WIDE).bits:
        wide = simulated_wide_error(x, ax, c).reshape(shape)
    sums = [np.concatenate([p[0][i] for p in parts]).reshape(shape) for i in range(6)]
    top = np.concatenate([p[1] for p in parts]).reshape(shape)
    bottom = np.concatenate([p[2] for p in parts]).reshape(shape)
    return Stats(np.broadcast_to(n, shape), np.broadcast_to(c, shape), sums[0], sums[1], sums[2],
                 top, bottom, sums[3], sums[4], sums[5], sim, wide)

#: the safety factor on the largest error of the simulated float16 evaluations
SIM_FACTOR = 4.0
#: the simulated runs: so many float16 additions one after another, the runs combined pairwise
SIM_RUNS = (8, 16, 32, 64)
#: windows of at most SIM_RUNS[-1] elements: so many fixed orders of them simulated besides the scan and
#: its reverse, each one addition after another
SIM_ORDERS = 8
#: window elements of one slice of batch x channel at most to simulate; beyond, the worst case
_SIM_MAX = 1 << 24


def _gather(flat: np.ndarray, ax: list) -> np.ndarray:
    """(rows x output positions, window elements in row-major window order) of ``flat`` (rows,
    *spatial): a view for one block window, else a copy with the padding as +0.0."""
    if _block.is_block(ax):
        return _block.elements(flat, ax)
    dims = len(ax)
    idx, mask = [], np.ones((1,) * 2 * dims, bool)
    for i, q in enumerate(ax):
        co = _coords(q)
        shape = [1] * 2 * dims
        shape[i], shape[dims + i] = q.out, q.k
        mask = mask & ((co >= 0) & (co < q.n)).reshape(shape)
        idx.append(np.clip(co, 0, q.n - 1).reshape(shape))
    g = flat[(slice(None), *idx)]                     # rows, *out, *k
    if not mask.all():
        g = np.where(mask, g, flat.dtype.type(0))
    return g.reshape(-1, int(np.prod([q.k for q in ax])))


def _pairwise(v: np.ndarray) -> np.ndarray:
    """Per row: a pairwise tree of additions in v's type (neighbours first; an odd one out + 0)."""
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = np.concatenate([v, np.zeros((*v.shape[:-1], 1), v.dtype)], axis=-1)
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def _runs(v: np.ndarray, run: int) -> np.ndarray:
    """Per row: contiguous chunks of ``run`` terms each added one after another, then pairwise."""
    m, n = v.shape
    t = -(-n // run)
    if t * run != n:
        v = np.concatenate([v, np.zeros((m, t * run - n), v.dtype)], axis=1)
    w = v.reshape(m, t, run)
    s = w[:, :, 0].copy()
    for j in range(1, run):
        s += w[:, :, j]
    return _pairwise(s)


def _evaluations(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (float16 window elements) and divisor ``c``: the largest distance from the
    exact average of the answers of the simulated sound evaluations (module text)."""
    n = v.shape[1]
    q = v.astype(np.float64).sum(axis=1) / c
    r = (1.0 / c).astype(np.float16)
    runs = [run for run in SIM_RUNS if run < n]
    if n <= SIM_RUNS[-1]:                             # the whole window one after another
        runs.append(min(run for run in SIM_RUNS if run >= n))
    sums = [_pairwise(v)] + [_runs(v, run) for run in runs]
    if n <= SIM_RUNS[-1]:                             # and in other fixed orders
        rng = np.random.default_rng(n)
        sums += [_runs(v[:, ::-1], n)] + [_runs(v[:, rng.permutation(n)], n) for _ in range(SIM_ORDERS)]
    answers = [(v.astype(np.float32).sum(axis=1, dtype=np.float32).astype(np.float64) / c).astype(np.float16),
               _pairwise(v * r[:, None])]
    for s in sums:
        answers += [(s.astype(np.float64) / c).astype(np.float16), s * r]
    err = np.zeros(v.shape[0])
    for a in answers:
        d = np.abs(a.astype(np.float64) - q)
        np.maximum(err, np.where(np.isnan(d), np.inf, d), out=err)
    return err


def simulated_error(x: np.ndarray, ax: list, c: np.ndarray) -> np.ndarray:
    """Per output position of float16 ``x`` (batch, channel, *spatial) over the windows ``ax`` with
    divisors ``c``: how far the answers of the simulated in-type evaluations (module text) lie from
    the exact average at most; +inf where a window holds a non-finite value, or where a slice is
    too large to simulate."""
    flat = x.reshape(-1, *x.shape[2:])
    positions = int(np.prod([q.out for q in ax]))
    n = int(np.prod([q.k for q in ax]))
    if positions * n > _SIM_MAX:
        return np.full(flat.shape[0] * positions, np.inf)
    cc = np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (positions,))
    cc = np.where(cc > 0, cc, 1.0)
    per = max(1, _CHUNK // max(1, positions * n))
    out = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for lo in range(0, flat.shape[0], per):
            v = _gather(flat[lo:lo + per], ax)
            fin = np.isfinite(v).all(axis=1)
            cr = np.tile(cc, v.shape[0] // positions)
            e = _evaluations(np.where(fin[:, None], v, np.float16(0)), cr)
            out.append(np.where(fin, e, np.inf))
    return np.concatenate(out)


#: windows of at least so many elements: their float32 sums are simulated (:func:`simulated_wide_error`);
#: shorter ones keep the worst case, already within about 2^8 u of the scale there
WIDE_SIM_FROM = 1 << 8
#: the simulated float32 reductions: vector lanes (each a strided share, one after another, then
#: combined pairwise and one after another), grid-stride threads (each a strided share, then a
#: tree), contiguous runs (one after another, then pairwise)
WIDE_LANES = (4, 8)
WIDE_THREADS = (256, 1024)
WIDE_RUNS = tuple(1 << k for k in range(8, 19, 2))
#: the statistical floor: so many times the random-walk scale u max(P, N) sqrt(n / 3) of a sum one
#: after another in float32 (module text)
WIDE_FLOOR = 4.0


def _padded(v: np.ndarray, k: int) -> np.ndarray:
    """Rows of ``v`` padded with +0.0 to a multiple of ``k`` elements."""
    m, n = v.shape
    t = -(-n // k) * k
    return v if t == n else np.concatenate([v, np.zeros((m, t - n), v.dtype)], axis=1)


def _scan(v: np.ndarray, axis: int = -1) -> np.ndarray:
    """The elements along ``axis`` added one after another in v's type (np.add.accumulate is
    sequential; np.add.reduce along a contiguous axis is not)."""
    return np.take(np.add.accumulate(v, axis=axis), -1, axis=axis)


def _strided(v: np.ndarray, lanes: int) -> np.ndarray:
    """(rows, lanes): lane j's share (elements j, j + lanes, ...) of each row added one after another."""
    return _scan(_padded(v, lanes).reshape(v.shape[0], -1, lanes), axis=1)


def wide_sums(v: np.ndarray, window: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """Per row of ``v`` (window elements in row-major window order, in the accumulator's type): the
    sums of the simulated reductions, by name (module text); with the window's ``window`` shape (two
    axes or more), also along its axes in the other order: column-major one after another, each
    column first (then the columns one after another), each row first (then the rows)."""
    n = v.shape[1]
    out = {"scan": _scan(v), "reversed": _scan(v[:, ::-1]), "pairwise": _pairwise(v),
           "numpy": np.add.reduce(v, axis=1)}
    for lanes in WIDE_LANES:
        if lanes < n:
            part = _strided(v, lanes)
            out[f"lanes{lanes}"] = _pairwise(part)
            out[f"lanes{lanes}-then-scan"] = _scan(part)
    for threads in WIDE_THREADS:
        if threads < n:
            out[f"grid-stride{threads}"] = _pairwise(_strided(v, threads))
    for run in WIDE_RUNS:
        if run < n:
            out[f"runs{run}"] = _pairwise(_scan(_padded(v, run).reshape(v.shape[0], -1, run), axis=2))
    if window is not None and len(window) > 1 and int(np.prod(window)) == n:
        last = int(window[-1])
        grid = v.reshape(v.shape[0], -1, last)
        out["column-major"] = _scan(np.ascontiguousarray(v.reshape(v.shape[0], *window).transpose(
            0, *range(len(window), 0, -1))).reshape(v.shape[0], n))
        out["columns-first"] = _scan(_scan(grid, axis=1))
        out["rows-first"] = _scan(_scan(grid, axis=2))
    return out


def simulated_wide_error(x: np.ndarray, ax: list, c: np.ndarray) -> np.ndarray:
    """Per output position of ``x`` (batch, channel, *spatial; float32 or narrower) over the windows
    ``ax`` with divisors ``c``: how far the simulated float32 sums (:func:`wide_sums`) lie from the
    exact sum at most, divided by the count; +inf where a window holds a non-finite value or a sum
    overflows, or where a slice is too large to simulate."""
    flat = x.reshape(-1, *x.shape[2:])
    positions = int(np.prod([q.out for q in ax]))
    n = int(np.prod([q.k for q in ax]))
    if positions * n > _SIM_MAX:
        return np.full(flat.shape[0] * positions, np.inf)
    cc = np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (positions,))
    cc = np.where(cc > 0, cc, 1.0)
    per = max(1, _CHUNK // max(1, positions * n))
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, flat.shape[0], per):
            g = _gather(flat[lo:lo + per], ax)
            for a in range(0, g.shape[0], max(1, _CHUNK // n)):
                v = g[a:a + max(1, _CHUNK // n)].astype(WIDE)
                exact = v.astype(np.float64).sum(axis=1)
                err = np.zeros(v.shape[0])
                for s in wide_sums(v, tuple(q.k for q in ax)).values():
                    d = np.abs(s.astype(np.float64) - exact)
                    np.maximum(err, np.where(np.isnan(d), np.inf, d), out=err)
                out.append(err)
    err = np.concatenate(out)
    return err / np.tile(cc, err.size // positions)


# ------------------------------------------------------------------------------------------------
# Witnesses: concrete evaluations the readings allow (``Operator.witnesses``, for ``mutants``)
# ------------------------------------------------------------------------------------------------

def _sound(v: np.ndarray) -> np.ndarray:
    """Per row of ``v``: the sound reduction of its elements in that order, in v's type (one after
    another up to ``RUN`` terms; beyond, contiguous runs of ``RUN`` one after another, combined
    pairwise: :func:`depth`)."""
    run = RUN[np.finfo(v.dtype).bits]
    if v.shape[1] <= run:
        return _scan(v)
    return _pairwise(_scan(_padded(v, run).reshape(v.shape[0], -1, run), axis=2))


#: windows of at most so many elements: also the orders by magnitude (each window sorted)
WITNESS_SORTED = 1 << 12


def _order(key: np.ndarray) -> np.ndarray:
    """Per row, the stable order of ``key`` (ties keep the window order)."""
    return np.argsort(key, axis=1, kind="stable")


def witness_orders(g: np.ndarray) -> dict[str, np.ndarray | None]:
    """The orders of each row of ``g`` (window elements in row-major window order) the witnesses
    sum in, as index arrays (None: the window's order): reversed; positive terms first, negative
    first; and, for windows of at most ``WITNESS_SORTED`` elements, largest and smallest magnitude
    first, and the positive and the negative terms, each by magnitude largest first, taken in turn
    (a partial sum that stays small), led by either sign, the zeros last."""
    m, k = g.shape
    out: dict[str, np.ndarray | None] = {
        "scan": None, "reversed": np.broadcast_to(np.arange(k)[::-1], g.shape),
        "positives-first": _order(-(g > 0).astype(np.int8)), "negatives-first": _order(-(g < 0).astype(np.int8))}
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
    out = {"pairwise": _pairwise(v)}
    for name, order in orders.items():
        out[name] = _sound(v if order is None else np.take_along_axis(v, order, axis=1))
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
        out["signs-apart"] = _scan(np.where(v > 0, v, zero)) + _scan(np.where(v < 0, v, zero))
    return out


def gather_at(x: np.ndarray, ax: list, at: np.ndarray) -> np.ndarray:
    """(len(at), window elements in row-major window order, the padding +0.0) of ``x`` (batch,
    channel, *spatial) for the output positions ``at`` (flat indices into batch x channel x the
    output positions of the windows ``ax``)."""
    outs = [q.out for q in ax]
    row, pos = np.divmod(np.asarray(at, np.int64), int(np.prod(outs)))
    flat = x.reshape(-1, *x.shape[2:])
    idx, mask = [row.reshape(-1, *(1,) * len(ax))], np.ones((len(row),) + (1,) * len(ax), bool)
    for i, (q, o) in enumerate(zip(ax, np.unravel_index(pos, outs))):
        shape = [1] * len(ax)
        shape[i] = q.k
        co = (o * q.s - q.begin).reshape(-1, *(1,) * len(ax)) + (np.arange(q.k) * q.d).reshape(1, *shape)
        mask = mask & (co >= 0) & (co < q.n)
        idx.append(np.clip(co, 0, q.n - 1))
    g = flat[tuple(idx)]
    return np.where(mask, g, flat.dtype.type(0)).reshape(len(row), -1)


def witness_answers(g: np.ndarray, c: np.ndarray, in_type: bool) -> list[tuple[str, np.ndarray]]:
    """(name, answers) of the witnesses of AveragePool windows ``g`` (rows of window elements in
    row-major window order, in the data type, the padding +0.0) with divisors ``c``: per row, the
    average of each order of :func:`witness_sums` in each accumulator a reading allows (float32 for
    summed-wide; the data type too where ``in_type``), divided by the count or multiplied by its
    rounded reciprocal the ways :func:`bound` covers; in the data type also the terms multiplied by
    the reciprocal first, then summed (a simulated evaluation of summed-in-type)."""
    dtype = g.dtype.type
    cc = np.where(np.asarray(c, np.float64) > 0, np.asarray(c, np.float64), 1.0)
    accs = [accumulator(dtype, SUMMED_WIDE)] + ([dtype] if in_type and dtype != accumulator(dtype, SUMMED_WIDE) else [])
    out = []
    orders = witness_orders(g)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for acc in accs:
            v = g.astype(acc)
            a = np.dtype(acc).name
            r_acc = (1.0 / cc).astype(acc)
            sums = witness_sums(v, orders)
            if acc == dtype and np.finfo(acc).bits < np.finfo(WIDE).bits:
                # the terms times the reciprocal, then pairwise: the simulated evaluation of that kind
                sums["reciprocal-first/pairwise"] = _pairwise(v * r_acc[:, None])
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


def stats(x: np.ndarray, a: O.Attrs) -> Stats:
    """The window statistics of AveragePool ``a`` on ``x`` (the windows the ONNX text defines)."""
    ax, _ = O.axes(a, x.shape[2:])
    return _stats(x, ax, a.count_include_pad)


def shifted_stats(x: np.ndarray, a: O.Attrs, split) -> Stats:
    """The window statistics of the shifted reading ``split`` of open point same-negative-pad
    (``_onnx_pool.shifted_splits``: a negative pad drops that many input elements at its end)."""
    spatial = x.shape[2:]
    crop = [slice(-b if b < 0 else 0, n + e if e < 0 else n) for (b, e), n in zip(split, spatial)]
    xc = x[(slice(None), slice(None), *crop)]
    pads = tuple(max(b, 0) for b, _ in split) + tuple(max(e, 0) for _, e in split)
    return stats(xc, dataclasses.replace(a, auto_pad="NOTSET", pads=pads, ceil_mode=0))


def unit(dtype) -> tuple[float, float]:
    """(unit roundoff, smallest subnormal) of a float type."""
    fi = np.finfo(dtype)
    return float(fi.eps) / 2, float(fi.smallest_subnormal)


def _compact(a) -> np.ndarray:
    """The smallest array that broadcasts to ``a`` (the statistics' counts are broadcast views of
    the windows' spatial counts): what depends on the counts alone is computed once per window."""
    a = np.asarray(a)
    return a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(a.strides, a.shape))]


def _counts(st: Stats) -> tuple[np.ndarray, np.ndarray]:
    """(n, c) of ``st``, compact (:func:`_compact`), the divisor 1 where it is 0."""
    c = _compact(st.c)
    return _compact(st.n), np.where(c > 0, c, 1.0)


def accumulator(dtype, reading: str):
    """The type a reading sums ``dtype`` data in."""
    return dtype if reading == SUMMED_IN_TYPE or np.finfo(dtype).bits >= np.finfo(WIDE).bits else WIDE


def readings(dtype) -> tuple[str, ...]:
    """The readings that differ for ``dtype``: both below float32, one (summed-wide) from float32."""
    return (SUMMED_WIDE, SUMMED_IN_TYPE) if np.finfo(dtype).bits < np.finfo(WIDE).bits else (SUMMED_WIDE,)


#: the longest run of additions one after another that a sound reduction makes in an accumulator
#: of so many bits (a thread's loop over a short window; a vector lane's share of a long one, as
#: ONNX Runtime's CPU EP sums float32 four lanes wide); longer sums are combined pairwise
RUN = {16: 64, 32: 1 << 18, 64: 1 << 40}
#: no reading's bound exceeds this fraction of the output's scale (S / count), absolute terms aside
SCALE_FRACTION = 1 / 12


def depth(n, acc) -> np.ndarray:
    """The additions the deepest term of a sound reduction of ``n`` terms in accumulator type
    ``acc`` passes through: n - 1 up to ``RUN`` terms (one after another), then runs of ``RUN``
    combined pairwise."""
    run = RUN[np.finfo(acc).bits]
    n = np.maximum(np.asarray(n, dtype=np.float64), 1.0)
    runs = np.ceil(n / run)
    with np.errstate(divide="ignore"):
        tree = np.ceil(np.log2(np.maximum(runs, 1.0)))
    return np.where(n <= run, n - 1, run - 1 + tree)


def gamma(d, u: float) -> np.ndarray:
    """gamma(d) = d u / (1 - d u): a term's relative error after d roundings (d u < 1 here: the
    depths of :func:`depth` keep it below 0.05)."""
    d = np.asarray(d, dtype=np.float64)
    return d * u / (1 - d * u)


def sum_error(st: Stats, acc) -> np.ndarray:
    """Per output position: how far a sound reduction's sum of the window in ``acc`` can be from
    the exact sum, divided by the count (module text): the worst case, and in float32, where the
    window's sums were simulated, at most ``SIM_FACTOR`` times the largest simulated error plus the
    statistical floor."""
    u_a, _ = unit(acc)
    n, c = _counts(st)
    g = gamma(depth(n, acc), u_a) * st.S
    k = np.maximum(n - 1, 0)
    # a finite answer's partial sums never passed the largest value of the accumulator
    worst = np.minimum(g, k * u_a * np.minimum(np.maximum(st.P, st.N) + g, float(np.finfo(acc).max))) / c
    if st.wide is None or np.dtype(acc) != np.dtype(WIDE):
        return worst
    sim = SIM_FACTOR * st.wide + WIDE_FLOOR * u_a * np.maximum(st.P, st.N) * (np.sqrt(np.maximum(n, 1) / 3) / c)
    return np.minimum(worst, np.where(np.isfinite(sim), sim, np.inf))


def _subnormal_reciprocal(c: np.ndarray, dtype) -> np.ndarray:
    """The relative error of the count's reciprocal in ``dtype`` beyond u, where it is subnormal
    there (float16: counts over 16,384 that are no power of two): half its smallest subnormal."""
    fi = np.finfo(dtype)
    return np.where(c * float(fi.tiny) > 1, c * float(fi.smallest_subnormal) / 2, 0.0)


#: output positions at most whose bounds are computed at once (a larger output in slices: the
#: bounds' float64 temporaries of a layer of 2^26 outputs would take gigabytes)
_SLICE = 1 << 22


def _sliced(fn):
    """``fn(st, *arrays, ...)`` (elementwise over output positions: statistics and arrays of the
    output's shape, other arguments passed as they are) computed over slices of the output's
    largest axis where it holds more than ``_SLICE`` positions; its results (an array or a tuple of
    arrays) put together."""
    def run(st: Stats, *args):
        shape = np.shape(st.S)
        total = int(np.prod(shape))
        if total <= _SLICE or not shape:
            return fn(st, *args)
        axis = int(np.argmax(shape))
        step = max(1, _SLICE // (total // shape[axis]))
        parts = []
        for lo in range(0, shape[axis], step):
            cut = (slice(None),) * axis + (slice(lo, lo + step),)
            sub = Stats(*(None if getattr(st, f.name) is None else np.broadcast_to(getattr(st, f.name), shape)[cut]
                          for f in dataclasses.fields(Stats)))
            parts.append(fn(sub, *(a[cut] if isinstance(a, np.ndarray) and np.shape(a) == shape else a for a in args)))
        if isinstance(parts[0], tuple):
            return tuple(np.concatenate([p[i] for p in parts], axis=axis) for i in range(len(parts[0])))
        return np.concatenate(parts, axis=axis)
    run.__doc__, run.__name__, run.__wrapped__ = fn.__doc__, fn.__name__, fn
    return run


def _reciprocal_error(c: np.ndarray, dtype) -> np.ndarray:
    """The relative error of the count's reciprocal rounded to ``dtype``: none where the count is a
    power of two whose reciprocal ``dtype`` holds (subnormal or not), else u and, where it is
    subnormal, :func:`_subnormal_reciprocal` more."""
    u, eta = unit(dtype)
    m, _ = np.frexp(c)
    exact = (m == 0.5) & (1.0 / c >= eta)
    return np.where(exact, 0.0, u + _subnormal_reciprocal(c, dtype))


def _answers(st: Stats, dtype, acc, s_err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) answer of the summed-wide reading per output position: the exact average
    q = (P - N) / count, the error of everything before the last rounding to ``dtype`` (the sum, the
    quotient in the accumulator, the count's reciprocal, the sum rounded to the type first), and the
    ends of that interval rounded to ``dtype`` (float64; +-inf where they leave its range)."""
    u_t, eta_t = unit(dtype)
    u_a, eta_a = unit(acc)
    n, c = _counts(st)
    with np.errstate(invalid="ignore", over="ignore"):
        q = (st.P - st.N) / c
        aq = np.abs(q) + s_err
        # q from the float64 sums of the statistics: within n u64 S of the exact sum, and two roundings
        eps_q = (np.maximum(n, 1) * 2.0 ** -52 / c) * st.S + 2.0 ** -51 * np.abs(q)
        if np.finfo(acc).bits == np.finfo(dtype).bits:
            # the sum divided, or multiplied by the reciprocal in the type: then the last rounding
            e = s_err + _reciprocal_error(c, acc) * aq
        else:
            rec_t = _reciprocal_error(c, dtype)
            # the quotient in the accumulator (any of its ways), then rounded to the type
            e_a = s_err + (2 * u_a + u_a * u_a + _subnormal_reciprocal(c, acc)) * aq + eta_a
            # times the type's reciprocal, the product in the accumulator, then rounded to the type
            e_b = s_err + (rec_t + 2 * u_a) * (1 + rec_t) * aq + eta_a
            # the sum rounded to the type first, times the type's reciprocal (exact in the
            # accumulator), rounded: by a power of two that is the sum's rounding itself, scaled
            # (half an eta more where the result is subnormal)
            e_c = np.where(rec_t == 0, s_err, s_err + (u_t + rec_t + u_t * rec_t) * aq) + eta_t / 2
            e = np.maximum(np.maximum(e_a, e_b), e_c)
        e = (e + eps_q) * (1 + 2.0 ** -40) + 2.0 ** -50 * np.abs(q)
        lo = (q - e).astype(dtype).astype(np.float64)
        hi = (q + e).astype(dtype).astype(np.float64)
    return lo, hi


@_sliced
def bound(st: Stats, ref: np.ndarray, dtype, reading: str) -> tuple[np.ndarray, np.ndarray]:
    """(below, above): per output position, how far below and above ``ref`` (the exact average
    rounded once to ``dtype``) an answer of ``reading`` can lie (``compare.compare_output``)."""
    acc = accumulator(dtype, reading)
    wider = np.finfo(acc).bits > np.finfo(dtype).bits
    u_t, eta_t = unit(dtype)
    u_a, eta_a = unit(acc)
    n, c = _counts(st)
    r = np.asarray(ref, dtype=np.float64)
    y = np.abs(np.where(np.isfinite(r), r, 0.0))
    q_hi = y * (1 + u_t) + eta_t                      # |exact average| is at most this
    s_err = sum_error(st, acc)                        # the sum (divided by the count)
    e = s_err + (2 * u_a + u_a * u_a + _subnormal_reciprocal(c, acc)) * (q_hi + s_err) + eta_a
    if wider:
        # the count's reciprocal in the data type and the rounding of the result to it
        e = e + (2 * u_t + u_t * u_t + _subnormal_reciprocal(c, dtype)) * (q_hi + e) + eta_t
    e = e + u_t * q_hi + eta_t / 2                    # the reference: the exact average, rounded once
    if reading == SUMMED_IN_TYPE and not wider and st.sim is not None:
        # the envelope of the simulated evaluations, widened (module text)
        with np.errstate(over="ignore"):
            ulp = np.spacing(y.astype(dtype)).astype(np.float64)
        top = np.minimum(np.maximum(st.P, st.N), float(np.finfo(dtype).max))   # a finite answer's partial sums
        sim = SIM_FACTOR * st.sim + u_t * top / c + 2 * ulp + eta_t
        e = np.minimum(e, np.where(np.isfinite(sim), sim, np.inf))
    below, above = e.copy(), e.copy()
    clean = (n > 0) & (st.pinf == 0) & (st.ninf == 0) & (st.nan == 0)
    if reading == SUMMED_WIDE:
        # the answers lie between the roundings of the ends of the interval the value before the last
        # rounding lies in (rounding is monotone): no separate term for the last rounding and the
        # reference's own (module text)
        lo, hi = _answers(st, dtype, acc, s_err)
        ok = clean & np.isfinite(r) & np.isfinite(lo) & np.isfinite(hi)
        with np.errstate(invalid="ignore"):
            below = np.where(ok, np.minimum(below, np.maximum(r - lo, 0.0)), below)
            above = np.where(ok, np.minimum(above, np.maximum(hi - r, 0.0)), above)
    # one-signed windows: the sum is at least the largest term in magnitude
    shrink = (1 - u_a) ** 2 * ((1 - u_t) ** 2 if wider else 1.0)      # the same roundings, downward
    slack = eta_a + (eta_t if wider else 0.0)
    rf = np.where(np.isfinite(r), r, 0.0)
    with np.errstate(invalid="ignore"):
        pos, neg = clean & (st.bottom >= 0), clean & (st.top <= 0)
        lo_pos = np.maximum(np.where(pos, st.top, 0.0) / c * shrink - slack, 0.0)
        lo_neg = np.maximum(np.where(neg, -st.bottom, 0.0) / c * shrink - slack, 0.0)
    below = np.where(pos, np.minimum(below, np.maximum(rf - lo_pos, 0.0)), below)
    above = np.where(neg, np.minimum(above, np.maximum(-lo_neg - rf, 0.0)), above)
    return below, above


@_sliced
def stalled(st: Stats, ref: np.ndarray, got: np.ndarray, dtype) -> np.ndarray:
    """Per output position: is ``got`` where a running sum in ``dtype`` (every addition rounded to
    the data type, one after another over the whole window) can land, and the window longer than
    a sound reduction's run (so no sound reduction reaches it there)? Only for types below float32
    (a running sum in the data type is a reading of theirs only)."""
    if SUMMED_IN_TYPE not in readings(dtype):
        return np.zeros(np.shape(ref), bool)
    u_t, eta_t = unit(dtype)
    n, c = _counts(st)
    r = np.asarray(ref, dtype=np.float64)
    g = np.asarray(got, dtype=np.float64)
    y = np.abs(np.where(np.isfinite(r), r, 0.0))
    seq = (np.maximum(n - 1, 0) * u_t / c) * st.S
    e = seq + (2 * u_t + u_t * u_t) * (y + seq) + u_t * y + 2 * eta_t
    clean = (n > 0) & (st.pinf == 0) & (st.ninf == 0) & (st.nan == 0)
    shrink = (1 - u_t) ** 2
    with np.errstate(invalid="ignore"):
        near = np.isfinite(g) & (np.abs(g - r) <= e)
        # a running sum of one sign keeps at least its largest term, as every order does
        near &= ~(clean & (st.bottom >= 0) & (g < st.top / c * shrink - eta_t))
        near &= ~(clean & (st.top <= 0) & (g > st.bottom / c * shrink + eta_t))
    return near & (n > RUN[np.finfo(dtype).bits])


def envelope(st: Stats, ref: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The bound every reading stays inside (the widest of them)."""
    pairs = [bound(st, ref, dtype, r) for r in readings(dtype)]
    return np.maximum.reduce([p[0] for p in pairs]), np.maximum.reduce([p[1] for p in pairs])


def threshold(acc) -> float:
    """The least exact sum that rounds to infinity in ``acc``: the largest value and half its ULP."""
    fmax = np.finfo(acc).max
    return float(fmax) + (float(fmax) - float(np.nextafter(fmax, np.zeros((), fmax.dtype)))) / 2


#: the overflow of a partial sum: so many times the random-walk scale of its rounding errors
#: (:func:`partial_reach`; the statistical floor of the float32 sums, ``WIDE_FLOOR``, is the same
#: argument)
REACH_FLOOR = 6.0


def partial_reach(st: Stats, acc) -> tuple[np.ndarray, np.ndarray]:
    """(up, down): per output position, how far above zero (below zero) a partial sum of a sound
    reduction in ``acc`` can reach (while no partial sum has overflowed). Negative terms only lower
    a partial sum (rounding is monotone), so the positive terms bound it (the same below for the
    negative ones), each computed sum of them within its terms' sum P and:

    - gamma(d) P (the worst case);
    - where one term H dominates: along the path from H to a partial sum, each addition joins a sum
      of other terms (at most R' = (1 + gamma(d)) (P - H) together) and rounds by at most that sum
      and at most half an ULP of the largest value: H + R' + min(R', d ULP / 2);
    - ``REACH_FLOOR`` times the random-walk scale of the roundings (each addition's error uniform
      within u of its result, independent): u sqrt(sum W^2 / 3) over the additions' results W, at
      most P (H R^2 / 2 + sum over the pairwise levels l of min(P, 2^l R H)) for runs of R terms
      one after another combined pairwise. A long window's overflow needs its roundings to add up
      far beyond their random walk; a short one's scale is its worst case."""
    u, _ = unit(acc)
    n, _ = _counts(st)
    d = depth(n, acc)
    g = gamma(d, u)
    fmax = np.finfo(acc).max
    half_ulp = (float(fmax) - float(np.nextafter(fmax, np.zeros((), fmax.dtype)))) / 2
    n = np.maximum(np.asarray(n, np.float64), 1.0)
    run = np.minimum(n, float(RUN[np.finfo(acc).bits]))
    levels = np.ceil(np.log2(np.ceil(n / run)))
    out = []
    with np.errstate(invalid="ignore", over="ignore"):
        for total, h in ((st.P, np.where(np.isfinite(st.top), st.top, 0.0)),
                         (st.N, np.where(np.isfinite(st.bottom), -st.bottom, 0.0))):
            h = np.maximum(h, 0.0)
            rest = (1 + g) * np.maximum(total - h, 0.0)
            reach = np.minimum(total * (1 + g), h + rest + np.minimum(rest, d * half_ulp))
            squares = h * run * run / 2
            for lev in range(1, int(levels.max(initial=0)) + 1):
                squares = squares + np.where(lev <= levels, np.minimum(total, 2.0 ** lev * run * h), 0.0)
            walk = total + REACH_FLOOR * u * np.sqrt(total * squares / 3)
            out.append(np.minimum(reach, walk))
    return out[0], out[1]


@_sliced
def overflow(st: Stats, dtype, reading: str) -> tuple[np.ndarray, np.ndarray]:
    """(allowed, possible): per output position, the non-finite answers ``reading`` allows there
    (a ``compare.compare_output`` ``nonfinite_ok`` mask; the exact answer's own non-finite value
    included), and whether its sum can overflow there at all."""
    acc = accumulator(dtype, reading)
    pos_over, neg_over = (reach >= threshold(acc) for reach in partial_reach(st, acc))
    has_nan, pinf, ninf = st.nan > 0, st.pinf > 0, st.ninf > 0
    pos, neg = pinf | pos_over, ninf | neg_over
    allowed = (np.where(pos & ~ninf & ~has_nan, NF_POS_INF, 0) | np.where(neg & ~pinf & ~has_nan, NF_NEG_INF, 0)
               | np.where(has_nan | (pos & neg), NF_NAN, 0)).astype(np.uint8)
    return allowed, pos_over | neg_over
