"""The report of the main job in a real browser, at 1000 and 1400 px: the three lanes of
`scripts/bench.sh` (the CPU EP, the DML EP, the direct DirectML lane) merged into one page.

The first screen answers "what did DirectML get wrong, and who is at fault" (per operator:
DirectML itself, the DML EP's lowering, the CPU EP, the reference; the CPU EP's known deviations
apart); the four-way table is readable, in the navigation, clickable and complete; nothing
overprints, nothing is cut, no word is broken inside; labels come with their declarations' texts;
the charts count what the records say; the value grids show the recorded values.

The DirectML lanes' records are the committed default-profile sample (reports/dml-lavapipe-fourway);
the CPU EP lane is a fresh smoke run.
"""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

import onnx_dml_bench
from onnx_dml_bench import registry
from onnx_dml_bench.cli import main
from onnx_dml_bench.report import write_all
from onnx_dml_bench.report.data import ATTRIBUTION_TEXT, VERDICT_TEXT
from onnx_dml_bench.report.fault import PARTY_TEXT
from onnx_dml_bench.record import VERDICTS
from onnx_dml_bench.results import read
from onnx_dml_bench.verdict import NO_KERNEL, NO_KERNEL_LABEL

from test_report_browser import CHROMIUM, Chromium, Tab

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
FOURWAY = ROOT / "reports" / "dml-lavapipe-fourway" / "results.jsonl.xz"
DIRECT, DML, CPU = "DirectML", "DmlExecutionProvider", "CPUExecutionProvider"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium is needed for the browser tests: /usr/bin/chromium is absent "
                    "(Debian: apt-get install -y chromium)")
    b = Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def three_lanes(tmp_path_factory):
    """(report folder, records) of the CPU EP smoke lane merged with both DirectML lanes."""
    run = tmp_path_factory.mktemp("cpu-lane")
    assert main(["run", "--ep", "cpu", "--profile", "smoke", "--out", str(run), "--no-report"]) in (0, 1)
    out = tmp_path_factory.mktemp("three-lanes")
    merged = out / "results.jsonl"
    assert main(["merge", str(merged), str(run / "results.jsonl"), str(FOURWAY)]) == 0
    write_all([merged], out)
    return out, read(merged).records


def page(browser, folder: Path, width: int) -> Tab:
    tab = Tab(browser, width=width, height=1000)
    tab.load(folder / "report.html")
    return tab


# what the layout checks look for, in the page itself
FITS_JS = """((selector) => {
  const bad = [];
  for (const c of document.querySelectorAll(selector)) {
    if (c.offsetParent === null) continue;
    if (c.scrollWidth > c.clientWidth + 1) bad.push('overflows its cell: ' + c.textContent.trim().slice(0, 50));
    const box = c.getBoundingClientRect(), r = document.createRange();
    r.selectNodeContents(c);
    for (const q of r.getClientRects()) {
      if (q.width && (q.left < box.left - 0.5 || q.right > box.right + 0.5 || q.top < box.top - 0.5 || q.bottom > box.bottom + 0.5))
        { bad.push('text outside its cell: ' + c.textContent.trim().slice(0, 50)); break; }
    }
  }
  return bad;
})"""

# a line break inside a word: two characters of one element's text on different lines, with no
# break point between them (whitespace, or a hyphen, underscore, colon, slash, comma, pipe or
# parenthesis before the break). Text of two elements (a badge and the chip below it) may break.
BREAKS_JS = """((selector, limit) => {
  const bad = [], ok = /[\\-_:\\/,;|()]/;
  let n = 0;
  for (const root of document.querySelectorAll(selector)) {
    if (root.offsetParent === null) continue;
    if (++n > limit) break;
    const chars = [];          // [character, line top or null, its element, whitespace seen before it]
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (let i = 0; i < node.data.length; i++) {
        const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
        const q = r.getClientRects();
        chars.push([node.data[i], q.length && q[0].width ? q[0].top : null, node.parentElement]);
      }
    }
    let prev = null, space = false;
    for (const c of chars) {
      if (/\\s/.test(c[0])) { space = true; continue; }
      if (c[1] === null) continue;
      if (prev && c[1] > prev[1] + 3 && !space && prev[2] === c[2] && !ok.test(prev[0])) {
        const text = chars.map(x => x[0]).join('');
        bad.push(text.slice(0, 60));
      }
      prev = c; space = false;
    }
  }
  return bad;
})"""


