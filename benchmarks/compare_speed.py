"""The comparison's cost per output element: ``compare.compare_output`` (its digest, the compiled
pass or NumPy's slices, the labels) and RoiAlign's bound of an answer (``roi_align.fused.bound_of``),
on outputs of real layer sizes, CPU time on one thread, best of ``--repeat``.

    python benchmarks/compare_speed.py [--elements N] [--repeat K] [--src DIR ...]

Each source tree (``--src``: this one, then others, e.g. an older revision's worktree) is timed in a
fresh process of its own, one after the other, so that two revisions compare in one run. The answer
is the reference with one element in seven a step away (an ULP, within every bound), as an EP
whose sums differ from the reference's gives it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
import numpy as np
from onnx_dml_bench import compare as C
from onnx_dml_bench.ops.base import OutputSpec

n, repeat = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
rows = []

def best(fn):
    fn()                                    # compiled or loaded from numba's cache first
    t = []
    for _ in range(repeat):
        s = time.process_time()
        fn()
        t.append(time.process_time() - s)
    return min(t) / n * 1e9

for dt in (np.float32, np.float16):
    ref = (rng.standard_normal(n) * 8).astype(dt)
    got = ref.copy()
    got[::7] = np.nextafter(got[::7], dt(np.inf))
    bound = np.abs(ref).astype(np.float64) * 1e-2
    name = np.dtype(dt).name
    rows.append((name, "digest", best(lambda: C.digest(got))))
    rows.append((name, "compare ulp", best(lambda: C.compare_output("Y", OutputSpec("ulp", ulp=2), got, ref))))
    rows.append((name, "compare bound", best(lambda: C.compare_output("Y", OutputSpec("bound"), got, ref, bound=bound))))
    rows.append((name, "compare bound pair", best(lambda: C.compare_output("Y", OutputSpec("bound"), got, ref,
                                                                          bound=(bound, bound * 2)))))
    rows.append((name, "compare scalar bound", best(lambda: C.compare_output("Y", OutputSpec("bound"), got, ref,
                                                                            bound=1e-2))))
    try:
        from onnx_dml_bench.ops.roi_align import fused as F
        got4 = got.reshape(-1, 7, 7)
        b4 = bound.reshape(-1, 7, 7)
        rows.append((name, "RoiAlign bound_of", best(lambda: F.bound_of(got4, b4, 2.0 ** -11, 1e-7))))
    except Exception as e:  # noqa: BLE001 - a tree without it
        rows.append((name, f"RoiAlign bound_of ({e})", float("nan")))
print(json.dumps(rows))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=12_544_000, help="output elements (default: 1,000 regions x "
                    "256 channels x 7 x 7, a detection head's RoiAlign)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--src", action="append", default=[], help="another source tree to time (after this one)")
    a = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    trees = [here, *map(Path, a.src)]
    n = a.elements - a.elements % 49
    results = []
    for tree in trees:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        run = subprocess.run([sys.executable, "-c", CHILD, str(n), str(a.repeat)], cwd=tree, env=env,
                             capture_output=True, text=True)
        if run.returncode:
            print(f"{tree}: failed\n{run.stderr[-2000:]}", file=sys.stderr)
            return 1
        results.append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"{n:,} output elements, CPU ns per element (best of {a.repeat}); columns: "
          + ", ".join(str(t) for t in trees))
    for i, (dt, what, _) in enumerate(results[0]):
        cells = "  ".join(f"{r[i][2]:8.2f}" for r in results)
        print(f"  {dt:8s} {what:24s} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
