"""Performance lens: per-case latency with inputs and outputs kept on the device.

Each case is one operator node built from the package's descriptors, run in a session made with the
same options as the conformance runner (CPU fallback disabled for any EP other than the CPU EP,
graph optimisations disabled). Inputs are copied to the EP's device once and outputs are bound to
device memory (ONNX Runtime IOBinding), so the timed loop holds no host<->device copy:

    run_with_iobinding(io); io.synchronize_outputs()      timed, host wall clock

The figure reported is the median of ``runs`` timed runs after ``warmup`` untimed ones. Achieved
bandwidth is (bytes read + bytes written per run) / median time: the input tensor read once and
every output written once, the least traffic the operator can cause. Its share of a stated device
bandwidth (``--bandwidth``, else a nominal value looked up from the GPU's name) says how close the
kernel comes to the memory roofline. The output of the last timed run is copied back once and
compared with the NumPy reference under the same policy as the conformance run: a speed figure for
a wrong result is marked FAIL.
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

from . import registry
from . import verdict as V
from .cases import Case
from .dtypes import DML_TO_NUMPY
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


def default_cases() -> list[PerfCase]:
    """The default profile: 1x64x224x224 float32 (a ResNet-stem sized activation)."""
    sizes = (1, 64, 224, 224)
    mp = registry.get("max_pooling2")
    ap = registry.get("average_pooling1")
    s2d = registry.get("space_to_depth1")
    out = []
    for idx in (None, "UINT64"):
        d = mp.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=2, Strides=(2, 2), WindowSize=(3, 3),
                    StartPadding=(1, 1), EndPadding=(1, 1), Dilations=(1, 1), OutputIndicesDataType=idx)
        out.append(PerfCase("MaxPool 3x3 s2 p1" + (" +indices" if idx else ""), mp.make_case(d, {}, "random")))
    for s in (1, 2):
        d = ap.Desc(InputSizes=sizes, DataType="FLOAT32", DimensionCount=2, Strides=(s, s), WindowSize=(3, 3),
                    StartPadding=(2, 2), EndPadding=(2, 2), Dilations=(2, 2), IncludePadding=False)
        out.append(PerfCase(f"AveragePool 3x3 d2 s{s} p2", ap.make_case(d, {}, "random", opset=19)))
    d = s2d.Desc(InputSizes=sizes, DataType="FLOAT32", BlockSize=4, Order="DEPTH_COLUMN_ROW")
    out.append(PerfCase("SpaceToDepth B=4 DCR", s2d.make_case(d, {"form": "native"}, "random")))
    return out


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


def _timed(ort, sess, binder: Binder, mode: str, inputs: dict, outs: dict, runs: int, warmup: int):
    """Bind, warm up, time ``runs`` runs one by one, then time ``runs`` runs back to back ended by
    one read-back (the device queue drained; the time of a read-back alone subtracted).
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


def derive(rec: dict, is_cpu: bool, bandwidth_gbs: float | None = None) -> dict:
    """The figures computed from a record's measured fields (median_ms, drained_ms, bytes, placement):
    achieved GB/s from the median, the same from the queue-drained time, the share of the stated
    bandwidth, and notes on anything that makes the figures read differently."""
    moved = rec["bytes_read"] + rec["bytes_written"]
    med, drained = rec.get("median_ms"), rec.get("drained_ms")
    for k in ("timing_note", "latency_ms"):
        rec.pop(k, None)
    if med:
        rec["achieved_gbs"] = round(moved / (med / 1e3) / 1e9, 2)
    if drained:
        rec["drained_gbs"] = round(moved / (drained / 1e3) / 1e9, 2)
    if med and drained and not is_cpu and drained > 1.25 * max(med, rec.get("mean_ms") or med):
        rec["timing_note"] = (f"queue-drained time per run ({drained:.4f} ms) exceeds the per-run median "
                              f"({med:.4f} ms) by more than 25%: either run + synchronize_outputs returns before "
                              "the device has finished, or the read-back subtraction of the drained figure is off; "
                              "drained_gbs is the lower bound")
    if bandwidth_gbs and rec.get("achieved_gbs") is not None:
        rec["bandwidth_share"] = round(rec["achieved_gbs"] / bandwidth_gbs, 4)
        if rec.get("drained_gbs") is not None:
            rec["drained_share"] = round(rec["drained_gbs"] / bandwidth_gbs, 4)
    nodes = rec.get("placement") or {}
    own = rec.get("onnx_op", "")
    extra = sorted(n for n in nodes if not n.startswith(own))
    if extra:
        rec["graph_note"] = (f"the EP rewrote the one-node graph: {len(nodes)} nodes run ({', '.join(sorted(nodes))}); "
                             "the extra nodes (e.g. layout Transposes to NHWC and back) are inside the timed run "
                             "and their traffic is not counted in bytes moved")
    return rec


