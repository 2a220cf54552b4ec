"""The commands over cases and results: `eps` (the EPs here), `cases` (a case file), `expectations`,
`merge`, `report`, `compare` and `fixtures`."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

import click
from rich.table import Table

from ..errors import EXIT_INCOMPLETE
from ..expectations import write as write_expectations
from ..outdir import locked
from ..record import FAIL_ON_DEFAULT, Verdict
from ..results import completeness, merge_reads, read
from .args import BadArgs, invocation, parse_elements, parse_verdicts
from .console import out_console, plain, say


@click.command("eps")
def eps():
    """List every EP the bench knows: ok, or why it is unavailable and the command that makes it available."""
    from ..lanes.catalog import ep_rows
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


@click.command("cases")
@click.option("--profile", default="smoke", show_default=True)
@click.option("--op", multiple=True)
@click.option("--dtype", multiple=True)
@click.option("--opset", default="default", show_default=True)
@click.option("--export", required=True, type=click.Path(path_type=Path), help="write the cases to this JSON or YAML file")
@click.option("--failed-from", type=click.Path(path_type=Path), help="take the non-PASS cases of a results JSONL instead")
@click.option("--verdicts", default=",".join(Verdict.FAILED + Verdict.NOT_TAKEN), show_default=True,
              help="with --failed-from")
@click.option("--max-elements", "max_elements", default=None, metavar="N",
              help="the largest tensor of a case, in elements, as for run (default 2^26)")
def cases_cmd(profile, op, dtype, opset, export, failed_from, verdicts, max_elements):
    """Write a sweep (or the failures of a run) as a case file a person can edit and re-run."""
    from ..casefile import case_from_record, dump
    from ..plan import select_cases
    from ..registry import split_names
    if failed_from:
        if not failed_from.is_file():
            raise BadArgs(f"--failed-from: {failed_from} does not exist")
        want = parse_verdicts(verdicts, "--verdicts")
        limit = parse_elements(max_elements)
        cases = [case_from_record(r, limit) for r in read(failed_from).records if r.verdict in want]
    else:
        cases = select_cases(profile, split_names(op), split_names(dtype), opset, None, parse_elements(max_elements))
    dump(cases, export)
    out_console.print(f"wrote {len(cases)} cases to {export}")


@click.command("expectations")
@click.option("--from", "results", required=True, multiple=True, type=click.Path(path_type=Path),
              help="a results.jsonl (repeatable: the runs of several profiles, and the other lanes of a "
                   "DirectML run, which tell DirectML itself from the DML EP's lowering)")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="the expectations file to write (YAML)")
@click.option("--fail-on", default=",".join(FAIL_ON_DEFAULT), show_default=True,
              help="verdicts (and findings) to list as known")
@click.option("--ep", help="the EP whose records to list (needed when the results hold several)")
@click.option("--reason", default="known failure; see the run's report", show_default=True,
              help="reason for records that have none")
@click.option("--link", default="", help="a link stored with every entry (issue, report)")
@click.option("--note", multiple=True, help="a comment line for the top of the file (repeatable)")
def expectations_cmd(results, out, fail_on, ep, reason, link, note):
    """Write an expectations file listing the failing cases of a run, for `run --expectations`: each
    entry's reason is who is at fault and why (a known deviation of the CPU EP with its declared
    text), cases of one operator, data type and reason in one entry."""
    from ..report.data import deviation_texts
    from ..report.fault import blames, why_expected
    for p in results:
        if not p.exists():
            raise BadArgs(f"--from {p}: no such file")
    reads = [read(p) for p in results]
    recs = [r for x in reads for r in x.records]
    by = blames(recs, envs=[e for x in reads for e in x.envs])
    devs = deviation_texts()
    try:
        n = write_expectations(recs, out, parse_verdicts(fail_on, "--fail-on", findings=True), reason=reason, link=link, ep=ep,
                               reason_of=lambda r: why_expected(r, by[(r.case_id, r.ep, r.env_id or "")], devs),
                               header=list(note))
    except ValueError as e:
        raise BadArgs(str(e)) from None
    out_console.print(f"wrote {n} expectations to {out}")


@click.command("merge")
@click.argument("out", type=click.Path(path_type=Path))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--report", is_flag=True, help="also write the reports beside OUT")
@click.option("--overwrite", is_flag=True, help="replace OUT when it exists")
@click.option("--fail-on", "fail_on", default=None,
              help="verdicts or findings (e.g. DEVICE_DIFFERS, the GPUs of several hosts compared) of the merged "
                   "records that make the exit code 1 [default: none: merge only joins]")
def merge(out, inputs, report, overwrite, fail_on):
    """Join the results of shards (or of several EPs, or of several hosts' devices: their GPUs are
    compared with each other, the finding DEVICE_DIFFERS) into one JSONL (OUT, a file)."""
    fail_set = parse_verdicts(fail_on, "--fail-on", findings=True) if fail_on else set()
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
    reads = [read(p) for p in inputs]
    with locked(out.parent, invocation(), say=say):
        n_env, n = merge_reads(reads, out)
        plain(f"merged {n} records from {len(inputs)} files ({n_env} environments) into {out}")
        if report:
            write_reports([out], out.parent)
    for line in completeness(reads).missing:     # said here; `report` is the gate (exit code 4)
        say(f"warning: incomplete: {line}")
    if fail_set or any(e.get("device_unit") for r in reads for e in r.envs):
        _merged_gate(out, fail_set)


def _merged_gate(out: Path, fail_set: set[str]) -> None:
    """What the merged records say of the devices compared, and the exit code of ``--fail-on``."""
    from .. import crossdevice
    from ..errors import EXIT_FAIL
    merged = read(out)
    diffs = crossdevice.differences(merged.envs, merged.records)
    for line in crossdevice.summary(merged.envs, diffs):
        plain(line)
    hits = [r for r in merged.records if r.verdict in fail_set or fail_set.intersection(r.findings)]
    if hits:
        plain(f"exit code 1: {len(hits)} merged record(s) with a verdict or finding of --fail-on "
              f"{','.join(sorted(fail_set))}")
        sys.exit(EXIT_FAIL)


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", default=Path("reports/latest"), type=click.Path(path_type=Path), show_default=True,
              help="output folder for report.html, junit.xml and summary.json")
@click.option("--allow-partial", is_flag=True, help="report a results file whose last line was cut off (an interrupted run)")
def report_cmd(results, out, allow_partial):
    """(Re)write HTML, JUnit XML and JSON summary from results."""
    for p in results:
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    if out.exists() and not out.is_dir():
        raise BadArgs(f"--out {out}: is a file, not a folder")
    from ..report import load
    res = load(results, allow_partial=allow_partial)        # each file read once, for every report
    for partial in res.partial:
        say(f"warning: {partial}")
    write_reports(res, out)
    if res.incomplete:
        for line in res.incomplete:
            say(f"warning: incomplete: {line}")
        sys.exit(EXIT_INCOMPLETE)


@click.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path),
              help="write the page: a path ending in .html is the page itself, anything else a folder for "
                   "compare.html (without --out no file is written)")
@click.option("--json", "json_out", type=click.Path(path_type=Path),
              help="also write the whole comparison as JSON to this file: every change, and every new and "
                   "removed case (the page counts those and lists only the first)")
@click.option("--by-case", is_flag=True,
              help="match records by case id and EP alone, whatever environment recorded them (a run re-run "
                   "in part on another device compared as one run); by default environments of one EP that "
                   "differ on a side (two devices, two DirectML.dll builds) are matched apart")
def compare_cmd(baseline, current, out, json_out, by_case):
    """Regressions, fixes and numeric drift between two runs of the same suite, as text; with --out
    also compare.html (regressions first), and where it was written. Two perf.json files: `perf-compare`."""
    for p in (baseline, current):
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    from ..report.perf import PerfFileError, is_perf_file, perf_compare_command
    perf_files = [is_perf_file(p) for p in (baseline, current)]
    if all(perf_files):
        if json_out is not None:
            raise BadArgs("--json: for two results files; of two perf files `perf-compare` writes its page")
        try:
            sys.exit(perf_compare_command(baseline, current, out))
        except PerfFileError as e:
            raise BadArgs(str(e)) from None
    if any(perf_files):
        which = baseline if perf_files[0] else current
        raise BadArgs(f"{which} is a perf file (perf.json) and the other a results file: compare two of a kind")
    from ..report.diff import compare_command        # reads each file once; one line and exit 2 if it cannot
    sys.exit(compare_command(baseline, current, out, hold=lambda folder: locked(folder, invocation(), say=say),
                             json_out=json_out, by_case=by_case))


@click.command("fixtures")
@click.option("--out", required=True, type=click.Path(path_type=Path))
@click.option("--profile", default="smoke", show_default=True)
@click.option("--op", multiple=True)
@click.option("--dtype", multiple=True)
@click.option("--include-open", is_flag=True, help="also export cases that touch open points, with the policy stated")
def fixtures_cmd(out, profile, op, dtype, include_open):
    """Write ONNX model fixtures in the ONNX backend-test layout."""
    from ..registry import split_names
    try:
        code = fixtures_command(out, profile, split_names(op) or None, split_names(dtype) or None, include_open)
    except (KeyError, ValueError) as e:
        raise BadArgs(str(e)) from None
    sys.exit(code)


def fixture_cases(profile: str, ops: Sequence[str] | None = None, dtypes: Sequence[str] | None = None) -> list:
    """The cases `fixtures` exports: the sweep cases of ``profile`` for operators ``ops`` (registry
    names, DML names or short prefixes; all when None) and data types ``dtypes`` (FLOAT32 / f32 ...;
    all when None)."""
    from .. import registry
    from ..plan import sweep_cases
    keys = list(dict.fromkeys(registry.get(o).key for o in ops)) if ops else None    # each operator once
    return sweep_cases(profile, keys, dtypes)


def fixtures_command(out: Path, profile: str, ops: list[str] | None, dtypes: list[str] | None,
                     include_open: bool) -> int:
    """``onnx-dml-bench fixtures``: export the selected sweep cases; print one summary line.
    Returns 0 on success, 1 if nothing was selected or a case failed to export, 2 on bad
    arguments or an unusable output folder; a folder that cannot be written raises its OSError
    (exit code 5)."""
    from ..fixtures import FixtureError, export
    try:
        cases = fixture_cases(profile, ops, dtypes)
    except (KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"fixtures: {msg}", file=sys.stderr)
        return 2
    if not cases:
        print(f"fixtures: no cases match (profile {profile}, ops {ops or 'all'}, dtypes {dtypes or 'all'})",
              file=sys.stderr)
        return 1
    try:
        summary = export(cases, Path(out), include_open=include_open)
    except FixtureError as e:
        print(f"fixtures: {e}", file=sys.stderr)
        return 2
    # an OSError (a read-only folder, a full disk) goes up: one line naming the file, exit code 5
    print(summary.line())
    if summary.errors:
        for e in summary.errors:
            print(f"fixtures: error in {e['id']}: {e['reason']}", file=sys.stderr)
        return 1
    return 0


def write_reports(results, out: Path, fail_on=FAIL_ON_DEFAULT) -> None:
    """report.html, junit.xml and summary.json of ``results`` (result files, or results already
    loaded with ``report.load``) into ``out``, under the folder's lock; one line per file written."""
    from ..report import write_all
    with locked(out, invocation(), say=say):
        paths = write_all(results if not isinstance(results, (list, tuple)) else list(results), out, fail_on=fail_on)
    for p in paths:
        plain(f"wrote {p}")
