"""JUnit XML: one testsuite per EP (per environment, where several share an EP), one testcase per case.

classname = ``<op>.<dtype>.<EP>``, name = the case id. FAIL is a <failure>; EP_ERROR (the EP failed
at run time on a case it accepted), CRASH, TIMEOUT and ERROR are <error>s (``Verdict.ERRORS``), with
the EP's or the bench's text; the verdicts where nothing ran on the EP (NOT_OFFLOADED, EP_REJECTED,
NOT_EXPRESSIBLE, NOT_SUPPORTED) are <skipped> with their reason, or <failure>s when listed in ``fail_on``. FLAKY
is a <failure> when listed in ``fail_on`` (the default), else a passing testcase with Surefire's
<flakyFailure>; a PASS with a finding listed in ``fail_on`` is a <failure> of that finding.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..outdir import command, triage_links, write_files
from ..record import FAIL_ON_DEFAULT, Verdict
from . import data as D

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
MESSAGE_MAX = 1000


def clean(text) -> str:
    """Text XML 1.0 can carry (control characters of EP messages replaced)."""
    return _XML_BAD.sub("\ufffd", "" if text is None else str(text))


def classname(rec, lane: str | None = None) -> str:
    """``<op>.<dtype>.<EP>``; ``lane`` (``Results.lane``) instead of the EP where several environments share it."""
    return f"{rec.op}.{rec.dtype}.{lane or rec.ep or 'EP'}"


def _body(rec) -> str:
    lines = [f"verdict: {rec.verdict}"]
    if rec.attribution:
        lines.append(f"attribution: {rec.attribution}")
    if rec.findings:
        lines.append(f"findings: {', '.join(rec.findings)}")
    runs = getattr(rec, "runs", None)
    if runs is not None:
        lines.append("runs: " + D.runs_text(runs))
    lines.append(f"operator: {rec.dml_op or rec.op} ({rec.dtype}), opset {rec.opset}, "
                 f"inputs {rec.family} seed {rec.seed}")
    if rec.onnx_node:
        lines.append(f"onnx: {rec.onnx_node}")
    lines.append("descriptor: " + D.value_json(rec.descriptor or {}))
    if rec.labels:
        lines.append("labels: " + ", ".join(rec.labels))
    if rec.source:
        lines.append("source: " + D.source_text(rec.source))
    if rec.reason:
        lines.append("reason: " + str(rec.reason))
    if rec.rerun:
        lines.append("run again: " + str(rec.rerun))
    for name, o in rec.outputs.items():
        if o.match:
            continue
        lines.append(f"{name}: {o.mismatches}/{o.total} differ, max abs {o.max_abs}, "
                     f"max ULP {o.max_ulp} (tolerance {o.tolerance_ulp})")
        for f in o.first[:5]:
            extra = f", cpu {f['cpu']}" if "cpu" in f else ""
            lines.append(f"  at {f.get('index')}: got {f.get('got')}, ref {f.get('ref')}{extra}")
    cpu = rec.cpu
    if cpu and cpu.verdict:
        lines.append(f"CPU EP: {cpu.verdict}" + (f" ({cpu.reason})" if cpu.reason else ""))
    return clean("\n".join(lines))


def _message(rec) -> str:
    msg = str(rec.reason or rec.verdict or "")
    if rec.attribution:
        msg = f"[{rec.attribution}] {msg}"
    msg = msg.replace("\n", " ")
    return clean(msg if len(msg) <= MESSAGE_MAX else msg[:MESSAGE_MAX - 1] + "…")


def _triage(res: D.Results) -> dict[str, str]:
    """Case id -> lines naming the FAIL's shrunk case and bundle beside the results (outdir.triage_links)."""
    base = Path(res.sources[0]).parent if res.sources else Path(".")
    out = {}
    for cid, t in triage_links(res.sources, res.records).items():
        lines = [f"shrunk case: {base / t['shrunk']} ({command('run', '--cases', base / t['shrunk'])})"] if t.get("shrunk") else []
        if t.get("of"):
            lines.append(f"(of {t['of']}: triage took that case of the same failure signature)")
        if t.get("bundle"):
            lines.append(f"bundle: {base / t['bundle']}")
        elif t.get("cmd"):      # a command line alone on its line (pasted whole), run in the results' folder
            lines += [f"bundle: {t['cmd']}", f"(run it in {base})"]
        out[cid] = clean("\n" + "\n".join(lines))
    return out


