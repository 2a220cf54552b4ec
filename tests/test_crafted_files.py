"""Crafted files (tests/corpus/, see its README) through every command that reads a file: each is
refused in bounded time with exit code 2 and one short line on stderr naming the file, never a
traceback, a MemoryError or a RecursionError; and the readers underneath (results JSONL, case
files, expectations, fixture metadata, perf.json) hold their bounds: file size, line length,
nesting depth, YAML aliases counted as what they expand to."""
from __future__ import annotations

import gzip
import json
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from onnx_dml_bench import safeload
from onnx_dml_bench.casefile import CaseFileError
from onnx_dml_bench.casefile import load as load_cases
from onnx_dml_bench.cli import main
from onnx_dml_bench.expectations import ExpectationsError
from onnx_dml_bench.expectations import load as load_expectations
from onnx_dml_bench.results import ResultsError, read

CORPUS = Path(__file__).parent / "corpus"
#: the longest error line accepted (the billion-laughs file once gave a 312 MB one)
MAX_LINE = 1000
#: seconds a command may take to refuse a crafted file (the billion-laughs file once ran 47 s to a MemoryError)
MAX_SECONDS = 20

CASE_FILES = ["billion-laughs.yaml", "recursive-alias.yaml", "deep-nesting.json", "deep-nesting.yaml",
              "nested-500.json", "huge-value.json"]
EXPECTATIONS = ["billion-laughs-expectations.yaml", "deep-nesting-expectations.yaml", "billion-laughs.yaml",
                "recursive-alias.yaml", "deep-nesting.json"]
RESULTS = ["unknown-verdict.jsonl", "unknown-cpu-verdict.jsonl", "unknown-attribution.jsonl",
           "nested-record.jsonl", "deep-nesting.jsonl", "huge-field.jsonl", "gzip-one-line.jsonl.gz",
           "billion-laughs.yaml", "deep-nesting.json"]
CASE = "mp2-f32-c1"

ENV = {"record": "environment", "schema": "onnx-dml-bench/result/2", "ep": "CPUExecutionProvider",
       "optimization": "disabled", "env_id": "e1"}
REC = {"record": "case", "case_id": CASE, "op": "max_pooling2", "dml_op": "DML_MAX_POOLING2_OPERATOR_DESC",
       "dtype": "FLOAT32", "opset": 12, "family": "random", "seed": 1, "descriptor": {"InputSizes": [1, 1, 2, 2]},
       "ep": "CPUExecutionProvider", "verdict": "PASS", "env_id": "e1"}


def _good(tmp: Path) -> Path:
    p = tmp / "good" / "results.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(ENV) + "\n" + json.dumps(REC) + "\n")
    return p


def _resume_over(f: Path, t: Path) -> list[str]:
    out = t / "resumed"
    out.mkdir()
    shutil.copyfile(f, out / "results.jsonl")
    return ["run", "--op", "space_to_depth1", "--dtype", "f32", "--out", str(out), "--resume", "--no-report"]


