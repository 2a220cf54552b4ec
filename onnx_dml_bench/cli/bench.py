"""`onnx-dml-bench bench`: the main job (``scripts/bench.sh``): DirectML against the CPU EP on
this machine, in one report.

1. On Linux, DirectML's stack is set up (``setup dml``: Wine, lavapipe, the DML EP of
   onnxruntime-node, the direct lane's harness; apt needs root) unless ``--no-dml``; on Windows
   ``onnxruntime-directml`` runs natively, and the direct lane natively when its harness is there.
2. It says what it will run and what it cannot run here, and why.
3. It runs every lane found: the CPU EP, the DML EP (``dml``), the direct lane (``dml-direct``)
   and any other EP installed, each into ``OUT/<lane>/``, each lane in its own process.
4. It merges them into ``OUT/results.jsonl``, groups every failure into bugs (party at fault and
   failure signature), shrinks and bundles one case per DirectML / DML EP bug within a time budget
   (``--shrink-budget``), and writes one report (``OUT/report.html``): the bugs first, who is at
   fault among DirectML itself, the DML EP's lowering, the CPU EP and the reference, and what
   changed since the previous run (kept in ``OUT/previous/``).
5. It checks each lane against the expectations shipped for it (``expectations/``) and ends with a
   line per lane, the bugs, what changed, where the report is, and a last line that says why the
   exit code is what it is: 0 every result as expected, 1 unexpected results (new failures, or
   fixed cases whose entry should go; a crash or a hang on a lane without expectations), 3 a lane
   that could not start (its canary failed), 2 bad arguments.

The policy lives in :mod:`onnx_dml_bench.mainjob`; this module is its command.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click

from .args import EpOption
from .console import plain


@click.command("bench")
@click.option("--profile", default="default", show_default=True, help="smoke | default | full")
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="the folder of the report (report.html, results.jsonl) and of each lane's run (<lane>/); "
                   "replaced, the run before kept in OUT/previous/")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="worker processes per lane (default: the CPU count)")
@click.option("--no-dml", is_flag=True, help="do not set up DirectML (Linux: `setup dml` needs root for apt); "
                                             "run the EPs found as they are")
@click.option("--expectations", "exp_dir", default=Path("expectations"), type=click.Path(path_type=Path),
              show_default=True, help="the folder of the expectations shipped per lane")
@click.option("--ep", "only", multiple=True, cls=EpOption, help="run only these lanes (repeatable: {keys})")
@click.option("--shrink-budget", "shrink_budget", default=60.0, type=click.FloatRange(min=0), show_default=True,
              help="seconds for shrinking and bundling one case per DirectML / DML EP bug (0: none)")
@click.option("--tables", is_flag=True, help="show each lane's own output (progress, per-operator tables) "
                                             "rather than only its log file")
def bench(profile, out, jobs, no_dml, exp_dir, only, shrink_budget, tables):
    """The main job: set up DirectML, run the CPU EP, the DML EP and the direct DirectML lane (and
    any other EP found), group the failures into bugs with a minimal repro each, write one report
    of who is at fault and what changed, and exit as the shipped expectations say."""
    from .. import mainjob as M
    from ..lanes.catalog import set_up_by
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
    out.mkdir(parents=True, exist_ok=True)
    not_run: dict[str, str] = {}
    dml = set_up_by("dml")              # the lanes `setup dml` installs
    if not no_dml and (not only or set(dml) & set(only)):
        why = _setup_dml(out)
        if why:
            not_run[", ".join(dml)] = why
    else:
        not_run[", ".join(dml)] = "--no-dml: DirectML not set up (lanes already set up still run)"
    lanes, missing = M.plan_lanes()
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
    prev = M.keep_previous(out)
    for ln in lanes:
        M.run_lane(ln, profile, jobs, out, plain, tables)
    merged = M.merge_lanes(lanes, out)
    links: dict[str, str] = {}
    for ln in lanes:
        links.update(M.check(ln, out, exp_dir))
    report, bugs, known, shrinking, previous = None, [], 0, None, None
    if merged is not None:
        report, bugs, known, shrinking, previous = _bugs_and_report(merged, out, lanes, links, prev, shrink_budget)
    lines, code = M.account(lanes, not_run, report, time.monotonic() - t0, bugs, known, shrinking, previous, out)
    for line in lines:
        plain(line)
    sys.exit(code)


def _bugs_and_report(merged: Path, out: Path, lanes, links: dict, prev, budget: float):
    """The bugs of the merged run, shrunk and bundled within ``budget``; what changed since ``prev``;
    bench.json and the reports."""
    from .. import mainjob as M
    from ..outdir import locked
    from ..report import write_all
    from ..report import bugs as BG
    from ..report import fault as FT
    from ..report.data import load
    from .args import invocation
    from .console import log
    res = load([merged])
    by = FT.blames(res.records, envs=res.envs)
    bugs = BG.group(res.records, by)
    with locked(out, invocation(), say=log):      # shrunk/, bundle/, bench.json and the reports
        shrinking = M.shrink_bugs(merged, bugs, budget, plain, res)
        previous = M.what_changed(prev, res, bugs)
        M.write_facts(out, len(res.records), lanes, links, shrinking, previous)
        write_all(res, out)
    bugs, _ = BG.of_results(res, by)
    known = FT.summary(res.records, by=by, envs=res.envs)["totals"].get("cpu-known", 0)
    return out / "report.html", bugs, known, shrinking, previous


def _setup_dml(out: Path) -> str:
    """Set DirectML up (its output into OUT/setup-dml.log, its last line here); '' when done, else
    why not, in one line."""
    if sys.platform not in ("win32",) and not sys.platform.startswith("linux"):
        return f"DirectML runs on Linux (under Wine) and Windows only, not on {sys.platform}"
    log = out / "setup-dml.log"
    if sys.platform == "win32":
        plain(f"bench: DirectML: onnxruntime-directml natively, and the direct lane natively when its harness is there "
              f"(its output: {log})")
    else:
        plain(f"bench: DirectML: setting up its stack (onnx-dml-bench setup dml; skip with --no-dml; its output: {log})")
    cmd = [sys.executable, "-m", "onnx_dml_bench", "setup", "dml"]
    with open(log, "w", encoding="utf-8", errors="replace") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, errors="replace")
        f.write(p.stderr or "")
    if p.returncode == 0:
        try:
            last = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        except OSError:
            last = []
        plain(f"bench: {last[-1].strip()}" if last else "bench: DirectML set up")
        return ""
    err = [line.strip() for line in (p.stderr or "").splitlines() if line.strip()]
    sys.stderr.write(p.stderr or "")
    first = err[0].removeprefix("setup dml: ") if err else f"exit code {p.returncode}"
    hint = next((line for line in err if "apt-get install" in line), "")
    return (f"`onnx-dml-bench setup dml` failed: {first}"
            + (f"; as root, or after `{hint.strip()}`, run it again" if hint else "")
            + "; or pass --no-dml to run the other lanes only")
