"""Fuzzing the readers: whatever the bytes, ``results.read``, ``casefile.load``,
``expectations.load`` and the bounded JSON/YAML readers (``safeload``: fixture metadata, YAML with
aliases) either parse or raise their own error with one line; never another exception. And every
command that reads a file (report, compare, merge, cases --failed-from, expectations --from,
shrink, bundle, triage, run --cases, run --expectations) given fuzzed files: exit code 0, 1 or 2,
one line on 2, never a traceback. The crafted corpus (tests/corpus/) is tests/test_crafted_files.py."""
from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
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


# ----------------------------------------------------------------------------------------------
# Every other reader of a file a person or a CI artifact hands over, and every command that reads one
# ----------------------------------------------------------------------------------------------

from onnx_dml_bench import safeload  # noqa: E402
from onnx_dml_bench.cli import main  # noqa: E402
from onnx_dml_bench.expectations import ExpectationsError  # noqa: E402
from onnx_dml_bench.expectations import load as load_expectations  # noqa: E402

EXPECTATIONS = {"version": 1, "ep": "CPUExecutionProvider",
                "expectations": [{"cases": "mp2-*", "verdict": "FAIL", "reason": "r", "link": "l"}]}

#: YAML made of scalars, flow and block collections, anchors and aliases (of what came before)
yaml_texts = st.lists(st.sampled_from(["a", "1", "-", "- ", ": ", "[", "]", "{", "}", ",", "&x ", "*x", "&y ", "*y",
                                       "\n", "  ", "'", '"', "!!str ", "!!python/object ", "? ", "#", "|", ">",
                                       "~", "null", "1e999", "0x", "<<: *x"]),
                      max_size=60).map("".join)


def _expect_bytes(data: bytes):
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "known.yaml"
        p.write_bytes(data)
        try:
            load_expectations(p)
        except ExpectationsError as e:
            assert "\n" not in str(e) and str(p) in str(e)


@SETTINGS
@given(st.binary(max_size=300))
def test_expectations_random_bytes(data):
    _expect_bytes(data)


@SETTINGS
@given(json_values)
def test_expectations_random_values(value):
    _expect_bytes(json.dumps(value).encode())
    _expect_bytes(json.dumps({**EXPECTATIONS, "expectations": [value]}).encode())


@SETTINGS
@given(st.sampled_from(["cases", "verdict", "reason", "link"]), json_values)
def test_expectations_fields_with_random_values(field, value):
    entry = {**EXPECTATIONS["expectations"][0], field: value}
    _expect_bytes(json.dumps({**EXPECTATIONS, "expectations": [entry]}).encode())


@SETTINGS
@given(yaml_texts)
def test_yaml_readers_on_random_yaml(text):
    """Case files and expectations: any YAML, aliases included, parses within the bounds or is one line."""
    _load_bytes(text.encode(), ".yaml")
    _expect_bytes(text.encode())
    try:
        safeload.loads_yaml(text, "f.yaml")
    except safeload.UntrustedFileError as e:
        assert "\n" not in str(e) and str(e).startswith("f.yaml")


@SETTINGS
@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=12))
def test_yaml_alias_expansion_is_counted(levels, width):
    """Nested aliases: accepted while what they expand to is within MAX_NODES, refused beyond, fast."""
    lines = ["x0: &a0 [" + ", ".join(["v"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    expanded = sum(width ** k for k in range(1, levels + 1)) + 2 * levels
    try:
        safeload.loads_yaml("\n".join(lines), "f.yaml")
        assert expanded <= safeload.MAX_NODES * 2
    except safeload.UntrustedFileError as e:
        assert "aliases expanded" in str(e)
        assert expanded > safeload.MAX_NODES // 2


@SETTINGS
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_fixture_metadata_random(data):
    try:
        value = safeload.loads_json(data, "case.json")
    except safeload.UntrustedFileError as e:
        assert "\n" not in str(e) and str(e).startswith("case.json")
    else:
        safeload.check_depth(value)


#: every command that reads a file, with the file in its place: (kind of file, argv builder)
COMMANDS = {
    "report": ("results", lambda f, t: ["report", str(f), "--out", str(t / "out")]),
    "compare": ("results", lambda f, t: ["compare", str(f), str(f), "--out", str(t / "c")]),
    "merge": ("results", lambda f, t: ["merge", str(t / "m.jsonl"), str(f)]),
    "cases --failed-from": ("results", lambda f, t: ["cases", "--failed-from", str(f), "--export", str(t / "x.yaml")]),
    "expectations --from": ("results", lambda f, t: ["expectations", "--from", str(f), "--out", str(t / "e.yaml")]),
    "shrink --from": ("results", lambda f, t: ["shrink", "c1", "--from", str(f), "--ep", "cpu", "--time-limit", "5",
                                               "--out", str(t / "s.json")]),
    "bundle --from": ("results", lambda f, t: ["bundle", "c1", "--from", str(f), "--out", str(t / "b"), "--no-rerun"]),
    "triage --from": ("results", lambda f, t: ["triage", "--from", str(f), "--ep", "cpu", "--no-bundles",
                                               "--time-limit", "5"]),
    "run --cases": ("cases", lambda f, t: ["run", "--cases", str(f), "--out", str(t / "r"), "--no-report"]),
    "run --expectations": ("expectations", lambda f, t: ["run", "--op", "space_to_depth1", "--dtype", "f32",
                                                         "--expectations", str(f), "--out", str(t / "r"),
                                                         "--no-report"]),
}
CLI_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _mutations(kind: str):
    base = {"results": VALID, "cases": json.dumps({"cases": [CASE]}).encode(),
            "expectations": json.dumps(EXPECTATIONS).encode()}[kind]
    return (st.binary(max_size=200)
            | st.integers(min_value=0, max_value=len(base)).map(lambda n: base[:n])
            | st.tuples(st.integers(min_value=0, max_value=len(base)), st.binary(min_size=1, max_size=8)).map(
                lambda t: base[:t[0]] + t[1] + base[t[0] + len(t[1]):])
            | json_values.map(lambda v: json.dumps(v).encode()))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_commands_on_fuzzed_files(command):
    """Whatever the bytes of the file it reads, a command exits 0, 1 or 2; on 2 with one line on
    stderr; never a traceback."""
    import contextlib
    import io
    kind, build = COMMANDS[command]
    suffix = {"results": ".jsonl", "cases": ".json", "expectations": ".yaml"}[kind]

    @CLI_SETTINGS
    @given(_mutations(kind))
    def check(data):
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            f = t / f"input{suffix}"
            f.write_bytes(data)
            err, out = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                code = main(build(f, t))
            text = err.getvalue() + out.getvalue()
            assert "Traceback" not in text, text[-3000:]
            assert code in (0, 1, 2), (code, text[-3000:])
            if code == 2:
                lines = [x for x in err.getvalue().splitlines() if x.strip()]
                assert len(lines) == 1 and len(lines[0]) < 2000, text[-3000:]

    check()
