"""The HTML report: one self-contained file (no network), Jinja2 templates, case rows rendered by
plain JavaScript from compact JSON embedded in the page.

Text from EPs, models and case names is escaped: Jinja autoescapes; the embedded JSON has <, >, &
and the line separators escaped; the page's script builds the DOM with textContent only. Characters
that would change how the text around them is shown (bidirectional overrides and isolates, other
invisible format characters, control characters but tab and newline) are shown as their escape,
``\u202e``: in the templates (the environment's ``finalize``) and in the embedded JSON
(:func:`visible_json`), both through :data:`INVISIBLE`.
"""
from __future__ import annotations

import base64
import datetime as _dt
import functools
import gzip
import json
import re
import zlib
from collections import Counter
from pathlib import Path

import jinja2
from markupsafe import Markup

from ..outdir import triage_links, write_text
from ..record import FAIL_ON_DEFAULT, Verdict, jsonable
from . import bugs as BG
from . import crossdevice as XD
from . import data as D
from . import fault as FT
from . import fourway as FW
from . import grids as G
from . import repro
from .minify import minify_css, minify_js
from .packed import GZIP_HEADER, gzip_trailer, pack_markup, pack_script

TEMPLATES = Path(__file__).with_name("templates")
DATA_SCHEMA = "onnx-dml-bench/report-data/3"
#: columns of a case row in the embedded data (see report.js)
COLUMNS = ("id", "op", "dtype", "ep", "verdict", "attribution", "family", "opset", "seed", "env",
           "descriptor", "onnx", "node", "reason", "labels", "stats", "placement", "detail", "struct",
           "parties", "fw", "source")
STAT_COLUMNS = ("output", "kind", "match", "total", "mismatches", "max_abs", "max_ulp", "tolerance_ulp",
                "min_passing_ulp", "bound_ratio", "nan_mismatches", "wrong_shape")
#: the comparison labels of an output that has no values to compare (another shape or type, or none)
WRONG_SHAPE = ("shape", "dtype", "missing")
#: verdict -> its colour (record.Verdict's palette), and the colour of a verdict it does not name
VERDICT_COLOURS = {v.value: v.colour for v in Verdict}
OTHER_COLOUR = "#57606a"


#: characters shown as their escape (``\u202e``), never as themselves: C0 controls but tab and
#: newline, DEL and C1 controls, the bidirectional marks, embeddings, overrides and isolates
#: (a right-to-left override reverses the text after it), zero-width and other format characters
INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
                       "\u2060-\u206f\ufeff\ufff9-\ufffb]")
#: in JSON text: an escape sequence (kept, but a control character's, made visible) or such a character
_JSON_INVISIBLE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)|" + INVISIBLE.pattern)
_JSON_SHORT = {"b": 8, "f": 12, "r": 13}
#: what JSON text needs :func:`visible_json` for (a quick test; a false hit costs only time)
_JSON_NEEDS = re.compile(r"\\(?:u00[01]|[bfr])|" + INVISIBLE.pattern)


def visible(text: str) -> str:
    """``text`` with every character of :data:`INVISIBLE` written as its escape, ``\u202e``."""
    return INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Asset(Markup):
    """Our own CSS or JS, inlined as it is (never through :func:`visible`)."""


def _finalize(value):
    """Every value a template prints, shown with :func:`visible` (then autoescaped); our own assets
    as they are."""
    if isinstance(value, _Asset):
        return value
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


def visible_json(text: str) -> str:
    """JSON text whose strings, once parsed, show every character of :data:`INVISIBLE` as its escape:
    such a character, or the escape JSON wrote for a control character, becomes an escaped
    backslash and the escape's letters."""
    def one(m):
        seq = m.group(1)
        if seq is None:
            return f"\\\\u{ord(m.group()):04x}"
        code = _JSON_SHORT.get(seq, int(seq[1:], 16) if seq[0] == "u" else None)
        if code is not None and INVISIBLE.match(chr(code)):
            return f"\\\\u{code:04x}"
        return m.group()
    return _JSON_INVISIBLE.sub(one, text) if _JSON_NEEDS.search(text) else text


