"""Errors shared across layers, and the one-line form of a message for a person."""
from __future__ import annotations


class ProviderError(RuntimeError):
    """An EP that cannot be used here; the message says what provides it."""


class PlanError(ValueError):
    """A request that makes no run (``plan.py``); one line for a person, naming the option at fault
    as the command line spells it."""


def one_line(text, limit: int | None = None) -> str:
    """``text`` on one line: every run of whitespace (line breaks included) one space; longer than
    ``limit`` characters: cut, ending in "..."."""
    text = " ".join(str(text or "").split())
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 3].rstrip() + "..."


class FolderInUse(RuntimeError):
    """Another command of the bench holds the lock of a run folder (``outdir.FolderLock``); the
    message names the folder and the holder (pid, host, command). Exit code 2."""


class UnsafePath(ValueError):
    """A path built from a results file's data (a case id) that would leave its folder or is no
    file name the bench writes: such a file is damaged or crafted. Exit code 2."""


#: the exit codes of the command line (docs/usage.md#exit-codes), shared by the commands that
#: compute theirs outside ``cli/`` (compare)
EXIT_OK = 0
#: a verdict of --fail-on, a regression, an unexpected result
EXIT_FAIL = 1
#: wrong arguments or inputs (a damaged or crafted file, a folder another command holds)
EXIT_BAD_INPUT = 2
#: a failed preflight: no verdicts from a broken stack
EXIT_PREFLIGHT = 3
#: nothing else wrong, but a run is incomplete: fewer records than it selected, or shards missing
EXIT_INCOMPLETE = 4
#: a file could not be written or read (a full disk, a read-only folder, permissions)
EXIT_IO = 5
#: interrupted by Ctrl-C (SIGINT) / by SIGTERM (a CI job cancelled): what is done is saved
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
