"""Loading result files for the reports and the counts every report shares.

Everything here reads verdicts, attributions and statistics from the records as they are; nothing
decides or changes a verdict.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from decimal import Decimal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import crossdevice, registry
from .. import results as R
from ..compare import LABEL_TEXT as DIFFERENCE_TEXT
from ..lanes.base import VARIANT_LABEL, VARIANT_LABEL_TEXT
from ..ops.base import Field
from ..record import (ATTRIBUTIONS, FINDINGS, PLACEMENT_LABEL, PLACEMENT_LABEL_TEXT, RERUN_LABEL, RERUN_LABEL_TEXT,
                      VERDICTS, CaseRecord, Environment, Verdict, jsonable)
from ..verdict import NO_KERNEL_LABEL, NO_KERNEL_LABEL_TEXT



def _agreement() -> str:
    """How a PASS agrees with the reference, per operator (``Operator.exactness``), operators named
    by their ONNX op: "bit for bit for MaxPool, ...; within the error bound ... for AveragePool"."""
    ways: dict[str, list[str]] = {}
    for op in registry.OPERATORS.values():
        names = ways.setdefault(op.exactness, [])
        if op.onnx_ops[0] not in names:
            names.append(op.onnx_ops[0])
    return "; ".join(f"{how} for {', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else f"{how} for {names[0]}"
                     for how, names in ways.items())


VERDICT_TEXT = {
    "PASS": "Every output of the EP under test is an answer the documents allow, and every node ran on it: "
            + _agreement() + "; indices equal or a tie resolved in another order; where the case touches an open "
            "point, any allowed answer (the labels ep-took / cpu-took name it).",
    "FAIL": "The case ran on the EP under test (placement proven) and at least one output differs "
            "from the reference. The attribution says who disagrees with the reference. A case that "
            "failed in a session shared with other cases failed alone too.",
    "FLAKY": "Identical runs of the case (--repeat, or its shared session run again) got different "
             "verdicts; the statistics are those of the first run that did not pass.",
    "NOT_OFFLOADED": "At least one node of the case would run on another EP (usually the CPU EP): "
                     "the EP under test did not run it, so nothing was compared. Not a pass.",
    "EP_REJECTED": "The EP (or ONNX Runtime for it) refused the model or the session; the reason "
                   "quotes its message. A node that no EP of the session has a kernel for is a refusal "
                   "too (reason \"no kernel on any EP\", label no-kernel), never NOT_OFFLOADED.",
    "EP_ERROR": "The EP accepted the case (its session was created, its nodes placed) and then failed "
                "while running it: a defect of the EP on a valid case (e.g. a kernel that refuses a "
                "batch size at run time). The reason quotes the EP's status text.",
    "ERROR": "The case could not be checked: it is invalid, it could not be built, the reference or "
             "the bench's own machinery failed (results written before EP_ERROR existed also record "
             "an EP's run-time failure as ERROR). The reason holds the raw text.",
    "CRASH": "The worker process died while running this case (isolated by splitting its batch).",
    "TIMEOUT": "No answer within the time limit; the worker was stopped.",
    "NOT_EXPRESSIBLE": "The DirectML descriptor cannot be requested by any ONNX graph at this opset "
                       "(counted in coverage, never dropped).",
    "NOT_SUPPORTED": "The device under test says it cannot run this descriptor: DirectML's own answer "
                     "(IDMLDevice::CheckFeatureSupport: data type unsupported, or a feature level above "
                     "the device's maximum) on the direct DirectML lane. Counted, never run.",
}
ATTRIBUTION_TEXT = {
    "EP_WRONG": "FAIL: the EP under test is outside every allowed answer, while ONNX Runtime's CPU EP "
                "agrees with one (or there was no CPU side, or the CPU EP is the EP under test).",
    "CPU_WRONG": "PASS of the EP under test, but the CPU EP is outside every allowed answer: a finding "
                 "against the CPU EP (counted in the findings; --fail-on CPU_WRONG gates on it).",
    "BOTH_WRONG": "FAIL: the EP under test and the CPU EP are both outside every allowed answer, and either "
                  "they differ from each other, or they agree bit for bit on a failing output that no open point "
                  "of the documents and no rule of the ONNX text concerns (two implementations sharing one wrong "
                  "answer where the documents leave nothing open).",
    "REFERENCE_DISPUTED": "FAIL: the EP under test and the CPU EP agree bit for bit on an answer outside "
                          "every allowed behaviour of an open point of the documentation (NaN, signed "
                          "zeros, rounding of halves, overflow), or outside the answer of a rule of the "
                          "ONNX text, that concerns the failing output: two implementations against the "
                          "bench's allowed set, which may be incomplete.",
}
FINDING_TEXT = {
    "BATCH_DEPENDENT": "The case failed in every run of a session shared with other cases and passed in "
                       "every run alone (its own model and session): state leaks between the nodes of one "
                       "session. Its verdict is the alone runs'; --fail-on lists it by default.",
    "NONDETERMINISTIC": "Identical runs of one session (--repeat) gave outputs that differ bit for bit.",
    "CPU_WRONG": "The EP under test passed; the CPU EP is outside every allowed answer.",
    "EP_CPU_DIFFER": "Both passed, each with an allowed answer, but their outputs differ bit for bit "
                     "(another open-point alternative, or another rounding within the error bound).",
    "DEVICE_DIFFERS": "Devices of the same model, driver and build ran the case (run --devices ... --same-cases, "
                      "or several hosts' results merged) and this device's verdict or outputs differ bit for bit "
                      "from its siblings' (the devices out of the strict majority; every one where there is none): "
                      "a faulty unit, or a driver or firmware difference. --fail-on lists it by default.",
}

#: keys of an environment record shown in the fixed part of its header block
ENV_HEADER = (
    ("os", "OS"), ("cpu", "CPU"), ("device", "GPU / adapter"), ("adapter", "Adapter"),
    ("driver", "Driver"), ("ort", "ONNX Runtime"), ("ep", "Execution provider"),
    ("ep_package", "EP package"), ("ep_options", "EP options"), ("bench", "Bench version"),
    ("profile", "Profile"), ("opset_mode", "Opsets"), ("optimization", "Graph optimisation"),
    ("seed_policy", "Seed"), ("started", "Date"), ("machine", "Machine"), ("python", "Python"),
    ("three_way", "Three-way (CPU EP side)"), ("total_cases", "Cases in the run"),
)
_ENV_CONSUMED = {"record", "schema", "env_id", "not_expressible", "ort_package", "ort_version",
                 "bench_version", "git_revision", "nan_policy"} | {k for k, _ in ENV_HEADER}


@dataclass
class Results:
    """The records of one or more result files, joined like ``results.merge`` does: one record per
    (case, environment), so runs of one EP in two environments (two DirectML.dll builds) stay two."""
    sources: list[Path]
    envs: list[Environment]
    records: list[CaseRecord]
    eps: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)     # cut-off last lines skipped (allow_partial)
    #: whether the records are every case their runs selected (results.completeness)
    completeness: R.Completeness | None = None

    @property
    def incomplete(self) -> list[str]:
        """One line per part of a run that is cut off or missing; empty when whole."""
        return list(self.completeness.missing) if self.completeness is not None else []

    @property
    def multi_ep(self) -> bool:
        return len(self.eps) > 1

    def lane(self, rec: CaseRecord) -> str:
        """The record's EP, and what tells its environment apart where several share the EP
        (``DirectML (DirectML.dll 1.15.4.0)``): the column of the matrix, the JUnit suite."""
        return self._lanes.get(rec.env_id) or rec.ep or ""

    def env_lane(self, env: Environment) -> str:
        return self._lanes.get(env.env_id) or env.ep

    def __post_init__(self):
        self._lanes = R.env_labels(self.envs)
        if not self.eps:
            self.eps = sorted({r.ep for r in self.records} | ({e.ep for e in self.envs} if not self.records else set()))


def load(paths: Iterable[Path | str], *, allow_partial: bool = False, keep=None) -> Results:
    """Read result JSONL files (plain, gzipped or xz), each once. Several files are joined: one
    environment per env_id, the last record per (case, environment). ``allow_partial``: a cut-off
    last line is skipped and named in ``Results.partial``; ``keep``: see ``results.read``."""
    paths = [Path(p) for p in paths]
    reads = [R.read(p, allow_partial=allow_partial, keep=keep) for p in paths]
    envs, recs = R.combine(reads)
    crossdevice.flag(envs, recs)        # devices of several files (hosts) compared too
    recs.sort(key=lambda r: (r.ep, r.op, r.dtype, r.case_id, r.env_id or ""))
    return Results(paths, envs, recs, partial=[x.partial for x in reads if x.partial],
                   completeness=R.completeness(reads))


# ----------------------------------------------------------------------------------------------
# Counts
# ----------------------------------------------------------------------------------------------

def totals(recs: list[dict]) -> dict[str, int]:
    c = Counter(r.verdict for r in recs)
    return {v: c[v] for v in ordered_verdicts(c)}


def ordered_verdicts(names: Iterable[str]) -> list[str]:
    names = set(names)
    known = [v for v in VERDICTS if v in names]
    return known + sorted(str(v) for v in names - set(VERDICTS))


def matrix(recs: list, lane=None) -> list[dict]:
    """Rows of (EP, op, dtype) with verdict counts and EP-vs-CPU finding counts, sorted.
    ``lane`` (``Results.lane``): the "ep" of a record's row, so that environments of one EP are
    counted apart."""
    rows: dict = {}
    found: dict = {}
    for r in recs:
        key = (lane(r) if lane is not None else r.ep or "", r.op or "", r.dtype or "")
        rows.setdefault(key, Counter())[r.verdict] += 1
        for f in r.findings:
            found.setdefault(key, Counter())[f] += 1
    out = []
    for key, cnt in sorted(rows.items()):
        ep, op, dt = key
        out.append({"ep": ep, "op": op, "dtype": dt, "counts": {v: cnt[v] for v in ordered_verdicts(cnt)},
                    "total": sum(cnt.values()), "findings": dict(found.get(key, {}))})
    return out


def finding_counts(recs: list) -> dict[str, int]:
    """Findings (record.FINDINGS) over the records, whatever their verdicts (every finding of a
    record, ``CaseRecord.findings``)."""
    c = Counter(f for r in recs for f in r.findings)
    return {f: c[f] for f in FINDINGS if c[f]}


def runs_text(runs) -> str:
    """One line on how a verdict was reached over several runs (``record.Runs``)."""
    parts = []
    where = f"a session shared with {runs.batch_size - 1} other case{'s' if runs.batch_size != 2 else ''}" \
        if runs.batch_size > 1 else "its own session"
    if runs.batch:
        parts.append(f"{where}: {', '.join(runs.batch)}" + (f" ({runs.repeat} runs per session)" if runs.repeat > 1 else ""))
    if runs.alone is not None:
        parts.append(f"alone: {', '.join(runs.alone)}")
    if runs.differ:
        parts.append("outputs differ between runs: " + ", ".join(f"{k} {n}" for k, n in runs.differ.items()))
    if runs.note:
        parts.append(runs.note)
    if runs.batch_reason:
        parts.append(f"in the shared session: {runs.batch_reason}")
    return "; ".join(parts)


def attribution_counts(recs: list[dict]) -> dict[str, int]:
    c = Counter(r.attribution for r in recs if r.attribution)
    return {a: c[a] for a in list(ATTRIBUTIONS) + sorted(set(c) - set(ATTRIBUTIONS)) if c[a]}


def label_counts(recs: list[dict]) -> dict[str, int]:
    c = Counter(lab for r in recs for lab in r.labels)
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


# ----------------------------------------------------------------------------------------------
# Lanes: how the report names them
# ----------------------------------------------------------------------------------------------

#: a lane (its records' ``ep``) as every section of the report names it, in the order they list lanes
LANE_TITLES = {"DirectML": "DirectML (direct)", "DmlExecutionProvider": "DML EP", "CPUExecutionProvider": "CPU EP"}


def lane_title(ep: str) -> str:
    """``DirectML (direct)`` (the descriptor on DirectML.dll), ``DML EP``, ``CPU EP``, ``CUDA EP``..."""
    return LANE_TITLES.get(ep) or (ep.removesuffix("ExecutionProvider") + " EP" if ep.endswith("ExecutionProvider") else ep)


def lane_order(ep: str) -> int:
    """The DirectML lanes first, the CPU EP (the second opinion) last."""
    return {"DirectML": 0, "DmlExecutionProvider": 1, "CPUExecutionProvider": 9}.get(ep, 5)


def lanes_sorted(eps) -> list[str]:
    return sorted(eps, key=lambda e: (lane_order(e), e))


# ----------------------------------------------------------------------------------------------
# Labels: groups and what each says, from the declarations of the operators and the comparison
# ----------------------------------------------------------------------------------------------

#: label groups in the order the legend lists them: (key, title, what the group is)
LABEL_GROUPS = (
    ("known-deviation", "Known deviations of ONNX Runtime's CPU EP",
     "Where the CPU EP fails (under test, or as the second side), the deviations from the ONNX specification that "
     "its operator declares and that match the case. A label never changes a verdict."),
    ("open-point", "Open points",
     "The case touches a point the DirectML pages or the ONNX text leave open: every allowed answer passes "
     "(on a FAIL, the answer is outside all of them)."),
    ("rule", "Rules",
     "The case's graph touches a point where a document's text is terse or contradicts itself, and every "
     "implementation is held to one reading (the one the implementations and the document's own tests agree "
     "on): one allowed answer."),
    ("took", "Allowed answers taken",
     "Which allowed answer of an open point a side gave, where it is not the reference's: ep-took for the EP "
     "under test, cpu-took for the CPU EP."),
    ("finding", "EP-vs-CPU findings", "Differences between the EP under test and the CPU EP, whatever the verdict."),
    ("difference", "What differs", "How an output differs from the reference."),
    ("lane", "Lanes", "What a lane did with the case."),
    ("other", "Other labels", ""),
)


def deviation_texts() -> dict[str, dict]:
    """known-deviation key -> {op, who, kind, summary}, from every registered operator's declarations."""
    out = {}
    for op in registry.OPERATORS.values():
        for d in op.deviations():
            out.setdefault(d.key, {"op": op.key, "who": d.who, "kind": d.kind, "summary": d.summary})
    return out


