"""Reference speed and memory against ONNX Runtime's CPU EP on real-size layers, measured in one run.

    python benchmarks/reference_speed.py [--repeat N] [--only TEXT] [--skip TEXT] [--no-census]

Per configuration (float32, same inputs for both sides, sessions created once):

- wall: the median time of the NumPy reference (``Operator.reference``, its worker threads) and of
  ORT CPU (default session options), the two called in turn so that they share the machine's
  load, and their ratio;
- CPU: the median CPU time of one call on one thread each (the reference with one worker, ORT
  with intra_op_num_threads=1), and their ratio: the work each side does, which the load of a
  shared machine hardly moves;
- peak MiB: the most memory the reference allocates in one call beyond its inputs (tracemalloc,
  output included, in a separate untimed call; NumPy reports its buffers to tracemalloc);
- check: whether the reference and ORT agree (exactly; AveragePool to 1e-5 relative; RoiAlign within
  the bench's error bound).

After the fixed configurations, a row per census layer family of the ``networks`` profile (the
layer kind and the ONNX nodes the exporters wrote for it: GlobalAveragePool, ReduceMean, Pad+MaxPool,
...): its float32 case that the most census models use (the smaller at a tie), at the census's
batch, the graph as exported (``--no-census``: without these rows).

The reference runs as it does in a bench worker: with the worker's heap keeping the memory it
frees for its next arrays (``heap.keep_freed_memory``, on glibc), so that a call's 1 MiB work
arrays are not fresh pages each time (without it, page faults took half of a RoiAlign call's CPU
time on this machine's virtual machine; ONNX Runtime's own arena keeps its memory likewise).
``ONNX_DML_BENCH_KEEP_FREED=0`` measures without it.

Targets: ratio <= 3 at these sizes; the Fast R-CNN RoI pooling layer within 1 s and 1 GB.
``--only`` / ``--skip`` keep or leave out the configurations whose name contains the text
(repeatable). A configuration whose reference call takes seconds is repeated fewer times.

ORT's MaxRoiPool computes bin bounds in float (size / pooled * i), which for some region sizes (57,
114, 121 rows or columns at 7 bins) gives other bounds than the DirectML page's integer formulas:
the check column says DIFFER for the detection-size layer, where such regions occur.
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort

from onnx_dml_bench import heap
from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.ops import _pooling as P
from onnx_dml_bench.registry import get


def configs():
    mp = get("max_pooling2")
    ap = get("average_pooling1")
    roi = get("roi_pooling")
    s2d = get("space_to_depth1")
    d2s = get("depth_to_space1")
    ra1 = get("roi_align1")

    def maxpool(sizes, idx=None, storage_order=0):
        d = mp.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                    StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1), OutputIndicesDataType=idx)
        return Case(mp, d, 12, make_variant(storage_order=storage_order) if storage_order else (), "random", 1)

    def avgpool(sizes, k, s, p, dil, inc):
        d = ap.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=2, Strides=s, WindowSize=k,
                    StartPadding=p, EndPadding=p, Dilations=dil, IncludePadding=inc)
        return Case(ap, d, 19, (), "random", 1)

    def roipool(sizes, n, scale, pooled):
        d = roi.Desc(InputSizes=sizes, RoiSizes=(n, 5), DataType="FLOAT32", SpatialScale=scale, PooledSize=pooled)
        return roi.make_case(d, {}, "random")

    def space(op, sizes, b, mode):
        d = op.Desc(InputSizes=sizes, DataType="FLOAT32", BlockSize=b,
                    Order="DEPTH_COLUMN_ROW" if mode == "DCR" else "COLUMN_ROW_DEPTH")
        return Case(op, d, 13, make_variant(form="native"), "random", 1)

    def roialign(sizes, n, out, scale, aligned, mode="AVERAGE"):
        d = ra1.Desc(InputSizes=sizes, RoiSizes=(n, 4), DataType="FLOAT32", OutputSize=out, SpatialScaleX=scale,
                     SpatialScaleY=scale, MinimumSamplesPerOutput=2, MaximumSamplesPerOutput=2,
                     InputPixelOffset=0.5 if aligned else 0.0, ReductionFunction=mode)
        return ra1.make_case(d, {}, "roi-detection")

    big = (1, 64, 224, 224)
    yield "MaxPool 3x3/2 1x64x224x224", maxpool(big)
    yield "MaxPool 3x3/2 8x64x112x112", maxpool((8, 64, 112, 112))
    yield "MaxPool 3x3/2 1x64x224x224 indices", maxpool(big, "UINT32")
    yield "MaxPool 3x3/2 8x64x112x112 indices col", maxpool((8, 64, 112, 112), "UINT64", storage_order=1)
    yield "AveragePool 3x3 dil 2x2 1x64x224x224", avgpool(big, (3, 3), (1, 1), (2, 2), (2, 2), False)
    yield "AveragePool 3x3/1 pad inc 8x64x112x112", avgpool((8, 64, 112, 112), (3, 3), (1, 1), (1, 1), (1, 1), True)
    yield "AveragePool global 7x7 8x2048x7x7", avgpool((8, 2048, 7, 7), (7, 7), (1, 1), (0, 0), (1, 1), False)
    yield "AveragePool global 112x112 1x32x112x112", avgpool((1, 32, 112, 112), (112, 112), (1, 1), (0, 0), (1, 1), False)
    yield "SpaceToDepth B=4 DCR 1x64x224x224", space(s2d, big, 4, "DCR")
    yield "DepthToSpace B=2 DCR 8x256x56x56", space(d2s, (8, 256, 56, 56), 2, "DCR")
    yield "DepthToSpace B=3 CRD 1x576x75x75", space(d2s, (1, 576, 75, 75), 3, "CRD")
    yield "MaxRoiPool Fast R-CNN 1x512x38x50 300 7x7", roipool((1, 512, 38, 50), 300, 1 / 16, (7, 7))
    yield "MaxRoiPool 2x256x100x136 1000 7x7", roipool((2, 256, 100, 136), 1000, 1 / 8, (7, 7))
    fpn = (1, 256, 200, 272)
    yield "RoiAlign FPN 1x256x200x272 1000 7x7 s2", roialign(fpn, 1000, (7, 7), 1 / 4, False)
    yield "RoiAlign FPN 1x256x200x272 1000 7x7 s2 aligned", roialign(fpn, 1000, (7, 7), 1 / 4, True)
    yield "RoiAlign FPN 1x256x200x272 1000 14x14 s2", roialign(fpn, 1000, (14, 14), 1 / 4, False)
    yield "RoiAlign FPN 1x256x25x34 1000 7x7 s2", roialign((1, 256, 25, 34), 1000, (7, 7), 1 / 32, False)


def census_configs():
    """(name, case) per census layer family of ``networks``: the float32 case most models use."""
    import math

    from onnx_dml_bench.plan import sweep_cases
    best: dict = {}
    for case in sweep_cases("networks", dtypes=("FLOAT32",)):
        src = case.source or {}
        if src.get("batch") != src.get("census_batch"):
            continue
        fam = (case.operator.key, src["kinds"][0], "/".join(sorted(set(src["onnx"].values()))))
        size = math.prod(case.desc.InputSizes)
        key = (-len(src.get("models", ())), size, case.id)
        if fam not in best or key < best[fam][0]:
            best[fam] = (key, case)
    for (_, kind, onnx), (_, case) in sorted(best.items()):
        shape = "x".join(map(str, case.desc.InputSizes))
        yield f"census {kind} {onnx.split('+')[-1]} {shape}", case


def median_times(fns, repeat, clock=time.perf_counter):
    """Median time of each function, the functions called in turn ``repeat`` times (after one
    warm-up call each), so that they share the machine's load."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t = clock()
            fn()
            ts.append(clock() - t)
    return [statistics.median(ts) for ts in times]


