"""The compiled loops' disk cache under two processes that compile one function at once.

Two processes compile the float32 and float64 forms of one function, on a schedule that makes
numba's own save interleave: both read the empty index before either writes, the float64 process
writes its index last and its data file first, the float32 process its data file last. numba's own
cache (``cache=True``) then leaves an index naming the float64 form beside the float32 form's
machine code; ``onnx_dml_bench.jit``'s cache, read and written under a lock, keeps both forms, and a
third process loads each from disk with the right types.
"""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

#: the processes' environment: numba's cache beside the module (not in a NUMBA_CACHE_DIR), no bounds checks
ENV = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_BOUNDSCHECK")}

FUNCTION = """
import numpy as np
{decorator}
def twice(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = x[i] * 2
    return out
"""

# one process of the race: its dtype; waits beside the other at each index read until one wait
# times out (with the lock, the other is held out, and both then run one after the other)
COMPILE = """
import sys, time
from pathlib import Path
import numpy as np
from numba.core import caching

dtype, here = sys.argv[1], Path(sys.argv[2])
other = "float64" if dtype == "float32" else "float32"
C = caching.IndexDataCacheFile
load_index, save_index, save_data = C._load_index, C._save_index, C._save_data
calls, waiting = [0], [True]

def paired_load_index(self):
    found = load_index(self)
    calls[0] += 1
    (here / f"{dtype}.{calls[0]}").touch()
    end = time.monotonic() + 1.5
    while waiting[0] and not (here / f"{other}.{calls[0]}").exists():
        if time.monotonic() > end:
            waiting[0] = False
        time.sleep(0.01)
    return found

def late_index(self, overloads):
    time.sleep(0.4 if dtype == "float64" else 0)
    return save_index(self, overloads)

def late_data(self, name, data):
    time.sleep(1.2 if dtype == "float32" else 0)
    return save_data(self, name, data)

C._load_index, C._save_index, C._save_data = paired_load_index, late_index, late_data
sys.path.insert(0, str(here))
import racemod
racemod.twice(np.arange(4, dtype=dtype))
"""

LOAD = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import racemod
for dtype in ("float32", "float64"):
    try:
        y = racemod.twice(np.arange(1, 5, dtype=dtype))
        right = y.dtype == dtype and y.tolist() == [2, 4, 6, 8]
    except Exception as e:  # noqa: BLE001 - numba refusing the wrong form's code
        right = False
    hit = sum(racemod.twice.stats.cache_hits.values())
    print(dtype, "right" if right else "wrong", "hit" if hit else "miss")
"""


def race(tmp_path: Path, decorator: str, load: bool = True) -> tuple[dict, list[str]]:
    """The index left by the two processes (signature dtypes -> data file) and, with ``load``, what
    a third process gets from each form."""
    imports = "from onnx_dml_bench.jit import njit\n" if decorator == "@njit" else ""
    (tmp_path / "racemod.py").write_text(imports + "import numba\n" + FUNCTION.format(decorator=decorator))
    (tmp_path / "compile.py").write_text(COMPILE)
    runs = [subprocess.Popen([sys.executable, str(tmp_path / "compile.py"), d, str(tmp_path)], env=ENV)
            for d in ("float32", "float64")]
    assert [p.wait(timeout=240) for p in runs] == [0, 0]
    index = next((tmp_path / "__pycache__").glob("racemod.twice-*.nbi"))
    with index.open("rb") as f:
        pickle.load(f)
        _, overloads = pickle.loads(f.read())
    found = {str(key[0][0].dtype): name for key, name in overloads.items()}
    if not load:
        return found, []
    load = subprocess.run([sys.executable, "-c", LOAD, str(tmp_path)], capture_output=True, text=True, timeout=240,
                          env=ENV)
    assert load.returncode == 0, load.stderr
    return found, load.stdout.split("\n")[:2]


def test_numbas_own_cache_loses_a_form_on_this_schedule(tmp_path):
    """The schedule reproduces the race: numba's cache keeps one form of two (and may name it
    beside the other form's code). Should a numba release fix its cache, this fails and says so."""
    found, _ = race(tmp_path, "@numba.njit(cache=True)", load=False)
    assert len(found) == 1, found


