"""A hanging test ends its process: a plugin of the suite (``conftest.pytest_plugins``).

A test still running ``HARD_SECONDS`` after it started (the longest take a few minutes): its process
prints every thread's stack to the real stderr (past pytest's capture) and ends, from C
(faulthandler: no lock, no allocation, so also where a thread holds the GIL or a deadlock sits
inside malloc). Under xdist the test is reported as its worker's crash and the run goes on, instead
of hanging until CI's limit. ``ONNX_DML_BENCH_TEST_HARD_SECONDS`` sets another limit."""
from __future__ import annotations

import faulthandler
import os
import sys

import pytest

HARD_SECONDS = float(os.environ.get("ONNX_DML_BENCH_TEST_HARD_SECONDS", 1200))

_STDERR: list[int] = []


def pytest_configure(config):
    _STDERR.append(os.dup(sys.__stderr__.fileno()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    faulthandler.dump_traceback_later(HARD_SECONDS, exit=True, file=_STDERR[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