#: what a lane's own labels say (where each is declared)
LANE_LABEL_TEXT = {VARIANT_LABEL: VARIANT_LABEL_TEXT, NO_KERNEL_LABEL: NO_KERNEL_LABEL_TEXT, RERUN_LABEL: RERUN_LABEL_TEXT,
                   PLACEMENT_LABEL: PLACEMENT_LABEL_TEXT}


def label_group(label: str) -> str:
    if label.startswith("known-deviation:"):
        return "known-deviation"
    if label.startswith("open-point:"):
        return "open-point"
    if label.startswith("rule:"):
        return "rule"
    if label.startswith(("ep-took:", "cpu-took:")):
        return "took"
    if label.startswith("finding:"):
        return "finding"
    if label in DIFFERENCE_TEXT:
        return "difference"
    if label in LANE_LABEL_TEXT:
        return "lane"
    return "other"


def label_legend(recs: list) -> dict[str, dict]:
    """label -> {"group", "count", "texts": {operator or "": text}} for every label of ``recs``.
    The texts are the declarations' own: a known deviation's summary, an open point's text per
    operator (``Operator.open_point_texts``), a finding's and a comparison label's definition; an
    allowed answer taken names the open points of the cases that took it."""
    devs = deviation_texts()
    ops = registry.OPERATORS
    counts = Counter(lab for r in recs for lab in r.labels)
    took_points: dict[str, set] = {}
    op_of: dict[str, set] = {}
    for r in recs:
        for lab in r.labels:
            op_of.setdefault(lab, set()).add(r.op)
            if lab.startswith(("ep-took:", "cpu-took:")):
                took_points.setdefault(lab, set()).update(r.open_points)
    out = {}
    for lab, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        group, texts = label_group(lab), {}
        key = lab.split(":", 1)[1] if ":" in lab else lab
        if group == "known-deviation":
            d = devs.get(key)
            if d:
                texts[d["op"]] = f"{d['summary']} ({d['who']}, {d['kind']})"
        elif group in ("open-point", "rule"):
            for o in sorted(op_of.get(lab, ())):
                t = getattr(ops.get(o), "open_point_texts", {}).get(key)
                if t:
                    texts[o] = t
        elif group == "took":
            side = "The EP under test" if lab.startswith("ep-took:") else "The CPU EP"
            points = ", ".join(sorted(took_points.get(lab, ()))) or "an open point"
            texts[""] = (f"{side} gave the allowed answer '{key}' where the case touches {points}, not the "
                         f"reference's own: allowed, so not a failure (see the open points' texts).")
        elif group == "finding":
            texts[""] = FINDING_TEXT.get(key, "")
        elif group == "difference":
            texts[""] = DIFFERENCE_TEXT[lab]
        elif group == "lane":
            texts[""] = LANE_LABEL_TEXT[lab]
        out[lab] = {"group": group, "count": n, "texts": texts}
    return out


