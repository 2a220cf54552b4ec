"""Run-to-run comparison: the same suite on two drivers, machines or ONNX Runtime releases.

Regressions (PASS -> anything else), fixes (anything else -> PASS), other verdict changes,
numeric drift (per operator/dtype/EP the quantiles of the cases' max ULP, and every case whose max
ULP changed), new and removed cases. Verdicts are read from both files as recorded.

``compare_command`` prints a text table, and writes compare.html where ``--out`` asks (a page, or
a folder for it; nothing is written into a results folder unasked); it returns 1 when there is a
regression, else 4 when either run is incomplete (``results.completeness``), else 0 (2 when a file
cannot be read). The page puts the regressions first, then the fixes with the reason each case had
before and has now, a chart of the moves per operator, the numeric drift, and the environments
folded away; its file paths are relative to the page.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup, escape

from .. import results as R
from ..errors import EXIT_FAIL, EXIT_INCOMPLETE, EXIT_OK
from ..outdir import COMPARE_HTML, REPORT_HTML, write_text
from ..record import FAIL_ON_DEFAULT, FINDINGS, jsonable
from . import data as D
from .html import VERDICT_COLOURS, environment, static

TEXT_ROWS = 50
#: new or removed cases the page lists one by one, at most (those that fail first); it counts
#: them all per operator and verdict, and ``compare --json`` lists them all
LISTED = 20
#: a part of a reason (the text between " | ") at least this long that several rows of the page's
#: change tables hold is written once, as a note the rows refer to
SHARED_MIN = 160
#: how much of a shared part a row still shows before its note's number
SHARED_HEAD = 80
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))
#: environment keys that differ on every run and say nothing about the stack
_ENV_IGNORE = {"started", "argv", "env_id", "record", "schema", "not_expressible", "total_cases", "shard"}
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


@dataclass
class Change:
    case_id: str
    ep: str
    op: str
    dtype: str
    before: str
    after: str
    attribution_before: str | None = None
    attribution_after: str | None = None
    ulp_before: int | None = None
    ulp_after: int | None = None
    reason: str = ""                     # the current run's reason (empty for a PASS)
    finding_before: str | None = None
    finding_after: str | None = None
    reason_before: str = ""              # the baseline's reason


@dataclass
class Comparison:
    baseline: Path
    current: Path
    matching: str
    ep_note: str
    matched: int = 0
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    other: list[Change] = field(default_factory=list)
    drift_cases: list[Change] = field(default_factory=list)
    drift_groups: list[dict] = field(default_factory=list)
    new: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    totals_before: dict = field(default_factory=dict)
    totals_after: dict = field(default_factory=dict)
    findings_before: dict = field(default_factory=dict)
    findings_after: dict = field(default_factory=dict)
    env_before: list[dict] = field(default_factory=list)
    env_after: list[dict] = field(default_factory=list)
    env_diff: list[tuple[str, str, str]] = field(default_factory=list)
    #: what is cut off or missing of each run (results.completeness): empty when whole
    incomplete_before: list[str] = field(default_factory=list)
    incomplete_after: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not (self.incomplete_before or self.incomplete_after)


def quantile(values: list[float], q: float):
    """Nearest-rank quantile (a value that occurs; None for no values)."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(-(-q * len(v) // 1)) - 1))
    return v[k]


def _brief(r: dict) -> dict:
    return {"case_id": r.case_id, "ep": r.ep or "", "op": r.op or "", "dtype": r.dtype or "",
            "verdict": r.verdict or "", "reason": r.reason or "", "env_id": r.env_id or ""}


