"""Crafted files (tests/corpus/, see its README) through every command that reads a file: each is
refused in bounded time with exit code 2 and one short line on stderr naming the file, never a
traceback, a MemoryError or a RecursionError; and the readers underneath (results JSONL, case
files, expectations, fixture metadata, perf.json) hold their bounds: file size, line length,
nesting depth, YAML aliases counted as what they expand to."""
from __future__ import annotations

import gzip
import json
import lzma
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
from onnx_dml_bench.record import to_json
from onnx_dml_bench.results import ResultsError, read

CORPUS = Path(__file__).parent / "corpus"
#: the longest error line accepted (the billion-laughs file once gave a 312 MB one)
MAX_LINE = 1000
#: seconds a command may take to refuse a crafted file (the billion-laughs file once ran 47 s to a MemoryError)
MAX_SECONDS = 20

CASE_FILES = ["billion-laughs.yaml", "recursive-alias.yaml", "deep-nesting.json", "deep-nesting.yaml",
              "nested-500.json", "huge-value.json", "alias-long-scalar.yaml"]
EXPECTATIONS = ["billion-laughs-expectations.yaml", "deep-nesting-expectations.yaml", "billion-laughs.yaml",
                "recursive-alias.yaml", "deep-nesting.json", "alias-long-scalar.yaml"]
RESULTS = ["unknown-verdict.jsonl", "unknown-cpu-verdict.jsonl", "unknown-attribution.jsonl",
           "nested-record.jsonl", "deep-nesting.jsonl", "huge-field.jsonl", "gzip-one-line.jsonl.gz",
           "billion-laughs.yaml", "deep-nesting.json", "gzip-blank-lines.jsonl.gz", "gzip-bomb-spaces.jsonl.gz",
           "xz-bomb-spaces.jsonl.xz"]
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
PERF_FILES = ["deep-nesting.json", "nested-500.json", "huge-value.json", "billion-laughs.yaml", "perf-deep",
              "perf-negative-samples.json", "perf-null-case.json", "perf-garbage-samples.json"]
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


def test_xz_results_read_as_the_plain_file_and_a_cut_one_is_named(tmp_path):
    """Results may be kept xz-compressed (the committed samples are): read record for record as
    the plain file; one cut short is a one-line error naming the file and the form."""
    text = (json.dumps(ENV) + "\n" + json.dumps(REC) + "\n").encode()
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.xz"
    plain.write_bytes(text)
    packed.write_bytes(lzma.compress(text))
    assert [to_json(r) for r in read(packed).records] == [to_json(r) for r in read(plain).records]
    cut = tmp_path / "cut.jsonl.xz"
    cut.write_bytes(lzma.compress(text * 50)[:-30])
    with pytest.raises(ResultsError, match=r"cut.jsonl.xz: a damaged xz file") as e:
        read(cut)
    assert "\n" not in str(e.value)


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


def _explicit_case_file(path: Path, width: int) -> Path:
    """A valid case file: one space_to_depth1 case with 2 x ``width`` explicit input values."""
    vals = [(i % 251) * 0.5 - 60 for i in range(2 * width)]
    path.write_text(json.dumps({"cases": [{"op": "space_to_depth1", "descriptor": {
        "InputSizes": [1, 1, 2, width], "DataType": "FLOAT32", "BlockSize": 2}, "inputs": {"values": {"X": vals}}}]}))
    return path


