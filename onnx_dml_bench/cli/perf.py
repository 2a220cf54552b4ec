"""`onnx-dml-bench perf`: per-case latency on an EP's own memory (``perf.py``)."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from ..errors import ProviderError
from .console import console


@click.command("perf")
@click.option("--ep", required=True)
@click.option("--runs", default=50, type=click.IntRange(min=1), show_default=True)
@click.option("--warmup", default=10, type=click.IntRange(min=0), show_default=True)
@click.option("--bandwidth", type=float, help="device memory bandwidth in GB/s for the share column")
@click.option("--out", type=click.Path(path_type=Path),
              help="a path ending in .json: the file to write; otherwise a folder for perf.json "
                   "(entries of other EPs in it are kept)")
def perf(ep, runs, warmup, bandwidth, out):
    """Per-case latency with inputs and outputs kept on the device (IOBinding)."""
    from ..lanes.catalog import resolve
    from ..perf import perf_command
    try:
        lane = resolve(ep)
    except ProviderError as e:
        console.print(f"[red]onnx-dml-bench perf: --ep {escape(ep)}: {escape(str(e))}[/]")
        sys.exit(2)
    sys.exit(perf_command(lane, runs, warmup, bandwidth, out))