def compare(base: D.Results, cur: D.Results, by_case: bool = False) -> Comparison:
    """The comparison of two runs. Records are matched by case id and EP, and by what tells apart the
    environments of one EP on a side (two DirectML.dll builds merged, two devices); ``by_case``: by
    case id and EP alone, whatever environment recorded them (a run re-run in part on another device
    counts as one run; a case recorded twice on a side counts by its last record)."""
    eps_b = {r.ep or "" for r in base.records}
    eps_c = {r.ep or "" for r in cur.records}
    if eps_b == eps_c:
        by_id_only = False
        matching = "case id and EP"
        note = f"both runs on {', '.join(sorted(eps_b)) or 'no EP'}"
    elif len(eps_b) == 1 and len(eps_c) == 1:
        by_id_only = True
        matching = "case id alone"
        note = (f"the EPs differ ({next(iter(eps_b)) or '?'} in the baseline, {next(iter(eps_c)) or '?'} in the current "
                f"run): cases are matched by case id alone")
    else:
        by_id_only = False
        matching = "case id and EP"
        note = (f"the runs cover different EPs (baseline: {', '.join(sorted(eps_b))}; current: {', '.join(sorted(eps_c))}): "
                f"cases are matched by case id and EP, cases of an EP on one side only count as new or removed")

    # environments of one EP on one side (two DirectML.dll builds merged) are matched with the
    # environment of the other side that has the same build, never collapsed into one record
    env_keys, env_values = R.matching([base.envs, cur.envs]) if not by_case else ([], {})
    if by_case:
        note += "; environments are not told apart (--by-case)"
    if env_keys:
        matching += " and " + ", ".join(k.split(".", 1)[-1] for k in env_keys)
        note += "; environments of one EP are told apart by " + ", ".join(env_keys)

    def key(r):
        env = env_values.get(r.env_id, ()) if env_keys else ()
        return (r.case_id, env) if by_id_only else (r.case_id, r.ep or "", env)

    b = {key(r): r for r in base.records}
    c = {key(r): r for r in cur.records}
    cmp = Comparison(base.sources[0] if base.sources else Path("?"), cur.sources[0] if cur.sources else Path("?"),
                     matching, note)
    cmp.totals_before = D.totals(base.records)
    cmp.totals_after = D.totals(cur.records)
    cmp.findings_before = D.finding_counts(base.records)
    cmp.findings_after = D.finding_counts(cur.records)
    cmp.env_before, cmp.env_after = base.envs, cur.envs
    cmp.env_diff = env_differences(base.envs, cur.envs)
    cmp.incomplete_before, cmp.incomplete_after = base.incomplete, cur.incomplete
    groups: dict = {}
    for k in sorted(set(b) & set(c), key=str):
        rb, rc = b[k], c[k]
        cmp.matched += 1
        vb, vc = rb.verdict or "", rc.verdict or ""
        ub, uc = rb.max_ulp, rc.max_ulp
        ch = Change(rc.case_id or "", (cur.lane(rc) if env_keys else rc.ep) or "", rc.op or "", rc.dtype or "", vb, vc,
                    rb.attribution, rc.attribution, ub, uc, rc.reason or "", rb.finding, rc.finding, rb.reason or "")
        if vb == "PASS" and vc != "PASS":
            cmp.regressions.append(ch)
        elif vb != "PASS" and vc == "PASS":
            cmp.fixes.append(ch)
        elif vb != vc or rb.attribution != rc.attribution or rb.finding != rc.finding:
            cmp.other.append(ch)
        if ub is not None and uc is not None:
            g = groups.setdefault((ch.op, ch.dtype, ch.ep), {"before": [], "after": [], "changed": 0})
            g["before"].append(ub)
            g["after"].append(uc)
            if ub != uc:
                g["changed"] += 1
                cmp.drift_cases.append(ch)
    for (op, dt, ep), g in sorted(groups.items()):
        qb = {name: quantile(g["before"], q) for name, q in QUANTILES}
        qa = {name: quantile(g["after"], q) for name, q in QUANTILES}
        cmp.drift_groups.append({"op": op, "dtype": dt, "ep": ep, "cases": len(g["before"]), "changed": g["changed"],
                                 "before": qb, "after": qa, "flag": qb != qa or g["changed"] > 0})
    cmp.drift_cases.sort(key=lambda ch: (-abs((ch.ulp_after or 0) - (ch.ulp_before or 0)), ch.case_id))
    cmp.new = [_brief(c[k]) for k in sorted(set(c) - set(b), key=str)]
    cmp.removed = [_brief(b[k]) for k in sorted(set(b) - set(c), key=str)]
    return cmp


