"""The pooling reference's compiled loops (``ops/_pool_fused.py``) give the NumPy window walk's
answers, bit for bit: every loop ("rows", "lanes", the one-block sums), 1 to 3 spatial
axes, padding, dilations and strides, windows reaching past the input, chunks of rows and worker
threads, float16/float32/float64 and the integer types, NaN, infinities, signed zeros and
subnormals, indices in both storage orders.

One freedom: where a window's sum meets two NaNs of different bits, which one it keeps. x86 keeps
the first operand's, but NumPy's own add loops keep the first operand's on long arrays and the
second's on short ones, so the walk's NaN depends on its tile sizes; the bench compares NaN with
NaN whatever the payload (``compare.NAN_POLICY``). Such windows are compared as NaN; every other
bit is compared."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnx_dml_bench.ops import _pool_fused as PF
from onnx_dml_bench.ops import _pooling as P

pytestmark = pytest.mark.skipif(PF._compile() is None, reason="numba does not import here")

PROPS = settings(deadline=None, max_examples=300, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


def walk(fn, *args):
    """``fn`` on the NumPy walk alone (the compiled loops turned off)."""
    saved = PF._KERNELS
    PF._KERNELS = False
    try:
        return fn(*args)
    finally:
        PF._KERNELS = saved


def same(a, b, nan_free: bool = False) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if nan_free and a.dtype.kind == "f":
        both = np.isnan(a) & np.isnan(b)
        a, b = np.where(both, 0, a), np.where(both, 0, b)
    return a.tobytes() == b.tobytes()


@st.composite
def geometries(draw, real: bool):
    """(shape, windows): every window holding an input element where ``real``."""
    axes = draw(st.integers(1, 3))
    rows = draw(st.sampled_from([(1, 1), (1, 3), (2, 9), (1, 17), (3, 11), (1, 40)]))
    wins, shape = [], list(rows)
    for _ in range(axes):
        n = draw(st.integers(1, 40 if axes == 1 else 12))
        k = draw(st.integers(1, 4))
        d = draw(st.integers(1, 3))
        s = draw(st.integers(1, 3))
        eff = (k - 1) * d + 1
        begin = draw(st.integers(0, eff - 1))
        end = draw(st.integers(0, eff - 1))
        out = (n + begin + end - eff) // s + 1
        if out < 1:
            n, begin, end = eff, 0, 0
            out = 1
        wins.append(P.Window(n, k, s, d, begin, out))
        shape.append(n)
    if real and not all((P.count_within(w, 0, w.n) > 0).all() for w in wins):
        wins = [P.Window(w.n, w.k, w.s, w.d, 0, max(1, (w.n - (w.k - 1) * w.d - 1) // w.s + 1))
                if (w.k - 1) * w.d + 1 <= w.n else P.Window(w.n, 1, 1, 1, 0, w.n) for w in wins]
    return tuple(shape), wins


SPECIAL = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0, "-zero": -0.0}


def data(draw, shape, dtype):
    seed = draw(st.integers(0, 2**32 - 1))
    g = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return g.integers(info.min, int(info.max) + 1, size=shape, dtype=dt)
    scale = 2.0 ** draw(st.integers(-30 if dt.itemsize > 2 else -14, 10))
    x = (g.standard_normal(shape) * scale).astype(dt)
    kinds = draw(st.sets(st.sampled_from(sorted(SPECIAL)), max_size=4))
    for kind in kinds:
        x[g.random(shape) < 0.1] = SPECIAL[kind]
    if draw(st.booleans()):
        x[g.random(shape) < 0.1] = np.finfo(dt).smallest_subnormal
    return x


@PROPS
@given(st.data())
def test_means_are_the_walks(d):
    shape, wins = d.draw(geometries(real=False))
    x = data(d.draw, shape, d.draw(st.sampled_from([np.float16, np.float32, np.float64])))
    inc = d.draw(st.booleans())
    divisors = [np.full(w.out, w.k) if inc else np.maximum(P.count_within(w, 0, w.n), 1) for w in wins]
    got, want = P.window_mean(x, wins, divisors), walk(P.window_mean, x, wins, divisors)
    assert same(got, want, nan_free=True), (shape, wins)
    if not np.isnan(x).any():
        assert same(got, want)


@PROPS
@given(st.data())
def test_maxima_and_indices_are_the_walks(d):
    shape, wins = d.draw(geometries(real=True))
    dtype = d.draw(st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32]))
    x = data(d.draw, shape, dtype)
    want_index, order = d.draw(st.sampled_from([(False, 0), (True, 0), (True, 1)]))
    (y, idx), (y0, idx0) = P.window_max(x, wins, want_index, order), walk(P.window_max, x, wins, want_index, order)
    assert same(y, y0), (shape, wins)
    assert (idx is None) == (idx0 is None) and (idx is None or same(idx, idx0)), (shape, wins)


@pytest.mark.parametrize("rows", [1, 7, 8, 9, 17, 300])
@pytest.mark.parametrize("k", [1, 2, 49, 1000])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_block_sums_are_the_walks(rows, k, dtype):
    """Global windows: eight channels' chains at a time and the channels left over."""
    g = np.random.default_rng(rows * k)
    top = 4 if dtype == np.float16 else 20                              # finite sums
    x = (g.standard_normal((1, rows, k)) * 2.0 ** g.integers(-top, top, (1, rows, k))).astype(dtype)
    x[0, ::5, -1] = -x[0, ::5, :-1].astype(np.float64).sum(axis=1)     # cancelling sums
    x[0, 3 % rows] = -0.0                                               # a channel of -0.0 alone
    wins = [P.Window(k, k, 1, 1, 0, 1)]
    divisors = [np.array([k])]
    assert same(P.window_mean(x, wins, divisors), walk(P.window_mean, x, wins, divisors))


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("tile", [1 << 10, 1 << 21])
def test_chunks_and_threads_change_nothing(workers, tile, monkeypatch):
    """Real-size layers cut into chunks of rows (down to one row) and dealt to threads."""
    monkeypatch.setattr(P, "WORKERS", workers)
    monkeypatch.setattr(P, "TILE_BYTES", tile)
    g = np.random.default_rng(workers)
    x = g.standard_normal((2, 64, 30, 30)).astype(np.float32)
    cases = [[P.Window(30, 3, 2, 1, 1, 15)] * 2, [P.Window(30, 2, 1, 2, 0, 28)] * 2,
             [P.Window(30, 30, 1, 1, 0, 1)] * 2, [P.Window(30, 5, 3, 1, 2, 10), P.Window(30, 1, 1, 1, 0, 30)]]
    for wins in cases:
        div = [np.maximum(P.count_within(w, 0, w.n), 1) for w in wins]
        assert same(P.window_mean(x, wins, div), walk(P.window_mean, x, wins, div)), wins
        for order in (0, 1):
            (y, i), (y0, i0) = P.window_max(x, wins, True, order), walk(P.window_max, x, wins, True, order)
            assert same(y, y0) and same(i, i0), wins


