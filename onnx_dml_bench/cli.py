"""The `onnx-dml-bench` command."""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import __version__
from .errors import PlanError
from .outdir import RESULTS, RUN_FILES, TRIAGE_MD
from .record import FINDINGS, VERDICTS, Verdict
from .registry import split_names
from .results import ResultsError

@click.group(help="DirectML operator conformance for ONNX Runtime execution providers.")
@click.version_option(__version__, prog_name="onnx-dml-bench")
def app():
    pass


@app.group("setup", help="Install a backend's stack.")
def setup_app():
    pass


console = Console(stderr=True)
out_console = Console()
#: the arguments of this invocation (``main(argv)`` or the process's), for records and resume hints
_ARGV: list[str] = []


def say(msg: str, err: bool = True) -> None:
    """One line for a person: rich markup on a terminal, plain text (no colour, no cursor control,
    no wrapping) when the stream is a file or a CI log."""
    con = console if err else out_console
    if con.is_terminal:
        con.print(msg)
    else:
        from rich.text import Text
        print(Text.from_markup(msg).plain, file=sys.stderr if err else sys.stdout, flush=True)


def plain(msg: str, err: bool = False) -> None:
    """A line printed as it is (no markup)."""
    con = console if err else out_console
    if con.is_terminal:
        con.print(msg, markup=False, highlight=False)
    else:
        print(msg, file=sys.stderr if err else sys.stdout, flush=True)


class BadArgs(Exception):
    pass


def summary_table(recs: list, title: str) -> Table:
    t = Table(title=title or None)
    t.add_column("operator")
    t.add_column("dtype")
    verdicts = [v for v in Verdict if any(r.verdict == v for r in recs)]
    for v in verdicts:
        t.add_column(v.value, justify="right", style=v.style)
    rows: dict = {}
    for r in recs:
        rows.setdefault((r.op, r.dtype), Counter())[r.verdict] += 1
    for (op, dt), cnt in sorted(rows.items()):
        t.add_row(op, dt, *[str(cnt.get(v, "")) for v in verdicts])
    return t


