"""The mutants MaxPool and AveragePool share (``ops/_mutants.py``): windows shifted by one, the last
ceil_mode window dropped or added, an index without its batch or channel offset, in the other
storage order or wrapped past 2^31, and the ways of summing a window (the stalled float16
accumulator, and the legitimate float32, pairwise float16 and short sequential float16 sums).
Every answer is the ONNX reference of ``_onnx_pool`` (or its window walk in ``_pooling``) run on a
modified node or input; only graphs of one pooling node (form "pool") get them."""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _onnx_pool as O
from . import _pool_forms as F
from . import _pooling as P
from ._mutants import Made, MutantClass, Subject, pick

SRC_PADS = ("pads / ceil_mode off by one: pytorch/pytorch#45357 and #46929 (a ceil_mode window over padding "
            "alone), tracel-ai/burn#5791 (a last window starting in the padding kept), root-project/root#21776 "
            "(ceil_mode's partial window skipped)")
SRC_DIVISOR = ("count_include_pad: kulinseth/pytorch#273 (AvgPool2D wrong with count_include_pad and ceil_mode), "
               "VeriSilicon/TIM-VX#423 (ONNX AveragePool divided by the padded window), torch/cunn#134 (the "
               "condition inverted in review)")
SRC_INDEX = ("MaxPool Indices, flattened over N, C and the spatial axes by the ONNX text: tensorflow/tensorflow#22025 "
             "(GPU indices without the batch offset), onnx/onnx-tensorflow#719 (indices in another layout), "
             "intel/torch-xpu-ops#3940 (an int32 offset past 2^31)")
SRC_STALL = ("MIOpen #2109 and #2160, candle PR #3719, cubek PR #639, ONNX Runtime PR #19868: a float16 "
             "running sum whose step exceeds the values added stops moving")
SRC_WIDE = ("ONNX Runtime's CPU EP (MLAS) sums float32 in SIMD lanes; CUDA reductions: a grid-stride loop per thread, "
            "then a tree in shared memory (NVIDIA, Optimizing Parallel Reduction in CUDA); split reductions sum "
            "contiguous blocks, then combine them")
SRC_SUMS = ("Higham, Accuracy and Stability of Numerical Algorithms, ch. 4 (recursive and pairwise summation); "
            "DirectML and ONNX Runtime sum float16 windows in float32")

#: window elements up to which a sequential float16 sum is a legitimate evaluation
SHORT_WINDOW = 16
#: window elements from which a sequential float16 sum is tried as the stalled accumulator
LONG_WINDOW = 256
#: work bytes up to which the pairwise float16 sum gathers the windows
GATHER_BYTES = 1 << 27


def attrs(s: Subject):
    """The pooling node of the case as explicit pads (None: not a one-node graph)."""
    if F.form(s.case) != "pool" or s.semantics != "onnx":
        return None
    _, a, _ = O.case_node(s.case)
    if a.auto_pad == "NOTSET":
        return a
    ax, _ = O.axes(a, s.inputs["X"].shape[2:])
    return dataclasses.replace(a, auto_pad="NOTSET", ceil_mode=0,
                               pads=tuple(q.begin for q in ax) + tuple(q.end for q in ax))


def run(s: Subject, a, x=None, want_indices: bool = False) -> dict | None:
    """The node ``a`` on ``x`` (default the case's input); None where the text does not define it."""
    try:
        return O.run(s.inputs["X"] if x is None else x, a, want_indices)
    except O.SpecError:
        return None


def _want(s: Subject) -> bool:
    return "Indices" in s.ref


