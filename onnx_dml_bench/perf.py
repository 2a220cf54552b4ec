"""Performance lens: per-case latency with inputs and outputs kept on the device.

Each case is one operator node built from the package's descriptors, run in a session made with the
same options as the conformance runner (CPU fallback disabled for any EP other than the CPU EP,
graph optimisations disabled). Inputs are copied to the EP's device once and outputs are bound to
device memory (ONNX Runtime IOBinding), so the timed loop holds no host<->device copy:

    run_with_iobinding(io); io.synchronize_outputs()      timed, host wall clock

A lane whose EP runs outside this process times through its :class:`~lanes.base.Timer`: the direct
DirectML lane dispatches the descriptor repeatedly and reads the GPU time of each dispatch from
D3D12 timestamp queries, and measures the device's copy bandwidth the same way (the yardstick of
the share column); the ``dml`` lane times ``session.run`` of ONNX Runtime's DirectML EP, so the two
side by side show what the EP's lowering and the runtime add.

The figure reported is the median of ``runs`` timed runs after ``warmup`` untimed ones; every run's
time is kept (``samples_ms``) for ``perf-compare``. Achieved bandwidth is (bytes read + bytes
written per run) / median time: every input tensor read once and every output written once, the
least traffic the operator can cause. Its share of the device's bandwidth (``--bandwidth``; else the
yardstick measured on the device; else a nominal value looked up from the GPU's name) says how close
the kernel comes to the memory roofline. The output of the last timed run is compared with the NumPy
reference under the same policy as the conformance run: a speed figure for a wrong result is marked
FAIL.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import cuda_clock, registry
from . import verdict as V
from .cases import Case
from .dtypes import DML_TO_NUMPY
from .lanes.base import PreflightError, descriptor_case
from .machine import nvidia
from .outcome import Outcome
from .record import Verdict
from .safeload import UntrustedFileError, load_file

#: nominal memory bandwidth (GB/s) by GPU name (substring of nvidia-smi's name, checked in order)
NOMINAL_BANDWIDTH_GBS = (
    ("H100 80GB HBM3", 3350.0),      # H100 SXM5
    ("H100 NVL", 3900.0),
    ("H100 PCIe", 2000.0),
    ("H200", 4800.0),
    ("GH200", 4000.0),
    ("B200", 8000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100-SXM4-40GB", 1555.0),
    ("A100-PCIE-40GB", 1555.0),
    ("L40S", 864.0),
    ("L40", 864.0),
    ("L4", 300.0),
    ("A10G", 600.0),
    ("A10", 600.0),
    ("T4", 320.0),
    ("RTX 4090", 1008.0),
    ("RTX 3090", 936.0),
)


@dataclass
class PerfCase:
    name: str
    case: Case
    note: str = ""


class PerfCaseError(ValueError):
    """The cases asked for cannot be made (a bad case file, an unknown operator or profile)."""


def case_name(case: Case, note: str = "") -> str:
    """A case's name in the lens: its note (e.g. the network layer it stands for), else the operator's
    short name, its geometry and data type."""
    op = case.operator
    text = f"{op.short} {op.describe(case)} {case.dtype}"
    return f"{note}: {text}" if note else text


def census_note(case: Case) -> str:
    """A ``networks`` case's census layer: its kind and the exporters' ONNX nodes (e.g.
    "adaptive_avg_pool2d GlobalAveragePool, 216 models"); "" for other cases."""
    src = case.source or {}
    if not src.get("kinds"):
        return ""
    onnx = "/".join(sorted(set((src.get("onnx") or {}).values())))
    return f"{src['kinds'][0]} {onnx}, {len(src.get('models', ()))} models"


def lens_cases(selected: list[tuple[Case, str]] | None = None, ops: list[str] | None = None, *,
               distinct: bool = False, every: int = 1) -> list[PerfCase]:
    """The cases the lens times, named: ``selected`` (the run plan's selection, each case with the
    note its case file gives it: ``plan.select_noted``), else :func:`default_cases`; of the
    operators ``ops`` only (a case file's too); ``distinct``: each descriptor once, in the
    registry's order (a profile's sweep: the first input family of the same descriptor, ONNX-side
    options and opset), a case named by its census layer; every ``every``-th of them."""
    try:
        keys = {registry.get(o).key for o in ops} if ops else None
    except KeyError as e:
        raise PerfCaseError(str(e.args[0] if e.args else e)) from None
    if selected is None:
        out = [pc for pc in default_cases() if keys is None or pc.case.op in keys]
    elif distinct:
        order = {k: i for i, k in enumerate(registry.names())}
        out, seen = [], set()
        for c, _ in sorted(selected, key=lambda cn: order[cn[0].op]):
            k = (c.op, repr(c.desc), c.variant, c.opset)
            if (keys is None or c.op in keys) and k not in seen:
                seen.add(k)
                out.append(PerfCase(case_name(c, census_note(c)), c))
    else:
        out = [PerfCase(case_name(c, note), c) for c, note in selected if keys is None or c.op in keys]
    return out[::max(1, int(every))]


def default_cases() -> list[PerfCase]:
    """The default profile: the layers each operator declares (``Operator.perf_cases``: float32 at a
    ResNet stem's 1x64x224x224), in the registry's order."""
    return [PerfCase(name, case) for key in registry.names() for name, case in registry.get(key).perf_cases()]


# ----------------------------------------------------------------------------------------------
# Device placement of inputs and outputs
# ----------------------------------------------------------------------------------------------

@dataclass
class Binder:
    """How inputs and outputs are placed for one EP. ``mode``: 'device' (inputs and outputs in the
    EP's memory), 'host' (CPU EP: host memory is its device memory) or 'host-fallback' (the EP's
    memory could not be bound from Python: inputs and outputs in host memory, so every run
    includes the copies; stated in the output)."""
    device_type: str            # cpu | cuda | webgpu
    device_id: int = 0
    mode: str = "host"
    how: str = ""
    errors: list = field(default_factory=list)
    memory_info: object = None   # OrtMemoryInfo of a plugin EP device, when that is the way in

    def input_value(self, ort, x: np.ndarray):
        if self.device_type == "cpu":
            return ort.OrtValue.ortvalue_from_numpy(x)
        if self.memory_info is not None:
            v = ort.OrtValue.ortvalue_from_shape_and_type(list(x.shape), x.dtype.type, memory_info=self.memory_info)
            v.update_inplace(np.ascontiguousarray(x))
            return v
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(x), self.device_type, self.device_id)

    def output_value(self, ort, shape, dtype):
        if self.memory_info is not None:
            return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, memory_info=self.memory_info)
        return ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, self.device_type, self.device_id)


def _binding_for(lane) -> Binder:
    if lane.is_cpu:
        return Binder("cpu", 0, "host", "host memory (the CPU EP's own memory)")
    dev = lane.io_device()
    if dev is not None:
        return Binder(dev[0], dev[1], "device", f"OrtValue on '{dev[0]}' device")
    return Binder("cpu", 0, "host-fallback", "host memory (no device binding known for this EP)")


def _probe(ort, binder: Binder, lane) -> Binder:
    """Check that a small tensor can be placed in the EP's memory and read back; try the ways
    ONNX Runtime offers in turn; fall back to host memory (stated) when none works."""
    if binder.device_type == "cpu":
        return binder
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    attempts = [("ortvalue_from_numpy(device_type=%r)" % binder.device_type, None)]
    try:
        mi = lane.device_memory_info()      # a plugin EP's device
    except Exception as e:  # noqa: BLE001
        mi = None
        binder.errors.append(f"memory_info of the EP device: {e}")
    if mi is not None:
            attempts.append(("ortvalue_from_shape_and_type(memory_info=EP device DEFAULT memory) + update_inplace", mi))
    for how, mi in attempts:
        binder.memory_info = mi
        try:
            v = binder.input_value(ort, x)
            try:
                back = v.numpy()
                checked = "read back and checked"
            except Exception as e:  # noqa: BLE001 - some device buffers are opaque to numpy()
                back, checked = x, f"not readable through numpy() ({str(e).strip()[:80]}); checked by the outputs"
            if not np.array_equal(back, x):
                raise RuntimeError("the value read back differs from what was written")
            binder.how = f"{how} (device: {v.device_name()}; {checked})"
            binder.mode = "device"
            return binder
        except Exception as e:  # noqa: BLE001
            binder.errors.append(f"{how}: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}")
    binder.memory_info = None
    binder.mode = "host-fallback"
    binder.how = ("host memory: the EP's memory could not be bound from Python (%s); every timed run "
                  "includes the host<->device copies" % "; ".join(binder.errors))
    return binder


# ----------------------------------------------------------------------------------------------
# Bandwidth
# ----------------------------------------------------------------------------------------------

def gpu_name() -> str:
    return nvidia().get("device", "")


def nominal_bandwidth(name: str) -> float | None:
    for key, bw in NOMINAL_BANDWIDTH_GBS:
        if key.lower() in name.lower():
            return bw
    return None


def pick_bandwidth(lane, given: float | None) -> tuple[float | None, str]:
    if given is not None:
        return given, f"--bandwidth {given:g} GB/s (stated by the user)"
    if lane.is_cpu:
        return None, "none: give --bandwidth GB/s for the share column on a CPU"
    name = gpu_name()
    bw = nominal_bandwidth(name) if name else None
    if bw is None:
        return None, (f"none: no nominal bandwidth known for {name!r}; give --bandwidth GB/s" if name
                      else "none: no NVIDIA GPU found by nvidia-smi; give --bandwidth GB/s")
    return bw, f"nominal {bw:g} GB/s for {name!r} (nvidia-smi name); override with --bandwidth"


# ----------------------------------------------------------------------------------------------
# One case
# ----------------------------------------------------------------------------------------------

def _np_dtype_for(shape_type: str) -> np.dtype:
    return np.dtype(np.int64) if shape_type == "INT64" else np.dtype(DML_TO_NUMPY[shape_type])


def traffic(case: Case, semantics: str = "onnx", inputs: dict | None = None) -> tuple[int, int]:
    """(bytes read, bytes written) per run: every input tensor once, every output once. ``"dml"``:
    the tensors of the operator's DirectML struct (``Operator.layout``: the descriptor's own types,
    e.g. UINT32 indices); ``"onnx"``: the ONNX graph's inputs and outputs (INT64 indices)."""
    op = case.operator
    if semantics == "dml":
        rd = wr = 0
        for f in op.layout(case.desc):
            if f.kind == "tensor" and f.tensor is not None:
                n = math.prod(int(x) for x in f.sizes) * np.dtype(DML_TO_NUMPY[f.dtype]).itemsize
                if f.role == "input":
                    rd += n
                else:
                    wr += n
        return rd, wr
    inputs = case.inputs() if inputs is None else inputs
    return (int(sum(a.nbytes for a in inputs.values())),
            int(sum(math.prod(d for d in shape if d is not None) * _np_dtype_for(t).itemsize
                    for shape, t in op.outputs(case).values())))


