"""Running batches of cases on one EP, inside worker processes, with placement proof.

A batch becomes one ONNX model per opset (one node, or a few, per case, each with its own inputs
and outputs) and one session on the EP under test with CPU fallback disabled. A session the EP
refuses, or a run that fails, is split in halves until the case at fault is alone, so one
unsupported case does not cost its group. The same model runs on the CPU EP of the same ONNX
Runtime build for the three-way comparison. Per-node EP assignment is read back from the session.

Worker processes are replaced when they crash or hang; their batch is split in the parent to find
the case at fault, which gets CRASH or TIMEOUT; no other result is lost.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait

import onnx

from . import compare as C
from .cases import Case
from .ops.base import DescriptorError, make_model

FALLBACK_TEXT = "fallback to cpu ep has been explicitly disabled"
FAULTS_ENV = "ONNX_DML_BENCH_FAULTS"    # test hook: {"<case id>": "abort" | "hang"}


@dataclass
class RunConfig:
    ep: str = "cpu"
    ep_options: dict = field(default_factory=dict)
    optimization: str = "disabled"
    batch_size: int = 64
    timeout_s: float = 300.0
    jobs: int = 1
    threads: int = 1
    three_way: bool = True


@dataclass
class Outcome:
    """One session + run of a model on one side (the EP under test, or the CPU EP)."""
    ok: bool
    stage: str                          # load | session | run | crash | timeout | done
    error: str | None = None
    outputs: dict | None = None         # graph output name -> array
    assignment: dict | None = None      # node name -> EP name
    session_ms: float = 0.0
    run_ms: float = 0.0


# ----------------------------------------------------------------------------------------------
# Backends (inside the worker)
# ----------------------------------------------------------------------------------------------

class OrtBackend:
    """ONNX Runtime in this process."""

    def __init__(self, spec, cfg: RunConfig):
        self.spec, self.cfg = spec, cfg
        self.ep_name = spec.ep_name
        self.is_cpu = spec.is_cpu
        self.cpu_build = "same onnxruntime package, CPUExecutionProvider"

    def run_many(self, jobs: list[tuple[bytes, dict, list[str], str]]) -> list[Outcome]:
        return [self.run(*j) for j in jobs]

    def run(self, model: bytes, feeds: dict, output_names: list[str], side: str) -> Outcome:
        from .providers import make_session
        t0 = time.perf_counter()
        try:
            sess = make_session(model, self.spec, side_is_ep=(side == "ep"), optimization=self.cfg.optimization,
                                threads=self.cfg.threads)
        except Exception as e:  # noqa: BLE001 - the EP's own words are the verdict's reason
            text = str(e)
            stage = "load" if ("IR version" in text or "opset" in text.lower() and "support" in text.lower()) else "session"
            return Outcome(False, stage, text, session_ms=(time.perf_counter() - t0) * 1e3)
        t1 = time.perf_counter()
        assignment = None
        try:
            assignment = {n.name: sg.ep_name for sg in sess.get_provider_graph_assignment_info() for n in sg.get_nodes()}
        except Exception:   # older builds: fallback-disabled sessions remain the proof
            assignment = None
        try:
            outs = sess.run(output_names, feeds)
        except Exception as e:  # noqa: BLE001
            return Outcome(False, "run", str(e), assignment=assignment, session_ms=(t1 - t0) * 1e3,
                           run_ms=(time.perf_counter() - t1) * 1e3)
        t2 = time.perf_counter()
        return Outcome(True, "done", None, dict(zip(output_names, outs)), assignment, (t1 - t0) * 1e3, (t2 - t1) * 1e3)


def make_backend(spec, cfg: RunConfig):
    if spec.kind == "wine":
        from .dml.backend import WineDmlBackend
        return WineDmlBackend(spec, cfg)
    return OrtBackend(spec, cfg)


# ----------------------------------------------------------------------------------------------
# One batch: build, run (with bisection), compare
# ----------------------------------------------------------------------------------------------

@dataclass
class Item:
    case: Case
    index: int
    prefix: str
    frag: object
    inputs: dict
    feeds: dict
    outs: dict            # local output name -> graph output name


def _base_record(case: Case, ep_name: str) -> dict:
    op = case.operator
    rec = {
        "record": "case", "case_id": case.id, "op": case.op, "dml_op": op.dml_name, "dtype": case.dtype,
        "opset": case.opset, "family": case.family, "seed": case.seed, "descriptor": case.desc.to_dict(),
        "onnx": case.v, "ep": ep_name, "verdict": None, "attribution": None, "reason": "", "labels": [],
        "open_points": [], "outputs": {}, "cpu": None, "placement": None, "timings": {},
    }
    if case.values is not None:
        rec["case"] = case.to_dict()
    return rec


def _onnx_text(frag, prefix: str) -> str:
    """The case's nodes as text, with the batch prefix taken off its names."""
    text = "\n".join(onnx.helper.printable_node(n, prefix="") for n in frag.nodes)
    return re.sub(rf"(?<![\w]){re.escape(prefix)}", "", text)


