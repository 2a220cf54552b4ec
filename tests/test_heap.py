"""A worker keeps the memory it frees for its next arrays (``heap``): on glibc the
mallopt calls take, the opt-out and a machine short of memory leave the defaults, and a worker
makes the calls with half its share of the memory budget."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from onnx_dml_bench import heap
from onnx_dml_bench.execute import pool
from onnx_dml_bench.lanes.base import RunConfig


def _glibc() -> bool:
    try:
        ctypes.CDLL(None).gnu_get_libc_version
    except (OSError, AttributeError):
        return False
    return sys.platform.startswith("linux")


def _in_child(code: str, **env) -> str:
    import os
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, **env}).stdout.strip()


@pytest.mark.skipif(not _glibc(), reason="glibc's mallopt only")
def test_glibc_takes_the_settings():
    code = "from onnx_dml_bench import heap; print(heap.keep_freed_memory(1 << 30))"
    assert _in_child(code) == "True"
    assert _in_child(code, ONNX_DML_BENCH_KEEP_FREED="0") == "False"


def test_too_little_to_keep_leaves_the_defaults():
    assert heap.keep_freed_memory(heap.KEEP_MIN - 1) is False


def test_a_worker_keeps_half_its_share_of_the_budget():
    cfg = RunConfig(jobs=4, memory_budget=16 << 30)
    assert pool.worker_keep(cfg) == 2 << 30


def test_a_process_keeps_half_its_share_of_the_memory_available(monkeypatch):
    monkeypatch.setattr(heap, "memory", lambda: {"available": 10 << 30})
    assert heap.share(2) == int((10 << 30) * heap.MEMORY_SHARE) // 4
    monkeypatch.setattr(heap, "memory", lambda: {})
    assert heap.share(2) == 0 and heap.keep_freed_memory(heap.share(2)) is False


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc_trim only")
def test_a_release_gives_the_kept_memory_back():
    """A process that keeps 1 GiB of freed memory holds a dropped 400 MiB array's pages; after
    ``release_freed_memory`` it does not."""
    code = """if 1:
        import numpy as np
        from onnx_dml_bench import heap
        def rss():
            return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024
        assert heap.keep_freed_memory(1 << 30)
        a = np.ones(50 << 20)                 # 400 MiB, touched
        del a
        kept = rss()
        print(heap.release_freed_memory(), kept - rss())
    """
    done, gave_back = _in_child(code).split()
    assert done == "True" and int(gave_back) > 300, gave_back


def test_a_worker_gives_back_what_it_holds_past_its_keep(monkeypatch):
    """After a batch a worker gives its freed memory back where the batch was estimated above what
    it keeps, and also where its resident memory passed its first size plus what it keeps (a batch
    estimated low, or holes left by many); not otherwise, nor where the size cannot be read."""
    from onnx_dml_bench import heap
    keep, base = 100, 1000
    for now, estimate, want in [(1050, 10, False), (1100, 10, False), (1101, 10, True), (1050, 101, True),
                                (0, 10, False)]:
        monkeypatch.setattr(heap, "resident_bytes", lambda now=now: now)
        assert heap.holds_more_than(keep, base, estimate) is want, (now, estimate)
    monkeypatch.undo()
    assert heap.resident_bytes() > 0 or not sys.platform.startswith("linux")
