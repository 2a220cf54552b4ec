"""Reports: HTML, JUnit XML and JSON summary written from real result files."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from onnx_dml_bench.cli import main
from onnx_dml_bench.report import write_all
from onnx_dml_bench.report import data as D
from onnx_dml_bench.report import html as H
from onnx_dml_bench.report import junit as J
from onnx_dml_bench.report import repro
from onnx_dml_bench.record import CaseRecord, Verdict, to_json
from onnx_dml_bench.results import read

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def run_smoke(out: Path) -> Path:
    code = main(["run", "--ep", "cpu", "--profile", "smoke", "--out", str(out), "--no-report"])
    assert code in (0, 1)
    return out / "results.jsonl"


def plant(src: Path, dst: Path) -> dict:
    """Copy results, adding a FAIL record whose texts are HTML and an ERROR with control characters."""
    lines = src.read_text(encoding="utf-8").splitlines()
    recs = [json.loads(x) for x in lines]
    fail = next(r for r in recs if r.get("record") == "case" and r["verdict"] == "FAIL")
    bad = json.loads(json.dumps(fail))
    bad["case_id"] = 'planted-"><img src=x onerror=alert(3)>'
    bad["reason"] = XSS
    bad["onnx_node"] = "%Y = MaxPool</script><script>alert(4)</script>(%X)"
    bad["labels"] = ["<b>label</b>"]
    err = json.loads(json.dumps(fail))
    err.update(case_id="planted-control-chars", verdict="ERROR", attribution=None,
               reason="run failed: \x1b[31mred\x1b[0m \x00 nul & <tag>")
    recs += [bad, err]
    dst.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    return bad


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    return run_smoke(tmp_path_factory.mktemp("smoke"))


@pytest.fixture(scope="module")
def planted(tmp_path_factory, smoke) -> Path:
    p = tmp_path_factory.mktemp("planted") / "results.jsonl"
    plant(smoke, p)
    return p


def test_write_all_writes_three_files(tmp_path, smoke):
    paths = write_all([smoke], tmp_path / "out")
    assert [p.name for p in paths] == ["report.html", "junit.xml", "summary.json"]
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)


def test_summary_counts_equal_jsonl(tmp_path, smoke):
    write_all([smoke], tmp_path)
    s = json.loads((tmp_path / "summary.json").read_text())
    res = read(smoke)
    envs, recs = res.envs, res.records
    assert s["schema"] == "onnx-dml-bench/summary/1"
    assert s["total_cases"] == len(recs)
    assert s["totals"] == dict(Counter(r.verdict for r in recs))
    cells = Counter()
    for row in s["matrix"]:
        for v, n in row["counts"].items():
            cells[(row["ep"], row["op"], row["dtype"], v)] += n
        assert row["total"] == sum(row["counts"].values())
    assert cells == Counter((r.ep, r.op, r.dtype, r.verdict) for r in recs)
    assert s["attribution"] == dict(Counter(r.attribution for r in recs if r.attribution))
    assert s["labels"] == dict(Counter(lab for r in recs for lab in r.labels))
    assert s["failing"] == sorted({r.case_id for r in recs if r.verdict in ("FAIL", "CRASH", "TIMEOUT")})
    assert len(s["environments"]) == 1 and "not_expressible" not in s["environments"][0]
    assert s["not_expressible"]["capabilities"] == [
        {k: n.get(k) for k in ("op", "capability", "data_type", "feature_level", "reason")} for n in envs[0].not_expressible]


def test_junit_counts_with_junitparser(tmp_path, planted):
    write_all([planted], tmp_path)
    recs = read(planted).records
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    cases = [c for suite in xml for c in suite]
    assert len(cases) == len(recs)
    by_name = {c.name: c for c in cases}
    assert set(by_name) == {r.case_id for r in recs}
    kinds = Counter()
    for r in recs:
        c = by_name[r.case_id]
        assert c.classname == f"{r.op}.{r.dtype}.{r.ep}"
        res = c.result
        kind = type(res[0]).__name__ if res else "pass"
        kinds[kind] += 1
        expect = {"PASS": "pass", "FAIL": "Failure", "EP_ERROR": "Error", "ERROR": "Error", "CRASH": "Error",
                  "TIMEOUT": "Error"}.get(r.verdict, "Skipped")
        assert kind == expect, (r.case_id, r.verdict, kind)
        if r.verdict == "FAIL":
            assert r.reason.split("\n")[0][:50] in res[0].message
    v = Counter(r.verdict for r in recs)
    assert kinds["Failure"] == v["FAIL"]
    assert kinds["Error"] == v["EP_ERROR"] + v["ERROR"] + v["CRASH"] + v["TIMEOUT"]
    assert kinds["Skipped"] == sum(v[x] for x in Verdict.NOT_RUN)
    xml.update_statistics()
    assert xml.tests == len(recs)
    assert xml.failures == v["FAIL"]
    # the control characters of the planted ERROR did not break the XML
    err = by_name["planted-control-chars"].result[0]
    assert isinstance(err, Error) and "red" in err.message and "<tag>" in err.message


def test_junit_fail_on_turns_skips_into_failures(tmp_path, smoke):
    write_all([smoke], tmp_path, fail_on=("FAIL", "EP_REJECTED"))
    recs = read(smoke).records
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    n_rej = sum(r.verdict == "EP_REJECTED" for r in recs)
    assert n_rej
    rej = [c for s in xml for c in s if c.result and c.result[0].type == "EP_REJECTED"]
    assert len(rej) == n_rej and all(isinstance(c.result[0], Failure) for c in rej)
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["fail_on"] == ["FAIL", "EP_REJECTED"]
    assert len(s["failing_cases"]) == sum(r.verdict in ("FAIL", "EP_REJECTED") for r in recs)


def test_html_escapes_planted_texts(tmp_path, planted):
    write_all([planted], tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    from onnx_dml_bench.report.packed import PACKED_JS_TYPE, PACKED_TYPE, unpacked
    shown = unpacked(page)
    assert shown != page                         # the planted texts lie in packed blocks too
    # nothing of the planted texts appears as markup: not in the HTML (packed blocks expanded), not in
    # the embedded JSON
    for needle in ("<script>alert", "<img src=x", "</script><script>", "<b>label</b>", "onerror=alert(3)>"):
        assert needle not in shown, needle
    assert shown.count("<script") == 3           # the JSON block, the page's own script and the unpacking one
    assert page.count("<script") - page.count(f'<script type="{PACKED_TYPE}"') == 3
    assert page.count(f'<script type="{PACKED_JS_TYPE}"') == 1
    assert "innerHTML" not in shown and "insertAdjacentHTML" not in shown and "document.write" not in shown
    # markup is parsed in one place: the page's own packed blocks, put back by unpack.js
    assert shown.count("createContextualFragment") == 1
    from onnx_dml_bench.report.html import embedded_data
    doc = embedded_data(page)
    reasons = [row[doc["columns"].index("reason")] for row in doc["cases"]]
    assert XSS in reasons                         # carried intact, as data


def test_html_is_self_contained(tmp_path, smoke):
    write_all([smoke], tmp_path)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page)
    assert "@import" not in page and "url(http" not in page


@pytest.mark.slow
def test_html_compact_data(tmp_path):
    """The default profile stays well under 2.5 KB per case."""
    res = run_default(tmp_path / "run")
    write_all([res], tmp_path)
    recs = read(res).records
    size = (tmp_path / "report.html").stat().st_size
    assert len(recs) > 2000
    assert size / len(recs) < 2500, size / len(recs)


def run_default(out: Path) -> Path:
    code = main(["run", "--ep", "cpu", "--profile", "default", "--out", str(out), "--no-report"])
    assert code in (0, 1)
    return out / "results.jsonl"


def test_merged_runs_matrix_has_both_eps(tmp_path, smoke):
    other = tmp_path / "other.jsonl"
    res = read(smoke)
    envs, recs = res.envs, res.records
    env = dict(json.loads(to_json(envs[0])), ep="FakeExecutionProvider", env_id="fake0000env")
    lines = [json.dumps(env)]
    for r in recs[:10]:
        lines.append(json.dumps(dict(json.loads(to_json(r)), ep="FakeExecutionProvider", env_id="fake0000env")))
    other.write_text("\n".join(lines) + "\n")
    res = D.load([smoke, other])
    assert res.multi_ep and len(res.envs) == 2 and len(res.records) == len(recs) + 10
    m = H.matrix_view(res)
    assert m["eps"] == ["FakeExecutionProvider", "CPUExecutionProvider"]     # the CPU EP, the second opinion, last
    assert m["titles"] == {"FakeExecutionProvider": "Fake EP", "CPUExecutionProvider": "CPU EP"}
    page = H.render(res)
    assert page.count('class="env"') == 2
    assert "FakeExecutionProvider" in page


def test_coverage_lists_descriptor_values(smoke):
    res = D.load([smoke])
    cov = {c["op"]: c for c in D.coverage(res.records)}
    sent = [r for r in res.records if r.verdict in Verdict.SENT_TO_EP and r.op == "max_pooling2"]
    fields = {f["name"]: dict(f["values"]) for f in cov["max_pooling2"]["fields"]}
    assert set(fields) >= {"InputSizes", "WindowSize", "Strides", "FeatureLevel", "DataType"}
    assert sum(fields["DataType"].values()) == len(sent)
    assert set(fields["WindowSize"]) == {D.value_text(r.descriptor["WindowSize"]) for r in sent}
    # field order follows the descriptor class (directml.h), not the alphabet
    names = [f["name"] for f in cov["max_pooling2"]["fields"]]
    assert names.index("InputSizes") < names.index("Strides") < names.index("WindowSize")


def test_statement_and_extra_env_keys_are_shown(tmp_path, smoke):
    res = read(smoke)
    envs, recs = res.envs, res.records
    env = dict(json.loads(to_json(envs[0])), statement="DirectML ran on Mesa lavapipe <software Vulkan>, not on a GPU.",
               wine_version="wine-8.0 <x>", adapter="llvmpipe (LLVM 15.0.7, 256 bits)")
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join([json.dumps(env)] + [to_json(r) for r in recs]) + "\n")
    page = H.render(D.load([p]))
    assert "DirectML ran on Mesa lavapipe &lt;software Vulkan&gt;, not on a GPU." in page
    assert "wine_version" in page and "wine-8.0 &lt;x&gt;" in page
    assert "llvmpipe (LLVM 15.0.7, 256 bits)" in page


def test_repro_script_runs_and_shows_the_difference(tmp_path, smoke):
    res = read(smoke)
    envs, recs = res.envs, res.records
    rec = next(r for r in recs if r.verdict == "FAIL" and any(o.first for o in r.outputs.values()))
    script = tmp_path / "repro.py"
    script.write_text(repro.repro_script(rec, envs[0]))
    out = subprocess.run([sys.executable, str(script), "--save-case", str(tmp_path / "case.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert rec.case_id in out.stdout and "rebuilt id differs" not in out.stdout
    for name, o in rec.outputs.items():
        if not o.match:
            assert f"{name} on {rec.ep}: {o.mismatches}/{o.total} differ" in out.stdout
            assert str(o.first[0]["index"]) in out.stdout
    from onnx_dml_bench.casefile import load
    assert load(tmp_path / "case.json")[0].id == rec.case_id


def test_repro_data_cannot_break_out_of_the_string():
    data = repro.script_data(CaseRecord(case_id='x"""\'\'\'\\', op="max_pooling2", dml_op="", dtype="FLOAT32",
                                        opset=12, descriptor={}, family="random", seed=0, verdict="FAIL",
                                        ep="CPUExecutionProvider"))
    text = repro.fill(data)
    ns: dict = {}
    start = text.index("DATA = ")
    end = text.index("\n", text.index('""")', start))
    exec("import json\n" + text[start:end], ns)  # noqa: S102 - the literal only
    assert ns["DATA"]["case_id"] == 'x"""\'\'\'\\'


