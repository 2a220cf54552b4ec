"""A copy-paste Python script that rebuilds one case (model and inputs) and shows the difference.

The script body is the same for every case; only the JSON block differs. The HTML report fills the
same template in the browser (from the embedded case data), so both give the same script.
"""
from __future__ import annotations

import json

PLACEHOLDER = "@@CASE_DATA@@"

TEMPLATE = r'''#!/usr/bin/env python3
# Rebuilds one onnx-dml-bench case (ONNX model and inputs), runs it with ONNX Runtime on the EP
# of the result and on the CPU EP, computes the bench's NumPy reference and prints the first
# differences. Needs: pip install onnx-dml-bench onnxruntime (or the EP's onnxruntime package).
#   python repro.py                    run it
#   python repro.py --save-model m.onnx --save-case case.json
import argparse
import json

import onnxruntime as ort

from onnx_dml_bench.casefile import case_from_dict
from onnx_dml_bench.compare import compare_output
from onnx_dml_bench.ops.base import make_model

DATA = json.loads(r"""@@CASE_DATA@@""")

ap = argparse.ArgumentParser()
ap.add_argument("--ep", default=DATA["ep"], help="execution provider (default: the one of the result)")
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


def run(ep):
    so = ort.SessionOptions()
    so.graph_optimization_level = {"disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                   "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                   "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                   "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[DATA.get("optimization") or "disabled"]
    providers = ["CPUExecutionProvider"]
    if ep != "CPUExecutionProvider":
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        if ep == "DmlExecutionProvider":
            so.enable_mem_pattern = False
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts = DATA.get("ep_options") if ep == DATA["ep"] else {}
        providers = [(ep, {k: str(v) for k, v in (opts or {}).items()})]
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=providers)
        got = sess.run(list(outs.values()), feeds)
    except Exception as e:  # the runtime's own words
        print(f"{ep}: {type(e).__name__}: {e}")
        return None
    return {local: g for local, g in zip(outs, got)}


ref = op.reference(case, inputs)
cpu = run("CPUExecutionProvider")
got = None
if args.ep == "CPUExecutionProvider":
    got, cpu = cpu, None
elif args.ep in ort.get_available_providers():
    got = run(args.ep)
else:
    print(f"{args.ep} is not available in this onnxruntime ({', '.join(ort.get_available_providers())}); "
          f"comparing the CPU EP only. Through the bench: python repro.py --save-case case.json, then "
          f"onnx-dml-bench run --ep {DATA.get('ep_key') or args.ep} --cases case.json")
    got, cpu = cpu, None
    args.ep = "CPUExecutionProvider"

for name, spec in op.compare_specs(case).items():
    if got is None:
        break
    others = {"cpu": cpu[name]} if cpu is not None and name in cpu else None
    tie = None
    if spec.kind == "indices" and name in got and hasattr(op, "tie_valid"):
        try:
            tie = op.tie_valid(case, inputs, ref, got[name])
        except Exception:  # a malformed index array is a plain mismatch
            tie = None
    res = compare_output(name, spec, got.get(name), ref[name], others=others, tie_valid=tie)
    head = f"{name} on {args.ep}: {res.mismatches}/{res.total} differ ({res.kind}"
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


def case_dict(rec: dict) -> dict:
    """The case of a record as a case-file dict (what ``casefile.case_from_dict`` reads)."""
    if rec.get("case"):
        return dict(rec["case"])
    d = {"id": rec.get("case_id"), "op": rec.get("op"), "opset": rec.get("opset"),
         "descriptor": rec.get("descriptor") or {}}
    if rec.get("onnx"):
        d["onnx"] = rec["onnx"]
    d["inputs"] = {"family": rec.get("family"), "seed": rec.get("seed")}
    return d


def script_data(rec: dict, env: dict | None = None) -> dict:
    env = env or {}
    return {"case": case_dict(rec), "case_id": rec.get("case_id"), "verdict": rec.get("verdict"),
            "attribution": rec.get("attribution"), "ep": rec.get("ep") or env.get("ep") or "CPUExecutionProvider",
            "ep_key": env.get("ep_key"), "ep_options": env.get("ep_options") or {},
            "optimization": env.get("optimization") or "disabled"}


def fill(data: dict) -> str:
    """The script for ``data`` (see :func:`script_data`). The JSON sits in a raw triple-quoted
    string: JSON escapes every quote inside its strings, so no value can end that string."""
    return TEMPLATE.replace(PLACEHOLDER, json.dumps(data, indent=1, allow_nan=False))


def repro_script(rec: dict, env: dict | None = None) -> str:
    return fill(script_data(rec, env))
