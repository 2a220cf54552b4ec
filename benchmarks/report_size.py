"""Size and time to interactive of the HTML report for a large run.

Builds a results file of N cases (default 50,000) by replicating the records of a real smoke run on
the CPU EP under new case ids, writes report.html, and prints its size in MB and the time until the
page is interactive in headless Chromium (case data decoded, filters filled, first page of cases
drawn), measured in the page (performance.now() at data-ready) and from navigation to ready.

    .venv/bin/python benchmarks/report_size.py [--cases 50000] [--from results.jsonl] [--fail-share F] [--keep DIR]

A networks-size run: ``--from`` the results of ``run --profile networks`` (real-size cases, whose
failing records carry their first mismatches and maps), ``--fail-share 0.1`` for one case in ten
failing.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "report"))


def synthesise(src: Path, dst: Path, n: int, fail_share: float | None = None) -> int:
    """``n`` case records made from the records of ``src`` (new ids, same environment), each within
    what a record keeps today (``record.cap``). ``fail_share``: that share of them made from the
    source's records that did not pass (a run with many failures, each with its first mismatches and
    its map of where they are); default: the source's own mix."""
    from onnx_dml_bench.results import read
    from onnx_dml_bench.record import cap, to_json
    import random
    rng = random.Random(0)
    res = read(src)
    recs = res.records
    bad = [r for r in recs if r.verdict != "PASS"]
    good = [r for r in recs if r.verdict == "PASS"] or recs
    with open(dst, "w", encoding="utf-8") as f:
        for e in res.envs:
            f.write(to_json(e) + "\n")
        for i in range(n):
            if fail_share is None or not bad:
                r = recs[i % len(recs)]
            else:
                r = bad[i % len(bad)] if rng.random() < fail_share else good[i % len(good)]
            line = json.loads(to_json(cap(r)))
            # a fresh id and seed per case, and its own numbers, so the file compresses like a real run
            line["case_id"] = f"{r.case_id.rsplit('-', 1)[0]}-{rng.getrandbits(40):010x}"
            line["seed"] = rng.getrandbits(31)
            for o in line.get("outputs", {}).values():
                if o.get("max_ulp"):
                    o["max_ulp"] = rng.randrange(1, 1 << 25)
                if isinstance(o.get("max_abs"), float) and o["max_abs"]:
                    o["max_abs"] = rng.random() * o["max_abs"] * 2
            tm = line.get("timings") or {}
            for k in ("session_ms", "run_ms", "reference_ms"):
                if tm.get(k) is not None:
                    tm[k] = round(rng.random() * 20, 3)
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return n


def smoke_run(folder: Path) -> Path:
    from onnx_dml_bench.cli import main
    code = main(["run", "--ep", "cpu", "--profile", "smoke", "--out", str(folder), "--no-report", "--overwrite"])
    assert code in (0, 1), code
    return folder / "results.jsonl"


def time_to_interactive(page: Path, width: int = 1400) -> tuple[float, float, int]:
    """(ms in the page until data-ready, s from navigation to ready, cases listed) in headless Chromium."""
    from test_report_browser import CHROMIUM, Chromium, Tab
    with tempfile.TemporaryDirectory() as prof:
        b = Chromium(CHROMIUM, Path(prof))
        try:
            tab = Tab(b, width=width)
            wall = tab.load(page)
            in_page = tab.js("window.onnxDmlReport.readyMs")
            marks = tab.js("Object.fromEntries(performance.getEntriesByType('mark').map(m => [m.name, Math.round(m.startTime)])"
                           ".concat([['domInteractive', Math.round(performance.getEntriesByType('navigation')[0].domInteractive)]]))")
            print("in-page milestones (ms):", marks)
            problems = tab.problems()
            assert not problems, problems
            shown = tab.js("window.onnxDmlReport.shown()")
            tab.close()
        finally:
            b.close()
    return in_page, wall, shown


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=50_000)
    ap.add_argument("--from", dest="src", type=Path, help="a results.jsonl to replicate (default: a fresh smoke run)")
    ap.add_argument("--keep", type=Path, help="write the results and report into this folder")
    ap.add_argument("--fail-share", type=float, default=None,
                    help="make this share of the cases from the source's cases that did not pass (default: its own mix)")
    args = ap.parse_args()
    from onnx_dml_bench.report import write_all
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        src = args.src or smoke_run(Path(tmp) / "smoke")
        big = out / "results.jsonl"
        synthesise(src, big, args.cases, args.fail_share)
        t0 = time.perf_counter()
        write_all([big], out)
        t_write = time.perf_counter() - t0
        page = out / "report.html"
        size = page.stat().st_size
        in_page, wall, shown = time_to_interactive(page)
        assert shown == args.cases, (shown, args.cases)
        print(f"{args.cases} cases: report.html {size / 1e6:.2f} MB ({size / args.cases:.0f} B/case), "
              f"written in {t_write:.1f} s; interactive in headless Chromium after {in_page / 1000:.2f} s "
              f"(in-page, from navigation start), {wall:.2f} s wall clock from navigate to ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