def fits(tab: Tab, selector: str) -> list[str]:
    return tab.js(f"{FITS_JS}({json.dumps(selector)})")


def mid_word_breaks(tab: Tab, selector: str, limit: int = 400) -> list[str]:
    return tab.js(f"{BREAKS_JS}({json.dumps(selector)}, {limit})")


def no_sideways_scroll(tab: Tab) -> bool:
    return tab.js("document.documentElement.scrollWidth <= window.innerWidth + 1")


def _by_case(records, ep):
    return {r.case_id: r for r in records if r.ep == ep}


def expected_parties(records) -> dict[str, set]:
    """Who is at fault, worked out here from the records alone (not with report/fault.py)."""
    direct, dml = _by_case(records, DIRECT), _by_case(records, DML)
    out = {"directml": set(), "lowering": set(), "cpu-known": set(), "cpu": set(), "reference": set()}
    for cid, r in direct.items():
        if r.verdict == "FAIL":
            out["directml"].add(cid)
    for cid, r in dml.items():
        d = direct.get(cid)
        if r.verdict == "FAIL" and r.attribution in ("EP_WRONG", "BOTH_WRONG") and d is not None and d.verdict == "PASS":
            out["lowering"].add(cid)
        # DirectML wrong and the DML EP wrong in another way (other mismatch counts): both parties
        fails = lambda rec: {n: o.mismatches for n, o in rec.outputs.items() if not o.match}  # noqa: E731
        if r.verdict == "FAIL" and d is not None and d.verdict == "FAIL" and fails(r) != fails(d):
            out["lowering"].add(cid)
    out["not-run"], out["no-answer"], out["cpu-no-answer"] = set(), set(), set()
    for r in records:
        known = any(lab.startswith("known-deviation:") for lab in r.labels)
        cpu_wrong = (r.ep == CPU and r.verdict == "FAIL") or (r.ep != CPU and r.cpu is not None and r.cpu.verdict == "FAIL")
        if cpu_wrong and r.attribution != "REFERENCE_DISPUTED":
            out["cpu-known" if known else "cpu"].add(r.case_id)
        # the CPU EP's lane beside DirectML: its refusals are its own (a known deviation, or not run by it),
        # never the "not run" / "no answer" of the lanes under test
        no_outputs = r.verdict in ("NOT_OFFLOADED", "EP_REJECTED", "NOT_SUPPORTED", "EP_ERROR", "ERROR", "CRASH", "TIMEOUT")
        if r.ep == CPU and no_outputs:
            refusal = r.verdict in ("EP_REJECTED", "EP_ERROR", "ERROR")
            out["cpu-known" if known and refusal else "cpu-no-answer"].add(r.case_id)
        elif no_outputs:
            out["not-run" if r.verdict in ("NOT_OFFLOADED", "EP_REJECTED", "NOT_SUPPORTED") else "no-answer"].add(r.case_id)
        if r.attribution == "REFERENCE_DISPUTED":
            out["reference"].add(r.case_id)
    return out


