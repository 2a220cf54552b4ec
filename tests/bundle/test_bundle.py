"""Bundles: files present, repro.py standalone (onnxruntime + numpy only) reporting the mismatch,
the DxDispatch model passing the documented format checks (each of which can fail), the C++ desc
holding the descriptor's values (and compiling against directml.h's declarations)."""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnx_dml_bench.bundle import dxdispatch as DX
from onnx_dml_bench.bundle.build import BundleError, build
from onnx_dml_bench.triage.triage import bundle_command
from onnx_dml_bench.casefile import case_from_dict, dump
from onnx_dml_bench.ops.average_pooling1 import OP as AP
from onnx_dml_bench.ops._struct import declaration
from onnx_dml_bench.registry import OPERATORS

ROOT = Path(__file__).resolve().parents[2]

#: ONNX Runtime's CPU EP: SAME_UPPER with dilations uses the undilated kernel for the pads (a known
#: deviation, ort-maxpool-same-pads-ignore-dilation of ops/max_pooling2.py): the output shape differs
FAILING = {"op": "max_pooling2", "opset": 12, "onnx": {"auto_pad": "SAME_UPPER"},
           "descriptor": {"InputSizes": [1, 1, 5, 5], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                          "WindowSize": [2, 2], "StartPadding": [1, 1], "EndPadding": [1, 1], "Dilations": [2, 2],
                          "OutputIndicesDataType": "UINT32"},
           "inputs": {"family": "random", "seed": 3}}


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    from onnx_dml_bench.cli import main
    from onnx_dml_bench.results import read
    d = tmp_path_factory.mktemp("run")
    case = case_from_dict(FAILING)
    dump([case], d / "cases.json")
    code = main(["run", "--ep", "cpu", "--cases", str(d / "cases.json"), "--out", str(d / "out"), "--no-report"])
    (rec,) = read(d / "out" / "results.jsonl").records
    assert code == 1 and rec.verdict == "FAIL", rec.reason
    return d / "out" / "results.jsonl", rec


@pytest.fixture(scope="module")
def bundle_dir(failing_run, tmp_path_factory):
    results, rec = failing_run
    out = tmp_path_factory.mktemp("b") / "bundle"
    bundle_command(rec.case_id, results, out, None, rerun=True, say=lambda m: None)
    return out


def test_bundle_files(bundle_dir, failing_run):
    _, rec = failing_run
    for name in ("model.onnx", "test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb",
                 "test_data_set_0/output_1.pb", "case.json", "data.json", "ep_outputs/output_0.pb",
                 "cpu_outputs/output_1.pb", "repro.py", "README.md", "descriptor.cpp", "dxdispatch.json",
                 "cases.json", "record.json", "bundle.json"):
        assert (bundle_dir / name).is_file(), name
    readme = (bundle_dir / "README.md").read_text()
    assert rec.case_id in readme and "FAIL" in readme and "EP_WRONG" in readme
    assert "onnxruntime" in readme and "same as recorded" in readme and "CPUExecutionProvider" in readme
    meta = json.loads((bundle_dir / "bundle.json").read_text())
    assert meta["ep_outputs"] == ["Y", "Indices"] and meta["cpu_outputs"] == ["Y", "Indices"]
    assert "CPUExecutionProvider" in meta["outputs_from"]


