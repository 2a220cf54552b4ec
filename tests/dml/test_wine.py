"""The Wine layer of the DirectML stack without Wine: the Windows 10 prefix every installer makes, and
the stack.json contract between the installers and the readers."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from onnx_dml_bench.dml.wine import prefix as P
from onnx_dml_bench.dml.wine import stackinfo
from onnx_dml_bench.dml.wine.stackinfo import StackError, StackInfo

WIN10_REG = '[Software\\\\Wine] 1700000000\n"Version"="win10"\n'


class FakeWine:
    """``run`` for make_win10_prefix: records the commands; wineboot writes system.reg (exit ``boot_rc``),
    ``reg add ... Version`` writes user.reg (saying ``version``)."""

    def __init__(self, prefix: Path, boot_rc: int = 0, boot_writes: bool = True, version: str = "win10"):
        self.prefix, self.boot_rc, self.boot_writes, self.version = prefix, boot_rc, boot_writes, version
        self.calls: list[tuple[list[str], dict, float, bool]] = []

    def __call__(self, cmd, *, env, timeout, check=True):
        self.calls.append((list(cmd), dict(env), timeout, check))
        rc = 0
        if cmd[1] == "wineboot":
            if self.boot_writes:
                self.prefix.mkdir(parents=True, exist_ok=True)
                (self.prefix / "system.reg").write_text("x")
            rc = self.boot_rc
        elif cmd[1:3] == ["reg", "add"] and "Version" in cmd:
            (self.prefix / "user.reg").write_text(WIN10_REG.replace("win10", self.version))
        if check and rc:
            raise StackError(f"command failed (exit {rc})")
        return subprocess.CompletedProcess(cmd, rc, "wineboot said something", "")


def test_win10_prefix_made_once_with_one_recipe(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPLAY", ":99")
    pfx = tmp_path / "c" / "prefix"
    wine = FakeWine(pfx)
    assert not P.prefix_ready(pfx)
    P.make_win10_prefix(pfx, "/usr/lib/wine/wine64", "true", run=wine)
    assert P.prefix_ready(pfx)
    cmds = [c[0][1:] for c in wine.calls]
    assert cmds[0] == ["wineboot", "-i"]
    assert cmds[1][:2] == ["reg", "add"] and "win10" in cmds[1]
    assert cmds[2][:2] == ["reg", "add"] and "ShowCrashDialog" in cmds[2]
    env = wine.calls[0][1]
    assert env["WINEPREFIX"] == str(pfx) and env["WINEARCH"] == "win64" and "DISPLAY" not in env
    assert env["WINELOADER"] == "/usr/lib/wine/wine64" and env["WINEDLLOVERRIDES"] == stackinfo.WINEDLLOVERRIDES
    assert [c[2] for c in wine.calls] == [600, 120, 120]


def test_win10_prefix_untrusted_wineboot_and_messages(tmp_path):
    pfx = tmp_path / "prefix"
    # without a 32-bit Wine wineboot fails after writing the prefix: the prefix decides
    P.make_win10_prefix(pfx, "wine", "true", run=FakeWine(pfx, boot_rc=1), trust_wineboot=False)
    assert P.prefix_ready(pfx)
    other = tmp_path / "other"
    with pytest.raises(StackError, match=r"wineboot did not create .*other \(exit 1\)"):
        P.make_win10_prefix(other, "wine", "true", run=FakeWine(other, boot_rc=1, boot_writes=False),
                            trust_wineboot=False)
    third = tmp_path / "third"
    with pytest.raises(StackError, match=r"^Wine prefix .*third was not set to Windows 10$"):
        P.make_win10_prefix(third, "wine", "true", run=FakeWine(third, version="win7"))
    with pytest.raises(StackError, match=r"^step 'prefix': no$"):
        P.make_win10_prefix(third, "wine", "true", run=FakeWine(third, version="win7"), not_win10="step 'prefix': no")


def test_zlib_goes_to_system32_first(tmp_path):
    pfx = tmp_path / "prefix"
    zlib = tmp_path / "zlib1.dll"
    zlib.write_bytes(b"MZ")
    P.make_win10_prefix(pfx, "wine", "true", run=FakeWine(pfx), zlib=zlib)
    assert (pfx / "drive_c/windows/system32/zlib1.dll").read_bytes() == b"MZ"


def _complete_stack(cache: Path) -> StackInfo:
    for f in ("node/bin/node.exe", "ort/bin/napi-v6/win32/x64/onnxruntime.dll", "ort/bin/napi-v6/win32/x64/DirectML.dll",
              "ort/bin/napi-v6/win32/x64/onnxruntime_binding.node", "ort/dist/index.js", "ort/package.json",
              "common/package.json", "prefix/system.reg", "prefix/user.reg", "prefix/drive_c/windows/system32/x.dll"):
        (cache / f).parent.mkdir(parents=True, exist_ok=True)
        (cache / f).write_text(WIN10_REG if f == "prefix/user.reg" else "x")
    (cache / "icd.json").write_text(json.dumps({"ICD": {"library_path": "libvulkan_lvp.so"}}))
    return StackInfo(cache_dir=cache, node_exe=cache / "node/bin/node.exe", ort_dir=cache / "ort",
                     ort_common_dir=cache / "common", prefix=cache / "prefix", mesa_root=cache, icd_json=cache / "icd.json",
                     lib_dirs=[], wine="true", wineserver="true", xvfb="/bin/true", versions={"wine": "wine-8.0"})


def test_manifest_written_and_read_back(tmp_path):
    info = _complete_stack(tmp_path)
    stackinfo.write_manifest(info)
    data = json.loads(info.manifest_path.read_text())
    assert list(data) == ["schema", "created", "pins", "stack", "stack_relative", "files", "hashes"]
    assert stackinfo.read_manifest(tmp_path) == info
    stackinfo.write_manifest(info, name=stackinfo.SM6)
    assert list(json.loads(info.manifest_path.read_text())) == ["schema", "created", "pins", "name", "stack",
                                                                "stack_relative", "files", "hashes"]
    stackinfo.record_version(info, "shader_model", "5.1")
    assert stackinfo.read_manifest(tmp_path).versions == {"wine": "wine-8.0", "shader_model": "5.1"}
    data = json.loads(info.manifest_path.read_text())
    data["pins"]["onnxruntime-node"] = "0.0.1"                 # another checkout's pins: not this code's stack
    info.manifest_path.write_text(json.dumps(data))
    assert stackinfo.read_manifest(tmp_path) is None
    stackinfo.write_manifest(info)
    (tmp_path / "prefix/system.reg").unlink()                   # incomplete
    assert stackinfo.read_manifest(tmp_path) is None
    assert str(tmp_path / "prefix/system.reg") in stackinfo.missing_files(info)