class _Loader(jinja2.FileSystemLoader):
    """The templates without the indentation of their lines (it shows the markup's nesting to whoever
    edits them and nothing to a browser: every page would carry it). Only the template's own text is
    touched, never a value printed into it; no template line lies inside a <pre> or a pre-wrap element
    (tests/report/test_minify.py)."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        return dedent_markup(source), filename, uptodate


def dedent_markup(source: str) -> str:
    """``source`` with each line's leading spaces and tabs removed."""
    return re.sub(r"(?m)^[ \t]+", "", source)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=_Loader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2"), default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=_finalize)
    env.filters["vtext"] = D.value_text
    env.filters["wbr"] = wbr
    env.filters["packed"] = pack_markup         # {% filter packed %}: a large block kept compressed (.packed)
    env.globals["verdict_colour"] = lambda v: VERDICT_COLOURS.get(v, OTHER_COLOUR)
    env.globals["unpack_js"] = static("unpack.js")
    return env


@functools.lru_cache(maxsize=None)
def static(name: str) -> Markup:
    """A static asset (our own CSS/JS) to inline, without its comments and the whitespace nothing
    needs (:mod:`.minify`): every page carries its own copy."""
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    if name.endswith(".js"):
        text = minify_js(text)
    elif name.endswith(".css"):
        text = minify_css(text)
    return _Asset(text)


def wbr(text) -> Markup:
    """Escaped text with a line-break opportunity after each underscore, colon and slash (long verdict
    names, labels), so that a narrow cell breaks it there and never inside a word."""
    return Markup(re.sub(r"([_:/])", r"\1<wbr>", str(Markup.escape(str(text)))))


#: how the case data is embedded: gzip (level 9, no timestamp), then base64; the page decodes it
#: with DecompressionStream, offline
DATA_ENCODING = "gzip+base64"


def _json_text(obj) -> str:
    """Compact JSON of ``obj``; values the data holds as built are JSON-safe (no walk over a large
    run's cases), unless NaN, an infinity or -0.0 is in them: then through ``jsonable``."""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        if "-0.0" not in text:
            return visible_json(text)
    except (ValueError, TypeError):
        pass
    return visible_json(json.dumps(jsonable(obj), separators=(",", ":"), ensure_ascii=False, allow_nan=False))


def packed_json(obj) -> str:
    """The case data as gzip+base64 text (safe inside a script element: [A-Za-z0-9+/=] only). A
    case's detail panel data is stored as JSON text, which the page parses only when the case is
    opened (a faster start for large runs). The cases are stored by column (``"layout":
    "columns"``: one list per column, the page turns them back into rows): the ids, seeds and
    statistics of neighbouring cases side by side compress 15-20% better than row after row. The
    JSON is compressed as it is made, value by value: a run of 200,000 cases is never held as one
    text."""
    level = 9
    deflate = zlib.compressobj(level, zlib.DEFLATED, -15)
    crc, size, out = 0, 0, [GZIP_HEADER]

    def put(text: str) -> None:
        nonlocal crc, size
        raw = text.encode("utf-8")
        crc, size = zlib.crc32(raw, crc), size + len(raw)
        out.append(deflate.compress(raw))

    if isinstance(obj, dict) and "cases" in obj and "columns" in obj:
        k = obj["columns"].index("detail")
        put('{"layout":"columns"')
        for key, value in obj.items():
            put("," + json.dumps(key) + ":")
            if key != "cases":
                put(_json_text(value))
                continue
            put("[")
            for c in range(len(obj["columns"])):
                put(("," if c else "") + "[")
                for n, row in enumerate(value):
                    v = (_detail_text(row[k]) if row[k] else 0) if c == k else row[c]
                    put(("," if n else "") + _json_text(v))
                put("]")
            put("]")
        put("}")
    else:
        put(_json_text(obj))
    out.append(deflate.flush())
    out.append(gzip_trailer(crc, size))
    return base64.b64encode(b"".join(out)).decode("ascii")


def embedded_data(page: str) -> dict:
    """The case data of a written report page (the inverse of :func:`packed_json`)."""
    m = re.search(r'<script type="application/octet-stream" id="report-data"[^>]*>(.*?)</script>', page, re.S)
    if m is None:
        raise ValueError("no embedded report data in the page")
    doc = json.loads(gzip.decompress(base64.b64decode(m.group(1).strip())).decode("utf-8"))
    # back to the logical form: rows, reason texts instead of their index, detail data parsed
    if doc.pop("layout", None) == "columns":
        doc["cases"] = [list(row) for row in zip(*doc["cases"])]
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
             o.min_passing_ulp, jsonable(o.bound_ratio), o.nan_mismatches,
             1 if any(lab in WRONG_SHAPE for lab in o.labels) else 0] for name, o in outputs.items()]


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
    return visible_json(json.dumps(jsonable(detail), separators=(",", ":"), ensure_ascii=False, allow_nan=False))


