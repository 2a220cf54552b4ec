"""Fuzzing the readers: whatever the bytes, ``results.read`` and ``casefile.load`` either parse or
raise their own error (ResultsError, CaseFileError) with one line; never another exception."""
from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnx_dml_bench.casefile import CaseFileError, load
from onnx_dml_bench.results import ResultsError, read

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))

ENV = {"record": "environment", "schema": "onnx-dml-bench/result/2", "ep": "CPUExecutionProvider",
       "optimization": "disabled", "env_id": "e1"}
REC = {"record": "case", "case_id": "c1", "op": "max_pooling2", "dml_op": "DML_MAX_POOLING2_OPERATOR_DESC",
       "dtype": "FLOAT32", "opset": 12, "family": "random", "seed": 1, "descriptor": {"InputSizes": [1, 1, 2, 2]},
       "ep": "CPUExecutionProvider", "verdict": "PASS", "outputs": {"Y": {"output": "Y", "kind": "exact", "match": True,
                                                                          "total": 4, "max_ulp": 0}},
       "env_id": "e1"}
VALID = (json.dumps(ENV) + "\n" + json.dumps(REC) + "\n").encode()
CASE = {"op": "max_pooling2", "opset": 12,
        "descriptor": {"InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                       "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                       "OutputIndicesDataType": "UINT32"},
        "inputs": {"values": {"X": [1, 2, 3, 4]}}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


def _read_bytes(data: bytes, suffix=".jsonl"):
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"f{suffix}"
        p.write_bytes(data)
        try:
            read(p)
        except ResultsError as e:
            assert "\n" not in str(e) and str(p) in str(e)
        try:
            read(p, allow_partial=True)
        except ResultsError:
            pass


def _load_bytes(data: bytes, suffix: str):
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"cases{suffix}"
        p.write_bytes(data)
        try:
            load(p)
        except CaseFileError as e:
            assert str(p) in str(e)


@SETTINGS
@given(st.binary(max_size=400))
def test_results_random_bytes(data):
    _read_bytes(data)
    _read_bytes(b"\x1f\x8b" + data)


@SETTINGS
@given(json_values)
def test_results_random_json_values(value):
    _read_bytes((json.dumps(ENV) + "\n" + json.dumps(value) + "\n").encode())
    _read_bytes((json.dumps(value) + "\n").encode())


@SETTINGS
@given(st.dictionaries(st.sampled_from(sorted(REC) + ["cpu", "placement", "timings", "labels"]), json_values, max_size=6))
def test_results_records_with_wrong_fields(patch):
    _read_bytes((json.dumps(ENV) + "\n" + json.dumps({**REC, **patch}) + "\n").encode())
    _read_bytes((json.dumps({**ENV, **patch}) + "\n").encode())


@SETTINGS
@given(st.integers(min_value=0, max_value=len(VALID)))
def test_results_truncated_valid_file(n):
    _read_bytes(VALID[:n])
    _read_bytes(gzip.compress(VALID)[:n])


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([".json", ".yaml"]))
def test_casefile_random_bytes(data, suffix):
    _load_bytes(data, suffix)


@SETTINGS
@given(json_values, st.sampled_from([".json", ".yaml"]))
def test_casefile_random_json_values(value, suffix):
    _load_bytes(json.dumps(value).encode(), suffix)
    _load_bytes(json.dumps([value]).encode(), suffix)


@SETTINGS
@given(st.sampled_from(["op", "opset", "descriptor", "onnx", "inputs", "id", "note"]), json_values)
def test_casefile_fields_with_random_values(field, value):
    _load_bytes(json.dumps([{**CASE, field: value}]).encode(), ".json")


@SETTINGS
@given(st.sampled_from(sorted(CASE["descriptor"])), json_values)
def test_casefile_descriptor_with_random_values(field, value):
    d = json.loads(json.dumps(CASE))
    d["descriptor"][field] = value
    _load_bytes(json.dumps([d]).encode(), ".json")


@SETTINGS
@given(st.integers(min_value=0, max_value=400))
def test_casefile_truncated(n):
    text = json.dumps({"cases": [CASE]}).encode()
    _load_bytes(text[:n], ".json")