def build(res: D.Results, fail_on=FAIL_ON_DEFAULT) -> ET.Element:
    fail_on = set(fail_on)
    triage = _triage(res)
    root = ET.Element("testsuites", name="onnx-dml-bench")
    by_ep: dict[str, list[dict]] = {}          # per lane: an EP, or each environment of an EP that has several
    for r in res.records:
        by_ep.setdefault(res.lane(r), []).append(r)
    env_by_ep = {}
    for e in res.envs:
        env_by_ep.setdefault(res.env_lane(e), e)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for ep in sorted(by_ep):
        recs = by_ep[ep]
        suite = ET.SubElement(root, "testsuite", name=clean(f"onnx-dml-bench.{ep or 'EP'}"))
        env = env_by_ep.get(ep)
        if env:
            props = ET.SubElement(suite, "properties")
            for k in ("os", "cpu", "device", "driver", "ort_package", "ort_version", "ep", "ep_package",
                      "bench_version", "git_revision", "profile", "opset_mode", "optimization", "started", "env_id"):
                if env.get(k) not in (None, ""):
                    ET.SubElement(props, "property", name=k, value=clean(env.get(k)))
            if env.started:
                suite.set("timestamp", clean(env.started[:19]))
            if env.machine:
                suite.set("hostname", clean(env.machine))
        n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
        for r in recs:
            tm = r.timings
            # run_ms is the run of the case's whole batch (one model): share it among the batch
            batch = max(1, tm.batch_size or 1)
            secs = ((tm.run_ms or 0.0) / batch + (tm.reference_ms or 0.0)) / 1000.0
            tc = ET.SubElement(suite, "testcase", classname=clean(classname(r, res.lane(r))), name=clean(r.case_id),
                               time=f"{secs:.6f}")
            n["tests"] += 1
            n["time"] += secs
            v = r.verdict
            if v == "FAIL" or (v not in Verdict.ERRORS and v != "PASS" and v in fail_on):
                el = ET.SubElement(tc, "failure", message=_message(r), type=clean(v))
                el.text = _body(r) + triage.get(r.case_id, "")
                n["failures"] += 1
            elif v in Verdict.ERRORS:
                el = ET.SubElement(tc, "error", message=_message(r), type=clean(v))
                el.text = _body(r)
                n["errors"] += 1
            elif v == "FLAKY":           # not in fail_on: a pass with a flaky failure (Surefire's element)
                ET.SubElement(tc, "flakyFailure", message=_message(r), type=clean(v))
                ET.SubElement(tc, "system-out").text = _body(r)
            elif v != "PASS":
                ET.SubElement(tc, "skipped", message=clean(f"{v}: {_message(r)}"))
                ET.SubElement(tc, "system-out").text = _body(r)
                n["skipped"] += 1
            elif fail_on.intersection(r.findings):
                gate = next(f for f in r.findings if f in fail_on)
                el = ET.SubElement(tc, "failure", message=_message(r), type=clean(gate))
                el.text = _body(r)
                n["failures"] += 1
            elif r.findings or r.rerun:
                ET.SubElement(tc, "system-out").text = _body(r)
        found = D.finding_counts(recs)
        props = suite.find("properties")
        if props is None:
            props = ET.SubElement(suite, "properties")
        for f, count in found.items():
            ET.SubElement(props, "property", name=f"finding.{f}", value=str(count))
        _completeness(props, res)
        for k, val in n.items():
            suite.set(k, f"{val:.3f}" if k == "time" else str(val))
            totals[k] += val
    if res.incomplete:
        # a test that fails: a CI system that reads only JUnit sees that the run is not whole
        suite = ET.SubElement(root, "testsuite", name="onnx-dml-bench.completeness", tests="1", failures="0",
                              errors="1", skipped="0", time="0.000")
        _completeness(ET.SubElement(suite, "properties"), res)
        tc = ET.SubElement(suite, "testcase", classname="onnx-dml-bench", name="every selected case has a record",
                           time="0.000")
        el = ET.SubElement(tc, "error", type="INCOMPLETE", message=_incomplete_message(res))
        el.text = clean("\n".join(res.incomplete))
        totals["tests"] += 1
        totals["errors"] += 1
    for k, val in totals.items():
        root.set(k, f"{val:.3f}" if k == "time" else str(val))
    return root


def _incomplete_message(res: D.Results) -> str:
    c = res.completeness
    head = (f"incomplete: {len(res.records)} of {c.expected} selected cases have a record"
            if c is not None and c.expected is not None else "incomplete")
    return clean(f"{head}: " + "; ".join(res.incomplete))[:MESSAGE_MAX]


def _completeness(props: ET.Element, res: D.Results) -> None:
    """Properties: ``complete`` (true/false), ``expected_cases`` (what the runs selected) and, when
    not whole, ``incomplete`` (what is cut off or missing)."""
    ET.SubElement(props, "property", name="complete", value="false" if res.incomplete else "true")
    c = res.completeness
    if c is not None and c.expected is not None:
        ET.SubElement(props, "property", name="expected_cases", value=str(c.expected))
    if res.incomplete:
        ET.SubElement(props, "property", name="incomplete", value=_incomplete_message(res))


def render(res: D.Results, fail_on=FAIL_ON_DEFAULT) -> bytes:
    """The JUnit XML document (UTF-8, with its declaration)."""
    root = build(res, fail_on)
    ET.indent(root, space=" ")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write(res: D.Results, path: Path, fail_on=FAIL_ON_DEFAULT) -> Path:
    """The JUnit file into ``path``, whole or not at all (never a file of 0 bytes on a full disk)."""
    return write_files({Path(path): render(res, fail_on)})[0]