def spread(samples_ms: list[float]) -> dict:
    """The figures of a list of run times (ms): median, min, 10th and 90th percentile, mean,
    interquartile range, median absolute deviation, and the samples themselves (for perf-compare)."""
    ms = np.asarray(sorted(float(x) for x in samples_ms), dtype=np.float64)
    med = float(np.median(ms))
    q = np.quantile(ms, [0.1, 0.25, 0.75, 0.9])
    return {"median_ms": round(med, 6), "min_ms": round(float(ms[0]), 6), "p10_ms": round(float(q[0]), 6),
            "p90_ms": round(float(q[3]), 6), "mean_ms": round(float(ms.mean()), 6),
            "iqr_ms": round(float(q[2] - q[1]), 6), "mad_ms": round(float(np.median(np.abs(ms - med))), 6),
            "samples_ms": [round(float(x), 6) for x in samples_ms]}


def _timed(ort, sess, binder: Binder, mode: str, inputs: dict, outs: dict, runs: int, warmup: int, clock=None):
    """Bind, warm up, time ``runs`` runs one by one (host wall clock, or ``clock``: the device's,
    ``cuda_clock.CudaClock``), then time ``runs`` runs back to back ended by one read-back (the
    device queue drained; the time of a read-back alone subtracted).
    Returns (per-run ns list, drained ms per run, outputs as numpy)."""
    io = sess.io_binding()
    keep = []
    for name, x in inputs.items():
        if mode == "device":
            v = binder.input_value(ort, x)
            keep.append(v)
            io.bind_ortvalue_input(name, v)
        else:
            io.bind_cpu_input(name, x)
    for name, (shape, t) in outs.items():
        if mode == "device":
            v = binder.output_value(ort, shape, _np_dtype_for(t).type)
            keep.append(v)
            io.bind_ortvalue_output(name, v)
        else:
            io.bind_output(name, "cpu")
    for _ in range(warmup):
        sess.run_with_iobinding(io)
        io.synchronize_outputs()
    if warmup:
        io.copy_outputs_to_cpu()     # drains the device queue before the timed runs
    times = []
    for _ in range(runs):
        if clock is not None:
            times.append(round(clock.time_ms(lambda: sess.run_with_iobinding(io)) * 1e6))
            continue
        a = time.perf_counter_ns()
        sess.run_with_iobinding(io)
        io.synchronize_outputs()
        times.append(time.perf_counter_ns() - a)
    got = dict(zip(outs, io.copy_outputs_to_cpu()))
    a = time.perf_counter_ns()
    for _ in range(runs):
        sess.run_with_iobinding(io)
    io.synchronize_outputs()
    io.copy_outputs_to_cpu()
    total = time.perf_counter_ns() - a
    a = time.perf_counter_ns()
    io.copy_outputs_to_cpu()
    readback = time.perf_counter_ns() - a
    drained = max(total - readback, 0) / runs / 1e6
    del keep
    return times, drained, got


