"""JSON summary, schema ``onnx-dml-bench/summary/1``.

{
  "schema": "onnx-dml-bench/summary/1",
  "generated": ISO time, "sources": [file names],
  "environments": [environment records, without their not_expressible lists],
  "total_cases": int,                              # the records
  "complete": bool,                                 # false: a run cut off, or a shard missing
  "expected_cases": int | null,                     # what the runs selected (null: not recorded)
  "incomplete": [one line per part cut off or missing],
  "totals": {verdict: count},                       # verdicts in record.Verdict order
  "matrix": [{"ep", "op", "dtype", "counts": {verdict: count}, "total"}],   # "ep": the EP, and where
                                                    # several environments share it, what tells them apart
  "attribution": {attribution: count},
  "findings": {BATCH_DEPENDENT | NONDETERMINISTIC | CPU_WRONG | EP_CPU_DIFFER | DEVICE_DIFFERS: count},  # whatever the verdict
  "finding_cases": [{"case_id", "ep", "op", "dtype", "verdict", "finding", "findings", "reason"}],
  "labels": {label: count},
  "not_expressible": {"capabilities": [{op, capability, data_type, feature_level, reason}],
                      "cases": [{case_id, op, dtype, opset, ep, reason}]},
  "fail_on": [verdicts],
  "failing": [case ids whose verdict is in fail_on, sorted, unique],
  "failing_cases": [{"case_id", "ep", "op", "dtype", "verdict", "attribution"}],
  "fault": who is at fault (report/fault.py, the report's first screen): {"lanes", "parties": [{key, title, lanes}],
           "rows": [{op, counts: {party: cases}}], "totals": {party: cases}, "known": [{key, ops, wrong, refused}],
           "headline": [sentences]},
  "fourway": null, or with the dml and dml-direct lanes both present (report/fourway.py):
             {"lanes", "classes": {class: text}, "counts": {class: n}, "matrix": [{op, dtype, counts, total}],
              "direct_only": n, "ep_only": n, "cases": [{case_id, op, dtype, cls, directml, ep, cpu, note,
                                                        variant, direct_env, ep_env}]},
  "bugs": [{"id", "key", "party", "party_title", "ep", "signature", "signature_fields", "cases", "case_ids",
            "example", "shrunk", "shrunk_from", "minimal", "shrink_summary", "bundle", "link"}],
           # every failure grouped by party at fault and failure signature (report/bugs.py); shrunk,
           # bundle: paths relative to this file's folder, null where none was made
  "expectations": [{"lane", "file", "expected", "unexpected", "fixed", "changed", "stale", "unscoped", "note",
                    "unexpected_cases", "fixed_cases"}],
  "shrinking": {"budget_s", "seconds", "bugs", "shrunk", "bundled"} | null,
  "previous": null, or what changed since the main job's previous run (cli bench; mainjob.py):
              {"folder", "generated", "error", "new_bugs": [key], "fixed_bugs": [key] (every case that ran passes),
               "changed_bugs": [key] (gone, its cases refused or failing otherwise), "not_rerun_bugs": [key],
               "new_cases": [case id], "fixed_cases": [case id] (PASS now), "changed_cases": [case id],
               "new_cases_not_run_before": [case id],
               "environment": [{"lane", "key", "before", "after"}]}
  # expectations, shrinking, previous: from the main job's bench.json beside the results (null without)
}
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from ..outdir import write_text
from ..record import FAIL_ON_DEFAULT, jsonable
from . import bugs as BG
from . import data as D
from . import fault as FT
from . import fourway as FW

SCHEMA = "onnx-dml-bench/summary/1"


def _fault(recs, view, by=None) -> dict:
    s = FT.summary(recs, view, by)
    return {"lanes": s["lanes"], "parties": [{"key": p["key"], "title": p["title"], "lanes": p["lanes"]} for p in s["parties"]],
            "rows": s["rows"], "totals": s["totals"], "known": s["known"], "headline": FT.headline(s)}


def build(res: D.Results, fail_on=FAIL_ON_DEFAULT) -> dict:
    fail_on = list(fail_on)
    view = FW.join(res.records, res.envs)
    recs = res.records
    failing = [r for r in recs if r.verdict in set(fail_on) or set(fail_on).intersection(r.findings)]
    envs = [{k: v for k, v in e.flat().items() if k != "not_expressible"} for e in res.envs]
    by = FT.blames(recs, view)
    bugs, facts = BG.of_results(res, by, view)
    return jsonable({
        "schema": SCHEMA,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "sources": [str(p) for p in res.sources],
        "environments": envs,
        "total_cases": len(recs),
        "complete": not res.incomplete,
        "expected_cases": res.completeness.expected if res.completeness is not None else None,
        "incomplete": res.incomplete,
        "totals": D.totals(recs),
        "matrix": D.matrix(recs, res.lane),
        "attribution": D.attribution_counts(recs),
        "findings": D.finding_counts(recs),
        "finding_cases": [{**{k: getattr(r, k) for k in ("case_id", "ep", "op", "dtype", "verdict", "finding", "reason")},
                           "findings": list(r.findings)}
                          for r in recs if r.findings],
        "labels": D.label_counts(recs),
        "not_expressible": D.not_expressible(res),
        "fail_on": fail_on,
        "failing": sorted({r.case_id for r in failing}),
        "failing_cases": [{k: getattr(r, k) for k in ("case_id", "ep", "op", "dtype", "verdict", "attribution",
                                                      "finding")}
                          for r in failing],
        "fault": _fault(recs, view, by),
        "fourway": FW.summary(view),
        "bugs": [b.to_dict() for b in bugs],
        **BG.facts_view(facts),
    })


def render(res: D.Results, fail_on=FAIL_ON_DEFAULT) -> str:
    return json.dumps(build(res, fail_on), indent=1, allow_nan=False) + "\n"


def write(res: D.Results, path: Path, fail_on=FAIL_ON_DEFAULT) -> Path:
    """The summary into ``path``, whole or not at all."""
    return write_text(path, render(res, fail_on))
