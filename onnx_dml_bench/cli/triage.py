"""The triage commands: `shrink` and `bundle` (one case of a results file), `triage` (one minimal
case and bundle per failure signature) and `fuzz`; each over one function of ``triage/``."""
from __future__ import annotations

import contextlib
from pathlib import Path

import click

from ..outdir import TRIAGE_MD, command, locked, run_folder_of
from ..record import VERDICTS, Verdict
from .args import BadArgs, EpOption, invocation, parse_elements
from .console import log, plain


def _hold_run_folder(path: Path):
    """The lock of the run folder ``path`` is written into (``<run>/shrunk/x.json``,
    ``<run>/bundle/<id>``), held while it is written; nothing to hold outside a run folder."""
    folder = run_folder_of(path)
    return locked(folder, invocation(), say=log) if folder is not None else contextlib.nullcontext()


@click.command("shrink")
@click.argument("case_id")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="the results.jsonl holding the case")
@click.option("--ep", cls=EpOption, help="EP to probe on (default: the EP of the results): {eps}")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--out", type=click.Path(path_type=Path),
              help="case file to write (default: shrunk/CASE_ID.json beside the results, where the report looks)")
@click.option("--time-limit", default=600.0, type=click.FloatRange(min=1), show_default=True, help="seconds")
def shrink_cmd(case_id, results, ep, ep_option, out, time_limit):
    """Reduce a failing case while the same failure signature holds; write the minimal case file."""
    from ..lanes.catalog import parse_options
    from ..triage.triage import ShrinkError, shrink_command
    try:
        res, path = shrink_command(case_id, results, ep, parse_options(ep_option), out, time_limit, log,
                                   hold=_hold_run_folder)
    except ShrinkError as e:
        raise BadArgs(str(e)) from None
    plain(f"signature: {res.signature.text()}")
    plain(f"shrank: {res.summary()}")
    plain(f"minimal case {res.minimal.id} -> {path}  ({command('run', '--cases', path)})")


@click.command("bundle")
@click.argument("case_id")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="the results.jsonl holding the case")
@click.option("--out", required=True, type=click.Path(path_type=Path), help="folder to write")
@click.option("--ep", cls=EpOption, help="EP to re-run the case on (default: the EP of the results): {eps}")
@click.option("--no-rerun", is_flag=True, help="do not re-run: leave the EP's and CPU's outputs out")
def bundle_cmd(case_id, results, out, ep, no_rerun):
    """A self-contained folder for a driver bug report: model, data, outputs, repro.py, C++ descriptor, DxDispatch model."""
    from ..bundle.build import BundleError
    from ..triage.triage import bundle_command
    try:
        path = bundle_command(case_id, results, out, ep, rerun=not no_rerun, say=log, hold=_hold_run_folder)
    except BundleError as e:
        raise BadArgs(str(e)) from None
    plain(f"bundle -> {path}")


@click.command("triage")
@click.option("--from", "results", required=True, type=click.Path(path_type=Path), help="a results.jsonl(.gz)")
@click.option("--ep", cls=EpOption, help="EP to probe on (default: the EP of the results): {eps}")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--verdicts", default=",".join(Verdict.FAILED), show_default=True,
              help="verdicts to triage (add EP_REJECTED, NOT_OFFLOADED to shrink those too)")
@click.option("--time-limit", default=180.0, type=click.FloatRange(min=1), show_default=True,
              help="seconds per shrink")
@click.option("--no-bundles", is_flag=True, help="shrink only")
def triage_cmd(results, ep, ep_option, verdicts, time_limit, no_bundles):
    """One minimal case and bundle per failure signature of a results file (beside it:
    shrunk/, bundle/, triage.md, triage.json; the report links them)."""
    from ..lanes.catalog import parse_options
    from ..triage.triage import TriageError, describe_row, triage
    want = tuple(v.strip().upper() for v in verdicts.split(",") if v.strip())
    bad = [v for v in want if v not in VERDICTS]
    if bad or not want:
        raise BadArgs(f"--verdicts: unknown verdict(s) {', '.join(bad) or '(none given)'}; known: {', '.join(VERDICTS)}")
    try:
        with locked(Path(results).parent, invocation(), say=log):   # shrunk/, bundle/, triage.* beside the results
            rows = triage(results, ep=ep, ep_options=parse_options(ep_option), verdicts=want, time_limit=time_limit,
                          bundles=not no_bundles, say=log)
    except TriageError as e:
        raise BadArgs(str(e)) from None
    for r in rows:
        plain(describe_row(r))
    if rows:
        plain(f"{len(rows)} signature(s), {sum(r.shrunk is not None for r in rows)} shrunk -> "
              f"{Path(results).parent / TRIAGE_MD}")


@click.command("fuzz")
@click.option("--ep", default="cpu", show_default=True, cls=EpOption, help="the EP to fuzz: {eps}")
@click.option("--ep-option", "ep_option", multiple=True, help="EP option KEY=VALUE (repeatable)")
@click.option("--budget", default="10m", show_default=True, help="time budget: 90s, 10m, 1h")
@click.option("--seed", default=0, type=int, show_default=True)
@click.option("--op", multiple=True, help="operator(s) (default: all)")
@click.option("--baseline", type=click.Path(path_type=Path), help="results.jsonl whose signatures are not new")
@click.option("--out", default=Path("reports/fuzz"), type=click.Path(path_type=Path), show_default=True)
@click.option("--batch-size", default=256, type=click.IntRange(min=1), show_default=True)
@click.option("--max-cases", type=click.IntRange(min=1), help="stop sampling after this many cases (a budget that does not depend on speed)")
@click.option("--max-elements", "max_elements", default=None, metavar="N",
              help="samples' inputs grow log-uniformly up to this many elements (e.g. 2^28; default 2^26)")
def fuzz_cmd(ep, ep_option, budget, seed, op, baseline, out, batch_size, max_cases, max_elements):
    """Sample valid descriptors, run them in batches, group failures by signature, shrink one per new signature."""
    from ..lanes.catalog import parse_options
    from ..registry import split_names
    from ..triage.fuzz import FuzzError, fuzz_command
    try:
        with locked(out, invocation(), say=log):
            summary = fuzz_command(ep, parse_options(ep_option), budget, seed, split_names(op), baseline, out,
                                   batch_size, log, max_cases, parse_elements(max_elements))
    except FuzzError as e:
        raise BadArgs(str(e)) from None
    plain(summary)
