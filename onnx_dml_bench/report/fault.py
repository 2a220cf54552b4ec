"""Who is at fault: each failure of a run (or of several lanes merged into one report) given to
the party whose answer is wrong — DirectML itself, the DML EP's lowering of the ONNX graph,
another EP under test, ONNX Runtime's CPU EP, or the reference where two implementations agree
against it — with the CPU EP's known deviations (those its operators declare) counted apart.

Pure functions over :class:`~onnx_dml_bench.record.CaseRecord` and the four-way join
(:mod:`.fourway`); the report's first screen and the ``bench`` command's last lines read them.
Nothing here decides a verdict: a record's verdict, attribution, finding and labels are taken as
recorded.

A case counts once per party, whichever lanes' records name it (the direct lane's and the DML EP
lane's record of one case that DirectML gets wrong are one case of "DirectML itself"); a case can
have two parties (DirectML and the lowering both wrong; the EP under test and the CPU EP both wrong).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..record import CaseRecord, Verdict
from . import fourway as FW
from .data import lane_title, lanes_sorted

CPU_EP = "CPUExecutionProvider"
KNOWN_PREFIX = "known-deviation:"

#: party -> (title, what it means); the order is the report's column order
PARTY_TEXT = {
    "directml": ("DirectML itself",
                 "The descriptor run straight on DirectML.dll (the direct lane, no ONNX Runtime) is outside every "
                 "allowed answer; where the DML EP lane ran the case too, it fails the same way or in another "
                 "way of its own."),
    "lowering": ("DML EP lowering",
                 "DirectML runs the descriptor right, but ONNX Runtime's DML EP gives a wrong answer for the ONNX "
                 "graph of the same case: the EP's lowering of the graph onto DirectML is at fault."),
    "dml-ep": ("DML EP (DirectML or its lowering)",
               "ONNX Runtime's DML EP is outside every allowed answer, and no direct-lane record of the case "
               "tells DirectML itself from the EP's lowering (run --ep dml-direct too)."),
    "ep": ("EP under test",
           "The EP under test is outside every allowed answer."),
    "cpu": ("CPU EP (unexplained)",
            "ONNX Runtime's CPU EP is outside every allowed answer (as the EP under test, or as the second side "
            "of a three-way run), and no known deviation its operator declares explains it: a new finding "
            "against the CPU EP."),
    "reference": ("reference disputed",
                  "Two independent implementations agree bit for bit on an answer outside every allowed behaviour "
                  "of an open point of the documents, or on another answer than a rule of the ONNX text gives, "
                  "where that point or rule concerns the case: the bench's allowed set may be incomplete."),
    "no-answer": ("no answer",
                  "The EP under test gave no outputs to judge: a run-time error (EP_ERROR, ERROR), a worker that "
                  "died (CRASH) or hung (TIMEOUT). Where the CPU EP ran as a lane of its own beside other EPs, its "
                  "cases are not counted here but under the CPU EP."),
    "not-run": ("not run by the EP",
                "The EP or the device declined the case: the session was refused (EP_REJECTED), a node would "
                "have run on the CPU EP (NOT_OFFLOADED), or DirectML reports the data type or feature level "
                "unsupported (NOT_SUPPORTED). A capability statement, not a wrong answer. Where the CPU EP ran as "
                "a lane of its own beside other EPs, its refusals are not counted here but under the CPU EP."),
    "cpu-no-answer": ("CPU EP: not run or no answer",
                      "ONNX Runtime's CPU EP, run as a lane of its own beside the EPs under test, refused the case "
                      "or gave no outputs (EP_REJECTED, EP_ERROR, ERROR, CRASH, TIMEOUT), and no known deviation its "
                      "operator declares explains it. Counted apart from the EPs under test, whose own "
                      "refusals and errors are the columns \"no answer\" and \"not run by the EP\"."),
    "cpu-known": ("CPU EP known deviations",
                  "ONNX Runtime's CPU EP is wrong, or refuses the case, exactly where a known deviation its "
                  "operator declares says it would: counted apart, never mixed into the list of the EPs under test."),
}
#: the parties that are a wrong answer of an implementation (the report's headline)
WRONG = ("directml", "lowering", "dml-ep", "ep", "cpu", "reference")


@dataclass(frozen=True)
class Blame:
    """A record's parties (party keys, ``ep:<name>`` for another EP under test) and the known
    deviations of the CPU EP that explain its CPU side."""
    parties: tuple[str, ...]
    known: tuple[str, ...] = ()


def _known(rec: CaseRecord) -> tuple[str, ...]:
    return tuple(sorted(lab[len(KNOWN_PREFIX):] for lab in rec.labels if lab.startswith(KNOWN_PREFIX)))


def _cpu_party(rec: CaseRecord) -> str:
    return "cpu-known" if _known(rec) else "cpu"


def blame(rec: CaseRecord, fw_class: str | None = None, cpu_apart: bool = False) -> Blame:
    """Who is wrong in one record. ``fw_class``: the four-way class of its case, for the records of
    the two DirectML lanes (None: the case has no record on the other DirectML lane). ``cpu_apart``:
    the CPU EP ran as a lane beside other EPs under test: a record of its lane that has no outputs
    is the CPU EP's ("cpu-no-answer", or "cpu-known" where a known deviation explains it), never
    one of the EPs under test's "no answer" or "not run"."""
    v, att, ep = rec.verdict, rec.attribution, rec.ep
    parties: list[str] = []
    is_cpu = ep == CPU_EP
    cpu_side_wrong = rec.cpu is not None and rec.cpu.verdict == Verdict.FAIL
    if v == Verdict.PASS:
        if rec.finding == "CPU_WRONG" or att == "CPU_WRONG" or (cpu_side_wrong and not is_cpu):
            parties.append(_cpu_party(rec))
    elif v == Verdict.FAIL:
        if att == "REFERENCE_DISPUTED" or fw_class == "REFERENCE_DISPUTED":
            parties.append("reference")
        elif is_cpu:
            parties.append(_cpu_party(rec))
        elif ep == FW.DIRECT_EP:
            parties.append("directml")
        elif ep == FW.DML_EP:
            parties += {"DIRECTML_WRONG": ["directml"], "DIRECTML_AND_EP_WRONG": ["directml", "lowering"],
                        "EP_LOWERING_WRONG": ["lowering"]}.get(fw_class or "", ["dml-ep"])
        else:
            parties.append(f"ep:{ep}")
        if not is_cpu and "reference" not in parties and (att == "BOTH_WRONG" or cpu_side_wrong):
            parties.append(_cpu_party(rec))
    elif v in Verdict.ERRORS or v in Verdict.NOT_TAKEN or v == Verdict.NOT_SUPPORTED:
        # a case the CPU EP refuses (at its session or at run time) where a declared deviation says so
        # is a known deviation; the CPU lane's other refusals are its own where it is not the only lane
        if is_cpu and v in Verdict.REFUSED and _known(rec):
            parties.append("cpu-known")
        elif is_cpu and cpu_apart:
            parties.append("cpu-no-answer")
        else:
            parties.append("no-answer" if v in Verdict.ERRORS else "not-run")
    return Blame(tuple(parties), _known(rec))


