"""`onnx-dml-bench setup`: install a backend's stack (`setup dml`: DirectML under Wine, through
``dml/install`` and ``dml/probe``)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..errors import ProviderError
from .args import BadArgs
from .console import console, out_console, plain, say


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
    """Install DirectML under Wine on a software Vulkan device (Linux), or check onnxruntime-directml
    and build the direct lane's harness (Windows). One line per step; needs root only to apt-get
    system packages that are missing (it says which, and how, otherwise).

    \b
    The stack goes into a cache folder: --cache, else the environment variable
    ONNX_DML_BENCH_CACHE, else ~/.cache/onnx-dml-bench/dml. Every command that runs
    DirectML (run/shrink/bundle/triage/fuzz --ep dml|dml-direct, eps) finds it the same way,
    so set ONNX_DML_BENCH_CACHE for them too when the stack is elsewhere. The cache can be
    copied or moved as a whole (its stack.json names its files relative to itself); `eps`
    checks the files it names and says what is missing."""
    if sys.platform == "win32":
        sys.exit(_setup_native())
    from ..dml.install import default, sm6
    from ..dml.select import installed_versions
    from ..dml.wine.proc import is_root
    from ..dml.wine.stackinfo import StackError, default_cache_dir
    t0 = time.monotonic()
    where = cache or default_cache_dir()
    steps = _Steps(len(default.STEPS) + 2 + (1 if "wine10-sm6" in stack_names else 0))
    say(f"setup dml: DirectML under Wine on Mesa's lavapipe (software Vulkan) into {where}: "
        f"{len(default.STEPS) + 2} steps, finished ones kept. "
        + ("Running as root: missing system packages are installed with apt-get."
           if is_root() else "Not root: missing system packages are not installed here; the first step names "
                             "them and the `sudo apt-get install` line to run."), err=False)
    log = lambda m: plain(f"      {m}")        # noqa: E731 - a step's own lines, indented under it
    try:
        info = default.setup(cache, onnxruntime_node=ort_node, directml_dll=directml_dll, log=log, step=steps)
    except StackError as e:
        console.print(f"[red]setup dml: {e}[/]")
        sys.exit(2)
    from ..dml.direct import ensure_built      # the direct lane's harness, built from its sources
    steps("the direct lane's harness: harness.c built by MinGW-w64 (gcc-mingw-w64-x86-64-posix) into the cache")
    try:
        exe = ensure_built(info, log=log)
    except StackError as e:
        console.print(f"[red]setup dml: the direct lane's harness: {e}[/]")
        sys.exit(2)
    log(f"harness: {exe.name}")
    from ..dml.probe import measure_shader_model
    built = [info]                   # the default stack is always set up (wine10-sm6 uses its Node.js and DLLs)
    if "wine10-sm6" in stack_names:
        steps("the wine10-sm6 stack: Debian trixie's Wine 10 in a debootstrap root, wined3d.dll rebuilt (minutes)")
        try:
            sm6_stack = sm6.setup(info.cache_dir, info, log=log, jobs=build_jobs)
            ensure_built(sm6_stack, log=log)
        except StackError as e:
            console.print(f"[red]setup dml: {e}[/]")
            sys.exit(2)
        built.append(sm6_stack)
    steps("the shader model each stack's DirectML gets (the direct harness asks DirectML)")
    for st in built:                 # measured by the direct harness, cached in the stack's manifest
        try:
            sm = measure_shader_model(st)
        except StackError as e:
            console.print(f"[red]setup dml: {st.stack_name}: the direct harness could not start: {e}[/]")
            sys.exit(3)
        log(f"stack {st.stack_name}: {st.versions.get('wine')}, vkd3d {st.versions.get('vkd3d')}, "
            f"Mesa {st.versions.get('mesa')}, shader model {sm}")
    if "wine10-sm6" in stack_names:
        from ..dml.node import client
        try:
            res = client.canary(built[-1])
        finally:
            client.shutdown()
        log(f"stack wine10-sm6: {res.message}")
        if not res.ok:
            sys.exit(3)
    v = info.versions
    plain(f"setup dml: ready in {time.monotonic() - t0:.1f} s: DirectML.dll {v.get('DirectML.dll', '?')} "
          f"(onnxruntime-node {v.get('onnxruntime-node', '?')}), {v.get('wine', '?')}, Mesa {v.get('mesa', '?')}; "
          f"builds {installed_versions(info.cache_dir)}; `onnx-dml-bench run --ep dml` and `--ep dml-direct` run now")


class _Steps:
    """Progress of setup: one numbered line per step, as it starts."""

    def __init__(self, total: int):
        self.n, self.total = 0, total

    def __call__(self, title: str) -> None:
        self.n += 1
        plain(f"setup dml [{self.n}/{self.total}] {title}")


def _setup_native() -> int:
    """Windows: the DML EP of onnxruntime-directml, and the direct lane natively (its harness built
    by MinGW-w64's gcc, or carried: ONNX_DML_BENCH_HARNESS), checked by the direct lane's canary."""
    from ..dml.direct import DirectRunner, ensure_built
    from ..dml.direct.native import native_stack
    from ..dml.wine.stackinfo import StackError
    from ..lanes.catalog import resolve
    from ..lanes.dml_direct import run_canary
    steps = _Steps(3)
    steps("the DML EP: onnxruntime-directml")
    try:
        resolve("dml")
    except ProviderError as e:
        raise BadArgs(str(e)) from None
    out_console.print("      DmlExecutionProvider is available natively (onnxruntime-directml)")
    steps("the direct lane's harness: harness.c built by MinGW-w64's gcc, or ONNX_DML_BENCH_HARNESS")
    try:
        stack = native_stack()
        exe = ensure_built(stack, log=lambda m: plain(f"      {m}"))
    except StackError as e:
        console.print(f"[red]setup dml: the direct lane: {e}[/]")
        return 2
    plain(f"      harness {exe}, DirectML.dll {stack.directml_dll}")
    steps("the direct lane's canary (a known answer on DirectML.dll, natively)")
    try:
        with DirectRunner(stack, exe=exe, timeout_s=120) as runner:
            ok, message = run_canary(runner)
            adapter = runner.device_info().get("adapter")
    except StackError as e:
        console.print(f"[red]setup dml: the direct harness could not start: {e}[/]")
        return 3
    plain(f"      {message} (adapter: {adapter})")
    return 0 if ok else 3
