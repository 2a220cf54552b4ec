"""Reports of result files: a self-contained HTML page, JUnit XML and a JSON summary; and the
comparison of two runs (``diff``). Nothing here decides a verdict: the reports show what the
results say.

    write_all([Path("reports/latest/results.jsonl")], Path("reports/latest"))
"""
from __future__ import annotations

from pathlib import Path

from ..outdir import JUNIT_XML, REPORT_HTML, SUMMARY_JSON
from ..record import Verdict
from . import html, junit, summary
from .data import Results, load

__all__ = ["write_all", "load", "Results", "REPORT_HTML", "JUNIT_XML", "SUMMARY_JSON"]


def write_all(results_paths: list[Path] | Results, out_dir: Path, fail_on=Verdict.FAIL_ON) -> list[Path]:
    """Write report.html, junit.xml and summary.json for the results in ``results_paths`` (JSONL
    files, joined as ``results.merge`` joins them; or results already loaded with ``load``, so that
    no file is read twice) into ``out_dir``; return the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fail_on = tuple(v.strip().upper() for v in fail_on)
    res = results_paths if isinstance(results_paths, Results) else load(results_paths)
    return [
        html.write(res, out_dir / REPORT_HTML, fail_on),
        junit.write(res, out_dir / JUNIT_XML, fail_on),
        summary.write(res, out_dir / SUMMARY_JSON, fail_on),
    ]
