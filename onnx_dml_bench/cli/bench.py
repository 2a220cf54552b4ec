"""`onnx-dml-bench bench`: the main job (``scripts/bench.sh``): DirectML against the CPU EP on
this machine, in one report.

1. On Linux, DirectML's stack is set up (``setup dml``: Wine, lavapipe, the DML EP of
   onnxruntime-node, the direct lane's harness; apt needs root) unless ``--no-dml``; on Windows
   ``onnxruntime-directml`` runs natively, and the direct lane natively when its harness is there.
2. It says what it will run and what it cannot run here, and why.
3. It runs every lane found: the CPU EP, the DML EP (``dml``), the direct lane (``dml-direct``)
   and any other EP installed, each into ``OUT/<lane>/``, each lane in its own process.
4. It merges them into ``OUT/results.jsonl`` and writes one report (``OUT/report.html``): who is
   at fault among DirectML itself, the DML EP's lowering, the CPU EP and the reference.
5. It checks each lane against the expectations shipped for it (``expectations/``) and ends with
   what it ran, what it could not run, where the report is, and a last line that says why the
   exit code is what it is: 0 every result as expected, 1 unexpected results (new failures, or
   fixed cases whose entry should go; a crash or a hang on a lane without expectations), 3 a lane
   that could not start (its canary failed), 2 bad arguments.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import click

from ..record import Verdict
from .console import plain

#: the expectations shipped per lane: file name, and what the lane's environment must be for them:
#: the CPU EP of the pinned onnxruntime package (constraints.txt; not onnxruntime-directml's, another
#: build), DirectML on lavapipe (the device must name it)
SHIPPED = {"cpu": ("cpu.yaml", "ONNX Runtime's onnxruntime package (the pinned CPU build)",
                   lambda envs, device: all(e.ort_package == "onnxruntime" for e in envs)),
           "dml": ("dml-lavapipe.yaml", "lavapipe", lambda envs, device: "lavapipe" in device or "llvmpipe" in device),
           "dml-direct": ("dml-direct-lavapipe.yaml", "lavapipe",
                          lambda envs, device: "lavapipe" in device or "llvmpipe" in device)}
#: lanes run first, in this order; other EPs found after them
ORDER = ("cpu", "dml", "dml-direct")
#: verdicts that fail a lane without shipped expectations
LOST = ("CRASH", "TIMEOUT")


@dataclass
class Lane:
    key: str
    ep: str = ""
    detail: str = ""
    code: int | None = None
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)
    expectations: str = ""           # the file checked, or why none
    unexpected: list = field(default_factory=list)
    fixed: list = field(default_factory=list)
    expected: int = 0


@click.command("bench")
@click.option("--profile", default="default", show_default=True, help="smoke | default | full")
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="the folder of the report (report.html, results.jsonl) and of each lane's run (<lane>/); "
                   "replaced")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="worker processes per lane (default: the CPU count)")
@click.option("--no-dml", is_flag=True, help="do not set up DirectML (Linux: `setup dml` needs root for apt); "
                                             "run the EPs found as they are")
@click.option("--expectations", "exp_dir", default=Path("expectations"), type=click.Path(path_type=Path),
              show_default=True, help="the folder of the expectations shipped per lane")
@click.option("--ep", "only", multiple=True, help="run only these lanes (repeatable: cpu, dml, dml-direct, ...)")
def bench(profile, out, jobs, no_dml, exp_dir, only):
    """The main job: set up DirectML, run the CPU EP, the DML EP and the direct DirectML lane (and
    any other EP found), write one report of who is at fault, and exit as the shipped expectations say."""
    from ..plan import PROFILES
    from .args import BadArgs
    if profile not in PROFILES:
        raise BadArgs(f"--profile: {profile!r} is not one of {', '.join(PROFILES)}")
    jobs = jobs or os.cpu_count() or 1
    # the folder is this bench's from here to its last line: a second bench (or any command that
    # writes there) is refused at once, never mixed in
    from ..outdir import hold_folder
    from .args import invocation
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    click.get_current_context().call_on_close(hold_folder(out, invocation(), say=plain))
    t0 = time.monotonic()
    plain(f"bench: the {profile} profile on every lane this machine can run, into {out}/ (report: {out}/report.html)")
    not_run: dict[str, str] = {}
    if not no_dml and (not only or {"dml", "dml-direct"} & set(only)):
        why = _setup_dml()
        if why:
            not_run["dml, dml-direct"] = why
    else:
        not_run["dml, dml-direct"] = "--no-dml: DirectML not set up (lanes already set up still run)"
    lanes, missing = _plan()
    if only:
        unknown = set(only) - {ln.key for ln in lanes} - set(missing)
        if unknown:
            raise BadArgs(f"--ep: unknown lane(s) {', '.join(sorted(unknown))}; known: "
                          f"{', '.join([ln.key for ln in lanes] + sorted(missing))}")
        lanes = [ln for ln in lanes if ln.key in only]
        missing = {k: why for k, why in missing.items() if k in only}
        not_run = {k: why for k, why in not_run.items() if any(x in only for x in k.split(", "))}
    for k, why in missing.items():
        if not any(k in key.split(", ") for key in not_run):
            not_run[k] = why
    plain("bench: will run " + "; ".join(f"{ln.key} ({ln.detail})" for ln in lanes))
    for k, why in not_run.items():
        plain(f"bench: cannot run {k}: {why}")
    out.mkdir(parents=True, exist_ok=True)
    for ln in lanes:
        _run_lane(ln, profile, jobs, out)
    results = [out / ln.key / "results.jsonl" for ln in lanes if (out / ln.key / "results.jsonl").is_file()]
    report = _report(results, out)
    for ln in lanes:
        _check(ln, out, exp_dir)
    code = _finish(lanes, not_run, report, out, time.monotonic() - t0)
    sys.exit(code)


def _setup_dml() -> str:
    """Set DirectML up (a progress line per step); '' when done, else why not, in one line."""
    if sys.platform == "win32":
        plain("bench: DirectML: onnxruntime-directml natively, and the direct lane natively when its harness is there")
        cmd = [sys.executable, "-m", "onnx_dml_bench", "setup", "dml"]
    elif sys.platform.startswith("linux"):
        plain("bench: DirectML: setting up its stack (onnx-dml-bench setup dml; skip with --no-dml)")
        cmd = [sys.executable, "-m", "onnx_dml_bench", "setup", "dml"]
    else:
        return f"DirectML runs on Linux (under Wine) and Windows only, not on {sys.platform}"
    p = subprocess.run(cmd, stdout=None, stderr=subprocess.PIPE, text=True)
    if p.returncode == 0:
        return ""
    err = [line.strip() for line in (p.stderr or "").splitlines() if line.strip()]
    sys.stderr.write(p.stderr or "")
    first = err[0].removeprefix("setup dml: ") if err else f"exit code {p.returncode}"
    hint = next((line for line in err if "apt-get install" in line), "")
    return (f"`onnx-dml-bench setup dml` failed: {first}"
            + (f"; as root, or after `{hint.strip()}`, run it again" if hint else "")
            + "; or pass --no-dml to run the other lanes only")


def _plan() -> tuple[list[Lane], dict[str, str]]:
    """The lanes to run (ok here) and, for every other EP the bench knows, why it cannot run."""
    from ..lanes.catalog import ep_rows
    rows = ep_rows()
    ok = {r["key"]: r for r in rows if r["status"] == "ok"}
    keys = [k for k in ORDER if k in ok] + sorted(k for k in ok if k not in ORDER and not k.startswith("plugin"))
    lanes = [Lane(k, ok[k]["ep"], " ".join(x for x in (str(ok[k].get("package") or ""),) if x) or ok[k]["ep"])
             for k in keys]
    missing = {r["key"]: r["status"].removeprefix("unavailable: ")
               for r in rows if r["status"] != "ok" and not r["key"].startswith("plugin")}
    return lanes, missing


def _run_lane(ln: Lane, profile: str, jobs: int, out: Path) -> None:
    from ..results import read
    plain(f"bench: == {ln.key}: {ln.ep}, the {profile} profile, {jobs} worker{'s' if jobs != 1 else ''}")
    cmd = [sys.executable, "-m", "onnx_dml_bench", "run", "--ep", ln.key, "--profile", profile, "--jobs", str(jobs),
           "--out", str(out / ln.key), "--overwrite", "--no-report", "--fail-on", ",".join(LOST)]
    t = time.monotonic()
    ln.code = subprocess.run(cmd).returncode
    ln.seconds = time.monotonic() - t
    res = out / ln.key / "results.jsonl"
    if res.is_file():
        try:
            ln.counts = Counter(r.verdict for r in read(res, allow_partial=True).records)
        except Exception as e:  # noqa: BLE001 - an unreadable file is the lane's outcome, said below
            plain(f"bench: {ln.key}: its results cannot be read: {e}")


def _report(results: list[Path], out: Path) -> Path | None:
    from ..results import merge
    from .data import write_reports
    if not results:
        return None
    merged = out / "results.jsonl"
    merged.unlink(missing_ok=True)
    merge(results, merged)
    write_reports([merged], out)
    return out / "report.html"


def _check(ln: Lane, out: Path, exp_dir: Path) -> None:
    """The lane's results against its shipped expectations (where one applies to its device)."""
    from .. import expectations
    from ..results import read
    res = out / ln.key / "results.jsonl"
    if not res.is_file():
        return
    got = read(res, allow_partial=True)
    recs = got.records
    name, what, applies = SHIPPED.get(ln.key, ("", "", None))
    path = exp_dir / name if name else None
    device = " ".join(str(e.device) for e in got.envs).lower()
    if path is None or not path.is_file() or not applies(got.envs, device):
        ln.expectations = ("no expectations shipped for this lane" if path is None or not path.is_file()
                           else f"{path} is for {what}, not this one") + ": only CRASH and TIMEOUT count"
        ln.unexpected = [f"{r.case_id} {r.verdict}" for r in recs if r.verdict in LOST]
        return
    cls = expectations.load(path).classify(recs, Verdict.FAIL_ON)
    ln.expectations = str(path)
    ln.unexpected = [f"{m.case_id} {m.verdict}" for m in cls.unexpected]
    ln.fixed = [m.case_id for m in cls.fixed]
    ln.expected = len(cls.expected)


