"""Results files are artifacts from elsewhere: a crafted one never makes shrink or triage write
outside its folder, never loads the library it names, and the commands the bench suggests from it
(JUnit, report, triage.md, the resume line) are quoted so that pasting them runs nothing else."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from onnx_dml_bench import casefile, registry
from onnx_dml_bench.cli import args, main
from onnx_dml_bench.cli.run import resume_command
from onnx_dml_bench.results import read

pytest.importorskip("onnxruntime")
MP = registry.OPERATORS["max_pooling2"]
TRAVERSAL = "../../../somewhere/x"


@pytest.fixture(scope="module")
def failing(tmp_path_factory) -> Path:
    """A results file holding one FAIL (ONNX Runtime's MaxPool NaN behaviour) among a few cases."""
    tmp = tmp_path_factory.mktemp("failing")
    sweep = MP.sweep("default")
    cands = [c for c in sweep if c.family == "nan" and c.desc.OutputIndicesDataType][:3]
    casefile.dump(cands, tmp / "c.json")
    assert main(["run", "--ep", "cpu", "--cases", str(tmp / "c.json"), "--out", str(tmp / "run"), "--no-report"]) == 1
    return tmp / "run" / "results.jsonl"


def crafted(src: Path, dst: Path, case_id: str | None = None, env: dict | None = None) -> tuple[Path, str]:
    """A copy of ``src`` whose first FAIL has the case id ``case_id`` (and environment changes ``env``);
    returns (the file, the id of that record)."""
    lines = src.read_text().splitlines()
    e = json.loads(lines[0])
    e.update(env or {})
    recs = [json.loads(x) for x in lines[1:]]
    fail = next(r for r in recs if r["verdict"] == "FAIL")
    if case_id is not None:
        fail["case_id"] = case_id
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join([json.dumps(e)] + [json.dumps(r) for r in recs]) + "\n")
    return dst, fail["case_id"]


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_shrink_refuses_a_case_id_that_leaves_the_folder(failing, tmp_path, capsys):
    """Once, shrink (default output) wrote `shrunk/../../../somewhere/x.json`: two levels above the
    results folder, over whatever file was there."""
    results, cid = crafted(failing, tmp_path / "a" / "b" / "c" / "results.jsonl", TRAVERSAL)
    target = tmp_path / "a" / "somewhere" / "x.json"
    target.parent.mkdir(parents=True)
    target.write_text("precious")
    before = files_under(tmp_path)
    capsys.readouterr()
    assert main(["shrink", cid, "--from", str(results), "--time-limit", "30"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "somewhere" in err[0] and "cannot name a file" in err[0]
    assert target.read_text() == "precious" and files_under(tmp_path) == before


def test_triage_leaves_such_a_row_unshrunk_and_writes_nothing_outside(failing, tmp_path):
    results, cid = crafted(failing, tmp_path / "a" / "b" / "c" / "results.jsonl", TRAVERSAL)
    target = tmp_path / "a" / "somewhere" / "x.json"
    target.parent.mkdir(parents=True)
    target.write_text("precious")
    assert main(["triage", "--from", str(results), "--time-limit", "30"]) == 0
    assert target.read_text() == "precious" and not (tmp_path / "a" / "somewhere" / "x").exists()
    outside = {p for p in files_under(tmp_path) if not p.startswith("a/b/c/")}
    assert outside == {"a", "a/b", "a/b/c", "a/somewhere", "a/somewhere/x.json"}
    doc = json.loads((results.parent / "triage.json").read_text())
    row = next(r for r in doc["signatures"] if r["case"] == cid)
    assert "cannot name a file" in row["error"] and "shrunk" not in row and "bundle" not in row


def test_a_plugin_library_named_by_a_results_file_is_not_loaded(failing, tmp_path, capsys):
    lib = tmp_path / "evil.so"
    lib.write_bytes(b"\x7fELF not really")
    results, cid = crafted(failing, tmp_path / "run" / "results.jsonl",
                           env={"ep_key": f"plugin:{lib}", "ep": "EvilExecutionProvider"})
    for argv in (["shrink", cid, "--from", str(results)], ["triage", "--from", str(results)],
                 ["bundle", cid, "--from", str(results), "--out", str(tmp_path / "b")]):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is not loaded" in err and "--ep plugin:PATH" in err and str(lib) in err


def _pasted(line: str, cwd: Path) -> list[str]:
    """The arguments a shell gives the command when ``line`` is pasted (printf stands in for the
    bench)."""
    assert line.startswith("onnx-dml-bench ")
    r = subprocess.run(["bash", "-c", "printf '%s\\n' " + line[len("onnx-dml-bench "):]], cwd=cwd,
                       capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


def test_the_bundle_command_of_junit_and_the_report_is_quoted(failing, tmp_path):
    folder = tmp_path / "$(touch PWNED)"
    results, cid = crafted(failing, folder / "results.jsonl")
    assert main(["report", str(results), "--out", str(folder)]) == 0
    text = "\n".join(el.text or "" for el in ET.parse(folder / "junit.xml").iter("failure"))
    line = next(x.split("bundle: ", 1)[1] for x in text.splitlines() if x.startswith("bundle: onnx-dml-bench"))
    assert _pasted(line, tmp_path) == ["bundle", cid, "--from", str(results), "--out", str(folder / "bundle" / cid)]
    from onnx_dml_bench.report import html, load
    data = html.case_data(load([results]))
    det = {r[0]: r[data["columns"].index("detail")] for r in data["cases"]}
    assert _pasted(det[cid]["triage"]["cmd"], tmp_path)[-1] == str(folder / "bundle" / cid)
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


def test_the_commands_of_triage_md_are_quoted(failing, tmp_path):
    cid_evil = "x$(touch PWNED)`touch PWNED2`"
    results, cid = crafted(failing, tmp_path / "run" / "results.jsonl", cid_evil)
    assert main(["triage", "--from", str(results), "--time-limit", "30", "--no-bundles"]) == 0
    md = (results.parent / "triage.md").read_text()
    cmds = re.findall(r"``(onnx-dml-bench [^`]*(?:`[^`]+)*?)``", md)
    assert cmds
    for line in cmds:
        argv = _pasted(line.replace("\\|", "|"), results.parent)
        assert argv[0] in ("run", "shrink")
        if argv[0] == "shrink":
            assert argv[1] == cid_evil
    assert not list(tmp_path.rglob("PWNED*"))


def test_the_resume_line_is_quoted(tmp_path, monkeypatch):
    monkeypatch.setattr(args, "ARGV", ["run", "--op", "max_pooling2", "--out", "x $(touch PWNED)", "--overwrite"])
    line = resume_command(Path("unused"))
    assert _pasted(line, tmp_path) == ["run", "--op", "max_pooling2", "--out", "x $(touch PWNED)", "--resume"]
    assert not (tmp_path / "PWNED").exists()
    assert shlex.split(line)[-1] == "--resume"
