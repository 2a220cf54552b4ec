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

from ..errors import EXIT_FAIL, EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT
from ..expectations import ExpectationsError
from ..expectations import load as load_expectations
from ..lanes.base import PreflightError
from ..outdir import RESULTS, RUN_FILES, command, locked
from ..record import FAIL_ON_DEFAULT
from ..results import ResultsError, ResultWriter, done_ids, read
from . import args
from .args import BadArgs, EpOption, Interrupted, Terminated, interrupt_code, parse_bytes, parse_elements, parse_verdicts
from .console import Progress, console, plain, print_summary, say
from .data import write_reports


@click.command("run")
@click.option("--ep", default="cpu", show_default=True, cls=EpOption, help="the EP: {eps}")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--op", multiple=True, help="operator(s), comma-separated (default: all)")
@click.option("--dtype", multiple=True, help="data type(s), e.g. FLOAT32,f16")
@click.option("--profile", default="smoke", show_default=True,
              help="smoke | default | full | networks (the census's layers at their real sizes) | limits (GPU "
                   "boundaries; sized by --max-elements)")
@click.option("--opset", default="default", show_default=True, help="default | all | comma-separated opsets")
@click.option("--cases", "cases_file", type=click.Path(path_type=Path), help="run exactly the cases of a JSON/YAML case file")
@click.option("--jobs", "-j", default=1, type=click.IntRange(min=1), show_default=True, help="worker processes")
@click.option("--batch-size", type=click.IntRange(min=1),
              help="cases per model and session [default: 64; 256 on the DirectML EP under Wine]")
@click.option("--timeout", default=300.0, type=click.FloatRange(min=0.1), show_default=True, help="seconds per batch before its worker is killed")
@click.option("--optimization", default="disabled", show_default=True, help="graph optimisation level: disabled|basic|extended|all")
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder (results.jsonl, report.html, junit.xml, summary.json); a folder that already "
                   "holds results needs --resume or --overwrite")
@click.option("--resume", is_flag=True, help="continue the interrupted run in --out (same selection only)")
@click.option("--overwrite", is_flag=True, help="replace the results already in --out")
@click.option("--shard", help="run slice K/N of the cases")
@click.option("--fail-on", default=",".join(FAIL_ON_DEFAULT), show_default=True,
              help="verdicts, or findings (BATCH_DEPENDENT, NONDETERMINISTIC, CPU_WRONG, EP_CPU_DIFFER, DEVICE_DIFFERS), "
                   "that make the exit code non-zero")
@click.option("--repeat", default=1, type=click.IntRange(min=1), show_default=True,
              help="runs of each session of the EP under test: outputs that differ between runs are the finding "
                   "NONDETERMINISTIC, verdicts that differ FLAKY")
@click.option("--no-cpu", is_flag=True, help="skip the CPU EP side of the three-way comparison")
@click.option("--report/--no-report", default=True, help="write HTML, JUnit XML and JSON summary")
@click.option("--expectations", "expectations_file", type=click.Path(path_type=Path),
              help="known verdicts (YAML): the exit code then follows only unexpected results and fixed cases")
@click.option("--max-elements", "max_elements", default=None, metavar="N",
              help="the largest tensor of a case, in elements (e.g. 2^28, 256M; default 2^26 = 67,108,864): the "
                   "sized profiles leave larger cases out, a case file with one is refused; a limit the machine's "
                   "memory cannot hold is refused before anything runs")
@click.option("--memory-budget", "memory_budget", default=None, metavar="SIZE",
              help="the estimated memory the batches in flight may hold together (e.g. 4G; default 60% of the "
                   "memory available at the start); a case estimated over it runs when nothing else does")
@click.option("--devices", default=None, metavar="all|0,1,...",
              help="run on these devices of the host (GPUs of cuda/tensorrt, devices a plugin EP lists), one worker "
                   "pool each (--jobs workers per device), each device its own environment in the results; the "
                   "cases are dealt to the devices unless --same-cases")
@click.option("--same-cases", is_flag=True,
              help="with --devices: every device runs every case, and a device whose outputs differ bit for bit "
                   "from its siblings' (same model, driver and build) gets the finding DEVICE_DIFFERS")
@click.option("--save-outputs", "save_outputs", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="keep the EP's outputs of every case judged in DIR/<case id>/output_K.pb (the layout `judge "
                   "--outputs` reads), so that the same answers can be judged again later without the device")
