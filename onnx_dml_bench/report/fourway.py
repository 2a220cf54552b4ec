"""Four-way attribution: the ``dml`` lane (ONNX Runtime's DirectML EP, with ONNX Runtime's CPU EP
beside it) joined with the ``dml-direct`` lane (the descriptor on DirectML.dll itself) by case id,
each judged against the reference. For every case both lanes ran, one class says who is wrong:
DirectML itself, the DML EP's lowering of the ONNX graph, the CPU EP, or the reference (a point
the DirectML pages leave open). Pure functions over :class:`~onnx_dml_bench.record.CaseRecord`.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from .. import results as R
from ..record import CaseRecord, Environment, Verdict

DIRECT_EP = "DirectML"                 # the dml-direct lane's ep
DML_EP = "DmlExecutionProvider"        # the dml lane's ep

#: classes, in the order reports list them
CLASS_TEXT = {
    "ALL_AGREE": "DirectML, the DML EP (and the CPU EP) all agree with the reference.",
    "DIRECTML_WRONG": "DirectML itself differs from the reference; the DML EP fails the same way, or was not "
                      "compared (e.g. ONNX cannot express the descriptor).",
    "DIRECTML_WRONG_EP_RIGHT": "DirectML itself differs from the reference, but the DML EP's graph gives the "
                               "reference's answer (its lowering avoids the DirectML fault).",
    "DIRECTML_AND_EP_WRONG": "DirectML differs from the reference and the DML EP differs in another way: "
                             "a DirectML fault and a lowering fault.",
    "EP_LOWERING_WRONG": "DirectML runs the descriptor right; the DML EP's ONNX graph gives a wrong answer: "
                         "ONNX Runtime's DML EP lowering is at fault.",
    "CPU_EP_WRONG": "DirectML and the DML EP agree with the reference; ONNX Runtime's CPU EP does not.",
    "REFERENCE_DISPUTED": "On a point the DirectML pages leave open, two independent implementations (the DML EP "
                          "and the CPU EP, or DirectML and the CPU EP) agree against the reference: the "
                          "reference's policy is disputed, not an implementation.",
    "EP_NOT_COMPARED": "DirectML agrees with the reference; the DML EP lane gave no outputs to compare "
                       "(refused, not offloaded, not expressible, error, crash).",
    "DIRECT_NOT_COMPARED": "The DML EP lane compared outputs; the direct lane did not (DirectML refused the "
                           "descriptor, reports it unsupported, error, crash).",
    "NEITHER_COMPARED": "Neither lane has outputs to compare.",
}
CLASSES = tuple(CLASS_TEXT)


@dataclass
class FourWay:
    case_id: str
    op: str
    dtype: str
    cls: str
    directml: str          # the direct lane's verdict
    ep: str                # the dml lane's verdict
    cpu: str               # the dml lane's CPU side verdict ("" when none)
    note: str = ""
    variant: str = ""      # where a lane ran in several environments: the one both records share ("DirectML.dll 1.15.4.0")
    direct_env: str = ""   # with a variant: the env_id of each record
    ep_env: str = ""

    def line(self) -> str:
        return (f"four-way: {self.cls} — DirectML {self.directml}, DML EP {self.ep}"
                + (f", CPU EP {self.cpu}" if self.cpu else "") + (f" ({self.note})" if self.note else "")
                + (f" [{self.variant}]" if self.variant else ""))


def signature(outputs: dict) -> tuple:
    """How a side fails: its failing outputs, their mismatch counts and first mismatches."""
    return tuple(sorted((name, o.mismatches, tuple((str(f.get("index")), str(f.get("got"))) for f in o.first))
                        for name, o in outputs.items() if not o.match))


def _disputed(direct: CaseRecord, ep: CaseRecord | None) -> bool:
    """Two independent implementations agree against the reference on an open point of the pages:
    the dml lane's EP and CPU EP (its attribution says so), or DirectML and the CPU EP (the same
    failure). DirectML agreeing with the DML EP is no such evidence: the EP runs DirectML."""
    if ep is None:
        return False
    if ep.verdict == "FAIL" and ep.attribution == "REFERENCE_DISPUTED":
        return True
    points = direct.open_points or ep.open_points
    return bool(points and direct.verdict == "FAIL" and ep.cpu is not None and ep.cpu.verdict == "FAIL"
                and signature(direct.outputs) == signature(ep.cpu.outputs))


def _cpu_wrong(ep: CaseRecord | None) -> bool:
    return ep is not None and ep.cpu is not None and ep.cpu.verdict == "FAIL"


def _ep_ok(ep: CaseRecord) -> bool:
    """The EP's own outputs match (a PASS, or a FAIL that is only the CPU side's)."""
    return ep.verdict == "PASS" or (ep.verdict == "FAIL" and ep.attribution == "CPU_WRONG")


def classify(direct: CaseRecord, ep: CaseRecord | None) -> FourWay:
    """The class of one case from its direct-lane record and its dml-lane record (None: absent)."""
    ev = ep.verdict if ep is not None else "absent"
    cpu = (ep.cpu.verdict or "") if ep is not None and ep.cpu is not None else ""
    fw = FourWay(direct.case_id, direct.op, direct.dtype, "", direct.verdict, ev, cpu)
    d_cmp, e_cmp = direct.verdict in Verdict.COMPARED, ep is not None and ep.verdict in Verdict.COMPARED
    if not d_cmp:
        fw.cls = "DIRECT_NOT_COMPARED" if e_cmp else "NEITHER_COMPARED"
    elif _disputed(direct, ep if e_cmp else None):
        fw.cls = "REFERENCE_DISPUTED"
    elif direct.verdict == "FAIL":
        fw.cls = _direct_failed(direct, ep if e_cmp else None)
    elif not e_cmp:
        fw.cls = "EP_NOT_COMPARED"
    elif not _ep_ok(ep):
        fw.cls = "EP_LOWERING_WRONG"
    else:
        fw.cls = "CPU_EP_WRONG" if _cpu_wrong(ep) else "ALL_AGREE"
    fw.note = _note(fw, direct, ep)
    return fw


def _note(fw: FourWay, direct: CaseRecord, ep: CaseRecord | None) -> str:
    notes = []
    if fw.cls not in ("ALL_AGREE", "CPU_EP_WRONG") and _cpu_wrong(ep):
        notes.append("the CPU EP differs from the reference too")
    points = sorted(set(direct.open_points) | set(ep.open_points if ep is not None else ()))
    if points and fw.cls != "REFERENCE_DISPUTED" and "FAIL" in (fw.directml, fw.ep):
        notes.append("on open point(s) " + ", ".join(points) + ", outside every allowed answer")
    return "; ".join(notes)


def _direct_failed(direct: CaseRecord, ep: CaseRecord | None) -> str:
    if ep is None:
        return "DIRECTML_WRONG"
    if _ep_ok(ep):
        return "DIRECTML_WRONG_EP_RIGHT"
    return "DIRECTML_WRONG" if signature(direct.outputs) == signature(ep.outputs) else "DIRECTML_AND_EP_WRONG"


def join(records: list[CaseRecord], envs: list[Environment] | None = None) -> dict | None:
    """The four-way view of a merged set of records; None unless both lanes are present.
    {"counts": {class: n}, "rows": [FourWay] (cases both lanes ran), "matrix": [{op, dtype, counts}],
     "direct_only": n, "ep_only": n}

    With ``envs`` (the records' environments), a lane that ran in several environments (two
    DirectML.dll builds) is paired environment by environment: a case of the direct lane on
    DirectML.dll X meets the same case of the dml lane on X (``results.matching``), never a
    record of another build."""
    keys, values = [], {}
    if envs:
        keys, values = R.matching([[e for e in envs if e.ep == DIRECT_EP], [e for e in envs if e.ep == DML_EP]])

    def key(r):
        return (r.case_id, values.get(r.env_id, ()) if keys else ())

    direct = {key(r): r for r in records if r.ep == DIRECT_EP}
    ep = {key(r): r for r in records if r.ep == DML_EP}
    if not direct or not ep:
        return None
    rows = []
    for k in sorted(direct, key=str):
        if k in ep:
            fw = classify(direct[k], ep[k])
            if keys:
                fw.variant = ", ".join(f"{n.split('.', 1)[-1]} {json.loads(v) if v else '?'}" for n, v in zip(keys, k[1]))
                fw.direct_env, fw.ep_env = direct[k].env_id or "", ep[k].env_id or ""
            rows.append(fw)
    counts = Counter(fw.cls for fw in rows)
    cells: dict = {}
    for fw in rows:
        cells.setdefault((fw.op, fw.dtype), Counter())[fw.cls] += 1
    return {
        "counts": {c: counts[c] for c in CLASSES if counts[c]},
        "rows": rows,
        "matrix": [{"op": op, "dtype": dt, "counts": {c: n[c] for c in CLASSES if n[c]}, "total": sum(n.values())}
                   for (op, dt), n in sorted(cells.items())],
        "direct_only": len(set(direct) - set(ep)),
        "ep_only": len(set(ep) - set(direct)),
    }


def summary(view: dict | None) -> dict | None:
    """The JSON-safe part of :func:`join` for summary.json (every case that is not ALL_AGREE listed)."""
    if view is None:
        return None
    return {"lanes": {"directml": DIRECT_EP, "ep": DML_EP}, "classes": CLASS_TEXT, "counts": view["counts"],
            "matrix": view["matrix"], "direct_only": view["direct_only"], "ep_only": view["ep_only"],
            "cases": [vars(fw) for fw in view["rows"] if fw.cls != "ALL_AGREE"]}


def lines(view: dict | None) -> dict:
    """case id -> the one line each case's detail shows; (case id, env_id) -> it, for both records
    of a row paired by environment (a lane in several environments)."""
    out: dict = {}
    for fw in (view["rows"] if view else ()):
        if fw.variant:
            out[(fw.case_id, fw.direct_env)] = out[(fw.case_id, fw.ep_env)] = fw.line()
        else:
            out[fw.case_id] = fw.line()
    return out
