"""Host process plumbing of the installers and the Wine session: a command in its own process
group with a timeout, a file lock, and the small text helpers their messages use."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from .stackinfo import LogFn, StackError

try:
    import fcntl
except ImportError:           # Windows: the installers and the Wine session are Linux's; locks below use msvcrt
    fcntl = None
try:
    import msvcrt
except ImportError:           # everywhere but Windows
    msvcrt = None


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def run(cmd: list[str], *, timeout: float = 600, env: Mapping[str, str] | None = None,
        cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command in its own process group; kill the group on timeout (StackError). Output:
    stdout and stderr together in ``.stdout``; ``check``: StackError on a non-zero exit."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=dict(env) if env else None,
                            cwd=str(cwd) if cwd else None, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        raise StackError(f"command timed out after {timeout:.0f} s: {shlex.join(cmd)}\n"
                         f"{out.decode(errors='replace')[-4000:]}")
    res = subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"), "")
    if check and proc.returncode != 0:
        raise StackError(f"command failed (exit {proc.returncode}): {shlex.join(cmd)}\n"
                         f"{res.stdout[-4000:]}")
    return res


@contextmanager
def file_lock(path: Path, log: LogFn) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created when missing); says so when it has to wait.
    On Windows (no fcntl) the first byte of the file is locked with msvcrt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        if fcntl is None:
            yield from _msvcrt_lock(fh, path, log)
            return
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another setup holding {path} ...")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _msvcrt_lock(fh, path: Path, log: LogFn) -> Iterator[None]:
    said = False
    while True:
        try:
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            break
        except OSError:
            if not said:
                log(f"waiting for another process holding {path} ...")
                said = True
            time.sleep(0.5)
    try:
        yield
    finally:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)


def one_line(text: str) -> str:
    """The line of a command's output that says most: its last error line, else its last line."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    err = [ln for ln in lines if "ERR" in ln or "error" in ln.lower()]
    return (err or lines or ["(no output)"])[-1][:300]


def version_tuple(v: str) -> tuple[int, ...]:
    """The first three numbers of a (Debian) version: ``1:23.2.1-1~bpo12+rc3`` -> (23, 2, 1)."""
    v = v.split(":", 1)[-1]
    nums = re.findall(r"\d+", v.split("-")[0].split("~")[0])
    return tuple(int(n) for n in nums[:3])
