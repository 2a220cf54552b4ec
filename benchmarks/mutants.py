"""The judge's power: kill rates of the bug mutants and pass rate of the legitimate answers, per
profile and operator, against the targets, with the wall time of each profile.

    python benchmarks/mutants.py [--profile default --profile networks --profile limits]
                                 [--every N] [--max-elements N] [--jobs N] [--require]

(``onnx-dml-bench mutants`` is the command; this script prints its figures and the time each
profile takes.) Targets: at least 99.9 % of the non-equivalent bug mutants of ``default``,
``networks`` and ``limits`` killed, at least 99.5 % of each operator's, 100 % of the legitimate
answers passing. Exit code: 1 when a legitimate answer fails, or (``--require``) a kill rate misses
its target; 0 otherwise. Default: the three profiles, ``networks`` and ``limits`` every 10th case of
each operator within 2^22 elements (``--every 1 --max-elements 64M`` for the whole profiles).
"""
from __future__ import annotations

import argparse
import sys
import time

from onnx_dml_bench import mutants as MU


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="append", choices=MU.PROFILES)
    ap.add_argument("--every", type=int, default=10, help="sized profiles: every N-th case of each operator")
    ap.add_argument("--max-elements", type=int, default=1 << 22, help="sized profiles: the largest tensor")
    ap.add_argument("--jobs", type=int, default=MU.default_jobs())
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--require", action="store_true", help="exit 1 when a kill rate misses its target")
    a = ap.parse_args()
    profiles = a.profile or ["default", "networks", "limits"]
    code = 0
    print(f"{'profile':10} {'op':18} {'cases':>6} {'bug':>7} {'equiv':>6} {'killed':>7} {'survived':>8} "
          f"{'rate':>9} {'raw':>9} {'legit':>11} {'s':>6}")
    for p in profiles:
        t0 = time.perf_counter()
        s = MU.run(MU.Request([p], a.op, a.max_elements, a.every, a.jobs))
        secs = time.perf_counter() - t0
        ps = s["profiles"][p]
        for op, v in list(ps["operators"].items()) + [("all", ps["overall"])]:
            last = op == "all"
            print(f"{p:10} {op:18} {ps['cases'] if last else '':>6} {v['bug']:>7} {v['equivalent']:>6} "
                  f"{v['killed']:>7} {v['survived']:>8} {MU.pct(v['rate']):>9} {MU.pct(v['raw_rate']):>9} "
                  f"{v['legit_passed']:>5}/{v['legit']:<5} {f'{secs:.0f}' if last else '':>6}")
        for line in MU.lines(s, survivors=0)[1:]:
            if line.startswith(("FAIL", "below")) or line.startswith("    "):
                print(f"  {line.strip()}")
        code = max(code, MU.exit_code(s, a.require))
    print(f"targets: {MU.TARGETS['profile']:.1%} of a profile's non-equivalent bug mutants killed, "
          f"{MU.TARGETS['operator']:.1%} of each operator's, every legitimate answer passing")
    return code


if __name__ == "__main__":
    sys.exit(main())