#: every command that reads a results file: (file, scratch folder) -> argv
RESULTS_COMMANDS = {
    "report": lambda f, t: ["report", str(f), "--out", str(t / "out")],
    "report --allow-partial": lambda f, t: ["report", str(f), "--allow-partial", "--out", str(t / "out")],
    "compare (baseline)": lambda f, t: ["compare", str(f), str(_good(t)), "--out", str(t / "c")],
    "compare (current)": lambda f, t: ["compare", str(_good(t)), str(f), "--out", str(t / "c")],
    "merge": lambda f, t: ["merge", str(t / "m.jsonl"), str(_good(t)), str(f)],
    "cases --failed-from": lambda f, t: ["cases", "--failed-from", str(f), "--export", str(t / "x.yaml")],
    "expectations --from": lambda f, t: ["expectations", "--from", str(f), "--out", str(t / "e.yaml")],
    "shrink --from": lambda f, t: ["shrink", CASE, "--from", str(f), "--ep", "cpu", "--out", str(t / "s.json")],
    "bundle --from": lambda f, t: ["bundle", CASE, "--from", str(f), "--out", str(t / "b"), "--no-rerun"],
    "triage --from": lambda f, t: ["triage", "--from", str(f), "--ep", "cpu"],
    "fuzz --baseline": lambda f, t: ["fuzz", "--ep", "cpu", "--baseline", str(f), "--budget", "5s", "--max-cases", "1",
                                     "--out", str(t / "fz")],
    "run --resume": _resume_over,
}
CASE_COMMANDS = {
    "run --cases": lambda f, t: ["run", "--cases", str(f), "--out", str(t / "r"), "--no-report"],
    "judge --cases": lambda f, t: ["judge", "--cases", str(f), "--outputs", str(t), "--ep", "cpu", "--out",
                                   str(t / "r"), "--no-report"],
    "perf --cases": lambda f, t: ["perf", "--ep", "cpu", "--cases", str(f), "--runs", "1", "--warmup", "0",
                                  "--out", str(t / "p")],
}
PERF_FILES = ["deep-nesting.json", "nested-500.json", "huge-value.json", "billion-laughs.yaml", "perf-deep"]
EXPECTATION_COMMANDS = {
    "run --expectations": lambda f, t: ["run", "--op", "space_to_depth1", "--dtype", "f32", "--expectations", str(f),
                                        "--out", str(t / "r"), "--no-report"],
    "judge --expectations": lambda f, t: ["judge", "--cases", str(_one_case(t)), "--outputs", str(t), "--ep", "cpu",
                                          "--expectations", str(f), "--out", str(t / "r"), "--no-report"],
}