def _finish(lanes: list[Lane], not_run: dict[str, str], report: Path | None, out: Path, seconds: float) -> int:
    from ..report.fault import headline, summary
    from ..results import read
    plain("")
    plain(f"bench: ran in {seconds:.0f} s:")
    for ln in lanes:
        counts = ", ".join(f"{v} {ln.counts[v]}" for v in Verdict if ln.counts.get(v))
        state = {0: "", 1: "", 3: " (its canary failed: no verdicts)", 130: " (interrupted)"}.get(ln.code, f" (exit code {ln.code})")
        plain(f"  {ln.key}: {sum(ln.counts.values())} cases in {ln.seconds:.0f} s: {counts or 'none'}{state}")
    for k, why in not_run.items():
        plain(f"  not run: {k}: {why}")
    if report is not None:
        res = read(out / "results.jsonl")
        for line in headline(summary(res.records, envs=res.envs), where="in the report"):
            plain(f"  {line}")
    for ln in lanes:
        if ln.expectations.endswith("only CRASH and TIMEOUT count"):
            plain(f"  {ln.key}: {ln.expectations}" + (f"; {len(ln.unexpected)} crashed or hung" if ln.unexpected else ""))
        elif ln.expectations:
            plain(f"  {ln.key}: against {ln.expectations}: {ln.expected} expected, {len(ln.unexpected)} unexpected, "
                  f"{len(ln.fixed)} fixed")
        for x in ln.unexpected[:20]:
            plain(f"    unexpected: {x}")
        for x in ln.fixed[:20]:
            plain(f"    fixed (remove its entry): {x}")
    plain(f"  report: {report}" if report else "  report: none (no lane gave results)")
    bad = [ln for ln in lanes if ln.unexpected or ln.fixed]
    broken = [ln for ln in lanes if ln.code not in (0, 1)]
    if bad:
        parts = [f"{ln.key}: {len(ln.unexpected)} unexpected" + (f", {len(ln.fixed)} fixed" if ln.fixed else "")
                 for ln in bad]
        plain(f"bench: exit code 1: unexpected results against the shipped expectations ({'; '.join(parts)}); "
              f"see {report}")
        return 1
    if broken or not lanes:
        names = ", ".join(f"{ln.key} (exit code {ln.code})" for ln in broken) or "no lane"
        plain(f"bench: exit code 3: a lane could not run: {names}; the lines above say why")
        return 3
    checked = [ln.key for ln in lanes if ln.expectations and not ln.expectations.endswith("only CRASH and TIMEOUT count")]
    dml_why = next((why for k, why in not_run.items() if k.startswith("dml")), "")
    plain(f"bench: exit code 0: every result as expected (checked against the shipped expectations: "
          f"{', '.join(checked) or 'none applies'})" + (f"; DirectML not run: {dml_why}" if dml_why else ""))
    return 0
