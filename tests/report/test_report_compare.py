"""`onnx-dml-bench compare`: regressions, fixes, numeric drift, new and removed cases."""
from __future__ import annotations

import json
from collections import Counter
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


def test_no_regression_exit_zero_and_no_page_unasked(tmp_path, baseline, capsys):
    """Without --out, compare writes nothing (a results folder is never written into unasked) and says so."""
    cur = tmp_path / "results.jsonl"
    cur.write_text(baseline.read_text())
    assert compare_command(baseline, cur, None) == 0
    out = capsys.readouterr().out
    assert "REGRESSIONS: PASS -> not PASS (0)" in out and "result: 0 regressions" in out
    assert not (tmp_path / "compare.html").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]
    assert out.strip().splitlines()[-1].startswith("compare.html not written: add --out")


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


def test_fixes_show_the_current_reason_and_the_baselines(tmp_path, baseline, capsys):
    """A fix's "reason now" is the current run's (a PASS: none), with the baseline's reason as "was"."""
    recs = _records(baseline)
    fail = next(r for r in recs if r.get("verdict") == "FAIL")
    was = fail["reason"]
    fail.update(verdict="PASS", attribution=None, reason="")
    cur = _write(tmp_path / "cur.jsonl", recs)
    (ch,) = compare(D.load([baseline]), D.load([cur])).fixes
    assert ch.reason == "" and ch.reason_before == was
    assert compare_command(baseline, cur, tmp_path / "page.html") == 0
    text = capsys.readouterr().out
    assert f"(none) (was: {was[:40]}" in text
    page = (tmp_path / "page.html").read_text()
    fixes = page[page.index('id="fixes"'):page.index('id="moves"')]
    assert "none (PASS)" in fixes and "was: " in fixes


def test_compare_page_regressions_first_paths_relative_env_folded(tmp_path, baseline):
    """The page opens on the regressions (the environments come last, folded), names the files
    relative to itself, and charts the moves per operator."""
    cur = tmp_path / "runs" / "current" / "results.jsonl"
    cur.parent.mkdir(parents=True)
    ids = planted_current(baseline, cur)
    assert compare_command(baseline, cur, tmp_path / "pages" / "c.html") == 1
    page = (tmp_path / "pages" / "c.html").read_text()
    body = page[page.index("<body>"):]
    order = [body.index(f'id="{k}"') for k in ("regressions", "fixes", "moves", "other", "drift", "environments")]
    assert order == sorted(order)
    assert str(tmp_path) not in page and "../runs/current/results.jsonl" in page
    assert '<details class="env-all">' in page
    assert f'data-op="{next(r for r in _records(cur) if r.get("case_id") == ids["regress"])["op"]}" data-kind="regressions" data-n="1"' in page


