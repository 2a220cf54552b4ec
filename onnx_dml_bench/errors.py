"""Errors shared across layers."""
from __future__ import annotations


class ProviderError(RuntimeError):
    """An EP that cannot be used here; the message says what provides it."""
