"""Running cases on one EP: batches in worker processes, with placement proof.

Two concerns, one module each: :mod:`.batch` runs one batch on one backend inside a worker (the
preparation of each case, the batch solver that splits refused sessions until the case at fault is
alone, the runs of each case judged and settled, the re-run alone of a shared failure, the
descriptor path of the direct lane); :mod:`.pool` holds the worker processes (:class:`Worker`,
the pool that hands them batches within the memory budget, replaces a crashed or hung one and
isolates the case at fault, the parent's signals) and :func:`run_cases`, the runner's entry.

Everything the rest of the bench and its tests import is named here.
"""
from __future__ import annotations

from ..lanes.base import RunConfig
from .batch import (FAULTS_ENV, Item, base_record, batches, case_bytes, prepare_case, run_batch, run_descriptor,
                    solve)
from .pool import Worker, memory_budget, run_cases, sigint_ignored_in_children

__all__ = ["FAULTS_ENV", "Item", "RunConfig", "Worker", "base_record", "batches", "case_bytes", "memory_budget",
           "prepare_case", "run_batch", "run_cases", "run_descriptor", "sigint_ignored_in_children", "solve"]
