"""A self-contained folder for a driver bug report: one failing case, everything a person needs to
see the failure without the bench.

    DIR/model.onnx, DIR/test_data_set_0/input_K.pb, output_K.pb   ONNX backend-test layout
                                          (fixtures.export; expected = the bench's reference)
    DIR/case.json, DIR/data.json          the case's metadata and comparison rule (fixtures.export)
    DIR/ep_outputs/output_K.pb            what the EP of the record gave, re-run at bundle time
    DIR/cpu_outputs/output_K.pb           what ONNX Runtime's CPU EP gave, same run
    DIR/repro.py                          needs only onnxruntime + numpy
    DIR/descriptor.cpp                    the DML_*_OPERATOR_DESC with its tensor descs
    DIR/dxdispatch.json                   a DxDispatch model dispatching the same operator
    DIR/cases.json                        the case file (`onnx-dml-bench run --cases`)
    DIR/record.json                       the result record the bundle was made from
    DIR/README.md                         what failed, where (environment), how to run each piece
"""
from __future__ import annotations

import datetime as _dt
import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__
from . import dxdispatch as DX
from .cases import Case
from .lanes import Lane, RunConfig, descriptor_case, resolve
from .outcome import Outcome
from .outdir import BUNDLE_README
from .plan import PlanError, RunPlan


class BundleError(ValueError):
    """A problem with the command's arguments or the case (one line for a person)."""


# ----------------------------------------------------------------------------------------------
# Re-running the case to get the raw outputs of each side
# ----------------------------------------------------------------------------------------------

def run_sides(case: Case, lane: Lane, optimization: str = "disabled") -> tuple[dict, dict | None, str]:
    """(EP outputs or error outcome, CPU outputs or None, how) by the graph's output names."""
    from .ops.base import make_model
    frag = case.operator.build(case, "")
    model = make_model([frag], case.opset, name=case.id).SerializeToString()
    inputs = case.inputs()
    feeds = {frag.input_names[k]: v for k, v in inputs.items()}
    names = list(frag.output_names.values())
    cfg = RunConfig(ep=lane.key, optimization=optimization)
    backend = lane.make_backend(cfg)
    try:
        return _run_sides(backend, case, lane, cfg, model, inputs, feeds, names)
    finally:
        backend.close()       # what it holds: DirectML under Wine gives its prefix slot back


def rerun_sides(case: Case, lane: Lane, optimization: str = "disabled"):
    """Run the case again on ``lane`` and the CPU EP and judge it: (EP outputs or None, CPU
    outputs or None, how they were made, the judgement)."""
    from . import verdict as V
    ep_o, cpu_o, how = run_sides(case, lane, optimization)
    how += f" ({_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')})"
    frag = case.operator.build(case, "")
    direct = lane.runs_descriptors
    where = None if direct else V.placement([n.name for n in frag.nodes], ep_o.assignment, lane.ep_name, lane.is_cpu)
    local = dict(frag.output_names)

    def loc(o):
        if o is None or not o.ok:
            return o
        return Outcome(True, o.stage, None, {k: o.outputs[g] for k, g in local.items() if g in o.outputs},
                       o.assignment)
    j = V.judge(case, case.inputs(), loc(ep_o), None if lane.is_cpu else loc(cpu_o), where,
                ep_name=lane.ep_name, ep_is_cpu=lane.is_cpu, semantics="dml" if direct else "onnx")
    if not ep_o.ok:
        how += f"; the EP gave no outputs ({ep_o.stage}: {(ep_o.error or '')[:300]})"
    return (ep_o.outputs if ep_o.ok else None, cpu_o.outputs if cpu_o is not None and cpu_o.ok else None, how, j)


def _run_sides(backend, case, lane, cfg, model, inputs, feeds, names):
    if lane.runs_descriptors:
        ep = backend.run(descriptor_case(case), inputs)
        cpu_backend = resolve("cpu").make_backend(cfg)
        (cpu,) = cpu_backend.run_many([(model, feeds, names, "ep")])
        return ep, cpu, f"descriptor dispatched on DirectML ({lane.ep_name}); CPU side: ONNX Runtime's CPU EP"
    jobs = [(model, feeds, names, "ep")]
    if not lane.is_cpu:
        jobs.append((model, feeds, names, "cpu"))
    outs = backend.run_many(jobs)
    ep = outs[0]
    cpu = outs[1] if len(outs) > 1 else outs[0]
    return ep, cpu, f"ONNX graph run on {lane.ep_name} and on the CPU EP of the same ONNX Runtime build"


