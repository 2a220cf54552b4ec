"""The ``--ep dml-direct`` lane: operator descriptors run straight through DirectML.dll by the
bench's own harness (:class:`DirectRunner`), no ONNX Runtime.

Every case's DirectML descriptor is built by the bench's own harness (``IDMLDevice::CreateOperator``
-> compile -> dispatch) on the DirectML.dll of the ``--ep dml`` lane, under the same Wine stack, and
judged against the DirectML reference of the descriptor (``verdict.judge(..., semantics="dml")``).
No ONNX Runtime is involved, so nothing can fall back to a CPU EP and there is no CPU side.

ONNX-side variants (ceil_mode, auto_pad, storage_order, form=decomposed) change the ONNX graph a
case builds, not its descriptor: on this lane such a case runs the descriptor it was derived from,
on the case's own inputs (the very inputs the ``dml`` lane feeds its graph), and is judged as that
descriptor (:func:`descriptor_case`: the case without its ONNX-side options). Its record keeps its
id, its ONNX-side options and the label ``onnx-side-variant``, so the four-way join pairs it with
the ``dml`` lane's record of the same case: a lowering bug of ceil_mode shows as DirectML right, EP
wrong.

Descriptor-only cases (:func:`descriptor_only_cases`): the (feature level, data type) pairs that
the seed pages list for an operator (its ``Operator.types_by_level``) but that the operator's
ONNX-driven sweep leaves out, because ONNX cannot
carry them (MaxPool on INT32, UINT64 indices, ...) or because the ONNX graph is the same whatever
the bench's FeatureLevel field says (MaxPool at 2.1 / 3.0, space/depth at 2.1). Each pair gets the
geometries of the operator's own sweep (cases without ONNX-side options, in sweep order),
re-typed (``Operator.retype``: MaxPool's indices fall back to what the level allows); per profile a budget of geometries per pair. Whether DirectML runs them is DirectML's
own answer (NOT_SUPPORTED otherwise, see ``DirectRunner.unsupported``).
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from .. import registry
from ..dml import probe
from ..dml.direct.build import build_id
from ..dml.direct.native import native_stack
from ..dml.direct.runner import DirectError, DirectRunner
from ..dml.select import find_stack, select_stack, stack_problem
from ..dml.wine.session import release_worker_stack, worker_stack
from ..dml.wine.stackinfo import StackError
from ..dtypes import FEATURE_LEVELS
from ..errors import ProviderError
from ..machine import versions as lib_versions
from ..outcome import Outcome
from ..record import Placement
from .base import (NEUTRAL, Entry, Lane, PreflightError, RunConfig, Shipped, Timed, descriptor_case, device_named,
                   onnx_side_variant)
from .dml_wine import copy_yardstick, gpu_environment, select_build

EP_NAME = "DirectML"
EP_KEY = "dml-direct"
PROOF = ("descriptor run by the bench's harness: IDMLDevice::CreateOperator on DirectML.dll, no ONNX Runtime "
         "(nothing can fall back to another EP)")
STATEMENT = ("The direct DirectML lane runs each descriptor on DirectML.dll itself (no ONNX Runtime), on a software "
             "Vulkan device (Mesa lavapipe under Wine's vkd3d): functional conformance, not hardware conformance.")
#: DirectML calls whose failure means DirectML refused the descriptor (EP_REJECTED, like a refused session)
REFUSING_CALLS = ("CreateOperator", "CompileOperator", "CheckFeatureSupport")
#: the bench's own steps, not DirectML's: the runner's (descriptor, input, start, protocol), the
#: harness's (Parse, ReadInput, WriteOutput, its 2 GiB arena limit Allocate) and the stack's start
#: (LoadLibrary ... DMLCreateDevice): their failure is the bench's (ERROR)
BENCH_STEPS = ("descriptor", "input", "start", "protocol", "Parse", "ReadInput", "WriteOutput", "Allocate",
               "LoadLibrary", "GetProcAddress", "EnumAdapters1", "D3D12CreateDevice", "DMLCreateDevice")
PASS_THROUGH = ("crash", "timeout")


def outcome(res) -> Outcome:
    """A DirectResult as the runner's Outcome (stages that ``verdict.failure`` understands)."""
    t = res.timings_ms or {}
    setup = sum(float(t.get(k, 0.0)) for k in ("create", "compile", "initializer"))
    run = float(t.get("execute", 0.0))
    if res.ok:
        return Outcome(True, "done", None, dict(res.outputs), None, setup, run)
    if res.stage in PASS_THROUGH:
        stage = res.stage
    elif res.stage in REFUSING_CALLS:
        stage = "session"
    elif res.stage in BENCH_STEPS:
        stage = "bench"
    else:                        # a DirectML / D3D12 call after CompileOperator: DirectML failed at run time
        stage = "run"
    return Outcome(False, stage, f"[{res.stage}] {res.error}", None, None, setup, run)


