"""Probing: one round = one batch of candidate cases on the EP, their records by case id.

The shrinker and the fuzzer ask many small rounds of one EP. :class:`Prober` keeps the EP (or a
Wine prefix) started between rounds: it holds one of the runner's worker processes
(``execute.pool.Worker``, the process the pool of ``execute.run_cases`` uses), so a probe round is
judged exactly as a run's batch is.
"""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import time

from ..cases import Case
from ..execute.pool import Worker, run_batch, run_cases
from ..lanes.base import RunConfig


class Prober:
    """Runs a round of candidate cases on one EP and returns their records by case id.

    - ``backend`` given (an execute backend object, or a fake one in tests): the round runs in
      this process through ``execute.pool.run_batch`` (what a worker runs);
    - otherwise the rounds go to one long-lived worker process that holds the lane's backend
      (``execute.pool.Worker``: ``Lane.make_backend`` + ``run_batch``; an EP or a Wine prefix
      starts once, not once per round). A round whose worker dies, fails or passes
      ``cfg.timeout_s`` is run again through ``execute.run_cases``, whose pool splits it until the
      case at fault is alone (CRASH / TIMEOUT: another signature, so that candidate is simply not
      taken), and the worker is replaced. ``persistent=False``: every round through
      ``execute.run_cases``.
    """

    def __init__(self, lane=None, cfg=None, backend=None, persistent: bool = True):
        if backend is None and lane is None:
            raise ValueError("a Prober needs an EP lane or a backend")
        self.lane, self.backend, self.persistent = lane, backend, persistent
        if cfg is None:
            cfg = RunConfig()
        self.cfg = dataclasses.replace(cfg, batch_size=max(cfg.batch_size, 1024), jobs=1)
        if backend is not None:
            _quiet_ort()
        self.rounds = 0
        self.cases = 0
        self.seconds = 0.0
        self._worker: Worker | None = None

    def __call__(self, cases: list[Case]) -> dict:
        uniq = list({c.id: c for c in cases}.values())
        if not uniq:
            return {}
        t0 = time.perf_counter()
        if self.backend is not None:
            recs = run_batch(self.backend, uniq)
        elif self.persistent:
            recs = self._worker_round(uniq)
        else:
            recs = self._pool_round(uniq)
        self.seconds += time.perf_counter() - t0
        self.rounds += 1
        self.cases += len(uniq)
        return {r.case_id: r for r in recs}

    def _pool_round(self, cases):
        return run_cases(cases, self.lane, self.cfg)

    def _worker_round(self, cases):
        if self._worker is None or not self._worker.proc.is_alive():
            self._worker = Worker(mp.get_context("spawn"), self.lane, self.cfg)
        w = self._worker
        try:
            w.give(cases, self.rounds, self.cfg.timeout_s)
            msg = w.receive(self.cfg.timeout_s)
            w.take()
            if msg is not None and msg[0] == "done":
                return msg[2]
        except (EOFError, OSError, BrokenPipeError):
            pass
        self.close()
        return self._pool_round(cases)

    def close(self) -> None:
        w, self._worker = self._worker, None
        if w is not None:
            w.stop()
            w.proc.join(2)
            if w.proc.is_alive():
                w.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _quiet_ort() -> None:
    try:
        import onnxruntime
        onnxruntime.set_default_logger_severity(4)   # rejected candidates are expected: no log lines
    except ImportError:
        pass
