"""The `onnx-dml-bench` command."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shlex
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
            _check_opsets(levels, {c.operator for c in cases})
            for c in cases:
                expanded += [c.with_opset(o) for o in levels]
        cases = list({c.id: c for c in expanded}.values())
    return cases


def _check_opsets(levels: list[int], operators) -> None:
    """Refuse opsets that ONNX does not define: above ``onnx.defs.onnx_opset_version()``, below 1,
    or below the first version of an operator's ONNX op."""
    import onnx.defs
    top = onnx.defs.onnx_opset_version()
    for n in levels:
        if not 1 <= n <= top:
            raise BadArgs(f"--opset {n}: the installed onnx {_onnx_version()} defines opsets 1 to {top}")
        for op in sorted(operators, key=lambda o: o.key):
            name = op.onnx_ops[0]
            try:
                onnx.defs.get_schema(name, n)
            except onnx.defs.SchemaError:
                raise BadArgs(f"--opset {n}: ONNX defines no {name} at opset {n} (needed by {op.key})") from None


def _onnx_version() -> str:
    import onnx
    return onnx.__version__


#: the bench's revision when the tree's own git metadata cannot say it (a copy of the tree on
#: another machine): recorded as given
REVISION_ENV = "ONNX_DML_BENCH_REVISION"


def _git_revision() -> str:
    given = os.environ.get(REVISION_ENV, "").strip()
    if given:
        return f"{given} (given in {REVISION_ENV})"
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
    t = Table(title=title or None)
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
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder (results.jsonl, report.html, junit.xml, summary.json); a folder that already "
                   "holds results needs --resume or --overwrite")
@click.option("--resume", is_flag=True, help="continue the interrupted run in --out (same selection only)")
@click.option("--overwrite", is_flag=True, help="replace the results already in --out")
@click.option("--shard", help="run slice K/N of the cases")
@click.option("--fail-on", default="FAIL,CRASH,TIMEOUT", show_default=True,
              help="verdicts, or EP-vs-CPU findings (CPU_WRONG, EP_CPU_DIFFER), that make the exit code non-zero")
@click.option("--no-cpu", is_flag=True, help="skip the CPU EP side of the three-way comparison")
@click.option("--report/--no-report", default=True, help="write HTML, JUnit XML and JSON summary")
@click.option("--expectations", "expectations_file", type=click.Path(path_type=Path),
              help="known verdicts (YAML): the exit code then follows only unexpected results and fixed cases")
def run(ep, ep_option, op, dtype, profile, opset, cases_file, jobs, batch_size, timeout, optimization, out, resume,
        overwrite, shard, fail_on, no_cpu, report, expectations_file):
    """Run cases on one EP and write results (JSONL), HTML report, JUnit XML and a JSON summary."""
    from .execute import RunConfig
    from .providers import OPTIMIZATION_LEVELS, ProviderError, parse_options, resolve

    fail_set = _parse_verdicts(fail_on, "--fail-on", findings=True)
    known = _load_expectations(expectations_file)
    if optimization not in OPTIMIZATION_LEVELS:
        raise BadArgs(f"--optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}, got {optimization!r}")
    if resume and overwrite:
        raise BadArgs("--resume and --overwrite contradict each other: continue the run in --out, or replace it")
    results = out / "results.jsonl"
    try:
        spec = resolve(ep, parse_options(ep_option))
    except ProviderError as e:
        raise BadArgs(f"--ep {ep}: {e}") from None
    cases = select_cases(profile, _split(op), _split(dtype), opset, cases_file)
    cases = _shard(cases + _lane_cases(spec, profile, _split(op), _split(dtype), opset, cases_file), shard)
    three_way = not no_cpu and not spec.is_cpu and spec.kind != "dml-direct"   # dml-direct: no CPU side
    sel = selection(spec, ops=_split(op), dtypes=_split(dtype), profile=profile, opset=opset, cases_file=cases_file,
                    optimization=optimization, shard=shard, three_way=three_way, cases=cases)
    _check_out(out, results, resume, overwrite)
    if resume:
        _check_resume(results, sel)
    env = _run_environment(spec, profile=profile, cases_file=cases_file, opset=opset, optimization=optimization,
                           shard=shard, three_way=three_way, total=len(cases), selection=sel)
    cfg = RunConfig(ep=ep, optimization=optimization, batch_size=batch_size, timeout_s=timeout, jobs=jobs,
                    three_way=not no_cpu)
    if overwrite:
        for name in _OUT_FILES:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    recs, elapsed = _execute(cases, spec, cfg, env, results, resume, out)
    print_summary(recs, f"{spec.ep_name}: {len(recs)} cases in {elapsed:.1f} s")
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


