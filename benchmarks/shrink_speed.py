"""How long a shrink takes on a real EP (targets: <= 30 s on the CPU EP, <= 3 min on DirectML
under Wine on lavapipe).

    python benchmarks/shrink_speed.py                         CPU EP, a default-profile failure
    python benchmarks/shrink_speed.py --ep dml --from reports/dml-lavapipe/results.jsonl
    python benchmarks/shrink_speed.py --from R.jsonl --case ID [--ep ...]

Without --from: the first MaxPool case of the default profile (signed-zero or NaN families, with
indices, at least 100 input elements) that ONNX Runtime's CPU EP fails. With --from: the given case, or the first FAIL of the
file. The time includes starting the probing worker (and, for DirectML, its canary and Wine).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from onnx_dml_bench.casefile import case_from_record  # noqa: E402
from onnx_dml_bench.execute import RunConfig  # noqa: E402
from onnx_dml_bench.plan import RunPlan  # noqa: E402
from onnx_dml_bench.triage.prober import Prober  # noqa: E402
from onnx_dml_bench.triage.shrink import shrink  # noqa: E402
from onnx_dml_bench.signature import signature  # noqa: E402


def cpu_failure(probe):
    from onnx_dml_bench.ops.max_pooling2 import OP
    import numpy as np
    cands = [c for c in OP.sweep("default") if c.family in ("negzero", "nan") and c.desc.OutputIndicesDataType
             and np.prod(c.desc.InputSizes) >= 100][:60]
    recs = probe(cands)
    for c in cands:
        if recs[c.id].verdict == "FAIL":
            return c, signature(recs[c.id])
    raise SystemExit("no CPU EP failure among the chosen cases")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ep", default=None, help="EP key (default: cpu, or the EP of --from)")
    ap.add_argument("--from", dest="results", type=Path)
    ap.add_argument("--case")
    ap.add_argument("--time-limit", type=float, default=600.0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    env = rec = None
    if args.results:
        from onnx_dml_bench.results import read
        res = read(args.results)
        recs = [r for r in res.records if (r.case_id == args.case if args.case else r.verdict == "FAIL")]
        if not recs:
            raise SystemExit(f"{args.results}: no such failing case")
        rec = recs[0]
        env = next((e for e in res.envs if e.ep == rec.ep), res.envs[-1])
    spec = RunPlan.probe(args.ep or (None if env is not None else "cpu"), env).lane
    t_ep = time.perf_counter()
    with Prober(spec, RunConfig()) as probe:
        if rec is not None:
            case, want = case_from_record(rec), signature(rec)
            if args.ep and spec.ep_name != rec.ep:
                want = None
        else:
            case, want = cpu_failure(probe)
        t1 = time.perf_counter()
        r = shrink(case, probe, want=want, time_limit=args.time_limit)
        t2 = time.perf_counter()
    print(f"EP: {spec.ep_name} ({spec.package})")
    print(f"case: {case.id}")
    print(f"signature: {r.signature.text()}")
    print(f"shrank: {r.summary()}")
    print(f"shrink: {t2 - t1:.1f} s in {r.rounds} probe rounds ({(t2 - t1) / max(1, r.rounds) * 1e3:.0f} ms a round, "
          f"{probe.cases} cases probed)")
    print(f"total with EP preflight and worker start: {t2 - t0:.1f} s (preflight {t_ep - t0:.1f} s)")
    target = 30.0 if spec.is_cpu else 180.0
    print(f"target <= {target:.0f} s: {'met' if t2 - t0 <= target else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
