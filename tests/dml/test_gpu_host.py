"""GPU-host mode of the DirectML stack (dml/wine/icd.py, select.apply_gpu, probe.py, install/bundle.py): ICD detection, environment, GPU evidence and
the bundle fix-ups, without a GPU."""
import json
from pathlib import Path

import pytest

from onnx_dml_bench.dml import probe, select
from onnx_dml_bench.dml.install import bundle
from onnx_dml_bench.dml.wine import icd as wine_icd
from onnx_dml_bench.dml.wine.stackinfo import StackError, StackInfo


def _icd(tmp_path, name="nvidia_icd.json", lib="libGLX_nvidia.so.0"):
    p = tmp_path / name
    p.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {"library_path": lib, "api_version": "1.4.312"}}))
    return p


def _stack(tmp_path, **kw):
    lvp = tmp_path / "cache/mesa/lvp_icd.json"
    lvp.parent.mkdir(parents=True, exist_ok=True)
    lvp.write_text(json.dumps({"ICD": {"library_path": "/x/libvulkan_lvp.so"}}))
    d = dict(cache_dir=tmp_path / "cache", node_exe=Path("/n/node.exe"), ort_dir=Path("/o"), ort_common_dir=Path("/c"),
             prefix=tmp_path / "pfx", mesa_root=Path("/m"), icd_json=lvp, lib_dirs=[Path("/m/lib")],
             wine="/usr/lib/wine/wine64", wineserver="/usr/lib/wine/wineserver64", xvfb="/usr/bin/Xvfb")
    d.update(kw)
    return StackInfo(**d)


def test_no_gpu_keeps_lavapipe(tmp_path):
    icd = _icd(tmp_path)
    assert wine_icd.detect_icd({}, {}, candidates=[str(icd)], has_gpu=False) is None
    st = _stack(tmp_path)
    assert select.apply_gpu(st, {}, {}, candidates=[str(icd)], has_gpu=False) is st


def test_nvidia_icd_is_detected_on_a_gpu_machine(tmp_path):
    icd = _icd(tmp_path)
    missing = tmp_path / "absent.json"
    assert wine_icd.detect_icd({}, {}, candidates=[str(missing), str(icd)], has_gpu=True) == icd
    assert wine_icd.detect_icd({}, {}, candidates=[str(missing)], has_gpu=True) is None


def test_option_and_environment_choose_the_icd(tmp_path):
    icd = _icd(tmp_path, "my.json", "libvulkan_radeon.so")
    assert wine_icd.detect_icd({"vulkan_icd": str(icd)}, {}, candidates=[], has_gpu=False) == icd
    assert wine_icd.detect_icd({"vulkan-icd": str(icd)}, {}, candidates=[], has_gpu=False) == icd
    assert wine_icd.detect_icd({}, {wine_icd.ICD_ENV: str(icd)}, candidates=[], has_gpu=False) == icd
    nv = _icd(tmp_path)
    assert wine_icd.detect_icd({"vulkan_icd": "lavapipe"}, {}, candidates=[str(nv)], has_gpu=True) is None
    with pytest.raises(StackError, match="no such Vulkan ICD"):
        wine_icd.detect_icd({"vulkan_icd": str(tmp_path / "nope.json")}, {}, candidates=[], has_gpu=False)


def test_apply_sets_icd_gl_renderer_and_env(tmp_path):
    icd = _icd(tmp_path)
    st = select.apply_gpu(_stack(tmp_path), {}, {}, candidates=[str(icd)], has_gpu=True)
    assert st.gpu == "nvidia" and st.icd_json == icd
    env = st.env(display=":5", base={"PATH": "/bin", "VK_ICD_FILENAMES": "/other.json"})
    assert env["VK_ICD_FILENAMES"] == str(icd) and env["VK_DRIVER_FILES"] == str(icd)
    assert env["WINE_D3D_CONFIG"] == "renderer=gl,OffscreenRenderingMode=backbuffer"
    assert env["DISPLAY"] == ":5"
    assert st.versions["vulkan_icd"] == str(icd)
    # idempotent, and the lavapipe option turns it back
    again = select.apply_gpu(st, {}, {}, candidates=[str(icd)], has_gpu=True)
    assert again.lib_dirs == st.lib_dirs and again.extra_env == st.extra_env
    back = select.apply_gpu(st, {"vulkan_icd": "lavapipe"}, {}, candidates=[str(icd)], has_gpu=True)
    assert back.gpu == "" and back.icd_json.name == "lvp_icd.json" and "WINE_D3D_CONFIG" not in back.extra_env
    assert back.env(base={"WINE_D3D_CONFIG": "renderer=vulkan"})["WINE_D3D_CONFIG"] == \
        "OffscreenRenderingMode=backbuffer"