def shifted():
    """Every window one element later on the last axis: the input's first column dropped, one more
    end pad (the same output size)."""
    def make(s: Subject) -> Made:
        a = attrs(s)
        x = s.inputs["X"]
        if a is None or x.shape[-1] < 2:
            return
        nd = x.ndim - 2
        pads = list(a.pads or (0,) * (2 * nd))
        pads[2 * nd - 1] += 1
        out = run(s, dataclasses.replace(a, pads=tuple(pads)), x[..., 1:], _want(s))
        if out is None:
            return
        if "Indices" in out:
            if a.storage_order:
                out["Indices"] = s.ref["Indices"]
            else:
                w, sp = x.shape[-1], math.prod(x.shape[2:])
                sp1 = sp // w * (w - 1)
                idx = out["Indices"]
                rem = idx % sp1
                out["Indices"] = (idx // sp1 * sp + rem // (w - 1) * w + rem % (w - 1) + 1).astype(idx.dtype)
        yield "last-axis+1", out
    return MutantClass("window-shifted", SRC_PADS, make, text="every window one element later on the last axis")


def ceil_flipped():
    def make(s: Subject) -> Made:
        if F.form(s.case) != "pool" or s.semantics != "onnx":
            return
        _, a, _ = O.case_node(s.case)
        if a.auto_pad != "NOTSET":
            return
        out = run(s, dataclasses.replace(a, ceil_mode=1 - a.ceil_mode), want_indices=_want(s))
        if out is not None:
            yield "to-floor" if a.ceil_mode else "to-ceil", out
    return MutantClass("ceil-window", SRC_PADS, make,
                       text="ceil_mode read the other way: the last window dropped, or one more kept")


def divisor_flipped() -> MutantClass:
    def make(s: Subject) -> Made:
        a = attrs(s)
        if a is None:
            return
        out = run(s, dataclasses.replace(a, count_include_pad=1 - a.count_include_pad))
        if out is not None:
            yield "with-pads" if not a.count_include_pad else "without-pads", out
    return MutantClass("wrong-divisor", SRC_DIVISOR, make, text="count_include_pad read the other way")


# ------------------------------------------------------------------------------------------------
# Indices
# ------------------------------------------------------------------------------------------------

def _index_offset(what: str):
    def make(s: Subject) -> Made:
        if "Indices" not in s.ref:
            return
        n, c, *sp = s.inputs["X"].shape
        idx = np.asarray(s.ref["Indices"])
        per = math.prod(sp) * (c if what == "batch" else 1)
        if (n if what == "batch" else n * c) < 2:
            return
        yield what, s.with_outputs(Indices=(idx % per).astype(idx.dtype))
    return make


def _storage_flipped(s: Subject) -> Made:
    if "Indices" not in s.ref or F.form(s.case) != "pool" or s.semantics != "onnx":
        return
    _, a, _ = O.case_node(s.case)
    out = run(s, dataclasses.replace(a, storage_order=1 - a.storage_order), want_indices=True)
    if out is not None:
        yield "", s.with_outputs(Indices=out["Indices"])


def _wrapped(s: Subject) -> Made:
    if "Indices" not in s.ref:
        return
    idx = np.asarray(s.ref["Indices"]).astype(np.int64)
    if idx.max(initial=0) < 2 ** 31:
        return
    yield "int32", s.with_outputs(Indices=(((idx + 2 ** 31) % 2 ** 32) - 2 ** 31).astype(s.ref["Indices"].dtype))


def _index_plus_one(s: Subject) -> Made:
    if "Indices" not in s.ref:
        return
    idx = np.array(s.ref["Indices"], copy=True)
    at = pick(idx)
    idx.reshape(-1)[at] += 1
    yield "", s.with_outputs(Indices=idx)


def _ties_last(s: Subject) -> Made:
    """The last of equal maxima instead of the first (the tie rule broken): the node on
    the input mirrored on every spatial axis, pads swapped, mirrored back, where the windows are
    symmetric (no ceil_mode window, the input covered exactly)."""
    a = attrs(s)
    x = s.inputs["X"]
    if a is None or a.ceil_mode:
        return
    nd = x.ndim - 2
    ax, _ = O.axes(a, x.shape[2:])
    if any((q.n + q.begin + q.end - ((q.k - 1) * q.d + 1)) % q.s for q in ax):
        return
    pads = a.pads or (0,) * (2 * nd)
    mirror = (slice(None), slice(None)) + (slice(None, None, -1),) * nd
    out = run(s, dataclasses.replace(a, pads=tuple(pads[nd:]) + tuple(pads[:nd])), x[mirror], _want(s))
    if out is None:
        return
    got = {"Y": np.ascontiguousarray(out["Y"][mirror])}
    if "Indices" in out:
        idx = np.ascontiguousarray(out["Indices"][mirror])
        spatial = x.shape[2:]
        sp = math.prod(spatial)
        order = "F" if a.storage_order else "C"
        coords = np.unravel_index(idx % sp, spatial, order=order)
        coords = tuple(n - 1 - cc for cc, n in zip(coords, spatial))
        got["Indices"] = (idx // sp * sp + np.ravel_multi_index(coords, spatial, order=order)).astype(idx.dtype)
    if all(np.asarray(got[k]).tobytes() == np.asarray(s.ref[k]).tobytes() for k in got):
        return                       # no tie on this data: nothing to show
    yield "", got


INDEX_CLASSES = (
    MutantClass("index-no-channel-offset", SRC_INDEX, _index_offset("channel"),
                text="Indices without the offset of their batch and channel (per-plane indices)"),
    MutantClass("index-no-batch-offset", SRC_INDEX, _index_offset("batch"), text="Indices without the offset of their batch"),
    MutantClass("index-storage-order-flipped", SRC_INDEX, _storage_flipped,
                text="Indices in the other storage order (column- for row-major)"),
    MutantClass("index-wrapped-2^31", SRC_INDEX, _wrapped, text="Indices past 2^31 wrapped as int32"),
    MutantClass("index-off-by-one", SRC_INDEX, _index_plus_one, text="one index one element off"),
    MutantClass("index-tie-last", "the DirectML rule the bench holds every EP to: of equal maxima the first element met "
                "(the smallest flat index) wins; a kernel comparing with >= keeps the last",
                _ties_last, text="ties resolved to the last equal maximum"),
)


# ------------------------------------------------------------------------------------------------
# Window sums
# ------------------------------------------------------------------------------------------------

def _mean_parts(s: Subject):
    """(axes, divisors) of the windows of the case's graph, as ``_onnx_pool.average_pool`` has them
    (every form: a global pool, ReduceMean and Pad + AveragePool average the descriptor's windows;
    their answers take the graph's output shape)."""
    if s.semantics != "onnx":
        return None
    _, a, _ = O.case_node(s.case)
    ax, _ = O.axes(a, s.inputs["X"].shape[2:])
    return ax, O.window_counts(a, ax)


def _sequential(acc, short: bool):
    def make(s: Subject) -> Made:
        x = s.inputs["X"]
        parts = _mean_parts(s)
        if parts is None or (acc is np.float16 and x.dtype != np.float16):
            return
        ax, div = parts
        k = math.prod(q.k for q in ax)
        if short and k > SHORT_WINDOW:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            yield f"acc-{np.dtype(acc).name}", {"Y": P.window_mean(x, ax, div, acc).reshape(np.shape(s.ref["Y"]))}
    return make


def _stalled(s: Subject) -> Made:
    """A float16 running sum over long windows, where it stalls on this data: the answer off by more
    than 1 % of the window's mean magnitude (sum |x| / count, the output's scale) somewhere. Measured
    against the average itself, a window of signed terms whose average is near 0 would count the
    ordinary rounding of a running sum that never stops moving (1e-4 of the scale on uniform
    [-64, 64] data) as a stall."""
    x = s.inputs["X"]
    parts = _mean_parts(s)
    if parts is None or x.dtype != np.float16:
        return
    ax, div = parts
    if math.prod(q.k for q in ax) < LONG_WINDOW:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        y = P.window_mean(x, ax, div, np.float16).reshape(np.shape(s.ref["Y"]))
        ref = s.ref["Y"].astype(np.float64)
        scale = P.window_mean(np.abs(x.astype(np.float32)), ax, div, np.float64).reshape(ref.shape)
        far = np.abs(y.astype(np.float64) - ref) > 0.01 * scale
    if (far & np.isfinite(ref) & np.isfinite(scale)).any():
        yield "acc-float16", {"Y": y}


def _terms(s: Subject, ax, acc):
    """(output positions, window elements in row-major window order, the padding +0.0) of the case's
    input in ``acc``; None where that copy would pass ``GATHER_BYTES``."""
    x = s.inputs["X"]
    k = math.prod(q.k for q in ax)
    outs = math.prod(q.out for q in ax) * x.shape[0] * x.shape[1]
    if np.dtype(acc).itemsize * outs * k > GATHER_BYTES:
        return None
    widths = []
    for q in ax:
        reach = (q.out - 1) * q.s + (q.k - 1) * q.d + 1
        widths.append((q.begin, max(0, reach - q.begin - q.n)))
    xp = np.pad(x, [(0, 0), (0, 0)] + widths)
    st = xp.strides
    view = np.lib.stride_tricks.as_strided(
        xp, (*xp.shape[:2], *(q.out for q in ax), *(q.k for q in ax)),
        (*st[:2], *(q.s * st[i + 2] for i, q in enumerate(ax)), *(q.d * st[i + 2] for i, q in enumerate(ax))),
        writeable=False)
    return np.ascontiguousarray(view).reshape(-1, k).astype(acc, copy=False)


def _pairwise(s: Subject) -> Made:
    """Every window summed pairwise in float16 (a tree of float16 additions), divided by the count in
    float32 and rounded to float16."""
    x = s.inputs["X"]
    parts = _mean_parts(s)
    if parts is None or x.dtype != np.float16:
        return
    ax, div = parts
    if math.prod(q.k for q in ax) < 2:
        return
    terms = _terms(s, ax, np.float16)
    if terms is None:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        while terms.shape[1] > 1:
            if terms.shape[1] % 2:
                terms = np.concatenate([terms, np.zeros((terms.shape[0], 1), terms.dtype)], axis=1)
            terms = terms[:, 0::2] + terms[:, 1::2]
        total = terms.reshape(*x.shape[:2], *(q.out for q in ax))
        # the count exactly (a float16 count over 2048 may round, over 65504 is infinite)
        d = functools.reduce(np.multiply.outer, [np.asarray(v, np.float64) for v in div]).astype(np.float32)
        yield "float16", {"Y": (total.astype(np.float32) / d).astype(np.float16).reshape(np.shape(s.ref["Y"]))}


# -- float32 reductions a GPU or a CPU makes of a long window (independent of the judge's simulation,
#    ``_sum_evaluations.wide_sums``: other lane counts, thread counts and run lengths, another tree) ----------

#: vector lanes (AVX-512 float32, a warp), threads of a grid-stride loop, contiguous run lengths
WIDE_LANES = (16, 32)
WIDE_THREADS = (128, 512, 2048)
WIDE_RUNS = (1000, 3000, 50000)
#: window elements from which the float32 reductions of a long window are made
WIDE_FROM = 64


def _tree(v: np.ndarray) -> np.ndarray:
    """Per row: a tree in shared memory, the upper half added onto the lower half until one is left
    (a row padded with +0.0 to a power of two)."""
    m, n = v.shape
    width = 1 << max(0, (n - 1).bit_length())
    if width != n:
        v = np.concatenate([v, np.zeros((m, width - n), v.dtype)], axis=1)
    while v.shape[1] > 1:
        half = v.shape[1] // 2
        v = v[:, :half] + v[:, half:]
    return v[:, 0]


def _strided(v: np.ndarray, parts: int) -> np.ndarray:
    """(rows, parts): part j's share of each row (elements j, j + parts, ...) added one after another."""
    return np.add.accumulate(_padded_runs(v, parts), axis=1)[:, -1, :]


def _wide(kind: str):
    """Every long window summed in float32 the way ``kind`` says (``lanes``: each lane one after
    another over a strided share, the lanes then one after another; ``grid-stride``: each thread one
    after another over a strided share, the threads then by a tree; ``blocked``: contiguous runs one
    after another, the runs then by a tree), divided by the count or multiplied by its reciprocal in
    float32 (float16: also in float16), rounded to the type."""
    def make(s: Subject) -> Made:
        x = s.inputs["X"]
        parts = _mean_parts(s)
        if parts is None:
            return
        ax, div = parts
        k = math.prod(q.k for q in ax)
        if k < WIDE_FROM:
            return
        terms = _terms(s, ax, np.float32)
        if terms is None:
            return
        c = functools.reduce(np.multiply.outer, [np.asarray(v, np.float64) for v in div])
        c = np.broadcast_to(c, (*x.shape[:2], *c.shape)).reshape(-1)
        shape = np.shape(s.ref["Y"])
        params = {"lanes": WIDE_LANES, "grid-stride": WIDE_THREADS, "blocked": WIDE_RUNS}[kind]
        with np.errstate(over="ignore", invalid="ignore"):
            for p in params:
                if p >= k:
                    continue
                if kind == "lanes":
                    part = _strided(terms, p)
                    total = np.add.accumulate(part, axis=1)[:, -1]
                elif kind == "grid-stride":
                    total = _tree(_strided(terms, p))
                else:
                    total = _tree(np.add.accumulate(_padded_runs(terms, p), axis=2)[:, :, -1])
                answers = {"divided": (total.astype(np.float64) / c).astype(np.float32),
                           "reciprocal": total * (1.0 / c).astype(np.float32)}
                if x.dtype == np.float16:
                    answers["type-reciprocal"] = total * (1.0 / c).astype(np.float16).astype(np.float32)
                for how, y in answers.items():
                    yield f"{p}/{how}", {"Y": y.astype(x.dtype).reshape(shape)}
    return make


def _padded_runs(v: np.ndarray, run: int) -> np.ndarray:
    """(rows, runs, run): each row cut into contiguous runs of ``run`` elements (the last padded with
    +0.0)."""
    m, n = v.shape
    t = -(-n // run) * run
    if t != n:
        v = np.concatenate([v, np.zeros((m, t - n), v.dtype)], axis=1)
    return v.reshape(m, -1, run)


SUM_CLASSES = (
    MutantClass("stalled-f16-accumulator", SRC_STALL, _stalled,
                text="float16 windows of 256 elements or more summed one by one in float16, where the sum stalls"),
    MutantClass("summed-float32", SRC_SUMS, _sequential(np.float32, short=False), legit=True,
                text="every window summed one by one in float32, divided in float32, rounded to the type"),
    MutantClass("summed-pairwise-f16", SRC_SUMS, _pairwise, legit=True,
                text="every float16 window summed pairwise in float16, divided by the count, rounded to float16"),
    MutantClass("summed-sequential-f16-short", SRC_SUMS, _sequential(np.float16, short=True), legit=True,
                text=f"float16 windows of at most {SHORT_WINDOW} elements summed one by one in float16"),
    MutantClass("summed-float32-lanes", SRC_WIDE, _wide("lanes"), legit=True,
                text=f"windows of {WIDE_FROM} elements or more summed in float32 in {' and '.join(map(str, WIDE_LANES))} "
                     "vector lanes, each one by one over a strided share, the lanes then one by one"),
    MutantClass("summed-float32-grid-stride", SRC_WIDE, _wide("grid-stride"), legit=True,
                text=f"windows of {WIDE_FROM} elements or more summed in float32 by a grid-stride loop of "
                     f"{', '.join(map(str, WIDE_THREADS))} threads, then a tree in shared memory"),
    MutantClass("summed-float32-blocked", SRC_WIDE, _wide("blocked"), legit=True,
                text=f"windows of {WIDE_FROM} elements or more summed in float32 in contiguous runs of "
                     f"{', '.join(map(str, WIDE_RUNS))} one by one, the runs then by a tree"),
)
