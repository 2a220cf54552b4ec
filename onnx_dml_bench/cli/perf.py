"""`onnx-dml-bench perf`: per-case latency on an EP's own memory (``perf.py``), with perf.html beside
perf.json; `onnx-dml-bench perf-compare`: slowdowns beyond the measured noise between two perf files
(``report/perf.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from ..errors import PlanError
from .args import BadArgs, EpOption
from .console import console


@click.command("perf")
@click.option("--ep", required=True, cls=EpOption, help="the EP: {eps}")
@click.option("--ep-option", "ep_options", multiple=True, metavar="KEY=VALUE",
              help="EP option (e.g. directml=1.13.1 on the DirectML lanes); repeatable")
@click.option("--runs", default=50, type=click.IntRange(min=1, max=10000), show_default=True,
              help="timed runs per case (their median is the figure; perf-compare tests them all)")
@click.option("--warmup", default=10, type=click.IntRange(min=0, max=1000), show_default=True,
              help="untimed runs before the timed ones (each round, on the DirectML lanes)")
@click.option("--rounds", default=5, type=click.IntRange(min=1), show_default=True,
              help="DirectML lanes: the runs taken in this many rounds over all the cases, so that each case's "
                   "runs spread over the whole measurement")
@click.option("--profile", help="time the descriptors of this profile's sweep (each once) instead of the default cases")
@click.option("--op", "ops", multiple=True, help="only these operators (registry name, DML name or short prefix)")
@click.option("--cases", "cases_file", type=click.Path(path_type=Path),
              help="a case file (JSON/YAML) of the cases to time; a case's `note` names it")
@click.option("--every", default=1, type=click.IntRange(min=1), show_default=True,
              help="time every N-th selected case")
@click.option("--bandwidth", type=float,
              help="device memory bandwidth in GB/s for the share column (default: the yardstick measured on the "
                   "device where the lane has one, else a nominal value from the GPU's name)")
@click.option("--yardstick-mb", default=64, type=click.IntRange(min=1, max=1024), show_default=True,
              help="size of the copies that measure the device's bandwidth (lanes with a yardstick)")
@click.option("--out", type=click.Path(path_type=Path),
              help="a path ending in .json: the file to write; otherwise a folder for perf.json "
                   "(entries of other EPs in it are kept); its page beside it (perf.html; x.json: x.html)")
def perf(ep, ep_options, runs, warmup, rounds, profile, ops, cases_file, every, bandwidth, yardstick_mb, out):
    """Per-case latency with inputs and outputs kept on the device (IOBinding; on the direct DirectML lane,
    the GPU time of each dispatch from D3D12 timestamps)."""
    from ..perf import PerfCaseError, lens_cases, perf_command
    from ..plan import resolve_lane, select_noted
    from ..registry import split_names
    if cases_file is not None and profile:
        raise BadArgs("--cases and --profile: give one of them")
    try:
        lane = resolve_lane(ep, ep_options)
    except PlanError as e:
        console.print(f"[red]onnx-dml-bench perf: {escape(str(e))}[/]")
        sys.exit(2)
    ops = split_names(ops) or None
    try:                # the plan's selection (a case file's, or a profile's sweep), each descriptor once
        selected = select_noted(profile, ops, cases_file=cases_file) if profile or cases_file else None
        cases = lens_cases(selected, ops, distinct=bool(profile), every=every)
    except (PlanError, PerfCaseError) as e:
        raise BadArgs(str(e)) from None
    if not cases:
        raise BadArgs("no cases selected (check --op, --profile, --cases)")
    code, path = perf_command(lane, runs, warmup, bandwidth, out, cases, yardstick_mb << 20, rounds)
    if path is not None:
        from ..report.perf import write_perf_html
        html = write_perf_html(path)
        console.print(f"wrote {html}")
    sys.exit(code)


@click.command("perf-compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("current", type=click.Path(path_type=Path))
@click.option("--alpha", default=0.01, type=click.FloatRange(1e-9, 0.5), show_default=True,
              help="family-wise error rate of the flags (Holm over the descriptors compared)")
@click.option("--min-change", default=0.10, type=click.FloatRange(0.0), show_default=True,
              help="smallest relative change of the median that is flagged (0.10: 10%)")
@click.option("--baseline-run", "baseline_runs", multiple=True, type=click.Path(path_type=Path),
              help="another perf file of the baseline's environment (a run made at another time); repeatable")
@click.option("--current-run", "current_runs", multiple=True, type=click.Path(path_type=Path),
              help="another perf file of the current environment; repeatable")
@click.option("--out", type=click.Path(path_type=Path),
              help="a path ending in .html: the page to write; otherwise a folder for perf-compare.html "
                   "(default: beside CURRENT)")
def perf_compare_cmd(baseline, current, alpha, min_change, baseline_runs, current_runs, out):
    """Slowdowns (and speed-ups) per descriptor between two perf.json files, beyond the measured noise:
    a one-sided Mann-Whitney U test over the timed runs (Holm over the descriptors), the bootstrap 95%
    interval of the median ratio and a minimum relative change; with several files a side, every run
    against every run, and a change larger than the one between runs of the same environment; exit
    code 1 when one is slower."""
    for p in (baseline, current, *baseline_runs, *current_runs):
        if not p.exists():
            raise BadArgs(f"{p}: no such file")
    from ..report.perf import PerfFileError, perf_compare_command
    try:
        sys.exit(perf_compare_command(baseline, current, out, alpha=alpha, min_change=min_change,
                                      baseline_runs=list(baseline_runs), current_runs=list(current_runs)))
    except PerfFileError as e:
        raise BadArgs(str(e)) from None