def test_stack_json_round_trip_keeps_gpu_fields(tmp_path):
    st = _stack(tmp_path, gpu="nvidia", extra_env={"WINESERVER": "/b/wineserver64"})
    back = StackInfo.from_json(json.loads(json.dumps(st.to_json())))
    assert back.gpu == "nvidia" and back.extra_env == {"WINESERVER": "/b/wineserver64"}
    assert back.env(base={})["WINESERVER"] == "/b/wineserver64"
    old = st.to_json()
    del old["gpu"], old["extra_env"]        # a stack.json written before GPU hosts
    assert StackInfo.from_json(old).gpu == "" and StackInfo.from_json(old).extra_env == {}


def test_driver_lib_dirs_beside_a_mounted_driver(tmp_path):
    base = tmp_path / "nvidia"
    (base / "share/vulkan/icd.d").mkdir(parents=True)
    (base / "lib64").mkdir()
    icd = _icd(base / "share/vulkan/icd.d")
    st = select.apply_gpu(_stack(tmp_path), {"vulkan_icd": str(icd)}, {})
    assert st.lib_dirs[-1] == base / "lib64"


def _snap(used, name="NVIDIA H100 80GB HBM3", procs=()):
    return {"gpus": [{"name": name, "memory.used": used, "driver_version": "580.159.04"}], "processes": list(procs)}


H100 = {"deviceName": "NVIDIA H100 80GB HBM3", "deviceType": "PHYSICAL_DEVICE_TYPE_DISCRETE_GPU",
        "driverName": "NVIDIA", "driverInfo": "580.159.04"}


def test_evidence_needs_gpu_device_and_memory_rise():
    ok = probe.evidence(H100, _snap(0), _snap(410))
    assert ok["ok"] and ok["memory_rise_mib"] == 410 and "H100" in ok["message"]
    flat = probe.evidence(H100, _snap(3), _snap(3))
    assert not flat["ok"] and "did not rise" in flat["message"]
    cpu = probe.evidence({"deviceName": "llvmpipe (LLVM 15.0.6, 256 bits)", "deviceType": "PHYSICAL_DEVICE_TYPE_CPU"},
                            _snap(0), _snap(50))
    assert not cpu["ok"] and "CPU device" in cpu["message"]
    none = probe.evidence({"error": "vulkaninfo found no device"}, {"error": "nvidia-smi not found"}, {})
    assert not none["ok"] and "no Vulkan device" in none["message"] and "unknown" in none["message"]


def test_memory_sampler_keeps_the_highest_reading():
    readings = iter([_snap(1), _snap(300), _snap(120)] + [_snap(5)] * 1000)
    with probe.MemorySampler(interval_s=0.001, snapshot=lambda: next(readings)) as m:
        import time
        time.sleep(0.05)
    assert m.before["gpus"][0]["memory.used"] == 1
    assert m.during["gpus"][0]["memory.used"] == 300 and m.samples >= 2


def test_fix_bundle_root(tmp_path):
    root = tmp_path / "root"
    (root / "usr/lib/wine").mkdir(parents=True)
    (root / "usr/lib/wine/wineserver").write_text(
        "#!/bin/sh -e\nwineserver32=/usr/lib/wine/wineserver32\nwineserver64=/usr/lib/wine/wineserver64\n"
        "exec $wineserver -p0 \"$@\"\n")
    done = bundle.fix_bundle_root(root)
    text = (root / "usr/lib/wine/wineserver").read_text()
    assert f"wineserver64={root}/usr/lib/wine/wineserver64" in text and "=/usr/lib" not in text
    xv = (root / "odb-bin/Xvfb").read_text()
    assert f"exec {root}/usr/bin/Xvfb -xkbdir {root}/usr/share/X11/xkb" in xv and "LIBGL_DRIVERS_PATH" in xv
    assert len(done) == 2
    assert len(bundle.fix_bundle_root(root)) == 1       # only the wrapper script is rewritten again
