"""Worker processes: each holds the lane's backend and runs the batches it is handed
(``batch.run_batch``); the pool hands them out, waits on their pipes and process sentinels, and
answers the parent's signals.

Worker processes are replaced when they crash or hang; their batch is split in the parent to find
the case at fault, which gets CRASH or TIMEOUT; no other result is lost. The pool is written out
here rather than taken from ``concurrent.futures``: a ProcessPoolExecutor marks the whole pool
broken when one worker dies, and cannot stop one hung task, which are the two things this pool
is for. The shrinker's prober (``triage/prober.py``) holds one :class:`Worker` between its rounds.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from ..cases import Case
from ..lanes.base import Lane, RunConfig
from ..machine import MEMORY_SHARE, WORKER_MEMORY, alone_threads, memory, share_cores, threads_for
from ..record import RERUN_LABEL, CaseRecord
from .batch import DOING_BYTES, base_record, batches, case_bytes, doing_into, note_doing, run_batch
from ..heap import holds_more_than, keep_freed_memory, release_freed_memory, resident_bytes

__all__ = ["Worker", "memory_budget", "run_batch", "run_cases", "sigint_ignored_in_children"]


def memory_budget(cfg: RunConfig, workers: int | None = None) -> int:
    """The memory the batches in flight (their estimates) and the freed memory the workers keep
    may take together: ``cfg.memory_budget``, or ``machine.WORKER_MEMORY`` (1.75 GiB) times the
    worker processes (``workers``, default ``cfg.jobs``), at most ``machine.MEMORY_SHARE`` (60%)
    of the memory available now (no limit from it where the machine does not say)."""
    if cfg.memory_budget:
        return int(cfg.memory_budget)
    avail = memory().get("available")
    per = WORKER_MEMORY * max(1, workers or cfg.jobs)
    return min(int(avail * MEMORY_SHARE), per) if avail else per


def worker_keep(cfg: RunConfig) -> int:
    """How much freed memory a worker keeps for its next arrays (``heap.keep_freed_memory``): half
    its share of :func:`memory_budget`."""
    return memory_budget(cfg) // (2 * max(1, cfg.jobs))


# ----------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------

def _worker_main(conn, lane: Lane, cfg: RunConfig, doing=None) -> None:
    doing_into(doing)
    _unblock_parent_signals()
    keep = worker_keep(cfg)
    keep_freed_memory(keep)
    share_cores(cfg.host_workers or cfg.jobs)      # the reference's threads: this worker's share of the cores
    try:
        backend = lane.make_backend(cfg)
    except Exception as e:  # noqa: BLE001
        conn.send(("fatal", None, f"{type(e).__name__}: {e}"))
        return
    base = resident_bytes()                          # before any batch: the interpreter, the EP
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError, KeyboardInterrupt):
                return          # the parent is gone (or stopping): end quietly, no traceback over its last words
            if msg[0] == "stop":
                return
            if msg[0] == "release":          # idle, or about to take a batch that needs the room
                release_freed_memory()
                continue
            _, batch_id, cases, *more = msg
            note_doing("starting a batch")
            try:
                with threads_for(more[0] if more else None):     # alone: the idle workers' cores too
                    answer = ("done", batch_id, run_batch(backend, cases))
                if holds_more_than(keep, base, sum(case_bytes(c) for c in cases)):
                    # a batch larger than what this worker keeps, or more memory held than that: its
                    # freed memory goes back now, as the budget counts this worker at what it keeps
                    # (the heap's holes would stay)
                    release_freed_memory()
            except KeyboardInterrupt:
                return
            except Exception as e:  # noqa: BLE001 - report, keep the worker
                answer = ("error", batch_id, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}")
            try:
                conn.send(answer)
            except OSError:
                return          # the parent is gone
    finally:
        try:
            backend.close()          # the direct lane's harness process, for one
        except Exception:  # noqa: BLE001 - the worker is ending anyway
            pass


#: what the parent alone answers: Ctrl-C, and SIGTERM (a cancelled CI job signals the whole group)
_PARENT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def sigint_ignored_in_children():
    """Processes started inside ignore Ctrl-C and SIGTERM (a spawned Python keeps an ignored signal
    ignored): the parent alone answers them, saves what is done and stops its workers, so a worker
    never dies of the signal before the parent (its batch would read as a CRASH) and prints no
    traceback over the resume line. A worker whose parent is gone ends at its next message."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # blocked as well as ignored meanwhile: a signal that comes while a worker starts waits (Linux
    # keeps a blocked signal pending whatever its action) and reaches the parent's handler after
    mask = hasattr(signal, "pthread_sigmask")
    if mask:
        signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in _PARENT_SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if mask:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)


