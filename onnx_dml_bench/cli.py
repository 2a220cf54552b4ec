"""The `onnx-dml-bench` command."""
from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from . import __version__, registry
from .dtypes import parse_dtype
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

VERDICT_STYLE = {"PASS": "green", "FAIL": "red", "NOT_OFFLOADED": "magenta", "EP_REJECTED": "yellow",
                 "ERROR": "red", "CRASH": "bold red", "TIMEOUT": "bold red", "SKIPPED": "dim",
                 "NOT_EXPRESSIBLE": "cyan", "NOT_SUPPORTED": "blue"}


class BadArgs(Exception):
    pass


def _split(values) -> list[str]:
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def select_cases(profile: str, ops: list[str], dtypes: list[str], opset: str, cases_file: Path | None):
    from .casefile import CaseFileError, load
    if cases_file:
        try:
            cases = load(cases_file)
        except CaseFileError as e:
            raise BadArgs(str(e)) from None
    else:
        if profile not in ("smoke", "default", "full"):
            raise BadArgs(f"--profile must be smoke, default or full, got {profile!r}")
        try:
            keys = [registry.get(o).key for o in ops] if ops else registry.names()
        except KeyError as e:
            raise BadArgs(f"--op: {e.args[0]}") from None
        cases = [c for k in keys for c in registry.get(k).sweep(profile)]
    if dtypes:
        try:
            want = {parse_dtype(d) for d in dtypes}
        except ValueError as e:
            raise BadArgs(f"--dtype: {e}") from None
        cases = [c for c in cases if c.dtype in want]
    if opset and opset != "default":
        expanded = []
        if opset == "all":
            for c in cases:
                for o in sorted(set(c.operator.opsets) | {c.opset}):
                    expanded.append(c.with_opset(o))
        else:
            try:
                levels = [int(x) for x in opset.split(",")]
            except ValueError:
                raise BadArgs(f"--opset must be 'default', 'all' or a comma-separated list of integers, got {opset!r}") from None
            for c in cases:
                expanded += [c.with_opset(o) for o in levels]
        cases = list({c.id: c for c in expanded}.values())
    return cases


def _git_revision() -> str:
    try:
        here = Path(__file__).resolve().parent.parent
        r = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
        if r.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return r.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return ""


def not_expressible_list() -> list[dict]:
    from dataclasses import asdict
    return [asdict(n) for op in registry.OPERATORS.values() for n in op.not_expressible()]


def summary_table(recs: list, title: str) -> Table:
    t = Table(title=title)
    t.add_column("operator")
    t.add_column("dtype")
    verdicts = [v for v in VERDICT_STYLE if any(r.verdict == v for r in recs)]
    for v in verdicts:
        t.add_column(v, justify="right", style=VERDICT_STYLE[v])
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
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True, help="output folder")
@click.option("--resume", is_flag=True, help="continue an interrupted run in --out")
@click.option("--shard", help="run slice K/N of the cases")
@click.option("--fail-on", default="FAIL,CRASH,TIMEOUT", show_default=True, help="verdicts that make the exit code non-zero")
@click.option("--no-cpu", is_flag=True, help="skip the CPU EP side of the three-way comparison")
@click.option("--report/--no-report", default=True, help="write HTML, JUnit XML and JSON summary")
@click.option("--expectations", "expectations_file", type=click.Path(path_type=Path),
              help="known verdicts (YAML): the exit code then follows only unexpected results and fixed cases")
