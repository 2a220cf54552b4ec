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
  Where a float32 window is one block of the input (a global average of float32 data, or of
  float16 data summed in float32), the floor
  is ``WALK_FLOOR`` (32: four standard deviations, and eight for kernels whose orders only resemble
  these) times the scale of the evaluations real kernels make of the window's own values
  (``Stats.walk``,
  ``_sum_evaluations.realistic_walk``): the largest root of the sum of the squares of the
  additions' results, over one after another row-major, reversed, column-major and reversed; tile
  after tile (squares of 8 to 64 elements a side, and rectangles); strided lanes (4 to 1,024, each
  one after another, then combined pairwise or one after another); contiguous runs of 2^8, 2^12 and 2^16
  (likewise). Partial sums of iid data grow like the square root of their count in these orders,
  not like the count, so on a 1024x1024 window of uniform [-64, 64) values the floor is about
  1/46 of the one above, and a global average missing one row or column fails (at most the one
  above: the smaller of the two). An order that
  none of these resembles (the terms sorted, one sign first) can have partial sums far larger, up
  to the walk of every order and tree (``_sum_evaluations.walk``): no kernel sums that way, and
  such an answer may fail. The bound without the simulated sums (:func:`bound_for`) takes the
  row-major order's scale alone (``Stats.walk_lower``, one of them, so at most the scale), and
  for the simulated term the row-major float32 sum's distance alone (``Stats.wide_lower``).
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

Computed where read (:class:`Deferred`): the float16 in-type simulation (``Stats.sim``) is made
when a bound of summed-in-type is asked for (an answer the reference's reading fails, a fixture's
tolerance, a diagnosis), not for every float16 judgement; the float32 long-window simulation
(``Stats.wide``) likewise, and, to judge one answer by the reference's bound (:func:`bound_for`),
only at the positions where it can change a statistic of the comparison: the bound with ``wide``
0 (the statistical floor alone) is below the bound at every position, so an answer within it there
agrees, and ``compare.refined_bound`` computes the exact bound where an answer leaves it and, in
decreasing order of the ratio over it, until no other position can hold the largest ratio. The
statistics of every comparison are those of the whole bound (``tests/ops/test_deferred_sums.py``).

Witnesses (``Operator.witnesses``, for ``onnx-dml-bench mutants`` only): :func:`witness_answers`
evaluates a window's own values in orders a sound reduction may take (the window's order and
reversed; positive terms first, negative first; largest and smallest magnitude first; the positive
and negative terms in turn by magnitude, with the terms the first absorbs right after it; pairwise;
the positive and the negative terms summed apart, then added, where the window is one run; and
``WITNESS_RANDOM`` fixed random orders, seeded by the window's size, each also by the trees of the
simulated float16 evaluations: pairwise, and runs of 8 to 64 terms shorter than the accumulator's
run), each
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
from . import _bound_fused
from . import _onnx_pool as O
from . import _stats_fused as _fused
from ._sum_evaluations import CHUNK as _CHUNK
from ._sum_evaluations import coords as window_coords
from ._sum_evaluations import (SIM_FACTOR, WALK_FLOOR, WIDE, WIDE_FLOOR, WIDE_SIM_FROM, simulated_error,
                               simulated_wide_error, simulated_wide_error_at, realistic_walk, row_major_walk,
                               scan_error)

SUMMED_WIDE = "summed-wide"
SUMMED_IN_TYPE = "summed-in-type"


class Deferred:
    """A statistic computed when first read: the simulated evaluations (``sim``, ``wide``) cost many
    passes over the windows, and most judgements never read them (``sim`` serves the reading
    summed-in-type alone, asked for only where the reference's reading fails; ``wide`` the
    reference's bound, which :func:`bound_for` needs at a few positions only). ``at``: where given,
    the statistic at some flat output positions alone (the same values), kept once computed."""

    def __init__(self, fn, at=None, size: int = 0):
        self._fn, self._value, self._at = fn, None, at
        self._done = self._vals = None
        self._size = size

    def get(self) -> np.ndarray:
        if self._fn is not None:
            self._value, self._fn = self._fn(), None
        return self._value

    @property
    def ready(self) -> bool:
        return self._fn is None

    def map(self, f, flat: bool = False) -> "Deferred":
        """``f`` of the statistic, deferred too; ``flat``: ``f`` keeps every value at its flat
        position (a reshape), so the positions of :meth:`at` stay the same."""
        return Deferred(lambda: f(self.get()), self.at if flat and self._at is not None else None, self._size)

    def at(self, idx: np.ndarray) -> np.ndarray:
        """The statistic at the flat output positions ``idx``: read from the whole where it was
        computed, else computed there alone (and kept for the next question)."""
        idx = np.asarray(idx, np.int64).reshape(-1)
        if self.ready or self._at is None:
            return np.asarray(self.get()).reshape(-1)[idx]
        if self._done is None:
            self._done, self._vals = np.zeros(self._size, bool), np.zeros(self._size)
        need = idx[~self._done[idx]]
        if need.size:
            need = np.unique(need)
            self._vals[need] = self._at(need)
            self._done[need] = True
        return self._vals[idx]