def party_title(key: str) -> str:
    if key.startswith("ep:"):
        return key[3:].removesuffix("ExecutionProvider") + " (EP under test)"
    return PARTY_TEXT[key][0]


def party_text(key: str) -> str:
    return PARTY_TEXT["ep" if key.startswith("ep:") else key][1]


def _order(keys) -> list[str]:
    fixed = [k for k in PARTY_TEXT if k != "ep"]
    others = sorted(k for k in keys if k.startswith("ep:"))
    head = [k for k in fixed if k in ("directml", "lowering", "dml-ep")]
    tail = [k for k in fixed if k not in head]
    return [k for k in head + others + tail if k in keys]


def blames(records: list[CaseRecord], view: dict | None = None, envs=None) -> dict[tuple[str, str, str], Blame]:
    """(case id, EP, environment) -> :class:`Blame` of every record; ``view``: the four-way join of
    the records (computed from them and their environments ``envs`` when None)."""
    if view is None:
        view = FW.join(records, envs)
    classes = FW.classes(view)
    apart = cpu_apart({r.ep for r in records})
    return {(r.case_id, r.ep, r.env_id or ""): blame(r, FW.class_of(classes, r), apart) for r in records}


def cpu_apart(lanes) -> bool:
    """Whether the CPU EP's lane is a second opinion beside other EPs under test (its refusals and
    errors counted apart), not the only EP under test."""
    return CPU_EP in lanes and bool(set(lanes) - {CPU_EP})