def run(ep, ep_option, op, dtype, profile, opset, cases_file, jobs, batch_size, timeout, optimization, out, resume,
        shard, fail_on, no_cpu, report, expectations_file):
    """Run cases on one EP and write results (JSONL), HTML report, JUnit XML and a JSON summary."""
    from .execute import RunConfig
    from .providers import OPTIMIZATION_LEVELS, ProviderError, parse_options, resolve

    fail_set = _parse_verdicts(fail_on, "--fail-on")
    known = _load_expectations(expectations_file)
    if optimization not in OPTIMIZATION_LEVELS:
        raise BadArgs(f"--optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}, got {optimization!r}")
    try:
        spec = resolve(ep, parse_options(ep_option))
    except ProviderError as e:
        raise BadArgs(f"--ep {ep}: {e}") from None
    cases = select_cases(profile, _split(op), _split(dtype), opset, cases_file)
    cases = _shard(cases + _lane_cases(spec, profile, _split(op), _split(dtype), opset, cases_file), shard)
    env = _run_environment(spec, profile=profile, cases_file=cases_file, opset=opset, optimization=optimization,
                           shard=shard, three_way=not no_cpu and not spec.is_cpu and spec.kind != "dml-direct",
                           total=len(cases))
    cfg = RunConfig(ep=ep, optimization=optimization, batch_size=batch_size, timeout_s=timeout, jobs=jobs,
                    three_way=not no_cpu)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    recs, elapsed = _execute(cases, spec, cfg, env, results, resume)
    out_console.print(summary_table(recs, f"{spec.ep_name}: {len(recs)} cases in {elapsed:.1f} s"))
    if report:
        _write_reports([results], out, tuple(sorted(fail_set)))
    tot = Counter(r.verdict for r in recs)
    out_console.print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(tot.items())) + f"  -> {out}")
    if known is not None:
        cls = known.classify(recs, fail_set)
        for line in cls.summary_lines():
            out_console.print(line, markup=False, highlight=False)
        sys.exit(cls.exit_code)
    sys.exit(1 if any(r.verdict in fail_set for r in recs) else 0)


def _load_expectations(path: Path | None):
    from .expectations import ExpectationsError, load
    if path is None:
        return None
    try:
        return load(path)
    except (ExpectationsError, OSError) as e:
        raise BadArgs(f"--expectations: {e}") from None


def _parse_verdicts(text: str, option: str) -> set[str]:
    from .record import VERDICTS
    wanted = {v.strip().upper() for v in text.split(",") if v.strip()}
    bad = wanted - set(VERDICTS)
    if bad:
        raise BadArgs(f"{option}: unknown verdict(s) {', '.join(sorted(bad))}; known: {', '.join(VERDICTS)}")
    return wanted


def _shard(cases: list, shard: str | None) -> list:
    from .results import in_shard
    if not shard:
        return cases
    try:
        k, n = (int(x) for x in shard.split("/"))
        assert 1 <= k <= n
    except (ValueError, AssertionError):
        raise BadArgs(f"--shard must be K/N with 1 <= K <= N, got {shard!r}") from None
    return [c for c in cases if in_shard(c.id, k, n)]


def _lane_cases(spec, profile, ops, dtypes, opset, cases_file) -> list:
    """Cases only a lane adds: on dml-direct, the descriptor-only (feature level, data type) pairs
    the ONNX-driven sweep leaves out (dml/direct/sweep.py); none for a case file."""
    if spec.kind != "dml-direct" or cases_file:
        return []
    from .dml.direct.sweep import descriptor_only_cases
    extra = descriptor_only_cases(select_cases(profile, ops, [], opset, None), profile)
    want = {parse_dtype(d) for d in dtypes}
    return [c for c in extra if not want or c.dtype in want]


def _direct_preflight(env: dict, spec=None) -> None:
    """The direct DirectML lane's known-answer canary and environment (exit code 3 on failure)."""
    from .dml.direct.lane import StackError, preflight
    try:
        env.update(preflight(spec))
    except StackError as e:
        console.print(f"[red]{e}[/]")
        sys.exit(3)


def _run_environment(spec, *, profile, cases_file, opset, optimization, shard, three_way, total):
    """What the run records about itself; for DirectML under Wine the canary runs first (no
    verdicts from a broken stack: exit code 3)."""
    from .compare import NAN_POLICY
    from .providers import ProviderError, environment
    from .record import Environment
    env = environment(spec)
    if spec.kind == "wine":
        from .dml.backend import preflight
        try:
            env.update(preflight(spec))
        except ProviderError as e:
            console.print(f"[red]{e}[/]")
            sys.exit(3)
    if spec.kind == "dml-direct":
        _direct_preflight(env, spec)
    env.update({"bench_version": __version__, "git_revision": _git_revision(),
                "profile": "cases-file" if cases_file else profile, "cases_file": str(cases_file) if cases_file else None,
                "opset_mode": opset, "optimization": optimization, "shard": shard, "seed_policy": "per-case seeds (ids)",
                "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "argv": sys.argv[1:], "not_expressible": not_expressible_list(), "three_way": three_way,
                "nan_policy": NAN_POLICY, "total_cases": total})
    return Environment.from_flat(env)