def run(ep, ep_option, op, dtype, profile, opset, cases_file, jobs, batch_size, timeout, optimization, out, resume,
        overwrite, shard, fail_on, repeat, no_cpu, report, expectations_file, max_elements, memory_budget, devices, same_cases,
        save_outputs):
    """Run cases on one EP and write results (JSONL), HTML report, JUnit XML and a JSON summary."""
    from ..plan import RunPlan, RunRequest, check_optimization
    from ..registry import split_names

    fail_set = parse_verdicts(fail_on, "--fail-on", findings=True)
    known = _load_expectations(expectations_file)
    check_optimization(optimization)
    if resume and overwrite:
        raise BadArgs("--resume and --overwrite contradict each other: continue the run in --out, or replace it")
    results = out / RESULTS
    if save_outputs is not None and same_cases:
        raise BadArgs("--save-outputs with --same-cases: every device answers every case, and one folder keeps "
                      "one answer a case; save each device's outputs in a run of its own (--devices K)")
    if save_outputs is not None and save_outputs.exists() and not save_outputs.is_dir():
        raise BadArgs(f"--save-outputs {save_outputs}: is a file, not a folder")
    plan = RunPlan.build(RunRequest(
        ep=ep, ep_options=tuple(ep_option), profile=profile, ops=tuple(split_names(op)),
        dtypes=tuple(split_names(dtype)), opset=opset, cases_file=cases_file, shard=shard, optimization=optimization,
        batch_size=batch_size, timeout_s=timeout, jobs=jobs, no_cpu=no_cpu, repeat=repeat,
        max_elements=parse_elements(max_elements), memory_budget=parse_bytes(memory_budget), devices=devices,
        same_cases=same_cases, out=out, save_outputs=save_outputs))
    _check_expectations_ep(known, expectations_file, plan.lane.ep_name)
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    # the folder is this run's from the check of what it holds to the last report: a second run
    # into it is refused (FolderInUse), never interleaved
    with locked(out, args.invocation(), say=lambda m: say(m)):
        _check_out(out, results, resume, overwrite)
        if resume:
            plan.check_resume(results)
        try:      # the lane's known-answer canary first: no verdicts from a broken stack
            if plan.device_lanes:      # each device its own environment, its own canary
                envs = [plan.for_device(k).environment(argv=args.ARGV) for k in range(len(plan.device_lanes))]
            else:
                env = plan.environment(argv=args.ARGV)
        except PreflightError as e:
            console.print(f"[red]{e}[/]")
            sys.exit(EXIT_PREFLIGHT)
        if overwrite:
            for name in RUN_FILES:
                (out / name).unlink(missing_ok=True)
        if plan.device_lanes:
            recs, elapsed = _execute_devices(plan, envs, results, resume, out)
        else:
            recs, elapsed = _execute(plan, env, results, resume, out)
        print_summary(recs, f"{plan.lane.ep_name}: {len(recs)} cases in {elapsed:.1f} s")
        _end(recs, results, out, report, fail_set, known, expectations_file)


