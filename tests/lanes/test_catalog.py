"""The lane catalog (``lanes/catalog.py``): every question of EP names is its own. A new ONNX
Runtime EP lane is a lane class and a catalog entry, both in ``lanes/``: the lane registered here,
from this test, is known to ``--ep`` (the plan resolves it, every ``--ep`` help names it, ``eps``
lists it, the main job would run it), its runs record it, and the report names it, with no other
file of the bench told about it. The built-in EPs' facts moved from switches on a lane's key into
small lane classes: each keeps its answers."""
from __future__ import annotations

from dataclasses import dataclass

import onnxruntime
import pytest

from onnx_dml_bench import mainjob
from onnx_dml_bench.cli import main
from onnx_dml_bench.conformance.plugin import EP_HELP
from onnx_dml_bench.execute import run_batch
from onnx_dml_bench.judge import default_semantics, ep_name
from onnx_dml_bench.lanes import catalog, ort
from onnx_dml_bench.lanes.base import Entry
from onnx_dml_bench.plan import RunPlan, RunRequest
from onnx_dml_bench.report import write_all
from onnx_dml_bench.results import ResultWriter, read

QNN = "QNNExecutionProvider"


@dataclass
class QnnLane(ort.OrtLane):
    """A QNN lane as its module in ``lanes/`` would declare it: an ONNX Runtime EP with its own
    option defaults. No QNN here: its sessions open on the CPU EP of the installed package (the
    placement proof then finds the nodes off the EP: NOT_OFFLOADED, a verdict like any other)."""
    option_defaults = {"backend_path": "QnnHtp.so"}

    def make_session(self, model: bytes, *, side_is_ep: bool, optimization: str = "disabled", threads: int = 1):
        so = self.session_options(side_is_ep=False, optimization=optimization, threads=threads)
        return onnxruntime.InferenceSession(model, so, providers=["CPUExecutionProvider"])


ENTRY = Entry("qnn", QNN, "onnxruntime-qnn (pip install 'onnx-dml-bench[qnn]')", "pip install -e '.[qnn]'", QnnLane)


@pytest.fixture
def qnn(monkeypatch):
    """The QNN lane registered in the catalog (for this test only), its EP listed by the package."""
    monkeypatch.setattr(catalog, "ENTRIES", dict(catalog.ENTRIES))
    real = onnxruntime.get_available_providers()
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: [*real, QNN])
    return catalog.register(ENTRY)


def test_a_registered_lane_is_resolved_by_its_key_and_its_provider_name(qnn):
    assert "qnn" not in catalog.keys()[:-1] and catalog.keys()[-1] == "qnn"
    assert catalog.provider_name("qnn") == catalog.provider_name("qnnexecutionprovider") == QNN
    lane = catalog.resolve("QNN", {"profiling_level": "off"})
    assert type(lane) is QnnLane and lane.key == "qnn" and lane.ep_name == QNN and lane.ep_argument() == "qnn"
    assert lane.options == {"profiling_level": "off", "backend_path": "QnnHtp.so"}
    assert ep_name("qnn") == QNN and default_semantics(QNN) == "onnx"
    rows = {r["key"]: r for r in catalog.ep_rows()}
    assert rows["qnn"]["status"] == "ok" and rows["qnn"]["ep"] == QNN
    assert "qnn" in [ln.key for ln in mainjob.plan_lanes()[0]]


def test_a_registered_lane_is_in_every_ep_help(qnn, capsys):
    for command in (["run", "--help"], ["perf", "--help"], ["shrink", "--help"], ["fuzz", "--help"],
                    ["bench", "--help"], ["judge", "--help"]):
        assert main(command) == 0
        text = "".join(capsys.readouterr().out.split())          # help text wraps anywhere, "dml-" included
        assert "dml-direct,qnn" in text, command
    assert "dml-direct, qnn" in EP_HELP % {}          # the pytest plugin's --dml-bench-ep


def test_a_registered_lane_runs_through_the_plan_and_the_report_names_it(qnn, tmp_path):
    plan = RunPlan.build(RunRequest(ep="qnn", profile="smoke", ops=("max_pooling2",), dtypes=("f32",)))
    assert type(plan.lane) is QnnLane and plan.three_way and plan.cases
    env = plan.environment(argv=["run", "--ep", "qnn"])
    assert (env.ep, env.ep_key, env.get("session_check")) == (QNN, "qnn", f"a MaxPool session opened on {QNN} "
                                                                           "and gave its known answer")
    recs = run_batch(plan.lane.make_backend(plan.cfg), plan.cases)
    assert {r.ep for r in recs} == {QNN} and {r.verdict for r in recs} == {"NOT_OFFLOADED"}
    writer = ResultWriter(tmp_path / "results.jsonl", env)
    writer.write(recs)
    writer.close()
    assert read(tmp_path / "results.jsonl").envs[0].ep_key == "qnn"
    write_all([tmp_path / "results.jsonl"], tmp_path)
    assert f"<title>onnx-dml-bench: {len(recs)} cases on QNN EP</title>" in (tmp_path / "report.html").read_text()


def test_the_catalog_refuses_a_second_entry_of_a_name(qnn):
    with pytest.raises(ValueError, match="already"):
        catalog.register(Entry("qnn2", "qnnexecutionprovider", "", "", QnnLane))
    with pytest.raises(ValueError, match="already"):
        catalog.register(Entry("cpu", "OtherExecutionProvider", "", "", QnnLane))


def test_the_built_in_lanes_answer_as_their_keys_did():
    """Each built-in EP's lane class: its device binding, its option defaults, its sessions."""
    nv = ort.NvidiaLane("cuda", "CUDAExecutionProvider", "p", {"device_id": "1"})
    assert nv.io_device() == ("cuda", 1) and ort.NvidiaLane.option_defaults == {"device_id": "0"}
    assert nv.on_device({"index": 3, "name": "GPU 3"}).options["device_id"] == "3"
    assert ort.DmlLane("dml", "DmlExecutionProvider", "p", {}).io_device() == ("dml", 0)
    assert not ort.DmlLane.mem_pattern and ort.CpuLane.mem_pattern
    assert ort.OpenVinoLane.option_defaults == {"device_type": "CPU"}
    assert "OpenVINO GPU" in ort.OpenVinoLane("openvino", "OpenVINOExecutionProvider", "p",
                                              {"device_type": "GPU"}).environment()["device"]
    assert ort.CpuLane("cpu", "CPUExecutionProvider", "p", {}).io_device() is None
    web = ort.PluginLane("plugin", "WebGpuExecutionProvider", "p", {}, library="/x.so")
    assert web.io_device() == ("webgpu", 0) and web.ep_argument() == "plugin:/x.so"
    assert type(catalog.resolve("cpu")) is ort.CpuLane
    assert catalog.shipped("cpu").file == "cpu.yaml" and catalog.shipped("cuda") is None
    assert catalog.set_up_by("dml") == ("dml", "dml-direct")
    assert catalog.runs_descriptors("dml-direct") and catalog.runs_descriptors("DirectML")
    assert not catalog.runs_descriptors("dml") and not catalog.runs_descriptors("WebNN")