# ----------------------------------------------------------------------------------------------
# The first screen
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [1000, 1400])
def test_first_screen_says_who_is_at_fault(browser, three_lanes, width):
    folder, records = three_lanes
    tab = page(browser, folder, width)
    try:
        # the first sections after the navigation: the bugs, then who is at fault, in view once past the bugs
        assert tab.js("document.querySelector('nav.toc').nextElementSibling.id") == "bugs"
        assert tab.js("document.getElementById('bugs').nextElementSibling.id") == "fault"
        assert tab.js("document.getElementById('bug-table').getBoundingClientRect().top") < 700
        assert tab.js("document.getElementById('fault-table').getBoundingClientRect().top"
                      " - document.getElementById('bugs').getBoundingClientRect().height") < 700
        assert tab.js("document.querySelector('#fault h2').textContent") == "What DirectML got wrong, and who is at fault"
        cells = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('#fault-table tfoot td'))"
                       ".map(td => [td.dataset.party, +td.textContent]))")
        want = expected_parties(records)
        for party, ids in want.items():
            assert cells.get(party, 0) == len(ids), (party, cells)
        assert cells["directml"] > 0 and cells["lowering"] > 0 and cells["cpu-known"] > 0
        # each column says the lanes it counts; the CPU EP lane's refusals are none of the DirectML lanes'
        heads = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('#fault-table thead th[data-party]'))"
                       ".map(th => [th.dataset.party, (th.querySelector('small.lanes') || {textContent: ''}).textContent]))")
        assert "CPU EP" not in heads.get("not-run", "") and "CPU EP" not in heads.get("no-answer", "")
        assert heads["directml"] == "DirectML (direct), DML EP"
        # the four-way table's "CPU EP wrong" is split as the first screen's CPU EP columns, and within them
        direct, dml = _by_case(records, DIRECT), _by_case(records, DML)
        from onnx_dml_bench.report.fourway import classify
        split = Counter(("cpu-known" if any(lab.startswith("known-deviation:") for lab in dml[c].labels) else "cpu")
                        for c in direct if c in dml and classify(direct[c], dml[c]).cls == "CPU_EP_WRONG")
        fw = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('#fourway-matrix tfoot td[data-fw=CPU_EP_WRONG]'))"
                    ".map(td => [td.dataset.party, +td.textContent]))")
        assert fw == {"cpu-known": split["cpu-known"], "cpu": split["cpu"]}
        assert fw["cpu-known"] <= cells["cpu-known"] and fw["cpu"] <= cells["cpu"]
        # the title counts cases, lanes and records
        cases = len({r.case_id for r in records})
        assert tab.js("document.querySelector('h1').textContent").startswith(
            f"onnx-dml-bench: {cases} cases on 3 lanes (DirectML (direct), DML EP, CPU EP): {len(records)} records")
        assert tab.js("+document.querySelector('[data-total=all]').textContent") == len(records)
        lane_cases = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('#lane-totals tbody tr'))"
                            ".map(tr => [tr.dataset.ep, +tr.children[1].textContent]))")
        assert lane_cases == dict(Counter(r.ep for r in records))
        # the versions and the device on the first screen
        versions = tab.js("document.getElementById('versions').textContent")
        for word in ("DirectML.dll", "Wine", "vkd3d", "Mesa", "device", "onnxruntime"):
            assert word in versions, word
        assert tab.js("document.getElementById('versions').getBoundingClientRect().bottom") < 400
        # the CPU EP's known deviations are counted apart and never listed as DirectML's
        headline = tab.js("document.getElementById('headline').textContent")
        assert f"DirectML itself: {len(want['directml'])} cases" in headline
        assert f"DML EP lowering: {len(want['lowering'])} cases" in headline
        assert f"{len(want['cpu-known'])} cases where a known deviation" in headline
        for party in ("directml", "lowering"):
            tab.js(f"document.querySelector('#fault-table tfoot td[data-party={party}]').click()")
            shown = tab.js("window.onnxDmlReport.shownIds()")
            assert shown and all(s.split("|")[1] in (DIRECT, DML) for s in shown), party
            assert {s.split("|")[0] for s in shown} == want[party]
            assert tab.js("+document.querySelector('#pager-top .count').dataset.cases") == len(want[party])
        tab.js("document.querySelector('#fault-table tfoot td[data-party=\"cpu-known\"]').click()")
        assert {s.split("|")[0] for s in tab.js("window.onnxDmlReport.shownIds()")} == want["cpu-known"]
        # every count is a filter: one operator's cell lists exactly that operator's cases
        td = tab.js("(() => { const td = document.querySelector('#fault-table tbody td.hit[data-party=directml]'); td.click();"
                    " return [td.dataset.op, +td.textContent]; })()")
        assert tab.js("+document.querySelector('#pager-top .count').dataset.cases") == td[1] == len(
            {c for c in want["directml"] if _by_case(records, DIRECT)[c].op == td[0]})
        # known deviations apart, with their declarations' texts
        texts = {d.key: d.summary for op in registry.OPERATORS.values() for d in op.deviations()}
        rows = tab.js("Array.from(document.querySelectorAll('#known-table tbody tr')).map(tr => "
                      "[tr.dataset.label, tr.querySelector('td.text').textContent])")
        assert rows and all(text == texts[label.split(":", 1)[1]] for label, text in rows)
        assert fits(tab, "#fault-table th, #fault-table td") == []
        assert mid_word_breaks(tab, "#fault-table th, #fault-table td, #headline p") == []
        assert no_sideways_scroll(tab) and tab.problems() == []
    finally:
        tab.close()


