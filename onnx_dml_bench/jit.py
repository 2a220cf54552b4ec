"""numba's ``njit`` for the bench's compiled loops, with a disk cache that processes may share.

numba's own disk cache (``cache=True``) is not safe across processes: each function has an index
file naming, per signature, a data file of machine code, and a save reads the index, takes the
first data file it does not name, and writes both back. Two processes that compile different
signatures of one function at once (the workers of a run, or of the test suite, on a fresh clone)
both take data file 1; the index left on disk can then name one signature while its data file
holds the other's code, and a later process runs that code on the wrong types: an error at best,
a crash, a hang or memory overwritten at worst. Here each function's index and data files are only
read or written under a file lock beside them, so a save sees every earlier save.

numba's cache also knows only the source file of the function it compiles: a loop that calls a
compiled helper of another file keeps the helper's old machine code, from the disk, after that
file changes. Here a function's cache is fresh for the sources of every compiled function it calls,
whichever file holds them, as well as its own.

``njit(f)`` is numba's ``njit(f, nogil=True, fastmath=False, error_model="numpy")`` with that cache;
a process that cannot take the lock in ``LOCK_SECONDS`` compiles (or keeps its compiled code) without
the disk.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os

import filelock

#: seconds a process waits for another's read or write of one function's cache files
LOCK_SECONDS = 120.0

#: numba's options for every compiled loop of the bench (NumPy's float semantics: no fast-math,
#: division by zero as NumPy gives it; no GIL held, so loops run on several threads)
OPTIONS = {"nogil": True, "fastmath": False, "error_model": "numpy"}


def njit(func, **options):
    """``func`` compiled by numba on first use, its machine code kept on disk under the lock."""
    import numba

    dispatcher = numba.njit(func, cache=False, **{**OPTIONS, **options})
    dispatcher._cache = locked_cache()(dispatcher.py_func)   # what numba's enable_caching() sets
    return dispatcher


def callee_sources(func) -> list[str]:
    """The source files, other than ``func``'s own, of the compiled functions ``func`` calls through
    its globals, and of those they call, and so on (sorted)."""
    own = inspect.getsourcefile(func)
    files, seen, todo = set(), set(), [func]
    while todo:
        f = todo.pop()
        for name in f.__code__.co_names:
            callee = getattr(f.__globals__.get(name), "py_func", None)    # a numba dispatcher's function
            if callee is not None and callee not in seen:
                seen.add(callee)
                files.add(inspect.getsourcefile(callee))
                todo.append(callee)
    return sorted(f for f in files - {own} if f)


@functools.cache
def locked_cache():
    """The cache class (numba imported on first use only)."""
    from numba.core.caching import FunctionCache

    class LockedCache(FunctionCache):
        """numba's per-function cache, its files read and written under ``<index>.lock``."""

        def __init__(self, py_func):
            super().__init__(py_func)
            others = callee_sources(py_func)
            if others:           # numba's stamp of the source, with the callees' files' contents
                digest = hashlib.sha256()
                for path in others:
                    with open(path, "rb") as f:
                        digest.update(path.encode() + b"\0" + f.read())
                self._cache_file._source_stamp = (self._cache_file._source_stamp, digest.hexdigest())
            self._lock_path = os.path.join(self.cache_path, self._cache_file._index_name + ".lock")

        def _locked(self):
            self._impl.locator.ensure_cache_path()
            return filelock.FileLock(self._lock_path, timeout=LOCK_SECONDS)

        def load_overload(self, sig, target_context):
            try:
                with self._locked():
                    return super().load_overload(sig, target_context)
            except (filelock.Timeout, OSError):
                return None                  # compiled here instead

        def save_overload(self, sig, data):
            try:
                with self._locked():
                    super().save_overload(sig, data)
            except (filelock.Timeout, OSError):
                pass                         # kept in this process only

    return LockedCache
