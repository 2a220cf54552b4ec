"""Every device of a host in one run (``run --devices``): one worker pool per device, around the
runner's pool (``execute.pool._Pool``), each pool's lane bound to its device (``Lane.on_device``).

The cases are dealt to the devices batch by batch (:func:`deal`), or every device runs every case
(``--same-cases``: the records of one case on sibling devices are then compared bit for bit,
``crossdevice.flag``). The pools run side by side, each in a thread of this process that waits on
its own workers; their records come back through one callback, with the index of the device's lane.
A pool knows its lane by the ``lanes.base`` protocols only, as the runner does.
"""
from __future__ import annotations

import dataclasses
import threading

from .cases import Case
from .execute.batch import batches
from .execute.pool import _Pool, memory_budget
from .lanes.base import Lane, RunConfig
from .record import CaseRecord


class _Stopped(Exception):
    """A device pool told to stop (the run was interrupted, or another device's pool failed)."""


class _DevicePool(_Pool):
    """The runner's pool of one device; it stops at its next step once ``stopping`` is set."""

    def __init__(self, lane: Lane, cfg: RunConfig, work: list[list[Case]], emit, stopping: threading.Event):
        self.stopping = stopping
        super().__init__(lane, cfg, work, emit)

    def _dispatch(self) -> None:
        if self.stopping.is_set():
            raise _Stopped
        super()._dispatch()

    def _replace(self, i: int) -> None:
        if self.stopping.is_set():
            raise _Stopped
        super()._replace(i)


def deal(cases: list[Case], n: int, cfg: RunConfig) -> list[list[Case]]:
    """``cases`` dealt to ``n`` devices a batch at a time (the runner's batches: each device's batches
    are those a run on one device would make), round robin; batches made smaller where there are
    too few to go round."""
    out: list[list[Case]] = [[] for _ in range(n)]
    size = max(1, min(cfg.batch_size, -(-len(cases) // n)))
    for k, b in enumerate(batches(cases, size, cfg.batch_bytes)):
        out[k % n] += b
    return out


def run_on_devices(lanes: list[Lane], work: list[list[Case]], cfg: RunConfig, on_records=None) -> list[CaseRecord]:
    """Run ``work[k]`` on ``lanes[k]`` (one lane per device), each device with its own pool of
    ``cfg.jobs`` workers, the memory budget shared between them; ``on_records(records, k)`` is
    called (from one thread at a time) as batches finish. Ctrl-C stops every pool: their workers
    are killed, nothing more is reported, and the KeyboardInterrupt goes on."""
    lock = threading.Lock()
    stopping = threading.Event()
    out: list[CaseRecord] = []
    share = dataclasses.replace(cfg, memory_budget=max(1, memory_budget(cfg, cfg.jobs * len(lanes)) // max(1, len(lanes))),
                                host_workers=cfg.jobs * len(lanes))

    def emitter(k: int):
        def emit(recs):
            with lock:
                if stopping.is_set():
                    return
                out.extend(recs)
                if on_records:
                    on_records(recs, k)
        return emit

    pools = [_DevicePool(lane, share, batches(cases, cfg.batch_size, cfg.batch_bytes), emitter(k), stopping)
             for k, (lane, cases) in enumerate(zip(lanes, work))]
    errors: list[BaseException] = []

    def drive(pool: _DevicePool) -> None:
        try:
            pool.run()
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the main thread, which stops the others
            errors.append(e)
            stopping.set()

    threads = [threading.Thread(target=drive, args=(p,), name=f"device-{k}", daemon=True) for k, p in enumerate(pools)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except BaseException:
        stopping.set()
        _halt(pools, threads)
        raise
    if errors:
        _halt(pools, threads)
        raise errors[0]
    return out


def _halt(pools: list[_DevicePool], threads: list[threading.Thread]) -> None:
    """Every pool's workers killed, its thread ended (it stops at its next step)."""
    for p in pools:
        for w in list(p.workers):
            w.kill()
    for t in threads:
        t.join(10)