def _execute(cases, spec, cfg, env, results: Path, resume: bool):
    """Run the cases not done yet, streaming records to ``results``; (all records, seconds)."""
    from .execute import run_cases
    from .results import ResultWriter, done_ids, read
    skip = done_ids(results) if resume else set()
    todo = [c for c in cases if c.id not in skip]
    writer = ResultWriter(results, env, resume=resume)
    counts: Counter = Counter()
    console.print(f"[bold]{len(todo)}[/] cases on [bold]{spec.ep_name}[/] ({env.ort_package} {env.ort_version}, "
                  f"device: {env.device})" + (f"; {len(skip)} already done" if skip else ""))
    t0 = time.perf_counter()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                  console=console, transient=False, disable=not sys.stderr.isatty() and os.environ.get("CI") is None) as prog:
        task = prog.add_task(spec.ep_name, total=len(todo), counts="")

        def on_records(recs):
            writer.write(recs)
            counts.update(r.verdict for r in recs)
            prog.update(task, advance=len(recs), counts=" ".join(f"{k}:{v}" for k, v in sorted(counts.items())))

        try:
            run_cases(todo, spec, cfg, on_records)
        finally:
            writer.close()
    return read(results).records, time.perf_counter() - t0


def _write_reports(results: list[Path], out: Path, fail_on=("FAIL", "CRASH", "TIMEOUT")) -> None:
    from .report import write_all
    paths = write_all(list(results), out, fail_on=fail_on)
    for p in paths:
        out_console.print(f"wrote {p}")


@app.command("eps")
def eps():
    """List the execution providers that can run here."""
    from .providers import list_available
    t = Table(title="execution providers")
    for col in ("ep", "key", "package", "device", "driver", "status"):
        t.add_column(col)
    for row in list_available():
        t.add_row(*(str(row[c]) for c in ("ep", "key", "package", "device", "driver", "status")))
    out_console.print(t)


@app.command("cases")
@click.option("--profile", default="smoke", show_default=True)
@click.option("--op", multiple=True)
@click.option("--dtype", multiple=True)
@click.option("--opset", default="default", show_default=True)
@click.option("--export", required=True, type=click.Path(path_type=Path), help="write the cases to this JSON or YAML file")
@click.option("--failed-from", type=click.Path(path_type=Path), help="take the non-PASS cases of a results JSONL instead")
@click.option("--verdicts", default="FAIL,CRASH,TIMEOUT,ERROR,NOT_OFFLOADED,EP_REJECTED", show_default=True, help="with --failed-from")
def cases_cmd(profile, op, dtype, opset, export, failed_from, verdicts):
    """Write a sweep (or the failures of a run) as a case file a person can edit and re-run."""
    from .casefile import case_from_record, dump
    from .results import read
    if failed_from:
        if not failed_from.is_file():
            raise BadArgs(f"--failed-from: {failed_from} does not exist")
        want = _parse_verdicts(verdicts, "--verdicts")
        cases = [case_from_record(r) for r in read(failed_from).records if r.verdict in want]
    else:
        cases = select_cases(profile, _split(op), _split(dtype), opset, None)
    dump(cases, export)
    out_console.print(f"wrote {len(cases)} cases to {export}")


@app.command("expectations")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="a results.jsonl")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="the expectations file to write (YAML)")
@click.option("--fail-on", default="FAIL,CRASH,TIMEOUT", show_default=True, help="verdicts to list as known")
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
def merge(out, inputs, report):
    """Join the results of shards (or of several EPs) into one JSONL."""
    from .results import merge as do_merge
    for p in inputs:
        if not p.is_file():
            raise BadArgs(f"{p} does not exist")
    n_env, n = do_merge(inputs, out)
    out_console.print(f"merged {n} records from {len(inputs)} files ({n_env} environments) into {out}")
    if report:
        _write_reports([out], out.parent)


@app.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True)
def report_cmd(results, out):
    """(Re)write HTML, JUnit XML and JSON summary from results."""
    for p in results:
        if not p.is_file():
            raise BadArgs(f"{p} does not exist")
    out.mkdir(parents=True, exist_ok=True)
    _write_reports(results, out)


@app.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="write compare.html here")
def compare_cmd(baseline, current, out):
    """Regressions, fixes and numeric drift between two runs of the same suite."""
    for p in (baseline, current):
        if not p.is_file():
            raise BadArgs(f"{p} does not exist")
    from .report.diff import compare_command
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
        code = fixtures_command(out, profile, _split(op) or None, _split(dtype) or None, include_open)
    except (KeyError, ValueError) as e:
        raise BadArgs(str(e)) from None
    sys.exit(code)


