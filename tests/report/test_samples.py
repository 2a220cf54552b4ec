"""Pages name no path of the machine that wrote them (a home folder, a temporary folder): a visitor
opens them elsewhere. Checked on pages written now, in a temporary folder, from the committed
samples' results (the records hold the paths of the machines that ran them): the report of the
main job's lanes and of a CUDA run, and a compare page of two runs."""
from __future__ import annotations

import gzip
import lzma
import json
import re
from pathlib import Path

import pytest

from onnx_dml_bench.cli import main
from onnx_dml_bench.report import write_all

ROOT = Path(__file__).resolve().parents[2]
MACHINE = re.compile(r"(?<![\w.~])(/tmp/|/var/tmp/|/root/|/home/[^/\s\"']+/|/Users/[^/\s\"']+/)")
HOME_OR_TMP = re.compile(r"(/tmp/|/root/|/home/)")


def machine_paths(page: Path) -> list[str]:
    return sorted({m.group(0) for m in MACHINE.finditer(page.read_text(encoding="utf-8"))})


@pytest.mark.parametrize("sample", ["dml-lavapipe-fourway", "h100/cuda"])
def test_report_names_no_machine_path(tmp_path, sample):
    results = ROOT / "reports" / sample / "results.jsonl.xz"
    assert HOME_OR_TMP.search(lzma.decompress(results.read_bytes()).decode("utf-8")), \
        "the sample's records hold no machine path: this test would prove nothing"
    out = tmp_path / "deep" / "out"
    write_all([results], out)
    assert machine_paths(out / "report.html") == []


def test_compare_page_names_no_machine_path(tmp_path):
    base = ROOT / "reports" / "dml-lavapipe" / "results.jsonl.xz"
    cur = ROOT / "reports" / "dml-lavapipe-sm6" / "results.jsonl.xz"
    out = tmp_path / "deep" / "compare.html"
    assert main(["compare", str(base), str(cur), "--out", str(out)]) in (0, 1)
    assert machine_paths(out) == []


def test_the_samples_stay_light():
    """The committed samples keep what a person opens and what the bench reads again, no copy of what
    `report` writes again from the results: no junit.xml, each summary.json compressed (and whole),
    one repro script for every bundle (tests/bundle); the folder within 15 MB of bytes (docs/samples.md:
    what weighs in it)."""
    ignored = ("ci", "latest")        # .gitignore: the folders .ci/run and `bench` write, not samples
    files = [p for p in (ROOT / "reports").rglob("*")
             if p.is_file() and p.relative_to(ROOT / "reports").parts[0] not in ignored]
    assert [p for p in files if p.name in ("junit.xml", "summary.json")] == []
    summaries = [p for p in files if p.name == "summary.json.gz"]
    assert len(summaries) >= 20
    for p in summaries:
        doc = json.loads(gzip.decompress(p.read_bytes()))
        assert doc["total_cases"] == sum(doc["totals"].values()), p
    assert sum(p.stat().st_size for p in files) <= 15_000_000