def not_expressible(res: Results) -> dict:
    """The capabilities the environments list as not expressible, and the NOT_EXPRESSIBLE cases."""
    caps, seen = [], set()
    for e in res.envs:
        for n in e.not_expressible:
            key = (n.get("op"), n.get("capability"), n.get("data_type"), n.get("feature_level"))
            if key not in seen:
                seen.add(key)
                caps.append({k: n.get(k) for k in ("op", "capability", "data_type", "feature_level", "reason")})
    cases = [{"case_id": r.case_id, "op": r.op, "dtype": r.dtype, "opset": r.opset,
              "ep": r.ep, "reason": r.reason}
             for r in res.records if r.verdict == Verdict.NOT_EXPRESSIBLE]
    return {"capabilities": caps, "cases": cases}


# ----------------------------------------------------------------------------------------------
# Descriptors
# ----------------------------------------------------------------------------------------------

def value_text(v: Any) -> str:
    """A descriptor value as C-like text: lists as {1, 2}, structs as {Height = 2, Width = 2}."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if v is None:
        return "nullptr"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(value_text(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {value_text(x)}" for k, x in v.items()) + "}"
    return str(v)


# ----------------------------------------------------------------------------------------------
# The DirectML struct of a case (the detail panel's "DirectML descriptor")
# ----------------------------------------------------------------------------------------------

def js_number(v: float) -> str:
    """A number as JavaScript's String(v) writes it (the struct text has always been written so)."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "0"
    sign = "-" if v < 0 else ""
    _, digits, exp = Decimal(repr(abs(v))).normalize().as_tuple()
    ds = "".join(map(str, digits))
    k, n = len(ds), len(ds) + exp          # v = 0.ds x 10^n (ECMAScript Number::toString)
    if k <= n <= 21:
        return sign + ds + "0" * (n - k)
    if 0 < n <= 21:
        return sign + ds[:n] + "." + ds[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + ds
    e = f"e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + ds[0] + ("." + ds[1:] if k > 1 else "") + e


def _list_text(values) -> str:
    return "{" + ", ".join(str(int(x)) for x in values) + "}"


def member_text(f: Field) -> str:
    """A struct member's value as the report writes it: a tensor as its data type (and, for an
    input, the sizes as the descriptor writes them; an output's follow from the rest), an optional
    tensor left out as nullptr, arrays as {1, 2}, enums by their full constant name."""
    if f.kind == "tensor":
        if not f.present:
            return "nullptr"
        text = "{ DataType = DML_TENSOR_DATA_TYPE_" + f.dtype
        if f.role == "input":
            text += ", Sizes = " + _list_text(f.as_written if f.as_written is not None else f.sizes)
        return text + " }"
    if f.kind in ("uints", "ints"):
        return _list_text(f.value)
    if f.kind == "bool":
        return "TRUE" if f.value else "FALSE"
    if f.kind == "float":
        return js_number(f.value)
    if f.kind == "size2d":
        return f"{{ Height = {f.value[1]}, Width = {f.value[0]} }}"
    return str(f.value)


def _recorded_text(v: Any) -> str:
    if v is None:
        return "nullptr"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_recorded_text(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_recorded_text(x)}" for k, x in v.items()) + " }"
    if isinstance(v, float):
        return js_number(v)
    return str(v)


