"""What a backend returns for one model run on one side (the EP under test, or the CPU EP)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Outcome:
    ok: bool
    #: load | session (refused before any data) | run (failed after the session was created) |
    #: crash | timeout | bench (the bench's own machinery failed) | done
    stage: str
    error: str | None = None
    outputs: dict | None = None         # output name -> array
    assignment: dict | None = None      # node name -> EP name (None: not known)
    session_ms: float = 0.0
    run_ms: float = 0.0
