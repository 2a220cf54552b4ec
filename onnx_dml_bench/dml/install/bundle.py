"""A stack from a bundle of Debian packages unpacked privately (``scripts/gpu-dml/``): a GPU machine
without Wine (an offline image) runs the default stack's Wine, Xvfb and Mesa from there.
``install_bundle()`` makes the bundle self-contained, creates the Wine prefix and writes
``stack.json``; the Vulkan ICD is chosen at run time (``select.apply_gpu``)."""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..wine.icd import NVIDIA_ICDS, detect_icd
from ..wine.prefix import make_win10_prefix, prefix_ready
from ..wine.stackinfo import VKD3D_CONFIG, StackError, StackInfo, missing_files, write_manifest
from ..wine.versions import WINED3D_DLL, stack_versions


def bundle_env(root: Path) -> dict[str, str]:
    """Environment every Wine process of a bundle root needs besides LD_LIBRARY_PATH."""
    root = Path(root)
    return {"WINESERVER": str(root / "usr/lib/wine/wineserver64"),
            "LIBGL_DRIVERS_PATH": str(root / "usr/lib/x86_64-linux-gnu/dri"),
            "__GLX_VENDOR_LIBRARY_NAME": "mesa"}


def bundle_lib_dirs(root: Path) -> list[Path]:
    root = Path(root)
    return [d for d in (root / "usr/lib/x86_64-linux-gnu", root / "lib/x86_64-linux-gnu") if d.is_dir()]


def xvfb_wrapper(root: Path) -> str:
    """A shell script that starts the bundle's Xvfb with its libraries, Mesa's GLX driver and xkb data."""
    root = Path(root)
    libs = ":".join(str(d) for d in bundle_lib_dirs(root))
    return ("#!/bin/sh\n"
            f"export LD_LIBRARY_PATH={libs}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
            f"export LIBGL_DRIVERS_PATH={root}/usr/lib/x86_64-linux-gnu/dri\n"
            f"exec {root}/usr/bin/Xvfb -xkbdir {root}/usr/share/X11/xkb \"$@\"\n")


def fix_bundle_root(root: Path) -> list[str]:
    """Make an unpacked bundle self-contained: Debian's wineserver wrapper execs an absolute path, and
    Xvfb needs the bundle's libraries, Mesa's GLX driver and xkb data (a wrapper script)."""
    root = Path(root)
    done = []
    wrapper = root / "usr/lib/wine/wineserver"
    if wrapper.is_file():
        text = wrapper.read_text()
        new = re.sub(r"=/usr/lib/wine/wineserver(32|64)", lambda m: f"={root}/usr/lib/wine/wineserver{m.group(1)}", text)
        if new != text:
            wrapper.write_text(new)
            done.append(f"{wrapper}: execs {root}/usr/lib/wine/wineserver64")
    xv = root / "odb-bin/Xvfb"
    xv.parent.mkdir(parents=True, exist_ok=True)
    xv.write_text(xvfb_wrapper(root))
    xv.chmod(0o755)
    done.append(f"{xv}: Xvfb with the bundle's libraries")
    return done



def install_bundle(root: Path, cache: Path, log=print) -> StackInfo:
    """Write ``cache/stack.json`` for a bundle unpacked at ``root`` (node/ and app/ already in ``cache``),
    creating the Wine prefix; the Vulkan ICD is chosen at run time (``select.apply_gpu``)."""
    root, cache = Path(root).resolve(), Path(cache).resolve()
    for line in fix_bundle_root(root):
        log(line)
    wine = root / "usr/lib/wine/wine64"
    wineserver = root / "usr/lib/wine/wineserver64"
    libs = bundle_lib_dirs(root)
    extra = bundle_env(root)
    icd = detect_icd() or next((Path(c) for c in NVIDIA_ICDS if Path(c).is_file()), None)
    if icd is None:
        raise StackError("no hardware Vulkan ICD json found (set ONNX_DML_BENCH_VULKAN_ICD)")
    info = StackInfo(cache_dir=cache, node_exe=cache / "node/bin/node.exe",
                     ort_dir=cache / "app/node_modules/onnxruntime-node",
                     ort_common_dir=cache / "app/node_modules/onnxruntime-common",
                     prefix=cache / "prefix", mesa_root=root, icd_json=icd, lib_dirs=libs,
                     wine=str(wine), wineserver=str(wineserver), xvfb=str(root / "odb-bin/Xvfb"),
                     extra_env=extra)
    saved = dict(os.environ)
    os.environ.update(extra)
    os.environ["LD_LIBRARY_PATH"] = ":".join(map(str, libs)) + (":" + saved["LD_LIBRARY_PATH"] if saved.get("LD_LIBRARY_PATH") else "")
    try:
        if not prefix_ready(info.prefix):
            log(f"creating Wine prefix {info.prefix}")
            make_win10_prefix(info.prefix, info.wine, info.wineserver, trust_wineboot=False,
                              zlib=root / "usr/x86_64-w64-mingw32/lib/zlib1.dll")
        v = {"stack_source": f"bundle of Debian packages unpacked at {root}",
             **stack_versions(info, root / WINED3D_DLL)}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    v["vkd3d_config"] = VKD3D_CONFIG
    info.versions = v
    missing = missing_files(info)
    if missing:
        raise StackError("bundle stack incomplete: " + ", ".join(missing))
    write_manifest(info)
    log(f"stack written: {info.manifest_path}")
    return info