def struct_rows(op_key: str, descriptor: dict) -> list[tuple[str, str, str]]:
    """(member, C type, value text) of a record's DirectML struct in directml.h order, from its
    operator's declaration (``Operator.layout``) of the record's descriptor. A descriptor that no
    operator of this bench lays out (an operator it no longer has, a field it does not know) is
    shown as recorded, field by field, without C types."""
    try:
        op = registry.get(op_key)
        fields = op.layout(op.Desc.from_dict(dict(descriptor)))
    except Exception:  # noqa: BLE001 - whatever the operator cannot lay out is shown as recorded
        return [(k, "", _recorded_text(v)) for k, v in descriptor.items() if k != "FeatureLevel"]
    return [(f.name, f.ctype, member_text(f)) for f in fields]


def struct_text(dml_name: str, rows: list, feature_level: Any = None) -> str:
    """The struct text of the detail panel (report.js ``structText`` writes the same from the data)."""
    lines = []
    if feature_level is not None:
        lines.append(f"// DML_FEATURE_LEVEL_{str(feature_level).replace('.', '_', 1)} (descriptor validated at this level)")
    width = max((len(r[0]) for r in rows), default=0)
    lines.append(f"struct {dml_name} {{")
    lines += [f"    {name}{' ' * (width - len(name) + 1)}= {text};" for name, _, text in rows]
    lines.append("};")
    return "\n".join(lines)