@app.command("run")
@click.option("--ep", default="cpu", show_default=True, help="cpu, cuda, dml, openvino, webgpu, a provider name, or plugin:PATH[:EpName]")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--op", multiple=True, help="operator(s), comma-separated (default: all)")
@click.option("--dtype", multiple=True, help="data type(s), e.g. FLOAT32,f16")
@click.option("--profile", default="smoke", show_default=True, help="smoke | default | full")
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
def run(ep, ep_option, op, dtype, profile, opset, cases_file, jobs, batch_size, timeout, optimization, out, resume,
        overwrite, shard, fail_on, no_cpu, report, expectations_file):
    """Run cases on one EP and write results (JSONL), HTML report, JUnit XML and a JSON summary."""
    from .lanes import PreflightError
    from .plan import RunPlan, RunRequest, check_optimization

    fail_set = _parse_verdicts(fail_on, "--fail-on", findings=True)
    known = _load_expectations(expectations_file)
    check_optimization(optimization)
    if resume and overwrite:
        raise BadArgs("--resume and --overwrite contradict each other: continue the run in --out, or replace it")
    results = out / RESULTS
    plan = RunPlan.build(RunRequest(
        ep=ep, ep_options=tuple(ep_option), profile=profile, ops=tuple(split_names(op)),
        dtypes=tuple(split_names(dtype)), opset=opset, cases_file=cases_file, shard=shard, optimization=optimization,
        batch_size=batch_size, timeout_s=timeout, jobs=jobs, no_cpu=no_cpu))
    _check_out(out, results, resume, overwrite)
    if resume:
        plan.check_resume(results)
    try:      # the lane's known-answer canary first: no verdicts from a broken stack
        env = plan.environment(argv=_ARGV)
    except PreflightError as e:
        console.print(f"[red]{e}[/]")
        sys.exit(3)
    if overwrite:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    recs, elapsed = _execute(plan, env, results, resume, out)
    print_summary(recs, f"{plan.lane.ep_name}: {len(recs)} cases in {elapsed:.1f} s")
    if report:
        _write_reports([results], out, tuple(sorted(fail_set)))
    tot = Counter(r.verdict for r in recs)
    plain("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) + f"  -> {out}")
    if known is not None:
        cls = known.classify(recs, fail_set)
        for line in cls.summary_lines():
            plain(line)
        sys.exit(cls.exit_code)
    sys.exit(1 if any(r.verdict in fail_set or r.finding in fail_set for r in recs) else 0)


def _check_out(out: Path, results: Path, resume: bool, overwrite: bool) -> None:
    """Never lose a run: results already in --out are continued (--resume) or replaced
    (--overwrite), never silently written over."""
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    if resume or overwrite:
        return
    held = [n for n in RUN_FILES if (out / n).exists()]
    if held:
        raise BadArgs(f"--out {out} already holds results ({held[0]}): add --resume to continue that run "
                      f"or --overwrite to replace it")


def _load_expectations(path: Path | None):
    from .expectations import ExpectationsError, load
    if path is None:
        return None
    try:
        return load(path)
    except (ExpectationsError, OSError) as e:
        raise BadArgs(f"--expectations: {e}") from None


def _parse_verdicts(text: str, option: str, findings: bool = False) -> set[str]:
    """Verdict names (and, where ``findings``, EP-vs-CPU finding names) of a comma list."""
    known = VERDICTS + (FINDINGS if findings else ())
    wanted = {v.strip().upper() for v in text.split(",") if v.strip()}
    bad = wanted - set(known)
    if bad:
        raise BadArgs(f"{option}: unknown name(s) {', '.join(sorted(bad))}; known: {', '.join(known)}")
    return wanted


def _execute(plan, env, results: Path, resume: bool, out: Path):
    """Run the cases of ``plan`` not done yet, streaming records to ``results``; (all records,
    seconds). Ctrl-C stops the run with what is saved and the command that continues it (exit
    code 130)."""
    from .execute import run_cases
    from .results import ResultWriter, done_ids, read
    cases, lane = plan.cases, plan.lane
    skip = done_ids(results) if resume else set()
    todo = [c for c in cases if c.id not in skip]
    writer = ResultWriter(results, env, resume=resume)
    counts: Counter = Counter()
    say(f"[bold]{len(todo)}[/] cases on [bold]{lane.ep_name}[/] ({env.ort_package} {env.ort_version}, "
        f"device: {env.device})" + (f"; {len(skip)} already done" if skip else ""))
    t0 = time.perf_counter()
    progress = _Progress(lane.ep_name, len(todo))
    try:
        with progress:
            def on_records(recs):
                writer.write(recs)
                counts.update(r.verdict for r in recs)
                progress.advance(len(recs), counts)

            run_cases(todo, lane, plan.cfg, on_records)
    except KeyboardInterrupt:
        writer.close()
        saved = len(done_ids(results))
        print(f"\ninterrupted: {saved} of {len(cases)} cases are saved in {results}; continue with:\n"
              f"  {resume_command(out)}", file=sys.stderr, flush=True)
        raise _Interrupted() from None
    finally:
        writer.close()
    return read(results).records, time.perf_counter() - t0


class _Interrupted(Exception):
    """Ctrl-C during a run, after its message was printed (exit code 130)."""


def resume_command(out: Path) -> str:
    """The command line of this run with --resume (and without --overwrite), --out included."""
    args = [a for a in _ARGV if a != "--overwrite"]
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        args += ["--out", str(out)]
    if "--resume" not in args:
        args.append("--resume")
    return "onnx-dml-bench " + shlex.join(args)


class _Progress:
    """A progress bar laid out for the terminal, or plain lines (at most one per 5 % or 10 s) in
    a log: no cursor control, no line broken mid-phrase."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done = name, total, 0
        self.bar = None
        self.last_t, self.last_n = time.monotonic(), 0
        self.t0 = time.monotonic()
        if console.is_terminal:
            self.bar = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                TimeRemainingColumn(), console=console, transient=False)
            self.task = self.bar.add_task(name, total=total, counts="")

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            return self.bar.__exit__(*exc)
        return False

    def advance(self, n: int, counts: Counter) -> None:
        self.done += n
        text = " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))
        if self.bar is not None:
            self.bar.update(self.task, advance=n, counts=text)
            return
        now = time.monotonic()
        step = max(1, self.total // 20)
        if self.done >= self.total or self.done - self.last_n >= step or now - self.last_t >= 10:
            self.last_t, self.last_n = now, self.done
            print(f"{self.name}: {self.done}/{self.total} cases, {now - self.t0:.0f} s, {text}",
                  file=sys.stderr, flush=True)


def print_summary(recs: list, title: str) -> None:
    """Verdict counts per operator and data type: a table fitted to the terminal, or one plain line
    per row in a log."""
    if out_console.is_terminal:
        # the title on its own line: a table narrower than it would wrap it mid-phrase
        out_console.print(title, style="bold", markup=False, highlight=False)
        out_console.print(summary_table(recs, ""))
        return
    print(title)
    rows: dict = {}
    for r in recs:
        rows.setdefault((r.op, r.dtype), Counter())[r.verdict] += 1
    for (op, dt), cnt in sorted(rows.items()):
        print(f"  {op} {dt}: " + ", ".join(f"{v} {cnt[v]}" for v in Verdict if cnt.get(v)))
    sys.stdout.flush()


def _write_reports(results, out: Path, fail_on=Verdict.FAIL_ON) -> None:
    """The reports of ``results``: result files, or results already loaded (``report.load``)."""
    from .report import write_all
    paths = write_all(results if not isinstance(results, (list, tuple)) else list(results), out, fail_on=fail_on)
    for p in paths:
        plain(f"wrote {p}")


@app.command("eps")
def eps():
    """List every EP the bench knows: ok, or why it is unavailable and the command that makes it available."""
    from .lanes import ep_rows
    rows = ep_rows()
    if out_console.is_terminal:
        t = Table(title="execution providers")
        for col in ("key", "ep", "status", "package / device", "to make it available"):
            t.add_column(col, overflow="fold")
        for r in rows:
            t.add_row(r["key"], r["ep"], r["status"], " ".join(x for x in (r.get("package", ""), str(r.get("device") or "")) if x),
                      r["how"], style="green" if r["status"] == "ok" else None)
        out_console.print(t)
        return
    for r in rows:
        extra = " ".join(x for x in (r.get("package", ""), str(r.get("device") or "")) if x)
        line = f"{r['key']}: {r['ep']}: {r['status']}"
        if r["status"] == "ok" and extra:
            line += f" ({extra})"
        if r["how"]:
            line += f"; to make it available: {r['how']}"
        print(line)


@app.command("cases")
@click.option("--profile", default="smoke", show_default=True)
@click.option("--op", multiple=True)
@click.option("--dtype", multiple=True)
@click.option("--opset", default="default", show_default=True)
@click.option("--export", required=True, type=click.Path(path_type=Path), help="write the cases to this JSON or YAML file")
@click.option("--failed-from", type=click.Path(path_type=Path), help="take the non-PASS cases of a results JSONL instead")
@click.option("--verdicts", default=",".join(Verdict.FAILED + Verdict.NOT_TAKEN), show_default=True,
              help="with --failed-from")
def cases_cmd(profile, op, dtype, opset, export, failed_from, verdicts):
    """Write a sweep (or the failures of a run) as a case file a person can edit and re-run."""
    from .casefile import case_from_record, dump
    from .plan import select_cases
    from .results import read
    if failed_from:
        if not failed_from.is_file():
            raise BadArgs(f"--failed-from: {failed_from} does not exist")
        want = _parse_verdicts(verdicts, "--verdicts")
        cases = [case_from_record(r) for r in read(failed_from).records if r.verdict in want]
    else:
        cases = select_cases(profile, split_names(op), split_names(dtype), opset, None)
    dump(cases, export)
    out_console.print(f"wrote {len(cases)} cases to {export}")


@app.command("expectations")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="a results.jsonl")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="the expectations file to write (YAML)")
@click.option("--fail-on", default=",".join(Verdict.FAIL_ON), show_default=True, help="verdicts to list as known")
@click.option("--ep", help="the EP whose records to list (needed when the results hold several)")
@click.option("--reason", default="known failure; see the run's report", show_default=True,
              help="reason for records that have none")
@click.option("--link", default="", help="a link stored with every entry (issue, report)")
def expectations_cmd(results, out, fail_on, ep, reason, link):
    """Write an expectations file listing the failing cases of a run, for `run --expectations`."""
    from .expectations import write
    from .results import read
    recs = read(results).records
    try:
        n = write(recs, out, _parse_verdicts(fail_on, "--fail-on"), reason=reason, link=link, ep=ep)
    except ValueError as e:
        raise BadArgs(str(e)) from None
    out_console.print(f"wrote {n} expectations to {out}")


@app.command("merge")
@click.argument("out", type=click.Path(path_type=Path))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--report", is_flag=True, help="also write the reports beside OUT")
@click.option("--overwrite", is_flag=True, help="replace OUT when it exists")
def merge(out, inputs, report, overwrite):
    """Join the results of shards (or of several EPs) into one JSONL (OUT, a file)."""
    from .results import merge as do_merge
    for p in inputs:
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    if out.exists():
        if out.is_dir():
            raise BadArgs(f"{out}: is a folder; OUT is the results file to write (e.g. {out / 'results.jsonl'})")
        if any(p.exists() and os.path.samefile(p, out) for p in inputs):
            raise BadArgs(f"{out}: is also an input; merge into a new file")
        if not overwrite:
            raise BadArgs(f"{out}: exists; add --overwrite to replace it")
    n_env, n = do_merge(inputs, out)
    plain(f"merged {n} records from {len(inputs)} files ({n_env} environments) into {out}")
    if report:
        _write_reports([out], out.parent)


@app.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder for report.html, junit.xml and summary.json")
@click.option("--allow-partial", is_flag=True, help="report a results file whose last line was cut off (an interrupted run)")
def report_cmd(results, out, allow_partial):
    """(Re)write HTML, JUnit XML and JSON summary from results."""
    from .report import load
    for p in results:
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    res = load(results, allow_partial=allow_partial)        # each file read once, for every report
    for partial in res.partial:
        say(f"warning: {partial}")
    out.mkdir(parents=True, exist_ok=True)
    _write_reports(res, out)


@app.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path),
              help="a path ending in .html: the page to write; otherwise a folder for compare.html "
                   "(default: beside CURRENT)")
def compare_cmd(baseline, current, out):
    """Regressions, fixes and numeric drift between two runs of the same suite; writes compare.html
    (beside CURRENT unless --out says where) and says where."""
    for p in (baseline, current):
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    from .report.diff import compare_command        # reads each file once; one line and exit 2 if it cannot
    sys.exit(compare_command(baseline, current, out))


@app.command("fixtures")
@click.option("--out", required=True, type=click.Path(path_type=Path))
@click.option("--profile", default="smoke", show_default=True)
@click.option("--op", multiple=True)
@click.option("--dtype", multiple=True)
@click.option("--include-open", is_flag=True, help="also export cases that touch open points, with the policy stated")
def fixtures(out, profile, op, dtype, include_open):
    """Write ONNX model fixtures in the ONNX backend-test layout."""
    from .fixtures import fixtures_command
    try:
        code = fixtures_command(out, profile, split_names(op) or None, split_names(dtype) or None, include_open)
    except (KeyError, ValueError) as e:
        raise BadArgs(str(e)) from None
    sys.exit(code)


@setup_app.command("dml")
@click.option("--cache", type=click.Path(path_type=Path),
              help="cache folder (default: $ONNX_DML_BENCH_CACHE, else ~/.cache/onnx-dml-bench/dml)")
@click.option("--onnxruntime-node", "ort_node", multiple=True, metavar="VERSION",
              help="also install this onnxruntime-node win32 build (and its DirectML.dll) side by side; repeatable; "
                   "`run --ep dml --ep-option onnxruntime_node=VERSION` picks it")
@click.option("--directml-dll", "directml_dll", multiple=True, metavar="SOURCE",
              help="also install a DirectML.dll for the direct lane: a path, wheel:FILE.whl or "
                   "wheel:onnxruntime-directml==VERSION; `run --ep dml-direct --ep-option directml=VERSION` picks it")
@click.option("--stack", "stack_names", multiple=True, type=click.Choice(["wine8-sm51", "wine10-sm6"]),
              help="the Wine stack to set up (repeatable): wine8-sm51 (the default: Debian bookworm's Wine 8, "
                   "shader model 5.1) or wine10-sm6 (Debian trixie's Wine 10 in a debootstrap root with wined3d.dll "
                   "rebuilt from Debian's source: shader model 6.0; builds for a few minutes); "
                   "`run --ep dml|dml-direct --ep-option stack=NAME` picks it")
@click.option("--jobs", "build_jobs", type=click.IntRange(min=1), help="make -j for the wine10-sm6 build (default: all cores)")
def setup_dml(cache, ort_node, directml_dll, stack_names, build_jobs):
    """Install DirectML under Wine on a software Vulkan device (Linux), or check onnxruntime-directml (Windows).

    \b
    The stack goes into a cache folder: --cache, else the environment variable
    ONNX_DML_BENCH_CACHE, else ~/.cache/onnx-dml-bench/dml. Every command that runs
    DirectML (run/shrink/bundle/triage/fuzz --ep dml|dml-direct, eps) finds it the same way,
    so set ONNX_DML_BENCH_CACHE for them too when the stack is elsewhere. The cache can be
    copied or moved as a whole (its stack.json names its files relative to itself); `eps`
    checks the files it names and says what is missing."""
    if sys.platform == "win32":
        from .lanes import ProviderError, resolve
        try:
            resolve("dml")
        except ProviderError as e:
            raise BadArgs(str(e)) from None
        out_console.print("DmlExecutionProvider is available natively (onnxruntime-directml)")
        return
    from .dml.install import default, sm6
    from .dml.select import installed_versions
    from .dml.wine.stackinfo import StackError
    try:
        info = default.setup(cache, onnxruntime_node=ort_node, directml_dll=directml_dll)
    except StackError as e:
        console.print(f"[red]setup dml: {e}[/]")
        sys.exit(2)
    out_console.print(json.dumps(info.versions, indent=1))
    out_console.print(f"DirectML builds: {installed_versions(info.cache_dir)}")
    from .dml.direct import ensure_built      # the direct lane's harness, built from its sources
    try:
        exe = ensure_built(info, log=lambda m: console.print(f"direct lane: {m}"))
    except StackError as e:
        console.print(f"[red]setup dml: the direct lane's harness: {e}[/]")
        sys.exit(2)
    out_console.print(f"direct DirectML lane harness: {exe}")
    from .dml.probe import measure_shader_model
    built = [info]                   # the default stack is always set up (wine10-sm6 uses its Node.js and DLLs)
    if "wine10-sm6" in stack_names:
        try:
            sm6_stack = sm6.setup(info.cache_dir, info, log=lambda m: console.print(f"wine10-sm6: {m}"), jobs=build_jobs)
            ensure_built(sm6_stack, log=lambda m: console.print(f"direct lane: {m}"))
        except StackError as e:
            console.print(f"[red]setup dml: {e}[/]")
            sys.exit(2)
        built.append(sm6_stack)
    for st in built:                 # measured by the direct harness, cached in the stack's manifest
        try:
            sm = measure_shader_model(st)
        except StackError as e:
            console.print(f"[red]setup dml: {st.stack_name}: the direct harness could not start: {e}[/]")
            sys.exit(3)
        out_console.print(f"stack {st.stack_name}: {st.versions.get('wine')}, vkd3d {st.versions.get('vkd3d')}, "
                          f"Mesa {st.versions.get('mesa')}, shader model {sm} ({st.cache_dir})")
    if "wine10-sm6" in stack_names:
        from .dml.node import client
        try:
            res = client.canary(built[-1])
        finally:
            client.shutdown()
        out_console.print(f"stack wine10-sm6: {res.message}")
        if not res.ok:
            sys.exit(3)


@app.command("perf")
@click.option("--ep", required=True)
@click.option("--runs", default=50, type=click.IntRange(min=1), show_default=True)
@click.option("--warmup", default=10, type=click.IntRange(min=0), show_default=True)
@click.option("--bandwidth", type=float, help="device memory bandwidth in GB/s for the share column")
@click.option("--out", type=click.Path(path_type=Path),
              help="a path ending in .json: the file to write; otherwise a folder for perf.json "
                   "(entries of other EPs in it are kept)")
def perf(ep, runs, warmup, bandwidth, out):
    """Per-case latency with inputs and outputs kept on the device (IOBinding)."""
    from .perf import perf_command
    sys.exit(perf_command(ep, runs, warmup, bandwidth, out))


# --- triage: shrink, bundle, fuzz (onnx_dml_bench/shrink.py, bundle.py, fuzz.py) -----------------

def _log(msg: str) -> None:
    """Progress of the triage commands, printed as it is (signature labels are in brackets)."""
    plain(msg, err=True)


@app.command("shrink")
@click.argument("case_id")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="the results.jsonl holding the case")
@click.option("--ep", help="EP to probe on (default: the EP of the results)")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--out", type=click.Path(path_type=Path),
              help="case file to write (default: shrunk/CASE_ID.json beside the results, where the report looks)")
@click.option("--time-limit", default=600.0, type=click.FloatRange(min=1), show_default=True, help="seconds")
def shrink_cmd(case_id, results, ep, ep_option, out, time_limit):
    """Reduce a failing case while the same failure signature holds; write the minimal case file."""
    from .lanes import parse_options
    from .shrink import ShrinkError, shrink_command
    try:
        res, path = shrink_command(case_id, results, ep, parse_options(ep_option), out, time_limit, _log)
    except ShrinkError as e:
        raise BadArgs(str(e)) from None
    plain(f"signature: {res.signature.text()}")
    plain(f"shrank: {res.summary()}")
    plain(f"minimal case {res.minimal.id} -> {path}  (onnx-dml-bench run --cases {path})")


@app.command("bundle")
@click.argument("case_id")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="the results.jsonl holding the case")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="folder to write")
@click.option("--ep", help="EP to re-run the case on (default: the EP of the results)")
@click.option("--no-rerun", is_flag=True, help="do not re-run: leave the EP's and CPU's outputs out")
def bundle_cmd(case_id, results, out, ep, no_rerun):
    """A self-contained folder for a driver bug report: model, data, outputs, repro.py, C++ descriptor, DxDispatch model."""
    from .bundle import BundleError, bundle_command
    try:
        path = bundle_command(case_id, results, out, ep, rerun=not no_rerun, say=_log)
    except BundleError as e:
        raise BadArgs(str(e)) from None
    plain(f"bundle -> {path}")


@app.command("triage")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="a results.jsonl(.gz)")
@click.option("--ep", help="EP to probe on (default: the EP of the results)")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--verdicts", default=",".join(Verdict.FAILED), show_default=True,
              help="verdicts to triage (add EP_REJECTED, NOT_OFFLOADED to shrink those too)")
@click.option("--time-limit", default=180.0, type=click.FloatRange(min=1), show_default=True,
              help="seconds per shrink")
@click.option("--no-bundles", is_flag=True, help="shrink only")
def triage_cmd(results, ep, ep_option, verdicts, time_limit, no_bundles):
    """One minimal case and bundle per failure signature of a results file (beside it:
    shrunk/, bundle/, triage.md, triage.json; the report links them)."""
    from .lanes import parse_options
    from .triage import TriageError, describe_row, triage
    want = tuple(v.strip().upper() for v in verdicts.split(",") if v.strip())
    bad = [v for v in want if v not in VERDICTS]
    if bad or not want:
        raise BadArgs(f"--verdicts: unknown verdict(s) {', '.join(bad) or '(none given)'}; known: {', '.join(VERDICTS)}")
    try:
        rows = triage(results, ep=ep, ep_options=parse_options(ep_option), verdicts=want, time_limit=time_limit,
                      bundles=not no_bundles, say=_log)
    except TriageError as e:
        raise BadArgs(str(e)) from None
    for r in rows:
        plain(describe_row(r))
    if rows:
        plain(f"{len(rows)} signature(s), {sum(r.shrunk is not None for r in rows)} shrunk -> "
              f"{Path(results).parent / TRIAGE_MD}")


@app.command("fuzz")
@click.option("--ep", default="cpu", show_default=True)
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--budget", default="10m", show_default=True, help="time budget: 90s, 10m, 1h")
@click.option("--seed", default=0, type=int, show_default=True)
@click.option("--op", multiple=True, help="operator(s) (default: all)")
@click.option("--baseline", type=click.Path(path_type=Path), help="results.jsonl whose signatures are not new")
@click.option("--out", default=Path("reports/fuzz"), type=click.Path(path_type=Path), show_default=True)
@click.option("--batch-size", default=256, type=click.IntRange(min=1), show_default=True)
@click.option("--max-cases", type=click.IntRange(min=1), help="stop sampling after this many cases (a budget that does not depend on speed)")
def fuzz_cmd(ep, ep_option, budget, seed, op, baseline, out, batch_size, max_cases):
    """Sample valid descriptors, run them in batches, group failures by signature, shrink one per new signature."""
    from .fuzz import FuzzError, fuzz_command
    from .lanes import parse_options
    try:
        summary = fuzz_command(ep, parse_options(ep_option), budget, seed, split_names(op), baseline, out, batch_size,
                               _log, max_cases)
    except FuzzError as e:
        raise BadArgs(str(e)) from None
    plain(summary)

# --- end triage ---------------------------------------------------------------------------------


def main(argv=None) -> int:
    global _ARGV
    _ARGV = list(sys.argv[1:] if argv is None else argv)
    if not _ARGV:
        # the group's help as click prints it (not squashed onto one error line)
        return _bare_help()
    try:
        rv = app.main(args=_ARGV, prog_name="onnx-dml-bench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except (BadArgs, PlanError, ResultsError) as e:
        print(f"onnx-dml-bench: error: {_join_lines(str(e))}", file=sys.stderr)
        return 2
    except _Interrupted:
        return 130
    except KeyboardInterrupt:
        print("onnx-dml-bench: interrupted", file=sys.stderr)
        return 130
    except click.exceptions.Exit as e:
        return e.exit_code
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except click.exceptions.Abort:
        print("onnx-dml-bench: aborted", file=sys.stderr)
        return 130
    except click.UsageError as e:
        msg = _join_lines(e.format_message())
        print(f"onnx-dml-bench: error: {msg}", file=sys.stderr)
        return 2
    except click.ClickException as e:
        print(f"onnx-dml-bench: error: {e.format_message()}", file=sys.stderr)
        return e.exit_code


def _bare_help() -> int:
    """`onnx-dml-bench` alone: the normal help on stdout, exit code 0."""
    ctx = click.Context(app, info_name="onnx-dml-bench")
    click.echo(app.get_help(ctx))
    return 0


def _join_lines(msg: str) -> str:
    """The message's lines, stripped, on one line (a usage error's text keeps its own spacing)."""
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())


if __name__ == "__main__":
    sys.exit(main())