def env_differences(before: list, after: list) -> list[tuple[str, str, str]]:
    """(key, baseline, current) for the environment keys that differ (first environment of each)."""
    if not before or not after:
        return []
    eb, ea = before[0].flat(), after[0].flat()
    out = []
    for k in sorted((set(eb) | set(ea)) - _ENV_IGNORE):
        vb, va = eb.get(k), ea.get(k)
        if vb != va:
            out.append((k, _env_value(vb), _env_value(va)))
    return out


def _env_value(v) -> str:
    if v is None or v == "":
        return "(none)"
    return D.value_json(v) if isinstance(v, (dict, list)) else str(v)


# ----------------------------------------------------------------------------------------------
# Text
# ----------------------------------------------------------------------------------------------

def _t(s, width: int | None = None) -> str:
    s = _CTRL.sub("?", str("" if s is None else s)).replace("\n", " ").replace("\r", " ")
    if width and len(s) > width:
        s = s[:width - 1] + "…"
    return s


def table(headers: list[str], rows: list[list], limit: int | None = TEXT_ROWS, widths: dict | None = None,
          more: str = "see compare.html") -> str:
    widths = widths or {}
    shown = rows if limit is None else rows[:limit]
    cells = [[_t(c, widths.get(i)) for i, c in enumerate(r)] for r in shown]
    w = [len(h) for h in headers]
    for r in cells:
        for i, c in enumerate(r):
            w[i] = max(w[i], len(c))
    def line(r):
        return "  " + "  ".join(c.ljust(w[i]) if i < len(r) - 1 else c for i, c in enumerate(r)).rstrip()
    out = [line(headers), "  " + "  ".join("-" * x for x in w)]
    out += [line(r) for r in cells]
    if limit is not None and len(rows) > limit:
        out.append(f"  ... and {len(rows) - limit} more ({more})")
    return "\n".join(out)


def _env_line(envs: list[dict]) -> str:
    if not envs:
        return "(no environment record)"
    e = envs[0]
    parts = [e.get("ep"), " ".join(x for x in (e.get("ort_package"), e.get("ort_version")) if x), e.get("device"),
             f"driver {e.driver}" if e.driver else "", e.get("machine"), e.get("started")]
    return ", ".join(_t(p) for p in parts if p)


def _uf(u) -> str:
    return "" if u is None else str(u)


