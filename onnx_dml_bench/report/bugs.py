"""From cases to bugs: every failure of a run grouped by the party at fault (:mod:`.fault`) and its
failure signature (:mod:`~onnx_dml_bench.signature`), one bug per group.

A case counts once per bug: where several lanes' records name one party for a case, the record of
the lane that party is about decides its signature (the direct lane's for DirectML itself, the DML
EP's for its lowering, the CPU EP's for the CPU EP, the EP's own for another EP under test). A
record without an answer (error, crash, hang) is a bug of its own lane ("no answer"). The CPU EP's
known deviations and the cases an EP declined are no bugs (the first screen counts them apart).

Each bug names its example (the smallest case: fewest input elements) and, where triage has
written them beside the results, the shrunk case (``shrunk/<case id>.json``) and the bundle
(``bundle/<case id>/``) of one of its cases, as paths relative to the results' folder. Pure
functions over records, but for :func:`attach_files`, which looks at that folder.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UnsafePath
from ..outdir import BENCH_JSON, BUNDLE_README, RESULTS, bundle_path, shrunk_path
from ..record import CaseRecord, Verdict
from ..safeload import UntrustedFileError, load_file
from ..signature import Signature, signature
from . import fault as FT
from . import fourway as FW

#: the parties whose failures are bugs (the CPU EP's known deviations and refusals are not)
BUG_PARTIES = ("directml", "lowering", "dml-ep", "cpu", "reference", "no-answer")
#: the parties whose bugs the main job shrinks and bundles (DirectML and its EP)
SHRINK_PARTIES = ("directml", "lowering", "dml-ep")
#: the lane whose record decides a case's signature for a party
OWNER = {"directml": FW.DIRECT_EP, "lowering": FW.DML_EP, "dml-ep": FW.DML_EP, "cpu": FT.CPU_EP}
#: where no lane owns the party (the reference): the lanes in this order of preference
LANE_ORDER = (FW.DIRECT_EP, FW.DML_EP, FT.CPU_EP)


@dataclass
class Bug:
    party: str
    ep: str                              # the lane whose records make the bug
    signature: Signature
    cases: list[str] = field(default_factory=list)
    example: str = ""                    # the smallest case of the bug
    env_id: str = ""                     # the example record's environment
    shrunk: str = ""                     # files beside the results, relative to their folder
    shrunk_from: str = ""                # the case the shrunk case was made from
    minimal: str = ""                    # the shrunk case's id and what the shrink did
    shrink_summary: str = ""
    bundle: str = ""
    link: str = ""                       # the upstream reference (an expectations entry's link)

    @property
    def key(self) -> str:
        """What identifies the bug from run to run: party, lane and signature."""
        return f"{self.party} | {self.ep} | {self.signature.text()}"

    @property
    def id(self) -> str:
        return "bug-" + hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:10]

    @property
    def title(self) -> str:
        return FT.party_title(self.party)

    def to_dict(self) -> dict:
        return {"id": self.id, "key": self.key, "party": self.party, "party_title": self.title, "ep": self.ep,
                "signature": self.signature.text(), "signature_fields": self.signature.to_dict(),
                "cases": len(self.cases), "case_ids": list(self.cases), "example": self.example,
                "shrunk": self.shrunk or None, "shrunk_from": self.shrunk_from or None,
                "minimal": self.minimal or None, "shrink_summary": self.shrink_summary or None,
                "bundle": self.bundle or None, "link": self.link or None}


def _elements(rec: CaseRecord) -> int:
    sizes = (rec.descriptor or {}).get("InputSizes") or []
    try:
        return math.prod(int(s) for s in sizes) if sizes else 0
    except (TypeError, ValueError):
        return 0


def _flaky_party(rec: CaseRecord) -> str:
    return {FW.DIRECT_EP: "directml", FW.DML_EP: "dml-ep", FT.CPU_EP: "cpu"}.get(rec.ep, f"ep:{rec.ep}")


def _parties(rec: CaseRecord, blame: FT.Blame) -> list[str]:
    # the CPU EP's own lane that gave no answer (counted apart on the first screen) is that lane's no-answer bug
    ps = ["no-answer" if p == "cpu-no-answer" else p for p in blame.parties]
    ps = list(dict.fromkeys(p for p in ps if p in BUG_PARTIES or p.startswith("ep:")))
    if rec.ep == FT.CPU_EP and blame.known:     # the CPU EP refusing at run time where a known deviation says so
        ps = [p for p in ps if p != "no-answer"]
    if not ps and rec.verdict == Verdict.FLAKY:      # a case that fails on some runs only: its lane's
        ps = [_flaky_party(rec)]
    return ps


def _prefer(party: str, recs: list[CaseRecord]) -> CaseRecord:
    owner = party[3:] if party.startswith("ep:") else OWNER.get(party)
    for r in recs:
        if owner and r.ep == owner:
            return r
    rank = {ep: i for i, ep in enumerate(LANE_ORDER)}
    return min(recs, key=lambda r: (rank.get(r.ep, len(rank)), r.ep))


def group(records: list[CaseRecord], by: dict | None = None, view: dict | None = None, envs=None) -> list[Bug]:
    """The bugs of ``records``: one per (party, lane, signature), most cases first within a party,
    the parties in the first screen's order. ``by``: ``fault.blames`` of the records (computed
    from them, the four-way join ``view`` and ``envs`` when None)."""
    if by is None:
        by = FT.blames(records, view, envs)
    picks: dict[tuple, list[CaseRecord]] = {}
    for r in records:
        b = by.get((r.case_id, r.ep, r.env_id or ""))
        if b is None:
            continue
        for p in _parties(r, b):
            # no answer is the lane's own failure: one lane's error is not another's
            picks.setdefault((p, r.case_id, r.ep if p == "no-answer" else ""), []).append(r)
    bugs: dict[tuple, Bug] = {}
    best: dict[tuple, CaseRecord] = {}
    for (p, case_id, _), recs in picks.items():
        r = _prefer(p, recs)
        sig = signature(r)
        if sig is None:          # a PASS whose CPU side is wrong: the CPU EP's own signature
            sig = Signature(r.op, "CPU_WRONG", r.attribution or r.finding, (), ())
        k = (p, r.ep, sig)
        bug = bugs.setdefault(k, Bug(p, r.ep, sig))
        if case_id not in bug.cases:
            bug.cases.append(case_id)
        if k not in best or (_elements(r), r.case_id) < (_elements(best[k]), best[k].case_id):
            best[k] = r
    order = {p: i for i, p in enumerate(FT._order({k[0] for k in bugs}))}
    out = []
    for k, bug in bugs.items():
        bug.cases.sort()
        bug.example = best[k].case_id
        bug.env_id = best[k].env_id or ""
        out.append(bug)
    out.sort(key=lambda b: (order.get(b.party, 99), -len(b.cases), b.signature.text(), b.ep))
    return out


def attach_files(bugs: list[Bug], folder: Path, links: dict | None = None) -> list[Bug]:
    """Each bug's shrunk case and bundle where triage wrote one for one of its cases beside the
    results in ``folder`` (the example first), and its upstream reference: the first of
    ``links`` (case id -> link, from the expectations entries that list its cases)."""
    results = Path(folder) / RESULTS
    for bug in bugs:
        for cid in [bug.example] + [c for c in bug.cases if c != bug.example]:
            try:
                sp, bp = shrunk_path(results, cid), bundle_path(results, cid)
            except UnsafePath:
                continue
            if not bug.shrunk and sp.is_file():
                bug.shrunk = sp.relative_to(folder).as_posix()
                bug.shrunk_from = cid
                bug.minimal, bug.shrink_summary = _shrunk_text(sp)
            if not bug.bundle and (bp / BUNDLE_README).is_file():
                bug.bundle = bp.relative_to(folder).as_posix()
            if bug.shrunk and bug.bundle:
                break
        if links:       # a web address only (an expectations file is text from elsewhere)
            bug.link = next((str(links[c]) for c in bug.cases
                             if str(links.get(c) or "").startswith(("https://", "http://"))), "")
    return bugs


def _shrunk_text(path: Path) -> tuple[str, str]:
    """(minimal case id, what the shrink did) of a shrunk case file (``triage.write_case``)."""
    try:
        if path.stat().st_size > 4 << 20:
            return "", ""
        doc = json.loads(path.read_text(encoding="utf-8"))
        case = (doc.get("cases") or [{}])[0]
        note = str(case.get("note") or "")
        what = note.split(": ", 1)[1] if ": " in note else note
        return str(case.get("id") or ""), re.sub(r" \(\d+ rounds?, .*\)$", "", what)    # not how long it took
    except (OSError, ValueError, AttributeError, TypeError, IndexError):
        return "", ""


def lines(bugs: list[Bug], limit: int = 12) -> list[str]:
    """The bugs as short plain lines (the terminal): party, cases, signature, the minimal repro."""
    out = []
    for b in bugs[:limit]:
        what = f"{b.title}: {b.signature.text()} — {len(b.cases)} case{'s' if len(b.cases) != 1 else ''}"
        repro = f"; minimal repro {b.bundle}/" if b.bundle else (f"; shrunk {b.shrunk}" if b.shrunk else f"; e.g. {b.example}")
        out.append(what + (f" on {b.ep}" if b.party == "no-answer" else "") + repro + (f"; upstream {b.link}" if b.link else ""))
    if len(bugs) > limit:
        out.append(f"... and {len(bugs) - limit} more bug(s) in the report")
    return out


# ----------------------------------------------------------------------------------------------
# The main job's facts beside the results (bench.json), read by the reports
# ----------------------------------------------------------------------------------------------

FACTS_SCHEMA = "onnx-dml-bench/bench/1"


def read_facts(sources, records: list[CaseRecord]) -> dict:
    """The main job's facts (``bench.json``) beside the first results file of ``sources``: the
    expectations' status per lane, the upstream links of the cases, the shrinking done, what
    changed since the previous run. {} where there is none, it cannot be read, or it is of
    other results (its record count differs: a later ``run`` into the folder)."""
    if not sources:
        return {}
    path = Path(sources[0]).parent / BENCH_JSON
    if not path.is_file():
        return {}
    try:
        doc = load_file(path, what="main job's facts")
    except (UntrustedFileError, OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != FACTS_SCHEMA or doc.get("records") != len(records):
        return {}
    return doc


def of_results(res, by: dict | None = None, view: dict | None = None) -> tuple[list[Bug], dict]:
    """(the bugs of loaded results, with their files and links; the main job's facts)."""
    facts = read_facts(res.sources, res.records)
    bugs = group(res.records, by, view, res.envs)
    if res.sources:
        attach_files(bugs, Path(res.sources[0]).parent, facts.get("links") if isinstance(facts.get("links"), dict) else None)
    return bugs, facts


_PREV_LISTS = ("new_bugs", "fixed_bugs", "changed_bugs", "not_rerun_bugs", "new_cases", "fixed_cases", "changed_cases",
               "new_cases_not_run_before")
_EXP_KEYS = {"lane": "", "file": "", "expected": 0, "unexpected": 0, "fixed": 0, "changed": 0, "stale": 0, "unscoped": 0,
             "note": ""}


def facts_view(facts: dict) -> dict:
    """The facts as the first screen shows them, every field present (a bench.json is a file from
    elsewhere too: what is missing or of another type is empty): previous, expectations, shrinking."""
    prev = facts.get("previous")
    if isinstance(prev, dict):
        p = {"folder": str(prev.get("folder") or "previous"), "generated": str(prev.get("generated") or ""),
             "error": str(prev.get("error") or "")}
        for k in _PREV_LISTS:
            v = prev.get(k)
            p[k] = [str(x) for x in v] if isinstance(v, list) else []
        env = prev.get("environment")
        p["environment"] = [{k: str(e.get(k, "")) for k in ("lane", "key", "before", "after")}
                            for e in (env if isinstance(env, list) else []) if isinstance(e, dict)]
        prev = p
    else:
        prev = None
    exps = []
    for e in facts.get("expectations") or []:
        if isinstance(e, dict):
            d = {k: e.get(k) if isinstance(e.get(k), type(v)) else v for k, v in _EXP_KEYS.items()}
            for k in ("unexpected_cases", "fixed_cases"):
                d[k] = [str(x) for x in e.get(k)] if isinstance(e.get(k), list) else []
            exps.append(d)
    sh = facts.get("shrinking")
    shrinking = None
    if isinstance(sh, dict):
        shrinking = {k: sh.get(k) if isinstance(sh.get(k), (int, float)) and not isinstance(sh.get(k), bool) else 0
                     for k in ("budget_s", "seconds", "bugs", "shrunk", "bundled")}
    return {"previous": prev, "expectations": exps, "shrinking": shrinking}
