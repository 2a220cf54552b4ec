"""The DirectML cache folder: ``stack.json`` names the stack's files relative to the cache, so a
copied or moved cache runs its own files (a manifest of an older bench, with absolute paths, is
read for where the cache is now and rewritten); ``eps`` checks the files the manifest names and
the binaries' sizes it recorded, and says what is missing; a ``--ep dml`` run leaves no temporary
folder behind.

The first tests build a stack's files by hand (no Wine needed); the last ones copy the installed
stack (skipped without it) and run its canary from the copy."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.dml import select
from onnx_dml_bench.dml.wine import stackinfo as S
from onnx_dml_bench.dml.wine.stackinfo import StackInfo

LIB = "mesa/root/usr/lib/x86_64-linux-gnu"


#: a prefix's user.reg as setup leaves it: Windows 10 set (the last step of the prefix)
WIN10_USER_REG = b'WINE REGISTRY Version 2\n\n[Software\\\\Wine] 1795905015\n#time=1dd7f880a58ba88\n"Version"="win10"\n\n'


def _fake_cache(cache: Path, *, icd_absolute: bool = False) -> StackInfo:
    """The files of a default stack, with made-up contents; programs are this Python."""
    ort = cache / "app/node_modules/onnxruntime-node"
    files = {
        "node/bin/node.exe": b"MZ node",
        f"{ort.relative_to(cache)}/bin/napi-v6/win32/x64/onnxruntime.dll": b"MZ ort" * 10,
        f"{ort.relative_to(cache)}/bin/napi-v6/win32/x64/DirectML.dll": b"MZ dml" * 100,
        f"{ort.relative_to(cache)}/bin/napi-v6/win32/x64/onnxruntime_binding.node": b"MZ binding",
        f"{ort.relative_to(cache)}/dist/index.js": b"//",
        f"{ort.relative_to(cache)}/package.json": b"{}",
        "app/node_modules/onnxruntime-common/package.json": b"{}",
        "prefix/system.reg": b"WINE REGISTRY", "prefix/user.reg": WIN10_USER_REG,
        "prefix/drive_c/windows/system32/kernel32.dll": b"MZ",
        f"{LIB}/libvulkan_lvp.so": b"\x7fELF lvp" * 50,
        f"{LIB}/libLLVM.so.19.1": b"\x7fELF llvm" * 500,
    }
    for rel, data in files.items():
        p = cache / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    lib = cache / LIB / "libvulkan_lvp.so"
    icd = cache / "mesa/lvp_icd.json"
    icd.write_text(json.dumps({"ICD": {"api_version": "1.4.305",
                                       "library_path": str(lib) if icd_absolute else os.path.relpath(lib, icd.parent)},
                               "file_format_version": "1.0.0"}))
    return StackInfo(cache_dir=cache, node_exe=cache / "node/bin/node.exe", ort_dir=ort,
                     ort_common_dir=cache / "app/node_modules/onnxruntime-common", prefix=cache / "prefix",
                     mesa_root=cache / "mesa/root", icd_json=icd, lib_dirs=[cache / LIB], wine=sys.executable,
                     wineserver=sys.executable, xvfb=sys.executable,
                     versions={"DirectML.dll": "1.15.4.0", "onnxruntime-node": S.ORT_NODE_VERSION})


def _old_manifest(info: StackInfo) -> None:
    """stack.json as benches before relative paths wrote it: absolute paths only."""
    info.manifest_path.write_text(json.dumps({"schema": S.MANIFEST_SCHEMA, "created": "2026-11-25T14:28:27+0000",
                                              "pins": S.pins(), "stack": info.to_json()}, indent=2))


def _paths(info: StackInfo) -> list[Path]:
    return [info.cache_dir, info.node_exe, info.ort_dir, info.ort_common_dir, info.prefix, info.mesa_root,
            info.icd_json, *info.lib_dirs]


def _all_inside(info: StackInfo, folder: Path) -> bool:
    return all(Path(p).resolve().is_relative_to(folder.resolve()) for p in _paths(info))


def test_manifest_names_the_cache_files_relative_to_it(tmp_path):
    a = tmp_path / "a"
    S.write_manifest(_fake_cache(a))
    m = json.loads((a / "stack.json").read_text())
    rel = m["stack_relative"]
    assert rel["cache_dir"] == "." and rel["node_exe"] == "node/bin/node.exe" and rel["lib_dirs"] == [LIB]
    assert "wine" not in rel and m["stack"]["wine"] == sys.executable      # outside the cache: as it is
    assert m["stack"]["node_exe"] == str(a / "node/bin/node.exe")   # what older benches read
    assert m["files"][f"{LIB}/libLLVM.so.19.1"] == len(b"\x7fELF llvm" * 500)


@pytest.mark.parametrize("old", [False, True], ids=["manifest", "manifest of an older bench"])
def test_a_copied_cache_uses_its_own_files(tmp_path, old):
    a, b = tmp_path / "a", tmp_path / "b"
    info = _fake_cache(a, icd_absolute=old)
    if old:
        _old_manifest(info)
    else:
        S.write_manifest(info)
    shutil.copytree(a, b, symlinks=True)
    got = select.find_stack(b)
    assert got is not None and _all_inside(got, b), got
    shutil.rmtree(a)                                        # the original is gone: the copy still works
    got = select.find_stack(b)
    assert got is not None and _all_inside(got, b), select.stack_problem(b)
    assert S.icd_library(got.icd_json).resolve() == (b / LIB / "libvulkan_lvp.so").resolve()
    m = json.loads((b / "stack.json").read_text())
    assert m["stack"]["cache_dir"] == str(b)                # rewritten for where it is now
    assert m["stack_relative"]["cache_dir"] == "."
    c = tmp_path / "c"                                      # and moved once more
    b.rename(c)
    got = select.find_stack(c)
    assert got is not None and _all_inside(got, c)


def test_a_read_only_copy_is_read_for_where_it_is(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _old_manifest(_fake_cache(a))
    shutil.copytree(a, b)
    before = (b / "stack.json").read_text()
    os.chmod(b, 0o555)
    try:
        got = select.find_stack(b)
        assert got is not None and _all_inside(got, b)
    finally:
        os.chmod(b, 0o755)
    if os.geteuid() != 0:                                   # root writes anyway
        assert (b / "stack.json").read_text() == before


def test_variant_builds_of_a_copied_cache(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    info = _fake_cache(a)
    S.write_manifest(info)
    v = a / "ort-node/1.20.1"
    (v / "node_modules/onnxruntime-node").mkdir(parents=True)
    (v / "info.json").write_text(json.dumps({
        "kind": "onnxruntime-node", "version": "1.20.1",
        "ort_dir": str(v / "node_modules/onnxruntime-node"), "ort_common_dir": str(v / "node_modules/onnxruntime-common"),
        "versions": {"onnxruntime-node": "1.20.1", "DirectML.dll": "1.15.2.0"}}))
    shutil.copytree(a, b)
    shutil.rmtree(a)
    got = select.select_stack({"onnxruntime_node": "1.20.1"}, b)
    assert Path(got.ort_dir) == b / "ort-node/1.20.1/node_modules/onnxruntime-node"


@pytest.mark.parametrize("damage", ["truncated DirectML.dll", "deleted Mesa library", "deleted prefix registry",
                                    "deleted ICD library", "deleted node.exe"])
def test_a_damaged_stack_says_what_is_missing(tmp_path, monkeypatch, capsys, damage):
    cache = tmp_path / "cache"
    info = _fake_cache(cache)
    S.write_manifest(info)
    assert select.find_stack(cache) is not None and select.stack_problem(cache) == ""
    culprit = {
        "truncated DirectML.dll": info.ort_bin_dir / "DirectML.dll",
        "deleted Mesa library": cache / LIB / "libLLVM.so.19.1",
        "deleted prefix registry": cache / "prefix/user.reg",
        "deleted ICD library": cache / LIB / "libvulkan_lvp.so",
        "deleted node.exe": info.node_exe,
    }[damage]
    if damage.startswith("truncated"):
        culprit.write_bytes(b"MZ")
    else:
        culprit.unlink()
    assert select.find_stack(cache) is None
    problem = select.stack_problem(cache)
    assert "damaged" in problem and str(culprit) in problem and str(cache) in problem
    # eps: not "ok", and the line names the file
    monkeypatch.setenv("ONNX_DML_BENCH_CACHE", str(cache))
    capsys.readouterr()
    assert main(["eps"]) == 0
    out = capsys.readouterr().out
    dml = [x for x in out.splitlines() if x.startswith("dml:") or x.startswith("dml-direct:")]
    assert dml and all(": ok" not in x for x in dml), out
    assert all(str(culprit) in x for x in dml), dml


def _eps_lines(cache: Path, monkeypatch, capsys) -> list[str]:
    monkeypatch.setenv("ONNX_DML_BENCH_CACHE", str(cache))
    capsys.readouterr()
    assert main(["eps"]) == 0
    out = capsys.readouterr().out
    return [x for x in out.splitlines() if x.startswith("dml:") or x.startswith("dml-direct:")]


def test_a_same_size_damaged_directml_dll_is_found_by_its_hash(tmp_path, monkeypatch, capsys):
    """A DirectML.dll of the installed size whose bytes changed: the manifest's SHA-256 finds it;
    `eps` is not ok and names the file. A manifest of an older bench (no hashes) is read as before."""
    cache = tmp_path / "cache"
    info = _fake_cache(cache)
    S.write_manifest(info)
    dll = info.ort_bin_dir / "DirectML.dll"
    assert select.stack_problem(cache) == "" and "hashes" in json.loads(info.manifest_path.read_text())
    data = bytearray(dll.read_bytes())
    data[len(data) // 2] ^= 0xFF
    dll.write_bytes(bytes(data))
    problem = select.stack_problem(cache)
    assert select.find_stack(cache) is None and str(dll) in problem and "SHA-256" in problem, problem
    dml = _eps_lines(cache, monkeypatch, capsys)
    assert dml and all(": ok" not in x and str(dll) in x for x in dml), dml
    # `setup dml` run again fetches that package anew (never records the damaged DLL as installed)
    from onnx_dml_bench.dml.install import default
    said = []
    backup = tmp_path / "backup"
    shutil.copytree(cache, backup)
    default._drop_damaged(cache, said.append)
    assert not info.ort_dir.exists() and (cache / "app/node_modules/onnxruntime-common").exists()
    assert said and str(dll) in said[0], said
    shutil.rmtree(cache)
    shutil.copytree(backup, cache)
    manifest = json.loads(info.manifest_path.read_text())
    del manifest["hashes"]
    info.manifest_path.write_text(json.dumps(manifest))
    assert select.stack_problem(cache) == ""


def test_the_canary_names_the_dll_it_ran(tmp_path, monkeypatch):
    """A canary that fails ("Invalid parameter", as a damaged DirectML.dll gives): the error names the
    DirectML.dll (and onnxruntime.dll) the stack ran."""
    from onnx_dml_bench.errors import ProviderError
    from onnx_dml_bench.lanes import dml_wine
    info = _fake_cache(tmp_path / "cache")

    class Failed:
        ok, message = False, "session: Invalid parameter"
    monkeypatch.setattr(dml_wine, "_stack", lambda lane: info)
    monkeypatch.setattr(dml_wine.client, "canary", lambda stack: Failed())
    monkeypatch.setattr(dml_wine, "worker_stack", lambda stack: stack)
    monkeypatch.setattr(dml_wine, "release_worker_stack", lambda stack: None)
    with pytest.raises(ProviderError) as e:
        # the lane as ``resolve`` makes it, without its check of this machine's installed stack
        dml_wine.preflight(dml_wine.WineDmlLane("dml", dml_wine.EP_NAME, dml_wine.PACKAGE, {}, ""))
    assert "Invalid parameter" in str(e.value) and str(info.ort_bin_dir / "DirectML.dll") in str(e.value)


def test_a_prefix_step_cut_short_leaves_no_stack_that_reads_as_ready(tmp_path, monkeypatch, capsys):
    """Ctrl-C during `setup dml`'s Wine-prefix step (wineboot done, Windows 10 not yet set): the
    manifest of an earlier setup is gone and the prefix is not taken for a finished one; `eps` is not
    ok. A prefix whose registry does not say Windows 10 is a damaged stack whatever its manifest says.
    (A cache of its own: ONNX_DML_BENCH_CACHE is a temporary folder, never the shared one.)"""
    from onnx_dml_bench.dml.install import default
    cache = tmp_path / "cache"
    info = _fake_cache(cache)
    S.write_manifest(info)
    assert select.stack_problem(cache) == ""
    (cache / "prefix" / "user.reg").write_bytes(b"WINE REGISTRY Version 2\n")    # wineboot's, before Version

    def cut_short(prefix, wine, wineserver, **kw):
        (prefix / "system.reg").write_bytes(b"WINE REGISTRY")
        (prefix / "user.reg").write_bytes(b"WINE REGISTRY Version 2\n")
        raise KeyboardInterrupt
    monkeypatch.setattr(default, "make_win10_prefix", cut_short)
    with pytest.raises(KeyboardInterrupt):
        default._step_prefix(cache, "wine", "wineserver", lambda m: None)
    assert select.find_stack(cache) is None and "not installed" in select.stack_problem(cache)
    dml = _eps_lines(cache, monkeypatch, capsys)
    assert dml and all(": ok" not in x for x in dml), dml
    # the same prefix under a manifest (one restored, or of an older setup): damaged, the prefix named
    S.write_manifest(info)
    problem = select.stack_problem(cache)
    assert "not set to Windows 10" in problem and str(cache / "prefix") in problem, problem
    dml = _eps_lines(cache, monkeypatch, capsys)
    assert dml and all(": ok" not in x and "Windows 10" in x for x in dml), dml


def test_the_cache_variable_is_documented():
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/directml-on-linux.md").read_text()
    assert "ONNX_DML_BENCH_CACHE" in page.split("## The cache folder", 1)[1].split("\n## ", 1)[0]
    assert "ONNX_DML_BENCH_CACHE" in (root / "README.md").read_text()
    out = subprocess.run([sys.executable, "-m", "onnx_dml_bench", "setup", "dml", "--help"], capture_output=True,
                         text=True).stdout
    assert "ONNX_DML_BENCH_CACHE" in out


# ----------------------------------------------------------------------------------------------
# With the installed stack
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def installed():
    info = select.find_stack()
    if info is None:
        pytest.skip(f"DirectML stack not installed ({select.stack_problem()}); `onnx-dml-bench setup dml`")
    return info


def _copy_cache(src: Path, dst: Path) -> None:
    """A copy of a DirectML cache: the Wine prefix copied (Wine writes into it), the rest hard-linked
    where the file system allows (read-only files: Node.js, the ONNX Runtime and Mesa builds);
    per-worker prefixes and the shader cache are left out (made again)."""
    dst.mkdir()
    for item in src.iterdir():
        if item.name in ("prefixes", "mesa-shader-cache") or item.name.startswith("."):
            continue
        target = dst / item.name
        if item.is_dir() and item.name != "prefix":
            r = subprocess.run(["cp", "-al", str(item), str(target)], capture_output=True)
            if r.returncode == 0:
                continue
            shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", "--reflink=auto", str(item), str(target)], check=True)


@pytest.mark.xdist_group("wine")
def test_canary_runs_from_a_copied_cache(installed, tmp_path, monkeypatch):
    from onnx_dml_bench.lanes.catalog import resolve
    from onnx_dml_bench.lanes.dml_wine import preflight
    src = Path(installed.cache_dir)
    a, b = tmp_path / "copy", tmp_path / "moved"
    _copy_cache(src, a)
    a.rename(b)                                             # copied, then moved: its manifest names neither
    found = select.find_stack(b)
    assert found is not None, select.stack_problem(b)
    assert _all_inside(found, b), found
    assert S.icd_library(found.icd_json).resolve().is_relative_to(b.resolve())
    monkeypatch.setenv("ONNX_DML_BENCH_CACHE", str(b))
    env = preflight(resolve("dml"))                         # the known-answer canary, from the copy
    assert env["versions"]["DirectML.dll"] == installed.versions["DirectML.dll"]
    assert (b / "prefixes").is_dir() and not (src / "stack.json").read_text().count(str(b))


@pytest.mark.xdist_group("wine")
def test_a_dml_run_leaves_no_temporary_folder(installed, tmp_path, monkeypatch):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)           # this process too
    code = main(["run", "--ep", "dml", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke",
                 "--no-cpu", "--jobs", "1", "--out", str(tmp_path / "out"), "--no-report"])
    assert code in (0, 1)
    assert not list(tmpdir.glob("odb-dml-*")), list(tmpdir.iterdir())


@pytest.mark.xdist_group("wine")
def test_the_backend_keeps_no_folder_between_calls(installed, tmp_path, monkeypatch):
    """Models and inputs travel in each call's own folder (``client.run_jobs`` removes it): the
    backend makes none of its own, during its calls or after them."""
    import tempfile
    from onnx_dml_bench.dml.wine.session import release_worker_stack
    from onnx_dml_bench.lanes.catalog import resolve
    from onnx_dml_bench.lanes.base import RunConfig
    from onnx_dml_bench.lanes.dml_wine import WineDmlBackend
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    b = WineDmlBackend(resolve("dml"), RunConfig())
    try:
        assert not list(tmp_path.glob("odb-dml-*"))
        from onnx_dml_bench.dml.node.client import canary_model_bytes
        import numpy as np
        (out,) = b.run_many([(canary_model_bytes(), {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4),
                                                      "x2": np.arange(8, dtype=np.float32).reshape(1, 4, 1, 2)},
                              ["y", "z"], "cpu")])
        assert out.ok, out.error
        assert not [p for p in tmp_path.glob("odb-dml-*") if "serve" not in p.name]
        b.close()
        b.close()                                           # twice is fine
    finally:
        release_worker_stack(b.stack)
