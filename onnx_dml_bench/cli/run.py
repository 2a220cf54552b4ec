"""`onnx-dml-bench run`: the run plan (``plan.RunPlan``) built from the options, its cases run
through ``execute.run_cases`` with the records streamed to the results file, the reports, and the
exit code (``--fail-on``, or the expectations' classification)."""
from __future__ import annotations

import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import click

from ..errors import EXIT_FAIL, EXIT_OK, EXIT_PREFLIGHT
from ..expectations import ExpectationsError
from ..expectations import load as load_expectations
from ..lanes.base import PreflightError
from ..outdir import RESULTS, RUN_FILES, command, locked
from ..record import Verdict
from ..results import ResultsError, ResultWriter, done_ids, read
from . import args
from .args import BadArgs, Interrupted, Terminated, interrupt_code, parse_elements, parse_verdicts
from .console import Progress, console, plain, print_summary, say
from .data import write_reports


@click.command("run")
@click.option("--ep", default="cpu", show_default=True, help="cpu, cuda, dml, dml-direct, openvino, webgpu, a provider name, or plugin:PATH[:EpName]")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--op", multiple=True, help="operator(s), comma-separated (default: all)")
@click.option("--dtype", multiple=True, help="data type(s), e.g. FLOAT32,f16")
@click.option("--profile", default="smoke", show_default=True,
              help="smoke | default | full | networks (the census's layers at their real sizes) | limits (GPU "
                   "boundaries; sized by --max-elements)")
@click.option("--opset", default="default", show_default=True, help="default | all | comma-separated opsets")
@click.option("--cases", "cases_file", type=click.Path(path_type=Path), help="run exactly the cases of a JSON/YAML case file")
@click.option("--jobs", "-j", default=1, type=click.IntRange(min=1), show_default=True, help="worker processes")
@click.option("--batch-size", default=64, type=click.IntRange(min=1), show_default=True, help="cases per model and session")
@click.option("--timeout", default=300.0, type=click.FloatRange(min=0.1), show_default=True, help="seconds per batch before its worker is killed")
@click.option("--optimization", default="disabled", show_default=True, help="graph optimisation level: disabled|basic|extended|all")
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder (results.jsonl, report.html, junit.xml, summary.json); a folder that already "
                   "holds results needs --resume or --overwrite")
@click.option("--resume", is_flag=True, help="continue the interrupted run in --out (same selection only)")
@click.option("--overwrite", is_flag=True, help="replace the results already in --out")
@click.option("--shard", help="run slice K/N of the cases")
@click.option("--fail-on", default=",".join(Verdict.FAIL_ON), show_default=True,
              help="verdicts, or EP-vs-CPU findings (CPU_WRONG, EP_CPU_DIFFER), that make the exit code non-zero")
@click.option("--no-cpu", is_flag=True, help="skip the CPU EP side of the three-way comparison")
@click.option("--report/--no-report", default=True, help="write HTML, JUnit XML and JSON summary")
@click.option("--expectations", "expectations_file", type=click.Path(path_type=Path),
              help="known verdicts (YAML): the exit code then follows only unexpected results and fixed cases")
@click.option("--max-elements", "max_elements", default=None, metavar="N",
              help="the largest tensor of a case, in elements (e.g. 2^28, 256M; default 2^26 = 67,108,864): the "
                   "sized profiles leave larger cases out, a case file with one is refused; a limit the machine's "
                   "memory cannot hold is refused before anything runs")