def _sig(x: float, digits: int = 4) -> float:
    """``x`` to ``digits`` significant digits (a small case's GB/s is not rounded to zero)."""
    return float(f"{x:.{digits}g}")


def derive(rec: dict, is_cpu: bool, bandwidth_gbs: float | None = None) -> dict:
    """The figures computed from a record's measured fields (median_ms, drained_ms, bytes, placement):
    achieved GB/s from the median, the same from the queue-drained time, the share of the stated
    bandwidth, and notes on anything that makes the figures read differently."""
    moved = rec["bytes_read"] + rec["bytes_written"]
    med, drained = rec.get("median_ms"), rec.get("drained_ms")
    for k in ("timing_note", "latency_ms"):
        rec.pop(k, None)
    if med:
        rec["achieved_gbs"] = _sig(moved / (med / 1e3) / 1e9)
    if drained:
        rec["drained_gbs"] = _sig(moved / (drained / 1e3) / 1e9)
    if med and drained and not is_cpu and drained > 1.25 * max(med, rec.get("mean_ms") or med):
        rec["timing_note"] = (f"queue-drained time per run ({drained:.4f} ms) exceeds the per-run median "
                              f"({med:.4f} ms) by more than 25%: either run + synchronize_outputs returns before "
                              "the device has finished, or the read-back subtraction of the drained figure is off; "
                              "drained_gbs is the lower bound")
    if bandwidth_gbs and rec.get("achieved_gbs") is not None:
        rec["bandwidth_share"] = _sig(rec["achieved_gbs"] / bandwidth_gbs)
        if rec.get("drained_gbs") is not None:
            rec["drained_share"] = _sig(rec["drained_gbs"] / bandwidth_gbs)
    nodes = rec.get("placement") or {}
    own = rec.get("onnx_op", "")
    extra = sorted(n for n in nodes if not n.startswith(own))
    if extra:
        rec["graph_note"] = (f"the EP rewrote the one-node graph: {len(nodes)} nodes run ({', '.join(sorted(nodes))}); "
                             "the extra nodes (e.g. layout Transposes to NHWC and back) are inside the timed run "
                             "and their traffic is not counted in bytes moved")
    return rec


