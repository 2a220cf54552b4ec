#!/usr/bin/env python3
"""Runs this bundle's model on an ONNX Runtime EP and on the CPU EP and compares each with the
expected outputs by the rule of case.json. Needs only onnxruntime and numpy.

    python repro.py                           EP of the record (bundle.json) if available, and CPU
    python repro.py --ep DmlExecutionProvider
    python repro.py --show 20                 print up to 20 mismatches per output
    python repro.py --bundle DIR              the bundle in DIR (default: this script's folder)
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


def session(folder, providers, fallback_disabled):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    if fallback_disabled:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    return ort.InferenceSession(os.path.join(folder, "model.onnx"), so, providers=providers)


def main():
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--bundle", default=HERE, help="the bundle's folder (default: this script's)")
    folder = where.parse_known_args()[0].bundle
    meta = json.load(open(os.path.join(folder, "case.json"), encoding="utf-8"))
    bundle = json.load(open(os.path.join(folder, "bundle.json"), encoding="utf-8"))
    ap = argparse.ArgumentParser(parents=[where])
    ap.add_argument("--ep", default=bundle.get("ep") or "CPUExecutionProvider")
    ap.add_argument("--show", type=int, default=8)
    args = ap.parse_args()
    print(f"{meta['dml_operator']} case {meta['id']} (opset {meta['onnx']['opset']}, {meta['data_type']})")
    if bundle.get("verdict"):
        print(f"recorded: {bundle['verdict']} on {bundle.get('ep')}" + (f" ({bundle['attribution']})" if bundle.get("attribution") else ""))
    if meta.get("open_points"):
        print("open points (expected outputs follow the bench's policy there): " + ", ".join(meta["open_points"]))
    data = os.path.join(folder, "test_data_set_0")
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
            outs = session(folder, providers, strict).run(names, feeds)
        except Exception as e:  # the runtime's own words
            print(f"{label}: no outputs: {type(e).__name__}: {e}")
            bad = True
            continue
        results[label] = dict(zip(names, outs))
    recorded = os.path.join(folder, "ep_outputs")
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
