"""Helpers of scripts/gpu/perf_networks.sh (the GPU lens at real sizes); run from the project's root.

    python3 scripts/gpu/perf_lens.py cases OUT [--layers N] [--max-elements M]   the float16/float32 check's case files
    python3 scripts/gpu/perf_lens.py pair F16.json F32.json OUT.json
    python3 scripts/gpu/perf_lens.py summary PERF.json [PERF.json ...]

- ``cases``: the N (default 4) largest bandwidth-bound census layers of ``networks`` (MaxPool
  without indices, AveragePool, DepthToSpace: a read of the input and a write of the output, little
  arithmetic), each in float32 and float16 at the same shape: ``OUT/cases-f32.json`` and
  ``OUT/cases-f16.json``, each case noted with its census layer;
- ``pair``: the float16 perf file with each case's id and name set to its float32 twin's (the same
  layer; ``perf-compare`` pairs cases by id), written to OUT.json: ``perf-compare OUT.json F32.json``
  then compares each layer in float16 against the same layer in float32;
- ``summary``: per EP of each file, the clock, the copy bandwidth the share column uses, and the
  layers in order of bytes moved: median ms, GB/s, share; and, for two files of a float16/float32
  pair, each layer's time ratio (float16 / float32; the bytes' ratio is 0.5).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

FAMILIES = ("max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "pixel_shuffle")


def cases(out: Path, layers: int = 4, max_elements: int | None = None) -> None:
    from onnx_dml_bench.casefile import dump
    from onnx_dml_bench.plan import sweep_cases
    every = sweep_cases("networks", max_elements=max_elements)
    by_id = {}
    for c in every:
        src = c.source or {}
        kind = (src.get("kinds") or [""])[0]
        if kind not in FAMILIES or getattr(c.desc, "OutputIndicesDataType", None):
            continue
        twin = (c.op, repr(c.desc.replace(DataType="FLOAT32")), tuple(sorted(c.variant.items())) if isinstance(c.variant, dict)
                else repr(c.variant), c.opset)
        by_id.setdefault(twin, {})[c.dtype] = c
    pairs = [p for p in by_id.values() if "FLOAT32" in p and "FLOAT16" in p]
    pairs.sort(key=lambda p: -math.prod(p["FLOAT32"].desc.InputSizes))
    chosen, kinds = [], set()
    for p in pairs:                       # the largest layer of each family first, then the next largest
        kind = p["FLOAT32"].source["kinds"][0]
        if kind not in kinds:
            kinds.add(kind)
            chosen.append(p)
    chosen += [p for p in pairs if p not in chosen]
    chosen = chosen[:layers]
    out.mkdir(parents=True, exist_ok=True)
    for dt, name in (("FLOAT32", "cases-f32.json"), ("FLOAT16", "cases-f16.json")):
        dump([p[dt] for p in chosen], out / name)
    for p in chosen:
        c = p["FLOAT32"]
        print(f"{c.source['kinds'][0]} {'x'.join(map(str, c.desc.InputSizes))}: {c.id} / {p['FLOAT16'].id}")


def _eps(path: Path) -> dict:
    return _load(path)["eps"]


def _load(path: Path) -> dict:
    """A perf file, plain or gzipped (perf.json.gz), as `perf-compare` reads it."""
    from onnx_dml_bench.report.perf import load_perf
    return load_perf(path)


def pair(f16: Path, f32: Path, out: Path) -> None:
    doc16 = _load(f16)
    eps32 = _eps(f32)
    for ep, e in doc16["eps"].items():
        twins = {(r["op"], tuple(r["descriptor"]["InputSizes"]), r.get("onnx_op")): r for r in eps32.get(ep, {}).get("cases", [])}
        for r in e["cases"]:
            t = twins.get((r["op"], tuple(r["descriptor"]["InputSizes"]), r.get("onnx_op")))
            if t is None:
                raise SystemExit(f"{f16}: {r['case_id']} has no float32 twin in {f32}")
            r["float16_case_id"], r["case_id"], r["name"] = r["case_id"], t["case_id"], t["name"] + " (as FLOAT16)"
    out.write_text(json.dumps(doc16, indent=1))
    print(f"wrote {out}")


def summary(paths: list[Path]) -> None:
    docs = [(p, _eps(p)) for p in paths]
    for p, eps in docs:
        for ep, e in eps.items():
            print(f"{p.name} {ep}: clock: {e.get('clock')}; bandwidth {e.get('bandwidth_gbs')} GB/s "
                  f"({e.get('bandwidth_source')})")
            rows = sorted(e["cases"], key=lambda r: -(r.get("bytes_read", 0) + r.get("bytes_written", 0)))
            for r in rows[:12]:
                mb = (r.get("bytes_read", 0) + r.get("bytes_written", 0)) / 1e6
                share = r.get("bandwidth_share")
                print(f"  {r['name'][:90]:90s} {mb:9.1f} MB {r.get('median_ms', float('nan')):9.4f} ms "
                      f"{r.get('achieved_gbs') or 0:8.1f} GB/s  share {'' if share is None else f'{share:.2f}'}  "
                      f"{r.get('verdict')}")
    if len(docs) == 2:
        (pa, a), (pb, b) = docs
        for ep in set(a) & set(b):
            ra = {r["case_id"]: r for r in a[ep]["cases"]}
            for r in b[ep]["cases"]:
                o = ra.get(r["case_id"])
                if o and o.get("median_ms") and r.get("median_ms"):
                    print(f"{ep} {r['name'][:80]}: {pa.name} / {pb.name} time ratio {o['median_ms'] / r['median_ms']:.3f} "
                          f"(bytes ratio {(o['bytes_read'] + o['bytes_written']) / (r['bytes_read'] + r['bytes_written']):.3f})")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("cases", "pair", "summary"):
        print(__doc__)
        return 2
    if argv[0] == "cases":
        layers = int(argv[argv.index("--layers") + 1]) if "--layers" in argv else 4
        limit = int(argv[argv.index("--max-elements") + 1]) if "--max-elements" in argv else None
        cases(Path(argv[1]), layers, limit)
    elif argv[0] == "pair":
        pair(Path(argv[1]), Path(argv[2]), Path(argv[3]))
    else:
        summary([Path(p) for p in argv[1:]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