def test_a_cases_source_is_shown_searched_and_in_junit(tmp_path):
    """A networks case names its census layer, exporters and models; the report carries that line
    (the case detail shows it, the text search finds it) and JUnit's body holds it."""
    from onnx_dml_bench.plan import sweep_cases
    from onnx_dml_bench.report.html import embedded_data
    cases = sweep_cases("networks", ["space_to_depth1"])[:2]
    (tmp_path / "cases.json").write_text(json.dumps({"cases": [c.to_dict() for c in cases]}))
    assert main(["run", "--ep", "cpu", "--cases", str(tmp_path / "cases.json"), "--out", str(tmp_path / "run"),
                 "--fail-on", "CRASH"]) == 0
    rec = read(tmp_path / "run" / "results.jsonl").records[0]
    assert rec.source["profile"] == "networks" and rec.source["models"]
    doc = embedded_data((tmp_path / "run" / "report.html").read_text(encoding="utf-8"))
    texts = doc["tables"]["source"]
    row = doc["cases"][0]
    text = texts[row[doc["columns"].index("source")]]
    assert text.startswith("census ") and rec.source["models"][0] in text and "batch" in text
    js = (Path(__file__).resolve().parents[2] / "onnx_dml_bench" / "report" / "templates" / "report.js").read_text()
    assert 'T.source[g(r, "source")]' in js.split("function matches", 1)[1].split("function ", 1)[0]   # searched
    assert '["source", T.source ? T.source[g(r, "source")] || "" : ""]' in js                   # shown
    from onnx_dml_bench.report.junit import _body
    assert f"source: {text}" in _body(rec)