def case_data(res: D.Results, view: dict | None = None, blames: dict | None = None) -> dict:
    """The compact data the page's script renders the case list, its details and the charts from.
    ``view``: the four-way join of the records, ``blames``: ``fault.blames`` of them (computed when None)."""
    if view is None:
        view = FW.join(res.records, res.envs)
    if blames is None:
        blames = FT.blames(res.records, view)
    # repeated texts (ONNX node, placement map) are stored once and referenced by index
    t = {k: _Table("") for k in ("op", "dtype", "ep", "family", "attribution", "proof", "node", "reason", "fw",
                                 "source")}
    t["nodes"] = _Table(0)
    t["struct"] = _Table()     # [member, C type, value text] of the DirectML structs
    t["party"] = _Table()
    structs: dict = {}         # the struct of each (operator, descriptor), laid out once
    t["verdict"] = _Table()
    for v in D.VERDICTS:
        t["verdict"](v)
    env_index = {e.env_id: i for i, e in enumerate(res.envs)}
    ops: dict[str, dict] = {}
    rows = []
    fw_lines = FW.lines(view)
    fw_class = FW.classes(view)
    triage = triage_links(res.sources, res.records)      # shrunk/<id>.json and bundle/<id>/ beside the results
    grids = G.grids(res.records)
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
        key = (r.case_id, r.ep, r.env_id or "")
        detail = _detail(r) if r.verdict != "PASS" or (r.cpu is not None and r.cpu.verdict == "FAIL") else {}
        if r.case:
            detail["case"] = r.case
        if r.rerun:
            detail["rerun"] = r.rerun
        in_fw = r.ep in (FW.DIRECT_EP, FW.DML_EP)
        fw = (fw_lines.get((r.case_id, r.env_id)) or fw_lines.get(r.case_id)) if in_fw else None
        if fw:
            detail["fw"] = fw
        if triage.get(r.case_id):
            detail["triage"] = triage[r.case_id]
        if r.runs is not None:
            detail["runs"] = D.runs_text(r.runs)
        if key in grids:
            detail["grid"] = grids[key]
        rows.append([
            r.case_id, t["op"](r.op), t["dtype"](r.dtype), t["ep"](r.ep), t["verdict"](r.verdict),
            t["attribution"](r.attribution or ""), t["family"](r.family), r.opset, r.seed, env_index.get(r.env_id, -1),
            dvals, r.onnx or 0, t["node"](r.onnx_node), t["reason"](r.reason), r.labels, _stat_rows(r.outputs), placement,
            detail or 0, structs[skey], [t["party"](p) for p in blames[key].parties],
            t["fw"](FW.class_of(fw_class, r) or ""),
            t["source"](D.source_text(r.source)),
        ])
    envs = [{"title": D.machine_paths(D.env_title(e)), "ep": e.ep, "ep_key": e.ep_key, "ep_options": e.ep_options,
             "optimization": e.optimization or "disabled"} for e in res.envs]
    parties = {p: {"title": FT.party_title(p), "text": FT.party_text(p)} for p in t["party"].items}
    return {
        "schema": DATA_SCHEMA, "columns": list(COLUMNS), "stat_columns": list(STAT_COLUMNS),
        "tables": {k: v.items for k, v in t.items()}, "ops": ops, "envs": envs, "cases": rows,
        "colours": VERDICT_COLOURS, "verdict_text": D.VERDICT_TEXT,
        "attribution_text": D.ATTRIBUTION_TEXT, "repro": {"template": repro.TEMPLATE, "placeholder": repro.PLACEHOLDER},
        "labels": {lab: [info["group"], info["texts"]] for lab, info in D.label_legend(res.records).items()},
        "label_groups": [[k, title] for k, title, _ in D.LABEL_GROUPS],
        "parties": parties, "fw_text": FW.CLASS_TEXT, "fw_short": FW.CLASS_SHORT,
        "lanes": {e: {"title": D.lane_title(e), "order": D.lane_order(e)} for e in t["ep"].items if e},
    }


