"""How close the bench's memory estimates (``Operator.memory_bytes``, which batches, schedules and
refuses cases by) come to what a case really takes: each chosen case of a profile run alone in a
fresh process as a worker runs it (its lane's backend made first, then ``execute.run_batch`` of
the one case), its peak resident memory (the kernel's high-water mark, reset after the backend
is made) above the resident memory before the batch, against its estimate.

    python benchmarks/memory_estimates.py [--profile networks|limits] [--top N] [--every K] [--ep cpu]

``--wrong``: every element of the EP's answer made wrong, so that the judging takes its largest
path (every element compared against its bound, the mismatches listed, the case re-run alone).
``--top N``: the N cases of the largest estimates (default 40); ``--every K``: every K-th case of
the profile instead. An estimate is meant to be above the measure (the budget keeps a run's peak
by it) and not far above (a case estimated too large runs alone while the other workers wait).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

GIB = 1 << 30


def _status(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _wrong(outputs: dict) -> dict:
    """Every element of the EP's outputs wrong: floats off by about 1 %, integers by one."""
    import numpy as np
    out = {}
    for k, a in outputs.items():
        a = np.asarray(a)
        out[k] = (a * a.dtype.type(1.01) + a.dtype.type(0.001)) if a.dtype.kind == "f" else a + 1
    return out


def one(case_file: str, ep: str, wrong: bool) -> None:
    """In this process: the case of ``case_file`` as a worker runs it (``wrong``: with every output
    element of the EP under test wrong); prints a JSON line."""
    from onnx_dml_bench import heap
    from onnx_dml_bench.casefile import load
    from onnx_dml_bench.execute import case_bytes, run_batch
    from onnx_dml_bench.execute.pool import worker_keep
    from onnx_dml_bench.lanes.base import RunConfig
    from onnx_dml_bench.lanes.catalog import resolve
    from onnx_dml_bench.machine import share_cores

    (case,) = load(case_file)
    cfg = RunConfig(jobs=2)
    heap.keep_freed_memory(worker_keep(cfg))
    share_cores(2)
    backend = resolve(ep).make_backend(cfg)
    if wrong:
        run = backend.run

        def run_wrong(model, feeds, names, side, *more):
            o = run(model, feeds, names, side, *more)
            if side == "ep" and o.outputs:
                o.outputs = _wrong(o.outputs)
            return o
        backend.run = run_wrong
    heap.release_freed_memory()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")                                    # the high-water mark from here
    base = heap.resident_bytes()
    (rec,) = run_batch(backend, [case])
    peak = _status("VmHWM")
    print(json.dumps({"id": case.id, "estimate": case_bytes(case), "base": base, "peak": peak,
                      "verdict": rec.verdict}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="networks")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--every", type=int, default=0)
    ap.add_argument("--ep", default="cpu")
    ap.add_argument("--wrong", action="store_true",
                    help="every output element of the EP under test made wrong (the judging's largest path)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one, a.ep, a.wrong)
        return 0
    from onnx_dml_bench.casefile import dump
    from onnx_dml_bench.execute import case_bytes
    from onnx_dml_bench.plan import sweep_cases
    cases = sweep_cases(a.profile)
    cases = cases[::a.every] if a.every else sorted(cases, key=case_bytes, reverse=True)[:a.top]
    tmp = Path(tempfile.mkdtemp())
    rows = []
    for c in cases:
        f = tmp / f"{c.id}.json"
        dump([c], f)
        p = subprocess.run([sys.executable, __file__, "--one", str(f), "--ep", a.ep, *(["--wrong"] if a.wrong else [])], capture_output=True, text=True,
                           env={**os.environ, "PYTHONWARNINGS": "ignore"})
        lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode or not lines:
            print(f"{c.id}: exit code {p.returncode}\n{p.stderr[-1500:]}")
            continue
        r = json.loads(lines[-1])
        used = r["peak"] - r["base"]
        rows.append((r["estimate"] / max(used, 1), c.id))
        print(f"{c.id}: estimated {r['estimate'] / GIB:.2f} GiB, took {used / GIB:.2f} GiB above the "
              f"worker's {r['base'] / GIB:.2f} (estimate / measure {r['estimate'] / max(used, 1):.2f}), {r['verdict']}",
              flush=True)
    if rows:
        rows.sort()
        print(f"{len(rows)} cases: estimate / measure from {rows[0][0]:.2f} ({rows[0][1]}) to {rows[-1][0]:.2f} "
              f"({rows[-1][1]}); {sum(r < 1 for r, _ in rows)} estimated below what they took")
    return 0


if __name__ == "__main__":
    sys.exit(main())