def test_each_loop_is_reached():
    """The geometries above reach every loop of ``walk``."""
    assert PF.walk([P.Window(30, 3, 2, 1, 1, 15)], 64) == "lanes"
    assert PF.walk([P.Window(80, 3, 1, 1, 1, 80)], 64) == "rows"
    assert PF.walk([P.Window(8, 3, 1, 1, 1, 8)], 3) == "rows"
    assert PF.walk([P.Window(3, 3, 1, 1, 1, 3)], 3) == "rows"


def test_large_work_takes_the_walk():
    """A channel past ROW_ELEMENTS elements, or more than VISITS_UP_TO visits (ROWS_UP_TO for the
    "rows" loop): the NumPy walk."""
    assert PF.usable([P.Window(512, 3, 1, 1, 1, 512)] * 2, (512, 512), 1) is None
    assert PF.usable([P.Window(28, 3, 1, 1, 1, 28)] * 2, (28, 28), 64) is not None      # lanes
    assert PF.usable([P.Window(28, 3, 1, 1, 1, 28)] * 2, (28, 28), 1024) is None
    assert PF.usable([P.Window(112, 3, 2, 1, 1, 56)] * 2, (112, 112), 8) is not None    # rows
    assert PF.usable([P.Window(112, 3, 2, 1, 1, 56)] * 2, (112, 112), 64) is None
    assert PF.usable([P.Window(56, 56, 1, 1, 0, 1)] * 2, (56, 56), 512) is not None
    assert PF.usable([P.Window(56, 56, 1, 1, 0, 1)] * 2, (56, 56), 4096) is None
    assert PF.usable([P.Window(4, 1, 1, 1, 0, 4)] * 4, (4, 4, 4, 4), 1) is None


def test_read_only_input_is_the_same():
    """A read-only input (the bench keeps its inputs so) gives the same answer."""
    x = np.random.default_rng(3).standard_normal((1, 20, 9, 9)).astype(np.float16)
    wins = [P.Window(9, 3, 2, 1, 1, 5)] * 2
    div = [np.full(5, 3)] * 2
    want = P.window_mean(x, wins, div)
    x.flags.writeable = False
    assert same(P.window_mean(x, wins, div), want)
    assert same(P.window_max(x, wins, True, 0)[1], walk(P.window_max, x, wins, True, 0)[1])


