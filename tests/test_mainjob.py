"""The main job's policy (mainjob.py): the previous run kept and what changed since, the short
account (a line per lane, the bugs, one exit line), the budget of the shrinking."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from onnx_dml_bench import mainjob as M
from onnx_dml_bench.record import CaseRecord, Environment, OutputStats
from onnx_dml_bench.report import bugs as BG
from onnx_dml_bench.report.data import load
from onnx_dml_bench.results import ResultWriter, merge

DIRECT, DML, CPU = "DirectML", "DmlExecutionProvider", "CPUExecutionProvider"


def rec(case_id, ep=DIRECT, verdict="FAIL", labels=(), op="max_pooling2"):
    outputs = {"Y": OutputStats("Y", "exact", verdict == "PASS", 4, mismatches=0 if verdict == "PASS" else 1)}
    return CaseRecord(case_id, op, "DML_MAX_POOLING2_OPERATOR_DESC", "FLOAT32", 12, "random", 1,
                      {"InputSizes": [1, 1, 4, 4]}, ep, verdict, attribution="EP_WRONG" if verdict == "FAIL" else None,
                      labels=list(labels), outputs=outputs)


def write(folder: Path, recs, env_extra=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for ep in sorted({r.ep for r in recs}):
        part = folder / "lanes" / f"{ep}.jsonl"
        w = ResultWriter(part, Environment(ep=ep, **(env_extra or {})))
        w.write([r for r in recs if r.ep == ep])
        w.close()
        parts.append(part)
    merge(parts, folder / "results.jsonl")
    return folder / "results.jsonl"


def test_the_previous_run_moves_aside_and_replaces_the_one_before(tmp_path):
    assert M.keep_previous(tmp_path) is None                  # nothing to keep
    (tmp_path / "results.jsonl").write_text("one")
    (tmp_path / "report.html").write_text("one")
    (tmp_path / "bundle" / "c").mkdir(parents=True)
    (tmp_path / "cpu").mkdir()                                # a lane's folder stays
    prev = M.keep_previous(tmp_path)
    assert prev == tmp_path / "previous" and (prev / "results.jsonl").read_text() == "one"
    assert (prev / "bundle" / "c").is_dir() and not (tmp_path / "results.jsonl").exists()
    assert (tmp_path / "cpu").is_dir()
    (tmp_path / "results.jsonl").write_text("two")
    M.keep_previous(tmp_path)
    assert (prev / "results.jsonl").read_text() == "two" and not (prev / "bundle").exists()


def test_what_changed_names_new_and_fixed_bugs_and_cases_and_the_environment(tmp_path):
    before = [rec("a", labels=["nan"]), rec("b", labels=["nan"]), rec("c", labels=["inf"]), rec("d", verdict="PASS"),
              rec("r", op="roi_pooling"), rec("x", labels=["neg"])]
    now = [rec("a", labels=["nan"]), rec("b", verdict="PASS"), rec("c", verdict="PASS"), rec("d", labels=["zero"]),
           rec("e", labels=["zero"]), rec("x", verdict="EP_REJECTED")]
    write(tmp_path / "previous", before, {"device": "llvmpipe 15"})
    res = load([write(tmp_path / "now", now, {"device": "llvmpipe 16"})])
    bugs = BG.group(res.records)
    ch = M.what_changed(tmp_path / "previous", res, bugs)
    key = {b.signature.labels: b.key for b in bugs}
    assert ch["new_bugs"] == [key[("zero",)]]
    assert len(ch["fixed_bugs"]) == 1 and "[inf]" in ch["fixed_bugs"][0]          # c passes now
    assert len(ch["not_rerun_bugs"]) == 1 and "roi_pooling" in ch["not_rerun_bugs"][0]   # not run this time
    assert ch["new_cases"] == ["d", "e"] and ch["new_cases_not_run_before"] == ["e"]
    assert ch["fixed_cases"] == ["b", "c"]                                          # r was not run: not fixed
    assert ch["changed_cases"] == ["x"] and len(ch["changed_bugs"]) == 1 and "[neg]" in ch["changed_bugs"][0]
    assert {"lane": DIRECT, "key": "device", "before": "llvmpipe 15", "after": "llvmpipe 16"} in ch["environment"]
    line = M.changed_line(ch)
    assert line.startswith("since the previous run (previous/): 1 new bug, 1 fixed bug; 2 new failing cases, "
                           "2 fixed cases, 1 failing before and neither failing nor passing now (refused, not run by "
                           "the EP); environment: DirectML device llvmpipe 15 -> llvmpipe 16")
    assert M.what_changed(None, res, bugs) is None and M.what_changed(tmp_path / "none", res, bugs) is None


def lanes(unexpected=0):
    out = []
    for k in ("cpu", "dml", "dml-direct"):
        ln = M.LaneRun(k, k, code=0, seconds=30, counts=Counter(PASS=1200, FAIL=40, EP_REJECTED=300, NOT_EXPRESSIBLE=4),
                    expectations=f"expectations/{k}.yaml", expected=40, checked=True)
        ln.unexpected = [f"case-{i} FAIL" for i in range(unexpected)]
        out.append(ln)
    return out


def test_the_account_is_short_and_has_one_exit_line():
    bugs = BG.group([rec(f"c{i}", labels=[f"l{i}"]) for i in range(30)])
    not_run = {"cuda": "x", "openvino": "y", "webgpu": "z", "tensorrt": "w"}
    prev = {"folder": "previous", "new_bugs": ["k"], "fixed_bugs": [], "new_cases": ["c1"], "fixed_cases": [],
            "environment": [{"lane": DIRECT, "key": "device", "before": "a", "after": "b"}]}
    for unexpected, code in ((0, 0), (25, 1)):
        lines, got = M.account(lanes(unexpected), not_run, Path("out/report.html"), 120, bugs, 237,
                               {"budget_s": 60, "seconds": 41, "bugs": 30, "shrunk": 9, "bundled": 9}, prev, Path("out"))
        assert got == code
        assert len(lines) <= 40, "\n".join(lines)
        assert sum("exit code" in line for line in lines) == 1 and f"exit code {code}" in lines[-1]
        assert sum(line.startswith("  not run: ") for line in lines) == 1        # the EPs not installed: one line
        assert any(line.startswith("  bugs: 30 — DirectML itself 30 (30 cases); the CPU EP's known deviations "
                                   "apart: 237 cases; 9 of 30") for line in lines)
        assert any(line.strip() == "... and 18 more bug(s) in the report" for line in lines)
    lane = [line for line in lines if line.startswith("  dml-direct: ")][0]
    assert lane.startswith("  dml-direct: 1544 cases in 30 s: PASS 1200, FAIL 40, ") and "dml-direct.yaml: 40 expected, 25 unexpected" in lane


def test_a_lane_whose_expected_failures_are_now_refused_says_so():
    """Expected FAILs that the EP now refuses are no failure by the expectations' policy; the lane's
    line still says how many, so that a lane refusing every session is not read as all clear."""
    ln = lanes()[1]
    ln.changed, ln.expected = 41, 0
    assert M.lane_line(ln).endswith("0 expected, 0 unexpected, 0 fixed, 41 expected to fail and now refused or not "
                                    "run (not a failure: see the report)")


def test_a_lane_whose_ep_computed_no_case_could_not_run():
    """A lane whose EP refused every session (every case EP_REJECTED or another verdict of a case
    never computed) tests nothing: exit code 3 naming it, whatever its expectations say; one case
    computed is enough to judge the lane by its expectations."""
    bugs = BG.group([])
    all_refused = lanes()
    all_refused[1].counts = Counter(EP_REJECTED=1540, NOT_EXPRESSIBLE=4)
    all_refused[1].changed = 40
    lines, code = M.account(all_refused, {}, Path("out/report.html"), 60, bugs, 0, None, None, Path("out"))
    assert code == 3
    assert "dml (the EP ran none of its 1544 cases: every one EP_REJECTED/NOT_EXPRESSIBLE)" in lines[-1]
    one_ran = lanes()
    one_ran[1].counts = Counter(EP_REJECTED=1543, PASS=1)
    assert M.account(one_ran, {}, Path("out/report.html"), 60, bugs, 0, None, None, Path("out"))[1] == 0
    empty = lanes()
    empty[1].counts = Counter()
    assert not M.ran_nothing(empty[1])