def coverage(recs: list[dict]) -> list[dict]:
    """Per operator: which descriptor fields and values, data types, feature levels, opsets, input
    families and ONNX-side options the cases sent to an EP exercised (values with case counts)."""
    by_op: dict[str, dict] = {}
    for r in recs:
        op = r.op or "?"
        d = by_op.setdefault(op, {"op": op, "dml_op": r.dml_op or "", "cases": 0, "sent": 0, "compared": 0,
                                  "fields": {}, "dtypes": Counter(), "feature_levels": Counter(), "opsets": Counter(),
                                  "families": Counter(), "onnx": {}, "verdicts": Counter(), "first_desc": None})
        d["cases"] += 1
        d["verdicts"][r.verdict] += 1
        if r.verdict not in Verdict.SENT_TO_EP:
            continue
        d["sent"] += 1
        if r.verdict in Verdict.COMPARED:
            d["compared"] += 1
        desc = r.descriptor
        if d["first_desc"] is None:
            d["first_desc"] = desc
        for k, v in desc.items():
            d["fields"].setdefault(k, Counter())[value_text(v)] += 1
        d["dtypes"][r.dtype] += 1
        d["feature_levels"][str(desc.get("FeatureLevel", "?"))] += 1
        d["opsets"][r.opset] += 1
        d["families"][r.family] += 1
        for k, v in r.onnx.items():
            d["onnx"].setdefault(k, Counter())[value_text(v)] += 1
    out = []
    for op in sorted(by_op):
        d = by_op[op]
        order = list(d["first_desc"] or {})
        order += [k for k in d["fields"] if k not in order]
        out.append({
            "op": op, "dml_op": d["dml_op"], "cases": d["cases"], "sent": d["sent"], "compared": d["compared"],
            "verdicts": dict(d["verdicts"]),
            "fields": [{"name": k, "values": _sorted_values(d["fields"][k])} for k in order if k in d["fields"]],
            "dtypes": _sorted_values(d["dtypes"]),
            "feature_levels": _sorted_values(d["feature_levels"]),
            "opsets": _sorted_values(d["opsets"]),
            "families": _sorted_values(d["families"]),
            "onnx": [{"name": k, "values": _sorted_values(c)} for k, c in sorted(d["onnx"].items())],
        })
    return out


