"""Seconds for a profile (default: ``default``) on the DirectML lanes under Wine: ``dml`` (ONNX
Runtime's DirectML EP with the CPU EP side, as ``run --ep dml`` does) and ``dml-direct``.
Prints, per lane and setting, seconds and cases/s (worker start included; the canary, the
environment and the reports excluded), verdict counts, and for ``dml`` where the time of the Wine
worker went (calls into the Windows worker, session creation, runs).

    python benchmarks/dml_speed.py [--profile default] [--lanes dml,dml-direct] [--jobs 1,2]
                                   [--serve both|on|off] [--ep-option onnxruntime_node=1.20.1]

``--serve off`` starts one node.exe per call (the behaviour before the kept worker); ``on`` keeps
one per worker process. ``--jobs 2`` gives each worker its own Wine prefix (``<cache>/prefixes``).

Figures of one series of runs (`run --profile default`, 2 CPU cores shared with other jobs, Mesa
25.0.7 lavapipe, Wine 8.0, onnxruntime-node 1.30.0 / DirectML 1.15.4; wall seconds of the whole
command, canary included; CPU seconds = user + sys of the run and its Windows processes):

    dml, before (one node.exe per call, --jobs forced to 1,     3575 cases  1984 s wall  637 CPU s   (load average 6-11)
                 refused batches split session by session)
    dml, kept node.exe + prefix per worker + placement probe,   3575 cases   366 s wall  268 CPU s   (load average 5-7)
                 --jobs 2
    dml, the same + IR-version refusals remembered, --jobs 2    3575 cases   160 s wall  161 CPU s   (load average 3-5)
        worker calls 385 (175 DirectML side, 210 CPU side), 297 s summed over the 2 workers: sessions
        created 101 s, sessions refused 135 s (ROI pooling at opset 1, refused by the DML EP at
        kernel creation: split case by case), runs 6 s, the rest 54 s (Wine/node.exe, loads, files)
    dml-direct, --jobs 2                                        3911 cases    14 s wall   10 CPU s   (276 cases/s)

A later run of this script (`--lanes dml,dml-direct --jobs 2 --serve on`, 25 Nov 2026, machine otherwise
idle, load average 1.7), after the runner learned to remember a graph refused alone (a later case of
the identical graph gets the refusal without a session; a failed group tries one case per graph first):

    dml --jobs 2, kept worker on         3575 cases     73.8 s     48.4 cases/s
        worker calls 387 (163 DirectML side, 224 CPU side): 138.9 s in calls (summed over workers): sessions
        created 65.7 s, sessions refused 18.3 s, runs 3.8 s, the rest (51.1 s) Wine/node.exe start, model load, files
    dml-direct --jobs 2                  3911 cases      8.5 s    460.4 cases/s

(verdicts of that run: the current rules, which since allow ROI pooling's -0.0/+0.0 ties; the compare
of the same rules with and without the refusal memory showed 0 verdict changes but for one case that
was a CRASH of the Wine worker while loading a model refused for its IR version, now EP_REJECTED like
its 175 siblings.)

Two runs back to back (25 Nov 2026, machine otherwise idle), before and after the runner learned, per
family of cases (node types, input types, opset), how often a session was refused alone (a family
refused before goes case by case at once; a failed group splits by its likely refusals):

    dml --jobs 2, before                 3575 cases     53.0 s     67.5 cases/s   387 worker calls
    dml --jobs 2, after                  3575 cases     54.8 s     65.2 cases/s   375 worker calls

The default profile's cases are sorted by family already, so it gains nothing; random fuzz cases do
(the DML EP refuses 56% of them): a 3-minute `fuzz --ep dml --seed 5` ran 768 cases against 512.

Every dml run above gives the same 3575 verdicts (`onnx-dml-bench compare`: 0 regressions, 0 fixes,
0 other changes, 0 max-ULP changes; reports/dml-versions/compare-dml-speed-before-vs-after.html).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

from onnx_dml_bench import registry
from onnx_dml_bench.dml.node.client import SERVE_ENV, TRACE_ENV
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.lanes.catalog import parse_options, resolve
from onnx_dml_bench.lanes.dml_direct import descriptor_only_cases


def timed(cases, key: str, options: dict, jobs: int, batch: int, three_way: bool):
    spec = resolve(key, dict(options))
    cfg = RunConfig(ep=key, batch_size=batch, jobs=jobs, timeout_s=600, three_way=three_way)
    t = time.perf_counter()
    recs = run_cases(cases, spec, cfg)
    return time.perf_counter() - t, recs


def breakdown(trace: Path) -> str:
    if not trace.exists():
        return ""
    rows = [json.loads(ln) for ln in trace.read_text().splitlines() if ln.strip()]
    wall = sum(r["wall_ms"] for r in rows) / 1e3
    ses = sum(r["session_ms"] for r in rows) / 1e3
    run = sum(r["run_ms"] for r in rows) / 1e3
    bad = sum(r.get("failed_session_ms", 0) for r in rows) / 1e3
    n_ep = sum(1 for r in rows if r["eps"] == ["dml"])
    return (f"      worker calls {len(rows)} ({n_ep} DirectML side, {len(rows) - n_ep} CPU side): {wall:.1f} s in "
            f"calls (summed over workers): sessions created {ses:.1f} s, sessions refused {bad:.1f} s, runs "
            f"{run:.1f} s, the rest ({wall - ses - bad - run:.1f} s) Wine/node.exe start, model load, files")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="default")
    ap.add_argument("--lanes", default="dml,dml-direct")
    ap.add_argument("--jobs", default="1,2", help="comma-separated worker counts to time")
    ap.add_argument("--serve", default="both", choices=("both", "on", "off"))
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--ep-option", action="append", default=[])
    args = ap.parse_args()
    options = parse_options(args.ep_option)
    cases = [c for op in registry.OPERATORS.values() for c in op.sweep(args.profile)]
    print(f"profile {args.profile}: {len(cases)} cases; {os.cpu_count()} CPU cores, "
          f"{platform.processor() or platform.machine()}; options {options or 'default build'}", flush=True)
    serves = {"both": ["off", "on"], "on": ["on"], "off": ["off"]}[args.serve]
    for key in [k.strip() for k in args.lanes.split(",") if k.strip()]:
        lane_cases = cases + (descriptor_only_cases(cases, args.profile) if key == "dml-direct" else [])
        for jobs in [int(j) for j in args.jobs.split(",")]:
            for serve in (serves if key == "dml" else ["-"]):
                trace = Path(tempfile.mkdtemp(prefix="odb-speed-")) / "trace.jsonl"
                os.environ[TRACE_ENV] = str(trace)
                if serve != "-":
                    os.environ[SERVE_ENV] = "1" if serve == "on" else "0"
                seconds, recs = timed(lane_cases, key, options, jobs, args.batch_size, key == "dml")
                counts = Counter(r.verdict for r in recs)
                name = f"{key} --jobs {jobs}" + (f", kept worker {serve}" if serve != "-" else "")
                print(f"{name:<34} {len(lane_cases):6d} cases {seconds:8.1f} s {len(lane_cases) / seconds:8.1f} cases/s  "
                      + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
                if key == "dml":
                    print(breakdown(trace), flush=True)


if __name__ == "__main__":
    main()
