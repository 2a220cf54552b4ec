"""The evaluations of window sums real kernels make, simulated on a window's own values: the
float16 in-type evaluations (:func:`simulated_error`) and the float32 reductions of long windows
(:func:`wide_sums`, :func:`simulated_wide_error`), each as the largest distance of its answers from
the exact one. Which evaluations, why those, and how the bounds of ``_sums`` use the distances: the
text of ``_sums``.
"""
from __future__ import annotations

import functools

import numpy as np

from . import _block, _walk_fused
from . import _onnx_pool as O

#: the accumulator of the summed-wide reading
WIDE = np.float32
#: elements per slice of batch x channel when the statistics are computed
CHUNK = 1 << 21


def coords(q: O.Axis) -> np.ndarray:
    """out x k: the input coordinate of each window element of axis ``q``."""
    return np.arange(q.out)[:, None] * q.s - q.begin + np.arange(q.k)[None, :] * q.d


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
        co = coords(q)
        shape = [1] * 2 * dims
        shape[i], shape[dims + i] = q.out, q.k
        mask = mask & ((co >= 0) & (co < q.n)).reshape(shape)
        idx.append(np.clip(co, 0, q.n - 1).reshape(shape))
    g = flat[(slice(None), *idx)]                     # rows, *out, *k
    if not mask.all():
        g = np.where(mask, g, flat.dtype.type(0))
    return g.reshape(-1, int(np.prod([q.k for q in ax])))


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


def pairwise(v: np.ndarray) -> np.ndarray:
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
    return pairwise(s)


def _in_order(v: np.ndarray, order: tuple) -> np.ndarray:
    """Per row: the terms added one after another in ``order`` (columns of ``v``, none copied)."""
    s = v[:, order[0]].copy()
    for j in order[1:]:
        s += v[:, j]
    return s


