"""Runner throughput on the CPU EP: cases per second with many cases per model and session
(the runner's batching) against one session per case, measured in the same run; and the wall
time of the whole default profile (reference and comparison included).

    python benchmarks/run_speed.py [--jobs N]
"""
from __future__ import annotations

import argparse
import time

from onnx_dml_bench import registry
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.lanes.catalog import resolve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sample", type=int, default=600, help="cases for the batched-vs-single comparison")
    args = ap.parse_args()
    cpu = resolve("cpu")
    default = [c for op in registry.OPERATORS.values() for c in op.sweep("default")]
    sample = default[:: max(1, len(default) // args.sample)][: args.sample]

    def timed(cases, cfg):
        t = time.perf_counter()
        recs = run_cases(cases, cpu, cfg)
        return time.perf_counter() - t, recs

    t_single, r1 = timed(sample, RunConfig(batch_size=1, jobs=1))
    t_batch, r2 = timed(sample, RunConfig(batch_size=64, jobs=1))
    same = {r.case_id: r.verdict for r in r1} == {r.case_id: r.verdict for r in r2}
    print(f"{len(sample)} cases, 1 worker: one session per case {len(sample) / t_single:8.1f} cases/s; "
          f"batched (64 per model) {len(sample) / t_batch:8.1f} cases/s; speed-up {t_single / t_batch:.1f}x "
          f"(target >= 10x); same verdicts: {same}")
    # the execution phase alone (model build, session creation, run), same cases, same run
    from onnx_dml_bench.ops.base import make_model
    ok = [c for c in sample if c.operator.expressible(c) is None and c.opset <= 25]
    frags = [(c, c.operator.build(c, f"c{i}_"), c.inputs()) for i, c in enumerate(ok)]

    def execute(groups):
        n = 0
        t = time.perf_counter()
        for g in groups:
            model = make_model([f for _, f, _ in g], g[0][0].opset).SerializeToString()
            feeds = {f.input_names[k]: v for _, f, inp in g for k, v in inp.items()}
            try:
                cpu.make_session(model, side_is_ep=True).run(None, feeds)
                n += len(g)
            except Exception:  # refused groups count as work done, not as cases run
                pass
        return time.perf_counter() - t
    singles = [[x] for x in frags]
    by_opset: dict = {}
    for x in frags:
        by_opset.setdefault((x[0].opset, x[0].op, x[0].dtype, repr(x[0].variant)), []).append(x)
    batches = [g[i:i + 64] for g in by_opset.values() for i in range(0, len(g), 64)]
    e1, e2 = execute(singles), execute(batches)
    print(f"execution phase only ({len(frags)} cases): one session per case {len(frags) / e1:8.1f} cases/s; "
          f"batched {len(frags) / e2:8.1f} cases/s; speed-up {e1 / e2:.1f}x")
    t_def, recs = timed(default, RunConfig(batch_size=64, jobs=args.jobs))
    print(f"default profile: {len(recs)} cases on CPUExecutionProvider with {args.jobs} workers in {t_def:.1f} s "
          f"({len(recs) / t_def:.0f} cases/s; target <= 60 s)")


if __name__ == "__main__":
    main()
