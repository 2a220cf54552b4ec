"""Execution-provider discovery and ONNX Runtime session construction.

EPs come in three kinds: built into the installed onnxruntime package (CPU, CUDA, OpenVINO,
DirectML on Windows), plugin libraries registered at run time (WebGPU from the
onnxruntime-ep-webgpu package, or any plugin library given by path), and DirectML on Linux, which
runs the Windows build of ONNX Runtime under Wine (onnx_dml_bench.dml).
"""
from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import platform
import re
import sys
from dataclasses import dataclass, field

from .dml.select import find_stack, select_stack, stack_problem
from .dml.wine.stackinfo import StackError
from .errors import ProviderError
from .machine import cpu_name, nvidia, versions


OPTIMIZATION_LEVELS = ("disabled", "basic", "extended", "all")


def graph_optimization_level(ort, name: str):
    """ONNX Runtime's GraphOptimizationLevel for the bench's name of it."""
    return {"disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[name]


ORT_PACKAGES = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml")


@dataclass
class EPSpec:
    key: str                      # cpu, cuda, dml, openvino, webgpu, plugin
    ep_name: str                  # e.g. CUDAExecutionProvider
    package: str                  # what provides it
    kind: str = "builtin"         # builtin | plugin | wine | dml-direct (descriptors, no ONNX Runtime)
    library: str | None = None    # plugin library path
    options: dict = field(default_factory=dict)

    @property
    def is_cpu(self) -> bool:
        return self.ep_name == "CPUExecutionProvider"


KNOWN = {
    "cpu": ("CPUExecutionProvider", "onnxruntime (any flavour)"),
    "cuda": ("CUDAExecutionProvider", "onnxruntime-gpu (pip install 'onnx-dml-bench[cuda]')"),
    "openvino": ("OpenVINOExecutionProvider", "onnxruntime-openvino (pip install 'onnx-dml-bench[openvino]')"),
    "dml": ("DmlExecutionProvider", "onnxruntime-directml on Windows (pip install 'onnx-dml-bench[directml]'); "
                                    "on Linux: `onnx-dml-bench setup dml` (DirectML under Wine)"),
    "webgpu": ("WebGpuExecutionProvider", "onnxruntime-ep-webgpu (pip install 'onnx-dml-bench[webgpu]')"),
    "tensorrt": ("TensorrtExecutionProvider", "onnxruntime-gpu with TensorRT"),
    "dml-direct": ("DirectML", "DirectML.dll of the `onnx-dml-bench setup dml` stack, run by the bench's own harness "
                               "(Linux; on Windows: future work)"),
}
BY_EP_NAME = {v[0].lower(): k for k, v in KNOWN.items()}


def ort_package() -> tuple[str, str]:
    """(distribution name, version) of the ONNX Runtime flavour actually imported: the
    distribution that owns the imported onnxruntime module (several may be installed side by
    side, e.g. a system one and one on PYTHONPATH)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return ("none", "")
    from pathlib import Path
    here = Path(ort.__file__).resolve()
    owners, installed = [], []
    for name in ORT_PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        installed.append(name)
        try:
            if Path(dist.locate_file("onnxruntime/__init__.py")).resolve() == here:
                owners.append((name, dist.version))
        except Exception:  # noqa: BLE001 - unusual installs: fall through
            pass
    if len(owners) == 1:
        return owners[0]
    if len(installed) > 1:
        return (" + ".join(installed) + " (conflicting: install only one)", ort.__version__)
    return (installed[0] if installed else "onnxruntime (unknown distribution)", ort.__version__)


def parse_options(items: list[str] | None) -> dict:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise ProviderError(f"EP option {it!r} must be KEY=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def resolve(name: str, options: dict | None = None) -> EPSpec:
    """Turn a user's EP name (cpu, cuda, dml, openvino, webgpu, a full provider name, or
    plugin:PATH[:EpName]) into an EPSpec, checking it can run here."""
    options = dict(options or {})
    raw = name.strip()
    if raw.startswith("plugin:"):
        rest = raw[len("plugin:"):]
        m = re.match(r"^(.*?)(?::([A-Za-z0-9_]+ExecutionProvider))?$", rest)
        path, ep_name = m.group(1), m.group(2)
        if not os.path.isfile(path):
            raise ProviderError(f"plugin EP library {path!r} does not exist")
        spec = EPSpec("plugin", ep_name or "", f"plugin library {path}", "plugin", path, options)
        _check_plugin(spec)
        return spec
    key = raw.lower()
    key = BY_EP_NAME.get(key, key)
    if key not in KNOWN:
        import onnxruntime as ort
        if raw in ort.get_available_providers():      # any other EP built into the package
            return EPSpec(raw, raw, "%s %s" % ort_package(), "builtin", None, options)
        raise ProviderError(f"unknown EP {name!r}; known: {', '.join(KNOWN)} or plugin:PATH[:EpName]")
    ep_name, package = KNOWN[key]
    if key == "webgpu":
        try:
            mod = importlib.import_module("onnxruntime_ep_webgpu")
        except ImportError:
            raise ProviderError(f"WebGpuExecutionProvider is not available: install {package}") from None
        spec = EPSpec(key, mod.get_ep_name(), f"onnxruntime-ep-webgpu {md.version('onnxruntime-ep-webgpu')}",
                      "plugin", mod.get_library_path(), options)
        _check_plugin(spec)
        return spec
    if key == "dml-direct":
        return _resolve_direct(options)
    if key == "dml" and sys.platform != "win32":
        info = find_stack()
        if info is None:
            raise ProviderError(f"DmlExecutionProvider is not set up on this Linux machine ({stack_problem()}): run "
                                "`onnx-dml-bench setup dml` (DirectML under Wine on a software Vulkan device)")
        _select_dml_build(options, need_ort=True)
        return EPSpec(key, ep_name, "onnxruntime-node (win32) under Wine", "wine", None, options)
    import onnxruntime as ort
    if ep_name not in ort.get_available_providers():
        pkg, ver = ort_package()
        raise ProviderError(f"{ep_name} is not available in the installed {pkg} {ver}: it comes with {package}")
    if key == "openvino":
        options.setdefault("device_type", "CPU")
    if key in ("cuda", "dml"):
        options.setdefault("device_id", "0")
    return EPSpec(key, ep_name, "%s %s" % ort_package(), "builtin", None, options)


def _select_dml_build(options: dict, need_ort: bool):
    """The DirectML build the EP options choose (``onnxruntime_node=VERSION``, ``directml=VERSION``):
    installed side by side by ``setup dml --onnxruntime-node/--directml-dll``."""
    try:
        return select_stack(options, need_ort=need_ort)
    except StackError as e:
        raise ProviderError(str(e)) from None


def _resolve_direct(options: dict) -> EPSpec:
    """The direct DirectML lane: descriptors through DirectML.dll under the Wine stack of `dml`."""
    if sys.platform == "win32":
        raise ProviderError("the direct DirectML lane (dml-direct) runs under Wine on Linux only; a native Windows "
                            "build of its harness is future work")
    info = find_stack()
    if info is None:
        raise ProviderError(f"the direct DirectML lane is not set up on this machine ({stack_problem()}): run "
                            "`onnx-dml-bench setup dml` (DirectML under Wine, and the MinGW-built harness)")
    v = getattr(_select_dml_build(options, need_ort=False), "versions", {}) or {}
    return EPSpec("dml-direct", KNOWN["dml-direct"][0],
                  f"DirectML.dll {v.get('DirectML.dll', '?')} (onnxruntime-node {v.get('onnxruntime-node', '?')} win32) "
                  "under Wine, bench harness", "dml-direct", None, options)


_registered: dict[str, str] = {}


def _check_plugin(spec: EPSpec) -> None:
    devices = plugin_devices(spec)
    if not devices:
        raise ProviderError(f"{spec.ep_name or 'the plugin EP'} ({spec.package}) lists no device on this machine "
                            "(onnxruntime.get_ep_devices() has none for it)")
    if not spec.ep_name:
        spec.ep_name = devices[0].ep_name


def plugin_devices(spec: EPSpec):
    import onnxruntime as ort
    reg = spec.library
    if reg not in _registered:
        name = spec.ep_name or os.path.basename(reg)
        try:
            ort.register_execution_provider_library(name, reg)
        except Exception as e:   # already registered, or a broken library
            if "already" not in str(e).lower():
                raise ProviderError(f"could not register plugin EP library {reg}: {e}") from None
        _registered[reg] = name
    devs = list(ort.get_ep_devices())
    if spec.ep_name:
        return [d for d in devs if d.ep_name == spec.ep_name]
    known = {"CPUExecutionProvider"}
    return [d for d in devs if d.ep_name not in known]


def session_options(spec: EPSpec, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
    """SessionOptions for a run: CPU fallback disabled whenever the EP under test is not the CPU
    EP, per-node EP assignment recorded, graph optimisations as asked (default disabled)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = graph_optimization_level(ort, optimization)
    so.log_severity_level = 3
    ort.set_default_logger_severity(3)
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    if side_is_ep and not spec.is_cpu:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    if side_is_ep and spec.key == "dml":
        so.enable_mem_pattern = False
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if side_is_ep and spec.kind == "plugin":
        so.add_provider_for_devices(plugin_devices(spec), {k: str(v) for k, v in spec.options.items()})
    return so


