"""The direct lane on Windows itself: the same harness (harness.c, built by MinGW-w64's gcc on the
machine, or carried built from elsewhere) run natively on the machine's Direct3D 12 adapter with
the DirectML.dll of ``onnxruntime-directml``; no Wine, no Xvfb.

``native_stack()`` finds what it needs:

* DirectML.dll: ``ONNX_DML_BENCH_DIRECTML_DLL``, else the one the installed ``onnxruntime``
  package (onnxruntime-directml) carries in ``onnxruntime/capi/``;
* the harness: ``ONNX_DML_BENCH_HARNESS`` (an executable built elsewhere, e.g. by ``setup dml`` on
  Linux), else built from the sources into the cache by MinGW-w64's ``gcc`` found on PATH;
* the cache folder: ``ONNX_DML_BENCH_CACHE``, else ``%LOCALAPPDATA%\\onnx-dml-bench``.

A :class:`NativeStack` stands where the Wine lanes pass a ``StackInfo``: ``DirectRunner`` starts
the harness itself when ``stack.native`` is set.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..wine.pe import pe_version
from ..wine.stackinfo import StackError

HARNESS_ENV = "ONNX_DML_BENCH_HARNESS"
DLL_ENV = "ONNX_DML_BENCH_DIRECTML_DLL"
CACHE_ENV = "ONNX_DML_BENCH_CACHE"
NAME = "native"


@dataclass
class NativeStack:
    """What the direct lane runs on natively: a DirectML.dll, a cache folder for harness builds,
    and optionally a harness built elsewhere."""
    cache_dir: Path
    dml_dll: Path
    harness: Path | None = None
    versions: dict[str, str] = field(default_factory=dict)
    native: ClassVar[bool] = True
    stack_name: ClassVar[str] = NAME

    @property
    def directml_dll(self) -> Path:
        return Path(self.dml_dll)


def onnxruntime_dir() -> Path | None:
    """The installed ``onnxruntime`` package's folder (without importing it), or None."""
    try:
        spec = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def find_directml_dll() -> Path | None:
    """The DirectML.dll the native lane loads: ``ONNX_DML_BENCH_DIRECTML_DLL``, else the one of the
    installed onnxruntime-directml package."""
    given = os.environ.get(DLL_ENV)
    if given:
        return Path(given)
    ort = onnxruntime_dir()
    if ort is not None:
        for cand in (ort / "capi" / "DirectML.dll", ort / "DirectML.dll"):
            if cand.is_file():
                return cand
    return None


def cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("LOCALAPPDATA")
    return Path(base) / "onnx-dml-bench" if base else Path.home() / ".cache" / "onnx-dml-bench" / NAME


def native_stack() -> NativeStack:
    """The native stack of this machine; StackError says what is missing."""
    dll = find_directml_dll()
    if dll is None or not dll.is_file():
        raise StackError(f"no DirectML.dll for the direct lane: install onnxruntime-directml "
                         f"(pip install -c constraints.txt -e '.[directml]'), or set {DLL_ENV}"
                         + (f" (not a file: {dll})" if dll is not None else ""))
    harness = os.environ.get(HARNESS_ENV)
    versions: dict[str, str] = {}
    try:
        versions["DirectML.dll"] = pe_version(dll).get("file_version") or "?"
    except (OSError, ValueError):
        versions["DirectML.dll"] = "?"
    return NativeStack(cache_dir(), dll, Path(harness) if harness else None, versions)
