"""What a stack is, measured: the Vulkan adapter DirectML runs on, the shader model its D3D12 device
reports (measured by the direct harness, cached in the manifest), what a run's records say about the
stack, and on a GPU host the evidence that the GPU did the canary's work.

On a GPU host wined3d runs its GL renderer, and DXGI then reports a made-up adapter, so the device
recorded is the Vulkan device (``vulkaninfo --summary`` with the same ICD); the canary must show GPU
evidence: that Vulkan device is the GPU and the GPU's memory in use rose while the canary's process
held its D3D12 device (``nvidia-smi``); otherwise no verdicts.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from .direct.runner import DirectRunner
from .wine import session
from .wine.stackinfo import LogFn, StackInfo, record_version

STATEMENT = ("DirectML on a hardware Vulkan device ({device}) under Wine's d3d12/vkd3d: the GPU ran the "
             "DirectML operators (canary: GPU memory in use rose while DirectML held its device).")


# --------------------------------------------------------------------------
# The Vulkan adapter
# --------------------------------------------------------------------------

def adapter_info(stack: StackInfo, timeout_s: float = 60.0) -> dict:
    """Best-effort description of the (software) adapter DirectML runs on.

    Uses ``vulkaninfo --summary`` with the stack's private lavapipe ICD; Wine's
    d3d12 (vkd3d) sits on that Vulkan device.
    """
    info: dict[str, Any] = {
        "icd_json": str(stack.icd_json),
        "mesa": stack.versions.get("mesa"),
        "wine": stack.versions.get("wine"),
        "vkd3d": stack.versions.get("vkd3d"),
        "DirectML.dll": stack.versions.get("DirectML.dll"),
    }
    exe = shutil.which("vulkaninfo")
    bundled = Path(stack.mesa_root) / "usr/bin/vulkaninfo"      # a GPU host's unpacked bundle
    if not exe and bundled.is_file():
        exe = str(bundled)
    launcher = getattr(stack, "launcher", "")
    if launcher:                       # a stack in a root of its own: its vulkaninfo, its Vulkan loader
        exe = "vulkaninfo" if bundled.is_file() else None
    if not exe:
        info["error"] = "vulkaninfo not found (apt-get install vulkan-tools)"
        return info
    env = stack.env()
    env.pop("DISPLAY", None)
    display = session.display()
    if getattr(stack, "gpu", "") and display:
        env["DISPLAY"] = display       # a GPU host: the vendor's ICD may want the X display DirectML ran with
    try:
        r = subprocess.run([*([launcher] if launcher else []), exe, "--summary"], env=env, capture_output=True, text=True,
                           timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        info["error"] = "vulkaninfo timed out"
        return info
    text = r.stdout
    gpu = text.split("Devices:", 1)[-1]
    for key in ("apiVersion", "driverVersion", "vendorID", "deviceID", "deviceType",
                "deviceName", "driverID", "driverName", "driverInfo", "conformanceVersion"):
        m = re.search(rf"^\s*{key}\s*=\s*(.+)$", gpu, re.M)
        if m:
            info[key] = m.group(1).strip()
    if "deviceName" not in info:
        info["error"] = f"vulkaninfo found no device (exit {r.returncode}): {r.stderr[-1000:]}"
    return info


# --------------------------------------------------------------------------
# Shader model (measured by the direct harness: D3D12_FEATURE_SHADER_MODEL) and record identity
# --------------------------------------------------------------------------

def record_shader_model(stack: StackInfo, sm: str) -> None:
    """Cache a measured shader model in the stack's manifest (``stack.versions["shader_model"]``)."""
    record_version(stack, "shader_model", sm)


def measure_shader_model(stack: StackInfo, log: LogFn = lambda m: None) -> str:
    """The highest shader model the stack's D3D12 device reports, asked by the direct harness
    (``ID3D12Device::CheckFeatureSupport(D3D12_FEATURE_SHADER_MODEL)``); cached in the manifest."""
    with DirectRunner(stack, timeout_s=120, log=log) as r:
        sm = str(r.device_info().get("shader_model") or "unknown")
    if sm != "unknown":
        record_shader_model(stack, sm)
        stack.versions["shader_model"] = sm
    return sm


def shader_model(stack: StackInfo, log: LogFn = lambda m: None) -> str:
    """The stack's shader model: the manifest's measured value, measured now when it has none."""
    return stack.versions.get("shader_model") or measure_shader_model(stack, log)


def identity(stack: StackInfo, sm: str | None) -> dict[str, str]:
    """What every record of a DirectML run says about the Wine stack (part of ``env.versions``)."""
    v = stack.versions
    out = {"dml_stack": stack.stack_name, "shader_model": sm or v.get("shader_model") or "unknown"}
    for k in ("wine", "vkd3d"):
        if v.get(k):
            out[k] = v[k]
    return out