def raw(st: "Stats", name: str):
    """The field ``name`` of ``st`` as stored (a :class:`Deferred` not computed)."""
    return object.__getattribute__(st, name)


def with_fields(st: "Stats", **changes) -> "Stats":
    """``st`` with ``changes``, every other field as stored (no deferred one computed)."""
    return Stats(**{f.name: changes[f.name] if f.name in changes else raw(st, f.name) for f in dataclasses.fields(Stats)})


def pending(st: "Stats", name: str) -> bool:
    """Is the field ``name`` of ``st`` deferred and not computed yet?"""
    v = raw(st, name)
    return isinstance(v, Deferred) and not v.ready


@dataclass
class Stats:
    """Per output position (arrays of the output's shape, float64 but ``top`` and ``bottom``):
    ``n`` input elements in the window, ``c`` the divisor, ``S`` sum |x|, ``P`` / ``N`` the sums of
    the positive terms and of the magnitudes of the negative ones, ``top`` / ``bottom`` the largest
    and smallest term (-inf / +inf where none; float32 for float16 and float32 data, float64 for
    float64, which holds each term exactly: every expression that reads them mixes them with
    float64 arrays, so they enter it exactly),
    ``pinf`` / ``ninf`` / ``nan`` how many +inf, -inf, NaN the window holds. Sums are over the
    finite terms only."""
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
    #: float32 and float16 windows that are one block of the input (``_block``) of at least ``WIDE_SIM_FROM``
    #: elements: the random-walk scale of the float32 sums real kernels make of the window
    #: (``_sum_evaluations.realistic_walk``; +inf where a window holds a non-finite value); None
    #: elsewhere (the scale is max(P, N) sqrt(n / 3) there)
    walk: np.ndarray | None = None
    #: where ``walk`` is: that of the window one after another in row-major order alone, at most
    #: ``walk`` (one of its evaluations): the scale of the bound without the simulated sums
    #: (:func:`bound_for`)
    walk_lower: np.ndarray | None = None
    #: where ``walk`` is: the distance of one of the simulated sums (one after another, row-major)
    #: from the exact sum, divided by the count, at most ``wide`` (:func:`bound_for`)
    wide_lower: np.ndarray | None = None

    def __getattribute__(self, name):
        v = object.__getattribute__(self, name)
        if type(v) is Deferred:          # computed where first read, then kept
            v = v.get()
            object.__setattr__(self, name, v)
        return v


def _reduce(arr: np.ndarray, axis: int, q: O.Axis, op, fill: float, out: np.ndarray | None = None) -> np.ndarray:
    """Reduce ``arr`` over the windows of ``q`` along ``axis`` with ``op`` (window elements outside
    the input count as ``fill``), into ``out`` where given. Loops over the window's elements (the
    first two combined as the result is made: op(e0, e1), then op(that, e2), ...), or over the
    windows where they are fewer (a long window: a global one, or 1 x 2^20)."""
    coords = window_coords(q)
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
        return _into(np.concatenate(parts, axis=axis), out)
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
        return _into(res, out)
    if before or after:
        widths = [(0, 0)] * arr.ndim
        widths[axis] = (before, after)
        arr = np.pad(arr, widths, constant_values=fill)
    def element(j):
        first = int(coords[0, j]) + before
        sel = [slice(None)] * arr.ndim
        sel[axis] = slice(first, first + (q.out - 1) * q.s + 1, q.s)
        return arr[tuple(sel)]

    if q.k == 1:
        return _into(element(0).copy(), out)
    res = op(element(0), element(1), out=out)
    for j in range(2, q.k):
        op(res, element(j), out=res)
    return res


