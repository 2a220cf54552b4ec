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
    for name, P, N, ref in (("positive", st.n, 0 * st.n, scale), ("cancelling", st.n / 2, st.n / 2, 0 * scale),
                            ("half", 0.75 * st.n, 0.25 * st.n, scale / 2)):
        pat = SUM.Stats(st.n, st.c, st.n.astype(np.float64), P, N, np.ones_like(scale), -np.ones_like(scale),
                        0 * scale, 0 * scale, 0 * scale)
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