def test_the_locked_cache_keeps_both_forms_and_serves_them(tmp_path):
    found, loaded = race(tmp_path, "@njit")
    assert sorted(found) == ["float32", "float64"] and len(set(found.values())) == 2, found
    assert loaded == ["float32 right hit", "float64 right hit"], loaded


HELPER = "def h(x):\n    return x + {step}\n"

CALLER = """
import numpy as np
from onnx_dml_bench.jit import njit
import helper

h = njit(helper.h)


def body(a):
    t = 0.0
    for v in a:
        t += h(v)
    return t


loop = njit(body)
"""

CALL = "import sys; sys.path.insert(0, sys.argv[1]); import caller, numpy as np; print(caller.loop(np.ones(3)))"


def test_a_loop_sees_a_change_of_a_helper_in_another_file(tmp_path):
    """A loop whose compiled helper lies in another file: once that file changes (the loop's own
    file not), a later process compiles the loop again instead of loading the old helper's code
    from the disk (numba's own cache would: 3 x (1 + 1) where 3 x (1 + 2) is right)."""
    (tmp_path / "caller.py").write_text(CALLER)

    def total(step: float) -> str:
        (tmp_path / "helper.py").write_text(HELPER.format(step=step))
        run = subprocess.run([sys.executable, "-c", CALL, str(tmp_path)], capture_output=True, text=True,
                             timeout=240, env=ENV)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    assert total(1.0) == "6.0"
    assert total(2.0) == "9.0"
    assert total(2.0) == "9.0"          # and kept on the disk again
    assert len(list((tmp_path / "__pycache__").glob("caller.body-*.nbi"))) == 1


def test_the_bench_loops_use_the_locked_cache():
    """Every compiled loop of the bench goes through ``jit.njit`` (numba's own cache=True nowhere)."""
    root = Path(__file__).resolve().parents[1] / "onnx_dml_bench"
    plain = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if p.name != "jit.py" and "cache=True" in p.read_text()]
    assert plain == [], plain
    from onnx_dml_bench import jit
    from onnx_dml_bench.ops import _pool_fused

    kernels = _pool_fused._compile()
    if kernels is None:
        pytest.skip("numba cannot compile here")
    assert all(isinstance(k._cache, jit.locked_cache()) for k in kernels), kernels


#: the tests of every compiled loop against its NumPy code (hypothesis geometries, the profiles' cases)
LOOP_TESTS = ["tests/ops/test_pool_fused.py", "tests/ops/test_roi_align_fused.py", "tests/ops/test_window_stats.py",
              "tests/ops/test_bound_fused.py", "tests/test_compare_slices.py",
              "tests/ops/test_reference_equal.py::test_every_profile_case"]


@pytest.mark.slow
def test_every_compiled_loop_indexes_within_its_arrays(tmp_path):
    """The loops' own tests again, each loop compiled with numba's bounds checks (a fresh cache):
    an index past an array raises instead of reading or writing another object's memory, which
    the comparisons with the NumPy code cannot see (a write of 0.0 past a row's end left every
    output right and corrupted the heap)."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist",
                          *LOOP_TESTS], cwd=root, env=env, capture_output=True, text=True, timeout=1100)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


LOAD_ALL = """
import numpy as np
import onnx_dml_bench.registry
from onnx_dml_bench import compare
from onnx_dml_bench.ops import _pool_fused, _stats_fused
from onnx_dml_bench.ops.roi_align import fused
got = [_pool_fused._compile(), _stats_fused._compile(), _stats_fused.block_kernel(), fused._compile()]
loop = compare._compile_loops()
assert all(k is not None for k in got), got
print("ok")
"""


def test_every_loop_runs_from_the_disk_cache(tmp_path):
    """Every compiled loop of the bench compiled and run in one process (its machine code saved),
    then loaded from the disk and run in another: numba cannot load some functions it compiles and
    saves (a recursive one segfaulted on load: ``_stats_fused.pairwise4`` is a loop over a
    stack for that reason)."""
    env = {**ENV, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    root = Path(__file__).resolve().parents[1]
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", LOAD_ALL], cwd=root, env=env, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr[-3000:])
    assert list((tmp_path / "numba").rglob("*block_loop*.nbc")), "the block loop was not saved"
