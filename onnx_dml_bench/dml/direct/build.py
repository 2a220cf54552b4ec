"""Build the direct-lane harness (harness.c) into a Windows executable with MinGW.

The executable goes into the stack's cache folder (``<cache>/direct/harness-<hash>.exe``), never
into the source tree. ``<hash>`` covers the sources, the compiler command and the compiler's
version, so any change rebuilds. On Linux the compiler is MinGW-w64's cross compiler; missing, it
is installed with apt-get when running as root on Debian, otherwise a
:class:`~onnx_dml_bench.dml.wine.stackinfo.StackError` says what to install. On Windows it is
MinGW-w64's own ``gcc`` (e.g. a GitHub Windows runner's ``C:\\mingw64\\bin``); a stack may also carry
a harness built elsewhere (``stack.harness``: the native lane's ``ONNX_DML_BENCH_HARNESS``).

Beside each executable, ``harness-<hash>.json`` records the hash of the sources alone: a machine
without the compiler (a GPU host that received the cache in a bundle) uses a prebuilt executable of
the very same sources, and only that one.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from ..wine.proc import file_lock, is_root
from ..wine.stackinfo import LogFn, StackError, StackInfo

SOURCE_DIR = Path(__file__).resolve().parent
SOURCES = ("harness.c", "dml_abi.h")
COMPILERS = ("x86_64-w64-mingw32-gcc-posix", "x86_64-w64-mingw32-gcc", "x86_64-w64-mingw32-gcc-win32")
#: on Windows, MinGW-w64's own compiler builds for the machine itself
NATIVE_COMPILERS = ("x86_64-w64-mingw32-gcc", "gcc")
APT_PACKAGES = ["gcc-mingw-w64-x86-64-posix"]
CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
LDFLAGS = ["-static", "-ld3d12", "-ldxgi"]


def find_compiler() -> str | None:
    for name in (NATIVE_COMPILERS if os.name == "nt" else COMPILERS):
        path = shutil.which(name)
        if path:
            return path
    return None


def _apt_install(log: LogFn) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *APT_PACKAGES]
    log("apt-get install " + " ".join(APT_PACKAGES))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:   # package lists may be missing or stale
        log("apt-get update")
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=900)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise StackError(f"apt-get install {' '.join(APT_PACKAGES)} failed:\n{(r.stdout + r.stderr)[-3000:]}")


def ensure_compiler(log: LogFn = print) -> str:
    """The MinGW-w64 C compiler, installed with apt-get when missing (root on Debian only)."""
    cc = find_compiler()
    if cc:
        return cc
    if os.name == "nt":
        raise StackError("the direct DirectML lane needs MinGW-w64's gcc on PATH to build its harness (a GitHub "
                         "Windows runner has it in C:\\mingw64\\bin), or ONNX_DML_BENCH_HARNESS set to a harness "
                         "built elsewhere (`onnx-dml-bench setup dml` builds one on Linux into <cache>/direct/)")
    if not (is_root() and shutil.which("apt-get")):
        raise StackError("the direct DirectML lane needs the MinGW-w64 cross compiler "
                         "(x86_64-w64-mingw32-gcc); install it with:\n"
                         "    sudo apt-get install -y --no-install-recommends " + " ".join(APT_PACKAGES))
    _apt_install(log)
    cc = find_compiler()
    if not cc:
        raise StackError("apt-get installed " + " ".join(APT_PACKAGES) + " but no x86_64-w64-mingw32-gcc is on PATH")
    return cc


def _compiler_version(cc: str) -> str:
    r = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    return (r.stdout.splitlines() or [""])[0]


def _sources(h) -> None:
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes() + b"\0")


def sources_hash() -> str:
    """The hash of the harness's sources alone (what a prebuilt executable must have been built from)."""
    h = hashlib.sha256()
    _sources(h)
    return h.hexdigest()[:16]


def source_hash(cc: str) -> str:
    h = hashlib.sha256()
    _sources(h)
    h.update(" ".join([Path(cc).name, *CFLAGS, *LDFLAGS, _compiler_version(cc)]).encode())
    return h.hexdigest()[:16]


def prebuilt(out_dir: Path) -> Path | None:
    """An executable in ``out_dir`` built from the current sources (its ``.json`` says so), or None."""
    want = sources_hash()
    for meta in sorted(Path(out_dir).glob("harness-*.json")):
        try:
            info = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        exe = meta.with_suffix(".exe")
        if info.get("sources") == want and exe.is_file():
            return exe
    return None


def build_id(stack: StackInfo) -> str:
    """The build hash of the harness a run uses: the hash of a carried executable (``carried-<hash>``),
    the current sources with this machine's compiler, or, without one, the prebuilt executable's
    (``prebuilt-<hash>`` so the record says so)."""
    carried = getattr(stack, "harness", None)
    if carried:
        return "carried-" + hashlib.sha256(Path(carried).read_bytes()).hexdigest()[:16]
    cc = find_compiler()
    if cc:
        return source_hash(cc)
    exe = prebuilt(Path(stack.cache_dir) / "direct")
    if exe is None:
        ensure_compiler(log=lambda m: None)     # raises, naming what to install
    return "prebuilt-" + exe.stem.removeprefix("harness-")


def _compile(cc: str, out: Path, log: LogFn) -> None:
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    cmd = [cc, *CFLAGS, "-I", str(SOURCE_DIR), str(SOURCE_DIR / "harness.c"), "-o", str(tmp), *LDFLAGS]
    log("compiling " + out.name)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        raise StackError(f"compiling the direct-lane harness failed (exit {r.returncode}):\n"
                         f"{' '.join(cmd)}\n{(r.stdout + r.stderr)[-4000:]}")
    tmp.replace(out)
    _write_meta(cc, out)


def _write_meta(cc: str, exe: Path) -> None:
    """``harness-<hash>.json`` beside the executable: the sources it was built from, and how."""
    meta = {"sources": sources_hash(), "compiler": _compiler_version(cc), "command": [Path(cc).name, *CFLAGS, *LDFLAGS]}
    exe.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")


def ensure_built(stack: StackInfo, log: LogFn = print) -> Path:
    """Path of the harness executable for the current sources in ``stack``'s cache, compiling it when
    needed; without the compiler, a prebuilt executable of the same sources (:func:`prebuilt`); a
    stack that carries a harness built elsewhere (``stack.harness``) gives that one."""
    carried = getattr(stack, "harness", None)
    if carried:
        if not Path(carried).is_file():
            raise StackError(f"the direct-lane harness {carried} does not exist")
        return Path(carried)
    out_dir = Path(stack.cache_dir) / "direct"
    if find_compiler() is None:
        exe = prebuilt(out_dir)
        if exe is not None:
            return exe
    cc = ensure_compiler(log)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"harness-{source_hash(cc)}.exe"
    if out.exists():
        if not out.with_suffix(".json").exists():       # built before the record existed
            _write_meta(cc, out)
        return out
    with file_lock(out_dir / ".build.lock", log):
        if not out.exists():
            _compile(cc, out, log)
    return out