def _base_record(pc: PerfCase, inputs: dict, runs: int, warmup: int, binding: str, semantics: str) -> dict:
    case = pc.case
    op = case.operator
    bytes_read, bytes_written = traffic(case, semantics, inputs)
    return {"name": pc.name, "case_id": case.id, "op": case.op, "onnx_op": op.onnx_ops[0], "dtype": case.dtype,
            "opset": case.opset, "descriptor": case.desc.to_dict(), "onnx": case.v,
            "input_shapes": {k: list(v.shape) for k, v in inputs.items()},
            "output_shapes": {k: list(s) for k, (s, _) in op.outputs(case).items()},
            "bytes_read": bytes_read, "bytes_written": bytes_written, "runs": runs, "warmup": warmup,
            "binding": binding, "verdict": None, "reason": ""}


def measure(pc: PerfCase, lane, binder: Binder, runs: int, warmup: int, clock=None) -> dict:
    import onnxruntime as ort
    case = pc.case
    op = case.operator
    inputs = case.inputs()
    outs = op.outputs(case)
    rec = _base_record(pc, inputs, runs, warmup, binder.mode, "onnx")
    model = op.to_onnx(case)
    node_names = [n.name for n in model.graph.node]
    t0 = time.perf_counter()
    try:
        sess = lane.make_session(model.SerializeToString(), side_is_ep=True)
    except Exception as e:  # noqa: BLE001
        rec["verdict"], rec["reason"] = V.failure(Outcome(False, "session", str(e).strip()))
        return rec
    rec["session_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
    nodes = V.assignment_of(sess)
    where = V.placement(node_names, nodes, lane.ep_name, lane.is_cpu)
    rec["placement"] = where.nodes
    if V.off_ep(where, lane.ep_name):
        rec["verdict"] = "NOT_OFFLOADED"
        rec["reason"] = f"nodes not on {lane.ep_name}: {V.off_ep(where, lane.ep_name)}"
        return rec
    mode = binder.mode
    try:
        times, drained, got = _timed(ort, sess, binder, mode, inputs, outs, runs, warmup, clock)
    except Exception as e:  # noqa: BLE001
        if mode != "device":
            rec["verdict"], rec["reason"] = "ERROR", str(e).strip()
            return rec
        rec["device_binding_error"] = str(e).strip()
        mode = rec["binding"] = "host-fallback"
        try:
            times, drained, got = _timed(ort, sess, binder, mode, inputs, outs, runs, warmup)
        except Exception as e2:  # noqa: BLE001
            rec["verdict"], rec["reason"] = "ERROR", str(e2).strip()
            return rec
    ms = sorted(t / 1e6 for t in times)
    med = statistics.median(ms)
    rec.update(spread([t / 1e6 for t in times]))
    rec.update(median_ms=round(med, 4), min_ms=round(ms[0], 4), p90_ms=round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 4),
               mean_ms=round(statistics.fmean(ms), 4), drained_ms=round(drained, 4))
    derive(rec, lane.is_cpu)
    j = V.judge(case, inputs, Outcome(True, "done", None, got), None, where, ep_name=lane.ep_name,
                ep_is_cpu=lane.is_cpu)
    rec.update(verdict=j.verdict, reason=j.reason,
               outputs={k: {f: getattr(c, f) for f in ("match", "mismatches", "total", "max_abs", "max_ulp", "labels")}
                        for k, c in j.outputs.items()})
    return rec


