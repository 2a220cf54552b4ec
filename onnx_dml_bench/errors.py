"""Errors shared across layers."""
from __future__ import annotations


class ProviderError(RuntimeError):
    """An EP that cannot be used here; the message says what provides it."""


class PlanError(ValueError):
    """A request that makes no run (``plan.py``); one line for a person, naming the option at fault
    as the command line spells it."""
