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

Three pairs back to back (25 Nov 2026; `--lanes dml --jobs 2 --serve on --records DIR`, main's source tree
then this one, the third in the other order), before and after one file of models and inputs per call, the probe's refusals sent alone
and the rest in one session, both sides in each call and batches of 256 (target: <= 30 s on 2 cores):

    dml --jobs 2, before (batches of 64)   3575 cases    139.2 s   100.4 CPU s   load average 4.5 -> 9.1
    dml --jobs 2, after                    3575 cases     39.8 s    27.8 CPU s   load average 9.1 -> 8.2
    dml --jobs 2, before (85d322b)         3575 cases    238.6 s   103.3 CPU s   load average 1.0 -> 12.9
        worker calls 377: 443.0 s summed (sessions created 196.3 s, refused 40.2 s, runs 11.9 s, rest 194.6 s)
    dml --jobs 2, after                    3575 cases     87.3 s    36.6 CPU s   load average 12.9 -> 14.8
        worker calls 126: 135.9 s summed (sessions created 49.8 s, refused 42.9 s, runs 4.9 s, rest 38.2 s)
    the other order: after                 3575 cases     58.6 s    32.6 CPU s   load average 13.9 -> 15.0
        worker calls 125: 93.3 s summed (sessions created 35.4 s, refused 29.2 s, runs 4.0 s, rest 24.6 s)
    before (main, f3a8f37)                 3575 cases    190.7 s   101.1 CPU s   load average 15.0 -> 14.4
        worker calls 374: 362.3 s summed (sessions created 172.5 s, refused 41.1 s, runs 10.2 s, rest 138.6 s)

