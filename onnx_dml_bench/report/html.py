"""The HTML report: one self-contained file (no network), Jinja2 templates, case rows rendered by
plain JavaScript from compact JSON embedded in the page.

Text from EPs, models and case names is escaped: Jinja autoescapes; the embedded JSON has <, >, &
and the line separators escaped; the page's script builds the DOM with textContent only.
"""
from __future__ import annotations

import base64
import datetime as _dt
import gzip
import json
import re
import struct
import zlib
from pathlib import Path

import jinja2
from markupsafe import Markup

from ..outdir import triage_links, write_text
from ..record import Verdict, jsonable
from . import data as D
from . import fourway as FW
from . import repro

TEMPLATES = Path(__file__).with_name("templates")
DATA_SCHEMA = "onnx-dml-bench/report-data/1"
#: columns of a case row in the embedded data (see report.js)
COLUMNS = ("id", "op", "dtype", "ep", "verdict", "attribution", "family", "opset", "seed", "env",
           "descriptor", "onnx", "node", "reason", "labels", "stats", "placement", "detail", "struct", "source")
STAT_COLUMNS = ("output", "kind", "match", "total", "mismatches", "max_abs", "max_ulp", "tolerance_ulp",
                "min_passing_ulp")
#: verdict -> its colour (record.Verdict's palette), and the colour of a verdict it does not name
VERDICT_COLOURS = {v.value: v.colour for v in Verdict}
OTHER_COLOUR = "#57606a"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["vtext"] = D.value_text
    env.filters["wbr"] = wbr
    env.globals["verdict_colour"] = lambda v: VERDICT_COLOURS.get(v, OTHER_COLOUR)
    return env


def static(name: str) -> Markup:
    """A static asset (our own CSS/JS) to inline as it is."""
    return Markup((TEMPLATES / name).read_text(encoding="utf-8"))


def wbr(text) -> Markup:
    """Escaped text with a line-break opportunity after each underscore (long verdict names)."""
    return Markup("_<wbr>").join(Markup.escape(part) for part in str(text).split("_"))


#: how the case data is embedded: gzip (level 9, no timestamp), then base64; the page decodes it
#: with DecompressionStream, offline
DATA_ENCODING = "gzip+base64"