def run(ep, ep_option, op, dtype, profile, opset, cases_file, jobs, batch_size, timeout, optimization, out, resume,
        overwrite, shard, fail_on, no_cpu, report, expectations_file, max_elements):
    """Run cases on one EP and write results (JSONL), HTML report, JUnit XML and a JSON summary."""
    from ..plan import RunPlan, RunRequest, check_optimization
    from ..registry import split_names

    fail_set = parse_verdicts(fail_on, "--fail-on", findings=True)
    known = _load_expectations(expectations_file)
    check_optimization(optimization)
    if resume and overwrite:
        raise BadArgs("--resume and --overwrite contradict each other: continue the run in --out, or replace it")
    results = out / RESULTS
    plan = RunPlan.build(RunRequest(
        ep=ep, ep_options=tuple(ep_option), profile=profile, ops=tuple(split_names(op)),
        dtypes=tuple(split_names(dtype)), opset=opset, cases_file=cases_file, shard=shard, optimization=optimization,
        batch_size=batch_size, timeout_s=timeout, jobs=jobs, no_cpu=no_cpu,
        max_elements=parse_elements(max_elements)))
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    # the folder is this run's from the check of what it holds to the last report: a second run
    # into it is refused (FolderInUse), never interleaved
    with locked(out, args.invocation(), say=lambda m: say(m)):
        _check_out(out, results, resume, overwrite)
        if resume:
            plan.check_resume(results)
        try:      # the lane's known-answer canary first: no verdicts from a broken stack
            env = plan.environment(argv=args.ARGV)
        except PreflightError as e:
            console.print(f"[red]{e}[/]")
            sys.exit(EXIT_PREFLIGHT)
        if overwrite:
            for name in RUN_FILES:
                (out / name).unlink(missing_ok=True)
        recs, elapsed = _execute(plan, env, results, resume, out)
        print_summary(recs, f"{plan.lane.ep_name}: {len(recs)} cases in {elapsed:.1f} s")
        if report:
            try:
                write_reports([results], out, tuple(sorted(fail_set)))
            except OSError:
                say(f"the results are whole in {results}; once there is room, write the reports with: "
                    f"{command('report', results, '--out', out)}")
                raise
    tot = Counter(r.verdict for r in recs)
    plain("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) + f"  -> {out}")
    if known is not None:
        cls = known.classify(recs, fail_set)
        for line in cls.summary_lines():
            plain(line)
        sys.exit(cls.exit_code)
    sys.exit(EXIT_FAIL if any(r.verdict in fail_set or r.finding in fail_set for r in recs) else EXIT_OK)


def _check_out(out: Path, results: Path, resume: bool, overwrite: bool) -> None:
    """Never lose a run: results already in --out are continued (--resume) or replaced
    (--overwrite), never silently written over."""
    if resume or overwrite:
        return
    held = [n for n in RUN_FILES if (out / n).exists()]
    if held:
        raise BadArgs(f"--out {out} already holds results ({held[0]}): add --resume to continue that run "
                      f"or --overwrite to replace it")


def _load_expectations(path: Path | None):
    if path is None:
        return None
    try:
        return load_expectations(path)
    except (ExpectationsError, OSError) as e:
        raise BadArgs(f"--expectations: {e}") from None


def _execute(plan, env, results: Path, resume: bool, out: Path):
    """Run the cases of ``plan`` not done yet, streaming records to ``results``; (all records of
    the run: those of the run resumed and this one's, as this process knows them; seconds).
    Ctrl-C or SIGTERM stops the run with what is saved and the command that continues it (exit
    code 130 or 143); a file that cannot be written stops it the same way (exit code 5)."""
    from ..execute import run_cases
    cases, lane = plan.cases, plan.lane
    before = {r.case_id: r for r in read(results, allow_partial=True).records if r.verdict} \
        if resume and results.exists() else {}
    todo = [c for c in cases if c.id not in before]
    writer = ResultWriter(results, env, resume=resume)
    counts: Counter = Counter()
    got: dict = dict(before)
    say(f"[bold]{len(todo)}[/] cases on [bold]{lane.ep_name}[/] ({env.ort_package} {env.ort_version}, "
        f"device: {env.device})" + (f"; {len(before)} already done" if before else ""))
    t0 = time.perf_counter()
    progress = Progress(lane.ep_name, len(todo))
    try:
        with progress:
            def on_records(recs):
                writer.write(recs)
                for r in recs:
                    got[r.case_id] = r
                counts.update(r.verdict for r in recs)
                progress.advance(len(recs), counts)

            run_cases(todo, lane, plan.cfg, on_records)
    except KeyboardInterrupt as e:
        writer.close()
        print(f"\ninterrupted{' (SIGTERM)' if isinstance(e, Terminated) else ''}: "
              f"{_saved(results)} of {len(cases)} cases are saved in {results}; continue with:\n"
              f"  {resume_command(out)}", file=sys.stderr, flush=True)
        raise Interrupted(interrupt_code(e)) from None
    except OSError:
        writer.close()
        print(f"stopped: {_saved(results)} of {len(cases)} cases are saved in {results}; once it can be written "
              f"again, continue with:\n  {resume_command(out)}", file=sys.stderr, flush=True)
        raise
    finally:
        writer.close()
    return list(got.values()), time.perf_counter() - t0


def _saved(results: Path) -> int:
    """How many cases the results file holds whole (its last line may be cut off)."""
    try:
        return len(done_ids(results))
    except (ResultsError, OSError):
        return 0


def resume_command(out: Path) -> str:
    """The command line of this run with --resume (and without --overwrite), --out included."""
    argv = [a for a in args.ARGV if a != "--overwrite"]
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", str(out)]
    if "--resume" not in argv:
        argv.append("--resume")
    return "onnx-dml-bench " + shlex.join(argv)
