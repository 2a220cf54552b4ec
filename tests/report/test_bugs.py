"""From cases to bugs (report/bugs.py): failures grouped by party at fault and signature, a case
once per bug, the example and the files triage wrote; the summary's `bugs`; the first screen's list."""
from __future__ import annotations

import json
from pathlib import Path

from onnx_dml_bench.record import CaseRecord, CpuSide, OutputStats
from onnx_dml_bench.report import bugs as BG
from onnx_dml_bench.report import load, write_all
from onnx_dml_bench.record import Environment
from onnx_dml_bench.results import ResultWriter, merge

ROOT = Path(__file__).resolve().parents[2]
DIRECT, DML, CPU = "DirectML", "DmlExecutionProvider", "CPUExecutionProvider"


def out(name: str, match: bool) -> OutputStats:
    return OutputStats(name, "exact", match, 4, mismatches=0 if match else 1)


def rec(case_id, ep=DML, verdict="FAIL", attribution="EP_WRONG", labels=(), failing=("Y",), op="max_pooling2",
        sizes=(1, 1, 4, 4), cpu=None):
    outputs = {k: out(k, k not in failing) for k in ("Y", "Indices")} if verdict in ("FAIL", "PASS") else {}
    return CaseRecord(case_id, op, "DML_MAX_POOLING2_OPERATOR_DESC", "FLOAT32", 12, "random", 1,
                      {"InputSizes": list(sizes)}, ep, verdict, attribution=attribution, labels=list(labels),
                      outputs=outputs, cpu=cpu)


def test_directml_bugs_count_each_case_once_with_the_direct_lanes_signature():
    recs = [rec("a", DIRECT, labels=["nan"]), rec("a", DML, labels=["nan", "ep-took:x"]),
            rec("b", DIRECT, labels=["nan"], sizes=(1, 1, 2, 2)), rec("b", DML, labels=["nan"]),
            rec("c", DIRECT, labels=["inf"])]
    bugs = BG.group(recs)
    assert [(b.party, b.ep, b.cases) for b in bugs] == [("directml", DIRECT, ["a", "b"]), ("directml", DIRECT, ["c"])]
    assert bugs[0].example == "b"                      # the smallest case of the bug
    assert bugs[0].signature.labels == ("nan",) and "[nan]" in bugs[0].key


def test_lowering_cpu_reference_and_no_answer_are_bugs_of_their_own_party_and_lane():
    recs = [rec("l", DIRECT, verdict="PASS", attribution=None), rec("l", DML),             # the lowering
            rec("k", CPU, attribution="EP_WRONG", labels=["known-deviation:ort-maxpool-nan"]),  # known: no bug
            rec("u", CPU, attribution="EP_WRONG"),                                           # the CPU EP, unexplained
            rec("r", DIRECT, attribution="REFERENCE_DISPUTED", cpu=CpuSide("ort", "FAIL")),
            rec("e1", DML, verdict="EP_ERROR", attribution=None), rec("e1", CPU, verdict="EP_ERROR", attribution=None),
            rec("n", DML, verdict="EP_REJECTED", attribution=None),                          # declined: no bug
            rec("k2", CPU, verdict="EP_ERROR", attribution=None,                            # a known refusal: no bug
                labels=["known-deviation:ort-avgpool-same-negative-pad"])]
    bugs = BG.group(recs)
    got = {(b.party, b.ep, tuple(b.cases)) for b in bugs}
    assert got == {("lowering", DML, ("l",)), ("cpu", CPU, ("u",)), ("reference", DIRECT, ("r",)),
                   ("no-answer", DML, ("e1",)), ("no-answer", CPU, ("e1",))}
    order = [b.party for b in bugs]
    assert order.index("lowering") < order.index("cpu") < order.index("reference")


def test_another_signature_is_another_bug():
    bugs = BG.group([rec("a", DIRECT, failing=("Y",)), rec("b", DIRECT, failing=("Y", "Indices")),
                     rec("c", DIRECT, op="roi_pooling"), rec("d", DIRECT, verdict="FLAKY", attribution=None)])
    assert len(bugs) == 4 and len({b.id for b in bugs}) == 4
    assert {b.signature.verdict for b in bugs} == {"FAIL", "FLAKY"}