def _sorted_values(c: Counter) -> list[tuple[str, int]]:
    def key(kv):
        s = str(kv[0])
        try:
            return (0, float(s), s)
        except ValueError:
            return (1, 0.0, s)
    return [(str(k), n) for k, n in sorted(c.items(), key=key)]


# ----------------------------------------------------------------------------------------------
# Environments
# ----------------------------------------------------------------------------------------------

def source_text(source: dict | None) -> str:
    """Where a case comes from (``CaseRecord.source``), on one line: a ``networks`` case's census
    layers, kinds, exporters' nodes, batch and the models that use the layer; a ``limits`` case's
    boundary and what it probes. Empty without a source."""
    if not source:
        return ""
    if source.get("profile") == "networks":
        onnx = ", ".join(f"{k}: {v}" for k, v in (source.get("onnx") or {}).items())
        models = source.get("models") or []
        batch = source.get("batch")
        at = "" if batch is None else (f", batch {batch}" + (f" (census {source['census_batch']})"
                                                            if source.get("census_batch") not in (None, batch) else ""))
        return (f"census {', '.join(source.get('layers') or [])} ({', '.join(source.get('kinds') or [])}; {onnx}){at}: "
                f"{len(models)} model{'s' if len(models) != 1 else ''}: {', '.join(models)}")
    if source.get("profile") == "limits":
        return f"limits, {source.get('boundary')}: {source.get('probes')} ({source.get('why')})"
    return ", ".join(f"{k}: {v}" for k, v in source.items())