def _into(res: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``res``, copied into ``out`` where given."""
    if out is None:
        return res
    out[...] = res
    return out


def _per_axis_product(counts: list[np.ndarray]) -> np.ndarray:
    out = counts[0].astype(np.float64)
    for cnt in counts[1:]:
        out = out[..., None] * cnt
    return out


def counts(ax: list) -> np.ndarray:
    """Per output position of the windows ``ax`` (over the spatial axes): how many of its elements
    lie inside the input (``Stats.n``, before it is broadcast over batch x channel)."""
    return _per_axis_product([((window_coords(q) >= 0) & (window_coords(q) < q.n)).sum(axis=1) for q in ax])


def _stats(x: np.ndarray, ax: list, count_include_pad: int) -> Stats:
    n = counts(ax)
    c = n if not count_include_pad else _per_axis_product(
        [((window_coords(q) >= -q.begin) & (window_coords(q) < q.n + q.end)).sum(axis=1) for q in ax])
    lead = x.shape[:2]
    flat = x.reshape(-1, *x.shape[2:])
    block = _block.is_block(ax)
    if block:            # one window per axis, inside the input: its elements, reduced along a row
        flat = _block.elements(flat, ax)
    per = max(1, _CHUNK // max(1, int(np.prod(flat.shape[1:]))))
    joined = _Joined(flat.shape[0], len(range(0, flat.shape[0], per)))
    rest = () if block else tuple(q.out for q in ax)         # a statistic's shape beyond its rows
    walked = (block and x.dtype in _WALKED and int(np.prod([q.k for q in ax])) >= WIDE_SIM_FROM
              and np.finfo(x.dtype).bits <= np.finfo(WIDE).bits)
    looped = _fused.block_kernel() if block and x.dtype in _LOOPED else None
    squares = scans = None                  # the block loop's walks, per row (``_block_walks`` without it)
    if looped is not None and walked:
        squares, scans = np.empty(flat.shape[0]), np.empty(flat.shape[0])
    for lo in range(0, flat.shape[0], per):
        xs = flat[lo:lo + per]
        rows = len(xs)
        if looped is not None:
            joined.add(lo, _block_slice(looped, joined, xs, lo, walked, squares, scans))
            continue
        kernel = None if block else _fused.usable(ax, xs.size)
        if kernel is not None:
            top_x, low_x = xs.max(), xs.min()
            if np.isfinite(top_x) and np.isfinite(low_x):     # finite data: the compiled loop, the same bits
                joined.add(lo, _fused_slice(kernel, joined, xs, ax, lo, rest, bool(top_x > 0), bool(low_x < 0)))
                continue
        xf = xs.astype(np.float64)
        # every element finite where the largest and the smallest are (NaN is the largest of all)
        top_x, low_x = xf.max(), xf.min()
        finite = bool(np.isfinite(top_x) and np.isfinite(low_x))
        fin = None if finite else np.isfinite(xf)
        z = xf if finite else np.where(fin, xf, 0.0)
        # only the sums the data can make other than zero (or other than S: one-signed data)
        if finite:
            has_pos, has_neg = bool(top_x > 0), bool(low_x < 0)
        else:
            has_pos, has_neg = bool(z.max(initial=0.0) > 0), bool(z.min(initial=0.0) < 0)
        # (the statistic's place in Stats order: S, P, N, +inf, -inf and NaN counts, top, bottom)
        terms = [(0, np.abs(z))]
        if has_pos and has_neg:
            neg = np.negative(z)
            terms += [(1, np.maximum(z, 0.0)), (2, np.maximum(neg, 0.0, out=neg))]
        if not finite:
            terms += [(3, np.isposinf(xf)), (4, np.isneginf(xf)), (5, np.isnan(xf))]
        # the largest and smallest terms in float32 (float64 data: float64), which holds each exactly
        xt = xs if xs.dtype.itemsize >= 4 else xs.astype(np.float32)
        top, bottom = (xt, xt) if finite else (np.where(fin, xt, -np.inf), np.where(fin, xt, np.inf))
        # each reduced on its own (no stacked copy of all of them), its last step written into its
        # place in the whole statistic (``_Joined.into``)
        part: list = [_ZERO] * 8
        for i, t, op, fill in [(i, t, np.add, 0.0) for i, t in terms] + \
                [(6, top, np.maximum, -np.inf), (7, bottom, np.minimum, np.inf)]:
            if op is np.add:              # a sum in float64 (the counts' booleans made float64 here, one at a time)
                t = t.astype(np.float64, copy=False)
            dest = joined.into(i, lo, rows, rest, t.dtype)
            if block:
                t = op.reduce(t, axis=1, out=dest)
            else:
                for a, q in enumerate(ax):
                    t = _reduce(t, 1 + a, q, op, fill, dest if a == len(ax) - 1 else None)
            part[i] = t
        if not (has_pos and has_neg):    # one-signed (or zero) data: P or N is S, the other zero
            part[1], part[2] = (_SAME, _ZERO) if has_pos else (_ZERO, _SAME) if has_neg else (_ZERO, _ZERO)
        joined.add(lo, part)
    shape = (*lead, *(q.out for q in ax))
    size = int(np.prod(shape))
    sim = Deferred(lambda: simulated_error(x, ax, c).reshape(shape)) if x.dtype == np.float16 else None
    wide = None
    if int(np.prod([q.k for q in ax])) >= WIDE_SIM_FROM and np.finfo(x.dtype).bits <= np.finfo(WIDE).bits:
        wide = Deferred(lambda: simulated_wide_error(x, ax, c).reshape(shape),
                        lambda at: simulated_wide_error_at(x, ax, c, at), size)
    S, P, N, pinf, ninf, nan, top, bottom = joined.result(shape)
    walks = lower = scanned = None
    if block and wide is not None and x.dtype in _WALKED:
        finite = ((pinf + ninf + nan) == 0).reshape(-1)
        window = tuple(q.k for q in ax)
        if squares is not None:             # the block loop's, +inf where a term is not finite
            lower = np.where(finite, np.sqrt(squares / 3), np.inf).reshape(shape)
            scanned = np.where(finite, scans, np.inf).reshape(shape) / np.broadcast_to(c, shape)
        else:
            lower = _block_walks(flat, finite, row_major_walk).reshape(shape)
            scanned = (_block_walks(flat, finite, scan_error).reshape(shape) / np.broadcast_to(c, shape))
        walks = Deferred(lambda: _block_walks(flat, finite, lambda r: realistic_walk(r, window)).reshape(shape),
                         lambda at: _block_walks(flat[at], finite[at], lambda r: realistic_walk(r, window)), size)
    return Stats(np.broadcast_to(n, shape), np.broadcast_to(c, shape), S, P, N, top, bottom, pinf, ninf, nan, sim, wide,
                 walks, lower, scanned)


def _block_walks(g: np.ndarray, finite: np.ndarray, fn) -> np.ndarray:
    """Per row of ``g`` (one window each; ``finite``: its terms all finite, from the statistics'
    counts): ``fn`` of the rows (a random-walk scale of ``_sum_evaluations``), +inf for a window
    with a non-finite term; a slice of rows at a time."""
    out = np.full(g.shape[0], np.inf)
    step = max(1, _CHUNK // max(1, g.shape[1]))
    for lo in range(0, g.shape[0], step):
        rows = g[lo:lo + step]
        fin = finite[lo:lo + step]
        if fin.all():
            out[lo:lo + step] = fn(rows)
        elif fin.any():
            out[lo + np.flatnonzero(fin)] = fn(rows[fin])
    return out


#: the data types whose global averages summed in float32 take the realistic floor (``Stats.walk``)
_WALKED = (np.dtype(WIDE), np.dtype(np.float16))

#: markers of a slice's statistic (``_stats``): zero everywhere, or the same array as its S
_ZERO, _SAME = object(), object()

#: the data types whose block windows take ``_stats_fused``'s block loop (float16 as float32)
_LOOPED = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _block_slice(loop, joined: "_Joined", xs: np.ndarray, lo: int, walked: bool, squares, scans) -> list:
    """The statistics of the slice ``xs`` (rows of batch x channel, a block window's elements per
    row) of ``_stats`` by ``_stats_fused``'s block loop (the same bits as the NumPy code, the top
    and bottom zeros' signs aside), each written into its place in the whole statistic as there;
    P and N only where the slice has finite terms of both signs, the counts only where it has a
    non-finite one; with ``walked``, the row-major walks' squares and the scans' distances into
    ``squares`` and ``scans`` at the slice's rows."""
    rows = len(xs)
    xt = np.ascontiguousarray(xs if xs.dtype.itemsize >= 4 else xs.astype(np.float32))     # float16: exactly

    def dest(i: int, dtype) -> np.ndarray:
        d = joined.into(i, lo, rows, (), dtype)
        return np.empty(rows, dtype) if d is None else d

    S, P, N = dest(0, np.float64), np.empty(rows), np.empty(rows)
    top, bottom = dest(6, xt.dtype), dest(7, xt.dtype)
    counts = np.empty((3, rows))
    at = slice(lo, lo + rows)
    one = np.empty(1)
    loop(xt, walked, S, P, N, top, bottom, counts, squares[at] if walked else one, scans[at] if walked else one)
    has_pos, has_neg = bool((top > 0).any()), bool((bottom < 0).any())
    part: list = [S, _ZERO, _ZERO, _ZERO, _ZERO, _ZERO, top, bottom]
    if has_pos and has_neg:
        part[1], part[2] = P, N
    else:                            # one-signed (or zero) data: P or N is S, the other zero
        part[1], part[2] = (_SAME, _ZERO) if has_pos else (_ZERO, _SAME) if has_neg else (_ZERO, _ZERO)
    if counts.any():
        part[3:6] = list(counts)
    for i in (1, 2, 3, 4, 5):        # the arrays made here, into their place in the whole statistic
        if isinstance(part[i], np.ndarray):
            d = joined.into(i, lo, rows, (), np.float64)
            if d is not None:
                d[...] = part[i]
                part[i] = d
    return part


def _fused_slice(kernel, joined: "_Joined", xs: np.ndarray, ax: list, lo: int, rest: tuple, has_pos: bool,
                 has_neg: bool) -> list:
    """The statistics of the finite slice ``xs`` (rows of batch x channel) of ``_stats``, by the
    compiled loop of ``_stats_fused`` (the NumPy code's operations in its order: the same bits),
    each written into its place in the whole statistic (``_Joined.into``); P and N only where the
    slice has terms of both signs, as there."""
    rows = len(xs)
    xt = xs if xs.dtype.itemsize >= 4 else xs.astype(np.float32)      # float16: exactly
    lead = (1,) * (3 - len(ax))

    def dest(i: int, dtype) -> np.ndarray:
        d = joined.into(i, lo, rows, rest, dtype)
        return np.empty((rows, *rest), dtype) if d is None else d

    signs = has_pos and has_neg
    S = dest(0, np.float64)
    P, N = (dest(1, np.float64), dest(2, np.float64)) if signs else (S, S)      # (not written)
    top, bottom = dest(6, xt.dtype), dest(7, xt.dtype)
    kernel(np.ascontiguousarray(xt).reshape(rows, *lead, *xt.shape[1:]), _fused.geometry(ax), signs,
           *(a.reshape(rows, *lead, *rest) for a in (S, P, N, top, bottom)))
    part = [S, P, N, _ZERO, _ZERO, _ZERO, top, bottom]
    if not signs:                    # one-signed (or zero) data: P or N is S, the other zero
        part[1], part[2] = (_SAME, _ZERO) if has_pos else (_ZERO, _SAME) if has_neg else (_ZERO, _ZERO)
    return part


class _Joined:
    """The statistics of the slices of batch x channel put together as the slices come, each of the
    whole output's shape and read-only: a slice's arrays are written into the whole arrays at once
    (no slice kept until the end: the slices and the whole arrays of a layer of 52 million positions,
    held together, took 4.8 GB), one zero array stands for every statistic that is zero in all slices,
    and P or N is S itself where it is S in all slices. One slice: its arrays as they are."""

    def __init__(self, rows: int, slices: int):
        self.rows, self.slices = rows, slices
        self.whole: list[np.ndarray | None] = [None] * 8
        self.marks: list[list] = [[] for _ in range(8)]
        self.only: list | None = None

    def into(self, i: int, lo: int, k: int, rest: tuple, dtype) -> np.ndarray | None:
        """Where the statistic ``i`` of slice [lo, lo + k) is to be written: its rows of the whole
        array (made at the first slice that has one; the marks of the slices before it written in),
        or None where there is one slice (its own array stands)."""
        if self.slices == 1:
            return None
        if self.whole[i] is None:
            self.whole[i] = np.empty((self.rows, *rest), dtype)
            for mark in self.marks[i]:
                self._fill(i, *mark)
        return self.whole[i][lo:lo + k]

    def add(self, lo: int, part: list) -> None:
        """Slice ``lo``'s statistics: each an array written through :meth:`into`, or a mark."""
        if self.slices == 1:
            self.only = part
            return
        k = len(part[0])
        for i, v in enumerate(part):             # S (always an array) first
            if v is _ZERO or v is _SAME:
                self.marks[i].append((lo, k, v))
                if self.whole[i] is not None:
                    self._fill(i, lo, k, v)
            elif self.whole[i] is None or v.base is not self.whole[i]:
                raise AssertionError(f"statistic {i} of the slice at row {lo} was not written in place")

    def _fill(self, i: int, lo: int, k: int, mark) -> None:
        self.whole[i][lo:lo + k] = 0.0 if mark is _ZERO else self.whole[0][lo:lo + k]

    def result(self, shape: tuple) -> list[np.ndarray]:
        if self.only is not None:
            first = self.only
            zero = np.zeros(shape) if any(a is _ZERO for a in first) else None
            out = [zero if a is _ZERO else None if a is _SAME else a.reshape(shape) for a in first]
        else:
            out, zero = [], None
            for i in range(8):
                kinds = {m for _, _, m in self.marks[i]}
                if self.whole[i] is not None:
                    out.append(self.whole[i].reshape(shape))
                elif kinds == {_SAME}:
                    out.append(None)                      # S itself
                else:                                     # every slice zero (a mix with S: written in)
                    if kinds != {_ZERO}:
                        self.whole[i] = np.empty((self.rows, *self.whole[0].shape[1:]))
                        for mark in self.marks[i]:
                            self._fill(i, *mark)
                        out.append(self.whole[i].reshape(shape))
                        continue
                    if zero is None:
                        zero = np.zeros(shape)
                    out.append(zero)
        out = [out[0] if a is None else a for a in out]
        for a in out:
            a.flags.writeable = False
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
    if np.dtype(acc) != np.dtype(WIDE) or st.wide is None:     # (``wide`` read only where it counts)
        return worst
    floor = WIDE_FLOOR * np.maximum(st.P, st.N) * np.sqrt(np.maximum(n, 1) / 3)
    if st.walk is not None:
        floor = np.minimum(floor, WALK_FLOOR * st.walk)
    sim = SIM_FACTOR * st.wide + u_a * (floor / c)
    return np.minimum(worst, np.where(np.isfinite(sim), sim, np.inf))


def _subnormal_reciprocal(c: np.ndarray, dtype) -> np.ndarray:
    """The relative error of the count's reciprocal in ``dtype`` beyond u, where it is subnormal
    there (float16: counts over 16,384 that are no power of two): half its smallest subnormal."""
    fi = np.finfo(dtype)
    return np.where(c * float(fi.tiny) > 1, c * float(fi.smallest_subnormal) / 2, 0.0)


#: output positions at most whose bounds are computed at once (a larger output in slices: the
#: bounds' float64 temporaries of a layer of 2^26 outputs would take gigabytes; slices of 2^22
#: positions still took 460 MB of them on a layer of 52 million)
_SLICE = 1 << 20


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
        out = None
        for lo in range(0, shape[axis], step):
            cut = (slice(None),) * axis + (slice(lo, lo + step),)
            sub = Stats(*(_cut(raw(st, f.name), shape, cut) for f in dataclasses.fields(Stats)))
            part = fn(sub, *(a[cut] if isinstance(a, np.ndarray) and np.shape(a) == shape else a for a in args))
            one = not isinstance(part, tuple)
            part = (part,) if one else part
            if out is None:           # the results whole, each slice written in (no list of slices
                out = tuple(np.empty(shape, np.asarray(p).dtype) for p in part)     # joined at the end)
            for o, p in zip(out, part):
                o[cut] = p
        return out[0] if one else out
    run.__doc__, run.__name__, run.__wrapped__ = fn.__doc__, fn.__name__, fn
    return run


def _cut(v, shape: tuple, cut: tuple):
    """A statistic's slice ``cut`` (a deferred one deferred too)."""
    if v is None:
        return None
    if isinstance(v, Deferred):
        return v.map(lambda a: np.broadcast_to(a, shape)[cut])
    return np.broadcast_to(v, shape)[cut]


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


def bound(st: Stats, ref: np.ndarray, dtype, reading: str) -> tuple[np.ndarray, np.ndarray]:
    """(below, above): per output position, how far below and above ``ref`` (the exact average
    rounded once to ``dtype``) an answer of ``reading`` can lie (``compare.compare_output``): the
    reading summed-wide of float32 and float16 data by ``_bound_fused``'s compiled loop (the same
    bits), any other by :func:`_bound` (NumPy's code)."""
    got = _bound_looped(st, ref, dtype) if reading == SUMMED_WIDE else None
    return got if got is not None else _bound(st, ref, dtype, reading)


#: the data types whose summed-wide bound takes ``_bound_fused``'s loop
_BOUND_LOOPED = (np.dtype(np.float16), np.dtype(np.float32))


def _bound_looped(st: Stats, ref: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_bound` of the reading summed-wide by ``_bound_fused.wide_loop`` over the whole output
    (no slices: it makes no array of the output but its two results), the same bits; None where
    the loop does not take the case (other types, numba missing, arrays of other shapes)."""
    dtype = np.dtype(dtype)
    if dtype not in _BOUND_LOOPED:
        return None
    shape = np.shape(st.S)
    if np.shape(ref) != shape or not shape:
        return None
    loop = _bound_fused.kernel()
    if loop is None:
        return None
    acc = accumulator(dtype, SUMMED_WIDE)
    wider = np.finfo(acc).bits > np.finfo(dtype).bits
    u_t, eta_t = unit(dtype)
    u_a, eta_a = unit(acc)
    n, c = _counts(st)

    def count_terms(n, c) -> list:
        """What the bound reads of each window's count (``_bound_fused.wide_loop``'s ``counts`` rows)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            per = [n, c, gamma(depth(n, acc), u_a), np.sqrt(np.maximum(n, 1) / 3), _subnormal_reciprocal(c, acc),
                   _subnormal_reciprocal(c, dtype), _reciprocal_error(c, acc), _reciprocal_error(c, dtype)]
        return [np.asarray(a, np.float64) for a in np.broadcast_arrays(*per)]

    both = np.broadcast_shapes(np.shape(n), np.shape(c))
    lead = (1,) * (len(shape) - len(both)) + both
    if len(lead) != len(shape):
        return None
    k = next((i for i in range(len(shape)) if lead[i:] == shape[i:]), len(shape))
    if any(v != 1 for v in lead[:k]):            # counts that do not repeat over the leading axes alone
        lead, k = shape, 0
    period = int(np.prod(shape[k:]))
    # counts that never repeat (a window per position, a layer of one row): their rows a slice of
    # positions at a time, not eight float64 arrays of the output's size and their stack
    per_slice = period == int(np.prod(shape)) and period > _SLICE
    if per_slice:
        n_flat, c_flat = (np.broadcast_to(np.asarray(a, np.float64), shape).reshape(-1) for a in (n, c))
        counts = None
    else:
        per = [np.broadcast_to(a, lead) for a in count_terms(n, c)]
        counts = np.ascontiguousarray(np.stack([a.reshape(-1)[:period] for a in per]))

    def flat(a) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1)

    wide = st.wide                               # (read as ``sum_error`` reads them: where it counts)
    has_wide, walk = 0, None
    if wide is not None:
        has_wide = 1 if np.size(wide) == 1 else 2
        walk = st.walk
    wide_arr = np.asarray(wide, np.float64).reshape(-1) if has_wide == 1 else flat(wide) if has_wide else np.zeros(1)
    walk_arr = flat(walk) if walk is not None else np.zeros(1)
    r = flat(ref)
    consts = np.array([u_t, eta_t, u_a, eta_a, float(np.finfo(acc).max), 1 + u_t, 2 * u_a + u_a * u_a,
                       2 * u_t + u_t * u_t, eta_t / 2, (1 - u_a) ** 2 * ((1 - u_t) ** 2 if wider else 1.0),
                       eta_a + (eta_t if wider else 0.0), WIDE_FLOOR, WALK_FLOOR, SIM_FACTOR])
    below, above = np.empty(shape), np.empty(shape)
    stats = [flat(getattr(st, name)) for name in ("S", "P", "N", "top", "bottom", "pinf", "ninf", "nan")]
    b, a = below.reshape(-1), above.reshape(-1)
    for lo in range(0, r.size, _SLICE):          # (float16 references made float64 a slice at a time)
        at = slice(lo, lo + _SLICE)
        rs = r[at] if r.dtype == np.float32 else r[at].astype(np.float64)
        if per_slice:
            block = np.ascontiguousarray(np.stack(count_terms(n_flat[at], c_flat[at])))
            where = (block, block.shape[1], 0)
        else:
            where = (counts, period, lo)
        loop(*(v[at] for v in stats), rs, wide_arr[at] if has_wide == 2 else wide_arr,
             walk_arr[at] if walk is not None else walk_arr, *where,
             has_wide, walk is not None, dtype == np.float16, wider, consts, b[at], a[at])
    return below, above


@_sliced
def _bound(st: Stats, ref: np.ndarray, dtype, reading: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bound` by NumPy's code (in slices of the output)."""
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


def at_positions(st: Stats, idx: np.ndarray, **changes) -> Stats:
    """The statistics at the flat output positions ``idx`` (one-dimensional; ``changes``: fields
    given instead). A bound is computed position by position, so its values there are those of the
    whole."""
    def one(v):
        if v is None:
            return None
        return np.broadcast_to(v, np.shape(raw(st, "S"))).reshape(-1)[idx]
    return Stats(**{f.name: changes[f.name] if f.name in changes else
                    one(getattr(st, f.name)) if f.name not in ("sim", "wide", "walk") or not pending(st, f.name) else None
                    for f in dataclasses.fields(Stats)})


def bound_for(st: Stats, ref: np.ndarray, got: np.ndarray, dtype, refine) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bound` of the reading summed-wide, as ``compare.compare_output`` reads it to judge
    ``got``: the same statistics, with the simulated float32 sums (``wide``) computed only at the
    positions where they can change one (``refine``: ``compare.refined_bound``). Without them the
    bound is at least the statistical floor's (``wide`` 0): the bound grows with ``wide`` (every
    step of it is monotone in it: sums and products of non-negative terms, the minimum with the
    worst case, the roundings of the interval's ends)."""
    wide = raw(st, "wide")
    if not isinstance(wide, Deferred) or wide.ready or np.shape(got) != np.shape(ref):
        return bound(st, ref, dtype, SUMMED_WIDE)
    walks = raw(st, "walk")
    deferred_walk = isinstance(walks, Deferred) and not walks.ready
    floor = {"wide": st.wide_lower, "walk": st.walk_lower} if deferred_walk else {"wide": np.zeros(())}
    lower = bound(with_fields(st, **floor), ref, dtype, SUMMED_WIDE)
    r = np.asarray(ref).reshape(-1)

    def exact_at(idx):
        more = {"walk": walks.at(idx)} if deferred_walk else {}
        return bound(at_positions(st, idx, wide=wide.at(idx), **more), r[idx], dtype, SUMMED_WIDE)

    got_bound = refine(lower, exact_at, got, ref)
    del lower                       # (written over: the refined bound's arrays, or let go of)
    return got_bound if got_bound is not None else bound(st, ref, dtype, SUMMED_WIDE)


@_sliced
def running_sum(st: Stats, ref: np.ndarray, got: np.ndarray, dtype) -> np.ndarray:
    """Per output position: is ``got`` where a running sum in ``dtype`` (every addition rounded to
    the data type, one after another over the whole window) can land, and the window longer than
    a sound reduction's run (so no sound reduction reaches it there)? Only for types below float32
    (a running sum in the data type is a reading of theirs only). The interval is the worst case
    of such a sum, (n - 1) u S / count about the exact average: on a long window it holds almost
    any answer near the average, so this says only that such a sum cannot be ruled out. A zero
    where the average is not is left out: a running sum ends exactly at zero only by exact
    cancellation."""
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
        near = np.isfinite(g) & (np.abs(g - r) <= e) & ((g != 0) | (r == 0))
        # a running sum of one sign keeps at least its largest term, as every order does
        near &= ~(clean & (st.bottom >= 0) & (g < st.top / c * shrink - eta_t))
        near &= ~(clean & (st.top <= 0) & (g > st.bottom / c * shrink + eta_t))
    return near & (n > RUN[np.finfo(dtype).bits])


def divisor_overflow(st: Stats, ref: np.ndarray, got: np.ndarray, dtype) -> np.ndarray:
    """Per output position: is ``got`` what the window's sum divided by its count rounded to the
    data type gives, where that count rounds to infinity (float16: 65,520 elements or more; its
    largest finite value is 65,504)? The sum over infinity is a zero (NaN where the sum itself
    overflowed); the exact average is a number, not zero."""
    c = np.broadcast_to(np.asarray(st.c, dtype=np.float64), np.shape(ref))
    with np.errstate(over="ignore"):
        over = np.isinf(c.astype(dtype))
    if not over.any():
        return over
    r = np.asarray(ref, dtype=np.float64)
    g = np.asarray(got, dtype=np.float64)
    return over & np.isfinite(r) & (r != 0) & ((g == 0) | np.isnan(g))


def stalled(st: Stats, ref: np.ndarray, got: np.ndarray, dtype, near: np.ndarray | None = None) -> np.ndarray:
    """Per output position: is ``got`` where a running sum in ``dtype`` lands (:func:`running_sum`)
    after it has stalled? A stalled accumulator is one whose partial sums have grown past the
    point where the window's terms still move them: adding a term below half an ULP of the sum
    gives the sum back. So it needs a window whose exact sum lies past that point for its typical
    term (|P - N| at least 2^(p + 1) times the mean magnitude S / n, p the type's fraction bits;
    terms that cancel, a random walk about zero, never get there), and what it loses is
    magnitude: its answer lies on the exact average's side of zero, nearer zero (any number of
    such sums combined, a kernel's lanes, keeps both). ``near``: :func:`running_sum` of the same
    answer, where the caller has it."""
    near = running_sum(st, ref, got, dtype) if near is None else near.copy()
    if not near.any():
        return near
    n, _ = _counts(st)
    r = np.asarray(ref, dtype=np.float64)
    g = np.asarray(got, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        near &= np.abs(st.P - st.N) >= 2.0 ** (np.finfo(dtype).nmant + 1) * (st.S / np.maximum(n, 1))
        near &= (g * np.sign(r) >= 0) & (np.abs(g) < np.abs(r))
    return near


def envelope(st: Stats, ref: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The bound every reading stays inside (the widest of them)."""
    below = above = None
    for r in readings(dtype):           # one reading's pair held at a time beside the widest so far
        lo, hi = bound(st, ref, dtype, r)
        if below is None:
            below, above = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
        else:
            below = _widest(below, lo)
            above = _widest(above, hi)
    return below, above


def _widest(acc: np.ndarray, b) -> np.ndarray:
    """``np.maximum(acc, b)``, into ``acc`` where it has the result's shape."""
    same = np.shape(acc) == np.broadcast_shapes(np.shape(acc), np.shape(b))
    return np.maximum(acc, b, out=acc if same else None)


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


def may_overflow(st: Stats, dtype, reading: str) -> bool:
    """Can a partial sum of ``reading`` overflow at some position (:func:`overflow`'s ``possible``
    anywhere)? Without the pass over every position where even the largest sum of the terms of one
    sign, times 1 + gamma of the deepest window, stays below the threshold: :func:`partial_reach` is
    at most that at every position (each of its steps is monotone), so none can."""
    acc = accumulator(dtype, reading)
    n, _ = _counts(st)
    g = float(gamma(depth(np.max(n, initial=1), acc), unit(acc)[0]))
    most = max(float(np.max(st.P, initial=0.0)), float(np.max(st.N, initial=0.0)))
    if most * (1 + g) < threshold(acc):
        return False
    return bool(overflow(st, dtype, reading)[1].any())


def largest_finite(x: np.ndarray) -> float:
    """The largest magnitude of the finite elements of float array ``x`` (0 where none): on the
    bit patterns (the magnitude's bits order as its values do), a slice at a time."""
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    sign = bits(1 << (8 * x.dtype.itemsize - 1))
    inf = np.array(np.inf, x.dtype).view(bits)
    flat = np.ascontiguousarray(x).reshape(-1).view(bits)
    loop = _fused.largest_kernel() if x.dtype.itemsize >= 4 else None     # (float16: NumPy's is as fast)
    if loop is not None:                           # one compiled pass (``_stats_fused.largest_loop``)
        return float(np.array(loop(flat, inf[()]), bits).view(x.dtype))
    most = bits(0)
    for lo in range(0, flat.size, _SLICE):
        mag = flat[lo:lo + _SLICE] & ~sign
        mag[mag >= inf] = 0                        # infinities and NaN
        most = max(most, mag.max(initial=0))
    return float(np.array(most, bits).view(x.dtype))


def never_overflows(most: float, n_max: int, dtype, reading: str) -> bool:
    """Can :func:`may_overflow` be told False without the statistics? Where ``n_max`` (the most
    input elements of a window) times ``most`` (the largest finite magnitude of the input,
    :func:`largest_finite`) bounds every window's sum of the terms of one sign, so its first
    test's ``most`` (those sums as float64 makes them, within n_max 2^-53 of their value: the
    margin), and that times 1 + gamma of the deepest window stays below the threshold."""
    acc = accumulator(dtype, reading)
    n_max = max(int(n_max), 1)
    g = float(gamma(depth(n_max, acc), unit(acc)[0]))
    return n_max * most * (1 + n_max * 2.0 ** -50) * (1 + g) < threshold(acc)


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