def test_new_cases_are_counted_and_listed_in_part(tmp_path, baseline, capsys):
    """New cases are no change of verdict: the page counts them per operator and verdict and lists
    20: those that fail first, then those that do not pass, then passes; `--json` lists every one."""
    from onnx_dml_bench.report.diff import LISTED
    recs = _records(baseline)
    cases = [r for r in recs if r.get("record") == "case"]
    added = []
    for i in range(LISTED + 5):
        src = cases[i % len(cases)]
        verdict = "FAIL" if i % 8 == 7 else "EP_REJECTED" if i % 8 == 3 else "PASS"
        added.append(dict(src, case_id=f"zz-new-case-{i:03d}-0000000000", verdict=verdict,
                          attribution="EP_WRONG" if verdict == "FAIL" else None,
                          reason="Y: 1/4 differ" if verdict == "FAIL" else ""))
    cur = _write(tmp_path / "cur.jsonl", recs + added)
    code = main(["compare", str(baseline), str(cur), "--out", str(tmp_path / "c.html"), "--json", str(tmp_path / "c.json")])
    assert code == 0
    page = (tmp_path / "c.html").read_text()
    new = page[page.index('<section id="new"'):page.index('<section id="removed"')]
    assert 'data-count="25"' in new
    listed = [x for x in (a["case_id"] for a in added) if f'data-case="{x}"' in new]
    failing = [a["case_id"] for a in added if a["verdict"] == "FAIL"]
    assert len(listed) == LISTED and set(failing) <= set(listed)
    refused = [a["case_id"] for a in added if a["verdict"] == "EP_REJECTED"]
    assert set(refused) <= set(listed)
    at = {x: new.index(f'data-case="{x}"') for x in listed}
    passing = [x for x in listed if x not in failing + refused]
    assert max(at[x] for x in failing) < min(at[x] for x in refused) and max(at[x] for x in refused) < min(at[x] for x in passing)
    assert [at[x] for x in failing] == sorted(at[x] for x in failing)
    unlisted = [a["case_id"] for a in added if a["case_id"] not in listed]
    assert unlisted and not any(x in page for x in unlisted)
    assert "5 more not listed" in new and "--json FILE" in new
    # the counts per operator and verdict add up to every new case
    counts = new[new.index('id="new-counts"'):new.index('id="new-listed"')]
    per_op = {}
    for a in added:
        per_op.setdefault(a["op"], Counter())[a["verdict"]] += 1
    for op, c in per_op.items():
        row = counts[counts.index(f'<th class="op">{op}</th>'):]
        row = row[:row.index("</tr>")]
        assert f'<td class="n">{sum(c.values())}</td>' in row, (op, row)
    assert f'<td class="n">{len(failing)}</td>' in counts[counts.index("<tfoot>"):]
    assert f'<td class="n">{len(refused)}</td>' in counts[counts.index("<tfoot>"):]
    doc = json.loads((tmp_path / "c.json").read_text())
    assert sorted(x["case_id"] for x in doc["new"]) == sorted(a["case_id"] for a in added)
    assert {x["case_id"]: x["verdict"] for x in doc["new"]} == {a["case_id"]: a["verdict"] for a in added}
    assert doc["removed"] == [] and doc["regressions"] == []
    out = capsys.readouterr().out
    assert "NEW CASES (25)" in out and "compare --json FILE lists them all" not in out    # 25 fit the text's 50 rows


def test_a_long_text_several_rows_share_is_written_once(tmp_path, baseline):
    """A part of a reason that several changed rows hold, and long, is a note the rows refer to."""
    shared = "touches open point(s): " + "a long explanation of what the documents leave open " * 5
    recs = _records(baseline)
    passing = [r for r in recs if r.get("verdict") == "PASS"][:3]
    for i, r in enumerate(passing):
        r.update(verdict="FAIL", attribution="EP_WRONG", reason=f"Y: {i + 1}/4 differ | {shared}")
    cur = _write(tmp_path / "cur.jsonl", recs)
    assert compare_command(baseline, cur, tmp_path / "c.html") == 1
    page = (tmp_path / "c.html").read_text()
    assert page.count(shared.strip()) == 1
    notes = page[page.index('<section id="notes"'):]
    assert shared.strip() in notes[:notes.index("</section>")]
    reg = page[page.index('<section id="regressions"'):page.index('<section id="fixes"')]
    assert reg.count('href="#note-1"') == 3
    for i in range(3):
        assert f"Y: {i + 1}/4 differ | touches open point(s)" in reg


def test_by_case_matches_a_run_re_run_in_part_on_another_device(tmp_path, baseline):
    """A baseline whose cases were partly re-run on another device holds two environments of one EP:
    by default they are matched apart (by device), with --by-case by case id and EP alone."""
    recs = _records(baseline)
    env = next(r for r in recs if r.get("record") == "environment")
    other = dict(env, env_id="0123456789ab", device=str(env.get("device")) + " (the other GPU)")
    cases = [r for r in recs if r.get("record") == "case"]
    for r in cases[::2]:
        r["env_id"] = other["env_id"]
    base = _write(tmp_path / "base.jsonl", [env, other] + cases)
    cur = _write(tmp_path / "cur.jsonl", [dict(env, device=str(env.get("device")) + " renamed")] +
                 [dict(r, env_id=env["env_id"]) for r in cases])
    apart = compare(D.load([base]), D.load([cur]))
    assert apart.matched < len(cases) and apart.new
    one = compare(D.load([base]), D.load([cur]), by_case=True)
    assert one.matched == len(cases) and not one.new and not one.removed and "--by-case" in one.ep_note
    # (each environment of the split baseline names the whole run's count: "incomplete", exit 4, not 1)
    assert main(["compare", str(base), str(cur), "--by-case", "--json", str(tmp_path / "c.json")]) in (0, 4)
    assert json.loads((tmp_path / "c.json").read_text())["matched"] == len(cases)
