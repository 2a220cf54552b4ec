"""The catalog of the EPs the bench knows, and :func:`resolve`, which turns a user's EP name into
its lane (``base.Lane``).

This is the one module of ``lanes/`` that knows every lane: it imports the DirectML lanes (and with
them ``dml/``), so code that needs only the lane and backend protocols imports ``lanes.base``.
"""
from __future__ import annotations

import re
import sys

from ..errors import ProviderError
from . import dml_direct, dml_wine, ort, tensorrt
from .base import PreflightError
from .base import Lane, ort_package

#: the EPs the bench knows: key -> (provider name, what provides it)
KNOWN = {
    "cpu": ("CPUExecutionProvider", "onnxruntime (any flavour)"),
    "cuda": ("CUDAExecutionProvider", "onnxruntime-gpu (pip install 'onnx-dml-bench[cuda]')"),
    "openvino": ("OpenVINOExecutionProvider", "onnxruntime-openvino (pip install 'onnx-dml-bench[openvino]')"),
    "dml": ("DmlExecutionProvider", "onnxruntime-directml on Windows (pip install 'onnx-dml-bench[directml]'); "
                                    "on Linux: `onnx-dml-bench setup dml` (DirectML under Wine)"),
    "webgpu": ("WebGpuExecutionProvider", "onnxruntime-ep-webgpu (pip install 'onnx-dml-bench[webgpu]')"),
    tensorrt.KEY: (tensorrt.EP_NAME, tensorrt.PACKAGE),
    "dml-direct": ("DirectML", "DirectML.dll run by the bench's own harness: under Wine on Linux (the `onnx-dml-bench "
                               "setup dml` stack), natively on Windows (onnxruntime-directml's DLL)"),
}
BY_EP_NAME = {v[0].lower(): k for k, v in KNOWN.items()}

#: the command that makes an EP available here, by key
EP_HOWTO = {
    "cpu": "pip install -c constraints.txt -e '.[cpu]'",
    "cuda": "pip install -c constraints.txt -e '.[cuda]' (and an NVIDIA GPU with its driver)",
    "openvino": "pip install -c constraints.txt -e '.[openvino]'",
    "dml": ("pip install -c constraints.txt -e '.[directml]'" if sys.platform == "win32"
            else "onnx-dml-bench setup dml"),
    "dml-direct": (dml_direct.NATIVE_HOWTO if sys.platform == "win32" else "onnx-dml-bench setup dml"),
    "webgpu": "pip install -c constraints.txt -e '.[webgpu]'",
    tensorrt.KEY: tensorrt.HOWTO,
    "plugin": "run --ep plugin:PATH[:EpName] with the EP's shared library",
}


def provider_name(name: str) -> str | None:
    """The provider name of one of the bench's EP keys (``cuda`` -> CUDAExecutionProvider, any case),
    or of a provider name it knows; None for a name it does not know."""
    raw = (name or "").strip().lower()
    key = BY_EP_NAME.get(raw, raw)
    return KNOWN[key][0] if key in KNOWN else None


def keys() -> tuple[str, ...]:
    """The EP keys the bench knows (``--ep``), in its order."""
    return tuple(KNOWN)


