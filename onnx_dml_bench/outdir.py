"""The run folder: which files a run writes into its output folder, and where the triage
commands put their work beside a results file so that the reports find it.

    <folder>/results.jsonl                the records (environment first)       run, fuzz
    <folder>/report.html, junit.xml,      the reports of the results            run, report, fuzz
             summary.json
    <folder>/shrunk/<case id>.json        the minimal case of a recorded case   shrink, triage, fuzz
    <folder>/bundle/<case id>/README.md   the hand-over folder of a case        bundle, triage
    <folder>/triage.md, triage.json       one row per failure signature         triage
    <folder>/compare.html                 this run against a baseline           compare

``<case id>`` is the id of the recorded case (the one shrunk or bundled), so the report links that
record to its minimal case and bundle (:func:`triage_links`).
"""
from __future__ import annotations

from pathlib import Path

from .record import Verdict
from .signature import signature

RESULTS = "results.jsonl"
REPORT_HTML = "report.html"
JUNIT_XML = "junit.xml"
SUMMARY_JSON = "summary.json"
#: what a run writes into its output folder (what ``run --overwrite`` replaces)
RUN_FILES = (RESULTS, REPORT_HTML, JUNIT_XML, SUMMARY_JSON)
SHRUNK_DIR = "shrunk"
BUNDLE_DIR = "bundle"
#: the page of a bundle the reports link to
BUNDLE_README = "README.md"
TRIAGE_MD = "triage.md"
TRIAGE_JSON = "triage.json"
COMPARE_HTML = "compare.html"


def shrunk_path(results: Path, case_id: str) -> Path:
    """Where the shrunk case of ``case_id`` lives by convention: ``shrunk/<id>.json`` beside the
    results file (the report and JUnit link to it when it exists)."""
    return Path(results).parent / SHRUNK_DIR / f"{case_id}.json"


def bundle_path(results: Path, case_id: str) -> Path:
    """Where the report looks for a bundle of ``case_id``: ``bundle/<id>/`` beside the results."""
    return Path(results).parent / BUNDLE_DIR / case_id


def triage_links(sources, records) -> dict[str, dict]:
    """For every failure among ``records`` (a verdict with a signature): the shrunk case file and the bundle that exist beside
    the results files ``sources`` (paths relative to the results' folder, where the reports are
    written), and the command that makes the bundle (run in the results' folder). A failure whose own case was not shrunk or
    bundled gets those of the record of the same EP and signature that was (``of``: that record's
    case id): triage shrinks one case per signature, and its minimal case stands for all of them."""
    shrunk: dict[str, str] = {}
    bundles: dict[str, str] = {}
    first = None
    for src in sources:
        base = Path(src).parent
        first = first or Path(src)
        d = base / SHRUNK_DIR
        if d.is_dir():
            for p in d.glob("*.json"):
                shrunk.setdefault(p.stem, f"{SHRUNK_DIR}/{p.name}")
        b = base / BUNDLE_DIR
        if b.is_dir():
            for p in b.iterdir():
                if (p / BUNDLE_README).is_file():
                    bundles.setdefault(p.name, f"{BUNDLE_DIR}/{p.name}/{BUNDLE_README}")
    own: dict[str, dict] = {}
    shared: dict[tuple, dict] = {}          # (EP, signature) -> the links of the record triage took
    for r in records:
        sig = signature(r)
        if sig is None:
            continue
        d = {}
        if r.case_id in shrunk:
            d["shrunk"] = shrunk[r.case_id]
        if r.case_id in bundles:
            d["bundle"] = bundles[r.case_id]
        own[r.case_id] = d
        if d:
            shared.setdefault((r.ep, sig), {**d, "of": r.case_id})
    out = {}
    for r in records:
        sig = signature(r)
        if sig is None:
            continue
        d = dict(own[r.case_id])
        if not d and (r.ep, sig) in shared:
            d = dict(shared[(r.ep, sig)])
        if "bundle" not in d and first is not None and r.verdict == Verdict.FAIL:
            # run in the results' folder (the report's): no path of the machine that wrote the report
            d["cmd"] = f"onnx-dml-bench bundle {r.case_id} --from {first.name} --out {BUNDLE_DIR}/{r.case_id}"
        out[r.case_id] = d
    return out