def _unblock_parent_signals() -> None:
    """A worker inherits the parent's mask from :func:`sigint_ignored_in_children`: the signals
    unblocked again, still ignored."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)


class Worker:
    """One worker process holding the backend of ``lane`` (made by :func:`_worker_main`), and the
    batch it was given with its deadline: the pool's, and the shrinker's prober's
    (``triage/prober.py``)."""

    def __init__(self, ctx, lane: Lane, cfg: RunConfig):
        self.parent, child = ctx.Pipe()
        self._doing = ctx.Array("c", DOING_BYTES, lock=False)
        self.proc = ctx.Process(target=_worker_main, args=(child, lane, cfg, self._doing), daemon=True)
        with sigint_ignored_in_children():
            self.proc.start()
        child.close()
        self.batch: list[Case] | None = None
        self.deadline = 0.0
        self.incident = None          # the pool's _Incident of the batch, when it is a part of a lost one

    def give(self, batch: list[Case], batch_id: int, timeout_s: float, threads: int | None = None) -> None:
        """Send ``batch``; ``threads``: the reference's threads for it (a batch that runs alone), None:
        the worker's share of the cores."""
        # what the worker said of its last batch is not of this one: a worker killed before it reads
        # this batch must not name the case it ran before as the one it was running
        self._doing.value = b""
        self.batch, self.deadline = batch, time.monotonic() + timeout_s
        self.parent.send(("batch", batch_id, batch, threads))

    def take(self) -> list[Case]:
        batch, self.batch = self.batch, None
        return batch

    def doing(self) -> str:
        """What the worker said it was doing last (``building case X``, ``running on the EP the
        session of cases X, Y``, ``judging case X``); empty before its first batch."""
        try:
            return self._doing.value.decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - a trace, never a reason to fail
            return ""

    def receive(self, timeout: float = 0.0):
        """The worker's message (waiting up to ``timeout`` seconds), or None when it died without
        one or none came."""
        try:
            if not self.parent.poll(timeout):
                return None
            return self.parent.recv()
        except (EOFError, OSError):
            return None

    def exit_code(self):
        self.proc.join(1)
        return self.proc.exitcode

    def kill(self):
        try:
            self.proc.kill()
            self.proc.join(5)
        except Exception:  # noqa: BLE001
            pass

    def stop(self):
        try:
            if self.proc.is_alive():
                self.parent.send(("stop",))
        except Exception:  # noqa: BLE001
            pass

    def release(self) -> None:
        """An idle worker gives the freed memory it keeps back to the system (no answer; before
        its next batch)."""
        try:
            if self.batch is None and self.proc.is_alive():
                self.parent.send(("release",))
        except Exception:  # noqa: BLE001 - a worker gone is replaced when it is next given a batch
            pass


@dataclass
class _Incident:
    """A batch that lost its worker (it died, hung or failed), run again in parts until each case
    at fault is alone. The records of its other cases wait until every part is done, so that each
    can say what happened and which case was at fault (``CaseRecord.rerun``)."""
    what: str                 # "the worker process died (exit code -6)", ...
    size: int                 # the cases of the batch
    pending: int = 1          # its parts not answered yet
    held: list = field(default_factory=list)
    culprits: list = field(default_factory=list)

    def note(self, rec: CaseRecord) -> str:
        at_fault = ", ".join(f"{r.case_id} ({r.verdict})" for r in self.culprits) or \
            "none found (the parts ran without it happening again)"
        if rec in self.culprits:
            return (f"{self.what} while running a batch of {self.size} cases; the batch was split until this case "
                    f"was alone: at fault")
        return (f"{self.what} while running a batch of {self.size} cases that held this one; the batch was run "
                f"again in parts and this record is from that second run; at fault: {at_fault}")


def _at(w: Worker) -> str:
    """``; it was <doing>`` of a worker lost: which case it was running."""
    doing = w.doing()
    return f"; it was {doing}" if doing else ""


