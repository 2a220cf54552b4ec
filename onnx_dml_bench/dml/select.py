"""Readers of the installed stacks: which stack and build a run uses.

``find_stack()`` loads the default stack (on a GPU host: on its Vulkan device), ``find_named()`` a
named one (wine10-sm6), ``select_stack(options)`` the stack and build that EP options choose
(``stack=``, ``onnxruntime_node=``, ``directml=``), ``apply_gpu()`` the Vulkan device.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from .install.sm6 import refresh_launchers
from .wine.icd import ICD_OPTION, SOFTWARE, detect_icd, driver_lib_dirs, icd_vendor
from .wine.proc import version_tuple
from .wine.root import with_runtime_binds
from .wine.stackinfo import (
    DEFAULT,
    DML_VARIANTS,
    GL_RENDERER_ENV,
    OPTION,
    ORT_NODE_VARIANTS,
    ORT_NODE_VERSION,
    SM6,
    STACKS,
    VARIANT_INFO,
    StackError,
    StackInfo,
    default_cache_dir,
    load_manifest,
    read_manifest,
    stack_dir,
)

#: EP options (``run --ep dml|dml-direct --ep-option KEY=VALUE``) that choose the build
SELECT_KEYS = ("onnxruntime_node", "directml", "stack")


# --------------------------------------------------------------------------
# The Vulkan device (a GPU host's hardware ICD, else the stack's lavapipe)
# --------------------------------------------------------------------------


def apply_gpu(stack: StackInfo, options: Mapping[str, str] | None = None,
              environ: Mapping[str, str] | None = None, **kw) -> StackInfo:
    """``stack`` on the hardware Vulkan device the options/environment/machine choose (unchanged
    on a machine without one). ``vulkan_icd=lavapipe`` turns a GPU stack back to lavapipe.

    On a GPU host the environment gets wined3d's GL renderer, and ``VK_ICD_FILENAMES`` names the
    hardware ICD alone, so vkd3d can only pick the GPU (``wine/icd.py`` detects it)."""
    icd = detect_icd(options, environ, **kw)
    if icd is None:
        if stack.gpu and options and str(dict(options).get(ICD_OPTION, "")).lower() in SOFTWARE:
            lvp = Path(stack.cache_dir) / "mesa" / "lvp_icd.json"
            if not lvp.is_file():
                raise StackError(f"{ICD_OPTION}=lavapipe: this stack has no lavapipe ({lvp})")
            env = {k: v for k, v in stack.extra_env.items() if k not in GL_RENDERER_ENV}
            return replace(stack, icd_json=lvp, gpu="", extra_env=env)
        return stack
    vendor = icd_vendor(icd) or "software"
    lib_dirs = list(stack.lib_dirs) + [d for d in driver_lib_dirs(icd) if d not in stack.lib_dirs]
    versions = dict(stack.versions)
    versions["vulkan_icd"] = str(icd)
    return replace(stack, icd_json=Path(icd), gpu=vendor, lib_dirs=lib_dirs,
                   extra_env={**stack.extra_env, **GL_RENDERER_ENV}, versions=versions)


# --------------------------------------------------------------------------
# Installed stacks
# --------------------------------------------------------------------------


def find_stack(cache_dir: Path | None = None) -> StackInfo | None:
    """Load an installed stack, or None when it is absent, incomplete or
    installed with other pinned versions than this code expects (``stack_problem`` says which)."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    info = read_manifest(cache.expanduser())
    if info is None:
        return None
    try:
        return apply_gpu(info)      # a GPU host's Vulkan device (NVIDIA ICD), else unchanged
    except StackError:
        return None


def stack_problem(cache_dir: Path | None = None) -> str:
    """Why ``find_stack`` finds no stack, in one line naming the cache (``ONNX_DML_BENCH_CACHE`` or
    the default folder) and what is missing or changed; "" when it finds one."""
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    info, why = load_manifest(cache)
    if info is None:
        return f"the DirectML stack in {cache}: {why}"
    try:
        apply_gpu(info)
    except StackError as e:
        return f"the DirectML stack in {cache}: {e}"
    return ""


def stack_name(options: Mapping[str, str] | None) -> str:
    """The stack an EP option set names (``stack=``); the default without one.
    Raises StackError for a name that is no stack."""
    opts = {k.replace("-", "_"): str(v).strip() for k, v in (options or {}).items()}
    name = opts.get(OPTION) or DEFAULT
    if name not in STACKS:
        raise StackError(f"stack={name}: no such DirectML stack (one of {', '.join(STACKS)})")
    return name


def find_named(cache: Path, name: str = SM6) -> StackInfo | None:
    """The installed named stack (``wine10-sm6``) of a DirectML cache, or None. Its launchers are brought
    up to this code's text when they differ (a stack set up by an older checkout), and its environment
    names the folders of this checkout that the root must see (``wine/root.runtime_binds``)."""
    info = find_stack(stack_dir(cache, name))
    if info is None:
        return None
    try:
        refresh_launchers(stack_dir(cache, name), Path(cache).resolve())
    except OSError:
        pass    # a read-only cache: the launchers as they are
    return with_runtime_binds(info, Path(cache).resolve())


# --------------------------------------------------------------------------
# Other DirectML versions, side by side (install/variants.py writes them)
# --------------------------------------------------------------------------


def list_variants(cache_dir: Path | None = None) -> list[dict]:
    """Every complete extra build in the cache (their info.json), onnxruntime-node ones first."""
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    out = []
    for sub in (ORT_NODE_VARIANTS, DML_VARIANTS):
        for p in sorted((cache / sub).glob(f"*/{VARIANT_INFO}"), key=lambda p: version_tuple(p.parent.name),
                        reverse=True):
            try:
                info = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(info, dict):
                for k in ("ort_dir", "ort_common_dir", "dll"):
                    if isinstance(info.get(k), str):
                        info[k] = str(_in_variant(info[k], p.parent))
                out.append(info)
    return out


