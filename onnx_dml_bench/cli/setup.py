"""`onnx-dml-bench setup`: install a backend's stack (`setup dml`: DirectML under Wine, through
``dml/install`` and ``dml/probe``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import ProviderError
from .args import BadArgs
from .console import console, out_console


@click.group("setup", help="Install a backend's stack.")
def setup_app():
    pass


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
        from ..lanes.catalog import resolve
        try:
            resolve("dml")
        except ProviderError as e:
            raise BadArgs(str(e)) from None
        out_console.print("DmlExecutionProvider is available natively (onnxruntime-directml)")
        return
    from ..dml.install import default, sm6
    from ..dml.select import installed_versions
    from ..dml.wine.stackinfo import StackError
    try:
        info = default.setup(cache, onnxruntime_node=ort_node, directml_dll=directml_dll)
    except StackError as e:
        console.print(f"[red]setup dml: {e}[/]")
        sys.exit(2)
    out_console.print(json.dumps(info.versions, indent=1))
    out_console.print(f"DirectML builds: {installed_versions(info.cache_dir)}")
    from ..dml.direct import ensure_built      # the direct lane's harness, built from its sources
    try:
        exe = ensure_built(info, log=lambda m: console.print(f"direct lane: {m}"))
    except StackError as e:
        console.print(f"[red]setup dml: the direct lane's harness: {e}[/]")
        sys.exit(2)
    out_console.print(f"direct DirectML lane harness: {exe}")
    from ..dml.probe import measure_shader_model
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
        from ..dml.node import client
        try:
            res = client.canary(built[-1])
        finally:
            client.shutdown()
        out_console.print(f"stack wine10-sm6: {res.message}")
        if not res.ok:
            sys.exit(3)
