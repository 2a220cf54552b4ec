"""Which Vulkan ICD DirectML runs on: the stack's lavapipe, or a machine's hardware driver.

The ICD: ``--ep-option vulkan_icd=PATH`` (or ``ONNX_DML_BENCH_VULKAN_ICD``), else NVIDIA's ICD json
when the machine has an NVIDIA device (``/dev/nvidiactl`` or ``nvidia-smi``); ``vulkan_icd=lavapipe``
keeps the software device. ``select.apply_gpu`` puts the choice into a StackInfo.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Mapping

from .stackinfo import StackError

ICD_OPTION = "vulkan_icd"
ICD_ENV = "ONNX_DML_BENCH_VULKAN_ICD"
SOFTWARE = ("lavapipe", "software", "lvp")
NVIDIA_ICDS = (
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.x86_64.json",
)


def nvidia_present(root: str = "/") -> bool:
    return Path(root, "dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None


def detect_icd(options: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
               *, candidates=NVIDIA_ICDS, has_gpu=None) -> Path | None:
    """The hardware Vulkan ICD json to run DirectML on, or None for the stack's lavapipe."""
    environ = os.environ if environ is None else environ
    opts = {k.replace("-", "_"): str(v).strip() for k, v in (options or {}).items()}
    want = opts.get(ICD_OPTION) or environ.get(ICD_ENV, "").strip()
    if want:
        if want.lower() in SOFTWARE:
            return None
        p = Path(want).expanduser()
        if not p.is_file():
            raise StackError(f"{ICD_OPTION}={want}: no such Vulkan ICD json")
        return p
    if not (nvidia_present() if has_gpu is None else has_gpu):
        return None
    for c in candidates:
        if Path(c).is_file():
            return Path(c)
    return None


def icd_vendor(icd: Path) -> str:
    name = Path(icd).name.lower()
    try:
        lib = json.loads(Path(icd).read_text())["ICD"]["library_path"].lower()
    except (OSError, ValueError, KeyError, TypeError):
        lib = ""
    if "nvidia" in name or "nvidia" in lib:
        return "nvidia"
    if "lvp" in name or "lvp" in lib:
        return ""
    for v in ("radeon", "amd", "intel"):
        if v in name or v in lib:
            return v
    return "gpu"


def driver_lib_dirs(icd: Path) -> list[Path]:
    """Library folders of a driver kept outside the loader's paths (e.g. /usr/local/nvidia/lib64 beside
    /usr/local/nvidia/share/vulkan/icd.d): the ICD's library is a bare name found through them."""
    base = Path(icd).parent.parent.parent.parent           # <base>/share/vulkan/icd.d/x.json
    if Path(icd).parent.parent.parent.name != "share" or str(base) in ("/", "/usr"):
        return []
    return [d for d in (base / "lib64", base / "lib") if d.is_dir()]