# ----------------------------------------------------------------------------------------------
# The four-way section
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [1000, 1400])
def test_fourway_table_is_readable_navigable_clickable_and_complete(browser, three_lanes, width):
    folder, records = three_lanes
    tab = page(browser, folder, width)
    try:
        assert tab.js("!!document.querySelector('nav.toc a[href=\"#fourway\"]')")
        # headers never overprint: each head's text inside its own cell, no two heads overlapping
        assert fits(tab, "#fourway-matrix th, #fourway-matrix td") == []
        overlaps = tab.js("""(() => { const hs = Array.from(document.querySelectorAll('#fourway-matrix thead th')).map(th => {
            const r = document.createRange(); r.selectNodeContents(th); return r.getBoundingClientRect(); });
          let n = 0; for (let i = 1; i < hs.length; i++) if (hs[i].left < hs[i - 1].right - 0.5) n++; return n; })()""")
        assert overlaps == 0
        assert mid_word_breaks(tab, "#fourway-matrix th, #fourway-matrix td, .fw-chip") == []
        # every count is a filter; the case list pages through all of them (nothing cut at 500)
        direct, dml = _by_case(records, DIRECT), _by_case(records, DML)
        from onnx_dml_bench.report.fourway import classify
        want = Counter(classify(direct[c], dml[c]).cls for c in direct if c in dml)
        for cls in ("DIRECTML_WRONG", "ALL_AGREE"):
            tab.js(f"document.querySelector('#fourway-matrix tfoot td[data-fw={cls}]').click()")
            assert tab.js("+document.querySelector('#pager-top .count').dataset.cases") == want[cls]
            assert tab.js("window.onnxDmlReport.shown()") == 2 * want[cls]      # both lanes' records
        assert want["ALL_AGREE"] > 500
        seen = set()
        pages = tab.js("+document.querySelector('#pager-top .page').textContent.split(' of ')[1]")
        for _ in range(pages):
            seen |= set(tab.js("Array.from(document.querySelectorAll('#case-body tr.row')).map(tr => tr.dataset.case)"))
            tab.js("document.querySelector('#pager-top button:last-of-type').click()")
        assert len(seen) == want["ALL_AGREE"]
        cell = tab.js("(() => { const td = document.querySelector('#fourway-matrix tbody td.hit[data-fw=EP_LOWERING_WRONG]');"
                      " td.click(); return [td.dataset.op, td.dataset.dtype, +td.textContent]; })()")
        assert tab.js("+document.querySelector('#pager-top .count').dataset.cases") == cell[2]
        assert no_sideways_scroll(tab) and tab.problems() == []
    finally:
        tab.close()


# ----------------------------------------------------------------------------------------------
# The case list
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [1000, 1400])
def test_case_rows_wrap_and_keep_every_column(browser, three_lanes, width):
    folder, records = three_lanes
    tab = page(browser, folder, width)
    try:
        tab.js("window.onnxDmlReport.setFilters({verdict: '!PASS'})")
        heads = tab.js("Array.from(document.querySelectorAll('#case-head th')).map(th => [th.dataset.key, th.offsetWidth])")
        assert [k for k, _ in heads] == ["verdict", "id", "op", "ep", "opset", "labels", "mism", "ulp"]
        assert all(w >= 60 for _, w in heads), heads
        # the reason is whole, wrapped on its own row, never cut with an ellipsis
        rows = tab.js("""Array.from(document.querySelectorAll('#case-body tr.reason-row .reason-text')).map(e => {
            const s = getComputedStyle(e.parentElement); return [e.closest('tr').dataset.case, e.textContent,
            s.whiteSpace, s.textOverflow, e.parentElement.scrollWidth <= e.parentElement.clientWidth + 1]; })""")
        reasons = {r.case_id: r.reason for r in records}
        assert rows
        for cid, text, ws, to, fit in rows:
            assert text == reasons[cid] or any(text == r.reason for r in records if r.case_id == cid)
            assert ws == "normal" and to != "ellipsis" and fit, cid
        longest = max(len(t) for _, t, *_ in rows)
        assert longest > 300                      # the long reasons are there, in full
        assert fits(tab, "#case-body tr.row > td, #case-body tr.reason-row > td") == []
        assert mid_word_breaks(tab, "#case-body tr.row > td", limit=160) == []
        # labels: grouped chips whose tooltip is the declaration's text
        chip = tab.js("(() => { const c = document.querySelector('#case-body .label.g-known-deviation'); "
                      "return c && [c.dataset.label, c.title]; })()")
        if chip:
            key = chip[0].split(":", 1)[1]
            summary = next(d.summary for op in registry.OPERATORS.values() for d in op.deviations() if d.key == key)
            assert summary in chip[1]
        # an opened case does not squeeze the id column, nor widen the table past its box
        before = tab.js("document.querySelector('#case-head th[data-key=id]').offsetWidth")
        tab.js("document.querySelector('#case-body tr.row').click()")
        assert tab.js("document.querySelectorAll('#case-body tr.detail').length") == 1
        assert tab.js("document.querySelector('#case-head th[data-key=id]').offsetWidth") == before >= 150
        assert tab.js("document.getElementById('case-table').offsetWidth <= document.getElementById('case-table').parentElement.clientWidth + 1")
        assert no_sideways_scroll(tab) and tab.problems() == []
    finally:
        tab.close()