def matrix_view(res: D.Results) -> dict:
    """Rows (op, dtype) x columns (EP, verdict) of the summary matrix."""
    rows = D.matrix(res.records, res.lane)
    eps = D.lanes_sorted({r["ep"] for r in rows})
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
    # a lane's findings column only where it has findings (the matrix fits 1000 px with three lanes)
    return {"eps": eps, "verdicts": verdicts, "rows": body, "totals": ep_totals, "findings": ep_findings,
            "titles": {ep: D.lane_title(ep) for ep in eps}, "has_findings": {ep: bool(ep_findings[ep]) for ep in eps}}


#: the four-way classes that are nobody's wrong answer (their cells are not marked)
FW_NEUTRAL = ("ALL_AGREE", "EP_NOT_COMPARED", "DIRECT_NOT_COMPARED", "NEITHER_COMPARED")


def fourway_view(view: dict | None, blames: dict | None = None) -> dict | None:
    """The four-way section (templates/fourway.html.j2), when the dml and dml-direct lanes are both
    here: one row per operator, one column per class, the class CPU_EP_WRONG split as the first
    screen splits the CPU EP's wrong answers (a known deviation of its operator, or unexplained:
    ``blames``, :func:`fault.blames` of the records)."""
    s = FW.summary(view)
    if s is None:
        return None
    dml = {(cid, env): b for (cid, ep, env), b in (blames or {}).items() if ep == FW.DML_EP}
    dml_case = {cid: b for (cid, _), b in dml.items()}

    def column(fw) -> str:
        if fw.cls != "CPU_EP_WRONG":
            return fw.cls
        b = dml.get((fw.case_id, fw.ep_env)) if fw.variant else dml_case.get(fw.case_id)
        return "CPU_EP_WRONG:" + ("cpu-known" if b is not None and "cpu-known" in b.parties else "cpu")

    rows: dict[str, Counter] = {}
    for fw in view["rows"]:
        rows.setdefault(fw.op, Counter())[column(fw)] += 1
    counts = sum(rows.values(), Counter())
    columns = []
    for c in FW.CLASSES:
        if c == "CPU_EP_WRONG" and c in s["counts"]:
            columns.append({"id": c + ":cpu-known", "cls": c, "party": "cpu-known", "wrong": False,
                            "short": "CPU EP wrong, known deviation",
                            "text": FW.CLASS_TEXT[c] + " A known deviation its operator declares explains it."})
            columns.append({"id": c + ":cpu", "cls": c, "party": "cpu", "wrong": True,
                            "short": "CPU EP wrong, unexplained",
                            "text": FW.CLASS_TEXT[c] + " No known deviation explains it: a finding against the CPU EP."})
        elif c in s["counts"]:
            columns.append({"id": c, "cls": c, "party": "", "wrong": c not in FW_NEUTRAL, "short": FW.CLASS_SHORT[c],
                            "text": FW.CLASS_TEXT[c]})
    for col in columns:
        col["count"] = counts.get(col["id"], 0)
    s["columns"] = columns
    s["rows"] = [{"op": op, "counts": dict(n), "total": sum(n.values())} for op, n in sorted(rows.items())]
    s["total"] = sum(s["counts"].values())
    return s


def fault_view(res: D.Results, view: dict | None, blames: dict) -> dict:
    """The first screen (templates/fault.html.j2): who is at fault, per operator, with the CPU EP's
    known deviations apart, their texts from the operators' declarations."""
    s = FT.summary(res.records, view, blames)
    devs = D.deviation_texts()
    for k in s["known"]:
        d = devs.get(k["key"], {})
        k.update(kind=d.get("kind", ""), who=d.get("who", ""), summary=d.get("summary", ""))
    s["headline"] = FT.headline(s)
    s["title"] = ("What DirectML got wrong, and who is at fault" if s["directml"]
                  else "What the EP" + ("s" if len([e for e in s["lanes"] if e != FT.CPU_EP]) > 1 else "")
                  + " under test got wrong, and who is at fault")
    s["known_total"] = s["totals"].get("cpu-known", 0)
    s["lane_titles"] = [D.lane_title(e) for e in D.lanes_sorted(s["lanes"])]
    return s


def bugs_view(res: D.Results, view: dict | None, blames: dict) -> dict:
    """The bugs (templates/bugs.html.j2): one row per bug with its minimal repro and cases, what
    changed since the main job's previous run, the expectations' status (report/bugs.py)."""
    bugs, facts = BG.of_results(res, blames, view)
    f = BG.facts_view(facts)
    for e in (f["previous"] or {}).get("environment", []):     # no path of the machine that ran
        e["before"], e["after"] = D.machine_paths(e["before"]), D.machine_paths(e["after"])
    for e in f["expectations"]:
        e["file"], e["note"] = D.machine_paths(e["file"] or ""), D.machine_paths(e["note"] or "")
    return {"list": [b.to_dict() for b in bugs], "new": set((f["previous"] or {}).get("new_bugs") or ()), **f}


