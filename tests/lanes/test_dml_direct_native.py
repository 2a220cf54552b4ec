"""The direct lane on Windows itself (dml/direct/native.py): no Wine, the DirectML.dll of
onnxruntime-directml, the harness built by MinGW-w64's gcc there or carried from a Linux build.

What can be shown on Linux: the bench imports where fcntl does not exist (Windows), the native
stack finds its DLL and harness, the harness is started with plain paths and no Wine, and a
missing piece is one line naming what to install. The run itself is the CI workflow's Windows job.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from onnx_dml_bench.dml.direct import build, native, runner
from onnx_dml_bench.dml.wine.stackinfo import StackError

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_imports_without_fcntl():
    """Windows has no fcntl (and has msvcrt, which the folder lock takes there; a stand-in here):
    the lane catalog (which imports both DirectML lanes and dml/), the command line and the runner
    must import there."""
    code = ("import sys, types, subprocess, multiprocessing, shutil, tempfile  # these look for msvcrt to tell Windows\n"
            "sys.modules['fcntl'] = None; sys.modules['msvcrt'] = types.ModuleType('msvcrt')\n"
            "import onnx_dml_bench.lanes.catalog, onnx_dml_bench.cli.run, onnx_dml_bench.cli.setup, onnx_dml_bench.execute\n"
            "import onnx_dml_bench.dml.direct.native, onnx_dml_bench.dml.wine.proc as p\n"
            "assert p.fcntl is None\n"
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_native_stack_takes_onnxruntime_directmls_dll(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "onnxruntime"
    (pkg / "capi").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "capi" / "DirectML.dll").write_bytes(b"MZ not really a DLL")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv(native.DLL_ENV, raising=False)
    monkeypatch.delenv(native.HARNESS_ENV, raising=False)
    monkeypatch.setenv(native.CACHE_ENV, str(tmp_path / "cache"))
    for mod in [m for m in sys.modules if m == "onnxruntime" or m.startswith("onnxruntime.")]:
        monkeypatch.delitem(sys.modules, mod)
    st = native.native_stack()
    assert st.directml_dll == pkg / "capi" / "DirectML.dll" and st.native and st.stack_name == "native"
    assert st.cache_dir == tmp_path / "cache" and st.harness is None
    # a harness carried from elsewhere is used as it is, and identified by its bytes
    exe = tmp_path / "harness.exe"
    exe.write_bytes(b"MZ harness")
    monkeypatch.setenv(native.HARNESS_ENV, str(exe))
    st = native.native_stack()
    assert build.ensure_built(st) == exe and build.build_id(st).startswith("carried-")
    monkeypatch.setenv(native.DLL_ENV, str(tmp_path / "nope.dll"))
    with pytest.raises(StackError, match="onnxruntime-directml"):
        native.native_stack()


def test_native_harness_starts_without_wine(tmp_path, monkeypatch):
    """The command line is the harness itself with plain paths; no Xvfb, no wineserver, no Wine."""
    seen = {}

    class FakePopen:
        def __init__(self, cmd, **kw):
            seen["cmd"], seen["kw"] = cmd, kw
            raise OSError("not started in this test")

    monkeypatch.setattr(runner.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(runner.session, "start_xvfb", lambda *a: pytest.fail("Xvfb started for a native stack"))
    st = native.NativeStack(tmp_path, tmp_path / "DirectML.dll", tmp_path / "h.exe")
    with pytest.raises(runner.DirectError, match="cannot start"):
        runner._Harness(st, tmp_path / "h.exe", tmp_path, 5)
    assert seen["cmd"] == [str(tmp_path / "h.exe"), "--dll", str(tmp_path / "DirectML.dll"), "--workdir", str(tmp_path)]
    assert "env" not in seen["kw"] and "start_new_session" not in seen["kw"]


def test_a_windows_machine_without_gcc_is_told_what_to_do(monkeypatch):
    monkeypatch.setattr(build.os, "name", "nt")
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    with pytest.raises(StackError, match="MinGW-w64's gcc on PATH.*ONNX_DML_BENCH_HARNESS"):
        build.ensure_compiler(log=lambda m: None)
    monkeypatch.setattr(build.shutil, "which", lambda name: "C:\\mingw64\\bin\\gcc.exe" if name == "gcc" else None)
    assert build.ensure_compiler(log=lambda m: None) == "C:\\mingw64\\bin\\gcc.exe"