@setup_app.command("dml")
@click.option("--cache", type=click.Path(path_type=Path), help="cache folder (default ~/.cache/onnx-dml-bench/dml)")
@click.option("--onnxruntime-node", "ort_node", multiple=True, metavar="VERSION",
              help="also install this onnxruntime-node win32 build (and its DirectML.dll) side by side; repeatable; "
                   "`run --ep dml --ep-option onnxruntime_node=VERSION` picks it")
@click.option("--directml-dll", "directml_dll", multiple=True, metavar="SOURCE",
              help="also install a DirectML.dll for the direct lane: a path, wheel:FILE.whl or "
                   "wheel:onnxruntime-directml==VERSION; `run --ep dml-direct --ep-option directml=VERSION` picks it")
def setup_dml(cache, ort_node, directml_dll):
    """Install DirectML under Wine on a software Vulkan device (Linux), or check onnxruntime-directml (Windows)."""
    if sys.platform == "win32":
        from .providers import ProviderError, resolve
        try:
            resolve("dml")
        except ProviderError as e:
            raise BadArgs(str(e)) from None
        out_console.print("DmlExecutionProvider is available natively (onnxruntime-directml)")
        return
    from .dml import stack
    try:
        info = stack.setup(cache, onnxruntime_node=ort_node, directml_dll=directml_dll)
    except stack.StackError as e:
        console.print(f"[red]setup dml: {e}[/]")
        sys.exit(2)
    out_console.print(json.dumps(info.versions, indent=1))
    out_console.print(f"DirectML builds: {stack.installed_versions(info.cache_dir)}")
    from .dml.direct import ensure_built      # the direct lane's harness, built from its sources
    try:
        exe = ensure_built(info, log=lambda m: console.print(f"direct lane: {m}"))
    except stack.StackError as e:
        console.print(f"[red]setup dml: the direct lane's harness: {e}[/]")
        sys.exit(2)
    out_console.print(f"direct DirectML lane harness: {exe}")


@app.command("perf")
@click.option("--ep", required=True)
@click.option("--runs", default=50, type=click.IntRange(min=1), show_default=True)
@click.option("--warmup", default=10, type=click.IntRange(min=0), show_default=True)
@click.option("--bandwidth", type=float, help="device memory bandwidth in GB/s for the share column")
@click.option("--out", type=click.Path(path_type=Path), help="write perf.json here")
def perf(ep, runs, warmup, bandwidth, out):
    """Per-case latency with inputs and outputs kept on the device (IOBinding)."""
    from .perf import perf_command
    sys.exit(perf_command(ep, runs, warmup, bandwidth, out))


# --- triage: shrink, bundle, fuzz (onnx_dml_bench/shrink.py, bundle.py, fuzz.py) -----------------

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
    from .providers import parse_options
    from .shrink import ShrinkError, shrink_command
    try:
        res, path = shrink_command(case_id, results, ep, parse_options(ep_option), out, time_limit, say)
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
        path = bundle_command(case_id, results, out, ep, rerun=not no_rerun, say=say)
    except BundleError as e:
        raise BadArgs(str(e)) from None
    plain(f"bundle -> {path}")


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
    from .providers import parse_options
    try:
        summary = fuzz_command(ep, parse_options(ep_option), budget, seed, _split(op), baseline, out, batch_size, say,
                               max_cases)
    except FuzzError as e:
        raise BadArgs(str(e)) from None
    plain(summary)

# --- end triage ---------------------------------------------------------------------------------


def main(argv=None) -> int:
    try:
        rv = app.main(args=argv, prog_name="onnx-dml-bench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except (BadArgs, ResultsError) as e:
        print(f"onnx-dml-bench: error: {e}", file=sys.stderr)
        return 2
    except click.exceptions.Exit as e:
        return e.exit_code
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except click.exceptions.Abort:
        print("onnx-dml-bench: aborted", file=sys.stderr)
        return 130
    except click.UsageError as e:
        msg = e.format_message().replace("\n", " ")
        print(f"onnx-dml-bench: error: {msg}", file=sys.stderr)
        return 2
    except click.ClickException as e:
        print(f"onnx-dml-bench: error: {e.format_message()}", file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