def env_rows(env: dict) -> list[tuple[str, str]]:
    """(label, text) rows of an environment's header block: the fixed ones, then every other key."""
    def txt(v):
        if v is None or v == "" or v == {} or v == []:
            return ""
        if isinstance(v, (dict, list)):
            return value_json(v)
        return str(v)

    vals = env.flat()
    vals["ort"] = " ".join(x for x in (txt(env.get("ort_package")), txt(env.get("ort_version"))) if x)
    vals["bench"] = " ".join(x for x in (txt(env.get("bench_version")),
                                         f"(git {env.git_revision})" if env.git_revision else "") if x)
    rows = []
    for key, label in ENV_HEADER:
        t = txt(vals.get(key))
        if t or key in ("device", "driver", "ort", "ep", "bench", "profile", "started", "os", "cpu", "seed_policy"):
            rows.append((label, t or "—"))
    for k in sorted(set(vals) - _ENV_CONSUMED - {"ort", "bench"}):
        if is_statement_key(k):
            continue
        t = txt(vals[k])
        if t:
            rows.append((k, t))
    return rows


_HOME = re.compile(r"(?<![\w.~])(?:/root|/home/[^/\s\"',;]+|/Users/[^/\s\"',;]+|[A-Za-z]:\\\\?Users\\\\?[^\\\s\"',;]+)(?=[/\\])")
_TEMP = re.compile(r"(?<![\w.~])(?:/tmp|/var/tmp|/private/var/folders|/var/folders)(?:/[^\s\"',;]*)?")


def machine_paths(text: str) -> str:
    """``text`` with the paths of the machine that ran shortened, for pages others open: a home
    folder as ``~``, a temporary folder as ``…/`` and the path's last name (the results keep them whole)."""
    text = _HOME.sub("~", str(text))
    return _TEMP.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1] if m.group(0).count("/") > 1 else "…", text)


def is_statement_key(k: str) -> bool:
    return "statement" in k.lower()


def statements(env: dict) -> list[str]:
    """Texts an environment states about itself (e.g. DirectML running on a software Vulkan device)."""
    out = []
    flat = env.flat()
    for k in sorted(flat):
        if is_statement_key(k) and flat[k]:
            v = flat[k]
            out += [str(x) for x in v] if isinstance(v, list) else [str(v) if not isinstance(v, dict) else value_json(v)]
    return out


def env_title(env: dict) -> str:
    parts = [env.get("ep") or "?", env.get("device") or "", env.get("machine") or ""]
    return " — ".join(p for p in parts if p)


def value_json(v: Any) -> str:
    return json.dumps(jsonable(v), sort_keys=True, ensure_ascii=False)