def test_every_record_of_a_signature_links_its_triage(browser, tmp_path):
    """The committed sample with triage: every FAIL links a shrunk case and a bundle, the siblings of
    the case triage took naming it."""
    sample = ROOT / "reports" / "dml-lavapipe"
    for sub in ("shrunk", "bundle"):       # the page links them relative to itself
        (tmp_path / sub).symlink_to(sample / sub)
    write_all([sample / "results.jsonl.xz"], tmp_path)
    tab = page(browser, tmp_path, 1400)
    try:
        fails = [r.case_id for r in read(sample / "results.jsonl.xz").records if r.verdict == "FAIL"]
        links = tab.js("""(() => { const d = window.onnxDmlReport.data, c = d.columns;
            return d.cases.filter(r => d.tables.verdict[r[c.indexOf('verdict')]] === 'FAIL').map(r => {
              let det = r[c.indexOf('detail')]; if (typeof det === 'string') det = JSON.parse(det);
              return [r[0], det && det.triage ? det.triage : null]; }); })()""")
        assert len(links) == len(fails) > 20
        assert all(t and t.get("shrunk") and t.get("bundle") for _, t in links), [c for c, t in links if not (t and t.get("shrunk"))]
        assert sum(1 for _, t in links if t.get("of")) > 0
        tab.js(f"window.onnxDmlReport.openCase({json.dumps(next(c for c, t in links if t.get('of')))})")
        text = tab.js("document.querySelector('tr.detail .triage').textContent")
        assert "shrunk case" in text and "bundle" in text and "same failure signature" in text
    finally:
        tab.close()


# ----------------------------------------------------------------------------------------------
# Legend, how to read, environment
# ----------------------------------------------------------------------------------------------

def test_legend_and_how_to_read(browser, three_lanes):
    folder, records = three_lanes
    tab = page(browser, folder, 1400)
    try:
        groups = tab.js("Array.from(document.querySelectorAll('#labels .label-group')).map(g => g.id)")
        assert "labels-known-deviation" in groups and "labels-open-point" in groups and "labels-took" in groups
        ops = registry.OPERATORS
        legend = tab.js("Array.from(document.querySelectorAll('#labels tr[data-label]')).map(tr => "
                        "[tr.dataset.label, tr.querySelector('td.text').textContent])")
        labels = Counter(lab for r in records for lab in r.labels)
        assert {lab for lab, _ in legend} == set(labels)
        for lab, text in legend:
            kind, _, key = lab.partition(":")
            if kind == "known-deviation":
                assert next(d.summary for op in ops.values() for d in op.deviations() if d.key == key) in text
            elif kind == "open-point":
                assert any(op.open_point_texts.get(key, "\0") in text for op in ops.values())
        howto = tab.js("document.getElementById('howto').textContent")
        for word in ("known-deviation", "open-point", "ep-took", "cpu-took", "error bound"):
            assert word in howto, word
        assert tab.js("document.getElementById('howto').open") is False
        env_json = tab.js("Array.from(document.querySelectorAll('.env table.kv td')).filter(td => /^[\\[{]/.test(td.textContent.trim())).length")
        assert env_json == 0
        assert tab.js("Array.from(document.querySelectorAll('details.env-more')).every(d => !d.open)")
        assert tab.js("document.querySelectorAll('details.env-more').length") >= 1
        assert all(u.startswith(("file:", "data:", "blob:")) for u in tab.requests())
    finally:
        tab.close()


