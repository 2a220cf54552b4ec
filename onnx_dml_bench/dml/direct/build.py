"""Build the direct-lane harness (harness.c) into a Windows executable with MinGW.

The executable goes into the stack's cache folder (``<cache>/direct/harness-<hash>.exe``), never
into the source tree. ``<hash>`` covers the sources, the compiler command and the compiler's
version, so any change rebuilds. On Linux the compiler is MinGW-w64's cross compiler; missing, it
is installed with apt-get when running as root on Debian, otherwise a
:class:`~onnx_dml_bench.dml.wine.stackinfo.StackError` says what to install. On Windows it is
MinGW-w64's own ``gcc`` (e.g. a GitHub Windows runner's ``C:\\mingw64\\bin``); a stack may also carry
a harness built elsewhere (``stack.harness``: the native lane's ``ONNX_DML_BENCH_HARNESS``).
"""
from __future__ import annotations

import hashlib
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


def source_hash(cc: str) -> str:
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes() + b"\0")
    h.update(" ".join([Path(cc).name, *CFLAGS, *LDFLAGS, _compiler_version(cc)]).encode())
    return h.hexdigest()[:16]


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


def ensure_built(stack: StackInfo, log: LogFn = print) -> Path:
    """Path of the harness executable for the current sources in ``stack``'s cache, compiling it
    when needed; a stack that carries a harness built elsewhere (``stack.harness``) gives that one."""
    carried = getattr(stack, "harness", None)
    if carried:
        if not Path(carried).is_file():
            raise StackError(f"the direct-lane harness {carried} does not exist")
        return Path(carried)
    cc = ensure_compiler(log)
    out_dir = Path(stack.cache_dir) / "direct"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"harness-{source_hash(cc)}.exe"
    if out.exists():
        return out
    with file_lock(out_dir / ".build.lock", log):
        if not out.exists():
            _compile(cc, out, log)
    return out


def build_id(stack) -> str:
    """What identifies the harness a stack runs: its build hash, or the hash of a carried executable."""
    carried = getattr(stack, "harness", None)
    if carried:
        return "carried-" + hashlib.sha256(Path(carried).read_bytes()).hexdigest()[:16]
    return source_hash(ensure_compiler(log=lambda m: None))