def make_session(model: bytes, spec: EPSpec, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
    import onnxruntime as ort
    so = session_options(spec, side_is_ep=side_is_ep, optimization=optimization, threads=threads)
    if not side_is_ep or spec.is_cpu:
        return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    if spec.kind == "plugin":
        return ort.InferenceSession(model, so)
    return ort.InferenceSession(model, so, providers=[(spec.ep_name, {k: str(v) for k, v in spec.options.items()})])


# ----------------------------------------------------------------------------------------------
# Environment
# ----------------------------------------------------------------------------------------------

def environment(spec: EPSpec) -> dict:
    """What a result must record to be reproducible: machine, ORT package and version, EP, device, driver."""
    pkg, ver = ort_package()
    env = {
        "os": f"{platform.system()} {platform.release()}",
        "platform": platform.platform(),
        "machine": platform.node(),
        "cpu": cpu_name(),
        "python": platform.python_version(),
        "ort_package": pkg,
        "ort_version": ver,
        "ep": spec.ep_name,
        "ep_key": spec.key,
        "ep_package": spec.package,
        "ep_options": spec.options,
        "versions": versions(),
        "device": cpu_name(),
        "driver": "",
    }
    if spec.key in ("cuda", "tensorrt"):
        env.update(nvidia())
    if spec.kind == "plugin":
        try:
            devs = plugin_devices(spec)
            if devs:
                d = devs[0]
                env["device"] = (f"{d.device.vendor or 'vendor 0x%04x' % d.device.vendor_id} "
                                 f"device 0x{d.device.device_id:04x} ({str(d.device.type).split('.')[-1]})")
                meta = dict(d.device.metadata)
                meta.update({f"ep.{k}": v for k, v in dict(d.ep_metadata).items()})
                env["device_metadata"] = meta
                env["driver"] = meta.get("Driver") or meta.get("driver") or meta.get("ep.version", "")
                env.update({k: v for k, v in nvidia().items() if k == "driver" and not env["driver"]})
                desc = meta.get("Description") or meta.get("description") or meta.get("DeviceName")
                if desc:
                    env["device"] = desc
        except Exception as e:  # device listing is informative only
            env["device_error"] = str(e)
    if spec.key == "openvino":
        env["device"] = f"OpenVINO {spec.options.get('device_type', 'CPU')} ({cpu_name()})"
        try:
            env["versions"]["openvino"] = md.version("openvino")
        except md.PackageNotFoundError:
            pass
    return env


def list_available() -> list[dict]:
    """Every EP that can run here, for `onnx-dml-bench eps`."""
    rows = []
    pkg, ver = ort_package()
    try:
        import onnxruntime as ort
        builtin = ort.get_available_providers()
    except ImportError:
        builtin = []
    for ep in builtin:
        if ep == "AzureExecutionProvider":     # remote inference, not a kernel EP
            continue
        key = BY_EP_NAME.get(ep.lower(), ep)
        if key == "dml" and sys.platform != "win32":
            continue
        try:
            spec = resolve(key)
            env = environment(spec)
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except ProviderError as e:
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": "", "driver": "", "status": str(e)})
    for key in ("webgpu",):
        try:
            spec = resolve(key)
            env = environment(spec)
            rows.append({"ep": spec.ep_name, "key": key, "package": spec.package, "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except ProviderError as e:
            if "not available" not in str(e):
                rows.append({"ep": KNOWN[key][0], "key": key, "package": KNOWN[key][1], "device": "", "driver": "",
                             "status": str(e)})
    if sys.platform != "win32":
        try:
            info = find_stack()
        except Exception:
            info = None
        if info is not None:
            v = getattr(info, "versions", {}) or {}
            rows.append({"ep": "DmlExecutionProvider", "key": "dml",
                         "package": f"onnxruntime-node {v.get('onnxruntime-node', '?')} (win32) under Wine {v.get('wine', '?')}",
                         "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                         "status": "ok"})
            rows.append({"ep": KNOWN["dml-direct"][0], "key": "dml-direct", "package": resolve("dml-direct").package,
                         "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                         "status": "ok"})
    return rows