def one_thread(fn):
    """fn run with the reference's work on one thread (its pool of one worker)."""
    def run():
        workers, pool = getattr(P, "WORKERS", None), P._POOL
        P.WORKERS, P._POOL = 1, ThreadPoolExecutor(max_workers=1)
        try:
            return fn()
        finally:
            P._POOL.shutdown()
            P.WORKERS, P._POOL = workers, pool
    return run


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("--no-census", action="store_true", help="leave out the census layer families' rows")
    args = ap.parse_args()
    kept = heap.keep_freed_memory(heap.share(1))        # as a bench worker keeps its freed memory
    ort.set_default_logger_severity(3)
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, float32, median of {args.repeat}, "
          f"reference workers {P.workers()}, freed memory kept: {'yes' if kept else 'no'}")
    print(f"{'':56s} {'--------------- wall ---------------':>36s} {'-------- CPU, one thread --------':>34s}")
    print(f"{'configuration':56s} {'reference ms':>12s} {'ORT ms':>9s} {'ratio':>6s}   "
          f"{'reference ms':>12s} {'ORT ms':>9s} {'ratio':>6s} {'peak MiB':>9s}  check")
    worst = worst_cpu = 0.0
    single = ort.SessionOptions()
    single.intra_op_num_threads = 1
    import itertools
    for name, case in itertools.chain(configs(), () if args.no_census else census_configs()):
        if (args.only and not any(t in name for t in args.only)) or any(t in name for t in args.skip):
            continue
        op = case.operator
        inputs = case.inputs()
        model = op.to_onnx(case).SerializeToString()
        t = time.perf_counter()
        ref = op.reference(case, inputs)
        repeat = max(1, min(args.repeat, int(3 / max(time.perf_counter() - t, 1e-9))))
        one = ort.InferenceSession(model, single, providers=["CPUExecutionProvider"])
        c_ref, c_ort = median_times([one_thread(lambda: op.reference(case, inputs)), lambda: one.run(None, inputs)],
                                    repeat, time.process_time)
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        outs = sess.run(list(ref), inputs)
        if op.compare_specs(case)["Y"].kind == "bound":       # RoiAlign: within the bench's error bound
            bound = op.error_bound(case, inputs, ref)["Y"]
            same = bool((np.abs(outs[0].astype(np.float64) - ref["Y"]) <= bound).all())
        else:
            same = all(np.array_equal(a, b) if a.dtype.kind != "f" or op.key != "average_pooling1"
                       else np.allclose(a, b, rtol=1e-5) for a, b in zip(ref.values(), outs))
        del ref, outs
        t_ref, t_ort = median_times([lambda: op.reference(case, inputs), lambda: sess.run(None, inputs)], repeat)
        peak = peak_bytes(lambda: op.reference(case, inputs))
        worst, worst_cpu = max(worst, t_ref / t_ort), max(worst_cpu, c_ref / c_ort)
        print(f"{name:56s} {t_ref * 1e3:12.2f} {t_ort * 1e3:9.2f} {t_ref / t_ort:6.2f}   "
              f"{c_ref * 1e3:12.2f} {c_ort * 1e3:9.2f} {c_ref / c_ort:6.2f} {peak / 2**20:9.1f}  "
              f"{'agree' if same else 'DIFFER'}", flush=True)
    print(f"worst ratio: wall {worst:.2f}, CPU {worst_cpu:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
