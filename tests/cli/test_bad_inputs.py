"""Every bad input gets one clear line: exit code 2, exactly one line on stderr naming the culprit,
no traceback, and no result file already there changed.

A corpus of bad case files, results files and command-line arguments, each run through the
command line as a person would."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from onnx_dml_bench.cli import main

CASE = {
    "op": "max_pooling2", "opset": 12,
    "descriptor": {"InputSizes": [1, 1, 2, 2], "DataType": "FLOAT32", "DimensionCount": 2, "Strides": [1, 1],
                   "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1],
                   "OutputIndicesDataType": "UINT32"},
    "inputs": {"values": {"X": [1, 2, 3, 4]}},
}


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A real results folder (one small run) that no bad input may touch."""
    out = tmp_path_factory.mktemp("good") / "run"
    assert main(["run", "--op", "space_to_depth1", "--dtype", "f32", "--out", str(out)]) == 0
    return out


def _hashes(*folders: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


def _lines(good: Path) -> list[str]:
    return (good / "results.jsonl").read_text().splitlines()


def _write(path: Path, data) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _case_file(tmp: Path, mutate, name="cases.json") -> Path:
    d = json.loads(json.dumps(CASE))
    doc = mutate(d)
    doc = d if doc is None else doc
    path = tmp / name
    if isinstance(doc, str):
        return _write(path, doc)
    return _write(path, json.dumps([doc] if isinstance(doc, dict) else doc))


# each builder: (good folder, scratch folder) -> (argv, culprit the line must name)
def results_file(content):
    def build(good, tmp):
        p = tmp / "bad.jsonl"
        _write(p, content(good) if callable(content) else content)
        return ["report", str(p), "--out", str(tmp / "out")], "bad.jsonl"
    return build


def run_cases(mutate, culprit, name="cases.json"):
    def build(good, tmp):
        return ["run", "--cases", str(_case_file(tmp, mutate, name)), "--out", str(tmp / "r")], culprit
    return build


def run_args(*args, culprit):
    def build(good, tmp):
        return ["run", *args, "--out", str(tmp / "r")], culprit
    return build


def _pop_field(d):
    d["bogus_field"] = 1


CORPUS = {
    # results files
    "garbled line": results_file(lambda g: "\n".join(_lines(g)[:2] + ["{garbled", *_lines(g)[2:]]) + "\n"),
    "binary file": results_file(bytes(range(256)) * 4),
    "object that is no record": results_file('{"a": 1}\n'),
    "JSON list line": results_file(lambda g: _lines(g)[0] + "\n[1, 2, 3]\n"),
    "file cut mid-line": results_file(lambda g: "\n".join(_lines(g))[:-20]),
    "empty file": results_file(""),
    "gzip garbage": results_file(b"\x1f\x8b\x08\x00garbage that is no deflate stream"),
    "unknown schema version": results_file(
        lambda g: json.dumps({**json.loads(_lines(g)[0]), "schema": "onnx-dml-bench/result/99"}) + "\n"),
    "wrong field type in a record": results_file(
        lambda g: _lines(g)[0] + "\n" + json.dumps({**json.loads(_lines(g)[1]), "opset": "twelve"}) + "\n"),
    "directory instead of a file": lambda g, t: (["report", str(g), "--out", str(t / "out")], g.name),
    "missing results file": lambda g, t: (["report", str(t / "nope.jsonl"), "--out", str(t / "out")], "nope.jsonl"),
    "compare of a missing file": lambda g, t: (["compare", str(t / "gone.jsonl"), str(g / "results.jsonl")], "gone.jsonl"),
    "compare of a garbled file": lambda g, t: (["compare", str(g / "results.jsonl"), str(_write(t / "x.jsonl", "nope\n"))], "x.jsonl"),
    "merge into an existing input": lambda g, t: (["merge", str(g / "results.jsonl"), str(g / "results.jsonl")], "results.jsonl"),
    "merge over an existing file": lambda g, t: (["merge", str(g / "junit.xml"), str(g / "results.jsonl")], "junit.xml"),
    "failed-from a binary file": lambda g, t: (["cases", "--failed-from", str(_write(t / "b.jsonl", b"\x00\xff" * 50)),
                                                "--export", str(t / "f.yaml")], "b.jsonl"),
    # case files
    "case file: wrong op": run_cases(lambda d: d.update(op="conv"), "conv"),
    "case file: unknown field": run_cases(_pop_field, "bogus_field"),
    "case file: bad dtype": run_cases(lambda d: d["descriptor"].update(DataType="FLOAT99"), "DataType"),
    "case file: bad value": run_cases(lambda d: d["descriptor"].update(Strides=[0, 1]), "Strides"),
    "case file: empty case list": run_cases(lambda d: [], "no cases"),
    "case file: YAML syntax error": run_cases(lambda d: "cases: [ {op: max_pooling2", "cases.yaml", name="cases.yaml"),
    "case file: not a list": run_cases(lambda d: "42", "list of cases"),
    "case file: binary": lambda g, t: (["run", "--cases", str(_write(t / "c.yaml", b"\xff\xfe\x00" * 10)),
                                        "--out", str(t / "r")], "c.yaml"),
    "case file: missing": run_args("--cases", "/nonexistent/cases.yaml", culprit="cases.yaml"),
    # command-line arguments
    "--opset 99": run_args("--opset", "99", culprit="--opset 99"),
    "--opset abc": run_args("--opset", "abc", culprit="'abc'"),
    "--shard 3/2": run_args("--shard", "3/2", culprit="3/2"),
    "--fail-on BOGUS": run_args("--fail-on", "BOGUS", culprit="BOGUS"),
    "--jobs 0": run_args("--jobs", "0", culprit="--jobs"),
    "--ep nonsense": run_args("--ep", "nonsense", culprit="nonsense"),
    "unknown --op": run_args("--op", "conv9", culprit="conv9"),
    "--dtype nonsense": run_args("--dtype", "nonsense", culprit="nonsense"),
    "--profile nonsense": run_args("--profile", "nonsense", culprit="nonsense"),
    "--optimization nonsense": run_args("--optimization", "nonsense", culprit="nonsense"),
    "run over existing results": lambda g, t: (["run", "--op", "space_to_depth1", "--dtype", "f32", "--out", str(g)],
                                               "--resume"),
    "--resume with another selection": lambda g, t: (["run", "--op", "space_to_depth1", "--dtype", "f16", "--out",
                                                      str(g), "--resume"], "--dtype"),
    "--resume with another optimisation": lambda g, t: (["run", "--op", "space_to_depth1", "--dtype", "f32",
                                                         "--optimization", "basic", "--out", str(g), "--resume"],
                                                        "--optimization"),
    "unknown command": lambda g, t: (["frobnicate"], "frobnicate"),
}


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 25


@pytest.mark.parametrize("kind", sorted(CORPUS))
def test_bad_input_gives_one_line_and_exit_2(kind, good, tmp_path, capsys):
    argv, culprit = CORPUS[kind](good, tmp_path)
    before = _hashes(good)
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, (kind, code, err)
    assert len(lines) == 1, (kind, err)
    assert culprit in lines[0], (kind, culprit, lines[0])
    assert "Traceback" not in err + out
    assert _hashes(good) == before, kind
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_cut_file_reported_with_allow_partial(good, tmp_path, capsys):
    cut = _write(tmp_path / "cut.jsonl", "\n".join(_lines(good))[:-20])
    assert main(["report", str(cut), "--out", str(tmp_path / "out")]) == 2
    capsys.readouterr()
    # reported, and said to be incomplete: exit code 4, not a pass
    assert main(["report", str(cut), "--allow-partial", "--out", str(tmp_path / "out")]) == 4
    err = capsys.readouterr().err
    assert "cut off" in err and "cut.jsonl" in err and "incomplete" in err
    assert (tmp_path / "out" / "report.html").is_file()


def test_gzipped_results_are_read(good, tmp_path):
    gz = _write(tmp_path / "results.jsonl.gz", gzip.compress((good / "results.jsonl").read_bytes()))
    assert main(["report", str(gz), "--out", str(tmp_path / "out")]) == 0


def test_yaml_case_file_loads(tmp_path):
    f = _write(tmp_path / "ok.yaml", yaml.safe_dump({"cases": [CASE]}))
    assert main(["run", "--cases", str(f), "--out", str(tmp_path / "r"), "--no-report"]) == 0
