"""The bounds of the AveragePool readings (open point sum-precision) against the evaluations real
kernels use, simulated: every sound evaluation passes, a float16 running sum over a long window
fails (``stalled-accumulator``); and the rule every reading's bound keeps (docs/verdicts.md): at
most ``_sums.SCALE_FRACTION`` of the output's scale, on every case of the profiles."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from onnx_dml_bench import registry
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _onnx_pool as O
from onnx_dml_bench.ops import _sum_evaluations as E
from onnx_dml_bench.ops import _sums as SUM
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.verdict import judge

AP = registry.get("average_pooling1")
F16, F32 = np.float16, np.float32


def ap_case(x: np.ndarray, k, s, opset=19) -> Case:
    d = AP.Desc(InputSizes=x.shape, DataType={F16: "FLOAT16", F32: "FLOAT32"}[x.dtype.type], DimensionCount=2,
                Strides=s, WindowSize=k, StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1))
    return Case(AP, d, opset, make_variant(), "explicit", 0, (("X", tuple(float(v) for v in x.ravel())),))


def windows(x: np.ndarray, k, s) -> np.ndarray:
    """(N, C, OH, OW, kh * kw): the window elements of each output position, in scan order."""
    n, c, h, w = x.shape
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.empty((n, c, oh, ow, k[0] * k[1]), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[..., i * k[1] + j] = x[:, :, i:i + s[0] * oh:s[0], j:j + s[1] * ow:s[1]]
    return out


# -- the evaluations (vectorised over the windows: v is (..., n) in the data type) ----------------

def sequential(v, order, acc):
    s = v[..., order[0]].astype(acc)
    for i in order[1:]:
        s = (s + v[..., i].astype(acc)).astype(acc)
    return s


def pairwise(v, acc):
    v = v.astype(acc)
    while v.shape[-1] > 1:
        if v.shape[-1] % 2:
            v = np.concatenate([v, np.zeros(v.shape[:-1] + (1,), acc)], axis=-1)     # + 0 is exact
        v = (v[..., 0::2] + v[..., 1::2]).astype(acc)
    return v[..., 0]


def blocked(v, run, strided, acc, combine="pairwise"):
    """Runs of at most ``run`` terms, each summed one after another (a thread's share: contiguous,
    or every T-th term), then combined pairwise (a tree in shared memory) or one after another."""
    n = v.shape[-1]
    threads = -(-n // run)
    parts = []
    for t in range(threads):
        idx = list(range(t, n, threads)) if strided else list(range(t * run, min(n, (t + 1) * run)))
        parts.append(sequential(v, idx, acc))
    p = np.stack(parts, axis=-1)
    return pairwise(p, acc) if combine == "pairwise" else sequential(p, list(range(threads)), acc)


def divide(s, count, acc, how, out):
    """The sum ``s`` (in ``acc``) to the average in ``out``: divided, times the reciprocal in the
    accumulator, or times the reciprocal in the output type."""
    if how == "divide":
        q = (s.astype(np.float64) / count).astype(acc)
    elif how == "reciprocal":
        q = (s * acc(1.0 / count)).astype(acc)
    else:
        q = (s.astype(out) * out(1.0 / count)).astype(out)
    return q.astype(out)


def evaluations(v, rng, trials):
    """name -> answer: the sound evaluations of the windows' sums a kernel makes, in float16 and
    float32 accumulators, each divided three ways."""
    n = v.shape[-1]
    out = v.dtype.type
    sums = {}
    for acc in {out, F32}:
        a = acc.__name__
        if n <= SUM.RUN[np.finfo(acc).bits]:
            sums[f"{a}-scan"] = sequential(v, list(range(n)), acc)
            sums[f"{a}-reversed"] = sequential(v, list(range(n))[::-1], acc)
            for t in range(trials):
                sums[f"{a}-order{t}"] = sequential(v, list(rng.permutation(n)), acc)
        sums[f"{a}-pairwise"] = pairwise(v, acc)
        for t in range(trials):
            sums[f"{a}-pairwise-shuffled{t}"] = pairwise(v[..., rng.permutation(n)], acc)
        for run in (2, 4, 8, 16, 32, 64):
            if run < n:
                for strided in (False, True):
                    sums[f"{a}-runs{run}{'-strided' if strided else ''}"] = blocked(v, run, strided, acc)
                if -(-n // run) <= SUM.RUN[np.finfo(acc).bits] and run <= SUM.RUN[np.finfo(acc).bits]:
                    # few runs of short length: combined one after another is a sound reduction too
                    if run - 1 + -(-n // run) - 1 <= SUM.depth(n, acc):
                        sums[f"{a}-runs{run}-then-scan"] = blocked(v, run, True, acc, "scan")
    res = {}
    for name, s in sums.items():
        acc = s.dtype.type
        for how in ("divide", "reciprocal", "out-reciprocal"):
            res[f"{name}/{how}"] = divide(s, n, acc, how, out)
    return res


def stalled_sum(v):
    """A float16 running sum over the window in scan order, then divided: no sound reduction."""
    return divide(sequential(v, list(range(v.shape[-1])), F16), v.shape[-1], F16, "divide", F16)


def verdict_of(case, y):
    return judge(case, case.inputs(), Outcome(True, "done", None, {"Y": y}), None, None, ep_name="TestEP",
                 ep_is_cpu=False)


def values(kind, shape, rng, dtype):
    if kind == "positive":
        return (rng.random(shape) * 2).astype(dtype)
    if kind == "cancelling":
        return (rng.random(shape) * 2 - 1).astype(dtype)
    if kind == "mixed-scales":
        return ((rng.random(shape) - 0.3) * 10.0 ** rng.integers(-3, 3, shape)).astype(dtype)
    if kind == "near-ulp":             # terms near half an ULP of the growing sum: every rounding one way
        return (0.6 + rng.random(shape) * 0.01).astype(dtype) * np.where(rng.random(shape) < 0.02, 50, 1).astype(dtype)
    raise ValueError(kind)


SIZES = [  # (input, window, stride, value kinds, trials)
    ((2, 3, 9, 9), (3, 3), (1, 1), ("positive", "cancelling", "mixed-scales", "near-ulp"), 40),
    ((1, 4, 14, 14), (7, 7), (7, 7), ("positive", "cancelling", "mixed-scales", "near-ulp"), 40),
    ((1, 2, 8, 8), (8, 8), (1, 1), ("positive", "cancelling", "near-ulp"), 40),
    ((1, 2, 64, 64), (64, 64), (1, 1), ("positive", "cancelling", "mixed-scales", "near-ulp"), 3),
    ((1, 2, 112, 112), (112, 112), (1, 1), ("positive", "cancelling", "near-ulp"), 1),
]


@pytest.mark.parametrize("dtype", [F16, F32], ids=["float16", "float32"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s[1])))
def test_every_sound_evaluation_passes(size, dtype):
    shape, k, s, kinds, trials = size
    rng = np.random.default_rng(sum(shape) + k[0])
    for kind in kinds:
        x = values(kind, shape, rng, dtype)
        case = ap_case(x, k, s)
        v = windows(x, k, s)
        for name, y in evaluations(v, rng, trials).items():
            j = verdict_of(case, y)
            assert j.verdict == "PASS", (kind, name, j.reason)
            assert "stalled-accumulator" not in j.labels


@pytest.mark.parametrize("side,mean,want", [(64, 3.0, 2.0), (112, 3.0, 0.653), (112, 1.0, 0.163),
                                            (112, 0.03125, 0.0051)])
def test_a_stalled_float16_running_sum_fails_with_its_label(side, mean, want):
    """The squeeze sizes of EfficientNet, MobileNetV3, RegNetY: a float16 running sum stops moving
    once its step passes the terms (constant 1.0 stalls at 2048: 0.163; values of mean 1.0 stall
    later, near 0.33; 0.03125, a tie at 64, stalls there: 0.0051)."""
    x = np.full((1, 2, side, side), mean, F16)
    y = stalled_sum(windows(x, (side, side), (1, 1)))
    assert abs(float(y.ravel()[0]) - want) <= 0.01 * want
    j = verdict_of(ap_case(x, (side, side), (1, 1)), y)
    assert j.verdict == "FAIL" and "stalled-accumulator" in j.labels, j.reason
    # random values of that mean: the same
    rng = np.random.default_rng(side)
    x = (mean * (0.5 + rng.random((1, 2, side, side)))).astype(F16)
    j = verdict_of(ap_case(x, (side, side), (1, 1)), stalled_sum(windows(x, (side, side), (1, 1))))
    assert j.verdict == "FAIL" and "stalled-accumulator" in j.labels, j.reason


def test_a_float16_running_sum_of_cancelling_terms_fails_without_the_stall_label():
    """uniform [-64, 64) over 256x256: a float16 running sum's partial sums walk about zero, far
    below the point where its terms stop moving it (|P - N| ~ 1e4 against 2^11 x 32), so it never
    stalls; its roundings still take it past a sound reduction's bound. It fails, labelled
    ``in-type-running-sum`` (such an accumulator is not ruled out), not ``stalled-accumulator``."""
    rng = np.random.default_rng(7)
    x = (rng.random((1, 4, 256, 256)) * 128 - 64).astype(F16)
    case = ap_case(x, (256, 256), (1, 1))
    j = verdict_of(case, stalled_sum(windows(x, (256, 256), (1, 1))))
    assert j.verdict == "FAIL", j.reason
    assert "in-type-running-sum" in j.labels and "stalled-accumulator" not in j.labels, j.labels


def test_a_running_sum_over_a_short_window_is_a_sound_evaluation():
    """7x7 and 8x8 windows summed one after another in float16: what a pooling kernel's loop does,
    allowed (summed-in-type), never labelled stalled."""
    rng = np.random.default_rng(7)
    for side in (7, 8):
        x = (rng.random((1, 3, side, side)) * 40).astype(F16)
        y = stalled_sum(windows(x, (side, side), (1, 1)))
        j = verdict_of(ap_case(x, (side, side), (1, 1)), y)
        assert j.verdict == "PASS", j.reason


def test_one_element_off_by_its_bound_fails():
    """Each reading's bound can fail: one element moved just past the widest reading's bound."""
    rng = np.random.default_rng(3)
    for kind in ("positive", "cancelling"):
        x = values(kind, (1, 2, 64, 64), rng, F16)
        case = ap_case(x, (64, 64), (1, 1))
        ins = case.inputs()
        ref = AP.expected(case, ins)["Y"]
        below, above = AP.error_bound(case, ins, {"Y": ref})["Y"]
        y = ref.astype(np.float64).copy()
        y.flat[0] += float(above.flat[0]) * 1.01 + float(np.spacing(F16(abs(ref.flat[0]))))
        y = y.astype(F16)
        assert verdict_of(case, y).verdict == "FAIL"


# -- the rule: no reading's bound exceeds SCALE_FRACTION of the output's scale ---------------------

def _geometry_stats(case) -> SUM.Stats:
    """The window counts of ``case``'s graph with synthetic values: |x| = 1 everywhere (S = n)."""
    a = O.case_node(case)[1]
    x = np.ones((1, 1, *case.desc.InputSizes[2:]), np.float32)
    return SUM.stats(x, a)


