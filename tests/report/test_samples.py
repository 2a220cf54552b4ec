"""The committed sample pages name no path of the machine that wrote them (a home folder, a
temporary folder): a visitor opens them elsewhere."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "reports").rglob("*.html"))
MACHINE = re.compile(r"(?<![\w.~])(/tmp/|/var/tmp/|/root/|/home/[^/\s\"']+/|/Users/[^/\s\"']+/)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_sample_page_names_no_machine_path(page):
    text = page.read_text(encoding="utf-8")
    found = sorted({m.group(0) for m in MACHINE.finditer(text)})
    assert not found, f"{page.relative_to(ROOT)}: {found}"