#: what a run writes into --out (what --overwrite replaces)
_OUT_FILES = ("results.jsonl", "report.html", "junit.xml", "summary.json")
#: selection keys as a person names them
_SELECTION_NAMES = {"ops": "operators (--op)", "profile": "profile (--profile)", "dtypes": "data types (--dtype)",
                    "opset": "opsets (--opset)", "cases_file": "case file (--cases)", "ep": "EP (--ep)",
                    "ep_options": "EP options (--ep-option)", "optimization": "optimisation (--optimization)",
                    "shard": "shard (--shard)", "three_way": "three-way comparison (--no-cpu)",
                    "cases": "the selected cases"}


def _check_out(out: Path, results: Path, resume: bool, overwrite: bool) -> None:
    """Never lose a run: results already in --out are continued (--resume) or replaced
    (--overwrite), never silently written over."""
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    if resume or overwrite:
        return
    held = [n for n in _OUT_FILES if (out / n).exists()]
    if held:
        raise BadArgs(f"--out {out} already holds results ({held[0]}): add --resume to continue that run "
                      f"or --overwrite to replace it")


def selection(spec, *, ops, dtypes, profile, opset, cases_file, optimization, shard, three_way, cases) -> dict:
    """What defines a run's set of verdicts (compared on --resume), with its hash."""
    keys = sorted({registry.get(o).key for o in ops}) if ops else []
    sel = {
        "ops": keys, "profile": "cases-file" if cases_file else profile,
        "dtypes": sorted({parse_dtype(d) for d in dtypes}) if dtypes else [], "opset": opset,
        "cases_file": hashlib.sha256(Path(cases_file).read_bytes()).hexdigest()[:16] if cases_file else None,
        "ep": spec.ep_name, "ep_options": {str(k): str(v) for k, v in sorted((spec.options or {}).items())},
        "optimization": optimization, "shard": shard, "three_way": bool(three_way),
        "cases": hashlib.sha256("\n".join(sorted(c.id for c in cases)).encode()).hexdigest()[:16],
    }
    sel["hash"] = hashlib.sha256(json.dumps(sel, sort_keys=True).encode()).hexdigest()[:16]
    return sel


def _check_resume(results: Path, sel: dict) -> None:
    """--resume continues only the same selection: refuse naming what differs."""
    from .results import read
    if not results.exists():
        return
    envs = read(results, allow_partial=True).envs
    old = envs[-1].get("selection")
    if not isinstance(old, dict):
        raise BadArgs(f"--resume: {results} does not record its selection (written by an older bench): "
                      f"run again with --overwrite")
    if old.get("hash") == sel["hash"]:
        return
    diff = [k for k in _SELECTION_NAMES if old.get(k) != sel.get(k)]
    what = "; ".join(f"{_SELECTION_NAMES.get(k, k)}: {_show(old.get(k))} there, {_show(sel.get(k))} now"
                     for k in diff if k != "cases") or "the selected cases differ"
    raise BadArgs(f"--resume: this selection differs from the run in {results.parent} ({what}); "
                  f"use the same options, or --overwrite to start again")


def _show(v) -> str:
    if v in (None, [], {}):
        return "none"
    if isinstance(v, list):
        return ",".join(map(str, v))
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)


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
    from .record import FINDINGS, VERDICTS
    known = VERDICTS + (FINDINGS if findings else ())
    wanted = {v.strip().upper() for v in text.split(",") if v.strip()}
    bad = wanted - set(known)
    if bad:
        raise BadArgs(f"{option}: unknown name(s) {', '.join(sorted(bad))}; known: {', '.join(known)}")
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


def _run_environment(spec, *, profile, cases_file, opset, optimization, shard, three_way, total, selection=None):
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
                "argv": list(_ARGV), "not_expressible": not_expressible_list(), "three_way": three_way,
                "nan_policy": NAN_POLICY, "total_cases": total, "selection": selection,
                "selection_hash": (selection or {}).get("hash")})
    return Environment.from_flat(env)


def _execute(cases, spec, cfg, env, results: Path, resume: bool, out: Path):
    """Run the cases not done yet, streaming records to ``results``; (all records, seconds).
    Ctrl-C stops the run with what is saved and the command that continues it (exit code 130)."""
    from .execute import run_cases
    from .results import ResultWriter, done_ids, read
    skip = done_ids(results) if resume else set()
    todo = [c for c in cases if c.id not in skip]
    writer = ResultWriter(results, env, resume=resume)
    counts: Counter = Counter()
    say(f"[bold]{len(todo)}[/] cases on [bold]{spec.ep_name}[/] ({env.ort_package} {env.ort_version}, "
        f"device: {env.device})" + (f"; {len(skip)} already done" if skip else ""))
    t0 = time.perf_counter()
    progress = _progress(spec.ep_name, len(todo))
    try:
        with progress:
            def on_records(recs):
                writer.write(recs)
                counts.update(r.verdict for r in recs)
                progress.advance(len(recs), counts)

            run_cases(todo, spec, cfg, on_records)
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