class _Pool:
    """Batches over worker processes; a crashed or hung worker costs only the case at fault."""

    def __init__(self, lane: Lane, cfg: RunConfig, batches: list[list[Case]], emit):
        self.ctx = mp.get_context("spawn")
        self.lane, self.cfg, self.emit = lane, cfg, emit
        self.queue: deque[tuple[list[Case], _Incident | None]] = deque((b, None) for b in batches)
        self.workers = [self._new() for _ in range(max(1, min(cfg.jobs, len(batches) or 1)))]
        self.next_id = 0
        self.budget = memory_budget(cfg)
        self.keep = worker_keep(cfg)
        # workers that keep no freed memory: not started on a batch yet, or gave it back since
        self.released: set[int] = set(range(len(self.workers)))
        self.needs: dict[int, int] = {}         # id of a queued batch -> its estimate

    def _new(self) -> Worker:
        return Worker(self.ctx, self.lane, self.cfg)

    def _lost(self, batch: list[Case], verdict: str, reason: str, what: str, inc: _Incident | None) -> None:
        """A batch that gave no records: split it until the case at fault is alone. Its cases are
        one incident (the first loss, and every loss of its parts)."""
        if inc is None:
            inc = _Incident(what, len(batch))
        if len(batch) == 1:
            rec = base_record(batch[0], self.lane.ep_name, verdict, reason)
            inc.culprits.append(rec)
            self._settle(inc, [rec])
            return
        mid = len(batch) // 2
        inc.pending += 1              # this part is gone, two take its place
        self.queue.appendleft((batch[mid:], inc))
        self.queue.appendleft((batch[:mid], inc))

    def _settle(self, inc: _Incident | None, recs: list[CaseRecord]) -> None:
        """Records of a batch: out at once, or held until every part of its incident is done."""
        if inc is None:
            self.emit(recs)
            return
        inc.held += recs
        inc.pending -= 1
        if inc.pending == 0:
            self._release(inc)

    def _release(self, inc: _Incident) -> None:
        if inc.size == 1:             # a batch of one: its case was at fault, and nothing was run again
            self.emit(inc.held)
            return
        for r in inc.held:
            r.rerun = inc.note(r)
            r.labels = sorted(set(r.labels) | {RERUN_LABEL})
        self.emit(inc.held)

    def _replace(self, i: int) -> None:
        self.workers[i].kill()
        self.workers[i] = self._new()
        self.released.add(i)

    def _share(self, i: int) -> int:
        """What worker ``i`` may hold now: the estimate of its batch in flight or the freed memory
        it keeps (:func:`worker_keep`), the larger; what it keeps alone when idle, nothing once it
        gave that back."""
        w = self.workers[i]
        kept = 0 if i in self.released else self.keep
        return max(kept, sum(map(case_bytes, w.batch))) if w.batch is not None else kept

    def _give_back(self, i: int) -> None:
        """Worker ``i`` gives the freed memory it keeps back (once until its next batch)."""
        if i not in self.released:
            self.workers[i].release()
            self.released.add(i)

    def _need(self, batch: list[Case]) -> int:
        key = id(batch)
        if key not in self.needs:
            self.needs[key] = sum(map(case_bytes, batch))
        return self.needs[key]

    def _fitting(self, others: int) -> int | None:
        """The first batch of the queue that fits beside ``others`` within the budget."""
        for k, (batch, _) in enumerate(self.queue):
            if others + max(self._need(batch), self.keep) <= self.budget:
                return k
        return None

    def _dispatch(self) -> None:
        """Idle workers take the next batches while what every worker may hold (:meth:`_share`: its
        batch's estimate or its kept memory) stays within the budget. Where the next batch does
        not fit, the idle workers first give back the freed memory they keep
        (``heap.release_freed_memory``), and an idle worker takes the first batch further on that
        does fit (it does not wait while the batches in flight run); a batch over the budget runs
        when nothing else does, its worker and the idle ones having given theirs back, so a run's
        peak is that case's own."""
        for i, w in enumerate(self.workers):
            if w.batch is not None or not self.queue:
                continue
            need = self._need(self.queue[0][0])
            others = sum(self._share(j) for j in range(len(self.workers)) if j != i)
            k, threads = 0, None
            if others + max(need, self.keep) > self.budget:
                for j, v in enumerate(self.workers):
                    if v.batch is None and j != i:
                        self._give_back(j)
                others = sum(self._share(j) for j in range(len(self.workers)) if j != i)
                if others + max(need, self.keep) > self.budget:
                    if any(v.batch is not None for v in self.workers):
                        k = self._fitting(others)
                        if k is None:
                            break                    # nothing fits: it waits for the batches in flight
                    else:
                        self._give_back(i)           # alone: its own kept memory back too
                        # and the idle workers' cores for its reference (nothing else runs beside it)
                        threads = alone_threads(self.cfg.jobs, self.cfg.host_workers)
            if not w.proc.is_alive():
                self._replace(i)
                w = self.workers[i]
            batch, w.incident = self.queue[k]
            del self.queue[k]
            self.needs.pop(id(batch), None)
            w.give(batch, self.next_id, self.cfg.timeout_s, threads)
            self.released.discard(i)
            self.next_id += 1

    def _fatal(self, batch: list[Case], why: str, inc: _Incident | None) -> None:
        """The EP cannot start in a worker: every case left gets that reason, none is dropped."""
        incidents = {id(x): x for x in [inc] + [x for _, x in self.queue] if x is not None}
        left = batch + [c for b, _ in self.queue for c in b]
        self.queue.clear()
        self.needs.clear()
        for x in incidents.values():          # what their parts gave so far, with what is known
            if x.held:
                x.what += " (the search for the case at fault stopped: the EP could not be started again)"
                self._release(x)
                x.held = []
        self.emit([base_record(c, self.lane.ep_name, "ERROR", f"the EP could not be started in the worker: {why}")
                   for c in left])

    def _collect(self, i: int, w: Worker) -> None:
        msg = w.receive()
        inc = w.incident
        if msg is None:
            code = w.exit_code()
            at = _at(w)
            batch = w.take()
            self._replace(i)
            self._lost(batch, "CRASH", f"the worker process died (exit code {code}{at}) while running this case",
                       f"the worker process died (exit code {code}{at})", inc)
            return
        kind, _, payload = msg
        batch = w.take()
        if kind == "done":
            self._settle(inc, payload)
        elif kind == "fatal":
            self._fatal(batch, payload, inc)
        else:
            first = str(payload).split("\n", 1)[0]
            self._lost(batch, "ERROR", f"the worker failed on this case: {payload}", f"the worker failed ({first})", inc)

    def run(self) -> None:
        try:
            while self.queue or any(w.batch is not None for w in self.workers):
                self._dispatch()
                busy = [w for w in self.workers if w.batch is not None]
                if not busy:
                    continue
                timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
                ready = wait([w.parent for w in busy] + [w.proc.sentinel for w in busy], timeout=timeout)
                now = time.monotonic()
                for i, w in enumerate(self.workers):
                    if w.batch is None:
                        continue
                    if w.parent in ready or w.proc.sentinel in ready:
                        self._collect(i, w)
                    elif now >= w.deadline:
                        inc = w.incident
                        at = _at(w)
                        batch = w.take()
                        self._replace(i)
                        self._lost(batch, "TIMEOUT", f"no answer within {self.cfg.timeout_s:g} s (the worker was killed{at})",
                                   f"no answer within {self.cfg.timeout_s:g} s (the worker was killed{at})", inc)
        finally:
            for w in self.workers:
                w.stop()
            for w in self.workers:
                w.proc.join(2)
                if w.proc.is_alive():
                    w.kill()


def run_cases(cases: list[Case], lane: Lane, cfg: RunConfig, on_records=None) -> list[CaseRecord]:
    """Run every case on ``lane``; ``on_records(list)`` is called as batches finish. Batches hold
    at most ``cfg.batch_size`` cases and ``cfg.batch_bytes`` of their estimated memory
    (:func:`batches`), and no more than an even share of the cases per worker (every worker gets
    work); the workers together run batches of at most :func:`memory_budget` at once."""
    out: list[CaseRecord] = []

    def emit(recs):
        out.extend(recs)
        if on_records:
            on_records(recs)

    size = max(1, min(cfg.batch_size, -(-len(cases) // max(1, cfg.jobs))))
    todo = batches(cases, size, cfg.batch_bytes)
    if cfg.jobs > 1:
        # the largest batches first: the last ones to finish are small, and while a large one runs
        # the other workers take the smaller ones that fit beside it (one worker: in batch order)
        todo.sort(key=lambda b: -sum(map(case_bytes, b)))
    _Pool(lane, cfg, todo, emit).run()
    return out