def test_files_beside_the_results_and_links_are_attached(tmp_path):
    bugs = BG.group([rec("a", DIRECT), rec("b", DIRECT, sizes=(1, 1, 2, 2))])
    (tmp_path / "shrunk").mkdir()
    (tmp_path / "shrunk" / "a.json").write_text(json.dumps(
        {"cases": [{"id": "mp2-min", "note": "shrunk from a: 16 -> 1 elements"}]}))
    (tmp_path / "bundle" / "a").mkdir(parents=True)
    (tmp_path / "bundle" / "a" / "README.md").write_text("x")
    BG.attach_files(bugs, tmp_path, {"b": "javascript:alert(1)", "a": "https://github.com/x/y/issues/1"})
    (b,) = bugs
    assert (b.example, b.shrunk, b.shrunk_from, b.bundle) == ("b", "shrunk/a.json", "a", "bundle/a")
    assert (b.minimal, b.shrink_summary) == ("mp2-min", "16 -> 1 elements")
    assert b.link == "https://github.com/x/y/issues/1"     # a web address only
    assert "minimal repro bundle/a/" in BG.lines(bugs)[0]


def test_summary_json_and_first_screen_list_the_bugs(tmp_path):
    recs = [rec("a", DIRECT, labels=["nan"]), rec("a", DML, labels=["nan"]), rec("b", DIRECT, labels=["inf"])]
    _write(tmp_path / "results.jsonl", recs)
    (tmp_path / "bench.json").write_text(json.dumps({
        "schema": BG.FACTS_SCHEMA, "records": 3,
        "expectations": [{"lane": "dml-direct", "file": "expectations/x.yaml", "expected": 2, "unexpected": 1, "fixed": 0,
                          "stale": 0, "unscoped": 3, "note": None, "unexpected_cases": ["b FAIL"], "fixed_cases": []}],
        "previous": {"folder": "previous", "new_bugs": [BG.group(recs)[1].key], "fixed_bugs": [], "new_cases": ["b"],
                     "fixed_cases": [], "not_rerun_bugs": [], "environment": []},
        "shrinking": {"budget_s": 60, "seconds": 0.0, "bugs": 2, "shrunk": 0, "bundled": 0}, "links": {}}))
    write_all(load([tmp_path / "results.jsonl"]), tmp_path)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert sorted((b["party"], b["cases"], b["example"], b["bundle"]) for b in s["bugs"]) == [
        ("directml", 1, "a", None), ("directml", 1, "b", None)]
    assert set(s["bugs"][0]) >= {"id", "party", "signature", "cases", "case_ids", "example", "shrunk", "bundle", "link"}
    assert s["previous"]["new_cases"] == ["b"] and s["expectations"][0]["unexpected"] == 1
    page = (tmp_path / "report.html").read_text()
    assert page.index('id="bugs"') < page.index('id="fault"')
    assert page.count('class="bug-cases"') == 2 and "tag-new" in page and 'id="expectations-status"' in page
    assert "unexpected: b FAIL" in page


def test_facts_of_other_results_are_ignored(tmp_path):
    recs = [rec("a", DIRECT)]
    _write(tmp_path / "results.jsonl", recs)
    (tmp_path / "bench.json").write_text(json.dumps({"schema": BG.FACTS_SCHEMA, "records": 99, "previous": {"x": 1}}))
    assert BG.read_facts([tmp_path / "results.jsonl"], recs) == {}
    (tmp_path / "bench.json").write_text("not json")
    assert BG.read_facts([tmp_path / "results.jsonl"], recs) == {}
    # fields of another type show empty, never break the page
    view = BG.facts_view({"previous": {"new_bugs": "x", "environment": [1, {"lane": 2}]},
                          "expectations": [{"lane": 3, "expected": "many"}, "junk"], "shrinking": {"bugs": "all"}})
    assert view["previous"]["new_bugs"] == [] and view["previous"]["environment"] == [
        {"lane": "2", "key": "", "before": "", "after": ""}]
    assert view["expectations"][0]["lane"] == "" and view["expectations"][0]["expected"] == 0
    assert view["shrinking"]["bugs"] == 0


def _write(path: Path, recs) -> None:
    """The records as one results file, an environment per EP (the runner's writer, then merge)."""
    parts = []
    for ep in sorted({r.ep for r in recs}):
        part = path.parent / "lanes" / f"{ep}.jsonl"
        w = ResultWriter(part, Environment(ep=ep))
        w.write([r for r in recs if r.ep == ep])
        w.close()
        parts.append(part)
    merge(parts, path)