def _solve(backend, items: list[Item], opset: int, side: str) -> dict[str, Outcome]:
    """Run items on one side, splitting failing groups until each failure is one case's."""
    result: dict[str, Outcome] = {}
    pending = [items]
    while pending:
        jobs = []
        for group in pending:
            model = make_model([it.frag for it in group], opset)
            feeds = {name: arr for it in group for name, arr in it.feeds.items()}
            outnames = [g for it in group for g in it.outs.values()]
            jobs.append((model.SerializeToString(), feeds, outnames, side))
        outcomes = backend.run_many(jobs)
        nxt = []
        for group, out in zip(pending, outcomes):
            if out.ok or len(group) == 1:
                for it in group:
                    result[it.case.id] = out
            else:
                mid = len(group) // 2
                nxt += [group[:mid], group[mid:]]
        pending = nxt
    return result


def _failure_verdict(out: Outcome, side_is_cpu: bool) -> tuple[str, str]:
    text = out.error or ""
    if out.stage == "crash":
        return "CRASH", text
    if out.stage == "timeout":
        return "TIMEOUT", text
    if out.stage in ("load", "session"):
        if FALLBACK_TEXT in text.lower():
            return "NOT_OFFLOADED", "a node would run on the CPU EP (session refused with CPU fallback disabled): " + text
        return "EP_REJECTED", text
    return "ERROR", text


def _check_faults(cases: list[Case]) -> None:
    spec = os.environ.get(FAULTS_ENV)
    if not spec:
        return
    faults = json.loads(spec)
    for c in cases:
        f = faults.get(c.id)
        if f == "abort":
            os.abort()
        if f == "hang":
            while True:
                time.sleep(3600)


def run_batch(backend, cases: list[Case]) -> list[dict]:
    """Verdict records for a batch of cases, all on one backend."""
    _check_faults(cases)
    records: dict[str, dict] = {}
    items: dict[int, list[Item]] = {}
    for i, case in enumerate(cases):
        op = case.operator
        rec = _base_record(case, backend.ep_name)
        records[case.id] = rec
        try:
            op.validate(case.desc)
            op.check_variant(case)
        except DescriptorError as e:
            rec.update(verdict="ERROR", reason=f"invalid descriptor: {e}")
            continue
        why = op.expressible(case)
        if why:
            rec.update(verdict="NOT_EXPRESSIBLE", reason=why)
            continue
        try:
            inputs = case.inputs()
            frag = op.build(case, f"c{i}_")
        except Exception as e:  # noqa: BLE001
            rec.update(verdict="ERROR", reason=f"could not build the case: {e}")
            continue
        rec["onnx_node"] = _onnx_text(frag, f"c{i}_")
        feeds = {frag.input_names[k]: v for k, v in inputs.items()}
        items.setdefault(case.opset, []).append(Item(case, i, f"c{i}_", frag, inputs, feeds, dict(frag.output_names)))

    for opset, group in items.items():
        ep_out = _solve(backend, group, opset, "ep")
        cpu_out = None
        if not backend.is_cpu and backend.cfg.three_way:
            cpu_out = _solve(backend, group, opset, "cpu")
        for it in group:
            _finish(backend, it, records[it.case.id], ep_out[it.case.id], cpu_out[it.case.id] if cpu_out else None, len(group))
    return [records[c.id] for c in cases]


def _case_outputs(it: Item, out: Outcome) -> dict | None:
    if not out.ok:
        return None
    return {local: out.outputs[g] for local, g in it.outs.items()}