def _end(recs: list, results: Path, out: Path, report: bool, fail_set: set[str], known,
         expectations_file: Path | None = None, nothing: str = "") -> None:
    """The reports, the verdict counts and the exit code of a run (or of a judgement). ``nothing``:
    why nothing was judged (a judgement without a single output read): exit code 4 where no
    verdict of ``--fail-on`` (or unexpected result) makes it 1, never 0."""
    if report:
        try:
            write_reports([results], out, tuple(sorted(fail_set)))
        except OSError:
            say(f"the results are whole in {results}; once there is room, write the reports with: "
                f"{command('report', results, '--out', out)}")
            raise
        except KeyboardInterrupt as e:       # the records are saved whole: only the reports are missing
            print(f"\ninterrupted{' (SIGTERM)' if isinstance(e, Terminated) else ''} while writing the reports: "
                  f"the results are whole in {results}; write the reports with:\n"
                  f"  {command('report', results, '--out', out)}", file=sys.stderr, flush=True)
            raise Interrupted(interrupt_code(e)) from None
    tot = Counter(r.verdict for r in recs)
    plain("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) + f"  -> {out}")
    if known is not None:
        cls = known.classify(recs, fail_set)
        for line in cls.summary_lines():
            plain(line)
        if cls.exit_code == EXIT_OK and nothing:
            plain(f"exit code {EXIT_INCOMPLETE}: nothing judged: {nothing}")
            sys.exit(EXIT_INCOMPLETE)
        plain(expectations_exit_line(cls, expectations_file))
        sys.exit(cls.exit_code)
    hits = Counter(r.verdict if r.verdict in fail_set else next(f for f in r.findings if f in fail_set)
                   for r in recs if r.verdict in fail_set or fail_set.intersection(r.findings))
    if not hits and nothing:
        plain(f"exit code {EXIT_INCOMPLETE}: nothing judged: {nothing}")
        sys.exit(EXIT_INCOMPLETE)
    plain(exit_line(hits, fail_set, out))
    sys.exit(EXIT_FAIL if hits else EXIT_OK)


@click.command("judge")
@click.option("--cases", "cases_path", required=True, type=click.Path(path_type=Path),
              help="a case file, a fixtures folder (onnx-dml-bench fixtures) or one fixture (or bundle) folder")
@click.option("--outputs", "outputs_dir", required=True, type=click.Path(path_type=Path),
              help="the outputs to judge: OUTPUTS/<case id>/output_K.pb (ONNX backend-test layout)")
@click.option("--ep", required=True, cls=EpOption,
              help="the EP, device or runtime that produced the outputs, as the records will name it (a key of "
                   "the bench's, {keys}, or any name, e.g. WebNN)")
@click.option("--semantics", type=click.Choice(["onnx", "descriptor"]), default=None,
              help="what the outputs answer: the case's ONNX graph, or its DirectML descriptor (DxDispatch); "
                   "default descriptor for the EP of a lane that runs descriptors (dml-direct: DirectML), else onnx")
@click.option("--device", default="", help="the device that produced the outputs, as stated (recorded)")
@click.option("--driver", default="", help="its driver, as stated (recorded)")
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder (results.jsonl, report.html, junit.xml, summary.json)")
@click.option("--overwrite", is_flag=True, help="replace the results already in --out")
@click.option("--fail-on", default=",".join(FAIL_ON_DEFAULT), show_default=True,
              help="verdicts, or findings, that make the exit code non-zero")
@click.option("--no-cpu", is_flag=True, help="skip the CPU EP side (ONNX Runtime's CPU EP of this machine)")
@click.option("--report/--no-report", default=True, help="write HTML, JUnit XML and JSON summary")
@click.option("--expectations", "expectations_file", type=click.Path(path_type=Path),
              help="known verdicts (YAML): the exit code then follows only unexpected results and fixed cases")
def judge(cases_path, outputs_dir, ep, semantics, device, driver, out, overwrite, fail_on, no_cpu, report,
          expectations_file):
    """Judge outputs produced outside the bench (a hardware lab, DxDispatch, a browser's WebNN, another
    runtime): the same records, reports and exit code as `run`."""
    from ..judge import JudgeError, JudgeRun, default_semantics, ep_name, judge_outputs, load_sources
    from ..plan import RunPlan

    fail_set = parse_verdicts(fail_on, "--fail-on", findings=True)
    known = _load_expectations(expectations_file)
    try:
        name = ep_name(ep)
        sources = load_sources(cases_path)
        if not outputs_dir.is_dir():
            raise JudgeError(f"--outputs {outputs_dir}: not a folder")
    except JudgeError as e:
        raise BadArgs(str(e)) from None
    _check_expectations_ep(known, expectations_file, name)
    semantics = semantics or default_semantics(name)
    plan = RunPlan.external(name, semantics=semantics, cases_file=cases_path, outputs=outputs_dir, total=len(sources),
                            device=device, driver=driver, no_cpu=no_cpu)
    results = out / RESULTS
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    with locked(out, args.invocation(), say=lambda m: say(m)):
        _check_out(out, results, False, overwrite)
        env = plan.environment(argv=args.ARGV)
        if overwrite:
            for fname in RUN_FILES:
                (out / fname).unlink(missing_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        writer = ResultWriter(results, env)
        found = JudgeRun()
        say(f"[bold]{len(sources)}[/] cases of {cases_path} judged on the outputs in {outputs_dir} ({name}, "
            f"{semantics} semantics)")
        t0 = time.perf_counter()
        try:
            judge_outputs(sources, outputs_dir, name, semantics=semantics, cpu=plan.three_way, on_records=writer.write,
                          found=found)
        except JudgeError as e:
            raise BadArgs(str(e)) from None
        finally:
            writer.close()
        if found.stray:
            plain(f"{len(found.stray)} folder(s) of {outputs_dir} name no case of {cases_path}: "
                  + ", ".join(found.stray[:10]) + (", ..." if len(found.stray) > 10 else ""))
        recs = read(results).records
        print_summary(recs, f"{name}: {len(recs)} cases judged in {time.perf_counter() - t0:.1f} s")
        nothing = "" if found.judged else (f"none of the {len(sources)} cases of {cases_path} had outputs in "
                                           f"{outputs_dir} that could be judged")
        _end(recs, results, out, report, fail_set, known, expectations_file, nothing)


def exit_line(hits: Counter, fail_set: set[str], out: Path) -> str:
    """The last line of a run: its exit code and why, in one line."""
    names = ",".join(sorted(fail_set))
    if not hits:
        return f"exit code 0: no case got a verdict or finding of --fail-on {names}"
    n = sum(hits.values())
    what = ", ".join(f"{k} {v}" for k, v in sorted(hits.items()))
    return (f"exit code 1: {n} case{'s' if n != 1 else ''} got a verdict or finding of --fail-on {names} ({what}); "
            f"see {out / 'report.html'}, or accept known ones with --expectations FILE")


def expectations_exit_line(cls, path: Path) -> str:
    """The last line of a run with --expectations: its exit code and why, in one line."""
    if cls.exit_code == 0:
        return (f"exit code 0: every result is as {path} expects "
                f"({len(cls.expected)} known failure{'s' if len(cls.expected) != 1 else ''})")
    parts = []
    if cls.unexpected:
        parts.append(f"{len(cls.unexpected)} unexpected (new failures)")
    if cls.fixed:
        parts.append(f"{len(cls.fixed)} fixed (remove their entries)")
    return f"exit code 1: against {path}: " + ", ".join(parts)


def _check_out(out: Path, results: Path, resume: bool, overwrite: bool) -> None:
    """Never lose a run: results already in --out are continued (--resume) or replaced
    (--overwrite), never silently written over."""
    if resume or overwrite:
        return
    held = [n for n in RUN_FILES if (out / n).exists()]
    if held:
        raise BadArgs(f"--out {out} already holds results ({held[0]}): add --resume to continue that run "
                      f"or --overwrite to replace it")


def _check_expectations_ep(known, path: Path | None, ep_name: str) -> None:
    """An expectations file for another EP is refused before anything runs (it would expect nothing
    of this EP's records)."""
    if known is not None and known.ep is not None and known.ep != ep_name:
        raise BadArgs(f"--expectations {path}: lists the known results of {known.ep} (its ep:), "
                      f"not of this run's {ep_name}")


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


def _execute_devices(plan, envs: list, results: Path, resume: bool, out: Path):
    """:func:`_execute` over the devices of ``--devices``: one worker pool per device
    (``devices.run_on_devices``), each device's records under its own environment; the cases dealt
    to the devices, or every case to each (``--same-cases``), whose answers are then compared
    (``crossdevice.flag``: the finding DEVICE_DIFFERS, written into the results file)."""
    from .. import crossdevice
    from ..devices import deal, run_on_devices
    from ..results import env_id, rewrite
    cases = plan.cases
    for e in envs:
        e.env_id = env_id(e)
    before = {(r.case_id, r.env_id): r for r in read(results, allow_partial=True).records if r.verdict} \
        if resume and results.exists() else {}
    if plan.request.same_cases:
        work = [[c for c in cases if (c.id, e.env_id) not in before] for e in envs]
    else:
        done = {cid for cid, _ in before}
        work = deal([c for c in cases if c.id not in done], len(envs), plan.cfg)
    writer = ResultWriter(results, envs[0], resume=resume, others=tuple(envs[1:]))
    counts: Counter = Counter()
    got: dict = dict(before)
    total = sum(map(len, work))
    for e, w in zip(envs, work):
        say(f"[bold]{len(w)}[/] cases on [bold]{plan.lane.ep_name}[/] device {e.get('device_unit', {}).get('index')} "
            f"({e.device}, {e.get('device_unit', {}).get('uuid') or 'no UUID'}; {e.ort_package} {e.ort_version})")
    t0 = time.perf_counter()
    progress = Progress(plan.lane.ep_name, total)
    try:
        with progress:
            def on_records(recs, k):
                writer.write(recs, envs[k])
                for r in recs:
                    got[(r.case_id, r.env_id)] = r
                counts.update(r.verdict for r in recs)
                progress.advance(len(recs), counts)

            run_on_devices(plan.device_lanes, work, plan.cfg, on_records)
    except KeyboardInterrupt as e:
        writer.close()
        print(f"\ninterrupted{' (SIGTERM)' if isinstance(e, Terminated) else ''}: what is done is saved in "
              f"{results}; continue with:\n  {resume_command(out)}", file=sys.stderr, flush=True)
        raise Interrupted(interrupt_code(e)) from None
    finally:
        writer.close()
    recs = list(got.values())
    diffs = crossdevice.flag(envs, recs)
    if diffs:
        rewrite(results, crossdevice.flag)
        for line in crossdevice.summary(envs, diffs):
            plain(line)
    elif plan.request.same_cases:
        plain(f"every device gave the same bits on every case its siblings ran ({len(envs)} devices)")
    return recs, time.perf_counter() - t0


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