def bug_rows(recs: list, bugs: list[dict]) -> dict[str, list[int]]:
    """Per bug (its id): the rows of the case data (the records' order) of its cases, on its EP where
    the bug names one: what its "cases" link lists (in the data, where they cost a few bytes, not
    in the markup as a list of case ids)."""
    where: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        where.setdefault(r.case_id, []).append(i)
    return {b["id"]: sorted(i for cid in dict.fromkeys(b["case_ids"]) for i in where.get(cid, ())
                            if not b["ep"] or recs[i].ep == b["ep"]) for b in bugs}


def label_view(res: D.Results) -> list[dict]:
    """The labels' legend: groups in order, each with its labels, counts and texts."""
    legend = D.label_legend(res.records)
    out = []
    for key, title, text in D.LABEL_GROUPS:
        labs = [{"label": lab, **info} for lab, info in legend.items() if info["group"] == key]
        if labs:
            out.append({"key": key, "title": title, "text": text, "labels": labs,
                        "count": sum(x["count"] for x in labs)})
    return out


def env_view(e) -> dict:
    """An environment's block: the rows shown, the rest (long and structured values) folded away."""
    rows, more = [], []
    for label, text in env_rows(e):
        long = text.startswith(("{", "[")) or len(text) > 160
        text = D.machine_paths(_pretty(text) if long else text)
        (more if long else rows).append((label, text))
    return {"title": D.machine_paths(D.env_title(e)), "env_id": e.env_id, "rows": rows, "more": more,
            "statements": D.statements(e), "nan_policy": e.nan_policy}


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False, sort_keys=True)
    except ValueError:
        return text


def page_title(recs: list) -> str:
    """What the page counts: cases (a case once, whatever its lanes), lanes, and records (a case on a lane)."""
    eps = D.lanes_sorted({r.ep for r in recs})
    cases = len({r.case_id for r in recs})
    if len(eps) <= 1:
        return f"onnx-dml-bench: {cases} case{'s' if cases != 1 else ''} on {D.lane_title(eps[0]) if eps else 'no EP'}"
    return (f"onnx-dml-bench: {cases} cases on {len(eps)} lanes ({', '.join(D.lane_title(e) for e in eps)}): "
            f"{len(recs)} records")


def lane_view(recs: list, fail_on) -> list[dict]:
    """Per lane: its cases by verdict, pass rate, failing set, attributions and findings (the chips
    above count the records of every lane together)."""
    by: dict[str, list] = {}
    for r in recs:
        by.setdefault(r.ep, []).append(r)
    out = []
    for ep in D.lanes_sorted(by):
        rs = by[ep]
        counts = D.totals(rs)
        out.append({"ep": ep, "title": D.lane_title(ep), "records": len(rs), "counts": counts,
                    "pass_rate": counts.get("PASS", 0) / len(rs) if rs else 0.0,
                    "failing": sum(1 for r in rs if r.verdict in set(fail_on) or set(fail_on).intersection(r.findings)),
                    "attribution": D.attribution_counts(rs), "findings": D.finding_counts(rs)})
    return out


#: the versions the first screen shows per lane: (row, where in the environment record it is)
VERSION_ROWS = (("device", ("device",)), ("DirectML.dll", ("dml.DirectML.dll", "versions.DirectML.dll")),
                ("ONNX Runtime", ("ort",)), ("Wine", ("dml.wine", "versions.wine")),
                ("vkd3d", ("dml.vkd3d", "versions.vkd3d")), ("Mesa", ("dml.mesa", "driver")),
                ("shader model", ("shader_model", "versions.shader_model")))