# ----------------------------------------------------------------------------------------------
# The bundle
# ----------------------------------------------------------------------------------------------

def _write_outputs(folder: Path, model_outputs: list[str], outputs: dict | None) -> list[str]:
    from onnx import numpy_helper
    written = []
    if not outputs:
        return written
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(model_outputs):
        if name in outputs and outputs[name] is not None:
            arr = np.ascontiguousarray(outputs[name])
            (folder / f"output_{k}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
            written.append(name)
    return written


def _env_lines(env) -> list[str]:
    if env is None:
        return ["- (the results file holds no environment record)"]
    flat = env.flat()
    rows = [("EP", flat.get("ep")), ("EP key", flat.get("ep_key")), ("EP options", flat.get("ep_options")),
            ("ONNX Runtime", f"{flat.get('ort_package')} {flat.get('ort_version')}".strip()),
            ("EP package", flat.get("ep_package")), ("device", flat.get("device")), ("driver", flat.get("driver")),
            ("OS", flat.get("os")), ("CPU", flat.get("cpu")), ("Python", flat.get("python")),
            ("graph optimisation", flat.get("optimization")), ("bench", f"{flat.get('bench_version')} "
                                                                          f"({flat.get('git_revision')})")]
    dml = flat.get("dml") or {}
    if isinstance(dml, dict):
        for k in ("DirectML.dll", "DirectML.dll (string)", "wine", "mesa", "vkd3d"):
            if dml.get(k):
                rows.append((f"DirectML stack: {k}", dml[k]))
    versions = flat.get("versions") or {}
    if isinstance(versions, dict):
        for k, v in sorted(versions.items()):
            rows.append((f"version: {k}", v))
    return [f"- {k}: `{v}`" for k, v in rows if v not in (None, "", {}, "None")]


def build(case: Case, out: Path, *, rec=None, env=None, ep_outputs=None, cpu_outputs=None, how: str = "",
          now_verdict: str = "") -> Path:
    """Write the bundle of ``case`` into ``out`` (created; must be empty or absent)."""
    from .casefile import dump
    from .fixtures import export
    from .record import to_json
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise BundleError(f"{out}: exists and is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        summary = export([case], Path(tmp) / "fx", include_open=True)
        if not summary.exported:
            reason = summary.left_out[0]["reason"] if summary.left_out else "unknown"
            raise BundleError(f"{case.id}: cannot be exported as a fixture: {reason}")
        src = Path(tmp) / "fx" / case.id
        for p in src.iterdir():
            shutil.move(str(p), out / p.name)
    meta = json.loads((out / "case.json").read_text(encoding="utf-8"))
    model_outputs = [o["name"] for o in meta["outputs"]]
    ep_written = _write_outputs(out / "ep_outputs", model_outputs, ep_outputs)
    cpu_written = _write_outputs(out / "cpu_outputs", model_outputs, cpu_outputs)
    dump([case], out / "cases.json")
    (out / "descriptor.cpp").write_text(DX.cpp_struct(case), encoding="utf-8")
    (out / "dxdispatch.json").write_text(DX.dumps(DX.dxdispatch_model(case, case.inputs())), encoding="utf-8")
    if rec is not None:
        (out / "record.json").write_text(json.dumps(json.loads(to_json(rec)), indent=1) + "\n", encoding="utf-8")
    ep_name = (rec.ep if rec is not None else None) or (env.ep if env is not None else "CPUExecutionProvider")
    bundle_meta = {"ep": ep_name, "case_id": case.id, "verdict": rec.verdict if rec is not None else None,
                   "attribution": rec.attribution if rec is not None else None,
                   "outputs_from": how or "not re-run: no EP or CPU outputs in this bundle",
                   "ep_outputs": ep_written, "cpu_outputs": cpu_written, "bench_version": __version__}
    (out / "bundle.json").write_text(json.dumps(bundle_meta, indent=1) + "\n", encoding="utf-8")
    (out / "repro.py").write_text(REPRO, encoding="utf-8")
    (out / BUNDLE_README).write_text(_readme(case, rec, env, meta, bundle_meta, now_verdict), encoding="utf-8")
    return out


def _readme(case, rec, env, meta, bm, now_verdict) -> str:
    op = case.operator
    lines = [f"# {op.dml_name}: {case.id}", ""]
    if rec is not None:
        lines += [f"Recorded verdict on `{rec.ep}`: **{rec.verdict}**" + (f" ({rec.attribution})" if rec.attribution else ""),
                  "", "> " + (rec.reason or "").replace("\n", " ")[:2000], ""]
        if rec.labels:
            lines += [f"Labels: {', '.join(rec.labels)}", ""]
    if now_verdict:
        lines += [f"Re-run when this bundle was made: {now_verdict}", ""]
    lines += ["## Environment of the record", ""] + _env_lines(env) + [""]
    lines += ["## Case", "",
              f"- DirectML operator: `{op.dml_name}` (desc in `descriptor.cpp`, DxDispatch model in `dxdispatch.json`)",
              f"- ONNX graph: opset {case.opset}, nodes {', '.join(meta['onnx']['op_types'])}, options {case.v or '{}'}",
              f"- data type {case.dtype}; inputs: " + ", ".join(f"{t['name']} {t['dtype']} {t['shape']}"
                                                            for t in meta["inputs"]["tensors"]),
              "- descriptor: `" + json.dumps(case.desc.to_dict()) + "`", ""]
    if meta.get("open_points"):
        lines += ["The data touches points the DirectML documentation leaves open; the expected outputs follow "
                  "the bench's policy there (`case.json`: `open_points`). Other answers may be allowed:", ""]
        lines += [f"- {k}: {v}" for k, v in meta["open_points"].items()] + [""]
    lines += ["## Files", "",
              "- `model.onnx`, `test_data_set_0/input_K.pb`, `test_data_set_0/output_K.pb`: the ONNX backend-test "
              "layout; expected outputs come from the bench's NumPy reference of the DirectML semantics",
              "- `case.json`: descriptor, comparison rule per output (`outputs[].compare`), open points; `data.json`: rtol/atol",
              f"- `ep_outputs/`, `cpu_outputs/`: {bm['outputs_from']}",
              "- `repro.py`: loads the model and the `.pb` inputs, runs them on the EP and on the CPU EP, compares "
              "with the rule of `case.json`, prints the first mismatches. Needs only `onnxruntime` and `numpy`",
              "- `descriptor.cpp`: the operator desc as C++ (directml.h)",
              "- `dxdispatch.json`: the same operator and tensors for DxDispatch (microsoft/DirectML, `DxDispatch`)",
              "- `cases.json`: the case for `onnx-dml-bench run --cases cases.json`",
              "- `record.json`: the bench's result record", "",
              "## Run", "",
              "    pip install onnxruntime numpy         # or onnxruntime-directml on Windows",
              "    python repro.py                       # EP of the record if installed, and the CPU EP",
              "    python repro.py --ep CPUExecutionProvider",
              "    dxdispatch.exe dxdispatch.json        # prints the outputs DirectML computes",
              "    onnx-dml-bench run --ep <ep> --cases cases.json", "",
              f"Written by onnx-dml-bench {__version__} on "
              f"{_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d')}.", ""]
    return "\n".join(lines)


def bundle_command(case_id: str, results: Path, out: Path, ep: str | None, *, rerun: bool = True,
                   say: Callable[[str], None] = print) -> Path:
    """The bundle of a case of a results file; ``rerun``: run the case again on the EP of the
    record (or ``ep``) and the CPU EP to include their outputs and today's verdict."""
    from .casefile import CaseFileError, case_from_record
    from .shrink import ShrinkError, find_record
    try:
        rec, env = find_record(results, case_id)
    except ShrinkError as e:
        raise BundleError(str(e)) from None
    try:
        case = case_from_record(rec)
    except CaseFileError as e:
        raise BundleError(str(e)) from None
    ep_out = cpu_out = None
    how, now = "", ""
    if rerun:
        try:
            lane = RunPlan.probe(ep, env).lane      # the EP's preflight (known-answer canary) first
        except PlanError as e:
            raise BundleError(str(e)) from None
        ep_out, cpu_out, how, j = rerun_sides(case, lane, env.optimization or "disabled")
        now = f"**{j.verdict}**" + (f" ({j.attribution})" if j.attribution else "") + f" on `{lane.ep_name}`" + \
            (" — same as recorded" if (j.verdict, j.attribution) == (rec.verdict, rec.attribution) else
             f" — recorded {rec.verdict}") + (f": {j.reason}" if j.reason else "")
        say(f"re-run: {now}")
    return build(case, out, rec=rec, env=env, ep_outputs=ep_out, cpu_outputs=cpu_out, how=how, now_verdict=now)


# ----------------------------------------------------------------------------------------------
# repro.py (standalone: onnxruntime + numpy)
# ----------------------------------------------------------------------------------------------

REPRO = r'''#!/usr/bin/env python3
"""Runs this bundle's model on an ONNX Runtime EP and on the CPU EP and compares each with the
expected outputs by the rule of case.json. Needs only onnxruntime and numpy.

    python repro.py                           EP of the record (bundle.json) if available, and CPU
    python repro.py --ep DmlExecutionProvider
    python repro.py --show 20                 print up to 20 mismatches per output
Exit code 1 when an output differs from the expected one, 0 otherwise."""
import argparse
import json
import os
import struct
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
          9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def read_tensor(path):
    """A TensorProto (.pb) as (name, numpy array): dims, data_type, raw_data or the typed fields."""
    buf = open(path, "rb").read()
    i, dims, dtype, raw, name = 0, [], 1, None, ""
    typed = {4: [], 5: [], 7: [], 10: [], 11: []}
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
            elif field in typed:
                typed[field].append(v)
        elif wire == 2:
            n, i = _varint(buf, i)
            chunk, i = buf[i:i + n], i + n
            if field == 1:
                j = 0
                while j < len(chunk):
                    v, j = _varint(chunk, j)
                    dims.append(v)
            elif field == 9:
                raw = chunk
            elif field == 8:
                name = chunk.decode("utf-8")
            elif field == 4:
                typed[4] += list(struct.unpack(f"<{len(chunk) // 4}f", chunk))
            elif field == 10:
                typed[10] += list(struct.unpack(f"<{len(chunk) // 8}d", chunk))
            elif field in (5, 7, 11):
                j = 0
                while j < len(chunk):
                    v, j = _varint(chunk, j)
                    typed[field].append(v)
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise ValueError(f"{path}: unsupported protobuf wire type {wire}")
    dt = np.dtype(DTYPES[dtype])
    if raw is not None:
        arr = np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt)
    elif dtype == 1:
        arr = np.array(typed[4], dtype=dt)
    elif dtype == 11:
        arr = np.array(typed[10], dtype=dt)
    elif dtype == 10:
        arr = np.array(typed[5], dtype=np.uint16).view(np.float16)
    elif dtype in (7,):
        arr = np.array([v - (1 << 64) if v >= 1 << 63 else v for v in typed[7]], dtype=dt)
    elif dtype in (12, 13):
        arr = np.array(typed[11], dtype=dt)
    else:
        arr = np.array([v - (1 << 64) if v >= 1 << 63 else v for v in typed[5]], dtype=np.int64).astype(dt)
    return name, arr.reshape(dims)


def ulp_distance(a, b):
    """ULP distance between float arrays of one type, on ordered bit patterns."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(bits).astype(np.int64), b.view(bits).astype(np.int64)
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ia = np.where(ia < 0, -(ia + top), ia)
    ib = np.where(ib < 0, -(ib + top), ib)
    return np.abs(ia - ib)


def compare(got, want, rule):
    """Boolean mask of mismatching elements under the rule of case.json."""
    if got.shape != want.shape:
        return None
    kind = rule.get("kind", "exact")
    if want.dtype.kind != "f":
        return got != want
    both_nan = np.isnan(got) & np.isnan(want)
    if kind in ("exact", "indices"):
        same = (got.view(f"u{got.dtype.itemsize}") == want.view(f"u{want.dtype.itemsize}")) | both_nan
        return ~same
    if kind == "ulp":
        d = ulp_distance(got.astype(want.dtype), want)
        return ~(both_nan | (d <= int(rule.get("ulp", 0))))
    if kind == "bound":
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ok = both_nan | (got == want) | (err <= float(rule.get("max_abs_error", 0.0)))
        return ~ok
    raise ValueError(f"unknown comparison kind {kind!r}")


def session(providers, fallback_disabled):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    if fallback_disabled:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return ort.InferenceSession(os.path.join(HERE, "model.onnx"), so, providers=providers)


def main():
    meta = json.load(open(os.path.join(HERE, "case.json"), encoding="utf-8"))
    bundle = json.load(open(os.path.join(HERE, "bundle.json"), encoding="utf-8"))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ep", default=bundle.get("ep") or "CPUExecutionProvider")
    ap.add_argument("--show", type=int, default=8)
    args = ap.parse_args()
    print(f"{meta['dml_operator']} case {meta['id']} (opset {meta['onnx']['opset']}, {meta['data_type']})")
    if bundle.get("verdict"):
        print(f"recorded: {bundle['verdict']} on {bundle.get('ep')}" + (f" ({bundle['attribution']})" if bundle.get("attribution") else ""))
    if meta.get("open_points"):
        print("open points (expected outputs follow the bench's policy there): " + ", ".join(meta["open_points"]))
    data = os.path.join(HERE, "test_data_set_0")
    feeds = dict(read_tensor(os.path.join(data, t["file"].split("/")[-1])) for t in meta["inputs"]["tensors"])
    expected = {o["name"]: read_tensor(os.path.join(data, o["file"].split("/")[-1]))[1] for o in meta["outputs"]}
    rules = {o["name"]: o["compare"] for o in meta["outputs"]}
    names = [o["name"] for o in meta["outputs"]]
    sides = []
    available = ort.get_available_providers()
    if args.ep != "CPUExecutionProvider":
        if args.ep in available:
            sides.append((args.ep, [args.ep], True))
        else:
            print(f"{args.ep} is not available in this onnxruntime ({', '.join(available)}): the CPU EP only")
    sides.append(("CPUExecutionProvider", ["CPUExecutionProvider"], False))
    results, bad = {}, False
    for label, providers, strict in sides:
        try:
            outs = session(providers, strict).run(names, feeds)
        except Exception as e:  # the runtime's own words
            print(f"{label}: no outputs: {type(e).__name__}: {e}")
            bad = True
            continue
        results[label] = dict(zip(names, outs))
    recorded = os.path.join(HERE, "ep_outputs")
    if os.path.isdir(recorded) and bundle.get("ep_outputs"):
        # what the EP of the record gave when the bundle was made (bundle.json: outputs_from)
        outs = {}
        for k, o in enumerate(meta["outputs"]):
            f = os.path.join(recorded, f"output_{k}.pb")
            if os.path.isfile(f):
                outs[o["name"]] = read_tensor(f)[1]
        if outs:
            results = {f"{bundle.get('ep')} (recorded in ep_outputs/)": outs, **results}
    for label, outs in results.items():
        for name in names:
            if name not in outs:
                continue
            got, want = outs[name], expected[name]
            mask = compare(got, want, rules[name])
            if mask is None:
                print(f"{label} {name}: shape {list(got.shape)}, expected {list(want.shape)}")
                bad = True
                continue
            n = int(mask.sum())
            print(f"{label} {name}: {n}/{want.size} differ ({rules[name].get('kind')})")
            if n:
                bad = True
                print(f"  {'index':<20} {'got':>16} {'expected':>16}")
                for idx in list(zip(*np.nonzero(mask)))[:args.show]:
                    print(f"  {str(tuple(int(i) for i in idx)):<20} {str(got[idx]):>16} {str(want[idx]):>16}")
    live = [(k, v) for k, v in results.items() if "(recorded" not in k]
    if len(live) == 2:
        (a, oa), (b, ob) = live
        for name in names:
            m = compare(oa[name], ob[name], {"kind": "exact"})
            if m is not None:
                print(f"{a} vs {b} {name}: {int(m.sum())} differ bit for bit")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
'''
