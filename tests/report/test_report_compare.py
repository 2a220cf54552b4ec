"""`onnx-dml-bench compare`: regressions, fixes, numeric drift, new and removed cases."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.report import data as D
from onnx_dml_bench.report.diff import compare, compare_command, quantile

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("base")
    assert main(["run", "--ep", "cpu", "--profile", "smoke", "--out", str(out), "--no-report"]) in (0, 1)
    return out / "results.jsonl"


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return path


def planted_current(baseline: Path, dst: Path) -> dict:
    """A copy of the baseline with one PASS -> FAIL, one max_ulp change, one case removed, one added
    and a different driver."""
    recs = _records(baseline)
    cases = [r for r in recs if r.get("record") == "case"]
    passing = [r for r in cases if r["verdict"] == "PASS" and any(o.get("max_ulp") is not None for o in r["outputs"].values())]
    regress, drift = passing[0], passing[1]
    regress.update(verdict="FAIL", attribution="EP_WRONG", reason="Y: 1/4 differ " + XSS)
    for o in drift["outputs"].values():
        if o.get("max_ulp") is not None:
            o["max_ulp"] += 7
    removed = next(r for r in cases if r["verdict"] == "EP_REJECTED")
    recs.remove(removed)
    added = dict(cases[-1], case_id="mp2-added-case-0000000000", verdict="PASS")
    recs.append(added)
    recs[0]["driver"] = "31.0.101.9999"
    _write(dst, recs)
    return {"regress": regress["case_id"], "drift": drift["case_id"], "removed": removed["case_id"], "added": added["case_id"]}


def test_planted_regression_is_flagged(tmp_path, baseline, capsys):
    cur = tmp_path / "current" / "results.jsonl"
    cur.parent.mkdir()
    ids = planted_current(baseline, cur)
    code = compare_command(baseline, cur, tmp_path / "cmp")
    out = capsys.readouterr().out
    assert code == 1
    assert "REGRESSIONS: PASS -> not PASS (1)" in out and ids["regress"] in out
    assert "CASES WHOSE MAX ULP CHANGED (1)" in out and ids["drift"] in out
    assert "NEW CASES (1)" in out and ids["added"] in out
    assert "REMOVED CASES (1)" in out and ids["removed"] in out
    assert "driver" in out and "31.0.101.9999" in out
    page = (tmp_path / "cmp" / "compare.html").read_text()
    assert ids["regress"] in page and "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert 'id="regressions"' in page and 'data-count="1"' in page


def test_no_regression_exit_zero_and_html_beside_current(tmp_path, baseline, capsys):
    cur = tmp_path / "results.jsonl"
    cur.write_text(baseline.read_text())
    assert compare_command(baseline, cur, None) == 0
    out = capsys.readouterr().out
    assert "REGRESSIONS: PASS -> not PASS (0)" in out and "result: 0 regressions" in out
    assert (tmp_path / "compare.html").is_file()


def test_fix_is_not_a_regression(tmp_path, baseline):
    recs = _records(baseline)
    fail = next(r for r in recs if r.get("verdict") == "FAIL")
    fail.update(verdict="PASS", attribution=None, reason="")
    cur = _write(tmp_path / "cur.jsonl", recs)
    cmp = compare(D.load([baseline]), D.load([cur]))
    assert [c.case_id for c in cmp.fixes] == [fail["case_id"]] and not cmp.regressions
    assert compare_command(baseline, cur, tmp_path) == 0


def test_other_change_and_attribution_change(tmp_path, baseline):
    recs = _records(baseline)
    fails = [r for r in recs if r.get("verdict") == "FAIL"]
    fails[0]["verdict"] = "CRASH"
    fails[1]["attribution"] = "BOTH_WRONG" if fails[1]["attribution"] != "BOTH_WRONG" else "EP_WRONG"
    cmp = compare(D.load([baseline]), D.load([_write(tmp_path / "cur.jsonl", recs)]))
    assert {c.case_id for c in cmp.other} == {fails[0]["case_id"], fails[1]["case_id"]}
    assert not cmp.regressions


def test_different_eps_match_by_case_id(tmp_path, baseline):
    recs = _records(baseline)
    for r in recs:
        r["ep"] = "OpenVINOExecutionProvider"
    cmp = compare(D.load([baseline]), D.load([_write(tmp_path / "ov.jsonl", recs)]))
    assert cmp.matching == "case id alone" and "EPs differ" in cmp.ep_note
    assert cmp.matched == sum(1 for r in recs if r.get("record") == "case") and not cmp.new and not cmp.removed


def test_cli_compare_exit_codes(tmp_path, baseline):
    cur = tmp_path / "cur.jsonl"
    planted_current(baseline, cur)
    assert main(["compare", str(baseline), str(cur), "--out", str(tmp_path / "o")]) == 1
    assert main(["compare", str(baseline), str(baseline), "--out", str(tmp_path / "o")]) == 0


def test_quantile_nearest_rank():
    assert quantile([], 0.5) is None
    assert quantile([3, 1, 2], 0.5) == 2
    assert quantile([1, 2, 3, 4], 1.0) == 4
    assert quantile(list(range(1, 101)), 0.99) == 99