def _progress(name: str, total: int) -> _Progress:
    return _Progress(name, total)


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
        print(f"  {op} {dt}: " + ", ".join(f"{v} {cnt[v]}" for v in VERDICT_STYLE if cnt.get(v)))
    sys.stdout.flush()


def _write_reports(results, out: Path, fail_on=("FAIL", "CRASH", "TIMEOUT")) -> None:
    """The reports of ``results``: result files, or results already loaded (``report.load``)."""
    from .report import write_all
    paths = write_all(results if not isinstance(results, (list, tuple)) else list(results), out, fail_on=fail_on)
    for p in paths:
        plain(f"wrote {p}")


#: the command that makes an EP available here, by key
EP_HOWTO = {
    "cpu": "pip install -c constraints.txt -e '.[cpu]'",
    "cuda": "pip install -c constraints.txt -e '.[cuda]' (and an NVIDIA GPU with its driver)",
    "openvino": "pip install -c constraints.txt -e '.[openvino]'",
    "dml": ("pip install -c constraints.txt -e '.[directml]'" if sys.platform == "win32"
            else "onnx-dml-bench setup dml"),
    "dml-direct": "onnx-dml-bench setup dml",
    "webgpu": "pip install -c constraints.txt -e '.[webgpu]'",
    "tensorrt": "pip install onnxruntime-gpu, with TensorRT's libraries on the library path",
    "plugin": "run --ep plugin:PATH[:EpName] with the EP's shared library",
}


def ep_rows() -> list[dict]:
    """Every EP the bench knows, with status 'ok' or why it is unavailable, and how to make it so."""
    from . import providers
    found = {r["key"]: r for r in providers.list_available()}
    rows = []
    for key, (ep_name, _package) in providers.KNOWN.items():
        row = found.pop(key, None)
        if row is None or row["status"] != "ok":
            try:
                spec = providers.resolve(key)
                row = {"ep": spec.ep_name, "key": key, "package": spec.package, "device": "", "status": "ok"}
            except providers.ProviderError as e:
                row = {"ep": ep_name, "key": key, "package": "", "device": "", "status": f"unavailable: {e}"}
            except Exception as e:  # noqa: BLE001 - a broken install is a status, not a crash
                row = {"ep": ep_name, "key": key, "package": "", "device": "",
                       "status": f"unavailable: {type(e).__name__}: {e}"}
        row["how"] = "" if row["status"] == "ok" else EP_HOWTO.get(key, "")
        rows.append(row)
    for key, row in found.items():          # other EPs built into the installed package
        rows.append({**row, "how": "" if row["status"] == "ok" else ""})
    rows.append({"ep": "plugin EP", "key": "plugin:PATH[:EpName]", "package": "", "device": "",
                 "status": "needs the path of an EP library", "how": EP_HOWTO["plugin"]})
    return rows


@app.command("eps")
def eps():
    """List every EP the bench knows: ok, or why it is unavailable and the command that makes it available."""
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
        code = fixtures_command(out, profile, _split(op) or None, _split(dtype) or None, include_open)
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
        from .providers import ProviderError, resolve
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
    from .providers import parse_options
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
@click.option("--verdicts", default=",".join(("FAIL", "CRASH", "TIMEOUT", "ERROR")), show_default=True,
              help="verdicts to triage (add EP_REJECTED, NOT_OFFLOADED to shrink those too)")
@click.option("--time-limit", default=180.0, type=click.FloatRange(min=1), show_default=True,
              help="seconds per shrink")
@click.option("--no-bundles", is_flag=True, help="shrink only")
def triage_cmd(results, ep, ep_option, verdicts, time_limit, no_bundles):
    """One minimal case and bundle per failure signature of a results file (beside it:
    shrunk/, bundle/, triage.md, triage.json; the report links them)."""
    from .providers import parse_options
    from .record import VERDICTS
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
              f"{Path(results).parent / 'triage.md'}")


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
        summary = fuzz_command(ep, parse_options(ep_option), budget, seed, _split(op), baseline, out, batch_size, _log,
                               max_cases)
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
    except (BadArgs, ResultsError) as e:
        print(f"onnx-dml-bench: error: {_one_line(str(e))}", file=sys.stderr)
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
        msg = _one_line(e.format_message())
        print(f"onnx-dml-bench: error: {msg}", file=sys.stderr)
        return 2
    except click.ClickException as e:
        print(f"onnx-dml-bench: error: {e.format_message()}", file=sys.stderr)
        return e.exit_code
    return 0



def _bare_help() -> int:
    """`onnx-dml-bench` alone: the normal help on stdout, exit code 0."""
    ctx = click.Context(app, info_name="onnx-dml-bench")
    click.echo(app.get_help(ctx))
    return 0


def _one_line(msg: str) -> str:
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())


if __name__ == "__main__":
    sys.exit(main())
