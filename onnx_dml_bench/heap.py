"""How a worker process gets its memory back: the judging of a real-size case makes and drops
dozens of arrays of tens to hundreds of MiB. With glibc's defaults every allocation over its
mmap threshold (at most 32 MiB) is a fresh mapping, faulted in and zeroed page by page, and
unmapped at its free: on the ``networks`` profile that kernel time was a third of a worker's CPU
time (``benchmarks/phase_cpu.py``). :func:`keep_freed_memory` lets the heap serve allocations up
to ``HEAP_UP_TO`` and keep up to ``keep`` bytes of freed memory for the next ones, so a worker's
resident memory stays near its largest case's instead of going back to the system between
cases; :func:`release_freed_memory` gives it back when the pool needs the room. Only where the C
library is glibc (``mallopt``, ``malloc_trim``); elsewhere nothing changes.
``ONNX_DML_BENCH_KEEP_FREED=0`` turns the keeping off (to measure against it)."""
from __future__ import annotations

import ctypes
import os
import sys

from .machine import MEMORY_SHARE, memory

#: glibc's mallopt parameters
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: allocations up to this size come from the heap (mallopt takes an int)
HEAP_UP_TO = 1 << 30
#: at most this much freed memory is kept (mallopt takes an int)
KEEP_MAX = (1 << 31) - 1
#: below this much to keep, the defaults stay (a machine short of memory)
KEEP_MIN = 256 << 20
#: the environment variable that turns it off ("0")
ENV = "ONNX_DML_BENCH_KEEP_FREED"


def keep_freed_memory(keep: int) -> bool:
    """Let the heap serve allocations up to HEAP_UP_TO and keep up to ``keep`` bytes (at most
    KEEP_MAX) of freed memory; True where that was done."""
    if os.environ.get(ENV, "1") == "0" or not sys.platform.startswith("linux") or keep < KEEP_MIN:
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version            # glibc's alone (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_TRIM_THRESHOLD, min(int(keep), KEEP_MAX))) and bool(mallopt(M_MMAP_THRESHOLD, HEAP_UP_TO))


def release_freed_memory() -> bool:
    """Give the freed memory this process keeps back to the system now (glibc's ``malloc_trim``):
    what an idle worker does where the next batch needs the room (``execute.pool``: the memory
    budget counts what each worker keeps), so that a case larger than the budget runs beside no
    other worker's kept memory. False where the C library is not glibc (nothing is done)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    trim(0)
    return True


def share(jobs: int) -> int:
    """Half of one of ``jobs`` processes' share (``machine.MEMORY_SHARE``) of the memory available
    now: what each keeps (0 where the machine does not say)."""
    avail = memory().get("available")
    return int(avail * MEMORY_SHARE) // (2 * max(1, jobs)) if avail else 0


def resident_bytes() -> int:
    """This process's resident memory now (Linux ``/proc/self/statm``), 0 where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


def holds_more_than(keep: int, base: int, estimate: int) -> bool:
    """Should a worker give its freed memory back after a batch? Where the batch was estimated
    above what it keeps (``estimate``), or where its resident memory (:func:`resident_bytes`)
    passed what it had before its first batch (``base``) plus what it keeps: the pool's budget
    counts an idle worker at ``keep``, and a batch estimated low, or the holes of many batches'
    arrays in its heap, would otherwise hold more beside the next batches (a worker held 2.1 GiB
    for seconds, counted at 0.875)."""
    if estimate > keep:
        return True
    now = resident_bytes()
    return bool(now and base and now > base + keep)
