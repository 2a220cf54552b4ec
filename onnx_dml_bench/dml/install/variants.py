"""Other DirectML versions, side by side with the default stack's pinned onnxruntime-node:

* ``ort-node/<version>/node_modules/{onnxruntime-node,onnxruntime-common}`` (``setup dml --onnxruntime-node``),
* ``directml/<file version>/DirectML.dll`` (``setup dml --directml-dll``; the direct lane only),

each with an ``info.json`` written last (a folder without one is an unfinished install). The Wine
prefix, Node.js and Mesa are the default stack's; ``select.select_stack`` reads them back.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

from ..wine.proc import one_line, run
from ..wine.stackinfo import DML_VARIANTS, ORT_NODE_VARIANTS, VARIANT_INFO, LogFn, StackError, ort_bin_dir
from ..wine.versions import dll_versions, read_pkg_version
from .npm import fetch_npm_version, prune_ort_binaries

VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$")
_WHEEL_PYTHONS = ("3.11", "3.12", "3.10", "3.9", "3.8")


def check_sources(onnxruntime_node=(), directml_dll=()) -> None:
    """StackError for a version or a DirectML.dll source that cannot be installed (before anything is)."""
    for v in onnxruntime_node:
        if not VERSION_RE.match(v.strip()):
            raise StackError(f"onnxruntime-node version {v!r} is not a version number (e.g. 1.20.1)")
    for src in directml_dll:
        if not src.startswith("wheel:") and not Path(src).expanduser().is_file():
            raise StackError(f"--directml-dll {src}: no such file (a DirectML.dll, or wheel:onnxruntime-directml==X)")


def install_ort_node(cache: Path, version: str, log: LogFn = print) -> dict:
    """Install the win32 build of onnxruntime-node ``version`` beside the default; its info."""
    version = version.strip()
    if not VERSION_RE.match(version):
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
        if read_pkg_version(mods / name) != version:
            fetch_npm_version(name, version, mods / name, downloads, log)
    shutil.rmtree(downloads, ignore_errors=True)
    ort_dir = mods / "onnxruntime-node"
    prune_ort_binaries(ort_dir)
    bindir = ort_bin_dir(ort_dir)
    if not (bindir / "onnxruntime.dll").exists() or not (bindir / "onnxruntime_binding.node").exists():
        shutil.rmtree(base, ignore_errors=True)
        raise StackError(f"onnxruntime-node {version} has no win32/x64 build")
    if not (bindir / "DirectML.dll").exists():
        shutil.rmtree(base, ignore_errors=True)
        raise StackError(f"onnxruntime-node {version} carries no DirectML.dll (its win32 build has no DirectML EP; "
                         "onnxruntime-node ships DirectML from 1.18.0)")
    versions = {"onnxruntime-node": version, "onnxruntime-common": read_pkg_version(mods / "onnxruntime-common") or "?"}
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
    if spec.endswith(".whl") and Path(spec).exists():
        wheel = Path(spec)
    else:
        err = ""
        for py in _WHEEL_PYTHONS:
            r = run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                     "--platform", "win_amd64", "--python-version", py, "--disable-pip-version-check",
                     "-q", "-d", str(tmp), spec], timeout=900, check=False)
            wheels = sorted(tmp.glob("*.whl"))
            if r.returncode == 0 and wheels:
                break
            err = r.stdout
        wheels = sorted(tmp.glob("*.whl"))
        if not wheels:
            raise StackError(f"pip could not download a win_amd64 wheel of {spec}: {one_line(err)}")
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

