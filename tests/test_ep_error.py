"""EP_ERROR: the EP accepted a valid case (its session was created) and failed at run time. It is a
verdict of its own, distinct from an invalid case or a bench error (ERROR), it carries the EP's
status text, it fails the default gate, JUnit reports it as an <error>, expectations can list it,
and results written before it existed still read as they were written."""
from __future__ import annotations

import lzma
import json
import subprocess
import sys
from pathlib import Path

import pytest
from junitparser import JUnitXml

from onnx_dml_bench.casefile import case_from_dict
from onnx_dml_bench.errors import EXIT_INCOMPLETE
from onnx_dml_bench.lanes.dml_direct import outcome as direct_outcome
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.record import Verdict
from onnx_dml_bench.results import read
from onnx_dml_bench.verdict import RUN_FAILED, failure, judge

pytestmark = pytest.mark.xdist_group("ep_error")

CUDNN = ("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running MaxPool node. Name:'MaxPool' "
         "Status Message: CUDNN failure 9: CUDNN_STATUS_NOT_SUPPORTED ; GPU=0 ; hostname=h100 ; "
         "file=pool.cc ; line=210 ; expr=PoolingForwardHelper(...)")

#: AveragePool-10, auto_pad SAME_UPPER with a stride larger than the window: ONNX Runtime's CPU EP
#: creates the session and then refuses the run ("padding values must be non-negative")
RUNTIME_REFUSAL = {
    "op": "average_pooling1", "opset": 10, "onnx": {"auto_pad": "SAME_UPPER"},
    "descriptor": {"InputSizes": [1, 1, 1, 4], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 4],
                   "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                   "IncludePadding": False, "FeatureLevel": "6.2"},
    "inputs": {"family": "random", "seed": 3}}


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "onnx_dml_bench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_a_run_failure_is_ep_error_with_the_eps_status_text():
    v, reason = failure(Outcome(False, "run", CUDNN))
    assert v == "EP_ERROR" and reason == RUN_FAILED + CUDNN and "CUDNN_STATUS_NOT_SUPPORTED" in reason
    # refused sessions, lost workers and the bench's own failures keep their verdicts
    assert failure(Outcome(False, "session", "no kernel"))[0] == "EP_REJECTED"
    assert failure(Outcome(False, "crash", "died"))[0] == "CRASH"
    assert failure(Outcome(False, "bench", "cannot write"))[0] == "ERROR"


def test_ep_error_is_in_the_default_gate_and_among_the_failed():
    assert "EP_ERROR" in Verdict.FAIL_ON and "EP_ERROR" in Verdict.FAILED and "EP_ERROR" in Verdict.ERRORS
    assert "ERROR" not in Verdict.FAIL_ON           # an invalid case or a bench error is not the EP's failure


def test_judge_gives_ep_error_and_an_invalid_case_stays_error():
    case = case_from_dict(RUNTIME_REFUSAL)
    j = judge(case, case.inputs(), Outcome(False, "run", CUDNN), None, None, ep_name="CUDAExecutionProvider",
              ep_is_cpu=False)
    assert j.verdict == "EP_ERROR" and CUDNN in j.reason
    op = case.operator
    invalid = case.__class__(op, case.desc.replace(WindowSize=(3, 9)), 10)      # a window larger than the input
    refused = op.admit(invalid)
    assert refused.verdict == "ERROR" and refused.reason.startswith("invalid descriptor")


def test_the_direct_lane_tells_directml_from_its_harness():
    class R:
        ok, outputs, timings_ms = False, {}, {}

        def __init__(self, stage):
            self.stage, self.error = stage, "E_FAIL"
    assert direct_outcome(R("CreateOperator")).stage == "session"
    assert direct_outcome(R("ExecuteCommandLists")).stage == "run"
    assert direct_outcome(R("ReadInput")).stage == "bench"
    assert direct_outcome(R("Allocate")).stage == "bench"      # the harness's own 2 GiB arena


def test_a_real_runtime_failure_fails_the_default_gate(tmp_path):
    """ONNX Runtime's CPU EP accepts the session and refuses the run: EP_ERROR, exit code 1 with the
    default --fail-on, an <error type="EP_ERROR"> in JUnit; listed as known, the gate passes."""
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [RUNTIME_REFUSAL]}))
    out = tmp_path / "run"
    r = cli("run", "--ep", "cpu", "--cases", cases, "--out", out)
    assert r.returncode == 1, r.stdout + r.stderr
    rec = read(out / "results.jsonl").records[0]
    assert rec.verdict == "EP_ERROR" and "padding values must be non-negative" in rec.reason
    assert rec.reason.startswith(RUN_FAILED)
    assert "known-deviation:ort-avgpool-same-negative-pad" in rec.labels
    xml = JUnitXml.fromfile(str(out / "junit.xml"))
    results = [c.result[0] for s in xml for c in s]
    assert [type(x).__name__ for x in results] == ["Error"] and results[0].type == "EP_ERROR"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"]["EP_ERROR"] == 1, summary["totals"]
    # known: listed in an expectations file, the run passes its gate
    known = tmp_path / "known.yaml"
    r = cli("expectations", "--from", out / "results.jsonl", "--out", known)
    assert r.returncode == 0, r.stderr
    assert "verdict: EP_ERROR" in known.read_text()
    r = cli("run", "--ep", "cpu", "--cases", cases, "--out", tmp_path / "again", "--expectations", known)
    assert r.returncode == 0, r.stdout + r.stderr
    # not in --fail-on: the gate passes over it
    assert cli("run", "--ep", "cpu", "--cases", cases, "--out", tmp_path / "lax", "--fail-on", "FAIL").returncode == 0


def test_older_results_keep_their_error_verdicts(tmp_path):
    """A results file written before EP_ERROR existed records run-time failures as ERROR: read,
    reported and compared as written, never relabelled."""
    src = Path(__file__).resolve().parent.parent / "reports" / "h100" / "webgpu" / "results.jsonl.xz"
    lines = lzma.decompress(src.read_bytes()).decode().splitlines()
    kept = [lines[0]] + [x for x in lines[1:] if 'Indices output is not supported yet' in x][:3]
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(kept) + "\n")
    recs = read(path).records
    assert recs and {r.verdict for r in recs} == {"ERROR"}
    r = cli("report", path, "--out", tmp_path / "rep")
    assert r.returncode == EXIT_INCOMPLETE, r.stderr      # 3 records of a 12,927-case run: written, said incomplete
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["totals"].get("ERROR") == len(recs) and "EP_ERROR" not in summary["totals"]