def _rule_holds(st: SUM.Stats, dtype) -> list[str]:
    """Check every reading's bound against the rule for three value patterns of the window counts
    ``st``: one-signed (the average is the scale), cancelling (an average of 0), and half way."""
    bad = []
    c = np.where(st.c > 0, st.c, 1.0)
    scale = st.n / c
    shape = np.shape(scale)
    one, minus, zero = (np.broadcast_to(v, shape) for v in (1.0, -1.0, 0.0))     # constants: no copies
    for name, P, N, ref in (("positive", st.n, zero, scale), ("cancelling", st.n / 2, st.n / 2, zero),
                            ("half", 0.75 * st.n, 0.25 * st.n, scale / 2)):
        pat = SUM.Stats(st.n, st.c, np.asarray(st.n, np.float64), P, N, one, minus, zero, zero, zero)
        for reading in SUM.readings(dtype):
            below, above = SUM.bound(pat, ref, dtype, reading)
            absolute = 4 * float(np.finfo(dtype).smallest_subnormal) + 2 * float(np.finfo(SUM.accumulator(dtype, reading)).smallest_subnormal)
            limit = SUM.SCALE_FRACTION * scale + absolute
            worst = np.maximum(below, above) / limit
            if (worst > 1).any():
                bad.append(f"{name} {reading}: {float(worst.max()):.3g}x the rule, window of {int(st.n.max())}")
    return bad