def _finish(backend, it: Item, rec: dict, ep: Outcome, cpu: Outcome | None, batch_size: int) -> None:
    case, op = it.case, it.case.operator
    rec["timings"] = {"batch_size": batch_size, "session_ms": round(ep.session_ms, 3), "run_ms": round(ep.run_ms, 3)}
    node_names = [n.name for n in it.frag.nodes]
    if ep.assignment is not None:
        # An EP may rewrite nodes in its own transformations (e.g. WebGPU's NHWC layout: the
        # original name disappears). In a session created with CPU fallback disabled whose
        # recorded nodes are all on the EP, such a node can only be on the EP too.
        all_on_ep = not backend.is_cpu and set(ep.assignment.values()) <= {backend.ep_name}
        missing = f"{backend.ep_name} (rewritten by the EP)" if all_on_ep else "unassigned"
        nodes = {n[len(it.prefix):]: ep.assignment.get(n, missing) for n in node_names}
    else:
        nodes = None
    rec["placement"] = {"fallback_disabled": not backend.is_cpu, "nodes": nodes,
                        "proof": ("session created with CPU fallback disabled" if not backend.is_cpu else "CPU EP under test")
                        + ("; per-node EP assignment read from the session" if nodes is not None else "")}
    if cpu is not None:
        rec["cpu"] = {"build": backend.cpu_build, "verdict": None, "reason": ""}
        if not cpu.ok:
            v, why = _failure_verdict(cpu, True)
            rec["cpu"].update(verdict=v, reason=why)
    if not ep.ok:
        v, why = _failure_verdict(ep, backend.is_cpu)
        rec.update(verdict=v, reason=why)
        return
    if nodes is not None:
        off = {n: e for n, e in nodes.items() if not e.startswith(backend.ep_name)}
        if off:
            rec.update(verdict="NOT_OFFLOADED", reason=f"nodes not on {backend.ep_name}: {off}")
            return
    t0 = time.perf_counter()
    try:
        ref = op.reference(case, it.inputs)
    except Exception as e:  # noqa: BLE001
        rec.update(verdict="ERROR", reason=f"reference failed: {e}\n{traceback.format_exc(limit=3)}")
        return
    rec["timings"]["reference_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    pts = op.open_points(case, it.inputs)
    rec["open_points"] = list(pts)
    specs = op.compare_specs(case)
    got_ep = _case_outputs(it, ep)
    got_cpu = _case_outputs(it, cpu) if cpu is not None else None

    def side(got, others):
        res = {}
        for name, spec in specs.items():
            tie = None
            if spec.kind == "indices" and got is not None and name in got and hasattr(op, "tie_valid"):
                try:
                    tie = op.tie_valid(case, it.inputs, ref, got[name])
                except Exception:  # noqa: BLE001 - a malformed index array is a plain mismatch
                    tie = None
            res[name] = C.compare_output(name, spec, None if got is None else got.get(name), ref[name],
                                         others=others, tie_valid=tie)
        return res

    ep_cmp = side(got_ep, {"cpu": got_cpu[k] for k in specs} if got_cpu else None)
    ep_ok = all(c.match for c in ep_cmp.values())
    cpu_ok = None
    if got_cpu is not None:
        cpu_cmp = side(got_cpu, None)
        cpu_ok = all(c.match for c in cpu_cmp.values())
        rec["cpu"].update(verdict="PASS" if cpu_ok else "FAIL",
                          outputs={k: _summary(v) for k, v in cpu_cmp.items()})
        if not cpu_ok:
            rec["cpu"]["reason"] = "; ".join(_why(c) for c in cpu_cmp.values() if not c.match)
    verdict, attribution = C.attribute(ep_ok, cpu_ok, C.outputs_equal(got_ep, got_cpu), pts, backend.is_cpu)
    rec["outputs"] = {k: v.to_dict() for k, v in ep_cmp.items()}
    rec["verdict"], rec["attribution"] = verdict, attribution
    rec["labels"] = sorted({lab for c in ep_cmp.values() for lab in c.labels})
    if verdict != "PASS":
        rec["reason"] = "; ".join(_why(c) for c in ep_cmp.values() if not c.match)
        if pts:
            rec["labels"] = sorted(set(rec["labels"]) | {f"open-point:{p}" for p in pts})
            rec["reason"] += " | touches open point(s) of the DirectML pages: " + " ".join(op.open_point_texts.get(p, p) for p in pts)


def _summary(c: C.OutputComparison) -> dict:
    return {k: getattr(c, k) for k in ("match", "mismatches", "total", "max_abs", "max_ulp", "labels", "first")}


def _why(c: C.OutputComparison) -> str:
    s = f"{c.output}: {c.mismatches}/{c.total} differ"
    if c.max_ulp is not None and c.kind != "indices":
        s += f", max {c.max_ulp} ULP"
    if c.labels:
        s += f" [{', '.join(c.labels)}]"
    if c.note:
        s += f" ({c.note})"
    return s


# ----------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------

def _worker_main(conn, spec, cfg: RunConfig) -> None:
    try:
        backend = make_backend(spec, cfg)
    except Exception as e:  # noqa: BLE001
        conn.send(("fatal", None, f"{type(e).__name__}: {e}"))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        _, batch_id, cases = msg
        try:
            conn.send(("done", batch_id, run_batch(backend, cases)))
        except Exception as e:  # noqa: BLE001 - report, keep the worker
            conn.send(("error", batch_id, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"))


class _Worker:
    def __init__(self, ctx, spec, cfg):
        self.parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, spec, cfg), daemon=True)
        self.proc.start()
        child.close()
        self.batch = None
        self.deadline = None

    def kill(self):
        try:
            self.proc.kill()
            self.proc.join(5)
        except Exception:  # noqa: BLE001
            pass


def _lost_record(case: Case, ep_name: str, verdict: str, reason: str) -> dict:
    rec = _base_record(case, ep_name)
    rec.update(verdict=verdict, reason=reason)
    return rec


def run_cases(cases: list[Case], spec, cfg: RunConfig, on_records=None) -> list[dict]:
    """Run every case on the EP of ``spec``; ``on_records(list)`` is called as batches finish."""
    ctx = mp.get_context("spawn")
    # cases likely to share a fate (same operator, type, ONNX form) sit together, so a refused
    # session splits into few groups
    ordered = sorted(cases, key=lambda c: (c.opset, c.op, c.dtype, repr(c.variant), c.id))
    queue: deque[list[Case]] = deque(ordered[i:i + cfg.batch_size] for i in range(0, len(ordered), cfg.batch_size))
    workers = [_Worker(ctx, spec, cfg) for _ in range(max(1, min(cfg.jobs, len(queue) or 1)))]
    out: list[dict] = []
    next_id = 0

    def emit(recs):
        out.extend(recs)
        if on_records:
            on_records(recs)

    def failed(batch: list[Case], verdict: str, reason: str):
        if len(batch) == 1:
            emit([_lost_record(batch[0], spec.ep_name, verdict, reason)])
        else:
            mid = len(batch) // 2
            queue.appendleft(batch[mid:])
            queue.appendleft(batch[:mid])

    try:
        while queue or any(w.batch is not None for w in workers):
            for i, w in enumerate(workers):
                if w.batch is None and queue:
                    if not w.proc.is_alive():
                        workers[i] = w = _Worker(ctx, spec, cfg)
                    w.batch = queue.popleft()
                    w.batch_id = next_id
                    next_id += 1
                    w.deadline = time.monotonic() + cfg.timeout_s
                    w.parent.send(("batch", w.batch_id, w.batch))
            busy = [w for w in workers if w.batch is not None]
            if not busy:
                continue
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait([w.parent for w in busy] + [w.proc.sentinel for w in busy], timeout=timeout)
            now = time.monotonic()
            for i, w in enumerate(workers):
                if w.batch is None:
                    continue
                if w.parent in ready or w.proc.sentinel in ready:
                    try:
                        if not w.parent.poll():
                            raise EOFError
                        kind, bid, payload = w.parent.recv()
                    except (EOFError, OSError):
                        code = w.proc.exitcode if w.proc.exitcode is not None else w.proc.join(1) or w.proc.exitcode
                        batch, w.batch = w.batch, None
                        w.kill()
                        workers[i] = _Worker(ctx, spec, cfg)
                        failed(batch, "CRASH", f"the worker process died (exit code {code}) while running this case")
                        continue
                    batch, w.batch = w.batch, None
                    if kind == "done":
                        emit(payload)
                    elif kind == "fatal":
                        for c in batch:
                            emit([_lost_record(c, spec.ep_name, "ERROR", f"the EP could not be started in the worker: {payload}")])
                        queue_left = list(queue)
                        queue.clear()
                        for b in queue_left:
                            for c in b:
                                emit([_lost_record(c, spec.ep_name, "ERROR", f"the EP could not be started in the worker: {payload}")])
                    else:
                        failed(batch, "ERROR", f"the worker failed on this case: {payload}")
                elif now >= w.deadline:
                    batch, w.batch = w.batch, None
                    w.kill()
                    workers[i] = _Worker(ctx, spec, cfg)
                    failed(batch, "TIMEOUT", f"no answer within {cfg.timeout_s:g} s (the worker was killed)")
    finally:
        for w in workers:
            try:
                if w.proc.is_alive():
                    w.parent.send(("stop",))
            except Exception:  # noqa: BLE001
                pass
        for w in workers:
            w.proc.join(2)
            if w.proc.is_alive():
                w.kill()
    return out
