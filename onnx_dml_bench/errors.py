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