def summary(records: list[CaseRecord], view: dict | None = None, by: dict | None = None, envs=None) -> dict:
    """The first screen's data: per operator the cases of each party, the totals, the CPU EP's
    known deviations apart (per deviation: cases with a wrong answer, cases refused), the lanes,
    and what the headline says. ``by``: :func:`blames` of the records (computed when None)."""
    if by is None:
        by = blames(records, view, envs)
    cases: dict[tuple[str, str], set] = {}          # (op, party) -> case ids
    known: dict[str, dict] = {}
    lanes = sorted({r.ep for r in records})
    party_lanes: dict[str, set] = {}                 # party -> the lanes whose records count in it
    for r in records:
        b = by[(r.case_id, r.ep, r.env_id or "")]
        for p in b.parties:
            cases.setdefault((r.op, p), set()).add(r.case_id)
            party_lanes.setdefault(p, set()).add(r.ep)
        if b.known:     # a deviation of the CPU EP seen on this record: a wrong answer, or a refusal
            wrong = "cpu-known" in b.parties and r.verdict not in Verdict.REFUSED
            for k in b.known:
                d = known.setdefault(k, {"key": k, "ops": set(), "wrong": set(), "refused": set()})
                d["ops"].add(r.op)
                d["wrong" if wrong else "refused"].add(r.case_id)
    present = {p for _, p in cases}
    dml_lanes = {FW.DIRECT_EP, FW.DML_EP} & set(lanes)
    if FW.DIRECT_EP in dml_lanes:
        present.add("directml")
    if dml_lanes == {FW.DIRECT_EP, FW.DML_EP}:
        present.add("lowering")
    elif FW.DML_EP in dml_lanes:
        present.add("dml-ep")
    for ep in lanes:
        if ep not in (FW.DIRECT_EP, FW.DML_EP, CPU_EP):
            present.add(f"ep:{ep}")
    present |= {"cpu", "reference"}
    parties = _order(present)
    ops = sorted({r.op for r in records})
    rows = [{"op": op, "counts": {p: len(cases.get((op, p), ())) for p in parties}} for op in ops]
    totals = {p: len(set().union(*[cases.get((op, p), set()) for op in ops])) if ops else 0 for p in parties}
    return {
        "lanes": lanes,
        "directml": bool(dml_lanes),
        "parties": [{"key": p, "title": party_title(p), "text": party_text(p), "wrong": p in WRONG or p.startswith("ep:"),
                     "lanes": [lane_title(e) for e in lanes_sorted(party_lanes.get(p, ()))]}
                    for p in parties],
        "rows": rows,
        "totals": totals,
        "by_op": {p: [(op, len(cases[(op, p)])) for op in ops if cases.get((op, p))] for p in parties},
        "known": sorted(({"key": d["key"], "ops": sorted(d["ops"]), "wrong": len(d["wrong"]),
                          "refused": len(d["refused"] - d["wrong"])} for d in known.values()),
                        key=lambda d: (-(d["wrong"] + d["refused"]), d["key"])),
        "cases": len({r.case_id for r in records}),
    }


def headline(s: dict, where: str = "below") -> list[str]:
    """The first screen's sentences (plain text): who is wrong, how often, where (``where``: where
    the known deviations are listed, from the reader's point of view)."""
    t = s["totals"]

    listed = where

    def where(p: str) -> str:
        parts = [f"{op} {n}" for op, n in sorted(s["by_op"].get(p, []), key=lambda x: (-x[1], x[0]))]
        return f" ({', '.join(parts)})" if parts else ""

    def cases(n: int) -> str:
        return f"{n} case{'s' if n != 1 else ''}"

    out = []
    wrong = [p for p in s["parties"] if p["wrong"] and p["key"] not in ("cpu", "reference")]
    if wrong:
        out.append("; ".join(f"{p['title']}: {cases(t[p['key']])}{where(p['key'])}" for p in wrong) + ".")
    known_n = t.get("cpu-known", 0)
    cpu = f"ONNX Runtime's CPU EP: {cases(t.get('cpu', 0))} wrong beyond its known deviations{where('cpu')}"
    if known_n:
        cpu += f"; {cases(known_n)} where a known deviation its operators declare explains the CPU EP (listed apart {listed})"
    if t.get("cpu-no-answer"):
        cpu += (f"; {cases(t['cpu-no-answer'])} its own lane did not run or answer, no known deviation explaining it"
                f"{where('cpu-no-answer')}")
    out.append(cpu + ".")
    out.append(f"Reference disputed: {cases(t.get('reference', 0))}{where('reference')}."
               + (f" No answer (error, crash, timeout): {cases(t['no-answer'])}{where('no-answer')}."
                  if t.get("no-answer") else ""))
    return out


def why_expected(rec: CaseRecord, b: Blame, deviations: dict[str, dict]) -> str:
    """Why a failing record is expected, for an expectations file: the party at fault and the
    record's reason, and for the CPU EP the text of each known deviation that explains it
    (``deviations``: key -> {"kind", "summary"}, the operators' declarations)."""
    parts = []
    for p in b.parties:
        if p == "cpu-known":
            for k in b.known:
                d = deviations.get(k, {})
                parts.append(f"the CPU EP's known deviation {k} ({d.get('kind', '?')}): {d.get('summary', '')}")
        elif p == "cpu":
            parts.append("the CPU EP, unexplained: " + ((rec.cpu.reason if rec.cpu and rec.cpu.reason else rec.reason) or rec.verdict))
        else:
            parts.append(f"{party_title(p)}: {rec.reason or rec.verdict}")
    return "; ".join(parts) or (rec.reason or rec.verdict)
