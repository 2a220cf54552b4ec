"""The HTML reports in a real browser: headless Chromium driven over the DevTools protocol.

Chromium is started with --remote-debugging-pipe: commands go to its fd 3 and answers come from
its fd 4 as NUL-terminated JSON, so no extra library and no network port are needed.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.report import write_all
from onnx_dml_bench.record import CaseRecord
from onnx_dml_bench.results import read

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]
XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
ALERT_HOOK = ("window.__alerts = []; window.alert = function (m) { window.__alerts.push(String(m)); };"
              "window.confirm = window.prompt = window.alert;")


# ----------------------------------------------------------------------------------------------
# A small DevTools-protocol client over the pipe
# ----------------------------------------------------------------------------------------------

class Chromium:
    def __init__(self, binary: Path, profile: Path):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # keep the child's ends away from 3 and 4 until they are moved there
        a = fcntl.fcntl(to_r, fcntl.F_DUPFD_CLOEXEC, 10)
        b = fcntl.fcntl(from_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_r)
        os.close(from_w)

        def child_fds():
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([str(binary), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     preexec_fn=child_fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(a)
        os.close(b)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the DevTools pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        os.close(self.w)
        os.close(self.r)


class Tab:
    def __init__(self, browser: Chromium, width: int = 1400, height: int = 1000):
        self.b = browser
        self.target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = browser.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self.send("Page.addScriptToEvaluateOnNewDocument", {"source": ALERT_HOOK})
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method, params=None, timeout=60):
        return self.b.send(method, params, self.s, timeout)

    def events(self, method: str) -> list[dict]:
        return [e for e in self.b.events if e.get("sessionId") == self.s and e.get("method") == method]

    def load(self, path: Path, fragment: str = "", timeout: float = 60) -> float:
        t0 = time.monotonic()
        self.send("Page.navigate", {"url": path.resolve().as_uri() + fragment})
        self.b.wait_event("Page.loadEventFired", self.s, timeout)
        self.wait("document.body && document.body.getAttribute('data-ready') === '1'", timeout)
        return time.monotonic() - t0

    def js(self, expr: str, timeout: float = 60):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.js(expr):
                return
            time.sleep(0.05)
        raise TimeoutError(expr)

    def screenshot(self, path: Path, full: bool = False) -> Path:
        params = {"format": "png"}
        if full:
            params["captureBeyondViewport"] = True
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))
        return path

    def close(self):
        self.b.send("Target.closeTarget", {"targetId": self.target})

    def problems(self) -> list:
        """Script exceptions, error log entries (a CSP violation, a failed load) and opened dialogs."""
        out = [e["params"]["exceptionDetails"] for e in self.events("Runtime.exceptionThrown")]
        out += [e["params"]["entry"] for e in self.events("Log.entryAdded") if e["params"]["entry"]["level"] == "error"]
        out += [e["params"] for e in self.events("Page.javascriptDialogOpening")]
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events("Network.requestWillBeSent")]


# ----------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium is needed for the browser tests: /usr/bin/chromium is absent "
                    "(Debian: apt-get install -y chromium)")
    b = Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


@pytest.fixture
def tab(browser):
    t = Tab(browser)
    yield t
    t.close()


def _plant(src: Path, dst: Path) -> dict:
    recs = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    fail = next(r for r in recs if r.get("record") == "case" and r["verdict"] == "FAIL")
    bad = json.loads(json.dumps(fail))
    bad.update(case_id='planted-"><img src=x onerror=alert(3)>', reason=XSS,
               onnx_node="%Y = MaxPool</script><script>alert(4)</script>(%X)", labels=["<b>x</b>"])
    recs.append(bad)
    dst.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return bad


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """(results.jsonl with a planted record, report folder, the planted record)."""
    run = tmp_path_factory.mktemp("smoke-run")
    assert main(["run", "--ep", "cpu", "--profile", "smoke", "--out", str(run), "--no-report"]) in (0, 1)
    results = tmp_path_factory.mktemp("smoke-planted") / "results.jsonl"
    bad = _plant(run / "results.jsonl", results)
    write_all([results], results.parent)
    return results, results.parent, bad


def _records(results: Path) -> list[CaseRecord]:
    return read(results).records


# ----------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------

def test_matrix_counts_equal_jsonl(tab, smoke):
    results, folder, _ = smoke
    tab.load(folder / "report.html")
    recs = _records(results)
    cells = tab.js("Array.from(document.querySelectorAll('#matrix td[data-verdict]'))"
                   ".map(td => [td.dataset.ep, td.dataset.op, td.dataset.dtype, td.dataset.verdict, +td.textContent.trim()])")
    got = Counter()
    for ep, op, dt, v, n in cells:
        got[(ep, op, dt, v)] += n
    assert got == Counter((r.ep, r.op, r.dtype, r.verdict) for r in recs)
    totals = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('[data-total]')).map(e => [e.dataset.total, +e.textContent]))")
    assert totals.pop("all") == len(recs)
    assert totals == dict(Counter(r.verdict for r in recs))
    assert tab.js("window.onnxDmlReport.shown()") == len(recs)
    assert tab.problems() == []
    assert all(u.startswith(("file:", "data:", "blob:")) for u in tab.requests()), tab.requests()


def test_filters_narrow_the_list(tab, smoke):
    results, folder, _ = smoke
    recs = _records(results)
    tab.load(folder / "report.html")
    n_fail = sum(r.verdict == "FAIL" for r in recs)
    tab.js("(() => { const s = document.getElementById('f-verdict'); s.value = 'FAIL'; s.dispatchEvent(new Event('change')); })()")
    assert tab.js("window.onnxDmlReport.shown()") == n_fail < len(recs)
    rows = tab.js("Array.from(document.querySelectorAll('#case-body tr.row')).map(tr => tr.dataset.verdict)")
    assert rows and set(rows) == {"FAIL"} and len(rows) == min(n_fail, 100)
    assert tab.js("document.querySelector('#pager-top .count').dataset.shown") == str(n_fail)
    # free text narrows further (debounced input)
    op = next(r.op for r in recs if r.verdict == "FAIL")
    tab.js(f"(() => {{ const t = document.getElementById('f-text'); t.value = {json.dumps(op)}; t.dispatchEvent(new Event('input')); }})()")
    want = sum(r.verdict == "FAIL" and r.op == op for r in recs)
    tab.wait(f"window.onnxDmlReport.shown() === {want}")
    # a click on a matrix cell lists exactly its cases
    cell = tab.js("(() => { const td = document.querySelector('#matrix td[data-verdict=\"PASS\"]'); td.click();"
                  " return [td.dataset.op, td.dataset.dtype, +td.textContent]; })()")
    assert tab.js("window.onnxDmlReport.shown()") == cell[2] == sum(
        r.op == cell[0] and r.dtype == cell[1] and r.verdict == "PASS" for r in recs)
    tab.js("document.getElementById('f-reset').click()")
    assert tab.js("window.onnxDmlReport.shown()") == len(recs)


def test_sorting_by_max_ulp(tab, smoke):
    results, folder, _ = smoke
    recs = _records(results)
    tab.load(folder / "report.html")
    tab.js("document.querySelector('#case-head th[data-key=ulp]').click()")
    tab.js("document.querySelector('#case-head th[data-key=ulp]').click()")   # descending
    first = tab.js("document.querySelector('#case-body tr.row td:last-child').textContent")
    best = max((o.max_ulp for r in recs for o in r.outputs.values() if o.max_ulp is not None), default=None)
    assert first == str(best)


def _fail_with_heatmap(recs):
    return next(r for r in recs if r.verdict == "FAIL" and not r.case_id.startswith("planted")
                and any(o.heatmap and o.first for o in r.outputs.values()))


def test_case_detail_opens(tab, smoke, tmp_path):
    results, folder, _ = smoke
    rec = _fail_with_heatmap(_records(results))
    tab.load(folder / "report.html")
    cid = json.dumps(rec.case_id)
    tab.js(f"(() => {{ const t = document.getElementById('f-text'); t.value = {cid}; t.dispatchEvent(new Event('input')); }})()")
    tab.wait("window.onnxDmlReport.shown() === 1")
    tab.js(f"document.querySelector('#case-body tr.row[data-case=\"' + CSS.escape({cid}) + '\"]').click()")
    assert tab.js("document.querySelectorAll('#case-body tr.detail').length") == 1
    struct = tab.js("document.querySelector('tr.detail pre.struct').textContent")
    assert f"struct {rec.dml_op} {{" in struct and "InputTensor" in struct
    d = rec.descriptor
    assert "{" + ", ".join(str(x) for x in d["InputSizes"]) + "}" in struct
    assert f"DML_FEATURE_LEVEL_{d['FeatureLevel'].replace('.', '_')}" in struct
    assert tab.js("document.querySelector('tr.detail pre.onnx-node').textContent") == rec.onnx_node
    for name, o in rec.outputs.items():
        if not o.first:
            continue
        rows = tab.js(f"Array.from(document.querySelectorAll('tr.detail table.first[data-output={name}] tr')).slice(1)"
                      ".map(tr => Array.from(tr.children).map(td => td.textContent))")
        assert len(rows) == len(o.first)
        assert rows[0][0] == "[" + ", ".join(str(i) for i in o.first[0]["index"]) + "]"
        assert rows[0][-1] == str(o.first[0]["ref"])
        if o.heatmap:
            cells = tab.js(f"Array.from(document.querySelectorAll('tr.detail .heatmap[data-output={name}] > div')).map(d => d.getAttribute('style') ? 1 : 0)")
            flat = [n for row in o.heatmap for n in row]
            assert len(cells) == len(flat)
            assert cells == [1 if n else 0 for n in flat]
    stats = tab.js("Array.from(document.querySelectorAll('tr.detail table.stats tr')).slice(1).map(tr => tr.children[3].textContent)")
    assert sorted(stats) == sorted(f"{o.mismatches} / {o.total}" for o in rec.outputs.values())
    if rec.attribution:
        assert rec.attribution in tab.js("document.querySelector('tr.detail').textContent")
    # the repro script of the page runs and shows the recorded difference
    script = tab.js("document.querySelector('tr.detail pre.repro').textContent")
    assert script == tab.js(f"window.onnxDmlReport.reproScript({cid})")
    path = tmp_path / "repro.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert rec.case_id in out.stdout and "rebuilt id differs" not in out.stdout
    for name, o in rec.outputs.items():
        if not o.match:
            assert f"{name} on {rec.ep}: {o.mismatches}/{o.total} differ" in out.stdout
    assert tab.problems() == []


def test_struct_text_is_the_operators_layout(tab, smoke, tmp_path):
    """The page prints each case's DirectML struct from the rows its operator lays out when the report
    is written (report/data.py); an operator added as one file (ROI_ALIGN1) shows its own struct."""
    from onnx_dml_bench.report import data as D
    from test_struct_layout import ROI_ALIGN1 as op, ROI_ALIGN1_DESC, ROI_ALIGN1_TEXT
    results, _, _ = smoke
    lines = [json.loads(x) for x in results.read_text().splitlines() if x.strip()]
    base = next(r for r in lines if r.get("record") == "case" and r["verdict"] == "PASS")
    lines.append({**base, "case_id": "ra1-new-operator", "op": op.key, "dml_op": op.dml_name,
                  "descriptor": ROI_ALIGN1_DESC.to_dict(), "case": None})
    src = tmp_path / "results.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    write_all([src], tmp_path)
    tab.load(tmp_path / "report.html")
    assert tab.js("window.onnxDmlReport.structText('ra1-new-operator')") == ROI_ALIGN1_TEXT
    for rec in _records(results)[::7]:
        want = D.struct_text(rec.dml_op, D.struct_rows(rec.op, rec.descriptor), rec.descriptor.get("FeatureLevel"))
        assert tab.js(f"window.onnxDmlReport.structText({json.dumps(rec.case_id)})") == want, rec.case_id
    assert tab.problems() == []


def test_planted_markup_stays_text(tab, smoke):
    _, folder, bad = smoke
    tab.load(folder / "report.html", "#case=" + urllib.parse.quote(bad["case_id"], safe=""))
    tab.wait("document.querySelectorAll('#case-body tr.detail').length === 1")
    assert tab.js("document.querySelector('tr.detail .reason-full').textContent") == XSS
    assert tab.js("document.querySelector('tr.detail pre.onnx-node').textContent") == bad["onnx_node"]
    assert tab.js("document.querySelector('#case-body tr.row td.id .case-id').textContent") == bad["case_id"]
    assert tab.js("document.querySelector('#case-body tr.reason-row .reason-text').textContent") == XSS
    assert tab.js("document.querySelectorAll('img').length") == 0
    # the case data, the unpacking script, the page's own: every packed block is markup again
    assert tab.js("document.querySelectorAll('script').length") == 3
    assert tab.js("document.documentElement.getAttribute('data-unpacked')") not in (None, "0")
    assert tab.js("document.querySelectorAll('b').length") == tab.js("document.querySelectorAll('body b').length")
    # a label's only elements are the line-break opportunities the page puts after ":" and "_"
    assert tab.js("Array.from(document.querySelectorAll('.label')).every(e => Array.from(e.children).every(c => c.tagName === 'WBR'))")
    assert tab.js("Array.from(document.querySelectorAll('#case-body .label')).some(e => e.textContent === '<b>x</b>')")
    assert tab.js("window.__alerts") == []
    assert tab.problems() == []


def test_screenshots(tab, smoke, tmp_path):
    results, folder, _ = smoke
    rec = _fail_with_heatmap(_records(results))
    tab.load(folder / "report.html")
    shots = [tab.screenshot(tmp_path / "top.png")]
    tab.js("document.getElementById('summary').scrollIntoView()")
    shots.append(tab.screenshot(tmp_path / "summary.png"))
    tab.js(f"window.onnxDmlReport.openCase({json.dumps(rec.case_id)})")
    tab.js("document.querySelector('tr.detail').scrollIntoView()")
    shots.append(tab.screenshot(tmp_path / "detail.png"))
    for p in shots:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    print("screenshots:", *shots)


def test_compare_page(tab, smoke, tmp_path):
    from onnx_dml_bench.report.diff import compare_command
    results, _, bad = smoke
    recs = [json.loads(x) for x in results.read_text().splitlines() if x.strip()]
    # the baseline: the planted case passed there; in the current run (results) it fails
    base_recs = [dict(r, verdict="PASS", attribution=None, reason="") if r.get("case_id") == bad["case_id"] else r
                 for r in recs]
    base = tmp_path / "base.jsonl"
    base.write_text("\n".join(json.dumps(r) for r in base_recs) + "\n")
    assert compare_command(base, results, tmp_path) == 1
    tab.send("Page.navigate", {"url": (tmp_path / "compare.html").as_uri()})
    tab.b.wait_event("Page.loadEventFired", tab.s)
    rows = tab.js("Array.from(document.querySelectorAll('#regressions tbody tr')).map(tr => tr.dataset.case)")
    assert rows == [bad["case_id"]]
    assert XSS in tab.js("document.querySelector('#regressions tbody tr').textContent")
    assert tab.js("document.querySelectorAll('img').length") == 0 and tab.js("window.__alerts") == []
    assert tab.problems() == []


@pytest.mark.slow
def test_default_profile_report_renders(tab, tmp_path):
    run = tmp_path / "run"
    assert main(["run", "--ep", "cpu", "--profile", "default", "--out", str(run), "--no-report"]) in (0, 1)
    recs = _records(run / "results.jsonl")
    t0 = time.monotonic()
    write_all([run / "results.jsonl"], tmp_path)
    t_write = time.monotonic() - t0
    size = (tmp_path / "report.html").stat().st_size
    t_load = tab.load(tmp_path / "report.html")
    print(f"default profile: {len(recs)} cases, report.html {size} bytes ({size / len(recs):.0f} B/case), "
          f"written in {t_write:.2f} s, loaded in Chromium in {t_load:.2f} s")
    assert size / len(recs) < 2500
    assert t_load < 20
    assert tab.js("window.onnxDmlReport.shown()") == len(recs)
    assert tab.js("document.querySelectorAll('#case-body tr.row').length") == 100
    tab.js("document.querySelector('#pager-top button:last-of-type').click()")
    second = tab.js("document.querySelector('#case-body tr.row').dataset.case")
    assert tab.js("document.querySelector('#pager-top span').textContent").startswith("page 2 of")
    assert second
    tab.js("(() => { const s = document.getElementById('f-verdict'); s.value = '!PASS'; s.dispatchEvent(new Event('change')); })()")
    assert tab.js("window.onnxDmlReport.shown()") == sum(r.verdict != "PASS" for r in recs)
    assert tab.problems() == []


# ----------------------------------------------------------------------------------------------
# Layout: nothing clipped, nothing overprinted, the summary first
# ----------------------------------------------------------------------------------------------

def _three_eps(src: Path, dst: Path) -> None:
    """The smoke records as if from three EPs (three environments), with a long label and a large
    max-ULP value on the failures."""
    lines = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    out = []
    for i, ep in enumerate(("CPUExecutionProvider", "CUDAExecutionProvider", "OpenVINOExecutionProvider")):
        for r in lines:
            r = json.loads(json.dumps(r))
            r["env_id"] = f"env{i}"
            r["ep"] = ep
            if r.get("record") == "case" and r["verdict"] == "FAIL":
                r["labels"] = sorted(set(r.get("labels", [])) | {"open-point:accumulation"})
                for o in r.get("outputs", {}).values():
                    o["max_ulp"], o["mismatches"], o["total"] = 25165825, 1048576, 1048576
            out.append(r)
    dst.write_text("\n".join(json.dumps(r) for r in out) + "\n")


OVERFLOW_JS = """(() => {
  const bad = [];
  const within = (el, box, what) => {
    const a = el.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (a.width && (a.left < b.left - 0.5 || a.right > b.right + 0.5)) bad.push(what + ': ' + (el.className || el.tagName) + ' ' + el.textContent.slice(0, 40));
  };
  for (const td of document.querySelectorAll('#case-body tr.row > td')) {
    if (td.offsetParent === null) continue;
    if (td.scrollWidth > td.clientWidth + 1) bad.push('cell overflows: ' + td.className + ' ' + td.textContent.slice(0, 40));
    for (const child of td.querySelectorAll('span, div')) within(child, td, 'spills out of its cell');
  }
  const caseTable = document.getElementById('case-table');
  within(caseTable, caseTable.parentElement, 'case table wider than its box');
  const matrixBox = document.getElementById('matrix').parentElement;
  within(matrixBox, document.getElementById('summary'), 'matrix box wider than its section');
  for (const c of document.querySelectorAll('#matrix td, #matrix th')) {
    if (c.scrollWidth > c.clientWidth + 1) bad.push('matrix cell overflows: ' + c.textContent.slice(0, 30));
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) bad.push('the page scrolls sideways');
  return bad;
})()"""


@pytest.mark.parametrize("width", [1000, 1400])
def test_layout_fits_at_width(browser, smoke, tmp_path, width):
    results, _, _ = smoke
    merged = tmp_path / "results.jsonl"
    _three_eps(results, merged)
    write_all([merged], tmp_path)
    tab = Tab(browser, width=width, height=900)
    try:
        tab.load(tmp_path / "report.html")
        tab.js("(() => { const s = document.getElementById('f-verdict'); s.value = '!PASS'; s.dispatchEvent(new Event('change')); })()")
        assert tab.js("document.querySelectorAll('#case-body tr.row').length") > 0
        assert tab.js(OVERFLOW_JS) == []
        # the max-ULP and mismatch numbers are shown whole
        ulps = tab.js("Array.from(document.querySelectorAll('#case-body td.c-ulp')).map(td => td.textContent)")
        assert "25165825" in ulps
        assert tab.js("""Array.from(document.querySelectorAll('#case-body td.c-ulp')).filter(td => td.textContent).every(td => {
            const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length === 1; })""")
        # the long label and the number cells do not overlap
        overlaps = tab.js("""(() => Array.from(document.querySelectorAll('#case-body tr.row')).filter(tr => {
            const lab = tr.querySelector('td.c-labels'), num = tr.querySelector('td.c-mism');
            return Array.from(lab.querySelectorAll('.label')).some(l => l.getBoundingClientRect().right > num.getBoundingClientRect().left + 0.5);
          }).length)()""")
        assert overlaps == 0
        # three EPs: the matrix scrolls inside its own box, operator and data type columns stick
        assert tab.js("getComputedStyle(document.querySelector('#matrix th.op')).position") == "sticky"
        assert tab.js("getComputedStyle(document.getElementById('matrix').parentElement).overflowX") == "auto"
        # the verdict summary comes before the legend, which is one click away
        assert tab.js("!!(document.getElementById('summary').compareDocumentPosition(document.getElementById('howto')) & Node.DOCUMENT_POSITION_FOLLOWING)")
        assert tab.js("document.getElementById('howto').tagName") == "DETAILS"
        assert tab.js("document.getElementById('howto').open") is False
        assert tab.js("document.getElementById('summary').getBoundingClientRect().top"
                      " - document.getElementById('bugs').getBoundingClientRect().height") < 900
        shot = tab.screenshot(tmp_path / f"layout-{width}.png")
        print("screenshot:", shot)
        assert tab.problems() == []
    finally:
        tab.close()


def test_cpu_environment_says_device_cpu(tab, smoke):
    _, folder, _ = smoke
    tab.load(folder / "report.html")
    rows = tab.js("Object.fromEntries(Array.from(document.querySelectorAll('.env table.kv tr')).map(tr => [tr.children[0].textContent, tr.children[1].textContent]))")
    assert "GPU / adapter" not in rows and rows["Device"].startswith("CPU")
