"""`onnx-dml-bench mutants`: the judge's power, measured with wrong and right answers made from the
expected answer of each case (``mutants.py``): kill rates per operator x class x profile, every
surviving bug mutant with why, mutants.json and mutants.html."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import EXIT_FAIL, EXIT_OK
from .args import BadArgs, parse_elements
from .console import console, out_console


@click.command("mutants")
@click.option("--profile", "profiles", multiple=True,
              help="the profile(s) whose cases are mutated (repeatable or a comma list; default: default)")
@click.option("--op", "ops", multiple=True, help="only these operators (registry name, DML name or short prefix)")
@click.option("--max-elements", "max_elements", default=None, metavar="N",
              help="sized profiles (networks, limits): the largest tensor of a case, in elements (default 2^26)")
@click.option("--every", default=1, type=click.IntRange(min=1), show_default=True,
              help="sized profiles: every N-th case of each operator")
@click.option("--out", type=click.Path(path_type=Path), help="a folder for mutants.json and mutants.html")
@click.option("--jobs", default=1, type=click.IntRange(min=1, max=256), show_default=True,
              help="worker processes")
@click.option("--require", is_flag=True,
              help="exit 1 also when a kill rate is below its target (99.9 %% of a profile's non-equivalent bug "
                   "mutants, 99.5 %% of each operator's)")
@click.option("--survivors", default=40, type=click.IntRange(min=0), show_default=True,
              help="survivors printed per profile (the JSON and the page list all)")
def mutants_cmd(profiles, ops, max_elements, every, out, jobs, require, survivors):
    """Measure the judge: wrong answers of the bug classes GPU kernels have (each class with its
    source) and the legitimate answers, from each case's expected answer, judged through the bench's
    one verdict path. Exit 0: every legitimate answer passes (and, with --require, the kill targets
    hold); 1 otherwise; 2 a wrong argument."""
    from .. import heap
    from .. import mutants as MU
    from ..registry import split_names
    chosen = split_names(profiles) or ["default"]
    bad = [p for p in chosen if p not in MU.PROFILES]
    if bad:
        raise BadArgs(f"--profile must be one of {', '.join(MU.PROFILES)}, got {bad[0]!r}")
    req = MU.Request(chosen, split_names(ops), parse_elements(max_elements), every, jobs)
    if jobs <= 1:
        heap.keep_freed_memory(heap.share(1))       # this process judges every mutant
    for p in chosen:
        try:
            if not MU.select(p, req.ops, req.max_elements, req.every):
                raise BadArgs(f"--profile {p}: no cases selected (check --op, --max-elements)")
        except MU.MutantsError as e:
            raise BadArgs(str(e)) from None

    def progress(profile, done, total):
        if console.is_terminal and (done == total or done % 50 == 0):
            console.print(f"{profile}: {done}/{total} cases", highlight=False)

    summary = MU.run(req, progress)
    for line in MU.lines(summary, survivors):
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    if out is not None:
        js, page = MU.write(summary, out)
        out_console.print(f"wrote {js} and {page}", markup=False, highlight=False)
    code = MU.exit_code(summary, require)
    sys.exit(EXIT_FAIL if code else EXIT_OK)