def _pool_cases(profile):
    from onnx_dml_bench import plan
    return [c for c in plan.sweep_cases(profile) if c.operator is AP]


@pytest.mark.parametrize("profile", ["default", "networks", "limits"])
def test_no_reading_bound_exceeds_the_rule_on_any_case(profile):
    """Every AveragePool case of the profile (its windows, its divisors), in its own data type and
    in the other one, with windows of one sign, cancelling, and in between."""
    cases = _pool_cases(profile)
    assert cases
    seen = {}
    for case in cases:
        key = (tuple(case.desc.InputSizes[2:]), case.desc.WindowSize, case.desc.Strides, case.desc.StartPadding,
               case.desc.EndPadding, case.desc.Dilations, case.desc.IncludePadding, case.variant, case.opset)
        if key in seen:
            continue
        seen[key] = True
        st = _geometry_stats(case)
        for dt in (F16, F32):
            problems = _rule_holds(st, dt)
            assert not problems, (case.id, problems)
    if profile == "limits":
        assert max(int(np.prod(k[2])) for k in seen) >= 1 << 20      # the longest windows are covered


# -- the float16 in-type bound from the envelope of the simulated evaluations ------------------------

def test_a_uniform_window_answered_half_off_fails():
    """uniform(-64, 64) over a 112x112 float16 window: every sound evaluation is within about 0.001
    of the exact average; an answer 0.5 off fails (the worst-case formula alone allows about 1.1)."""
    rng = np.random.default_rng(112)
    x = (rng.random((1, 2, 112, 112)) * 128 - 64).astype(F16)
    case = ap_case(x, (112, 112), (1, 1))
    v = windows(x, (112, 112), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"].astype(np.float64)
    for name, y in evaluations(v, rng, 1).items():
        assert np.abs(y.astype(np.float64) - ref).max() < 0.01, name
    st = SUM.stats(x, O.case_node(case)[1])
    _, above = SUM.bound(st, ref, F16, SUM.SUMMED_IN_TYPE)
    assert (above < 0.05).all(), above
    for off in (0.5, -0.5, 0.1):
        j = verdict_of(case, (ref + off).astype(F16))
        assert j.verdict == "FAIL", (off, j.reason)


def test_one_percent_off_on_a_cancelling_3x3_window_fails():
    """A 3x3 float16 window whose terms cancel (multiples of 1/16: every partial sum is exact, in any
    order): realistic evaluations stay far nearer than 1 % of the average, so an answer 1 % off
    fails, though the worst-case formula would allow it."""
    x = np.array([0.875, -0.8125, 0.6875, -0.5625, 0.5, -0.4375, 0.3125, -0.25, 0.5], F16).reshape(1, 1, 3, 3)
    case = ap_case(x, (3, 3), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"].astype(np.float64)
    st = SUM.stats(x, O.case_node(case)[1])
    worst = dataclasses.replace(st, sim=None)
    _, above = SUM.bound(st, ref, F16, SUM.SUMMED_IN_TYPE)
    _, wide_open = SUM.bound(worst, ref, F16, SUM.SUMMED_IN_TYPE)
    assert 0.01 * abs(ref.flat[0]) < wide_open.flat[0]          # the worst case alone lets it through
    rng = np.random.default_rng(9)
    v = windows(x, (3, 3), (1, 1))
    for name, y in evaluations(v, rng, 200).items():
        assert abs(float(y.flat[0]) - ref.flat[0]) < 0.0025 * abs(ref.flat[0]), name
        assert verdict_of(case, y).verdict == "PASS", name
    for sign in (1, -1):
        j = verdict_of(case, (ref * (1 + sign * 0.01)).astype(F16))
        assert j.verdict == "FAIL", j.reason


@pytest.mark.parametrize("side", [3, 5, 8])
def test_random_orders_and_blockings_of_short_windows_pass(side):
    """Windows of at most 64 elements: any order one after another, runs of 2 to 64 (contiguous or
    strided) then pairwise, every one within the data-driven bound."""
    rng = np.random.default_rng(side)
    for kind in ("positive", "cancelling", "mixed-scales", "near-ulp"):
        x = values(kind, (1, 3, side + 4, side + 4), rng, F16)
        case = ap_case(x, (side, side), (1, 1))
        v = windows(x, (side, side), (1, 1))
        n = side * side
        answers = {f"order{t}": sequential(v, list(rng.permutation(n)), F16) for t in range(60)}
        for run in (2, 3, 5, 7, 13, 20, 33, 64):
            if run < n:
                for strided in (False, True):
                    answers[f"runs{run}{strided}"] = blocked(v, run, strided, F16)
        for name, s in answers.items():
            for how in ("divide", "reciprocal", "out-reciprocal"):
                j = verdict_of(case, divide(s, n, F16, how, F16))
                assert j.verdict == "PASS", (kind, name, how, j.reason)


def test_the_envelope_is_far_below_the_worst_case_on_real_data():
    """The data-driven bound is what decides on a long window (and never wider than the worst case)."""
    rng = np.random.default_rng(5)
    x = (rng.random((1, 4, 64, 64)) * 2 - 1).astype(F16)
    case = ap_case(x, (64, 64), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"].astype(np.float64)
    st = SUM.stats(x, O.case_node(case)[1])
    _, above = SUM.bound(st, ref, F16, SUM.SUMMED_IN_TYPE)
    _, wide_open = SUM.bound(dataclasses.replace(st, sim=None), ref, F16, SUM.SUMMED_IN_TYPE)
    assert (above <= wide_open).all() and (above < wide_open / 10).all()


@pytest.mark.parametrize("dtype", [F16, np.float32])
def test_the_envelope_is_the_widest_reading_s_bound_at_every_position(dtype):
    """``envelope`` (one reading's pair held at a time) is the elementwise maximum of every
    reading's bound, bit for bit, NaN where one has NaN."""
    rng = np.random.default_rng(11)
    x = (rng.random((2, 3, 20, 20)) * 2 - 1).astype(dtype)
    x[0, 0, 3, 4] = np.inf
    case = ap_case(x, (5, 5), (3, 3))
    ref = AP.expected(case, case.inputs())["Y"].astype(np.float64)
    st = SUM.stats(x, O.case_node(case)[1])
    pairs = [SUM.bound(st, ref, dtype, r) for r in SUM.readings(dtype)]
    want = [np.maximum.reduce([np.broadcast_to(p[i], ref.shape) for p in pairs]) for i in (0, 1)]
    got = SUM.envelope(st, ref, dtype)
    for g, w in zip(got, want):
        assert np.array_equal(np.broadcast_to(g, ref.shape), w, equal_nan=True)
    if len(pairs) > 1:
        assert any(not np.array_equal(p[1], want[1], equal_nan=True) for p in pairs)


# -- float32 sums of long windows: the simulated bound (``_sum_evaluations.simulated_wide_error``) -------------

def wide_values(kind, shape, rng, dtype):
    """Window data: cancelling, one-signed (partial sums that grow: positive, small, offset), a
    constant (every rounding alike), values on a coarse grid, and signs in two halves of the plane
    (a plane whose columns and rows sum very differently)."""
    if kind in ("cancelling", "positive", "mixed-scales", "near-ulp"):
        return values(kind, shape, rng, dtype)
    if kind == "small":
        return (rng.random(shape) / 16).astype(dtype)
    if kind == "offset":
        return (100 + rng.random(shape) * 2 - 1).astype(dtype)
    if kind == "constant":
        return np.full(shape, 0.1, dtype)
    if kind == "halves":
        x = (1 + rng.random(shape) * 0.01).astype(np.float64)
        x[..., shape[-1] // 2:] *= -1
        return x.astype(dtype)
    raise ValueError(kind)


def wide_evaluations(v, w, rng, trials):
    """name -> float32 sum per row of ``v`` ((..., n) window elements, row-major over a window of
    ``w`` columns): orders, blockings and trees a kernel takes, drawn independently of the judge's
    simulation (random permutations one after another, random lane and thread counts, random run
    lengths, combined one after another or by a tree in shared memory, the window column by column,
    compensated summation, float64)."""
    v = v.astype(F32)
    m, n = v.reshape(-1, v.shape[-1]).shape
    flat = v.reshape(m, n)

    def seq(a):
        return np.add.accumulate(a, axis=-1)[..., -1]

    def tree(a):                      # the upper half onto the lower half (shared memory)
        width = 1 << max(0, (a.shape[-1] - 1).bit_length())
        a = np.concatenate([a, np.zeros((a.shape[0], width - a.shape[-1]), F32)], axis=-1)
        while a.shape[-1] > 1:
            a = a[:, :a.shape[-1] // 2] + a[:, a.shape[-1] // 2:]
        return a[:, 0]

    def pad(a, k):
        t = -(-a.shape[-1] // k) * k
        return np.concatenate([a, np.zeros((a.shape[0], t - a.shape[-1]), F32)], axis=-1)

    out = {"float64": flat.astype(np.float64).sum(axis=1).astype(F32),
           "column-major": seq(flat.reshape(m, -1, w).transpose(0, 2, 1).reshape(m, n))}
    for t in range(trials):
        out[f"order{t}"] = seq(flat[:, rng.permutation(n)])
        lanes = int(rng.integers(2, 100))
        part = np.add.accumulate(pad(flat, lanes).reshape(m, -1, lanes), axis=1)[:, -1, :]
        out[f"lanes{lanes}"] = seq(part)
        threads = int(rng.choice([32, 64, 96, 128, 192, 256, 512, 768, 1024, 2048, 4096]))
        if threads < n:
            out[f"grid{threads}"] = tree(np.add.accumulate(pad(flat, threads).reshape(m, -1, threads), axis=1)[:, -1, :])
        run = int(rng.integers(16, max(17, n // 2)))
        runs = np.add.accumulate(pad(flat, run).reshape(m, -1, run), axis=2)[:, :, -1]
        out[f"runs{run}-tree"], out[f"runs{run}-then-scan"] = tree(runs), seq(runs)
    s, comp = np.zeros(m, F32), np.zeros(m, F32)               # Kahan
    for j in range(min(n, 1 << 14)):
        y = flat[:, j] - comp
        t_ = s + y
        comp = (t_ - s) - y
        s = t_
    if n <= 1 << 14:
        out["kahan"] = s
    return out


WIDE_CASES = [  # (window side, kinds, data types, trials)
    (16, ("cancelling", "positive", "small", "offset", "constant", "near-ulp", "halves", "mixed-scales"), (F32, F16), 6),
    (64, ("cancelling", "positive", "small", "offset", "constant", "near-ulp", "halves"), (F32, F16), 4),
    (256, ("cancelling", "positive", "offset", "constant", "halves"), (F32, F16), 2),
    (512, ("cancelling", "positive"), (F32,), 1),
]


@pytest.mark.parametrize("side,kinds,dtypes,trials", WIDE_CASES, ids=lambda v: str(v) if isinstance(v, int) else None)
def test_every_float32_evaluation_of_a_long_window_lies_inside_the_simulated_bound(side, kinds, dtypes, trials):
    """The summed-wide bound of a window of 2^8 to 2^18 elements (the worst case narrowed to
    ``SIM_FACTOR`` times the largest error of the simulated float32 sums and the statistical floor):
    every evaluation of :func:`wide_evaluations` (none of them one of the simulated ones), divided
    by the count or multiplied by its reciprocal (float16 data: also its float16 reciprocal), lies
    inside it; the bound is narrower than the worst case."""
    rng = np.random.default_rng(side)
    narrower = 0
    for dtype in dtypes:
        for kind in kinds:
            x = wide_values(kind, (1, 2, side, side), rng, dtype)
            case = ap_case(x, (side, side), (1, 1))
            st = SUM.stats(x, O.case_node(case)[1])
            assert st.wide is not None and np.isfinite(st.wide).all()
            ref = AP.expected(case, case.inputs())["Y"]
            below, above = SUM.bound(st, ref, dtype, SUM.SUMMED_WIDE)
            _, worst = SUM.bound(dataclasses.replace(st, wide=None), ref, dtype, SUM.SUMMED_WIDE)
            narrower += int(dtype == F32 and (above < worst / 2).all())
            r = ref.astype(np.float64).reshape(-1)
            n = side * side
            for name, s in wide_evaluations(windows(x, (side, side), (1, 1)), side, rng, trials).items():
                answers = {"divided": (s.astype(np.float64) / n).astype(F32), "reciprocal": s * F32(1 / n)}
                if dtype == F16:
                    answers["type-reciprocal"] = s * F32(F16(1 / n))
                for how, y in answers.items():
                    d = y.astype(dtype).astype(np.float64) - r
                    ok = (-below.reshape(-1) <= d) & (d <= above.reshape(-1))
                    assert ok.all(), (kind, dtype.__name__, name, how, d, below.ravel(), above.ravel())
    assert 2 * narrower >= len(kinds)        # the simulation narrows the float32 bound on most data


def test_the_statistical_floor_is_far_above_random_orders():
    """``WIDE_FLOOR``: the error of a sum one after another in float32 in a random order, over many
    orders of one-signed data (partial sums that grow to P) and of cancelling data, stays well below
    WIDE_FLOOR times u times the window's walk (``_sum_evaluations.walk``: the random-walk scale of
    the roundings of partial sums no larger than the largest sums of so many of the terms); the
    largest seen is a sizeable share of the scale, so the scale is the right one."""
    rng = np.random.default_rng(11)
    u = 2.0 ** -24
    for kind, n in (("positive", 4096), ("offset", 4096), ("cancelling", 4096), ("halves", 4096),
                    ("positive", 65536)):
        x = wide_values(kind, (1, n), rng, F32)
        exact = x.astype(np.float64).sum()
        unit_scale = u * float(E.walk(x)[0])
        assert unit_scale <= u * max(float(x[x > 0].sum()), float(-x[x < 0].sum())) * np.sqrt(n / 3)
        worst = 0.0
        for _ in range(200 if n <= 4096 else 20):
            s = np.add.accumulate(x[0, rng.permutation(n)])[-1]
            worst = max(worst, abs(float(s) - exact) / unit_scale)
        assert worst < SUM.WIDE_FLOOR / 2, (kind, n, worst)
        if kind in ("positive", "offset"):
            assert worst > 0.05, (kind, n, worst)       # the scale is not far too wide


def _exact_walk(x: np.ndarray) -> float:
    """The walk's defining sum, term by term: sqrt(sum over k = 2..K of max_{j <= k} M_j^2 / 3)."""
    s = np.sort(x.astype(np.float64))
    low, high = np.cumsum(s), np.cumsum(s[::-1])
    m = np.maximum.accumulate(np.maximum(high, -low) ** 2)
    return float(np.sqrt(m[1:].sum() / 3))


@pytest.mark.parametrize("k", [2, 3, 256, 1024, 1025, 5000, 65536])
def test_the_walk_is_its_sum_term_by_term_or_just_above(k):
    """Up to ``WALK_BLOCKS`` terms the walk is its defining sum; beyond, counted by blocks, at or
    above it and within 0.5 % (cancelling, offset and one-signed data)."""
    rng = np.random.default_rng(k)
    x = (rng.random((3, k)) * 128 - 64).astype(F32)
    x[1] += 40
    x[2] = np.abs(x[2])
    got = E.walk(x)
    want = np.array([_exact_walk(r) for r in x])
    if k <= E.WALK_BLOCKS:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        assert (got >= want * (1 - 1e-12)).all() and (got <= want * 1.005).all(), got / want


def _random_tree(k: int, rng) -> list[list[int]]:
    """The additions of a random binary tree over k leaves (two nodes of the forest drawn at random,
    joined, until one is left): each as the leaves it sums."""
    nodes = [[i] for i in range(k)]
    out = []
    while len(nodes) > 1:
        i, j = sorted(rng.choice(len(nodes), 2, replace=False))
        b, a = nodes.pop(j), nodes.pop(i)
        nodes.append(a + b)
        out.append(nodes[-1])
    return out


def _chain(order) -> list[list[int]]:
    return [list(order[:j]) for j in range(2, len(order) + 1)]


def _pairwise(order) -> list[list[int]]:
    level, out = [[i] for i in order], []
    while len(level) > 1:
        nxt = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)] + ([level[-1]] if len(level) % 2 else [])
        out += [n for n in nxt if len(n) > 1 and n not in level]
        level = nxt
    return out


@pytest.mark.parametrize("kind", ["cancelling", "positive", "offset", "halves", "small", "constant", "one-huge",
                                  "padded"])
def test_the_walk_bounds_the_additions_of_every_tree(kind):
    """``walk``: over chains in random orders (the largest-first and the one-sign-first ones too),
    pairwise trees, runs and random trees, the sum of the squares of the additions' exact results is
    at most 3 walk^2; the walk is at most the scale with every partial sum at max(P, N)."""
    rng = np.random.default_rng(len(kind))
    k = 257
    if kind == "one-huge":
        x = (rng.random(k) * 2 - 1).astype(F32)
        x[100] = 1e6
    elif kind == "padded":
        x = wide_values("cancelling", (1, k), rng, F32)[0]
        x[::3] = 0
    else:
        x = wide_values(kind, (1, k), rng, F32)[0]
    xf = x.astype(np.float64)
    w = float(E.walk(x[None, :])[0])
    P, N = float(xf[xf > 0].sum()), float(-xf[xf < 0].sum())
    assert w <= max(P, N) * np.sqrt((k - 1) / 3) * (1 + 1e-12)
    trees = [_chain(np.argsort(-xf)), _chain(np.argsort(xf)), _chain(np.argsort(~(xf > 0), kind="stable")),
             _pairwise(np.argsort(-xf)), _pairwise(list(range(k)))]
    for _ in range(30):
        order = rng.permutation(k)
        trees += [_chain(order), _pairwise(order), _random_tree(k, rng)]
        run = int(rng.integers(2, 40))
        runs = [list(order[i:i + run]) for i in range(0, k, run)]
        trees.append([r[:j] for r in runs for j in range(2, len(r) + 1)] +
                     [sum(runs[:j], []) for j in range(2, len(runs) + 1)])
    for tree in trees:
        assert len(tree) == k - 1
        squares = sum(float(xf[a].sum()) ** 2 for a in tree)
        assert squares <= 3 * w * w * (1 + 1e-9), (kind, squares / (3 * w * w))


def test_a_window_answered_a_little_off_fails_where_the_worst_case_let_it_through():
    """uniform(-64, 64) over a 512x512 float32 window: zeros, halved, and the average of the window
    shifted by one column all fail (the worst case of 2^18 float32 additions let them through)."""
    rng = np.random.default_rng(512)
    x = (rng.random((1, 2, 512, 513)) * 128 - 64).astype(F32)
    case = ap_case(x[..., :512].copy(), (512, 512), (1, 1))
    ins = case.inputs()
    ref = AP.expected(case, ins)["Y"]
    st = SUM.stats(ins["X"], O.case_node(case)[1])
    _, worst = SUM.bound(dataclasses.replace(st, wide=None), ref, F32, SUM.SUMMED_WIDE)
    shifted = x[..., 1:].astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(F32)
    for name, y in (("zeros", np.zeros_like(ref)), ("halved", ref / 2), ("shifted", shifted)):
        assert (np.abs(y.astype(np.float64) - ref) < worst).all(), name      # inside the worst case
        assert verdict_of(case, y).verdict == "FAIL", name


# -- the last rounding, and overflow -------------------------------------------------------------

def test_a_single_element_window_has_one_answer():
    """A window of one element divided by one: every evaluation gives the element itself, so its
    neighbours fail (the last rounding is taken from the interval, not added as a term)."""
    x = np.array([65504, 1, -3, 0.5], F16).reshape(1, 1, 2, 2)
    case = ap_case(x, (1, 1), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"]
    below, above = SUM.bound(SUM.stats(x, O.case_node(case)[1]), ref, F16, SUM.SUMMED_WIDE)
    assert (below == 0).all() and (above == 0).all()
    for i in range(4):
        y = ref.copy()
        y.flat[i] = np.nextafter(y.flat[i], F16(-np.inf))
        assert verdict_of(case, y).verdict == "FAIL", i


def test_a_subnormal_average_rounds_to_its_own_neighbours_only():
    """float32 subnormal terms sum exactly; the average of 37 smallest subnormals over 30 is 1.23 of
    them, so every evaluation (divided, or times the rounded reciprocal) answers one: zero fails."""
    eta = float(np.finfo(F32).smallest_subnormal)
    x = np.zeros(30, F32)
    x[:5] = np.array([10, 10, 10, 5, 2], F32) * F32(eta)
    case = ap_case(x.reshape(1, 1, 5, 6), (5, 6), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"]
    assert ref.item() == F32(eta)
    s = x.sum(dtype=F32)
    assert (s / F32(30)) == F32(eta) and (s * F32(1 / 30)) == F32(eta)
    assert verdict_of(case, np.zeros_like(ref)).verdict == "FAIL"
    assert verdict_of(case, ref).verdict == "PASS"


def _sound_f16_sums(v, rng, trials):
    """Sums in float16 of the rows of ``v`` a sound reduction may make: any order, one after another
    for at most 64 terms, else runs of at most 64 combined pairwise; and the positive and the
    negative terms apart."""
    n = v.shape[-1]
    out = []
    for _ in range(trials):
        w = v[..., rng.permutation(n)]
        if n <= 64:
            out.append(sequential(w, list(range(n)), F16))
        else:
            out.append(blocked(w, int(rng.integers(2, 65)), bool(rng.integers(2)), F16))
    # the positive terms first, then the negative ones: apart in the tree
    signs = v[..., np.argsort(-np.sign(v.astype(np.float64)), axis=-1, kind="stable")[0]] if v.shape[0] == 1 else \
        np.take_along_axis(v, np.argsort(-np.sign(v.astype(np.float64)), axis=-1, kind="stable"), axis=-1)
    if n <= 64:
        zero = F16(0)
        pos, neg = np.where(v > 0, v, zero), np.where(v < 0, v, zero)
        out.append((sequential(pos, list(range(n)), F16) + sequential(neg, list(range(n)), F16)).astype(F16))
    else:
        out.append(blocked(signs, 64, False, F16))
    return out


@pytest.mark.parametrize("n", [4, 9, 64, 256])
def test_a_sum_overflows_only_where_overflow_allows_it(n):
    """Windows whose positive (negative) terms sum near the largest float16: wherever a sound
    float16 evaluation overflows, the overflow reading allows that very non-finite answer; and the
    reading does not allow an overflow the terms cannot make (one large term with small ones)."""
    from onnx_dml_bench.compare import nonfinite_allowed
    rng = np.random.default_rng(n)
    side = int(np.sqrt(n))
    rows = []
    for _ in range(40):
        target = rng.uniform(0.9, 1.4) * 65504
        x = rng.random(n) * (4 * target / n)            # positive terms summing to about target
        x = np.where(rng.random(n) < 0.5, -x, x)
        rows.append(x)
    big = np.array([65504.0, 1.0, 1.0, 2 ** -14] + [0.0] * (n - 4))
    rows.append(np.where(np.arange(n) % 2 == 1, -big, big) if n > 4 else big)
    x = np.stack(rows).astype(F16).reshape(1, len(rows), side, side)
    case = ap_case(x, (side, side), (1, 1))
    st = SUM.stats(x, O.case_node(case)[1])
    allowed, possible = SUM.overflow(st, F16, SUM.SUMMED_IN_TYPE)
    v = windows(x, (side, side), (1, 1)).reshape(len(rows), n)
    overflowed = 0
    for s in _sound_f16_sums(v, rng, 30):
        bad = ~np.isfinite(s)
        overflowed += int(bad.sum())
        with np.errstate(invalid="ignore"):
            ok = nonfinite_allowed(allowed.reshape(-1), s.astype(F16))
        assert (ok | ~bad).all(), (n, np.flatnonzero(bad & ~ok))
    assert overflowed > 0                      # the data does overflow in some evaluations
    assert not possible.reshape(-1)[-1]        # 65504 and a few small terms: no order overflows


# -- the realistic walk: the random-walk scale of the orders real kernels take ----------------------

def _index_orders(h: int, w: int) -> dict[str, np.ndarray]:
    """The chains of ``realistic_walk`` over an h x w window, as explicit index orders."""
    idx = np.arange(h * w).reshape(h, w)
    out = {"row-major": idx.ravel(), "reversed": idx.ravel()[::-1], "column-major": idx.T.ravel(),
           "column-major-reversed": idx.T.ravel()[::-1]}
    for th, tw in E.WALK_TILES:
        order = [idx[i0 + i, j0 + j] for i0 in range(0, h, th) for j0 in range(0, w, tw)
                 for i in range(th) for j in range(tw) if i0 + i < h and j0 + j < w]
        out[f"tiles{th}x{tw}"] = np.array(order)
    return out


def _combined(totals: np.ndarray) -> float:
    """The larger of the squares of a pairwise tree's and of a chain's additions over ``totals``."""
    a, tree = list(totals), 0.0
    while len(a) > 1:
        a = [a[i] + (a[i + 1] if i + 1 < len(a) else 0.0) for i in range(0, len(a), 2)]
        tree += sum(t * t for t in a)
    return max(tree, float((np.cumsum(totals) ** 2).sum()))


@pytest.mark.parametrize("kind", ["cancelling", "positive", "halves", "tiles"])
def test_the_realistic_walk_is_its_orders_largest(kind):
    """``realistic_walk`` over a 40x70 window: the largest sum of squared partial sums over its
    chains (explicit index orders), its lanes (each lane's partial sums, padded to whole rows of
    lanes, plus how the lane totals are combined) and its runs; and at most :func:`walk` (within
    the padding's zeros: a lane or run padded with +0.0 repeats its last partial sum)."""
    rng = np.random.default_rng(len(kind))
    h, w = 40, 70
    if kind == "tiles":
        x = (np.abs(rng.random((h, w))) * np.where(((np.arange(h) // 8)[:, None] + (np.arange(w) // 8)[None, :]) % 2, -1, 1))
        x = x.astype(F32).reshape(1, -1)
    else:
        x = wide_values(kind, (1, h * w), rng, F32)
    a = x[0].astype(np.float64)
    best = max(float((np.cumsum(a[o]) ** 2).sum()) for o in _index_orders(h, w).values())
    for lanes in E.WALK_LANES:
        if lanes < a.size:
            t = -(-a.size // lanes) * lanes
            part = np.cumsum(np.concatenate([a, np.zeros(t - a.size)]).reshape(-1, lanes), axis=0)
            best = max(best, float((part ** 2).sum()) + _combined(part[-1]))
    for run in E.WALK_RUNS:
        if run < a.size:
            t = -(-a.size // run) * run
            part = np.cumsum(np.concatenate([a, np.zeros(t - a.size)]).reshape(-1, run), axis=1)
            best = max(best, float((part ** 2).sum()) + _combined(part[:, -1]))
    got = float(E.realistic_walk(x, (h, w))[0])
    np.testing.assert_allclose(got, np.sqrt(best / 3), rtol=1e-9)
    assert float(E.row_major_walk(x)[0]) <= got
    assert got <= float(E.walk(x)[0]) * 1.01


@pytest.mark.parametrize("kind", ["cancelling", "positive", "offset", "halves", "tiles"])
def test_the_realistic_floor_is_far_above_the_realistic_orders(kind):
    """``WIDE_FLOOR``: each chain of ``realistic_walk`` (row-major, reversed, column-major, tile
    after tile) summed in float32 on a 128x128 window stays within half of WIDE_FLOOR u times the
    realistic walk; on data whose signs follow 16x16 tiles the tile orders are what set it."""
    rng = np.random.default_rng(3 + len(kind))
    h = w = 128
    if kind == "tiles":
        sign = np.where(((np.arange(h) // 16)[:, None] + (np.arange(w) // 16)[None, :]) % 2, -1.0, 1.0)
        x = ((1 + rng.random((h, w))) * sign).astype(F32).reshape(1, -1)
    else:
        x = wide_values(kind, (1, h * w), rng, F32)
    exact = x.astype(np.float64).sum()
    scale = 2.0 ** -24 * float(E.realistic_walk(x, (h, w))[0])
    orders = _index_orders(h, w)
    worst = max(abs(float(np.add.accumulate(x[0, o])[-1]) - exact) for o in orders.values()) / scale
    assert worst < SUM.WIDE_FLOOR / 2, (kind, worst)
    if kind == "tiles":
        rm = float(E.row_major_walk(x)[0])
        assert float(E.realistic_walk(x, (h, w))[0]) > 4 * rm      # the tiles' partial sums, not the rows'


@pytest.mark.parametrize("side,dtype", [(256, F32), (1024, F32), (1024, F16)])
def test_a_global_average_missing_a_row_or_a_column_fails(side, dtype):
    """A global average of uniform [-64, 64) values that leaves out the last row, or the last
    column (divided by its own count or by the whole window's), or takes the window one column
    later: off by about 1e-3 of an average near 0. Realistic float32 sums lie within about 1e-5 (the
    floor from the orders kernels take; float16 data summed in float32 likewise, then rounded to
    float16): each fails; the reference's answer passes. (On a 256x256 float16 window a sound float16
    reduction, a reading float16 allows, lands as far off as a missing column: not one to tell.)
    The terms cancel, so no such answer is
    labelled a stalled accumulator; and an answer of zeros there is wrong zeros, not a stall."""
    rng = np.random.default_rng(side)
    x = (rng.random((1, 2, side, side + 1)) * 128 - 64).astype(dtype)
    case = ap_case(np.ascontiguousarray(x[..., :side]), (side, side), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"]
    assert verdict_of(case, ref).verdict == "PASS"
    d = x.astype(np.float64)
    wrong = {"shifted": d[..., 1:].mean(axis=(2, 3), keepdims=True),
             "last-row-dropped": d[..., :side - 1, :side].mean(axis=(2, 3), keepdims=True),
             "last-column-dropped": d[..., :side - 1].mean(axis=(2, 3), keepdims=True),
             "last-column-dropped-whole-count": d[..., :side - 1].sum(axis=(2, 3), keepdims=True) / side ** 2}
    for name, y in wrong.items():
        j = verdict_of(case, y.astype(dtype))
        assert j.verdict == "FAIL", name
        assert "stalled-accumulator" not in j.labels, (name, j.labels)
    j = verdict_of(case, np.zeros_like(ref))
    assert j.verdict == "FAIL" and "wrong-zeros" in j.labels, j.labels
    assert not {"stalled-accumulator", "in-type-running-sum"} & set(j.labels), j.labels


@pytest.mark.parametrize("kind", ["cancelling", "positive", "tiles", "checkerboard", "halves"])
def test_the_blocked_walk_of_a_long_window_is_at_or_just_above_the_term_by_term_one(kind, monkeypatch):
    """Windows of ``WALK_BLOCKED_FROM`` elements or more take each chain's sum of squares from its
    blocks of ``WALK_BLOCK`` terms: never below the term-by-term value (the floor may only widen),
    and within 10 % of it on a 128x128 window (partial sums far larger than a block's magnitude)."""
    rng = np.random.default_rng(40 + len(kind))
    h = w = 128
    base = 1 + rng.random((2, h, w))
    if kind == "tiles":
        x = base * np.where(((np.arange(h) // 32)[:, None] + (np.arange(w) // 32)[None, :]) % 2, -1, 1)
    elif kind == "checkerboard":
        x = base * np.where((np.arange(h)[:, None] + np.arange(w)[None, :]) % 2, -1, 1)
    elif kind == "halves":
        x = base * np.where(np.arange(w) < w // 2, 1, -1)[None, None, :]
    else:
        x = wide_values(kind, (2, h * w), rng, F32)
    x = np.asarray(x, F32).reshape(2, h * w)
    assert h * w >= E.WALK_BLOCKED_FROM
    blocked = E.realistic_walk(x, (h, w))
    monkeypatch.setattr(E, "WALK_BLOCKED_FROM", 1 << 40)
    exact = E.realistic_walk(x, (h, w))
    assert (blocked >= exact * (1 - 1e-12)).all() and (blocked <= exact * 1.10).all(), blocked / exact


@pytest.mark.parametrize("side,over", [(256, True), (255, False)])
def test_zeros_of_a_window_whose_count_overflows_float16_are_labelled_so(side, over):
    """A float16 average taken as the sum over the count in float16: 256x256 = 65,536 elements round
    to infinity (float16 holds 65,504 at most), so every answer is zero (NaN where the sum
    overflowed too), as the CUDA EP's ReduceMean and WebGPU gave for windows of 65,536 elements and
    more. Labelled ``divisor-overflow``; at 255x255 (65,025, a finite float16) zeros are only wrong
    zeros."""
    rng = np.random.default_rng(side)
    x = (0.5 + rng.random((1, 2, side, side))).astype(F16)
    case = ap_case(x, (side, side), (1, 1))
    ref = AP.expected(case, case.inputs())["Y"]
    with np.errstate(over="ignore"):
        assert bool(np.isinf(np.float16(side * side))) is over
    zeros = np.zeros_like(ref)
    j = verdict_of(case, zeros)
    assert j.verdict == "FAIL" and "wrong-zeros" in j.labels, j.labels
    assert ("divisor-overflow" in j.labels) is over, j.labels
    nan = zeros.copy()
    nan.reshape(-1)[0] = np.nan
    j = verdict_of(case, nan)
    assert j.verdict == "FAIL" and ("divisor-overflow" in j.labels) is over, j.labels
    # a wrong answer that is not zero is no overflowed divisor
    j = verdict_of(case, (ref.astype(np.float64) * 0.9).astype(F16))
    assert j.verdict == "FAIL" and "divisor-overflow" not in j.labels, j.labels
