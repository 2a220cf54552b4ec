"""The suite's hanging-test stop (``tests/_hard_stop.py``): a test stuck past the limit ends its
process with every thread's stack on stderr, whether it sleeps with the GIL released or holds it
in C (where no Python-level timer can run); tests within the limit, however many, are left alone
(the limit counts from each test's start)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = """
import ctypes, time

def test_sleeps():
    time.sleep(60)

def test_holds_the_gil_in_c():
    ctypes.PyDLL(None).sleep(60)

def test_quick():
    time.sleep(1.2)

def test_quick_again():
    time.sleep(1.2)
"""


def pytest_run(tmp_path: Path, *tests: str) -> subprocess.CompletedProcess:
    """``tests`` of TESTS in a pytest of their own, with the stop at 2 s."""
    (tmp_path / "test_stuck.py").write_text(TESTS)
    env = {**os.environ, "ONNX_DML_BENCH_TEST_HARD_SECONDS": "2",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "_hard_stop", *(f"test_stuck.py::{t}" for t in tests)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=50)


@pytest.mark.parametrize("name", ["test_sleeps", "test_holds_the_gil_in_c"])
def test_a_stuck_test_ends_its_process_with_the_stacks(tmp_path, name):
    run = pytest_run(tmp_path, name)
    assert run.returncode != 0
    assert "Timeout (0:00:02)!" in run.stderr and f"in {name}" in run.stderr, run.stderr[-2000:]


def test_tests_within_the_limit_are_left_alone(tmp_path):
    run = pytest_run(tmp_path, "test_quick", "test_quick_again")      # 2.4 s together, 1.2 s each
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout + run.stderr
