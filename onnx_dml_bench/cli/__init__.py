"""The `onnx-dml-bench` command: the click group, :func:`main` and its exit codes.

Each command lives in the module of its group (``bench.py``: the main job; ``run.py``; ``data.py``: eps, cases, expectations,
merge, report, compare, fixtures; ``setup.py``; ``triage.py``: shrink, bundle, triage, fuzz;
``perf.py``: perf, perf-compare; ``mutants.py``: mutants) and is a thin layer over the library; ``console.py`` prints, ``args.py`` holds the
invocation's arguments and the errors that end it early. Exit codes (``errors.EXIT_*``): 0
success, 1 a verdict of ``--fail-on`` (or an unexpected result, a regression), 2 wrong arguments
or inputs (a folder another command holds, a damaged or crafted file), 3 a failed preflight, 4 an
incomplete run (``report``, ``compare``), 5 a file that could not be written or read (a full
disk, a read-only folder), 130 interrupted by Ctrl-C, 143 by SIGTERM.

The command modules import the library inside their commands: ``onnx-dml-bench --help`` loads
click, rich and the bench's value modules only.
"""
from __future__ import annotations

import contextlib
import errno
import signal
import sys
import threading

import click

from .. import __version__
from ..errors import EXIT_BAD_INPUT, EXIT_IO, FolderInUse, PlanError, UnsafePath, one_line
from ..results import ResultsError
from . import args, bench, data, mutants, perf, run, setup, triage
from .args import BadArgs, Interrupted, Terminated, interrupt_code


@click.group(help="DirectML operator conformance for ONNX Runtime execution providers.")
@click.version_option(__version__, prog_name="onnx-dml-bench")
def app():
    pass


for _command in (bench.bench, run.run, run.judge, data.eps, data.cases_cmd, data.expectations_cmd, data.merge, data.report_cmd,
                 data.compare_cmd, data.fixtures_cmd, setup.setup_app, perf.perf, perf.perf_compare_cmd, triage.shrink_cmd,
                 triage.bundle_cmd, triage.triage_cmd, triage.fuzz_cmd, mutants.mutants_cmd):
    app.add_command(_command)


def main(argv=None) -> int:
    args.ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    if not args.ARGV:
        # the group's help as click prints it (not squashed onto one error line)
        return _bare_help()
    with _sigterm_as_interrupt():
        return _main()


def _main() -> int:
    try:
        rv = app.main(args=list(args.ARGV), prog_name="onnx-dml-bench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except (BadArgs, PlanError, ResultsError, FolderInUse, UnsafePath) as e:
        print(f"onnx-dml-bench: error: {_join_lines(str(e))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Interrupted as e:
        return e.code
    except KeyboardInterrupt as e:
        print("onnx-dml-bench: interrupted" + (" (SIGTERM)" if isinstance(e, Terminated) else ""), file=sys.stderr)
        return interrupt_code(e)
    except OSError as e:
        print(f"onnx-dml-bench: error: {io_error(e)}", file=sys.stderr)
        return EXIT_IO
    except click.exceptions.Exit as e:
        return e.exit_code
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except click.exceptions.Abort as e:      # click's form of a KeyboardInterrupt (or SIGTERM) in a command
        term = isinstance(e.__cause__, Terminated)
        print("onnx-dml-bench: interrupted" + (" (SIGTERM)" if term else ""), file=sys.stderr)
        return interrupt_code(e.__cause__) if e.__cause__ is not None else interrupt_code(e)
    except click.UsageError as e:
        msg = _join_lines(e.format_message())
        print(f"onnx-dml-bench: error: {msg}", file=sys.stderr)
        return 2
    except click.ClickException as e:
        print(f"onnx-dml-bench: error: {e.format_message()}", file=sys.stderr)
        return e.exit_code


#: what an I/O error means for a person, by errno
_IO_HINTS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
             errno.EROFS: "a read-only file system", errno.EACCES: "no permission", errno.EPERM: "no permission",
             errno.EFBIG: "the file is too large for its file system"}


def io_error(e: OSError) -> str:
    """An OSError on one line: the file, what went wrong, and what that means."""
    what = e.strerror or type(e).__name__
    hint = _IO_HINTS.get(e.errno)
    where = e.filename if e.filename is not None else ""
    text = f"{where}: {what}" if where else f"{what}: {e}" if not e.strerror else what
    return one_line(text + (f" ({hint})" if hint and hint.lower() not in what.lower() else ""), 400)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM, while the command runs, raises :class:`Terminated` (a KeyboardInterrupt) in the main
    thread, once: every command then ends as on Ctrl-C, and a run saves what it did and prints the
    command that continues it. A second SIGTERM during that clean-up is ignored (the clean-up is
    short; a CI system that does not wait sends SIGKILL)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = []

    def on_term(signum, frame):
        if fired:
            return
        fired.append(signum)
        raise Terminated()

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _bare_help() -> int:
    """`onnx-dml-bench` alone: the normal help on stdout, exit code 0."""
    ctx = click.Context(app, info_name="onnx-dml-bench")
    click.echo(app.get_help(ctx))
    return 0


def _join_lines(msg: str) -> str:
    """The message's lines, stripped, on one line (a usage error's text keeps its own spacing)."""
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())