def versions_view(res: D.Results) -> list[dict]:
    """The versions and device of the lanes, for the first screen, each said once: [{"head", "values":
    [{"text", "title", "lanes": [lane title]}]}] (a value every lane that has the item shares names no
    lane; an item no lane has is left out)."""
    envs = sorted(res.envs, key=lambda e: (D.lane_order(e.ep), e.ep))
    titles = [D.lane_title(e.ep) for e in envs]
    if len(set(titles)) < len(titles):      # a lane in several environments: tell them apart
        titles = [f"{t} ({D.machine_paths(D.env_title(e))})" for t, e in zip(titles, envs)]
    cols = []
    for e in envs:
        f = e.flat()
        dml, versions = f.get("dml") or {}, f.get("versions") or {}

        def get(key):
            if key == "ort":
                return " ".join(str(x) for x in (f.get("ort_package"), f.get("ort_version")) if x)
            head, _, tail = key.partition(".")
            src = {"dml": dml, "versions": versions}.get(head) if tail else f
            v = src.get(tail or head) if isinstance(src, dict) else None
            return "" if v is None or isinstance(v, (dict, list)) else str(v)
        col = {row: next((t for t in map(get, keys) if t), "") for row, keys in VERSION_ROWS}
        if e.ep == FT.CPU_EP:
            col["device"] = "CPU" + (f" ({col['device']})" if col["device"] and col["device"] != "CPU" else "")
        if e.ep == FW.DIRECT_EP:
            col["ONNX Runtime"] = ""         # DirectML.dll run by the bench's own harness
        cols.append(col)
    out = []
    for row, _ in VERSION_ROWS:
        values: dict[str, list] = {}
        for t, c in zip(titles, cols):
            if c[row]:
                values.setdefault(D.machine_paths(c[row]), []).append(t)
        if not values:
            continue
        shared = len(values) == 1
        items = []
        for full, lanes in values.items():
            # the device as the adapter names it; the layers under it have items of their own
            short = full.split(" via ", 1)[0] if row == "device" else full
            items.append({"text": short, "title": full if short != full else "", "lanes": [] if shared else lanes})
        out.append({"head": row, "values": items})
    return out


def render(res: D.Results, fail_on=FAIL_ON_DEFAULT) -> str:
    env = environment()
    tpl = env.get_template("report.html.j2")
    recs = res.records
    totals = D.totals(recs)
    failing = [r for r in recs if r.verdict in set(fail_on) or set(fail_on).intersection(r.findings)]
    envs = [env_view(e) for e in res.envs]
    nan_policies = sorted({e["nan_policy"] for e in envs if e["nan_policy"]})
    statements = []
    for e in envs:
        for s in e["statements"]:
            if s not in statements:
                statements.append(s)
    title = page_title(recs) + (" (incomplete)" if res.incomplete else "")
    view = FW.join(recs, res.envs)
    blames = FT.blames(recs, view)
    bugs = bugs_view(res, view, blames)
    data = case_data(res, view, blames)
    data["bug_rows"] = bug_rows(recs, bugs["list"])
    return tpl.render(
        title=title, generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        sources=[p.name for p in res.sources], envs=envs, statements=statements, nan_policies=nan_policies,
        totals=totals, total=len(recs), failing=len(failing), fail_on=list(fail_on), lanes=lane_view(recs, fail_on),
        versions=versions_view(res),
        attribution=D.attribution_counts(recs), labels=label_view(res),
        matrix=matrix_view(res), fourway=fourway_view(view, blames), crossdevice=XD.view(res), fault=fault_view(res, view, blames),
        bugs=bugs,
        coverage=D.coverage(recs), not_expressible=not_expressible_view(res),
        verdict_text=D.VERDICT_TEXT, attribution_text=D.ATTRIBUTION_TEXT, finding_text=D.FINDING_TEXT,
        findings=D.finding_counts(recs), multi_ep=res.multi_ep, label_groups=D.LABEL_GROUPS,
        incomplete=res.incomplete, expected=res.completeness.expected if res.completeness is not None else None,
        css=static("report.css"), js=pack_script(static("report.js")), data=packed_json(data),
        data_encoding=DATA_ENCODING, data_schema=DATA_SCHEMA,
    )


def not_expressible_view(res: D.Results) -> dict:
    """The capabilities the environments list as not expressible, and the NOT_EXPRESSIBLE cases
    counted by EP, operator and reason, most first (the case list holds each case: a run of every
    opset has thousands, and a row each would be most of the page)."""
    ne = D.not_expressible(res)
    groups = Counter((c["ep"], c["op"], c["reason"]) for c in ne["cases"])
    return {"capabilities": ne["capabilities"], "count": len(ne["cases"]),
            "groups": [{"ep": ep, "op": op, "reason": reason, "cases": n}
                       for (ep, op, reason), n in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))]}


def write(res: D.Results, path: Path, fail_on=FAIL_ON_DEFAULT) -> Path:
    """The page into ``path``, whole or not at all."""
    return write_text(path, render(res, fail_on))