def test_not_expressible_cases_are_counted_by_reason_not_listed_one_by_one():
    """The NOT_EXPRESSIBLE cases of a run over every opset run to thousands: the page counts them by
    EP, operator and reason (the case list, filtered by the verdict, holds each one), so no such case
    has a row of its own outside the case data."""
    sample = Path(__file__).resolve().parents[2] / "reports" / "dml-lavapipe-fourway" / "results.jsonl.xz"
    res = D.load([sample])
    ne = [r for r in res.records if r.verdict == Verdict.NOT_EXPRESSIBLE]
    assert len(ne) >= 50 and len({(r.ep, r.op, r.reason) for r in ne}) < len(ne)
    view = H.not_expressible_view(res)
    assert view["count"] == len(ne) == sum(g["cases"] for g in view["groups"])
    assert Counter({(g["ep"], g["op"], g["reason"]): g["cases"] for g in view["groups"]}) == \
        Counter((r.ep, r.op, r.reason) for r in ne)
    assert [g["cases"] for g in view["groups"]] == sorted((g["cases"] for g in view["groups"]), reverse=True)
    page = H.render(res)
    markup = page.split('id="report-data"')[0]
    section = markup.split('<section id="not-expressible">')[1].split("</section>")[0]
    assert section.count("<tr>") == len(view["groups"]) + len(view["capabilities"]) + 2     # + the two heads
    assert f"{len(ne)} cases with verdict NOT_EXPRESSIBLE" in section
    assert 'data-filter-verdict="NOT_EXPRESSIBLE"' in section
    assert not any(r.case_id in section for r in ne)
