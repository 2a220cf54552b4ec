"""The TensorRT lane (``lanes/tensorrt.py``) and the session check of every ONNX Runtime lane
(``ort.check_session``): an EP the package lists but whose libraries are missing is not ok, says
why in one line, and prints no "EP Error ... Falling back" banner. No GPU here: the EP's listing is
faked, and the session then fails as it does where TensorRT's libraries are missing."""
from __future__ import annotations

import onnxruntime
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:Specified provider:UserWarning")

from onnx_dml_bench.cli import main
from onnx_dml_bench.judge import ep_name
from onnx_dml_bench.lanes import catalog, ort, tensorrt
from onnx_dml_bench.lanes.base import PreflightError
from onnx_dml_bench.results import env_id
from onnx_dml_bench.record import Environment

TRT = "TensorrtExecutionProvider"


@pytest.fixture
def trt_listed(monkeypatch):
    """The installed onnxruntime lists the TensorRT EP (as onnxruntime-gpu does, libraries or not)."""
    real = onnxruntime.get_available_providers()
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: [TRT, *real])


def test_no_fallback_banner_and_the_eps_own_error(monkeypatch, capfd):
    def fail(self, *a, **k):
        self._fallback_providers = ["CPUExecutionProvider"]        # as the package sets it for TensorRT
        raise RuntimeError("TensorRT EP could not be created: libnvinfer.so.10: cannot open shared object file")

    monkeypatch.setattr(onnxruntime.InferenceSession, "_create_inference_session", fail)
    with pytest.raises(RuntimeError):                     # the package's own class: the banner, a retry
        onnxruntime.InferenceSession(ort._check_model(), providers=["CPUExecutionProvider"])
    assert "Falling back" in capfd.readouterr().out
    with pytest.raises(RuntimeError, match="libnvinfer"):  # the lanes' class: the EP's error, nothing printed
        ort.session_class()(ort._check_model(), providers=["CPUExecutionProvider"])
    out = capfd.readouterr()
    assert "EP Error" not in out.out + out.err and "Falling back" not in out.out + out.err


def test_a_listed_ep_that_opens_no_session_is_not_ok(trt_listed, capfd):
    lane = catalog.resolve("tensorrt")
    assert isinstance(lane, tensorrt.TensorrtLane)
    with pytest.raises(PreflightError, match="no session opens on it here"):
        lane.preflight()
    rows = {r["key"]: r for r in catalog.ep_rows()}
    assert rows["tensorrt"]["status"].startswith("unavailable:") and "no session opens" in rows["tensorrt"]["status"]
    assert rows["cpu"]["status"] == "ok"
    assert "Falling back" not in capfd.readouterr().out


def test_run_on_a_tensorrt_without_libraries_is_a_failed_preflight(trt_listed, tmp_path, capsys):
    code = main(["run", "--ep", "tensorrt", "--op", "MAX_POOLING2", "--dtype", "FLOAT32", "--out", str(tmp_path / "r")])
    assert code == 3
    cap = capsys.readouterr()
    assert "no session opens" in " ".join((cap.out + cap.err).split())
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_the_session_check_gives_the_known_answer():
    ort.check_session(catalog.resolve("cpu"))              # the CPU EP opens it and answers right
    azure = ort.OrtLane("azure", "AzureExecutionProvider", "onnxruntime", {})
    if "AzureExecutionProvider" in onnxruntime.get_available_providers():
        with pytest.raises(PreflightError) as e:             # listed, but runs no MaxPool: not ok
            ort.check_session(azure)
        assert "\n" not in str(e.value)


def test_engine_cache_in_the_run_folder_outside_the_identity(trt_listed, tmp_path):
    lane = catalog.resolve("tensorrt", {"trt_fp16_enable": "True"})
    a, b = lane.in_run_folder(tmp_path / "one"), lane.in_run_folder(tmp_path / "two")
    opts = a._provider_options()
    assert opts["trt_engine_cache_enable"] == "True" and opts["trt_engine_cache_path"] == str(tmp_path / "one" / tensorrt.CACHE)
    assert opts["trt_fp16_enable"] == "True" and opts["device_id"] == "0"
    ea, eb = a.environment(), b.environment()
    assert "trt_engine_cache_path" not in ea["ep_options"] and ea["engine_cache"] != eb["engine_cache"]
    assert env_id(Environment.from_flat(ea)) == env_id(Environment.from_flat(eb))
    assert "trt_fp16_enable" in ea["precision"]
    assert "precision" not in catalog.resolve("tensorrt").environment()
    gpu1 = a.on_device({"index": 1, "name": "NVIDIA H200", "uuid": "GPU-1", "pci_bus_id": "0000:1a:00.0"})
    assert gpu1._provider_options()["trt_engine_cache_path"] == str(tmp_path / "one" / tensorrt.CACHE / "device-1")
    assert gpu1._provider_options()["device_id"] == "1" and gpu1.environment()["device_unit"]["uuid"] == "GPU-1"
    own = catalog.resolve("tensorrt", {"trt_engine_cache_path": "/x"}).in_run_folder(tmp_path)
    assert own._provider_options()["trt_engine_cache_path"] == "/x"      # a cache the user names is kept


def test_the_catalog_answers_the_names():
    assert catalog.provider_name("tensorrt") == TRT == catalog.provider_name("TensorrtExecutionProvider")
    assert catalog.provider_name("nosuch") is None and "tensorrt" in catalog.keys()
    assert ep_name("TensorRT") == TRT and ep_name("WebNN") == "WebNN"
    assert catalog.resolve("cpu").ep_argument() == "cpu"