def _one_case(t: Path) -> Path:
    p = t / "one.json"
    p.write_text(json.dumps({"cases": [{"op": "space_to_depth1", "descriptor": {
        "InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "BlockSize": 2}}]}))
    return p


def _refused(argv: list[str], name: str, capsys) -> str:
    capsys.readouterr()
    t0 = time.monotonic()
    code = main(argv)
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, (argv, code, err[-2000:])
    assert len(lines) == 1, (argv, err[-2000:])
    assert name in lines[0], (name, lines[0][:300])
    assert len(lines[0]) <= MAX_LINE, (argv, len(lines[0]), lines[0][:300])
    assert "Traceback" not in out + err
    assert took < MAX_SECONDS, (argv, took)
    return lines[0]


def test_the_corpus_is_there():
    names = {p.name for p in CORPUS.iterdir()}
    assert set(CASE_FILES + EXPECTATIONS + RESULTS) <= names
    assert "README.md" in names


@pytest.mark.parametrize("command", sorted(RESULTS_COMMANDS))
@pytest.mark.parametrize("name", RESULTS)
def test_crafted_results_file(name, command, tmp_path, capsys):
    f = tmp_path / name
    shutil.copyfile(CORPUS / name, f)
    argv = RESULTS_COMMANDS[command](f, tmp_path)
    _refused(argv, name if command != "run --resume" else "results.jsonl", capsys)
    assert not (tmp_path / "m.jsonl").exists()


@pytest.mark.parametrize("name", CASE_FILES)
def test_crafted_case_file(name, tmp_path, capsys):
    for command, build in CASE_COMMANDS.items():
        _refused(build(CORPUS / name, tmp_path), name, capsys)
        assert not (tmp_path / "r" / "results.jsonl").exists()


@pytest.mark.parametrize("name", EXPECTATIONS)
def test_crafted_expectations_file(name, tmp_path, capsys):
    for command, build in EXPECTATION_COMMANDS.items():
        _refused(build(CORPUS / name, tmp_path), name, capsys)


@pytest.mark.parametrize("name", PERF_FILES)
def test_crafted_perf_file(name, tmp_path, capsys):
    """perf-compare and compare, given a crafted perf file on either side (one that begins as a perf
    file does, then nests 100,000 levels deep, among them)."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"record": "perf", "eps": {}}))
    f = tmp_path / name
    if name == "perf-deep":
        f.write_text('{"record": "perf", "eps": ' + "[" * 100_000 + "]" * 100_000 + "}")
    else:
        shutil.copyfile(CORPUS / name, f)
    for argv in (["perf-compare", str(f), str(good), "--out", str(tmp_path / "c.html")],
                 ["perf-compare", str(good), str(f), "--out", str(tmp_path / "c.html")]):
        _refused(argv, name, capsys)
    if name == "perf-deep":
        _refused(["compare", str(good), str(f), "--out", str(tmp_path / "c.html")], name, capsys)


def test_unknown_verdict_names_file_line_and_field(tmp_path, capsys):
    line = _refused(["report", str(CORPUS / "unknown-verdict.jsonl"), "--out", str(tmp_path)],
                    "unknown-verdict.jsonl:3", capsys)
    assert "verdict" in line and "WOBBLY" in line
    line = _refused(["compare", str(CORPUS / "unknown-cpu-verdict.jsonl"), str(_good(tmp_path))],
                    "unknown-cpu-verdict.jsonl:2", capsys)
    assert "cpu.verdict" in line and "MAYBE" in line
    with pytest.raises(ResultsError, match=r"unknown-attribution.jsonl:2: attribution: unknown attribution 'GREMLINS'"):
        read(CORPUS / "unknown-attribution.jsonl")


# ----------------------------------------------------------------------------------------------
# The readers' bounds, one by one
# ----------------------------------------------------------------------------------------------

def test_billion_laughs_is_refused_before_it_expands():
    t0 = time.monotonic()
    tracemalloc.start()
    try:
        with pytest.raises(CaseFileError, match="billion-laughs.yaml:.*aliases expanded"):
            load_cases(CORPUS / "billion-laughs.yaml")
        with pytest.raises(ExpectationsError, match="aliases expanded"):
            load_expectations(CORPUS / "billion-laughs-expectations.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20 and time.monotonic() - t0 < 10


def test_recursive_alias_is_refused():
    with pytest.raises(CaseFileError, match="recursive-alias.yaml:.*refers to a node that contains it"):
        load_cases(CORPUS / "recursive-alias.yaml")


@pytest.mark.parametrize("name", ["deep-nesting.json", "deep-nesting.yaml", "nested-500.json"])
def test_deep_nesting_is_one_line(name):
    with pytest.raises(CaseFileError) as e:
        load_cases(CORPUS / name)
    assert "nested deeper than" in str(e.value) and name in str(e.value) and "\n" not in str(e.value)


def test_aliases_within_the_bound_still_load(tmp_path):
    """A hand-written case file may share a descriptor through an anchor (what yaml.safe_dump writes)."""
    f = tmp_path / "shared.yaml"
    f.write_text("d: &d {InputSizes: [1, 1, 4, 4], DataType: FLOAT32, DimensionCount: 2, Strides: [1, 1],\n"
                 "        WindowSize: [2, 2], StartPadding: [0, 0], EndPadding: [0, 0], Dilations: [1, 1],\n"
                 "        OutputIndicesDataType: UINT32}\n"
                 "cases:\n  - {op: max_pooling2, descriptor: *d}\n  - {op: max_pooling2, descriptor: *d, "
                 "inputs: {family: ties, seed: 3}}\n")
    assert len(load_cases(f)) == 2


def test_huge_value_error_is_short():
    with pytest.raises(CaseFileError) as e:
        load_cases(CORPUS / "huge-value.json")
    assert len(str(e.value)) <= safeload.MAX_MESSAGE and "opset" in str(e.value)
    with pytest.raises(ResultsError) as e:
        read(CORPUS / "huge-field.jsonl")
    assert len(str(e.value)) <= MAX_LINE and "huge-field.jsonl:2: opset: expected an integer" in str(e.value)


def test_file_size_limit(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:          # sparse: nothing is written but the size
        f.truncate(safeload.MAX_FILE_BYTES + 1)
    with pytest.raises(CaseFileError, match=r"big.json: larger than 32 MiB"):
        load_cases(big)
    big_yaml = tmp_path / "big.yaml"
    big.rename(big_yaml)
    with pytest.raises(ExpectationsError, match=r"big.yaml: larger than"):
        load_expectations(big_yaml)


def test_results_line_limit_and_memory():
    """A gzip of one 64 MiB line: refused at the line limit, never held whole (let alone three times)."""
    tracemalloc.start()
    try:
        with pytest.raises(ResultsError, match=r"gzip-one-line.jsonl.gz:2: a line longer than 32 MiB"):
            read(CORPUS / "gzip-one-line.jsonl.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 << 20, peak


def test_nested_record_is_refused_with_its_field():
    with pytest.raises(ResultsError, match=r"nested-record.jsonl:2: descriptor.Deep(\.n)*: nested deeper than 32"):
        read(CORPUS / "nested-record.jsonl")


def test_fixture_metadata_is_bounded(tmp_path):
    from onnx_dml_bench.fixtures import FixtureError, export, load_fixture
    from onnx_dml_bench.registry import OPERATORS
    case = next(c for c in OPERATORS["max_pooling2"].sweep("smoke")
                if c.operator.expressible(c) is None and c.family == "random")
    export([case], tmp_path / "fx", include_open=True)
    folder = tmp_path / "fx" / case.id
    for name in ("deep-nesting.json", "nested-500.json"):
        shutil.copyfile(CORPUS / name, folder / "case.json")
        with pytest.raises(FixtureError) as e:
            load_fixture(folder)
        assert "case.json" in str(e.value) and "nested deeper" in str(e.value) and "\n" not in str(e.value)


def test_perf_file_that_is_no_perf_file_is_replaced(tmp_path):
    from onnx_dml_bench.perf import write_perf_json as write
    for name in ("deep-nesting.json", "nested-500.json", "huge-value.json"):
        p = tmp_path / name
        shutil.copyfile(CORPUS / name, p)
        write(p, {"ep": "CPUExecutionProvider", "rows": []})
        assert json.loads(p.read_text())["eps"].keys() == {"CPUExecutionProvider"}


def test_yaml_errors_are_one_line_with_position(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("cases:\n  - op: max_pooling2\n    descriptor: {InputSizes: [1, 1\n")
    with pytest.raises(CaseFileError) as e:
        load_cases(f)
    assert "\n" not in str(e.value) and "bad.yaml:" in str(e.value)


def test_gzip_cut_short(tmp_path):
    f = tmp_path / "cut.jsonl.gz"
    f.write_bytes(gzip.compress((json.dumps(ENV) + "\n" + json.dumps(REC) + "\n").encode() * 50)[:-30])
    with pytest.raises(ResultsError, match="cut.jsonl.gz: a damaged gzip file"):
        read(f)


def test_bidi_and_control_characters_are_shown_escaped_in_the_report(tmp_path):
    """bidi-texts.jsonl: right-to-left overrides, isolates, a zero-width space, an ANSI escape and a
    bell in case ids, the EP name, labels and a reason. report.html holds none of them raw, neither in
    its markup nor in the case data its script shows (nor a case's detail): each is its escape,
    ``\\u202e``, so no text is shown reversed or hidden."""
    import re

    from onnx_dml_bench.report.html import _detail_text, embedded_data
    raw = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
    assert raw.search((CORPUS / "bidi-texts.jsonl").read_text(encoding="utf-8"))
    assert main(["report", str(CORPUS / "bidi-texts.jsonl"), "--out", str(tmp_path / "r")]) in (0, 1)
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert not raw.search(page), raw.findall(page)[:5]
    data = embedded_data(page)
    texts = json.dumps(data, ensure_ascii=False)
    k = data["columns"].index("detail")
    details = [json.loads(row[k]) for row in data["cases"] if isinstance(row[k], str)]
    assert not raw.search(texts) and not raw.search(json.dumps(details, ensure_ascii=False))
    # a case's detail (JSON text inside the case data, parsed when the case is opened) the same way
    assert json.loads(_detail_text({"r": "a\u202eb\x1bc"}))["r"] == "a\\u202eb\\u001bc"
    ids = {row[0] for row in data["cases"]}
    assert ids == {"mp2-f32-\\u202egpj.exe-c1", "mp2-f32-\\u2066c2\\u2069"}, ids
    row = next(r for r in data["cases"] if r[0] == "mp2-f32-\\u202egpj.exe-c1")
    reason, labels = row[data["columns"].index("reason")], row[data["columns"].index("labels")]
    assert "\\u202edellaf ton\\u202c" in reason and "\\u001b[31m" in reason, reason
    assert "batch-rerun\\u202e" in labels and "lab\\u0007el" in labels, labels
    assert "CPUExecutionProvider\\u2067" in page          # the EP's name in the page's markup