def text(cmp: Comparison) -> str:
    multi = len({ch.ep for ch in cmp.regressions + cmp.fixes + cmp.other + cmp.drift_cases}) > 1
    out = ["onnx-dml-bench compare",
           f"baseline: {_t(cmp.baseline)}  [{_env_line(cmp.env_before)}]",
           f"current:  {_t(cmp.current)}  [{_env_line(cmp.env_after)}]",
           f"matching: by {cmp.matching}; {cmp.ep_note}",
           f"{cmp.matched} cases matched, {len(cmp.new)} new, {len(cmp.removed)} removed", ""]
    for side, lines, missed in (("baseline", cmp.incomplete_before, "new"), ("current", cmp.incomplete_after, "removed")):
        if lines:
            out += [f"INCOMPLETE: the {side} run is not whole; the cases it did not reach count as {missed}, "
                    f"not as regressions or fixes"] + [f"  {_t(x)}" for x in lines] + [""]
    if cmp.env_diff:
        out += ["ENVIRONMENT DIFFERENCES", table(["key", "baseline", "current"], [list(x) for x in cmp.env_diff],
                                                   limit=None, widths={1: 60, 2: 60}), ""]
    verdicts = D.ordered_verdicts(set(cmp.totals_before) | set(cmp.totals_after))
    out += ["VERDICTS", table(["verdict", "baseline", "current", "change"],
                              [[v, cmp.totals_before.get(v, 0), cmp.totals_after.get(v, 0),
                                f"{cmp.totals_after.get(v, 0) - cmp.totals_before.get(v, 0):+d}"] for v in verdicts], limit=None), ""]
    out += ["EP-VS-CPU FINDINGS", table(["finding", "baseline", "current", "change"],
                                        [[f, cmp.findings_before.get(f, 0), cmp.findings_after.get(f, 0),
                                          f"{cmp.findings_after.get(f, 0) - cmp.findings_before.get(f, 0):+d}"]
                                         for f in FINDINGS], limit=None), ""]

    def changes(title, items):
        out.append(f"{title} ({len(items)})")
        if not items:
            out.append("  none")
        else:
            hdr = ["case", "EP", "operator", "dtype", "baseline", "current", "reason now (was)"] if multi else \
                  ["case", "operator", "dtype", "baseline", "current", "reason now (was)"]
            rows = []
            for ch in items:
                vb = ch.before + (f" ({ch.attribution_before})" if ch.attribution_before else "") + \
                    (f" +{ch.finding_before}" if ch.finding_before and ch.finding_before != ch.attribution_before else "")
                va = ch.after + (f" ({ch.attribution_after})" if ch.attribution_after else "") + \
                    (f" +{ch.finding_after}" if ch.finding_after and ch.finding_after != ch.attribution_after else "")
                why = ch.reason or "(none)"
                if ch.reason_before and ch.reason_before != ch.reason:
                    why += f" (was: {ch.reason_before})"
                row = [ch.case_id, ch.ep, ch.op, ch.dtype, vb, va, why] if multi else \
                      [ch.case_id, ch.op, ch.dtype, vb, va, why]
                rows.append(row)
            out.append(table(hdr, rows, widths={len(hdr) - 1: 70}))
        out.append("")

    changes("REGRESSIONS: PASS -> not PASS", cmp.regressions)
    changes("FIXES: not PASS -> PASS", cmp.fixes)
    changes("OTHER VERDICT OR ATTRIBUTION CHANGES", cmp.other)
    flagged = [g for g in cmp.drift_groups if g["flag"]]
    out.append(f"NUMERIC DRIFT: max ULP per case, quantiles per operator/dtype (groups changed: {len(flagged)} of {len(cmp.drift_groups)})")
    if flagged:
        rows = []
        for g in flagged:
            rows.append([g["op"], g["dtype"], g["ep"], g["cases"], g["changed"]] +
                        [f"{_uf(g['before'][n])} -> {_uf(g['after'][n])}" for n, _ in QUANTILES])
        out.append(table(["operator", "dtype", "EP", "cases", "changed"] + [n for n, _ in QUANTILES], rows))
    else:
        out.append("  none")
    out.append("")
    out.append(f"CASES WHOSE MAX ULP CHANGED ({len(cmp.drift_cases)})")
    if cmp.drift_cases:
        out.append(table(["case", "EP", "baseline ULP", "current ULP", "verdict"],
                         [[ch.case_id, ch.ep, _uf(ch.ulp_before), _uf(ch.ulp_after),
                           ch.before if ch.before == ch.after else f"{ch.before} -> {ch.after}"] for ch in cmp.drift_cases]))
    else:
        out.append("  none")
    out.append("")
    for title, items in (("NEW CASES", cmp.new), ("REMOVED CASES", cmp.removed)):
        out.append(f"{title} ({len(items)})")
        out.append(table(["case", "EP", "verdict"], [[x["case_id"], x["ep"], x["verdict"]] for x in items],
                         more="compare --json FILE lists them all") if items else "  none")
        out.append("")
    out.append(f"result: {len(cmp.regressions)} regression{'s' if len(cmp.regressions) != 1 else ''}, "
               f"{len(cmp.fixes)} fix{'es' if len(cmp.fixes) != 1 else ''}, {len(cmp.other)} other change"
               f"{'s' if len(cmp.other) != 1 else ''}, {len(cmp.drift_cases)} max-ULP change"
               f"{'s' if len(cmp.drift_cases) != 1 else ''}" +
               ("" if cmp.complete else
                f"; INCOMPLETE ({' and '.join(s for s, x in (('baseline', cmp.incomplete_before), ('current', cmp.incomplete_after)) if x)}"
                f" not whole)"))
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# HTML
# ----------------------------------------------------------------------------------------------