def test_verdict_texts_say_what_the_code_does():
    """PASS of AveragePool is within the error bound (no ULP count); BOTH_WRONG is also two sides
    agreeing bit for bit outside every allowed answer where no open point is touched
    (compare.attribute)."""
    from onnx_dml_bench.compare import attribute
    assert "error bound" in VERDICT_TEXT["PASS"] and "ULP tolerance" not in VERDICT_TEXT["PASS"]
    assert attribute(False, False, True, (), False) == ("FAIL", "BOTH_WRONG")
    assert attribute(False, False, True, ("nan",), False) == ("FAIL", "REFERENCE_DISPUTED")
    assert "agree bit for bit" in ATTRIBUTION_TEXT["BOTH_WRONG"] and "no open point" in ATTRIBUTION_TEXT["BOTH_WRONG"]
    # what attribute() is handed are the open points *and the rules* that concern the failing output
    # (verdict.judge), and both texts say so
    for att in ("BOTH_WRONG", "REFERENCE_DISPUTED"):
        assert "rule of the ONNX text" in ATTRIBUTION_TEXT[att] and "failing output" in ATTRIBUTION_TEXT[att], att
    assert "rule of the ONNX text" in PARTY_TEXT["reference"][1]
    # a node without a kernel on any EP is a refusal (verdict.failure), and the legend says so
    assert NO_KERNEL in VERDICT_TEXT["EP_REJECTED"] and NO_KERNEL_LABEL in VERDICT_TEXT["EP_REJECTED"]
    # the legend explains exactly the verdicts a record can hold
    assert set(VERDICT_TEXT) == set(VERDICTS)


def test_every_verdict_of_the_schema_is_one_the_bench_writes():
    """A verdict the records can hold but no code path writes is a promise the report, the JUnit
    file and the pytest plugin explain for nothing: each one is set somewhere outside the modules
    that only read, colour or explain verdicts."""
    root = Path(onnx_dml_bench.__file__).parent
    readers = {root / "record.py", root / "report", root / "conformance", root / "triage"}
    src = "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py")
                    if not any(p == r or r in p.parents for r in readers))
    for v in VERDICTS:
        assert re.search(rf"Verdict\.{v}\b|[\"']{v}[\"']", src), f"{v}: never written"


