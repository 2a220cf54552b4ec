"""Several DirectML versions side by side (``setup dml --onnxruntime-node/--directml-dll``, ``run
--ep dml|dml-direct --ep-option onnxruntime_node=|directml=``) and a Wine prefix per worker.

The tests that install or run need the DirectML stack (``onnx-dml-bench setup dml``) and, for a
second onnxruntime-node build, the npm registry (a build already in the cache is reused).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onnx_dml_bench.dml import select
from onnx_dml_bench.dml.install import default, variants
from onnx_dml_bench.dml.wine import pe, session, stackinfo
from onnx_dml_bench.dml.wine.stackinfo import StackError, StackInfo

pytestmark = pytest.mark.xdist_group("wine")

SECOND = "1.20.1"            # onnxruntime-node build with DirectML.dll 1.15.2
SECOND_DLL = "1.15.2.0"
CLI = [sys.executable, "-m", "onnx_dml_bench.cli"]


def _fake_stack(cache: Path) -> StackInfo:
    return StackInfo(cache_dir=cache, node_exe=cache / "node.exe", ort_dir=cache / "app" / "onnxruntime-node",
                     ort_common_dir=cache / "app" / "onnxruntime-common", prefix=cache / "prefix",
                     mesa_root=cache / "mesa", icd_json=cache / "icd.json", lib_dirs=[], wine="wine",
                     wineserver="wineserver", xvfb=None,
                     versions={"onnxruntime-node": "1.30.0", "DirectML.dll": "1.15.4.0", "onnxruntime.dll": "1.30.0.909",
                               "DirectML.dll (string)": "1.15.4+x", "wine": "wine-8.0"})


def _variant(cache: Path, kind: str, version: str, dll: str) -> None:
    if kind == "onnxruntime-node":
        base = cache / stackinfo.ORT_NODE_VARIANTS / version
        info = {"kind": kind, "version": version, "ort_dir": str(base / "node_modules/onnxruntime-node"),
                "ort_common_dir": str(base / "node_modules/onnxruntime-common"),
                "versions": {"onnxruntime-node": version, "DirectML.dll": dll, "onnxruntime.dll": version + ".1"}}
    else:
        base = cache / stackinfo.DML_VARIANTS / dll
        info = {"kind": kind, "version": dll, "source": "wheel:x", "dll": str(base / "DirectML.dll"),
                "versions": {"DirectML.dll": dll}}
    base.mkdir(parents=True)
    (base / stackinfo.VARIANT_INFO).write_text(json.dumps(info))


@pytest.fixture()
def fake_cache(tmp_path, monkeypatch):
    fake = _fake_stack(tmp_path)
    monkeypatch.setattr(select, "find_stack", lambda cache_dir=None: fake)
    monkeypatch.setattr(select, "default_cache_dir", lambda: tmp_path)
    _variant(tmp_path, "onnxruntime-node", "1.20.1", "1.15.2.0")
    _variant(tmp_path, "onnxruntime-node", "1.18.0", "1.14.1.0")
    _variant(tmp_path, "DirectML.dll", "", "1.13.1.0")
    return tmp_path


# --------------------------------------------------------------------------------------------
# choosing a build (no Wine needed)
# --------------------------------------------------------------------------------------------

def test_no_option_is_the_default_build(fake_cache):
    s = select.select_stack({})
    assert s.variant == "" and s.versions["DirectML.dll"] == "1.15.4.0"
    assert select.select_stack({"directml": "1.15.4"}).variant == ""        # the default carries it
    assert select.select_stack({"onnxruntime_node": "1.30.0"}).variant == ""


def test_onnxruntime_node_option_picks_that_build(fake_cache):
    s = select.select_stack({"onnxruntime_node": "1.20.1"}, need_ort=True)
    assert s.ort_dir == fake_cache / "ort-node/1.20.1/node_modules/onnxruntime-node"
    assert s.versions["DirectML.dll"] == "1.15.2.0" and s.versions["onnxruntime.dll"] == "1.20.1.1"
    assert "DirectML.dll (string)" not in s.versions          # no stale string of the default's DLL
    assert s.directml_dll == s.ort_bin_dir / "DirectML.dll"
    assert s.prefix == fake_cache / "prefix" and s.versions["wine"] == "wine-8.0"   # Wine stack shared


def test_directml_option_by_file_version_prefix(fake_cache):
    assert select.select_stack({"directml": "1.14.1"}).versions["onnxruntime-node"] == "1.18.0"
    s = select.select_stack({"directml": "1.13.1"})
    assert s.dml_dll == fake_cache / "directml/1.13.1.0/DirectML.dll" and s.directml_dll == s.dml_dll
    assert s.versions["DirectML.dll"] == "1.13.1.0"


def test_dll_only_build_is_refused_for_the_ort_lane(fake_cache):
    with pytest.raises(StackError) as e:
        select.select_stack({"directml": "1.13.1"}, need_ort=True)
    msg = str(e.value)
    assert "\n" not in msg and "dml lane needs an onnxruntime-node build" in msg


@pytest.mark.parametrize("opts,words", [
    ({"onnxruntime_node": "9.9.9"}, "setup dml --onnxruntime-node 9.9.9"),
    ({"directml": "1.99"}, "DirectML.dll 1.99 is not installed"),
    ({"onnxruntime_node": "1.20.1", "directml": "1.14"}, "carries DirectML.dll 1.15.2.0, not 1.14"),
])
def test_missing_build_is_one_line(fake_cache, opts, words):
    with pytest.raises(StackError) as e:
        select.select_stack(opts)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_bad_versions_fail_before_installing(tmp_path):
    with pytest.raises(StackError, match="not a version number"):
        default.setup(tmp_path / "c", onnxruntime_node=["1.2O.1"], log=lambda m: None)
    with pytest.raises(StackError, match="no such file"):
        default.setup(tmp_path / "c", directml_dll=[str(tmp_path / "nope.dll")], log=lambda m: None)
    assert not (tmp_path / "c").exists()


def test_cli_setup_bad_version_exit_2(tmp_path):
    r = subprocess.run([*CLI, "setup", "dml", "--cache", str(tmp_path), "--onnxruntime-node", "latest"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "not a version number" in r.stdout + r.stderr


# --------------------------------------------------------------------------------------------
# a Wine prefix per worker process
# --------------------------------------------------------------------------------------------

def test_worker_prefix_slots(tmp_path, monkeypatch):
    fake = _fake_stack(tmp_path)
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "system.reg").write_text("x")
    monkeypatch.setattr(session, "_slot_held", {})
    mine = session.worker_stack(fake)
    assert mine.prefix == fake.prefix                          # slot 0: the stack's own prefix
    assert session.worker_stack(fake).prefix == fake.prefix       # held for the process's life
    code = ("import sys, pathlib; from onnx_dml_bench.dml.wine import session; from tests.dml.test_versions import _fake_stack;"
            f"print(session.worker_stack(_fake_stack(pathlib.Path({str(tmp_path)!r}))).prefix)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr
    other = Path(r.stdout.strip().splitlines()[-1])
    assert other == tmp_path / "prefixes" / "1" and (other / "system.reg").read_text() == "x"


# --------------------------------------------------------------------------------------------
# with the stack: a second build side by side, and runs that pick it
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def second_build():
    base = select.find_stack()
    if base is None:
        pytest.skip(f"DirectML stack not installed in {stackinfo.default_cache_dir()}")
    try:
        variants.install_ort_node(Path(base.cache_dir), SECOND, log=lambda m: None)
    except StackError as e:
        pytest.skip(f"onnxruntime-node {SECOND} cannot be installed here: {e}")
    return base


def test_second_build_side_by_side(second_build):
    s = select.select_stack({"onnxruntime_node": SECOND})
    assert s.versions["DirectML.dll"] == SECOND_DLL and s.versions["onnxruntime-node"] == SECOND
    assert (s.ort_bin_dir / "DirectML.dll").exists() and "napi-v3" in str(s.ort_bin_dir)
    assert pe.pe_version(s.directml_dll)["file_version"] == SECOND_DLL
    default = select.find_stack()                              # the default is untouched
    assert default.versions["onnxruntime-node"] == stackinfo.ORT_NODE_VERSION
    assert pe.pe_version(default.directml_dll)["file_version"] == default.versions["DirectML.dll"]
    assert default.versions["DirectML.dll"] != SECOND_DLL


def _run(out: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "run", "--profile", "smoke", "--op", "space_to_depth1", "--dtype", "FLOAT32",
                           "--no-report", "--fail-on", "CRASH", "--out", str(out), "--overwrite", *args],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("lane", ["dml", "dml-direct"])
def test_run_picks_the_build_and_records_its_dll(second_build, tmp_path, lane):
    from onnx_dml_bench.results import env_id, merge, read
    a = _run(tmp_path / "a", "--ep", lane, "--ep-option", f"onnxruntime_node={SECOND}")
    assert a.returncode == 0, a.stdout[-2000:] + a.stderr[-2000:]
    b = _run(tmp_path / "b", "--ep", lane)
    assert b.returncode == 0, b.stdout[-2000:] + b.stderr[-2000:]
    ea, eb = read(tmp_path / "a/results.jsonl").envs[0], read(tmp_path / "b/results.jsonl").envs[0]
    assert ea.versions["DirectML.dll"] == SECOND_DLL
    assert eb.versions["DirectML.dll"] == second_build.versions["DirectML.dll"]
    if lane == "dml":
        assert ea.versions["onnxruntime-node"] == SECOND and ea.ort_version == SECOND
    assert env_id(ea) != env_id(eb)                           # two DLLs: two environments
    n_env, n = merge([tmp_path / "a/results.jsonl", tmp_path / "b/results.jsonl"], tmp_path / "m.jsonl")
    assert n_env == 2 and n >= 1                              # merged as two environments


def test_run_unknown_build_exit_2_one_line(second_build, tmp_path):
    r = _run(tmp_path / "x", "--ep", "dml", "--ep-option", "onnxruntime_node=9.9.9")
    assert r.returncode == 2
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and "onnxruntime-node 9.9.9 is not installed" in err[0]
