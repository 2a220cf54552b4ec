"""The `onnx-dml-bench` command: the click group, :func:`main` and its exit codes.

Each command lives in the module of its group (``run.py``; ``data.py``: eps, cases, expectations,
merge, report, compare, fixtures; ``setup.py``; ``triage.py``: shrink, bundle, triage, fuzz;
``perf.py``) and is a thin layer over the library; ``console.py`` prints, ``args.py`` holds the
invocation's arguments and the errors that end it early. Exit codes: 0 success, 1 a verdict of
``--fail-on`` (or an unexpected result), 2 wrong arguments or inputs, 3 a failed preflight, 130
interrupted.

The command modules import the library inside their commands: ``onnx-dml-bench --help`` loads
click, rich and the bench's value modules only.
"""
from __future__ import annotations

import sys

import click

from .. import __version__
from ..errors import PlanError
from ..results import ResultsError
from . import args, data, perf, run, setup, triage
from .args import BadArgs, Interrupted


@click.group(help="DirectML operator conformance for ONNX Runtime execution providers.")
@click.version_option(__version__, prog_name="onnx-dml-bench")
def app():
    pass


for _command in (run.run, data.eps, data.cases_cmd, data.expectations_cmd, data.merge, data.report_cmd,
                 data.compare_cmd, data.fixtures_cmd, setup.setup_app, perf.perf, triage.shrink_cmd,
                 triage.bundle_cmd, triage.triage_cmd, triage.fuzz_cmd):
    app.add_command(_command)


def main(argv=None) -> int:
    args.ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    if not args.ARGV:
        # the group's help as click prints it (not squashed onto one error line)
        return _bare_help()
    try:
        rv = app.main(args=list(args.ARGV), prog_name="onnx-dml-bench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except (BadArgs, PlanError, ResultsError) as e:
        print(f"onnx-dml-bench: error: {_join_lines(str(e))}", file=sys.stderr)
        return 2
    except Interrupted:
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
        msg = _join_lines(e.format_message())
        print(f"onnx-dml-bench: error: {msg}", file=sys.stderr)
        return 2
    except click.ClickException as e:
        print(f"onnx-dml-bench: error: {e.format_message()}", file=sys.stderr)
        return e.exit_code


def _bare_help() -> int:
    """`onnx-dml-bench` alone: the normal help on stdout, exit code 0."""
    ctx = click.Context(app, info_name="onnx-dml-bench")
    click.echo(app.get_help(ctx))
    return 0


def _join_lines(msg: str) -> str:
    """The message's lines, stripped, on one line (a usage error's text keeps its own spacing)."""
    return " ".join(part.strip() for part in str(msg).splitlines() if part.strip())