@pytest.mark.parametrize("rows", [1, 3, 20])
@pytest.mark.parametrize("n, out", [(9, 8), (3, 2)])
def test_padding_adds_plus_zero_to_negative_zero_sums(rows, n, out):
    """A window of -0.0 elements and padding: each pad is +0.0 added in scan order, so the sum is
    +0.0 where a pad follows an element and -0.0 where the window's elements come alone; every
    loop (lanes, rows) keeps both."""
    x = np.full((1, rows, n, n), -0.0, np.float32)
    wins = [P.Window(n, 2, 1, 1, 0, out), P.Window(n, 3, 1, 1, 1, n)]      # pads left and right
    div = [np.ones(w.out) for w in wins]
    got = P.window_mean(x, wins, div)
    assert same(got, walk(P.window_mean, x, wins, div))
    assert np.signbit(got).any() and not np.signbit(got).all()


@pytest.mark.parametrize("rows", [1, 20])
def test_a_nan_sum_keeps_the_running_sums_nan(rows):
    """Where two NaNs meet, the loops keep the running sum's (x86's first operand, NumPy's on long
    arrays): inf + -inf gives the default NaN (sign bit set), and a NaN element after it leaves
    it so; a NaN element alone gives that element's NaN. Every loop (lanes, rows)."""
    pos_nan = np.array(0x7FC00001, np.uint32).view(np.float32)            # a NaN with a payload
    x = np.zeros((1, rows, 6), np.float32)
    x[0, :, :3] = [np.inf, -np.inf, pos_nan]                             # window 0: default NaN first
    x[0, :, 3:] = [pos_nan, 1.0, 2.0]                                    # window 1: the element's NaN
    wins = [P.Window(6, 3, 3, 1, 0, 2)]
    y = P.window_mean(x, wins, [np.full(2, 3)])
    bits = y.view(np.uint32).reshape(rows, 2)
    assert (bits[:, 0] == 0xFFC00000).all(), [hex(b) for b in bits[:, 0]]
    assert (bits[:, 1] == 0x7FC00001).all(), [hex(b) for b in bits[:, 1]]


@given(off=st.integers(-40, 40), s=st.integers(1, 4), n=st.integers(1, 20), m=st.integers(1, 12),
       inside=st.booleans())
@PROPS
def test_span_is_the_windows_whose_element_lies_inside(off, s, n, m, inside):
    """``span``: exactly the windows whose element lies in the input, and 0 <= lo <= hi <= m, so
    the row loops' zero-filling loops over [0, lo) and [hi, m) never write past the row (a start
    padding wider than every window's reach once gave lo > m: writes past the output's end)."""
    from onnx_dml_bench.ops import _pool_kernels as K

    lo, hi = K.PLAIN["span"](off, s, n, m, inside)
    assert 0 <= lo <= hi <= m
    assert list(range(lo, hi)) == [c for c in range(m) if inside and 0 <= c * s + off < n]


@pytest.mark.parametrize("rows", [1, 3, 20])
def test_a_start_padding_past_every_window_is_the_walks(rows):
    """The first elements of every window in the start padding, the last in the end padding (a
    profile's 7x7 window dilated 2x3 over 16x15, padding 2): the same answers. Run under numba's
    bounds checks (``tests/test_jit.py``), an index past the output row fails here."""
    x = np.random.default_rng(rows).standard_normal((1, rows, 16, 15)).astype(np.float32)
    wins = [P.Window(16, 7, 1, 2, 2, 8), P.Window(15, 7, 1, 3, 2, 1)]
    for divisors in ([np.full(w.out, w.k) for w in wins], [P.count_within(w, 0, w.n) for w in wins]):
        assert same(P.window_mean(x, wins, divisors), walk(P.window_mean, x, wins, divisors))
    assert all(same(a, b) for a, b in zip(P.window_max(x, wins, True, 0), walk(P.window_max, x, wins, True, 0)))


@PROPS
@given(st.data())
def test_means_with_a_start_padding_past_the_windows_are_the_walks(data):
    """The row loop (few rows) where a window element lies in the start padding for every window of
    the last axis (span's lo past the windows' count), under hypothesis: the walk's answers (and,
    run under bounds checks by ``tests/test_jit.py``, no index past the output)."""
    draw = data.draw
    k, d, s, out = draw(st.integers(2, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    eff = (k - 1) * d + 1
    if s * out + 1 > eff - 1:
        k, d, s, out, eff = 4, 3, 1, 1, 10
    begin = draw(st.integers(s * out + 1, eff - 1))
    end = draw(st.integers(0, eff - 1))
    n = max(1, (out - 1) * s + eff - begin - end + draw(st.integers(0, s - 1)))
    out = (n + begin + end - eff) // s + 1
    if out < 1:
        return
    rows, h = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    x = np.random.default_rng(n * 131 + begin).standard_normal((1, rows, h, n)).astype(dtype)
    wins = [P.Window(h, 1, 1, 1, 0, h), P.Window(n, k, s, d, begin, out)]
    for divisors in ([np.full(w.out, w.k) for w in wins], [np.maximum(P.count_within(w, 0, w.n), 1) for w in wins]):
        assert same(P.window_mean(x, wins, divisors), walk(P.window_mean, x, wins, divisors)), wins
