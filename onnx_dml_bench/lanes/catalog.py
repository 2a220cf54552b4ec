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
from .base import Entry, Lane, PreflightError, ort_package

#: the EPs the bench knows by a key, in its order (``--ep``, ``eps``, the main job's lanes): made here,
#: or declared by the lane's own module (``tensorrt.ENTRY``) and listed here; :func:`register` adds one
ENTRIES: dict[str, Entry] = {e.key: e for e in (
    Entry("cpu", "CPUExecutionProvider", "onnxruntime (any flavour)", "pip install -c constraints.txt -e '.[cpu]'",
          ort.CpuLane),
    Entry("cuda", "CUDAExecutionProvider", "onnxruntime-gpu (pip install 'onnx-dml-bench[cuda]')",
          "pip install -c constraints.txt -e '.[cuda]' (and an NVIDIA GPU with its driver)", ort.NvidiaLane),
    Entry("openvino", "OpenVINOExecutionProvider", "onnxruntime-openvino (pip install 'onnx-dml-bench[openvino]')",
          "pip install -c constraints.txt -e '.[openvino]'", ort.OpenVinoLane),
    Entry("dml", dml_wine.EP_NAME, "onnxruntime-directml on Windows (pip install 'onnx-dml-bench[directml]'); "
                                   "on Linux: `onnx-dml-bench setup dml` (DirectML under Wine)",
          ("pip install -c constraints.txt -e '.[directml]'" if sys.platform == "win32" else "onnx-dml-bench setup dml"),
          ort.DmlLane if sys.platform == "win32" else dml_wine.WineDmlLane, setup="dml"),
    Entry("webgpu", "WebGpuExecutionProvider", "onnxruntime-ep-webgpu (pip install 'onnx-dml-bench[webgpu]')",
          "pip install -c constraints.txt -e '.[webgpu]'", ort.WebGpuLane),
    tensorrt.ENTRY,
    Entry(dml_direct.EP_KEY, dml_direct.EP_NAME,
          "DirectML.dll run by the bench's own harness: under Wine on Linux (the `onnx-dml-bench setup dml` stack), "
          "natively on Windows (onnxruntime-directml's DLL)",
          dml_direct.NATIVE_HOWTO if sys.platform == "win32" else "onnx-dml-bench setup dml", dml_direct.DirectLane,
          setup="dml"),
)}
#: how to run a plugin EP library
PLUGIN_HOWTO = "run --ep plugin:PATH[:EpName] with the EP's shared library"


def register(entry: Entry) -> Entry:
    """Add an EP lane to the catalog (after the others): ``--ep``, ``eps``, the main job and the help
    of every ``--ep`` option then know it. A key or provider name the catalog has already is refused."""
    if entry.key in ENTRIES or entry_of(entry.ep_name) is not None or entry_of(entry.key) is not None:
        raise ValueError(f"the lane catalog knows {entry.key!r} / {entry.ep_name} already")
    ENTRIES[entry.key] = entry
    return entry


def entry_of(name: str) -> Entry | None:
    """The catalog's entry of an EP key or provider name (any case); None for a name it does not know."""
    raw = (name or "").strip().lower()
    for e in ENTRIES.values():
        if raw in (e.key.lower(), e.ep_name.lower()):
            return e
    return None


def provider_name(name: str) -> str | None:
    """The provider name of one of the bench's EP keys (``cuda`` -> CUDAExecutionProvider, any case),
    or of a provider name it knows; None for a name it does not know."""
    e = entry_of(name)
    return e.ep_name if e is not None else None


def keys() -> tuple[str, ...]:
    """The EP keys the bench knows (``--ep``), in its order."""
    return tuple(ENTRIES)


def runs_descriptors(name: str) -> bool:
    """Whether the lane of an EP key or provider name runs DirectML descriptors rather than ONNX
    graphs (the direct lane): what outputs of that name answer."""
    e = entry_of(name)
    return e is not None and e.lane.runs_descriptors


def shipped(key: str):
    """The expectations shipped for the lane of ``key`` (``base.Shipped``), or None."""
    e = ENTRIES.get(key)
    return e.lane.shipped if e is not None else None


def set_up_by(target: str) -> tuple[str, ...]:
    """The keys of the lanes that ``onnx-dml-bench setup TARGET`` installs (``dml``: dml, dml-direct)."""
    return tuple(k for k, e in ENTRIES.items() if e.setup == target)


