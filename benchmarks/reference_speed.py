"""Reference speed against ONNX Runtime's CPU EP on large tensors, measured in one run.

    python benchmarks/reference_speed.py [--repeat N]

Prints, per configuration, the median time of the NumPy reference and of ORT CPU (same inputs,
session created once, default session options), and their ratio. Target: ratio <= 3.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort

from onnx_dml_bench.cases import Case, make_variant
from onnx_dml_bench.registry import get


def configs():
    mp = get("max_pooling2")
    ap = get("average_pooling1")
    s2d = get("space_to_depth1")
    big = (1, 64, 224, 224)
    for idx in (None, "UINT32"):
        d = mp.Desc(InputSizes=big, DataType="FLOAT32", DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                    StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1), OutputIndicesDataType=idx)
        yield f"MaxPool 3x3/2 {'with' if idx else 'without'} indices", Case(mp, d, 12, (), "random", 1)
    d = ap.Desc(InputSizes=big, DataType="FLOAT32", DimensionCount=2, Strides=(1, 1), WindowSize=(3, 3),
                StartPadding=(2, 2), EndPadding=(2, 2), Dilations=(2, 2), IncludePadding=False)
    yield "AveragePool 3x3 dilations 2x2", Case(ap, d, 19, (), "random", 1)
    d = s2d.Desc(InputSizes=big, DataType="FLOAT32", BlockSize=4, Order="DEPTH_COLUMN_ROW")
    yield "SpaceToDepth B=4 (DCR)", Case(s2d, d, 13, make_variant(form="native"), "random", 1)


def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, input 1x64x224x224 float32, median of {args.repeat}")
    print(f"{'configuration':36s} {'reference ms':>12s} {'ORT CPU ms':>11s} {'ratio':>6s}  check")
    worst = 0.0
    for name, case in configs():
        op = case.operator
        inputs = case.inputs()
        sess = ort.InferenceSession(op.to_onnx(case).SerializeToString(), providers=["CPUExecutionProvider"])
        ref = op.reference(case, inputs)
        outs = sess.run(list(ref), inputs)
        same = all(np.array_equal(a, b) if a.dtype.kind != "f" else np.allclose(a, b, rtol=1e-5) for a, b in zip(ref.values(), outs))
        t_ref = median_time(lambda: op.reference(case, inputs), args.repeat)
        t_ort = median_time(lambda: sess.run(list(ref), inputs), args.repeat)
        worst = max(worst, t_ref / t_ort)
        print(f"{name:36s} {t_ref * 1e3:12.2f} {t_ort * 1e3:11.2f} {t_ref / t_ort:6.2f}  {'agree' if same else 'DIFFER'}")
    print(f"worst ratio {worst:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
