"""README.md's "A first look at a report" reads a case of the committed DirectML sample
(reports/dml-lavapipe): its id, verdict, attribution, reason and the figures its prose quotes are
those of the sample's record."""
from __future__ import annotations

import re
from pathlib import Path

from onnx_dml_bench.results import read
from onnx_dml_bench.verdict import ratio_text

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "reports" / "dml-lavapipe" / "results.jsonl.xz"


def _example() -> tuple[str, str, str, str, str]:
    """(case id, verdict, attribution, reason line, the prose after it) of the README's example."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A first look at a report", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"\n    (\S+) +([A-Z_]+) +([A-Z_]+)\n    (.+)\n\nreads: (.+?)\n\n", section, re.S)
    assert m, "the README's example (an indented case line and its reason) is not found"
    return m.group(1), m.group(2), m.group(3), m.group(4), " ".join(m.group(5).split())


def _matches(shown: str, reason: str) -> bool:
    """The README's reason line, where "..." stands for text left out, is the record's reason."""
    pieces = [p for p in shown.split("...")]
    pattern = ".*".join(re.escape(p.strip()) for p in pieces)
    return re.fullmatch(pattern, reason.strip(), re.S) is not None


def test_the_readme_example_is_the_sample():
    case_id, verdict, attribution, line, prose = _example()
    recs = [r for r in read(SAMPLE).records if r.case_id == case_id and r.ep == "DmlExecutionProvider"]
    assert len(recs) == 1, f"{case_id}: not a DML EP record of {SAMPLE.relative_to(ROOT)}"
    r = recs[0]
    assert (r.verdict, r.attribution) == (verdict, attribution)
    assert _matches(line, r.reason), (line, r.reason)
    # the figures the prose quotes
    y = r.outputs["Y"]
    assert f"{y.mismatches} of the {y.total} elements" in prose
    assert f"by up to {ratio_text(y.bound_ratio)} times the error bound" in prose
    assert f"{ratio_text(y.bound_ratio)}x the error bound" in line
    assert "while the CPU EP (same ONNX Runtime build) passes" in prose and r.cpu.verdict == "PASS"
    for label in re.findall(r"`(rule:[\w-]+)`", prose):
        assert label in r.labels, label
    assert r.dtype == "FLOAT16" and "float16" in prose and f"opset {r.opset}" in prose


def test_the_check_can_fail():
    assert _matches("Y: 10/18 differ, 683x the error bound | ...", "Y: 10/18 differ, 683x the error bound | more")
    assert not _matches("Y: 10/18 differ, 195x the error bound | ...", "Y: 10/18 differ, 683x the error bound | more")
    assert not _matches("Y: 10/18 differ | outside the rule(s) ...", "Y: 10/18 differ | touches open point(s) | x")