#: inputs kept between the rounds of a timer's run up to this many bytes (else made again each round)
KEEP_INPUTS_BYTES = 1 << 30


def round_sizes(runs: int, rounds: int) -> list[int]:
    """``runs`` timed runs split into at most ``rounds`` rounds, as evenly as they go."""
    rounds = max(1, min(int(rounds), int(runs)))
    return [runs // rounds + (1 if k < runs % rounds else 0) for k in range(rounds)]


def measure_timed(cases: list[PerfCase], timer, runs: int, warmup: int, rounds: int = 1, log=lambda m: None) -> list[dict]:
    """The cases through a lane's :class:`~lanes.base.Timer`, in ``rounds`` rounds: each round times
    every case in turn for its share of the ``runs`` (``warmup`` untimed runs first, a fresh operator
    or session each round), so a case's runs spread over the whole measurement and its spread holds
    what the device did over that time, not over one burst. The outputs of a case's last round are
    judged by the one verdict path (against the descriptor's DirectML semantics on a descriptor lane,
    the ONNX graph's otherwise, with the placement proof); a round that fails gives the case its
    verdict and ends its timing."""
    sizes = round_sizes(runs, rounds)
    keep = sum(traffic(pc.case, timer.semantics)[0] for pc in cases) <= KEEP_INPUTS_BYTES
    state = []
    for pc in cases:
        case = pc.case
        try:
            inputs = case.inputs()
        except Exception as e:  # noqa: BLE001 - one case's data, one line
            state.append({"rec": {"name": pc.name, "case_id": case.id, "op": case.op, "verdict": "ERROR",
                                  "reason": f"could not build the inputs: {e}"}, "done": True})
            continue
        rec = _base_record(pc, inputs, runs, warmup, "device" if timer.semantics == "dml" else "host", timer.semantics)
        rec["rounds"] = len(sizes)
        why = timer.unsupported(case)
        if why:
            rec["verdict"], rec["reason"] = "NOT_SUPPORTED", why
        state.append({"rec": rec, "pc": pc, "inputs": inputs if keep else None, "samples": [], "last": None,
                      "done": bool(why)})
    for k, n in enumerate(sizes):
        for st in state:
            if st["done"]:
                continue
            pc = st["pc"]
            inputs = st["inputs"] if st["inputs"] is not None else pc.case.inputs()
            timed = timer.time(pc.case, inputs, warmup, n)
            st["rec"].update(timed.extra)
            if not timed.outcome.ok:
                st["rec"]["verdict"], st["rec"]["reason"] = V.failure(timed.outcome)
                st["done"] = True
                continue
            st["samples"].extend(timed.samples_ms)
            st["last"] = timed
        if len(sizes) > 1:
            log(f"  round {k + 1} of {len(sizes)} done")
    rows = []
    for st in state:
        rec = st["rec"]
        if not st["done"]:
            _judge_timed(rec, st["pc"].case, st["inputs"] if st["inputs"] is not None else st["pc"].case.inputs(),
                         st["last"], st["samples"], timer)
            log(f"  {rec['name']}: {rec.get('median_ms', '-')} ms, {rec['verdict']}")
        rows.append(rec)
    return rows


def _judge_timed(rec: dict, case: Case, inputs: dict, timed, samples: list[float], timer) -> None:
    out = timed.outcome
    if timer.semantics == "dml":
        judged, where = descriptor_case(case), timed.placement
    else:
        judged = case
        where = V.placement([n.name for n in case.operator.to_onnx(case).graph.node], out.assignment,
                            timer.ep_name, False)
        rec["placement"] = where.nodes
        off = V.off_ep(where, timer.ep_name)
        if off:
            rec["verdict"], rec["reason"] = "NOT_OFFLOADED", f"nodes not on {timer.ep_name}: {off}"
            return
    if not samples:
        rec["verdict"], rec["reason"] = "ERROR", "the timer gave no timed run"
        return
    rec.update(spread(samples))
    j = V.judge(judged, inputs, out, None, where, ep_name=timer.ep_name, ep_is_cpu=False, semantics=timer.semantics)
    rec.update(verdict=j.verdict, reason=j.reason,
               outputs={k: {f: getattr(c, f) for f in ("match", "mismatches", "total", "max_abs", "max_ulp", "labels")}
                        for k, c in j.outputs.items()})


def yardstick_figures(raw: dict | None, nbytes: int) -> dict:
    """The yardstick's copies (``Timer.yardstick``) as figures: per copy its median, spread and GB/s
    (bytes read + written = 2 x ``nbytes``); ``best``: the one the share column uses, the first that
    ran of :data:`YARDSTICK_WORDS` (the copy dispatch: a kernel as the descriptors' are; the copy
    engine's figure stays beside it)."""
    out = {"bytes": int(nbytes), "traffic": "each copy reads and writes the bytes once: 2 x bytes per run"}
    for name, r in (raw or {}).items():
        if not r.get("ok"):
            out[name] = {"ok": False, "error": r.get("error", "")}
            continue
        fig = spread(r["samples_ms"])
        fig["ok"] = True
        fig["gbs"] = _sig(2 * nbytes / (fig["median_ms"] / 1e3) / 1e9) if fig["median_ms"] > 0 else None
        out[name] = fig
    out["best"] = next((k for k in YARDSTICK_WORDS if (out.get(k) or {}).get("gbs")), None)
    return out


YARDSTICK_WORDS = {"identity": "DirectML ELEMENT_WISE_IDENTITY (a copy dispatch)",
                   "copy": "CopyBufferRegion between two device buffers",
                   "cuda-copy": "cudaMemcpyAsync device to device, timed by CUDA events"}


# ----------------------------------------------------------------------------------------------
# Command
# ----------------------------------------------------------------------------------------------

def write_perf_json(out: Path, doc: dict) -> Path:
    """Write ``doc`` under its EP's name into OUT (a path ending in .json: that file; otherwise the
    folder OUT, file perf.json); entries of other EPs already in the file are kept, so runs on
    several EPs of one machine share one file."""
    out = Path(out)
    path = out if out.suffix.lower() == ".json" else out / "perf.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    eps = {}
    if path.is_file():
        try:        # bounded (size, nesting); anything that is not a perf file is replaced
            old = load_file(path, what="perf file")
            eps = old.get("eps", {}) if isinstance(old, dict) and old.get("record") == "perf" else {}
            eps = eps if isinstance(eps, dict) else {}
        except (UntrustedFileError, OSError, ValueError):
            eps = {}
    eps[doc["ep"]] = doc
    path.write_text(json.dumps({"record": "perf", "eps": eps}, indent=1, default=str) + "\n")
    return path


def run_perf(lane, runs: int, warmup: int, bandwidth_gbs: float | None, cases: list[PerfCase] | None = None,
             yardstick_bytes: int = 64 << 20, log=print, rounds: int = 5) -> dict:
    """Measure ``cases`` (default: :func:`default_cases`) on ``lane``: the perf.json entry of its EP.
    The lane's preflight (its known-answer canary) runs first: PreflightError when it fails. A lane
    timed through its Timer takes the runs in ``rounds`` rounds over all the cases
    (:func:`measure_timed`)."""
    cases = default_cases() if cases is None else cases
    env = lane.environment()
    env.update(lane.preflight())
    timer = lane.make_timer()
    doc = {"environment": env, "ep": lane.ep_name, "ep_key": lane.key, "runs": runs, "warmup": warmup,
           "traffic": "bytes read + written per run = input tensors once + output tensors once",
           "python": platform.python_version()}
    rows = []
    if timer is None:
        import onnxruntime as ort
        clock = _device_clock(lane, log)
        binder = _probe(ort, _binding_for(lane), lane)
        bw, bw_source = pick_bandwidth(lane, bandwidth_gbs)
        if clock is not None:
            ys = yardstick_figures(clock.yardstick(yardstick_bytes, warmup, runs), yardstick_bytes)
            if ys.get("best"):
                doc["yardstick"] = ys
                if bandwidth_gbs is None:
                    bw = ys[ys["best"]]["gbs"]
                    bw_source = (f"measured on this device: {YARDSTICK_WORDS[ys['best']]} of "
                                 f"{yardstick_bytes / 2**20:g} MiB, {bw:g} GB/s (median of {runs})")
        log(f"perf on {lane.ep_name} ({env.get('ort_package')} {env.get('ort_version')}, device: {env.get('device')})")
        log(f"binding: {binder.mode}: {binder.how}")
        log(f"bandwidth: {bw_source}")
        try:
            for pc in cases:
                rec = measure(pc, lane, binder, runs, warmup, clock)
                derive(rec, lane.is_cpu, bw)
                rows.append(rec)
        finally:
            if clock is not None:
                clock.close()
        what = clock.name if clock is not None else "host wall clock of run_with_iobinding + synchronize_outputs"
        doc.update(
            timing=(f"median_ms: {what} per run, median of the "
                    "timed runs; achieved_gbs and bandwidth_share use it. drained_ms: the same number of runs back "
                    "to back ended by one output read-back (minus a read-back alone), per run; drained_gbs from it "
                    "(a cross-check that the per-run synchronisation waits for the device)"),
            clock=what,
            binding={"mode": binder.mode, "how": binder.how, "errors": binder.errors},
            session="Lane.make_session(side_is_ep=True): CPU fallback disabled unless the CPU EP is under "
                    "test, graph optimisations disabled, intra-op threads 1")
    else:
        try:
            log(f"perf on {lane.ep_name} ({env.get('ep_package')}, device: {env.get('device')})")
            ys = yardstick_figures(timer.yardstick(yardstick_bytes, warmup, runs), yardstick_bytes)
            best = ys.get("best")
            if bandwidth_gbs is not None:
                bw, bw_source = bandwidth_gbs, f"--bandwidth {bandwidth_gbs:g} GB/s (stated by the user)"
            elif best:
                bw = ys[best]["gbs"]
                bw_source = (f"measured on this device: {YARDSTICK_WORDS.get(best, best)} of "
                             f"{yardstick_bytes / 2**20:g} MiB, {bw:g} GB/s (median of {runs}), timed as the cases are")
            else:
                bw, bw_source = pick_bandwidth(lane, None)
            log(f"bandwidth: {bw_source}")
            for rec in measure_timed(cases, timer, runs, warmup, rounds, log):
                derive(rec, False, bw)
                rows.append(rec)
        finally:
            timer.close()
        if ys.get("bytes") and any(k in ys for k in YARDSTICK_WORDS):
            doc["yardstick"] = ys
        doc.update(timing=f"median_ms: {timer.clock}; median of the timed runs (samples_ms: each run), "
                          f"taken in {len(round_sizes(runs, rounds))} round(s) over all the cases; "
                          "achieved_gbs and bandwidth_share use it",
                   rounds=len(round_sizes(runs, rounds)),
                   clock=timer.clock,
                   binding={"mode": "device" if timer.semantics == "dml" else "host", "errors": [],
                            "how": ("inputs uploaded to device memory once, outputs read back after the last run"
                                    if timer.semantics == "dml" else
                                    "inputs and outputs in host memory: every run copies them to and from the device")},
                   semantics=timer.semantics)
    doc.update(bandwidth_gbs=bw, bandwidth_source=bw_source, cases=rows)
    return doc


def _device_clock(lane, log):
    """CUDA events on a stream of the EP's own (``cuda_clock``) for the CUDA and TensorRT EPs, the
    stream handed to the EP through its provider options; None elsewhere, or where the CUDA runtime
    cannot be reached (the host wall clock then, said in the log and the file)."""
    if lane.ep_name not in cuda_clock.EPS or "user_compute_stream" in lane.options:
        return None
    try:
        clock = cuda_clock.CudaClock()
    except cuda_clock.ClockError as e:
        log(f"device clock: none ({e}); host wall clock")
        return None
    lane.options.update(clock.provider_options())
    log(f"device clock: {clock.name}")
    return clock


def print_table(doc: dict, con: Console) -> None:
    """The perf.json entry of one EP as a table, and its notes."""
    rows, bw = doc["cases"], doc.get("bandwidth_gbs")
    drained = any("drained_ms" in r for r in rows)
    place = doc.get("binding", {}).get("mode")
    t = Table(title=f"{doc['ep']}: median of {doc['runs']} runs after {doc['warmup']} warm-up, "
                    f"{'inputs/outputs on the device' if place == 'device' else 'inputs/outputs in host memory'}")
    cols = [("case", "left"), ("opset", "right"), ("input", "left"), ("MB moved", "right"), ("median ms", "right"),
            ("p10-p90 ms", "right"), ("GB/s", "right"), (f"% of {bw:g} GB/s" if bw else "% of bw", "right")]
    if drained:
        cols += [("drained ms", "right"), ("drained GB/s", "right")]
    for col, just in cols + [("result", "left")]:
        t.add_column(col, justify=just)
    style = {v.value: v.style for v in Verdict}
    for r in rows:
        shapes = list((r.get("input_shapes") or {}).values())
        shape = "x".join(map(str, shapes[0])) if shapes else "-"
        mb = (r.get("bytes_read", 0) + r.get("bytes_written", 0)) / 1e6
        share = r.get("bandwidth_share")
        cells = [r["name"], str(r.get("opset", "")), shape, f"{mb:.1f}",
                 f"{r['median_ms']:.4f}" if "median_ms" in r else "-",
                 f"{r['p10_ms']:.4f}-{r['p90_ms']:.4f}" if "p10_ms" in r else "-",
                 f"{r['achieved_gbs']:.1f}" if "achieved_gbs" in r else "-",
                 f"{100 * share:.1f}%" if share is not None else "-"]
        if drained:
            cells += [f"{r['drained_ms']:.4f}" if "drained_ms" in r else "-",
                      (f"{r['drained_gbs']:.1f}" + ("*" if r.get("timing_note") else "")) if "drained_gbs" in r else "-"]
        cells.append(f"[{style.get(r['verdict'], 'white')}]{r['verdict']}[/]" +
                     (escape(f" {r['reason'][:160]}") if r.get("reason") else ""))
        t.add_row(*[c if i == len(cells) - 1 else escape(c) for i, c in enumerate(cells)])
    con.print(t)
    con.print(escape(f"timing: {doc.get('clock', '')}"))
    con.print(escape(f"bandwidth used for the share column: {doc.get('bandwidth_source')}"))
    ys = doc.get("yardstick")
    if ys:
        for name in YARDSTICK_WORDS:
            y = ys.get(name)
            if y:
                con.print(escape(f"yardstick {YARDSTICK_WORDS[name]}, {ys['bytes'] / 2**20:g} MiB: " +
                                 (f"median {y['median_ms']:.4f} ms, {y['gbs']} GB/s" if y.get("ok") else f"failed: {y.get('error')}")))
    b = doc.get("binding") or {}
    con.print(escape(f"input/output placement: {b.get('mode')}: {b.get('how')}"))
    for r in rows:
        for key in ("timing_note", "graph_note", "device_binding_error"):
            if r.get(key):
                con.print(escape(f"{r['name']}: {key.replace('_', ' ')}: {r[key]}"))
    if any(r.get("timing_note") for r in rows):
        con.print("* drained time over 1.25x the median (see timing note)")


def perf_command(lane, runs: int, warmup: int, bandwidth_gbs: float | None, out: Path | None,
                 cases: list[PerfCase] | None = None, yardstick_bytes: int = 64 << 20,
                 rounds: int = 5) -> tuple[int, Path | None]:
    """`onnx-dml-bench perf` on ``lane``: measure the cases (default: :func:`default_cases`), print the
    table, write perf.json under ``out``; (exit code: 1 when a case does not PASS, 3 when the lane's
    preflight fails; the file written or None)."""
    err = Console(stderr=True)
    con = Console()
    if not con.is_terminal:
        con = Console(width=150)
    try:
        doc = run_perf(lane, runs, warmup, bandwidth_gbs, cases, yardstick_bytes, log=lambda m: err.print(escape(m)),
                       rounds=rounds)
    except PreflightError as e:
        err.print(escape(f"onnx-dml-bench perf: {lane.ep_name}: the {lane.canary_name} failed: {e}"))
        return 3, None
    print_table(doc, con)
    path = None
    if out is not None:
        path = write_perf_json(Path(out), doc)
        con.print(f"wrote {path} ({lane.ep_name})")
    bad = [r for r in doc["cases"] if r["verdict"] != "PASS"]
    return (1 if bad else 0), path