@dataclass
class DirectLane(Lane):
    """``--ep dml-direct``: descriptors on DirectML.dll under Wine, no ONNX Runtime, no CPU side."""
    has_cpu_side: ClassVar[bool] = False
    runs_descriptors: ClassVar[bool] = True
    canary_name: ClassVar[str] = "direct DirectML lane canary"
    #: the expectations of DirectML on lavapipe (the software device `setup dml` installs)
    shipped: ClassVar[Shipped] = Shipped("dml-direct-lavapipe.yaml", "lavapipe", device_named("lavapipe", "llvmpipe"))

    @classmethod
    def resolve(cls, entry: Entry, options: dict) -> "DirectLane":
        return resolve(options, entry.howto)

    def preflight(self) -> dict:
        try:
            return preflight(self)
        except StackError as e:
            raise PreflightError(str(e)) from None

    def make_backend(self, cfg: RunConfig) -> "DirectBackend":
        return DirectBackend(self, cfg)

    def extra_cases(self, sweep: Callable[[], list], profile: str) -> list:
        """The descriptor-only cases of the profile's sweep (:func:`descriptor_only_cases`)."""
        return descriptor_only_cases(sweep(), profile)

    def make_timer(self) -> "DirectTimer":
        return DirectTimer(self)


#: how to get the lane on Windows, natively
NATIVE_HOWTO = ("pip install -c constraints.txt -e '.[directml]' (its DirectML.dll), and MinGW-w64's gcc on PATH "
                "or ONNX_DML_BENCH_HARNESS set to a harness built elsewhere")


def resolve(options: dict, howto: str = "") -> DirectLane:
    """The direct DirectML lane: descriptors through DirectML.dll under the Wine stack of `dml`, or
    on Windows natively on the machine's adapter (``dml/direct/native.py``)."""
    if sys.platform == "win32":
        try:
            stack = native_stack()
            build_id(stack)                 # a carried harness exists, or a compiler to build one
        except StackError as e:
            raise ProviderError(f"the direct DirectML lane cannot run here: {e}") from None
        return DirectLane(EP_KEY, EP_NAME, f"DirectML.dll {stack.versions.get('DirectML.dll', '?')} "
                          f"(onnxruntime-directml), bench harness, native", options, howto or NATIVE_HOWTO)
    if find_stack() is None:
        raise ProviderError(f"the direct DirectML lane is not set up on this machine ({stack_problem()}): run "
                            "`onnx-dml-bench setup dml` (DirectML under Wine, and the MinGW-built harness)")
    v = getattr(select_build(options, need_ort=False), "versions", {}) or {}
    return DirectLane(EP_KEY, EP_NAME,
                      f"DirectML.dll {v.get('DirectML.dll', '?')} (onnxruntime-node {v.get('onnxruntime-node', '?')} win32) "
                      "under Wine, bench harness", options, howto)