def _json_text(obj) -> str:
    """Compact JSON of ``obj``; values the data holds as built are JSON-safe (no walk over a large
    run's cases), unless NaN, an infinity or -0.0 is in them: then through ``jsonable``."""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        if "-0.0" not in text:
            return text
    except (ValueError, TypeError):
        pass
    return json.dumps(jsonable(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def packed_json(obj) -> str:
    """The case data as gzip+base64 text (safe inside a script element: [A-Za-z0-9+/=] only). A
    case's detail panel data is stored as JSON text, which the page parses only when the case is
    opened (a faster start for large runs). The JSON is compressed as it is made, case by case:
    a run of 200,000 cases is never held as one text."""
    level = 9
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
    # a gzip header without name and with mtime 0: the same page from run to run
    crc, size, out = 0, 0, [b"\x1f\x8b\x08\x00" + struct.pack("<L", 0) + b"\x02\xff"]

    def put(text: str) -> None:
        nonlocal crc, size
        raw = text.encode("utf-8")
        crc, size = zlib.crc32(raw, crc), size + len(raw)
        out.append(deflate.compress(raw))

    if isinstance(obj, dict) and "cases" in obj and "columns" in obj:
        k = obj["columns"].index("detail")
        put("{")
        for i, (key, value) in enumerate(obj.items()):
            put(("," if i else "") + json.dumps(key) + ":")
            if key != "cases":
                put(_json_text(value))
                continue
            put("[")
            for n, row in enumerate(value):
                row = row[:k] + [_detail_text(row[k]) if row[k] else 0] + row[k + 1:]
                put(("," if n else "") + _json_text(row))
            put("]")
        put("}")
    else:
        put(_json_text(obj))
    out.append(deflate.flush())
    out.append(struct.pack("<LL", crc, size & 0xFFFFFFFF))
    return base64.b64encode(b"".join(out)).decode("ascii")


def embedded_data(page: str) -> dict:
    """The case data of a written report page (the inverse of :func:`packed_json`)."""
    m = re.search(r'<script type="application/octet-stream" id="report-data"[^>]*>(.*?)</script>', page, re.S)
    if m is None:
        raise ValueError("no embedded report data in the page")
    doc = json.loads(gzip.decompress(base64.b64decode(m.group(1).strip())).decode("utf-8"))
    # back to the logical form: reason texts instead of their index, detail data parsed
    cols = doc["columns"]
    ri, di = cols.index("reason"), cols.index("detail")
    for row in doc["cases"]:
        row[ri] = doc["tables"]["reason"][row[ri]]
        if isinstance(row[di], str):
            row[di] = json.loads(row[di])
    return doc


def env_rows(e) -> list[tuple[str, str]]:
    """An environment's header rows, with the device row named "Device" and saying CPU for the CPU EP."""
    rows = []
    for label, text in D.env_rows(e):
        if label in ("GPU / adapter", "device"):
            label = "Device"
            if e.ep == "CPUExecutionProvider":
                text = "CPU" + (f" ({text})" if text and text not in ("—", "CPU") else "")
        if label == "selection_hash":
            continue
        rows.append((label, text))
    return rows


class _Table:
    def __init__(self, first=None):
        self.items: list = [] if first is None else [first]
        self.index: dict = {} if first is None else {first: 0}

    def __call__(self, v):
        key = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.items)
            self.items.append(v)
        return i


def _stat_rows(outputs: dict) -> list:
    return [[name, o.kind, 1 if o.match else 0, o.total, o.mismatches, jsonable(o.max_abs), o.max_ulp, o.tolerance_ulp,
             o.min_passing_ulp] for name, o in outputs.items()]


def _detail(r) -> dict:
    """What the case's detail panel shows beyond its row (only for cases that did not pass)."""
    detail: dict = {}
    outs = {}
    for name, o in r.outputs.items():
        keep = {k: getattr(o, k) for k in ("first", "heatmap", "labels", "note") if getattr(o, k)}
        if keep:
            outs[name] = keep
    if outs:
        detail["o"] = outs
    if r.cpu:
        c = {k: getattr(r.cpu, k) for k in ("build", "verdict", "reason") if getattr(r.cpu, k)}
        if r.cpu.outputs:
            c["stats"] = _stat_rows(r.cpu.outputs)
        labels = {lab for o in r.cpu.outputs.values() for lab in o.labels} | set(r.cpu.labels)
        if labels:
            c["labels"] = sorted(labels)
        detail["cpu"] = c
    if r.open_points:
        detail["op"] = r.open_points
    tm = {k: v for k, v in vars(r.timings).items() if v is not None}
    if tm:
        detail["tm"] = tm
    return detail


def _detail_text(detail: dict) -> str:
    return json.dumps(jsonable(detail), separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def case_data(res: D.Results) -> dict:
    """The compact data the page's script renders the case list and details from."""
    # repeated texts (ONNX node, placement map) are stored once and referenced by index
    t = {k: _Table("") for k in ("op", "dtype", "ep", "family", "attribution", "proof", "node", "reason", "source")}
    t["nodes"] = _Table(0)
    t["struct"] = _Table()     # [member, C type, value text] of the DirectML structs
    structs: dict = {}         # the struct of each (operator, descriptor), laid out once
    t["verdict"] = _Table()
    for v in D.VERDICTS:
        t["verdict"](v)
    env_index = {e.env_id: i for i, e in enumerate(res.envs)}
    ops: dict[str, dict] = {}
    rows = []
    fw_lines = FW.lines(FW.join(res.records, res.envs))
    triage = triage_links(res.sources, res.records)      # shrunk/<id>.json and bundle/<id>/ beside the results
    for r in res.records:
        desc = r.descriptor
        fields = ops.setdefault(r.op, {"dml": r.dml_op, "fields": list(desc)})["fields"]
        fields += [k for k in desc if k not in fields]
        dvals = [desc.get(k, None) for k in fields]
        skey = (r.op, json.dumps(desc, sort_keys=True))
        if skey not in structs:
            structs[skey] = [t["struct"](list(row)) for row in D.struct_rows(r.op, desc)]
        pl = r.placement
        placement = [1 if pl.fallback_disabled else 0, t["proof"](pl.proof), t["nodes"](pl.nodes or 0)] if pl else 0
        detail = _detail(r) if r.verdict != "PASS" else {}
        if r.case:
            detail["case"] = r.case
        if r.rerun:
            detail["rerun"] = r.rerun
        fw = fw_lines.get((r.case_id, r.env_id)) or fw_lines.get(r.case_id)
        if fw:
            detail["fw"] = fw
        if triage.get(r.case_id):
            detail["triage"] = triage[r.case_id]
        rows.append([
            r.case_id, t["op"](r.op), t["dtype"](r.dtype), t["ep"](r.ep), t["verdict"](r.verdict),
            t["attribution"](r.attribution or ""), t["family"](r.family), r.opset, r.seed, env_index.get(r.env_id, -1),
            dvals, r.onnx or 0, t["node"](r.onnx_node), t["reason"](r.reason), r.labels, _stat_rows(r.outputs), placement,
            detail or 0, structs[skey], t["source"](D.source_text(r.source)),
        ])
    envs = [{"title": D.env_title(e), "ep": e.ep, "ep_key": e.ep_key, "ep_options": e.ep_options,
             "optimization": e.optimization or "disabled"} for e in res.envs]
    return {
        "schema": DATA_SCHEMA, "columns": list(COLUMNS), "stat_columns": list(STAT_COLUMNS),
        "tables": {k: v.items for k, v in t.items()}, "ops": ops, "envs": envs, "cases": rows,
        "colours": VERDICT_COLOURS, "verdict_text": D.VERDICT_TEXT,
        "attribution_text": D.ATTRIBUTION_TEXT, "repro": {"template": repro.TEMPLATE, "placeholder": repro.PLACEHOLDER},
    }


def matrix_view(res: D.Results) -> dict:
    """Rows (op, dtype) x columns (EP, verdict) of the summary matrix."""
    rows = D.matrix(res.records, res.lane)
    eps = sorted({r["ep"] for r in rows})
    verdicts = {ep: D.ordered_verdicts({v for r in rows if r["ep"] == ep for v in r["counts"]}) for ep in eps}
    grid: dict = {}
    for r in rows:
        grid.setdefault((r["op"], r["dtype"]), {})[r["ep"]] = r
    body = []
    for (op, dt) in sorted(grid):
        body.append({"op": op, "dtype": dt, "cells": grid[(op, dt)]})
    ep_totals = {ep: {} for ep in eps}
    ep_findings = {ep: {} for ep in eps}
    for r in rows:
        for v, n in r["counts"].items():
            ep_totals[r["ep"]][v] = ep_totals[r["ep"]].get(v, 0) + n
        for f, n in r["findings"].items():
            ep_findings[r["ep"]][f] = ep_findings[r["ep"]].get(f, 0) + n
    # row spans for the operator column
    spans: dict = {}
    for b in body:
        spans[b["op"]] = spans.get(b["op"], 0) + 1
    seen = set()
    for b in body:
        b["span"] = 0 if b["op"] in seen else spans[b["op"]]
        seen.add(b["op"])
    return {"eps": eps, "verdicts": verdicts, "rows": body, "totals": ep_totals, "findings": ep_findings}


def fourway_view(res: D.Results) -> dict | None:
    """The four-way section (templates/fourway.html.j2), when the dml and dml-direct lanes are both here."""
    s = FW.summary(FW.join(res.records, res.envs))
    if s is None:
        return None
    s["columns"] = [c for c in FW.CLASSES if c in s["counts"]]
    s["total"] = sum(s["counts"].values())
    return s


def render(res: D.Results, fail_on=Verdict.FAIL_ON) -> str:
    env = environment()
    tpl = env.get_template("report.html.j2")
    recs = res.records
    totals = D.totals(recs)
    failing = [r for r in recs if r.verdict in set(fail_on)]
    envs = [{"title": D.env_title(e), "env_id": e.env_id, "rows": env_rows(e), "statements": D.statements(e),
             "nan_policy": e.nan_policy} for e in res.envs]
    nan_policies = sorted({e["nan_policy"] for e in envs if e["nan_policy"]})
    statements = []
    for e in envs:
        for s in e["statements"]:
            if s not in statements:
                statements.append(s)
    eps = res.eps
    title = f"onnx-dml-bench: {len(recs)} cases on {', '.join(eps) if eps else 'no EP'}" + \
        (" (incomplete)" if res.incomplete else "")
    return tpl.render(
        title=title, generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        sources=[p.name for p in res.sources], envs=envs, statements=statements, nan_policies=nan_policies,
        totals=totals, total=len(recs), failing=len(failing), fail_on=list(fail_on),
        attribution=D.attribution_counts(recs), labels=D.label_counts(recs),
        matrix=matrix_view(res), fourway=fourway_view(res), coverage=D.coverage(recs), not_expressible=D.not_expressible(res),
        verdict_text=D.VERDICT_TEXT, attribution_text=D.ATTRIBUTION_TEXT, finding_text=D.FINDING_TEXT,
        findings=D.finding_counts(recs), multi_ep=res.multi_ep, incomplete=res.incomplete,
        expected=res.completeness.expected if res.completeness is not None else None,
        css=static("report.css"), js=static("report.js"), data=packed_json(case_data(res)), data_encoding=DATA_ENCODING,
    )


def write(res: D.Results, path: Path, fail_on=Verdict.FAIL_ON) -> Path:
    """The page into ``path``, whole or not at all."""
    return write_text(path, render(res, fail_on))
