"""The ``--ep dml-direct`` lane: the runner's descriptor backend over :class:`DirectRunner`.

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
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...outcome import Outcome
from ...record import Placement
from .. import probe
from ..select import select_stack
from ..wine.session import release_worker_stack, worker_stack
from ..wine.stackinfo import StackError
from .build import ensure_compiler, source_hash
from .runner import DirectError, DirectRunner

EP_NAME = "DirectML"
EP_KEY = "dml-direct"
VARIANT_LABEL = "onnx-side-variant"
PROOF = ("descriptor run by the bench's harness: IDMLDevice::CreateOperator on DirectML.dll, no ONNX Runtime "
         "(nothing can fall back to another EP)")
STATEMENT = ("The direct DirectML lane runs each descriptor on DirectML.dll itself (no ONNX Runtime), on a software "
             "Vulkan device (Mesa lavapipe under Wine's vkd3d): functional conformance, not hardware conformance.")
#: DirectML calls whose failure means DirectML refused the descriptor (EP_REJECTED, like a refused session)
REFUSING_CALLS = ("CreateOperator", "CompileOperator", "CheckFeatureSupport")
PASS_THROUGH = ("crash", "timeout")


#: ONNX-side options at their default: the graph is then the direct image of the descriptor
NEUTRAL = {("form", "native"), ("ceil_mode", 0), ("auto_pad", "NOTSET"), ("storage_order", 0)}


def onnx_side_variant(case) -> dict:
    """The case's ONNX-side options that make its graph more than the image of its descriptor."""
    return {k: v for k, v in case.variant if (k, v) not in NEUTRAL}


def descriptor_case(case):
    """The case as the descriptor it runs on this lane: same descriptor, inputs and seed, no
    ONNX-side options."""
    return dataclasses.replace(case, variant=()) if case.variant else case


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
    else:
        stage = "run"
    return Outcome(False, stage, f"[{res.stage}] {res.error}", None, None, setup, run)


class DirectBackend:
    """Inside a worker process: one harness process (restarted by DirectRunner when it dies)."""
    runs_descriptors = True
    is_cpu = False
    cpu_build = ""

    def __init__(self, spec, cfg):
        self.spec, self.cfg = spec, cfg
        self.ep_name = EP_NAME
        per_case = min(60.0, max(5.0, float(cfg.timeout_s) / 2))
        # the build chosen by the EP options (directml=, onnxruntime_node=), on this worker's own Wine prefix
        stack = worker_stack(select_stack(getattr(spec, "options", None)))
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


# ----------------------------------------------------------------------------------------------
# Canary and environment (before any verdict)
# ----------------------------------------------------------------------------------------------

def canary_case():
    """A known answer: MaxPool 2x2/2 with UINT32 indices over a 1x2x4x4 ramp with a tie."""
    from ... import registry
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


def harness_build() -> str:
    """The harness build's hash (sources, compiler command and compiler version)."""
    return source_hash(ensure_compiler(log=lambda m: None))


def preflight(spec) -> dict:
    """Known-answer canary before any verdict of this lane, and the environment to record.
    Raises StackError (DirectError) when the stack is missing or the canary fails."""
    stack = select_stack(getattr(spec, "options", None))
    try:
        with DirectRunner(worker_stack(stack), timeout_s=120) as runner:   # a prefix slot of its own
            ok, message = run_canary(runner)
            if not ok:
                raise DirectError(message + "; no verdicts will be given")
            info = runner.device_info()
        sm = str(info.get("shader_model") or "unknown")
        if sm != "unknown":
            probe.record_shader_model(stack, sm)        # measured now; the manifest keeps it for the dml lane
    finally:
        release_worker_stack(stack)
    adapter = probe.adapter_info(stack)
    v = dict(stack.versions)
    dml_version = (info.get("dml_version") or {}).get("file_version") or v.get("DirectML.dll", "?")
    from ...machine import versions as lib_versions
    source = (f"from onnxruntime-node {v.get('onnxruntime-node', '?')} win32" if stack.dml_dll is None
              else f"from {v.get('DirectML.dll source') or stack.dml_dll}")
    return {
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
        "harness_build": harness_build(),
        "statement": STATEMENT,
        "canary": message,
    }


__all__ = ["DirectBackend", "EP_KEY", "EP_NAME", "StackError", "descriptor_case", "onnx_side_variant", "preflight",
           "run_canary"]