def test_repro_runs_standalone_and_reports_the_mismatch(bundle_dir, tmp_path):
    work = tmp_path / "copy"
    shutil.copytree(bundle_dir, work)
    text = (work / "repro.py").read_text()
    assert "onnx_dml_bench" not in text and "import onnx\n" not in text
    # the bench and the onnx package made unimportable: only onnxruntime and numpy are left
    block = ("import sys, runpy; sys.modules['onnx'] = None; sys.modules['onnx_dml_bench'] = None; "
             "sys.argv = ['repro.py']; runpy.run_path('repro.py', run_name='__main__')")
    p = subprocess.run([sys.executable, "-I", "-c", block], cwd=work, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "CPUExecutionProvider Y: shape [1, 1, 4, 4], expected [1, 1, 5, 5]" in p.stdout, p.stdout
    # the outputs the EP of the record gave at bundle time are compared too (an EP not installed here)
    assert "CPUExecutionProvider (recorded in ep_outputs/) Y: shape [1, 1, 4, 4]" in p.stdout, p.stdout


def test_repro_reports_element_mismatches(tmp_path):
    """A case whose output shape is right but whose values are not: the first mismatches with
    coordinates (expected output tampered with, so that the CPU EP disagrees at one element)."""
    from onnx import numpy_helper
    case = case_from_dict({**FAILING, "onnx": {}, "descriptor": {**FAILING["descriptor"], "StartPadding": [0, 0],
                                                                   "EndPadding": [0, 0], "Dilations": [1, 1]}})
    out = build(case, tmp_path / "b")
    pb = out / "test_data_set_0" / "output_0.pb"
    from onnx import TensorProto
    t = TensorProto()
    t.ParseFromString(pb.read_bytes())
    y = numpy_helper.to_array(t).copy()
    y[0, 0, 1, 2] += 1.0
    pb.write_bytes(numpy_helper.from_array(y, t.name).SerializeToString())
    p = subprocess.run([sys.executable, "repro.py"], cwd=out, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "CPUExecutionProvider Y: 1/16 differ (exact)" in p.stdout, p.stdout
    assert "(0, 0, 1, 2)" in p.stdout
    assert "CPUExecutionProvider Indices: 0/16 differ" in p.stdout


def _repro_output(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "repro.py", *args], cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_bundle_can_run_a_shared_repro_script(bundle_dir, tmp_path):
    """Bundles kept together (the committed samples) share one copy of the script: a bundle's
    repro.py then runs it on its own folder, with the same answers, and its README says so; a
    bundle stands alone by default (the fixture's bundle holds the whole script)."""
    from onnx_dml_bench.bundle.build import share_repro
    from onnx_dml_bench.bundle.repro import REPRO
    assert (bundle_dir / "repro.py").read_text() == REPRO
    alone = _repro_output(bundle_dir)
    samples = tmp_path / "samples"
    shared = samples / "_shared" / "repro.py"
    one = samples / "run" / "bundle" / "one"
    shutil.copytree(bundle_dir, one)
    assert share_repro(one, shared) and shared.read_text() == REPRO
    text = (one / "repro.py").read_text()
    assert len(text) < 1000 and "'..', '..', '..', '_shared', 'repro.py'" in text and "onnx_dml_bench" not in text
    assert "runs the shared script `../../../_shared/repro.py`" in (one / "README.md").read_text()
    got = _repro_output(one)
    assert (got.returncode, got.stdout) == (alone.returncode, alone.stdout) and alone.returncode == 1, got.stderr
    assert "CPUExecutionProvider Y: shape [1, 1, 4, 4]" in got.stdout
    assert _repro_output(one, "--ep", "CPUExecutionProvider").stdout == _repro_output(bundle_dir, "--ep", "CPUExecutionProvider").stdout
    assert not share_repro(one, shared)                     # shares it already: nothing to do
    edited = samples / "run" / "bundle" / "edited"
    shutil.copytree(bundle_dir, edited)
    (edited / "repro.py").write_text("print('a script of my own')\n")
    with pytest.raises(BundleError, match="not the bench's repro script"):
        share_repro(edited, shared)
    case = case_from_dict(FAILING)
    two = build(case, samples / "other" / "deeper" / "bundle" / "two", shared_repro=shared)
    assert "'..', '..', '..', '..', '_shared', 'repro.py'" in (two / "repro.py").read_text()
    assert _repro_output(two).returncode == 1


def test_the_committed_bundles_share_the_bench_s_repro_script():
    """Every bundle of the committed samples runs reports/_shared/repro.py, which is the script the
    bundle writer writes (and each stub's path reaches it). Committed: the files git tracks, not
    the bundles a run of the bench wrote into its ignored folders (reports/latest, reports/ci)."""
    from onnx_dml_bench.bundle.repro import REPRO, STUB_MARK
    shared = ROOT / "reports" / "_shared" / "repro.py"
    assert shared.read_text(encoding="utf-8") == REPRO
    tracked = subprocess.run(["git", "ls-files", "-z", "--", "reports/*/bundle/*/repro.py"], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode().split("\0")
    stubs = sorted(ROOT / p for p in tracked if p)
    assert len(stubs) >= 30
    for p in stubs:
        text = p.read_text(encoding="utf-8")
        assert STUB_MARK in text, p
        rel = text.split(STUB_MARK, 1)[1].split()[0]
        assert (p.parent / rel).resolve() == shared.resolve(), p


def test_repro_reader_matches_onnx_for_every_type(tmp_path):
    from onnx import numpy_helper
    import runpy
    ns = runpy.run_path(str(_repro(tmp_path)), run_name="not_main")
    for dt in (np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.uint32, np.uint64):
        a = (np.arange(-6, 6).reshape(3, 4) % 200).astype(dt)
        p = tmp_path / f"{np.dtype(dt).name}.pb"
        p.write_bytes(numpy_helper.from_array(a, "T").SerializeToString())
        name, b = ns["read_tensor"](str(p))
        assert name == "T" and b.dtype == a.dtype and np.array_equal(a, b)


def _repro(tmp_path):
    from onnx_dml_bench.bundle.repro import REPRO
    p = tmp_path / "repro.py"
    p.write_text(REPRO)
    return p


# ----------------------------------------------------------------------------------------------
# DxDispatch model
# ----------------------------------------------------------------------------------------------

def _fields(case):
    return {case.operator.dml_type: [f.name for f in DX.layout(case) if f.present]}


def test_dxdispatch_model_of_the_bundle_passes_the_format_checks(bundle_dir):
    model = json.loads((bundle_dir / "dxdispatch.json").read_text())
    case = case_from_dict(FAILING)
    assert DX.check_model(model, _fields(case)) == []
    assert DX.binding_sizes_ok(model) == []
    d = model["dispatchables"]["max_pooling2"]
    assert d["type"] == "DML_OPERATOR_MAX_POOLING2"
    assert d["desc"]["Dilations"] == [2, 2] and d["desc"]["WindowSize"] == [2, 2]
    assert d["desc"]["StartPadding"] == [1, 1] and d["desc"]["OutputIndicesTensor"]["DataType"] == "UINT32"
    assert d["desc"]["OutputTensor"]["Sizes"] == [1, 1, 5, 5]
    x = np.array(model["resources"]["X"]["initialValues"], dtype=np.float32)
    assert np.array_equal(x.reshape(1, 1, 5, 5), case.inputs()["X"])


def test_dxdispatch_models_of_every_operator_pass_the_checks():
    for op in OPERATORS.values():
        for case in op.sweep("smoke")[:6]:
            m = DX.dxdispatch_model(case, case.inputs())
            assert DX.check_model(m, _fields(case)) == [], case.id
            assert DX.binding_sizes_ok(m) == [], case.id


def test_special_values_are_written_as_the_documented_strings():
    case = case_from_dict({**FAILING, "inputs": {"values": {"X": ["nan", "inf", "-inf", "-0.0", 1.5] + [0] * 20}}})
    m = DX.dxdispatch_model(case, case.inputs())
    assert m["resources"]["X"]["initialValues"][:5] == ["nan", "inf", "-inf", -0.0, 1.5]
    assert "NaN" not in DX.dumps(m) and "Infinity" not in DX.dumps(m)
    assert DX.check_model(m) == []


MUTATIONS = [
    ("drop commands", lambda m: m.pop("commands")),
    ("drop resources", lambda m: m.pop("resources")),
    ("resource without a data type", lambda m: m["resources"]["X"].pop("initialValuesDataType")),
    ("bad data type", lambda m: m["resources"]["X"].__setitem__("initialValuesDataType", "FLOAT")),
    ("string that is not nan/inf", lambda m: m["resources"]["X"]["initialValues"].__setitem__(0, "NaN")),
    ("constant without value", lambda m: m["resources"]["Y"]["initialValues"].pop("value")),
    ("valueCount 0", lambda m: m["resources"]["Y"]["initialValues"].__setitem__("valueCount", 0)),
    ("dispatchable type", lambda m: m["dispatchables"]["max_pooling2"].__setitem__("type", "MAX_POOLING2")),
    ("desc without a field", lambda m: m["dispatchables"]["max_pooling2"]["desc"].pop("Dilations")),
    ("desc with an unknown field", lambda m: m["dispatchables"]["max_pooling2"]["desc"].__setitem__("Dilation", [1, 1])),
    ("tensor sizes with 0", lambda m: m["dispatchables"]["max_pooling2"]["desc"]["InputTensor"].__setitem__("Sizes", [1, 0, 5, 5])),
    ("command type", lambda m: m["commands"][0].__setitem__("type", "run")),
    ("unbound tensor", lambda m: m["commands"][0]["bindings"].pop("OutputTensor")),
    ("binding to a missing resource", lambda m: m["commands"][0]["bindings"].__setitem__("InputTensor", "nope")),
    ("binding a non-tensor field", lambda m: m["commands"][0]["bindings"].__setitem__("Strides", "X")),
    ("print of a missing resource", lambda m: m["commands"][1].__setitem__("resource", "nope")),
]


@pytest.mark.parametrize("what,mutate", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_each_format_check_can_fail(what, mutate):
    case = case_from_dict(FAILING)
    model = DX.dxdispatch_model(case, case.inputs())
    assert DX.check_model(model, _fields(case)) == []
    bad = copy.deepcopy(model)
    mutate(bad)
    assert DX.check_model(bad, _fields(case)), what


def test_binding_size_check_can_fail():
    case = case_from_dict(FAILING)
    model = DX.dxdispatch_model(case, case.inputs())
    model["resources"]["X"]["initialValues"].pop()
    assert DX.binding_sizes_ok(model)


def test_a_documented_form_model_passes():
    """Initialiser forms of the documented format the bench does not write (sequence), and binding
    objects, are accepted."""
    model = {"resources": {"in": {"initialValuesDataType": "DML_TENSOR_DATA_TYPE_FLOAT16",
                                  "initialValues": {"valueCount": 4, "valueStart": 1, "valueDelta": 0.5}},
                           "out": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 4, "value": 0}}},
             "dispatchables": {"id": {"type": "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
                                      "desc": {"InputTensor": {"DataType": "FLOAT16", "Sizes": [4]},
                                               "OutputTensor": {"DataType": "FLOAT16", "Sizes": [4]}}}},
             "commands": [{"type": "dispatch", "dispatchable": "id",
                           "bindings": {"InputTensor": {"name": "in", "elementOffset": 0}, "OutputTensor": "out"}},
                          {"type": "print", "resource": "out"}]}
    assert DX.check_model(model) == []


# ----------------------------------------------------------------------------------------------
# C++
# ----------------------------------------------------------------------------------------------

def test_cpp_struct_holds_the_descriptor_values(bundle_dir):
    text = (bundle_dir / "descriptor.cpp").read_text()
    assert "DML_MAX_POOLING2_OPERATOR_DESC opDesc" in text
    assert "static const UINT inputTensorSizes[4] = { 1, 1, 5, 5 };" in text
    assert "static const UINT outputTensorSizes[4] = { 1, 1, 5, 5 };" in text
    assert "DML_TENSOR_DATA_TYPE_UINT32" in text and "DML_TENSOR_DATA_TYPE_FLOAT32" in text
    assert "static const UINT dilations[2] = { 2, 2 };" in text
    assert "static const UINT startPadding[2] = { 1, 1 };" in text
    assert "&outputIndicesTensor,  // OutputIndicesTensor" in text
    assert "DML_OPERATOR_MAX_POOLING2, &opDesc" in text


def test_cpp_optional_tensor_and_other_operators():
    case = case_from_dict({**FAILING, "descriptor": {**FAILING["descriptor"], "OutputIndicesDataType": None}})
    assert "nullptr,  // OutputIndicesTensor" in DX.cpp_struct(case)
    ap = AP.sweep("smoke")[0]
    t = DX.cpp_struct(ap)
    assert "DML_AVERAGE_POOLING1_OPERATOR_DESC opDesc" in t and "// IncludePadding" in t


def _shim(tmp: Path, extra=()) -> Path:
    """A DirectML.h for a syntax check: the harness's declarations of DirectML's tensor structs
    (dml/direct/dml_abi.h) with the Windows base types, the enums of the operators' directml.h
    numbers and each operator's struct as it declares it (tests/contract/test_struct_layout.py checks those against
    directml.h): the registered operators', and those of ``extra`` (operators declared in a test) that
    the registry does not already declare."""
    abi = (ROOT / "onnx_dml_bench" / "dml" / "direct" / "dml_abi.h").read_text()
    part = abi[abi.index("/* ---- tensors"):abi.index("/* ---- operators")]
    ops = list({op.dml_name: op for op in [*extra, *OPERATORS.values()]}.values())   # one struct per name
    numbers: dict[str, dict[str, int]] = {}
    for op in ops:
        for name, values in op.directml_h.numbers.items():
            numbers.setdefault(name, {}).update(values)
    enums = "".join(f"typedef enum {name} {{ " + ", ".join(f"{k} = {v}" for k, v in values.items()) + f" }} {name};\n"
                    for name, values in numbers.items())
    structs = "".join(declaration(op.dml_name, op.layout(op.sweep("smoke")[0].desc)) + "\n" for op in ops)
    (tmp / "DirectML.h").write_text(
        "#pragma once\ntypedef unsigned int UINT; typedef int INT; typedef unsigned long long UINT64; typedef int BOOL;\n"
        "typedef float FLOAT;\n#define TRUE 1\n#define FALSE 0\n" + part + enums +
        "typedef struct DML_SIZE_2D { UINT Width; UINT Height; } DML_SIZE_2D;\n"
        "typedef struct DML_OPERATOR_DESC { DML_OPERATOR_TYPE Type; const void *Desc; } DML_OPERATOR_DESC;\n" + structs)
    return tmp


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_cpp_compiles_against_directml_declarations(tmp_path):
    inc = _shim(tmp_path)
    cases = [case_from_dict(FAILING)] + [op.sweep("smoke")[0] for op in OPERATORS.values()]
    for i, case in enumerate(cases):
        src = tmp_path / f"d{i}.cpp"
        src.write_text(DX.cpp_struct(case))
        p = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                            "-Wno-unused-variable", "-I", str(inc), str(src)], capture_output=True, text=True)
        assert p.returncode == 0, (case.id, p.stderr)


