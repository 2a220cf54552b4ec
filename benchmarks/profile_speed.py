"""Speed and peak memory of the sized profiles (``networks``, ``limits``): runs ``onnx-dml-bench run``
as it is (any of its options after ``--``) and reports its wall time, cases and input elements per
second, the time its records give to the reference, the sessions and the runs, the slowest cases,
and the peak resident memory of the whole run: the command and its worker processes (and their
Wine processes) summed, sampled every 0.2 s from /proc.

    python benchmarks/profile_speed.py [--profile networks|limits|both] [--every K] -- --ep cpu --jobs 2 [...]

``--every K`` runs every K-th case of the profile (a documented sample, the same on every
machine: the profile's cases written to a case file first); the results stay in ``--out`` of the
command (default: a temporary folder per profile).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it (Linux /proc)."""
    kids: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(d))
            rss[int(d)] = int(fields[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total


def watch(proc: subprocess.Popen) -> int:
    """The largest :func:`tree_rss` of ``proc`` until it ends."""
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.2)
    return peak


def run(profile: str, every: int, passthrough: list[str]) -> dict:
    args = list(passthrough)
    if "--out" not in args:
        args += ["--out", str(Path(tempfile.mkdtemp()) / profile)]
    out = Path(args[args.index("--out") + 1])
    if every > 1:
        cases = out.parent / f"{profile}-every-{every}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        sel = [a for a in ("--op", "--dtype", "--max-elements") if a in args]
        pick = sum(([a, args[args.index(a) + 1]] for a in sel), [])
        subprocess.run([sys.executable, "-m", "onnx_dml_bench", "cases", "--profile", profile, "--export", str(cases),
                        *pick], check=True, capture_output=True)
        doc = json.loads(cases.read_text())
        doc["cases"] = doc["cases"][::every]
        cases.write_text(json.dumps(doc))
        args = [a for i, a in enumerate(args) if a not in ("--op", "--dtype") and (i == 0 or args[i - 1] not in ("--op", "--dtype"))]
        args += ["--cases", str(cases)]
    else:
        args += ["--profile", profile]
    cmd = [sys.executable, "-m", "onnx_dml_bench", "run", "--overwrite", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    holder: dict = {}
    t = threading.Thread(target=lambda: holder.update(err=proc.stderr.read()), daemon=True)
    t.start()
    peak = watch(proc)
    wall = time.perf_counter() - t0
    t.join()
    from onnx_dml_bench.results import read
    recs = read(out / "results.jsonl").records
    verdicts: dict = {}
    elements = 0
    for r in recs:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
        elements += math.prod(r.descriptor["InputSizes"])
    ref = sum((r.timings.reference_ms or 0.0) for r in recs) / 1e3
    runs = sum((r.timings.run_ms or 0.0) / max(1, r.timings.batch_size or 1) for r in recs) / 1e3
    slow = sorted(((r.timings.reference_ms or 0.0) + (r.timings.run_ms or 0.0), r.case_id, r.timings) for r in recs)[-5:]
    return {"profile": profile, "every": every, "code": proc.returncode, "wall": wall, "cases": len(recs),
            "elements": elements, "peak": peak, "verdicts": verdicts, "reference_s": ref, "run_s": runs,
            "slowest": slow[::-1], "out": out, "stderr": holder.get("err", "")[-2000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="both", choices=("networks", "limits", "both"))
    ap.add_argument("--every", type=int, default=1, help="run every K-th case of the profile")
    ap.add_argument("run_args", nargs=argparse.REMAINDER, help="-- then options of onnx-dml-bench run")
    a = ap.parse_args()
    passthrough = [x for x in a.run_args if x != "--"]
    for profile in (("networks", "limits") if a.profile == "both" else (a.profile,)):
        args = list(passthrough)
        if "--out" in args:          # one folder per profile
            i = args.index("--out") + 1
            args[i] = str(Path(args[i]) / profile) if a.profile == "both" else args[i]
        r = run(profile, a.every, args)
        gib = 1 << 30
        sample = f", every {r['every']}th case" if r["every"] > 1 else ""
        print(f"{profile} ({' '.join(passthrough)}{sample}): {r['cases']} cases in {r['wall']:.1f} s "
              f"({r['cases'] / r['wall']:.2f} cases/s, {r['elements'] / r['wall'] / 1e6:.1f} M input elements/s), "
              f"exit code {r['code']}; reference {r['reference_s']:.1f} s and EP runs {r['run_s']:.1f} s summed over "
              f"workers; peak memory {r['peak'] / gib:.2f} GiB (the command, its workers and their children); "
              f"verdicts {dict(sorted(r['verdicts'].items()))}")
        for total, cid, tm in r["slowest"]:
            print(f"  slow: {cid}: reference {(tm.reference_ms or 0) / 1e3:.1f} s, run {(tm.run_ms or 0) / 1e3:.1f} s")
        print(f"  results: {r['out']}")
        if r["code"] not in (0, 1):
            print(r["stderr"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
