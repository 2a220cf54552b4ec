"""How fast a large results file is read, reported and compared, and at what peak memory.

Makes a results file of N case records (default 200,000) by replicating the records of a committed
sample under new case ids (same environment), and a second one with 1 % of the PASS verdicts turned
into FAIL (the "current" run of a compare). Then, each in a fresh process (so its peak resident
memory is its own): ``results.read`` of the file, ``onnx-dml-bench report FILE``, and
``onnx-dml-bench compare BASE CURRENT``. Prints wall time, CPU time (user + system) and peak RSS of each.

    .venv/bin/python benchmarks/read_speed.py [--records 200000] [--from SAMPLE] [--keep DIR] [--src DIR]

``--src DIR``: run the bench from another source tree (e.g. ``git archive`` of an older revision, to
measure "before"): it goes first on PYTHONPATH of the timed processes, which run in the work folder
(so that neither the current folder nor an editable install shadows it; checked before timing).
Target: 200k records in under 30 s and under 1 GB for each of read, report and compare.

Figures (200,000 records, 385 MB, from reports/dml-lavapipe; one run each, on the 2-core
development machine shared with other jobs, hence CPU time beside wall time; before at a load
average of 5 to 10, after at 9 to 13):

    step      before (6264987)                    after
              wall s   CPU s   peak MB            wall s   CPU s   peak MB
    read       517.1   143.4     1478              27.5     7.8      651
    report     649.5   307.1     2967              80.9    22.8      867
    compare   1566.7   568.6     2614              75.9    19.5      551

(An earlier run of the same code before the last merge of main, at a load average of 7 to 8:
read 17.4 s wall, report 48.0 s, compare 40.5 s.)

What changed: the record parser is built once per class instead of walking the type hints per
record (``typing.get_type_hints`` was most of a read); the file is streamed line by line instead of
held three times (bytes, text, lines); the texts of a file are kept once; the cyclic garbage
collector is paused while records pile up and a large read's records are frozen out of later
collections; ``report`` reads each file once (it read each twice); the report's case data is
encoded and compressed case by case; ``compare`` keeps of each record what a comparison reads
(every line still validated whole).
"""
from __future__ import annotations

import argparse
import gzip
import lzma
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "reports" / "dml-lavapipe" / "results.jsonl.xz"


def synthesise(src: Path, base: Path, cur: Path, n: int) -> tuple[int, int]:
    """``n`` records replicated from ``src`` under new ids into ``base``; ``cur`` the same with every
    100th PASS turned into FAIL. Returns (records, bytes of base)."""
    head = src.read_bytes()[:6]
    opener = gzip.open if head[:2] == b"\x1f\x8b" else lzma.open if head == b"\xfd7zXZ\x00" else open
    with opener(src, "rt", encoding="utf-8") as f:
        lines = [json.loads(x) for x in f if x.strip()]
    envs = [x for x in lines if x.get("record") == "environment"]
    recs = [x for x in lines if x.get("record") != "environment"]
    flipped = 0
    with open(base, "w", encoding="utf-8") as fb, open(cur, "w", encoding="utf-8") as fc:
        for e in envs:
            fb.write(json.dumps(e, ensure_ascii=False) + "\n")
            fc.write(json.dumps(e, ensure_ascii=False) + "\n")
        for i in range(n):
            r = dict(recs[i % len(recs)])
            r["case_id"] = f"{r['case_id']}-r{i // len(recs)}"
            line = json.dumps(r, ensure_ascii=False) + "\n"
            fb.write(line)
            if r.get("verdict") == "PASS" and i % 100 == 0:
                r["verdict"] = "FAIL"
                r["attribution"] = "EP_WRONG"
                flipped += 1
                line = json.dumps(r, ensure_ascii=False) + "\n"
            fc.write(line)
    return n, base.stat().st_size


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code, last line of output) of one child
    process (CPU time as well as wall time: on a shared machine the wall time says little)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    tail = [x for x in out.splitlines() if x.strip()]
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode, (tail[-1] if tail else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--from", dest="sample", type=Path, default=SAMPLE)
    ap.add_argument("--keep", type=Path, help="folder for the files (kept); default a temporary one")
    ap.add_argument("--src", type=Path, help="source tree of the bench to time (default: this one)")
    ap.add_argument("--only", default="read,report,compare", help="comma-separated subset")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="read-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    base, cur = work / "base" / "results.jsonl", work / "cur" / "results.jsonl"
    base.parent.mkdir(exist_ok=True)
    cur.parent.mkdir(exist_ok=True)
    env = dict(os.environ)
    src = (args.src or ROOT).resolve()
    env["PYTHONPATH"] = str(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        t0 = time.perf_counter()
        n, size = synthesise(args.sample, base, cur, args.records)
        check = subprocess.run([sys.executable, "-c", "import onnx_dml_bench; print(onnx_dml_bench.__file__)"],
                               env=env, cwd=work, capture_output=True, text=True).stdout.strip()
        assert Path(check).resolve().is_relative_to(src), f"the timed processes import {check}, not {src}"
        print(f"{n} records ({size / 1e6:.0f} MB) from {args.sample.relative_to(ROOT) if args.sample.is_relative_to(ROOT) else args.sample}"
              f" in {time.perf_counter() - t0:.1f} s; bench source {src}")
        py = sys.executable
        steps = {
            "read": [py, "-c", "import sys; from onnx_dml_bench.results import read; "
                               "r = read(sys.argv[1]); print(len(r.records), 'records')", str(base)],
            "report": [py, "-m", "onnx_dml_bench", "report", str(base), "--out", str(work / "report")],
            "compare": [py, "-m", "onnx_dml_bench", "compare", str(base), str(cur), "--out", str(work / "compare")],
        }
        print(f"{'step':<8} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}  exit  last line")
        for name in args.only.split(","):
            wall, cpu, mb, rc, last = timed(steps[name], env, work)
            print(f"{name:<8} {wall:8.1f} {cpu:8.1f} {mb:8.0f}  {rc:>4}  {last[:100]}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