def ep_help() -> str:
    """What ``--ep`` takes, in the words of every option that takes it: the catalog's keys."""
    return (f"{', '.join(ENTRIES)} (`onnx-dml-bench eps` says which run here), a provider name of the installed "
            "onnxruntime, or plugin:PATH[:EpName]")


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
    """Turn a user's EP name (a key of the catalog, a full provider name, or plugin:PATH[:EpName])
    into its lane, checking it can run here (ProviderError otherwise)."""
    options = dict(options or {})
    raw = name.strip()
    if raw.startswith("plugin:"):
        rest = raw[len("plugin:"):]
        m = re.match(r"^(.*?)(?::([A-Za-z0-9_]+ExecutionProvider))?$", rest)
        return ort.resolve_plugin(m.group(1), m.group(2), options, PLUGIN_HOWTO)
    entry = entry_of(raw)
    if entry is None:
        lane = ort.resolve_other(raw, options)       # any other EP built into the package
        if lane is None:
            raise ProviderError(f"unknown EP {name!r}; known: {', '.join(ENTRIES)} or plugin:PATH[:EpName]")
        return lane
    return entry.lane.resolve(entry, options)


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
        entry = entry_of(ep)
        key = entry.key if entry is not None else ep
        if entry is not None and not entry.lane.in_process:    # run its own way here (the DML EP under Wine)
            continue
        try:
            lane = resolve(key)
            env = lane.environment()
            lane.preflight()          # a session really opens on it (an EP listed may lack its libraries)
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except (ProviderError, PreflightError) as e:
            rows.append({"ep": ep, "key": key, "package": f"{pkg} {ver}", "device": "", "driver": "", "status": str(e)})
    for key in [k for k, e in ENTRIES.items() if issubclass(e.lane, ort.PluginLane)]:    # from their own packages
        try:
            lane = resolve(key)
            env = lane.environment()
            lane.preflight()
            rows.append({"ep": lane.ep_name, "key": key, "package": lane.package, "device": env.get("device", ""),
                         "driver": env.get("driver", ""), "status": "ok"})
        except (ProviderError, PreflightError) as e:
            if "not available" not in str(e):
                rows.append({"ep": ENTRIES[key].ep_name, "key": key, "package": ENTRIES[key].package, "device": "",
                             "driver": "",
                             "status": str(e)})
    if sys.platform == "win32":           # the direct lane natively: onnxruntime-directml's DLL, the harness
        try:
            lane = resolve(dml_direct.EP_KEY)
            rows.append({"ep": lane.ep_name, "key": dml_direct.EP_KEY, "package": lane.package, "device": "",
                         "driver": "", "status": "ok"})
        except ProviderError as e:
            rows.append({"ep": dml_direct.EP_NAME, "key": dml_direct.EP_KEY, "package": "", "device": "",
                         "driver": "", "status": str(e)})
    v = dml_wine.stack_versions()
    if v is not None:
        rows.append({"ep": dml_wine.EP_NAME, "key": "dml",
                     "package": f"onnxruntime-node {v.get('onnxruntime-node', '?')} (win32) under Wine {v.get('wine', '?')}",
                     "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                     "status": "ok"})
        rows.append({"ep": dml_direct.EP_NAME, "key": dml_direct.EP_KEY, "package": resolve(dml_direct.EP_KEY).package,
                     "device": f"lavapipe (Mesa {v.get('mesa', '?')}) software Vulkan", "driver": v.get("mesa", ""),
                     "status": "ok"})
    return rows


def ep_rows() -> list[dict]:
    """Every EP the bench knows, with status 'ok' or why it is unavailable, and how to make it so."""
    found = {r["key"]: r for r in list_available()}
    rows = []
    for key, entry in ENTRIES.items():
        ep_name = entry.ep_name
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
        row["how"] = "" if row["status"] == "ok" else entry.howto
        rows.append(row)
    for key, row in found.items():          # other EPs built into the installed package
        rows.append({**row, "how": "" if row["status"] == "ok" else ""})
    rows.append({"ep": "plugin EP", "key": "plugin:PATH[:EpName]", "package": "", "device": "",
                 "status": "needs the path of an EP library", "how": PLUGIN_HOWTO})
    return rows