def _in_variant(path: str, folder: Path) -> Path:
    """A path of a build's info.json for where the build's folder is now: relative ones against the
    folder; absolute ones inside ``<sub>/<version>/`` of another cache (a copied one) moved into it."""
    p = Path(path)
    if not p.is_absolute():
        return Path(os.path.abspath(folder / p))
    marker = f"/{folder.parent.name}/{folder.name}"
    s = str(p)
    i = s.rfind(marker + "/")
    if i >= 0:
        return Path(os.path.abspath(folder)) / s[i + len(marker) + 1:]
    return Path(os.path.abspath(folder)) if s.endswith(marker) else p


def _matches(file_version: str, want: str) -> bool:
    return file_version == want or file_version.startswith(want + ".")


def _without(versions: Mapping[str, str], *keys: str) -> dict[str, str]:
    return {k: v for k, v in versions.items() if not any(k == x or k.startswith(x + " (") for x in keys)}


def _from_variant(base: StackInfo, info: dict) -> StackInfo:
    if info["kind"] == "onnxruntime-node":
        versions = _without(base.versions, "onnxruntime-node", "onnxruntime-common", "onnxruntime.dll", "DirectML.dll")
        versions.update(info["versions"])
        return StackInfo(**{**base.__dict__, "ort_dir": Path(info["ort_dir"]),
                            "ort_common_dir": Path(info["ort_common_dir"]), "versions": versions,
                            "dml_dll": None, "variant": f"onnxruntime-node {info['version']}"})
    versions = _without(base.versions, "DirectML.dll")
    versions.update(info["versions"])
    versions["DirectML.dll source"] = info.get("source", "")
    return StackInfo(**{**base.__dict__, "versions": versions, "dml_dll": Path(info["dll"]),
                        "variant": f"DirectML.dll {info['version']}"})


def installed_versions(cache_dir: Path | None = None) -> str:
    """One line: the builds a cache holds, for messages."""
    base = find_stack(cache_dir)
    parts = []
    if base is not None:
        parts.append(f"onnxruntime-node {base.versions.get('onnxruntime-node', ORT_NODE_VERSION)} "
                     f"(DirectML.dll {base.versions.get('DirectML.dll', '?')}, default)")
    for info in list_variants(cache_dir):
        if info["kind"] == "onnxruntime-node":
            parts.append(f"onnxruntime-node {info['version']} (DirectML.dll {info['versions'].get('DirectML.dll')})")
        else:
            parts.append(f"DirectML.dll {info['version']} (direct lane only)")
    return "; ".join(parts) or "none"


def select_stack(options: Mapping[str, str] | None = None, cache_dir: Path | None = None, *,
                 need_ort: bool = False) -> StackInfo:
    """The stack of the build chosen by EP options ``onnxruntime_node=VERSION`` and/or
    ``directml=VERSION`` (a DirectML.dll file version or its prefix, e.g. 1.15.2); the default
    build without them. ``need_ort``: only onnxruntime-node builds (the ``dml`` lane).
    Raises StackError with one line when the build is not installed."""
    options = {k.replace("-", "_"): str(v).strip() for k, v in (options or {}).items()}
    name = stack_name(options)
    base = find_stack(cache_dir)
    if base is None:
        raise StackError(f"the DirectML stack is not installed or not usable ({stack_problem(cache_dir)}): "
                         "run `onnx-dml-bench setup dml`")
    wine = base
    if name != DEFAULT:    # another Wine stack: same onnxruntime-node builds and DirectML.dll files
        wine = find_named(base.cache_dir, name)
        if wine is None:
            raise StackError(f"the DirectML stack {name} is not installed: run `onnx-dml-bench setup dml "
                             f"--stack {name}`")
    ort, want = options.get("onnxruntime_node"), options.get("directml")
    if not ort and not want:
        return wine
    variants = list_variants(cache_dir)
    default_info = {"kind": "onnxruntime-node", "version": base.versions.get("onnxruntime-node", ORT_NODE_VERSION),
                    "versions": {k: v for k, v in base.versions.items()}}
    builds = [default_info] + [v for v in variants if v["kind"] == "onnxruntime-node"]
    if not need_ort:
        builds += [v for v in variants if v["kind"] == "DirectML.dll"]
    hint = f"installed: {installed_versions(cache_dir)}"
    if ort:
        found = [b for b in builds if b["kind"] == "onnxruntime-node" and b["version"] == ort]
        if not found:
            raise StackError(f"onnxruntime-node {ort} is not installed: run `onnx-dml-bench setup dml "
                             f"--onnxruntime-node {ort}` ({hint})")
        build = found[0]
        if want and not _matches(build["versions"].get("DirectML.dll", ""), want):
            raise StackError(f"onnxruntime-node {ort} carries DirectML.dll {build['versions'].get('DirectML.dll')}, "
                             f"not {want}")
    else:
        found = [b for b in builds if _matches(b["versions"].get("DirectML.dll", ""), want)]
        if not found:
            how = ("--onnxruntime-node VERSION" if need_ort
                   else "--onnxruntime-node VERSION or --directml-dll wheel:onnxruntime-directml==VERSION")
            only = "" if not need_ort else " (the dml lane needs an onnxruntime-node build that carries it)"
            raise StackError(f"DirectML.dll {want} is not installed{only}: install it with `onnx-dml-bench setup "
                             f"dml {how}` ({hint})")
        build = found[0]
    if build is default_info:
        return wine
    return _from_variant(wine, build)


