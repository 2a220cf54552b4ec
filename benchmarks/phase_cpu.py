"""Where a worker's CPU time goes: `onnx-dml-bench run` on a selection with its batches run in this
process (what a worker does, one batch after the other), every phase's CPU time (this process and
its threads, ``time.process_time``), each phase counted without the phases inside it.

    python benchmarks/phase_cpu.py [--profile networks|limits] [--every K] [--ep cpu] [--out DIR] [-- other run options]

``--out`` keeps the run's records there (for ``onnx-dml-bench compare`` of two revisions' runs of
the same selection).

Phases: ``reference`` (``Operator.expected`` / ``reference``: the answer judged against), ``EP
runs`` (ONNX Runtime's ``session.run``), ``sessions`` (making them), ``build + inputs`` (each
case's graph, its admission and its input data), ``judging`` (``verdict.judge`` without the
reference: open points, bounds, window statistics, comparisons; RoiAlign's bound pass too, which
gives the reference's answer as well and is made when the reference is asked for), ``other`` (the rest: batching,
records, reports). The share of reference and EP runs is the figure of the target (>= 60 %). CPU time
is the measure a machine shared with other jobs moves least; the wall time is printed beside it.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

PHASES = ("reference", "EP runs", "sessions", "build + inputs", "judging", "other")


class Clock:
    """Exclusive CPU time per phase: a phase entered inside another is taken out of the outer one."""

    def __init__(self):
        self.spent = dict.fromkeys(PHASES, 0.0)
        self.stack: list[list] = []

    def wrap(self, phase: str, fn):
        @functools.wraps(fn)
        def timed(*a, **k):
            frame = [phase, time.process_time(), 0.0]       # phase, start, time of inner phases
            self.stack.append(frame)
            try:
                return fn(*a, **k)
            finally:
                self.stack.pop()
                total = time.process_time() - frame[1]
                self.spent[phase] += total - frame[2]
                if self.stack:
                    self.stack[-1][2] += total
        return timed


def instrument(clock: Clock) -> None:
    import onnxruntime.capi.onnxruntime_inference_collection as C

    from onnx_dml_bench import execute, registry, verdict
    from onnx_dml_bench.execute import batch
    S = C.InferenceSession
    S.run = clock.wrap("EP runs", S.run)
    S._create_inference_session = clock.wrap("sessions", S._create_inference_session)
    batch.prepare_case = clock.wrap("build + inputs", batch.prepare_case)     # what run_batch calls
    verdict.judge = clock.wrap("judging", verdict.judge)
    classes = {c for op in registry.OPERATORS.values() for c in type(op).__mro__ if c.__module__.startswith("onnx_dml_bench")}
    for cls in classes:
        for name in ("expected", "reference"):
            if name in cls.__dict__:
                setattr(cls, name, clock.wrap("reference", cls.__dict__[name]))
        if "_bounded" in cls.__dict__:
            # RoiAlign's bound pass, which the reference makes when an answer will be compared (it
            # gives the reference's answer too): counted as judging, all of it
            cls._bounded = clock.wrap("judging", cls.__dict__["_bounded"])

    def run_cases(cases, lane, cfg, on_records=None):
        """The batches one after the other in this process, as one worker runs them."""
        from onnx_dml_bench import heap, machine
        from onnx_dml_bench.execute import pool
        heap.keep_freed_memory(pool.worker_keep(cfg))
        machine.share_cores(cfg.jobs)
        backend = lane.make_backend(cfg)
        out = []
        for b in execute.batches(cases, cfg.batch_size, cfg.batch_bytes):
            recs = execute.run_batch(backend, b)
            out.extend(recs)
            if on_records:
                on_records(recs)
        return out
    execute.run_cases = run_cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="networks")
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--ep", default="cpu")
    ap.add_argument("--out", type=Path, help="the run's output folder (default: a temporary one)")
    ap.add_argument("run_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    from onnx_dml_bench.casefile import dump
    from onnx_dml_bench.plan import sweep_cases
    tmp = Path(tempfile.mkdtemp())
    cases = sweep_cases(a.profile)[::max(1, a.every)]
    dump(cases, tmp / "cases.json")
    clock = Clock()
    instrument(clock)
    from onnx_dml_bench.cli import main as cli
    extra = [x for x in a.run_args if x != "--"]
    out = a.out or tmp / "out"
    argv = ["run", "--ep", a.ep, "--cases", str(tmp / "cases.json"), "--out", str(out), "--overwrite", "--jobs", "1", *extra]
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        code = cli(argv)
    except SystemExit as e:
        code = e.code
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    clock.spent["other"] += cpu - sum(clock.spent.values())
    verdicts: dict = {}
    with open(out / "results.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if "verdict" in rec and "case_id" in rec:
                verdicts[rec["verdict"]] = verdicts.get(rec["verdict"], 0) + 1
    print(f"{a.profile}, every {a.every}th case ({len(cases)} cases) on --ep {a.ep}, one process: exit code {code}, "
          f"{cpu:.1f} CPU s, {wall:.1f} s wall; verdicts {dict(sorted(verdicts.items()))}")
    for p in PHASES:
        print(f"  {p:16s} {clock.spent[p]:8.1f} CPU s  {100 * clock.spent[p] / cpu:5.1f} %")
    share = clock.spent["reference"] + clock.spent["EP runs"]
    print(f"  reference + EP runs: {100 * share / cpu:.1f} % of the CPU time (target >= 60 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
