"""This invocation of the command: its arguments (kept for the run's record and the resume hint),
the checks of option values shared by several commands, the options that take an EP
(:class:`EpOption`), and the ways a command ends early that ``main`` turns into exit codes
(:class:`BadArgs`: 2, :class:`Interrupted`: 130 or 143)."""
from __future__ import annotations

import shlex

import click

from ..errors import EXIT_SIGINT, EXIT_SIGTERM
from ..record import FINDINGS, VERDICTS

#: the arguments of this invocation (``main(argv)`` or the process's), for records and resume hints
ARGV: list[str] = []


class BadArgs(Exception):
    """Wrong arguments or inputs: one line for a person, exit code 2."""


class Interrupted(Exception):
    """Ctrl-C or SIGTERM during a run, after its message was printed (exit code 130 or 143)."""

    def __init__(self, code: int = EXIT_SIGINT):
        super().__init__(code)
        self.code = code


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a CI system sends a cancelled job), raised in the main thread by ``main``'s
    handler: every command treats it as Ctrl-C (a run saves what is done and prints the command
    that continues it); the exit code is 143."""


def interrupt_code(e: BaseException) -> int:
    """The exit code of an interruption: 143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_SIGTERM if isinstance(e, Terminated) else EXIT_SIGINT


def invocation() -> str:
    """This command line as a person would type it again (quoted)."""
    return "onnx-dml-bench " + shlex.join(ARGV)


def parse_verdicts(text: str, option: str, findings: bool = False) -> set[str]:
    """Verdict names (and, where ``findings``, finding names) of a comma list."""
    known = VERDICTS + (FINDINGS if findings else ())
    wanted = {v.strip().upper() for v in text.split(",") if v.strip()}
    bad = wanted - set(known)
    if bad:
        raise BadArgs(f"{option}: unknown name(s) {', '.join(sorted(bad))}; known: {', '.join(known)}")
    return wanted


def parse_elements(text: str | None, option: str = "--max-elements") -> int | None:
    """A number of elements as a person writes it: ``67108864``, ``2^26``, ``2**26``, ``64M``
    (M = 2^20, G = 2^30); None for none given."""
    if text is None or str(text).strip() == "":
        return None
    t = str(text).strip().replace("_", "").replace(",", "")
    try:
        for sep in ("**", "^"):
            if sep in t:
                base, exp = t.split(sep, 1)
                n = int(base) ** int(exp)
                break
        else:
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:].upper(), 1)
            n = int(t[:-1] if mult > 1 else t) * mult
    except ValueError:
        raise BadArgs(f"{option} must be a number of elements (e.g. 67108864, 2^26, 64M), got {text!r}") from None
    if n < 1:
        raise BadArgs(f"{option} must be at least 1, got {text!r}")
    return n


def parse_bytes(text: str | None, option: str = "--memory-budget") -> int | None:
    """A size in bytes as a person writes it: ``4G``, ``4GiB``, ``4GB``, ``512M``, ``4294967296``
    (K, M, G, T: powers of 1,024, with or without "B" or "iB"); None for none given."""
    if text is None or str(text).strip() == "":
        return None
    t = str(text).strip().replace("_", "").replace(",", "").upper()
    for tail in ("IB", "B"):
        if t.endswith(tail) and len(t) > len(tail) and not t[-len(tail) - 1].isdigit():
            t = t[:-len(tail)]
            break
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    try:
        n = float(t[:-1] if mult > 1 else t) * mult
    except ValueError:
        raise BadArgs(f"{option} must be a size (e.g. 4G, 512M, 4294967296), got {text!r}") from None
    if not n >= 1 << 20 or n != n or n == float("inf"):
        raise BadArgs(f"{option} must be at least 1M, got {text!r}")
    return int(n)


class EpOption(click.Option):
    """An option that takes an EP (``--ep``): its help names the lanes of the catalog, read when the
    help is shown (the catalog imports every lane, too much for ``onnx-dml-bench --help``):
    ``{eps}`` in the help text becomes what ``--ep`` takes (``lanes.catalog.ep_help``), ``{keys}``
    the catalog's keys."""

    def get_help_record(self, ctx):
        from ..lanes.catalog import ep_help, keys
        text = self.help
        self.help = (text or "").replace("{eps}", ep_help()).replace("{keys}", ", ".join(keys()))
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = text