3.5x, 2.7x and 3.3x less wall time, 3.6x, 2.8x and 3.1x fewer CPU seconds; the 30 s target is not
shown on these shared cores (the CPU seconds are 14-18 s of two idle cores' time).

Every dml run above gives the same 3575 verdicts (`onnx-dml-bench compare`: 0 regressions, 0 fixes,
0 other changes, 0 max-ULP changes; reports/dml-versions/compare-dml-speed-before-vs-after.html).
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import resource
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from onnx_dml_bench import registry
from onnx_dml_bench.dml.node.client import SERVE_ENV, TRACE_ENV
from onnx_dml_bench.dml.select import select_stack
from onnx_dml_bench.execute import RunConfig, run_cases
from onnx_dml_bench.lanes.catalog import parse_options, resolve
from onnx_dml_bench.lanes.dml_direct import descriptor_only_cases
from onnx_dml_bench.record import Environment
from onnx_dml_bench.results import ResultWriter


class CpuMeter:
    """CPU seconds of this process and everything it starts: a cgroup-v1 ``cpuacct`` group of its
    own when it may make one (root), which also counts the Wine processes that leave the process
    tree (wineserver, winedevice.exe); otherwise getrusage of this process and its waited-for
    children, which misses those (the figure then says so)."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self):
        self.group = None
        try:
            group = self.ROOT / f"onnx-dml-bench-speed-{os.getpid()}"
            group.mkdir()
            (group / "cgroup.procs").write_text(str(os.getpid()))
            self.group = group
            self.how = "cgroup cpuacct: this process and all it starts, wineserver included"
        except OSError:
            self.how = "getrusage of this process and its children (Wine's wineserver not counted)"

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        r = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        return sum(x.ru_utime + x.ru_stime for x in r)

    def close(self) -> None:
        if self.group is None:
            return
        try:
            (self.ROOT / "cgroup.procs").write_text(str(os.getpid()))
            for _ in range(50):            # the last wineserver ends a moment after it is killed
                try:
                    self.group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        except OSError:
            pass


def fresh_wineservers(options: dict) -> None:
    """Stop the lingering wineservers (``-p30``) of the Wine prefix slots no process holds, so a
    timed run starts its own (and its CPU meter counts them); a held slot is left alone."""
    stack = select_stack(options, need_ort=False)
    slots = Path(stack.cache_dir) / "prefixes"
    k = 0
    while k == 0 or (slots / str(k)).is_dir():
        prefix = Path(stack.prefix) if k == 0 else slots / str(k)
        with open(slots / f"slot-{k}.lock", "a+") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                k += 1
                continue
            env = dict(stack.env(), WINEPREFIX=str(prefix))
            subprocess.run([stack.wineserver, "-k"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=15)
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        k += 1


def timed(cases, key: str, options: dict, jobs: int, batch: int | None, three_way: bool):
    spec = resolve(key, dict(options))
    cfg = RunConfig(batch_size=batch or getattr(spec, "batch_size", 64), jobs=jobs, timeout_s=600,
                    three_way=three_way)
    fresh_wineservers(options)
    meter = CpuMeter()
    try:
        c0, t = meter.seconds(), time.perf_counter()
        recs = run_cases(cases, spec, cfg)
        seconds = time.perf_counter() - t
        fresh_wineservers(options)           # the run's own wineservers end (and are counted)
        cpu = meter.seconds() - c0
    finally:
        meter.close()
    return seconds, cpu, meter.how, recs


def save(path: Path, recs, key: str, profile: str, options: dict) -> None:
    """The records of a timed run as a results file (an environment line without the canary's facts)."""
    env = Environment(ep=recs[0].ep if recs else key, ep_key=key, ep_options=dict(options), profile=profile,
                      argv=["benchmarks/dml_speed.py"])
    w = ResultWriter(path, env)
    w.write(recs)
    w.close()


def breakdown(trace: Path) -> str:
    if not trace.exists():
        return ""
    rows = [json.loads(ln) for ln in trace.read_text().splitlines() if ln.strip()]
    wall = sum(r["wall_ms"] for r in rows) / 1e3
    ses = sum(r["session_ms"] for r in rows) / 1e3
    run = sum(r["run_ms"] for r in rows) / 1e3
    bad = sum(r.get("failed_session_ms", 0) for r in rows) / 1e3
    n_ep = sum(1 for r in rows if "dml" in r["eps"])
    return (f"      worker calls {len(rows)} ({n_ep} with DirectML sessions, {len(rows) - n_ep} CPU side only): {wall:.1f} s in "
            f"calls (summed over workers): sessions created {ses:.1f} s, sessions refused {bad:.1f} s, runs "
            f"{run:.1f} s, the rest ({wall - ses - bad - run:.1f} s) Wine/node.exe start, model load, files")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="default")
    ap.add_argument("--lanes", default="dml,dml-direct")
    ap.add_argument("--jobs", default="1,2", help="comma-separated worker counts to time")
    ap.add_argument("--serve", default="both", choices=("both", "on", "off"))
    ap.add_argument("--batch-size", type=int, help="cases per model and session (default: the lane's own, "
                                                   "Lane.batch_size; 64 before the lanes had their own)")
    ap.add_argument("--ep-option", action="append", default=[])
    ap.add_argument("--records", type=Path,
                    help="folder for each timed run's records (<lane>-jobs<N>[-serve<on|off>].jsonl), for "
                         "`onnx-dml-bench compare` between two runs of this script")
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
                load = os.getloadavg()[0]
                seconds, cpu, how, recs = timed(lane_cases, key, options, jobs, args.batch_size, key == "dml")
                counts = Counter(r.verdict for r in recs)
                name = f"{key} --jobs {jobs}" + (f", kept worker {serve}" if serve != "-" else "")
                print(f"{name:<34} {len(lane_cases):6d} cases {seconds:8.1f} s {len(lane_cases) / seconds:8.1f} cases/s  "
                      f"{cpu:7.1f} CPU s  load {load:.1f} -> {os.getloadavg()[0]:.1f}  "
                      + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
                print(f"      CPU seconds: {how}", flush=True)
                if key == "dml":
                    print(breakdown(trace), flush=True)
                if args.records:
                    args.records.mkdir(parents=True, exist_ok=True)
                    path = args.records / (f"{key}-jobs{jobs}" + (f"-serve{serve}" if serve != "-" else "") + ".jsonl")
                    save(path, recs, key, args.profile, options)
                    print(f"      records: {path}", flush=True)


if __name__ == "__main__":
    main()