class DirectBackend:
    """Inside a worker process: one harness process (restarted by DirectRunner when it dies)."""
    is_cpu = False
    cpu_build = ""

    def __init__(self, lane: Lane, cfg: RunConfig):
        self.lane, self.cfg = lane, cfg
        self.ep_name = EP_NAME
        per_case = min(60.0, max(5.0, float(cfg.timeout_s) / 2))
        if sys.platform == "win32":
            stack = native_stack()
        else:
            # the build chosen by the EP options (directml=, onnxruntime_node=), on this worker's own Wine prefix
            stack = worker_stack(select_stack(lane.options))
        self.runner = DirectRunner(stack, timeout_s=per_case)

    def placement(self) -> Placement:
        return Placement(fallback_disabled=False, nodes=None, proof=PROOF)

    def unsupported(self, case) -> str | None:
        """DirectML's own answer; None when the harness cannot start (run() then says why, as ERROR)."""
        try:
            return self.runner.unsupported(case.op, case.desc)
        except StackError:
            return None

    def run(self, case, inputs: dict[str, np.ndarray]) -> Outcome:
        return outcome(self.runner.run(case.op, case.desc, inputs))

    def close(self) -> None:
        self.runner.close()


class DirectTimer:
    """The performance lens on the direct lane: each descriptor's dispatch repeated by the harness,
    the GPU time of each from D3D12 timestamp queries; the yardstick, the device's copy bandwidth
    timed the same way."""
    semantics = "dml"
    clock = ("GPU time of each dispatch: a D3D12 timestamp query before and after it (a UAV barrier "
             "between dispatches), ticks over the queue's timestamp frequency; inputs uploaded and the "
             "initializer dispatched once, before the untimed warm-up dispatches")

    def __init__(self, lane: Lane, timeout_s: float = 600.0):
        self.ep_name = EP_NAME
        self.stack = worker_stack(select_stack(lane.options))
        self.runner = DirectRunner(self.stack, timeout_s=timeout_s)

    def unsupported(self, case) -> str | None:
        return self.runner.unsupported(case.op, case.desc)

    def time(self, case, inputs: dict, warmup: int, repeats: int) -> Timed:
        dcase = descriptor_case(case)
        res = self.runner.time(dcase.op, dcase.desc, inputs, warmup, repeats)
        return Timed(outcome(res), [float(x) for x in res.gpu.get("ms", [])],
                     Placement(fallback_disabled=False, nodes=None, proof=PROOF),
                     {"timestamp_frequency": res.gpu.get("timestamp_frequency"),
                      "host_ms": {k: round(float(v), 3) for k, v in (res.timings_ms or {}).items()}})

    def yardstick(self, nbytes: int, warmup: int, repeats: int) -> dict:
        return copy_yardstick(self.runner, nbytes, warmup, repeats)

    def close(self) -> None:
        self.runner.close()
        release_worker_stack(self.stack)


# ----------------------------------------------------------------------------------------------
# Canary and environment (before any verdict)
# ----------------------------------------------------------------------------------------------

def canary_case():
    """A known answer: MaxPool 2x2/2 with UINT32 indices over a 1x2x4x4 ramp with a tie."""
    op = registry.get("max_pooling2")
    d = op.Desc(InputSizes=(1, 2, 4, 4), DataType="FLOAT32", DimensionCount=2, Strides=(2, 2), WindowSize=(2, 2),
                StartPadding=(0, 0), EndPadding=(0, 0), Dilations=(1, 1), OutputIndicesDataType="UINT32",
                FeatureLevel="5.0")
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    x[0, 1, 0, 0] = x[0, 1, 0, 1] = 100.0     # tie: the first element met wins
    y = np.array([5, 7, 13, 15, 100, 23, 29, 31], np.float32).reshape(1, 2, 2, 2)
    idx = np.array([5, 7, 13, 15, 16, 23, 29, 31], np.uint32).reshape(1, 2, 2, 2)
    return op.key, d, {"X": x}, {"Y": y, "Indices": idx}