def parse_options(items: list[str] | None) -> dict:
    """EP options given as KEY=VALUE."""
    out = {}
    for it in items or []:
        if "=" not in it:
            raise ProviderError(f"EP option {it!r} must be KEY=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def resolve(name: str, options: dict | None = None) -> Lane:
    """Turn a user's EP name (cpu, cuda, dml, dml-direct, openvino, webgpu, a full provider name,
    or plugin:PATH[:EpName]) into its lane, checking it can run here (ProviderError otherwise)."""
    options = dict(options or {})
    raw = name.strip()
    if raw.startswith("plugin:"):
        rest = raw[len("plugin:"):]
        m = re.match(r"^(.*?)(?::([A-Za-z0-9_]+ExecutionProvider))?$", rest)
        return ort.resolve_plugin(m.group(1), m.group(2), options, EP_HOWTO["plugin"])
    key = raw.lower()
    key = BY_EP_NAME.get(key, key)
    if key not in KNOWN:
        lane = ort.resolve_other(raw, options)       # any other EP built into the package
        if lane is None:
            raise ProviderError(f"unknown EP {name!r}; known: {', '.join(KNOWN)} or plugin:PATH[:EpName]")
        return lane
    ep_name, package = KNOWN[key]
    howto = EP_HOWTO.get(key, "")
    if key == "webgpu":
        return ort.resolve_webgpu(package, options, howto)
    if key == "dml-direct":
        return dml_direct.resolve(options, howto)
    if key == tensorrt.KEY:
        return tensorrt.resolve(options, howto)
    if key == "dml" and sys.platform != "win32":
        return dml_wine.resolve(options, howto)
    return ort.resolve_builtin(key, ep_name, package, options, howto)


def list_available() -> list[dict]:
    """Every EP that can run here, for `onnx-dml-bench eps`."""
    rows = []
    pkg, ver = ort_package()
    try:
        import onnxruntime
        builtin = onnxruntime.get_available_providers()
    except ImportError:
        builtin = []
    for ep in builtin:
        if ep == "AzureExecutionProvider":     # remote inference, not a kernel EP
            continue
        key = BY_EP_NAME.get(ep.lower(), ep)
        if key == "dml" and sys.platform != "win32":
            continue
        try:
            lane = resolve(key)
            env = lane.environment()
            lane.preflight()          # a session really opens on it (an EP listed may lack its libraries)
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except (ProviderError, PreflightError) as e:
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": "", "driver": "", "status": str(e)})
    for key in ("webgpu",):
        try:
            lane = resolve(key)
            env = lane.environment()
            lane.preflight()
            rows.append({"ep": lane.ep_name, "key": key, "package": lane.package, "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except (ProviderError, PreflightError) as e:
            if "not available" not in str(e):
                rows.append({"ep": KNOWN[key][0], "key": key, "package": KNOWN[key][1], "device": "", "driver": "",
                             "status": str(e)})
    if sys.platform == "win32":           # the direct lane natively: onnxruntime-directml's DLL, the harness
        try:
            lane = resolve("dml-direct")
            rows.append({"ep": lane.ep_name, "key": "dml-direct", "package": lane.package, "device": "",
                         "driver": "", "status": "ok"})
        except ProviderError as e:
            rows.append({"ep": KNOWN["dml-direct"][0], "key": "dml-direct", "package": "", "device": "",
                         "driver": "", "status": str(e)})
    v = dml_wine.stack_versions()
    if v is not None:
        rows.append({"ep": "DmlExecutionProvider", "key": "dml",
                     "package": f"onnxruntime-node {v.get('onnxruntime-node', '?')} (win32) under Wine {v.get('wine', '?')}",
                     "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                     "status": "ok"})
        rows.append({"ep": KNOWN["dml-direct"][0], "key": "dml-direct", "package": resolve("dml-direct").package,
                     "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                     "status": "ok"})
    return rows


def ep_rows() -> list[dict]:
    """Every EP the bench knows, with status 'ok' or why it is unavailable, and how to make it so."""
    found = {r["key"]: r for r in list_available()}
    rows = []
    for key, (ep_name, _package) in KNOWN.items():
        row = found.pop(key, None)
        if row is None or row["status"] != "ok":
            try:
                lane = resolve(key)
                if row is not None:           # listed, but its check failed: say why
                    raise ProviderError(row["status"])
                row = {"ep": lane.ep_name, "key": key, "package": lane.package, "device": "", "status": "ok"}
            except ProviderError as e:
                row = {"ep": ep_name, "key": key, "package": "", "device": "", "status": f"unavailable: {e}"}
            except Exception as e:  # noqa: BLE001 - a broken install is a status, not a crash
                row = {"ep": ep_name, "key": key, "package": "", "device": "",
                       "status": f"unavailable: {type(e).__name__}: {e}"}
        row["how"] = "" if row["status"] == "ok" else EP_HOWTO.get(key, "")
        rows.append(row)
    for key, row in found.items():          # other EPs built into the installed package
        rows.append({**row, "how": "" if row["status"] == "ok" else ""})
    rows.append({"ep": "plugin EP", "key": "plugin:PATH[:EpName]", "package": "", "device": "",
                 "status": "needs the path of an EP library", "how": EP_HOWTO["plugin"]})
    return rows

