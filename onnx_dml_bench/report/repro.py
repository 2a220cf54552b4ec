"""A copy-paste Python script that rebuilds one case (model and inputs) and shows the difference.

The script body is the same for every case; only the JSON block differs. The HTML report fills the
same template in the browser (from the embedded case data), so both give the same script.
"""
from __future__ import annotations

import json

from ..casefile import record_case_dict

PLACEHOLDER = "@@CASE_DATA@@"

TEMPLATE = r'''#!/usr/bin/env python3
# Rebuilds one onnx-dml-bench case (ONNX model and inputs), runs it with ONNX Runtime on the EP
# of the result and on the CPU EP, and judges it as the bench does (same reference, comparison,
# placement rule and attribution). Needs: pip install onnx-dml-bench onnxruntime (or the EP's
# onnxruntime package).
#   python repro.py                    run it
#   python repro.py --save-model m.onnx --save-case case.json
import argparse
import json

from onnx_dml_bench.casefile import case_from_dict
from onnx_dml_bench.ops.base import make_model
from onnx_dml_bench.outcome import Outcome
from onnx_dml_bench.errors import ProviderError
from onnx_dml_bench.lanes.catalog import resolve
from onnx_dml_bench.verdict import assignment_of, judge, placement

DATA = json.loads(r"""@@CASE_DATA@@""")

ap = argparse.ArgumentParser()
ap.add_argument("--ep", default=DATA.get("ep_key") or DATA["ep"], help="EP key or name (default: the one of the result)")
ap.add_argument("--save-model", help="write the ONNX model here")
ap.add_argument("--save-case", help="write the case file here (onnx-dml-bench run --cases FILE)")
args = ap.parse_args()

case = case_from_dict(DATA["case"])
op = case.operator
print(f"case {case.id}  ({op.dml_name}, {case.dtype}, opset {case.opset}, inputs {case.family})")
print(f"recorded: {DATA['verdict']} on {DATA['ep']}" + (f" ({DATA['attribution']})" if DATA.get("attribution") else ""))
if case.id != DATA["case_id"]:
    print(f"note: the rebuilt id differs from the recorded {DATA['case_id']} (other bench version?)")
frag = op.build(case, "")
model = make_model([frag], case.opset, name=case.id)
inputs = case.inputs()
feeds = {frag.input_names[k]: v for k, v in inputs.items()}
outs = dict(frag.output_names)
if args.save_model:
    import onnx
    onnx.save(model, args.save_model)
    print(f"wrote {args.save_model}")
if args.save_case:
    with open(args.save_case, "w", encoding="utf-8") as f:
        json.dump({"schema": "onnx-dml-bench/cases/1", "cases": [DATA["case"]]}, f, indent=1)
    print(f"wrote {args.save_case}")
for name, arr in inputs.items():
    print(f"input {name}: {arr.dtype} {list(arr.shape)}")


def run(lane, side_is_ep):
    try:
        sess = lane.make_session(model.SerializeToString(), side_is_ep=side_is_ep,
                                 optimization=DATA.get("optimization") or "disabled")
    except Exception as e:  # the runtime's own words
        return Outcome(False, "session", f"{type(e).__name__}: {e}")
    assignment = assignment_of(sess)
    try:
        got = sess.run(list(outs.values()), feeds)
    except Exception as e:
        return Outcome(False, "run", f"{type(e).__name__}: {e}", assignment=assignment)
    return Outcome(True, "done", None, dict(zip(outs, got)), assignment)


cpu_lane = resolve("cpu")
try:
    lane = resolve(args.ep, DATA.get("ep_options") or {})
    if not lane.in_process:
        raise ProviderError("DirectML under Wine runs through the bench only")
except ProviderError as e:
    print(f"{args.ep}: {e}; judging the CPU EP only. Through the bench: python repro.py --save-case case.json, "
          f"then onnx-dml-bench run --ep {DATA.get('ep_key') or args.ep} --cases case.json")
    lane = cpu_lane
ep = run(lane, True)
cpu = None if lane.is_cpu else run(cpu_lane, False)
where = placement([n.name for n in frag.nodes], ep.assignment, lane.ep_name, lane.is_cpu)
j = judge(case, inputs, ep, cpu, where, ep_name=lane.ep_name, ep_is_cpu=lane.is_cpu)
print(f"now: {j.verdict} on {lane.ep_name}" + (f" ({j.attribution})" if j.attribution else "") + (f": {j.reason}" if j.reason else ""))
if j.cpu is not None and j.cpu.verdict:
    print(f"CPU EP: {j.cpu.verdict}" + (f" ({j.cpu.reason})" if j.cpu.reason else ""))
for name, res in j.outputs.items():
    head = f"{name} on {lane.ep_name}: {res.mismatches}/{res.total} differ ({res.kind}"
    head += f", tolerance {res.tolerance_ulp} ULP)" if res.kind == "ulp" else ")"
    if res.max_ulp is not None:
        head += f", max {res.max_ulp} ULP"
    if res.max_abs is not None:
        head += f", max abs {res.max_abs:g}"
    print(head + (f" [{', '.join(res.labels)}]" if res.labels else "") + (f" {res.note}" if res.note else ""))
    if res.first:
        print(f"  {'index':<20} {'EP':>16} {'CPU EP':>16} {'reference':>16}")
        for row in res.first:
            print(f"  {str(row['index']):<20} {str(row['got']):>16} {str(row.get('cpu', '')):>16} {str(row['ref']):>16}")
'''


def script_data(rec, env=None) -> dict:
    """The JSON block of the script for a record (record.CaseRecord) and its environment."""
    get = env.get if env is not None else (lambda k, d=None: d)
    return {"case": record_case_dict(rec), "case_id": rec.case_id, "verdict": rec.verdict,
            "attribution": rec.attribution, "ep": rec.ep or get("ep") or "CPUExecutionProvider",
            "ep_key": get("ep_key"), "ep_options": get("ep_options") or {},
            "optimization": get("optimization") or "disabled"}


def fill(data: dict) -> str:
    """The script for ``data`` (see :func:`script_data`). The JSON sits in a raw triple-quoted
    string: JSON escapes every quote inside its strings, so no value can end that string."""
    return TEMPLATE.replace(PLACEHOLDER, json.dumps(data, indent=1, allow_nan=False))


def repro_script(rec: dict, env: dict | None = None) -> str:
    return fill(script_data(rec, env))
