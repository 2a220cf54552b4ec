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
    #: runs 2..N of the same session (``--repeat``): each its outputs (as ``outputs``), or the error
    #: text of a run that raised; None: the session ran once
    runs: list | None = None

    def all_runs(self) -> list:
        """The outputs of every run of the session, in order (the first is ``outputs``)."""
        return [self.outputs] + list(self.runs or [])
