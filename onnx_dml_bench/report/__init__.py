"""Reports of result files: a self-contained HTML page, JUnit XML and a JSON summary; and the
comparison of two runs (``diff``). Nothing here decides a verdict: the reports show what the
results say.

    write_all([Path("reports/latest/results.jsonl")], Path("reports/latest"))
"""
from __future__ import annotations

from pathlib import Path

from ..outdir import JUNIT_XML, REPORT_HTML, SUMMARY_JSON, write_files
from ..record import Verdict
from . import html, junit, summary
from .data import Results, load

__all__ = ["write_all", "load", "Results", "REPORT_HTML", "JUNIT_XML", "SUMMARY_JSON"]


def write_all(results_paths: list[Path] | Results, out_dir: Path, fail_on=Verdict.FAIL_ON) -> list[Path]:
    """Write report.html, junit.xml and summary.json for the results in ``results_paths`` (JSONL
    files, joined as ``results.merge`` joins them; or results already loaded with ``load``, so that
    no file is read twice) into ``out_dir``; return the paths written."""
    res = results_paths if isinstance(results_paths, Results) else load(results_paths)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fail_on = tuple(v.strip().upper() for v in fail_on)
    # the three as one: all renamed into place once all are written, or none (a full disk leaves
    # the folder's reports as they were, never one cut short or a set of old and new)
    return write_files({out_dir / REPORT_HTML: html.render(res, fail_on),
                        out_dir / JUNIT_XML: junit.render(res, fail_on),
                        out_dir / SUMMARY_JSON: summary.render(res, fail_on)})