def moves(cmp: Comparison) -> list[dict]:
    """Per operator: regressions, fixes, other verdict changes and max-ULP changes (the compare
    page's chart)."""
    rows: dict[str, dict] = {}
    for name, items in (("regressions", cmp.regressions), ("fixes", cmp.fixes), ("other", cmp.other),
                        ("drift", cmp.drift_cases)):
        for ch in items:
            rows.setdefault(ch.op, {"op": ch.op, "regressions": 0, "fixes": 0, "other": 0, "drift": 0})[name] += 1
    return [rows[k] for k in sorted(rows)]


#: the chart's series: (key, label, colour)
MOVES = (("regressions", "regressions", "#cf222e"), ("fixes", "fixes", "#1a7f37"),
         ("other", "other verdict changes", "#8250df"), ("drift", "max ULP changed", "#9a6700"))


def moves_svg(rows: list[dict]) -> Markup:
    """Inline SVG (no script): one group of bars per operator, one bar per kind of move."""
    if not rows:
        return Markup("")
    top = max([r[k] for r in rows for k, _, _ in MOVES] + [1])
    label_w, bar_w, bh, gap = 170, 420, 13, 2
    height = 30 + len(rows) * (len(MOVES) * (bh + gap) + 12)
    width = label_w + bar_w + 70
    out = [f'<svg class="chart-svg moves" id="moves-chart" role="img" aria-label="moves per operator" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    x = label_w
    for key, label, colour in MOVES:
        out.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{colour}"/>'
                   f'<text class="axis" x="{x + 14}" y="13">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    y = 28
    for r in rows:
        out.append(f'<text class="op-label" x="0" y="{y + bh}">{escape(r["op"])}</text>')
        for key, label, colour in MOVES:
            n = r[key]
            w = 0 if not n else max(2.0, n / top * bar_w)
            out.append(f'<rect class="move" data-op="{escape(r["op"])}" data-kind="{key}" data-n="{n}" x="{label_w}" y="{y}" '
                       f'width="{w:.1f}" height="{bh}" fill="{colour}"><title>{escape(r["op"])}: {n} {escape(label)}</title></rect>'
                       f'<text class="axis" x="{label_w + w + 4:.1f}" y="{y + bh - 2}">{n}</text>')
            y += bh + gap
        y += 12
    out.append("</svg>")
    return Markup("".join(out))


def added_view(items: list[dict]) -> dict:
    """New or removed cases as the page shows them (they are no change of verdict): their number per
    EP, operator and verdict, and at most :data:`LISTED` of them one by one: those with a verdict of
    the default failing set first (FAIL, CRASH, ...), then the others that do not pass, then passes
    (each group in case-id order)."""
    counts: dict = {}
    for x in items:
        c = counts.setdefault((x["ep"], x["op"]), Counter())
        c[x["verdict"]] += 1
    listed = sorted(items, key=lambda x: 0 if x["verdict"] in FAIL_ON_DEFAULT else 2 if x["verdict"] == "PASS" else 1)
    listed = listed[:LISTED]
    return {"count": len(items), "verdicts": D.ordered_verdicts({x["verdict"] for x in items}),
            "eps": len({x["ep"] for x in items}),
            "rows": [{"ep": ep, "op": op, "counts": dict(c), "total": sum(c.values())}
                     for (ep, op), c in sorted(counts.items())],
            "totals": dict(Counter(x["verdict"] for x in items)), "listed": listed}


def _parts(text: str) -> list[str]:
    return text.split(" | ") if text else []


def shared_texts(cmp: Comparison) -> dict[str, int]:
    """The parts of the reasons (now and, where it differs, before) in the change tables that are
    :data:`SHARED_MIN` characters or longer and held by more than one row: part -> its note's
    number, in the order the page first shows them."""
    seen: Counter = Counter()
    order: list[str] = []
    for ch in cmp.regressions + cmp.fixes + cmp.other:
        for text in (ch.reason, ch.reason_before if ch.reason_before != ch.reason else ""):
            for part in set(_parts(text)):
                if len(part) >= SHARED_MIN:
                    if part not in seen:
                        order.append(part)
                    seen[part] += 1
    return {part: i for i, part in enumerate((p for p in order if seen[p] > 1), 1)}


def _head(part: str) -> str:
    """The beginning of a long text, cut at a space."""
    cut = part.rfind(" ", 0, SHARED_HEAD)
    return part[:cut if cut > SHARED_HEAD // 2 else SHARED_HEAD].rstrip(" ,;:(")


def reason_markup(text: str, notes: dict[str, int]) -> Markup:
    """A reason as a change table shows it: each part that is a note (:func:`shared_texts`) as its
    beginning and a link to the note, the rest as it is (escaped)."""
    out = []
    for part in _parts(text):
        n = notes.get(part)
        out.append(escape(part) if n is None else
                   Markup('{}… <a class="note-ref" href="#note-{}">[{}]</a>').format(_head(part), n, n))
    return Markup(" | ").join(out)


def comparison_json(cmp: Comparison) -> str:
    """The whole comparison as JSON (``compare --json``): every change, max-ULP change, new and
    removed case, with the verdict counts and the environment differences."""
    doc = {"schema": "onnx-dml-bench/compare/1", "baseline": str(cmp.baseline), "current": str(cmp.current),
           "matching": cmp.matching, "ep_note": cmp.ep_note, "matched": cmp.matched,
           "complete": cmp.complete, "incomplete_baseline": cmp.incomplete_before,
           "incomplete_current": cmp.incomplete_after,
           "totals_baseline": cmp.totals_before, "totals_current": cmp.totals_after,
           "findings_baseline": cmp.findings_before, "findings_current": cmp.findings_after,
           "regressions": [dataclasses.asdict(ch) for ch in cmp.regressions],
           "fixes": [dataclasses.asdict(ch) for ch in cmp.fixes],
           "other": [dataclasses.asdict(ch) for ch in cmp.other],
           "drift_groups": cmp.drift_groups,
           "drift_cases": [dataclasses.asdict(ch) for ch in cmp.drift_cases],
           "new": cmp.new, "removed": cmp.removed,
           "environment_differences": [{"key": k, "baseline": b, "current": a} for k, b, a in cmp.env_diff]}
    return json.dumps(jsonable(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def render_html(cmp: Comparison, report_link: str | None = None, where: Path | None = None) -> str:
    """The compare page; ``where``: the page's folder, to which its file paths are written relative."""
    env = environment()
    tpl = env.get_template("compare.html.j2")
    verdicts = D.ordered_verdicts(set(cmp.totals_before) | set(cmp.totals_after))

    def rel(p: Path) -> str:
        """A file as the page names it: relative to the page, or, far from it (another tree, a
        temporary folder), by its last three names."""
        if where is not None:
            try:
                r = os.path.relpath(Path(p).resolve(), Path(where).resolve())
            except ValueError:        # another drive (Windows)
                r = ""
            if r and not r.startswith(os.path.join("..", "..")):
                return Path(r).as_posix()
        return "…/" + "/".join(Path(p).parts[-3:])

    def env_rows(e) -> tuple[list, list]:
        rows, more = [], []
        for label, text in D.env_rows(e):
            long = text.startswith(("{", "[")) or len(text) > 160
            (more if long else rows).append((label, D.machine_paths(text)))
        return rows, more

    notes = shared_texts(cmp)
    return tpl.render(
        cmp=cmp, verdicts=verdicts, quantiles=[n for n, _ in QUANTILES], report_link=report_link,
        added={"new": added_view(cmp.new), "removed": added_view(cmp.removed)},
        notes=notes, reason=lambda text: reason_markup(text, notes), verdict_classes=VERDICT_COLOURS,
        flagged=[g for g in cmp.drift_groups if g["flag"]], baseline=rel(cmp.baseline), current=rel(cmp.current),
        generated=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        envs_before=[(D.machine_paths(D.env_title(e)), *env_rows(e)) for e in cmp.env_before],
        envs_after=[(D.machine_paths(D.env_title(e)), *env_rows(e)) for e in cmp.env_after],
        env_diff=[(k, D.machine_paths(b), D.machine_paths(a)) for k, b, a in cmp.env_diff],
        moves=moves(cmp), moves_svg=moves_svg(moves(cmp)),
        css=static("report.css"), multi_ep=len({ch.ep for ch in cmp.regressions + cmp.fixes + cmp.other}) > 1,
    )


def compare_command(baseline: Path, current: Path, out: Path | None, hold=None, json_out: Path | None = None,
                    by_case: bool = False) -> int:
    """Compare two result files; print a text table; write compare.html where ``out`` says (``out``
    itself when it ends in .html, else ``out``/compare.html) and print where, or, without ``out``,
    say how to get the page; ``json_out``: also the whole comparison as JSON there
    (:func:`comparison_json`: every new and removed case, which the page counts and lists only in part);
    ``by_case``: see :func:`compare`. 1 when a case regressed (PASS -> anything else); else 4 when either run
    is incomplete (cut off, a shard missing: its absent cases are no regression, and no evidence
    either); else 0; 2 when a file cannot be read. ``hold(folder)``: a context manager held while
    the page is written there (the command line's folder lock)."""
    baseline, current = Path(baseline), Path(current)
    try:
        base = D.load([baseline], keep=R.verdicts_only)       # what a comparison reads, of every record
        cur = D.load([current], keep=R.verdicts_only)
    except (OSError, ValueError, KeyError) as e:
        print(f"onnx-dml-bench compare: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    cmp = compare(base, cur, by_case=by_case)
    print(text(cmp))
    if json_out is not None:
        json_out = Path(json_out)
        with (hold(json_out.parent) if hold is not None else contextlib.nullcontext()):
            json_out.parent.mkdir(parents=True, exist_ok=True)
            write_text(json_out, comparison_json(cmp))
        print(f"wrote {json_out}")
    if out is None:
        print("compare.html not written: add --out FILE.html (or --out FOLDER) to write the page")
        return _exit_code(cmp)
    # --out: a path ending in .html is the page itself; anything else is a folder for compare.html
    html_path = Path(out) if Path(out).suffix.lower() in (".html", ".htm") else Path(out) / COMPARE_HTML
    out_dir = html_path.parent
    with (hold(out_dir) if hold is not None else contextlib.nullcontext()):
        out_dir.mkdir(parents=True, exist_ok=True)
        report = current.parent / REPORT_HTML
        link = os.path.relpath(report, out_dir) if report.is_file() else None
        write_text(html_path, render_html(cmp, link, out_dir))
    print(f"wrote {html_path}")
    return _exit_code(cmp)


def _exit_code(cmp: Comparison) -> int:
    if cmp.regressions:
        return EXIT_FAIL
    return EXIT_OK if cmp.complete else EXIT_INCOMPLETE
