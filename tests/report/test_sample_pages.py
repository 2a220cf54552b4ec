"""Every committed sample page opens from the repository in headless Chromium, offline: no script
error, no CSP violation, no request beyond the page itself; a report lists every case of its
embedded data; a compare page says what its sections count."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnx_dml_bench.report.html import embedded_data
from onnx_dml_bench.report.packed import PACKED_TYPE

from test_report_browser import CHROMIUM, Chromium, Tab

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "reports").rglob("*.html"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium is needed for the browser tests: /usr/bin/chromium is absent")
    b = Chromium(CHROMIUM, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


def test_every_page_is_here():
    assert sum(p.endswith("/report.html") for p in PAGES) >= 25 and sum("/compare" in p for p in PAGES) >= 15


@pytest.mark.parametrize("name", PAGES)
def test_a_committed_page_opens_offline(browser, name):
    page = ROOT / name
    text = page.read_text(encoding="utf-8")
    assert "default-src 'none'" in text
    tab = Tab(browser)
    try:
        if 'id="report-data"' in text:
            tab.load(page, timeout=120)
            data = embedded_data(text)
            assert tab.js("document.querySelector('#matrix tbody tr') !== null")     # a packed block, in place
            assert tab.js("window.onnxDmlReport.shown()") == len(data["cases"])
            assert tab.js("+document.querySelector('[data-total=all]').textContent") == len(data["cases"])
            assert tab.js("document.querySelectorAll('#case-body tr.row').length") == min(100, len(data["cases"]))
        else:
            tab.send("Page.navigate", {"url": page.resolve().as_uri()})
            tab.b.wait_event("Page.loadEventFired", tab.s)
            if PACKED_TYPE in text:
                tab.wait("document.documentElement.hasAttribute('data-unpacked')")
            for section in ("regressions", "fixes", "other", "new", "removed"):
                n = re.search(rf'<section id="{section}">\s*<h2>[^<]*<span class="count" data-count="(\d+)"', text)
                if n:
                    assert tab.js(f"+document.querySelector('#{section} .count').dataset.count") == int(n.group(1))
                    if section in ("regressions", "fixes", "other"):     # every row, packed or not
                        assert tab.js(f"document.querySelectorAll('#{section} tbody tr').length") == int(n.group(1))
        assert tab.js("document.querySelectorAll('script[type^=\"text/x-packed\"]').length") == 0
        assert tab.problems() == []
        assert [u for u in tab.requests() if u != page.resolve().as_uri()] == []
    finally:
        tab.close()


def test_a_compare_page_opened_at_a_note_shows_it(browser):
    """The notes of a compare page lie in a packed block: opened at ``#note-1``, the page puts the
    block back and then scrolls to the note, as it would for plain markup."""
    page = ROOT / "reports" / "h100" / "compare-webgpu-2026-11-21-to-now.html"
    assert PACKED_TYPE in page.read_text(encoding="utf-8")
    tab = Tab(browser)
    try:
        tab.send("Emulation.setDeviceMetricsOverride", {"width": 1200, "height": 800, "deviceScaleFactor": 1,
                                                        "mobile": False})
        tab.send("Page.navigate", {"url": page.resolve().as_uri() + "#note-1"})
        tab.b.wait_event("Page.loadEventFired", tab.s)
        tab.wait("document.documentElement.hasAttribute('data-unpacked')")
        top = tab.js("document.getElementById('note-1').getBoundingClientRect().top")
        assert tab.js("window.scrollY") > 1000 and abs(top) < 5, top
        assert tab.problems() == []
    finally:
        tab.close()