def test_bundle_refuses_a_non_empty_folder(tmp_path):
    case = case_from_dict(FAILING)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    with pytest.raises(BundleError, match="not empty"):
        build(case, tmp_path / "b")


def test_a_case_with_an_infinite_error_bound_is_bundled_with_inf_as_text(tmp_path, monkeypatch):
    """An infinite error bound (JSON has no inf): the bundle and its case.json / data.json are still
    written, with "inf", and repro.py reads it. An input infinity no longer makes the bound infinite
    (it gives the same infinity in every summation order), so the bound is made infinite here."""
    from onnx_dml_bench import registry
    ap = registry.get("average_pooling1")
    monkeypatch.setattr(type(ap), "error_bound", lambda self, case, inputs, ref: {"Y": np.full(ref["Y"].shape, np.inf)})
    case = case_from_dict({
        "op": "average_pooling1", "opset": 19, "onnx": {"ceil_mode": 1},
        "descriptor": {"InputSizes": [1, 2, 3, 1], "DataType": "FLOAT16", "DimensionCount": 2, "Strides": [2, 1],
                       "WindowSize": [2, 1], "StartPadding": [1, 0], "EndPadding": [0, 0], "Dilations": [2, 1],
                       "IncludePadding": True, "FeatureLevel": "6.2"},
        "inputs": {"values": {"X": [-1.0, "-inf", -3.0, -4.0, -5.0, -6.0]}}})
    out = build(case, tmp_path / "b")
    meta = json.loads((out / "case.json").read_text())
    assert meta["outputs"][0]["compare"]["max_abs_error"] == "inf"
    assert json.loads((out / "data.json").read_text())["atol"] == "inf"
    r = subprocess.run([sys.executable, str(out / "repro.py"), "--ep", "CPUExecutionProvider"],
                       capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