def test_a_case_file_whose_records_would_carry_a_tensor_is_refused_up_front(tmp_path, capsys):
    """Explicit values are kept in each result record (the case runs again from it): a valid case
    file of a 32 MB tensor once gave a 48 MB record line the bench then refused to read (`report`,
    `--resume` and `run` itself exit 2). Beyond 65,536 values a case file is refused before anything
    runs, one line naming the file, the case and the input; at the bound, its record reads back."""
    from onnx_dml_bench.casefile import MAX_EXPLICIT_VALUES
    big = _explicit_case_file(tmp_path / "explicit-big.json", MAX_EXPLICIT_VALUES // 2 + 2)
    for command, build in CASE_COMMANDS.items():
        line = _refused(build(big, tmp_path), "explicit-big.json", capsys)
        assert "inputs.values.X" in line and f"{MAX_EXPLICIT_VALUES:,}" in line
        assert not (tmp_path / "r" / "results.jsonl").exists()
    ok = _explicit_case_file(tmp_path / "explicit-ok.json", MAX_EXPLICIT_VALUES // 2)
    assert main(["run", "--cases", str(ok), "--out", str(tmp_path / "ok"), "--no-report"]) in (0, 1)
    res = tmp_path / "ok" / "results.jsonl"
    (r,) = read(res).records
    assert len(r.case["inputs"]["values"]["X"]) == MAX_EXPLICIT_VALUES
    assert max(len(x) for x in res.read_bytes().splitlines()) < 4 << 20
    assert main(["report", str(res), "--out", str(tmp_path / "ok")]) == 0


def test_aliases_of_a_long_scalar_are_counted_as_the_text_they_expand_to(tmp_path):
    """A thousand aliases of one 64 KiB string: 70 KB of file, 64 MiB of values (100 aliases of a
    1 MiB string once gave a 104 MB results line; 5,000 a MemoryError at 3.6 GB). Refused while
    composed, in bounded memory; a case's `source` holds a few names, not megabytes."""
    tracemalloc.start()
    try:
        with pytest.raises(CaseFileError, match=r"alias-long-scalar.yaml:6:\d+: not valid YAML: more than 32 MiB of "
                                                r"text \(aliases expanded\)"):
            load_cases(CORPUS / "alias-long-scalar.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 << 20, peak
    few = tmp_path / "few.yaml"
    few.write_text((CORPUS / "alias-long-scalar.yaml").read_text().replace(", ".join(["*s"] * 1000), "*s, *s"))
    with pytest.raises(CaseFileError, match=r"few.yaml: case 0: source: more than 64 KiB of text"):
        load_cases(few)
    ok = tmp_path / "ok.yaml"
    ok.write_text("s: &s layer-7\ncases:\n  - op: space_to_depth1\n    descriptor: {InputSizes: [1, 1, 2, 2], "
                  "DataType: FLOAT32, BlockSize: 2}\n    source: {layers: [*s, *s]}\n")
    assert load_cases(ok)[0].source == {"layers": ["layer-7", "layer-7"]}


@pytest.mark.parametrize("name, field", [("perf-negative-samples.json", "cases[1] ('case-1'): samples_ms[0]"),
                                         ("perf-null-case.json", "cases[1]: must be a mapping"),
                                         ("perf-garbage-samples.json", "cases[1] ('case-1'): samples_ms[0]")])
def test_a_crafted_perf_file_is_refused_naming_case_and_field(name, field, tmp_path, capsys):
    """Negative samples once gave a ValueError traceback, a null case an AttributeError (exit 1, the
    code of "slower"), garbage samples a comparison of nothing (exit 0): one line naming the EP, the
    case and the field, exit 2, against itself as against a good file, by `perf-compare` and `compare`."""
    for argv in (["perf-compare", str(CORPUS / name), str(CORPUS / name)],
                 ["compare", str(CORPUS / name), str(CORPUS / name)]):
        line = _refused([*argv, "--out", str(tmp_path / "c.html")], name, capsys)
        assert f"EP 'DirectML': {field}" in line
    assert not (tmp_path / "c.html").exists()


def test_perf_compare_of_nothing_is_not_a_pass(tmp_path, capsys):
    """A current file with no EP, with no case, or with no timed runs compares nothing: exit 4 with a
    line saying so (as `compare` of an incomplete run), never 0; a file compared with itself: 0."""
    case = {"name": "layer 0", "case_id": "case-0", "samples_ms": [0.1 + 0.001 * k for k in range(12)], "verdict": "PASS"}
    docs = {"good": {"DirectML": {"cases": [case]}}, "no-ep": {}, "no-case": {"DirectML": {"cases": []}},
            "untimed": {"DirectML": {"cases": [{**case, "samples_ms": []}]}},
            "other-ep": {"DmlExecutionProvider": {"cases": [case]}}}
    paths = {}
    for k, eps in docs.items():
        paths[k] = tmp_path / f"{k}.json"
        paths[k].write_text(json.dumps({"record": "perf", "eps": eps}))
    for k, why in (("no-ep", "the files share no EP"), ("no-case", "they share no descriptor"),
                   ("untimed", "no descriptor has enough timed runs"), ("other-ep", "the files share no EP")):
        for cmd in ("perf-compare", "compare"):
            capsys.readouterr()
            code = main([cmd, str(paths["good"]), str(paths[k]), "--out", str(tmp_path / "c.html")])
            err = capsys.readouterr().err
            assert code == 4 and f"nothing compared: {why}" in err and "Traceback" not in err, (k, cmd, code, err)
    assert main(["perf-compare", str(paths["good"]), str(paths["good"]), "--out", str(tmp_path / "c.html")]) == 0


def test_a_gzip_that_expands_to_nothing_is_refused_as_it_is_read(tmp_path):
    """64 KB of gzip that is 64 MiB of blank lines (a megabyte of it once kept `report` busy for over
    five minutes), and 70 KB that is 70 lines of a MiB of spaces: refused within seconds, in bounded
    memory, one line naming the file. A plain file with a few blank lines still reads."""
    for name, what in (("gzip-blank-lines.jsonl.gz", r"gzip-blank-lines.jsonl.gz:10002: more than 10,000 blank lines"),
                       ("gzip-bomb-spaces.jsonl.gz", r"gzip-bomb-spaces.jsonl.gz: decompresses to more than 64 MiB"),
                       ("xz-bomb-spaces.jsonl.xz", r"xz-bomb-spaces.jsonl.xz: decompresses to more than 64 MiB, "
                                                   r"200 times its size: an xz bomb")):
        t0 = time.monotonic()
        tracemalloc.start()
        try:
            with pytest.raises(ResultsError, match=what):
                read(CORPUS / name)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 100 << 20 and time.monotonic() - t0 < MAX_SECONDS, (name, peak)
    f = tmp_path / "blanks.jsonl"
    f.write_text("\n" + json.dumps(ENV) + "\n\n\n" + json.dumps(REC) + "\n  \n")
    assert [r.case_id for r in read(f).records] == [CASE]
    g = tmp_path / "whole.jsonl.gz"                       # under 64 MiB of text: read, however well it compresses
    g.write_bytes(gzip.compress((json.dumps(ENV) + "\n" + json.dumps(REC) + "\n").encode() * 3000))
    assert len(read(g).records) == 1


def _pipe(data: bytes) -> str:
    """A path that reads as a pipe (as the shell's ``<(...)`` gives), fed ``data`` by a thread."""
    import os
    import threading
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as f:
            f.write(data)
    threading.Thread(target=feed, daemon=True).start()
    return f"/dev/fd/{r}"


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd (the shell's <(...)) here")
def test_pipes_are_read_and_named_pipes_never_waited_on(tmp_path, capsys):
    """`run --cases <(...)` once said "no such file" and `report <(...)` "not seekable": both read
    the pipe (a gzipped one too). A named pipe (FIFO) that nothing writes into, given to `report`,
    `run --cases`, `compare`, `run --expectations`, or among `judge --outputs` or a fixture's files
    (where an open once waited for ever), and a device: one line or the case's own error, in bounded
    time (a process of its own, killed if it waits)."""
    import os
    import subprocess
    import sys
    res = _good(tmp_path)
    one = _one_case(tmp_path)
    assert main(["report", _pipe(res.read_bytes()), "--out", str(tmp_path / "rp")]) == 0
    assert (tmp_path / "rp" / "report.html").is_file()
    assert main(["report", _pipe(gzip.compress(res.read_bytes())), "--out", str(tmp_path / "rg")]) == 0
    assert main(["run", "--cases", _pipe(one.read_bytes()), "--out", str(tmp_path / "rc"), "--no-report"]) == 0
    assert len(read(tmp_path / "rc" / "results.jsonl").records) == 1
    yaml_text = b"cases:\n  - {op: space_to_depth1, descriptor: {InputSizes: [1, 1, 2, 2], DataType: FLOAT32, BlockSize: 2}}\n"
    assert main(["run", "--cases", _pipe(yaml_text), "--out", str(tmp_path / "ry"), "--no-report"]) == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cli = [sys.executable, "-m", "onnx_dml_bench"]
    for argv in (["report", str(fifo), "--out", str(tmp_path / "rf")],
                 ["run", "--cases", str(fifo), "--out", str(tmp_path / "rf2"), "--no-report"],
                 ["compare", str(fifo), str(res)],
                 ["run", "--op", "space_to_depth1", "--dtype", "f32", "--expectations", str(fifo), "--out",
                  str(tmp_path / "rf3"), "--no-report"],
                 ["report", "/dev/null", "--out", str(tmp_path / "rf4")]):
        p = subprocess.run(cli + argv, capture_output=True, text=True, timeout=60)
        err = [x for x in p.stderr.splitlines() if x.strip()]
        assert p.returncode == 2 and len(err) == 1 and "Traceback" not in p.stderr, (argv, p.returncode, p.stderr)
        assert str(fifo) in err[0] or "/dev/null" in err[0]
    # a FIFO among the outputs to judge: that case is an ERROR naming the file, the judgement ends
    from onnx_dml_bench.casefile import load as load_case
    cid = load_case(one)[0].id
    (tmp_path / "outs" / cid).mkdir(parents=True)
    os.mkfifo(tmp_path / "outs" / cid / "output_0.pb")
    p = subprocess.run(cli + ["judge", "--cases", str(one), "--outputs", str(tmp_path / "outs"), "--ep", "cpu",
                              "--out", str(tmp_path / "j"), "--no-report"], capture_output=True, text=True, timeout=120)
    # its one case an ERROR: nothing was judged, which is never a green gate (exit 4)
    assert p.returncode == 4 and "Traceback" not in p.stderr, p.stderr
    (r,) = read(tmp_path / "j" / "results.jsonl").records
    assert r.verdict == "ERROR" and "output_0.pb: is a named pipe (FIFO), not a tensor file" in r.reason


def test_a_fifo_in_a_fixture_folder_is_refused(tmp_path):
    import os
    from onnx_dml_bench.fixtures import FixtureError, export, load_fixture
    from onnx_dml_bench.registry import OPERATORS
    case = next(c for c in OPERATORS["space_to_depth1"].sweep("smoke") if c.operator.expressible(c) is None)
    export([case], tmp_path / "fx")
    folder = tmp_path / "fx" / case.id
    (folder / "model.onnx").unlink()
    os.mkfifo(folder / "model.onnx")
    with pytest.raises(FixtureError, match=r"model.onnx: is a named pipe \(FIFO\)"):
        load_fixture(folder)