def run_canary(runner: DirectRunner) -> tuple[bool, str]:
    key, d, inputs, want = canary_case()
    res = runner.run(key, d, inputs)
    if not res.ok:
        return False, f"direct canary failed: {res.stage}: {res.error}"
    for name, arr in want.items():
        got = res.outputs.get(name)
        if got is None or got.shape != arr.shape or not np.array_equal(got, arr):
            return False, (f"direct canary failed: {name} = {None if got is None else got.ravel().tolist()}, "
                           f"expected {arr.ravel().tolist()}")
    return True, "direct canary passed: MaxPool 2x2/2 with UINT32 indices (tie to the first element) is bit exact"


def harness_build(stack=None) -> str:
    """The harness build's hash (sources, compiler command and compiler version; a prebuilt one's
    without the compiler), or that of a carried executable."""
    return build_id(stack)


#: what a native run states about itself; WARP: Windows' software rasterizer (hosted runners have no GPU)
NATIVE_STATEMENT = ("The direct DirectML lane runs each descriptor on DirectML.dll itself (no ONNX Runtime), natively "
                    "on this machine's Direct3D 12 adapter: {adapter}.")
WARP_NOTE = (" That adapter is WARP, Windows' software rasterizer: functional conformance of DirectML, not hardware "
             "conformance.")


def preflight_native(lane: Lane) -> dict:
    """The canary and the environment on Windows itself (``dml/direct/native.py``)."""
    stack = native_stack()
    with DirectRunner(stack, timeout_s=120) as runner:
        ok, message = run_canary(runner)
        if not ok:
            raise DirectError(message + "; no verdicts will be given")
        info = runner.device_info()
    adapter = str(info.get("adapter") or "?")
    dml_version = (info.get("dml_version") or {}).get("file_version") or stack.versions.get("DirectML.dll", "?")
    statement = NATIVE_STATEMENT.format(adapter=adapter)
    if "basic render" in adapter.lower() or "warp" in adapter.lower():
        statement += WARP_NOTE
    return {
        "versions": {**lib_versions(), "DirectML.dll": dml_version},
        "dml_stack": stack.stack_name,
        "shader_model": str(info.get("shader_model") or "unknown"),
        "ort_package": "none (DirectML.dll run by the bench's harness)",
        "ort_version": "",
        "ep_package": f"DirectML.dll {dml_version} (from {stack.directml_dll.name} of onnxruntime-directml), native",
        "device": f"{adapter} (Direct3D 12, native)",
        "driver": "",
        "dml": {"DirectML.dll": dml_version, "DirectML.dll (string)": (info.get("dml_version") or {}).get(
                    "file_version_string"), "dll_path": str(stack.directml_dll), "d3d12_adapter_name": adapter,
                "max_feature_level": info.get("max_feature_level"), "dtypes": info.get("dtypes"),
                "dml_stack": stack.stack_name},
        "harness_build": harness_build(stack),
        "statement": statement,
        "canary": message,
    }


