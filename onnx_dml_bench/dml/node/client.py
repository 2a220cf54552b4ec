"""Python driver for running ONNX models on DirectML under Wine.

``run_jobs()`` writes the models and inputs of a list of jobs into one file (the
batch's blob: every file costs the Windows side milliseconds under Wine, so one
is read per call, not one per tensor), starts the Windows ``node.exe`` once under
Wine (with an Xvfb display) to run ``worker.js`` over the whole list, and reads
the results back (one output file per job).  Each job's
result is written by the worker as soon as that job finishes, so when the
process dies part-way the finished jobs keep their results; the job that was
running is reported as crashed and (by default) the remaining jobs are run in
a fresh process.

Calls are serialised within a Python process (``session.lock``).  The Wine
session (``wine/session.py``) keeps a private Xvfb and a persistent wineserver
between calls, and this module a node.exe per prefix and onnxruntime-node
build (``shutdown()`` stops them; it also runs at interpreter exit).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..wine import session
from ..wine.session import kill_group, win_path
from ..wine.stackinfo import StackInfo

WORKER_JS = Path(__file__).with_name("worker.js")

# numpy dtype name -> ONNX Runtime (JS) tensor type name
_NP_TO_ORT = {
    "float32": "float32", "float64": "float64", "float16": "float16",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
    "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
    "bool": "bool",
}

_MARKER = re.compile(r"^@@onnx-dml-bench (begin|end) (\d+)@@$", re.M)


# --------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------


@dataclass
class Job:
    model: Path | bytes                  # a model file, or the model itself (sent in the blob)
    ep: str = "dml"                      # "dml" or "cpu"
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    output_names: list[str] = field(default_factory=list)   # empty: all outputs
    # None: True for "dml" (placement proof), False for "cpu" (the CPU EP
    # itself would be rejected with the flag set).
    disable_cpu_ep_fallback: bool | None = None
    verbose: bool = False                # capture ORT's verbose log (node placement)
    repeat: int = 1                      # timed runs (timings_ms.runs: each of them when > 1)
    keep_runs: bool = False              # the outputs of runs 2..N of the session too (JobResult.runs)
    warmup: int = 0                      # untimed runs before them
    graph_optimization_level: str = "disabled"
    session_config: dict[str, str] = field(default_factory=dict)
    id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)      # passed to worker.js as-is

    def fallback_disabled(self) -> bool:
        if self.disable_cpu_ep_fallback is None:
            return self.ep == "dml"
        return bool(self.disable_cpu_ep_fallback)


@dataclass
class JobResult:
    ok: bool
    stage: str            # "load" | "session" | "run" | "write" | "done" | "init" | "start" | "not_run"
    error: str | None
    outputs: dict[str, np.ndarray] | None
    timings_ms: dict
    crashed: bool
    timed_out: bool
    raw: dict
    log: str | None = None   # ORT log of this job (verbose jobs), worker stderr otherwise
    runs: list | None = None  # keep_runs: per run 2..N its outputs (name -> array), or its error text


@dataclass
class CanaryResult:
    ok: bool
    message: str
    details: dict


# --------------------------------------------------------------------------
# run_jobs
# --------------------------------------------------------------------------


class _Blob:
    """The models and inputs of one call, appended into one file at 64-byte aligned offsets."""

    ALIGN = 64

    def __init__(self):
        self.parts: list[bytes | memoryview] = []
        self.size = 0

    def add(self, data: bytes | memoryview) -> dict:
        pad = -self.size % self.ALIGN
        if pad:
            self.parts.append(b"\0" * pad)
            self.size += pad
        ref = {"offset": self.size, "length": len(data)}
        self.parts.append(data)
        self.size += len(data)
        return ref

    def write(self, path: Path) -> None:
        with open(path, "wb") as fh:
            for p in self.parts:
                fh.write(p)


def _input_spec(name: str, arr: np.ndarray, blob: _Blob) -> dict:
    a = np.asarray(arr)
    if a.dtype.name not in _NP_TO_ORT:
        raise TypeError(f"unsupported input dtype {a.dtype}")
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    a = np.ascontiguousarray(a)
    return {"name": name, "dtype": _NP_TO_ORT[a.dtype.name], "dims": [int(d) for d in a.shape],
            **blob.add(memoryview(a).cast("B") if a.size else b"")}


def _read_output(desc: Mapping) -> np.ndarray:
    dtype = np.dtype("bool" if desc["dtype"] == "bool" else desc["dtype"])
    dims = [int(d) for d in desc["dims"]]
    if "offset" in desc:        # one file holds the job's outputs
        count = int(desc["length"]) // dtype.itemsize
        data = np.fromfile(desc["file"], dtype=dtype.newbyteorder("<"), count=count, offset=int(desc["offset"]))
        if data.size != count:
            raise ValueError(f"output {desc.get('name')}: {data.size} of {count} elements in {desc['file']}")
    else:
        data = np.fromfile(desc["file"], dtype=dtype.newbyteorder("<"))
    return data.reshape(dims).astype(dtype, copy=False)


def _split_log(text: str) -> dict[int, str]:
    """Worker-local job index -> ORT log text between its markers."""
    out: dict[int, str] = {}
    pos: dict[int, int] = {}
    for m in _MARKER.finditer(text):
        idx = int(m.group(2))
        if m.group(1) == "begin":
            pos[idx] = m.end()
        elif idx in pos:
            out[idx] = text[pos.pop(idx):m.start()].strip("\n")
    for idx, start in pos.items():       # began but never ended (crash)
        out[idx] = text[start:].strip("\n")
    return out


def _last_stage(progress: Path) -> dict[int, str]:
    stages: dict[int, str] = {}
    try:
        for line in progress.read_text(errors="replace").splitlines():
            try:
                d = json.loads(line)
                stages[int(d["index"])] = str(d["stage"])
            except (ValueError, KeyError, TypeError):
                continue
    except OSError:
        pass
    return stages


def _tail(text: str, n: int = 3000) -> str:
    lines = [ln for ln in text.splitlines() if not _MARKER.match(ln)]
    return "\n".join(lines)[-n:]


def run_jobs(stack: StackInfo, jobs: list[Job], timeout_s: float = 300.0, *,
             work_dir: Path | None = None, keep_files: bool = False,
             continue_after_crash: bool = True,
             kill_wineserver_on_timeout: bool = True) -> list[JobResult]:
    """Run ``jobs`` with one Windows node.exe (more after a crash).

    ``timeout_s`` bounds the whole call; at the deadline the process group is
    killed (and the prefix's wineserver with ``kill_wineserver_on_timeout``),
    the running job is reported ``timed_out`` and unstarted jobs too.
    """
    if not jobs:
        return []
    with session.lock:
        t0 = time.monotonic()
        results = _run_jobs_locked(stack, jobs, timeout_s, work_dir, keep_files,
                                   continue_after_crash, kill_wineserver_on_timeout)
        _trace(jobs, results, time.monotonic() - t0)
        return results


TRACE_ENV = "ONNX_DML_BENCH_TRACE"   # a file: one JSON line per run_jobs call (where the time goes)


def _trace(jobs: list[Job], results: list[JobResult], wall: float) -> None:
    path = os.environ.get(TRACE_ENV)
    if not path:
        return
    t = [r.timings_ms or {} for r in results]
    line = {"t": round(time.time(), 3), "pid": os.getpid(), "jobs": len(jobs), "eps": sorted({j.ep for j in jobs}),
            "wall_ms": round(wall * 1000, 1),
            "session_ms": round(sum(float(x.get("session", 0)) for x in t), 1),
            "run_ms": round(sum(float(x.get("run", 0)) for x in t), 1),
            "failed_session_ms": round(sum(float(x.get("session_failed", 0)) for x in t), 1),
            "dml_sessions": sum(1 for j, x in zip(jobs, t) if j.ep == "dml" and "session" in x),
            "dml_refused": sum(1 for j, x in zip(jobs, t) if j.ep == "dml" and "session_failed" in x)}
    try:
        with open(path, "a") as fh:
            fh.write(json.dumps(line) + "\n")
    except OSError:
        pass


def _job_spec(job: Job, i: int, tmp: Path, blob: _Blob) -> dict:
    """The worker's description of one job; its model (when given as bytes) and inputs go into the
    call's blob, its outputs will come back in one file."""
    model = (blob.add(bytes(job.model)) if isinstance(job.model, (bytes, bytearray, memoryview))
             else str(Path(job.model).resolve()))
    spec = {
        "id": job.id if job.id is not None else str(i),
        "model": model,
        "ep": job.ep,
        "disable_cpu_ep_fallback": job.fallback_disabled(),
        "inputs": [_input_spec(name, arr, blob) for name, arr in job.inputs.items()],
        "outputs": list(job.output_names),
        "out_file": str(tmp / f"out{i}.bin"),
        "result": str(tmp / f"result{i}.json"),
        "repeat": int(job.repeat),
        "keep_runs": bool(job.keep_runs),
        "warmup": int(job.warmup),
        "verbose": bool(job.verbose),
        "graph_optimization_level": job.graph_optimization_level,
        "session_config": {str(k): str(v) for k, v in job.session_config.items()},
    }
    spec.update(job.extra)
    return spec


@dataclass
class _Attempt:
    """One start of the Windows worker over the pending jobs, and what it left behind."""
    rc: int | None
    timed_out: bool
    wall: float
    stderr: str
    logs: dict[int, str]
    stages: dict[int, str]


def _attempt(stack: StackInfo, specs: list[dict], pending: list[int], adir: Path, remaining: float,
             kill_wineserver_on_timeout: bool, blob: Path) -> _Attempt:
    adir.mkdir()
    batch = {
        "jobs": [specs[i] for i in pending],
        "ort_dir": str(stack.ort_dir),
        "blob": str(blob),
        "progress": str(adir / "progress.jsonl"),
        "status": str(adir / "status.json"),
        "log": str(adir / "stderr.txt"),
    }
    (adir / "job.json").write_text(json.dumps(batch))
    rc, timed_out, wall = _launch(stack, adir, remaining, kill_wineserver_on_timeout)
    err = (adir / "stderr.txt").read_text(errors="replace") if (adir / "stderr.txt").exists() else ""
    return _Attempt(rc, timed_out, wall, err, _split_log(err), _last_stage(adir / "progress.jsonl"))


def _timed_out_result(spec: dict, at: _Attempt, k: int, timeout_s: float) -> JobResult:
    stage = at.stages.get(k, "start")
    return JobResult(ok=False, stage=stage,
                     error=f"timed out after {timeout_s:g} s (stage {stage}); worker process group killed",
                     outputs=None, timings_ms={"wall": at.wall * 1000}, crashed=False, timed_out=True,
                     raw={"id": spec["id"], "exit_code": at.rc}, log=at.logs.get(k))


def _crashed_result(spec: dict, at: _Attempt, k: int, msg: str) -> JobResult:
    tail = _tail(at.stderr)
    return JobResult(ok=False, stage=at.stages.get(k, "start"), error=msg + (f"\n{tail}" if tail else ""),
                     outputs=None, timings_ms={}, crashed=True, timed_out=False,
                     raw={"id": spec["id"], "exit_code": at.rc, "stderr_tail": tail}, log=at.logs.get(k))


def _run_jobs_locked(stack, jobs, timeout_s, work_dir, keep_files, continue_after_crash,
                     kill_wineserver_on_timeout) -> list[JobResult]:
    """Start the worker over the pending jobs until each has a result: a job the worker died on
    gets CRASH (the others are started again), a hang gets TIMEOUT (the rest are not run)."""
    deadline = time.monotonic() + float(timeout_s)
    tmp = Path(tempfile.mkdtemp(prefix="odb-dml-", dir=str(work_dir) if work_dir else None))
    results: list[JobResult | None] = [None] * len(jobs)
    try:
        blob = _Blob()
        specs = [_job_spec(job, i, tmp, blob) for i, job in enumerate(jobs)]
        blob.write(tmp / "blob.bin")
        pending = list(range(len(jobs)))
        attempt = 0
        start_retries = 1   # a Wine process that dies before any job starts is retried once
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for i in pending:
                    results[i] = _not_run(specs[i], "time budget exhausted before the job started", timed_out=True)
                break
            attempt += 1
            at = _attempt(stack, specs, pending, tmp / f"attempt{attempt}", remaining, kill_wineserver_on_timeout,
                          tmp / "blob.bin")
            unfinished = []
            for k, i in enumerate(pending):
                res = _load_result(specs[i])
                if res is None:
                    unfinished.append((k, i))
                    continue
                res.log = at.logs.get(k)
                results[i] = res
            if not unfinished:
                break
            k0, first = unfinished[0]
            started = k0 in at.stages
            rest = [i for _, i in unfinished[1:]]
            if not at.timed_out and not started and start_retries > 0:
                # e.g. a process started while Wine was still tearing down the previous
                # (aborted) one: a fresh wineserver and one more start, not a verdict
                start_retries -= 1
                session.kill_wineserver(stack)
                pending = [i for _, i in unfinished]
                continue
            if at.timed_out:
                results[first] = _timed_out_result(specs[first], at, k0, timeout_s)
                for i in rest:
                    results[i] = _not_run(specs[i], "not started: time budget exhausted", timed_out=True)
                break
            msg = (f"worker process exited with code {at.rc} during stage {at.stages.get(k0, 'start')!r}" if started
                   else f"worker process exited with code {at.rc} before the job started")
            results[first] = _crashed_result(specs[first], at, k0, msg)
            if rest and (not continue_after_crash or not started):
                # Without any job started the worker cannot run at all: do not loop.
                for i in rest:
                    results[i] = _not_run(specs[i], f"not run: worker process died ({msg})", crashed=True)
                break
            pending = rest
    finally:
        if not keep_files:
            shutil.rmtree(tmp, ignore_errors=True)
    return [r for r in results if r is not None]  # every slot is filled above


def _not_run(spec: dict, msg: str, *, crashed: bool = False, timed_out: bool = False) -> JobResult:
    return JobResult(ok=False, stage="not_run", error=msg, outputs=None, timings_ms={},
                     crashed=crashed, timed_out=timed_out, raw={"id": spec["id"]})


def _load_result(spec: dict) -> JobResult | None:
    path = Path(spec["result"])
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    outputs = None
    error = raw.get("error")
    ok = bool(raw.get("ok"))
    runs = None
    if ok:
        try:
            outputs = {o["name"]: _read_output(o) for o in raw.get("outputs", [])}
            if raw.get("runs") is not None:
                runs = [str(r.get("error")) if isinstance(r, dict) else {o["name"]: _read_output(o) for o in r}
                        for r in raw["runs"]]
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            ok, error = False, f"cannot read outputs: {e}"
    return JobResult(ok=ok, stage=str(raw.get("stage")), error=error, outputs=outputs,
                     timings_ms=dict(raw.get("timings_ms") or {}), crashed=False,
                     timed_out=False, raw=raw, runs=runs)


# --------------------------------------------------------------------------
# A node.exe kept between calls ("serve" mode of worker.js)
# --------------------------------------------------------------------------

#: set to 0 to start one node.exe per call (the behaviour before the kept worker)
SERVE_ENV = "ONNX_DML_BENCH_DML_SERVE"
_serve_procs: dict[tuple[str, str], "_Server"] = {}


class _Server:
    """One Windows node.exe running ``worker.js --serve DIR``: a batch is a request file
    ``req-N.json``, answered by ``done-N.json``; its stderr (ORT's log) is one file, sliced per
    batch. Starting node.exe and loading onnxruntime.dll under Wine costs about half a second per
    process; a kept process pays it once."""

    def __init__(self, stack: StackInfo, display: str):
        self.dir = Path(tempfile.mkdtemp(prefix="odb-dml-serve-"))
        self.key = (str(stack.prefix), str(stack.ort_dir))
        self.n = 0
        self.stderr_path = self.dir / "stderr.txt"
        cmd = [stack.wine, str(stack.node_exe), win_path(WORKER_JS), "--serve", win_path(self.dir)]
        with open(self.dir / "stdout.txt", "wb") as so, open(self.stderr_path, "wb") as se:
            # ends with this process (a worker killed by the pool leaves no node.exe polling behind)
            self.proc = subprocess.Popen(cmd, cwd=str(self.dir), stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                         env=stack.env(display=display), start_new_session=True,
                                         preexec_fn=session.die_with_parent)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def submit(self, adir: Path, timeout: float) -> tuple[int | None, bool, float]:
        """Run the batch of ``adir/job.json``; (exit code or None while it lives, timed out, seconds).
        The batch's share of stderr is copied to ``adir/stderr.txt``."""
        self.n += 1
        start = self.stderr_path.stat().st_size if self.stderr_path.exists() else 0
        req = self.dir / f"req-{self.n}.json"
        tmp = req.with_suffix(".tmp")
        shutil.copyfile(adir / "job.json", tmp)
        t0 = time.monotonic()
        tmp.rename(req)
        done = self.dir / f"done-{self.n}.json"
        deadline = t0 + max(0.01, timeout)
        delay = 0.001
        rc, timed_out = None, False
        while True:
            if done.exists():
                break
            rc = self.proc.poll()
            if rc is not None:
                if done.exists():
                    rc = None
                break
            if time.monotonic() > deadline:
                timed_out = True
                self.kill()
                rc = self.proc.returncode
                break
            time.sleep(delay)
            delay = min(0.01, delay * 2)
        wall = time.monotonic() - t0
        try:
            with open(self.stderr_path, "rb") as fh:
                fh.seek(start)
                (adir / "stderr.txt").write_bytes(fh.read())
        except OSError:
            pass
        return rc, timed_out, wall

    def kill(self) -> None:
        kill_group(self.proc)

    def stop(self) -> None:
        if self.alive():
            try:
                (self.dir / "quit").write_text("")
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_servers() -> None:
    """Stop the node.exe processes kept by this process."""
    for srv in list(_serve_procs.values()):
        srv.stop()
    _serve_procs.clear()


def shutdown(kill_wineservers: bool = False) -> None:
    """Stop the Windows processes kept here (the served node.exe), then the Wine session (the private
    Xvfb; with ``kill_wineservers`` the prefixes' wineservers: see ``session.shutdown``)."""
    with session.lock:
        stop_servers()
        session.shutdown(kill_wineservers)


atexit.register(shutdown)


def _launch(stack: StackInfo, adir: Path, timeout: float,
            kill_wineserver_on_timeout: bool) -> tuple[int | None, bool, float]:
    if os.environ.get(SERVE_ENV, "1") != "0":
        return _launch_served(stack, adir, timeout, kill_wineserver_on_timeout)
    return _launch_once(stack, adir, timeout, kill_wineserver_on_timeout)


def _launch_served(stack: StackInfo, adir: Path, timeout: float,
                   kill_wineserver_on_timeout: bool) -> tuple[int | None, bool, float]:
    """The batch on the kept node.exe of this prefix and onnxruntime-node build (started when
    absent or dead). A crash or a hang ends that process; the next batch starts a fresh one."""
    display = session.start_xvfb(stack)
    key = (str(stack.prefix), str(stack.ort_dir))
    srv = _serve_procs.get(key)
    if srv is None or not srv.alive():
        if srv is not None:
            srv.stop()
        for other in [s for k, s in _serve_procs.items() if k[0] == key[0] and k != key]:
            other.stop()                       # another build in the same prefix: one at a time
            _serve_procs.pop(other.key, None)
        session.ensure_wineserver(stack)
        srv = _serve_procs[key] = _Server(stack, display)
    rc, timed_out, wall = srv.submit(adir, timeout)
    if rc is not None or timed_out:
        srv.stop()
        _serve_procs.pop(key, None)
        if timed_out and kill_wineserver_on_timeout:
            session.kill_wineserver(stack)
        if rc is None:
            rc = -9
    return (0 if rc is None else rc), timed_out, wall


def _launch_once(stack: StackInfo, adir: Path, timeout: float,
                 kill_wineserver_on_timeout: bool) -> tuple[int | None, bool, float]:
    display = session.start_xvfb(stack)
    session.ensure_wineserver(stack)
    cmd = [stack.wine, str(stack.node_exe), win_path(WORKER_JS), win_path(adir / "job.json")]
    t0 = time.monotonic()
    with open(adir / "stdout.txt", "wb") as so, open(adir / "stderr.txt", "wb") as se:
        proc = subprocess.Popen(cmd, cwd=str(adir), stdin=subprocess.DEVNULL, stdout=so,
                                stderr=se, env=stack.env(display=display),
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=max(0.01, timeout))
            return rc, False, time.monotonic() - t0
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            if kill_wineserver_on_timeout:
                session.kill_wineserver(stack)
            return proc.returncode, True, time.monotonic() - t0


# --------------------------------------------------------------------------
# Canary and adapter information
# --------------------------------------------------------------------------

# Hand-computed expected values.
# MaxPool 2x2 stride 2 over the 4x4 ramp 0..15 (rows [0..3], [4..7], ...):
#   max(0,1,4,5)=5, max(2,3,6,7)=7, max(8,9,12,13)=13, max(10,11,14,15)=15
CANARY_MAXPOOL = [[[[5.0, 7.0], [13.0, 15.0]]]]
# DepthToSpace blocksize 2, DCR, input [1,4,1,2] with x2[c,0,w] = 2*c + w:
#   out[0,0,i,2*w+j] = x2[2*i+j,0,w]
#   row 0: x2[0,0,0]=0, x2[1,0,0]=2, x2[0,0,1]=1, x2[1,0,1]=3
#   row 1: x2[2,0,0]=4, x2[3,0,0]=6, x2[2,0,1]=5, x2[3,0,1]=7
CANARY_DEPTH_TO_SPACE = [[[[0.0, 2.0, 1.0, 3.0], [4.0, 6.0, 5.0, 7.0]]]]


def canary_model_bytes() -> bytes:
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("DepthToSpace", ["x2"], ["z"], blocksize=2, mode="DCR"),
    ]
    graph = helper.make_graph(
        nodes, "dml_canary",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
         helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 4, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnx-dml-bench-canary")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def canary(stack: StackInfo, timeout_s: float = 120.0) -> CanaryResult:
    """Known-answer check of DirectML under Wine (fallback to CPU disabled)."""
    with tempfile.TemporaryDirectory(prefix="odb-dml-canary-") as td:
        model = Path(td) / "canary.onnx"
        model.write_bytes(canary_model_bytes())
        x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        x2 = np.arange(8, dtype=np.float32).reshape(1, 4, 1, 2)
        job = Job(model, "dml", {"x": x, "x2": x2}, ["y", "z"],
                  disable_cpu_ep_fallback=True, verbose=True)
        t0 = time.monotonic()
        res = run_jobs(stack, [job], timeout_s=timeout_s)[0]
        wall = time.monotonic() - t0
    details: dict[str, Any] = {
        "stage": res.stage, "error": res.error, "timings_ms": res.timings_ms,
        "wall_s": round(wall, 3), "crashed": res.crashed, "timed_out": res.timed_out,
        "versions": res.raw.get("versions"),
        "expected": {"y": CANARY_MAXPOOL, "z": CANARY_DEPTH_TO_SPACE},
    }
    placement = [ln.strip() for ln in (res.log or "").splitlines()
                 if "placed on" in ln or "Node placements" in ln]
    details["placement"] = placement
    if not res.ok:
        if res.timed_out:
            return CanaryResult(False, f"canary timed out after {timeout_s:g} s "
                                "(Wine/Xvfb not starting? see details)", details)
        if res.crashed:
            return CanaryResult(False, f"canary worker crashed: {res.error}", details)
        msg = f"DirectML canary failed at stage {res.stage}: {res.error}"
        if "dml_provider_factory" in (res.error or ""):
            msg += ("\nlikely cause: no usable D3D12 device under Wine; check that "
                    "VK_ICD_FILENAMES points at a lavapipe >= 23 ICD "
                    f"(current ICD: {_icd_summary(stack)}), "
                    "that Xvfb runs and that the Wine prefix reports Windows 10")
        return CanaryResult(False, msg, details)
    y = res.outputs["y"]
    z = res.outputs["z"]
    details["got"] = {"y": y.tolist(), "z": z.tolist()}
    if not np.any(y) and not np.any(z):
        return CanaryResult(
            False,
            "DirectML returned all zeros with a successful return code: the Vulkan driver "
            "is most likely Mesa lavapipe < 23 (e.g. Debian bookworm's own 22.3), or "
            "VK_ICD_FILENAMES does not point at the backports lavapipe ICD "
            f"(current ICD: {_icd_summary(stack)}); re-run the setup.", details)
    ok_y = y.shape == (1, 1, 2, 2) and np.array_equal(y, np.array(CANARY_MAXPOOL, np.float32))
    ok_z = z.shape == (1, 1, 2, 4) and np.array_equal(
        z, np.array(CANARY_DEPTH_TO_SPACE, np.float32))
    if not (ok_y and ok_z):
        return CanaryResult(False, f"DirectML canary mismatch: MaxPool {y.tolist()} "
                            f"(expected {CANARY_MAXPOOL}), DepthToSpace {z.tolist()} "
                            f"(expected {CANARY_DEPTH_TO_SPACE}); likely cause: Mesa lavapipe "
                            "< 23 (bookworm's own 22.3 gives zeros or garbage) or a wrong "
                            f"VK_ICD_FILENAMES (current ICD: {_icd_summary(stack)})", details)
    on_dml = any("DmlExecutionProvider" in ln for ln in placement)
    msg = ("DirectML canary passed (MaxPool + DepthToSpace on DmlExecutionProvider, "
           f"CPU fallback disabled; session {res.timings_ms.get('session', 0):.0f} ms)")
    if not on_dml:
        msg += "; placement log line not found"
    return CanaryResult(True, msg, details)


def _icd_summary(stack: StackInfo) -> str:
    try:
        data = json.loads(Path(stack.icd_json).read_text())
        return (f"{stack.icd_json}, api_version {data['ICD'].get('api_version')}, "
                f"library {data['ICD'].get('library_path')}")
    except (OSError, ValueError, KeyError) as e:
        return f"{stack.icd_json} (unreadable: {e})"