def measure(pc: PerfCase, lane, binder: Binder, runs: int, warmup: int) -> dict:
    import onnxruntime as ort
    case = pc.case
    op = case.operator
    inputs = case.inputs()
    outs = op.outputs(case)
    bytes_read = int(sum(a.nbytes for a in inputs.values()))
    bytes_written = int(sum(math.prod(shape) * _np_dtype_for(t).itemsize for shape, t in outs.values()))
    rec = {"name": pc.name, "case_id": case.id, "op": case.op, "onnx_op": op.onnx_ops[0], "dtype": case.dtype,
           "opset": case.opset, "descriptor": case.desc.to_dict(), "onnx": case.v,
           "input_shapes": {k: list(v.shape) for k, v in inputs.items()},
           "output_shapes": {k: list(s) for k, (s, _) in outs.items()},
           "bytes_read": bytes_read, "bytes_written": bytes_written, "runs": runs, "warmup": warmup,
           "binding": binder.mode, "verdict": None, "reason": ""}
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
        times, drained, got = _timed(ort, sess, binder, mode, inputs, outs, runs, warmup)
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
    rec.update(median_ms=round(med, 4), min_ms=round(ms[0], 4), p90_ms=round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 4),
               mean_ms=round(statistics.fmean(ms), 4), drained_ms=round(drained, 4))
    derive(rec, lane.is_cpu)
    j = V.judge(case, inputs, Outcome(True, "done", None, got), None, where, ep_name=lane.ep_name,
                ep_is_cpu=lane.is_cpu)
    rec.update(verdict=j.verdict, reason=j.reason,
               outputs={k: {f: getattr(c, f) for f in ("match", "mismatches", "total", "max_abs", "max_ulp", "labels")}
                        for k, c in j.outputs.items()})
    return rec


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


def perf_command(lane, runs: int, warmup: int, bandwidth_gbs: float | None, out: Path | None) -> int:
    """`onnx-dml-bench perf` on ``lane``: measure the default cases, print the table, write
    perf.json under ``out``; the exit code (1 when a case does not PASS)."""
    import onnxruntime as ort
    err = Console(stderr=True)
    con = Console()
    if not con.is_terminal:
        con = Console(width=150)
    env = lane.environment()
    binder = _probe(ort, _binding_for(lane), lane)
    bw, bw_source = pick_bandwidth(lane, bandwidth_gbs)
    err.print(escape(f"perf on {lane.ep_name} ({env.get('ort_package')} {env.get('ort_version')}, "
                     f"device: {env.get('device')})"))
    err.print(escape(f"binding: {binder.mode}: {binder.how}"))
    err.print(escape(f"bandwidth: {bw_source}"))
    rows = []
    for pc in default_cases():
        rec = measure(pc, lane, binder, runs, warmup)
        derive(rec, lane.is_cpu, bw)
        rows.append(rec)

    t = Table(title=f"{lane.ep_name}: median of {runs} runs after {warmup} warm-up, "
                    f"{'inputs/outputs on the device' if binder.mode == 'device' else 'inputs/outputs in host memory'}")
    for col, just in (("case", "left"), ("opset", "right"), ("input", "left"), ("MB moved", "right"),
                      ("median ms", "right"), ("min ms", "right"), ("GB/s", "right"),
                      (f"% of {bw:g} GB/s" if bw else "% of bw", "right"), ("drained ms", "right"),
                      ("drained GB/s", "right"), ("result", "left")):
        t.add_column(col, justify=just)
    style = {v.value: v.style for v in Verdict}
    for r in rows:
        shape = "x".join(map(str, next(iter(r["input_shapes"].values()))))
        mb = (r["bytes_read"] + r["bytes_written"]) / 1e6
        share = r.get("bandwidth_share")
        t.add_row(r["name"], str(r["opset"]), shape, f"{mb:.1f}",
                  f"{r['median_ms']:.4f}" if "median_ms" in r else "-",
                  f"{r['min_ms']:.4f}" if "min_ms" in r else "-",
                  f"{r['achieved_gbs']:.1f}" if "achieved_gbs" in r else "-",
                  f"{100 * share:.1f}%" if share is not None else "-",
                  f"{r['drained_ms']:.4f}" if "drained_ms" in r else "-",
                  (f"{r['drained_gbs']:.1f}" + ("*" if r.get("timing_note") else "")) if "drained_gbs" in r else "-",
                  f"[{style.get(r['verdict'], 'white')}]{r['verdict']}[/]" + (escape(f" {r['reason'][:160]}") if r["reason"] else ""))
    con.print(t)
    con.print(escape(f"bandwidth used for the share column: {bw_source}"))
    con.print(escape(f"input/output placement: {binder.mode}: {binder.how}"))
    for r in rows:
        for key in ("timing_note", "graph_note", "device_binding_error"):
            if r.get(key):
                con.print(escape(f"{r['name']}: {key.replace('_', ' ')}: {r[key]}"))
    if any(r.get("timing_note") for r in rows):
        con.print("* drained time over 1.25x the median (see timing note)")

    doc = {
        "environment": env,
        "ep": lane.ep_name,
        "runs": runs,
        "warmup": warmup,
        "timing": ("median_ms: host wall clock of run_with_iobinding + synchronize_outputs per run, median of the "
                   "timed runs; achieved_gbs and bandwidth_share use it. drained_ms: the same number of runs back "
                   "to back ended by one output read-back (minus a read-back alone), per run; drained_gbs from it "
                   "(a cross-check that the per-run synchronisation waits for the device)"),
        "traffic": "bytes read + written per run = input tensors once + output tensors once",
        "bandwidth_gbs": bw,
        "bandwidth_source": bw_source,
        "binding": {"mode": binder.mode, "how": binder.how, "errors": binder.errors},
        "session": "Lane.make_session(side_is_ep=True): CPU fallback disabled unless the CPU EP is under "
                   "test, graph optimisations disabled, intra-op threads 1",
        "python": platform.python_version(),
        "cases": rows,
    }
    if out is not None:
        path = write_perf_json(Path(out), doc)
        con.print(f"wrote {path} ({lane.ep_name})")
    bad = [r for r in rows if r["verdict"] != "PASS"]
    return 1 if bad else 0
