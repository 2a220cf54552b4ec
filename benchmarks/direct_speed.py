"""The two DirectML lanes side by side, in one run, on the same cases: ``dml-direct`` (each
descriptor on DirectML.dll through the bench's harness, no ONNX Runtime) and ``dml`` (ONNX Runtime's
DirectML EP under Wine, with the CPU EP side of the three-way comparison, as `run --ep dml` does).
Prints cases/s of each lane (workers, canaries and reports excluded; harness/worker start included)
and, for the direct lane, the descriptor-only cases as a second figure.

    python benchmarks/direct_speed.py [--profile default] [--lanes dml-direct,dml] [--no-cpu] [--sample N]
                                      [--jobs N] [--batch-size N]

Each lane runs with its own batch size, as `run` does (``dml``: 1,024 cases per session, since each
DirectML session under Wine pays for its devices; ``dml-direct``: 64), on ``--jobs`` workers (default 1).

``--sample N``: both lanes on every k-th case of the profile (about N cases), when the ORT lane's
full profile (about 10 minutes on 2 idle cores) is too long; the direct lane's full profile is
timed as well.

Needs the DirectML stack (`onnx-dml-bench setup dml`). Both lanes run in one worker process
(one Wine prefix), as `run` does.
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from collections import Counter

from onnx_dml_bench import registry
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.lanes.dml_direct import descriptor_only_cases


def timed(cases, key: str, three_way: bool, jobs: int = 1, batch_size: int = 0) -> tuple[float, Counter]:
    spec = resolve(key)
    # each lane's own batch size, as `run` takes it (`--batch-size N`: the same N for both lanes)
    cfg = RunConfig(batch_size=batch_size or spec.batch_size, jobs=jobs, timeout_s=600, three_way=three_way)
    t = time.perf_counter()
    recs = run_cases(cases, spec, cfg)
    return time.perf_counter() - t, Counter(r.verdict for r in recs)


def line(name: str, n: int, seconds: float, verdicts: Counter) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items(), key=lambda kv: -kv[1]))
    return f"{name:<34} {n:6d} cases {seconds:8.1f} s {n / seconds:8.1f} cases/s   ({counts})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="default")
    ap.add_argument("--lanes", default="dml-direct,dml")
    ap.add_argument("--no-cpu", action="store_true", help="dml lane without its CPU EP side")
    ap.add_argument("--sample", type=int, default=0, help="both lanes on about N cases of the profile")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of each lane (as `run --jobs`)")
    ap.add_argument("--batch-size", type=int, default=0, help="cases per session (default: each lane's own, as `run`)")
    args = ap.parse_args()
    full = [c for op in registry.OPERATORS.values() for c in op.sweep(args.profile)]
    extra = descriptor_only_cases(full, args.profile)
    cases = full[:: max(1, len(full) // args.sample)] if args.sample else full
    print(f"profile {args.profile}: {len(full)} cases, {len(cases)} timed on both lanes; {platform.node()}, "
          f"{os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, load {os.getloadavg()[0]:.1f}")
    if args.sample:
        seconds, verdicts = timed(full, "dml-direct", False, args.jobs, args.batch_size)
        print(line(f"dml-direct, whole {args.profile} profile", len(full), seconds, verdicts), flush=True)
    took: dict[str, float] = {}
    for key in [k.strip() for k in args.lanes.split(",") if k.strip()]:
        three_way = key == "dml" and not args.no_cpu
        seconds, verdicts = timed(cases, key, three_way, args.jobs, args.batch_size)
        took[key] = seconds
        print(line(f"{key}{' (with CPU EP side)' if three_way else ''}", len(cases), seconds, verdicts), flush=True)
        if key == "dml-direct" and extra:
            seconds, verdicts = timed(extra, key, False, args.jobs, args.batch_size)
            print(line("dml-direct, descriptor-only cases", len(extra), seconds, verdicts), flush=True)
    if {"dml", "dml-direct"} <= set(took):
        print(f"dml / dml-direct on the same {len(cases)} cases: {took['dml'] / took['dml-direct']:.2f}x "
              "(target <= 2.5x)")


if __name__ == "__main__":
    main()
