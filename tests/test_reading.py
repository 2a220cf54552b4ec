"""Reading results: the typed parser is built once per class (not per record), ``report`` and
``compare`` read each file once, records are kept per (case, environment), records without an
env_id belong to the environment line above them, and the texts of a file are kept once.
``benchmarks/read_speed.py`` measures 200,000 records."""
from __future__ import annotations

import lzma
import json
import typing
from pathlib import Path

import pytest

from onnx_dml_bench import record as REC
from onnx_dml_bench import results as R
from onnx_dml_bench.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "reports/dml-lavapipe/results.jsonl.xz"


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """3,000 records of a real run (new ids), one environment (whose run selected those 3,000)."""
    lines = lzma.decompress(SAMPLE.read_bytes()).decode().splitlines()
    env, recs = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    env["total_cases"] = 3000
    out = tmp_path_factory.mktemp("big") / "results.jsonl"
    with open(out, "w") as f:
        f.write(json.dumps(env) + "\n")
        for i in range(3000):
            r = dict(recs[i % len(recs)])
            r["case_id"] = f"{r['case_id']}-{i}"
            f.write(json.dumps(r) + "\n")
    return out


def test_type_hints_are_walked_once_per_class(big, monkeypatch):
    calls = []
    real = typing.get_type_hints

    def counting(tp, *a, **k):
        calls.append(tp)
        return real(tp, *a, **k)

    monkeypatch.setattr(typing, "get_type_hints", counting)
    monkeypatch.setattr(REC, "_PARSERS", {})
    res = R.read(big)
    assert len(res.records) == 3000
    assert len(calls) <= 8, len(calls)           # CaseRecord, OutputStats, CpuSide, Placement, Timings, Environment


def test_parsed_records_equal_their_json(big):
    """The compiled parser gives the records the JSON describes (written back, the same line)."""
    res = R.read(big)
    lines = big.read_text().splitlines()
    for line, rec in zip(lines[1:50], res.records[:49]):
        back, want = json.loads(REC.to_json(rec)), json.loads(line)
        # a field newer than the file (the CPU side's labels, a record's runs and dml_image) comes
        # back at its default
        if back.get("cpu") and "labels" not in (want.get("cpu") or {}) and back["cpu"].get("labels") == []:
            del back["cpu"]["labels"]
        for k in [k for k in back if k not in want and back[k] is None and k in ("runs", "dml_image")]:
            del back[k]
        if "rerun" not in want and back.get("rerun") == "":       # so is ``rerun`` (a batch run again)
            del back["rerun"]
        if "source" not in want and back.get("source") is None:   # and ``source`` (a sized profile's case)
            del back["source"]
        for side, wside in ((back, want), (back.get("cpu") or {}, want.get("cpu") or {})):
            for name, o in (side.get("outputs") or {}).items():      # and an output's ``digest``
                if "digest" not in ((wside.get("outputs") or {}).get(name) or {}) and o.get("digest") is None:
                    del o["digest"]
        assert back == want


def test_texts_are_kept_once(big):
    res = R.read(big)
    a, b = res.records[0], res.records[1]
    assert a.ep is b.ep and a.record is b.record
    builds = {id(r.cpu.build) for r in res.records if r.cpu is not None}
    assert len(builds) <= 3


@pytest.mark.parametrize("argv", [["report", "{f}", "--out", "{t}/out"],
                                  ["report", "{f}", "--allow-partial", "--out", "{t}/out"],
                                  ["compare", "{f}", "{f}", "--out", "{t}/c"]])
def test_each_file_is_read_once(big, tmp_path, monkeypatch, argv):
    reads = []
    real = R.read

    def counting(path, *a, **k):
        reads.append(Path(path))
        return real(path, *a, **k)

    monkeypatch.setattr(R, "read", counting)
    code = main([x.format(f=big, t=tmp_path) for x in argv])
    assert code in (0, 1)
    assert len(reads) == argv.count("{f}"), reads


def test_records_without_env_id_belong_to_the_environment_above(tmp_path):
    env_a = {"record": "environment", "ep": "DirectML", "versions": {"DirectML.dll": "1.15.4.0"}}
    env_b = {**env_a, "versions": {"DirectML.dll": "1.15.2.0"}}
    rec = {"case_id": "c1", "op": "o", "dml_op": "d", "dtype": "FLOAT32", "opset": 1, "family": "random", "seed": 0,
           "descriptor": {}, "ep": "DirectML", "verdict": "PASS"}
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (env_a, rec, env_b, {**rec, "verdict": "FAIL"})) + "\n")
    res = R.read(f)
    assert len(res.envs) == 2 and res.envs[0].env_id != res.envs[1].env_id
    assert [(r.env_id, r.verdict) for r in res.records] == [(res.envs[0].env_id, "PASS"), (res.envs[1].env_id, "FAIL")]


def test_a_resumed_case_keeps_its_last_record(tmp_path):
    env = {"record": "environment", "ep": "CPUExecutionProvider", "env_id": "e"}
    rec = {"case_id": "c1", "op": "o", "dml_op": "d", "dtype": "FLOAT32", "opset": 1, "family": "random", "seed": 0,
           "descriptor": {}, "ep": "CPUExecutionProvider", "verdict": "ERROR", "env_id": "e"}
    f = tmp_path / "r.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (env, rec, env, {**rec, "verdict": "PASS"})) + "\n")
    assert [r.verdict for r in R.read(f).records] == ["PASS"]


def test_env_labels_name_what_differs():
    base = REC.Environment(ep="DirectML", versions={"DirectML.dll": "1.15.4.0", "onnx": "1.23"}, device="lvp")
    other = REC.Environment(ep="DirectML", versions={"DirectML.dll": "1.15.2.0", "onnx": "1.23"}, device="lvp")
    cpu = REC.Environment(ep="CPUExecutionProvider")
    for e in (base, other, cpu):
        e.env_id = R.env_id(e)
    labels = R.env_labels([base, other, cpu])
    assert labels == {base.env_id: "DirectML (DirectML.dll 1.15.4.0)", other.env_id: "DirectML (DirectML.dll 1.15.2.0)",
                      cpu.env_id: "CPUExecutionProvider"}
    assert R.distinguishing([base, cpu]) == []
