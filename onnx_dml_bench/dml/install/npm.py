"""npm packages of a stack: ``npm pack`` (the tarball checked against its pinned integrity),
unpacked without running install scripts; only the win32/x64 binaries of onnxruntime-node kept."""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tarfile
import time
from pathlib import Path

from ..wine.proc import is_root, one_line, run
from ..wine.stackinfo import NODE_WIN_PACKAGE, NODE_WIN_VERSION, ORT_NODE_VERSION, LogFn, StackError, ort_bin_dir

# npm "dist.integrity" of the pinned tarballs (verified after download).
NPM_INTEGRITY = {
    f"{NODE_WIN_PACKAGE}@{NODE_WIN_VERSION}":
        "sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==",
    f"onnxruntime-node@{ORT_NODE_VERSION}":
        "sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw==",
    f"onnxruntime-common@{ORT_NODE_VERSION}":
        "sha512-7fdVWjAID1dVhH/G8qK3APARunV4VkBFoCQAP7qp4Wkab0mrorvmc+sqiT+mKXOzDqdjN5j+/Z9nb4gzNPWcyA==",
}


def sri_ok(path: Path, integrity: str) -> bool:
    algo, _, b64 = integrity.partition("-")
    h = hashlib.new(algo)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode() == b64


def safe_extract_npm(tgz: Path, dest: Path) -> None:
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


def npm_pack(spec: str, dest_dir: Path, log: LogFn) -> Path:
    npm = shutil.which("npm")
    if not npm:
        if is_root() and shutil.which("apt-get"):
            log("npm not found; apt-get install npm")
            run(["apt-get", "install", "-y", "--no-install-recommends", "npm"],
                env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=1800)
            npm = shutil.which("npm")
        if not npm:
            raise StackError("npm is needed to download the Windows Node.js and onnxruntime-node "
                             "packages:\n    sudo apt-get install -y npm")
    dest_dir.mkdir(parents=True, exist_ok=True)
    r = run([npm, "pack", "--silent", "--pack-destination", str(dest_dir), spec],
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
    if integ and not sri_ok(path, integ):
        path.unlink(missing_ok=True)
        raise StackError(f"integrity check failed for {spec}")
    return path


def fetch_npm(name: str, version: str, dest: Path, downloads: Path, log: LogFn, label: str) -> None:
    """npm pack NAME@VERSION and unpack it into dest (its install script is not run)."""
    t0 = time.monotonic()
    spec = f"{name}@{version}"
    log(f"npm pack {spec}")
    tgz = npm_pack(spec, downloads, log)
    safe_extract_npm(tgz, dest)
    tgz.unlink(missing_ok=True)
    log(f"{label} unpacked in {time.monotonic() - t0:.1f} s")


def fetch_npm_version(name: str, version: str, dest: Path, downloads: Path, log: LogFn) -> None:
    try:
        fetch_npm(name, version, dest, downloads, log, f"{name}@{version}")
    except StackError as e:
        text = str(e)
        npm = shutil.which("npm")
        if npm:   # npm pack --silent says nothing: ask the registry whether the version exists
            r = run([npm, "view", f"{name}@{version}", "version"], timeout=120, check=False)
            text += "\n" + r.stdout
            if r.returncode == 0 and not r.stdout.strip():
                text += "\nE404"
        if any(k in text for k in ("E404", "ETARGET", "No matching version", "404 Not Found")):
            raise StackError(f"{name} {version} is not on the npm registry "
                             f"(`npm view {name} versions` lists the published ones)") from None
        raise StackError(f"npm pack {name}@{version} failed: {one_line(text)}") from None


def prune_ort_binaries(ort_dir: Path) -> None:
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