def preflight(lane: Lane) -> dict:
    """Known-answer canary before any verdict of this lane, and the environment to record.
    Raises StackError (DirectError) when the stack is missing or the canary fails."""
    if sys.platform == "win32":
        return preflight_native(lane)
    stack = select_stack(lane.options)
    sampler = probe.MemorySampler() if stack.gpu else None   # GPU memory before and during the canary
    try:
        with DirectRunner(worker_stack(stack), timeout_s=120) as runner:   # a prefix slot of its own
            with sampler if sampler is not None else contextlib.nullcontext():
                ok, message = run_canary(runner)
            if not ok:
                raise DirectError(f"{message} (DirectML.dll: {stack.directml_dll}); no verdicts will be given")
            info = runner.device_info()
        sm = str(info.get("shader_model") or "unknown")
        if sm != "unknown":
            probe.record_shader_model(stack, sm)        # measured now; the manifest keeps it for the dml lane
    finally:
        release_worker_stack(stack)
    adapter = probe.adapter_info(stack)
    v = dict(stack.versions)
    dml_version = (info.get("dml_version") or {}).get("file_version") or v.get("DirectML.dll", "?")
    source = (f"from onnxruntime-node {v.get('onnxruntime-node', '?')} win32" if stack.dml_dll is None
              else f"from {v.get('DirectML.dll source') or stack.dml_dll}")
    out = {
        "versions": {**lib_versions(), "DirectML.dll": dml_version, **probe.identity(stack, sm)},
        "dml_stack": stack.stack_name,
        "shader_model": sm,
        "ort_package": "none (DirectML.dll run by the bench's harness)",
        "ort_version": "",
        "ep_package": f"DirectML.dll {dml_version} ({source}) under Wine {v.get('wine', '?')}",
        "device": f"{adapter.get('deviceName', 'lavapipe')} (software Vulkan) via Wine {v.get('wine', '?')} "
                  f"d3d12/vkd3d {v.get('vkd3d', '?')}, shader model {sm}",
        "driver": f"Mesa {v.get('mesa', adapter.get('driverInfo', '?'))}",
        "dml": {"DirectML.dll": dml_version, "DirectML.dll (string)": (info.get("dml_version") or {}).get(
                    "file_version_string"), "dll_path": str(stack.directml_dll), "wine": v.get("wine"), "mesa": v.get("mesa"), "vkd3d": v.get("vkd3d"),
                "adapter": adapter, "d3d12_adapter_name": info.get("adapter"),
                "max_feature_level": info.get("max_feature_level"), "dtypes": info.get("dtypes"),
                "dml_stack": stack.stack_name, "shader_model": sm},
        "harness_build": harness_build(stack),
        "statement": STATEMENT,
        "canary": message,
    }
    if sampler is not None:
        try:
            out.update(gpu_environment(stack, adapter, sampler, message))
        except ProviderError as e:
            raise DirectError(str(e)) from None
    return out


# ----------------------------------------------------------------------------------------------
# Descriptor-only cases
# ----------------------------------------------------------------------------------------------

#: geometries per missing (feature level, data type) pair (the sized profiles test sizes, not types: none)
BUDGET = {"smoke": 2, "default": 12, "full": 10**6, "networks": 0, "limits": 0}


def level_types(op) -> list[tuple[str, str]]:
    """(feature level, data type) pairs the operator declares (``Operator.types_by_level``), lowest
    level first."""
    table = op.types_by_level
    return [(fl, t) for fl in sorted(table, key=FEATURE_LEVELS.index) for t in table[fl]]


def extra_for(op, base_cases: list, profile: str) -> list:
    """The operator's descriptor-only cases for the pairs its sweep does not cover."""
    if not BUDGET.get(profile, BUDGET["default"]):
        return []
    covered = {(getattr(c.desc, "FeatureLevel", None), c.dtype) for c in base_cases}
    plain = [c for c in base_cases if not onnx_side_variant(c) and c.values is None]
    out, seen = [], set()
    for level, dtype in level_types(op):
        if (level, dtype) in covered:
            continue
        families = op.families(dtype)
        n = 0
        for i, c in enumerate(plain):
            d = op.retype(c.desc, level, dtype)
            if d is None or repr(d) in seen:
                continue
            seen.add(repr(d))
            fam = c.family if c.family in families else families[i % len(families)]
            out.append(op.make_case(d, {k: v for k, v in c.variant if (k, v) in NEUTRAL}, fam, opset=c.opset))
            n += 1
            if n >= BUDGET.get(profile, BUDGET["default"]):
                break
    return out


def descriptor_only_cases(cases: list, profile: str) -> list:
    """Cases to add to a run of ``cases`` (a profile's sweep) on the direct lane."""
    by_op: dict = {}
    for c in cases:
        by_op.setdefault(c.operator, []).append(c)
    ids = {c.id for c in cases}
    extra = [x for op, group in by_op.items() for x in extra_for(op, group, profile)]
    return [x for x in extra if x.id not in ids]
