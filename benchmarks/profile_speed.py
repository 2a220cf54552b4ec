"""Speed and peak memory of the sized profiles (``networks``, ``limits``) on one EP: wall time, cases
and input elements per second, the slowest cases and where their time went (reference, session,
run), and the peak resident memory of the whole run (the parent and its worker processes, summed,
sampled every 0.2 s from /proc).

    python benchmarks/profile_speed.py [--ep cpu] [--profile networks|limits|both] [--jobs 2]
        [--op OP,...] [--max-elements N] [--every K] [--out DIR]

``--every K`` runs every K-th case of the profile (a documented sample, the same on every machine);
``--out`` keeps the results (one folder per profile).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it (Linux /proc)."""
    kids: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(d))
            rss[int(d)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total


class PeakMemory:
    """The largest :func:`tree_rss` of this process seen while the block runs."""

    def __enter__(self):
        self.peak, self._stop = 0, threading.Event()
        self._t = threading.Thread(target=self._watch, daemon=True)
        self._t.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(os.getpid()))
            self._stop.wait(0.2)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def run_profile(profile: str, args) -> dict:
    from onnx_dml_bench.execute import case_bytes, run_cases
    from onnx_dml_bench.plan import RunPlan, RunRequest
    from onnx_dml_bench.results import ResultWriter
    plan = RunPlan.build(RunRequest(ep=args.ep, profile=profile, ops=tuple(args.op), jobs=args.jobs,
                                    max_elements=args.max_elements, ep_options=tuple(args.ep_option)))
    cases = plan.cases[::args.every]
    plan = plan.with_cases(cases)
    env = plan.environment(argv=sys.argv)
    elements = sum(sum(math.prod(s) for s in c.operator.input_shapes(c.desc).values()) for c in cases)
    out = Path(args.out) / profile if args.out else Path(tempfile.mkdtemp()) / profile
    writer = ResultWriter(out / "results.jsonl", env)
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        recs = run_cases(cases, plan.lane, plan.cfg, on_records=writer.write)
    wall = time.perf_counter() - t0
    writer.close()
    verdicts: dict = {}
    for r in recs:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    tm = [(r.timings.reference_ms or 0.0, r.timings.run_ms or 0.0, r.timings.session_ms or 0.0, r.case_id) for r in recs]
    return {"profile": profile, "ep": plan.lane.ep_name, "cases": len(recs), "every": args.every, "wall_s": wall,
            "elements": elements, "peak_bytes": mem.peak, "verdicts": verdicts, "reference_s": sum(t[0] for t in tm) / 1e3,
            "run_s": sum(t[1] / max(1, r.timings.batch_size or 1) for t, r in zip(tm, recs)) / 1e3,
            "largest_case_bytes": max((case_bytes(c) for c in cases), default=0),
            "slowest": sorted(tm, reverse=True)[:5], "out": str(out)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ep", default="cpu")
    ap.add_argument("--ep-option", action="append", default=[])
    ap.add_argument("--profile", default="both", choices=("networks", "limits", "both"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--max-elements", type=int, default=None)
    ap.add_argument("--every", type=int, default=1, help="run every K-th case")
    ap.add_argument("--out", help="keep the results here (a folder per profile)")
    args = ap.parse_args()
    args.op = [x for v in args.op for x in v.split(",") if x]
    for profile in (("networks", "limits") if args.profile == "both" else (args.profile,)):
        r = run_profile(profile, args)
        gib = 1 << 30
        print(f"{r['profile']} on {r['ep']} ({args.jobs} workers{', every ' + str(r['every']) + 'th case' if r['every'] > 1 else ''}): "
              f"{r['cases']} cases in {r['wall_s']:.1f} s ({r['cases'] / r['wall_s']:.2f} cases/s, "
              f"{r['elements'] / r['wall_s'] / 1e6:.1f} M input elements/s); reference {r['reference_s']:.1f} s, "
              f"EP runs {r['run_s']:.1f} s (summed over workers); peak memory {r['peak_bytes'] / gib:.2f} GiB "
              f"(largest case estimate {r['largest_case_bytes'] / gib:.2f} GiB); verdicts {r['verdicts']}")
        for ref, run, ses, cid in r["slowest"]:
            print(f"  slowest: {cid}: reference {ref / 1e3:.1f} s, run {run / 1e3:.2f} s, session {ses / 1e3:.2f} s")
        print(f"  results: {r['out']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
