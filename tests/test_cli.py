"""The command line: runs, exit codes, bad arguments, case files."""
from __future__ import annotations

import json

import pytest
import yaml

from onnx_dml_bench.cli import main
from onnx_dml_bench.casefile import CaseFileError, load
from onnx_dml_bench.results import read

from conftest import ORT_LOADS_OPSET_28

TIE_CASE = {
    "op": "max_pooling2",
    "opset": 12,
    "descriptor": {"InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                   "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                   "OutputIndicesDataType": "UINT32"},
    "inputs": {"values": {"X": [5, 5, 5, 5]}},
}


def run_cli(*args):
    return main(list(args))


def test_bad_arguments_give_one_line_and_exit_2(capsys):
    assert run_cli("run", "--ep", "nosuchep", "--out", "/tmp/x") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nosuchep" in err[0]
    assert run_cli("run", "--profile", "huge") == 2
    assert "--profile" in capsys.readouterr().err
    assert run_cli("run", "--jobs", "0") == 2
    assert run_cli("run", "--op", "conv") == 2
    assert "unknown operator" in capsys.readouterr().err
    assert run_cli("run", "--shard", "3/2") == 2
    assert run_cli("run", "--fail-on", "FAIL,MAYBE") == 2


def test_run_writes_results_and_exit_code_follows_fail_on(tmp_path):
    out = tmp_path / "r"
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32,u8", "--profile", "smoke",
                   "--out", str(out), "--no-report", "--fail-on", "EP_REJECTED")
    res = read(out / "results.jsonl")
    envs, recs = res.envs, res.records
    assert envs and envs[0].ep == "CPUExecutionProvider" and envs[0].ort_version
    assert {r.dtype for r in recs} <= {"FLOAT32", "UINT8"}
    rejected = any(r.verdict == "EP_REJECTED" for r in recs)
    assert code == (1 if rejected else 0)
    # ONNX Runtime 1.31 refuses the opset-28 (IR 14) CRD case at load; 1.32 runs every case of the
    # selection (SpaceToDepth-28 has a CPU kernel for float32 and uint8)
    assert rejected == (not ORT_LOADS_OPSET_28)
    # a refusal in every release: native SpaceToDepth-13 has no int16 CPU kernel -> exit code 1
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "i16", "--profile", "smoke",
                   "--out", str(tmp_path / "r3"), "--no-report", "--fail-on", "EP_REJECTED")
    recs = read(tmp_path / "r3" / "results.jsonl").records
    assert any(r.verdict == "EP_REJECTED" and r.opset == 13 for r in recs) and code == 1
    code = run_cli("run", "--ep", "cpu", "--op", "space_to_depth1", "--dtype", "f32", "--profile", "smoke",
                   "--out", str(tmp_path / "r2"), "--no-report", "--fail-on", "FAIL")
    assert code == 0


def test_case_file_reproduces_a_tie(tmp_path):
    f = tmp_path / "tie.yaml"
    f.write_text(yaml.safe_dump({"cases": [TIE_CASE]}))
    out = tmp_path / "r"
    assert run_cli("run", "--cases", str(f), "--out", str(out), "--no-report") == 0
    recs = read(out / "results.jsonl").records
    (r,) = recs
    assert r.verdict == "PASS" and r.family == "explicit"
    assert r.case["inputs"]["values"]["X"] == [5, 5, 5, 5]


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d.pop("op"), "op"),
    (lambda d: d["descriptor"].update(Strides=[0, 1]), "descriptor.Strides"),
    (lambda d: d["descriptor"].update(Bogus=1), "descriptor.Bogus"),
    (lambda d: d["inputs"]["values"].update(X=[1, 2, 3]), "inputs.values.X"),
    (lambda d: d.update(onnx={"ceil_mode": 7}), "onnx.ceil_mode"),
    (lambda d: d.update(inputs={"family": "nan", "seed": 1}) or d["descriptor"].update(DataType="INT8"), "inputs.family"),
])
def test_invalid_case_file_names_file_case_and_field(tmp_path, mutate, where):
    d = json.loads(json.dumps(TIE_CASE))
    d["id"] = "my-case"
    mutate(d)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps([json.loads(json.dumps(TIE_CASE)), d]))
    with pytest.raises(CaseFileError) as e:
        load(f)
    msg = str(e.value)
    assert str(f) in msg and "case 1" in msg and where in msg


def test_invalid_case_file_stops_before_running(tmp_path, capsys):
    f = tmp_path / "bad.json"
    f.write_text("[{]")
    assert run_cli("run", "--cases", str(f), "--out", str(tmp_path / "r")) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_export_and_failed_from_round_trip(tmp_path):
    exp = tmp_path / "cases.json"
    assert run_cli("cases", "--profile", "smoke", "--op", "roi_pooling", "--export", str(exp)) == 0
    cases = load(exp)
    assert len(cases) > 5
    out = tmp_path / "r"
    run_cli("run", "--cases", str(exp), "--out", str(out), "--no-report")
    recs = read(out / "results.jsonl").records
    assert {r.case_id for r in recs} == {c.id for c in cases}
    failed = tmp_path / "failed.yaml"
    assert run_cli("cases", "--failed-from", str(out / "results.jsonl"), "--export", str(failed)) == 0
    again = load(failed)
    want = {r.case_id for r in recs if r.verdict not in ("PASS", "NOT_EXPRESSIBLE", "SKIPPED")}
    assert {c.id for c in again} == want and want     # ROI fp16 is refused on the CPU EP


def test_opset_axis_marks_inexpressible_cases(tmp_path):
    out = tmp_path / "r"
    run_cli("run", "--op", "average_pooling1", "--profile", "smoke", "--opset", "11,19", "--out", str(out), "--no-report")
    recs = read(out / "results.jsonl").records
    dil11 = [r for r in recs if r.opset == 11 and any(d != 1 for d in r.descriptor["Dilations"])]
    assert dil11 and all(r.verdict == "NOT_EXPRESSIBLE" and "opset 19" in r.reason for r in dil11)