# ----------------------------------------------------------------------------------------------
# Charts and value grids
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("width", [1000, 1400])
def test_charts_count_what_the_records_say(browser, three_lanes, width):
    folder, records = three_lanes
    tab = page(browser, folder, width)
    try:
        segs = tab.js("Array.from(document.querySelectorAll('#chart-verdicts rect.seg')).map(r => "
                      "[r.dataset.op, r.dataset.ep, r.dataset.verdict, +r.dataset.n])")
        assert Counter({(o, e, v): n for o, e, v, n in segs}) == Counter((r.op, r.ep, r.verdict) for r in records)
        seg = segs[0]
        tab.js("document.querySelector('#chart-verdicts rect.seg').dispatchEvent(new MouseEvent('click'))")
        assert tab.js("window.onnxDmlReport.shown()") == seg[3]
        # the pass rate per operator and lane: each bar is its lane's cases, the rate written beside it
        rates = tab.js("Array.from(document.querySelectorAll('#chart-verdicts text.rate')).map(t => +t.dataset.rate)")
        per = Counter((r.op, r.ep) for r in records)
        passed = Counter((r.op, r.ep) for r in records if r.verdict == "PASS")
        assert sorted(rates) == pytest.approx(sorted(passed[k] / n for k, n in per.items()))
        widths = tab.js("""(() => { const w = {}; for (const r of document.querySelectorAll('#chart-verdicts rect.seg')) {
            const k = r.dataset.op + '|' + r.dataset.ep; w[k] = (w[k] || 0) + r.getBBox().width; } return Object.values(w); })()""")
        assert max(widths) - min(widths) < 1          # every bar the whole width: shares, not counts
        # the histograms: by default the first lane under test (DirectML), never the CPU EP's deviations mixed in
        assert tab.js("document.getElementById('errors-lane').value") == DIRECT
        non_index = lambda r: any(o.kind != "indices" for o in r.outputs.values())  # noqa: E731
        for lane in (DIRECT, ""):
            tab.js(f"(() => {{ const s = document.getElementById('errors-lane'); s.value = {json.dumps(lane)}; "
                   "s.dispatchEvent(new Event('change')); })()")
            mine = [r for r in records if lane in ("", r.ep)]
            bars = tab.js("Array.from(document.querySelectorAll('#chart-errors svg')).map(s => [s.dataset.op, "
                          "Array.from(s.querySelectorAll('rect.bar')).reduce((a, r) => a + +r.dataset.n, 0), "
                          "s.querySelectorAll('line.limit').length])")
            compared = Counter(r.op for r in mine if r.verdict in ("PASS", "FAIL") and non_index(r))
            assert {op: n for op, n, _ in bars} == dict(compared)
            assert all(limit == 1 for *_, limit in bars)
            fails = Counter(r.op for r in mine if r.verdict == "FAIL" and non_index(r))
            red = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('#chart-errors svg')).map(s => [s.dataset.op, "
                         "Array.from(s.querySelectorAll('rect.bar[data-verdict=FAIL]')).reduce((a, r) => a + +r.dataset.n, 0)]))")
            assert {k: v for k, v in red.items() if v} == dict(fails)
            # an output of another shape has a bin of its own, never the signed-zero one
            shaped = sum(1 for r in mine if r.verdict in ("PASS", "FAIL") and any(
                o.kind != "indices" and {"shape", "dtype", "missing"} & set(o.labels) for o in r.outputs.values()))
            in_bin = tab.js("Array.from(document.querySelectorAll('#chart-errors rect.bar[data-bin=\"wrong shape\"]'))"
                            ".reduce((a, r) => a + +r.dataset.n, 0)")
            assert in_bin == shaped
            # the operator's name and the axis caption never overlap
            assert tab.js("""Array.from(document.querySelectorAll('#chart-errors svg')).every(s => {
                const a = s.querySelector('text.op-label').getBBox(), b = s.querySelector('text.caption').getBBox();
                return a.y + a.height <= b.y + 0.5 || b.x >= a.x + a.width; })""")
        assert fits(tab, "#chart-errors, #chart-verdicts") == [] and no_sideways_scroll(tab)
        assert tab.problems() == []
    finally:
        tab.close()


@pytest.mark.parametrize("width", [1000, 1400])
def test_tables_fit_without_a_cut(browser, three_lanes, width):
    """The operator x data type matrix of three lanes, the first screen's table, the four-way table and
    the per-lane table fit their box whole (no sideways scroll inside), and no operator name wraps."""
    folder, records = three_lanes
    tab = page(browser, folder, width)
    try:
        for sel in ("matrix", "fault-table", "fourway-matrix", "lane-totals"):
            w = tab.js(f"(() => {{ const t = document.getElementById('{sel}'); return [t.scrollWidth, t.parentElement.clientWidth]; }})()")
            assert w[0] <= w[1] + 1, (sel, w)
        one_line = tab.js("""Array.from(document.querySelectorAll('#matrix th.op, #fault-table th.op, #fourway-matrix th.op')).map(th => {
            const r = document.createRange(); r.selectNodeContents(th);
            const tops = new Set(Array.from(r.getClientRects()).filter(q => q.width).map(q => Math.round(q.top)));
            return [th.textContent.trim(), tops.size]; })""")
        assert one_line and all(n == 1 for _, n in one_line), [t for t, n in one_line if n != 1]
        assert fits(tab, "#matrix th, #matrix td") == []
        # the four-way table: one row per operator
        assert tab.js("document.querySelectorAll('#fourway-matrix tbody tr').length") == len({r.op for r in records if r.ep == DIRECT})
        assert no_sideways_scroll(tab) and tab.problems() == []
    finally:
        tab.close()


def test_an_opened_case_shows_its_reason_once_with_the_ratio_rounded(browser, three_lanes):
    folder, records = three_lanes
    from onnx_dml_bench.verdict import ratio_text
    r = next(r for r in records if r.verdict == "FAIL" and r.ep == DML and " | " in r.reason
             and any(o.bound_ratio and o.bound_ratio > 100 and o.bound_ratio != round(o.bound_ratio) for o in r.outputs.values()))
    tab = page(browser, folder, 1400)
    try:
        tab.js(f"window.onnxDmlReport.setFilters({{text: {json.dumps(r.case_id)}, ep: {json.dumps(DML)}}})")
        tab.js("document.querySelector('#case-body tr.row').click()")
        assert tab.js("document.querySelectorAll('#case-body tr.detail').length") == 1
        shown = tab.js("""Array.from(document.querySelectorAll('#case-body tr.reason-row .reason-text, #case-body tr.detail .reason-full'))
            .filter(e => e.offsetParent !== null).map(e => e.textContent)""")
        assert shown == [r.reason.replace(" | ", "\n")]          # once, one part a line
        o = next(o for o in r.outputs.values() if o.bound_ratio and o.bound_ratio > 100)
        cells = tab.js("Array.from(document.querySelectorAll('#case-body tr.detail table.stats td')).map(td => td.textContent)")
        assert f"{ratio_text(o.bound_ratio)}x" in cells and str(o.bound_ratio) not in cells
        tab.js("document.querySelector('#case-body tr.row').click()")          # closed: the reason row again
        assert tab.js("document.querySelector('#case-body tr.reason-row').offsetParent !== null")
        assert tab.problems() == []
    finally:
        tab.close()


def test_fail_and_ep_error_have_colours_of_their_own():
    from onnx_dml_bench.record import Verdict

    def rgb(h):
        return [int(h[i:i + 2], 16) for i in (1, 3, 5)]
    cols = {v.value: rgb(v.colour) for v in Verdict}
    assert len({v.colour for v in Verdict}) == len(cols)
    dist = sum((a - b) ** 2 for a, b in zip(cols["FAIL"], cols["EP_ERROR"])) ** 0.5
    assert dist > 100, dist
    assert Verdict.FAIL.style != Verdict.EP_ERROR.style


def test_value_grids_show_input_ep_cpu_and_reference(browser, three_lanes):
    folder, records = three_lanes
    tab = page(browser, folder, 1400)
    try:
        cid, ep = tab.js("""(() => { const d = window.onnxDmlReport.data, c = d.columns;
            for (const r of d.cases) { let det = r[c.indexOf('detail')]; if (typeof det === 'string') det = JSON.parse(det);
              if (det && det.grid && det.grid.input && det.grid.cpu && det.grid.side === 'ep' && det.grid.bad.length)
                return [r[0], d.tables.ep[r[c.indexOf('ep')]]]; } })()""")
        rec = next(r for r in records if r.case_id == cid and r.ep == ep)
        tab.js(f"window.onnxDmlReport.setFilters({{text: {json.dumps(cid)}, ep: {json.dumps(ep)}}})")
        tab.js("document.querySelector('#case-body tr.row').click()")
        captions = tab.js("Array.from(document.querySelectorAll('tr.detail .grids figcaption')).map(f => f.textContent)")
        assert len(captions) == 4 and captions[0].startswith("input X") and captions[-1] == "reference"
        assert any("CPU EP" == c for c in captions)
        # the outlined cells of the EP's panel are the recorded mismatches, with the recorded values
        bad = tab.js("Array.from(document.querySelectorAll('tr.detail .grids rect.bad-ep')).map(r => r.textContent)")
        out = next(o for o in rec.outputs.values() if not o.match)
        got = {str(f["got"]) for f in out.first}
        assert bad and all(t.split(" = ")[1].split(" (")[0] in got or t.split(" = ")[1].split(" (")[0] in
                           {str(float(x)) for x in got if x not in ("nan", "inf", "-inf")} for t in bad)
        assert tab.js("document.querySelectorAll('tr.detail .grids svg.grid-legend').length") >= 2
        assert tab.problems() == []
    finally:
        tab.close()


def test_a_bugs_cases_link_lists_exactly_its_cases(browser, three_lanes):
    """Each bug's "cases" link lists its cases on its EP (the rows come from the case data, not
    from ids in the markup): as many as the link says, each of the bug's signature."""
    from onnx_dml_bench.report import bugs as BG
    from onnx_dml_bench.report import fault as FT
    from onnx_dml_bench.report import fourway as FW
    from onnx_dml_bench.report.data import load
    folder, records = three_lanes
    res = load([folder / "results.jsonl"])
    view = FW.join(res.records, res.envs)
    bugs = [b.to_dict() for b in BG.of_results(res, FT.blames(res.records, view), view)[0]]
    assert len(bugs) >= 3
    tab = page(browser, folder, 1400)
    links = tab.js("Array.from(document.querySelectorAll('.bug-cases')).map(a => [a.dataset.bug, +a.textContent])")
    assert [x[0] for x in links] == [b["id"] for b in bugs]
    assert "data-cases" not in (folder / "report.html").read_text(encoding="utf-8").split('id="report-data"')[0]
    for k, b in enumerate(bugs):
        tab.js(f"document.querySelectorAll('.bug-cases')[{k}].click()")
        shown = tab.js("window.onnxDmlReport.shownIds()")
        want = {f"{r.case_id}|{r.ep}" for r in records if r.case_id in set(b["case_ids"]) and (not b["ep"] or r.ep == b["ep"])}
        assert set(shown) == want and len(shown) == links[k][1] == b["cases"], b["signature"]