# --------------------------------------------------------------------------
# GPU evidence (nvidia-smi)
# --------------------------------------------------------------------------

_SMI_FIELDS = ("name", "memory.used", "memory.total", "driver_version", "pci.bus_id", "utilization.gpu")


def gpu_snapshot(timeout_s: float = 20.0) -> dict:
    """What ``nvidia-smi`` says now: GPUs (name, memory used MiB, driver) and compute processes."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {"error": "nvidia-smi not found"}
    out: dict = {"time": round(time.time(), 3)}
    try:
        r = subprocess.run([exe, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=timeout_s)
        gpus = []
        for line in r.stdout.strip().splitlines():
            vals = [v.strip() for v in line.split(",")]
            if len(vals) == len(_SMI_FIELDS):
                g = dict(zip(_SMI_FIELDS, vals))
                for k in ("memory.used", "memory.total"):
                    try:
                        g[k] = int(float(g[k]))
                    except ValueError:
                        pass
                gpus.append(g)
        out["gpus"] = gpus
        if not gpus:
            out["error"] = (r.stderr or r.stdout).strip()[-500:] or f"nvidia-smi exit {r.returncode}"
        r = subprocess.run([exe, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=timeout_s)
        out["processes"] = [ln.strip() for ln in r.stdout.strip().splitlines() if ln.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        out["error"] = str(e)
    return out


class MemorySampler:
    """``with MemorySampler() as m: <canary>``: ``m.before`` (taken first), ``m.during`` (the reading with
    the most GPU memory in use, polled while the block runs and once at its end, before the kept
    worker process lets its device go)."""

    def __init__(self, interval_s: float = 0.2, snapshot=gpu_snapshot):
        self.interval_s, self.snapshot = interval_s, snapshot
        self.before: dict = {}
        self.during: dict = {}
        self.samples = 0
        self._stop = None
        self._thread = None

    def _used(self, snap: Mapping) -> int:
        g = (snap.get("gpus") or [{}])[0]
        return g.get("memory.used") if isinstance(g.get("memory.used"), int) else -1

    def _take(self) -> None:
        snap = self.snapshot()
        self.samples += 1
        if not self.during or self._used(snap) > self._used(self.during):
            self.during = snap

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def __enter__(self) -> "MemorySampler":
        self.before = self.snapshot()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def end(self) -> None:
        """Stop polling and take the last reading (call while the canary's process still lives)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(30)
            self._thread = None
            self._take()

    def __exit__(self, *exc) -> None:
        self.end()


def evidence(adapter: Mapping, before: Mapping, during: Mapping) -> dict:
    """Did the GPU do the canary's work? ``ok`` and a one-line ``message``: the Vulkan device is a
    GPU (not a CPU device such as llvmpipe), and GPU memory in use rose while DirectML held it."""
    dev = str(adapter.get("deviceName") or "")
    dtype = str(adapter.get("deviceType") or "")
    problems = []
    if not dev:
        problems.append(f"no Vulkan device found ({adapter.get('error', 'vulkaninfo gave none')})")
    elif "CPU" in dtype.upper() or "llvmpipe" in dev.lower():
        problems.append(f"the Vulkan device is a CPU device ({dev}, {dtype})")
    g0 = (before.get("gpus") or [{}])[0]
    g1 = (during.get("gpus") or [{}])[0]
    m0, m1 = g0.get("memory.used"), g1.get("memory.used")
    rise = (m1 - m0) if isinstance(m0, int) and isinstance(m1, int) else None
    if rise is None:
        problems.append(f"GPU memory use unknown ({during.get('error') or before.get('error') or 'no nvidia-smi reading'})")
    elif rise <= 0:
        problems.append(f"GPU memory in use did not rise during the canary ({m0} -> {m1} MiB)")
    ev = {"ok": not problems, "vulkan_device": dev, "vulkan_device_type": dtype,
          "vulkan_driver": f"{adapter.get('driverName', '?')} {adapter.get('driverInfo', '')}".strip(),
          "gpu": g1.get("name") or g0.get("name"), "driver_version": g1.get("driver_version") or g0.get("driver_version"),
          "memory_used_mib_before": m0, "memory_used_mib_during": m1, "memory_rise_mib": rise,
          "compute_processes_during": during.get("processes", [])}
    if problems:
        ev["message"] = "GPU canary failed: " + "; ".join(problems)
    else:
        ev["message"] = (f"GPU canary passed: Vulkan device {dev} ({dtype}); GPU memory in use {m0} -> {m1} MiB "
                         f"(+{rise} MiB) while DirectML held its device")
    return ev