def _evaluations(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (float16 window elements) and divisor ``c``: the largest distance from the
    exact average of the answers of the simulated sound evaluations (module text)."""
    n = v.shape[1]
    q = v.astype(np.float64).sum(axis=1) / c
    r = (1.0 / c).astype(np.float16)
    sums = [pairwise(v)] + [_runs(v, run) for run in SIM_RUNS if run < n]
    if n <= SIM_RUNS[-1]:
        # the whole window one after another (a run of the next SIM_RUNS length is this sum + 0.0),
        # in reverse and in other fixed orders, each order once (a short window has few: 2x2 has 24)
        rng = np.random.default_rng(n)
        orders = [tuple(range(n)), tuple(range(n - 1, -1, -1))]
        for _ in range(SIM_ORDERS):
            order = tuple(int(i) for i in rng.permutation(n))
            if order not in orders:
                orders.append(order)
        sums += [_in_order(v, order) for order in orders]
    answers = [(v.astype(np.float32).sum(axis=1, dtype=np.float32).astype(np.float64) / c).astype(np.float16),
               pairwise(v * r[:, None])]
    for s in sums:
        answers += [(s.astype(np.float64) / c).astype(np.float16), s * r]
    err = np.zeros(v.shape[0])
    for a in answers:               # float16 - float64 is the float64 difference of the values
        d = np.subtract(a, q)
        np.maximum(err, np.abs(d, out=d), out=err)      # a NaN stays: +inf below
    return np.where(np.isnan(err), np.inf, err)


def _slices(x: np.ndarray, ax: list, c: np.ndarray):
    """(x as rows of batch x channel, output positions per row, window elements, each position's
    divisor (1 where it is 0), rows per slice of the simulation; None where a row is too large to
    simulate)."""
    flat = x.reshape(-1, *x.shape[2:])
    positions = int(np.prod([q.out for q in ax]))
    n = int(np.prod([q.k for q in ax]))
    if positions * n > _SIM_MAX:
        return flat, positions, n, None, None
    cc = np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (positions,))
    cc = np.where(cc > 0, cc, 1.0)
    return flat, positions, n, cc, max(1, CHUNK // max(1, positions * n))


def simulated_error(x: np.ndarray, ax: list, c: np.ndarray) -> np.ndarray:
    """Per output position of float16 ``x`` (batch, channel, *spatial) over the windows ``ax`` with
    divisors ``c``: how far the answers of the simulated in-type evaluations (module text) lie from
    the exact average at most; +inf where a window holds a non-finite value, or where a slice is
    too large to simulate."""
    flat, positions, n, cc, per = _slices(x, ax, c)
    if per is None:
        return np.full(flat.shape[0] * positions, np.inf)
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
#: the statistical floor of a global average (``realistic_walk``): so many times the random-walk
#: scale of the orders kernels take, four standard deviations and a factor of eight for the
#: orders of real kernels that only resemble them (a workgroup's own lane count, tiles of another shape)
WALK_FLOOR = 32.0


#: the walk's blocks at most per window (:func:`walk`)
WALK_BLOCKS = 1024


def walk(v: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (a window's K terms, finite): at least sqrt(sum over k = 2..K of
    max_{j <= k} M_j^2 / 3), where M_j = max(S_top(j), -S_bot(j)) is the largest magnitude a sum of
    j of the terms can have (S_top(j), S_bot(j): the sums of the j largest and of the j smallest).

    Whatever the order and the tree of a reduction of the window, each addition's result is a sum
    of some j of the terms, so at most M_j in magnitude (its roundings aside), and it is rounded by
    an error within u of it. A tree of K leaves has at most K - k + 1 additions of k terms or more
    (a chain, one after another, has exactly that many: by induction over the root's two
    subtrees), so the sum of a non-decreasing function of the additions' sizes is largest for the
    chain. With the non-decreasing max_{j <= k} M_j^2, the sum of the squares of the additions'
    results is at most the sum above, and the random walk of their roundings (each uniform within
    u of its result) has a standard deviation of at most u times this value.

    S_top rises while it takes positive terms and falls after, -S_bot likewise with the negative
    ones, so max_{j <= k} M_j is the larger of the sums of the k largest positive terms and of the
    k largest negative magnitudes. Both are summed over blocks of b = ceil(K / ``WALK_BLOCKS``)
    sorted terms, and each k counted at the end of its block (no less, the function being
    non-decreasing): exact for K <= ``WALK_BLOCKS``, within about b / K above beyond. At most
    max(P, N) sqrt(K / 3), the scale with every partial sum at max(P, N); on cancelling data about
    0.87 of that (uniform on a symmetric range: M_j = 64 j (1 - j / K) for [-64, 64)), on
    one-signed data about 0.73 (uniform on [0, 1))."""
    m, k = v.shape
    s = np.sort(v if v.dtype.itemsize >= 4 else v.astype(np.float32), axis=1)      # ascending
    b = -(-k // WALK_BLOCKS)
    t = -(-k // b) * b

    def ends(a: np.ndarray) -> np.ndarray:
        """The sums of the first j of ``a``'s terms (each row), at the ends of its blocks."""
        if t != k:                 # zeros after the last term: the sums stay
            a = np.concatenate([a, np.zeros((m, t - k), a.dtype)], axis=1)
        parts = a.reshape(m, t // b, b).sum(axis=2, dtype=np.float64) if b > 1 else a.astype(np.float64)
        return np.cumsum(parts, axis=1)

    zero = s.dtype.type(0)
    big = np.maximum(ends(np.maximum(s[:, ::-1], zero)), ends(-np.minimum(s, zero)))
    np.square(big, out=big)
    total = big[:, 1:].sum(axis=1) if b == 1 else b * big.sum(axis=1)
    return np.sqrt(total / 3)


#: the orders of :func:`realistic_walk`: square tiles and rectangular ones (rows x columns) taken
#: one after another, each row-major; strided lanes (vector lanes, threads of a grid-stride loop),
#: each one after another, then combined; contiguous runs, each one after another, then combined
WALK_TILES = ((8, 8), (16, 16), (32, 32), (64, 64), (8, 32), (32, 8))
WALK_LANES = (4, 8, 16, 32, 64, 256, 1024)
WALK_RUNS = (1 << 8, 1 << 12, 1 << 16)


def _squares(c: np.ndarray) -> np.ndarray:
    """Per row of ``c`` (float64 partial sums): the sum of their squares."""
    return np.einsum("ij,ij->i", c, c)


def _chain(a: np.ndarray) -> np.ndarray:
    """Per row of ``a``: the sum of the squares of its partial sums one after another (in float64,
    which holds a float32 or float16 term exactly)."""
    return _squares(np.cumsum(a, axis=1, dtype=np.float64))


def _tree(t: np.ndarray) -> np.ndarray:
    """Per row of ``t`` (float64 sums combined): the larger of the sums of the squares of the
    results of a pairwise tree and of a chain over them."""
    tot = np.zeros(t.shape[0])
    a = t
    while a.shape[1] > 1:
        if a.shape[1] % 2:
            a = np.concatenate([a, np.zeros((a.shape[0], 1))], axis=1)
        a = a[:, 0::2] + a[:, 1::2]
        tot += _squares(a)
    return np.maximum(tot, _chain(t))


@functools.lru_cache(maxsize=64)
def _tile_order(window: tuple[int, ...], th: int, tw: int) -> np.ndarray | None:
    """The window's element indices (row-major over ``window``, two axes or more: the leading ones
    outermost) in the order of tiles of th x tw over the last two axes, the tiles row-major and
    each tile row-major (a tile cut by the window's edge: its elements inside); None where one tile
    covers both axes (the row-major order)."""
    h, w = window[-2], window[-1]
    if th >= h and tw >= w:
        return None
    lead = int(np.prod(window[:-2]))
    hh, ww = -(-h // th) * th, -(-w // tw) * tw
    idx = np.full((lead, hh, ww), -1, np.int64)
    idx[:, :h, :w] = np.arange(lead * h * w).reshape(lead, h, w)
    order = idx.reshape(lead, hh // th, th, ww // tw, tw).transpose(0, 1, 3, 2, 4).reshape(-1)
    order = order[order >= 0]
    order.setflags(write=False)
    return order


def scan_error(v: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (a window's terms): the distance of its float32 sum one after another
    (:func:`wide_sums`' ``scan``) from the exact sum, as :func:`simulated_wide_error` measures it
    (before the division by the count): one of the distances it takes the largest of."""
    w = v.astype(WIDE)
    return np.abs(scan(w).astype(np.float64) - w.astype(np.float64).sum(axis=1))


def row_major_squares(v: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (a window's terms, finite): the sum of the squares of the partial sums of
    the terms one after another in their order, both in float64 (which holds a float32 or float16
    term exactly), the squares added one after another: bit for bit what ``_stats_fused``'s block
    loop gives (:func:`_chain` adds them in whatever order ``np.einsum`` takes)."""
    c = np.cumsum(v, axis=1, dtype=np.float64)
    return np.add.accumulate(np.square(c, out=c), axis=1)[:, -1]


def row_major_walk(v: np.ndarray) -> np.ndarray:
    """Per row of ``v`` (a window's terms, finite): sqrt(R / 3), R the sum of the squares of the
    partial sums of the terms one after another in their order (:func:`row_major_squares`): one of
    :func:`realistic_walk`'s evaluations, the same bits, so at most it."""
    return np.sqrt(row_major_squares(v) / 3)


#: windows of at least so many elements (two axes, each a multiple of ``WALK_BLOCK``): the chains'
#: sums of squares of :func:`realistic_walk` from blocks of ``WALK_BLOCK`` consecutive terms
#: (:func:`_blocked_walk`), an estimate at or above them, instead of term by term
WALK_BLOCKED_FROM = 1 << 14
WALK_BLOCK = 8


def realistic_walk(v: np.ndarray, window: tuple[int, ...]) -> np.ndarray:
    """Per row of ``v`` (a window's terms, finite, row-major over ``window``): sqrt(R / 3), R the
    largest sum of the squares of the additions' exact results over the evaluations real kernels
    make of it: one after another row-major, reversed, column-major (every axis order reversed)
    and reversed; tile after tile (``WALK_TILES``, over the last two axes); strided lanes
    (``WALK_LANES``), each one after another, then combined pairwise or one after another;
    contiguous runs (``WALK_RUNS``) likewise. The random walk of those evaluations' roundings
    (each uniform within u of its result) has a standard deviation of at most u times this value
    (``_sums`` text). Long two-axis windows: an estimate at or above it, within a few per cent on
    such windows of real data (:func:`_blocked_walk`)."""
    m, k = v.shape
    if (k >= WALK_BLOCKED_FROM and len(window) == 2 and window[0] % WALK_BLOCK == 0
            and window[1] % WALK_BLOCK == 0):
        # the row-major chain itself too: :func:`row_major_walk` is at most this, bit for bit
        return np.maximum(_blocked_walk(v, window), row_major_walk(v))
    fused = _walk_fused.walk(v, window, _tile_order, WALK_TILES, WALK_LANES, WALK_RUNS)
    if fused is not None:               # the same chains, compiled (``_walk_fused``)
        return fused
    a = v.astype(np.float64)            # each term exactly; one conversion for every order
    best = row_major_squares(a)         # the row-major chain as :func:`row_major_walk` takes it
    np.maximum(best, _chain(a[:, ::-1]), out=best)
    if len(window) > 1:
        col = np.ascontiguousarray(a.reshape(m, *window).transpose(0, *range(len(window), 0, -1))).reshape(m, k)
        np.maximum(best, _chain(col), out=best)
        np.maximum(best, _chain(col[:, ::-1]), out=best)
        del col
        for th, tw in WALK_TILES:
            order = _tile_order(tuple(window), th, tw)
            if order is not None:
                np.maximum(best, _chain(a[:, order]), out=best)
    for lanes in WALK_LANES:
        if lanes < k:
            part = np.cumsum(padded(a, lanes).reshape(m, -1, lanes), axis=1, dtype=np.float64)
            np.maximum(best, _squares(part.reshape(m, -1)) + _tree(part[:, -1, :]), out=best)
    for run in WALK_RUNS:
        if run < k:
            part = np.cumsum(padded(a, run).reshape(m, -1, run), axis=2, dtype=np.float64)
            np.maximum(best, _squares(part.reshape(m, -1)) + _tree(part[:, :, -1]), out=best)
    return np.sqrt(best / 3)


def _block_chain(p: np.ndarray, n: np.ndarray, b: int) -> np.ndarray:
    """Per row: at or above the sum of the squares of the partial sums of a chain whose blocks of
    ``b`` consecutive terms have positive sums ``p`` and negative magnitudes ``n`` (float64, in
    the chain's order along the last axis; other axes: chains of their own, added up). A partial
    sum inside block j is the sum S_j of the blocks before it plus a prefix of the block, which
    lies between -n_j and p_j, so its square is at most max(|S_j + p_j|, |S_j - n_j|)^2."""
    d = p - n
    before = np.cumsum(d, axis=-1)
    before -= d
    hi = np.abs(before + p)
    np.maximum(hi, np.abs(before - n), out=hi)
    flat = hi.reshape(hi.shape[0], -1)
    return b * np.einsum("ij,ij->i", flat, flat)


def _blocked_walk(v: np.ndarray, window: tuple[int, ...]) -> np.ndarray:
    """:func:`realistic_walk` of a two-axis window whose sides are multiples of ``WALK_BLOCK``,
    each chain's sum of squares from its blocks of ``WALK_BLOCK`` consecutive terms (the positive
    and negative sums of each segment of a row, of a column, of a lane's share: one reduction of the
    terms each) by :func:`_block_chain`: at or above its terms' own, and within a few per cent where
    the partial sums are far larger than a block's magnitude (a long window); the combinations of
    lanes and runs from their exact totals."""
    m, k = v.shape
    h, w = window
    g = WALK_BLOCK
    x = v if v.dtype.itemsize >= 4 else v.astype(np.float32)
    pos = np.maximum(x, x.dtype.type(0))
    neg = pos - x                              # the negative terms' magnitudes, exactly
    f64 = np.float64
    # segments of g along a row: (m, h, w / g); of g down a column: (m, h / g, w)
    pr = pos.reshape(m, h, w // g, g).sum(axis=3, dtype=f64)
    nr = neg.reshape(m, h, w // g, g).sum(axis=3, dtype=f64)
    pc = pos.reshape(m, h // g, g, w).sum(axis=2, dtype=f64)
    nc = neg.reshape(m, h // g, g, w).sum(axis=2, dtype=f64)
    flat_p, flat_n = pr.reshape(m, -1), nr.reshape(m, -1)
    best = _block_chain(flat_p, flat_n, g)
    np.maximum(best, _block_chain(flat_p[:, ::-1], flat_n[:, ::-1], g), out=best)
    col_p, col_n = pc.transpose(0, 2, 1).reshape(m, -1), nc.transpose(0, 2, 1).reshape(m, -1)
    np.maximum(best, _block_chain(col_p, col_n, g), out=best)
    np.maximum(best, _block_chain(col_p[:, ::-1], col_n[:, ::-1], g), out=best)
    for th, tw in WALK_TILES:
        if th >= h and tw >= w:
            continue
        hh, ww = -(-h // th) * th, -(-w // tw) * tw          # tiles cut by the edge: zero segments
        pad = ((0, 0), (0, hh - h), (0, (ww - w) // g))
        tp, tn = (np.pad(a, pad) if pad[1][1] or pad[2][1] else a for a in (pr, nr))
        shape = (m, hh // th, th, ww // tw, tw // g)
        order = (0, 1, 3, 2, 4)
        np.maximum(best, _block_chain(tp.reshape(shape).transpose(order).reshape(m, -1),
                                      tn.reshape(shape).transpose(order).reshape(m, -1), g), out=best)
    for lanes in WALK_LANES:
        if lanes < k:
            lp = padded(pos, lanes * g).reshape(m, -1, g, lanes).sum(axis=2, dtype=f64)      # (m, J, lanes)
            ln = padded(neg, lanes * g).reshape(m, -1, g, lanes).sum(axis=2, dtype=f64)
            lp, ln = lp.transpose(0, 2, 1), ln.transpose(0, 2, 1)                          # each lane's blocks
            totals = (lp - ln).sum(axis=2)
            np.maximum(best, _block_chain(lp, ln, g) + _tree(totals), out=best)
    for run in WALK_RUNS:
        if run < k:
            rp, rn = padded(flat_p, run // g).reshape(m, -1, run // g), padded(flat_n, run // g).reshape(m, -1, run // g)
            np.maximum(best, _block_chain(rp, rn, g) + _tree((rp - rn).sum(axis=2)), out=best)
    return np.sqrt(best / 3)


def padded(v: np.ndarray, k: int) -> np.ndarray:
    """Rows of ``v`` padded with +0.0 to a multiple of ``k`` elements."""
    m, n = v.shape
    t = -(-n // k) * k
    return v if t == n else np.concatenate([v, np.zeros((m, t - n), v.dtype)], axis=1)


def scan(v: np.ndarray, axis: int = -1) -> np.ndarray:
    """The elements along ``axis`` added one after another in v's type. np.add.accumulate is
    sequential; np.add.reduce is pairwise along the contiguous axis, but along an outer axis of a
    C-contiguous array whose inner axes hold two elements or more it adds one slice of them after
    the other, each element one after another, and needs no full-size result (the bits of both:
    ``tests/ops/test_sum_evaluations.py``)."""
    axis %= v.ndim
    if v.flags.c_contiguous and v.shape[axis] > 1 and int(np.prod(v.shape[axis + 1:])) >= 2:
        return np.add.reduce(v, axis=axis)
    return np.take(np.add.accumulate(v, axis=axis), -1, axis=axis)


def runs(v: np.ndarray, run: int) -> np.ndarray:
    """Per row: contiguous runs of ``run`` terms, each added one after another, combined pairwise."""
    return pairwise(scan(padded(v, run).reshape(v.shape[0], -1, run), axis=2))


def _strided(v: np.ndarray, lanes: int) -> np.ndarray:
    """(rows, lanes): lane j's share (elements j, j + lanes, ...) of each row added one after another."""
    return scan(padded(v, lanes).reshape(v.shape[0], -1, lanes), axis=1)


def wide_sums(v: np.ndarray, window: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """Per row of ``v`` (window elements in row-major window order, in the accumulator's type): the
    sums of the simulated reductions, by name (module text); with the window's ``window`` shape (two
    axes or more), also along its axes in the other order: column-major one after another, each
    column first (then the columns one after another), each row first (then the rows)."""
    n = v.shape[1]
    out = {"scan": scan(v), "reversed": scan(v[:, ::-1]), "pairwise": pairwise(v),
           "numpy": np.add.reduce(v, axis=1)}
    for lanes in WIDE_LANES:
        if lanes < n:
            part = _strided(v, lanes)
            out[f"lanes{lanes}"] = pairwise(part)
            out[f"lanes{lanes}-then-scan"] = scan(part)
    for threads in WIDE_THREADS:
        if threads < n:
            out[f"grid-stride{threads}"] = pairwise(_strided(v, threads))
    for run in WIDE_RUNS:
        if run < n:
            out[f"runs{run}"] = runs(v, run)
    if window is not None and len(window) > 1 and int(np.prod(window)) == n:
        last = int(window[-1])
        grid = v.reshape(v.shape[0], -1, last)
        out["column-major"] = scan(np.ascontiguousarray(v.reshape(v.shape[0], *window).transpose(
            0, *range(len(window), 0, -1))).reshape(v.shape[0], n))
        out["columns-first"] = scan(scan(grid, axis=1))
        out["rows-first"] = scan(scan(grid, axis=2))
    return out


def simulated_wide_error(x: np.ndarray, ax: list, c: np.ndarray) -> np.ndarray:
    """Per output position of ``x`` (batch, channel, *spatial; float32 or narrower) over the windows
    ``ax`` with divisors ``c``: how far the simulated float32 sums (:func:`wide_sums`) lie from the
    exact sum at most, divided by the count; +inf where a window holds a non-finite value or a sum
    overflows, or where a slice is too large to simulate."""
    flat, positions, n, cc, per = _slices(x, ax, c)
    if per is None:
        return np.full(flat.shape[0] * positions, np.inf)
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, flat.shape[0], per):
            g = _gather(flat[lo:lo + per], ax)
            for a in range(0, g.shape[0], max(1, CHUNK // n)):
                out.append(_wide_errors(g[a:a + max(1, CHUNK // n)], ax))
    err = np.concatenate(out)
    return err / np.tile(cc, err.size // positions)


def _wide_errors(g: np.ndarray, ax: list) -> np.ndarray:
    """Per row of ``g`` (a window's elements in row-major window order): the largest distance of
    its simulated float32 sums from its exact sum (+inf for a NaN)."""
    v = g.astype(WIDE)
    exact = v.astype(np.float64).sum(axis=1)
    err = np.zeros(v.shape[0])
    for s in wide_sums(v, tuple(q.k for q in ax)).values():
        d = np.abs(s.astype(np.float64) - exact)
        np.maximum(err, np.where(np.isnan(d), np.inf, d), out=err)
    return err


def simulated_wide_error_at(x: np.ndarray, ax: list, c: np.ndarray, at: np.ndarray) -> np.ndarray:
    """:func:`simulated_wide_error` at the output positions ``at`` alone (flat indices into batch x
    channel x the output positions): the same values, bit for bit (each window's sums depend on its
    own elements only: ``tests/ops/test_sum_evaluations.py``), for a judgement that needs them at a
    few positions."""
    at = np.asarray(at, np.int64).reshape(-1)
    flat, positions, n, cc, per = _slices(x, ax, c)
    if per is None:
        return np.full(at.size, np.inf)
    out = []
    step = max(1, CHUNK // n)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, at.size, step):
            out.append(_wide_errors(gather_at(x, ax, at[a:a + step]), ax))
    err = np.concatenate(out) if out else np.zeros(0)
    return err / cc[at % positions]
